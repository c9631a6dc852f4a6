//! The process's tasks (subranks and helper tasks), by scheduler id: each one's scheduling
//! state, home worker and coroutine, reachable from every worker without a process-wide lock.
//!
//! Slots live in fixed segments that are never moved or freed, so a slot's address stays
//! valid while other threads add tasks. A coroutine is touched only by the worker that owns
//! the task at that moment: the one that took it out of a ready queue (state `RUNNING`), or
//! the code that creates it before it is first queued (see `park` for the state machine).

use super::coroutine::Subrank;
use super::lock::Lock;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};

/// Waiting for a wake-up.
pub const PARKED: u8 = 0;
/// In a worker's ready queue.
pub const QUEUED: u8 = 1;
/// Being run by a worker.
pub const RUNNING: u8 = 2;
/// Being run, and woken meanwhile: it must not park at its next attempt.
pub const NOTIFIED: u8 = 3;
/// Finished (or never started: a free helper slot).
pub const DONE: u8 = 4;

/// What a task asked its worker for when it suspended.
pub const GO_ON: u8 = 0;
pub const PARK: u8 = 1;
pub const YIELD: u8 = 2;
pub const DEFER: u8 = 3;
pub const RETIRE: u8 = 4;

pub struct Slot {
    pub state: AtomicU8,
    /// Set by the task itself just before it suspends; read by the worker that ran it.
    pub intent: AtomicU8,
    /// The worker whose queues it joins when it becomes ready.
    pub home: AtomicUsize,
    /// The subrank whose contents of the swapped thread-local block it runs with (`swap`).
    pub tls: AtomicUsize,
    /// Exit status of a subrank that left through `exit` (i64::MIN: none).
    pub exit: AtomicI64,
    /// Whether the id belongs to a helper task (reusable once done).
    pub helper: AtomicBool,
    /// The MPI rank (local subrank) the task acts as: its own id for subranks and helper
    /// tasks, the creating subrank's for a thread of the program (`foreign`).
    pub rank: AtomicUsize,
    /// Whether the task is a thread of the program rather than a coroutine (`foreign`): it
    /// is never queued, and blocks its own kernel thread on `futex` when it parks.
    pub foreign: AtomicBool,
    /// Futex word of a foreign task: bumped by each wake-up.
    pub futex: AtomicU32,
    /// Nanoseconds it ran so far, when the workers balance their loads (`balance`); written
    /// only by the worker that runs it.
    pub busy: AtomicU64,
    co: UnsafeCell<Option<Subrank>>,
}

// SAFETY: the coroutine cell is accessed only by the single owner the state machine names
// (the creator before the task is queued, then the worker that dequeued it), with the queue
// locks ordering the hand-overs; everything else is atomic.
unsafe impl Sync for Slot {}

impl Slot {
    const fn new() -> Slot {
        Slot {
            state: AtomicU8::new(DONE),
            intent: AtomicU8::new(GO_ON),
            home: AtomicUsize::new(0),
            tls: AtomicUsize::new(0),
            exit: AtomicI64::new(i64::MIN),
            helper: AtomicBool::new(false),
            rank: AtomicUsize::new(0),
            foreign: AtomicBool::new(false),
            futex: AtomicU32::new(0),
            busy: AtomicU64::new(0),
            co: UnsafeCell::new(None),
        }
    }

    /// The coroutine, for its owner.
    ///
    /// # Safety
    /// The caller owns the task now (see the module's documentation), and holds no other
    /// reference obtained from this call.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn co(&self) -> &mut Option<Subrank> {
        // SAFETY: exclusive by the caller's ownership of the task.
        unsafe { &mut *self.co.get() }
    }
}

const SEG: usize = 256;
const MAX_SEGS: usize = 1 << 14;

static SEGS: [AtomicPtr<Slot>; MAX_SEGS] = [const { AtomicPtr::new(std::ptr::null_mut()) }; MAX_SEGS];
/// Ids handed out so far (slots below it exist).
static COUNT: AtomicUsize = AtomicUsize::new(0);
/// Helper ids that are done and may be reused; growth of the table.
static FREE: Lock<Vec<usize>> = Lock::new(Vec::new());

/// Number of ids handed out.
#[inline]
pub fn count() -> usize {
    COUNT.load(Ordering::Acquire)
}

/// Slot `id`, which must have been handed out.
#[inline]
pub fn slot(id: usize) -> &'static Slot {
    let p = SEGS[id / SEG].load(Ordering::Acquire);
    debug_assert!(!p.is_null() && id < count());
    // SAFETY: segments are allocated (and published with Release) before any id in them is
    // handed out, and never freed.
    unsafe { &*p.add(id % SEG) }
}

/// Slot `id` if it exists.
#[inline]
pub fn get(id: usize) -> Option<&'static Slot> {
    (id < count()).then(|| slot(id))
}

/// Makes sure slots below `n` exist; called with the FREE lock held (one grower at a time).
fn grow_to(n: usize) {
    assert!(n <= SEG * MAX_SEGS, "too many scheduler tasks");
    for seg in SEGS.iter().take(n.div_ceil(SEG)) {
        if seg.load(Ordering::Acquire).is_null() {
            let slots: Box<[Slot]> = (0..SEG).map(|_| Slot::new()).collect();
            seg.store(Box::leak(slots).as_mut_ptr(), Ordering::Release);
        }
    }
}

/// Forgets every task: ids 0..n become subranks in state DONE with no coroutine (their
/// creator fills them in). Only while no worker runs.
pub fn reset(n: usize) {
    let mut free = FREE.lock();
    free.clear();
    let old = COUNT.load(Ordering::Acquire);
    grow_to(n.max(1));
    for id in 0..old.max(n) {
        if SEGS[id / SEG].load(Ordering::Acquire).is_null() {
            break;
        }
        // SAFETY: the segment exists (checked); no worker runs, so nobody else touches it.
        let s = unsafe { &*SEGS[id / SEG].load(Ordering::Acquire).add(id % SEG) };
        s.state.store(DONE, Ordering::Relaxed);
        s.intent.store(GO_ON, Ordering::Relaxed);
        s.exit.store(i64::MIN, Ordering::Relaxed);
        s.helper.store(false, Ordering::Relaxed);
        s.foreign.store(false, Ordering::Relaxed);
        s.rank.store(id, Ordering::Relaxed);
        s.busy.store(0, Ordering::Relaxed);
        s.tls.store(id, Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { *s.co.get() = None };
    }
    COUNT.store(n, Ordering::Release);
}

/// An id for a new helper task (a done helper's, or a new one), in state DONE.
pub fn alloc_helper() -> usize {
    let mut free = FREE.lock();
    if let Some(id) = free.pop() {
        // It may have been a thread of the program's (`foreign`).
        slot_init(id);
        return id;
    }
    let id = COUNT.load(Ordering::Acquire);
    grow_to(id + 1);
    slot_init(id);
    COUNT.store(id + 1, Ordering::Release);
    id
}

fn slot_init(id: usize) {
    // SAFETY: the slot exists (grown, or a freed id); a new or free id is not handed out, so
    // nobody else touches it.
    let s = unsafe { &*SEGS[id / SEG].load(Ordering::Acquire).add(id % SEG) };
    s.state.store(DONE, Ordering::Relaxed);
    s.helper.store(true, Ordering::Relaxed);
    s.foreign.store(false, Ordering::Relaxed);
    s.rank.store(id, Ordering::Relaxed);
    s.exit.store(i64::MIN, Ordering::Relaxed);
}

/// Gives a finished helper's id back.
pub fn free_helper(id: usize) {
    FREE.lock().push(id);
}
