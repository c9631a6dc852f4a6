//! Keeps UCX progressing while the real `MPI_Finalize` waits in the launcher's barrier.
//!
//! MPICH 4.0.2's ch4:ucx finalize closes every endpoint in flush mode, polls its UCX worker
//! until those closes complete, then waits in the launcher's (PMI) barrier, a blocking `read`
//! on the PMI socket, and only after it destroys the worker. Over TCP a close can need the
//! peer's progress: a process whose closes completed first sits in the barrier without
//! polling, and its peers spin in their flush forever (measured here: 1 in 10 jobs of plain
//! MPICH `MPI_Init; MPI_Barrier; MPI_Finalize` at `-np 3` with `UCX_TLS=tcp`; most Toucan jobs
//! at n=3). Stacks of a hung job: one process in `read` under `PMPI_Finalize`, the others in
//! `ucp_worker_progress` under it.
//!
//! So just before calling the real `MPI_Finalize` we redirect three of the real MPI library's
//! own imports (its PLT slots; it is loaded `RTLD_DEEPBIND`, so nothing can interpose them by
//! name): `ucp_worker_progress` (to learn its worker), `ucp_worker_destroy` (to forget it) and
//! `read`. While a worker is known, a `read` first waits for its descriptor to become
//! readable, polling the worker every millisecond meanwhile. The only reads the real MPI makes
//! inside `MPI_Finalize` are on the launcher's socket, and all of this happens on the thread
//! that called `MPI_Finalize` (the background progress thread has stopped), so the worker is
//! used as serially as the real MPI itself uses it. A library without those three imports
//! (another MPI, another transport) is left untouched. `TOUCAN_FINALIZE_PROGRESS=off` turns
//! it off.

use crate::got;
use std::os::raw::{c_int, c_uint, c_void};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

type ProgressFn = unsafe extern "C" fn(*mut c_void) -> c_uint;
type DestroyFn = unsafe extern "C" fn(*mut c_void);
type ReadFn = unsafe extern "C" fn(c_int, *mut c_void, usize) -> isize;

/// The UCX worker the real MPI last polled, until it destroys it.
static WORKER: AtomicPtr<c_void> = AtomicPtr::new(null_mut());
/// What the redirected slots held before (the real functions).
static REAL_PROGRESS: AtomicUsize = AtomicUsize::new(0);
static REAL_DESTROY: AtomicUsize = AtomicUsize::new(0);
static REAL_READ: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn progress_hook(worker: *mut c_void) -> c_uint {
    WORKER.store(worker, Ordering::SeqCst);
    // SAFETY: REAL_PROGRESS holds the slot's former value, UCX's ucp_worker_progress, set
    // before the slot was redirected here.
    let real: ProgressFn = unsafe { std::mem::transmute::<usize, ProgressFn>(REAL_PROGRESS.load(Ordering::SeqCst)) };
    // SAFETY: forwarding the real MPI's own call unchanged.
    unsafe { real(worker) }
}

unsafe extern "C" fn destroy_hook(worker: *mut c_void) {
    let _ = WORKER.compare_exchange(worker, null_mut(), Ordering::SeqCst, Ordering::SeqCst);
    // SAFETY: REAL_DESTROY holds UCX's ucp_worker_destroy (the slot's former value).
    let real: DestroyFn = unsafe { std::mem::transmute::<usize, DestroyFn>(REAL_DESTROY.load(Ordering::SeqCst)) };
    // SAFETY: forwarding the real MPI's own call unchanged.
    unsafe { real(worker) }
}

unsafe extern "C" fn read_hook(fd: c_int, buf: *mut c_void, count: usize) -> isize {
    let worker = WORKER.load(Ordering::SeqCst);
    if !worker.is_null() {
        // SAFETY: REAL_PROGRESS holds UCX's ucp_worker_progress (see progress_hook).
        let progress: ProgressFn = unsafe { std::mem::transmute::<usize, ProgressFn>(REAL_PROGRESS.load(Ordering::SeqCst)) };
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        loop {
            // SAFETY: poll on one valid pollfd structure.
            let r = unsafe { libc::poll(&mut p, 1, 1) };
            if r > 0 || (r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR)) {
                break; // readable, hung up, or an error the read itself will report
            }
            // SAFETY: the worker is alive (destroy_hook clears WORKER first) and only this
            // thread, now inside the real MPI_Finalize, uses it.
            unsafe { progress(worker) };
        }
    }
    // SAFETY: REAL_READ holds the C library's read (the slot's former value); the arguments
    // are the real MPI's own.
    let real: ReadFn = unsafe { std::mem::transmute::<usize, ReadFn>(REAL_READ.load(Ordering::SeqCst)) };
    unsafe { real(fd, buf, count) }
}

/// Redirects the real MPI's imports as the module comment says; `inside` is the address of
/// any function of the real MPI library. Returns whether it did. Call on the thread that is
/// about to call the real `MPI_Finalize`, with no other thread in the real MPI.
pub fn install(inside: usize) -> bool {
    if std::env::var("TOUCAN_FINALIZE_PROGRESS").is_ok_and(|v| matches!(v.trim(), "off" | "0")) {
        return false;
    }
    let Some(obj) = got::object_of(inside) else { return false };
    // SAFETY: `obj` is the loaded real MPI library (found by an address inside it).
    let slots = unsafe { got::slots(&obj, &[b"ucp_worker_progress", b"ucp_worker_destroy", b"read"]) };
    let [Some(progress), Some(destroy), Some(read)] = slots[..] else {
        return false;
    };
    // SAFETY: the slots are the library's GOT entries, already bound (it was loaded with
    // RTLD_NOW); the saved values are the functions they call. No other thread is in the
    // real MPI (the caller's promise), so nobody calls through a slot while it changes.
    unsafe {
        REAL_PROGRESS.store(*progress, Ordering::SeqCst);
        REAL_DESTROY.store(*destroy, Ordering::SeqCst);
        REAL_READ.store(*read, Ordering::SeqCst);
        got::patch(progress, progress_hook as *const () as usize)
            && got::patch(destroy, destroy_hook as *const () as usize)
            && got::patch(read, read_hook as *const () as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_real_mpis_ucx_and_read_imports() {
        let path = env!("TOUCAN_REAL_MPI_DEFAULT");
        // SAFETY: loading the real MPI library as the runtime does.
        let lib =
            unsafe { libloading::os::unix::Library::open(Some(path), libc::RTLD_NOW | libc::RTLD_LOCAL | libc::RTLD_DEEPBIND) }.unwrap();
        // SAFETY: looking up an exported function's address.
        let f: libloading::os::unix::Symbol<unsafe extern "C" fn() -> c_int> = unsafe { lib.get(b"PMPI_Finalize\0") }.unwrap();
        let obj = got::object_of(*f as usize).expect("the library is loaded");
        // SAFETY: a loaded 64-bit object.
        let slots = unsafe { got::slots(&obj, &[b"read", b"no_such_import_xyz"]) };
        assert!(slots[0].is_some());
        assert!(slots[1].is_none());
        // The slot holds the C library's read, as the loader bound it.
        // SAFETY: reading a bound GOT entry; dlsym with a valid name.
        let (bound, read) = unsafe { (*slots[0].unwrap(), libc::dlsym(libc::RTLD_DEFAULT, c"read".as_ptr()) as usize) };
        assert_eq!(bound, read);
    }
}
