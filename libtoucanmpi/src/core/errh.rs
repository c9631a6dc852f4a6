//! Error handlers: the predefined ones and those the application creates.

use crate::consts as c;
use crate::sched::lock::Lock;
use std::os::raw::c_int;

/// `MPI_Comm_errhandler_function`: called with the communicator and the error code.
pub type ErrFn = unsafe extern "C" fn(*mut usize, *mut c_int, ...);

/// Handles of user error handlers start here (predefined ones are below 0x200).
pub const USER_BASE: usize = 0x4000_0000;

/// Each user handler's function and the number of handle references the application holds
/// (one from MPI_Comm_create_errhandler, one per MPI_Comm_get_errhandler, minus one per
/// MPI_Errhandler_free). At zero the handle is invalid; the function stays callable for the
/// communicators that still use it.
static HANDLERS: Lock<Vec<(ErrFn, usize)>> = Lock::new(Vec::new());

/// Registers a user error handler; returns its handle.
pub fn create(f: ErrFn) -> usize {
    let mut t = HANDLERS.lock();
    t.push((f, 1));
    USER_BASE + t.len() - 1
}

/// The user function behind handle `h`, if it is a user handler.
pub fn user(h: usize) -> Option<ErrFn> {
    h.checked_sub(USER_BASE).and_then(|i| HANDLERS.lock().get(i).map(|e| e.0))
}

/// Drops one reference to user handler `h` (MPI_Errhandler_free); false when `h` is not a
/// live user handler.
pub fn free(h: usize) -> bool {
    let mut t = HANDLERS.lock();
    match h.checked_sub(USER_BASE).and_then(|i| t.get_mut(i)) {
        Some(e) if e.1 > 0 => {
            e.1 -= 1;
            true
        }
        _ => false,
    }
}

/// Adds a reference to `h` if it is a user handler (MPI_Comm_get_errhandler returns a new
/// handle reference, which the application frees).
pub fn retain(h: usize) {
    let mut t = HANDLERS.lock();
    if let Some(e) = h.checked_sub(USER_BASE).and_then(|i| t.get_mut(i)) {
        e.1 += 1;
    }
}

fn live_user(h: usize) -> bool {
    h.checked_sub(USER_BASE)
        .and_then(|i| HANDLERS.lock().get(i).map(|e| e.1 > 0))
        .unwrap_or(false)
}

/// Whether `h` is a predefined handler or a user handler not freed yet.
pub fn is_valid(h: usize) -> bool {
    h == c::MPI_ERRORS_ARE_FATAL || h == c::MPI_ERRORS_RETURN || h == c::MPI_ERRORS_ABORT || live_user(h)
}
