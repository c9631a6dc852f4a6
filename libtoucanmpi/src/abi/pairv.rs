//! Session 25 (lead): the v-forms between the two members of an intra-communicator at one
//! subrank per process on a two-process launch: MPI_Gatherv, MPI_Scatterv, MPI_Allgatherv,
//! MPI_Alltoallv and their nonblocking forms, on the pair paths of their equal-block twins
//! (`collpair` for the blocking calls, `nbcpair` for the nonblocking ones; docs/collectives.md,
//! "Session 25 (lead): the v-forms on the pair paths").
//!
//! At two ranks a v-form moves one block each way at most, as its twin does; only where the
//! blocks lie differs (counts and displacements per rank). The blocking forms send the general
//! path's messages (the kinds of `Coll::gatherv`, `scatterv`, `allgatherv` and `alltoallv`,
//! which serve both forms), so the other rank may take either path, and take them for
//! predefined contiguous types outside the thread-locals, up to the eager limit, as `collpair`.
//! The nonblocking forms send their own messages, so both ranks decide alike from what both
//! know: the byte size of the block each way (the standard makes the sender's and the
//! receiver's type signatures equal), never a rank's layout; any datatype is packed.

use super::coll::{in_place, CArr};
use super::collpair;
use super::handles::DtHeld;
use super::nbcpair::{self, Side};
use crate::core::coll::{step, TAG_ALLGATHER, TAG_ALLTOALL, TAG_GATHER, TAG_SCATTER};
use crate::core::comm::comm_index;
use crate::core::error::MpiResult;
use crate::core::state::{self, State};
use crate::sched;
use std::os::raw::{c_int, c_void};

/// One side of a call: `count` items of datatype `dt` at `buf`.
#[derive(Clone, Copy)]
pub(super) struct Plain {
    pub(super) buf: *const c_void,
    pub(super) count: i64,
    pub(super) dt: usize,
}

/// A v-form side: the buffer, its counts and displacements per rank, the datatype.
#[derive(Clone, Copy)]
pub(super) struct V {
    pub(super) buf: *const c_void,
    pub(super) counts: CArr,
    pub(super) displs: CArr,
    pub(super) dt: usize,
}

/// The pair's two blocks of a v-form buffer of a predefined contiguous type: rank i's block is
/// `len[i]` bytes at `p + off[i]`.
#[derive(Clone, Copy)]
struct Two {
    p: *mut u8,
    off: [usize; 2],
    len: [usize; 2],
}

impl Two {
    /// Rank `i`'s block.
    fn at(&self, i: usize) -> *mut u8 {
        self.p.wrapping_add(self.off[i])
    }
}

/// `buf`'s blocks by `counts` and `displs` (in elements of `dt`) when they may move as they
/// are: a predefined contiguous type, counts and displacements not negative, each block at
/// most one eager message and outside the swapped thread-locals. None: the general path.
///
/// # Safety
/// The arrays have two entries (the standard's contract at two members).
unsafe fn two(buf: *const c_void, counts: CArr, displs: CArr, dt: usize) -> Option<Two> {
    let size = crate::core::datatype::contiguous_size(dt)?;
    // SAFETY: the caller's contract.
    let (c, d) = unsafe { (counts.two()?, displs.two()?) };
    let mut t = Two {
        p: buf as *mut u8,
        off: [0; 2],
        len: [0; 2],
    };
    for i in 0..2 {
        let (n, at) = (usize::try_from(c[i]).ok()?, usize::try_from(d[i]).ok()?);
        t.len[i] = n.checked_mul(size)?;
        t.off[i] = at.checked_mul(size)?;
        if t.len[i] == 0 {
            continue;
        }
        let lo = (buf as usize).checked_add(t.off[i])?;
        if buf.is_null() || t.len[i] > step::eager_max() || sched::swap::in_blocks(lo, lo.checked_add(t.len[i])?) {
            return None;
        }
    }
    Some(t)
}

/// Under the state lock: this rank in communicator `comm_h` when it is an intra-communicator
/// of two members (a v-form's arrays then have two entries); None otherwise.
fn rank_of_two(s: &State, sub: usize, comm_h: usize) -> Option<usize> {
    let cm = s.locals.get(sub)?.comms.get(comm_index(comm_h)?)?.as_ref()?;
    (!cm.is_inter() && cm.group.ranks.len() == 2).then_some(cm.rank as usize)
}

/// MPI_Gatherv's (`gather`) and MPI_Scatterv's blocking pair path: the rank away from the
/// root sends its block (Gatherv) or receives it (Scatterv); the root moves its own block
/// (none in place) and receives (Gatherv) or sends (Scatterv) the other's.
pub(super) fn rooted(one: Plain, many: V, root: c_int, comm_h: usize, gather: bool) -> Option<MpiResult<()>> {
    let Plain {
        buf: one,
        count: one_count,
        dt: one_dt,
    } = one;
    let V {
        buf: many,
        counts,
        displs,
        dt: many_dt,
    } = many;
    let sub = collpair::on()?;
    // Away from the root only the one side is read, and MPI_IN_PLACE is an error there.
    let one_side = if in_place(one) {
        None
    } else {
        Some(collpair::plain(one, one_count, one_dt)?)
    };
    let kind = if gather { TAG_GATHER } else { TAG_SCATTER };
    let mut blocks = None;
    let (pair, sent) = state::with_hot(|s| {
        let pair = collpair::enter(s, sub, comm_h, |me| {
            if !(0..2).contains(&root) {
                return false;
            }
            if me != root {
                return one_side.is_some();
            }
            // SAFETY: at the root the arrays have an entry per member: two (`enter` checked).
            let Some(t) = (unsafe { two(many, counts, displs, many_dt) }) else {
                return false;
            };
            if one_side.is_some_and(|(_, l)| l != t.len[me as usize]) {
                return false;
            }
            blocks = Some(t);
            true
        })?;
        let peer = 1 - pair.me as usize;
        let sent = match (blocks, one_side) {
            // SAFETY: the root's block for the peer, `len[peer]` bytes (`two`).
            (Some(t), _) if !gather => unsafe { collpair::send(s, sub, &pair, kind, t.at(peer), t.len[peer]) },
            // SAFETY: the send buffer holds its bytes (`plain`).
            (None, Some((p, len))) if gather => unsafe { collpair::send(s, sub, &pair, kind, p, len) },
            _ => false,
        };
        Some((pair, sent))
    })
    .ok()??;
    let (me, peer) = (pair.me as usize, 1 - pair.me as usize);
    match (blocks, one_side) {
        // Away from the root: Gatherv's send went, or Scatterv's block comes.
        (None, _) if gather => Some(if sent { Ok(()) } else { collpair::unsent() }),
        // SAFETY: the receive buffer, its bytes (`plain`).
        (None, Some((r, len))) => Some(unsafe { collpair::recv(sub, comm_h, &pair, kind, r, len) }),
        (None, None) => Some(collpair::unsent()),
        (Some(_), _) if !gather && !sent => Some(collpair::unsent()),
        (Some(t), own) => {
            if let Some((p, len)) = own {
                // SAFETY: the root's one side and its own block, `len` bytes each (`plain`,
                // `two`); `copy` allows an overlap the standard forbids.
                unsafe {
                    if gather {
                        std::ptr::copy(p, t.at(me), len)
                    } else {
                        std::ptr::copy(t.at(me), p, len)
                    }
                };
            }
            if !gather {
                return Some(Ok(()));
            }
            // SAFETY: the peer's block of the root's receive buffer, `len[peer]` bytes (`two`).
            Some(unsafe { collpair::recv(sub, comm_h, &pair, kind, t.at(peer), t.len[peer]) })
        }
    }
}

/// MPI_Allgatherv's blocking pair path: the own block to the peer (in place: from its slot),
/// moved into the own slot, and the peer's received into its slot.
pub(super) fn allgatherv(send: Plain, recv: V, comm_h: usize) -> Option<MpiResult<()>> {
    let Plain {
        buf: sbuf,
        count: scount,
        dt: sdt,
    } = send;
    let V {
        buf: rbuf,
        counts,
        displs,
        dt: rdt,
    } = recv;
    let sub = collpair::on()?;
    let send_side = if in_place(sbuf) {
        None
    } else {
        Some(collpair::plain(sbuf, scount, sdt)?)
    };
    let mut slots = None;
    let (pair, sent) = state::with_hot(|s| {
        let pair = collpair::enter(s, sub, comm_h, |me| {
            // SAFETY: the arrays have an entry per member, two (`enter` checked).
            slots = unsafe { two(rbuf, counts, displs, rdt) }.filter(|t| send_side.is_none_or(|(_, l)| l == t.len[me as usize]));
            slots.is_some()
        })?;
        let (t, me) = (slots?, pair.me as usize);
        let out = send_side.map_or(t.at(me), |(p, _)| p);
        // SAFETY: `out` holds the own block's bytes (the send buffer, or in place the slot).
        let sent = unsafe { collpair::send(s, sub, &pair, TAG_ALLGATHER, out, t.len[me]) };
        Some((pair, sent))
    })
    .ok()??;
    let t = slots?;
    if !sent {
        return Some(collpair::unsent());
    }
    let (me, peer) = (pair.me as usize, 1 - pair.me as usize);
    if let Some((p, len)) = send_side {
        // SAFETY: the send buffer and the own slot, `len` bytes each; `copy` allows an overlap
        // the standard forbids.
        unsafe { std::ptr::copy(p, t.at(me), len) };
    }
    // SAFETY: the peer's slot, `len[peer]` bytes (`two`).
    Some(unsafe { collpair::recv(sub, comm_h, &pair, TAG_ALLGATHER, t.at(peer), t.len[peer]) })
}

/// MPI_Alltoallv's blocking pair path: the send block for the peer each way, the own one
/// copied (of equal length on both sides; otherwise, and in place, the general path).
pub(super) fn alltoallv(send: V, recv: V, comm_h: usize) -> Option<MpiResult<()>> {
    let V {
        buf: sbuf,
        counts: scounts,
        displs: sdispls,
        dt: sdt,
    } = send;
    let V {
        buf: rbuf,
        counts: rcounts,
        displs: rdispls,
        dt: rdt,
    } = recv;
    if in_place(sbuf) {
        return None;
    }
    let sub = collpair::on()?;
    let mut blocks = None;
    let (pair, sent) = state::with_hot(|s| {
        let pair = collpair::enter(s, sub, comm_h, |me| {
            // SAFETY: the arrays have an entry per member, two (`enter` checked).
            blocks = unsafe { two(sbuf, scounts, sdispls, sdt).zip(two(rbuf, rcounts, rdispls, rdt)) }
                .filter(|(snd, rcv)| snd.len[me as usize] == rcv.len[me as usize]);
            blocks.is_some()
        })?;
        let ((snd, _), peer) = (blocks?, 1 - pair.me as usize);
        // SAFETY: the send buffer's block for the peer, `len[peer]` bytes (`two`).
        let sent = unsafe { collpair::send(s, sub, &pair, TAG_ALLTOALL, snd.at(peer), snd.len[peer]) };
        Some((pair, sent))
    })
    .ok()??;
    let (snd, rcv) = blocks?;
    if !sent {
        return Some(collpair::unsent());
    }
    let (me, peer) = (pair.me as usize, 1 - pair.me as usize);
    // SAFETY: the own blocks of both buffers, `len[me]` bytes each; `copy` allows an overlap
    // the standard forbids.
    unsafe { std::ptr::copy(snd.at(me), rcv.at(me), snd.len[me]) };
    // SAFETY: the peer's block of the receive buffer, `len[peer]` bytes (`two`).
    Some(unsafe { collpair::recv(sub, comm_h, &pair, TAG_ALLTOALL, rcv.at(peer), rcv.len[peer]) })
}

/// A v-form buffer's two blocks of any committed datatype (displacements in its extent),
/// the datatype looked up once.
struct Blocks {
    buf: *mut u8,
    counts: [i64; 2],
    displs: [i64; 2],
    dt: DtHeld,
}

impl Blocks {
    /// # Safety
    /// The arrays have two entries.
    unsafe fn of(buf: *const c_void, counts: CArr, displs: CArr, dt: usize) -> Option<Blocks> {
        // SAFETY: the caller's contract.
        let (counts, displs) = unsafe { (counts.two()?, displs.two()?) };
        Some(Blocks {
            buf: buf as *mut u8,
            counts,
            displs,
            dt: DtHeld::of(dt).ok()?,
        })
    }

    /// Rank `i`'s block: a count that is not negative, a buffer when there are bytes (as
    /// `Side::of` checks).
    fn side(&self, i: usize) -> Option<Side> {
        let count = usize::try_from(self.counts[i]).ok()?;
        if self.buf.is_null() && count > 0 && self.dt.size > 0 {
            return None;
        }
        Some(Side {
            ptr: self.buf.wrapping_offset((self.displs[i] as isize).wrapping_mul(self.dt.extent)),
            count,
            dt: self.dt.clone(),
        })
    }
}

/// MPI_Igatherv's (`gather`) and MPI_Iscatterv's nonblocking pair path, as `nbcpair::irooted`
/// with the root's blocks laid out by counts and displacements. Both ranks decide on the
/// bytes of the block that moves (the non-root's one side, the root's block for it).
///
/// # Safety
/// The buffers, arrays and `req` come from the program (valid until the request completes).
pub(super) unsafe fn irooted(one: Plain, many: V, root: c_int, comm_h: usize, gather: bool, req: *mut usize) -> Option<MpiResult<()>> {
    let Plain {
        buf: one,
        count: one_count,
        dt: one_dt,
    } = one;
    let V {
        buf: many,
        counts,
        displs,
        dt: many_dt,
    } = many;
    if !nbcpair::on() || req.is_null() || !(0..2).contains(&root) {
        return None;
    }
    let kind = if gather { TAG_GATHER } else { TAG_SCATTER };
    let sub = sched::rank();
    let one_side = if in_place(one) { None } else { Side::of(one, one_count, one_dt) };
    let got = state::with_hot(|s| {
        let me = rank_of_two(s, sub, comm_h)?;
        // The root's arrays are read only at the root (elsewhere they may be anything).
        let many = if me as c_int == root {
            // SAFETY: at the root the arrays have an entry per member: two.
            let b = unsafe { Blocks::of(many, counts, displs, many_dt) }?;
            let (own, other) = (b.side(me)?, b.side(1 - me)?);
            if !nbcpair::eager(other.bytes()) || one_side.as_ref().is_some_and(|o| o.bytes() != own.bytes()) {
                return None;
            }
            Some((own, other))
        } else {
            if !nbcpair::eager(one_side.as_ref()?.bytes()) {
                return None;
            }
            None
        };
        let pair = nbcpair::enter(s, sub, comm_h)?;
        let Some((own, other)) = many else {
            let b = one_side.as_ref()?;
            if gather {
                // SAFETY: the program's send buffer, readable now.
                return Some(unsafe { nbcpair::send(s, sub, &pair, kind, b) }.then(|| s.locals[sub].reqs.done_send()));
            }
            let t = Side {
                ptr: b.ptr,
                count: b.count,
                dt: b.dt.clone(),
            };
            // SAFETY: the program's receive buffer, valid until completion.
            return Some(Some(unsafe { nbcpair::post_side(s, sub, comm_h, &pair, kind, t) }));
        };
        if let Some(b) = &one_side {
            // SAFETY: the program's buffers: the own block and the one side.
            unsafe {
                if gather {
                    nbcpair::copy(b, &own)
                } else {
                    nbcpair::copy(&own, b)
                }
            };
        }
        if gather {
            // SAFETY: the peer's block of the root's receive buffer, valid until completion.
            return Some(Some(unsafe { nbcpair::post_side(s, sub, comm_h, &pair, kind, other) }));
        }
        // SAFETY: the peer's block of the root's send buffer, readable now.
        Some(unsafe { nbcpair::send(s, sub, &pair, kind, &other) }.then(|| s.locals[sub].reqs.done_send()))
    })
    .ok()??;
    // SAFETY: checked not null.
    Some(got.map_or_else(nbcpair::unsent, |id| unsafe { nbcpair::give(req, id) }))
}

/// MPI_Iallgatherv's nonblocking pair path: decided on the larger of the two blocks' bytes
/// (every rank has the same receive counts in bytes).
///
/// # Safety
/// As `irooted`.
pub(super) unsafe fn iallgatherv(send: Plain, recv: V, comm_h: usize, req: *mut usize) -> Option<MpiResult<()>> {
    let Plain {
        buf: sbuf,
        count: scount,
        dt: sdt,
    } = send;
    let V {
        buf: rbuf,
        counts,
        displs,
        dt: rdt,
    } = recv;
    if !nbcpair::on() || req.is_null() {
        return None;
    }
    let send_side = if in_place(sbuf) { None } else { Some(Side::of(sbuf, scount, sdt)?) };
    let sub = sched::rank();
    let got = state::with_hot(|s| {
        let me = rank_of_two(s, sub, comm_h)?;
        // SAFETY: the arrays have an entry per member: two.
        let b = unsafe { Blocks::of(rbuf, counts, displs, rdt) }?;
        let slots = [b.side(0)?, b.side(1)?];
        if !nbcpair::eager(slots[0].bytes()) || !nbcpair::eager(slots[1].bytes()) {
            return None;
        }
        if send_side.as_ref().is_some_and(|o| o.bytes() != slots.get(me).and_then(Side::bytes)) {
            return None;
        }
        let pair = nbcpair::enter(s, sub, comm_h)?;
        let (me, peer) = (pair.me as usize, 1 - pair.me as usize);
        let out = send_side.as_ref().unwrap_or(&slots[me]);
        // SAFETY: the program's buffers, readable now.
        if !unsafe { nbcpair::send(s, sub, &pair, TAG_ALLGATHER, out) } {
            return Some(None);
        }
        if let Some(o) = &send_side {
            // SAFETY: the program's send buffer and own slot.
            unsafe { nbcpair::copy(o, &slots[me]) };
        }
        let [s0, s1] = slots;
        let t = if peer == 0 { s0 } else { s1 };
        // SAFETY: the peer's slot of the program's receive buffer, valid until completion.
        Some(Some(unsafe { nbcpair::post_side(s, sub, comm_h, &pair, TAG_ALLGATHER, t) }))
    })
    .ok()??;
    // SAFETY: checked not null.
    Some(got.map_or_else(nbcpair::unsent, |id| unsafe { nbcpair::give(req, id) }))
}

/// MPI_Ialltoallv's nonblocking pair path: decided on the larger of the bytes each way (this
/// rank's send to the peer and receive from it are the peer's receive and send).
///
/// # Safety
/// As `irooted`.
pub(super) unsafe fn ialltoallv(send: V, recv: V, comm_h: usize, req: *mut usize) -> Option<MpiResult<()>> {
    let V {
        buf: sbuf,
        counts: scounts,
        displs: sdispls,
        dt: sdt,
    } = send;
    let V {
        buf: rbuf,
        counts: rcounts,
        displs: rdispls,
        dt: rdt,
    } = recv;
    if !nbcpair::on() || req.is_null() {
        return None;
    }
    let sub = sched::rank();
    let got = state::with_hot(|s| {
        let me = rank_of_two(s, sub, comm_h)?;
        let peer = 1 - me;
        // SAFETY: the arrays have an entry per member: two.
        let r = unsafe { Blocks::of(rbuf, rcounts, rdispls, rdt) }?;
        // In place the data to send is in the receive buffer, laid out as it.
        let snd = if in_place(sbuf) {
            None
        } else {
            // SAFETY: as above.
            Some(unsafe { Blocks::of(sbuf, scounts, sdispls, sdt) }?)
        };
        let (r_own, r_peer) = (r.side(me)?, r.side(peer)?);
        let (s_own, s_peer) = match &snd {
            Some(b) => (Some(b.side(me)?), b.side(peer)?),
            None => (None, r.side(peer)?),
        };
        if !nbcpair::eager(r_peer.bytes()) || !nbcpair::eager(s_peer.bytes()) {
            return None;
        }
        if s_own.as_ref().is_some_and(|o| o.bytes() != r_own.bytes()) {
            return None;
        }
        let pair = nbcpair::enter(s, sub, comm_h)?;
        // In place the peer's block is sent before the receive into it is posted.
        // SAFETY: the program's buffers, readable now.
        if !unsafe { nbcpair::send(s, sub, &pair, TAG_ALLTOALL, &s_peer) } {
            return Some(None);
        }
        if let Some(o) = &s_own {
            // SAFETY: the own blocks of the program's buffers.
            unsafe { nbcpair::copy(o, &r_own) };
        }
        // SAFETY: the peer's block of the program's receive buffer, valid until completion.
        Some(Some(unsafe { nbcpair::post_side(s, sub, comm_h, &pair, TAG_ALLTOALL, r_peer) }))
    })
    .ok()??;
    // SAFETY: checked not null.
    Some(got.map_or_else(nbcpair::unsent, |id| unsafe { nbcpair::give(req, id) }))
}

#[cfg(test)]
mod tests {
    use super::two;
    use crate::abi::coll::CArr;
    use crate::consts as c;
    use crate::core::coll::step::eager_max;
    use rstest::rstest;

    /// The blocks of an int buffer by counts and displacements; refusals for negative
    /// entries, null arrays and blocks over the eager limit.
    #[rstest]
    #[case([2, 3], [3, 0], Some(([12, 0], [8, 12])))]
    #[case([0, 1], [0, 5], Some(([0, 20], [0, 4])))]
    #[case([-1, 1], [0, 1], None)]
    #[case([1, 1], [0, -1], None)]
    fn blocks(#[case] counts: [i32; 2], #[case] displs: [i32; 2], #[case] want: Option<([usize; 2], [usize; 2])>) {
        let mem = [0i32; 16];
        // SAFETY: two entries each.
        let t = unsafe {
            two(
                mem.as_ptr().cast(),
                CArr::of(counts.as_ptr()),
                CArr::of(displs.as_ptr()),
                c::MPI_INT,
            )
        };
        assert_eq!(t.map(|t| (t.off, t.len)), want);
    }

    #[rstest]
    #[case(true)]
    #[case(false)]
    fn refusals(#[case] null: bool) {
        let mem = [0u8; 8];
        let big = [eager_max() as i64 + 1, 0];
        let z = [0i64, 0];
        // SAFETY: two entries each (or null, refused before reading).
        let t = unsafe {
            if null {
                two(
                    mem.as_ptr().cast(),
                    CArr::of(std::ptr::null::<i64>()),
                    CArr::of(z.as_ptr()),
                    c::MPI_BYTE,
                )
            } else {
                two(mem.as_ptr().cast(), CArr::of(big.as_ptr()), CArr::of(z.as_ptr()), c::MPI_BYTE)
            }
        };
        assert!(t.is_none());
    }
}
