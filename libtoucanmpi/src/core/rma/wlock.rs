//! Window locks among the subranks of one process, with a wait queue: a subrank asking for a
//! lock held in a conflicting mode parks (its worker runs the others; the deadlock detector
//! sees it blocked in `MPI_Win_lock`) and is granted the lock in arrival order when a holder
//! unlocks, consecutive shared requests at the head of the queue together.
//!
//! For a window whose members are all in this process this queue is the lock. For a window
//! spanning processes it is the process-local part: a subrank first takes the target's lock
//! here, then the window's lock word (which orders processes), so of this process's subranks
//! only those the local queue admits try the lock word.
//!
//! A lock is named by its target's process and the address of its lock word there.
//!
//! **Waiting on another process's lock word** (`wait_remote`): there is no queue at the
//! target, so the lock word is tried again and again. A waiter first tries for a short while
//! itself (giving way between tries), then parks, and the worker's hooks try for it
//! (`retry_remote`: between subranks and while idle, at most every `RETRY_NS`), waking it
//! once the lock is its own. Parked, it counts as blocked, so the deadlock detector names a
//! rank waiting for a lock whose holder, in another process, waits for it.

use crate::core::error::MpiError;
use crate::sched;
use crate::sched::lock::Lock;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;

/// Holders count while one exclusive holder has the lock.
const EXCL: i64 = -1;

/// A target's lock (process, lock word address).
pub type Key = (usize, usize);

struct Waiter {
    task: usize,
    excl: bool,
    granted: Arc<AtomicBool>,
}

#[derive(Default)]
struct Entry {
    /// 0 free, EXCL held exclusively, n > 0 held shared by n.
    holders: i64,
    queue: VecDeque<Waiter>,
}

impl Entry {
    fn admits(&self, excl: bool) -> bool {
        if excl {
            self.holders == 0
        } else {
            self.holders >= 0
        }
    }

    fn take(&mut self, excl: bool) {
        self.holders = if excl { EXCL } else { self.holders + 1 };
    }

    /// Grants the lock to the head of the queue while it fits (FIFO; shared requests at
    /// the head go together); returns the tasks to wake.
    fn grant(&mut self) -> Vec<usize> {
        let mut woken = Vec::new();
        while let Some(w) = self.queue.front() {
            if !self.admits(w.excl) {
                break;
            }
            let w = self.queue.pop_front().expect("front exists");
            self.take(w.excl);
            w.granted.store(true, Ordering::Release);
            woken.push(w.task);
        }
        woken
    }
}

static LOCKS: Lock<Option<HashMap<Key, Entry>>> = Lock::new(None);

/// Takes lock `key` (exclusive or shared), parking the calling subrank until it is granted.
pub fn acquire(key: Key, excl: bool) {
    let granted = {
        let mut t = LOCKS.lock();
        let e = t.get_or_insert_with(HashMap::new).entry(key).or_default();
        if e.queue.is_empty() && e.admits(excl) {
            e.take(excl);
            return;
        }
        let granted = Arc::new(AtomicBool::new(false));
        e.queue.push_back(Waiter {
            task: sched::current(),
            excl,
            granted: granted.clone(),
        });
        granted
    };
    // A wake-up between the push and the park is not lost (the park then returns at once);
    // other wake-ups (none are expected) only cost one more look.
    while !granted.load(Ordering::Acquire) {
        if sched::current() == usize::MAX {
            crate::sched::timer::os_yield();
        } else {
            sched::park();
        }
    }
}

/// Releases lock `key` held in mode `excl` and grants it to the waiters it now admits.
pub fn release(key: Key, excl: bool) {
    let woken = {
        let mut t = LOCKS.lock();
        let Some(map) = t.as_mut() else { return };
        let Some(e) = map.get_mut(&key) else { return };
        if excl {
            e.holders = 0;
        } else {
            e.holders = (e.holders - 1).max(0);
        }
        let woken = e.grant();
        if e.holders == 0 && e.queue.is_empty() {
            map.remove(&key);
        }
        woken
    };
    for id in woken {
        sched::wake(id);
    }
}

/// One try at a lock word in another process: Ok(true) when the lock is taken.
pub type Try = Box<dyn FnMut() -> Result<bool, MpiError> + Send>;

/// How long a waiter for another process's lock word tries by itself before it parks.
const SPIN_NS: u64 = 2_000_000;
/// Shortest pause between the hooks' tries for the parked waiters.
const RETRY_NS: u64 = 50_000;

/// A waiter's state: still waiting, granted, or failed (error in `err`).
const WAITING: u8 = 0;
const GOT: u8 = 1;
const FAILED: u8 = 2;

struct Remote {
    task: usize,
    attempt: Try,
    state: Arc<AtomicU8>,
    err: Arc<Lock<Option<MpiError>>>,
}

static REMOTE: Lock<Vec<Remote>> = Lock::new(Vec::new());
/// Parked remote waiters (a cheap look for the hooks).
static REMOTE_N: AtomicUsize = AtomicUsize::new(0);
/// When the hooks last tried (CLOCK_MONOTONIC ns).
static LAST_TRY: AtomicU64 = AtomicU64::new(0);

/// Takes a lock whose word is in another process: `attempt` until it succeeds, first in
/// place (the worker's other subranks run between tries), then parked, tried by the hooks.
pub fn wait_remote(mut attempt: Try) -> Result<(), MpiError> {
    let t0 = sched::timer::now();
    loop {
        if attempt()? {
            return Ok(());
        }
        if sched::current() == usize::MAX || sched::timer::now().saturating_sub(t0) < SPIN_NS {
            // A thread of the program cannot park: it keeps trying.
            sched::yield_now();
            let _ = crate::core::state::try_with(|s| s.progress());
            continue;
        }
        break;
    }
    let state = Arc::new(AtomicU8::new(WAITING));
    let err = Arc::new(Lock::new(None));
    REMOTE.lock().push(Remote {
        task: sched::current(),
        attempt,
        state: state.clone(),
        err: err.clone(),
    });
    REMOTE_N.fetch_add(1, Ordering::Release);
    // A wake-up between the push and the park is not lost (the park then returns at once).
    loop {
        match state.load(Ordering::Acquire) {
            GOT => return Ok(()),
            FAILED => {
                let e = err.lock().take();
                return Err(e.unwrap_or_else(|| MpiError::new(crate::consts::MPI_ERR_INTERN, "lock wait failed")));
            }
            _ => sched::park(),
        }
    }
}

/// Tries the lock words the parked waiters wait for (from the worker's hooks, outside any
/// subrank; at most every `RETRY_NS`); wakes those that got theirs. Whether any woke.
pub fn retry_remote() -> bool {
    if REMOTE_N.load(Ordering::Acquire) == 0 {
        return false;
    }
    let now = sched::timer::now();
    let last = LAST_TRY.load(Ordering::Relaxed);
    if now.saturating_sub(last) < RETRY_NS || LAST_TRY.compare_exchange(last, now, Ordering::AcqRel, Ordering::Relaxed).is_err() {
        return false;
    }
    // Out of the table while they are tried: the tries call the real MPI (no lock held).
    let mut list = std::mem::take(&mut *REMOTE.lock());
    let mut woken = Vec::new();
    list.retain_mut(|w| {
        let done = match (w.attempt)() {
            Ok(false) => return true,
            Ok(true) => GOT,
            Err(e) => {
                *w.err.lock() = Some(e);
                FAILED
            }
        };
        w.state.store(done, Ordering::Release);
        woken.push(w.task);
        false
    });
    REMOTE_N.fetch_sub(woken.len(), Ordering::AcqRel);
    REMOTE.lock().append(&mut list);
    for id in &woken {
        sched::wake(*id);
    }
    !woken.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn waiter(task: usize, excl: bool) -> Waiter {
        Waiter {
            task,
            excl,
            granted: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Holders before, the queue's modes (true: exclusive) -> tasks granted, holders after.
    #[rstest]
    #[case(0, &[true, false], &[0], EXCL)]
    #[case(0, &[false, false, true, false], &[0, 1], 2)]
    #[case(2, &[false, true], &[0], 3)]
    #[case(2, &[true, false], &[], 2)]
    #[case(EXCL, &[false], &[], EXCL)]
    #[case(0, &[], &[], 0)]
    fn grants_in_order_shared_together(#[case] holders: i64, #[case] q: &[bool], #[case] want: &[usize], #[case] after: i64) {
        let mut e = Entry {
            holders,
            queue: q.iter().enumerate().map(|(i, &x)| waiter(i, x)).collect(),
        };
        assert_eq!(e.grant(), want);
        assert_eq!(e.holders, after);
        assert_eq!(e.queue.len(), q.len() - want.len());
    }
}
