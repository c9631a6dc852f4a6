//! `exit` interposed: a subrank leaving with `exit` must not end its siblings.

use crate::sched;
use std::os::raw::{c_int, c_void};

/// `exit` called by the program. From a subrank while others still run, it ends only that
/// subrank (as if its `main` returned `code`); before `MPI_Finalize` it ends the whole job
/// with `code`, as MPI requires. Anywhere else it is the C library's `exit`.
///
/// # Safety
/// As the C library's `exit`.
#[no_mangle]
pub unsafe extern "C" fn exit(code: c_int) -> ! {
    // In a thread of the program (not a coroutine) it is the C library's: the process ends.
    let sub = sched::current();
    if sched::in_coroutine() {
        let unfinished = crate::core::state::with(|s| s.locals[sub].initialized && !s.locals[sub].finalized).unwrap_or(false);
        if unfinished {
            crate::abi::say(&format!(
                "toucan: virtual rank {}: exit({code}) called before MPI_Finalize: ending the job\n",
                crate::core::state::with(|s| s.myproc * s.cfg.local() + sub).unwrap_or(sub)
            ));
            crate::abi::abort_job(if code == 0 { 1 } else { code });
        }
        // As a thread's exit would: its thread-local objects are destroyed first.
        // SAFETY: the subrank is ending and runs, so its thread-locals are in place.
        unsafe { crate::privatize::tls::run_dtors(sched::swap::owner()) };
        let _ = std::io::Write::flush(&mut std::io::stdout());
        sched::worker::retire(code);
    }
    let real = libc::dlsym(libc::RTLD_NEXT, c"exit".as_ptr());
    if real.is_null() {
        libc::_exit(code);
    }
    let real: unsafe extern "C" fn(c_int) -> ! = std::mem::transmute(real);
    real(code)
}

/// A subrank's `main` returned `code`: if it called `MPI_Init` but not `MPI_Finalize`, the
/// job cannot end cleanly (its peers would wait for it in `MPI_Finalize`, or for messages it
/// will never send): end the whole job now, naming the rank, as MPICH's launcher does when a
/// process exits without finalizing.
pub fn returned_from_main(code: c_int) {
    let sub = sched::current();
    let unfinished = crate::core::state::with(|s| s.locals[sub].initialized && !s.locals[sub].finalized).unwrap_or(false);
    if sub != usize::MAX && unfinished {
        crate::abi::say(&format!(
            "toucan: virtual rank {}: returned from main (status {code}) without calling MPI_Finalize: ending the job\n",
            crate::core::state::with(|s| s.myproc * s.cfg.v + sub).unwrap_or(sub)
        ));
        crate::abi::abort_job(if code == 0 { 1 } else { code });
    }
}

/// The C library's registration of a thread-local object's destructor (called by the C++
/// runtime when a `thread_local` object is first constructed in a thread), interposed: an
/// object among the program's own thread-locals, which are per subrank (`privatize::tls`), has
/// its destructor run when its subrank ends; any other goes to the C library, as usual.
///
/// # Safety
/// As the C library's `__cxa_thread_atexit_impl`.
#[no_mangle]
pub unsafe extern "C" fn __cxa_thread_atexit_impl(dtor: crate::privatize::tls::Dtor, obj: *mut c_void, dso: *mut c_void) -> c_int {
    if crate::privatize::tls::register(dtor, obj) {
        return 0;
    }
    type Real = unsafe extern "C" fn(crate::privatize::tls::Dtor, *mut c_void, *mut c_void) -> c_int;
    let real = libc::dlsym(libc::RTLD_NEXT, c"__cxa_thread_atexit_impl".as_ptr());
    if real.is_null() {
        // No C library support: the object is never destroyed, as the C++ runtime's own
        // fall-back would leave it at worst.
        return 0;
    }
    let real: Real = std::mem::transmute(real);
    real(dtor, obj, dso)
}
