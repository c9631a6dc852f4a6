//! Park/wake bookkeeping and the ready queues, shared by the worker and the code that wakes
//! subranks (the progress engine's completions). Thread-safe so that several workers can
//! share it later (SMP mode); today one worker per process uses it.
//!
//! Two ready queues: `ready` (FIFO, round-robin) and `deferred`, for tasks that could run but
//! asked to go after every other ready task (a compute region whose messages are not there
//! yet, see `core::region`). A round of the worker runs the ready tasks first, then the
//! deferred ones, so a deferred task still gets its turn every round. Within each queue,
//! siblings (tasks of the worker's own real rank) go before cousins (`order`).

use super::lock::Lock;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// In the ready queue or running.
    Ready,
    /// Waiting for a wake-up.
    Parked,
    Done,
}

pub struct Board {
    pub states: Vec<State>,
    /// A wake-up that arrived while the subrank was not parked (consumed by the next park).
    pub tokens: Vec<bool>,
    pub ready: VecDeque<usize>,
    /// Runnable tasks that yielded to every other ready one (served after `ready`).
    pub deferred: VecDeque<usize>,
    /// The real rank each task belongs to (all the same until SMP mode hosts cousins).
    pub home: Vec<u32>,
    pub live: usize,
    /// Exit status of subranks that left through `exit`.
    pub exit_codes: Vec<Option<i32>>,
}

static BOARD: Lock<Option<Board>> = Lock::new(None);

/// Whether a ready queue of the board is not empty, as of the last `with_board`: read
/// without the board's lock on the hot paths (`others_ready`).
static QUEUED: AtomicBool = AtomicBool::new(false);

pub fn with_board<R>(f: impl FnOnce(&mut Board) -> R) -> R {
    let mut g = BOARD.lock();
    let b = g.as_mut().expect("scheduler not started");
    let r = f(b);
    QUEUED.store(!b.ready.is_empty() || !b.deferred.is_empty(), Ordering::Release);
    r
}

pub fn reset(n: usize) {
    let mut g = BOARD.lock();
    *g = Some(Board {
        states: vec![State::Ready; n],
        tokens: vec![false; n],
        ready: (0..n).collect(),
        deferred: VecDeque::new(),
        home: vec![0; n],
        exit_codes: Vec::new(),
        live: n,
    });
    QUEUED.store(n > 0, Ordering::Release);
}

/// Allocates a scheduler id for a new task (reusing finished helper ids), ready to run.
pub fn add_task(first_helper: usize) -> usize {
    with_board(|b| {
        let id = match (first_helper..b.states.len()).find(|&i| b.states[i] == State::Done) {
            Some(i) => i,
            None => {
                b.states.push(State::Done);
                b.tokens.push(false);
                b.home.push(0);
                b.states.len() - 1
            }
        };
        b.states[id] = State::Ready;
        b.tokens[id] = false;
        b.ready.push_back(id);
        b.live += 1;
        id
    })
}

/// Whether some other task could run now (ready or deferred). Every change to the queues
/// goes through `with_board`, which publishes this under the board's lock: no lock here (a
/// blocking call asks before each park decision; a wake-up racing with the read is seen at
/// the next one, as with the lock).
#[inline]
pub fn others_ready() -> bool {
    QUEUED.load(Ordering::Acquire)
}

/// Whether some runnable task other than `me` (queued, deferred, or in the worker's current
/// round) satisfies `pred`.
pub fn any_runnable(me: usize, pred: impl Fn(usize) -> bool) -> bool {
    with_board(|b| b.states.iter().enumerate().any(|(t, &st)| t != me && st == State::Ready && pred(t)))
}

/// Moves the next round into `batch`: the ready tasks, then the deferred ones, each group
/// ordered siblings of `home` first (see `order`).
pub fn take_batch(batch: &mut Vec<usize>, home: u32) {
    with_board(|b| {
        let start = batch.len();
        batch.extend(b.ready.drain(..));
        order(&mut batch[start..], &b.home, home);
        let mid = batch.len();
        batch.extend(b.deferred.drain(..));
        order(&mut batch[mid..], &b.home, home);
    });
}

/// Siblings (tasks whose home is `home`) before cousins, keeping the queue's round-robin
/// order within each (a stable partition).
pub fn order(tasks: &mut [usize], homes: &[u32], home: u32) {
    let cousin = |t: usize| homes.get(t).copied().unwrap_or(home) != home;
    // Usually every task is a sibling: no sort (a stable sort of many tasks allocates).
    if tasks.iter().any(|&t| cousin(t)) {
        tasks.sort_by_key(|&t| cousin(t));
    }
}

/// Makes subrank `id` runnable (or leaves a token if it is not parked yet).
pub fn wake(id: usize) {
    with_board(|b| match b.states[id] {
        State::Parked => {
            b.states[id] = State::Ready;
            b.ready.push_back(id);
            super::metrics::woken(id);
        }
        State::Ready => b.tokens[id] = true,
        State::Done => {}
    });
}

/// Marks `id` parked unless a wake-up token is pending. Returns whether it must suspend.
pub fn prepare_park(id: usize) -> bool {
    with_board(|b| {
        if std::mem::take(&mut b.tokens[id]) {
            false
        } else {
            b.states[id] = State::Parked;
            super::metrics::parked(id);
            true
        }
    })
}

/// Puts `id` at the back of the ready queue (a voluntary yield).
pub fn requeue(id: usize) {
    with_board(|b| {
        b.tokens[id] = false;
        b.ready.push_back(id)
    });
}

/// Puts `id` at the back of the deferred queue: it runs after every ready task.
pub fn defer(id: usize) {
    with_board(|b| {
        b.tokens[id] = false;
        b.deferred.push_back(id)
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::all_siblings(&[3, 1, 2], &[0, 0, 0, 0], 0, &[3, 1, 2])]
    #[case::cousins_last(&[0, 1, 2, 3], &[1, 0, 1, 0], 0, &[1, 3, 0, 2])]
    #[case::other_home(&[0, 1, 2, 3], &[1, 0, 1, 0], 1, &[0, 2, 1, 3])]
    #[case::unknown_home_is_sibling(&[5, 0], &[1], 0, &[5, 0])]
    fn siblings_before_cousins(#[case] tasks: &[usize], #[case] homes: &[u32], #[case] home: u32, #[case] want: &[usize]) {
        let mut t = tasks.to_vec();
        order(&mut t, homes, home);
        assert_eq!(t, want);
    }

    #[test]
    fn token_prevents_lost_wakeup() {
        reset(2);
        with_board(|b| b.ready.clear());
        wake(1); // not parked yet: leaves a token
        assert!(!prepare_park(1));
        assert!(prepare_park(1));
        wake(1);
        assert_eq!(with_board(|b| b.ready.pop_front()), Some(1));
        wake(0);
        wake(0);
        assert!(!prepare_park(0));
    }
}
