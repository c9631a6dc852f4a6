//! One-sided communication (MPI chapter 12, issue 18): windows, their targets, and the
//! table that gives them handles. See docs/rma.md for the design.
//!
//! A window is a per-subrank object (its handle names it in that subrank only) holding what
//! its members in this process share (`Common`): every member's memory (address, size,
//! displacement unit), lock word and process. Operations (`ops`) on a target in this process,
//! and on any target of a shared-memory window, are loads, stores and copies; on a target in
//! another process they go to the real MPI's process-wide window (`transport::rma`).
//! Synchronisation (`sync`) follows the standard's epochs.

pub mod ops;
pub mod sync;
pub mod wlock;

use crate::consts as c;
use crate::core::comm::CommRef;
use crate::core::error::{err, MpiError, MpiResult};
use crate::sched::lock::Lock;
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicPtr, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;

/// Handles of windows start here.
pub const WIN_BASE: usize = 0x7000_0000;

/// Windows alive in this process whose members span processes: while there are any, the
/// background progress thread keeps polling (the real MPI applies other processes'
/// operations on our memory only when it is polled).
pub static LIVE_REMOTE: AtomicUsize = AtomicUsize::new(0);

static WINS: Lock<Vec<Option<Arc<Win>>>> = Lock::new(Vec::new());

/// One member of a window, as every member sees it.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    pub proc: usize,
    /// Address of its memory (in its own process; in ours too for a shared window).
    pub base: usize,
    pub size: usize,
    pub unit: usize,
    /// Address of its lock word (in its process; ours for a shared window).
    pub lock: usize,
    /// Its lock word's address in its own process: the name of its window lock there
    /// (`wlock`).
    pub key: usize,
}

/// The real windows of a virtual `MPI_Win_create` window spanning processes (`sync::create`,
/// `transport::rma::rma_create`): each process exposes its members' memory as contiguous
/// runs, its j-th run in real window j ("slot" j).
pub struct Created {
    /// One real window per slot.
    pub wins: Vec<crate::transport::rma::RealWin>,
    /// Per window rank: its slot, its process's rank in the real windows, and the address of
    /// the start of its run (displacements there are byte offsets from it).
    pub at: Vec<(usize, usize, usize)>,
}

/// What the members of a window in this process share.
pub struct Common {
    pub targets: Vec<Target>,
    /// Some member lives in another process (and the window is not a shared-memory one).
    pub remote: bool,
    /// A window in shared memory (`MPI_Win_allocate_shared`, or `MPI_Win_allocate` within
    /// one node): every target is in memory this process maps.
    pub shm: Option<Arc<crate::transport::shm::Segment>>,
    /// Real windows of its own (`MPI_Win_create` windows across processes); otherwise its
    /// operations between processes go to the process-wide dynamic window.
    pub created: Option<Arc<Created>>,
    /// This process (targets with this `proc` are in our memory).
    pub myproc: usize,
}

impl Common {
    /// Whether the window's operations involve the real MPI: its members span processes
    /// and it is not in shared memory. Then accumulates and lock words go through the real
    /// MPI for every target (its own atomicity), puts and gets to targets in this process
    /// are still copies.
    pub fn real(&self) -> bool {
        self.remote && self.shm.is_none()
    }
}

/// An access or exposure epoch state of one window at one subrank.
#[derive(Default, Debug)]
pub struct Epoch {
    /// A fence opened an epoch (not closed by MPI_MODE_NOSUCCEED).
    pub fence: bool,
    /// Targets of MPI_Win_start (window ranks), until MPI_Win_complete.
    pub access: Option<Vec<i32>>,
    /// Origins of MPI_Win_post, and how many completed so far, until MPI_Win_wait/test.
    pub exposure: Option<(Vec<i32>, usize)>,
    /// Passive-target locks held: window rank -> (lock type, assert).
    pub locks: HashMap<i32, (i32, i32)>,
    /// MPI_Win_lock_all's assert, while it holds.
    pub lock_all: Option<i32>,
}

impl Epoch {
    /// Whether this rank may access window rank `r` now.
    pub fn may_access(&self, r: i32) -> bool {
        self.fence || self.lock_all.is_some() || self.locks.contains_key(&r) || self.access.as_ref().is_some_and(|a| a.contains(&r))
    }
}

/// The mutable part of a window.
#[derive(Default)]
pub struct WinState {
    pub errhandler: usize,
    pub name: String,
    pub info: Vec<(String, String)>,
    pub ep: Epoch,
    /// Regions attached to a dynamic window (address, size).
    pub attached: Vec<(usize, usize)>,
}

pub struct Win {
    /// The owning subrank.
    pub sub: usize,
    /// The window's private communicator (a duplicate of the one it was created on).
    pub comm_h: usize,
    pub comm: CommRef,
    pub common: Arc<Common>,
    pub flavor: i32,
    /// Attribute values (the attribute calls return their addresses).
    pub base: usize,
    pub size: i64,
    pub unit: i32,
    pub model: i32,
    /// Memory the library allocated for the window (Win_allocate), freed with it.
    pub owned: Option<usize>,
    /// This member's lock word (windows not in shared memory).
    pub lockword: Box<AtomicI64>,
    pub st: Lock<WinState>,
    /// What `st.ep` says about access to every target at once (`OPEN_FENCE`, `OPEN_ALL`),
    /// kept beside it for the communication calls' checks without the lock. Only the owning
    /// subrank reads and changes its window's epochs.
    pub open: AtomicU8,
}

/// `Win::open`: a fence epoch is open (every target accessible).
pub const OPEN_FENCE: u8 = 1;
/// `Win::open`: `MPI_Win_lock_all` holds (every target accessible, flushes allowed).
pub const OPEN_ALL: u8 = 2;

impl Win {
    pub fn rank(&self) -> i32 {
        self.comm.rank
    }

    pub fn size_of_group(&self) -> i32 {
        self.comm.size()
    }

    /// Sets (`on`) or clears `bit` of `open`.
    pub fn set_open(&self, bit: u8, on: bool) {
        if on {
            self.open.fetch_or(bit, Ordering::Relaxed);
        } else {
            self.open.fetch_and(!bit, Ordering::Relaxed);
        }
    }
}

/// Registers a window; returns its handle. Handles of freed windows are not handed out
/// again (a stale handle is `MPI_ERR_WIN`, as for the other objects).
pub fn register(w: Win) -> usize {
    if w.common.remote {
        LIVE_REMOTE.fetch_add(1, Ordering::Relaxed);
    }
    let mut t = WINS.lock();
    t.push(Some(Arc::new(w)));
    WIN_BASE + t.len() - 1
}

/// Removes window `h` from the table.
pub fn unregister(h: usize) {
    let mut t = WINS.lock();
    if let Some(slot) = h.checked_sub(WIN_BASE).and_then(|i| t.get_mut(i)) {
        if let Some(w) = slot.take() {
            if w.sub < CACHED && LAST_H[w.sub].load(Ordering::Relaxed) == h {
                LAST_H[w.sub].store(0, Ordering::Relaxed);
                LAST_W[w.sub].store(std::ptr::null_mut(), Ordering::Relaxed);
            }
            if w.common.remote {
                LIVE_REMOTE.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }
}

/// Window `h` of subrank `sub` (MPI_ERR_WIN when it is not one of its live windows).
pub fn lookup(sub: usize, h: usize) -> MpiResult<Arc<Win>> {
    if h == c::MPI_WIN_NULL {
        return err(c::MPI_ERR_WIN, "MPI_WIN_NULL is not a valid window");
    }
    let w = {
        let t = WINS.lock();
        h.checked_sub(WIN_BASE).and_then(|i| t.get(i).cloned()).flatten()
    };
    match w {
        Some(w) if w.sub == sub => Ok(w),
        _ => Err(MpiError::new(
            c::MPI_ERR_WIN,
            format!("invalid window handle {h:#x} (freed, or not a window)"),
        )),
    }
}

/// Per subrank (its index in the process, below `CACHED`), the window handle it named last
/// and that window: the communication and flush calls find their window here without the
/// table's lock and without a reference count (`lookup_fast`). Only the subrank's coroutine
/// reads and writes its entry (it runs on one thread at a time); the program's own threads
/// of the rank take a reference from the table.
const CACHED: usize = 1 << 12;
static LAST_H: [AtomicUsize; CACHED] = [const { AtomicUsize::new(0) }; CACHED];
static LAST_W: [AtomicPtr<Win>; CACHED] = [const { AtomicPtr::new(std::ptr::null_mut()) }; CACHED];

/// A window of the running subrank for the length of one MPI call: borrowed from the table
/// (its last window, `lookup_fast`) or a reference of its own.
pub enum WinRef {
    Cached(*const Win),
    Owned(Arc<Win>),
}

impl std::ops::Deref for WinRef {
    type Target = Win;
    fn deref(&self) -> &Win {
        match self {
            // SAFETY: the table holds a reference to this window from `register` until
            // `unregister`, which clears the owner's cache entry. Only the owner caches it, and
            // only the owner unregisters it (`sync::free`, MPI_Win_free, which looks the window
            // up with `lookup`): a subrank cannot be inside MPI_Win_free while a WinRef of one
            // of its other calls is alive (a WinRef lives within one call). Only the coroutine
            // caches (`lookup_fast`); a thread of the program freeing the window while the
            // coroutine is inside a call on it would break MPI's rule that a window is freed
            // only when no operation on it is pending (MPI_Win_free is collective and
            // synchronizing).
            WinRef::Cached(p) => unsafe { &**p },
            WinRef::Owned(w) => w,
        }
    }
}

/// `lookup`, for the calls that only use the window during the call (not MPI_Win_free): the
/// subrank's last window comes from its cache entry.
#[inline]
pub fn lookup_fast(sub: usize, h: usize) -> MpiResult<WinRef> {
    // Only the subrank's coroutine uses its entry: the program's own threads of the rank
    // (MPI_THREAD_MULTIPLE) may call concurrently and take the table's reference.
    let cached = sub < CACHED && crate::sched::in_coroutine();
    if cached && h != 0 && LAST_H[sub].load(Ordering::Relaxed) == h {
        return Ok(WinRef::Cached(LAST_W[sub].load(Ordering::Relaxed)));
    }
    let w = lookup(sub, h)?;
    if cached {
        LAST_W[sub].store(Arc::as_ptr(&w) as *mut Win, Ordering::Relaxed);
        LAST_H[sub].store(h, Ordering::Relaxed);
    }
    Ok(WinRef::Owned(w))
}

/// The error handler of window `h` (for raising an error on it), if it is a live window.
pub fn errhandler_of(h: usize) -> Option<usize> {
    let t = WINS.lock();
    let w = h.checked_sub(WIN_BASE).and_then(|i| t.get(i).cloned()).flatten()?;
    drop(t);
    let e = w.st.lock().errhandler;
    Some(e)
}

/// Accumulates on a window that does not involve the real MPI run one at a time per target
/// under one of these locks (chosen by the target's lock word address): per element
/// atomicity, also between workers of the process (SMP mode). A shared window across
/// processes uses a lock word in its segment instead.
static ACC: [Lock<()>; 64] = [const { Lock::new(()) }; 64];

/// The accumulate lock of the target whose lock word is at `lock`.
pub fn acc_lock(lock: usize) -> &'static Lock<()> {
    &ACC[(lock >> 6) % ACC.len()]
}
