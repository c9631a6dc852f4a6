//! A small lock for the runtime's shared state: uncontended it costs one atomic exchange (no
//! poisoning, no thread-local lookups, unlike `std::sync::Mutex` in a shared library). Critical
//! sections are short and never yield; contention (later, in SMP mode) spins, then yields.

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

pub struct Lock<T> {
    held: AtomicBool,
    data: UnsafeCell<T>,
}

// SAFETY: access to `data` is serialised by `held` (acquire on lock, release on unlock).
unsafe impl<T: Send> Sync for Lock<T> {}
// SAFETY: moving the lock moves the data; T: Send suffices.
unsafe impl<T: Send> Send for Lock<T> {}

pub struct Guard<'a, T> {
    lock: &'a Lock<T>,
}

impl<T> Lock<T> {
    pub const fn new(v: T) -> Lock<T> {
        Lock {
            held: AtomicBool::new(false),
            data: UnsafeCell::new(v),
        }
    }

    pub fn lock(&self) -> Guard<'_, T> {
        let mut spins = 0u32;
        while self
            .held
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            backoff(&mut spins);
        }
        Guard { lock: self }
    }

    /// The lock taken with a plain store instead of an atomic read-modify-write, for a
    /// caller that knows no other thread can take it now: the only reader of the `BrLock`
    /// whose data holds it (`state::Shared` with one reader slot). The lock reads as held
    /// meanwhile, so a `try_lock` of this thread still fails and a `lock` still waits.
    ///
    /// # Safety
    /// While the guard lives, no other thread may hold or take the lock; this thread must not
    /// hold it already.
    #[inline(always)]
    pub unsafe fn lock_sole(&self) -> Guard<'_, T> {
        debug_assert!(!self.held.load(Ordering::Relaxed), "lock_sole on a held lock");
        self.held.store(true, Ordering::Relaxed);
        Guard { lock: self }
    }

    /// The data without the lock, through exclusive access to the lock itself.
    pub fn get_mut(&mut self) -> &mut T {
        self.data.get_mut()
    }

    /// The data without taking the lock.
    ///
    /// # Safety
    /// Nobody may hold the lock or write the data while the reference lives (the caller
    /// excludes them some other way, e.g. the write side of a `BrLock` around the data).
    pub unsafe fn get_unlocked(&self) -> &T {
        // SAFETY: forwarded from the caller.
        unsafe { &*self.data.get() }
    }

    /// The lock if it is free now (used on fatal paths that may run while it is held).
    pub fn try_lock(&self) -> Option<Guard<'_, T>> {
        self.held
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .map(|_| Guard { lock: self })
    }
}

impl<T> Deref for Guard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the lock, so no other reference to the data exists.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T> DerefMut for Guard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as above, and the guard is borrowed mutably.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T> Drop for Guard<'_, T> {
    fn drop(&mut self) {
        self.lock.held.store(false, Ordering::Release);
    }
}

/// Readers a [`BrLock`] can have: one per worker thread.
pub const MAX_READERS: usize = super::queue::MAX_WORKERS;

/// A reader's flag on a cache line of its own, so that readers on different cores never
/// share a line (the line a reader writes stays in its core's cache).
#[repr(align(128))]
struct Flag(AtomicBool);

/// A big-reader lock (brlock): readers, each with its own slot (a worker thread), take it
/// by setting their slot's flag, which no other reader touches, so that readers on different
/// cores never bounce a cache line between them; a writer sets the writer flag, then waits
/// until every reader's flag is clear, so it costs one look per reader slot in use.
///
/// Readers must never wait for the write side while reading (no writing inside a read
/// section, no read section inside a write section of the same thread).
pub struct BrLock<T> {
    writer: Flag,
    /// Reader slots in use: slots `0..readers` are scanned by a writer.
    readers: AtomicUsize,
    flags: [Flag; MAX_READERS],
    data: UnsafeCell<T>,
}

// SAFETY: writers are serialised by `writer` and exclude every reader (each reader's flag is
// clear while a writer holds the lock); readers share `&T`, which needs `T: Sync`.
unsafe impl<T: Send + Sync> Sync for BrLock<T> {}
// SAFETY: moving the lock moves the data; T: Send suffices.
unsafe impl<T: Send> Send for BrLock<T> {}

pub struct WriteGuard<'a, T> {
    lock: &'a BrLock<T>,
}

pub struct ReadGuard<'a, T> {
    lock: &'a BrLock<T>,
    slot: usize,
}

impl<T> BrLock<T> {
    pub const fn new(v: T) -> BrLock<T> {
        BrLock {
            writer: Flag(AtomicBool::new(false)),
            readers: AtomicUsize::new(0),
            flags: [const { Flag(AtomicBool::new(false)) }; MAX_READERS],
            data: UnsafeCell::new(v),
        }
    }

    /// Sets how many reader slots are in use (before any reader runs; 0: readers never come,
    /// and writers look at no slot).
    pub fn set_readers(&self, n: usize) {
        self.readers.store(n.min(MAX_READERS), Ordering::SeqCst);
    }

    /// Whether at most one reader slot is in use: then only one thread can ever be inside
    /// a read section (a second thread would need a slot of its own).
    #[inline]
    pub fn sole_reader(&self) -> bool {
        self.readers.load(Ordering::Relaxed) <= 1
    }

    /// Whether reader slot `slot` may be used.
    #[inline]
    pub fn readable(&self, slot: usize) -> bool {
        slot < self.readers.load(Ordering::Relaxed)
    }

    /// Whether a reader holds the lock now (a writer that has the writer flag waits for none).
    #[inline]
    fn any_reader(&self) -> bool {
        let n = self.readers.load(Ordering::Relaxed);
        self.flags[..n].iter().any(|f| f.0.load(Ordering::SeqCst))
    }

    pub fn write(&self) -> WriteGuard<'_, T> {
        let mut spins = 0u32;
        loop {
            if !self.writer.0.load(Ordering::Relaxed)
                && self
                    .writer
                    .0
                    .compare_exchange_weak(false, true, Ordering::SeqCst, Ordering::Relaxed)
                    .is_ok()
            {
                break;
            }
            backoff(&mut spins);
        }
        // New readers see the writer flag and step back; wait for those inside to leave.
        let mut spins = 0u32;
        while self.any_reader() {
            backoff(&mut spins);
        }
        WriteGuard { lock: self }
    }

    /// The write side if it is free now and no reader is inside (never waits: used on paths
    /// that may run while the caller holds the lock, and by pollers that have other work).
    pub fn try_write(&self) -> Option<WriteGuard<'_, T>> {
        if self.writer.0.load(Ordering::Relaxed) || self.any_reader() {
            return None;
        }
        self.writer
            .0
            .compare_exchange(false, true, Ordering::SeqCst, Ordering::Relaxed)
            .ok()?;
        if self.any_reader() {
            self.writer.0.store(false, Ordering::Release);
            return None;
        }
        Some(WriteGuard { lock: self })
    }

    /// The read side, for reader slot `slot` (`readable(slot)`; one thread per slot at a
    /// time): waits while a writer holds or wants the lock.
    #[inline]
    pub fn read(&self, slot: usize) -> ReadGuard<'_, T> {
        debug_assert!(self.readable(slot));
        let f = &self.flags[slot].0;
        loop {
            // Dekker's handshake with `write`: the flag is set before the writer flag is
            // looked at, and the writer sets its flag before it looks at the readers'.
            f.store(true, Ordering::SeqCst);
            if !self.writer.0.load(Ordering::SeqCst) {
                return ReadGuard { lock: self, slot };
            }
            f.store(false, Ordering::Release);
            let mut spins = 0u32;
            while self.writer.0.load(Ordering::Relaxed) {
                backoff(&mut spins);
            }
        }
    }
}

/// Spins, then yields the core (a holder may have been preempted).
#[inline]
fn backoff(spins: &mut u32) {
    *spins += 1;
    if *spins > 100 {
        super::timer::os_yield();
    } else {
        std::hint::spin_loop();
    }
}

impl<T> Deref for WriteGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the writer excludes every other writer and reader.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T> DerefMut for WriteGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as above, and the guard is borrowed mutably.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T> Drop for WriteGuard<'_, T> {
    fn drop(&mut self) {
        self.lock.writer.0.store(false, Ordering::Release);
    }
}

impl<T> Deref for ReadGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: no writer holds the lock while a reader's flag is set; readers share `&T`.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T> Drop for ReadGuard<'_, T> {
    fn drop(&mut self) {
        self.lock.flags[self.slot].0.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// Session 27 (msgrate27): a lock taken by `lock_sole` reads as held (a `try_lock`
    /// fails) until its guard goes, then is free; `sole_reader` holds with one reader slot.
    #[rstest::rstest]
    #[case::one_reader(1, true)]
    #[case::two_readers(2, false)]
    #[case::many(MAX_READERS, false)]
    fn a_sole_lock_reads_as_held(#[case] readers: usize, #[case] sole: bool) {
        let b: BrLock<u32> = BrLock::new(0);
        b.set_readers(readers);
        assert_eq!(b.sole_reader(), sole);
        let l = Lock::new(5u32);
        {
            // SAFETY: this thread alone uses `l`.
            let mut g = unsafe { l.lock_sole() };
            *g += 1;
            assert!(l.try_lock().is_none(), "held while the guard lives");
        }
        let g = l.try_lock().expect("free again");
        assert_eq!(*g, 6);
    }

    #[test]
    fn serialises_threads() {
        let l = Arc::new(Lock::new(0u64));
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let l = l.clone();
                std::thread::spawn(move || {
                    for _ in 0..10000 {
                        *l.lock() += 1;
                    }
                })
            })
            .collect();
        hs.into_iter().for_each(|h| h.join().unwrap());
        assert_eq!(*l.lock(), 40000);
        let g = l.lock();
        assert!(l.try_lock().is_none());
        drop(g);
        assert!(l.try_lock().is_some());
    }

    #[test]
    fn brlock_writers_exclude_readers() {
        static L: BrLock<(u64, u64)> = BrLock::new((0, 0));
        L.set_readers(2);
        std::thread::scope(|sc| {
            for slot in 0..2 {
                sc.spawn(move || {
                    for _ in 0..20000 {
                        let g = L.read(slot);
                        // A writer changes both halves together: a reader never sees them apart.
                        assert_eq!(g.0, g.1);
                    }
                });
            }
            sc.spawn(|| {
                for _ in 0..20000 {
                    let mut g = L.write();
                    g.0 += 1;
                    g.1 += 1;
                }
            });
        });
        assert_eq!(*L.write(), (20000, 20000));
        let r = L.read(1);
        assert!(L.try_write().is_none(), "a reader inside keeps writers out");
        drop(r);
        assert!(L.try_write().is_some());
    }
}
