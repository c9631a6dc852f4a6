//! The progress engine: the only code that drives the real MPI.
//!
//! It moves bytes between processes and reports what arrived or finished as [`Event`]s; it
//! knows nothing of user handles, requests or matching (that is `core`'s job).

use super::real::{self, h, RComm, RRequest, RealMpi, RealStatus};
use super::wire::{self, Header, HDR_LEN};
use std::os::raw::{c_int, c_void};
use std::ptr;

/// An eager message's payload kept until its receive is posted (or a copy of a sibling's).
#[derive(Debug)]
pub struct Payload(Repr);

/// Bytes a queued payload keeps inline (no allocation): small messages, the common case of a
/// message that arrives before its receive is posted, cost no malloc and free.
const INLINE: usize = 48;

#[derive(Debug)]
enum Repr {
    Heap(Vec<u8>),
    Inline { len: u8, bytes: [u8; INLINE] },
}

/// An eager payload still in the receive ring: valid until the ring is polled again.
#[derive(Clone, Copy, Debug)]
pub struct RingBytes {
    ptr: *const u8,
    len: usize,
}

impl RingBytes {
    /// # Safety
    /// Only before the next `Transport::poll_ring` (which may repost the slot).
    pub unsafe fn as_slice<'a>(&self) -> &'a [u8] {
        if self.len == 0 {
            &[]
        } else {
            std::slice::from_raw_parts(self.ptr, self.len)
        }
    }
}

impl Payload {
    /// Takes `buf` as it is (no copy).
    pub fn from_vec(buf: Vec<u8>) -> Payload {
        Payload(Repr::Heap(buf))
    }
    /// A copy of `data`: inline when small, else on the heap.
    #[inline]
    pub fn copy_of(data: &[u8]) -> Payload {
        if data.len() <= INLINE {
            let mut bytes = [0u8; INLINE];
            bytes[..data.len()].copy_from_slice(data);
            Payload(Repr::Inline {
                len: data.len() as u8,
                bytes,
            })
        } else {
            Payload(Repr::Heap(data.to_vec()))
        }
    }
    pub fn as_slice(&self) -> &[u8] {
        match &self.0 {
            Repr::Heap(v) => v,
            Repr::Inline { len, bytes } => &bytes[..*len as usize],
        }
    }
    pub fn len(&self) -> usize {
        self.as_slice().len()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What the progress engine reports upward.
#[derive(Debug)]
pub enum Event {
    /// A message header (with its payload when eager) for local subrank `dst_sub`.
    Msg {
        dst_sub: usize,
        src_proc: usize,
        src_sub: usize,
        hdr: Header,
        payload: RingBytes,
    },
    /// The receiver matched our synchronous send `token`.
    Ack { token: u64 },
    /// A send's user buffer may be reused (`token` 0: internal, nothing to report).
    SendDone { token: u64 },
    /// A rendezvous payload arrived (into the user buffer, or into `temp`).
    RecvDone { token: u64, temp: Option<Vec<u8>> },
    /// A real collective finished (`transport::collective`): its buffer, and the new real
    /// communicator of a duplication. Session 25 (faults16): `error`, the MPI error class a
    /// failed real request of it ended with (`coll_error`; 0: none): the operation's owner
    /// reports it, the job goes on.
    CollDone {
        token: u64,
        buf: Vec<u8>,
        comm: Option<RComm>,
        error: i32,
    },
    /// A direct send or receive (`direct`) finished: its status, and the receive's bytes when
    /// they went into a temporary buffer.
    DirectDone {
        token: u64,
        st: super::direct::DirectStatus,
        temp: Option<Vec<u8>>,
    },
}

pub(super) enum Action {
    Free,
    Sent(u64),
    Received(u64),
    Coll(u64),
    /// A direct send (`direct`) of this request.
    DirectSent(u64),
    /// A direct receive of this request; true when the message was counted as received
    /// already (taken by a probe).
    DirectRecv(u64, bool),
}

pub(super) struct Pending {
    pub(super) req: RRequest,
    pub(super) action: Action,
    /// Memory the real MPI reads or writes until completion.
    pub(super) buf: Option<Vec<u8>>,
    /// Where a real `MPI_Comm_idup` writes its new communicator (boxed: a stable address).
    pub(super) comm: Option<Box<RComm>>,
}

pub struct Transport {
    pub(super) real: RealMpi,
    pub nproc: usize,
    pub myproc: usize,
    ctrl: RComm,
    data: RComm,
    /// Third duplicate, for the deadlock detector's own messages (never counted below).
    det: RComm,
    /// Fourth duplicate: the real twin of MPI_COMM_WORLD for real collectives (`collective`).
    pub(super) coll: RComm,
    det_req: RRequest,
    det_buf: Box<[i64; DET_MAX_WORDS]>,
    /// Control messages sent and received so far (job-wide sums agree when none is in flight).
    pub ctrl_sent: u64,
    pub ctrl_recvd: u64,
    pub(super) pending: Vec<Pending>,
    pub(super) reqs: Vec<RRequest>,
    next_msgid: Vec<u32>,
    msgid_limit: u32,
    pub tag_ub: i64,
    /// The real MPI may be called from more than one thread, one at a time.
    pub serialized: bool,
    /// Pre-posted wildcard receives for control messages, completed in posting order.
    ring: Vec<Slot>,
    head: usize,
    /// Slots consumed by the last polls (the ones just before `head`, in ring order),
    /// reposted at the start of the next poll.
    repost: usize,
    slot_len: usize,
    /// A message a poller took from the ring and handed back (`hold`): the next poll returns
    /// it first, before any slot is reposted.
    held: Option<Arrived>,
    /// issue 16 (shmq16): the node's shared-memory queues, which carry every control message
    /// between two processes of this node (None: the ring carries them all).
    pub(super) shmq: Option<super::shmq::NodeQueues>,
    /// Session 29 (issue 16): the collectives' messages through the node queue (`collq`).
    pub(super) collq: super::collq::CollQ,
    /// The process's real window for one-sided traffic (issue 18, `rma.rs`); None with one
    /// process.
    pub(super) rma: Option<super::rma::RealRma>,
    /// Direct messages (`direct`) sent, and received or taken by a probe: job-wide sums agree
    /// when none is in flight (the deadlock detector).
    pub direct_sent: u64,
    pub direct_recvd: u64,
    /// Direct operations in the pending list.
    pub(super) direct_pending: usize,
    /// Direct operations the program asked to cancel so far: while none was, a wait that
    /// ignores statuses polls without them (`direct_testall`).
    pub(super) direct_cancels: u64,
    /// `poll_pending`'s work arrays, kept between polls.
    pub(super) idx: Vec<c_int>,
    pub(super) stats: Vec<RealStatus>,
    /// `testsome`'s completed entries (pending index, status index), kept to save an
    /// allocation per completion.
    pub(super) done: Vec<(usize, usize)>,
    /// issue 16 (p2p8): the real MPI's `MPI_Status` keeps a count and the cancel flag where
    /// MPICH's header says (`direct::status_layout_ok`, checked at start-up): a status is then
    /// read in place, without `MPI_Get_count_c` and `MPI_Test_cancelled`.
    pub(super) status_fields: bool,
}

/// Outstanding real requests by kind (`Transport::pending_kinds`).
#[derive(Clone, Copy, Debug, Default)]
pub struct PendingKinds {
    pub payloads: usize,
    pub colls: usize,
    /// Direct sends and receives (`direct`): they may wait for ever.
    pub direct: usize,
    pub other: bool,
}

/// A control message taken from the ring by `Transport::poll_ring_raw`, still in its slot.
#[derive(Clone, Copy, Debug)]
pub struct Arrived {
    from: Source,
    pub src_proc: usize,
    pub dst_sub: usize,
    pub src_sub: usize,
}

impl Arrived {
    /// Whether it came from the node's shared-memory queue (not the real MPI's ring).
    #[inline(always)]
    pub fn queued(&self) -> bool {
        matches!(self.from, Source::Queued(..))
    }
}

/// Where an arrived control message is.
#[derive(Clone, Copy, Debug)]
enum Source {
    /// In this ring slot.
    Slot(usize),
    /// In the node's shared-memory queue (`shmq`), at this position.
    Queued(u64, super::shmq::Meta),
}

/// One pre-posted control receive.
struct Slot {
    req: RRequest,
    buf: Vec<u8>,
}

/// Offset of `Header::sub_hi` in a control message.
const SUB_HI: usize = std::mem::offset_of!(Header, sub_hi);

/// Payloads up to this size go out with a blocking real send from a stack buffer.
pub(super) const TINY: usize = 256;

/// Eager payloads up to this size also go out with a blocking real send from a stack buffer
/// (`send_small`), longer ones from a heap copy sent with `MPI_Isend` (`send_eager_copy`).
/// Issue 16 (p2p12): a 1 KiB message paid the copy's allocation and free, `MPI_Isend` and
/// `MPI_Test` instead of one `MPI_Send`. The real MPI sends a message of this size eagerly, so
/// the blocking send completes locally, as a tiny one does (MPICH 4.0 over UCX here: a
/// blocking send of 8 KiB + 32 bytes returns at once while its receiver sleeps, 16 KiB waits
/// for the receive; this stays at half of that). Only to a process on this node
/// (`node::same_node`): between nodes the real MPI's eager limit depends on the network and
/// may be lower, and a blocking send that needs its receiver (a rendezvous) while both sides
/// send at once, with their rings' receives used up, would never return.
pub(super) const STACK_EAGER: usize = 4 << 10;

/// issue 16 (shmq16): looks at the node's queue per poll of a receive spinning in place
/// (`Transport::spin_queue`).
const QUEUE_SPIN: u32 = 32;

/// issue 16 (shmq16): seconds `finalize` keeps pushing an outbox whose queue stays full.
const OUTBOX_GRACE: f64 = 2.0;

/// Words of a deadlock-detector message, at most.
pub const DET_MAX_WORDS: usize = 256;

/// Control receives kept posted (each HDR_LEN + eager_max bytes), at most.
pub const RING: usize = 32;

/// Posts the wildcard control receive of `slot` (`len` bytes) on `ctrl`.
fn post_slot(mpi: &RealMpi, ctrl: RComm, len: usize, slot: &mut Slot) -> Result<(), String> {
    // SAFETY: the slot's buffer lives in the ring (never reallocated) until the receive
    // completes or is cancelled at finalize.
    check(
        unsafe {
            mpi.PMPI_Irecv(
                slot.buf.as_mut_ptr() as *mut c_void,
                len as c_int,
                h(real::REAL_MPI_BYTE),
                real::REAL_MPI_ANY_SOURCE as c_int,
                real::REAL_MPI_ANY_TAG as c_int,
                ctrl,
                &mut slot.req,
            )
        },
        "MPI_Irecv",
    )
}

#[inline]
pub(super) fn check(rc: c_int, what: &str) -> Result<(), String> {
    if rc == real::REAL_MPI_SUCCESS as c_int {
        Ok(())
    } else {
        Err(real_failed(rc, what))
    }
}

/// `local` from each of the `n` members of `comm` (every one passes the same length), in rank
/// order: one real `MPI_Allgather` of bytes.
pub(super) fn allgather_bytes(mpi: &RealMpi, comm: RComm, n: usize, local: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = vec![0u8; local.len() * n];
    // SAFETY: `local` holds len bytes and `out` len * n bytes, as the call reads and writes;
    // every member passes the same length.
    check(
        unsafe {
            mpi.PMPI_Allgather(
                local.as_ptr() as *const c_void,
                local.len() as c_int,
                h(real::REAL_MPI_BYTE),
                out.as_mut_ptr() as *mut c_void,
                local.len() as c_int,
                h(real::REAL_MPI_BYTE),
                comm,
            )
        },
        "MPI_Allgather",
    )?;
    Ok(out)
}

#[cold]
#[inline(never)]
fn real_failed(rc: c_int, what: &str) -> String {
    format!("the real MPI failed in {what} (error {rc})")
}

impl Transport {
    /// Initialises the real MPI (at `MPI_THREAD_MULTIPLE` when `multiple`, else SERIALIZED)
    /// and duplicates the communicators we use.
    ///
    /// # Safety
    /// `argc`/`argv` must be null or the program's argument count and vector.
    pub unsafe fn init(
        real: RealMpi,
        argc: *mut c_int,
        argv: *mut *mut *mut i8,
        eager_max: usize,
        multiple: bool,
        ring: usize,
        shmq: bool,
    ) -> Result<Transport, String> {
        let mut provided: c_int = 0;
        let level = if multiple {
            real::REAL_MPI_THREAD_MULTIPLE
        } else {
            real::REAL_MPI_THREAD_SERIALIZED
        };
        // SAFETY: argc/argv are the program's (or null), as MPI_Init_thread allows.
        check(
            // SERIALIZED, not FUNNELED: the background progress thread (core::background) calls
            // the real MPI too, always under the state lock, so never at the same time.
            unsafe { real.PMPI_Init_thread(argc, argv as _, level as c_int, &mut provided) },
            "MPI_Init_thread",
        )?;
        let world: RComm = h(real::REAL_MPI_COMM_WORLD);
        let (mut ctrl, mut data, mut det, mut coll): (RComm, RComm, RComm, RComm) = (
            h(real::REAL_MPI_COMM_NULL),
            h(real::REAL_MPI_COMM_NULL),
            h(real::REAL_MPI_COMM_NULL),
            h(real::REAL_MPI_COMM_NULL),
        );
        let (mut rank, mut size) = (0, 0);
        let mut flag: c_int = 0;
        let mut ub: *mut c_int = ptr::null_mut();
        // SAFETY: plain calls on the real world communicator with valid out-pointers.
        unsafe {
            check(real.PMPI_Comm_dup(world, &mut ctrl), "MPI_Comm_dup")?;
            check(real.PMPI_Comm_dup(world, &mut data), "MPI_Comm_dup")?;
            check(real.PMPI_Comm_dup(world, &mut det), "MPI_Comm_dup")?;
            check(real.PMPI_Comm_dup(world, &mut coll), "MPI_Comm_dup")?;
            check(real.PMPI_Comm_rank(world, &mut rank), "MPI_Comm_rank")?;
            check(real.PMPI_Comm_size(world, &mut size), "MPI_Comm_size")?;
            check(
                real.PMPI_Comm_get_attr(world, real::REAL_MPI_TAG_UB as c_int, &mut ub as *mut _ as *mut c_void, &mut flag),
                "MPI_Comm_get_attr",
            )?;
        }
        // SAFETY: when flag is set, the attribute value points at the real MPI's tag bound.
        let tag_ub = if flag != 0 && !ub.is_null() {
            (unsafe { *ub }) as i64
        } else {
            32767
        };
        if tag_ub < (1 << 16) {
            return Err(format!("the real MPI's MPI_TAG_UB ({tag_ub}) is below the 2^16 Toucan needs"));
        }
        super::node::detect(&real, world)?;
        let queues = super::shmq::setup(&real, world, shmq, HDR_LEN + eager_max)?;
        let mut t = Transport {
            real,
            nproc: size as usize,
            myproc: rank as usize,
            ctrl,
            data,
            det,
            coll,
            det_req: h(real::REAL_MPI_REQUEST_NULL),
            det_buf: Box::new([0; DET_MAX_WORDS]),
            ctrl_sent: 0,
            ctrl_recvd: 0,
            pending: Vec::new(),
            reqs: Vec::new(),
            next_msgid: vec![0; size as usize],
            msgid_limit: tag_ub.min(u32::MAX as i64 / 2) as u32,
            tag_ub,
            serialized: provided >= real::REAL_MPI_THREAD_SERIALIZED as c_int,
            ring: Vec::new(),
            head: 0,
            repost: 0,
            slot_len: HDR_LEN + eager_max,
            held: None,
            shmq: queues,
            collq: Default::default(),
            rma: None,
            direct_sent: 0,
            direct_recvd: 0,
            direct_pending: 0,
            direct_cancels: 0,
            idx: Vec::new(),
            stats: Vec::new(),
            done: Vec::new(),
            status_fields: false,
        };
        t.status_fields = super::direct::status_layout_ok(&t.real);
        t.name_world();
        // Errors on the real twins (all derived from `coll`) come back as codes: a direct
        // receive's truncation is the program's, reported in its status. The real world's
        // handler is the one MPICH calls for a multiple completion (`MPI_Testsome`) that
        // reports it (MPI_ERR_IN_STATUS).
        for comm in [t.coll, world] {
            // SAFETY: our own communicator, and the real world.
            check(
                unsafe { t.real.PMPI_Comm_set_errhandler(comm, h(real::REAL_MPI_ERRORS_RETURN)) },
                "MPI_Comm_set_errhandler",
            )?;
        }
        // issue 18: one real dynamic window per process, for RMA between processes.
        if size > 1 {
            // SAFETY: the real MPI is up; we are the only thread.
            t.rma = Some(unsafe { super::rma::RealRma::create(&t.real, world)? });
        }
        for _ in 0..ring {
            let mut slot = Slot {
                req: h(real::REAL_MPI_REQUEST_NULL),
                buf: vec![0u8; t.slot_len],
            };
            post_slot(&t.real, t.ctrl, t.slot_len, &mut slot)?;
            t.ring.push(slot);
        }
        t.post_det()?;
        Ok(t)
    }

    fn post_det(&mut self) -> Result<(), String> {
        // SAFETY: det_buf is boxed (stable address) and lives until finalize cancels this.
        check(
            unsafe {
                self.real.PMPI_Irecv(
                    self.det_buf.as_mut_ptr() as *mut c_void,
                    (DET_MAX_WORDS * 8) as c_int,
                    h(real::REAL_MPI_BYTE),
                    real::REAL_MPI_ANY_SOURCE as c_int,
                    real::REAL_MPI_ANY_TAG as c_int,
                    self.det,
                    &mut self.det_req,
                )
            },
            "MPI_Irecv",
        )
    }

    /// A deadlock-detector message from another process, if one arrived: (source, words).
    pub fn det_poll(&mut self) -> Result<Option<(usize, Vec<i64>)>, String> {
        let mut flag: c_int = 0;
        let mut st: RealStatus = unsafe { std::mem::zeroed() };
        // SAFETY: det_req is the live receive posted by post_det.
        check(unsafe { self.real.PMPI_Test(&mut self.det_req, &mut flag, &mut st) }, "MPI_Test")?;
        if flag == 0 {
            return Ok(None);
        }
        let mut bytes: c_int = 0;
        // SAFETY: `st` is the status of the completed receive.
        check(
            unsafe { self.real.PMPI_Get_count(&st, h(real::REAL_MPI_BYTE), &mut bytes) },
            "MPI_Get_count",
        )?;
        let words = (bytes.max(0) as usize / 8).min(DET_MAX_WORDS);
        let msg = self.det_buf[..words].to_vec();
        self.post_det()?;
        Ok(Some((st.MPI_SOURCE as usize, msg)))
    }

    /// Sends a deadlock-detector message (at most DET_MAX_WORDS words; small: the real MPI
    /// completes it locally).
    pub fn det_send(&mut self, dst: usize, msg: &[i64]) -> Result<(), String> {
        let words = msg.len().min(DET_MAX_WORDS);
        // SAFETY: `msg` holds `words` words, valid for the duration of the blocking send.
        check(
            unsafe {
                self.real.PMPI_Send(
                    msg.as_ptr() as *const c_void,
                    (words * 8) as c_int,
                    h(real::REAL_MPI_BYTE),
                    dst as c_int,
                    0,
                    self.det,
                )
            },
            "MPI_Send",
        )
    }

    /// Reposts, in ring order, the slots consumed by the previous polls (kept until now so
    /// their payloads could be read in place; reposting in order keeps posting order = ring
    /// order, which is the order the real MPI matches arrivals in).
    ///
    /// A consumed slot's receive is complete but not yet freed (the poll only looked at its
    /// status, see `poll_ring_raw`): it is freed here, just before its repost.
    #[inline(never)]
    fn flush_reposts(&mut self) -> Result<(), String> {
        let n = std::mem::take(&mut self.repost);
        for k in 0..n {
            let i = (self.head + self.ring.len() - n + k) % self.ring.len();
            let slot = &mut self.ring[i];
            // MPI_Wait on the complete request frees it without a progress step (MPICH's
            // MPI_Request_free makes one: about 700 instructions, against 100).
            // SAFETY: the slot's request completed (the poll saw it) and nobody else holds it.
            check(
                unsafe { self.real.PMPI_Wait(&mut slot.req, real::REAL_MPI_STATUS_IGNORE as *mut RealStatus) },
                "MPI_Wait",
            )?;
            post_slot(&self.real, self.ctrl, self.slot_len, slot)?;
        }
        Ok(())
    }

    pub fn real(&self) -> &RealMpi {
        &self.real
    }

    pub(super) fn post(&mut self, req: RRequest, action: Action, buf: Option<Vec<u8>>) {
        self.pending.push(Pending {
            req,
            action,
            buf,
            comm: None,
        });
    }

    fn isend_ctrl(&mut self, dst_proc: usize, tag: i32, buf: Vec<u8>, action: Action) -> Result<(), String> {
        let mut req: RRequest = h(real::REAL_MPI_REQUEST_NULL);
        // SAFETY: `buf` is kept alive in `pending` until the real request completes.
        check(
            unsafe {
                self.real.PMPI_Isend(
                    buf.as_ptr() as *const c_void,
                    buf.len() as c_int,
                    h(real::REAL_MPI_BYTE),
                    dst_proc as c_int,
                    tag,
                    self.ctrl,
                    &mut req,
                )
            },
            "MPI_Isend",
        )?;
        // Small sends usually complete at once: then the buffer is free without a trip
        // through the pending list.
        let mut done: c_int = 0;
        // SAFETY: `req` is the request just started.
        check(
            unsafe {
                self.real
                    .PMPI_Test(&mut req, &mut done, real::REAL_MPI_STATUS_IGNORE as *mut RealStatus)
            },
            "MPI_Test",
        )?;
        if done == 0 {
            self.post(req, action, Some(buf));
        }
        Ok(())
    }

    /// Header and payload in one real message; the payload is copied, so the caller's buffer
    /// is free at once.
    #[inline(always)]
    pub fn send_eager(&mut self, dst_proc: usize, dst_sub: usize, src_sub: usize, hdr: &Header, payload: &[u8]) -> Result<(), String> {
        if let Some(q) = self.shmq.as_ref().and_then(|n| n.index_of(dst_proc)) {
            return self.send_queued(q, dst_sub, src_sub, hdr, payload);
        }
        if payload.len() <= TINY {
            let mut buf = std::mem::MaybeUninit::<[u8; HDR_LEN + TINY]>::uninit();
            // SAFETY: `buf` holds HDR_LEN + TINY bytes, payload.len() <= TINY.
            unsafe { self.send_blocking(buf.as_mut_ptr() as *mut u8, dst_proc, dst_sub, src_sub, hdr, payload) }
        } else if payload.len() <= STACK_EAGER && super::node::same_node(dst_proc) {
            self.send_small(dst_proc, dst_sub, src_sub, hdr, payload)
        } else {
            self.send_eager_copy(dst_proc, dst_sub, src_sub, hdr, payload)
        }
    }

    /// issue 16 (shmq16): `send_eager` to a process of this node (its queue `q`): header and
    /// payload into a cell of its queue, or into the outbox when the queue is full
    /// (`shmq::NodeQueues`): the send never waits.
    #[inline(always)]
    fn send_queued(&mut self, q: usize, dst_sub: usize, src_sub: usize, hdr: &Header, payload: &[u8]) -> Result<(), String> {
        let meta = super::shmq::Meta {
            src_proc: self.myproc as u32,
            dst_sub: dst_sub as u32,
            src_sub: src_sub as u32,
            len: 0,
        };
        let Some(n) = self.shmq.as_mut() else {
            return Err("no shared-memory queue".into());
        };
        match n.send(q, meta, &hdr.to_bytes(), payload) {
            Ok(()) => {
                self.ctrl_sent += 1;
                Ok(())
            }
            Err(max) => Err(format!(
                "a {}-byte eager message exceeds the node queue's {max}-byte cells (all processes need the same TOUCAN_EAGER)",
                payload.len()
            )),
        }
    }

    /// `send_eager` of a payload longer than `TINY`, at most `STACK_EAGER` bytes: the same
    /// blocking real send from a stack buffer, in its own frame so that the tiny path's
    /// callers do not reserve the larger buffer.
    #[inline(never)]
    fn send_small(&mut self, dst_proc: usize, dst_sub: usize, src_sub: usize, hdr: &Header, payload: &[u8]) -> Result<(), String> {
        let mut buf = std::mem::MaybeUninit::<[u8; HDR_LEN + STACK_EAGER]>::uninit();
        if payload.len() > STACK_EAGER {
            return self.send_eager_copy(dst_proc, dst_sub, src_sub, hdr, payload);
        }
        // SAFETY: `buf` holds HDR_LEN + STACK_EAGER bytes, payload.len() <= STACK_EAGER.
        unsafe { self.send_blocking(buf.as_mut_ptr() as *mut u8, dst_proc, dst_sub, src_sub, hdr, payload) }
    }

    /// Header and payload written to `buf` and sent with one blocking real send: such small
    /// messages always travel with the real MPI's eager protocol, so the send completes
    /// locally (it never waits for the receiver): no allocation, no request to track.
    ///
    /// # Safety
    /// `buf` must be writable for HDR_LEN + payload.len() bytes.
    #[inline(always)]
    unsafe fn send_blocking(
        &mut self,
        buf: *mut u8,
        dst_proc: usize,
        dst_sub: usize,
        src_sub: usize,
        hdr: &Header,
        payload: &[u8],
    ) -> Result<(), String> {
        self.ctrl_sent += 1;
        // Not zeroed: only the HDR_LEN + len bytes written below are sent.
        let n = payload.len();
        let hdr = Header {
            sub_hi: wire::sub_hi(dst_sub, src_sub),
            ..*hdr
        };
        // SAFETY: both copies stay inside the HDR_LEN + n bytes the caller vouches for.
        unsafe {
            std::ptr::write_unaligned(buf as *mut Header, hdr);
            super::copy::bytes(payload.as_ptr(), buf.add(HDR_LEN), n);
        }
        // SAFETY: the first HDR_LEN + n bytes of `buf` were written just above and stay
        // valid for the duration of the call.
        check(
            unsafe {
                self.real.PMPI_Send(
                    buf as *const c_void,
                    (HDR_LEN + n) as c_int,
                    h(real::REAL_MPI_BYTE),
                    dst_proc as c_int,
                    wire::ctrl_tag(dst_sub, src_sub),
                    self.ctrl,
                )
            },
            "MPI_Send",
        )
    }

    /// A larger eager message: copied into a buffer that lives until the real send completes.
    #[inline(never)]
    fn send_eager_copy(&mut self, dst_proc: usize, dst_sub: usize, src_sub: usize, hdr: &Header, payload: &[u8]) -> Result<(), String> {
        self.ctrl_sent += 1;
        let hdr = Header {
            sub_hi: wire::sub_hi(dst_sub, src_sub),
            ..*hdr
        };
        let mut buf = Vec::with_capacity(HDR_LEN + payload.len());
        buf.extend_from_slice(&hdr.to_bytes());
        buf.extend_from_slice(payload);
        self.isend_ctrl(dst_proc, wire::ctrl_tag(dst_sub, src_sub), buf, Action::Free)
    }

    /// Header now, payload on the data communicator straight from `data` (no copy): the real
    /// MPI's own rendezvous holds it until the receiver posts the matching receive.
    /// `keep` owns the payload when it is not the user's memory. Completion: `SendDone(token)`.
    ///
    /// # Safety
    /// `data..data+len` must stay valid and unchanged until `SendDone(token)` is reported.
    pub unsafe fn send_rndv(
        &mut self,
        dst_proc: usize,
        dst_sub: usize,
        src_sub: usize,
        mut hdr: Header,
        data: *const u8,
        keep: Option<Vec<u8>>,
        token: u64,
    ) -> Result<(), String> {
        let msgid = self.next_msgid[dst_proc];
        self.next_msgid[dst_proc] = (msgid + 1) % self.msgid_limit;
        hdr.msgid = msgid;
        hdr.kind = wire::KIND_RNDV;
        self.send_eager(dst_proc, dst_sub, src_sub, &hdr, &[])?;
        let mut req: RRequest = h(real::REAL_MPI_REQUEST_NULL);
        check(
            self.real.PMPI_Isend_c(
                data as *const c_void,
                hdr.len as _,
                h(real::REAL_MPI_BYTE),
                dst_proc as c_int,
                msgid as c_int,
                self.data,
                &mut req,
            ),
            "MPI_Isend_c",
        )?;
        self.post(req, Action::Sent(token), keep);
        Ok(())
    }

    /// Receives the payload of a matched rendezvous message into `into` (or into `temp`,
    /// which then comes back in `RecvDone`).
    ///
    /// # Safety
    /// `into..into+len` must stay valid until `RecvDone(token)` (unless `temp` is given, in
    /// which case `into` is ignored).
    pub unsafe fn recv_rndv(
        &mut self,
        src_proc: usize,
        msgid: u32,
        len: usize,
        into: *mut u8,
        temp: Option<Vec<u8>>,
        token: u64,
    ) -> Result<(), String> {
        let mut temp = temp;
        let dst = match temp.as_mut() {
            Some(t) => t.as_mut_ptr(),
            None => into,
        };
        let mut req: RRequest = h(real::REAL_MPI_REQUEST_NULL);
        check(
            self.real.PMPI_Irecv_c(
                dst as *mut c_void,
                len as _,
                h(real::REAL_MPI_BYTE),
                src_proc as c_int,
                msgid as c_int,
                self.data,
                &mut req,
            ),
            "MPI_Irecv_c",
        )?;
        self.post(req, Action::Received(token), temp);
        Ok(())
    }

    pub fn send_ack(&mut self, dst_proc: usize, dst_sub: usize, src_sub: usize, token: u64) -> Result<(), String> {
        let hdr = Header {
            kind: wire::KIND_ACK,
            token,
            ..Default::default()
        };
        self.send_eager(dst_proc, dst_sub, src_sub, &hdr, &[])
    }

    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty() || self.colls_ready()
    }

    /// Whether a pending real request reports an event when it completes (anything but an
    /// eager send's copy, which is just freed).
    pub fn pending_events(&self) -> bool {
        self.colls_ready() || self.pending.iter().any(|p| !matches!(p.action, Action::Free))
    }

    /// Gives back a message taken by `poll_ring_raw` that the caller could not handle: the
    /// next poll returns it first (its slot is not reposted before), so the order of arrivals
    /// is kept.
    pub fn hold(&mut self, a: Arrived) {
        debug_assert!(self.held.is_none());
        // Not received until taken again: the deadlock detector's counts must see it in
        // flight, or a job whose every rank waits for it would be called deadlocked.
        self.ctrl_recvd -= 1;
        self.held = Some(a);
    }

    /// What the real MPI still holds, for the deadlock detector: rendezvous payload sends
    /// and real collectives not yet complete, and whether anything else is outstanding. A
    /// payload send can wait for ever (its receiver never matches the header, which
    /// arrived), and so can a real collective that some process never starts; any other real
    /// request is in flight and will complete.
    pub fn pending_kinds(&self) -> PendingKinds {
        let mut k = PendingKinds::default();
        for p in &self.pending {
            match p.action {
                Action::Sent(_) => k.payloads += 1,
                Action::Coll(_) => k.colls += 1,
                Action::DirectSent(_) | Action::DirectRecv(..) => k.direct += 1,
                Action::Free | Action::Received(_) => k.other = true,
            }
        }
        k.colls += self.queued_colls();
        k
    }

    /// Takes the next control message from the ring, if it arrived. The slots consumed
    /// before are reposted first: the caller has handled their events (an eager payload is
    /// read in place, see [`RingBytes`]).
    ///
    /// A caller takes one eager message per progress step: testing the next slot too would
    /// run the real MPI's progress engine once more (a failed MPI_Test costs about as much as
    /// a whole small receive) before this message reaches its receiver. Slots the real MPI
    /// already completed are picked up cheaply by the next steps. After a rendezvous header or
    /// an acknowledgement, whose payloads take far longer than one more test, it goes on.
    #[inline(always)]
    pub fn poll_ring(&mut self) -> Result<Option<Event>, String> {
        match self.poll_ring_raw()? {
            Some(a) => self.event_of(a).map(Some),
            None => Ok(None),
        }
    }

    /// Like `poll_ring`, but leaves the message in its slot: the caller reads it with
    /// `header`/`eager_payload` or turns it into an event with `event_of`, before the next
    /// poll (which may repost the slot).
    ///
    /// Inlined into the caller's polling loop, taking an arrived message too (a few
    /// instructions: on the latency path).
    #[inline(always)]
    pub fn poll_ring_raw(&mut self) -> Result<Option<Arrived>, String> {
        // MPI_Request_get_status, not MPI_Test: it drives the real MPI's progress as much, but
        // costs fewer instructions in MPICH 4.0.2 (failed: about 320 against 400; an arrival:
        // 661 against 826), which shortens both the polling period and the path from an
        // arrival to its receiver. The complete request is freed at the slot's repost
        // (`flush_reposts`), off that path.
        self.spin_ring(1, || {})
    }

    /// Polls the head slot up to `polls` times until a message arrives, calling `each` before
    /// every poll: the loop of a receive polling in place, with as little as possible around
    /// each `MPI_Request_get_status` (it sets how soon an arrival is noticed).
    ///
    /// issue 16 (sr16): the slots consumed before are reposted after a poll that found
    /// nothing (time spent waiting anyway), not before the first poll: a message that is
    /// already there reaches its receiver without a repost (a real `MPI_Wait` and
    /// `MPI_Irecv`, about 660 instructions) in front of it. Fewer than half the ring's slots
    /// wait for their repost, so the head slot is always posted and the real MPI always has
    /// most of the ring to receive into; slots are reposted in ring order, which keeps the order the
    /// real MPI matches arrivals in.
    #[inline(always)]
    pub fn spin_ring(&mut self, polls: u32, each: impl Fn()) -> Result<Option<Arrived>, String> {
        if let Some(a) = self.held.take() {
            self.ctrl_recvd += 1;
            return Ok(Some(a));
        }
        if self.shmq.is_some() {
            return self.spin_queue(polls, each);
        }
        if self.repost != 0 && self.repost >= self.ring.len() / 2 {
            self.flush_reposts()?;
        }
        let req = self.ring[self.head].req;
        let get_status = self.real.PMPI_Request_get_status;
        let mut flag: c_int = 0;
        let mut st = std::mem::MaybeUninit::<RealStatus>::uninit();
        for _ in 0..polls {
            each();
            // SAFETY: the head slot's request is a live receive posted by post_slot (fewer
            // than half the ring's slots wait for a repost, so the head is not one of them); the
            // pointers are to locals.
            check(unsafe { get_status(req, &mut flag, st.as_mut_ptr()) }, "MPI_Request_get_status")?;
            if flag != 0 {
                // SAFETY: with flag set, the real MPI filled the status.
                return Ok(Some(self.take_head(unsafe { st.assume_init_ref() })));
            }
            if self.repost != 0 {
                self.flush_reposts()?;
            }
        }
        Ok(None)
    }

    /// issue 16 (shmq16): `spin_ring` with the node's queues: each poll looks at the own
    /// queue (one load of a sequence word) and at the ring only when something can come
    /// through it or the real MPI should make progress (`ring_due`).
    #[inline(always)]
    fn spin_queue(&mut self, polls: u32, each: impl Fn()) -> Result<Option<Arrived>, String> {
        // A receive spinning in place (`polls` > 1) looks at the queue `QUEUE_SPIN` times per
        // poll: its callers budget their spin (`SPIN_POLLS`, then they park) in polls that
        // each cost a real `MPI_Request_get_status` (~320 instructions) before; a look at the
        // queue costs ~10, and a spin of the same number of polls ended before a ping-pong's
        // reply could come.
        let spins = if polls > 1 { QUEUE_SPIN } else { 1 };
        for _ in 0..polls {
            each();
            if self.shmq.as_mut().is_some_and(|q| q.ring_first()) {
                if let Some(a) = self.poll_ring_head()? {
                    return Ok(Some(a));
                }
            }
            for _ in 0..spins {
                if let Some(a) = self.take_queued() {
                    self.ctrl_recvd += 1;
                    return Ok(Some(a));
                }
                std::hint::spin_loop();
            }
            if self.ring_due() {
                if let Some(a) = self.poll_ring_head()? {
                    return Ok(Some(a));
                }
            }
        }
        Ok(None)
    }

    /// Session 27 (msgrate27): whether the own node queue's next message is already there
    /// (one acquire load of a sequence word): a progress step that just handled a queued
    /// message takes it too, rather than ending and being called again at once.
    #[inline(always)]
    pub fn queue_has_next(&self) -> bool {
        self.shmq.as_ref().is_some_and(|q| q.has_next())
    }

    /// The next message of the own queue, if any (the outboxes pushed first).
    #[inline(always)]
    fn take_queued(&mut self) -> Option<Arrived> {
        let (meta, pos) = loop {
            let n = self.shmq.as_mut()?;
            if n.outboxed != 0 {
                n.flush();
            }
            let (meta, pos) = n.take()?;
            // Session 29: a collective's message is the transport's own (`collq`).
            if meta.dst_sub != super::collq::COLL_SUB {
                break (meta, pos);
            }
            self.coll_arrived(meta, pos);
        };
        Some(Arrived {
            from: Source::Queued(pos, meta),
            src_proc: meta.src_proc as usize,
            dst_sub: meta.dst_sub as usize,
            src_sub: meta.src_sub as usize,
        })
    }

    /// Whether the ring should be polled now: with the node's queues, only when a process
    /// of another node may send through it, real requests are pending, or every
    /// `shmq::RING_EVERY`th poll (the real MPI's own progress).
    #[inline(always)]
    fn ring_due(&mut self) -> bool {
        match self.shmq.as_mut() {
            None => true,
            Some(q) => q.ring_due() || !self.pending.is_empty(),
        }
    }

    /// One look at the ring's head (reposting consumed slots first).
    #[inline(never)]
    fn poll_ring_head(&mut self) -> Result<Option<Arrived>, String> {
        if self.repost != 0 {
            self.flush_reposts()?;
        }
        let mut flag: c_int = 0;
        let mut st = std::mem::MaybeUninit::<RealStatus>::uninit();
        // SAFETY: the head slot's request is live (reposted just above); pointers to locals.
        check(
            unsafe { (self.real.PMPI_Request_get_status)(self.ring[self.head].req, &mut flag, st.as_mut_ptr()) },
            "MPI_Request_get_status",
        )?;
        if flag == 0 {
            return Ok(None);
        }
        // SAFETY: with flag set, the real MPI filled the status.
        Ok(Some(self.take_head(unsafe { st.assume_init_ref() })))
    }

    /// The bytes of an arrived message: its ring slot (`slot_len` bytes) or its queued copy.
    #[inline(always)]
    fn msg_bytes(&self, a: &Arrived) -> &[u8] {
        match a.from {
            Source::Slot(i) => &self.ring[i].buf,
            Source::Queued(pos, meta) => match self.shmq.as_ref() {
                Some(q) => q.bytes(&meta, pos),
                None => &[],
            },
        }
    }

    /// The head slot's message arrived (status `st`); the slot waits for a repost.
    #[inline(always)]
    fn take_head(&mut self, st: &RealStatus) -> Arrived {
        let head = self.head;
        self.ctrl_recvd += 1;
        self.repost += 1;
        self.head = (head + 1) % self.ring.len();
        // The high bits of the subranks, from the header at the start of the slot (every
        // control message has one; the slot is never shorter than a header).
        // SAFETY: every slot buffer is slot_len >= HDR_LEN bytes long (allocated in `init`,
        // never resized), so the 4 bytes of `sub_hi` are inside it.
        let hi = unsafe { std::ptr::read_unaligned(self.ring[head].buf.as_ptr().add(SUB_HI) as *const u32) };
        let (dst_sub, src_sub) = wire::split_subs(st.MPI_TAG, hi);
        Arrived {
            from: Source::Slot(head),
            src_proc: st.MPI_SOURCE as usize,
            dst_sub,
            src_sub,
        }
    }

    /// The header of a message taken by `poll_ring_raw`.
    #[inline(always)]
    pub fn header(&self, a: &Arrived) -> Header {
        // A slot buffer is HDR_LEN + eager_max bytes long (never shorter than a header); a
        // queued message is as long as it was sent.
        Header::from_bytes(self.msg_bytes(a)).unwrap_or_default()
    }

    /// The payload of an eager message taken by `poll_ring_raw` (with header `hdr`), read in
    /// place; None when it claims more bytes than a slot holds.
    #[inline(always)]
    pub fn eager_payload(&self, a: &Arrived, hdr: &Header) -> Option<RingBytes> {
        let plen = hdr.len as usize;
        let bytes = self.msg_bytes(a);
        if HDR_LEN.checked_add(plen)? > bytes.len() {
            return None;
        }
        Some(RingBytes {
            ptr: bytes[HDR_LEN..].as_ptr(),
            len: plen,
        })
    }

    /// The event of a message taken by `poll_ring_raw`.
    #[inline(never)]
    pub fn event_of(&self, a: Arrived) -> Result<Event, String> {
        let hdr = self.header(&a);
        if hdr.kind == wire::KIND_ACK {
            return Ok(Event::Ack { token: hdr.token });
        }
        let payload = if hdr.kind == wire::KIND_EAGER {
            self.eager_payload(&a, &hdr).ok_or_else(|| {
                format!(
                    "a {}-byte eager message exceeds this process's eager limit (all processes need the same TOUCAN_EAGER)",
                    hdr.len
                )
            })?
        } else {
            RingBytes { ptr: ptr::null(), len: 0 }
        };
        Ok(Event::Msg {
            dst_sub: a.dst_sub,
            src_proc: a.src_proc,
            src_sub: a.src_sub,
            hdr,
            payload,
        })
    }

    /// Completes finished real requests (sends, rendezvous payloads) into `out`. Returns
    /// whether any did.
    pub fn poll_pending(&mut self, out: &mut Vec<Event>) -> Result<bool, String> {
        self.testsome(out, false)
    }

    /// `poll_pending` and the ring's head in one real `MPI_Testsome` (one progress step of the
    /// real MPI for both: with point-to-point passing through, `direct`, the requests of a
    /// wait and the ring are polled together). A message that arrived in the ring is held
    /// (`hold`): the next `poll_ring` returns it without a progress step. Returns whether
    /// anything completed.
    pub fn poll_with_ring(&mut self, out: &mut Vec<Event>) -> Result<bool, String> {
        if self.held.is_some() {
            return self.testsome(out, false);
        }
        let mut with_ring = true;
        if self.shmq.is_some() {
            match self.queue_first(out)? {
                Some(any) => return Ok(any),
                None => with_ring = self.shmq.as_mut().is_some_and(|q| q.ring_due()),
            }
        }
        if !with_ring {
            return self.testsome(out, false);
        }
        if self.repost != 0 {
            self.flush_reposts()?;
        }
        self.testsome(out, true)
    }

    /// issue 16 (shmq16): before a `testsome` with the ring, the node's queue: a message
    /// there is held (`hold`: not counted until taken again, returned first by the next
    /// poll) and the pending requests are tested alone: Some(true). None: nothing queued.
    /// The ring is then tested only when `NodeQueues::ring_due` says (a process on another
    /// node, or now and then for the real MPI's own progress).
    #[inline(always)]
    fn queue_first(&mut self, out: &mut Vec<Event>) -> Result<Option<bool>, String> {
        if self.shmq.as_mut().is_some_and(|q| q.ring_first()) {
            return Ok(None);
        }
        match self.take_queued() {
            Some(a) => {
                self.held = Some(a);
                self.testsome(out, false)?;
                Ok(Some(true))
            }
            None => Ok(None),
        }
    }

    /// Whether `poll_with_ring` holds a message of the ring.
    pub fn ring_held(&self) -> bool {
        self.held.is_some()
    }

    /// `poll_with_ring` over the ring's head and one pending direct operation only (the first
    /// in the list) when `full` is false: a wait's poll then costs the real MPI one progress
    /// step and two requests, not a pass over every pending request (MPICH 4.0.2's
    /// `MPI_Testsome` costs about 50 instructions per request on top of its progress step).
    /// When that operation finished, everything else that did is taken too. Returns whether
    /// anything completed.
    pub fn poll_direct(&mut self, out: &mut Vec<Event>, full: bool) -> Result<bool, String> {
        let first = self
            .pending
            .iter()
            .position(|p| matches!(p.action, Action::DirectSent(_) | Action::DirectRecv(..)));
        let (Some(i), false, false) = (first, full, self.held.is_some()) else {
            return self.poll_with_ring(out);
        };
        let mut with_ring = true;
        if self.shmq.is_some() {
            match self.queue_first(out)? {
                Some(any) => return Ok(any),
                None => with_ring = self.shmq.as_mut().is_some_and(|q| q.ring_due()),
            }
        }
        if with_ring && self.repost != 0 {
            self.flush_reposts()?;
        }
        if !self.testsome_of(out, with_ring, Some(i))? {
            return Ok(false);
        }
        self.testsome(out, false)?;
        Ok(true)
    }

    fn testsome(&mut self, out: &mut Vec<Event>, with_ring: bool) -> Result<bool, String> {
        self.testsome_of(out, with_ring, None)
    }

    /// `testsome` over pending entry `only` alone (and the ring's head when `with_ring`).
    fn testsome_of(&mut self, out: &mut Vec<Event>, with_ring: bool, only: Option<usize>) -> Result<bool, String> {
        // Session 29: receives the node queue completed (`collq`) first.
        let queued = self.drain_ready(out);
        Ok(self.testsome_real(out, with_ring, only)? | queued)
    }

    fn testsome_real(&mut self, out: &mut Vec<Event>, with_ring: bool, only: Option<usize>) -> Result<bool, String> {
        if self.pending.is_empty() && !with_ring {
            return Ok(false);
        }
        let np = self.pending.len();
        self.reqs.clear();
        match only {
            Some(i) => self.reqs.push(self.pending[i].req),
            None => self.reqs.extend(self.pending.iter().map(|p| p.req)),
        }
        if with_ring {
            self.reqs.push(self.ring[self.head].req);
        }
        let n = self.reqs.len();
        self.idx.resize(n, 0);
        // Statuses only when a direct operation, the ring's head or (faults16) a real
        // collective's request may report one: without them a failed request's
        // MPI_ERR_IN_STATUS says nothing of which.
        let want = self.direct_pending > 0 || with_ring || self.pending.iter().any(|p| matches!(p.action, Action::Coll(_)));
        if want {
            // SAFETY: MPI_Status is plain integers; all zeros is a valid value.
            self.stats.resize(n, unsafe { std::mem::zeroed() });
        }
        let stats = if want {
            self.stats.as_mut_ptr()
        } else {
            real::REAL_MPI_STATUSES_IGNORE as *mut RealStatus
        };
        let mut outcount: c_int = 0;
        // SAFETY: `reqs` and `idx` (and `stats` when given) have n entries.
        let rc = unsafe {
            self.real
                .PMPI_Testsome(n as c_int, self.reqs.as_mut_ptr(), &mut outcount, self.idx.as_mut_ptr(), stats)
        };
        // A truncated direct receive: each status says (only then is MPI_ERROR set).
        let in_status = rc == real::REAL_MPI_ERR_IN_STATUS as c_int && want;
        if !in_status {
            check(rc, "MPI_Testsome")?;
        }
        if outcount <= 0 || outcount == real::REAL_MPI_UNDEFINED as c_int {
            return Ok(false);
        }
        // Completed entries by index, highest first (swap_remove keeps the lower ones).
        let mut done = std::mem::take(&mut self.done);
        done.clear();
        // Index j of the tested array: pending entry j (or `only`), then the ring's head.
        let entry = |j: usize| match only {
            Some(i) if j == 0 => i,
            Some(_) => np,
            None => j,
        };
        done.extend(
            self.idx[..outcount as usize]
                .iter()
                .enumerate()
                .map(|(k, &j)| (entry(j as usize), k)),
        );
        done.sort_unstable_by_key(|&(i, _)| std::cmp::Reverse(i));
        let r = self.finish_some(&done, np, in_status, out);
        self.done = done;
        r
    }

    /// `testsome`'s completed entries `done` (pending index, status index; highest index
    /// first), `np` pending entries tested (an index of `np` is the ring's head).
    fn finish_some(&mut self, done: &[(usize, usize)], np: usize, in_status: bool, out: &mut Vec<Event>) -> Result<bool, String> {
        for &(i, k) in done {
            if i == np {
                // The ring's head: Testsome freed its request (a later MPI_Wait on the null
                // handle, at the repost, returns at once).
                self.ring[self.head].req = h(real::REAL_MPI_REQUEST_NULL);
                let st = self.stats[k];
                let a = self.take_head(&st);
                self.hold(a);
                continue;
            }
            let p = self.pending.swap_remove(i);
            match p.action {
                Action::Free => {}
                Action::Sent(token) => out.push(Event::SendDone { token }),
                Action::Received(token) => out.push(Event::RecvDone { token, temp: p.buf }),
                Action::Coll(token) => {
                    // faults16: a real collective's failed request (a truncating receive)
                    // ends its operation with the error, reported by its owner.
                    let code = if in_status {
                        self.stats[k].MPI_ERROR
                    } else {
                        real::REAL_MPI_SUCCESS as c_int
                    };
                    self.dup_done(token, p.comm.as_deref().copied());
                    out.push(Event::CollDone {
                        token,
                        buf: p.buf.unwrap_or_default(),
                        comm: p.comm.map(|c| *c),
                        error: self.coll_error(code),
                    });
                    continue;
                }
                Action::DirectSent(_) | Action::DirectRecv(..) => {
                    let st = self.stats[k];
                    let err = if in_status { st.MPI_ERROR } else { real::REAL_MPI_SUCCESS as c_int };
                    let e = self.direct_done(&p.action, p.buf, &st, err)?;
                    out.push(e);
                    continue;
                }
            }
            if in_status && self.stats[k].MPI_ERROR != real::REAL_MPI_SUCCESS as c_int {
                return Err(real_failed(self.stats[k].MPI_ERROR, "MPI_Testsome"));
            }
        }
        Ok(true)
    }

    /// Session 25 (faults16): the MPI error class of real error code `code` of a real
    /// collective's request (0 for success): MPI_ERR_TRUNCATE for the real MPI's truncation,
    /// MPI_ERR_OTHER for anything else (the job goes on; the owner reports it).
    pub(super) fn coll_error(&self, code: c_int) -> i32 {
        if code == real::REAL_MPI_SUCCESS as c_int {
            return 0;
        }
        let mut class: c_int = 0;
        // SAFETY: a plain query of a code the real MPI returned.
        let known = unsafe { self.real.PMPI_Error_class(code, &mut class) } == real::REAL_MPI_SUCCESS as c_int;
        if known && class == real::REAL_MPI_ERR_TRUNCATE as c_int {
            crate::consts::MPI_ERR_TRUNCATE
        } else {
            crate::consts::MPI_ERR_OTHER
        }
    }

    /// Every process's `local` bytes (all the same length), in process order: one real
    /// `MPI_Allgather` on the real world (for the end-of-run report; collective).
    pub fn allgather(&self, local: &[u8]) -> Result<Vec<u8>, String> {
        allgather_bytes(&self.real, h(real::REAL_MPI_COMM_WORLD), self.nproc, local)
    }

    pub fn wtime(&self) -> f64 {
        // SAFETY: no arguments.
        unsafe { self.real.PMPI_Wtime() }
    }

    pub fn abort(&self, code: i32) -> ! {
        // SAFETY: aborting the real world ends every process of the job.
        unsafe { self.real.PMPI_Abort(h(real::REAL_MPI_COMM_WORLD), code) };
        // SAFETY: ending the process after the real MPI failed to.
        unsafe { libc::_exit(code.max(1)) }
    }

    /// Completes every outstanding send, then finalizes the real MPI.
    pub fn finalize(&mut self) -> Result<(), String> {
        let mut ev = Vec::new();
        // Direct operations still pending were never matched (the program left them): cancel
        // them, as the ring's receives are below, so the loop ends.
        for p in self.pending.iter_mut() {
            if matches!(p.action, Action::DirectSent(_) | Action::DirectRecv(..)) {
                // SAFETY: a live request of ours.
                unsafe { self.real.PMPI_Cancel(&mut p.req) };
            }
        }
        // issue 16 (shmq16): messages still in the outbox (their queue was full) go out first:
        // a peer may wait for one of them; the polls below push them as room appears. A queue
        // that stays full for `OUTBOX_GRACE` seconds belongs to a process that finished without
        // them (its program left them unmatched): they are dropped, as the real MPI's finalize
        // drops unmatched eager messages, rather than waiting for ever.
        let start = self.wtime();
        loop {
            let outboxed = self.shmq.as_ref().is_some_and(|q| q.outboxed > 0);
            if !self.has_pending() && (!outboxed || self.wtime() - start > OUTBOX_GRACE) {
                break;
            }
            // Control messages arriving now have nobody to go to.
            while self.poll_ring()?.is_some() {}
            self.poll_pending(&mut ev)?;
            ev.clear();
        }
        self.flush_reposts()?;
        if let Some(mut r) = self.rma.take() {
            // SAFETY: collective at finalize; every window operation was flushed by then.
            unsafe { r.free(&self.real)? };
        }
        // SAFETY: the ring's receives are ours; cancelling then completing them frees them
        // before their buffers go away. The communicators were created by us.
        unsafe {
            for slot in self.ring.iter_mut() {
                self.real.PMPI_Cancel(&mut slot.req);
                self.real.PMPI_Wait(&mut slot.req, real::REAL_MPI_STATUS_IGNORE as *mut RealStatus);
            }
            self.real.PMPI_Comm_free(&mut self.ctrl);
            self.real.PMPI_Comm_free(&mut self.data);
            self.real.PMPI_Cancel(&mut self.det_req);
            self.real
                .PMPI_Wait(&mut self.det_req, real::REAL_MPI_STATUS_IGNORE as *mut RealStatus);
            self.real.PMPI_Comm_free(&mut self.det);
            self.real.PMPI_Comm_free(&mut self.coll);
            // Keep UCX progressing while the real finalize waits for the other processes.
            super::finalize::install(self.real.PMPI_Finalize as usize);
            let r = check(self.real.PMPI_Finalize(), "MPI_Finalize");
            // Nothing reads the node's queue any more (the peers' mappings stay theirs).
            self.shmq = None;
            r
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case(0)]
    #[case(1)]
    #[case(INLINE - 1)]
    #[case(INLINE)]
    #[case(INLINE + 1)]
    #[case(4096)]
    fn payload_copies_keep_every_byte(#[case] n: usize) {
        let data: Vec<u8> = (0..n).map(|i| (i * 7 + 3) as u8).collect();
        let p = Payload::copy_of(&data);
        assert_eq!(p.as_slice(), &data[..]);
        assert_eq!(p.len(), n);
        assert_eq!(p.is_empty(), n == 0);
        assert_eq!(matches!(p.0, Repr::Inline { .. }), n <= INLINE);
        assert_eq!(Payload::from_vec(data.clone()).as_slice(), &data[..]);
    }
}
