//! Park and wake: each task's state machine (states in `task`), safe when the waker and the
//! task's worker are different threads (SMP mode).
//!
//! - `wake`: a parked task becomes `QUEUED` and joins its home worker's ready queue; a task
//!   that is running becomes `NOTIFIED`, so its next park does not happen (no lost wake-up);
//!   a queued, notified or finished one stays as it is.
//! - A running task that wants to park checks for a pending notification (`prepare_park`),
//!   records its intent and suspends; only its worker, once the coroutine is off the stack,
//!   turns `RUNNING` into `PARKED` (`settle`). So no other worker can resume a task whose
//!   stack is still in use, and a wake-up between the intent and the suspension is seen by
//!   the worker's compare-and-swap, which queues the task again instead.

use super::queue;
use super::task::{self, DEFER, DONE, GO_ON, NOTIFIED, PARK, PARKED, QUEUED, RETIRE, RUNNING, YIELD};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A task's state, as reports show it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Queued or running.
    Ready,
    /// Waiting for a wake-up.
    Parked,
    Done,
}

/// Tasks that have not finished.
static LIVE: AtomicUsize = AtomicUsize::new(0);

pub fn live() -> usize {
    LIVE.load(Ordering::Acquire)
}

/// Task `id`'s state (Done for an unknown id).
pub fn state(id: usize) -> State {
    match task::get(id).map(|s| s.state.load(Ordering::Acquire)) {
        Some(QUEUED | RUNNING | NOTIFIED) => State::Ready,
        Some(PARKED) => State::Parked,
        _ => State::Done,
    }
}

/// Starts bookkeeping for `n` subranks (ids 0..n, none queued yet). Only while no worker runs.
pub fn reset(n: usize) {
    task::reset(n);
    LIVE.store(0, Ordering::Release);
}

/// Queues task `id` (whose coroutine is in its slot) for the first time.
pub fn start(id: usize) {
    let s = task::slot(id);
    LIVE.fetch_add(1, Ordering::AcqRel);
    s.intent.store(GO_ON, Ordering::Relaxed);
    s.state.store(QUEUED, Ordering::Release);
    queue::push(s.home.load(Ordering::Relaxed), id, false);
}

/// Makes task `id` runnable (or notes the wake-up if it runs now).
pub fn wake(id: usize) {
    let Some(s) = task::get(id) else { return };
    let mut cur = s.state.load(Ordering::Acquire);
    loop {
        let next = match cur {
            PARKED => QUEUED,
            RUNNING => NOTIFIED,
            _ => return,
        };
        match s.state.compare_exchange_weak(cur, next, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => break,
            Err(now) => cur = now,
        }
    }
    if cur == PARKED {
        if s.foreign.load(Ordering::Relaxed) {
            // A thread of the program, blocked on its futex (`foreign`), not in a queue.
            super::foreign::wake(s);
            return;
        }
        super::metrics::woken(id);
        queue::push(s.home.load(Ordering::Relaxed), id, false);
    }
}

/// The running task `id` wants to park: false when a wake-up is pending (it was consumed and
/// the task goes on), true when it must suspend (its worker parks it, see `settle`).
pub fn prepare_park(id: usize) -> bool {
    let s = task::slot(id);
    if s.state
        .compare_exchange(NOTIFIED, RUNNING, Ordering::AcqRel, Ordering::Acquire)
        .is_ok()
    {
        return false;
    }
    s.intent.store(PARK, Ordering::Relaxed);
    true
}

/// The running task `id` takes a pending wake-up, if any (it was woken while it ran): for a
/// task that waits without parking.
#[inline]
pub fn take_notified(id: usize) -> bool {
    // A plain look first: waiters call this in a loop, and a failing compare-exchange would
    // take the line exclusive each time.
    task::get(id).is_some_and(|s| {
        s.state.load(Ordering::Relaxed) == NOTIFIED
            && s.state
                .compare_exchange(NOTIFIED, RUNNING, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
    })
}

/// The running task `id` will suspend asking its worker for `intent` (YIELD, DEFER, RETIRE).
pub fn intend(id: usize, intent: u8) {
    task::slot(id).intent.store(intent, Ordering::Relaxed);
}

/// Worker side: task `id`, run by this worker, suspended; carries out its intent. Returns
/// true when the task is gone for good (retired: its coroutine must be leaked, not dropped).
pub fn settle(id: usize) -> bool {
    let s = task::slot(id);
    let intent = s.intent.swap(GO_ON, Ordering::Relaxed);
    let home = s.home.load(Ordering::Relaxed);
    match intent {
        PARK => {
            if s.state
                .compare_exchange(RUNNING, PARKED, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                super::metrics::parked(id);
            } else {
                // Woken between its decision and its suspension.
                s.state.store(QUEUED, Ordering::Release);
                queue::push(home, id, false);
            }
            false
        }
        RETIRE => {
            finish(id);
            true
        }
        _ => {
            s.state.store(QUEUED, Ordering::Release);
            queue::push(home, id, intent == DEFER);
            false
        }
    }
}

/// Worker side: task `id` finished (returned, or retired).
pub fn finish(id: usize) {
    task::slot(id).state.store(DONE, Ordering::Release);
    LIVE.fetch_sub(1, Ordering::AcqRel);
}

/// Worker side: takes `id` out of a queue to run it.
#[inline]
pub fn running(id: usize) {
    task::slot(id).state.store(RUNNING, Ordering::Release);
}

/// Whether some task other than the running one could run now on the calling worker (its
/// own queues, or another worker's it may steal from). Lock-free.
#[inline]
pub fn others_ready() -> bool {
    // A thread of the program (`foreign`) runs no queue: nothing to give way to.
    super::worker::running_worker().is_some_and(queue::any_for)
}

/// Runnable tasks other than `me` that satisfy `pred`: whether one is queued on the calling
/// worker (its home is this worker), and whether one is queued elsewhere or running on
/// another worker.
pub fn runnable(me: usize, pred: impl Fn(usize) -> bool) -> (bool, bool) {
    let here = super::worker::worker_index();
    let (mut mine, mut other) = (false, false);
    for t in (0..task::count()).filter(|&t| t != me) {
        let s = task::slot(t);
        match s.state.load(Ordering::Acquire) {
            QUEUED if s.home.load(Ordering::Relaxed) == here => mine = mine || pred(t),
            QUEUED | RUNNING | NOTIFIED => other = other || pred(t),
            _ => {}
        }
        if mine {
            break;
        }
    }
    (mine, other)
}

/// Marks `id` as yielding to the other ready tasks (back of its home's ready queue).
pub fn requeue(id: usize) {
    intend(id, YIELD);
}

/// Marks `id` as going after every ready task (its home's deferred queue).
pub fn defer(id: usize) {
    intend(id, DEFER);
}

/// Marks `id` as leaving for good (exit after MPI_Finalize).
pub fn retire(id: usize) {
    intend(id, RETIRE);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notification_prevents_lost_wakeup() {
        let _g = queue::tests_serial();
        reset(2);
        queue::reset(1, false, None);
        for id in 0..2 {
            task::slot(id).home.store(0, Ordering::Relaxed);
            start(id);
        }
        assert_eq!(queue::pop_own(0), Some(0));
        running(0);
        wake(0); // running: notified
        assert!(!prepare_park(0));
        assert!(prepare_park(0));
        assert!(!settle(0));
        assert_eq!(state(0), State::Parked);
        wake(0);
        assert_eq!(state(0), State::Ready);
        assert_eq!(queue::pop_own(0), Some(1));
        assert_eq!(queue::pop_own(0), Some(0));
        // A wake-up after the decision to park but before the worker settles it: queued again.
        running(0);
        assert!(prepare_park(0));
        wake(0);
        assert!(!settle(0));
        assert_eq!(queue::pop_own(0), Some(0));
        finish(0);
        finish(1);
        assert_eq!(live(), 0);
        wake(0);
        assert_eq!(state(0), State::Done);
    }
}
