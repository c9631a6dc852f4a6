//! Nonblocking collectives between processes without a helper task, where every process
//! holds one member of the communicator (V=1) and it has a twin (`real`).
//!
//! The call is then one step: the real MPI's nonblocking collective on the twin, straight
//! between the user's buffers. `MPI_I*` enrols it (its place in the twin's issue order) and
//! submits it at once; the real MPI advances it whenever anyone polls the progress engine (the
//! background thread while the caller computes, a waiting subrank, `MPI_Test`), and whoever
//! sees it finish completes the request (`real::on_done`). No coroutine is spawned or
//! switched to: `MPI_I*` costs the real call and the bookkeeping of the place, and the wait
//! costs what the real request still needs.
//!
//! Served: Barrier, Bcast, Reduce, Allreduce (a predefined operation on a C basic type),
//! Gather, Scatter, Allgather, Alltoall (equal blocks, not the v/w forms), when the buffers can
//! go to the real MPI as they are (contiguous, blocks back to back in process order, outside
//! the program's swapped thread-locals). Whether the call is eligible (`eligible`) depends only
//! on what every rank passes alike, so every process enrols the same places; whether its
//! buffers go as they are is each process's own business: a call that cannot (`start`
//! returns None) keeps its place and runs in a helper task as before (`abi::coll::launch`),
//! which submits the same real operation through a packed buffer.

use crate::core::coll::op::OpKind;
use crate::core::coll::real::{self, as_is, one_buffer, procs, real_reduction};
use crate::core::coll::team::{Blocks, Part};
use crate::core::coll::{in_place, Buf, Coll};
use crate::core::comm::CommRef;
use crate::core::datatype::basic::BasicType;
use crate::core::error::MpiResult;
use crate::core::idmap::IdMap;
use crate::core::p2p::blocking::{block_on_with, finish, is_done};
use crate::core::request::ReqId;
use crate::core::request::Status;
use crate::core::state::{self, State};
use crate::sched;
use crate::transport::collp2p::tree_children;
use crate::transport::real::RComm;
use crate::transport::{CollMem, RealColl};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Whether a nonblocking call of `bytes` bytes per rank goes to the real MPI without a helper
/// (`TOUCAN_REAL_NBC_MIN`, default 0: always).
pub fn worth(bytes: usize) -> bool {
    bytes >= crate::core::runtime::config().real_nbc_min
}

/// Whether a nonblocking call on `cm` with arguments `part` is enrolled for this path: one
/// member per process, and a kind the real MPI serves with what every rank passes alike.
/// (Gather/Scatter: equal blocks, which the caller knows from the binding, `equal`.)
pub fn eligible(cm: &CommRef, part: &Part, equal: bool) -> bool {
    kind_eligible(part, equal) && real::one_per_process(cm)
}

/// `eligible` without the layout of the communicator: a kind the real MPI serves with what
/// every rank passes alike.
fn kind_eligible(part: &Part, equal: bool) -> bool {
    match part {
        Part::Barrier => true,
        Part::Bcast { buf, .. } => worth(buf.count * buf.dt.size),
        Part::Reduce { count, dt, red, .. } => real::reducible(red) && worth(count * dt.size),
        // In place the root's own block has the size every rank's has.
        Part::Gather { send: b, parts, .. } | Part::Scatter { recv: b, parts, .. } => {
            let bytes = match (b, parts) {
                (Some(b), _) => b.count * b.dt.size,
                (None, Blocks::Equal { count, dt, .. }) => count * dt.size,
                (None, Blocks::List(_)) => return false,
            };
            equal && worth(bytes)
        }
        Part::Allgather { parts, .. } | Part::Alltoall { recvs: parts, .. } => match parts {
            Blocks::Equal { count, dt, .. } => equal && worth(count * dt.size),
            Blocks::List(_) => false,
        },
        _ => false,
    }
}

/// Bytes per block of `parts` when they lie back to back as one buffer in process order
/// (`ordered`), each `bytes` long.
fn whole(parts: &Blocks, ordered: bool) -> Option<(*mut u8, usize)> {
    let Blocks::Equal { ptr, count, dt, .. } = parts else {
        return None;
    };
    let bytes = count * dt.size;
    let v = parts.to_vec();
    (ordered && one_buffer(&v, bytes)).then_some((*ptr, bytes))
}

/// Whether `b` goes to the real MPI as it is: contiguous, outside the swapped thread-locals.
fn plain(b: &Buf) -> bool {
    one_buffer(std::slice::from_ref(b), b.count * b.dt.size)
}

/// Starts call `c` (enrolled: `c.real`) for request `id` as one real nonblocking collective;
/// None when its buffers cannot go as they are (the caller runs it in a helper task).
///
/// # Safety
/// MPI requires the buffers of `part` to stay valid until the request completes.
pub unsafe fn start(c: &Coll, part: &Part, id: ReqId) -> Option<MpiResult<()>> {
    let (what, mem) = match shape(c, part)? {
        Ok(x) => x,
        Err(e) => return Some(Err(e)),
    };
    // SAFETY: the user's buffers stay valid until the request completes (the caller's
    // contract); `CollMem::owned` memory travels with the operation.
    Some(unsafe { real::submit(c, what, mem, id) })
}

/// The real operation of call `c` with arguments `part` straight between the user's buffers
/// (the memory it names holds no buffer of ours: `keep` is empty); None when its buffers
/// cannot go as they are. Also the plan of a persistent call at V=1 (`coll::persist`).
pub fn shape(c: &Coll, part: &Part) -> Option<MpiResult<(RealColl, CollMem)>> {
    let procs = match procs(c) {
        Ok(p) => p,
        Err(e) => return Some(Err(e)),
    };
    shape_at(c.comm.rank as usize, &procs, part).map(Ok)
}

/// coll5: a nonblocking call at one member per process in one pass under the state lock,
/// when its communicator's twin is idle (nothing waits for a turn) and its buffers go as they
/// are: the call's number, its request (returned, awaiting one event) and the real operation
/// started at once (`real::start_idle`). None (nothing done) sends the call down the general
/// path, which decides the same (eligibility depends only on what every rank passes alike).
///
/// # Safety
/// MPI requires the buffers of `part` to stay valid until the request completes.
pub unsafe fn fast(sub: usize, comm_h: usize, part: &Part, equal: bool) -> Option<ReqId> {
    if !kind_eligible(part, equal) {
        return None;
    }
    // SAFETY: forwarded from the caller.
    let id = unsafe { real::start_idle(sub, comm_h, |me, procs| shape_at(me, procs, part)) }?;
    crate::core::background::wanted();
    Some(id)
}

/// `shape` for the rank `me` of a communicator whose rank i lives in process `procs[i]`.
fn shape_at(me: usize, procs: &[usize], part: &Part) -> Option<(RealColl, CollMem)> {
    let ordered = procs.iter().enumerate().all(|(i, &p)| p == i);
    let (what, mem) = match part {
        Part::Barrier => (RealColl::Barrier, CollMem::owned(Vec::new())),
        Part::Bcast { buf, root } => {
            if !plain(buf) {
                return None;
            }
            let root = procs[*root as usize];
            let bytes = buf.count * buf.dt.size;
            // coll6: small, as a tree of real messages (the same choice on every process).
            let what = if tree_bcast(bytes) {
                RealColl::TreeBcast { root, tag: 0 }
            } else {
                RealColl::Bcast { root }
            };
            (what, CollMem::at(buf.ptr, buf.ptr, bytes))
        }
        Part::Reduce {
            send,
            recv,
            count,
            dt,
            red,
            root,
        } => {
            let (op, ty) = real_reduction(red)?;
            let (n, _) = red.work(*count, dt);
            let at_root = root.is_none_or(|r| r as usize == me);
            let operand = if at_root { in_place(*send, *recv) } else { *send };
            if !as_is(operand, *count, dt, red) || (at_root && !as_is(*recv, *count, dt, red)) {
                return None;
            }
            match root {
                Some(r) => {
                    let mem = CollMem::at(operand, if at_root { *recv } else { std::ptr::null_mut() }, 0);
                    (
                        RealColl::Reduce {
                            root: procs[*r as usize],
                            op,
                            ty,
                            count: n,
                        },
                        mem,
                    )
                }
                None => (RealColl::Allreduce { op, ty, count: n }, CollMem::at(operand, *recv, 0)),
            }
        }
        Part::Gather { send, parts, root } => {
            let at_root = *root as usize == me;
            if at_root {
                let (ptr, bytes) = whole(parts, ordered)?;
                if send.as_ref().is_some_and(|b| !plain(b)) {
                    return None;
                }
                // In place: the root's block is already where the real MPI wants it.
                let from = send.as_ref().map_or(std::ptr::null(), |b| b.ptr as *const u8);
                let mem = CollMem {
                    send: from,
                    recv: ptr,
                    bytes: 0,
                    keep: Vec::new(),
                };
                (
                    RealColl::Gather {
                        root: procs[*root as usize],
                        bytes,
                    },
                    mem,
                )
            } else {
                let b = send.as_ref()?;
                if !plain(b) {
                    return None;
                }
                let mem = CollMem {
                    send: b.ptr,
                    recv: std::ptr::null_mut(),
                    bytes: 0,
                    keep: Vec::new(),
                };
                let bytes = b.count * b.dt.size;
                (
                    RealColl::Gather {
                        root: procs[*root as usize],
                        bytes,
                    },
                    mem,
                )
            }
        }
        Part::Scatter { parts, recv, root } => {
            let at_root = *root as usize == me;
            if at_root {
                let (ptr, bytes) = whole(parts, ordered)?;
                if recv.as_ref().is_some_and(|b| !plain(b)) {
                    return None;
                }
                let mem = CollMem {
                    send: ptr,
                    recv: recv.as_ref().map_or(std::ptr::null_mut(), |b| b.ptr),
                    bytes: 0,
                    keep: Vec::new(),
                };
                (
                    RealColl::Scatter {
                        root: procs[*root as usize],
                        bytes,
                    },
                    mem,
                )
            } else {
                let b = recv.as_ref()?;
                if !plain(b) {
                    return None;
                }
                let mem = CollMem {
                    send: std::ptr::null(),
                    recv: b.ptr,
                    bytes: 0,
                    keep: Vec::new(),
                };
                let bytes = b.count * b.dt.size;
                (
                    RealColl::Scatter {
                        root: procs[*root as usize],
                        bytes,
                    },
                    mem,
                )
            }
        }
        Part::Allgather { send, parts } => {
            let (ptr, bytes) = whole(parts, ordered)?;
            if send.as_ref().is_some_and(|b| !plain(b) || b.count * b.dt.size != bytes) {
                return None;
            }
            // In place (`from` = `recv`: MPI_IN_PLACE): the own block is already in place.
            let from = send.as_ref().map_or(ptr as *const u8, |b| b.ptr as *const u8);
            (RealColl::Allgather { bytes }, CollMem::at(from, ptr, parts.len() * bytes))
        }
        Part::Alltoall { sends, recvs } => {
            let (rp, bytes) = whole(recvs, ordered)?;
            let (sp, sbytes) = whole(sends.as_ref()?, ordered)?;
            if sbytes != bytes {
                return None;
            }
            (RealColl::Alltoall { bytes }, CollMem::at(sp, rp, recvs.len() * bytes))
        }
        _ => return None,
    };
    Some((what, mem))
}

// coll6 (issue 16, session 15): small broadcasts as real point-to-point messages, and the
// wait of a request whose only outstanding work is one real operation.

/// Whether a broadcast of `bytes` bytes (a nonblocking call, or a round of a persistent one,
/// at one member per process) goes as a tree of real point-to-point messages on the twin
/// (`transport::collp2p`) rather than the real MPI's `MPI_Ibcast`: from 1 byte up to
/// `TOUCAN_NBC_TREE_MAX` (`runtime`: default `SMALL_MAX`, at most `collp2p::P2P_MAX`; 0: never).
/// Session 22: with the pass-through too (`p2p::direct`): the program's messages go on a real
/// communicator of their own (`real::Twin::p2p`), never on the twin. Depends only on what
/// every process has alike (the size, the environment).
pub(super) fn tree_bcast(bytes: usize) -> bool {
    bytes > 0 && bytes <= crate::core::runtime::config().nbc_tree_max
}

/// A tree broadcast's forward: what this process sends on to its children when its receive
/// completes.
struct Forward {
    key: real::CommKey,
    comm: RComm,
    root: usize,
    tag: i32,
    ptr: usize,
    len: usize,
    /// Session 27: a tree scatter's bytes per process (its children get their subtrees'
    /// blocks); 0 for a broadcast (they get all `len`).
    blk: usize,
}

/// coll6's per-process state (in `real::RealComms`): forwards of tree broadcasts by token,
/// and the one real operation of each nonblocking collective request (for its wait).
#[derive(Default)]
pub struct Tracked {
    forwards: IdMap<u64, Forward>,
    tokens: IdMap<ReqId, u64>,
    rd: IdMap<u64, Rd>,
    /// red30: tree reductions (`treereduce`).
    pub(super) red: IdMap<u64, crate::core::coll::treereduce::TreeRed>,
    /// red30: flat gathers' memory until their messages are done (`flatgather::start`).
    pub(super) flat: IdMap<u64, crate::core::coll::flatgather::Flat>,
    /// Real requests still to finish before an operation's next step, where more than one.
    parts: IdMap<u64, u32>,
}

/// Requests with one real operation noted (`track`): while there are none, `wait` costs
/// MPI_Wait one load.
static TRACKED: AtomicUsize = AtomicUsize::new(0);

/// Whether any request has a real operation noted (one load): while none, `wait` and `test`
/// have nothing to do.
#[inline(always)]
pub fn tracked() -> bool {
    TRACKED.load(Ordering::Relaxed) != 0
}

/// Notes that request `id`'s only outstanding work is real operation `token`.
pub(super) fn track(s: &mut State, id: ReqId, token: u64) {
    if s.rcoll.tree.tokens.insert(id, token).is_none() {
        TRACKED.fetch_add(1, Ordering::Relaxed);
    }
}

/// Request `id`'s real operation finished.
pub(super) fn untrack(s: &mut State, id: ReqId) {
    if s.rcoll.tree.tokens.remove(&id).is_some() {
        TRACKED.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The tag of the real messages of the operation at `place`: its call number (or round), so
/// that messages of different calls never match (a process may send call k+1's data before
/// forwarding call k's).
pub(super) fn tree_tag(s: &State, place: real::Place) -> i32 {
    let span = (s.tp.tag_ub as u64).min(1 << 30) + 1;
    (place.0 % span) as i32
}

/// Starts this process's part of tree broadcast `token` at `place` of twin `comm` (see
/// `Transport::start_tree_bcast`), or (session 27, `blk` > 0) of a tree scatter of `blk`
/// bytes per process (`Transport::start_tree_scatter`); a process with children forwards
/// when its receive completes (`forward`: the whole buffer, or their subtrees' blocks).
/// True: done at once (the root).
///
/// # Safety
/// A broadcast's `mem.recv` holds `mem.bytes` bytes until the operation completes; a
/// scatter's holds every process's block at the root, and has room for this process's
/// subtree's blocks elsewhere, until then.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn start_tree(
    s: &mut State,
    key: real::CommKey,
    comm: RComm,
    root: usize,
    blk: usize,
    place: real::Place,
    mem: CollMem,
    token: u64,
) -> Result<bool, String> {
    let tag = tree_tag(s, place);
    let (ptr, len) = (mem.recv, mem.bytes);
    // SAFETY: forwarded from the caller.
    let sent = unsafe {
        if blk > 0 {
            s.tp.start_tree_scatter(comm, root, tag, ptr, blk, token)
        } else {
            s.tp.start_tree_bcast(comm, root, tag, ptr, len, token)
        }
    }?;
    if let Some(under_way) = sent {
        // The root: done at once, or when its sends are.
        expect(s, token, under_way);
        return Ok(under_way == 0);
    }
    if tree_children(s.tp.myproc, root, s.tp.nproc).next().is_some() {
        let f = Forward {
            key,
            comm,
            root,
            tag,
            ptr: ptr as usize,
            len,
            blk,
        };
        s.rcoll.tree.forwards.insert(token, f);
    }
    Ok(false)
}

/// Operation `token` waits for `n` real requests before its next step (or its end): more
/// than one are counted (`Tracked::parts`).
pub(super) fn expect(s: &mut State, token: u64, n: u32) {
    if n > 1 {
        s.rcoll.tree.parts.insert(token, n);
    }
}

/// A real request of operation `token` finished (from `real::on_done`): None while the
/// operation is still under way (another of its requests is, a recursive doubling's next
/// step started, a tree broadcast's forwards are being sent); Some(its buffer) when it is
/// done. Another operation's `buf` passes through.
pub(super) fn on_step(s: &mut State, token: u64, buf: Vec<u8>) -> Option<Vec<u8>> {
    let t = &mut s.rcoll.tree;
    if t.parts.is_empty() && t.rd.is_empty() && t.forwards.is_empty() && t.red.is_empty() && t.flat.is_empty() {
        return Some(buf);
    }
    if let Some(n) = t.parts.get_mut(&token) {
        if *n > 1 {
            *n -= 1;
            return None;
        }
        t.parts.remove(&token);
    }
    let buf = rd_step(s, token, buf)?;
    let buf = crate::core::coll::treereduce::step(s, token, buf)?;
    let buf = crate::core::coll::flatgather::done(s, token, buf);
    forward(s, token).then_some(buf)
}

/// A tree broadcast's data goes on to this process's children; false while those sends are
/// under way (the operation completes with them).
fn forward(s: &mut State, token: u64) -> bool {
    let Some(f) = s.rcoll.tree.forwards.remove(&token) else {
        return true;
    };
    // SAFETY: the request's buffer holds the received bytes until the request completes,
    // which happens after these sends.
    let sent = if f.blk > 0 {
        // SAFETY: as above; the buffer holds this process's subtree's blocks.
        unsafe { s.tp.scatter_forward(f.comm, f.root, f.tag, f.ptr as *const u8, f.blk, token) }
    } else {
        unsafe { s.tp.tree_forward(f.comm, f.root, f.tag, f.ptr as *const u8, f.len, token) }
    };
    let under_way = match sent {
        Ok(n) => n,
        Err(e) => crate::core::diag::fatal(&format!("real collective: {e}")),
    };
    expect(s, token, under_way);
    real::release_if_unused(s, f.key);
    under_way == 0
}

/// Whether a forward or a recursive doubling's later step will still send on the twin
/// `key` (its real communicator must live until then, even if the program freed its
/// communicator: `real::release_if_unused`).
pub(super) fn busy(s: &State, key: real::CommKey) -> bool {
    let t = &s.rcoll.tree;
    t.forwards.values().any(|f| f.key == key)
        || t.rd.values().any(|r| r.key == key)
        || crate::core::coll::treereduce::busy(s, key)
        || t.flat.values().any(|f| f.key == key)
}

/// One poll of real operation `token` alone; true when it finished (its completion handled).
fn coll_test(s: &mut State, token: u64) -> bool {
    match s.tp.coll_test(token) {
        Ok(Some(e)) => {
            s.dispatch(e);
            true
        }
        // Session 29: its message comes through the node queue (`transport::collq`): a
        // progress step takes it (and whatever else is there).
        Ok(None) if s.tp.coll_queued(token) => s.progress(),
        Ok(None) => false,
        Err(e) => crate::core::diag::fatal(&format!("real collective: {e}")),
    }
}

/// Polls of a collective request's wait between two full progress steps.
const FULL_POLL: u32 = crate::core::p2p::blocking::DIRECT_FULL_POLL;

/// MPI_Wait of request `h` when it is a nonblocking collective of this subrank whose only
/// outstanding work is one real operation (`track`): polls that operation alone (one
/// `MPI_Test`, as the real `MPI_Wait` makes), and the whole progress engine every
/// `FULL_POLL` polls (the ring, other requests), then parks as any wait. Returns the status,
/// the request's communicator (for the error handler) and whether it is persistent (its
/// handle stays); None: not such a request (nothing done).
pub fn wait(h: usize) -> Option<MpiResult<(Status, usize, bool)>> {
    if TRACKED.load(Ordering::Relaxed) == 0 {
        return None;
    }
    let id = h as ReqId;
    let me = sched::current();
    let sub = sched::rank();
    // nbc11: the look at the request, its first poll and, when that finds it done, its
    // completion under one lock (`test`'s round): a wait whose data is here costs one lock
    // round instead of three (the look, then the general wait's check and poll rounds).
    let first = state::with(|s| test_round(s, id, sub, false)).ok()??;
    if let Some(done) = first {
        return Some(Ok(done));
    }
    let mut n = 1u32;
    Some(block_on_with(
        |s| {
            if is_done(s, id) {
                return Some(completed(s, id));
            }
            if let Some(r) = s.req_mut(id) {
                r.waiter = me;
            }
            None
        },
        |s| {
            n = n.wrapping_add(1);
            if !n.is_multiple_of(FULL_POLL) {
                if let Some(&token) = s.rcoll.tree.tokens.get(&id) {
                    return (coll_test(s, token), None);
                }
            }
            (s.progress(), None)
        },
    ))
}

// coll6: small Allreduce, Allgather and Barrier by recursive doubling (and Alltoall by
// pairwise exchanges) over real point-to-point messages, at a power-of-two number of
// processes.

/// What a recursive-doubling operation combines.
enum RdKind {
    /// `count` elements of `ty` reduced with `op`, lower process's operand first.
    Allreduce { op: OpKind, ty: BasicType, count: usize },
    /// Blocks of `bytes` bytes, block p from process p.
    Allgather { bytes: usize },
    /// Blocks of `bytes` bytes, block q of process p's send buffer into block p of process
    /// q's receive buffer: pairwise exchanges with `me ^ k`, k = 1 .. n-1.
    Alltoall { bytes: usize },
    /// No data: recursive doubling of empty messages.
    Barrier,
}

impl RdKind {
    /// The distance after `mask`: doubling, or the next pairwise partner for Alltoall.
    fn next(&self, mask: usize) -> usize {
        match self {
            RdKind::Alltoall { .. } => mask + 1,
            _ => mask << 1,
        }
    }
}

/// A recursive-doubling operation under way (`Tracked::rd`, by token).
struct Rd {
    key: real::CommKey,
    comm: RComm,
    tag: i32,
    /// The distance to this step's partner (a power of two below the process count).
    mask: usize,
    kind: RdKind,
    /// The result buffer is `mem.recv` (the user's, or `mem.keep` when it is ours).
    mem: CollMem,
    /// The partner's partial result of an Allreduce step.
    temp: Vec<u8>,
}

/// Operations and types whose local reduction is bitwise the same on every process when
/// combined in the same order (no pair types: they stay with the real MPI).
const RD_OPS: [OpKind; 10] = [
    OpKind::Sum,
    OpKind::Prod,
    OpKind::Max,
    OpKind::Min,
    OpKind::Land,
    OpKind::Lor,
    OpKind::Lxor,
    OpKind::Band,
    OpKind::Bor,
    OpKind::Bxor,
];
const RD_TYPES: [BasicType; 20] = [
    BasicType::SignedChar,
    BasicType::UnsignedChar,
    BasicType::Byte,
    BasicType::Short,
    BasicType::UnsignedShort,
    BasicType::Int,
    BasicType::Unsigned,
    BasicType::Long,
    BasicType::UnsignedLong,
    BasicType::LongLong,
    BasicType::UnsignedLongLong,
    BasicType::Float,
    BasicType::Double,
    BasicType::CBool,
    BasicType::Int8,
    BasicType::Int16,
    BasicType::Int32,
    BasicType::Int64,
    BasicType::Uint32,
    BasicType::Uint64,
];

/// Largest message of a collective made of real point-to-point messages here (a broadcast,
/// a recursive doubling's step, an Alltoall block): up to `collp2p::TREE_MAX` (256 B) they
/// are blocking eager sends, above it nonblocking ones whose completions the operation
/// awaits. Chosen from IMB-NBC at 8 B and 1 KiB (docs/collectives.md, "Session 15").
pub(crate) const SMALL_MAX: usize = 2048;

/// Most processes for a pairwise-exchange Alltoall (n - 1 dependent exchanges).
const RD_ALLTOALL_MAX: usize = 4;

/// nbc9: largest block of a pairwise-exchange Alltoall (one real message each way per step).
/// Above `SMALL_MAX` since a two-level Ialltoall at V>1 exchanges members^2 blocks per process
/// pair in one block (16 KiB at 2x4 with 1 KiB blocks): an IMB-like loop at 2x4 (loaded,
/// chrt), slowest rank, 1 KiB blocks, this / MPICH's `MPI_Ialltoall`: 18.3-19.5 / 21.2-22.3
/// µs; 4 KiB blocks (64 KiB per pair, above this bound) 50.8-54.7 / 53.8-68.7.
const RD_ALLTOALL_BYTES: usize = 16 * 1024;

/// iag16: most bytes of a recursive-doubling Allgather's last step (half the result). Above
/// `SMALL_MAX` since a two-level Iallgather at V>1 exchanges a process's members' blocks in
/// one chunk (4 KiB at 2x4 with IMB's 1 KiB blocks), which went to MPICH's `MPI_Iallgather`
/// schedule: see docs/collectives.md "Session 23 (iag16)" for the measurement.
const RD_ALLGATHER_BYTES: usize = 16 * 1024;

/// Whether `TOUCAN_NBC_RD` (default on; `0`/`off`: never) lets small Allreduce, Allgather,
/// Alltoall and Barrier run by recursive doubling, and (red30) a small Reduce as a tree
/// (`treereduce`) (the same on every process: the environment).
pub(super) fn rd_enabled() -> bool {
    crate::core::runtime::config().nbc_rd
}

/// The operation and type of a small reduction of `count` elements of real type `ty` with
/// real operation `op` that runs as real point-to-point messages (a recursive-doubling
/// Allreduce, red30's tree Reduce: `treereduce`): a predefined operation of `RD_OPS` on a type
/// of `RD_TYPES` that the standard allows, 1 to `SMALL_MAX` bytes.
pub(super) fn small_reduction(op: i64, ty: i64, count: usize) -> Option<(OpKind, BasicType)> {
    let op = RD_OPS.into_iter().find(|&o| real::real_op(o) == Some(op))?;
    let ty = RD_TYPES.into_iter().find(|&t| real::real_type(t) == Some(ty))?;
    let bytes = count.checked_mul(ty.size())?;
    (bytes > 0 && bytes <= SMALL_MAX && crate::core::coll::op::valid_strict(op, ty)).then_some((op, ty))
}

/// The recursive-doubling form of real operation `what`, when it has one: a small
/// Allreduce (at most `SMALL_MAX` bytes, a predefined operation on a type of `RD_TYPES`),
/// Allgather (at most `RD_ALLGATHER_BYTES` bytes per step), Alltoall (blocks of at most
/// `RD_ALLTOALL_BYTES` bytes, at most `RD_ALLTOALL_MAX` processes) or Barrier, among a power-of-two number of
/// processes (session 22: with the pass-through too, as `tree_bcast`). Decided from `what` and the process count only,
/// which every process has alike for the operation at one place.
fn rd_kind(s: &State, what: &RealColl) -> Option<RdKind> {
    let n = s.tp.nproc;
    if n < 2 || !n.is_power_of_two() || !rd_enabled() {
        return None;
    }
    match *what {
        RealColl::Allreduce { op, ty, count } => {
            let (op, ty) = small_reduction(op, ty, count)?;
            Some(RdKind::Allreduce { op, ty, count })
        }
        RealColl::Allgather { bytes } => {
            (bytes > 0 && bytes.checked_mul(n / 2)? <= RD_ALLGATHER_BYTES).then_some(RdKind::Allgather { bytes })
        }
        // n - 1 exchanges in turn: only while that stays below the real MPI's log-depth
        // algorithms' cost.
        RealColl::Alltoall { bytes } => {
            (bytes > 0 && bytes <= RD_ALLTOALL_BYTES && n <= RD_ALLTOALL_MAX).then_some(RdKind::Alltoall { bytes })
        }
        RealColl::Barrier => Some(RdKind::Barrier),
        _ => None,
    }
}

/// Starts real operation `token` (`what` over `mem`, at `place` of twin `comm`) by recursive
/// doubling when it has that form (`rd_kind`); gives `mem` back otherwise (nothing done).
///
/// # Safety
/// As `Transport::start_coll`.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn start_rd(
    s: &mut State,
    key: real::CommKey,
    comm: RComm,
    what: &RealColl,
    mem: CollMem,
    token: u64,
    place: real::Place,
) -> Result<Result<(), String>, CollMem> {
    let Some(kind) = rd_kind(s, what) else { return Err(mem) };
    let me = s.tp.myproc;
    // The own operand or block into the result buffer first (not in place).
    let (from, to, len) = match kind {
        RdKind::Allreduce { ty, count, .. } => (0, 0, count * ty.size()),
        RdKind::Allgather { bytes } => (0, me * bytes, bytes),
        // In place the own block is where it belongs already.
        RdKind::Alltoall { bytes } => (me * bytes, me * bytes, bytes),
        RdKind::Barrier => (0, 0, 0),
    };
    if !mem.send.is_null() && len > 0 {
        // SAFETY: the operand holds the own block and the result buffer has room for the
        // whole result (the caller's contract); they do not overlap (not in place).
        unsafe { std::ptr::copy_nonoverlapping(mem.send.add(from), mem.recv.add(to), len) };
    }
    let temp = match kind {
        RdKind::Allreduce { .. } => vec![0u8; len],
        // In place: the blocks to send, copied before any arrives over them.
        // SAFETY: the result buffer holds nproc blocks (the caller's contract).
        RdKind::Alltoall { bytes } if mem.send.is_null() => unsafe { std::slice::from_raw_parts(mem.recv, s.tp.nproc * bytes) }.to_vec(),
        _ => Vec::new(),
    };
    let rd = Rd {
        key,
        comm,
        tag: tree_tag(s, place),
        mask: 1,
        kind,
        mem,
        temp,
    };
    // SAFETY: forwarded from the caller; the buffers live in `rd` until the end.
    let r = unsafe { rd_exchange(s, &rd, token) };
    s.rcoll.tree.rd.insert(token, rd);
    Ok(r)
}

/// Starts `rd`'s exchange at its current distance.
///
/// # Safety
/// `rd.mem.recv` (and `rd.temp`) stay valid until the step completes.
unsafe fn rd_exchange(s: &mut State, rd: &Rd, token: u64) -> Result<(), String> {
    let me = s.tp.myproc;
    let partner = me ^ rd.mask;
    let send_under_way = match rd.kind {
        RdKind::Allreduce { ty, count, .. } => {
            let len = count * ty.size();
            let temp = rd.temp.as_ptr() as *mut u8;
            // SAFETY: forwarded from the caller; `temp` is a heap block that does not move.
            unsafe { s.tp.start_exchange(rd.comm, partner, rd.tag, rd.mem.recv, len, temp, len, token) }
        }
        RdKind::Allgather { bytes } => {
            // This process holds the blocks of its group of `mask` processes; the partner's
            // group's go beside them.
            let mine = (me & !(rd.mask - 1)) * bytes;
            let theirs = (partner & !(rd.mask - 1)) * bytes;
            let len = rd.mask * bytes;
            // SAFETY: both ranges lie inside the result buffer of nproc blocks.
            unsafe {
                s.tp.start_exchange(
                    rd.comm,
                    partner,
                    rd.tag,
                    rd.mem.recv.add(mine),
                    len,
                    rd.mem.recv.add(theirs),
                    len,
                    token,
                )
            }
        }
        RdKind::Alltoall { bytes } => {
            let at = partner * bytes;
            let from = if rd.mem.send.is_null() { rd.temp.as_ptr() } else { rd.mem.send };
            // SAFETY: block `partner` of both buffers (nproc blocks each; `temp` is the copy
            // of the blocks to send in place).
            unsafe {
                s.tp.start_exchange(rd.comm, partner, rd.tag, from.add(at), bytes, rd.mem.recv.add(at), bytes, token)
            }
        }
        RdKind::Barrier => {
            let any = rd.temp.as_ptr() as *mut u8;
            // SAFETY: empty messages: nothing is read or written.
            unsafe { s.tp.start_exchange(rd.comm, partner, rd.tag, any, 0, any, 0, token) }
        }
    }?;
    // The step ends when its receive and (when it is still under way) its send have.
    expect(s, token, 1 + u32::from(send_under_way));
    Ok(())
}

/// A real request of operation `token` finished: for a recursive-doubling operation, combines
/// the step and starts the next one (None: not done yet), or gives its buffer back when it
/// is done; any other operation's `buf` passes through.
fn rd_step(s: &mut State, token: u64, buf: Vec<u8>) -> Option<Vec<u8>> {
    if s.rcoll.tree.rd.is_empty() {
        return Some(buf);
    }
    let Some(mut rd) = s.rcoll.tree.rd.remove(&token) else {
        return Some(buf);
    };
    let me = s.tp.myproc;
    let partner = me ^ rd.mask;
    if let RdKind::Allreduce { op, ty, count } = rd.kind {
        let len = count * ty.size();
        // SAFETY: `recv` holds the `len`-byte partial result (the caller's buffer, valid until
        // the request completes, or ours in `mem.keep`); `temp` the partner's. Every process
        // computes lower op higher, so all get the same bits.
        unsafe {
            let recv = std::slice::from_raw_parts_mut(rd.mem.recv, len);
            if partner < me {
                crate::core::coll::op::apply(op, ty, rd.temp.as_ptr(), recv.as_mut_ptr(), count);
            } else {
                crate::core::coll::op::apply(op, ty, recv.as_ptr(), rd.temp.as_mut_ptr(), count);
                recv.copy_from_slice(&rd.temp);
            }
        }
    }
    rd.mask = rd.kind.next(rd.mask);
    if rd.mask < s.tp.nproc {
        // SAFETY: the buffers live in `rd`, kept below until the last step.
        if let Err(e) = unsafe { rd_exchange(s, &rd, token) } {
            crate::core::diag::fatal(&format!("real collective: {e}"));
        }
        s.rcoll.tree.rd.insert(token, rd);
        return None;
    }
    let keep = std::mem::take(&mut rd.mem.keep);
    real::release_if_unused(s, rd.key);
    Some(keep)
}

/// MPI_Test calls on tracked requests so far (every `FULL_POLL`-th runs the whole engine).
static TESTS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// MPI_Test of request `h` when `wait` would take it: one poll of its real operation alone
/// (the whole progress engine every `FULL_POLL` tests). Some(Some(..)) as `wait` returns
/// when it completed (taken), Some(None) when not yet; None: not such a request (nothing
/// done).
pub fn test(h: usize) -> Option<Option<(Status, usize, bool)>> {
    if TRACKED.load(Ordering::Relaxed) == 0 {
        return None;
    }
    let id = h as ReqId;
    let sub = sched::rank();
    let n = TESTS.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
    state::with(|s| test_round(s, id, sub, n.is_multiple_of(FULL_POLL))).ok().flatten()
}

/// One look at tracked request `id` of subrank `sub` under the state lock (`test`'s round,
/// and `wait`'s first): None when it is not such a request of `sub`'s; else, when not done
/// yet, one poll (of its real operation, or a full progress step when `full`), then its
/// completion if that finished it (Some(None): still under way).
fn test_round(s: &mut State, id: ReqId, sub: usize, full: bool) -> Option<Option<(Status, usize, bool)>> {
    let token = *s.rcoll.tree.tokens.get(&id)?;
    if !s.req(id).is_some_and(|r| r.owner == sub && r.active) {
        return None;
    }
    if !is_done(s, id) {
        if full {
            s.progress();
        } else {
            coll_test(s, token);
        }
    }
    if !is_done(s, id) {
        return Some(None);
    }
    Some(Some(completed(s, id)))
}

/// Completes done request `id`: its status, communicator and whether it is persistent.
fn completed(s: &mut State, id: ReqId) -> (Status, usize, bool) {
    let (comm, persistent) = s.req(id).map_or((0, false), |r| (r.comm, r.persist.is_some()));
    (finish(s, id), comm, persistent)
}
