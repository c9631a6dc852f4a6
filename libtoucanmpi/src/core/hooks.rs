//! What the worker calls between subranks: the progress engine.

use super::state;
use crate::sched::worker::Hooks;

pub struct Progress;

/// Most transport polls per worker poll.
const DRAIN: usize = 32;

impl Hooks for Progress {
    /// Takes in what arrived (a transport poll takes one control message at a time), so
    /// that every sibling it concerns is woken before the next one runs.
    fn poll(&mut self) -> bool {
        state::with(|s| {
            let mut any = false;
            for _ in 0..DRAIN {
                if !s.progress() {
                    break;
                }
                any = true;
            }
            any
        })
        .unwrap_or(false)
    }

    fn idle(&mut self, idle: std::time::Duration) {
        let _ = state::with(|s| super::deadlock::tick(s, idle));
    }

    fn shares_core(&mut self) -> bool {
        crate::transport::node::shares_core()
    }
}
