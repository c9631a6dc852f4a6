//! The worker: runs subranks round-robin, polls progress between rounds, and backs off the
//! core when every subrank is parked (so processes sharing a core are not starved).

use super::coroutine::{Resumed, Subrank};
use super::metrics;
use super::park::{self, State};
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Rounds of subranks run between two polls of the progress engine while some are ready.
const POLL_EVERY: u32 = 4;

/// The thread that runs subranks (its `thread_word`), 0 while none does. Every MPI call asks
/// for the running subrank, several times: a thread-local would cost a `__tls_get_addr` call
/// each time in this shared library, this costs a compare.
static WORKER: AtomicUsize = AtomicUsize::new(0);
/// The subrank `WORKER` runs now (usize::MAX between subranks). Written by that thread only.
static RUNNING: AtomicUsize = AtomicUsize::new(usize::MAX);

thread_local! {
    /// The running subrank of a further worker thread (only when one already runs, e.g. in
    /// unit tests): `current` looks here for any thread but `WORKER`.
    static CURRENT: Cell<usize> = const { Cell::new(usize::MAX) };
    /// Helper tasks started by running subranks, picked up by the worker between rounds.
    static SPAWNED: RefCell<Vec<(usize, Subrank)>> = const { RefCell::new(Vec::new()) };
    /// Number of subranks (ids below it); helper tasks get ids from here on.
    static FIRST_HELPER: Cell<usize> = const { Cell::new(0) };
}

/// The real rank whose subranks this worker runs, for the siblings-before-cousins order
/// (one worker per process: every task is a sibling).
const HOME: u32 = 0;

/// Stack bytes of a helper task (committed lazily).
const HELPER_STACK: usize = 1 << 20;

/// Starts a helper task on this worker (e.g. one that runs a nonblocking collective); it is
/// scheduled like a subrank. Returns its scheduler id.
pub fn spawn(body: Box<dyn FnOnce() -> i32>) -> std::io::Result<usize> {
    let mut task = Subrank::new(HELPER_STACK, body)?;
    // It works for the running subrank, whose swapped memory is in place now.
    task.tls = super::swap::owner();
    let id = park::add_task(FIRST_HELPER.with(|f| f.get()));
    SPAWNED.with(|s| s.borrow_mut().push((id, task)));
    Ok(id)
}

/// Local index of the running subrank (usize::MAX outside any).
#[inline]
pub fn current() -> usize {
    if thread_word() == WORKER.load(Ordering::Relaxed) {
        RUNNING.load(Ordering::Relaxed)
    } else {
        current_other()
    }
}

#[cold]
#[inline(never)]
fn current_other() -> usize {
    CURRENT.with(|c| c.get())
}

/// A word that differs between live threads and is never 0: the thread pointer.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn thread_word() -> usize {
    let tp: usize;
    // SAFETY: on x86-64 Linux the first word of the thread control block (at %fs:0) points
    // to itself (the thread pointer); reading it has no side effects.
    unsafe { std::arch::asm!("mov {}, qword ptr fs:[0]", out(reg) tp, options(nostack, readonly, preserves_flags, pure)) };
    tp
}

#[cfg(target_arch = "aarch64")]
#[inline(always)]
fn thread_word() -> usize {
    let tp: usize;
    // SAFETY: reading the thread pointer register has no side effects.
    unsafe { std::arch::asm!("mrs {}, tpidr_el0", out(reg) tp, options(nostack, nomem, preserves_flags, pure)) };
    tp
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
#[inline(always)]
fn thread_word() -> usize {
    thread_local!(static ME: u8 = const { 0 });
    ME.with(|m| m as *const u8 as usize)
}

/// Which of the two places holds this worker's running subrank.
#[derive(Clone, Copy)]
struct Running {
    global: bool,
}

impl Running {
    /// The first worker thread uses the globals; another one at the same time its own
    /// thread-local.
    fn claim() -> Running {
        let me = thread_word();
        let global = WORKER.compare_exchange(0, me, Ordering::Relaxed, Ordering::Relaxed).is_ok();
        Running { global }
    }
    fn set(self, id: usize) {
        if self.global {
            RUNNING.store(id, Ordering::Relaxed);
        } else {
            CURRENT.with(|c| c.set(id));
        }
    }
    fn release(self) {
        if self.global {
            RUNNING.store(usize::MAX, Ordering::Relaxed);
            WORKER.store(0, Ordering::Relaxed);
        }
    }
}

/// Hooks the worker calls; `sched` knows nothing of what they do.
pub trait Hooks {
    /// Drives communication; returns whether anything happened.
    fn poll(&mut self) -> bool;
    /// Called when every subrank has been parked for `idle` (deadlock checks, reports).
    fn idle(&mut self, _idle: Duration) {}
    /// Whether another process may need this worker's core: then a worker idle for long
    /// sleeps between polls, otherwise it only yields the core between them.
    fn shares_core(&mut self) -> bool {
        true
    }
}

/// Runs `subs` to completion; returns each one's exit code.
pub fn run(subs: Vec<Subrank>, hooks: &mut dyn Hooks) -> Vec<i32> {
    let n = subs.len();
    let running = Running::claim();
    FIRST_HELPER.with(|f| f.set(n));
    let mut subs: Vec<Option<Subrank>> = subs.into_iter().map(Some).collect();
    park::reset(n);
    let mut codes = vec![0; n];
    let mut idle_since: Option<Instant> = None;
    let mut spins = 0u32;
    let mut batches_since_poll = 0u32;
    let mut batch: Vec<usize> = Vec::with_capacity(n);
    // The per-subrank memory to put in place before each resume (the program's thread-locals).
    let mut swap = super::swap::take();
    loop {
        // Poll when nobody can run, and every few rounds while subranks keep running (so
        // arrivals are noticed while they compute); not before every round: a switch between
        // siblings should not pay a call into the real MPI.
        let idle = park::with_board(|b| b.ready.is_empty());
        let progressed = if idle || batches_since_poll >= POLL_EVERY {
            batches_since_poll = 0;
            hooks.poll()
        } else {
            batches_since_poll += 1;
            false
        };
        SPAWNED.with(|sp| {
            for (id, t) in sp.borrow_mut().drain(..) {
                if id >= subs.len() {
                    subs.resize_with(id + 1, || None);
                }
                subs[id] = Some(t);
            }
        });
        batch.clear();
        park::take_batch(&mut batch, HOME);
        if batch.is_empty() {
            if park::with_board(|b| b.live) == 0 {
                break;
            }
            metrics::idle_begin();
            if progressed {
                spins = 0;
                idle_since = None;
                continue;
            }
            let since = *idle_since.get_or_insert_with(Instant::now);
            spins += 1;
            // Spin briefly, then give the core away, then (when another process may need this
            // core) sleep in short steps.
            if spins > 200 {
                let idle = since.elapsed();
                if idle > Duration::from_millis(20) && hooks.shares_core() {
                    std::thread::sleep(Duration::from_micros(50));
                } else {
                    std::thread::yield_now();
                }
                if spins.is_multiple_of(1024) {
                    hooks.idle(idle);
                }
            }
            continue;
        }
        spins = 0;
        idle_since = None;
        for &id in &batch {
            let r = match subs[id].as_mut() {
                Some(t) => {
                    if let Some(sw) = swap.as_mut() {
                        sw.switch_to(t.tls);
                    }
                    running.set(id);
                    let since = metrics::resuming(id);
                    let r = t.resume();
                    metrics::suspended(id, since);
                    running.set(usize::MAX);
                    r
                }
                None => continue,
            };
            if let Resumed::Finished(code) = r {
                if id < n {
                    codes[id] = code;
                } else {
                    subs[id] = None;
                }
                park::with_board(|b| {
                    b.states[id] = State::Done;
                    b.live -= 1;
                });
            }
        }
    }
    running.release();
    metrics::stop();
    if let Some(sw) = swap.as_mut() {
        // What runs at exit (the original program's destructors) sees subrank 0's.
        sw.switch_to(0);
    }
    super::swap::put(swap);
    // Finished coroutines are dropped normally (their stacks unmapped). A subrank that left
    // with `exit` is suspended inside C frames: dropping it would unwind through them, so its
    // stack is left to the process exit.
    for (id, t) in subs.into_iter().enumerate() {
        match t {
            Some(t) if !t.finished() => {
                if let Some(code) = park::with_board(|b| b.exit_codes.get(id).copied().flatten()) {
                    if id < n {
                        codes[id] = code;
                    }
                }
                std::mem::forget(t);
            }
            _ => {}
        }
    }
    codes
}

/// Ends the running subrank as if its `main` had returned `code`, without returning to the
/// caller (for `exit` called by a subrank while others still run). Returns false outside a
/// subrank.
pub fn retire(code: i32) -> bool {
    let id = current();
    if id == usize::MAX {
        return false;
    }
    park::with_board(|b| {
        if b.exit_codes.len() <= id {
            b.exit_codes.resize(id + 1, None);
        }
        b.exit_codes[id] = Some(code);
        b.states[id] = State::Done;
        b.live -= 1;
    });
    // Never resumed: the worker only resumes subranks from the ready queue.
    super::coroutine::suspend();
    unreachable!("a retired subrank was resumed")
}

/// Blocks the running subrank until someone wakes it. Outside a subrank: returns at once.
pub fn park() {
    let id = current();
    if id == usize::MAX {
        return;
    }
    if park::prepare_park(id) {
        super::coroutine::suspend();
    }
}

/// Lets the other ready subranks run before the caller continues.
pub fn yield_now() {
    let id = current();
    if id == usize::MAX {
        return;
    }
    park::requeue(id);
    super::coroutine::suspend();
}

/// Lets every other ready task run first, including those that yield meanwhile; the caller
/// continues in the worker's next round at the latest (after the ready tasks of this one).
pub fn defer() {
    let id = current();
    if id == usize::MAX {
        return;
    }
    park::defer(id);
    super::coroutine::suspend();
}
