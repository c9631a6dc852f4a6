//! What the worker calls between subranks: the progress engine.

use super::state;
use crate::sched::worker::Hooks;

pub struct Progress;

impl Hooks for Progress {
    fn poll(&mut self) -> bool {
        state::with(|s| s.progress()).unwrap_or(false)
    }

    fn idle(&mut self, idle: std::time::Duration) {
        let _ = state::with(|s| super::deadlock::tick(s, idle));
    }
}
