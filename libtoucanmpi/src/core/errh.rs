//! Error handlers: the predefined ones and those the application creates.

use crate::abi::consts as c;
use crate::sched::lock::Lock;
use std::os::raw::c_int;

/// `MPI_Comm_errhandler_function`: called with the communicator and the error code.
pub type ErrFn = unsafe extern "C" fn(*mut usize, *mut c_int, ...);

/// Handles of user error handlers start here (predefined ones are below 0x200).
pub const USER_BASE: usize = 0x4000_0000;

static HANDLERS: Lock<Vec<ErrFn>> = Lock::new(Vec::new());

/// Registers a user error handler; returns its handle.
pub fn create(f: ErrFn) -> usize {
    let mut t = HANDLERS.lock();
    t.push(f);
    USER_BASE + t.len() - 1
}

/// The user function behind handle `h`, if it is a user handler.
pub fn user(h: usize) -> Option<ErrFn> {
    h.checked_sub(USER_BASE).and_then(|i| HANDLERS.lock().get(i).copied())
}

pub fn is_valid(h: usize) -> bool {
    h == c::MPI_ERRORS_ARE_FATAL || h == c::MPI_ERRORS_RETURN || h == c::MPI_ERRORS_ABORT || user(h).is_some()
}
