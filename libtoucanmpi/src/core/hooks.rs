//! What the worker calls between subranks: the progress engine.

use super::p2p::shared::Polled;
use super::state;
use crate::sched::worker::Hooks;

pub struct Progress;

/// Most transport polls per worker poll.
const DRAIN: usize = 32;

/// Most read-side polls in one worker poll of an idle worker that keeps polling
/// (`Hooks::keep_polling`); the worker's loop (timers, stealing, deadlock checks, its
/// periodic yield) runs between such groups.
const HOT_POLLS: u32 = 16;

impl Hooks for Progress {
    /// Takes in what arrived (a transport poll takes one control message at a time), so
    /// that every sibling it concerns is woken before the next one runs.
    ///
    /// First on the read side (`p2p::shared::poll`: plain eager messages from other
    /// processes go to their receivers with only the transport's and the receiver's locks);
    /// the write side only when something else arrived or completes. There, worker 0 waits
    /// for the state lock; the others poll only when it is free (somebody holding it is
    /// driving the transport or will poll soon), so idle workers do not queue up behind each
    /// other on it.
    fn poll(&self, worker: usize) -> bool {
        let drain = |s: &mut state::State| {
            let mut any = false;
            for _ in 0..DRAIN {
                if !s.progress() {
                    break;
                }
                any = true;
            }
            any
        };
        // The read side first (plain eager arrivals need no write side, so the
        // other workers' subranks go on meanwhile).
        // With point-to-point passing through (`p2p::direct`), what completes is the real
        // MPI's requests and probes: the write side's step.
        if !crate::core::p2p::direct::on() {
            // An idle worker that keeps polling (issue 18: another process's one-sided
            // operations wait for our progress) polls again here while nothing arrives and
            // no task may run, up to `HOT_POLLS` times: one real progress step per pass and
            // little else, as the real MPI's own progress loop (the worker's loop around a
            // poll costs about as much as the real step; rma6).
            let mut hot = if crate::sched::queue::any_for(worker) || !self.keep_polling() {
                1
            } else {
                HOT_POLLS
            };
            loop {
                match state::shared_idle(worker, |sh| crate::core::p2p::shared::poll(&sh)) {
                    Some(Polled::Delivered) => return true,
                    Some(Polled::Nothing) => {
                        hot -= 1;
                        if hot == 0 || crate::sched::queue::any_for(worker) {
                            return false;
                        }
                    }
                    Some(Polled::General) | None => break,
                }
            }
        }
        if worker == 0 {
            state::with(drain).unwrap_or(false)
        } else {
            state::try_with(drain).unwrap_or(false)
        }
    }

    fn idle(&self, idle: std::time::Duration) {
        // A thread of the program that is not waiting in MPI may still send what the parked
        // subranks wait for: not idle (no deadlock) until it waits too.
        if crate::sched::foreign::busy() > 0 {
            return;
        }
        let _ = state::with(|s| super::deadlock::tick(s, idle));
    }

    fn shares_core(&self) -> bool {
        crate::transport::node::shares_core()
    }

    /// Windows spanning processes are alive (issue 18): other processes' one-sided
    /// operations on our memory (a put's fragments, an accumulate, a lock word) are applied
    /// only when we poll the real MPI, so an idle worker with a core of its own keeps polling
    /// as the real MPI's own progress loop would, instead of yielding between polls.
    fn keep_polling(&self) -> bool {
        crate::core::rma::LIVE_REMOTE.load(std::sync::atomic::Ordering::Relaxed) > 0 && !self.shares_core()
    }

    fn started(&self, worker: usize) {
        if let Err(e) = crate::sched::bind::bind_current_thread(super::runtime::plan(), worker) {
            crate::core::diag::say(&format!("toucan: {e}\n"));
        }
    }
}
