//! Load balance between the workers of a process (SMP mode): subranks change home worker by
//! their measured run time, the way AMPI's load balancers migrate ranks between cores, but
//! without moving anything: a task's home only says whose ready queue it joins when woken.
//!
//! Work stealing already keeps every core busy while any subrank can run, but it moves one
//! whole task at a time, late (when a worker has nothing left), and the task goes home again
//! at its next wake-up: with ranks of uneven cost (half of them three times the work of the
//! others), the workers still end each step unevenly. Here each worker adds up the time it
//! runs each subrank; every `period`, the first worker to see the period over compares the
//! workers' loads (the run time of their home subranks over the last periods, averaged)
//! with those of a greedy placement (heaviest subrank first, each kept home while its home
//! stays within an even share, else to the least loaded worker) and moves the homes when that placement's busiest
//! worker would carry a tenth less. Balanced programs (equal loads) never move.
//!
//! Only when workers may run each other's tasks (`queue::steals`: no per-thread state pins
//! them) and a period was given (`TOUCAN_BALANCE`). The clock is read at each resume and
//! suspension only then.

use super::lock::Lock;
use super::queue;
use super::task;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Whether the loads are measured and balanced in this run.
static ON: AtomicBool = AtomicBool::new(false);
/// Subranks taking part (ids 0..N; helper tasks keep the home of their creator).
static SUBRANKS: AtomicUsize = AtomicUsize::new(0);
/// Period, and the next balance time, in ns since `EPOCH`.
static PERIOD_NS: AtomicU64 = AtomicU64::new(0);
static NEXT_NS: AtomicU64 = AtomicU64::new(u64::MAX);
/// Home changes so far.
static MOVES: AtomicUsize = AtomicUsize::new(0);
/// What the balancer remembers between periods: run time seen at the last look, and the
/// smoothed load per subrank (ns per period). Taken by one worker at a time.
static HISTORY: Lock<History> = Lock::new(History {
    seen: Vec::new(),
    load: Vec::new(),
});
static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();

struct History {
    seen: Vec<u64>,
    load: Vec<u64>,
}

/// A placement must make the busiest worker this much lighter (in 1/100) to be applied.
const GAIN_PCT: u64 = 90;

fn now_ns() -> u64 {
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// Starts balancing `n` subranks every `period` (None: not in this run).
pub fn start(n: usize, period: Option<Duration>) {
    let on = period.is_some() && queue::steals();
    SUBRANKS.store(n, Ordering::Relaxed);
    MOVES.store(0, Ordering::Relaxed);
    *HISTORY.lock() = History {
        seen: vec![0; n],
        load: vec![0; n],
    };
    let p = period.map_or(0, |d| d.as_nanos().max(1) as u64);
    PERIOD_NS.store(p, Ordering::Relaxed);
    NEXT_NS.store(if on { now_ns().saturating_add(p) } else { u64::MAX }, Ordering::Relaxed);
    ON.store(on, Ordering::Release);
}

/// Stops measuring (the run is over).
pub fn stop() {
    ON.store(false, Ordering::Release);
    NEXT_NS.store(u64::MAX, Ordering::Relaxed);
}

/// Whether this run balances.
#[inline]
pub fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// Home changes made so far in this run.
pub fn moves() -> usize {
    MOVES.load(Ordering::Relaxed)
}

/// The clock before a resume, when balancing.
#[inline]
pub fn resuming() -> Option<u64> {
    on().then(now_ns)
}

/// After task `id`, resumed at `since`, suspended: adds its run time, and balances when the
/// period is over (whichever worker sees it first).
#[inline]
pub fn suspended(id: usize, since: Option<u64>) {
    let Some(t0) = since else { return };
    let t = now_ns();
    let s = task::slot(id);
    // Only the worker that owns the task (it ran it) writes its counter.
    s.busy
        .store(s.busy.load(Ordering::Relaxed).wrapping_add(t.saturating_sub(t0)), Ordering::Relaxed);
    let next = NEXT_NS.load(Ordering::Relaxed);
    if t >= next
        && NEXT_NS
            .compare_exchange(
                next,
                t.saturating_add(PERIOD_NS.load(Ordering::Relaxed)),
                Ordering::AcqRel,
                Ordering::Relaxed,
            )
            .is_ok()
    {
        balance();
    }
}

/// One look at the loads: moves homes when a greedy placement is clearly better.
#[cold]
fn balance() {
    let Some(mut h) = HISTORY.try_lock() else { return };
    let n = SUBRANKS.load(Ordering::Relaxed).min(h.seen.len());
    let workers = queue::workers();
    if n == 0 || workers < 2 {
        return;
    }
    let mut home = Vec::with_capacity(n);
    for k in 0..n {
        let s = task::slot(k);
        let busy = s.busy.load(Ordering::Relaxed);
        let delta = busy.wrapping_sub(h.seen[k]);
        h.seen[k] = busy;
        // Half the last period, half the history: a step's worth of noise does not move.
        h.load[k] = if h.load[k] == 0 { delta } else { (h.load[k] + delta) / 2 };
        let done = s.state.load(Ordering::Relaxed) == task::DONE;
        if done {
            h.load[k] = 0;
        }
        home.push(s.home.load(Ordering::Relaxed).min(workers - 1));
    }
    let plan = place(&h.load[..n], &home, workers);
    let (cur, new) = (max_load(&h.load[..n], &home, workers), max_load(&h.load[..n], &plan, workers));
    if cur == 0 || new * 100 > cur * GAIN_PCT {
        return;
    }
    let mut moved = 0;
    for (k, (&old, &w)) in home.iter().zip(&plan).enumerate() {
        if old != w {
            task::slot(k).home.store(w, Ordering::Relaxed);
            moved += 1;
        }
    }
    MOVES.fetch_add(moved, Ordering::Relaxed);
}

/// The busiest worker's load with homes `home`.
fn max_load(load: &[u64], home: &[usize], workers: usize) -> u64 {
    let mut per = vec![0u64; workers];
    for (l, &w) in load.iter().zip(home) {
        per[w] += l;
    }
    per.into_iter().max().unwrap_or(0)
}

/// Greedy placement: subranks by load, heaviest first; each stays home while its home
/// worker stays within the target (an even share of the total, or the heaviest subrank when
/// that is more), else goes to the least loaded worker so far. Idle subranks stay home. So a
/// balanced placement is kept as it is, and an unbalanced one moves few subranks.
fn place(load: &[u64], home: &[usize], workers: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..load.len()).collect();
    order.sort_by(|&a, &b| load[b].cmp(&load[a]).then(a.cmp(&b)));
    let total: u64 = load.iter().sum();
    let target = total.div_ceil(workers as u64).max(load.iter().copied().max().unwrap_or(0));
    let mut per = vec![0u64; workers];
    let mut plan = home.to_vec();
    for k in order {
        if load[k] == 0 {
            continue;
        }
        let w = if per[home[k]] + load[k] <= target {
            home[k]
        } else {
            (0..workers).min_by_key(|&w| per[w]).unwrap_or(home[k])
        };
        plan[k] = w;
        per[w] += load[k];
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    // Half the subranks three times the work of the others, all on worker 0's half: two
    // heavy and two light ones each.
    #[case(&[3, 3, 3, 3, 1, 1, 1, 1], &[0, 0, 0, 0, 1, 1, 1, 1], 2, 8)]
    // Balanced: nothing to gain.
    #[case(&[2, 2, 2, 2], &[0, 0, 1, 1], 2, 4)]
    // One subrank heavier than all the others together: it gets a worker of its own.
    #[case(&[10, 1, 1, 1], &[0, 0, 1, 1], 2, 10)]
    // Finished subranks (load 0) stay where they are and count for nothing.
    #[case(&[0, 5, 0, 5], &[0, 0, 1, 1], 2, 5)]
    fn greedy_placement(#[case] load: &[u64], #[case] home: &[usize], #[case] workers: usize, #[case] max: u64) {
        let plan = place(load, home, workers);
        assert_eq!(max_load(load, &plan, workers), max);
        assert!(plan.iter().all(|&w| w < workers));
    }

    #[test]
    fn balanced_homes_stay() {
        let load = [2, 2, 2, 2];
        let home = [0, 0, 1, 1];
        assert_eq!(place(&load, &home, 2), home.to_vec());
    }
}
