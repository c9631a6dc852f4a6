//! Handle values <-> objects, and the argument checks every call shares.

use super::consts as c;
use crate::core::coll::op::OpKind;
pub use crate::core::comm::{comm_handle, comm_index};
use crate::core::comm::{CommRef, GROUP_HANDLE_BASE};
use crate::core::datatype::{self, DtRef};
use crate::core::error::{err, MpiError, MpiResult};
use crate::core::state::{self, State};
use crate::sched;

pub fn group_index(h: usize) -> Option<usize> {
    (GROUP_HANDLE_BASE..GROUP_HANDLE_BASE + 0x1000_0000)
        .contains(&h)
        .then(|| h - GROUP_HANDLE_BASE)
}

/// The running subrank, or an error when called outside one.
pub fn me() -> MpiResult<usize> {
    let s = sched::rank();
    if s == usize::MAX {
        return err(c::MPI_ERR_OTHER, "called outside an MPI rank (from a thread Toucan did not start?)");
    }
    Ok(s)
}

/// The subrank and its state must be between MPI_Init and MPI_Finalize.
#[inline]
pub fn active(s: &State, sub: usize) -> MpiResult<()> {
    let l = &s.locals[sub];
    if !l.initialized || l.finalized {
        return not_active(l.initialized);
    }
    Ok(())
}

#[cold]
#[inline(never)]
fn not_active(initialized: bool) -> MpiResult<()> {
    if initialized {
        err(c::MPI_ERR_OTHER, "MPI was already finalized")
    } else {
        err(c::MPI_ERR_OTHER, "MPI is not initialized (call MPI_Init first)")
    }
}

/// Looks up communicator `h` of the running subrank.
pub fn comm(h: usize) -> MpiResult<(usize, CommRef)> {
    let sub = me()?;
    let r = state::with(|s| {
        active(s, sub)?;
        comm_in(s, sub, h).cloned()
    });
    match r {
        Ok(x) => Ok((sub, x?)),
        Err(_) => err(c::MPI_ERR_OTHER, "MPI is not initialized (call MPI_Init first)"),
    }
}

#[inline]
pub fn comm_in(s: &State, sub: usize, h: usize) -> MpiResult<&CommRef> {
    match comm_index(h).and_then(|i| s.locals[sub].comms.get(i)) {
        Some(Some(cm)) => Ok(cm),
        _ => bad_comm(h),
    }
}

#[cold]
#[inline(never)]
fn bad_comm<'a>(h: usize) -> MpiResult<&'a CommRef> {
    if h == c::MPI_COMM_NULL {
        return err(c::MPI_ERR_COMM, "MPI_COMM_NULL is not a valid communicator");
    }
    err(
        c::MPI_ERR_COMM,
        format!("invalid communicator handle {h:#x} (freed, or not a communicator)"),
    )
}

pub fn dtype(h: usize) -> MpiResult<DtRef> {
    datatype::held::committed(h)
}

/// A datatype held for one call (`core::datatype::held`).
pub use crate::core::datatype::held::Held as DtHeld;

pub fn count(n: i64) -> MpiResult<usize> {
    if n < 0 {
        return err(c::MPI_ERR_COUNT, format!("negative count {n}"));
    }
    Ok(n as usize)
}

pub fn buffer(p: *const u8, n: usize, d: &DtRef) -> MpiResult<()> {
    if p.is_null() && n > 0 && d.size > 0 && d.lb == 0 {
        return err(c::MPI_ERR_BUFFER, format!("null buffer with count {n}"));
    }
    Ok(())
}

/// A destination rank (or MPI_PROC_NULL).
#[inline]
pub fn dest(cm: &CommRef, r: i32) -> MpiResult<()> {
    if r == c::MPI_PROC_NULL || (0..cm.peer_size()).contains(&r) {
        Ok(())
    } else {
        bad_rank(cm, r)
    }
}

#[cold]
#[inline(never)]
fn bad_rank(cm: &CommRef, r: i32) -> MpiResult<()> {
    err(c::MPI_ERR_RANK, format!("invalid rank {r} (communicator size {})", cm.peer_size()))
}

/// A source rank (or MPI_ANY_SOURCE / MPI_PROC_NULL).
#[inline]
pub fn source(cm: &CommRef, r: i32) -> MpiResult<()> {
    if r == c::MPI_ANY_SOURCE {
        Ok(())
    } else {
        dest(cm, r)
    }
}

pub fn root(cm: &CommRef, r: i32) -> MpiResult<()> {
    if (0..cm.size()).contains(&r) {
        Ok(())
    } else {
        err(c::MPI_ERR_ROOT, format!("invalid root {r} (communicator size {})", cm.size()))
    }
}

/// The user tag bound we support (and report as MPI_TAG_UB) when our matching carries the tag.
pub const TAG_UB: i32 = i32::MAX;

/// The user tag bound of this run: `TAG_UB`, or the real MPI's when point-to-point passes
/// through to it (`core::p2p::direct`).
#[inline]
pub fn tag_ub() -> i32 {
    crate::core::p2p::direct::tag_ub()
}

#[inline]
pub fn send_tag(t: i32) -> MpiResult<()> {
    if (0..=tag_ub()).contains(&t) {
        Ok(())
    } else {
        bad_tag(t)
    }
}

#[cold]
#[inline(never)]
fn bad_tag(t: i32) -> MpiResult<()> {
    err(c::MPI_ERR_TAG, format!("invalid tag {t} (must be 0..{})", tag_ub()))
}

#[inline]
pub fn recv_tag(t: i32) -> MpiResult<()> {
    if t == c::MPI_ANY_TAG {
        Ok(())
    } else {
        send_tag(t)
    }
}

pub fn op(h: usize) -> MpiResult<OpKind> {
    if h == c::MPI_OP_NULL {
        return err(c::MPI_ERR_OP, "MPI_OP_NULL is not a valid operation");
    }
    OpKind::from_handle(h).ok_or_else(|| MpiError::new(c::MPI_ERR_OP, format!("invalid operation handle {h:#x}")))
}

/// Reads a C int array of length n.
///
/// # Safety
/// `p` must point to `n` ints (or be null with n = 0).
pub unsafe fn ints<'a>(p: *const i32, n: usize) -> MpiResult<&'a [i32]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return err(c::MPI_ERR_ARG, "null array argument");
    }
    Ok(std::slice::from_raw_parts(p, n))
}

/// Writes `v` through the output argument `p` (MPI_ERR_ARG when it is null).
///
/// # Safety
/// `p` must be null or valid for a write of `T`.
pub unsafe fn put<T>(p: *mut T, v: T, what: &str) -> MpiResult<()> {
    if p.is_null() {
        return err(c::MPI_ERR_ARG, format!("null {what} argument"));
    }
    *p = v;
    Ok(())
}

/// The output argument `p` as a reference (MPI_ERR_ARG when it is null), for code that
/// writes it in several steps.
///
/// # Safety
/// `p` must be null or valid for reads and writes of `T` for the returned lifetime.
pub unsafe fn out<'a, T>(p: *mut T, what: &str) -> MpiResult<&'a mut T> {
    if p.is_null() {
        return err(c::MPI_ERR_ARG, format!("null {what} argument"));
    }
    Ok(&mut *p)
}
