//! `MPI_Status` as the standard ABI lays it out.

use crate::core::request::Status;

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
