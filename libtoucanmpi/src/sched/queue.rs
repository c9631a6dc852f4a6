//! Ready queues, one set per worker, and work stealing between workers.
//!
//! A worker's tasks are its siblings (the subranks of the original rank it stands for) and
//! their helper tasks; a task that becomes ready joins its home worker's queue. A worker runs
//! rounds: it takes its ready tasks, then its deferred ones (tasks that asked to go after
//! every other ready task, see `core::region`), as the next round, and runs the round in
//! order. A worker with an empty round and empty queues steals half of another worker's
//! waiting tasks (its round first, from the back, then its ready and deferred queues),
//! visiting the others nearest first: these are its cousins. Each worker's queues have their
//! own short lock; no lock is shared by all workers.

use super::lock::Lock;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Most workers a process can have.
pub const MAX_WORKERS: usize = 1024;

#[derive(Default)]
struct Queues {
    /// The round being run (its head runs next): the tasks that were ready...
    round: VecDeque<usize>,
    /// ... then those that were deferred.
    round_deferred: VecDeque<usize>,
    /// Ready for the next round.
    ready: VecDeque<usize>,
    /// Ready, asked to go after the others (next round, after `ready`).
    deferred: VecDeque<usize>,
}

impl Queues {
    const fn new() -> Queues {
        Queues {
            round: VecDeque::new(),
            round_deferred: VecDeque::new(),
            ready: VecDeque::new(),
            deferred: VecDeque::new(),
        }
    }
    fn len(&self) -> usize {
        self.round.len() + self.round_deferred.len() + self.ready.len() + self.deferred.len()
    }
    /// Whether only deferred tasks wait.
    fn only_deferred(&self) -> bool {
        self.round.is_empty() && self.ready.is_empty()
    }
}

/// One worker's queues, on a cache line of their own.
#[repr(align(128))]
struct Worker {
    q: Lock<Queues>,
    /// Tasks in `q` (read without the lock: a hint).
    len: AtomicUsize,
    /// Tasks this worker resumed so far (written by it alone).
    resumes: AtomicUsize,
}

static WORKERS: [Worker; MAX_WORKERS] = [const {
    Worker {
        q: Lock::new(Queues::new()),
        len: AtomicUsize::new(0),
        resumes: AtomicUsize::new(0),
    }
}; MAX_WORKERS];
static NWORKERS: AtomicUsize = AtomicUsize::new(1);
/// Whether workers may run each other's tasks (more than one worker, and no per-thread state
/// pinning tasks to their home).
static STEAL: AtomicBool = AtomicBool::new(false);
/// Per worker, the others nearest first.
static ORDER: Lock<Vec<Vec<usize>>> = Lock::new(Vec::new());

/// Empties every queue and sets the number of workers, whether they steal, and the order in
/// which each visits the others (default: the next ones, wrapping around). Only while no
/// worker runs.
pub fn reset(workers: usize, steal: bool, order: Option<Vec<Vec<usize>>>) {
    let workers = workers.clamp(1, MAX_WORKERS);
    for w in WORKERS.iter().take(NWORKERS.load(Ordering::Relaxed).max(workers)) {
        *w.q.lock() = Queues::new();
        w.len.store(0, Ordering::Relaxed);
    }
    NWORKERS.store(workers, Ordering::Relaxed);
    STEAL.store(steal && workers > 1, Ordering::Relaxed);
    *ORDER.lock() = order.unwrap_or_else(|| (0..workers).map(|w| (1..workers).map(|d| (w + d) % workers).collect()).collect());
}

/// Worker `w` resumes a task.
#[inline]
pub fn resumed(w: usize) {
    let r = &worker(w).resumes;
    r.store(r.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
}

/// Task resumes by all workers so far.
pub fn resumes() -> usize {
    WORKERS[..workers()]
        .iter()
        .map(|w| w.resumes.load(Ordering::Relaxed))
        .fold(0, usize::wrapping_add)
}

pub fn workers() -> usize {
    NWORKERS.load(Ordering::Relaxed)
}

pub fn steals() -> bool {
    STEAL.load(Ordering::Relaxed)
}

/// The others for worker `w` to steal from, nearest first.
pub fn steal_order(w: usize) -> Vec<usize> {
    ORDER.lock().get(w).cloned().unwrap_or_default()
}

fn worker(w: usize) -> &'static Worker {
    &WORKERS[w.min(MAX_WORKERS - 1)]
}

/// Adds `id` to worker `w`'s ready (or deferred) queue.
pub fn push(w: usize, id: usize, deferred: bool) {
    let wk = worker(w);
    let mut q = wk.q.lock();
    if deferred {
        q.deferred.push_back(id);
    } else {
        q.ready.push_back(id);
    }
    wk.len.store(q.len(), Ordering::Release);
}

/// The next task of worker `w`'s own: the head of its round (its ready part, then its
/// deferred part), starting a new round when the current one is over.
pub fn pop_own(w: usize) -> Option<usize> {
    let wk = worker(w);
    if wk.len.load(Ordering::Acquire) == 0 {
        return None;
    }
    let mut g = wk.q.lock();
    let q = &mut *g;
    // A new round only once both parts of the current one ran: tasks that keep yielding
    // must not hold a deferred one back for ever.
    // Both round parts are empty here: swapping the queues in is the move, without copying
    // (and the emptied buffers keep their capacity for the next round's arrivals).
    if q.round.is_empty() && q.round_deferred.is_empty() {
        std::mem::swap(&mut q.round, &mut q.ready);
        std::mem::swap(&mut q.round_deferred, &mut q.deferred);
    }
    let id = q.round.pop_front().or_else(|| q.round_deferred.pop_front());
    wk.len.store(q.len(), Ordering::Release);
    id
}

/// Whether worker `w`'s queues hold a task (its round included).
#[inline]
pub fn has_own(w: usize) -> bool {
    worker(w).len.load(Ordering::Acquire) != 0
}

/// Whether some task waits in a queue that worker `w` may take from.
#[inline]
pub fn any_for(w: usize) -> bool {
    has_own(w) || (steals() && any_other(w))
}

#[cold]
fn any_other(w: usize) -> bool {
    (0..workers()).any(|o| o != w && has_own(o))
}

/// Steals about half of the waiting tasks of the first other worker (nearest first) that
/// has any into `w`'s round (ready ones; deferred ones too when `deferred`); returns how
/// many it took.
pub fn steal(w: usize, order: &[usize], deferred: bool) -> usize {
    if !steals() {
        return 0;
    }
    for &v in order {
        let vk = worker(v);
        if vk.len.load(Ordering::Acquire) == 0 {
            continue;
        }
        let mut taken: Vec<usize> = Vec::new();
        {
            let mut g = vk.q.lock();
            if g.len() == 0 || !deferred && g.only_deferred() {
                continue;
            }
            let q = &mut *g;
            let n = if deferred { q.len() } else { q.round.len() + q.ready.len() };
            let mut k = n.div_ceil(2);
            let mut from: Vec<&mut VecDeque<usize>> = vec![&mut q.ready, &mut q.round];
            if deferred {
                from.extend([&mut q.deferred, &mut q.round_deferred]);
            }
            for from in from {
                while k > 0 {
                    match from.pop_back() {
                        Some(id) => {
                            taken.push(id);
                            k -= 1;
                        }
                        None => break,
                    }
                }
            }
            vk.len.store(g.len(), Ordering::Release);
        }
        let got = taken.len();
        let wk = worker(w);
        let mut q = wk.q.lock();
        // Oldest first: they were taken from the backs. Deferred ones stay behind the others.
        let to = if deferred && !taken.is_empty() {
            &mut q.round_deferred
        } else {
            &mut q.round
        };
        to.extend(taken.into_iter().rev());
        wk.len.store(q.len(), Ordering::Release);
        return got;
    }
    0
}

/// The queues and tasks are process-wide: unit tests that use them run one at a time.
#[cfg(test)]
pub fn tests_serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_and_stealing() {
        let _g = tests_serial();
        reset(2, true, None);
        for id in [1, 2, 3, 4] {
            push(0, id, false);
        }
        push(0, 9, true);
        assert_eq!(pop_own(0), Some(1));
        // A task made ready during the round waits for the next one.
        push(0, 5, false);
        assert!(any_for(1));
        // Worker 1 takes half of the 4 ready ones (ready 5, round 2 3 4), from the backs.
        assert_eq!(steal(1, &steal_order(1), false), 2);
        assert_eq!(pop_own(1), Some(4));
        assert_eq!(pop_own(1), Some(5));
        assert_eq!(pop_own(1), None);
        // Worker 0 finishes its round: its ready part, then the deferred task 9.
        assert_eq!(pop_own(0), Some(2));
        assert_eq!(pop_own(0), Some(3));
        // Only a deferred task left: not stolen as ready work, but when deferred ones may be.
        assert_eq!(steal(1, &[0], false), 0);
        assert_eq!(steal(1, &[0], true), 1);
        assert_eq!(pop_own(0), None);
        assert_eq!(pop_own(1), Some(9));
        // Each round runs the ready tasks, then the deferred ones, then the next round.
        push(0, 6, true);
        push(0, 7, false);
        assert_eq!(pop_own(0), Some(7));
        push(0, 8, false);
        assert_eq!(pop_own(0), Some(6));
        assert_eq!(pop_own(0), Some(8));
        reset(2, false, None);
        push(0, 7, false);
        assert!(!any_for(1));
        assert_eq!(steal(1, &[0], true), 0);
        reset(1, false, None);
    }
}
