//! `sleep`, `usleep`, `nanosleep`, `clock_nanosleep` and `sched_yield` interposed: called by
//! a subrank, they park it until its time is up (`sched::timer`) and its siblings run
//! meanwhile, as separate processes would each sleep on their own; called from any other
//! thread (the progress thread, the program's own threads, a worker between tasks) they are
//! the C library's.
//!
//! Arguments are checked as the C library checks them (EINVAL for a negative time or
//! nanoseconds out of range). A subrank's sleep is not cut short by a signal: the signal
//! interrupts whatever the worker thread does, not the parked subrank, so EINTR and the
//! remaining time are never reported by a subrank's sleep (the time slept is always the
//! whole).

use crate::sched;
use crate::sched::timer;
use std::os::raw::{c_int, c_uint};
use std::sync::atomic::AtomicUsize;

const NS: u64 = 1_000_000_000;

use super::libc_state::real;

/// Whether the caller is a task of the scheduler (a subrank, or a helper task running the
/// program's code such as a reduction operator); not a thread of the program's own.
#[inline]
fn in_task() -> bool {
    sched::in_coroutine()
}

/// Parks the calling task for `ns` nanoseconds.
fn park_for(ns: u64) {
    timer::sleep_until(timer::now().saturating_add(ns));
}

/// A timespec's length in nanoseconds, or None when libc would say EINVAL.
fn span(ts: &libc::timespec) -> Option<u64> {
    if ts.tv_sec < 0 || !(0..NS as libc::c_long).contains(&ts.tv_nsec) {
        return None;
    }
    Some((ts.tv_sec as u64).saturating_mul(NS).saturating_add(ts.tv_nsec as u64))
}

fn set_errno(e: c_int) {
    // SAFETY: the calling thread's errno.
    unsafe { *libc::__errno_location() = e };
}

/// # Safety
/// As the C library's `sleep`.
#[no_mangle]
pub unsafe extern "C" fn sleep(seconds: c_uint) -> c_uint {
    if !in_task() {
        static REAL: AtomicUsize = AtomicUsize::new(0);
        // SAFETY: the C library's `sleep` has this type.
        let f: unsafe extern "C" fn(c_uint) -> c_uint = unsafe { std::mem::transmute(real(&REAL, c"sleep")) };
        // SAFETY: called as the program asked.
        return unsafe { f(seconds) };
    }
    park_for(seconds as u64 * NS);
    0
}

/// # Safety
/// As the C library's `usleep`.
#[no_mangle]
pub unsafe extern "C" fn usleep(usec: libc::useconds_t) -> c_int {
    if !in_task() {
        static REAL: AtomicUsize = AtomicUsize::new(0);
        // SAFETY: the C library's `usleep` has this type.
        let f: unsafe extern "C" fn(libc::useconds_t) -> c_int = unsafe { std::mem::transmute(real(&REAL, c"usleep")) };
        // SAFETY: called as the program asked.
        return unsafe { f(usec) };
    }
    park_for(usec as u64 * 1000);
    0
}

/// # Safety
/// As the C library's `nanosleep`.
#[no_mangle]
pub unsafe extern "C" fn nanosleep(req: *const libc::timespec, rem: *mut libc::timespec) -> c_int {
    if !in_task() || req.is_null() {
        static REAL: AtomicUsize = AtomicUsize::new(0);
        type F = unsafe extern "C" fn(*const libc::timespec, *mut libc::timespec) -> c_int;
        // SAFETY: the C library's `nanosleep` has this type.
        let f: F = unsafe { std::mem::transmute(real(&REAL, c"nanosleep")) };
        // SAFETY: called as the program asked (a null request gets the C library's EFAULT).
        return unsafe { f(req, rem) };
    }
    // SAFETY: the caller passes a valid timespec (null was handled above).
    match span(unsafe { &*req }) {
        Some(ns) => {
            park_for(ns);
            0
        }
        None => {
            set_errno(libc::EINVAL);
            -1
        }
    }
}

/// Clocks a subrank's sleep follows (the CPU-time clocks go to the C library).
fn wall_clock(clock: libc::clockid_t) -> bool {
    matches!(
        clock,
        libc::CLOCK_REALTIME | libc::CLOCK_MONOTONIC | libc::CLOCK_BOOTTIME | libc::CLOCK_TAI
    )
}

/// # Safety
/// As the C library's `clock_nanosleep`.
#[no_mangle]
pub unsafe extern "C" fn clock_nanosleep(
    clock: libc::clockid_t,
    flags: c_int,
    req: *const libc::timespec,
    rem: *mut libc::timespec,
) -> c_int {
    if !in_task() || req.is_null() || !wall_clock(clock) {
        static REAL: AtomicUsize = AtomicUsize::new(0);
        type F = unsafe extern "C" fn(libc::clockid_t, c_int, *const libc::timespec, *mut libc::timespec) -> c_int;
        // SAFETY: the C library's `clock_nanosleep` has this type.
        let f: F = unsafe { std::mem::transmute(real(&REAL, c"clock_nanosleep")) };
        // SAFETY: called as the program asked.
        return unsafe { f(clock, flags, req, rem) };
    }
    // SAFETY: the caller passes a valid timespec (null was handled above).
    let Some(ns) = span(unsafe { &*req }) else {
        return libc::EINVAL;
    };
    if flags & libc::TIMER_ABSTIME == 0 {
        park_for(ns);
        return 0;
    }
    // Until `clock` reads `ns`: the time left is measured again after each wake-up, so a
    // change of the real-time clock meanwhile is followed at the next one.
    loop {
        let Some(t) = timer::clock_ns(clock) else {
            return libc::EINVAL;
        };
        if t >= ns {
            return 0;
        }
        park_for(ns - t);
    }
}

/// Lets the subrank's ready siblings run first; with none ready, gives the core away as the
/// C library's would.
///
/// # Safety
/// As the C library's `sched_yield` (none).
#[no_mangle]
pub unsafe extern "C" fn sched_yield() -> c_int {
    if in_task() && sched::others_ready() {
        sched::yield_now();
        return 0;
    }
    timer::os_yield();
    0
}
