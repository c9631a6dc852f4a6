//! Two-level collectives. The members of a communicator that live in one process meet in
//! memory (a `Meet` in the process state): each registers its buffers and parks, one
//! representative per process combines or copies the local operands directly, runs the flat
//! algorithm of `coll` among the representatives only (one message per process and step
//! instead of one per member), then writes every local member's result and releases them.
//! Between two processes this saves every intra-process message, queue search and most
//! context switches of the flat algorithms.
//!
//! Every member takes the same decision from the communicator's group alone, so the levels
//! always match across processes. Non-commutative reductions go two-level only when each
//! process holds a contiguous block of ranks (then process order is rank order).
//!
//! When the call is enrolled for a real collective (`Coll::real`, see `coll::real`), the
//! inter-process level is one nonblocking collective of the real MPI among the processes,
//! started by the representative (which parks until it completes) instead of the flat
//! algorithm among representatives; with one member per process the meeting is trivial.

use crate::consts as c;
use crate::core::coll::real;
use crate::core::coll::reduce::Reducer;
use crate::core::coll::{in_place, local_copy, Buf, Coll};
pub use crate::core::comm::nodes::NodeMap;
use crate::core::comm::CTX_COLL;
use crate::core::datatype::DtRef;
use crate::core::error::{err, MpiError, MpiResult};
use crate::core::idmap::IdMap;
use crate::core::p2p::blocking::block_on;
use crate::core::state::{self, State};
use crate::sched;
use std::sync::Arc;

/// One local member's part in a two-level call.
#[derive(Clone)]
pub struct Member {
    pub rank: i32,
    /// Scheduler task to wake (a subrank, or the helper running a nonblocking collective).
    task: usize,
    send: *const u8,
    pub(super) buf: Option<Buf>,
}

impl Member {
    /// The running caller as the only member of its process, `buf` its registered buffer.
    pub(super) fn new(rank: i32, buf: Buf) -> Member {
        Member {
            rank,
            task: sched::current(),
            send: buf.ptr,
            buf: Some(buf),
        }
    }
}

/// The meeting point of the local members of one collective call.
#[derive(Default)]
pub struct Meet {
    members: Vec<Member>,
    rep_task: Option<usize>,
    released: bool,
    error: Option<MpiError>,
    left: usize,
    /// A result every member takes when released (`hiergather`: the gathered blocks).
    data: Option<Arc<Vec<u8>>>,
}

/// A communicator's group as seen by the two-level collectives: (collective context, world
/// rank of its rank 0, size). The context alone is not enough: the two sides of an
/// inter-communicator run their local collectives on one context.
pub type CommKey = (u64, u32, usize);

/// The key of an intra-communicator with context `ctx` and members `ranks` (world ranks in
/// rank order), or of the local group of an inter-communicator (`ctx` its local context).
pub fn key_of(ctx: u64, ranks: &[u32]) -> CommKey {
    (ctx | CTX_COLL, ranks.first().copied().unwrap_or(0), ranks.len())
}

fn comm_key(c: &Coll) -> CommKey {
    key_of(c.ctx(), &c.comm.group.ranks)
}

/// A meeting point: (communicator, call number, step within the call).
pub type Key = (CommKey, u64, u32);

/// Per-process state of the two-level collectives.
#[derive(Default)]
pub struct Meets {
    open: IdMap<Key, Meet>,
    /// Session 17: the local folds of open Reduce calls (`coll::fold`).
    pub(super) folds: IdMap<Key, super::fold::Fold>,
    /// Work buffers kept for reuse by representatives.
    pub(super) spare: Vec<Vec<u8>>,
}

/// The node map of call `c`'s group, built at its first two-level call and kept with the
/// group (session 22: it was a lookup in a map under the state lock at every call, ~150 of a
/// member's ~280 instructions in `plan`).
fn node_map(c: &Coll) -> Option<Arc<NodeMap>> {
    let g = &c.comm.group;
    if let Some(m) = g.nodes.get() {
        return Some(m.clone());
    }
    let (myproc, v) = state::with(|s| (s.myproc, s.cfg.local())).ok()?;
    Some(
        g.nodes
            .get_or_init(|| Arc::new(NodeMap::build(g, myproc, |w| w as usize / v)))
            .clone(),
    )
}

/// Whether call `c` may have a meeting plan (`plan`); false for a flat view, an
/// inter-communicator, and, at one subrank per process (V = 1, one worker), where no member
/// shares a process, for a call not enrolled for a real collective (session 20: they skip the
/// lock and map lookup, coll11's ~175 instructions). Session 21: inlined into the callers
/// (`Coll::barrier`, `bcast`, `reduce`, `allreduce`), which test it before
/// calling into this module: the out-of-line call that only found there was no plan cost
/// ~60 instructions of a V=1 Bcast. Session 22: that test lives in this module's inline
/// wrappers (`barrier`, `bcast`, `reduce`, `allreduce`), the bodies being `*_planned`. `plan` keeps the test for the other callers (Reduce_scatter).
#[inline(always)]
pub fn may_meet(c: &Coll) -> bool {
    !(c.flat_only() || c.comm.is_inter() || (!c.real && super::one_per_process()))
}

/// The map and the meeting point when the two-level version applies to this step (always
/// for a call enrolled for a real collective).
pub(super) fn plan(c: &Coll) -> Option<(Arc<NodeMap>, Key)> {
    if !may_meet(c) {
        return None;
    }
    let m = node_map(c)?;
    (c.real || m.shared()).then(|| (m, (comm_key(c), c.seq, c.next_step())))
}

/// Registers this member at the call's meeting point; true when it is the last local member
/// to arrive.
pub(super) fn arrive(key: Key, nm: &NodeMap, rank: i32, rep: bool, send: *const u8, buf: Option<Buf>) -> MpiResult<bool> {
    let task = sched::current();
    state::with(|s| {
        let m = s.meets.open.entry(key).or_default();
        m.members.push(Member { rank, task, send, buf });
        let last = m.members.len() == nm.local.len();
        if rep {
            m.rep_task = Some(task);
        } else if last {
            if let Some(t) = m.rep_task {
                sched::wake(t);
            }
        }
        last
    })
}

/// A member other than the representative: parks until released; the representative's
/// error, if it met one, is this member's too.
fn wait_release(key: Key, nm: &NodeMap) -> MpiResult<()> {
    wait_out(key, nm).map(|_| ())
}

/// `wait_release`, giving what the representative published (`publish`), if anything.
fn wait_out(key: Key, nm: &NodeMap) -> MpiResult<Option<Arc<Vec<u8>>>> {
    let n = nm.local.len();
    let (e, d) = block_on(|s| {
        let m = s.meets.open.get_mut(&key)?;
        if !m.released {
            return None;
        }
        let r = (m.error.clone(), m.data.clone());
        depart(s, key, n);
        Some(r)
    })?;
    e.map_or(Ok(d), Err)
}

/// The representative: leaves `data` for the members to take when released (before
/// `release`).
pub(super) fn publish(key: Key, data: Option<Arc<Vec<u8>>>) {
    let _ = state::with(|s| {
        if let Some(m) = s.meets.open.get_mut(&key) {
            m.data = data;
        }
    });
}

/// `wait_release` for a call whose representative published a result: this member's share.
pub(super) fn wait_published(key: Key, nm: &NodeMap) -> MpiResult<Arc<Vec<u8>>> {
    wait_out(key, nm)?.map_or_else(|| err(c::MPI_ERR_INTERN, "released without the gathered data"), Ok)
}

fn depart(s: &mut State, key: Key, n: usize) {
    if let Some(m) = s.meets.open.get_mut(&key) {
        m.left += 1;
        if m.left == n {
            s.meets.open.remove(&key);
        }
    }
}

/// The representative: parks until every local member arrived; their parts by rank.
pub(super) fn members(key: Key, nm: &NodeMap) -> MpiResult<Vec<Member>> {
    let n = nm.local.len();
    let mut v = block_on(|s| {
        let m = s.meets.open.get(&key)?;
        (m.members.len() == n).then(|| m.members.clone())
    })?;
    v.sort_by_key(|m| m.rank);
    Ok(v)
}

/// The representative: releases the local members with the outcome of the call.
pub(super) fn release(key: Key, nm: &NodeMap, r: &MpiResult<()>) {
    let me = sched::current();
    let _ = state::with(|s| {
        if let Some(m) = s.meets.open.get_mut(&key) {
            if m.released {
                // Released early already (`reduce`: the members' operands were read).
                return;
            }
            m.released = true;
            m.error = r.as_ref().err().cloned();
            for t in m.members.iter().map(|x| x.task).filter(|&t| t != me) {
                sched::wake(t);
            }
        }
        depart(s, key, nm.local.len());
    });
}

/// A copy of the bytes a buffer in the program's thread-locals spans.
pub(super) struct Shadow {
    data: Vec<u8>,
    lo: usize,
}

impl Shadow {
    pub(super) fn of(b: &Buf) -> Option<Shadow> {
        let (lo, hi) = crate::core::p2p::tlsbuf::in_swapped(b.ptr, b.count, &b.dt)?;
        let mut data = vec![0u8; hi - lo];
        // SAFETY: [lo, hi) is the span of the running member's own buffer.
        unsafe { std::ptr::copy_nonoverlapping(lo as *const u8, data.as_mut_ptr(), hi - lo) };
        Some(Shadow { data, lo })
    }
    /// Where `p` (inside the span) lies in the copy.
    pub(super) fn at(&self, p: *mut u8) -> *mut u8 {
        self.data.as_ptr().wrapping_add(p as usize - self.lo) as *mut u8
    }
    /// # Safety
    /// The owner of the span is running.
    unsafe fn restore(&self) {
        // SAFETY: as the caller's; the span is the owner's buffer.
        unsafe { std::ptr::copy_nonoverlapping(self.data.as_ptr(), self.lo as *mut u8, self.data.len()) };
    }
}

/// One two-level step: a member registers its buffers and waits for its representative; the
/// representative runs `work` (which fetches the local members when it needs them, waiting
/// for the last to arrive) and releases everyone with its outcome. `rep` None: any member
/// may do the work (it does not depend on who does it: a real collective of the whole
/// process, results written into every member's buffer), and the last to arrive does it at
/// once, instead of waking a representative that may have to wait for its siblings to
/// compute before it runs again (the helper tasks of nonblocking collectives).
///
/// The representative reads and writes the other members' buffers while they are parked; a
/// buffer in the program's thread-locals holds only the running subrank's values then (see
/// `core::p2p::tlsbuf`), so such a member registers a copy instead and takes the result back
/// once released.
#[allow(clippy::too_many_arguments)]
fn step(
    key: Key,
    nm: &NodeMap,
    rank: i32,
    rep: Option<bool>,
    send: Option<Buf>,
    buf: Option<Buf>,
    work: impl FnOnce(&dyn Fn() -> MpiResult<Vec<Member>>) -> MpiResult<()>,
) -> MpiResult<()> {
    if nm.local.len() == 1 {
        // The caller is its process's only member (one per process, e.g. V = 1): nobody to
        // meet, so no meeting point (its lock rounds, map entries and wake-ups). Its buffers
        // are its own and it is running: no thread-local copy either.
        let me = Member {
            rank,
            task: sched::current(),
            send: send.map_or(std::ptr::null(), |b| b.ptr as *const u8),
            buf,
        };
        return work(&|| Ok(vec![me.clone()]));
    }
    let Some(rep) = rep else {
        let (ss, bs) = (send.as_ref().and_then(Shadow::of), buf.as_ref().and_then(Shadow::of));
        let sp = match (&send, &ss) {
            (Some(b), Some(sh)) => sh.at(b.ptr),
            (Some(b), None) => b.ptr,
            (None, _) => std::ptr::null_mut(),
        };
        let bp = match (buf, &bs) {
            (Some(b), Some(sh)) => Some(Buf::new(sh.at(b.ptr), b.count, b.dt)),
            (b, _) => b,
        };
        let r = if arrive(key, nm, rank, false, sp, bp)? {
            let r = work(&|| members(key, nm));
            release(key, nm, &r);
            r
        } else {
            wait_release(key, nm)
        };
        if let Some(sh) = bs {
            // SAFETY: this member runs, with its own thread-local values in place (the work
            // wrote its result into the copy it registered).
            unsafe { sh.restore() };
        }
        return r;
    };
    if !rep {
        let (ss, bs) = (send.as_ref().and_then(Shadow::of), buf.as_ref().and_then(Shadow::of));
        let sp = match (&send, &ss) {
            (Some(b), Some(sh)) => sh.at(b.ptr),
            (Some(b), None) => b.ptr,
            (None, _) => std::ptr::null_mut(),
        };
        let bp = match (buf, &bs) {
            (Some(b), Some(sh)) => Some(Buf::new(sh.at(b.ptr), b.count, b.dt)),
            (b, _) => b,
        };
        arrive(key, nm, rank, rep, sp, bp)?;
        let r = wait_release(key, nm);
        if let Some(sh) = bs {
            // SAFETY: this member runs again, with its own thread-local values in place.
            unsafe { sh.restore() };
        }
        return r;
    }
    arrive(key, nm, rank, rep, send.map_or(std::ptr::null_mut(), |b| b.ptr), buf)?;
    let r = work(&|| members(key, nm));
    release(key, nm, &r);
    r
}

/// Session 22: the two-level Barrier of call `c` when it has a meeting plan, else None (the
/// flat algorithm runs). `may_meet` is tested inline, so a V=1 call makes no out-of-line call
/// only to be refused (the wrappers below follow `abi::collsolo`'s `solo::on()` ones).
#[inline(always)]
pub fn barrier(c: &Coll) -> Option<MpiResult<()>> {
    if may_meet(c) {
        barrier_planned(c)
    } else {
        None
    }
}

fn barrier_planned(c: &Coll) -> Option<MpiResult<()>> {
    let (nm, key) = plan(c)?;
    // A real barrier is the whole process's: the last to arrive starts it.
    let rep = (!c.real).then(|| c.comm.rank == nm.local[0]);
    Some(step(key, &nm, c.comm.rank, rep, None, None, |members| {
        members()?;
        if c.real {
            real::barrier(c)
        } else if nm.reps.len() > 1 {
            c.view(nm.reps.clone()).barrier()
        } else {
            Ok(())
        }
    }))
}

/// The two-level Bcast when the call has a meeting plan (`barrier`).
///
/// # Safety
/// As `Coll::bcast`.
#[inline(always)]
pub unsafe fn bcast(c: &Coll, b: &Buf, root: i32) -> Option<MpiResult<()>> {
    if may_meet(c) {
        // SAFETY: the caller's contract.
        unsafe { bcast_planned(c, b, root) }
    } else {
        None
    }
}

/// # Safety
/// As `Coll::bcast`.
unsafe fn bcast_planned(c: &Coll, b: &Buf, root: i32) -> Option<MpiResult<()>> {
    let (nm, key) = plan(c)?;
    // Away from the root's process, a real broadcast lands in whichever member's buffer
    // starts it, and is copied to the others from there: the last to arrive starts it.
    let any = c.real && nm.owner[root as usize] as usize != nm.me;
    let rep = (!any).then(|| c.comm.rank == nm.my_rep(root));
    Some(step(key, &nm, c.comm.rank, rep, None, Some(b.clone()), |members| {
        // The data first reaches every process (the local members need not be here yet).
        if c.real {
            // SAFETY: as the caller's.
            unsafe { real::bcast(c, b, nm.proc_of(root), nm.owner[root as usize] as usize == nm.me)? };
        } else if nm.reps.len() > 1 {
            // SAFETY: as the caller's.
            unsafe { c.view(nm.reps_with(root)).bcast(b, nm.owner[root as usize] as i32)? };
        }
        // Every other registered buffer (the caller's own is `b`, or a copy of it when it lies
        // in the program's thread-locals and the caller was not the representative: that copy
        // is written back over `b` when the step ends, so it gets the data too).
        for m in members()? {
            let dst = m.buf.as_ref().expect("bcast members register a buffer");
            if dst.ptr != b.ptr {
                // SAFETY: every member's buffer stays valid while it is parked in this call.
                unsafe { local_copy(b, dst) };
            }
        }
        Ok(())
    }))
}

/// Work buffers kept for reuse (a fresh large allocation costs a page fault per page).
pub(super) const SPARES: usize = 4;
/// Larger buffers are not kept.
const SPARE_MAX: usize = 16 << 20;

/// A work buffer from the spares (empty if there is none).
pub(super) fn spare() -> Vec<u8> {
    state::with(|s| s.meets.spare.pop()).ok().flatten().unwrap_or_default()
}

/// Gives a work buffer back to the spares.
pub(super) fn recycle(v: Vec<u8>) {
    if v.capacity() <= SPARE_MAX {
        let _ = state::with(|s| {
            if s.meets.spare.len() < SPARES {
                s.meets.spare.push(v);
            }
        });
    }
}

/// The representative's local step of a reduction: the members' operands combined in rank
/// order into one work buffer (give it back with `recycle`).
unsafe fn combine(ms: &[Member], count: usize, dt: &DtRef, red: &Reducer) -> Vec<u8> {
    let mut acc = spare();
    red.load_into(ms[0].send, count, dt, &mut acc);
    if let (Reducer::Builtin { op, ty, work_dt }, true) = (red, dt.is_contiguous()) {
        if work_dt.is_contiguous() {
            // Operands laid out like the work buffer are folded into it as they are, in rank
            // order (acc = operand op acc, which predefined operations commute exactly), without
            // a copy each (coll4).
            let (nw, _) = red.work(count, dt);
            for m in &ms[1..] {
                crate::core::coll::op::apply(*op, *ty, m.send, acc.as_mut_ptr(), nw);
            }
            return acc;
        }
    }
    let mut x = spare();
    for m in &ms[1..] {
        red.load_into(m.send, count, dt, &mut x);
        red.apply(&acc, &mut x, count, dt);
        std::mem::swap(&mut acc, &mut x);
    }
    recycle(x);
    acc
}

fn reducible(nm: &NodeMap, red: &Reducer) -> bool {
    red.commutative() || nm.contiguous
}

/// The representative's whole reduction of an allreduce-shaped call: the local members'
/// operands combined, then the processes' partial results (one real allreduce when `c.real`,
/// else between the representatives). Give the buffer back with `recycle`.
///
/// # Safety
/// The members' operands stay valid while they are parked in this call.
unsafe fn reduce_all(c: &Coll, nm: &NodeMap, ms: &[Member], count: usize, dt: &DtRef, red: &Reducer) -> MpiResult<Vec<u8>> {
    // SAFETY: as the caller's.
    let acc = unsafe { combine(ms, count, dt, red) };
    if c.real {
        // SAFETY: the work buffer is ours.
        unsafe { real::allreduce(c, acc, count, dt, red) }
    } else if nm.reps.len() > 1 {
        // SAFETY: as above.
        unsafe { c.view(nm.reps.clone()).allreduce_work(acc, count, dt, red) }
    } else {
        Ok(acc)
    }
}

/// The two-level Allreduce when the call has a meeting plan (`barrier`).
///
/// # Safety
/// As `Coll::allreduce`.
#[inline(always)]
pub unsafe fn allreduce(c: &Coll, send: *const u8, recv: *mut u8, count: usize, dt: &DtRef, red: &Reducer) -> Option<MpiResult<()>> {
    if may_meet(c) {
        // SAFETY: the caller's contract.
        unsafe { allreduce_planned(c, send, recv, count, dt, red) }
    } else {
        None
    }
}

/// # Safety
/// As `Coll::allreduce`.
unsafe fn allreduce_planned(c: &Coll, send: *const u8, recv: *mut u8, count: usize, dt: &DtRef, red: &Reducer) -> Option<MpiResult<()>> {
    let (nm, key) = plan(c).filter(|(nm, _)| reducible(nm, red))?;
    // A real allreduce is the whole process's, its result written into every member's
    // buffer: the last to arrive starts it.
    let rep = (!c.real).then(|| c.comm.rank == nm.local[0]);
    let operand = in_place(send, recv);
    let buf = Some(Buf::new(recv, count, dt.clone()));
    let send = Some(Buf::new(operand as *mut u8, count, dt.clone()));
    Some(step(key, &nm, c.comm.rank, rep, send, buf, |members| {
        let ms = members()?;
        if c.real && ms.len() == 1 {
            // SAFETY: as the caller's.
            if let Some(r) = unsafe { real::allreduce_direct(c, operand, recv, count, dt, red) } {
                return r;
            }
        }
        // SAFETY: the members' buffers stay valid while they are parked in this call; every
        // operand is read before any result is written (MPI_IN_PLACE).
        unsafe {
            let acc = reduce_all(c, &nm, &ms, count, dt, red)?;
            for m in &ms {
                red.store(&acc, m.buf.as_ref().expect("allreduce members register a buffer").ptr, count, dt);
            }
            recycle(acc);
        }
        Ok(())
    }))
}

/// Reduce_scatter of a contiguous type (session 16): the whole vector reduced as `allreduce`
/// does (its inter-process step one real allreduce when `c.real`), each member given only its
/// own block. Before, every member received the whole vector and kept its block: at n=2 V=4,
/// IMB's 64 KiB blocks (a 512 KiB vector) copied 4 MiB out per call. None: not served here.
///
/// # Safety
/// As `Coll::reduce_scatter`.
pub unsafe fn reduce_scatter(
    c: &Coll,
    send: *const u8,
    recv: *mut u8,
    counts: &[usize],
    dt: &DtRef,
    red: &Reducer,
) -> Option<MpiResult<()>> {
    let (_, w) = red.work(1, dt);
    if !dt.is_contiguous() || !w.is_contiguous() || w.lb != 0 {
        return None;
    }
    // One member per process: the allreduce straight into a whole-vector buffer (the caller's
    // path) costs one copy less.
    let (nm, key) = plan(c).filter(|(nm, _)| reducible(nm, red) && nm.local.len() > 1)?;
    let rep = (!c.real).then(|| c.comm.rank == nm.local[0]);
    let count: usize = counts.iter().sum();
    let mine = *counts.get(c.comm.rank as usize)?;
    // In place, the operand is the whole vector in `recv`, and the block goes to its start.
    let operand = in_place(send, recv);
    let buf = Some(Buf::new(recv, mine, dt.clone()));
    let send = Some(Buf::new(operand as *mut u8, count, dt.clone()));
    Some(step(key, &nm, c.comm.rank, rep, send, buf, |members| {
        let ms = members()?;
        // SAFETY: the members' buffers stay valid while they are parked in this call; every
        // operand is read before any result is written (MPI_IN_PLACE).
        unsafe {
            let acc = reduce_all(c, &nm, &ms, count, dt, red)?;
            // A contiguous work buffer holds the packed elements: block r starts at the bytes
            // of the blocks before it. The members come in rank order, so one running sum
            // over the counts serves them all (session 17: it was a sum per member, O(members
            // x ranks) per call).
            let (mut off, mut upto) = (0usize, 0usize);
            for m in &ms {
                let r = m.rank as usize;
                off += counts[upto..r].iter().sum::<usize>();
                upto = r;
                let dst = m.buf.as_ref().expect("reduce_scatter members register a buffer").ptr;
                red.store(&acc[off * dt.size..], dst, counts[r], dt);
            }
            recycle(acc);
        }
        Ok(())
    }))
}

/// The two-level Reduce when the call has a meeting plan (`barrier`).
///
/// # Safety
/// As `Coll::reduce`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn reduce(
    c: &Coll,
    send: *const u8,
    recv: *mut u8,
    count: usize,
    dt: &DtRef,
    red: &Reducer,
    root: i32,
) -> Option<MpiResult<()>> {
    if may_meet(c) {
        // SAFETY: the caller's contract.
        unsafe { reduce_planned(c, send, recv, count, dt, red, root) }
    } else {
        None
    }
}

/// # Safety
/// As `Coll::reduce`.
#[allow(clippy::too_many_arguments)]
unsafe fn reduce_planned(
    c: &Coll,
    send: *const u8,
    recv: *mut u8,
    count: usize,
    dt: &DtRef,
    red: &Reducer,
    root: i32,
) -> Option<MpiResult<()>> {
    let (nm, key) = plan(c).filter(|(nm, _)| reducible(nm, red))?;
    let operand = if c.comm.rank == root { in_place(send, recv) } else { send };
    if nm.local.len() == 1 {
        // The caller is its process's only member: its operand goes on as it is.
        // SAFETY: as the caller's.
        return Some(unsafe { reduce_on(c, &nm, operand, None, recv, count, dt, red, root) });
    }
    // Session 17: the local operands are folded in rank order as the members arrive
    // (`coll::fold`); a member other than the carrier (the root, or its process's
    // representative) leaves once its operand was read, as AMPI's non-roots do. Only the
    // carrier waits for the fold and for the inter-process step. Away from the root's process,
    // when that step is a real reduction (whose sender may be any member), nobody waits: the
    // member that folds the last operand sends the result on without waiting
    // (`real::reduce_away`).
    let away = c.real && !c.solo && nm.owner[root as usize] as usize != nm.me;
    let call = super::fold::Call {
        key,
        n: nm.local.len(),
        count,
        dt,
        red,
        last_takes: away,
    };
    let i = nm.local.binary_search(&c.comm.rank).ok()?;
    // SAFETY: the caller's own operand, read while it runs.
    let last = match unsafe { call.contribute(i, operand) } {
        Ok(l) => l,
        Err(e) => return Some(Err(e)),
    };
    if away {
        // SAFETY: our own work buffer.
        return Some(last.map_or(Ok(()), |acc| unsafe { real::reduce_away(c, acc, count, dt, red, nm.proc_of(root)) }));
    }
    if c.comm.rank != nm.my_rep(root) {
        return Some(Ok(()));
    }
    let acc = match call.result() {
        Ok(a) => a,
        Err(e) => return Some(Err(e)),
    };
    // SAFETY: as the caller's.
    Some(unsafe { reduce_on(c, &nm, std::ptr::null(), Some(acc), recv, count, dt, red, root) })
}

/// The carrier's part of a reduction: the process's partial result (`acc`, or the caller's
/// own operand when it is its process's only member) reduced among the processes, the result
/// stored at the root.
///
/// # Safety
/// As `Coll::reduce`; `operand` holds the caller's operand when `acc` is None.
#[allow(clippy::too_many_arguments)]
unsafe fn reduce_on(
    c: &Coll,
    nm: &NodeMap,
    operand: *const u8,
    acc: Option<Vec<u8>>,
    recv: *mut u8,
    count: usize,
    dt: &DtRef,
    red: &Reducer,
    root: i32,
) -> MpiResult<()> {
    let at_root = c.comm.rank == root;
    let acc = match acc {
        Some(a) => a,
        None => {
            if c.real {
                // SAFETY: as the caller's.
                if let Some(r) = unsafe { real::reduce_direct(c, operand, recv, count, dt, red, nm.proc_of(root), at_root) } {
                    return r;
                }
            }
            let mut a = spare();
            // SAFETY: as the caller's.
            unsafe { red.load_into(operand, count, dt, &mut a) };
            a
        }
    };
    // SAFETY: our own work buffer; only the root's receive buffer is written.
    unsafe {
        let mut acc = Some(acc);
        if c.real && nm.owner[root as usize] as usize != nm.me {
            // Session 17: away from the root's process the carrier does not wait for the real
            // reduction either (its operand is our work buffer).
            let acc0 = acc.take().expect("combined");
            return real::reduce_away(c, acc0, count, dt, red, nm.proc_of(root));
        } else if c.real {
            let acc0 = acc.take().expect("combined");
            // Only the root's process receives the result (its carrier is the root): straight
            // into the root's buffer when it can take the work buffer's bytes.
            acc = match real::reduce_into(c, acc0, recv, count, dt, red, nm.proc_of(root))? {
                Some(a) => Some(real::reduce(c, a, count, dt, red, nm.proc_of(root))?),
                None => None,
            };
        } else if nm.reps.len() > 1 {
            let acc0 = acc.take().expect("combined");
            acc = c
                .view(nm.reps_with(root))
                .reduce_work(acc0, count, dt, red, nm.owner[root as usize] as i32)?;
        }
        if let Some(a) = acc {
            if at_root {
                red.store(&a, recv, count, dt);
            }
            recycle(a);
        }
    }
    Ok(())
}
