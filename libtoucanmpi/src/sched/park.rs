//! Park/wake bookkeeping and the ready queue, shared by the worker and the code that wakes
//! subranks (the progress engine's completions). Thread-safe so that several workers can
//! share it later (SMP mode); today one worker per process uses it.

use super::lock::Lock;
use std::collections::VecDeque;

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
    pub live: usize,
    /// Exit status of subranks that left through `exit`.
    pub exit_codes: Vec<Option<i32>>,
}

static BOARD: Lock<Option<Board>> = Lock::new(None);

pub fn with_board<R>(f: impl FnOnce(&mut Board) -> R) -> R {
    let mut g = BOARD.lock();
    f(g.as_mut().expect("scheduler not started"))
}

pub fn reset(n: usize) {
    let mut g = BOARD.lock();
    *g = Some(Board {
        states: vec![State::Ready; n],
        tokens: vec![false; n],
        ready: (0..n).collect(),
        exit_codes: Vec::new(),
        live: n,
    });
}

/// Allocates a scheduler id for a new task (reusing finished helper ids), ready to run.
pub fn add_task(first_helper: usize) -> usize {
    with_board(|b| {
        let id = match (first_helper..b.states.len()).find(|&i| b.states[i] == State::Done) {
            Some(i) => i,
            None => {
                b.states.push(State::Done);
                b.tokens.push(false);
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

/// Whether some subrank is waiting in the ready queue.
pub fn others_ready() -> bool {
    with_board(|b| !b.ready.is_empty())
}

/// Makes subrank `id` runnable (or leaves a token if it is not parked yet).
pub fn wake(id: usize) {
    with_board(|b| match b.states[id] {
        State::Parked => {
            b.states[id] = State::Ready;
            b.ready.push_back(id);
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

#[cfg(test)]
mod tests {
    use super::*;

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
