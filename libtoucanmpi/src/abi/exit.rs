//! `exit` interposed: a subrank leaving with `exit` must not end its siblings.

use crate::sched;
use std::os::raw::c_int;

/// `exit` called by the program. From a subrank while others still run, it ends only that
/// subrank (as if its `main` returned `code`); before `MPI_Finalize` it ends the whole job
/// with `code`, as MPI requires. Anywhere else it is the C library's `exit`.
///
/// # Safety
/// As the C library's `exit`.
#[no_mangle]
pub unsafe extern "C" fn exit(code: c_int) -> ! {
    let sub = sched::current();
    if sub != usize::MAX {
        let unfinished = crate::core::state::with(|s| s.locals[sub].initialized && !s.locals[sub].finalized).unwrap_or(false);
        if unfinished {
            crate::abi::say(&format!(
                "toucan: virtual rank {}: exit({code}) called before MPI_Finalize: ending the job\n",
                crate::core::state::with(|s| s.myproc * s.cfg.v + sub).unwrap_or(sub)
            ));
            crate::abi::abort_job(if code == 0 { 1 } else { code });
        }
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
