//! Session 24 (nbcpair16): MPI_Ibarrier, MPI_Ibcast, MPI_Iallgather and MPI_Ialltoall between
//! the two members of an intra-communicator at one subrank per process on a two-process
//! launch, the nonblocking twin of `collpair` (docs/collectives.md, "Session 24 (nbcpair16)").
//!
//! Each call is at most one eager message each way: the send is made at the start (an eager
//! message to the other process completes locally, `State::try_send_now`), and the request
//! the program gets is an ordinary receive posted in our matching engine on the collective
//! context for the peer's message (the p2p layer unpacks it through the datatype engine, or
//! through its bounce buffer for a buffer in the thread-locals, and reports a truncation
//! through the communicator's error handler at the wait), or, where nothing comes back (the
//! broadcast's root), the owner's built-in complete request (`Slab::done_send`). The own
//! block of an Allgather or Alltoall is copied at the start.
//!
//! Unlike the blocking `collpair`, whose messages are the general path's, the general
//! nonblocking path at one subrank per process sends other messages (the real MPI's
//! I-collective on the twin, `core::coll::nbc`), so both ranks must decide alike: the decision
//! reads only what every rank knows alike (the launch, the communicator's size and kind, the
//! byte size of the operation's blocks), never a rank's datatype layout or buffer location:
//! any committed datatype is packed (send) or unpacked (receive). A call that does not take
//! this path returns None before anything was numbered or sent; the general path then reports
//! any argument error as it did. The call is numbered on the communicator as every other
//! collective (`coll_seq`), so its tag orders it among the blocking and nonblocking calls in
//! between, and several outstanding calls match in order.
//!
//! Session 25 (nbcred16): MPI_Iallreduce and MPI_Ireduce too (`ireduce`): the operand sent at
//! the start, the peer's received into a buffer the request owns, and the combine in rank
//! order when the request completes (`core::coll::pairfold`, run by `Request::settle`).
//!
//! Session 27: MPI_Iscan and MPI_Iexscan (`iscan`): rank 0 sends its operand at the start and
//! is done; rank 1 folds it with its own (Iscan) or takes it as it is (Iexscan).

use super::coll::{in_place, CArr, Sides};
use super::handles::DtHeld;
use crate::core::coll::pairfold::Fold;
use crate::core::coll::reduce::Reducer;
use crate::core::coll::{self, TAG_ALLGATHER, TAG_ALLTOALL, TAG_BARRIER, TAG_BCAST, TAG_GATHER, TAG_REDUCE, TAG_SCAN, TAG_SCATTER};
use crate::core::comm::{comm_index, TeamCell, CTX_COLL};
use crate::core::error::MpiResult;
use crate::core::request::{RecvTarget, ReqId};
use crate::core::state::{self, State};
use crate::sched;
use std::os::raw::{c_int, c_void};
use std::sync::atomic::{AtomicU8, Ordering};

/// Whether the launch has two processes: 0 not known yet (read under the state lock at the
/// first call), 1 yes, 2 no.
static TWO: AtomicU8 = AtomicU8::new(0);

/// Whether the launch may take this path: one subrank per process, not known to be more than
/// two processes. The same on every rank. Unlike `collpair` it stays on when the blocking
/// collectives go to the real MPI (`collsolo`): its messages are ours on both ranks, numbered
/// as every call, and never meet the real MPI's collectives.
#[inline(always)]
pub(super) fn on() -> bool {
    TWO.load(Ordering::Relaxed) != 2 && coll::one_per_process()
}

/// `count` items of datatype `dt` at `buf`, checked (a committed type, a count that is not
/// negative, a buffer when there are bytes); None for anything the general path reports.
pub(super) struct Side {
    pub(super) ptr: *mut u8,
    pub(super) count: usize,
    pub(super) dt: DtHeld,
}

impl Side {
    pub(super) fn of(buf: *const c_void, count: i64, dt: usize) -> Option<Side> {
        let dt = DtHeld::of(dt).ok()?;
        let count = usize::try_from(count).ok()?;
        if buf.is_null() && count > 0 && dt.size > 0 {
            return None;
        }
        Some(Side {
            ptr: buf as *mut u8,
            count,
            dt,
        })
    }

    /// Its bytes (the same on both ranks of a correct program: the type signature's size).
    pub(super) fn bytes(&self) -> Option<usize> {
        self.count.checked_mul(self.dt.size)
    }

    /// Block `i` of a buffer of blocks of this side's shape, back to back.
    fn block(&self, i: usize) -> Side {
        Side {
            ptr: self.ptr.wrapping_offset((i * self.count) as isize * self.dt.extent),
            count: self.count,
            dt: self.dt.clone(),
        }
    }

    pub(super) fn target(self) -> RecvTarget {
        RecvTarget {
            buf: self.ptr,
            count: self.count,
            dt: self.dt,
        }
    }
}

/// Whether `bytes` go as one eager message between the processes.
#[inline(always)]
pub(super) fn eager(bytes: Option<usize>) -> bool {
    bytes.is_some_and(|b| b <= coll::step::eager_max())
}

/// One call between the pair: the blocking pair path's (`collpair::Pair`).
use super::collpair::Pair;

/// Under the state lock: the caller's view of communicator `comm_h` when the call takes this
/// path (an active subrank; an intra-communicator of two members, which at one subrank per
/// process on two processes has one member on each: its team is absent, and is recorded so),
/// numbered as every collective on it. None: nothing changed.
pub(super) fn enter(s: &mut State, sub: usize, comm_h: usize) -> Option<Pair> {
    if TWO.load(Ordering::Relaxed) == 0 {
        TWO.store(if s.nproc == 2 { 1 } else { 2 }, Ordering::Relaxed);
    }
    if s.nproc != 2 {
        return None;
    }
    let l = s.locals.get_mut(sub)?;
    if !l.initialized || l.finalized {
        return None;
    }
    let cm = l.comms.get_mut(comm_index(comm_h)?)?.as_mut()?;
    if cm.is_inter() || cm.group.ranks.len() != 2 || matches!(cm.team, TeamCell::Here(_)) {
        return None;
    }
    cm.team = TeamCell::Absent;
    cm.coll_seq += 1;
    Some(Pair {
        ctx: cm.ctx | CTX_COLL,
        me: cm.rank,
        peer_world: cm.group.ranks[(1 - cm.rank) as usize],
        tag_base: coll::tag_base(cm.coll_seq),
    })
}

/// Sends `b` to the peer as this call's message of kind `kind` (packed first unless
/// contiguous): one eager real send, complete at once. False: it did not go (never at the
/// sizes `eager` admits).
///
/// # Safety
/// `b` describes readable data of the running subrank.
pub(super) unsafe fn send(s: &mut State, sub: usize, pair: &Pair, kind: i32, b: &Side) -> bool {
    let tag = pair.tag_base | kind;
    let len = b.count * b.dt.size;
    if len == 0 || b.dt.is_contiguous() {
        let p = if len == 0 { std::ptr::NonNull::dangling().as_ptr() } else { b.ptr };
        // SAFETY: the caller's contract: `len` readable bytes at `p` (none when empty).
        return unsafe { s.try_send_now(sub, pair.ctx, pair.me, pair.peer_world, tag, p, len) };
    }
    let mut packed = Vec::with_capacity(len);
    // SAFETY: the caller's contract: `count` elements of the type at `ptr`.
    unsafe { b.dt.pack(b.ptr, b.count, &mut packed) };
    // SAFETY: `packed` holds `len` bytes.
    unsafe { s.try_send_now(sub, pair.ctx, pair.me, pair.peer_world, tag, packed.as_ptr(), packed.len()) }
}

/// Posts the receive of the peer's message of kind `kind` into `t`: the request the program
/// waits on (its errors go to communicator `comm_h`'s handler).
///
/// # Safety
/// `t` is a receive buffer of the running subrank `sub`, valid until the request completes.
pub(super) unsafe fn post(s: &mut State, sub: usize, comm_h: usize, pair: &Pair, kind: i32, t: RecvTarget) -> ReqId {
    let id = s.new_request(sub, comm_h);
    // SAFETY: the caller's contract.
    unsafe { s.start_recv(id, sub, pair.peer_message(kind), t) };
    id
}

/// `post` of the receive into `t`, unless the peer's message is here already (session 26,
/// `State::take_now`: the later rank of the two finds the earlier one's): then it is copied
/// into `t` at once and the built-in complete request stands for the call (`Slab::done_send`;
/// a collective's request reports no status). Only into a contiguous buffer outside the
/// swapped thread-locals, and only a message of exactly the expected bytes: anything else is
/// left to the posted receive, which reports a truncation.
///
/// # Safety
/// As `post`.
pub(super) unsafe fn post_side(s: &mut State, sub: usize, comm_h: usize, pair: &Pair, kind: i32, t: Side) -> ReqId {
    let len = t.count * t.dt.size;
    let outside = len == 0 || !sched::swap::in_blocks(t.ptr as usize, t.ptr as usize + len);
    // SAFETY: the caller's contract: `len` writable bytes at `t.ptr` (contiguous, checked).
    if t.dt.is_contiguous() && outside && unsafe { s.take_now(sub, &pair.peer_message(kind), t.ptr, len) }.is_some() {
        return s.locals[sub].reqs.done_send();
    }
    // SAFETY: the caller's contract.
    unsafe { post(s, sub, comm_h, pair, kind, t.target()) }
}

/// The send's failure, which `eager` and one subrank per process rule out: an internal
/// error, never a silent loss.
#[cold]
#[inline(never)]
pub(super) fn unsent() -> MpiResult<()> {
    crate::core::error::err(
        crate::consts::MPI_ERR_INTERN,
        "a two-rank nonblocking collective's eager send did not go at once",
    )
}

/// Copies `from` into `to` (the own block of an Allgather or Alltoall; the same bytes).
///
/// # Safety
/// Both describe the running subrank's buffers.
pub(super) unsafe fn copy(from: &Side, to: &Side) {
    let len = from.count * from.dt.size;
    if len == 0 {
        return;
    }
    if from.dt.is_contiguous() && to.dt.is_contiguous() {
        // SAFETY: the caller's contract; `copy` allows an overlap the standard forbids.
        unsafe { std::ptr::copy(from.ptr, to.ptr, len) };
        return;
    }
    let mut packed = Vec::with_capacity(len);
    // SAFETY: the caller's contract.
    unsafe {
        from.dt.pack(from.ptr, from.count, &mut packed);
        to.dt.unpack(&packed, to.ptr, to.count);
    }
}

/// Stores `id` in the program's request.
///
/// # Safety
/// `req` is a valid request pointer (checked not null by the callers).
pub(super) unsafe fn give(req: *mut usize, id: ReqId) -> MpiResult<()> {
    // SAFETY: the caller's contract.
    unsafe { *req = id as usize };
    Ok(())
}

/// MPI_Ibarrier: an empty message each way.
///
/// # Safety
/// `req` comes from the program.
pub(super) unsafe fn ibarrier(comm_h: usize, req: *mut usize) -> Option<MpiResult<()>> {
    if !on() || req.is_null() {
        return None;
    }
    let sub = sched::rank();
    let none = Side {
        ptr: std::ptr::NonNull::dangling().as_ptr(),
        count: 0,
        dt: DtHeld::Table(crate::core::datatype::predefined_arc(crate::consts::MPI_BYTE)?),
    };
    let r = state::with_hot(|s| {
        let pair = enter(s, sub, comm_h)?;
        // SAFETY: zero bytes, never read; never written.
        Some(unsafe { send(s, sub, &pair, TAG_BARRIER, &none).then(|| post_side(s, sub, comm_h, &pair, TAG_BARRIER, none)) })
    })
    .ok()??;
    // SAFETY: checked not null.
    Some(r.map_or_else(unsent, |id| unsafe { give(req, id) }))
}

/// MPI_Ibcast: the root sends its buffer and holds a complete request; the other rank
/// receives it.
///
/// # Safety
/// The buffer and `req` come from the program (valid until the request completes).
pub(super) unsafe fn ibcast(buf: *mut c_void, count: i64, dt: usize, root: c_int, comm_h: usize, req: *mut usize) -> Option<MpiResult<()>> {
    if !on() || req.is_null() || !(0..2).contains(&root) {
        return None;
    }
    let b = Side::of(buf, count, dt)?;
    if !eager(b.bytes()) {
        return None;
    }
    let sub = sched::rank();
    let r = state::with_hot(|s| {
        let pair = enter(s, sub, comm_h)?;
        if pair.me == root {
            // SAFETY: the program's buffer, `count` items of `dt`.
            let sent = unsafe { send(s, sub, &pair, TAG_BCAST, &b) };
            return Some(sent.then(|| s.locals[sub].reqs.done_send()));
        }
        // SAFETY: the program's buffer, valid until the request completes.
        Some(Some(unsafe { post_side(s, sub, comm_h, &pair, TAG_BCAST, b) }))
    })
    .ok()??;
    // SAFETY: checked not null.
    Some(r.map_or_else(unsent, |id| unsafe { give(req, id) }))
}

/// MPI_Iallgather (`all`) and MPI_Ialltoall: the peer's block each way, the own one copied
/// at the start (none in place: it is there). Taken when the receive blocks are one eager
/// message and the send side (if any) has their bytes.
///
/// # Safety
/// The buffers and `req` come from the program (valid until the request completes).
pub(super) unsafe fn iexchange(x: &Sides, comm_h: usize, all: bool, req: *mut usize) -> Option<MpiResult<()>> {
    if !on() || req.is_null() {
        return None;
    }
    let (sbuf, scount, sdt, rbuf, rcount, rdt) = x.unpack();
    let r = Side::of(rbuf, rcount, rdt)?;
    let bytes = r.bytes();
    if !eager(bytes) {
        return None;
    }
    let s_side = if in_place(sbuf) {
        None
    } else {
        let b = Side::of(sbuf, scount, sdt)?;
        if b.bytes() != bytes {
            return None;
        }
        Some(b)
    };
    let kind = if all { TAG_ALLGATHER } else { TAG_ALLTOALL };
    let sub = sched::rank();
    let got = state::with_hot(|s| {
        let pair = enter(s, sub, comm_h)?;
        let (me, peer) = (pair.me as usize, 1 - pair.me as usize);
        // Allgather sends its one block (in place: its own slot); Alltoall the peer's block
        // (in place: the peer's slot, sent before the receive into it is posted).
        let out = match (&s_side, all) {
            (Some(b), true) => Side {
                ptr: b.ptr,
                count: b.count,
                dt: b.dt.clone(),
            },
            (Some(b), false) => b.block(peer),
            (None, true) => r.block(me),
            (None, false) => r.block(peer),
        };
        // SAFETY: the program's buffers, readable now.
        if !unsafe { send(s, sub, &pair, kind, &out) } {
            return Some(None);
        }
        if let Some(b) = &s_side {
            let own = if all {
                Side {
                    ptr: b.ptr,
                    count: b.count,
                    dt: b.dt.clone(),
                }
            } else {
                b.block(me)
            };
            // SAFETY: the program's buffers; the own block of each.
            unsafe { copy(&own, &r.block(me)) };
        }
        // SAFETY: the peer's slot of the program's receive buffer, valid until completion.
        Some(Some(unsafe { post_side(s, sub, comm_h, &pair, kind, r.block(peer)) }))
    })
    .ok()??;
    // SAFETY: checked not null.
    Some(got.map_or_else(unsent, |id| unsafe { give(req, id) }))
}

/// MPI_Igather (`gather`) and MPI_Iscatter: the rank away from the root sends its block
/// (Gather) or receives it (Scatter); the root receives the other's block into its slot
/// (Gather) or sends it (Scatter), and copies its own at the start (none in place). Taken
/// when the block is one eager message: its bytes are the non-root's one side and the root's
/// block (equal in a correct program).
///
/// # Safety
/// The buffers and `req` come from the program (valid until the request completes).
pub(super) unsafe fn irooted(x: &Sides, root: c_int, comm_h: usize, gather: bool, req: *mut usize) -> Option<MpiResult<()>> {
    if !on() || req.is_null() || !(0..2).contains(&root) {
        return None;
    }
    let (sbuf, scount, sdt, rbuf, rcount, rdt) = x.unpack();
    // The blocks (the root's many-block side) and the one side, as the rank sees them; the
    // root's rank is known only under the lock, so both readings are made here.
    let (many, one) = if gather {
        ((rbuf as *const c_void, rcount, rdt), (sbuf, scount, sdt))
    } else {
        ((sbuf, scount, sdt), (rbuf as *const c_void, rcount, rdt))
    };
    let kind = if gather { TAG_GATHER } else { TAG_SCATTER };
    let sub = sched::rank();
    // Checked outside the lock (datatype look-ups): either reading may be the one used.
    let many_side = Side::of(many.0, many.1, many.2);
    let one_side = if in_place(one.0) { None } else { Side::of(one.0, one.1, one.2) };
    let got = state::with_hot(|s| {
        // Decide before numbering: which rank this is, without changing anything.
        let l = s.locals.get(sub)?;
        let me = l.comms.get(comm_index(comm_h)?)?.as_ref()?.rank;
        if me == root {
            let m = many_side.as_ref()?;
            if !eager(m.bytes()) {
                return None;
            }
            if !in_place(one.0) && one_side.as_ref()?.bytes() != m.bytes() {
                return None;
            }
        } else {
            // MPI_IN_PLACE away from the root is an error the general path reports.
            if !eager(one_side.as_ref()?.bytes()) {
                return None;
            }
        }
        let pair = enter(s, sub, comm_h)?;
        let (mine, peer) = (pair.me as usize, 1 - pair.me as usize);
        if pair.me != root {
            let b = one_side.as_ref()?;
            if gather {
                // SAFETY: the program's send buffer, readable now.
                return Some(unsafe { send(s, sub, &pair, kind, b) }.then(|| s.locals[sub].reqs.done_send()));
            }
            let t = Side {
                ptr: b.ptr,
                count: b.count,
                dt: b.dt.clone(),
            };
            // SAFETY: the program's receive buffer, valid until completion.
            return Some(Some(unsafe { post_side(s, sub, comm_h, &pair, kind, t) }));
        }
        let m = many_side.as_ref()?;
        if let Some(b) = &one_side {
            // SAFETY: the program's buffers: the own block and the one side.
            unsafe {
                if gather {
                    copy(b, &m.block(mine))
                } else {
                    copy(&m.block(mine), b)
                }
            };
        }
        if gather {
            // SAFETY: the peer's slot of the program's receive buffer, valid until completion.
            return Some(Some(unsafe { post_side(s, sub, comm_h, &pair, kind, m.block(peer)) }));
        }
        // SAFETY: the peer's block of the program's send buffer, readable now.
        Some(unsafe { send(s, sub, &pair, kind, &m.block(peer)) }.then(|| s.locals[sub].reqs.done_send()))
    })
    .ok()??;
    // SAFETY: checked not null.
    Some(got.map_or_else(unsent, |id| unsafe { give(req, id) }))
}

/// Session 25 (nbcred16): MPI_Iallreduce (`root` None) and MPI_Ireduce. Each rank that
/// contributes to the other's result (both of an Allreduce; the non-root of a Reduce) sends
/// its operand at the start; each rank that gets a result (both; the root) receives the
/// peer's operand, packed, into the request's work buffer, and the request's completion
/// (`Request::settle`, whichever call takes it first) combines the two in rank order into the
/// receive buffer (`core::coll::pairfold`). Taken when the operand is one eager message and
/// the operation is defined on the datatype (both alike on the two ranks: MPI requires the
/// same count, datatype and operation); otherwise the general path runs and reports.
///
/// # Safety
/// The buffers and `req` come from the program (valid until the request completes).
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn ireduce(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    count: i64,
    dt: usize,
    op: usize,
    root: Option<c_int>,
    comm_h: usize,
    req: *mut usize,
) -> Option<MpiResult<()>> {
    if !on() || req.is_null() || root.is_some_and(|r| !(0..2).contains(&r)) {
        return None;
    }
    let (d, n, bytes, red) = operand(count, dt, op)?;
    let sub = sched::rank();
    let got = state::with_hot(|s| {
        // Decide before numbering: which rank this is, without changing anything.
        let l = s.locals.get(sub)?;
        let me = l.comms.get(comm_index(comm_h)?)?.as_ref()?.rank;
        let gets = root.is_none_or(|r| r == me);
        // The own operand: in place (only where a result lands) it is the receive buffer.
        let own = if in_place(sbuf) {
            gets.then_some(rbuf as *const c_void)?
        } else {
            sbuf
        };
        if bytes > 0 && (own.is_null() || (gets && rbuf.is_null())) {
            return None;
        }
        let pair = enter(s, sub, comm_h)?;
        let mine = Side {
            ptr: own as *mut u8,
            count: n,
            dt: d.clone(),
        };
        if root.is_none_or(|r| r != pair.me) {
            // SAFETY: the program's operand, readable now.
            if !unsafe { send(s, sub, &pair, TAG_REDUCE, &mine) } {
                return Some(None);
            }
        }
        if !gets {
            return Some(Some(s.locals[sub].reqs.done_send()));
        }
        // SAFETY: the program's operand (`n` elements, checked above) and receive buffer.
        unsafe { post_fold(s, sub, comm_h, &pair, red, &mine, rbuf as *mut u8) }.map(Some)
    })
    .ok()??;
    // SAFETY: checked not null.
    Some(got.map_or_else(unsent, |id| unsafe { give(req, id) }))
}

/// A pair reduction's operand description, when it takes the pair path: the datatype,
/// the count, its bytes (one eager message) and the reduction (defined on the datatype).
/// None: the general path runs (and reports what is wrong).
fn operand(count: i64, dt: usize, op: usize) -> Option<(DtHeld, usize, usize, Reducer)> {
    let d = DtHeld::of(dt).ok()?;
    let n = usize::try_from(count).ok()?;
    let bytes = n.checked_mul(d.size);
    if !eager(bytes) {
        return None;
    }
    let red = Reducer::new(op, &d, dt).ok()?;
    Some((d, n, bytes?, red))
}

/// Posts the receive of the peer's operand (packed, into a work buffer the request keeps)
/// and hangs the combine with the own operand `mine` (loaded now: it may be the receive
/// buffer) on the request, to store the result in rank order into `out` when the request
/// completes (`core::coll::pairfold`). None: no byte type (never).
///
/// # Safety
/// `mine` describes the program's readable operand; `out` holds `mine.count` elements of its
/// type, valid until the request completes.
unsafe fn post_fold(s: &mut State, sub: usize, comm_h: usize, pair: &Pair, red: Reducer, mine: &Side, out: *mut u8) -> Option<ReqId> {
    // SAFETY: forwarded from the caller.
    unsafe { post_fold_kind(s, sub, comm_h, pair, TAG_REDUCE, red, mine, out) }
}

/// `post_fold` for the peer's message of kind `kind` (session 27: a scan's).
///
/// # Safety
/// As `post_fold`.
#[allow(clippy::too_many_arguments)]
unsafe fn post_fold_kind(
    s: &mut State,
    sub: usize,
    comm_h: usize,
    pair: &Pair,
    kind: i32,
    red: Reducer,
    mine: &Side,
    out: *mut u8,
) -> Option<ReqId> {
    let (n, d) = (mine.count, &mine.dt);
    let bytes = n * d.size;
    // Session 27: the own operand straight into the result's buffer (`pairfold::straight`;
    // in place it is there already).
    let straight = n > 0 && crate::core::coll::pairfold::straight(&red, d);
    if straight && !std::ptr::eq(mine.ptr, out) {
        // SAFETY: the caller's contract: `n` readable elements of the contiguous type at
        // `mine.ptr`, room for as many at `out`. They may overlap: an in-place
        // Ireduce_scatter's own block lies in the receive buffer, not always at its start.
        unsafe { std::ptr::copy(mine.ptr, out, bytes) };
    }
    let fold = (n > 0).then(|| {
        Box::new(Fold {
            peer: vec![0u8; bytes],
            mine: if straight {
                Vec::new()
            } else {
                // SAFETY: the caller's contract: `n` readable elements of `d`.
                unsafe { red.load(mine.ptr, n, d) }
            },
            red,
            count: n,
            dt: d.arc(),
            me: pair.me,
            out,
        })
    });
    let bdt = DtHeld::Table(crate::core::datatype::predefined_arc(crate::consts::MPI_BYTE)?);
    let t = RecvTarget {
        buf: fold
            .as_ref()
            .map_or(std::ptr::NonNull::dangling().as_ptr(), |f| f.peer.as_ptr() as *mut u8),
        count: bytes,
        dt: bdt,
    };
    // SAFETY: the fold's work buffer, a heap block the request keeps (moving the box leaves
    // it in place) until it completes.
    let id = unsafe { post(s, sub, comm_h, pair, kind, t) };
    if let Some(r) = s.req_mut(id) {
        r.fold = fold;
    }
    Some(id)
}

/// Session 26: MPI_Ireduce_scatter (`counts`: the receive counts, one per rank) and
/// MPI_Ireduce_scatter_block (`counts` None: `count` for each rank). Each rank sends the
/// peer's block of its operand (block 0 then block 1, back to back by the datatype's extent;
/// in place: the receive buffer holds the operand) at the start, receives the peer's
/// contribution to its own block, and the request's completion combines the two in rank
/// order into the receive buffer (`post_fold`, as `ireduce`). Every rank decides alike: the
/// launch, a two-member communicator (looked at before anything is numbered, so that the
/// counts array is read only when it has two entries), the larger block's bytes within the
/// eager limit, the operation defined on the datatype; otherwise the general path runs and
/// reports.
///
/// # Safety
/// The buffers, the counts array and `req` come from the program (valid until the request
/// completes).
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn ireduce_scatter(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    counts: Option<CArr>,
    count: i64,
    dt: usize,
    op: usize,
    comm_h: usize,
    req: *mut usize,
) -> Option<MpiResult<()>> {
    if !on() || req.is_null() {
        return None;
    }
    let d = DtHeld::of(dt).ok()?;
    let red = Reducer::new(op, &d, dt).ok()?;
    let sub = sched::rank();
    let got = state::with_hot(|s| {
        // Decide before numbering: a two-member intra-communicator (`enter` checks it again).
        let cm = s.locals.get(sub)?.comms.get(comm_index(comm_h)?)?.as_ref()?;
        if cm.is_inter() || cm.group.ranks.len() != 2 {
            return None;
        }
        let c = match counts {
            // SAFETY: the standard gives the array one entry per rank: two.
            Some(a) => unsafe { a.two()? },
            None => [count, count],
        };
        let c = [usize::try_from(c[0]).ok()?, usize::try_from(c[1]).ok()?];
        if !eager(c[0].max(c[1]).checked_mul(d.size)) {
            return None;
        }
        let all = if in_place(sbuf) { rbuf as *const c_void } else { sbuf };
        if (c[0] + c[1] > 0 && all.is_null()) || (c[cm.rank as usize & 1] > 0 && rbuf.is_null()) {
            return None;
        }
        let pair = enter(s, sub, comm_h)?;
        let (me, peer) = (pair.me as usize, 1 - pair.me as usize);
        let block = |i: usize| Side {
            ptr: (all as *mut u8).wrapping_offset((if i == 0 { 0 } else { c[0] } as isize).wrapping_mul(d.extent)),
            count: c[i],
            dt: d.clone(),
        };
        // SAFETY: the program's operand, the peer's block readable now.
        if !unsafe { send(s, sub, &pair, TAG_REDUCE, &block(peer)) } {
            return Some(None);
        }
        // SAFETY: the own block of the operand, readable now; the receive buffer holds `c[me]`
        // elements (MPI's rules).
        unsafe { post_fold(s, sub, comm_h, &pair, red, &block(me), rbuf as *mut u8) }.map(Some)
    })
    .ok()??;
    // SAFETY: checked not null.
    Some(got.map_or_else(unsent, |id| unsafe { give(req, id) }))
}

/// Session 27: MPI_Iscan (`ex` false) and MPI_Iexscan (`ex` true) between the pair. Rank 0
/// sends its operand at the start and completes at once with the built-in complete request
/// (Iscan: its operand is its result, copied into the receive buffer unless in place;
/// Iexscan: its receive buffer is undefined and left alone); rank 1 receives rank 0's operand
/// and, for Iscan, combines the two in rank order into its receive buffer when the request
/// completes (`post_fold`, as `ireduce`: a non-commutative operation sees rank 0's first), for
/// Iexscan receives it straight into its receive buffer (`post_side`). Taken when the operand
/// is one eager message and the operation is defined on the datatype (both alike on the two
/// ranks: MPI requires the same count, datatype and operation); otherwise the general path
/// runs and reports.
///
/// # Safety
/// The buffers and `req` come from the program (valid until the request completes).
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn iscan(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    count: i64,
    dt: usize,
    op: usize,
    ex: bool,
    comm_h: usize,
    req: *mut usize,
) -> Option<MpiResult<()>> {
    if !on() || req.is_null() {
        return None;
    }
    let (d, n, bytes, red) = operand(count, dt, op)?;
    let sub = sched::rank();
    let got = state::with_hot(|s| {
        // In place the operand is the receive buffer.
        let own = if in_place(sbuf) { rbuf as *const c_void } else { sbuf };
        if bytes > 0 && (own.is_null() || rbuf.is_null()) {
            return None;
        }
        let pair = enter(s, sub, comm_h)?;
        let mine = Side {
            ptr: own as *mut u8,
            count: n,
            dt: d.clone(),
        };
        let out = Side {
            ptr: rbuf as *mut u8,
            count: n,
            dt: d.clone(),
        };
        if pair.me == 0 {
            // SAFETY: the program's operand, readable now.
            if !unsafe { send(s, sub, &pair, TAG_SCAN, &mine) } {
                return Some(None);
            }
            if !ex && !in_place(sbuf) {
                // SAFETY: the program's operand and receive buffer (`n` elements each).
                unsafe { copy(&mine, &out) };
            }
            return Some(Some(s.locals[sub].reqs.done_send()));
        }
        if ex {
            // SAFETY: the program's receive buffer, valid until the request completes.
            return Some(Some(unsafe { post_side(s, sub, comm_h, &pair, TAG_SCAN, out) }));
        }
        // SAFETY: the program's operand (`n` elements, checked above) and receive buffer.
        unsafe { post_fold_kind(s, sub, comm_h, &pair, TAG_SCAN, red, &mine, rbuf as *mut u8) }.map(Some)
    })
    .ok()??;
    // SAFETY: checked not null.
    Some(got.map_or_else(unsent, |id| unsafe { give(req, id) }))
}

#[cfg(test)]
mod tests {
    use super::{eager, Side};
    use crate::consts as c;
    use crate::core::coll::step::eager_max;
    use rstest::rstest;

    /// The symmetric size test: at most the eager limit, and a size at all.
    #[rstest]
    #[case(Some(0), true)]
    #[case(Some(8), true)]
    #[case(None, false)]
    fn eager_sizes(#[case] bytes: Option<usize>, #[case] ok: bool) {
        assert_eq!(eager(bytes), ok);
        assert!(eager(Some(eager_max())));
        assert!(!eager(Some(eager_max() + 1)));
    }

    /// Blocks of a predefined type lie back to back by its extent.
    #[rstest]
    #[case(0, 0)]
    #[case(1, 12)]
    fn blocks(#[case] i: usize, #[case] off: usize) {
        let mut mem = [0u8; 24];
        let d = super::DtHeld::Table(crate::core::datatype::predefined_arc(c::MPI_INT).expect("MPI_INT"));
        let s = Side {
            ptr: mem.as_mut_ptr(),
            count: 3,
            dt: d,
        };
        assert_eq!(s.bytes(), Some(12));
        assert_eq!(s.block(i).ptr as usize - mem.as_ptr() as usize, off);
    }
}
