//! Per-subrank contents of one range of the worker thread's memory, swapped in when the
//! worker resumes a task of another subrank. Used for the program's static thread-local block
//! (its `__thread` variables): the code of every copy of the program reaches it at a fixed
//! offset from the thread pointer, so each subrank's values must be in place while it runs.
//!
//! Only a change of subrank costs anything (two copies of the range); resuming the subrank
//! whose contents are in place, or a helper task working for it, costs a comparison.
//!
//! With several workers (SMP mode) every worker thread has its own block, at the same offset
//! from its thread pointer, and its own `Swap` holding the contents of the subranks it runs;
//! those subranks then stay on their home worker (no stealing), since a pointer the program
//! took to one of its thread-locals must keep reaching that subrank's values.

use super::lock::Lock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The swapped range of one worker thread and every subrank's contents of it.
pub struct Swap {
    live: *mut u8,
    len: usize,
    /// Contents per subrank; the entry of the subrank whose contents are live is stale.
    saved: Vec<Box<[u8]>>,
    /// The subrank whose contents are live (usize::MAX: nobody's yet, a new thread's block).
    owner: usize,
    /// The swap of the thread that installed it (the program's main thread).
    main: bool,
}

// SAFETY: `live` is a range of the worker thread's own memory; a `Swap` is only used by that
// thread (installed by it, taken and put back by its run loop), the lock only guards the slot.
unsafe impl Send for Swap {}

impl Swap {
    /// A swap of `[live, live + len)` among `saved.len()` subranks, subrank 0's contents
    /// being live now (its entry of `saved` is ignored). Each other entry must hold `len` bytes.
    ///
    /// # Safety
    /// `[live, live + len)` must be memory of the calling thread, valid for its lifetime, that
    /// the program may find replaced between two of its subrank's steps.
    pub unsafe fn new(live: *mut u8, len: usize, saved: Vec<Box<[u8]>>) -> Swap {
        debug_assert!(saved.iter().skip(1).all(|s| s.len() == len));
        Swap {
            live,
            len,
            saved,
            owner: 0,
            main: true,
        }
    }

    /// A swap of the calling thread's block (at the installed swap's offset from the thread
    /// pointer) among the subranks whose contents `saved` holds (entries of `len` bytes; the
    /// others are empty and never switched to on this thread). Nobody's contents are live yet.
    ///
    /// # Safety
    /// A swap was installed; the calling thread is a worker that runs only the subranks whose
    /// entries are filled, and the program reaches its thread-locals from it only while they run.
    pub unsafe fn for_thread(saved: Vec<Box<[u8]>>) -> Swap {
        let (live, len) = range().expect("no swapped block");
        add_block(live);
        Swap {
            live: live as *mut u8,
            len: len - live,
            saved,
            owner: usize::MAX,
            main: false,
        }
    }

    /// Moves out the entries of the subranks `pred` selects (for another worker's swap); the
    /// result has an entry per subrank, empty for the others. Never the live one's.
    pub fn split_off(&mut self, pred: impl Fn(usize) -> bool) -> Vec<Box<[u8]>> {
        let owner = self.owner;
        (0..self.saved.len())
            .map(|k| {
                if k != owner && pred(k) {
                    std::mem::take(&mut self.saved[k])
                } else {
                    Box::default()
                }
            })
            .collect()
    }

    /// Takes back the entries of another worker's swap (its live contents saved first).
    pub fn merge(&mut self, mut other: Swap) {
        other.save_live();
        for (k, e) in other.saved.into_iter().enumerate() {
            if e.len() == self.len && k != self.owner && k < self.saved.len() {
                self.saved[k] = e;
            }
        }
    }

    /// Copies the live contents into their owner's entry.
    fn save_live(&mut self) {
        if self.owner == usize::MAX {
            return;
        }
        let old = &mut self.saved[self.owner];
        if old.len() != self.len {
            *old = vec![0u8; self.len].into_boxed_slice();
        }
        // SAFETY: `live` holds `len` bytes of this thread's memory; `old` is our own buffer of
        // `len` bytes.
        unsafe { std::ptr::copy_nonoverlapping(self.live, old.as_mut_ptr(), self.len) };
    }

    /// Puts subrank `k`'s contents in place (saving those of the subrank they replace).
    #[inline]
    pub fn switch_to(&mut self, k: usize) {
        // Not one of this thread's subranks (or not a subrank at all): left alone.
        if k == self.owner || self.saved.get(k).is_none_or(|e| e.len() != self.len) {
            return;
        }
        self.save_live();
        // SAFETY: `live` holds `len` bytes of this thread's memory (see `new`); the entry is
        // our own buffer of `len` bytes (checked above).
        unsafe { std::ptr::copy_nonoverlapping(self.saved[k].as_ptr(), self.live, self.len) };
        self.owner = k;
        if self.main {
            OWNER.store(k, Ordering::Relaxed);
        }
    }
}

static SWAP: Lock<Option<Swap>> = Lock::new(None);
/// The swapped range, as an offset from the thread pointer, and its length (0: nothing is
/// swapped).
static OFF: AtomicUsize = AtomicUsize::new(0);
static LEN: AtomicUsize = AtomicUsize::new(0);
/// The subrank whose contents are live in the main thread's block.
static OWNER: AtomicUsize = AtomicUsize::new(0);

/// Start of each worker thread's block (worker 0's first), for `in_blocks`.
static BLOCKS: Lock<Vec<usize>> = Lock::new(Vec::new());
/// Entries of BLOCKS (read without its lock: `in_blocks` runs on the send/receive paths).
static NBLOCKS: AtomicUsize = AtomicUsize::new(0);
static BLOCK_AT: [AtomicUsize; BLOCKS_MAX] = [const { AtomicUsize::new(0) }; BLOCKS_MAX];
const BLOCKS_MAX: usize = super::queue::MAX_WORKERS;

fn add_block(lo: usize) {
    let mut b = BLOCKS.lock();
    if b.len() < BLOCKS_MAX && !b.contains(&lo) {
        BLOCK_AT[b.len()].store(lo, Ordering::Relaxed);
        b.push(lo);
        NBLOCKS.store(b.len(), Ordering::Release);
    }
}

/// Whether `[lo, hi)` overlaps the swapped block of any worker thread: memory holding some
/// subrank's thread-locals, which another task must not touch while that subrank is
/// switched out (`core::p2p::tlsbuf`).
#[inline]
pub fn in_blocks(lo: usize, hi: usize) -> bool {
    let len = LEN.load(Ordering::Relaxed);
    len != 0
        && (0..NBLOCKS.load(Ordering::Acquire)).any(|i| {
            let b = BLOCK_AT[i].load(Ordering::Relaxed);
            lo < b + len && b < hi
        })
}

/// Makes `s` the swap the worker applies (subrank 0's contents live); called on the thread
/// whose block it swaps.
pub fn install(s: Swap) {
    OFF.store((s.live as usize).wrapping_sub(super::worker::thread_word()), Ordering::Relaxed);
    LEN.store(s.len, Ordering::Relaxed);
    add_block(s.live as usize);
    OWNER.store(s.owner, Ordering::Relaxed);
    *SWAP.lock() = Some(s);
}

/// The swapped range `[lo, hi)` of the calling thread's block, if any.
#[inline]
pub fn range() -> Option<(usize, usize)> {
    let len = LEN.load(Ordering::Relaxed);
    if len == 0 {
        return None;
    }
    let lo = super::worker::thread_word().wrapping_add(OFF.load(Ordering::Relaxed));
    Some((lo, lo + len))
}

/// Whether a swap is installed (the program has thread-locals to keep per subrank).
pub fn active() -> bool {
    LEN.load(Ordering::Relaxed) != 0
}

/// The subrank whose contents are in place for the caller: the running task's, or (outside
/// the tasks) the main thread's.
pub fn owner() -> usize {
    match super::task::get(super::worker::current()) {
        Some(t) => t.tls.load(Ordering::Relaxed),
        None => OWNER.load(Ordering::Relaxed),
    }
}

/// Runs `f` on the installed swap, if any (not while the run loop holds it).
pub fn with<R>(f: impl FnOnce(&mut Swap) -> R) -> Option<R> {
    SWAP.lock().as_mut().map(f)
}

/// Takes the swap out for the run loop (which applies it at each resume without the lock).
pub(super) fn take() -> Option<Swap> {
    SWAP.lock().take()
}

/// Gives the swap back after the run loop.
pub(super) fn put(s: Option<Swap>) {
    if s.is_some() {
        *SWAP.lock() = s;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swaps_contents_on_change_of_subrank() {
        let live: *mut [u8; 4] = Box::into_raw(Box::new([1u8, 2, 3, 4]));
        // SAFETY: `live` is a leaked box: valid for the test, read and written only through
        // this pointer (by the swap and by the reads below, never at the same time).
        let now = move || unsafe { *live };
        let saved = vec![
            Box::default(),
            vec![10u8, 11, 12, 13].into_boxed_slice(),
            vec![20u8; 4].into_boxed_slice(),
        ];
        // SAFETY: as above; this thread alone uses the swap.
        let mut s = unsafe { Swap::new(live as *mut u8, 4, saved) };
        s.switch_to(1);
        assert_eq!(now(), [10, 11, 12, 13]);
        // SAFETY: as above (subrank 1 writes its variable).
        unsafe { (*live)[0] = 99 };
        s.switch_to(1); // no change
        assert_eq!(now()[0], 99);
        s.switch_to(2);
        assert_eq!(now(), [20; 4]);
        s.switch_to(0);
        assert_eq!(now(), [1, 2, 3, 4]);
        s.switch_to(1);
        assert_eq!(now(), [99, 11, 12, 13]);
        s.switch_to(7); // not a subrank: left alone
        assert_eq!(now(), [99, 11, 12, 13]);
        s.switch_to(0);
        // SAFETY: the swap is done with it.
        drop(unsafe { Box::from_raw(live) });
    }
}
