//! The workers: kernel threads that run the process's tasks (subranks and helper tasks).
//! Each runs its own tasks' rounds (siblings first), steals from the others when it has none
//! (cousins, see `queue`), polls progress between tasks, and backs off the core when nothing
//! can run (so processes sharing a core are not starved). Worker 0 is the program's main
//! thread; the others are started by `run` and end with it.

use super::coroutine::{Resumed, Subrank};
use super::park::{self};
use super::swap::Swap;
use super::{metrics, queue, task};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Rounds of a worker's own tasks run between two polls of the progress engine while some
/// are ready (counted in resumes: this many times the subranks per worker).
const POLL_EVERY: usize = 4;

/// The first worker thread (its `thread_word`), 0 while none runs. Every MPI call asks for
/// the running subrank, several times: a thread-local would cost a `__tls_get_addr` call each
/// time in this shared library, this costs a compare (worker 0; the others pay the lookup).
static WORKER: AtomicUsize = AtomicUsize::new(0);
/// The task `WORKER` runs now (usize::MAX between tasks). Written by that thread only.
static RUNNING: AtomicUsize = AtomicUsize::new(usize::MAX);

/// Workers other than worker 0, found by their thread word (open addressing, linear
/// probing): a thread-local would cost a `__tls_get_addr` call per lookup in this shared
/// library, several times per MPI call. `WORDS[i]` is a worker's thread word (0: free, never
/// used; `GONE`: a worker that ended), `INDEX_OF[i]` its worker index.
const SLOTS: usize = 2 * super::queue::MAX_WORKERS;
const GONE: usize = usize::MAX;
static WORDS: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
static INDEX_OF: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];

/// The task each worker runs now (usize::MAX between tasks), each on a cache line of its own;
/// written by that worker only. Worker 0 uses `RUNNING`.
#[repr(align(128))]
struct RunningWord(AtomicUsize);
static RUNNING_OF: [RunningWord; super::queue::MAX_WORKERS] =
    [const { RunningWord(AtomicUsize::new(usize::MAX)) }; super::queue::MAX_WORKERS];

#[inline]
fn first_slot(tw: usize) -> usize {
    // Thread words are aligned addresses: mix the bits above the alignment.
    ((tw >> 6).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (usize::BITS - SLOTS.trailing_zeros())) & (SLOTS - 1)
}

/// The worker index of the thread with word `tw`, if it is a worker other than worker 0.
#[inline]
fn lookup(tw: usize) -> Option<usize> {
    let mut i = first_slot(tw);
    for _ in 0..SLOTS {
        match WORDS[i].load(Ordering::Acquire) {
            0 => return None,
            w if w == tw => return Some(INDEX_OF[i].load(Ordering::Relaxed)),
            _ => i = (i + 1) & (SLOTS - 1),
        }
    }
    None
}

/// Records the calling thread as worker `index` (> 0). Returns its slot.
fn register(index: usize) -> usize {
    let tw = thread_word();
    let mut i = first_slot(tw);
    loop {
        let w = WORDS[i].load(Ordering::Relaxed);
        if w == 0 || w == GONE {
            INDEX_OF[i].store(index, Ordering::Relaxed);
            if WORDS[i].compare_exchange(w, tw, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
                return i;
            }
            continue;
        }
        i = (i + 1) & (SLOTS - 1);
    }
}

/// Stack bytes of a helper task (committed lazily).
const HELPER_STACK: usize = 1 << 20;

/// Starts a helper task (e.g. one that runs a nonblocking collective) on the calling
/// worker; it is scheduled like a subrank. Returns its scheduler id.
pub fn spawn(body: Box<dyn FnOnce() -> i32>) -> std::io::Result<usize> {
    let co = Subrank::new_reusing(HELPER_STACK, body)?;
    let me = current();
    let id = task::alloc_helper();
    let s = task::slot(id);
    // It works for the running subrank, whose swapped memory is in place now, and stays on
    // its worker when tasks are pinned (see `swap`).
    s.tls
        .store(task::get(me).map_or(0, |p| p.tls.load(Ordering::Relaxed)), Ordering::Relaxed);
    s.home.store(worker_index(), Ordering::Relaxed);
    // SAFETY: the id was just handed out in state DONE: nobody else owns the task yet.
    unsafe { *s.co() = Some(co) };
    park::start(id);
    Ok(id)
}

/// Scheduler id of the running task (usize::MAX outside any). Subranks have ids below the
/// number of subranks of the process; helper tasks and threads of the program (`foreign`)
/// above.
#[inline]
pub fn current() -> usize {
    let tw = thread_word();
    if tw == WORKER.load(Ordering::Relaxed) {
        RUNNING.load(Ordering::Relaxed)
    } else {
        current_other(tw)
    }
}

#[inline(never)]
fn current_other(tw: usize) -> usize {
    match lookup(tw) {
        Some(w) => RUNNING_OF[w].0.load(Ordering::Relaxed),
        None => super::foreign::task(),
    }
}

/// The MPI rank (local subrank) the caller acts as: the running task's on a worker (a
/// subrank's own id; a helper task's id, as `current`), the creating subrank's in a thread
/// of the program (`foreign`), usize::MAX elsewhere.
#[inline]
pub fn rank() -> usize {
    let tw = thread_word();
    if tw == WORKER.load(Ordering::Relaxed) {
        RUNNING.load(Ordering::Relaxed)
    } else {
        rank_other(tw)
    }
}

#[inline(never)]
fn rank_other(tw: usize) -> usize {
    match lookup(tw) {
        Some(w) => RUNNING_OF[w].0.load(Ordering::Relaxed),
        None => match super::foreign::task() {
            usize::MAX => usize::MAX,
            t => task::slot(t).rank.load(Ordering::Relaxed),
        },
    }
}

/// The calling worker's index while it runs a task (a coroutine); None on any other thread
/// (threads of the program, the progress thread) and on a worker between tasks.
#[inline]
pub fn running_worker() -> Option<usize> {
    let tw = thread_word();
    if tw == WORKER.load(Ordering::Relaxed) {
        (RUNNING.load(Ordering::Relaxed) != usize::MAX).then_some(0)
    } else {
        lookup(tw).filter(|&w| RUNNING_OF[w].0.load(Ordering::Relaxed) != usize::MAX)
    }
}

/// Whether the caller is a task run by a worker (a coroutine: a subrank or a helper task),
/// which may park by suspending.
#[inline]
pub fn in_coroutine() -> bool {
    running_worker().is_some()
}

/// Index of the calling thread's worker (0 for worker 0 and for threads that are no worker).
#[inline]
pub fn worker_index() -> usize {
    let tw = thread_word();
    if tw == WORKER.load(Ordering::Relaxed) {
        0
    } else {
        index_other(tw)
    }
}

#[inline(never)]
fn index_other(tw: usize) -> usize {
    lookup(tw).unwrap_or(0)
}

/// A word that differs between live threads and is never 0: the thread pointer.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn thread_word() -> usize {
    let tp: usize;
    // SAFETY: on x86-64 Linux the first word of the thread control block (at %fs:0) points
    // to itself (the thread pointer); reading it has no side effects. Not `pure`: a task may
    // resume on another thread (SMP mode), so the compiler must never reuse an earlier read.
    unsafe { std::arch::asm!("mov {}, qword ptr fs:[0]", out(reg) tp, options(nostack, readonly, preserves_flags)) };
    tp
}

#[cfg(target_arch = "aarch64")]
#[inline(always)]
pub fn thread_word() -> usize {
    let tp: usize;
    // SAFETY: reading the thread pointer register has no side effects. Not `pure`: a task
    // may resume on another thread (SMP mode), so an earlier read must never be reused.
    unsafe { std::arch::asm!("mrs {}, tpidr_el0", out(reg) tp, options(nostack, nomem, preserves_flags)) };
    tp
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
#[inline(always)]
pub fn thread_word() -> usize {
    thread_local!(static ME: u8 = const { 0 });
    ME.with(|m| m as *const u8 as usize)
}

/// Where the calling worker thread keeps the id of the task it runs.
#[derive(Clone, Copy)]
struct Running {
    global: bool,
    index: usize,
    /// The thread's slot in `WORDS` (workers other than worker 0).
    slot: usize,
}

impl Running {
    /// The first worker thread uses the globals; any other its own words (`RUNNING_OF`).
    fn claim(index: usize) -> Running {
        let me = thread_word();
        let global = index == 0 && WORKER.compare_exchange(0, me, Ordering::Relaxed, Ordering::Relaxed).is_ok();
        let slot = if global {
            0
        } else {
            register(index.min(super::queue::MAX_WORKERS - 1))
        };
        Running {
            global,
            index: index.min(super::queue::MAX_WORKERS - 1),
            slot,
        }
    }
    #[inline]
    fn set(&self, id: usize) {
        if self.global {
            RUNNING.store(id, Ordering::Relaxed);
        } else {
            RUNNING_OF[self.index].0.store(id, Ordering::Relaxed);
        }
    }
    fn release(self) {
        if self.global {
            RUNNING.store(usize::MAX, Ordering::Relaxed);
            WORKER.store(0, Ordering::Relaxed);
        } else {
            RUNNING_OF[self.index].0.store(usize::MAX, Ordering::Relaxed);
            // A later thread may get this thread's word: it must not pass for a worker.
            WORDS[self.slot].store(GONE, Ordering::Release);
        }
    }
}

/// Hooks the workers call; `sched` knows nothing of what they do. Called from every worker
/// thread.
pub trait Hooks: Sync {
    /// Drives communication; returns whether anything happened. `worker` 0 may wait for the
    /// transport; the others skip a poll somebody else is making.
    fn poll(&self, worker: usize) -> bool;
    /// Called by worker 0 when every worker has found nothing to run for `idle` (deadlock
    /// checks, reports).
    fn idle(&self, _idle: Duration) {}
    /// Whether another process may need this worker's core: then a worker idle for long
    /// sleeps between polls, otherwise it only yields the core between them.
    fn shares_core(&self) -> bool {
        true
    }
    /// Whether an idle worker should keep polling rather than give its core away between
    /// polls (it then yields only every `HOT_YIELD_EVERY` polls): another process may be
    /// waiting for this one's progress, as the target of its one-sided operations is
    /// (issue 18), and the core is ours alone.
    fn keep_polling(&self) -> bool {
        false
    }
    /// Called by each worker thread other than 0 when it starts (binding it to its core).
    fn started(&self, _worker: usize) {}
}

/// How the subranks are spread over the workers.
pub struct Layout {
    pub workers: usize,
    /// Home worker of each subrank.
    pub home: Vec<usize>,
    /// Whether workers may run each other's tasks (false when per-thread state pins them).
    pub steal: bool,
    /// Per worker, the others nearest first (None: the next ones, wrapping around).
    pub order: Option<Vec<Vec<usize>>>,
    /// Period of the load balance between workers (`balance`; None: homes never move).
    pub balance: Option<Duration>,
}

impl Layout {
    /// One worker running every subrank (the layout without SMP mode).
    pub fn single(n: usize) -> Layout {
        Layout {
            workers: 1,
            home: vec![0; n],
            steal: false,
            order: None,
            balance: None,
        }
    }
}

/// An idle worker that keeps polling (`Hooks::keep_polling`) yields its core once per this
/// many polls (a thread of its process bound to the same core, the background progress
/// thread say, still gets it; under a real-time policy nothing else would).
const HOT_YIELD_EVERY: u32 = 64;

/// Workers that found nothing to run (every one of them: all tasks are parked).
static IDLE: AtomicUsize = AtomicUsize::new(0);

/// Runs `subs` to completion on `layout.workers` threads (this one is worker 0); returns
/// each subrank's exit code.
pub fn run(subs: Vec<Subrank>, layout: Layout, hooks: &dyn Hooks) -> Vec<i32> {
    let n = subs.len();
    let workers = layout.workers.clamp(1, queue::MAX_WORKERS);
    park::reset(n);
    for (id, co) in subs.into_iter().enumerate() {
        let s = task::slot(id);
        s.home
            .store(layout.home.get(id).copied().unwrap_or(0).min(workers - 1), Ordering::Relaxed);
        s.tls.store(co.tls, Ordering::Relaxed);
        // SAFETY: no worker runs yet: the slots are ours.
        unsafe { *s.co() = Some(co) };
    }
    queue::reset(workers, layout.steal, layout.order);
    super::balance::start(n, layout.balance);
    IDLE.store(0, Ordering::Relaxed);
    for id in 0..n {
        park::start(id);
    }
    let poll_every = POLL_EVERY * n.div_ceil(workers).max(1);
    // The per-subrank memory to put in place before each resume (the program's thread-locals):
    // each worker thread has its own block; it holds the contents of that worker's subranks.
    let mut main_swap = super::swap::take();
    let mut parts: Vec<Option<Vec<Box<[u8]>>>> = (1..workers)
        .map(|w| main_swap.as_mut().map(|sw| sw.split_off(|k| layout.home.get(k) == Some(&w))))
        .collect();
    std::thread::scope(|scope| {
        let mut threads = Vec::new();
        for (i, part) in parts.iter_mut().enumerate() {
            let w = i + 1;
            let part = part.take();
            let t = std::thread::Builder::new()
                .name(format!("toucan-worker-{w}"))
                .stack_size(1 << 20)
                .spawn_scoped(scope, move || {
                    super::guard::altstack();
                    hooks.started(w);
                    // SAFETY: a new thread's own static TLS block (see `Swap::for_thread`).
                    let mut swap = part.map(|p| unsafe { Swap::for_thread(p) });
                    work(w, swap.as_mut(), poll_every, hooks);
                    swap
                });
            match t {
                Ok(t) => threads.push(t),
                Err(e) => {
                    // Its subranks could never run: end the process rather than hang.
                    eprintln!("toucan: cannot start worker thread {w}: {e}");
                    // SAFETY: _exit has no preconditions.
                    unsafe { libc::_exit(1) }
                }
            }
        }
        work(0, main_swap.as_mut(), poll_every, hooks);
        for t in threads {
            if let Ok(Some(sw)) = t.join() {
                if let Some(m) = main_swap.as_mut() {
                    m.merge(sw);
                }
            }
        }
    });
    metrics::stop();
    super::balance::stop();
    if let Some(sw) = main_swap.as_mut() {
        // What runs at exit (the original program's destructors) sees subrank 0's.
        sw.switch_to(0);
    }
    super::swap::put(main_swap);
    (0..n)
        .map(|id| match task::slot(id).exit.load(Ordering::Relaxed) {
            i64::MIN => 0,
            c => c as i32,
        })
        .collect()
}

/// Worker `w`'s loop: runs tasks until none is left in the process.
fn work(w: usize, mut swap: Option<&mut Swap>, poll_every: usize, hooks: &dyn Hooks) {
    let running = Running::claim(w);
    let order = queue::steal_order(w);
    let workers = queue::workers();
    let mut idle_since: Option<Instant> = None;
    // Whether this worker counts in IDLE (it found nothing to run).
    let mut counted = false;
    let mut spins = 0u32;
    let mut since_poll = 0usize;
    loop {
        // Poll when nothing of ours can run, and every few rounds while tasks keep running
        // (so arrivals are noticed while they compute); not before every resume: a switch
        // between siblings should not pay a call into the real MPI.
        // Sleeping tasks whose time has come join their queues.
        super::timer::fire();
        let own = queue::has_own(w);
        let progressed = if !own || since_poll >= poll_every {
            since_poll = 0;
            hooks.poll(w)
        } else {
            since_poll += 1;
            false
        };
        // Our round (ready tasks, then deferred ones), else another worker's ready tasks, else
        // its deferred ones. Not others' ready tasks before our own deferred ones: tasks that
        // keep yielding (polling with MPI_Test) on both workers would then be stolen back and
        // forth for ever while the deferred ones wait.
        let next = queue::pop_own(w)
            .or_else(|| stolen(w, &order, false))
            .or_else(|| stolen(w, &order, true));
        let Some(id) = next else {
            if park::live() == 0 {
                break;
            }
            if !counted {
                IDLE.fetch_add(1, Ordering::AcqRel);
                counted = true;
            }
            metrics::idle_begin(w);
            if progressed {
                spins = 0;
                idle_since = None;
                continue;
            }
            // Every task sleeps (`timer`): nothing but a deadline can make one runnable, so
            // the core is left alone until the earliest.
            if let Some(until) = super::timer::idle_until(park::live()) {
                super::timer::os_sleep_until(until);
                continue;
            }
            let since = *idle_since.get_or_insert_with(Instant::now);
            // Wraps (an idle worker that keeps polling counts millions a second): the tests of
            // `spins` below only need it to keep cycling.
            spins = spins.wrapping_add(1);
            // Spin briefly, then give the core away, then (when another process may need this
            // core) sleep in short steps.
            if spins > 200 && (spins.is_multiple_of(HOT_YIELD_EVERY) || !hooks.keep_polling()) {
                let idle = since.elapsed();
                if idle > Duration::from_millis(20) && hooks.shares_core() {
                    super::timer::os_sleep(Duration::from_micros(50));
                } else {
                    super::timer::os_yield();
                }
                // A sleeping task is not blocked: the process is not idle for the hooks
                // (deadlock detection) until it wakes.
                if w == 0 && spins.is_multiple_of(1024) && IDLE.load(Ordering::Acquire) == workers && super::timer::sleeping() == 0 {
                    hooks.idle(idle);
                }
            }
            continue;
        };
        if counted {
            IDLE.fetch_sub(1, Ordering::AcqRel);
            counted = false;
        }
        spins = 0;
        idle_since = None;
        resume(id, w, &running, swap.as_deref_mut());
    }
    if counted {
        IDLE.fetch_sub(1, Ordering::AcqRel);
    }
    running.release();
}

/// Steals from the other workers (see `queue::steal`) and takes the first task stolen.
fn stolen(w: usize, order: &[usize], deferred: bool) -> Option<usize> {
    let n = queue::steal(w, order, deferred);
    if n == 0 {
        return None;
    }
    metrics::stole(w, n);
    queue::pop_own(w)
}

/// Runs task `id`, just taken from a queue, until it suspends or ends.
fn resume(id: usize, w: usize, running: &Running, swap: Option<&mut Swap>) {
    park::running(id);
    queue::resumed(w);
    let s = task::slot(id);
    // SAFETY: we took the task out of a queue: this worker owns it until it settles.
    let co = unsafe { s.co() };
    let Some(t) = co.as_mut() else { return };
    if let Some(sw) = swap {
        sw.switch_to(s.tls.load(Ordering::Relaxed));
    }
    running.set(id);
    let since = metrics::resuming(id, w);
    let ran = super::balance::resuming();
    let r = t.resume();
    super::balance::suspended(id, ran);
    metrics::suspended(id, w, since);
    running.set(usize::MAX);
    match r {
        Resumed::Finished(code) => {
            s.exit.store(code as i64, Ordering::Relaxed);
            if let Some(t) = co.take().filter(|_| s.helper.load(Ordering::Relaxed)) {
                t.recycle();
            }
            park::finish(id);
            if s.helper.load(Ordering::Relaxed) {
                task::free_helper(id);
            }
        }
        Resumed::Suspended => {
            if park::settle(id) {
                // Left with `exit`: suspended inside C frames, dropping it would unwind
                // through them, so its stack is left to the process exit.
                std::mem::forget(co.take());
            }
        }
    }
}

/// Ends the running subrank as if its `main` had returned `code`, without returning to the
/// caller (for `exit` called by a subrank while others still run). Returns false outside a
/// subrank.
pub fn retire(code: i32) -> bool {
    if !in_coroutine() {
        return false;
    }
    let id = current();
    task::slot(id).exit.store(code as i64, Ordering::Relaxed);
    park::retire(id);
    // Never resumed: its worker marks it done.
    super::coroutine::suspend();
    unreachable!("a retired subrank was resumed")
}

/// Blocks the running task until someone wakes it. Outside a task: returns at once.
pub fn park() {
    let id = current();
    if id == usize::MAX {
        return;
    }
    if super::foreign::is(id) {
        super::foreign::park(id);
        return;
    }
    if park::prepare_park(id) {
        super::coroutine::suspend();
    }
}

/// Lets the other ready tasks run before the caller continues.
pub fn yield_now() {
    let id = current();
    if id == usize::MAX {
        return;
    }
    if super::foreign::is(id) {
        super::foreign::yield_now();
        return;
    }
    park::requeue(id);
    super::coroutine::suspend();
}

/// Lets every other ready task run first, including those that yield meanwhile; the caller
/// continues in its worker's next round at the latest (after the ready tasks of this one).
pub fn defer() {
    let id = current();
    if id == usize::MAX {
        return;
    }
    if super::foreign::is(id) {
        super::foreign::yield_now();
        return;
    }
    park::defer(id);
    super::coroutine::suspend();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    #[test]
    fn workers_are_found_by_their_thread_word() {
        std::thread::spawn(|| {
            assert_eq!((worker_index(), current()), (0, usize::MAX), "not a worker yet");
            let r = Running::claim(7);
            assert_eq!(worker_index(), 7);
            r.set(42);
            assert_eq!(current(), 42);
            r.release();
            assert_eq!((worker_index(), current()), (0, usize::MAX), "a worker no more");
        })
        .join()
        .unwrap();
    }

    struct NoHooks;
    impl Hooks for NoHooks {
        fn poll(&self, _worker: usize) -> bool {
            false
        }
        fn shares_core(&self) -> bool {
            false
        }
    }

    /// Subranks on two workers that yield, park and wake each other: every one finishes with
    /// its own exit code, and tasks move between the workers (stealing).
    #[test]
    fn two_workers_run_every_subrank() {
        let _g = queue::tests_serial();
        static SUM: AtomicU64 = AtomicU64::new(0);
        static THREADS: crate::sched::lock::Lock<Vec<std::thread::ThreadId>> = crate::sched::lock::Lock::new(Vec::new());
        const N: usize = 8;
        let subs: Vec<Subrank> = (0..N)
            .map(|k| {
                Subrank::new(
                    64 << 10,
                    Box::new(move || {
                        for i in 0..50u64 {
                            SUM.fetch_add(i, Ordering::Relaxed);
                            // Some work, so that both workers are up before it is all done.
                            let t0 = Instant::now();
                            while t0.elapsed() < Duration::from_micros(20) {
                                std::hint::spin_loop();
                            }
                            let t = std::thread::current().id();
                            let mut th = THREADS.lock();
                            if !th.contains(&t) {
                                th.push(t);
                            }
                            drop(th);
                            if i % 7 == 0 {
                                // Wake the next subrank (it may be parked) and park unless
                                // somebody woke us meanwhile: a wake-up is never lost.
                                park::wake((k + 1) % N);
                                yield_now();
                            } else if i % 5 == 0 {
                                defer();
                            } else {
                                yield_now();
                            }
                        }
                        k as i32 + 1
                    }),
                )
                .expect("stack")
            })
            .collect();
        let layout = Layout {
            workers: 2,
            home: (0..N).map(|k| k / 4).collect(),
            steal: true,
            order: None,
            // Balance as often as possible: homes move while the tasks run.
            balance: Some(std::time::Duration::from_nanos(1)),
        };
        let codes = run(subs, layout, &NoHooks);
        assert_eq!(codes, (1..=N as i32).collect::<Vec<_>>());
        assert_eq!(SUM.load(Ordering::Relaxed), N as u64 * (0..50).sum::<u64>());
        assert_eq!(THREADS.lock().len(), 2);
        assert_eq!(park::live(), 0);
        queue::reset(1, false, None);
    }
}
