//! Functions of the C library that libtoucanmpi interposes for threads (`abi::threads`): a
//! library copy loaded with `RTLD_DEEPBIND` binds them to the C library's first (its own
//! dependency), and `Object::redirect_slots` keeps that binding when the original's slot was
//! never resolved (lazy binding: OpenMP's runtime starts no thread before a parallel region).
//! Those slots are pointed at ours, as the global scope would bind them.

use std::collections::HashMap;
use std::ffi::CStr;

const NAMES: [&CStr; 2] = [c"pthread_create", c"pthread_join"];

/// The C library's address of each interposed function -> ours (empty when ours are not
/// the ones the global scope finds, e.g. in unit tests).
pub fn table() -> HashMap<usize, usize> {
    NAMES
        .iter()
        .filter_map(|n| {
            // SAFETY: symbol lookups only: the first definition in the global scope, and the
            // next one after the object that calls (this library).
            let (ours, theirs) = unsafe {
                (
                    libc::dlsym(libc::RTLD_DEFAULT, n.as_ptr()) as usize,
                    libc::dlsym(libc::RTLD_NEXT, n.as_ptr()) as usize,
                )
            };
            (ours != 0 && theirs != 0 && ours != theirs).then_some((theirs, ours))
        })
        .collect()
}

/// Whether OpenMP's runtime (libgomp) is loaded: it keeps the team a thread is in per kernel
/// thread, so a subrank inside a parallel region must stay on its worker (no stealing).
pub fn openmp_loaded() -> bool {
    // SAFETY: RTLD_NOLOAD only looks the library up; the handle is released at once.
    unsafe {
        let h = libc::dlopen(c"libgomp.so.1".as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD);
        if h.is_null() {
            return false;
        }
        libc::dlclose(h);
        true
    }
}
