//! The export macro and error-handler dispatch.

use super::consts as c;
use crate::core::error::{class_name, MpiError};
use crate::core::state;
use crate::sched;
use std::io::Write;

pub use crate::core::diag::{abort_job, fatal, say, who};
use std::os::raw::c_int;

/// Defines `PMPI_name` with the body and `MPI_name` forwarding to it (profiling interface).
/// The body returns `MpiResult<()>`; an error goes to the error handler of `$errcomm`.
macro_rules! mpi_fn {
    ($name:ident, $pname:ident, || errcomm = $ec:expr, $body:block) => {
        mpi_fn!($name, $pname, | | errcomm = $ec, $body);
    };
    ($name:ident, $pname:ident, |$($arg:ident : $ty:ty),* $(,)?| errcomm = $ec:expr, $body:block) => {
        #[no_mangle]
        pub unsafe extern "C" fn $pname($($arg: $ty),*) -> std::os::raw::c_int {
            $crate::core::deadlock::enter(stringify!($name));
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| -> $crate::core::error::MpiResult<()> { $body }));
            $crate::abi::export::outcome(r, $ec, stringify!($name))
        }
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> std::os::raw::c_int {
            $pname($($arg),*)
        }
    };
}

/// `mpi_fn` with a fast path: `$fast` (an expression of the arguments giving
/// `Result<c_int, $it>`) runs first, outside `catch_unwind`; it must not panic, and when it
/// gives `Err(info)` it must have had no effect the general path would not also have (the
/// general body then runs as in `mpi_fn`, out of line, with `$info` = `info` in scope).
macro_rules! mpi_fn_fast {
    ($name:ident, $pname:ident, |$($arg:ident : $ty:ty),* $(,)?| errcomm = $ec:expr,
     fast($info:ident: $it:ty) = $fast:expr, $body:block) => {
        #[no_mangle]
        pub unsafe extern "C" fn $pname($($arg: $ty),*) -> std::os::raw::c_int {
            $crate::core::deadlock::enter(stringify!($name));
            let info = match $fast {
                Ok(rc) => return rc,
                Err(i) => i,
            };
            #[inline(never)]
            #[allow(unused_variables)]
            unsafe fn general($($arg: $ty,)* $info: $it) -> std::os::raw::c_int {
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| -> $crate::core::error::MpiResult<()> { $body }));
                $crate::abi::export::outcome(r, $ec, stringify!($name))
            }
            general($($arg,)* info)
        }
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> std::os::raw::c_int {
            $pname($($arg),*)
        }
    };
}

/// Exports an `int`-count function `$name` and its large-count (`MPI_Count`) twin `$cname`:
/// both call `$f` with the arguments before the count, the count as `i64`, the arguments
/// after it, then `$extra`.
macro_rules! with_c {
    ($name:ident, $pname:ident, $cname:ident, $pcname:ident,
     ($($a:ident: $t:ty),*), $cnt:ident, ($($b:ident: $u:ty),*), errcomm = $ec:expr, $f:path $(, $extra:expr)*) => {
        mpi_fn!($name, $pname, |$($a: $t,)* $cnt: std::os::raw::c_int, $($b: $u),*| errcomm = $ec, {
            $f($($a,)* i64::from($cnt), $($b,)* $($extra),*)
        });
        mpi_fn!($cname, $pcname, |$($a: $t,)* $cnt: i64, $($b: $u),*| errcomm = $ec, {
            $f($($a,)* $cnt, $($b,)* $($extra),*)
        });
    };
}

/// The return code of an export whose body gave `r`: 0, or the error (or the panic, as
/// MPI_ERR_INTERN on MPI_COMM_WORLD) through the error handler of `comm`.
#[inline]
pub fn outcome(r: std::thread::Result<crate::core::error::MpiResult<()>>, comm: usize, call: &str) -> c_int {
    match r {
        Ok(Ok(())) => 0,
        Ok(Err(e)) => super::raise(comm, call, e),
        Err(p) => super::raise(c::MPI_COMM_WORLD, call, MpiError::new(c::MPI_ERR_INTERN, panic_text(&p))),
    }
}

pub fn panic_text(p: &Box<dyn std::any::Any + Send>) -> String {
    let s = p
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned());
    format!("internal error: {}", s.unwrap_or_else(|| "panic".into()))
}

/// Applies the error handler of communicator `comm` to error `e` raised by `call`.
pub fn raise(comm: usize, call: &str, e: MpiError) -> c_int {
    let sub = sched::rank();
    let handler = if sub == usize::MAX {
        c::MPI_ERRORS_ARE_FATAL
    } else {
        let h = state::with(|s| {
            let l = &s.locals[sub];
            super::handles::comm_index(comm)
                .and_then(|i| l.comms.get(i).and_then(|x| x.as_ref()))
                .or(l.comms[0].as_ref())
                .map(|cr| cr.errhandler)
                .unwrap_or(c::MPI_ERRORS_ARE_FATAL)
        });
        h.unwrap_or(c::MPI_ERRORS_ARE_FATAL)
    };
    apply_handler(handler, comm, call, e.class, &e.msg)
}

/// Runs error handler `handler` for error `code` on communicator `comm`; returns the code
/// when the program is to go on.
pub fn apply_handler(handler: usize, comm: usize, call: &str, code: c_int, msg: &str) -> c_int {
    if handler == c::MPI_ERRORS_RETURN {
        return code;
    }
    if let Some(f) = crate::core::errh::user(handler) {
        let (mut cm, mut cd) = (comm, code);
        // SAFETY: the application registered `f` as an MPI_Comm_errhandler_function, which
        // takes pointers to the communicator and the code (and ignores further arguments).
        unsafe { f(&mut cm, &mut cd) };
        return code;
    }
    let _ = std::io::stdout().flush();
    say(&format!("toucan: {}: {call}: {msg} ({})\n", who(), class_name(code)));
    abort_job(code.clamp(1, 255))
}
