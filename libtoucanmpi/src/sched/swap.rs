//! Per-subrank contents of one range of the worker thread's memory, swapped in when the
//! worker resumes a task of another subrank. Used for the program's static thread-local block
//! (its `__thread` variables): the code of every copy of the program reaches it at a fixed
//! offset from the thread pointer, so each subrank's values must be in place while it runs.
//!
//! Only a change of subrank costs anything (two copies of the range); resuming the subrank
//! whose contents are in place, or a helper task working for it, costs a comparison.

use super::lock::Lock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The swapped range of one worker thread and every subrank's contents of it.
pub struct Swap {
    live: *mut u8,
    len: usize,
    /// Contents per subrank; the entry of the subrank whose contents are live is stale.
    saved: Vec<Box<[u8]>>,
    owner: usize,
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
        }
    }

    /// Puts subrank `k`'s contents in place (saving those of the subrank they replace).
    #[inline]
    pub fn switch_to(&mut self, k: usize) {
        if k == self.owner || k >= self.saved.len() {
            return;
        }
        // SAFETY: `live` holds `len` bytes of this thread's memory (see `new`); the saved
        // entries are our own buffers of `len` bytes (entry 0 gets its buffer on first use).
        unsafe {
            let old = &mut self.saved[self.owner];
            if old.len() != self.len {
                *old = vec![0u8; self.len].into_boxed_slice();
            }
            std::ptr::copy_nonoverlapping(self.live, old.as_mut_ptr(), self.len);
            std::ptr::copy_nonoverlapping(self.saved[k].as_ptr(), self.live, self.len);
        }
        self.owner = k;
        OWNER.store(k, Ordering::Relaxed);
    }
}

static SWAP: Lock<Option<Swap>> = Lock::new(None);
/// `[LO, HI)`: the swapped range (both 0 when nothing is swapped).
static LO: AtomicUsize = AtomicUsize::new(0);
static HI: AtomicUsize = AtomicUsize::new(0);
/// The subrank whose contents are live.
static OWNER: AtomicUsize = AtomicUsize::new(0);

/// Makes `s` the swap the worker applies (subrank 0's contents live).
pub fn install(s: Swap) {
    LO.store(s.live as usize, Ordering::Relaxed);
    HI.store(s.live as usize + s.len, Ordering::Relaxed);
    OWNER.store(s.owner, Ordering::Relaxed);
    *SWAP.lock() = Some(s);
}

/// The swapped range `[lo, hi)`, if any.
#[inline]
pub fn range() -> Option<(usize, usize)> {
    let hi = HI.load(Ordering::Relaxed);
    (hi != 0).then(|| (LO.load(Ordering::Relaxed), hi))
}

/// The subrank whose contents are in place now.
pub fn owner() -> usize {
    OWNER.load(Ordering::Relaxed)
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
