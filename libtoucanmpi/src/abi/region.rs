//! `Toucan_Region` (toucan.h): hints that mark receive / send / compute regions.
//! Hints never change results. Today the scheduler uses one: when a rank enters a compute
//! region it first lets its ready siblings run, so their receives and sends are posted
//! before anyone computes (the paper's receive-send-compute pipeline, first step).

use super::consts as c;
use std::os::raw::c_int;

const RECEIVE: c_int = 1;
const SEND: c_int = 2;
const COMPUTE: c_int = 3;
const END: c_int = 4;

/// # Safety
/// Callable from any rank; takes no pointers.
#[no_mangle]
pub unsafe extern "C" fn PToucan_Region(kind: c_int) -> c_int {
    match kind {
        COMPUTE => {
            crate::sched::yield_now();
            c::MPI_SUCCESS
        }
        RECEIVE | SEND | END => c::MPI_SUCCESS,
        _ => c::MPI_ERR_ARG,
    }
}

/// # Safety
/// As `PToucan_Region`.
#[no_mangle]
pub unsafe extern "C" fn Toucan_Region(kind: c_int) -> c_int {
    PToucan_Region(kind)
}
