//! The process's MPI state: per-subrank queues and handle tables, the request slab and the
//! transport. Nothing here blocks or yields: blocking lives in `core::p2p::blocking`, which
//! releases the lock before parking the subrank.
//!
//! Two ways in (SMP mode, issue 14):
//! - `with`/`lock`: the write side of a big-reader lock, for everything: the whole state.
//! - `shared`: the read side, for the hot paths of workers (sends and receives between
//!   subranks of the process, eager sends to other processes): each worker has its own reader flag, so workers in
//!   shared sections never wait for each other, and a shared section sees only one subrank's
//!   `Local` at a time, behind that subrank's own small lock.

use super::comm::{CommRef, Group, CTX_SELF, CTX_WORLD};
use super::error::{err, MpiResult};
use super::p2p::matching::{Posted, Unexp};
use super::request::{owner_of, Greq, ReqId, Request, Slab, Status};
use crate::consts as c;
use crate::sched;
use crate::sched::lock::{BrLock, Guard, Lock, WriteGuard};
use crate::transport::engine::RING;
use crate::transport::{wire, Event, Transport};
use std::collections::{HashMap, VecDeque};
use std::ops::{Index, IndexMut};
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
    /// The inter-process level of collectives may use the real MPI's collectives (`coll::real`).
    pub real_coll: bool,
    /// Communicators derived from one with a twin get real twins too (`TOUCAN_REAL_COLL_DERIVED`,
    /// on by default).
    pub real_coll_derived: bool,
    /// Bytes per rank from which a reduction goes to the real MPI (Barrier: when 0).
    pub real_coll_min: usize,
    /// Bytes from which a broadcast goes to the real MPI.
    pub real_bcast_min: usize,
    /// Bytes per rank from which a nonblocking collective at one member per process goes to
    /// the real MPI's nonblocking collective without a helper task (`coll::nbc`).
    pub real_nbc_min: usize,
    /// The real MPI is initialised at `MPI_THREAD_MULTIPLE` instead of `SERIALIZED`
    /// (`TOUCAN_REAL_THREAD`); Toucan still calls it from one thread at a time.
    pub real_multiple: bool,
    /// Period of the load balance between the workers of a process, in ms (0: off;
    /// `TOUCAN_BALANCE`, see `sched::balance`).
    pub balance_ms: usize,
    /// At one subrank per process, point-to-point on communicators with a real twin passes
    /// through to the real MPI (`TOUCAN_P2P_DIRECT`, off by default until its nonblocking
    /// paths are as cheap as the general path's: `p2p::direct`).
    pub p2p_direct: bool,
    // coll7 (issue 16, session 16): the small nonblocking collectives' switches (`coll::nbc`),
    // read here with the other variables (they were read in `nbc`).
    /// Largest broadcast (bytes) that runs as a tree of real point-to-point messages on the
    /// twin (`TOUCAN_NBC_TREE_MAX`; 0: never).
    pub nbc_tree_max: usize,
    /// Small Allreduce, Allgather, Alltoall and Barrier by recursive doubling or pairwise
    /// exchanges over real point-to-point messages (`TOUCAN_NBC_RD`, on by default).
    pub nbc_rd: bool,
    /// Session 27 (nbrecv27): which nonblocking v-forms and reduce-scatters run on the
    /// two-level records at several subranks per process (`TOUCAN_NBC_REC_V`: 0 `off`, 1 `on`,
    /// the default (session 28: Igatherv too; session 29: Iscatterv too), 2 `all` (the same
    /// as `on` since session 29); `coll::nbrecv::level`).
    pub nbc_rec_v: u8,
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
    /// Session 28: one lane per sender (`p2p::unexq`).
    pub unexpected: crate::core::p2p::unexq::UnexpQueue,
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
    pub attrs: HashMap<(AttrKind, usize), Vec<(i32, AttrVal)>>,
    /// What a blocking receive or probe of this rank waits for (deadlock reports).
    pub waiting: Option<super::p2p::matching::Pattern>,
    /// The blocking receive this rank is parked in, when it waits without a request.
    pub direct: Option<super::p2p::matching::Direct>,
    /// Region state (`Toucan_Region`): the requests of the current superblock.
    pub region: super::region::Superblock,
    /// Generalized requests the application completed (`MPI_Grequest_complete`) whose status
    /// the query callback has not given yet; settled by `abi::greq::settle`.
    pub greq_ready: Vec<ReqId>,
    /// Free callbacks of generalized requests freed under the lock, to run outside it.
    pub greq_frees: Vec<Greq>,
    /// This subrank's requests (its handles name it: `request::owner_of`).
    pub reqs: Slab,
}

impl Local {
    /// Marks this subrank's request `id` complete. Returns the task to wake (None: nobody, or
    /// the running task, which checks its requests before parking).
    pub fn complete(&mut self, id: ReqId) -> Option<usize> {
        let r = self.reqs.get_mut(id)?;
        r.complete = true;
        let waiter = r.waiter;
        let (freed, bsend, persistent) = (r.freed, r.bsend_bytes, r.persist.is_some());
        if bsend > 0 {
            self.bsend_used -= bsend;
        }
        if freed && !persistent {
            self.drop_request(id);
        }
        (waiter != sched::current()).then_some(waiter)
    }

    /// Removes request `id`; a generalized request's free callback is queued to run outside
    /// the lock.
    pub fn drop_request(&mut self, id: ReqId) {
        if let Some(g) = self.reqs.discard(id) {
            self.greq_frees.push(g);
        }
    }

    /// A receive copied the data of this subrank's send `id` from its buffer (`Body::Intra`):
    /// the copy the send kept is dropped, and one of its events is done (as `event_done`).
    pub fn send_copied(&mut self, id: ReqId) -> Option<usize> {
        if let Some(r) = self.reqs.get_mut(id) {
            r.keep = None;
        }
        self.event_done(id)
    }

    /// One awaited event of request `id` happened; as `complete` when it was the last.
    pub fn event_done(&mut self, id: ReqId) -> Option<usize> {
        let r = self.reqs.get_mut(id)?;
        r.pending = r.pending.saturating_sub(1);
        if r.pending == 0 {
            self.complete(id)
        } else {
            None
        }
    }
}

/// The kind of object an attribute keyval is for (a keyval of one kind is invalid on another).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AttrKind {
    Comm,
    Type,
    /// Window attributes (issue 18).
    Win,
}

/// An attribute key: its kind, callbacks (C function pointers, or the predefined
/// 0 = NULL_COPY/NULL_DELETE and 1 = DUP) and extra state; `fortran` when it was created from
/// Fortran (its callbacks then see attribute values as Fortran does, `AttrVal::view`).
#[derive(Clone, Copy, Debug)]
pub struct Keyval {
    pub kind: AttrKind,
    pub copy: usize,
    pub delete: usize,
    pub extra: usize,
    pub freed: bool,
    pub fortran: bool,
}

/// An attribute's value. C stores a pointer-sized value and gets it back as set; Fortran
/// stores an integer, which C code then sees through a pointer to it (MPI 4.1 §19.3.7, as
/// MPICH does): the integer lives in a cell of its own whose address stays put while the
/// attribute exists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AttrVal {
    C(usize),
    Fortran(Box<isize>),
}

impl AttrVal {
    /// The value as code in the given language sees it: C gets a Fortran integer's address,
    /// Fortran gets a C pointer as an integer.
    pub fn view(&self, fortran: bool) -> usize {
        match self {
            AttrVal::C(v) => *v,
            AttrVal::Fortran(b) if fortran => **b as usize,
            AttrVal::Fortran(b) => &**b as *const isize as usize,
        }
    }

    /// A new value of the same language (an attribute copied by a copy callback keeps the
    /// language it was set from).
    pub fn like(&self, v: usize) -> AttrVal {
        match self {
            AttrVal::C(_) => AttrVal::C(v),
            AttrVal::Fortran(_) => AttrVal::Fortran(Box::new(v as isize)),
        }
    }
}

pub struct State {
    pub cfg: Config,
    pub myproc: usize,
    pub nproc: usize,
    pub locals: Locals,
    pub tp: TpCell,
    pub(super) events: Vec<Event>,
    /// issue 16 (p2p7): the requests of a wait's direct poll (`p2p::direct`), kept between
    /// polls to save an allocation.
    pub(super) direct_tokens: Vec<u64>,
    /// `progress_pending`'s polls, counted to poll everything every `DIRECT_FULL_POLL`th time.
    direct_polls: u32,
    pub real_version: String,
    pub det: super::deadlock::Detector,
    /// Meeting points of the two-level collectives.
    pub meets: super::coll::hier::Meets,
    /// Real communicators and real collectives in flight (`coll::real`).
    pub rcoll: super::coll::real::RealComms,
    /// Communicators whose point-to-point passes through to the real MPI (`p2p::direct`).
    pub direct: super::p2p::direct::Directs,
    // issue 16 (p2p8): lean direct requests (`request::Lean`).
    /// Requests made lean, in the order they started (some may be finished or registered
    /// since: `unlean` skips those).
    pub(super) leans: Vec<ReqId>,
    /// How many of `leans` are still lean.
    pub(super) lean_live: usize,
    /// A wait's lean real requests, kept between polls to save an allocation.
    pub(super) lean_reqs: Vec<crate::transport::real::RRequest>,
    // end p2p8
}

// SAFETY: the raw pointers State holds (receive targets, persistent arguments, a sibling's
// send buffer) point into user buffers that MPI obliges the owning rank to keep valid until
// the operation completes; State is only ever touched under the STATE lock.
unsafe impl Send for State {}
// SAFETY: `&State` is shared between threads only by readers of STATE (`shared`), and a
// reader sees it only through `Shared`, which reads the configuration (written once, before
// the workers start) and reaches a subrank's `Local` only through that subrank's own lock.
unsafe impl Sync for State {}

static STATE: BrLock<Option<State>> = BrLock::new(None);

/// One subrank's `Local` with a small lock of its own, on cache lines of its own. The lock is
/// used only by readers of STATE (`Shared::local`); a writer of STATE owns every `Local`.
#[repr(align(128))]
pub struct LocalCell(Lock<Local>);

/// The subranks' `Local`s, indexed by local subrank.
pub struct Locals(Vec<LocalCell>);

// SAFETY: a `Local` is reached either through `&mut Locals` (the writer of STATE), or through
// `&Locals` by one writer of STATE alone (`Index`), or by readers of STATE through
// the cell's lock (`Shared::local`; with one reader slot, taken by a plain store, since no
// other thread can be reading): never by two threads at once without that lock.
unsafe impl Sync for Locals {}

impl Locals {
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn get(&self, i: usize) -> Option<&Local> {
        (i < self.0.len()).then(|| &self[i])
    }

    pub fn get_mut(&mut self, i: usize) -> Option<&mut Local> {
        self.0.get_mut(i).map(|c| c.0.get_mut())
    }

    pub fn iter(&self) -> impl Iterator<Item = &Local> {
        (0..self.0.len()).map(move |i| &self[i])
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut Local> {
        self.0.iter_mut().map(|c| c.0.get_mut())
    }
}

impl Index<usize> for Locals {
    type Output = Local;
    #[inline]
    fn index(&self, i: usize) -> &Local {
        // SAFETY: `&Locals` (other than inside `Shared`, which never indexes) exists only
        // under the write side of STATE, which no reader holds meanwhile (see `Locals`), and
        // only readers take a cell's lock.
        unsafe { self.0[i].0.get_unlocked() }
    }
}

impl IndexMut<usize> for Locals {
    #[inline]
    fn index_mut(&mut self, i: usize) -> &mut Local {
        self.0[i].0.get_mut()
    }
}

/// The transport, with a small lock of its own for readers of STATE (`Shared::transport`);
/// a writer of STATE reaches it directly (`Deref`/`DerefMut`).
pub struct TpCell(Lock<Transport>);

impl std::ops::Deref for TpCell {
    type Target = Transport;
    #[inline]
    fn deref(&self) -> &Transport {
        // SAFETY: `&TpCell` (other than inside `Shared`, which locks) exists only under the
        // write side of STATE, which no reader holds meanwhile, and only readers lock it.
        unsafe { self.0.get_unlocked() }
    }
}

impl std::ops::DerefMut for TpCell {
    #[inline]
    fn deref_mut(&mut self) -> &mut Transport {
        self.0.get_mut()
    }
}

/// A reader's view of the state (`shared`): the configuration, and one subrank's `Local` at
/// a time behind its lock. Never hold two `Local` guards at once (two readers could take
/// them in opposite orders).
pub struct Shared<'a> {
    s: &'a State,
    /// Session 27 (msgrate27): STATE has one reader slot (one worker), so this thread is the
    /// only one that can be reading, and writers wait for it to leave: the `Local` and
    /// transport locks, which only readers take, are then taken without an atomic
    /// read-modify-write (`Lock::lock_sole`). With more workers they are locked as before.
    sole: bool,
}

impl<'a> Shared<'a> {
    #[inline]
    pub fn cfg(&self) -> &'a Config {
        &self.s.cfg
    }

    #[inline]
    pub fn myproc(&self) -> usize {
        self.s.myproc
    }

    #[inline]
    pub fn world_size(&self) -> usize {
        self.s.world_size()
    }

    #[inline]
    pub fn locate(&self, w: u32) -> (usize, usize) {
        self.s.locate(w)
    }

    /// Subrank `i`'s `Local`, locked (None: no such subrank).
    #[inline]
    pub fn local(&self, i: usize) -> Option<Guard<'a, Local>> {
        let cell = &self.s.locals.0.get(i)?.0;
        if self.sole {
            // SAFETY: the only reader slot is this thread's (`sole`): no other thread is
            // reading, writers wait for this read section to end, and only readers take a
            // cell's lock; this thread never holds two guards of one `Local` (a second
            // `lock` of it would spin for ever).
            return Some(unsafe { cell.lock_sole() });
        }
        Some(cell.lock())
    }

    /// The transport, locked (the real MPI, one thread at a time). Never held together with
    /// a `Local` guard.
    #[inline]
    pub fn transport(&self) -> Guard<'a, Transport> {
        if self.sole {
            // SAFETY: as in `local`: the only reader, and only readers lock the transport;
            // it is never taken twice by one thread (never held together with a `Local`).
            return unsafe { self.s.tp.0.lock_sole() };
        }
        self.s.tp.0.lock()
    }

    /// The transport if no other reader holds it now (a poller with other work skips).
    /// Lock order: a reader holding it may then lock one `Local`, never the other way round.
    #[inline]
    pub fn try_transport(&self) -> Option<Guard<'a, Transport>> {
        self.s.tp.0.try_lock()
    }
}

/// Runs `f` on a reader's view of the state (the point-to-point hot paths, at any number of
/// workers). None when this thread cannot read (not a worker running a task) or MPI is not
/// initialized. `f` must not block, park, or call `with`.
#[inline]
pub fn shared<R>(f: impl FnOnce(Shared<'_>) -> R) -> Option<R> {
    // Threads of the program (`sched::foreign`) have no reader slot: they write.
    let slot = sched::worker::running_worker()?;
    if !STATE.readable(slot) {
        return None;
    }
    let g = STATE.read(slot);
    let s = g.as_ref()?;
    Some(f(Shared {
        s,
        sole: STATE.sole_reader(),
    }))
}

/// Whether the calling thread may use `shared` (a worker running a task, in SMP mode).
#[inline]
pub fn readable() -> bool {
    sched::worker::running_worker().is_some_and(|w| STATE.readable(w))
}

/// `shared` for worker `worker`'s own loop, between tasks (no task runs on this thread: its
/// reader slot is free). None before MPI is up.
#[inline]
pub fn shared_idle<R>(worker: usize, f: impl FnOnce(Shared<'_>) -> R) -> Option<R> {
    if !STATE.readable(worker) || sched::current() != usize::MAX {
        return None;
    }
    let g = STATE.read(worker);
    let s = g.as_ref()?;
    Some(f(Shared {
        s,
        sole: STATE.sole_reader(),
    }))
}

/// Runs `f` on the process state. Never call `sched::park` inside `f`.
pub fn with<R>(f: impl FnOnce(&mut State) -> R) -> MpiResult<R> {
    let mut g = STATE.write();
    match g.as_mut() {
        Some(s) => Ok(f(s)),
        None => err(c::MPI_ERR_OTHER, "MPI is not initialized"),
    }
}

/// `with`, always inlined: for the few hot paths (a blocking send or receive of a small
/// message), where a call per lock costs a noticeable share of the latency.
#[inline(always)]
pub fn with_hot<R>(f: impl FnOnce(&mut State) -> R) -> MpiResult<R> {
    let mut g = STATE.write();
    match g.as_mut() {
        Some(s) => Ok(f(s)),
        None => not_initialized(),
    }
}

/// The state lock, held, for the request-free fast paths of MPI_Send and MPI_Recv: they
/// run straight-line under it, without a closure call. Never park while holding it.
#[inline(always)]
pub fn lock() -> WriteGuard<'static, Option<State>> {
    STATE.write()
}

#[cold]
#[inline(never)]
fn not_initialized<R>() -> MpiResult<R> {
    err(c::MPI_ERR_OTHER, "MPI is not initialized")
}

/// Like `with`, but gives up (None) when the lock is held: for fatal-error paths that may
/// run inside a locked section.
pub fn try_with<R>(f: impl FnOnce(&mut State) -> R) -> Option<R> {
    let mut g = STATE.try_write()?;
    g.as_mut().map(f)
}

/// Takes the state lock for good, waiting at most `wait` for it (the caller may hold it
/// already: then it gives up): before the real MPI is aborted, so that no other thread (other
/// workers, the progress thread) is inside it meanwhile.
pub fn freeze(wait: std::time::Duration) {
    let t0 = std::time::Instant::now();
    loop {
        if let Some(g) = STATE.try_write() {
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
    STATE.write().is_some()
}

/// Installs the state once the real MPI is up (before the workers start). Readers (`shared`)
/// are the workers, one or more: with one worker nobody contends, but the read side's steps
/// (one subrank's `Local` each) are still the short ones. Sibling ping-pong at V=2, W=1 under
/// callgrind: 3003 instructions per round trip on the write side, 2497 on the read side; a
/// window of 64 Isend/Irecv + Waitall: 213 076 against 153 051 (`bench/run-icount.sh`).
pub fn install(s: State) {
    let w = s.cfg.workers;
    *STATE.write() = Some(s);
    STATE.set_readers(w.max(1));
}

/// Takes the state out (at process finalize).
pub fn take() -> Option<State> {
    STATE.write().take()
}

impl State {
    pub fn new(cfg: Config, tp: Transport, real_version: String) -> State {
        let (myproc, nproc) = (tp.myproc, tp.nproc);
        let world = Arc::new(Group::new((0..(nproc * cfg.local()) as u32).collect()));
        let locals = (0..cfg.local())
            .map(|sub| {
                LocalCell(Lock::new({
                    let w = (myproc * cfg.local() + sub) as u32;
                    let self_group = Arc::new(Group::new(vec![w]));
                    Local {
                        world_rank: w,
                        posted: VecDeque::new(),
                        unexpected: crate::core::p2p::unexq::UnexpQueue::new(),
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
                        reqs: Slab::new(sub),
                    }
                }))
            })
            .collect();
        let mut s = State {
            cfg,
            myproc,
            nproc,
            locals: Locals(locals),
            tp: TpCell(Lock::new(tp)),
            events: Vec::new(),
            direct_tokens: Vec::new(),
            direct_polls: 0,
            real_version,
            det: super::deadlock::Detector::new(),
            meets: Default::default(),
            rcoll: Default::default(),
            direct: Default::default(),
            leans: Vec::new(),
            lean_live: 0,
            lean_reqs: Vec::new(),
        };
        super::coll::real::install_world(&mut s);
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
        let cur = sched::current();
        let waiter = if cur != usize::MAX { cur } else { owner };
        let id = self.locals[owner].reqs.insert_new(comm, waiter);
        if self.locals[owner].region.tracking {
            super::region::track(self, owner, id);
        }
        id
    }

    /// Request `id`, in its owner's slab.
    #[inline]
    pub fn req(&self, id: ReqId) -> Option<&Request> {
        self.locals.get(owner_of(id)?)?.reqs.get(id)
    }

    #[inline]
    pub fn req_mut(&mut self, id: ReqId) -> Option<&mut Request> {
        self.locals.get_mut(owner_of(id)?)?.reqs.get_mut(id)
    }

    pub fn remove_req(&mut self, id: ReqId) -> Option<Request> {
        self.locals.get_mut(owner_of(id)?)?.reqs.remove(id)
    }

    /// Whether request `id` is complete (or not a live active request).
    #[inline]
    pub fn req_done(&self, id: ReqId) -> bool {
        self.req(id).map(|r| r.complete || !r.active).unwrap_or(true)
    }

    /// Every live request of the process.
    pub fn requests(&self) -> impl Iterator<Item = &Request> {
        self.locals.iter().flat_map(|l| l.reqs.iter())
    }

    /// How many requests are live in the process.
    pub fn live_requests(&self) -> usize {
        self.locals.iter().map(|l| l.reqs.live()).sum()
    }

    /// Marks a request complete and wakes its owner.
    pub fn complete(&mut self, id: ReqId) {
        let Some(l) = owner_of(id).and_then(|o| self.locals.get_mut(o)) else {
            return;
        };
        if let Some(w) = l.complete(id) {
            sched::wake(w);
        }
    }

    /// Removes request `id`; a generalized request's free callback is queued for its owner.
    pub fn drop_request(&mut self, id: ReqId) {
        if let Some(l) = owner_of(id).and_then(|o| self.locals.get_mut(o)) {
            l.drop_request(id);
        }
    }

    /// A receive copied send `id`'s data from the sender's buffer (`Local::send_copied`).
    pub fn send_copied(&mut self, id: ReqId) {
        let Some(l) = owner_of(id).and_then(|o| self.locals.get_mut(o)) else {
            return;
        };
        if let Some(w) = l.send_copied(id) {
            sched::wake(w);
        }
    }

    /// One awaited event of request `id` happened.
    pub fn event_done(&mut self, id: ReqId) {
        let Some(l) = owner_of(id).and_then(|o| self.locals.get_mut(o)) else {
            return;
        };
        if let Some(w) = l.event_done(id) {
            sched::wake(w);
        }
    }

    pub fn status_of(&self, id: ReqId) -> Option<Status> {
        self.req(id).map(|r| r.status)
    }

    /// Drives the transport and hands what arrived to matching. Returns whether anything
    /// happened. Errors of the real MPI end the job: they mean lost messages.
    ///
    /// Control messages are handled as they come out of the ring (an eager payload is read
    /// in place); one eager message from the ring ends the step (see `Transport::poll_ring`),
    /// while from the node queue the step takes those already there.
    pub fn progress(&mut self) -> bool {
        // issue 16 (p2p8): the general path may now look at lean direct requests (a parked
        // owner, the deadlock detector, Test...): they become ordinary pending ones.
        if !self.leans.is_empty() {
            self.unlean();
        }
        self.progress_step()
    }

    /// `progress` leaving lean direct requests to the wait that polls them in place
    /// (`p2p::direct`: its owner runs and looks at them itself).
    pub fn progress_step(&mut self) -> bool {
        // With real requests pending, one real progress step covers them and the ring's head
        // (polling the ring, then testing the requests, made two).
        if self.tp.has_pending() {
            return self.progress_pending();
        }
        super::background::stepped();
        let mut any = false;
        for _ in 0..RING {
            let a = match self.tp.poll_ring_raw() {
                Ok(Some(a)) => a,
                Ok(None) => break,
                Err(e) => progress_failed(e),
            };
            any = true;
            let queued = a.queued();
            // issue 16 (p2p11): matched in place when it can be (`p2p::eager_to_posted`).
            // One eager message from the ring ends the step (a look at the next slot is a real
            // MPI progress step); from the node queue the next one is a load away, so the
            // step goes on while one is there (session 27, msgrate27: a window's arrivals in
            // one step, not one step and one failed look of the waiter per message).
            if self.on_arrived(a) && !(queued && self.tp.queue_has_next()) {
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
        if super::p2p::direct::on() {
            any |= self.direct_probe_waiters();
        }
        any
    }

    /// `progress` while real requests are pending (direct operations, `p2p::direct`, payloads,
    /// real collectives): one real progress step for them and the ring together, then the
    /// ring's message if one came.
    fn progress_pending(&mut self) -> bool {
        super::background::stepped();
        // Every pending request and the ring now and then; in between the ring's head and one
        // direct operation (`Transport::poll_direct`).
        self.direct_polls = self.direct_polls.wrapping_add(1);
        let full = self.direct_polls.is_multiple_of(super::p2p::blocking::DIRECT_FULL_POLL);
        let mut any = match self.tp.poll_direct(&mut self.events, full) {
            Ok(a) => a,
            Err(e) => progress_failed(e),
        };
        let mut ev = std::mem::take(&mut self.events);
        for e in ev.drain(..) {
            self.dispatch(e);
        }
        self.events = ev;
        if self.tp.ring_held() {
            match self.tp.poll_ring_raw() {
                Ok(Some(a)) => {
                    self.on_arrived(a);
                }
                Ok(None) => {}
                Err(e) => progress_failed(e),
            }
            any = true;
        }
        any | self.direct_probe_waiters()
    }

    #[inline(always)]
    pub(super) fn dispatch(&mut self, e: Event) {
        match e {
            // issue 18 (rma6): window-lock messages are the process's, not a subrank's.
            Event::Msg { src_proc, hdr, .. } if hdr.kind == wire::KIND_RMA => super::rma::wlock::on_note(self, src_proc, &hdr),
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
            Event::CollDone { token, buf, comm, error } => {
                if error != 0 {
                    super::coll::real::failed(self, token, error);
                }
                super::coll::real::on_done(self, token, buf, comm)
            }
            Event::DirectDone { token, st, temp } => self.on_direct_done(token, st, temp),
        }
    }
}

#[cold]
#[inline(never)]
pub(super) fn progress_failed(e: String) -> ! {
    crate::core::diag::fatal(&format!("progress engine: {e}"))
}

#[cfg(test)]
mod attr_val_tests {
    use super::AttrVal;
    use rstest::rstest;

    #[rstest]
    #[case::c_value_to_c(AttrVal::C(0x1234), false, Some(0x1234))]
    #[case::c_value_to_fortran(AttrVal::C(0x1234), true, Some(0x1234))]
    #[case::fortran_value_to_fortran(AttrVal::Fortran(Box::new(-7)), true, Some(-7isize as usize))]
    #[case::fortran_value_to_c(AttrVal::Fortran(Box::new(42)), false, None)]
    fn view(#[case] v: AttrVal, #[case] fortran: bool, #[case] want: Option<usize>) {
        match (want, &v) {
            (Some(w), _) => assert_eq!(v.view(fortran), w),
            // C sees a pointer to the integer, which stays put.
            (None, AttrVal::Fortran(b)) => {
                let p = v.view(false);
                assert_eq!(p, &**b as *const isize as usize);
                // SAFETY: p is the address of the live box above.
                assert_eq!(unsafe { *(p as *const isize) }, 42);
            }
            _ => unreachable!(),
        }
    }

    #[rstest]
    #[case::c(AttrVal::C(1), AttrVal::C(9))]
    #[case::fortran(AttrVal::Fortran(Box::new(1)), AttrVal::Fortran(Box::new(9)))]
    fn like_keeps_the_language(#[case] v: AttrVal, #[case] want: AttrVal) {
        assert_eq!(v.like(9), want);
    }
}
