//! Timed parks: a task that sleeps (the program called `sleep`, `nanosleep`, ...) parks until
//! its deadline, and the workers wake it when the time has come, so its siblings run
//! meanwhile. Also the scheduler's own sleeps and yields of the kernel thread, made with
//! system calls, so that they never reach the interposed C library functions (`abi::sleep`).
//!
//! Deadlines are nanoseconds of CLOCK_MONOTONIC. The pending ones are few (one per sleeping
//! task), kept in a vector under a lock; the earliest is mirrored in an atomic, so a worker
//! looks at the clock only while some task sleeps.

use super::lock::Lock;
use super::worker;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

/// No deadline pending.
const NONE: u64 = u64::MAX;

/// (deadline, task) of every sleeping task.
static PENDING: Lock<Vec<(u64, usize)>> = Lock::new(Vec::new());
/// The earliest deadline in `PENDING` (NONE when empty).
static EARLIEST: AtomicU64 = AtomicU64::new(NONE);
/// Tasks inside `sleep_until` (parked or about to be).
static SLEEPING: AtomicUsize = AtomicUsize::new(0);

/// Longest real sleep of an idle worker while every task sleeps: a bound on how late an
/// unforeseen wake-up (not a timer) is seen.
const MAX_IDLE_SLEEP: u64 = 10_000_000;

/// Now on `clock`, in nanoseconds (None for a clock the kernel does not know).
pub fn clock_ns(clock: libc::clockid_t) -> Option<u64> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec to fill.
    if unsafe { libc::clock_gettime(clock, &mut ts) } != 0 {
        return None;
    }
    Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// Now on CLOCK_MONOTONIC, in nanoseconds.
#[inline]
pub fn now() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC).unwrap_or(0)
}

/// Sleeps the calling kernel thread until `deadline` (CLOCK_MONOTONIC nanoseconds), with the
/// system call (not the C library's function, which the program's calls reach through ours).
pub fn os_sleep_until(deadline: u64) {
    let ts = libc::timespec {
        tv_sec: (deadline / 1_000_000_000) as libc::time_t,
        tv_nsec: (deadline % 1_000_000_000) as libc::c_long,
    };
    loop {
        // SAFETY: a valid absolute timespec and no remainder (absolute sleeps have none).
        let r = unsafe {
            libc::syscall(
                libc::SYS_clock_nanosleep,
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts as *const libc::timespec,
                std::ptr::null_mut::<libc::timespec>(),
            )
        };
        // Interrupted by a signal: go on sleeping (the deadline is absolute).
        if r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return;
        }
    }
}

/// Sleeps the calling kernel thread for `d` (see `os_sleep_until`).
pub fn os_sleep(d: Duration) {
    os_sleep_until(now().saturating_add(d.as_nanos().min(u64::MAX as u128) as u64));
}

/// Gives the calling kernel thread's core away (the system call, see `os_sleep_until`).
pub fn os_yield() {
    // SAFETY: sched_yield has no arguments and no preconditions.
    unsafe { libc::syscall(libc::SYS_sched_yield) };
}

/// Tasks sleeping now.
#[inline]
pub fn sleeping() -> usize {
    SLEEPING.load(Ordering::Acquire)
}

fn earliest_of(p: &[(u64, usize)]) -> u64 {
    p.iter().map(|e| e.0).min().unwrap_or(NONE)
}

fn add(deadline: u64, id: usize) {
    let mut p = PENDING.lock();
    p.push((deadline, id));
    EARLIEST.fetch_min(deadline, Ordering::AcqRel);
}

fn remove(id: usize) {
    let mut p = PENDING.lock();
    p.retain(|e| e.1 != id);
    EARLIEST.store(earliest_of(&p), Ordering::Release);
}

/// Parks the running task until `deadline` (CLOCK_MONOTONIC nanoseconds) has passed; its
/// siblings run meanwhile. Outside a task, sleeps the thread. Wake-ups for other reasons
/// than the deadline are absorbed (the task parks again).
pub fn sleep_until(deadline: u64) {
    let id = worker::current();
    if !worker::in_coroutine() {
        os_sleep_until(deadline);
        return;
    }
    SLEEPING.fetch_add(1, Ordering::AcqRel);
    while now() < deadline {
        add(deadline, id);
        // A timer that fires before the suspension leaves a notification: park returns.
        worker::park();
        remove(id);
    }
    SLEEPING.fetch_sub(1, Ordering::AcqRel);
}

/// Wakes the tasks whose deadline has passed; returns how many. Cheap while nothing is due
/// (one atomic load; the clock is read only while some task sleeps).
#[inline]
pub fn fire() -> usize {
    let e = EARLIEST.load(Ordering::Acquire);
    if e == NONE {
        return 0;
    }
    let t = now();
    if t < e {
        return 0;
    }
    fire_due(t)
}

#[cold]
fn fire_due(t: u64) -> usize {
    let mut due = Vec::new();
    {
        let mut p = PENDING.lock();
        p.retain(|&(d, id)| {
            if d <= t {
                due.push(id);
                false
            } else {
                true
            }
        });
        EARLIEST.store(earliest_of(&p), Ordering::Release);
    }
    for &id in &due {
        super::park::wake(id);
    }
    due.len()
}

/// For an idle worker: how long it may sleep the thread now, if every live task sleeps (then
/// only a deadline can make one runnable): until the earliest deadline, at most
/// `MAX_IDLE_SLEEP`. None when some task waits for something else (the worker polls).
pub fn idle_until(live: usize) -> Option<u64> {
    let n = sleeping();
    if n == 0 || n < live {
        return None;
    }
    let e = EARLIEST.load(Ordering::Acquire);
    let t = now();
    Some(e.min(t.saturating_add(MAX_IDLE_SLEEP)))
}

/// The earliest pending deadline, if any.
pub fn earliest() -> Option<u64> {
    match EARLIEST.load(Ordering::Acquire) {
        NONE => None,
        e => Some(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_sleep_waits_at_least_its_time() {
        let t0 = now();
        os_sleep(Duration::from_millis(3));
        assert!(now() - t0 >= 3_000_000);
    }
}
