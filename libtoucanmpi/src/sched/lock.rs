//! A small lock for the runtime's shared state: uncontended it costs one atomic exchange (no
//! poisoning, no thread-local lookups, unlike `std::sync::Mutex` in a shared library). Critical
//! sections are short and never yield; contention (later, in SMP mode) spins, then yields.

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};

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
            spins += 1;
            if spins > 100 {
                super::timer::os_yield();
            } else {
                std::hint::spin_loop();
            }
        }
        Guard { lock: self }
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

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
}
