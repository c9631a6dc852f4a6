//! Background progress: a thread per process that drives the transport while the worker is
//! busy in the application's code.
//!
//! Bytes move between processes only when somebody calls into the real MPI (over TCP, UCX
//! writes a socket when it is polled and the peer reads it when it is polled). The worker
//! polls between subranks, but a subrank computing for milliseconds polls nothing: a message
//! its siblings wait for would stand still for the whole compute phase, and overdecomposition
//! would hide nothing. So, when the worker has not polled for `interval` and some
//! communication is outstanding (a posted or blocked receive, an incomplete request, a real
//! transfer in flight: `awaits_transport`), this thread takes the state lock (only if free:
//! it never makes the worker wait long) and runs the same progress the worker runs;
//! completions wake the parked subranks, which the worker resumes at its next switch. With
//! nothing outstanding, or while the worker polls by itself, it backs off to `IDLE_MAX`
//! between looks (about a thousand wake-ups a second). The real MPI is initialised at
//! MPI_THREAD_SERIALIZED: every call it receives is made under the state lock, from
//! whichever thread holds it.

use super::state;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::Duration;

/// Progress steps so far, by anyone (the thread stays out while others make them).
static STEPS: AtomicU64 = AtomicU64::new(0);
static STOP: AtomicBool = AtomicBool::new(false);
static THREAD: Mutex<Option<JoinHandle<()>>> = Mutex::new(None);

/// Longest pause between two looks when nothing is outstanding.
const IDLE_MAX: Duration = Duration::from_millis(1);

/// Transport polls per look (as the worker's hook: see `hooks::DRAIN`).
const DRAIN: usize = 32;

/// A progress step ran (`State::progress`, under the state lock: a plain load and store, no
/// locked instruction on the hot path). Counts the worker's polls, a blocked subrank's polls
/// in place and this thread's own.
#[inline]
pub fn stepped() {
    STEPS.store(STEPS.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
}

/// Pause of a thread that the first nonblocking collective between processes may start
/// (`wanted`), in microseconds; 0: none (the thread runs from the start, or must not run).
static ON_DEMAND_US: AtomicU64 = AtomicU64::new(0);

/// Lets the first nonblocking collective between processes start the thread with pause
/// `interval` (at V = 1, where it does not run from the start: see `runtime`).
pub fn on_demand(interval: Duration) {
    ON_DEMAND_US.store(interval.as_micros() as u64, Ordering::Relaxed);
}

/// The thread's current pause, in microseconds (0: not running).
static PAUSE_US: AtomicU64 = AtomicU64::new(0);
/// Its interval, in microseconds.
static INTERVAL_US: AtomicU64 = AtomicU64::new(0);
/// Set by `wanted`: the thread returns to its interval and does not count the steps the
/// caller made meanwhile as a sign that the worker polls by itself.
static KICK: AtomicBool = AtomicBool::new(false);

/// Earliest time (CLOCK_MONOTONIC ns) of the next kick (`wanted`): kicks that the next look
/// found useless (the worker polled by itself meanwhile: the caller did not compute) push it
/// further out (`next_gap`), so that a loop of nonblocking collectives and waits does not wake
/// the thread twice per interval (a wake-up takes a core from one of the processes: on this
/// 2-core machine IMB-NBC's small calls at n=2 V=1 lost 0.1-0.16 µs each to it).
static NEXT_KICK_NS: AtomicU64 = AtomicU64::new(0);
/// The present gap between kicks, in nanoseconds (0: every start may kick).
static KICK_GAP_NS: AtomicU64 = AtomicU64::new(0);
/// Longest gap between kicks: a compute phase starting after a stretch of back-to-back calls
/// gets its first look within this or `IDLE_MAX`, whichever the thread reaches first.
const KICK_GAP_MAX: Duration = Duration::from_millis(8);

/// A nonblocking collective between processes was started: its later steps must move while
/// the caller computes. The thread starts now if it may (once); a running thread that backed
/// off (to `IDLE_MAX` between looks: a compute phase of the caller's as short as the
/// collective would see one look at most) comes back to its interval at once, unless the last
/// kicks were useless (`NEXT_KICK_NS`). Costs two loads when the thread looks at its interval
/// already.
pub fn wanted() {
    kick(false);
}

/// `wanted`'s body; `force`: whatever the last kicks were worth (`serve`: the caller is about
/// to block inside the real MPI, where it polls nothing of ours).
fn kick(force: bool) {
    if ON_DEMAND_US.load(Ordering::Relaxed) != 0 {
        let us = ON_DEMAND_US.swap(0, Ordering::Relaxed);
        if us > 0 {
            // Without the thread the collective still completes, at the caller's wait.
            let _ = start(Duration::from_micros(us));
            return;
        }
    }
    if PAUSE_US.load(Ordering::Relaxed) <= INTERVAL_US.load(Ordering::Relaxed) || KICK.load(Ordering::Relaxed) {
        return;
    }
    let now = crate::sched::timer::now();
    if (!force && now < NEXT_KICK_NS.load(Ordering::Relaxed)) || KICK.swap(true, Ordering::Relaxed) {
        return;
    }
    NEXT_KICK_NS.store(now + KICK_GAP_NS.load(Ordering::Relaxed), Ordering::Relaxed);
    if let Some(t) = THREAD.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
        t.thread().unpark();
    }
}

/// Starts the thread (once per process) when `interval` is not zero.
pub fn start(interval: Duration) -> std::io::Result<()> {
    if interval.is_zero() {
        return Ok(());
    }
    let mut t = THREAD.lock().unwrap_or_else(|e| e.into_inner());
    if t.is_none() {
        STOP.store(false, Ordering::Relaxed);
        *t = Some(
            std::thread::Builder::new()
                .name("toucan-progress".into())
                .spawn(move || run(interval))?,
        );
    }
    Ok(())
}

/// Stops the thread and waits for it (before the real MPI is finalized).
pub fn stop() {
    ON_DEMAND_US.store(0, Ordering::Relaxed);
    let t = THREAD.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(t) = t {
        STOP.store(true, Ordering::Relaxed);
        t.thread().unpark();
        let _ = t.join();
    }
    PAUSE_US.store(0, Ordering::Relaxed);
}

/// What one look found.
#[derive(Debug, PartialEq, Eq)]
enum Look {
    /// The worker (or a blocked subrank) made progress since the last look, or holds the lock.
    WorkerActive,
    /// Nothing outstanding: back off.
    Quiet,
    /// Polled; whether the transport moved.
    Polled(bool),
}

fn run(interval: Duration) {
    // Started by a worker that may be bound to one core (SMP mode): run on the process's.
    let _ = crate::sched::bind::bind_current_thread_to_process(super::runtime::plan());
    let mut seen = STEPS.load(Ordering::Relaxed);
    let mut pause = interval;
    // The last wake-up was a kick's: the next look tells whether it served a compute phase.
    let mut kicked = false;
    INTERVAL_US.store(interval.as_micros() as u64, Ordering::Relaxed);
    while !STOP.load(Ordering::Relaxed) {
        PAUSE_US.store(pause.as_micros() as u64, Ordering::Relaxed);
        std::thread::park_timeout(pause);
        if STOP.load(Ordering::Relaxed) {
            break;
        }
        if KICK.swap(false, Ordering::Relaxed) {
            // A nonblocking collective just started (`wanted`): look again after the
            // interval, whatever the caller polled while starting it.
            seen = STEPS.load(Ordering::Relaxed);
            pause = interval;
            kicked = true;
            continue;
        }
        let now = STEPS.load(Ordering::Relaxed);
        let look = if now != seen { Look::WorkerActive } else { look_once() };
        // After our own steps: only the worker's (or a blocked subrank's) move it from here.
        seen = STEPS.load(Ordering::Relaxed);
        if std::mem::take(&mut kicked) {
            let gap = Duration::from_nanos(KICK_GAP_NS.load(Ordering::Relaxed));
            KICK_GAP_NS.store(next_gap(&look, gap, interval).as_nanos() as u64, Ordering::Relaxed);
        }
        pause = next_pause(&look, pause, interval);
    }
}

/// Sleep before the next look: the interval after a poll of ours; doubling up to `IDLE_MAX`
/// while nothing is outstanding or the worker polls by itself (a job that communicates all
/// the time, e.g. a ping-pong, then sees about a thousand wake-ups a second, not one per
/// interval). So a compute phase shorter than about `IDLE_MAX` is left to the worker, which
/// polls between subranks anyway; a longer one is served from at most `IDLE_MAX` into it.
fn next_pause(look: &Look, pause: Duration, interval: Duration) -> Duration {
    match look {
        Look::Polled(_) => interval,
        Look::Quiet | Look::WorkerActive => (pause * 2).clamp(interval, IDLE_MAX.max(interval)),
    }
}

/// Gap between kicks after a kick whose first look found `look`: none after one that served a
/// compute phase (the thread polled), doubled (from the interval, up to `KICK_GAP_MAX`) after
/// one the worker made useless by polling itself; unchanged when nothing was outstanding.
fn next_gap(look: &Look, gap: Duration, interval: Duration) -> Duration {
    match look {
        Look::Polled(_) => Duration::ZERO,
        Look::WorkerActive => (gap * 2).clamp(interval, KICK_GAP_MAX.max(interval)),
        Look::Quiet => gap,
    }
}

fn look_once() -> Look {
    state::try_with(|s| {
        super::coll::solo::watch(s);
        if !awaits_transport(s) {
            return Look::Quiet;
        }
        let mut any = false;
        for _ in 0..DRAIN {
            if !s.progress() {
                break;
            }
            any = true;
        }
        Look::Polled(any)
    })
    .unwrap_or(Look::WorkerActive)
}

/// Whether something may wait for the transport: a real request in flight, a posted or
/// blocked receive (its message may come from another process), an incomplete request (a
/// send waiting for its acknowledgement or payload, a receive, ...). Subranks that wait only
/// for their siblings (a barrier's local meeting, say) do not: polling for them would only
/// take the core from the computing subrank. Runs under the state lock: with more than
/// `SCAN_MAX` live requests it does not look at each one, it polls.
/// Makes sure the thread serves the transport from now on (started on demand, or brought
/// back to its interval) while the caller blocks elsewhere (`coll::solo`). False when no
/// thread may run (`TOUCAN_PROGRESS=0` at V = 1).
pub fn serve() -> bool {
    kick(true);
    THREAD.lock().unwrap_or_else(|e| e.into_inner()).is_some()
}

pub(crate) fn awaits_transport(s: &state::State) -> bool {
    s.tp.has_pending()
        // issue 18: other processes' one-sided operations on our windows need our polls.
        || super::rma::LIVE_REMOTE.load(std::sync::atomic::Ordering::Relaxed) > 0
        || s.locals
            .iter()
            .any(|l| !l.posted.is_empty() || l.waiting.is_some() || l.direct.is_some())
        || s.live_requests() > SCAN_MAX
        || s.requests().any(|r| r.active && !r.complete && r.greq.is_none())
}

/// Live requests `awaits_transport` looks at one by one, at most.
const SCAN_MAX: usize = 64;

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const I: Duration = Duration::from_micros(100);

    #[rstest]
    #[case::active_backs_off(Look::WorkerActive, Duration::from_micros(300), Duration::from_micros(600))]
    #[case::polled_resets(Look::Polled(false), Duration::from_micros(800), I)]
    #[case::quiet_doubles(Look::Quiet, I, Duration::from_micros(200))]
    #[case::quiet_caps(Look::Quiet, Duration::from_micros(900), IDLE_MAX)]
    fn pauses(#[case] look: Look, #[case] pause: Duration, #[case] want: Duration) {
        assert_eq!(next_pause(&look, pause, I), want);
    }

    #[rstest]
    #[case::served_compute_resets(Look::Polled(true), Duration::from_millis(4), Duration::ZERO)]
    #[case::served_nothing_resets(Look::Polled(false), Duration::from_millis(4), Duration::ZERO)]
    #[case::useless_starts_at_interval(Look::WorkerActive, Duration::ZERO, I)]
    #[case::useless_doubles(Look::WorkerActive, Duration::from_micros(400), Duration::from_micros(800))]
    #[case::useless_caps(Look::WorkerActive, Duration::from_millis(6), KICK_GAP_MAX)]
    #[case::quiet_keeps(Look::Quiet, Duration::from_micros(400), Duration::from_micros(400))]
    fn kick_gaps(#[case] look: Look, #[case] gap: Duration, #[case] want: Duration) {
        assert_eq!(next_gap(&look, gap, I), want);
    }

    #[test]
    fn long_interval_is_not_capped_below_itself() {
        let i = Duration::from_millis(5);
        assert_eq!(next_pause(&Look::Quiet, i, i), i);
    }
}
