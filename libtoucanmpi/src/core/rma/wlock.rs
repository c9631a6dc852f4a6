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

use crate::sched;
use crate::sched::lock::Lock;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
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
