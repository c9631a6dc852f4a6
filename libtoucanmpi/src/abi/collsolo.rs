//! The blocking collectives' fast path at one subrank per process (`core::coll::solo`): a
//! call whose buffers are predefined contiguous types outside the program's thread-locals,
//! on a communicator whose twin is made and idle with its ranks in process order, is checked,
//! numbered and handed to the real MPI's blocking collective under one state lock, with the
//! user's buffers as they are. Every None sends the call down the general path, which makes
//! the same real call (packing where it must) or reports the error: so the choice of the real
//! collective never depends on what only one process sees.

use super::coll::{in_place, Sides};
use crate::core::coll::op::{self, OpKind};
use crate::core::coll::real::{real_op, real_type};
use crate::core::coll::solo::{self, Turn};
use crate::core::comm::CommRef;
use crate::core::error::MpiResult;
use crate::core::state;
use crate::sched;
use crate::transport::{CollMem, RealColl};
use std::os::raw::{c_int, c_void};

/// The fast paths of the blocking calls through the real MPI's own collectives, each tried
/// only when they are on (`solo::on`, read once). Session 21 (coll14): the test is inlined
/// into each export through these thin wrappers, so the default launch no longer pays a call
/// into this module's bodies only to find them off (~28 instructions of a V=1 Bcast).
#[inline(always)]
pub(super) fn barrier(comm_h: usize) -> Option<MpiResult<()>> {
    solo::on().then(|| barrier_on(comm_h)).flatten()
}

/// MPI_Bcast's (`barrier`).
#[inline(always)]
pub(super) fn bcast(buf: *mut c_void, count: i64, dt: usize, root: c_int, comm_h: usize) -> Option<MpiResult<()>> {
    solo::on().then(|| bcast_on(buf, count, dt, root, comm_h)).flatten()
}

/// MPI_Reduce's (`root`) and MPI_Allreduce's (`barrier`).
#[inline(always)]
pub(super) fn reduce(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    count: i64,
    dt: usize,
    op_h: usize,
    root: Option<c_int>,
    comm_h: usize,
) -> Option<MpiResult<()>> {
    solo::on().then(|| reduce_on(sbuf, rbuf, count, dt, op_h, root, comm_h)).flatten()
}

/// MPI_Allgather's and MPI_Alltoall's (`barrier`).
#[inline(always)]
pub(super) fn exchange(x: &Sides, comm_h: usize, all: bool) -> Option<MpiResult<()>> {
    solo::on().then(|| exchange_on(x, comm_h, all)).flatten()
}

/// MPI_Gather's and MPI_Scatter's (`barrier`).
#[inline(always)]
pub(super) fn rooted(x: &Sides, root: c_int, comm_h: usize, gather: bool) -> Option<MpiResult<()>> {
    solo::on().then(|| rooted_on(x, root, comm_h, gather)).flatten()
}

/// Bytes of `count` items of the predefined contiguous type `dt` at `buf` when they may go to
/// the real MPI as they are (valid arguments, outside the swapped thread-locals, which hold
/// the running subrank's values only while it runs). None: the general path.
#[inline(always)]
fn as_bytes(buf: *const c_void, count: i64, dt: usize) -> Option<usize> {
    let size = crate::core::datatype::contiguous_size(dt)?;
    if count < 0 || (buf.is_null() && count > 0) {
        return None;
    }
    let len = count as usize * size;
    if len != 0 && sched::swap::in_blocks(buf as usize, buf as usize + len) {
        return None;
    }
    Some(len)
}

/// Bytes of `count` items of the predefined contiguous type `dt`.
#[inline(always)]
fn type_bytes(count: i64, dt: usize) -> Option<usize> {
    Some(usize::try_from(count).ok()? * crate::core::datatype::contiguous_size(dt)?)
}

/// The call's turn (`solo::begin`) when `check` accepts the caller's view of the
/// communicator.
#[inline(always)]
fn turn(comm_h: usize, check: impl FnOnce(&CommRef) -> bool) -> Option<Turn> {
    let sub = sched::rank();
    state::with_hot(|s| solo::begin(s, sub, comm_h, check)).ok().flatten()
}

/// Makes the turn's real call.
fn call(t: Turn, what: RealColl, mem: CollMem) -> Option<MpiResult<()>> {
    // SAFETY: the memory is the caller's buffers, which MPI requires to stay valid until the
    // blocking call returns; the sizes were checked against the arguments.
    Some(unsafe { solo::call(t, what, &mem) })
}

/// MPI_Barrier.
fn barrier_on(comm_h: usize) -> Option<MpiResult<()>> {
    let t = turn(comm_h, |_| true)?;
    call(t, RealColl::Barrier, CollMem::at(std::ptr::null(), std::ptr::null_mut(), 0))
}

/// MPI_Bcast.
fn bcast_on(buf: *mut c_void, count: i64, dt: usize, root: c_int, comm_h: usize) -> Option<MpiResult<()>> {
    let len = as_bytes(buf, count, dt)?;
    let t = turn(comm_h, |cm| (0..cm.size()).contains(&root))?;
    let p = buf as *mut u8;
    call(t, RealColl::Bcast { root: root as usize }, CollMem::at(p, p, len))
}

/// MPI_Reduce (`root` Some) or MPI_Allreduce with a predefined operation on a predefined
/// type the standard allows it on.
fn reduce_on(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    count: i64,
    dt: usize,
    op_h: usize,
    root: Option<c_int>,
    comm_h: usize,
) -> Option<MpiResult<()>> {
    let o = OpKind::from_handle(op_h)?;
    let b = crate::core::datatype::lookup(dt).ok()?.basic?;
    if b.handle() != dt || !op::valid_strict(o, b) {
        return None;
    }
    let (rop, rty) = (real_op(o)?, real_type(b)?);
    if !in_place(sbuf) {
        as_bytes(sbuf, count, dt)?;
    }
    let mut at_root = true;
    let t = turn(comm_h, |cm| {
        if let Some(r) = root {
            at_root = r == cm.rank;
            // Session 17: MPICH 4.0.2's blocking MPI_Reduce crashes in place at a root other
            // than process 0 (from 1024 ints): the general path gives it a copy.
            if !(0..cm.size()).contains(&r) || (!at_root && in_place(sbuf)) || (at_root && r != 0 && in_place(sbuf)) {
                return false;
            }
        }
        // The receive buffer matters at the root (everywhere for an allreduce).
        !at_root || as_bytes(rbuf, count, dt).is_some()
    })?;
    let send = if in_place(sbuf) { rbuf as *const u8 } else { sbuf as *const u8 };
    let recv = if at_root { rbuf as *mut u8 } else { std::ptr::null_mut() };
    let count = count as usize;
    let what = match root {
        Some(r) => RealColl::Reduce {
            root: r as usize,
            op: rop,
            ty: rty,
            count,
        },
        None => RealColl::Allreduce { op: rop, ty: rty, count },
    };
    call(t, what, CollMem::at(send, recv, 0))
}

/// MPI_Allgather (`all`) or MPI_Alltoall with blocks of the same bytes on both sides.
fn exchange_on(x: &Sides, comm_h: usize, all: bool) -> Option<MpiResult<()>> {
    let (sbuf, scount, sdt, rbuf, rcount, rdt) = x.unpack();
    let bytes = type_bytes(rcount, rdt)?;
    if !in_place(sbuf) && type_bytes(scount, sdt)? != bytes {
        return None;
    }
    let mut n = 0usize;
    let t = turn(comm_h, |cm| {
        n = cm.size() as usize;
        // The whole receive buffer (and an alltoall's send buffer) as one block.
        as_bytes(rbuf, rcount * n as i64, rdt).is_some()
            && (in_place(sbuf) || as_bytes(sbuf, scount * if all { 1 } else { n as i64 }, sdt).is_some())
    })?;
    let send = if in_place(sbuf) { rbuf as *const u8 } else { sbuf as *const u8 };
    let what = if all {
        RealColl::Allgather { bytes }
    } else {
        RealColl::Alltoall { bytes }
    };
    call(t, what, CollMem::at(send, rbuf as *mut u8, n * bytes))
}

/// MPI_Gather (`gather`) or MPI_Scatter with blocks of the same bytes on both sides.
fn rooted_on(x: &Sides, root: c_int, comm_h: usize, gather: bool) -> Option<MpiResult<()>> {
    let (sbuf, scount, sdt, rbuf, rcount, rdt) = x.unpack();
    // The side with the blocks, the side with one block (MPI_IN_PLACE is the root's only).
    let (many, mcount, mdt, one, ocount, odt) = if gather {
        (rbuf as *const c_void, rcount, rdt, sbuf, scount, sdt)
    } else {
        (sbuf, scount, sdt, rbuf as *const c_void, rcount, rdt)
    };
    let (mut at_root, mut n) = (false, 0usize);
    let mut bytes = 0usize;
    let t = turn(comm_h, |cm| {
        if !(0..cm.size()).contains(&root) {
            return false;
        }
        at_root = root == cm.rank;
        n = cm.size() as usize;
        if !at_root {
            // Only the own block matters away from the root.
            return !in_place(one)
                && as_bytes(one, ocount, odt).is_some_and(|b| {
                    bytes = b;
                    true
                });
        }
        let Some(b) = type_bytes(mcount, mdt) else { return false };
        bytes = b;
        as_bytes(many, mcount * n as i64, mdt).is_some() && (in_place(one) || as_bytes(one, ocount, odt) == Some(b))
    })?;
    let root = root as usize;
    let mem = if gather {
        let send = if at_root && in_place(sbuf) {
            rbuf as *const u8
        } else {
            sbuf as *const u8
        };
        CollMem::at(send, if at_root { rbuf as *mut u8 } else { std::ptr::null_mut() }, n * bytes)
    } else {
        let recv = if at_root && in_place(rbuf) {
            std::ptr::null_mut()
        } else {
            rbuf as *mut u8
        };
        CollMem {
            send: if at_root { sbuf as *const u8 } else { std::ptr::null() },
            recv,
            bytes: n * bytes,
            keep: Vec::new(),
        }
    };
    let what = if gather {
        RealColl::Gather { root, bytes }
    } else {
        RealColl::Scatter { root, bytes }
    };
    call(t, what, mem)
}
