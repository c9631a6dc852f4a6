//! Requests: one slab per subrank (in its `Local`), handles that name their owner and carry a
//! generation, so a freed handle is caught.

use super::datatype::held::Held;
use super::datatype::DtRef;
use super::error::MpiResult;
use super::p2p::tlsbuf::Bounce;
use super::p2p::SendMode;
use std::sync::atomic::{AtomicU64, Ordering};

/// What `MPI_Status` will say about a completed operation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Status {
    pub source: i32,
    pub tag: i32,
    pub error: i32,
    /// Bytes received (sent, for a send: 0).
    pub bytes: u64,
    pub cancelled: bool,
}

impl Status {
    /// The status of a completed send (no source, tag or bytes to report), as the built-in
    /// complete send (`Slab::done_send`) gives it.
    #[inline]
    pub fn sent() -> Status {
        Status {
            source: crate::consts::MPI_ANY_SOURCE,
            tag: crate::consts::MPI_ANY_TAG,
            ..Status::default()
        }
    }

    /// The status of a request with nothing to report (MPI_REQUEST_NULL, inactive persistent).
    pub fn empty() -> Status {
        use crate::consts as c;
        Status {
            source: c::MPI_ANY_SOURCE,
            tag: c::MPI_ANY_TAG,
            error: c::MPI_SUCCESS,
            bytes: 0,
            cancelled: false,
        }
    }
}

/// Arguments of a persistent request, replayed by `MPI_Start`.
#[derive(Clone)]
pub enum Persist {
    Send {
        buf: *const u8,
        count: usize,
        dt: DtRef,
        dest: i32,
        tag: i32,
        comm: usize,
        mode: SendMode,
    },
    Recv {
        buf: *mut u8,
        count: usize,
        dt: DtRef,
        src: i32,
        tag: i32,
        comm: usize,
    },
    /// A persistent collective (`MPI_Bcast_init`, ...).
    Coll(std::rc::Rc<super::coll::CollOp>),
    /// A persistent collective among the subranks of one process (`coll::teamcall`).
    Team(std::sync::Arc<super::coll::teamcall::Call>),
}

/// Where a receive puts its data.
#[derive(Clone)]
pub struct RecvTarget {
    pub buf: *mut u8,
    pub count: usize,
    /// Session 26: held without a count for a predefined type (`datatype::held`).
    pub dt: Held,
}

/// Runs the query callbacks of the running subrank's completed generalized requests (they
/// are application code, called outside the state lock). The C boundary installs it
/// (`abi::greq::settle`) when the program starts its first generalized request; until then
/// there is nothing to settle.
static GREQ_SETTLE: std::sync::OnceLock<fn() -> MpiResult<()>> = std::sync::OnceLock::new();

/// Installs the query-callback runner of generalized requests (once; later calls are no-ops).
pub fn on_greq_settle(f: fn() -> MpiResult<()>) {
    let _ = GREQ_SETTLE.set(f);
}

/// Settles the running subrank's completed generalized requests (see [`on_greq_settle`]).
pub fn settle_greqs() -> MpiResult<()> {
    GREQ_SETTLE.get().map_or(Ok(()), |f| f())
}

/// The callbacks of a generalized request (`MPI_Grequest_start`): C function pointers and the
/// application's extra state, called by `abi::greq` outside the state lock.
#[derive(Clone, Copy, Debug)]
pub struct Greq {
    pub query: usize,
    pub free: usize,
    pub cancel: usize,
    pub extra: usize,
    /// `MPI_Grequest_complete` was called.
    pub done: bool,
}

pub struct Request {
    /// Local subrank that owns it.
    pub owner: usize,
    /// Scheduler task to wake on completion (the owner, or a helper task working for it).
    pub waiter: usize,
    pub complete: bool,
    /// Events still awaited (payload sent, acknowledgement, ...).
    pub pending: u32,
    pub status: Status,
    pub recv: Option<RecvTarget>,
    pub is_send: bool,
    /// A send's destination (world rank) and tag, for the deadlock report.
    pub send_to: Option<(u32, i32)>,
    /// Persistent requests survive completion (inactive until the next start).
    pub persist: Option<Box<Persist>>,
    pub active: bool,
    /// `MPI_Request_free` was called: drop it as soon as it completes.
    pub freed: bool,
    /// Bytes of the attached Bsend buffer this (internal) send holds until it completes.
    pub bsend_bytes: usize,
    /// Communicator handle, for error reports.
    pub comm: usize,
    /// Packed or buffered send data the request owns until a sibling's receive copies it.
    /// issue 16 (p2p10): the rare fields are boxed (one word each when absent), so that the
    /// common receive and send entry is small to build and to drop.
    pub keep: Option<Box<Vec<u8>>>,
    /// A generalized request's callbacks.
    pub greq: Option<Box<Greq>>,
    /// The stand-in for a receive buffer in the program's thread-locals (`tlsbuf`).
    pub bounce: Option<Box<Bounce>>,
    /// Session 25 (nbcred16): a two-rank nonblocking reduction's combine, run once when the
    /// owner takes the completed receive (`settle`).
    pub fold: Option<Box<super::coll::pairfold::Fold>>,
    /// issue 16 (p2p8): a lean direct operation's real request (`p2p::direct`), not yet
    /// handed to the transport's pending list.
    pub lean: Option<Lean>,
}

/// issue 16 (p2p8): a direct operation (`p2p::direct`) whose real request its own request
/// keeps: no pending entry, no posted entry, no event. The wait that finds it complete
/// finishes it; `State::unlean` registers it (pending list, posted queue) when the general
/// path may look at it (a progress step of the engine: its owner parked, Test, Waitany...;
/// Cancel, Request_free).
#[derive(Clone, Copy)]
pub struct Lean {
    pub req: crate::transport::real::RRequest,
    /// A receive's pattern (communicator context, source and tag as the program gave them).
    pub pat: super::p2p::matching::Pattern,
    /// A receive's buffer: `count` elements of the contiguous predefined datatype `dt`
    /// (a handle: no reference count until it is registered).
    pub buf: *mut u8,
    pub count: usize,
    pub dt: usize,
}

impl Request {
    /// Whether dropping the entry frees nothing: no boxed part, and a receive's datatype
    /// (if any) a predefined one borrowed from the table (`Held::Table`).
    #[inline(always)]
    fn owns_nothing(&self) -> bool {
        self.persist.is_none()
            && self.keep.is_none()
            && self.greq.is_none()
            && self.bounce.is_none()
            && self.fold.is_none()
            && self.recv.as_ref().is_none_or(|t| t.dt.predefined())
    }

    pub fn new(owner: usize, comm: usize) -> Request {
        Request {
            owner,
            waiter: owner,
            complete: false,
            pending: 0,
            status: Status::empty(),
            recv: None,
            is_send: false,
            send_to: None,
            persist: None,
            active: true,
            freed: false,
            bsend_bytes: 0,
            comm,
            keep: None,
            greq: None,
            bounce: None,
            fold: None,
            lean: None,
        }
    }

    /// Makes it a send to world rank `dest` with `tag` (its status reports no source or tag).
    pub fn mark_send(&mut self, dest: u32, tag: i32) {
        self.is_send = true;
        self.send_to = Some((dest, tag));
        self.status = Status::sent();
    }

    /// Makes `t` the receive's target (through a bounce buffer if it lies in the program's
    /// thread-locals).
    ///
    /// # Safety
    /// `t` is a receive buffer of the running subrank, which owns this request.
    #[inline(always)]
    pub unsafe fn set_recv(&mut self, t: RecvTarget) {
        // Session 27 (msgrate27): without a swapped thread-local block in this process (a
        // program without `__thread` variables) no buffer lies in one: the target goes in
        // place, without `receive_target`'s moves of the target and of an empty bounce (some
        // 60 instructions per receive).
        if !crate::sched::swap::active() {
            self.recv = Some(t);
            self.bounce = None;
            return;
        }
        // SAFETY: forwarded from the caller.
        unsafe { self.set_recv_swapped(t) }
    }

    /// `set_recv` when the program's thread-locals are swapped: the buffer may lie in them.
    ///
    /// # Safety
    /// As `set_recv`.
    #[inline(never)]
    unsafe fn set_recv_swapped(&mut self, t: RecvTarget) {
        // SAFETY: forwarded from the caller.
        let (t, b) = unsafe { super::p2p::tlsbuf::receive_target(t) };
        self.recv = Some(t);
        self.bounce = b.map(Box::new);
    }

    /// Copies a completed receive's bytes from its bounce buffer, if it has one, and runs its
    /// reduction's combine, if it has one (session 25: `pairfold`): once, whichever completion
    /// call takes it first.
    ///
    /// # Safety
    /// The request is complete, and its owner (or a helper task working for it) is running.
    pub unsafe fn settle(&mut self) {
        if let Some(b) = self.bounce.take() {
            debug_assert_eq!(crate::sched::swap::owner(), self.owner);
            // SAFETY: forwarded from the caller.
            unsafe { (*b).settle() };
        }
        if let Some(f) = self.fold.take() {
            // SAFETY: forwarded from the caller.
            unsafe { self.settle_fold(*f) };
        }
    }

    /// Runs a reduction's combine (not after a failed receive: its error is the result).
    ///
    /// # Safety
    /// As `settle`.
    #[cold]
    #[inline(never)]
    unsafe fn settle_fold(&self, f: super::coll::pairfold::Fold) {
        if self.status.error == crate::consts::MPI_SUCCESS {
            debug_assert_eq!(crate::sched::swap::owner(), self.owner);
            // SAFETY: forwarded from the caller; the receive completed without error.
            unsafe { f.run() };
        }
    }
}

const IDX_BITS: u32 = 24;
/// User request handles live above the predefined range (MPI_REQUEST_NULL is 0x180).
const HANDLE_BASE: u64 = 1 << 40;
/// The owning subrank's index sits above HANDLE_BASE's bit.
const OWNER_SHIFT: u32 = 41;

/// Slab of one subrank's requests; a handle is
/// `owner << 41 | HANDLE_BASE | generation << 24 | index`.
#[derive(Default)]
pub struct Slab {
    owner: usize,
    slots: Vec<(u32, Option<Request>)>,
    free: Vec<usize>,
    /// issue 16 (p2p9): the owner's built-in complete send (`done_send`), once made.
    done: Option<ReqId>,
}

impl Drop for Slab {
    fn drop(&mut self) {
        if let (Some(id), Some(d)) = (self.done, DONE_SEND.get(self.owner)) {
            let _ = d.compare_exchange(id, 0, Ordering::Relaxed, Ordering::Relaxed);
        }
    }
}

pub type ReqId = u64;

/// Session 26: each local subrank's built-in complete send (`Slab::done_send`) once made, by
/// owner, so that MPI_Wait and MPI_Test recognise it from its handle alone (`is_done_handle`),
/// without the state's read side, the owner's lock and a look at its slab (about 200 of the
/// 250 instructions of such a wait). A slab clears its entry when it goes.
static DONE_SEND: [AtomicU64; DONE_OWNERS] = [const { AtomicU64::new(0) }; DONE_OWNERS];
const DONE_OWNERS: usize = 1 << 16;

/// Whether `id` is the built-in complete send of subrank `owner`.
#[inline(always)]
pub fn is_done_handle(owner: usize, id: ReqId) -> bool {
    owner_of(id) == Some(owner) && DONE_SEND.get(owner).is_some_and(|d| d.load(Ordering::Relaxed) == id)
}

/// The local subrank whose slab holds request `id` (None: not a request handle).
#[inline]
pub fn owner_of(id: ReqId) -> Option<usize> {
    (id & HANDLE_BASE != 0).then_some((id >> OWNER_SHIFT) as usize)
}

/// Index bits of a request handle in its 31-bit form (the Fortran integer, abi/convert.rs).
const SHORT_IDX_BITS: u32 = 15;

/// The 31-bit form of request `id` of local subrank `owner`: its generation (16 bits) and its
/// index (15 bits), when `id` is one of `owner`'s requests and its index is below `2^15 - 1`
/// (so the form is never all ones). None otherwise (another subrank's request, not a request,
/// or more than 32766 live requests). The owner is left out: [`from_short`] puts it back.
#[inline]
pub fn to_short(id: ReqId, owner: usize) -> Option<u32> {
    let idx = id & ((1 << IDX_BITS) - 1);
    // (Exactly owner's HANDLE_BASE bits above the generation, as Slab::locate checks.)
    let fits = id >> (IDX_BITS + 16) == (owner as u64) << 1 | 1 && idx < (1 << SHORT_IDX_BITS) - 1;
    fits.then_some((((id >> IDX_BITS) & 0xffff) << SHORT_IDX_BITS | idx) as u32)
}

/// The request handle of subrank `owner` whose 31-bit form (from [`to_short`]) is `short`.
#[inline]
pub fn from_short(short: u32, owner: usize) -> ReqId {
    let short = short as u64 & 0x7fff_ffff;
    let (gen, idx) = (short >> SHORT_IDX_BITS, short & ((1 << SHORT_IDX_BITS) - 1));
    (owner as u64) << OWNER_SHIFT | HANDLE_BASE | gen << IDX_BITS | idx
}

impl Slab {
    /// The slab of local subrank `owner`.
    pub fn new(owner: usize) -> Slab {
        Slab {
            owner,
            slots: Vec::new(),
            free: Vec::new(),
            done: None,
        }
    }

    pub fn insert(&mut self, r: Request) -> ReqId {
        let (id, slot) = self.vacant();
        *slot = Some(r);
        id
    }

    /// A new request of `comm` (`Request::new`) that `waiter` waits for, built where it is
    /// kept (a request is a few hundred bytes: `insert` of one built on the stack copies it).
    #[inline]
    pub fn insert_new(&mut self, comm: usize, waiter: usize) -> ReqId {
        let owner = self.owner;
        let (id, slot) = self.vacant();
        let r = slot.insert(Request::new(owner, comm));
        r.waiter = waiter;
        id
    }

    /// A free slot, its generation advanced, and the handle it gives.
    #[inline]
    fn vacant(&mut self) -> (ReqId, &mut Option<Request>) {
        let idx = match self.free.pop() {
            Some(i) => i,
            None => {
                self.slots.push((0, None));
                self.slots.len() - 1
            }
        };
        let slot = &mut self.slots[idx];
        slot.0 = slot.0.wrapping_add(1) & 0xffff;
        let id = (self.owner as u64) << OWNER_SHIFT | HANDLE_BASE | ((slot.0 as u64) << IDX_BITS) | idx as u64;
        (id, &mut slot.1)
    }

    #[inline]
    fn locate(&self, id: ReqId) -> Option<usize> {
        // Exactly this slab's owner, HANDLE_BASE, a generation and an index: no other bit may
        // be set (a garbage handle must not alias a live request).
        if id >> (IDX_BITS + 16) != (self.owner as u64) << 1 | 1 {
            return None;
        }
        let idx = (id & ((1 << IDX_BITS) - 1)) as usize;
        let gen = ((id >> IDX_BITS) & 0xffff) as u32;
        match self.slots.get(idx) {
            Some((g, Some(_))) if *g == gen => Some(idx),
            _ => None,
        }
    }

    /// issue 16 (p2p11): the slot of live request `id`, for a caller that looks at the
    /// entry and may then drop it (`at_mut`, `discard_at`) with one look-up, not two.
    #[inline]
    pub fn index_of(&self, id: ReqId) -> Option<usize> {
        self.locate(id)
    }

    /// The live request in slot `i` (from `index_of`, no entry removed since).
    #[inline]
    pub fn at_mut(&mut self, i: usize) -> Option<&mut Request> {
        self.slots.get_mut(i).and_then(|s| s.1.as_mut())
    }

    pub fn get(&self, id: ReqId) -> Option<&Request> {
        self.locate(id).and_then(|i| self.slots[i].1.as_ref())
    }

    pub fn get_mut(&mut self, id: ReqId) -> Option<&mut Request> {
        self.locate(id).and_then(move |i| self.slots[i].1.as_mut())
    }

    /// issue 16 (p2p9): the handle of the owner's built-in complete send, made at the first
    /// call: what `MPI_Isend` returns for a send that completed in the call (an eager message
    /// to another process), as MPICH returns its built-in complete request
    /// (`MPIR_Request_create_complete`). It is never freed: taking it (Wait, Test,
    /// Request_free...) gives a send's status and leaves it in place (`discard`, `remove`),
    /// so any number of the program's handles may name it at once, and a send that completes
    /// at once costs no slab entry and no free. Its communicator is MPI_COMM_WORLD (a complete
    /// send reports no error).
    #[inline]
    pub fn done_send(&mut self) -> ReqId {
        // Session 27 (msgrate27): inlined for every eager MPI_Isend; made once, out of line.
        match self.done {
            Some(id) => id,
            None => self.make_done_send(),
        }
    }

    /// `done_send`'s first call: the entry is made and recorded.
    #[cold]
    #[inline(never)]
    fn make_done_send(&mut self) -> ReqId {
        let owner = self.owner;
        let (id, slot) = self.vacant();
        let r = slot.insert(Request::new(owner, crate::consts::MPI_COMM_WORLD));
        r.mark_send(0, 0);
        r.send_to = None;
        r.complete = true;
        self.done = Some(id);
        if let Some(d) = DONE_SEND.get(owner) {
            d.store(id, Ordering::Relaxed);
        }
        id
    }

    /// Whether `id` is the built-in complete send (`done_send`).
    #[inline]
    pub fn is_done_send(&self, id: ReqId) -> bool {
        self.done == Some(id)
    }

    pub fn remove(&mut self, id: ReqId) -> Option<Request> {
        if self.is_done_send(id) {
            return None;
        }
        let i = self.locate(id)?;
        self.free.push(i);
        self.slots[i].1.take()
    }

    /// Removes request `id`, dropping it where it lies (no move of the whole request out of
    /// its slot, as `remove` makes); a generalized request's callbacks come back.
    pub fn discard(&mut self, id: ReqId) -> Option<Greq> {
        if self.is_done_send(id) {
            return None;
        }
        let i = self.locate(id)?;
        self.discard_at(i)
    }

    /// `discard` of the live request in slot `i` (from `index_of`; not the built-in
    /// complete send, which is never dropped).
    #[inline]
    pub fn discard_at(&mut self, i: usize) -> Option<Greq> {
        let slot = &mut self.slots.get_mut(i)?.1;
        let r = slot.as_mut()?;
        let g = r.greq.take().map(|g| *g);
        if r.owns_nothing() {
            // Session 27 (msgrate27): the common receive or send entry owns nothing (no box, a
            // predefined datatype held without a count), so the drop glue's walk over every
            // field (some 60 instructions per message) has nothing to free: the entry is
            // forgotten as it leaves the slot.
            std::mem::forget(slot.take());
        } else {
            *slot = None;
        }
        self.free.push(i);
        g
    }

    /// Whether request `id` is complete (or not a live active request).
    pub fn is_done(&self, id: ReqId) -> bool {
        self.get(id).map(|r| r.complete || !r.active).unwrap_or(true)
    }

    pub fn live(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// The live requests.
    pub fn iter(&self) -> impl Iterator<Item = &Request> {
        self.slots.iter().filter_map(|(_, r)| r.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_handles_are_rejected() {
        let mut s = Slab::new(1);
        let a = s.insert(Request::new(1, 0));
        assert!(s.get(a).is_some());
        assert!(s.remove(a).is_some());
        assert!(s.get(a).is_none());
        let b = s.insert(Request::new(1, 0));
        assert_ne!(a, b, "reused slot must get a new generation");
        assert!(s.get(a).is_none());
        assert_eq!(s.get(b).unwrap().owner, 1);
        assert!(s.get(0x180).is_none());
        assert!(s.get(b | 0xff << 48).is_none(), "bits above the handle must not be ignored");
        assert_eq!(owner_of(b), Some(1));
        let short = to_short(b, 1).expect("a small index fits the short form");
        assert!(short < 1 << 31);
        assert_eq!(from_short(short, 1), b);
        assert_eq!(to_short(b, 2), None, "only the owner's requests");
        assert!(Slab::new(2).get(b).is_none(), "another subrank's slab does not take it");
        assert_eq!(s.live(), 1);
    }

    #[test]
    fn the_done_send_survives_every_take() {
        let mut s = Slab::new(3);
        let d = s.done_send();
        assert_eq!(s.done_send(), d, "one per owner");
        assert!(s.is_done(d));
        assert!(s.get(d).is_some_and(|r| r.is_send && r.status == Status::sent() && !r.freed));
        assert!(s.discard(d).is_none() && s.remove(d).is_none());
        assert!(s.get(d).is_some(), "never freed");
        let a = s.insert(Request::new(3, 0));
        assert_ne!(a, d);
        assert!(s.remove(a).is_some());
        let b = s.insert(Request::new(3, 0));
        assert_ne!(b, d, "its slot is never handed out again");
        assert_eq!(owner_of(d), Some(3));
        assert_eq!(from_short(to_short(d, 3).expect("a small index"), 3), d);
    }

    /// issue 16 (p2p10): the entry every receive and send makes stays small (the rare fields
    /// boxed); 264 bytes before. Session 26: 208 with the receive target's datatype held
    /// without a count (`datatype::held`, a tag word more; two atomic operations less per
    /// receive, the 8-byte message rate about 5% up).
    #[test]
    fn a_request_entry_is_small() {
        let n = std::mem::size_of::<Option<Request>>();
        assert!(n <= 208, "Request grew to {n} bytes");
    }

    /// issue 16 (p2p11): one look-up to find, change and drop an entry (`index_of`, `at_mut`,
    /// `discard_at`) behaves as `get_mut` then `discard`: the slot is freed, the handle goes
    /// stale, a generalized request's callbacks come back, other entries stay.
    #[rstest::rstest]
    #[case::plain(false, 1)]
    #[case::generalized(true, 1)]
    #[case::among_several(false, 3)]
    fn an_entry_is_taken_by_its_slot(#[case] greq: bool, #[case] n: usize) {
        let mut s = Slab::new(2);
        let ids: Vec<ReqId> = (0..n).map(|_| s.insert(Request::new(2, 0))).collect();
        let id = ids[n - 1];
        let i = s.index_of(id).expect("a live request");
        let r = s.at_mut(i).expect("its slot");
        r.complete = true;
        if greq {
            r.greq = Some(Box::new(Greq {
                query: 1,
                free: 2,
                cancel: 3,
                extra: 4,
                done: true,
            }));
        }
        assert_eq!(s.discard_at(i).map(|g| g.free), greq.then_some(2));
        assert!(s.get(id).is_none() && s.index_of(id).is_none(), "stale after the take");
        assert!(s.discard_at(i).is_none(), "an empty slot gives nothing");
        assert_eq!(s.live(), n - 1);
        assert!(ids[..n - 1].iter().all(|&o| s.get(o).is_some()));
        let again = s.insert(Request::new(2, 0));
        assert_ne!(again, id, "the slot comes back with a new generation");
    }

    /// Session 27 (msgrate27): `discard_at` skips the drop of an entry that owns nothing
    /// (`Request::owns_nothing`), and still drops one that does: a receive's derived datatype
    /// loses the entry's count, the table's predefined type is never counted.
    #[rstest::rstest]
    #[case::send(None, false)]
    #[case::receive_predefined(Some(false), false)]
    #[case::receive_derived(Some(true), false)]
    #[case::send_keeping_bytes(None, true)]
    #[case::derived_keeping_bytes(Some(true), true)]
    fn an_entry_drops_what_it_owns(#[case] recv: Option<bool>, #[case] keep: bool) {
        let table = crate::core::datatype::predefined_arc(crate::consts::MPI_DOUBLE).expect("MPI_DOUBLE");
        let derived = DtRef::new(crate::core::datatype::Datatype::clone(table));
        let (t0, d0) = (DtRef::strong_count(table), DtRef::strong_count(&derived));
        let mut s = Slab::new(0);
        let id = s.insert_new(0, 0);
        let i = s.index_of(id).expect("live");
        let r = s.at_mut(i).expect("its slot");
        if let Some(d) = recv {
            r.recv = Some(RecvTarget {
                buf: std::ptr::null_mut(),
                count: 1,
                dt: if d { Held::Derived(derived.clone()) } else { Held::Table(table) },
            });
        }
        if keep {
            r.keep = Some(Box::new(vec![1u8; 8]));
        }
        let plain = recv != Some(true) && !keep;
        assert_eq!(r.owns_nothing(), plain);
        assert_eq!(DtRef::strong_count(&derived), d0 + (recv == Some(true)) as usize);
        assert!(s.discard_at(i).is_none());
        assert!(s.get(id).is_none(), "gone");
        assert_eq!(DtRef::strong_count(table), t0, "the table's type is never counted");
        assert_eq!(DtRef::strong_count(&derived), d0, "a derived type's count goes with the entry");
    }

    /// A handle of subrank `owner` with generation `gen` and index `idx`.
    fn handle(owner: usize, gen: u64, idx: u64) -> ReqId {
        (owner as u64) << OWNER_SHIFT | HANDLE_BASE | gen << IDX_BITS | idx
    }

    #[rstest::rstest]
    #[case::first(0, 1, 0, true)]
    #[case::last_generation(3, 0xffff, 5, true)]
    #[case::largest_index(300, 7, 0x7ffe, true)]
    #[case::index_all_ones(1, 0xffff, 0x7fff, false)]
    #[case::index_too_large(1, 1, 0x8000, false)]
    #[case::many_subranks(20000, 9, 17, true)]
    fn short_forms_round_trip(#[case] owner: usize, #[case] gen: u64, #[case] idx: u64, #[case] fits: bool) {
        let h = handle(owner, gen, idx);
        match to_short(h, owner) {
            Some(s) => {
                assert!(fits && s < 0x7fff_ffff, "never all ones: {s:#x}");
                assert_eq!(from_short(s, owner), h);
            }
            None => assert!(!fits),
        }
        assert_eq!(to_short(h, owner + 1), None);
        assert_eq!(to_short(0x180, owner), None, "MPI_REQUEST_NULL is no request of the slab");
    }
}
