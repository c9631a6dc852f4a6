//! Where a process's time goes, for the overlap report (`TOUCAN_REPORT`). Off by default;
//! when on, clocks are read only where the scheduler switches, parks, wakes or goes idle, and
//! where a task enters a region or waits in place: never on the send/receive path.
//!
//! Categories (per process): time running subranks (compute), time with no task to run or a
//! subrank waiting in place (blocked), and the rest of the worker's time (runtime: switches,
//! progress polls between rounds, helper tasks). `waiting` is the time during which at least
//! one subrank waited for a message; the part of it that was not blocked was hidden behind
//! other subranks' work.

use super::lock::Lock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// Region kinds as the scheduler tracks them (index into the per-kind arrays).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Outside any region (no region calls, or after `TOUCAN_END`).
    None = 0,
    Receive = 1,
    Send = 2,
    Compute = 3,
}

pub const KINDS: usize = 4;
pub const KIND_NAMES: [&str; KINDS] = ["none", "receive", "send", "compute"];

/// Per-kind totals of one task.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PerKind {
    /// Seconds running in this kind of region.
    pub run: f64,
    /// Seconds parked (or waiting in place) while in this kind of region.
    pub blocked: f64,
    /// Times the region was entered.
    pub entries: u64,
}

#[derive(Clone, Debug)]
struct Task {
    kind: Kind,
    /// Start of the current stretch of running (at resume or at the last region change).
    mark: Option<Instant>,
    /// When it parked or began to wait in place.
    waiting_since: Option<Instant>,
    kinds: [PerKind; KINDS],
}

impl Task {
    fn new() -> Task {
        Task {
            kind: Kind::None,
            mark: None,
            waiting_since: None,
            kinds: [PerKind::default(); KINDS],
        }
    }
}

/// One worker's share of a process's totals (SMP mode).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WorkerTotals {
    /// Running subranks (their in-place waits excluded).
    pub compute: f64,
    /// Nothing to run, or a subrank waiting in place on this worker.
    pub blocked: f64,
    /// Tasks this worker took from the others' queues.
    pub steals: u64,
}

/// Totals for one process, as the report reads them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Totals {
    pub wall: f64,
    /// Subranks running (their in-place waits excluded).
    pub compute: f64,
    /// Nothing to run, or a subrank waiting in place with nothing else to run.
    pub blocked: f64,
    /// At least one subrank waiting for a message.
    pub waiting: f64,
    /// Helper tasks (nonblocking collectives) running.
    pub helpers: f64,
    pub switches: u64,
    pub parks: u64,
    pub subranks: usize,
    /// Worker threads (SMP mode: more than one; then compute, blocked and runtime are
    /// worker-seconds, adding up to `wall` times `workers`).
    pub workers: usize,
    /// Tasks a worker took from another's queues.
    pub steals: u64,
    /// Home changes of the load balance between workers (`balance`).
    pub moves: u64,
    /// Summed over the subranks.
    pub kinds: [PerKind; KINDS],
    /// Per worker (one entry per worker thread).
    pub per_worker: Vec<WorkerTotals>,
}

impl Totals {
    /// Worker time that was neither compute nor blocked: switches, polls, helper tasks.
    pub fn runtime(&self) -> f64 {
        (self.wall * self.workers.max(1) as f64 - self.compute - self.blocked).max(0.0)
    }
}

struct Metrics {
    start: Instant,
    end: Option<Instant>,
    subranks: usize,
    tasks: Vec<Task>,
    /// Resumes by the worker.
    switches: u64,
    parks: u64,
    helpers: f64,
    /// Per worker, since when it has found nothing to run.
    idle_since: Vec<Option<Instant>>,
    /// Subranks now waiting (parked or in place), and since when the count is non-zero.
    waiting_now: usize,
    waiting_since: Option<Instant>,
    waiting: f64,
    /// Per worker (the process's totals are their sums): time running subranks, time idle,
    /// subranks' in-place waits (inside the running time), steals.
    wrun: Vec<f64>,
    widle: Vec<f64>,
    wspin: Vec<f64>,
    wsteals: Vec<u64>,
}

static ON: AtomicBool = AtomicBool::new(false);
static METRICS: Lock<Option<Metrics>> = Lock::new(None);

fn secs(a: Instant, b: Instant) -> f64 {
    b.saturating_duration_since(a).as_secs_f64()
}

/// Whether metrics are being collected.
#[inline]
pub fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

fn with<R>(f: impl FnOnce(&mut Metrics, Instant) -> R) -> Option<R> {
    if !on() {
        return None;
    }
    let now = Instant::now();
    METRICS.lock().as_mut().map(|m| f(m, now))
}

/// Starts collecting for `workers` workers running `subranks` subranks (task ids below it).
pub fn start(subranks: usize, workers: usize) {
    *METRICS.lock() = Some(Metrics {
        start: Instant::now(),
        end: None,
        subranks,
        tasks: vec![Task::new(); subranks],
        switches: 0,
        parks: 0,
        helpers: 0.0,
        idle_since: vec![None; workers.max(1)],
        waiting_now: 0,
        waiting_since: None,
        waiting: 0.0,
        wrun: vec![0.0; workers.max(1)],
        widle: vec![0.0; workers.max(1)],
        wspin: vec![0.0; workers.max(1)],
        wsteals: vec![0; workers.max(1)],
    });
    ON.store(true, Ordering::Relaxed);
}

/// Stops the clock (the workers have no task left).
pub fn stop() {
    with(|m, now| {
        for w in 0..m.idle_since.len() {
            idle_end(m, w, now);
        }
        m.end = Some(now);
    });
}

fn task(m: &mut Metrics, id: usize) -> Option<&mut Task> {
    if id < m.subranks {
        m.tasks.get_mut(id)
    } else {
        None
    }
}

/// Worker `w` is about to resume task `id`; returns the time to pass to `suspended`.
#[inline]
pub fn resuming(id: usize, w: usize) -> Option<Instant> {
    with(|m, now| {
        idle_end(m, w, now);
        m.switches += 1;
        if let Some(t) = task(m, id) {
            t.mark = Some(now);
        }
        now
    })
}

/// Task `id`, resumed at `since` by worker `w`, came back to it.
#[inline]
pub fn suspended(id: usize, w: usize, since: Option<Instant>) {
    let Some(since) = since else { return };
    with(|m, now| {
        let d = secs(since, now);
        match task(m, id) {
            Some(t) => {
                if let Some(mark) = t.mark.take() {
                    t.kinds[t.kind as usize].run += secs(mark, now);
                }
                if let Some(r) = m.wrun.get_mut(w) {
                    *r += d;
                }
            }
            None => m.helpers += d,
        }
    });
}

/// Worker `w` found nothing to run.
pub fn idle_begin(w: usize) {
    with(|m, now| {
        if let Some(s) = m.idle_since.get_mut(w) {
            s.get_or_insert(now);
        }
    });
}

/// Worker `w` took `n` tasks from another worker.
pub fn stole(w: usize, n: usize) {
    with(|m, _| {
        if let Some(s) = m.wsteals.get_mut(w) {
            *s += n as u64;
        }
    });
}

fn idle_end(m: &mut Metrics, w: usize, now: Instant) {
    if let Some(s) = m.idle_since.get_mut(w).and_then(Option::take) {
        if let Some(i) = m.widle.get_mut(w) {
            *i += secs(s, now);
        }
    }
}

fn wait_begin(m: &mut Metrics, id: usize, now: Instant) {
    let Some(t) = task(m, id) else { return };
    if t.waiting_since.is_some() {
        return;
    }
    t.waiting_since = Some(now);
    if m.waiting_now == 0 {
        m.waiting_since = Some(now);
    }
    m.waiting_now += 1;
}

/// Ends task `id`'s wait; returns its length.
fn wait_end(m: &mut Metrics, id: usize, now: Instant) -> f64 {
    let Some(t) = task(m, id) else { return 0.0 };
    let Some(s) = t.waiting_since.take() else { return 0.0 };
    let d = secs(s, now);
    t.kinds[t.kind as usize].blocked += d;
    m.waiting_now -= 1;
    if m.waiting_now == 0 {
        if let Some(ws) = m.waiting_since.take() {
            m.waiting += secs(ws, now);
        }
    }
    d
}

/// Task `id` parks until a wake-up.
pub fn parked(id: usize) {
    with(|m, now| {
        m.parks += 1;
        // Its running stretch ends here (the rest of the resume is the switch back).
        if let Some(t) = task(m, id) {
            if let Some(mark) = t.mark.take() {
                t.kinds[t.kind as usize].run += secs(mark, now);
            }
        }
        wait_begin(m, id, now);
    });
}

/// Task `id` was woken (or finished).
pub fn woken(id: usize) {
    with(|m, now| {
        wait_end(m, id, now);
    });
}

/// The running task `id` begins to wait for a message in place (nobody else can run).
pub fn spin_begin(id: usize) {
    with(|m, now| wait_begin(m, id, now));
}

/// The in-place wait of `id` is over.
pub fn spin_end(id: usize) {
    with(|m, now| {
        let d = wait_end(m, id, now);
        // The task waited in place on the worker running it (it does not move meanwhile).
        if let Some(s) = m.wspin.get_mut(super::worker::worker_index()) {
            *s += d;
        }
        // Waiting in place is not running its region.
        if let Some(t) = task(m, id) {
            t.kinds[t.kind as usize].run -= d;
        }
    });
}

/// The running task `id` enters a region of `kind`.
pub fn region(id: usize, kind: Kind) {
    with(|m, now| {
        if let Some(t) = task(m, id) {
            if let Some(mark) = t.mark.replace(now) {
                t.kinds[t.kind as usize].run += secs(mark, now);
            }
            t.kind = kind;
            t.kinds[kind as usize].entries += 1;
        }
    });
}

/// The totals so far (None when metrics are off).
pub fn totals() -> Option<Totals> {
    if !on() {
        return None;
    }
    let now = Instant::now();
    let g = METRICS.lock();
    let m = g.as_ref()?;
    let end = m.end.unwrap_or(now);
    let mut kinds = [PerKind::default(); KINDS];
    for t in &m.tasks {
        for (k, pk) in kinds.iter_mut().zip(t.kinds.iter()) {
            k.run += pk.run.max(0.0);
            k.blocked += pk.blocked;
            k.entries += pk.entries;
        }
    }
    let open_wait = m.waiting_since.map(|s| secs(s, end)).unwrap_or(0.0);
    let open_idle: f64 = m.idle_since.iter().flatten().map(|&s| secs(s, end)).sum();
    let spin: f64 = m.wspin.iter().sum();
    let per_worker = (0..m.idle_since.len())
        .map(|w| {
            let open = m.idle_since[w].map(|s| secs(s, end)).unwrap_or(0.0);
            WorkerTotals {
                compute: (m.wrun[w] - m.wspin[w]).max(0.0),
                blocked: m.widle[w] + open + m.wspin[w],
                steals: m.wsteals[w],
            }
        })
        .collect();
    Some(Totals {
        wall: secs(m.start, end),
        compute: (m.wrun.iter().sum::<f64>() - spin).max(0.0),
        blocked: m.widle.iter().sum::<f64>() + open_idle + spin,
        waiting: m.waiting + open_wait,
        helpers: m.helpers,
        switches: m.switches,
        parks: m.parks,
        subranks: m.subranks,
        workers: m.idle_since.len(),
        steals: m.wsteals.iter().sum(),
        moves: super::balance::moves() as u64,
        kinds,
        per_worker,
    })
}
