//! The process's I/O thread: blocking file accesses of a subrank that has siblings, and all
//! nonblocking ones, run here, so the worker goes on running the other subranks while the
//! kernel reads or writes (deliverable 3 of issue 19; docs/io.md has the measurements).
//!
//! A subrank submits a job and parks (`run`); the thread runs jobs in order and wakes the
//! subrank, or completes a request (`nonblocking`). `pending` tells the deadlock detector
//! that a process whose subranks are all parked still has I/O in flight.

use crate::core::error::MpiResult;
use crate::sched;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

type Job = Box<dyn FnOnce() + Send>;

struct Queue {
    jobs: Mutex<VecDeque<Job>>,
    ready: Condvar,
}

static QUEUE: OnceLock<Queue> = OnceLock::new();
/// Jobs submitted and not finished.
static PENDING: AtomicUsize = AtomicUsize::new(0);

/// I/O jobs in flight (submitted, not finished).
pub fn pending() -> usize {
    PENDING.load(Ordering::Acquire)
}

fn queue() -> &'static Queue {
    QUEUE.get_or_init(|| {
        let q = Queue {
            jobs: Mutex::new(VecDeque::new()),
            ready: Condvar::new(),
        };
        std::thread::Builder::new()
            .name("toucan-io".into())
            .spawn(serve)
            .unwrap_or_else(|e| crate::core::diag::fatal(&format!("cannot start the I/O thread: {e}")));
        q
    })
}

fn serve() {
    let q = queue();
    loop {
        let job = {
            let mut g = q.jobs.lock().unwrap_or_else(|e| e.into_inner());
            loop {
                if let Some(j) = g.pop_front() {
                    break j;
                }
                g = q.ready.wait(g).unwrap_or_else(|e| e.into_inner());
            }
        };
        job();
        PENDING.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Queues `job` for the I/O thread.
pub fn submit(job: Job) {
    PENDING.fetch_add(1, Ordering::AcqRel);
    let q = queue();
    q.jobs.lock().unwrap_or_else(|e| e.into_inner()).push_back(job);
    q.ready.notify_one();
}

/// Whether blocking accesses go to the I/O thread: when the process runs more than one
/// subrank (`TOUCAN_IO_THREAD=0` keeps them on the worker, `=1` sends them always).
pub fn offload() -> bool {
    static MODE: OnceLock<Option<bool>> = OnceLock::new();
    let forced = *MODE.get_or_init(|| match std::env::var("TOUCAN_IO_THREAD").as_deref() {
        Ok("0") => Some(false),
        Ok("1") => Some(true),
        _ => None,
    });
    forced.unwrap_or_else(|| {
        static LOCAL: AtomicUsize = AtomicUsize::new(0);
        let mut n = LOCAL.load(Ordering::Relaxed);
        if n == 0 {
            n = crate::core::state::with(|s| s.cfg.local()).unwrap_or(1);
            LOCAL.store(n, Ordering::Relaxed);
        }
        n > 1
    })
}

/// Runs `f` for the calling subrank: on the I/O thread (the subrank parks meanwhile and its
/// siblings run) when `offload()`, else in place.
pub fn run<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> MpiResult<R> {
    start(f).wait()
}

/// A job started by `start`: `wait` gives its result. Dropped unwaited (an error path of its
/// owner), it still waits for the job, which may use memory its owner is about to free.
pub struct Started<R> {
    slot: Option<Arc<Mutex<Option<R>>>>,
    done: Option<R>,
}

/// Starts `f` for the calling subrank, which goes on running and waits for it later
/// (`Started::wait`): on the I/O thread when `offload()`, else it runs here at once.
pub fn start<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> Started<R> {
    if !offload() || !sched::in_coroutine() {
        return Started {
            slot: None,
            done: Some(f()),
        };
    }
    let slot: Arc<Mutex<Option<R>>> = Arc::new(Mutex::new(None));
    let me = sched::current();
    let s2 = slot.clone();
    submit(Box::new(move || {
        let r = f();
        *s2.lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
        sched::wake(me);
    }));
    Started {
        slot: Some(slot),
        done: None,
    }
}

impl<R> Started<R> {
    /// The job's result, parking the subrank until it is done.
    pub fn wait(mut self) -> MpiResult<R> {
        if let Some(r) = self.done.take() {
            return Ok(r);
        }
        let slot = self.slot.take().expect("a started job has a slot or a result");
        let r = crate::core::p2p::blocking::block_on(|_| slot.lock().unwrap_or_else(|e| e.into_inner()).take());
        if r.is_err() {
            // Not parked to the end (the job is still running): wait without the scheduler.
            Started::<R> {
                slot: Some(slot),
                done: None,
            }
            .settle();
        }
        r
    }

    fn settle(&mut self) {
        if let Some(slot) = self.slot.take() {
            if crate::core::p2p::blocking::block_on(|_| slot.lock().unwrap_or_else(|e| e.into_inner()).take()).is_err() {
                while slot.lock().unwrap_or_else(|e| e.into_inner()).is_none() {
                    crate::sched::timer::os_yield();
                }
            }
        }
    }
}

impl<R> Drop for Started<R> {
    fn drop(&mut self) {
        self.settle();
    }
}
