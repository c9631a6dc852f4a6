//! The inter-process level of Barrier, Bcast, Reduce and Allreduce as one nonblocking
//! collective of the real MPI, where the communicator spans every process; and the whole of
//! Allgather and Alltoall where every process holds one member (V=1: `allgather`,
//! `alltoall`).
//!
//! **Real communicators.** MPI_COMM_WORLD's twin is a duplicate of the real world made at
//! start-up. A communicator made from one that has a twin by `MPI_Comm_dup`/`idup`,
//! `MPI_Comm_split(_type)` or a topology constructor (Cart, Graph, Dist_graph) gets its own
//! twin, a real `MPI_Comm_idup` of the parent's, when it still has members on every process
//! (a split: each such colour, in colour order, at most `MAX_SPLIT`). The
//! idup is a collective on the parent's twin, ordered like the parent's other real
//! collectives (below), so it never blocks the worker: nothing here calls a blocking real
//! function while sibling subranks may need to run. Every twin therefore spans all
//! processes in process order (real rank = process number). A communicator whose members
//! miss a process (and every one made otherwise: Comm_create(_group), Cart_sub,
//! Intercomm_merge, ...) has no twin and keeps the point-to-point algorithms.
//!
//! **Issue order.** Real collectives on one real communicator must be started in the same
//! order on every process, but a virtual nonblocking collective reaches its inter-process
//! step in a helper task, in an order that differs between processes. So each real
//! operation has a place: (the virtual call's number on its communicator, index within the
//! call), and a process starts its real operations on a twin in increasing place only.
//! Every subrank registers the place of each eligible call when it makes it (`enrol`, in
//! program order); the representative submits the operation when its data is ready; a
//! submitted operation starts once every registered place before it has started. All
//! processes register the same places (eligibility depends only on arguments MPI requires to
//! agree), so all start the same operations in the same order. No wait can close a cycle: the
//! call holding an earlier place was made earlier by every local member, so its
//! representative gets its data without waiting for a later call.
//!
//! The representative parks until the real request completes; the progress engine tests it
//! with the rest and wakes it. Eligible, from `TOUCAN_REAL_COLL_MIN` bytes per rank (`worth`;
//! Barrier only when that is 0) or `TOUCAN_REAL_BCAST_MIN` for Bcast (`bcast_worth`): Bcast
//! (any datatype: a non-contiguous one is packed),
//! Reduce and Allreduce with a predefined operation on a C basic type the standard allows it
//! on (the work buffer of basic elements goes to the real MPI as is, or the user's buffers
//! when they are laid out the same and the caller is its process's only member). User
//! operations, persistent calls and inter-communicators stay on point-to-point.

use crate::consts as c;
pub use crate::core::coll::hier::{key_of, CommKey};
use crate::core::coll::op::{self, OpKind};
use crate::core::coll::pool::{Picked, PoolId, Pools};
use crate::core::coll::reduce::Reducer;
use crate::core::coll::{Buf, Coll};
use crate::core::comm::{CommRef, CTX_WORLD};
use crate::core::datatype::basic::BasicType;
use crate::core::datatype::DtRef;
use crate::core::error::{err, MpiResult};
use crate::core::idmap::IdMap;
use crate::core::p2p::blocking::block_on;
use crate::core::state::{self, State};
use crate::sched;
use crate::transport::real::{self as r, RComm};
use crate::transport::{CollMem, RealColl};
use std::collections::{BTreeMap, BTreeSet};

/// A real operation's place in its twin's issue order: (virtual call number, index in the call).
pub type Place = (u64, u32);

/// Children with a twin, per parent over its lifetime (counted in the parent's call order, so
/// every process agrees); later ones keep point-to-point. Bounds the real MPI's context ids
/// (MPICH has a few thousand).
const MAX_CHILDREN: u32 = 1024;

/// `MAX_CHILDREN`, halved under the pass-through (session 22), where every child with a twin
/// also holds the real communicator of its program's messages (`Twin::p2p`) while it lives:
/// the same real context ids at most. The same on every process (the pass-through is decided
/// at start-up from what all processes read alike).
fn max_children() -> u32 {
    if crate::core::p2p::direct::on() {
        MAX_CHILDREN / 2
    } else {
        MAX_CHILDREN
    }
}
/// Colours of one split that get a twin.
const MAX_SPLIT: usize = 8;

/// A submitted real operation waiting for its turn.
struct Queued {
    what: RealColl,
    mem: CollMem,
    token: u64,
}

/// The twin of one virtual communicator, as seen from this process.
pub(super) struct Twin {
    /// None while the `MPI_Comm_idup` making it runs.
    pub(super) comm: Option<RComm>,
    /// The last place started.
    pub(super) last: Option<Place>,
    /// Places registered and not started yet.
    pub(super) waiting: BTreeSet<Place>,
    /// Operations submitted and not started yet.
    ready: BTreeMap<Place, Queued>,
    /// A blocking real call (`coll::solo`) runs on the side thread: nothing after it starts
    /// until it returned (`solo::release`).
    pub(super) hold: bool,
    /// A task waiting for its blocking real call's turn (`solo::run`): woken whenever
    /// operations start here (`pump`).
    pub(super) solo_waiter: Option<usize>,
    /// Handles of the virtual communicator still open on this process (freed at 0).
    handles: usize,
    /// Children that got a twin so far.
    children: u32,
    /// Session 18: of those, the ones whose pick reused a spare (`picked`): `children -
    /// reused` made a real communicator, and that is what `MAX_CHILDREN` bounds.
    reused: u32,
    /// Operations started on it so far (the n-th started is operation number n).
    pub(super) started: u64,
    /// coll5: persistent calls that got a private twin so far (`coll::persist`), counted in
    /// the parent's call order like `children`.
    persistent: u32,
    /// Session 19: of those, the ones whose pick reused a spare (`picked`), as `reused` for
    /// `children`: `persistent - persistent_reused` made a real communicator.
    persistent_reused: u32,
    /// coll5: the process of each rank when every process holds exactly one (Some(None):
    /// not so), found once (`start_idle`).
    layout: Option<Option<Box<[usize]>>>,
    /// Session 16: rank i on process i (found with `layout`): the blocking fast path's blocks
    /// are the call's as they are (`begin_straight`).
    straight: bool,
    /// Session 17: the real communicators made for this twin's children, reused by later ones
    /// (`coll::pool`). Session 18: the pool of the real communicator `comm`: it came with it
    /// from a pool's slot, and goes back there with it.
    pool: Option<PoolId>,
    /// Session 17: the slot of its parent's pool this twin's real communicator is (pool,
    /// index): it goes back there when the twin is released (session 18: wherever that pool
    /// went).
    entry: Option<(PoolId, usize)>,
    /// Session 22: under the pass-through (`p2p::direct`), the real communicator the program's
    /// point-to-point messages on this communicator go on, apart from the twin (`comm`), so
    /// that the twin carries only collectives (real ones, and coll6's trees and recursive
    /// doubling over real point-to-point, `coll::nbc`) and joins its parent's pool as without
    /// the pass-through. Never pooled (a program's message may outlive its communicator's
    /// handles); freed when the twin is released.
    p2p: Option<RComm>,
}

// Session 17: a parent twin's spare real communicators (`Pool`, session 18: `coll::pool`).
// Every twin spans all processes in process order (a twin is an `MPI_Comm_idup` of its
// parent's, the world's first), so a real communicator made for one child serves any later
// one, once every process has released it: an `MPI_Comm_idup` costs MPICH a nonblocking
// context-id agreement of several rounds (here 30-300 µs per idup + wait, and hundreds when
// many are queued; one 8-byte `MPI_Iallreduce` costs 1.2-1.5 µs). A child made from the parent
// (`derive`) first *picks*: one real `MPI_Iallreduce` (bitwise and) of the masks of entries
// free on each process, at the child's place in the parent's issue order; the lowest entry
// free everywhere is the child's twin. When none is, the child's real `MPI_Comm_idup` follows
// at the next place, and its communicator becomes a new entry. Picks of one parent run one at
// a time, in place order (the next starts when the previous is decided), so entries are made
// in the same order, with the same indices, on every process, and no entry is offered to two
// picks. An entry is free here once its child twin was released here (every local handle
// freed, nothing waiting for a turn, no tree or recursive-doubling step left:
// `release_if_unused`), so every real operation of the old child started on this process
// before any of the new child's.

impl Twin {
    fn new(comm: Option<RComm>, handles: usize) -> Twin {
        Twin {
            comm,
            last: None,
            waiting: BTreeSet::new(),
            ready: BTreeMap::new(),
            hold: false,
            solo_waiter: None,
            handles,
            children: 0,
            reused: 0,
            started: 0,
            persistent: 0,
            persistent_reused: 0,
            layout: None,
            straight: false,
            pool: None,
            entry: None,
            p2p: None,
        }
    }
    /// Marks the operation at `place` started; returns its number (the n-th started is n).
    pub(super) fn start(&mut self, place: Place) -> u64 {
        self.last = Some(place);
        self.started += 1;
        self.started
    }
    /// Whether `p` was registered already (started, or still waiting).
    fn knows(&self, p: Place) -> bool {
        self.last.is_some_and(|l| p <= l) || self.waiting.contains(&p)
    }
}

/// What a started real operation's completion means.
enum Inflight {
    /// Wake this task; its buffer goes to `results`.
    Op { task: usize },
    /// The twin of this communicator is made.
    Dup { child: CommKey },
    /// Session 22: the pass-through's real communicator of this communicator is made
    /// (`Twin::p2p`).
    P2p { child: CommKey },
    /// A two-level nonblocking call's record (`coll::nbrec`): distribute and complete.
    Rec { rec: Box<crate::core::coll::nbrec::Rec> },
    /// A nonblocking call served without a helper task (`coll::nbc`): one of this request's
    /// events is done (its status takes the error class, if any, of the buffer's post step).
    Req { id: crate::core::request::ReqId },
    /// coll7: a two-level broadcast started early (`coll::nbrec::join_bcast`): its record
    /// (call `key`, still open) settles.
    Early { key: (CommKey, u64), uid: u64 },
    /// Session 17: the pick of child `child` of twin `parent` (`Pool`); `dup`: the place of
    /// its `MPI_Comm_idup` when no entry is free everywhere.
    Pick { parent: CommKey, child: CommKey, dup: Place },
    /// Session 17: a process's partial result of a Reduce sent on to the root's process by a
    /// carrier that did not wait (`reduce_away`): nothing to do but drop the buffer.
    Detached,
    /// coll5: a round of persistent plan `plan` (`coll::persist`) through its record.
    Plan {
        plan: u64,
        rec: Box<crate::core::coll::nbrec::Rec>,
    },
}

/// Per-process state of the real collectives.
#[derive(Default)]
pub struct RealComms {
    pub(super) twins: IdMap<CommKey, Twin>,
    inflight: IdMap<u64, Inflight>,
    results: IdMap<u64, Vec<u8>>,
    /// Started operations not finished yet, by token: their twin and number.
    pub(super) running: IdMap<u64, (CommKey, u64)>,
    next_token: u64,
    /// Open records of two-level nonblocking calls (`coll::nbrec`).
    pub(super) recs: crate::core::coll::nbrec::Recs,
    /// coll7: each communicator's layout for those records (`nbrec::layout`).
    pub(super) layouts: crate::core::coll::nbrec::Layouts,
    /// coll7: finished broadcast records' allocations, for reuse (`nbrec::Shells`).
    pub(super) shells: crate::core::coll::nbrec::Shells,
    /// coll7: broadcast records whose members all joined, until their operation lands.
    pub(super) landing: crate::core::coll::nbrec::Landing,
    /// coll5: persistent collectives planned once (`coll::persist`).
    pub(super) plans: crate::core::coll::persist::Plans,
    /// The blocking real call made in place (`coll::solo`), while `solo::inline_busy`: its
    /// twin and operation number, for the deadlock detector.
    pub(super) inline: Option<(CommKey, u64)>,
    /// coll6: tree broadcasts' forwards and the real operation of each request (`coll::nbc`).
    pub(super) tree: crate::core::coll::nbc::Tracked,
    /// Session 18: every twin's pool of spare real communicators, and those of the spares.
    pools: Pools,
    /// Session 18: tasks waiting in `derive` for earlier picks to be decided (`near_budget`).
    budget_waiters: Vec<usize>,
    /// Session 25 (faults16): the error class a real request of an operation failed with, by
    /// token (`failed`), until its owner takes it (`on_done`, `run`).
    errors: IdMap<u64, i32>,
}

impl RealComms {
    pub(super) fn token(&mut self) -> u64 {
        self.next_token += 1;
        self.next_token
    }
}

/// Installs MPI_COMM_WORLD's twin (with several processes, unless `TOUCAN_REAL_COLL=off`;
/// without it no communicator has one).
pub fn install_world(s: &mut State) {
    if s.nproc > 1 && s.cfg.real_coll {
        let world: Vec<u32> = (0..s.world_size() as u32).collect();
        let twin = Twin::new(Some(s.tp.coll_world()), usize::MAX);
        s.rcoll.twins.insert(key_of(CTX_WORLD, &world), twin);
        if s.cfg.p2p_direct && s.cfg.local() == 1 {
            // Session 22: the program's messages on MPI_COMM_WORLD go on a real communicator
            // of their own, made here (start-up: every process, in the same order, before
            // any subrank runs), not on the twin (`Twin::p2p`).
            let twin = s.tp.coll_world();
            let comm = match s.tp.dup_comm(twin) {
                Ok(c) => c,
                Err(e) => crate::core::diag::fatal(&format!("point-to-point pass-through: {e}")),
            };
            crate::core::p2p::direct::enable(s.tp.tag_ub);
            if let Some(t) = s.rcoll.twins.get_mut(&key_of(CTX_WORLD, &world)) {
                t.p2p = Some(comm);
            }
            s.direct.add(CTX_WORLD, comm, &world);
        }
    }
}

/// The real MPI's handle of a basic type, for the C types whose layout is the real MPI's.
pub(crate) fn real_type(t: BasicType) -> Option<i64> {
    use BasicType::*;
    Some(match t {
        Char => r::REAL_MPI_CHAR,
        SignedChar => r::REAL_MPI_SIGNED_CHAR,
        UnsignedChar => r::REAL_MPI_UNSIGNED_CHAR,
        Byte => r::REAL_MPI_BYTE,
        Short => r::REAL_MPI_SHORT,
        UnsignedShort => r::REAL_MPI_UNSIGNED_SHORT,
        Int => r::REAL_MPI_INT,
        Unsigned => r::REAL_MPI_UNSIGNED,
        Long => r::REAL_MPI_LONG,
        UnsignedLong => r::REAL_MPI_UNSIGNED_LONG,
        LongLong => r::REAL_MPI_LONG_LONG,
        UnsignedLongLong => r::REAL_MPI_UNSIGNED_LONG_LONG,
        Float => r::REAL_MPI_FLOAT,
        Double => r::REAL_MPI_DOUBLE,
        LongDouble => r::REAL_MPI_LONG_DOUBLE,
        CBool => r::REAL_MPI_C_BOOL,
        CFloatComplex => r::REAL_MPI_C_FLOAT_COMPLEX,
        CDoubleComplex => r::REAL_MPI_C_DOUBLE_COMPLEX,
        CLongDoubleComplex => r::REAL_MPI_C_LONG_DOUBLE_COMPLEX,
        Int8 => r::REAL_MPI_INT8_T,
        Int16 => r::REAL_MPI_INT16_T,
        Int32 => r::REAL_MPI_INT32_T,
        Int64 => r::REAL_MPI_INT64_T,
        Uint8 => r::REAL_MPI_UINT8_T,
        Uint16 => r::REAL_MPI_UINT16_T,
        Uint32 => r::REAL_MPI_UINT32_T,
        Uint64 => r::REAL_MPI_UINT64_T,
        Aint => r::REAL_MPI_AINT,
        Offset => r::REAL_MPI_OFFSET,
        Count => r::REAL_MPI_COUNT,
        FloatInt => r::REAL_MPI_FLOAT_INT,
        DoubleInt => r::REAL_MPI_DOUBLE_INT,
        LongInt => r::REAL_MPI_LONG_INT,
        TwoInt => r::REAL_MPI_2INT,
        ShortInt => r::REAL_MPI_SHORT_INT,
        LongDoubleInt => r::REAL_MPI_LONG_DOUBLE_INT,
        _ => return None,
    })
}

/// The real MPI's handle of a reduction operation.
pub(crate) fn real_op(o: OpKind) -> Option<i64> {
    use OpKind::*;
    Some(match o {
        Sum => r::REAL_MPI_SUM,
        Prod => r::REAL_MPI_PROD,
        Max => r::REAL_MPI_MAX,
        Min => r::REAL_MPI_MIN,
        Land => r::REAL_MPI_LAND,
        Lor => r::REAL_MPI_LOR,
        Lxor => r::REAL_MPI_LXOR,
        Band => r::REAL_MPI_BAND,
        Bor => r::REAL_MPI_BOR,
        Bxor => r::REAL_MPI_BXOR,
        MinLoc => r::REAL_MPI_MINLOC,
        MaxLoc => r::REAL_MPI_MAXLOC,
        Replace | NoOp => return None,
    })
}

/// (real op, real type) of a reduction the real MPI can do on our work buffer.
pub(super) fn real_reduction(red: &Reducer) -> Option<(i64, i64)> {
    match red {
        Reducer::Builtin { op, ty, .. } if op::valid_strict(*op, *ty) => Some((real_op(*op)?, real_type(*ty)?)),
        _ => None,
    }
}

/// Whether a reduction with `red` may run as a real collective.
pub fn reducible(red: &Reducer) -> bool {
    real_reduction(red).is_some()
}

/// Whether a reduction (or a barrier, with 0) of `bytes` bytes per rank is worth a real
/// collective (`TOUCAN_REAL_COLL_MIN`, the same on every process).
pub fn worth(bytes: usize) -> bool {
    bytes >= crate::core::runtime::config().real_coll_min
}

/// Whether a broadcast of `bytes` bytes is worth a real collective (`TOUCAN_REAL_BCAST_MIN`).
pub fn bcast_worth(bytes: usize) -> bool {
    bytes >= crate::core::runtime::config().real_bcast_min
}

/// Marks call `c` for a real collective when it is `eligible` and its communicator has a
/// twin: registers its place (once per process; every local member calls this in program
/// order, before making any later call).
pub fn enrol(mut c: Coll, eligible: bool) -> MpiResult<Coll> {
    if !eligible || c.comm.is_inter() {
        return Ok(c);
    }
    let key = key_of(c.comm.ctx, &c.comm.group.ranks);
    let place = (c.seq, 0);
    c.real = state::with(|s| match s.rcoll.twins.get_mut(&key) {
        Some(t) => {
            if !t.knows(place) {
                t.waiting.insert(place);
            }
            true
        }
        None => false,
    })?;
    Ok(c)
}

/// Starts, in place order, every submitted operation whose turn has come on `key`'s twin.
fn pump(s: &mut State, key: CommKey) {
    loop {
        let Some(t) = s.rcoll.twins.get_mut(&key) else { return };
        let Some(comm) = t.comm else { return };
        if let Some(w) = t.solo_waiter.take() {
            if w != sched::current() {
                sched::wake(w);
            }
        }
        if t.hold {
            return;
        }
        let Some(&first) = t.waiting.first() else { break };
        let Some(q) = t.ready.remove(&first) else { break };
        t.waiting.remove(&first);
        let number = t.start(first);
        s.rcoll.running.insert(q.token, (key, number));
        // SAFETY: memory not owned by `q.mem` belongs to the submitter, parked in `run` until
        // this operation completes.
        unsafe { start_real(s, key, comm, q.what, q.mem, q.token, first) };
    }
    release_if_unused(s, key);
}

/// coll5: the fast path of a nonblocking call at one member per process (`nbc::fast`), in
/// one pass under the state lock: when communicator `comm_h` of subrank `sub` has a made twin
/// on which nothing waits for a turn, every process holds one of its members, and `build`
/// gives the real operation for (this rank, the process of each rank), takes the call's
/// number, makes its request (awaiting one event, returned) and starts the operation at
/// once, in the place the general path (`enrol`, `submit`, `pump`) would give it. None:
/// nothing was done.
///
/// # Safety
/// The memory of the operation `build` gives stays valid until the request completes.
pub(super) unsafe fn start_idle(
    sub: usize,
    comm_h: usize,
    build: impl FnOnce(usize, &[usize]) -> Option<(RealColl, CollMem)>,
) -> Option<crate::core::request::ReqId> {
    state::with(|s| {
        let (i, key, me, comm) = idle_twin(s, sub, comm_h, |_| true)?;
        let (what, mem) = build(me, s.rcoll.twins.get(&key)?.layout.as_ref()?.as_ref()?)?;
        let place = next_place(s, sub, i)?;
        let id = s.new_request(sub, comm_h);
        if let Some(r) = s.req_mut(id) {
            r.pending = 1;
        }
        let token = s.rcoll.token();
        let number = s.rcoll.twins.get_mut(&key)?.start(place);
        s.rcoll.running.insert(token, (key, number));
        s.rcoll.inflight.insert(token, Inflight::Req { id });
        // SAFETY: the caller keeps the memory valid until the request completes.
        unsafe { start_real(s, key, comm, what, mem, token, place) };
        Some(id)
    })
    .ok()
    .flatten()
}

/// The process of each of `ranks` (world ranks) when every process holds exactly one.
fn one_each(s: &State, ranks: &[u32]) -> Option<Box<[usize]>> {
    let mut seen = vec![false; s.nproc];
    let procs: Box<[usize]> = ranks.iter().map(|&w| s.locate(w).0).collect();
    (ranks.len() == s.nproc && procs.iter().all(|&p| !std::mem::replace(&mut seen[p], true))).then_some(procs)
}

/// The fast paths' look at communicator `comm_h` of subrank `sub` (active) when `check`
/// accepts it and it has a made twin on which nothing waits for a turn (`start_idle`,
/// `solo::begin`): (its index in the subrank's table, the twin's key, the caller's rank, the
/// twin's real communicator). Finds the twin's layout once (`Twin::layout`).
pub(super) fn idle_twin(
    s: &mut State,
    sub: usize,
    comm_h: usize,
    check: impl FnOnce(&CommRef) -> bool,
) -> Option<(usize, CommKey, usize, RComm)> {
    let (i, key, me) = twin_entry(s, sub, comm_h, check)?;
    let t = with_layout(s, sub, i, key)?;
    // Operations submitted and not started (`ready`) always have a place in `waiting`.
    (t.waiting.is_empty()).then_some(())?;
    Some((i, key, me, t.comm?))
}

/// The fast paths' first look (`idle_twin`, `begin_straight`): communicator `comm_h` of
/// subrank `sub` (active), an intra-communicator that `check` accepts: (its index in the
/// subrank's table, its twin's key, the caller's rank).
#[inline]
fn twin_entry(s: &State, sub: usize, comm_h: usize, check: impl FnOnce(&CommRef) -> bool) -> Option<(usize, CommKey, usize)> {
    let i = crate::core::comm::comm_index(comm_h)?;
    let l = s.locals.get(sub)?;
    if !l.initialized || l.finalized {
        return None;
    }
    let cm = l.comms.get(i)?.as_ref()?;
    if cm.is_inter() || !check(cm) {
        return None;
    }
    Some((i, key_of(cm.ctx, &cm.group.ranks), cm.rank as usize))
}

/// Twin `key` of communicator `i` of subrank `sub`, with its layout found (once per twin).
#[inline]
fn with_layout(s: &mut State, sub: usize, i: usize, key: CommKey) -> Option<&mut Twin> {
    if s.rcoll.twins.get(&key)?.layout.is_none() {
        fill_layout(s, sub, i, key)?;
    }
    s.rcoll.twins.get_mut(&key)
}

/// Finds the layout of twin `key` of communicator `i` of subrank `sub` (once per twin).
#[cold]
fn fill_layout(s: &mut State, sub: usize, i: usize, key: CommKey) -> Option<()> {
    let ranks = &s.locals.get(sub)?.comms.get(i)?.as_ref()?.group.ranks;
    let layout = one_each(s, ranks);
    let t = s.rcoll.twins.get_mut(&key)?;
    t.straight = layout.as_ref().is_some_and(|p| p.iter().enumerate().all(|(i, &q)| i == q));
    t.layout = Some(layout);
    Some(())
}

/// A check that passed already (a fn item: `begin_straight` calls itself with it once).
fn passed(_: &CommRef) -> bool {
    true
}

/// Takes the next call number of communicator `i` of subrank `sub`: the call's place.
pub(super) fn next_place(s: &mut State, sub: usize, i: usize) -> Option<Place> {
    let c = s.locals.get_mut(sub)?.comms.get_mut(i)?.as_mut()?;
    c.coll_seq += 1;
    Some((c.coll_seq, 0))
}

/// The blocking fast path's look and start at one member per process (`solo::begin`), with
/// one lookup of the twin: when `check` accepts communicator `comm_h` of subrank `sub`
/// (active) and its twin is made, idle (nothing waits for a turn) and holds rank i on
/// process i, takes the call's place and marks it started: (the twin's key, its real
/// communicator, the operation's number). None: nothing was done.
pub(super) fn begin_straight(
    s: &mut State,
    sub: usize,
    comm_h: usize,
    check: impl FnOnce(&CommRef) -> bool,
) -> Option<(CommKey, RComm, u64)> {
    let (i, key, _) = twin_entry(s, sub, comm_h, check)?;
    let t = s.rcoll.twins.get_mut(&key)?;
    if t.layout.is_none() {
        // Once per twin; the check above passed and holds still.
        fill_layout(s, sub, i, key)?;
        return begin_straight(s, sub, comm_h, passed);
    }
    // Operations submitted and not started (`ready`) always have a place in `waiting`.
    if !t.straight || !t.waiting.is_empty() {
        return None;
    }
    let comm = t.comm?;
    // One twin lookup on this hot path: the call number straight from the table.
    let cm = s.locals.get_mut(sub)?.comms.get_mut(i)?.as_mut()?;
    cm.coll_seq += 1;
    let number = t.start((cm.coll_seq, 0));
    Some((key, comm, number))
}

/// A blocking real call on the side thread (`token` in `running`) held twin `key`
/// (`Twin::hold`): it returned, start what waits.
pub(super) fn release(s: &mut State, key: CommKey, token: u64) {
    s.rcoll.running.remove(&token);
    if let Some(t) = s.rcoll.twins.get_mut(&key) {
        t.hold = false;
    }
    pump(s, key);
}

/// Frees a twin whose virtual communicator every local member freed, once nothing waits
/// for a turn on it (started operations finish: the real MPI frees it after them).
pub(super) fn release_if_unused(s: &mut State, key: CommKey) {
    let Some(t) = s.rcoll.twins.get(&key) else { return };
    // coll6: a tree broadcast's forward or a recursive doubling's next step still sends on it
    // (`nbc`: it releases the twin after them).
    if t.handles > 0 || !t.waiting.is_empty() || crate::core::coll::nbc::busy(s, key) {
        return;
    }
    let Some(comm) = t.comm else { return };
    let Some(t) = s.rcoll.twins.remove(&key) else { return };
    // A persistent call's private twin (`coll::persist`) is no communicator of the program's.
    if !crate::core::coll::persist::is_private(key) {
        s.direct.remove(key.0);
    }
    // Session 17: an entry of its parent's pool goes back there, free here; session 18: with
    // its own pool of spares. Otherwise it is freed with its spares.
    for c in s.rcoll.pools.release(t.entry, comm, t.pool) {
        free_real(s, c);
    }
    // Session 22: the pass-through's own communicator is never pooled.
    if let Some(c) = t.p2p {
        free_real(s, c);
    }
}

fn free_real(s: &mut State, comm: RComm) {
    if let Err(e) = s.tp.free_comm(comm) {
        crate::core::diag::fatal(&format!("real collective: {e}"));
    }
}

/// coll6: starts operation `token` at `place` on real communicator `comm`; one done at once
/// (the root of a tree broadcast, `nbc::start_tree`) completes here. A request's one real
/// operation is noted for its wait (`nbc::track`).
///
/// # Safety
/// As `Transport::start_coll`.
unsafe fn start_real(s: &mut State, key: CommKey, comm: RComm, what: RealColl, mem: CollMem, token: u64, place: Place) {
    if let Some(Inflight::Req { id }) = s.rcoll.inflight.get(&token) {
        crate::core::coll::nbc::track(s, *id, token);
    }
    let started = match what {
        // SAFETY: forwarded from the caller.
        RealColl::TreeBcast { root, .. } => unsafe { crate::core::coll::nbc::start_tree(s, key, comm, root, 0, place, mem, token) },
        // SAFETY: forwarded from the caller.
        RealColl::TreeScatter { root, bytes, .. } => unsafe {
            crate::core::coll::nbc::start_tree(s, key, comm, root, bytes, place, mem, token)
        },
        RealColl::FlatScatterv { root, .. } => {
            let sends = s.tp.myproc == root;
            // SAFETY: forwarded from the caller.
            unsafe { crate::core::coll::flatv::start(s, comm, sends, place, mem, token) }
        }
        RealColl::FlatGatherv { root, .. } => {
            let sends = s.tp.myproc != root;
            // SAFETY: forwarded from the caller.
            unsafe { crate::core::coll::flatv::start(s, comm, sends, place, mem, token) }
        }
        // red30: a small Gather as flat real messages, else the real MPI's.
        // SAFETY: forwarded from the caller.
        RealColl::Gather { .. } => match unsafe { crate::core::coll::flatgather::start(s, key, comm, &what, mem, token, place) } {
            Ok(r) => r,
            // SAFETY: forwarded from the caller.
            Err(mem) => unsafe { s.tp.start_coll(comm, what, mem, token) }.map(|()| false),
        },
        // red30: a small Reduce as a tree of real messages (`treereduce`), else the real MPI's.
        // SAFETY: forwarded from the caller.
        RealColl::Reduce { .. } => match unsafe { crate::core::coll::treereduce::start(s, key, comm, &what, mem, token, place) } {
            Ok(r) => r,
            // SAFETY: forwarded from the caller.
            Err(mem) => unsafe { s.tp.start_coll(comm, what, mem, token) }.map(|()| false),
        },
        // SAFETY: forwarded from the caller.
        _ => match unsafe { crate::core::coll::nbc::start_rd(s, key, comm, &what, mem, token, place) } {
            Ok(r) => r.map(|()| false),
            // SAFETY: forwarded from the caller.
            Err(mem) => unsafe { s.tp.start_coll(comm, what, mem, token) }.map(|()| false),
        },
    };
    match started {
        Ok(true) => on_done(s, token, Vec::new(), None),
        Ok(false) => {}
        Err(e) => crate::core::diag::fatal(&format!("real collective: {e}")),
    }
}

/// Session 25 (faults16): a real request of operation `token` failed with MPI error class
/// `class` (a truncating receive: the program's error, not the library's). The operation goes
/// on (a tree's forwards are still sent, so that no other process waits for ever) and ends
/// with the first such class, reported by its owner: a request's status (its wait or test
/// returns it through the communicator's error handler), a helper task's call (`run`), every
/// member request of a two-level record. It used to end the job from the progress engine.
pub fn failed(s: &mut State, token: u64, class: i32) {
    s.rcoll.errors.entry(token).or_insert(class);
}

/// A real collective finished (from the progress engine).
pub fn on_done(s: &mut State, token: u64, buf: Vec<u8>, comm: Option<RComm>) {
    // coll6: one of several real requests of an operation, a recursive doubling's step, or
    // a tree broadcast's forward (before its request completes: the program may reuse the
    // buffer then) may leave the operation under way (`nbc::on_step`).
    let Some(buf) = crate::core::coll::nbc::on_step(s, token, buf) else {
        return;
    };
    s.rcoll.running.remove(&token);
    // faults16: a failed operation's class goes to its owner (an `Op`'s stays for `run`).
    let error = match s.rcoll.inflight.get(&token) {
        Some(Inflight::Op { .. }) => None,
        _ if s.rcoll.errors.is_empty() => None,
        _ => s.rcoll.errors.remove(&token),
    };
    if let Some(class) = error {
        fail_owner(s, token, class);
    }
    match s.rcoll.inflight.remove(&token) {
        Some(Inflight::Op { task }) => {
            s.rcoll.results.insert(token, buf);
            if task != sched::current() {
                sched::wake(task);
            }
        }
        Some(Inflight::Rec { rec }) => crate::core::coll::nbrec::finish(s, &rec, buf),
        Some(Inflight::Req { id }) => {
            drop(buf);
            crate::core::coll::nbc::untrack(s, id);
            s.event_done(id);
        }
        Some(Inflight::Plan { plan, rec }) => crate::core::coll::persist::finish(s, plan, rec, buf),
        Some(Inflight::Early { key, uid }) => crate::core::coll::nbrec::landed(s, key, uid),
        Some(Inflight::Detached) => drop(buf),
        Some(Inflight::Pick { parent, child, dup }) => picked(s, parent, child, dup, &buf),
        Some(Inflight::Dup { child }) => {
            if let Some(t) = s.rcoll.twins.get_mut(&child) {
                t.comm = comm;
            }
            // Session 18: its children's picks waited for its real communicator.
            next_pick(s, child);
            pump(s, child);
        }
        Some(Inflight::P2p { child }) => {
            match (s.rcoll.twins.get_mut(&child), comm) {
                (Some(t), c) => t.p2p = c,
                // Its twin waits for it (`direct_children`), so it is there; if not, it goes.
                (None, Some(c)) => free_real(s, c),
                (None, None) => {}
            }
            // The one subrank (V=1) waits for it in `direct_children`.
            if sched::current() != 0 {
                sched::wake(0);
            }
        }
        None => {}
    }
}

/// faults16: marks the requests operation `token` completes with error class `class`.
fn fail_owner(s: &mut State, token: u64, class: i32) {
    let ids: Vec<crate::core::request::ReqId> = match s.rcoll.inflight.get(&token) {
        Some(Inflight::Req { id }) => vec![*id],
        Some(Inflight::Rec { rec }) | Some(Inflight::Plan { rec, .. }) => crate::core::coll::nbrec::requests(rec).collect(),
        Some(&Inflight::Early { key, uid }) => {
            crate::core::coll::nbrec::early_failed(s, key, uid, class);
            Vec::new()
        }
        _ => Vec::new(),
    };
    for id in ids {
        if let Some(r) = s.req_mut(id) {
            if r.status.error == c::MPI_SUCCESS {
                r.status.error = class;
            }
        }
    }
}

/// Submits call `c`'s real operation and parks until it completes; its owned buffer comes
/// back.
///
/// # Safety
/// The memory `mem` points to outside `mem.keep` is valid for the operation (it is used only
/// until this returns: it does not before the operation completed).
unsafe fn run(c: &Coll, what: RealColl, mem: CollMem) -> MpiResult<Vec<u8>> {
    if c.solo {
        // SAFETY: forwarded from the caller.
        return unsafe { crate::core::coll::solo::run(c, what, mem) };
    }
    let key = key_of(c.comm.ctx, &c.comm.group.ranks);
    let place = (c.seq, 0);
    let token = state::with(|s| {
        let token = s.rcoll.token();
        let Some(t) = s.rcoll.twins.get_mut(&key).filter(|t| t.waiting.contains(&place)) else {
            return err(c::MPI_ERR_INTERN, "real collective submitted without its place");
        };
        t.ready.insert(place, Queued { what, mem, token });
        s.rcoll.inflight.insert(token, Inflight::Op { task: sched::current() });
        pump(s, key);
        Ok(token)
    })??;
    let (buf, error) = block_on(|s| {
        let buf = s.rcoll.results.remove(&token)?;
        Some((
            buf,
            if s.rcoll.errors.is_empty() {
                None
            } else {
                s.rcoll.errors.remove(&token)
            },
        ))
    })?;
    match error {
        Some(class) => err(class, "a real collective's receive failed (mismatched counts?)"),
        None => Ok(buf),
    }
}

/// Submits call `c`'s real operation (enrolled: `c.real`) for request `id`, whose event it
/// completes when it finishes, from whichever thread runs the progress engine then: no task
/// waits for it (`coll::nbc`).
///
/// # Safety
/// The memory `mem` points to outside `mem.keep` stays valid until request `id` completes.
pub unsafe fn submit(c: &Coll, what: RealColl, mem: CollMem, id: crate::core::request::ReqId) -> MpiResult<()> {
    // SAFETY: forwarded from the caller.
    unsafe { queue(c, what, mem, Inflight::Req { id }) }
}

/// As `submit`, for a two-level call's record (`coll::nbrec`), under the state lock: call
/// `key`'s operation, whose completion distributes the result and completes the members'
/// requests.
///
/// # Safety
/// As `submit`, for every member's buffers.
pub(super) unsafe fn queue_rec(
    s: &mut State,
    key: (CommKey, u64),
    what: RealColl,
    mem: CollMem,
    rec: Box<crate::core::coll::nbrec::Rec>,
) -> MpiResult<()> {
    // SAFETY: forwarded from the caller.
    unsafe { queue_at(s, key.0, (key.1, 0), what, mem, Inflight::Rec { rec }) }
}

/// coll7: as `queue_rec`, for a broadcast's record started before every local member joined
/// (`coll::nbrec::join_bcast_in`): it stays open under `key`, and settles when the operation
/// finishes.
///
/// # Safety
/// As `submit`, for the record's buffer.
pub(super) unsafe fn queue_early(s: &mut State, key: (CommKey, u64), uid: u64, what: RealColl, mem: CollMem) -> MpiResult<()> {
    // SAFETY: forwarded from the caller.
    unsafe { queue_at(s, key.0, (key.1, 0), what, mem, Inflight::Early { key, uid }) }
}

/// coll7: registers `place` on twin `key` as `enrol` does (under the state lock).
pub(super) fn enrol_in(s: &mut State, key: CommKey, place: Place) {
    if let Some(t) = s.rcoll.twins.get_mut(&key) {
        if !t.knows(place) {
            t.waiting.insert(place);
        }
    }
}

/// `submit`: queues the operation at call `c`'s place on its twin.
///
/// # Safety
/// As `submit`.
unsafe fn queue(c: &Coll, what: RealColl, mem: CollMem, done: Inflight) -> MpiResult<()> {
    let key = key_of(c.comm.ctx, &c.comm.group.ranks);
    // SAFETY: forwarded from the caller.
    state::with(|s| unsafe { queue_at(s, key, (c.seq, 0), what, mem, done) })?
}

/// Queues an operation at `place` on twin `key`, with what its completion finishes, and
/// starts what can start.
///
/// # Safety
/// As `submit`.
unsafe fn queue_at(s: &mut State, key: CommKey, place: Place, what: RealColl, mem: CollMem, done: Inflight) -> MpiResult<()> {
    let token = s.rcoll.token();
    let Some(t) = s.rcoll.twins.get_mut(&key) else {
        return err(c::MPI_ERR_INTERN, "real collective submitted without its place");
    };
    // nbc10: the operation whose turn it is, with nothing queued and nobody to wake, starts
    // here as `pump` would start it at once, without a round through `ready` (about 400
    // instructions of the starting member's call, callgrind at 2x4).
    let turn = t.ready.is_empty() && !t.hold && t.solo_waiter.is_none() && t.waiting.first() == Some(&place);
    if let (true, Some(comm)) = (turn, t.comm) {
        t.waiting.remove(&place);
        let number = t.start(place);
        s.rcoll.inflight.insert(token, done);
        s.rcoll.running.insert(token, (key, number));
        // SAFETY: as in `pump`: the caller's contract on `mem`.
        unsafe { start_real(s, key, comm, what, mem, token, place) };
        release_if_unused(s, key);
        return Ok(());
    }
    if !t.waiting.contains(&place) {
        return err(c::MPI_ERR_INTERN, "real collective submitted without its place");
    }
    t.ready.insert(place, Queued { what, mem, token });
    s.rcoll.inflight.insert(token, done);
    pump(s, key);
    Ok(())
}

// coll5: private twins of persistent collectives (`coll::persist`).

/// Persistent calls per parent communicator, over its lifetime, that made a real
/// communicator for their private twin (later ones rerun their job in a helper task). Bounds
/// the real MPI's context ids, as `MAX_CHILDREN` does; counted in the parent's call order, so
/// every process agrees. Session 19: calls whose private twin reused a spare of the parent's
/// pool do not count (`persistent_reused`).
const MAX_PERSISTENT: u32 = 512;

/// Makes the private twin `child` of persistent call number `seq` on the communicator with
/// twin `parent`: its `MPI_Comm_idup` takes the call's place in the parent's issue order.
/// Returns false (nothing registered) when the parent has no twin or used its budget. Called
/// once per process, by the first local member to initialise the call, before any later call.
///
/// Session 19: without the pass-through it picks a spare real communicator of the parent's
/// pool first, as a derived communicator does (`derive`: the pick at `(seq, 0)`, the idup if
/// it comes to that at `(seq, 1)`), so a program that initialises and frees a persistent
/// collective per step makes one real communicator, not one per step. Its caller waits first
/// while the budget's count is not exact (`private_near_budget`).
pub(super) fn private_twin(s: &mut State, parent: CommKey, seq: u64, child: CommKey) -> bool {
    let place = (seq, 0);
    let Some(t) = s.rcoll.twins.get_mut(&parent) else { return false };
    if t.persistent - t.persistent_reused >= MAX_PERSISTENT || t.knows(place) {
        return false;
    }
    t.persistent += 1;
    // Session 22: with the pass-through too (no twin carries program messages any more).
    enqueue_pick(s, parent, place, child, 1);
    next_pick(s, parent);
    pump(s, parent);
    true
}

/// Session 19: whether persistent call `seq` on the communicator with twin `parent` must wait
/// before deciding whether it gets a private twin, as `near_budget` for a creating call: the
/// local count of private twins that made a real communicator is an upper bound of the exact
/// one (picks are decided at different moments on different processes); when even the bound
/// leaves room the call goes on, else it waits until every earlier pick is decided.
pub(super) fn private_near_budget(s: &State, parent: CommKey, seq: u64) -> bool {
    let Some(t) = s.rcoll.twins.get(&parent) else { return false };
    if t.knows((seq, 0)) || t.persistent - t.persistent_reused < MAX_PERSISTENT {
        return false;
    }
    picks_pending(s, t)
}

/// Queues round `round` of a persistent call on its private twin `key` (rounds go in order:
/// a member cannot start round r+1 before its request of round r completed) with what its
/// completion finishes (`plan` Some: the record's round, else request `id`'s event), and
/// starts it once the twin is made.
///
/// # Safety
/// The memory `mem` points to outside `mem.keep` stays valid until the round completes.
pub(super) unsafe fn queue_private(
    s: &mut State,
    key: CommKey,
    round: u64,
    what: RealColl,
    mem: CollMem,
    done: Result<(u64, Box<crate::core::coll::nbrec::Rec>), crate::core::request::ReqId>,
) -> MpiResult<()> {
    let place = (round, 0);
    let token = s.rcoll.token();
    let done = match done {
        Ok((plan, rec)) => Inflight::Plan { plan, rec },
        Err(id) => Inflight::Req { id },
    };
    s.rcoll.inflight.insert(token, done);
    let Some(t) = s.rcoll.twins.get_mut(&key) else {
        s.rcoll.inflight.remove(&token);
        return err(c::MPI_ERR_INTERN, "persistent collective started without its real communicator");
    };
    match t.comm {
        // Made, and no earlier round waits: start it now (what `pump` would do at once).
        Some(comm) if t.waiting.is_empty() && t.ready.is_empty() => {
            let number = t.start(place);
            s.rcoll.running.insert(token, (key, number));
            // SAFETY: forwarded from the caller.
            unsafe { start_real(s, key, comm, what, mem, token, place) };
        }
        _ => {
            t.waiting.insert(place);
            t.ready.insert(place, Queued { what, mem, token });
            pump(s, key);
        }
    }
    Ok(())
}

/// The last request of a persistent call's private twin `key` was freed: the twin goes once
/// nothing waits for a turn on it (started rounds finish first).
pub(super) fn drop_private(s: &mut State, key: CommKey) {
    if let Some(t) = s.rcoll.twins.get_mut(&key) {
        t.handles = 0;
        release_if_unused(s, key);
    }
}

/// The inter-process level of a barrier.
pub fn barrier(c: &Coll) -> MpiResult<()> {
    // SAFETY: no memory.
    unsafe { run(c, RealColl::Barrier, CollMem::owned(Vec::new())) }.map(|_| ())
}

/// Whether `count` elements of `dt` at `p` can go to the real MPI as they are: contiguous,
/// laid out like the work buffer of `red` (the same bytes), outside the program's swapped
/// thread-locals (which hold the running subrank's values only while it runs).
pub(super) fn as_is(p: *const u8, count: usize, dt: &DtRef, red: &Reducer) -> bool {
    dt.is_contiguous() && red.work(count, dt).1.is_contiguous() && crate::core::p2p::tlsbuf::in_swapped(p, count, dt).is_none()
}

/// The whole of an allreduce whose only local member is the caller, straight between the
/// user's buffers (`send` = `recv`: in place), when they can go as they are; None otherwise.
///
/// # Safety
/// As `Coll::allreduce`, with MPI_IN_PLACE resolved.
pub unsafe fn allreduce_direct(c: &Coll, send: *const u8, recv: *mut u8, count: usize, dt: &DtRef, red: &Reducer) -> Option<MpiResult<()>> {
    let (op, ty) = real_reduction(red)?;
    if !as_is(send, count, dt, red) || !as_is(recv, count, dt, red) {
        return None;
    }
    let (n, _) = red.work(count, dt);
    // SAFETY: the user's buffers, valid for the whole call (the caller's contract).
    Some(unsafe { run(c, RealColl::Allreduce { op, ty, count: n }, CollMem::at(send, recv, 0)) }.map(|_| ()))
}

/// As `allreduce_direct`, for a reduction to process `root`; `at_root`: the caller is the
/// root (only its `recv` matters).
///
/// # Safety
/// As `Coll::reduce`, with MPI_IN_PLACE resolved.
#[allow(clippy::too_many_arguments)]
pub unsafe fn reduce_direct(
    c: &Coll,
    send: *const u8,
    recv: *mut u8,
    count: usize,
    dt: &DtRef,
    red: &Reducer,
    root: usize,
    at_root: bool,
) -> Option<MpiResult<()>> {
    let (op, ty) = real_reduction(red)?;
    if !as_is(send, count, dt, red) || (at_root && !as_is(recv, count, dt, red)) {
        return None;
    }
    let (n, _) = red.work(count, dt);
    // Session 17: MPICH 4.0.2's blocking MPI_Reduce (`coll::solo`) crashes in place at a root
    // other than process 0 (from 1024 ints): it gets a copy of the operand.
    let copy = (c.solo && at_root && root != 0 && std::ptr::eq(send, recv)).then(|| {
        // SAFETY: laid out as is (`as_is`): the operand is its count * size bytes.
        unsafe { std::slice::from_raw_parts(send, count * dt.size) }.to_vec()
    });
    let send = copy.as_ref().map_or(send, |v| v.as_ptr());
    let mem = CollMem::at(send, if at_root { recv } else { std::ptr::null_mut() }, 0);
    // SAFETY: the user's buffers (and `copy`), valid for the whole call (the caller's contract).
    Some(unsafe { run(c, RealColl::Reduce { root, op, ty, count: n }, mem) }.map(|_| ()))
}

/// Session 25 (faults16): the real operation of a broadcast of `len` bytes from process
/// `root` at call `c`'s inter-process level. On a communicator with one member per process a
/// small one goes as a tree of real messages (`nbc::tree_bcast`), as a nonblocking call's
/// direct start does (`nbc::shape_at`): a member whose buffer cannot go as it is (a derived
/// type at one rank only) runs the call here, in a helper task, and must start the same real
/// operation as the others (it started the real MPI's `MPI_Ibcast` against their tree, and
/// every process hung). Decided from what every process has alike (the layout, the size);
/// the real MPI's blocking call (`c.solo`) keeps its own.
fn bcast_kind(c: &Coll, len: usize, root: usize) -> RealColl {
    let tree = !c.solo && crate::core::coll::nbc::tree_bcast(len) && one_per_process(&c.comm);
    if tree {
        RealColl::TreeBcast { root, tag: 0 }
    } else {
        RealColl::Bcast { root }
    }
}

/// The inter-process level of a broadcast from process `root`; `mine`: this is it.
///
/// # Safety
/// `b` is the running member's buffer, valid for its count.
pub unsafe fn bcast(c: &Coll, b: &Buf, root: usize, mine: bool) -> MpiResult<()> {
    let len = b.count * b.dt.size;
    let what = bcast_kind(c, len, root);
    if b.dt.is_contiguous() && crate::core::p2p::tlsbuf::in_swapped(b.ptr, b.count, &b.dt).is_none() {
        // Straight from or into the buffer.
        // SAFETY: the caller's buffer, valid for the whole call.
        return unsafe { run(c, what, CollMem::at(b.ptr, b.ptr, len)) }.map(|_| ());
    }
    let mut bytes = Vec::with_capacity(len);
    if mine {
        b.dt.pack(b.ptr, b.count, &mut bytes);
    } else {
        bytes.resize(len, 0);
    }
    if let RealColl::TreeBcast { .. } = what {
        // A tree's messages go from and into the memory the operation names and not its
        // owned buffer (`nbc::start_tree`): the packed bytes stay here, where `run` parks
        // until the operation completed.
        let p = bytes.as_mut_ptr();
        // SAFETY: `bytes` outlives the operation (`run` returns after it completed).
        unsafe { run(c, what, CollMem::at(p, p, len)) }?;
        if !mine {
            b.dt.unpack(&bytes, b.ptr, b.count);
        }
        return Ok(());
    }
    // SAFETY: our own buffer.
    let out = unsafe { run(c, what, CollMem::owned(bytes)) }?;
    if !mine {
        b.dt.unpack(&out, b.ptr, b.count);
    }
    Ok(())
}

/// The inter-process level of an allreduce on a work buffer (`reducible(red)` holds).
///
/// # Safety
/// `acc` is a work buffer for `count` elements of `dt`.
pub unsafe fn allreduce(c: &Coll, acc: Vec<u8>, count: usize, dt: &DtRef, red: &Reducer) -> MpiResult<Vec<u8>> {
    let Some((op, ty)) = real_reduction(red) else {
        return err(c::MPI_ERR_INTERN, "real reduction of an unsupported type");
    };
    let (n, _) = red.work(count, dt);
    // SAFETY: our own buffer.
    unsafe { run(c, RealColl::Allreduce { op, ty, count: n }, CollMem::owned(acc)) }
}

/// The inter-process level of a reduction to process `root` (whose buffer holds the result).
///
/// # Safety
/// As `allreduce`.
pub unsafe fn reduce(c: &Coll, acc: Vec<u8>, count: usize, dt: &DtRef, red: &Reducer, root: usize) -> MpiResult<Vec<u8>> {
    let Some((op, ty)) = real_reduction(red) else {
        return err(c::MPI_ERR_INTERN, "real reduction of an unsupported type");
    };
    let (n, _) = red.work(count, dt);
    if c.solo {
        // Session 17: not in place for MPICH 4.0.2's blocking MPI_Reduce, which crashes in place
        // at a root other than process 0 (from 1024 ints).
        let send = acc.clone();
        let mut keep = acc;
        let mem = CollMem {
            send: send.as_ptr(),
            recv: keep.as_mut_ptr(),
            bytes: keep.len(),
            keep,
        };
        // SAFETY: our own buffers (`send` lives until the call returned).
        return unsafe { run(c, RealColl::Reduce { root, op, ty, count: n }, mem) };
    }
    // SAFETY: our own buffer.
    unsafe { run(c, RealColl::Reduce { root, op, ty, count: n }, CollMem::owned(acc)) }
}

/// Session 17: the inter-process level of a reduction from a process other than the root's
/// (`root`), without waiting: the work buffer goes to the real `MPI_Ireduce` at the call's
/// place, and the call returns (MPI lets a non-root return once its operand may be reused;
/// this one is ours). The operation completes in whichever thread polls the progress engine;
/// `settle` waits for it before the real MPI is finalized.
///
/// # Safety
/// As `allreduce`.
pub unsafe fn reduce_away(c: &Coll, acc: Vec<u8>, count: usize, dt: &DtRef, red: &Reducer, root: usize) -> MpiResult<()> {
    let Some((op, ty)) = real_reduction(red) else {
        return err(c::MPI_ERR_INTERN, "real reduction of an unsupported type");
    };
    if c.solo {
        // The real MPI's blocking call (`coll::solo`) keeps its own way.
        // SAFETY: as the caller's.
        return unsafe { reduce(c, acc, count, dt, red, root) }.map(|_| ());
    }
    let (n, _) = red.work(count, dt);
    // SAFETY: our own buffer, kept by the operation until it completes.
    unsafe {
        queue(
            c,
            RealColl::Reduce { root, op, ty, count: n },
            CollMem::owned(acc),
            Inflight::Detached,
        )
    }
}

/// Session 17: the inter-process level of a reduction at the root (this process is `root`):
/// the work buffer `acc` reduced with the other processes' straight into the root's receive
/// buffer `recv` when it can take the work buffer's bytes as they are (`as_is`); Some(acc)
/// back otherwise, untouched, for `reduce`.
///
/// # Safety
/// As `reduce`; `recv` is the running root's receive buffer for `count` elements of `dt`.
pub unsafe fn reduce_into(
    c: &Coll,
    acc: Vec<u8>,
    recv: *mut u8,
    count: usize,
    dt: &DtRef,
    red: &Reducer,
    root: usize,
) -> MpiResult<Option<Vec<u8>>> {
    let Some((op, ty)) = real_reduction(red) else {
        return Ok(Some(acc));
    };
    if c.solo || !as_is(recv, count, dt, red) {
        return Ok(Some(acc));
    }
    let (n, _) = red.work(count, dt);
    // SAFETY: `acc` lives until the operation completed (`run` parks until then); `recv` is
    // the caller's.
    unsafe { run(c, RealColl::Reduce { root, op, ty, count: n }, CollMem::at(acc.as_ptr(), recv, 0)) }?;
    crate::core::coll::hier::recycle(acc);
    Ok(None)
}

/// Whether every process holds exactly one member of intra-communicator `cm` (the layout at
/// V=1): then its inter-process level is the whole call. The same answer on every process.
pub fn one_per_process(cm: &CommRef) -> bool {
    if cm.is_inter() {
        return false;
    }
    state::with(|s| {
        if cm.group.ranks.len() != s.nproc {
            return false;
        }
        let mut seen = vec![false; s.nproc];
        cm.group.ranks.iter().all(|&w| {
            let p = s.locate(w).0;
            !std::mem::replace(&mut seen[p], true)
        })
    })
    .unwrap_or(false)
}

/// The process of each member of `c`'s communicator, in rank order (the twin's rank of each).
pub(super) fn procs(c: &Coll) -> MpiResult<Vec<usize>> {
    state::with(|s| c.comm.group.ranks.iter().map(|&w| s.locate(w).0).collect())
}

/// Whether blocks `parts` lie back to back from the first, `bytes` each, contiguous, outside
/// the swapped thread-locals: the real MPI may read or write them as one buffer.
pub(super) fn one_buffer(parts: &[Buf], bytes: usize) -> bool {
    parts.iter().enumerate().all(|(i, b)| {
        b.dt.is_contiguous()
            && b.count * b.dt.size == bytes
            && b.ptr == parts[0].ptr.wrapping_add(i * bytes)
            && crate::core::p2p::tlsbuf::in_swapped(b.ptr, b.count, &b.dt).is_none()
    })
}

/// A whole allgather as one real `MPI_Iallgather` (a call enrolled with `one_per_process`):
/// straight between the user's buffers when they are laid out as the real MPI wants them
/// (contiguous blocks in process order), through a packed buffer otherwise. `send` None: in
/// place.
///
/// # Safety
/// As `Coll::allgatherv`, with every block `bytes` long (MPI_Allgather).
pub unsafe fn allgather(c: &Coll, send: Option<&Buf>, parts: &[Buf]) -> MpiResult<()> {
    let me = c.rank() as usize;
    let bytes = parts[me].count * parts[me].dt.size;
    let procs = procs(c)?;
    let n = parts.len();
    let ordered = procs.iter().enumerate().all(|(i, &p)| p == i);
    let send_ok = send.is_none_or(|b| one_buffer(std::slice::from_ref(b), bytes));
    if ordered && send_ok && one_buffer(parts, bytes) {
        // In place (`from` = `recv`: MPI_IN_PLACE), the own block is already in place.
        let from = send.map_or(parts[0].ptr as *const u8, |b| b.ptr as *const u8);
        // SAFETY: the user's buffers, valid for the whole call (the caller's contract).
        return unsafe { run(c, RealColl::Allgather { bytes }, CollMem::at(from, parts[0].ptr, n * bytes)) }.map(|_| ());
    }
    let mut all = vec![0u8; n * bytes];
    let mut mine = Vec::with_capacity(bytes);
    let own = send.unwrap_or(&parts[me]);
    own.dt.pack(own.ptr, own.count, &mut mine);
    let at = procs[me] * bytes;
    all[at..at + mine.len()].copy_from_slice(&mine);
    // SAFETY: our own buffer.
    let out = unsafe { run(c, RealColl::Allgather { bytes }, CollMem::owned(all)) }?;
    for (i, b) in parts.iter().enumerate() {
        let at = procs[i] * bytes;
        b.dt.unpack(&out[at..at + bytes], b.ptr, b.count);
    }
    Ok(())
}

/// A whole alltoall as one real `MPI_Ialltoall` (a call enrolled with `one_per_process`), as
/// `allgather` does.
///
/// # Safety
/// As `Coll::alltoallv`, with every block `bytes` long (MPI_Alltoall); `sends` do not alias
/// `recvs`.
pub unsafe fn alltoall(c: &Coll, sends: &[Buf], recvs: &[Buf]) -> MpiResult<()> {
    let me = c.rank() as usize;
    let bytes = recvs[me].count * recvs[me].dt.size;
    let procs = procs(c)?;
    let n = recvs.len();
    let ordered = procs.iter().enumerate().all(|(i, &p)| p == i);
    if ordered && one_buffer(sends, bytes) && one_buffer(recvs, bytes) {
        let mem = CollMem::at(sends[0].ptr, recvs[0].ptr, n * bytes);
        // SAFETY: the user's buffers, valid for the whole call (the caller's contract).
        return unsafe { run(c, RealColl::Alltoall { bytes }, mem) }.map(|_| ());
    }
    let mut keep = vec![0u8; 2 * n * bytes];
    let mut v = Vec::with_capacity(bytes);
    for (i, b) in sends.iter().enumerate() {
        v.clear();
        b.dt.pack(b.ptr, b.count, &mut v);
        let at = procs[i] * bytes;
        keep[at..at + v.len()].copy_from_slice(&v);
    }
    let send = keep.as_ptr();
    // SAFETY: the second half of `keep`, n * bytes long.
    let recv = unsafe { keep.as_mut_ptr().add(n * bytes) };
    let mem = CollMem {
        send,
        recv,
        bytes: n * bytes,
        keep,
    };
    // SAFETY: our own buffer (a Vec's heap block does not move with the Vec).
    let out = unsafe { run(c, RealColl::Alltoall { bytes }, mem) }?;
    for (i, b) in recvs.iter().enumerate() {
        let at = n * bytes + procs[i] * bytes;
        b.dt.unpack(&out[at..at + bytes], b.ptr, b.count);
    }
    Ok(())
}

/// A whole gather as one real `MPI_Igather` (a call enrolled by `coll::nbc` whose buffers
/// cannot go as they are): the blocks through one packed buffer in process order. `send`
/// None: in place at the root.
///
/// # Safety
/// As `Coll::gatherv`, with every block the same number of bytes (MPI_Gather).
pub unsafe fn gather(c: &Coll, send: Option<&Buf>, parts: &[Buf], root: i32) -> MpiResult<()> {
    let me = c.rank();
    let procs = procs(c)?;
    let rp = procs[root as usize];
    let own = send.unwrap_or_else(|| &parts[me as usize]);
    let bytes = own.count * own.dt.size;
    let mut mine = Vec::with_capacity(bytes);
    own.dt.pack(own.ptr, own.count, &mut mine);
    if me != root {
        // SAFETY: our own buffer.
        return unsafe { run(c, RealColl::Gather { root: rp, bytes }, CollMem::owned(mine)) }.map(|_| ());
    }
    let mut all = vec![0u8; procs.len() * bytes];
    let at = procs[me as usize] * bytes;
    all[at..at + bytes].copy_from_slice(&mine);
    // SAFETY: our own buffer (in place: the own block is already in it).
    let out = unsafe { run(c, RealColl::Gather { root: rp, bytes }, CollMem::owned(all)) }?;
    for (i, b) in parts.iter().enumerate() {
        if i as i32 != me || send.is_some() {
            let at = procs[i] * bytes;
            b.dt.unpack(&out[at..at + bytes], b.ptr, b.count);
        }
    }
    Ok(())
}

/// A whole scatter as one real `MPI_Iscatter`, as `gather` does. `recv` None: in place at
/// the root.
///
/// # Safety
/// As `Coll::scatterv`, with every block the same number of bytes (MPI_Scatter).
pub unsafe fn scatter(c: &Coll, parts: &[Buf], recv: Option<&Buf>, root: i32) -> MpiResult<()> {
    let me = c.rank();
    let procs = procs(c)?;
    let rp = procs[root as usize];
    if me != root {
        let b = recv.expect("a non-root rank has a receive buffer");
        let bytes = b.count * b.dt.size;
        let mut keep = vec![0u8; bytes];
        let mem = CollMem {
            send: std::ptr::null(),
            recv: keep.as_mut_ptr(),
            bytes,
            keep,
        };
        // SAFETY: our own buffer.
        let out = unsafe { run(c, RealColl::Scatter { root: rp, bytes }, mem) }?;
        b.dt.unpack(&out, b.ptr, b.count);
        return Ok(());
    }
    let bytes = parts[me as usize].count * parts[me as usize].dt.size;
    let mut all = vec![0u8; procs.len() * bytes];
    let mut v = Vec::with_capacity(bytes);
    for (i, b) in parts.iter().enumerate() {
        v.clear();
        b.dt.pack(b.ptr, b.count, &mut v);
        let at = procs[i] * bytes;
        all[at..at + v.len()].copy_from_slice(&v);
    }
    let mem = CollMem {
        send: all.as_ptr(),
        recv: std::ptr::null_mut(),
        bytes,
        keep: all,
    };
    // SAFETY: our own buffer (the root's block stays where it is: in place).
    unsafe { run(c, RealColl::Scatter { root: rp, bytes }, mem) }?;
    if let Some(d) = recv {
        crate::core::coll::local_copy(&parts[me as usize], d);
    }
    Ok(())
}

/// Communicators made from `parent` by its call number `seq`, each as (context, members in
/// rank order): a split's in colour order. Those that still have members on every process
/// get a twin (at most `MAX_SPLIT`); the first local member to get here starts their
/// `MPI_Comm_idup`s, once per process. What decides is the same on every process: whether
/// the parent has a twin, the members, and the parent's count of children so far.
pub fn derive(parent: &CommRef, seq: u64, children: &[(u64, &[u32])]) -> MpiResult<()> {
    if parent.is_inter() {
        return Ok(());
    }
    let pk = key_of(parent.ctx, &parent.group.ranks);
    // Session 18: near the budget, the exact count of children that made their real
    // communicator needs every earlier pick decided (the same on every process then).
    await_exact_budget(|s| near_budget(s, pk, seq, children.len()))?;
    state::with(|s| {
        if !s.cfg.real_coll_derived || !s.rcoll.twins.contains_key(&pk) {
            return;
        }
        let spanning = children.iter().filter_map(|&(ctx, ranks)| {
            let mut seen = vec![false; s.nproc];
            for &w in ranks {
                seen[s.locate(w).0] = true;
            }
            let local = ranks.iter().filter(|&&w| s.locate(w).0 == s.myproc).count();
            seen.iter().all(|&x| x).then(|| (key_of(ctx, ranks), local))
        });
        let spanning: Vec<(CommKey, usize)> = spanning.take(MAX_SPLIT).collect();
        // Session 17: children reuse the parent's spare real communicators (`Pool`); session
        // 22: with the pass-through too, whose program messages now go on a real communicator
        // of their own (`Twin::p2p`), made by an idup at the call's places after every pick.
        let direct = crate::core::p2p::direct::on();
        for (i, (child, local)) in spanning.into_iter().enumerate() {
            let place = (seq, 2 * i as u32);
            let Some(t) = s.rcoll.twins.get_mut(&pk) else { return };
            if t.knows(place) {
                continue;
            }
            // Session 18: children that reused a spare do not count (`Twin::reused`).
            if t.children - t.reused >= max_children() {
                break;
            }
            t.children += 1;
            // The pick at `place`, the idup (if it comes to that) at the next one.
            enqueue_pick(s, pk, place, child, local);
            if direct {
                let token = s.rcoll.token();
                queue_dup(s, pk, (seq, P2P_PLACES + i as u32), token, Inflight::P2p { child });
            }
        }
        next_pick(s, pk);
        pump(s, pk);
    })?;
    if crate::core::p2p::direct::on() {
        direct_children(children)?;
    }
    Ok(())
}

/// Session 22: where a creating call's idups of the pass-through's communicators go in its
/// places on the parent, after its picks and their idups (`2 * MAX_SPLIT` places at most).
const P2P_PLACES: u32 = 2 * MAX_SPLIT as u32;

/// Queues a real `MPI_Comm_idup` of twin `parent`'s communicator at `place`, whose
/// completion means `done`.
fn queue_dup(s: &mut State, parent: CommKey, place: Place, token: u64, done: Inflight) {
    let Some(t) = s.rcoll.twins.get_mut(&parent) else { return };
    t.waiting.insert(place);
    t.ready.insert(
        place,
        Queued {
            what: RealColl::Dup,
            mem: CollMem::owned(Vec::new()),
            token,
        },
    );
    s.rcoll.inflight.insert(token, done);
}

/// Session 18: waits while `near(state)`: a budget's count is not exact yet; woken by the
/// next decided pick (`picked`). Session 19: for derived communicators and private twins.
pub(super) fn await_exact_budget(near: impl Fn(&State) -> bool) -> MpiResult<()> {
    block_on(|s| {
        if !near(s) {
            return Some(());
        }
        let me = sched::current();
        if !s.rcoll.budget_waiters.contains(&me) {
            s.rcoll.budget_waiters.push(me);
        }
        None
    })
}

/// Session 18: whether creating call `seq` of the communicator with twin `parent` (`n`
/// children) must wait before deciding which children get a twin: its count of children
/// that made a real communicator (`children - reused`) is exact only once every earlier pick
/// of its pool is decided, which differs between processes at any moment; an upper bound
/// (`reused` only grows) decides alone when even the bound leaves room for all `n`, and
/// otherwise the call waits for the exact count. Every process thus takes the same decision.
fn near_budget(s: &State, parent: CommKey, seq: u64, n: usize) -> bool {
    let Some(t) = s.rcoll.twins.get(&parent) else { return false };
    if t.knows((seq, 0)) || (t.children - t.reused) as usize + n.min(MAX_SPLIT) < max_children() as usize {
        return false;
    }
    picks_pending(s, t)
}

/// Session 19: whether a pick of `t`'s pool is running or queued (a budget's local count is
/// then only an upper bound).
fn picks_pending(s: &State, t: &Twin) -> bool {
    t.pool
        .and_then(|id| s.rcoll.pools.get(id))
        .is_some_and(|p| p.active || !p.queue.is_empty())
}

/// Session 17 (derived communicators), session 19 (private twins): registers child `child`
/// (`local` handles here) of twin `parent` for a pick of its pool at `place`, and the place
/// of the idup that follows if no spare is free everywhere (`picked`).
fn enqueue_pick(s: &mut State, parent: CommKey, place: Place, child: CommKey, local: usize) {
    let Some(t) = s.rcoll.twins.get_mut(&parent) else { return };
    t.waiting.insert(place);
    t.waiting.insert((place.0, place.1 + 1));
    let pools = &mut s.rcoll.pools;
    let id = *t.pool.get_or_insert_with(|| pools.create());
    if let Some(p) = pools.get_mut(id) {
        p.queue.push_back((place, child));
    }
    s.rcoll.twins.insert(child, Twin::new(None, local));
}

/// Session 17: starts the next pick of twin `parent`'s pool when none runs: the mask of the
/// entries free here, and-reduced with every process's at the pick's place.
///
/// Session 18: not before the parent's real communicator is known: a parent that picks a slot
/// gets the pool that came with it (`picked`), and its own children's picks wait for that.
fn next_pick(s: &mut State, parent: CommKey) {
    let token = s.rcoll.token();
    let Some(t) = s.rcoll.twins.get_mut(&parent) else { return };
    let Some(p) = t.pool.and_then(|id| s.rcoll.pools.get_mut(id)) else {
        return;
    };
    if p.active || t.comm.is_none() {
        return;
    }
    let Some((place, child)) = p.queue.pop_front() else { return };
    p.active = true;
    let mask = p.mask();
    t.ready.insert(
        place,
        Queued {
            what: RealColl::Allreduce {
                op: r::REAL_MPI_BAND,
                ty: r::REAL_MPI_UINT64_T,
                count: 1,
            },
            mem: CollMem::owned(mask.to_ne_bytes().to_vec()),
            token,
        },
    );
    let dup = (place.0, place.1 + 1);
    s.rcoll.inflight.insert(token, Inflight::Pick { parent, child, dup });
}

/// Session 17: the pick of `child` is decided (`mask`: the entries free on every process):
/// the lowest such entry is its twin, or its `MPI_Comm_idup` starts at place `dup`.
fn picked(s: &mut State, parent: CommKey, child: CommKey, dup: Place, mask: &[u8]) {
    let mask = mask.get(..8).map_or(0, |b| u64::from_ne_bytes(b.try_into().expect("8 bytes")));
    let token = s.rcoll.token();
    let Some(id) = s.rcoll.twins.get(&parent).and_then(|t| t.pool) else {
        return;
    };
    match s.rcoll.pools.pick(id, mask) {
        Picked::Reuse { index, comm, pool } => {
            // Taken on every process: no idup at `dup`.
            if let Some(t) = s.rcoll.twins.get_mut(&parent) {
                t.waiting.remove(&dup);
                // Session 19: a persistent call's private twin counts in its own budget.
                if crate::core::coll::persist::is_private(child) {
                    t.persistent_reused += 1;
                } else {
                    t.reused += 1;
                }
            }
            match s.rcoll.twins.get_mut(&child) {
                Some(c) => {
                    c.comm = Some(comm);
                    c.entry = Some((id, index));
                    // Session 18: with the spares that came with it.
                    c.pool = s.rcoll.pools.adopt(c.pool, pool);
                }
                // Its twin waits for this communicator, so it is there; if not, the entry
                // goes back.
                None => {
                    for c in s.rcoll.pools.release(Some((id, index)), comm, pool) {
                        free_real(s, c);
                    }
                }
            }
            next_pick(s, child);
            pump(s, child);
        }
        Picked::Make { index } => {
            if let Some(t) = s.rcoll.twins.get_mut(&parent) {
                t.ready.insert(
                    dup,
                    Queued {
                        what: RealColl::Dup,
                        mem: CollMem::owned(Vec::new()),
                        token,
                    },
                );
            }
            s.rcoll.inflight.insert(token, Inflight::Dup { child });
            if let Some(c) = s.rcoll.twins.get_mut(&child) {
                c.entry = index.map(|i| (id, i));
            }
        }
    }
    for w in std::mem::take(&mut s.rcoll.budget_waiters) {
        if w != sched::current() {
            sched::wake(w);
        }
    }
    next_pick(s, parent);
    pump(s, parent);
}

/// Point-to-point passing through (`p2p::direct`): waits until the pass-through's real
/// communicators of `children` that have a twin are made (`Twin::p2p`), then makes those
/// communicators direct, before any message can go on them (so both ends of every message
/// agree on its way). Their `MPI_Comm_idup`s were queued above on every process, in the
/// parent's issue order.
fn direct_children(children: &[(u64, &[u32])]) -> MpiResult<()> {
    let keys: Vec<(u64, CommKey)> = children.iter().map(|&(ctx, ranks)| (ctx, key_of(ctx, ranks))).collect();
    let made = |s: &State| keys.iter().all(|(_, k)| s.rcoll.twins.get(k).is_none_or(|t| t.p2p.is_some()));
    block_on(|s| made(s).then_some(()))?;
    state::with(|s| {
        for (&(ctx, ranks), (_, key)) in children.iter().zip(&keys) {
            if let Some(comm) = s.rcoll.twins.get(key).and_then(|t| t.p2p) {
                s.direct.add(ctx, comm, ranks);
            }
        }
    })
}

/// Runs the progress engine until every twin being made is made and every operation queued
/// for a turn has started, so that all processes start the same real operations before the
/// real MPI is finalized (a twin's `MPI_Comm_idup` can complete only in the last steps, and the
/// operations queued behind it must still start here as they did on the other processes).
pub fn settle(s: &mut State) {
    crate::core::coll::persist::settle(s);
    let unsettled = |s: &State| {
        s.rcoll
            .inflight
            .values()
            .any(|f| matches!(f, Inflight::Dup { .. } | Inflight::P2p { .. } | Inflight::Detached | Inflight::Pick { .. } | Inflight::Rec { .. }))
            || s.rcoll.twins.values().any(|t| !t.ready.is_empty())
            || s.rcoll.pools.picking()
            // nbc8: a two-level broadcast whose members all completed (the root's process
            // completes them at once), or a Gather/Scatter record whose members only send,
            // may still be sending from its record.
            || !s.rcoll.landing.is_empty()
    };
    while unsettled(s) {
        s.progress();
    }
}

/// Twins reported to the deadlock detector, at most.
pub const MAX_REPORTED: usize = 64;

/// This process's real collectives, for the deadlock detector: per twin (a hash of its key
/// that every process computes alike), the operations started on it and the number of the
/// earliest one still running here (0: none). A twin this process already released while
/// operations on it still run reports `u64::MAX` started (unknown: no constraint). None
/// when there are more than `MAX_REPORTED` twins.
pub fn detector_view(s: &State) -> Option<Vec<(u64, u64, u64)>> {
    let mut view: IdMap<CommKey, (u64, u64)> = IdMap::default();
    for (key, t) in s.rcoll.twins.iter() {
        view.insert(*key, (t.started, 0));
    }
    let inline = s.rcoll.inline.filter(|_| crate::core::coll::solo::inline_busy().is_some());
    for (key, number) in s.rcoll.running.values().chain(inline.as_ref()) {
        let e = view.entry(*key).or_insert((u64::MAX, 0));
        if e.1 == 0 || *number < e.1 {
            e.1 = *number;
        }
    }
    if view.len() > MAX_REPORTED {
        return None;
    }
    Some(
        view.into_iter()
            .map(|(k, (started, earliest))| (key_hash(k), started, earliest))
            .collect(),
    )
}

/// A 64-bit name of a twin's key, the same on every process.
fn key_hash((ctx, first, len): CommKey) -> u64 {
    crate::core::idmap::mix64(ctx ^ (first as u64).rotate_left(24) ^ (len as u64).rotate_left(48))
}

/// Whether intra-communicator `cm` has a twin (made or being made).
pub fn has_twin(cm: &CommRef) -> bool {
    !cm.is_inter() && state::with(|s| s.rcoll.twins.contains_key(&key_of(cm.ctx, &cm.group.ranks))).unwrap_or(false)
}

/// One local handle of `cm` was freed.
pub fn forget(cm: &CommRef) {
    if cm.is_inter() {
        return;
    }
    let key = key_of(cm.ctx, &cm.group.ranks);
    let _ = state::with(|s| {
        if let Some(t) = s.rcoll.twins.get_mut(&key) {
            t.handles = t.handles.saturating_sub(1);
            release_if_unused(s, key);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case(OpKind::Sum, BasicType::Double, true)]
    #[case(OpKind::Max, BasicType::Int, true)]
    #[case(OpKind::MinLoc, BasicType::DoubleInt, true)]
    #[case(OpKind::Band, BasicType::Byte, true)]
    // Fortran types, and ops the standard does not define on a type, stay on point-to-point.
    #[case(OpKind::Sum, BasicType::Integer, false)]
    #[case(OpKind::Land, BasicType::Double, false)]
    #[case(OpKind::Max, BasicType::Char, false)]
    fn real_reductions(#[case] op: OpKind, #[case] ty: BasicType, #[case] ok: bool) {
        let r = real_op(op).zip(real_type(ty)).filter(|_| op::valid_strict(op, ty));
        assert_eq!(r.is_some(), ok);
    }

    #[test]
    fn places_already_known() {
        let mut t = Twin::new(None, 1);
        t.last = Some((4, 0));
        t.waiting.insert((6, 0));
        assert!(t.knows((3, 5)));
        assert!(t.knows((4, 0)));
        assert!(!t.knows((5, 0)));
        assert!(t.knows((6, 0)));
        assert!(!t.knows((4, 1)));
    }

    /// Session 22: a creating call's idups of the pass-through's communicators come after
    /// every place of its picks and their idups (child `pick` of at most `MAX_SPLIT`), and
    /// stay distinct from each other.
    #[rstest]
    #[case(0, 0)]
    #[case(0, MAX_SPLIT - 1)]
    #[case(MAX_SPLIT - 1, 0)]
    #[case(MAX_SPLIT - 1, MAX_SPLIT - 1)]
    fn p2p_places_after_picks(#[case] pick: usize, #[case] child: usize) {
        let seq = 7;
        let (pick_place, dup_place) = ((seq, 2 * pick as u32), (seq, 2 * pick as u32 + 1));
        let p2p = (seq, P2P_PLACES + child as u32);
        assert!(pick_place < p2p && dup_place < p2p);
        assert!(p2p < (seq + 1, 0));
        assert_ne!(p2p, (seq, P2P_PLACES + ((child + 1) % MAX_SPLIT) as u32));
    }
}
