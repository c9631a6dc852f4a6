//! The process's MPI state: per-subrank queues and handle tables, the request slab and the
//! transport, behind one lock. Nothing here blocks or yields: blocking lives in
//! `core::blocking`, which releases the lock before parking the subrank.

use super::comm::{CommRef, Group, CTX_SELF, CTX_WORLD};
use super::error::{err, MpiResult};
use super::matching::{Posted, Unexp};
use super::request::{Greq, ReqId, Request, Slab, Status};
use crate::abi::consts as c;
use crate::sched;
use crate::sched::lock::{Guard, Lock};
use crate::transport::engine::RING;
use crate::transport::{wire, Event, Transport};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// Launch-time settings (from the environment).
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// Subranks per worker (`TOUCAN_V`).
    pub v: usize,
    /// Worker threads per process (`TOUCAN_WORKERS`; SMP mode when more than one).
    pub workers: usize,
    pub stack: usize,
    /// Largest inter-process message sent eagerly (header + payload in one real message).
    pub eager_max: usize,
    /// Largest unmatched intra-process message copied into the receiver's queue; larger ones
    /// wait for the receive and are copied once, straight into its buffer.
    pub intra_eager_max: usize,
    /// Pause of the background progress thread between looks (µs); 0: no thread.
    pub progress_us: usize,
    /// The inter-process level of collectives may use the real MPI's collectives (`realcoll`).
    pub real_coll: bool,
    /// Communicators derived from one with a twin get real twins too (`TOUCAN_REAL_COLL_DERIVED`,
    /// on by default).
    pub real_coll_derived: bool,
    /// Bytes per rank from which a reduction goes to the real MPI (Barrier: when 0).
    pub real_coll_min: usize,
    /// Bytes from which a broadcast goes to the real MPI.
    pub real_bcast_min: usize,
}

impl Config {
    /// Subranks per process: V for each worker.
    #[inline]
    pub fn local(&self) -> usize {
        self.v * self.workers
    }

    /// Home worker of local subrank `sub` (the original rank it stands for, within the
    /// process): the layout of SMP mode, computed only here.
    #[inline]
    pub fn home(&self, sub: usize) -> usize {
        sub / self.v
    }
}

/// One subrank's MPI state.
pub struct Local {
    pub world_rank: u32,
    pub posted: VecDeque<Posted>,
    pub unexpected: VecDeque<Unexp>,
    /// Communicator handles: index 0 is MPI_COMM_WORLD, 1 MPI_COMM_SELF.
    pub comms: Vec<Option<CommRef>>,
    pub groups: Vec<Option<Arc<Group>>>,
    /// Messages taken by MPI_Mprobe, waiting for MPI_Mrecv.
    pub messages: HashMap<u64, Unexp>,
    pub next_message: u64,
    pub initialized: bool,
    pub finalized: bool,
    /// Attached buffer for buffered sends (address, size) and bytes in use.
    pub bsend: Option<(usize, usize)>,
    pub bsend_used: usize,
    /// MPI_Comm_create_group calls so far per (parent context, group hash, tag).
    pub group_creations: HashMap<(u64, u64, i32), u64>,
    /// Error codes added by MPI_Add_error_class/code: (code, class, string if one was added).
    pub errors: Vec<(i32, i32, Option<String>)>,
    /// Attribute keyvals (MPI_Comm/Type_create_keyval), index = keyval - KEYVAL_BASE.
    pub keyvals: Vec<Keyval>,
    /// Attributes set on objects: (kind, handle) -> (keyval, value), in the order set.
    pub attrs: HashMap<(AttrKind, usize), Vec<(i32, usize)>>,
    /// What a blocking receive or probe of this rank waits for (deadlock reports).
    pub waiting: Option<super::matching::Pattern>,
    /// The blocking receive this rank is parked in, when it waits without a request.
    pub direct: Option<super::matching::Direct>,
    /// Region state (`Toucan_Region`): the requests of the current superblock.
    pub region: super::region::Superblock,
    /// Generalized requests the application completed (`MPI_Grequest_complete`) whose status
    /// the query callback has not given yet; settled by `abi::greq::settle`.
    pub greq_ready: Vec<ReqId>,
    /// Free callbacks of generalized requests freed under the lock, to run outside it.
    pub greq_frees: Vec<Greq>,
}

/// The kind of object an attribute keyval is for (a keyval of one kind is invalid on another).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AttrKind {
    Comm,
    Type,
}

/// An attribute key: its kind, callbacks (C function pointers, or the predefined
/// 0 = NULL_COPY/NULL_DELETE and 1 = DUP) and extra state.
#[derive(Clone, Copy, Debug)]
pub struct Keyval {
    pub kind: AttrKind,
    pub copy: usize,
    pub delete: usize,
    pub extra: usize,
    pub freed: bool,
}

pub struct State {
    pub cfg: Config,
    pub myproc: usize,
    pub nproc: usize,
    pub locals: Vec<Local>,
    pub reqs: Slab,
    pub tp: Transport,
    events: Vec<Event>,
    pub real_version: String,
    pub det: super::deadlock::Detector,
    /// Meeting points of the two-level collectives.
    pub meets: super::hier::Meets,
    /// Real communicators and real collectives in flight (`realcoll`).
    pub rcoll: super::realcoll::RealComms,
}

// SAFETY: the raw pointers State holds (receive targets, persistent arguments, a sibling's
// send buffer) point into user buffers that MPI obliges the owning rank to keep valid until
// the operation completes; State is only ever touched under the STATE lock.
unsafe impl Send for State {}

static STATE: Lock<Option<State>> = Lock::new(None);

/// Runs `f` on the process state. Never call `sched::park` inside `f`.
pub fn with<R>(f: impl FnOnce(&mut State) -> R) -> MpiResult<R> {
    let mut g = STATE.lock();
    match g.as_mut() {
        Some(s) => Ok(f(s)),
        None => err(c::MPI_ERR_OTHER, "MPI is not initialized"),
    }
}

/// `with`, always inlined: for the few hot paths (a blocking send or receive of a small
/// message), where a call per lock costs a noticeable share of the latency.
#[inline(always)]
pub fn with_hot<R>(f: impl FnOnce(&mut State) -> R) -> MpiResult<R> {
    let mut g = STATE.lock();
    match g.as_mut() {
        Some(s) => Ok(f(s)),
        None => not_initialized(),
    }
}

/// The state lock, held, for the request-free fast paths of MPI_Send and MPI_Recv: they
/// run straight-line under it, without a closure call. Never park while holding it.
#[inline(always)]
pub fn lock() -> Guard<'static, Option<State>> {
    STATE.lock()
}

#[cold]
#[inline(never)]
fn not_initialized<R>() -> MpiResult<R> {
    err(c::MPI_ERR_OTHER, "MPI is not initialized")
}

/// Like `with`, but gives up (None) when the lock is held: for fatal-error paths that may
/// run inside a locked section.
pub fn try_with<R>(f: impl FnOnce(&mut State) -> R) -> Option<R> {
    let mut g = STATE.try_lock()?;
    g.as_mut().map(f)
}

/// Takes the state lock for good, waiting at most `wait` for it (the caller may hold it
/// already: then it gives up): before the real MPI is aborted, so that no other thread (other
/// workers, the progress thread) is inside it meanwhile.
pub fn freeze(wait: std::time::Duration) {
    let t0 = std::time::Instant::now();
    loop {
        if let Some(g) = STATE.try_lock() {
            std::mem::forget(g);
            return;
        }
        if t0.elapsed() >= wait {
            return;
        }
        crate::sched::timer::os_sleep(std::time::Duration::from_millis(1));
    }
}

/// Whether the real MPI has been initialised in this process.
pub fn exists() -> bool {
    STATE.lock().is_some()
}

/// Installs the state once the real MPI is up.
pub fn install(s: State) {
    *STATE.lock() = Some(s);
}

/// Takes the state out (at process finalize).
pub fn take() -> Option<State> {
    STATE.lock().take()
}

impl State {
    pub fn new(cfg: Config, tp: Transport, real_version: String) -> State {
        let (myproc, nproc) = (tp.myproc, tp.nproc);
        let world = Arc::new(Group {
            ranks: (0..(nproc * cfg.local()) as u32).collect(),
        });
        let locals = (0..cfg.local())
            .map(|sub| {
                let w = (myproc * cfg.local() + sub) as u32;
                let self_group = Arc::new(Group { ranks: vec![w] });
                Local {
                    world_rank: w,
                    posted: VecDeque::new(),
                    unexpected: VecDeque::new(),
                    comms: vec![
                        Some(CommRef::new(CTX_WORLD, world.clone(), w as i32, "MPI_COMM_WORLD")),
                        Some(CommRef::new(CTX_SELF, self_group, 0, "MPI_COMM_SELF")),
                    ],
                    groups: Vec::new(),
                    messages: HashMap::new(),
                    next_message: 0,
                    initialized: false,
                    finalized: false,
                    bsend: None,
                    bsend_used: 0,
                    group_creations: HashMap::new(),
                    errors: Vec::new(),
                    keyvals: Vec::new(),
                    attrs: HashMap::new(),
                    waiting: None,
                    direct: None,
                    region: Default::default(),
                    greq_ready: Vec::new(),
                    greq_frees: Vec::new(),
                }
            })
            .collect();
        let mut s = State {
            cfg,
            myproc,
            nproc,
            locals,
            reqs: Slab::default(),
            tp,
            events: Vec::new(),
            real_version,
            det: super::deadlock::Detector::new(),
            meets: Default::default(),
            rcoll: Default::default(),
        };
        super::realcoll::install_world(&mut s);
        s
    }

    pub fn world_size(&self) -> usize {
        self.nproc * self.cfg.local()
    }

    /// (process, subrank) hosting world rank `w`: the block mapping, computed only here (with
    /// W workers of V subranks each, a process holds W·V consecutive ranks).
    #[inline]
    pub fn locate(&self, w: u32) -> (usize, usize) {
        let v = self.cfg.local();
        if v.is_power_of_two() {
            // A shift and a mask instead of a division on every send.
            (w as usize >> v.trailing_zeros(), w as usize & (v - 1))
        } else {
            (w as usize / v, w as usize % v)
        }
    }

    pub fn new_request(&mut self, owner: usize, comm: usize) -> ReqId {
        let mut r = Request::new(owner, comm);
        let cur = sched::current();
        if cur != usize::MAX {
            r.waiter = cur;
        }
        let id = self.reqs.insert(r);
        if self.locals[owner].region.tracking {
            super::region::track(self, owner, id);
        }
        id
    }

    /// Marks a request complete and wakes its owner.
    pub fn complete(&mut self, id: ReqId) {
        let Some(r) = self.reqs.get_mut(id) else { return };
        r.complete = true;
        let (owner, waiter) = (r.owner, r.waiter);
        let (freed, bsend) = (r.freed, r.bsend_bytes);
        if bsend > 0 {
            self.locals[owner].bsend_used -= bsend;
        }
        if freed && r.persist.is_none() {
            self.drop_request(id);
        }
        // The running subrank needs no wake-up (it checks its requests before parking).
        if waiter != sched::current() {
            sched::wake(waiter);
        }
    }

    /// Removes request `id`; a generalized request's free callback is queued for its owner.
    pub fn drop_request(&mut self, id: ReqId) {
        if let Some(Request { owner, greq: Some(g), .. }) = self.reqs.remove(id) {
            self.locals[owner].greq_frees.push(g);
        }
    }

    /// One awaited event of request `id` happened.
    pub fn event_done(&mut self, id: ReqId) {
        let Some(r) = self.reqs.get_mut(id) else { return };
        r.pending = r.pending.saturating_sub(1);
        if r.pending == 0 {
            self.complete(id);
        }
    }

    pub fn status_of(&self, id: ReqId) -> Option<Status> {
        self.reqs.get(id).map(|r| r.status)
    }

    /// Drives the transport and hands what arrived to matching. Returns whether anything
    /// happened. Errors of the real MPI end the job: they mean lost messages.
    ///
    /// Control messages are handled as they come out of the ring (an eager payload is read
    /// in place); one eager message ends the step (see `Transport::poll_ring`).
    pub fn progress(&mut self) -> bool {
        super::background::stepped();
        let mut any = false;
        for _ in 0..RING {
            let e = match self.tp.poll_ring() {
                Ok(Some(e)) => e,
                Ok(None) => break,
                Err(e) => progress_failed(e),
            };
            any = true;
            let eager = matches!(&e, Event::Msg { hdr, .. } if hdr.kind == wire::KIND_EAGER);
            self.dispatch(e);
            if eager {
                break;
            }
        }
        if self.tp.has_pending() {
            match self.tp.poll_pending(&mut self.events) {
                Ok(a) => any |= a,
                Err(e) => progress_failed(e),
            }
            let mut ev = std::mem::take(&mut self.events);
            for e in ev.drain(..) {
                self.dispatch(e);
            }
            self.events = ev;
        }
        any
    }

    #[inline(always)]
    pub(super) fn dispatch(&mut self, e: Event) {
        match e {
            Event::Msg {
                dst_sub,
                src_proc,
                src_sub,
                hdr,
                payload,
            } => self.on_message(dst_sub, src_proc, src_sub, hdr, payload),
            Event::Ack { token } | Event::SendDone { token } => {
                if token != 0 {
                    self.event_done(token)
                }
            }
            Event::RecvDone { token, temp } => self.on_rndv_arrived(token, temp),
            Event::CollDone { token, buf, comm } => super::realcoll::on_done(self, token, buf, comm),
        }
    }
}

#[cold]
#[inline(never)]
pub(super) fn progress_failed(e: String) -> ! {
    crate::abi::fatal(&format!("progress engine: {e}"))
}
