//! `MPI_Status` as the standard ABI lays it out.

use super::consts as c;
use crate::core::error::{err, MpiResult};
use crate::core::request::Status;
use std::os::raw::c_int;

/// Count (64 bits over internal[0..2]) and the cancelled flag (internal[2]) are ours.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct MpiStatus {
    pub source: i32,
    pub tag: i32,
    pub error: i32,
    pub internal: [i32; 5],
}

impl MpiStatus {
    pub fn from(st: &Status) -> MpiStatus {
        MpiStatus {
            source: st.source,
            tag: st.tag,
            error: st.error,
            internal: [(st.bytes & 0xffff_ffff) as i32, (st.bytes >> 32) as i32, st.cancelled as i32, 0, 0],
        }
    }
    pub fn bytes(&self) -> u64 {
        (self.internal[0] as u32 as u64) | ((self.internal[1] as u32 as u64) << 32)
    }
    pub fn cancelled(&self) -> bool {
        self.internal[2] != 0
    }
}

/// Writes `st` to a user status pointer unless it is MPI_STATUS_IGNORE, for calls that complete
/// one operation: they leave the `MPI_ERROR` field as it was (MPI 4.1 section 3.2.5; the error
/// is the call's return value).
///
/// # Safety
/// `p` must be null or point to a writable MPI_Status.
pub unsafe fn store(p: *mut MpiStatus, st: &Status) {
    // MPI_STATUS_IGNORE is the null pointer in the standard ABI.
    if !p.is_null() {
        let error = (*p).error;
        *p = MpiStatus {
            error,
            ..MpiStatus::from(st)
        };
    }
}

/// Writes `st` to entry `i` of a status array unless it is MPI_STATUSES_IGNORE.
///
/// # Safety
/// `p` must be null or point to at least `i + 1` writable statuses.
pub unsafe fn store_at(p: *mut MpiStatus, i: usize, st: &Status) {
    if !p.is_null() {
        *p.add(i) = MpiStatus::from(st);
    }
}

// ---- MPI 4.1 accessors of the public fields ----

/// Reads field `f` of a status into `out`.
///
/// # Safety
/// Both pointers must be null or valid.
unsafe fn get_field(status: *const MpiStatus, out: *mut c_int, f: fn(&MpiStatus) -> i32) -> MpiResult<()> {
    if status.is_null() || out.is_null() {
        return err(c::MPI_ERR_ARG, "null argument");
    }
    *out = f(&*status);
    Ok(())
}

/// Sets a field of a status with `f`.
///
/// # Safety
/// `status` must be null or valid.
unsafe fn set_field(status: *mut MpiStatus, f: impl FnOnce(&mut MpiStatus)) -> MpiResult<()> {
    if status.is_null() {
        return err(c::MPI_ERR_ARG, "null status");
    }
    f(&mut *status);
    Ok(())
}

mpi_fn!(
    MPI_Status_get_source,
    PMPI_Status_get_source,
    |status: *const MpiStatus, source: *mut c_int| errcomm = c::MPI_COMM_WORLD,
    { get_field(status, source, |s| s.source) }
);
mpi_fn!(
    MPI_Status_get_tag,
    PMPI_Status_get_tag,
    |status: *const MpiStatus, tag: *mut c_int| errcomm = c::MPI_COMM_WORLD,
    { get_field(status, tag, |s| s.tag) }
);
mpi_fn!(
    MPI_Status_get_error,
    PMPI_Status_get_error,
    |status: *const MpiStatus, error: *mut c_int| errcomm = c::MPI_COMM_WORLD,
    { get_field(status, error, |s| s.error) }
);
mpi_fn!(
    MPI_Status_set_source,
    PMPI_Status_set_source,
    |status: *mut MpiStatus, source: c_int| errcomm = c::MPI_COMM_WORLD,
    { set_field(status, |s| s.source = source) }
);
mpi_fn!(
    MPI_Status_set_tag,
    PMPI_Status_set_tag,
    |status: *mut MpiStatus, tag: c_int| errcomm = c::MPI_COMM_WORLD,
    { set_field(status, |s| s.tag = tag) }
);
mpi_fn!(
    MPI_Status_set_error,
    PMPI_Status_set_error,
    |status: *mut MpiStatus, error: c_int| errcomm = c::MPI_COMM_WORLD,
    { set_field(status, |s| s.error = error) }
);
