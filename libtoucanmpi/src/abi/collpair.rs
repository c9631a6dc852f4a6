//! Session 23 (v1coll16): the blocking MPI_Barrier, MPI_Bcast, MPI_Gather, MPI_Scatter,
//! MPI_Allgather and (lead) MPI_Alltoall between the two members of a communicator at one
//! subrank per process on two processes, from the export straight to the messages
//! (docs/collectives.md, "Session 23 (v1coll16)").
//!
//! At two ranks each of these calls is one eager message each way at most (coll14: the
//! algorithms do no extra step there), yet the general path spent about as much again on
//! its set-up: the checks' `Prepared` and `Part`, the communicator's `CommRef` clone, the
//! `Coll`, the route in `abi::coll::run`, the stack list of blocks and their `DtRef`
//! clones, and the drops of all of them. Here a call whose buffers are predefined
//! contiguous types outside the program's thread-locals, on an intra-communicator of two
//! members whose route is known to be the general one (`TeamCell::Absent`), is checked,
//! numbered and its send made under one state lock, and its receive is the request-free
//! step's (`step::recv_plain`). Its messages are the general path's (the collective
//! context, the call's number and kind in the tag, the same senders and receivers), so the
//! other rank may take either path; every None sends the call down the general path before
//! anything was done (nothing numbered, nothing sent), which then reports any error as it
//! did.

use super::coll::{in_place, Sides};
use crate::core::coll::{self, step, TAG_ALLGATHER, TAG_ALLTOALL, TAG_BARRIER, TAG_BCAST, TAG_GATHER, TAG_SCATTER};
use crate::core::comm::{comm_index, TeamCell, CTX_COLL};
use crate::core::error::MpiResult;
use crate::core::p2p::matching::Pattern;
use crate::core::state::{self, State};
use crate::sched;
use std::os::raw::{c_int, c_void};
use std::sync::atomic::{AtomicU8, Ordering};

/// Whether the launch has two processes: 0 not known yet (read under the state lock at the
/// first call), 1 yes, 2 no.
static TWO: AtomicU8 = AtomicU8::new(0);

/// Whether a call may take this path at all: one subrank per process, the caller is the
/// subrank's own task (`step::allowed`: its direct receive is one slot), not known to be
/// more than two processes, and the real MPI's blocking collectives off (`collsolo` serves
/// those launches). Tested inline in the exports, so other launches pay a few compares.
#[inline(always)]
pub(super) fn on() -> Option<usize> {
    if TWO.load(Ordering::Relaxed) == 2 || crate::core::coll::solo::on() {
        return None;
    }
    let sub = sched::rank();
    step::allowed(sub).then_some(sub)
}

/// MPI_Barrier's.
#[inline(always)]
pub(super) fn barrier(comm_h: usize) -> Option<MpiResult<()>> {
    let sub = on()?;
    barrier_on(sub, comm_h)
}

/// MPI_Bcast's.
#[inline(always)]
pub(super) fn bcast(buf: *mut c_void, count: i64, dt: usize, root: c_int, comm_h: usize) -> Option<MpiResult<()>> {
    let sub = on()?;
    bcast_on(sub, buf, count, dt, root, comm_h)
}

/// MPI_Gather's (`gather`) and MPI_Scatter's.
#[inline(always)]
pub(super) fn rooted(x: &Sides, root: c_int, comm_h: usize, gather: bool) -> Option<MpiResult<()>> {
    let sub = on()?;
    if gather {
        gather_on(sub, x, root, comm_h)
    } else {
        scatter_on(sub, x, root, comm_h)
    }
}

/// MPI_Allgather's (`all`) and MPI_Alltoall's.
#[inline(always)]
pub(super) fn exchange(x: &Sides, comm_h: usize, all: bool) -> Option<MpiResult<()>> {
    let sub = on()?;
    if all {
        allgather_on(sub, x, comm_h)
    } else {
        alltoall_on(sub, x, comm_h)
    }
}

/// The address and bytes of `count` items of the predefined contiguous type `dt` at `buf`
/// when they may move as they are: valid arguments, at most one eager message between
/// processes (`step::eager_max`: larger ones need a rendezvous request), outside the swapped
/// thread-locals. A zero-length buffer gets a dangling address, never read or written.
#[inline(always)]
pub(super) fn plain(buf: *const c_void, count: i64, dt: usize) -> Option<(*mut u8, usize)> {
    let size = crate::core::datatype::contiguous_size(dt)?;
    if count < 0 || (buf.is_null() && count > 0) {
        return None;
    }
    let len = (count as usize).checked_mul(size)?;
    if len == 0 {
        return Some((std::ptr::NonNull::dangling().as_ptr(), 0));
    }
    if len > step::eager_max() || sched::swap::in_blocks(buf as usize, buf as usize + len) {
        return None;
    }
    Some((buf as *mut u8, len))
}

/// Whether both blocks of `len` bytes at `p` (a buffer of one block per rank of the pair) lie
/// outside the swapped thread-locals: `plain` looked at the first one only.
#[inline(always)]
pub(super) fn both_outside(p: *mut u8, len: usize) -> bool {
    len == 0 || !sched::swap::in_blocks(p as usize, p as usize + 2 * len)
}

/// One call between the pair, numbered: its context, this rank, the peer's world rank and
/// the call's tag base.
/// Shared with the nonblocking pair path (`nbcpair`).
#[derive(Clone, Copy)]
pub(super) struct Pair {
    pub(super) ctx: u64,
    pub(super) me: i32,
    pub(super) peer_world: u32,
    pub(super) tag_base: i32,
}

impl Pair {
    /// The pattern of the peer's message of kind `kind` in this call.
    pub(super) fn peer_message(&self, kind: i32) -> Pattern {
        Pattern {
            ctx: self.ctx,
            src: 1 - self.me,
            tag: self.tag_base | kind,
        }
    }
}

/// Under the state lock: the caller's view of communicator `comm_h` when the call may take
/// this path (an active subrank; an intra-communicator of two members whose team was looked
/// up and is absent, i.e. the general route, as `abi::coll::At` numbers them; `fits` accepts
/// this rank), numbered as `At::comm` numbers it. None: nothing changed.
#[inline(always)]
pub(super) fn enter(s: &mut State, sub: usize, comm_h: usize, fits: impl FnOnce(i32) -> bool) -> Option<Pair> {
    if TWO.load(Ordering::Relaxed) == 0 {
        TWO.store(if s.nproc == 2 { 1 } else { 2 }, Ordering::Relaxed);
    }
    let l = &mut s.locals[sub];
    if !l.initialized || l.finalized {
        return None;
    }
    let cm = l.comms.get_mut(comm_index(comm_h)?)?.as_mut()?;
    if !matches!(cm.team, TeamCell::Absent) || cm.is_inter() || cm.group.ranks.len() != 2 || !fits(cm.rank) {
        return None;
    }
    cm.coll_seq += 1;
    Some(Pair {
        ctx: cm.ctx | CTX_COLL,
        me: cm.rank,
        peer_world: cm.group.ranks[(1 - cm.rank) as usize],
        tag_base: coll::tag_base(cm.coll_seq),
    })
}

/// Sends `len` bytes at `p` to the peer as this call's message of kind `kind`, under the lock
/// `enter` held: one eager real send (the peer is on the other process, `len` at most the
/// eager limit: `plain`), complete at once.
///
/// # Safety
/// `p` holds `len` readable bytes.
#[inline(always)]
pub(super) unsafe fn send(s: &mut State, sub: usize, pair: &Pair, kind: i32, p: *const u8, len: usize) -> bool {
    // SAFETY: the caller's contract.
    unsafe { s.try_send_now(sub, pair.ctx, pair.me, pair.peer_world, pair.tag_base | kind, p, len) }
}

/// The send's failure, which `plain` and one subrank per process rule out (an eager message
/// to the other process always goes at once): an internal error, never a silent loss.
#[cold]
#[inline(never)]
pub(super) fn unsent() -> MpiResult<()> {
    crate::core::error::err(
        crate::consts::MPI_ERR_INTERN,
        "a two-rank collective's eager send did not go at once",
    )
}

/// Receives the peer's message of kind `kind` into `len` bytes at `p`.
///
/// # Safety
/// `p` holds `len` writable bytes until this returns.
#[inline(always)]
pub(super) unsafe fn recv(sub: usize, comm_h: usize, pair: &Pair, kind: i32, p: *mut u8, len: usize) -> MpiResult<()> {
    // SAFETY: the caller's contract.
    unsafe { step::recv_plain(sub, comm_h, pair.peer_message(kind), p, len) }
}

/// MPI_Barrier: an empty message each way (`Coll::barrier`'s one dissemination round at two
/// ranks), unless the launch runs barriers as real collectives (`TOUCAN_REAL_COLL_MIN=0`).
fn barrier_on(sub: usize, comm_h: usize) -> Option<MpiResult<()>> {
    if crate::core::coll::real::worth(0) {
        return None;
    }
    let nothing = std::ptr::NonNull::<u8>::dangling().as_ptr();
    let (pair, sent) = state::with_hot(|s| {
        let pair = enter(s, sub, comm_h, |_| true)?;
        // SAFETY: zero bytes, never read.
        let sent = unsafe { send(s, sub, &pair, TAG_BARRIER, nothing, 0) };
        Some((pair, sent))
    })
    .ok()??;
    if !sent {
        return Some(unsent());
    }
    // SAFETY: zero bytes, never written.
    Some(unsafe { recv(sub, comm_h, &pair, TAG_BARRIER, nothing, 0) })
}

/// MPI_Bcast: the root sends its buffer, the other rank receives it (`Coll::bcast`'s binomial
/// tree at two ranks).
fn bcast_on(sub: usize, buf: *mut c_void, count: i64, dt: usize, root: c_int, comm_h: usize) -> Option<MpiResult<()>> {
    let (p, len) = plain(buf, count, dt)?;
    if crate::core::coll::real::bcast_worth(len) {
        return None;
    }
    let (pair, sent) = state::with_hot(|s| {
        let pair = enter(s, sub, comm_h, |_| (0..2).contains(&root))?;
        // SAFETY: the caller's buffer holds `len` bytes (`plain`).
        let sent = pair.me == root && unsafe { send(s, sub, &pair, TAG_BCAST, p, len) };
        Some((pair, sent))
    })
    .ok()??;
    if pair.me == root {
        return Some(if sent { Ok(()) } else { unsent() });
    }
    // SAFETY: the caller's buffer, `len` bytes (`plain`), valid until the call returns.
    Some(unsafe { recv(sub, comm_h, &pair, TAG_BCAST, p, len) })
}

/// MPI_Scatter: the root sends the peer's block and moves its own into its receive buffer
/// (none with MPI_IN_PLACE); the other rank receives its block (`Coll::scatterv`).
fn scatter_on(sub: usize, x: &Sides, root: c_int, comm_h: usize) -> Option<MpiResult<()>> {
    let (sbuf, scount, sdt, rbuf, rcount, rdt) = x.unpack();
    // Away from the root only the receive side is read, and MPI_IN_PLACE is an error there
    // (the general path says so).
    let recv_side = if in_place(rbuf) { None } else { Some(plain(rbuf, rcount, rdt)?) };
    // The root's blocks, checked only at the root (`fits` says whether this rank is it):
    // two blocks of the receive side's bytes (or, in place, of the send side's).
    let mut own = None;
    let (pair, sent) = state::with_hot(|s| {
        let pair = enter(s, sub, comm_h, |me| {
            if !(0..2).contains(&root) {
                return false;
            }
            if me != root {
                return recv_side.is_some();
            }
            let Some((p, len)) = plain(sbuf, scount, sdt) else { return false };
            if recv_side.is_some_and(|(_, l)| l != len) {
                return false;
            }
            // Both blocks are inside the send buffer (`plain` checked one; the second is as
            // long and the standard makes the buffer hold both).
            if !both_outside(p, len) {
                return false;
            }
            own = Some((p, len));
            true
        })?;
        let sent = match own {
            // SAFETY: the root's send buffer holds two blocks of `len` bytes (the standard's
            // contract, `plain`); the peer's is at its rank's offset.
            Some((p, len)) => unsafe { send(s, sub, &pair, TAG_SCATTER, p.wrapping_add((1 - pair.me) as usize * len), len) },
            None => false,
        };
        Some((pair, sent))
    })
    .ok()??;
    match (own, recv_side) {
        (Some(_), _) if !sent => Some(unsent()),
        (Some((p, len)), Some((r, _))) => {
            let mine = p.wrapping_add(pair.me as usize * len);
            // SAFETY: the root's own block and its receive buffer, `len` bytes each; the
            // standard forbids them to overlap (they may be the same address only under
            // MPI_IN_PLACE, handled above), `copy` allows it anyway.
            unsafe { std::ptr::copy(mine, r, len) };
            Some(Ok(()))
        }
        (Some(_), None) => Some(Ok(())),
        // SAFETY: the caller's receive buffer, `len` bytes (`plain`).
        (None, Some((r, len))) => Some(unsafe { recv(sub, comm_h, &pair, TAG_SCATTER, r, len) }),
        (None, None) => None,
    }
}

/// MPI_Gather: the other rank sends its block; the root moves its own into its slot (none
/// with MPI_IN_PLACE: it is there) and receives the other's into the other slot
/// (`Coll::gatherv`).
fn gather_on(sub: usize, x: &Sides, root: c_int, comm_h: usize) -> Option<MpiResult<()>> {
    let (sbuf, scount, sdt, rbuf, rcount, rdt) = x.unpack();
    // Away from the root only the send side is read, and MPI_IN_PLACE is an error there.
    let send_side = if in_place(sbuf) { None } else { Some(plain(sbuf, scount, sdt)?) };
    // The root's slots: two blocks of the send side's bytes (in place: of the receive side's).
    let mut slots = None;
    let (pair, sent) = state::with_hot(|s| {
        let pair = enter(s, sub, comm_h, |me| {
            if !(0..2).contains(&root) {
                return false;
            }
            if me != root {
                return send_side.is_some();
            }
            let Some((p, len)) = plain(rbuf, rcount, rdt) else { return false };
            if send_side.is_some_and(|(_, l)| l != len) {
                return false;
            }
            if !both_outside(p, len) {
                return false;
            }
            slots = Some((p, len));
            true
        })?;
        let sent = match (slots, send_side) {
            // SAFETY: the send buffer holds `len` bytes (`plain`).
            (None, Some((p, len))) => unsafe { send(s, sub, &pair, TAG_GATHER, p, len) },
            _ => false,
        };
        Some((pair, sent))
    })
    .ok()??;
    let Some((r, len)) = slots else {
        return Some(if sent { Ok(()) } else { unsent() });
    };
    if let Some((p, _)) = send_side {
        // SAFETY: the root's send buffer and its own slot, `len` bytes each (`plain`); `copy`
        // allows an overlap the standard forbids.
        unsafe { std::ptr::copy(p, r.wrapping_add(pair.me as usize * len), len) };
    }
    // SAFETY: the other slot of the root's receive buffer, `len` bytes (`plain` of both).
    Some(unsafe { recv(sub, comm_h, &pair, TAG_GATHER, r.wrapping_add((1 - pair.me) as usize * len), len) })
}

/// MPI_Allgather: each rank sends its block to the other, moves it into its own slot (not
/// under MPI_IN_PLACE: it is there) and receives the other's into the other slot
/// (`Coll::allgatherv`'s direct exchange in steps).
fn allgather_on(sub: usize, x: &Sides, comm_h: usize) -> Option<MpiResult<()>> {
    let (sbuf, scount, sdt, rbuf, rcount, rdt) = x.unpack();
    let (r, block) = plain(rbuf, rcount, rdt)?;
    if !both_outside(r, block) {
        return None;
    }
    let send_side = if in_place(sbuf) {
        None
    } else {
        let (p, len) = plain(sbuf, scount, sdt)?;
        if len != block {
            return None;
        }
        Some(p)
    };
    if crate::core::coll::real::worth(block) {
        return None;
    }
    let (pair, sent) = state::with_hot(|s| {
        let pair = enter(s, sub, comm_h, |_| true)?;
        let out = send_side.unwrap_or(r.wrapping_add(pair.me as usize * block));
        // SAFETY: `out` holds `block` bytes (the send buffer, or in place the own slot).
        let sent = unsafe { send(s, sub, &pair, TAG_ALLGATHER, out, block) };
        Some((pair, sent))
    })
    .ok()??;
    if !sent {
        return Some(unsent());
    }
    let (mine, theirs) = (
        r.wrapping_add(pair.me as usize * block),
        r.wrapping_add((1 - pair.me) as usize * block),
    );
    if let Some(p) = send_side {
        // SAFETY: the send buffer and the own slot, `block` bytes each (`plain`); `copy`
        // allows an overlap the standard forbids.
        unsafe { std::ptr::copy(p, mine, block) };
    }
    // SAFETY: the other slot of the receive buffer, `block` bytes (`plain` of both slots).
    Some(unsafe { recv(sub, comm_h, &pair, TAG_ALLGATHER, theirs, block) })
}

/// MPI_Alltoall: the block for the peer each way (`Coll::alltoallv`'s one step at two ranks:
/// the same message, kind `TAG_ALLTOALL`), the own block copied. In place, blocks of other
/// lengths on the two sides and the real route keep the general path.
fn alltoall_on(sub: usize, x: &Sides, comm_h: usize) -> Option<MpiResult<()>> {
    let (sbuf, scount, sdt, rbuf, rcount, rdt) = x.unpack();
    if in_place(sbuf) {
        return None;
    }
    let (r, block) = plain(rbuf, rcount, rdt)?;
    let (p, len) = plain(sbuf, scount, sdt)?;
    if len != block || !both_outside(r, block) || !both_outside(p, block) {
        return None;
    }
    if crate::core::coll::real::worth(block) {
        return None;
    }
    let (pair, sent) = state::with_hot(|s| {
        let pair = enter(s, sub, comm_h, |_| true)?;
        let out = p.wrapping_add((1 - pair.me) as usize * block);
        // SAFETY: the send buffer's block for the peer, `block` bytes (`plain` of both blocks).
        let sent = unsafe { send(s, sub, &pair, TAG_ALLTOALL, out, block) };
        Some((pair, sent))
    })
    .ok()??;
    if !sent {
        return Some(unsent());
    }
    let me = pair.me as usize;
    // SAFETY: the own blocks of the send and receive buffers, `block` bytes each; `copy`
    // allows an overlap the standard forbids.
    unsafe { std::ptr::copy(p.wrapping_add(me * block), r.wrapping_add(me * block), block) };
    // SAFETY: the peer's block of the receive buffer, `block` bytes.
    Some(unsafe { recv(sub, comm_h, &pair, TAG_ALLTOALL, r.wrapping_add((1 - me) * block), block) })
}

#[cfg(test)]
mod tests {
    use super::{plain, Pair};
    use crate::consts as c;
    use crate::core::coll::step::eager_max;
    use rstest::rstest;

    /// Which buffers the pair path moves as they are: predefined contiguous types, a valid
    /// count and buffer, at most one eager message (`E`: the eager limit in bytes).
    const E: i64 = -1;
    #[rstest]
    #[case(c::MPI_INT, 4, true, Some(16))]
    #[case(c::MPI_BYTE, 0, false, Some(0))]
    #[case(c::MPI_BYTE, E, true, Some(usize::MAX))]
    #[case(c::MPI_BYTE, E - 1, true, None)]
    #[case(c::MPI_INT, -1, true, None)]
    #[case(c::MPI_INT, 2, false, None)]
    #[case(c::MPI_DATATYPE_NULL, 1, true, None)]
    fn plain_buffers(#[case] dt: usize, #[case] count: i64, #[case] real_buf: bool, #[case] bytes: Option<usize>) {
        // E - 1 stands for one byte above the limit.
        let count = if count < E {
            eager_max() as i64 + 1
        } else if count == E {
            eager_max() as i64
        } else {
            count
        };
        let bytes = bytes.map(|b| if b == usize::MAX { eager_max() } else { b });
        let mut mem = vec![0u8; eager_max() + 1];
        let buf = if real_buf { mem.as_mut_ptr() as *const _ } else { std::ptr::null() };
        let got = plain(buf, count, dt);
        assert_eq!(got.map(|(_, n)| n), bytes);
        if let Some((p, n)) = got {
            assert!(!p.is_null());
            if n > 0 {
                assert_eq!(p, mem.as_mut_ptr());
            }
        }
    }

    /// The peer's message: the other rank, the call's tag base with the kind in its low bits.
    #[rstest]
    #[case(0, 1)]
    #[case(1, 0)]
    fn the_peer_message(#[case] me: i32, #[case] src: i32) {
        let pair = Pair {
            ctx: 9,
            me,
            peer_world: 3,
            tag_base: crate::core::coll::tag_base(5),
        };
        let pat = pair.peer_message(crate::core::coll::TAG_BCAST);
        assert_eq!((pat.ctx, pat.src, pat.tag), (9, src, (5 << 4) | 2));
    }
}
