//! The program's own thread-local variables (`__thread`, C++ `thread_local`), per subrank.
//!
//! The executable reaches its thread-locals at fixed offsets from the thread pointer (the
//! local-exec model of a PIE), so every copy of it addresses the same block: the original's
//! static TLS block of the worker thread. Each subrank gets its own contents of that block,
//! initialised as a new thread's would be (from its copy's TLS image, relocated for the copy,
//! then zeros), and the scheduler puts them in place whenever it resumes another subrank
//! (`sched::swap`): a switch between subranks copies the block out and in, nothing when the
//! program has no thread-locals. Communication buffers in that block are handled by
//! `core::p2p::tlsbuf`.
//!
//! C++ thread-locals with destructors register them with the C library, per thread. Those of
//! objects in the block are kept here instead, per subrank, and run when the subrank ends
//! (its `main` returns or it calls `exit`), with its values in place, as a thread's run when
//! it ends; otherwise every subrank's registration would destroy the one live object at exit.

use super::elf;
use super::object::Loaded;
use crate::sched::lock::Lock;
use crate::sched::swap::{self, Swap};
use std::os::raw::c_void;

/// A thread-local destructor, as the C++ runtime registers it.
pub type Dtor = unsafe extern "C" fn(*mut c_void);

/// The executable's static thread-local block on the calling thread.
pub struct Block {
    live: usize,
    vaddr: usize,
    filesz: usize,
    memsz: usize,
}

impl Block {
    /// The block of the executable `exe` (as loaded in this process), if it has thread-locals.
    pub fn of(exe: &Loaded) -> Option<Block> {
        let p = exe.phdrs.iter().find(|p| p.p_type == elf::PT_TLS && p.memsz > 0)?;
        (exe.tls_data != 0).then(|| Block {
            live: exe.tls_data,
            vaddr: p.vaddr as usize,
            filesz: p.filesz.min(p.memsz) as usize,
            memsz: p.memsz as usize,
        })
    }

    /// Bytes of the block.
    pub fn bytes(&self) -> usize {
        self.memsz
    }

    /// Initial contents for the copy loaded at `base`: its TLS image (relocated by the loader
    /// for that copy, so a thread-local pointing at a global points at the copy's), then zeros.
    ///
    /// # Safety
    /// `base` is the load bias of a loaded copy of the executable.
    pub unsafe fn image(&self, base: usize) -> Box<[u8]> {
        let mut v = vec![0u8; self.memsz];
        // SAFETY: the copy maps its TLS image (part of a loaded segment) at base + vaddr.
        unsafe { std::ptr::copy_nonoverlapping((base + self.vaddr) as *const u8, v.as_mut_ptr(), self.filesz) };
        v.into_boxed_slice()
    }

    /// Has the scheduler swap the block among the subranks: subrank 0 (the original program)
    /// keeps the contents in place now, subrank k >= 1 starts from `images[k - 1]`.
    ///
    /// # Safety
    /// Called on the worker thread (the one that runs the subranks), before any of them runs.
    pub unsafe fn install(&self, images: Vec<Box<[u8]>>) {
        *IMAGES.lock() = images.clone();
        let saved = std::iter::once(Box::default()).chain(images).collect();
        // SAFETY: the block is this thread's static TLS block of the executable, valid for the
        // thread's lifetime; the program reads it only while one of its subranks runs, and
        // the worker puts that subrank's contents in place before resuming it.
        swap::install(unsafe { Swap::new(self.live as *mut u8, self.memsz, saved) });
    }
}

/// Subrank k's initial contents of the block (k >= 1, at k - 1), for the threads it starts.
static IMAGES: Lock<Vec<Box<[u8]>>> = Lock::new(Vec::new());

/// Gives the calling thread, just started by subrank `k` (`abi::threads`), the initial
/// thread-locals of `k`'s copy of the program, as a new thread of that copy would have: the
/// C library initialised them from the original's image, whose pointers reach subrank 0's
/// globals. Nothing to do for subrank 0 or without thread-locals.
///
/// # Safety
/// The calling thread is new: no code of the program has run on it yet.
pub unsafe fn init_thread(k: usize) {
    let Some((lo, hi)) = swap::range() else { return };
    let images = IMAGES.lock();
    let Some(img) = k.checked_sub(1).and_then(|i| images.get(i)) else {
        return;
    };
    if img.len() == hi - lo {
        // SAFETY: `[lo, hi)` is this thread's static TLS block of the executable (`swap`),
        // which nothing reads yet (the caller's promise); the image has its length.
        unsafe { std::ptr::copy_nonoverlapping(img.as_ptr(), lo as *mut u8, img.len()) };
    }
}

/// Thread-local destructors of objects in the swapped block, per subrank.
static DTORS: Lock<Vec<Vec<(Dtor, usize)>>> = Lock::new(Vec::new());

/// Keeps destructor `dtor` of thread-local `obj` for the subrank whose thread-locals are in
/// place, if `obj` lies in the swapped block. Returns false (nothing kept) otherwise: the C
/// library's own registry takes it.
pub fn register(dtor: Dtor, obj: *mut c_void) -> bool {
    // A thread of the program's own (`sched::foreign`) has its block to itself, not swapped:
    // its thread-locals end with it, as usual.
    if crate::sched::foreign::task() != usize::MAX {
        return false;
    }
    let Some((lo, hi)) = swap::range() else { return false };
    if !(lo..hi).contains(&(obj as usize)) {
        return false;
    }
    let k = swap::owner();
    let mut d = DTORS.lock();
    if d.len() <= k {
        d.resize_with(k + 1, Vec::new);
    }
    d[k].push((dtor, obj as usize));
    true
}

/// Runs the thread-local destructors kept for subrank `k`, last registered first (including
/// any registered meanwhile).
///
/// # Safety
/// Subrank `k` is ending, and its thread-locals are in place (it runs).
pub unsafe fn run_dtors(k: usize) {
    loop {
        let next = DTORS.lock().get_mut(k).and_then(|v| v.pop());
        let Some((dtor, obj)) = next else { break };
        // SAFETY: a destructor the C++ runtime registered for this object of subrank `k`,
        // whose values are in place; each runs once (popped).
        unsafe { dtor(obj as *mut c_void) };
    }
}
