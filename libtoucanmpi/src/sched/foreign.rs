//! Threads of the program (`MPI_THREAD_MULTIPLE`, issue 14 deliverable 7): a kernel thread that
//! a subrank started (pthreads, OpenMP) calls MPI as that subrank's rank. It is no coroutine
//! and no worker: it gets a task slot of its own (a scheduler id, so that requests name it as
//! their waiter and a completion wakes it), marked `foreign`, whose `rank` is its subrank's.
//!
//! - Parking never suspends it: it blocks its own kernel thread on the slot's futex word,
//!   and while it waits it drives the progress engine itself (`set_poll`), so that it finishes
//!   its calls even when no worker polls (its subrank blocks its worker in `pthread_join`).
//! - A wake-up (`park::wake`) turns `PARKED` into `QUEUED` as for a coroutine, and then bumps
//!   the futex word and wakes the thread instead of queueing the task.
//! - Yielding drives the progress engine once and gives the core away.
//!
//! The slot is a helper slot (`task::alloc_helper`), so the per-subrank C library state and
//! heaps treat the thread as they treat helper tasks: the shared ones.

use super::task::{self, NOTIFIED, PARKED, RUNNING};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

thread_local! {
    /// The calling thread's foreign task (usize::MAX: none).
    static ME: Cell<usize> = const { Cell::new(usize::MAX) };
    /// Releases the slot when the thread ends (also through `pthread_exit`).
    static GUARD: Adopted = const { Adopted };
}

/// Foreign tasks alive, and those of them parked (blocked in MPI).
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PARKED_NOW: AtomicUsize = AtomicUsize::new(0);

/// Drives the progress engine once (set by the MPI layer); returns whether anything moved.
static POLL: AtomicUsize = AtomicUsize::new(0);

/// Sets the progress step a parked foreign thread runs.
pub fn set_poll(f: fn() -> bool) {
    POLL.store(f as usize, Ordering::Release);
}

fn poll() -> bool {
    match POLL.load(Ordering::Acquire) {
        0 => false,
        f => {
            // SAFETY: only `set_poll` stores here, a `fn() -> bool`.
            let f: fn() -> bool = unsafe { std::mem::transmute(f) };
            f()
        }
    }
}

/// The calling thread's foreign task id (usize::MAX when it is none).
#[inline]
pub fn task() -> usize {
    ME.try_with(|m| m.get()).unwrap_or(usize::MAX)
}

/// Foreign tasks that are alive and not parked in MPI (computing, or busy elsewhere): while
/// any is, an idle process may still be woken by one of them (no deadlock).
pub fn busy() -> usize {
    LIVE.load(Ordering::Acquire).saturating_sub(PARKED_NOW.load(Ordering::Acquire))
}

/// Makes the calling thread a foreign task acting as local subrank `rank`, whose
/// thread-local contents are `tls`'s. Returns its scheduler id.
pub fn adopt(rank: usize, tls: usize) -> usize {
    let id = task::alloc_helper();
    let s = task::slot(id);
    s.rank.store(rank, Ordering::Relaxed);
    s.tls.store(tls, Ordering::Relaxed);
    s.foreign.store(true, Ordering::Relaxed);
    s.futex.store(0, Ordering::Relaxed);
    s.state.store(RUNNING, Ordering::Release);
    LIVE.fetch_add(1, Ordering::AcqRel);
    ME.with(|m| m.set(id));
    // Touch the guard so that its destructor runs when the thread ends.
    GUARD.with(|_| {});
    id
}

struct Adopted;

impl Drop for Adopted {
    fn drop(&mut self) {
        let id = ME.try_with(|m| m.replace(usize::MAX)).unwrap_or(usize::MAX);
        if id == usize::MAX {
            return;
        }
        task::slot(id).state.store(task::DONE, Ordering::Release);
        LIVE.fetch_sub(1, Ordering::AcqRel);
        task::free_helper(id);
    }
}

/// Whether scheduler id `id` is a foreign task.
#[inline]
pub fn is(id: usize) -> bool {
    task::get(id).is_some_and(|s| s.foreign.load(Ordering::Relaxed))
}

/// Longest futex wait between two progress steps of a parked foreign thread.
const MAX_NAP_NS: u64 = 1_000_000;
const FIRST_NAP_NS: u64 = 2_000;

/// Parks foreign task `id` (the calling thread's) until a wake-up: returns at once when one
/// is pending. Drives the progress engine meanwhile.
pub fn park(id: usize) {
    let s = task::slot(id);
    if s.state
        .compare_exchange(NOTIFIED, RUNNING, Ordering::AcqRel, Ordering::Acquire)
        .is_ok()
    {
        return;
    }
    if s.state
        .compare_exchange(RUNNING, PARKED, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        // Woken in between.
        s.state.store(RUNNING, Ordering::Release);
        return;
    }
    PARKED_NOW.fetch_add(1, Ordering::AcqRel);
    let mut nap = FIRST_NAP_NS;
    loop {
        let seq = s.futex.load(Ordering::Acquire);
        if s.state.load(Ordering::Acquire) != PARKED {
            break;
        }
        // Nobody else may be polling (the workers may all be blocked, or busy): look
        // ourselves. What this thread completes wakes nobody (the waiter runs: `complete`),
        // so anything that moved sends it back to look at what it waits for.
        if poll() {
            break;
        }
        futex_wait(&s.futex, seq, nap);
        nap = (nap * 2).min(MAX_NAP_NS);
    }
    PARKED_NOW.fetch_sub(1, Ordering::AcqRel);
    s.state.store(RUNNING, Ordering::Release);
}

/// Wakes the thread of foreign task slot `s` (after `park::wake` made it `QUEUED`).
pub fn wake(s: &task::Slot) {
    s.futex.fetch_add(1, Ordering::AcqRel);
    // SAFETY: FUTEX_WAKE on a word of a slot that is never freed; no other preconditions.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            s.futex.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            i32::MAX,
        )
    };
}

/// Lets others run: one progress step, then the core goes away.
pub fn yield_now() {
    if !poll() {
        super::timer::os_yield();
    }
}

fn futex_wait(word: &std::sync::atomic::AtomicU32, seq: u32, ns: u64) {
    let ts = libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: FUTEX_WAIT on a live word with a relative timeout; it returns at once when the
    // word no longer holds `seq` (a wake-up came), and on a signal or the timeout.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            seq,
            &ts as *const libc::timespec,
        )
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A foreign thread parks on its futex and another thread's wake-up releases it; a
    /// wake-up before the park is not lost; the slot is freed when the thread ends.
    #[test]
    fn foreign_park_and_wake() {
        let _g = super::super::queue::tests_serial();
        let (tx, rx) = std::sync::mpsc::channel();
        let h = std::thread::spawn(move || {
            let id = adopt(3, 3);
            assert_eq!(task(), id);
            assert!(is(id));
            assert_eq!(task::slot(id).rank.load(Ordering::Relaxed), 3);
            tx.send(id).unwrap();
            park(id); // woken by the main thread
            super::super::park::wake(id); // running: notified
            park(id); // returns at once
            id
        });
        let id = rx.recv().unwrap();
        while task::slot(id).state.load(Ordering::Acquire) != PARKED {
            std::hint::spin_loop();
        }
        assert_eq!(busy(), 0);
        super::super::park::wake(id);
        assert_eq!(h.join().unwrap(), id);
        assert_eq!(task::slot(id).state.load(Ordering::Acquire), task::DONE);
        assert_eq!(task(), usize::MAX);
    }
}
