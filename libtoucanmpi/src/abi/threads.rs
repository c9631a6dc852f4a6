//! `pthread_create` and `pthread_join` interposed, for `MPI_THREAD_MULTIPLE` (see
//! `sched::foreign`):
//! - a thread that a rank starts (its subrank's coroutine, or one of its threads: pthreads,
//!   OpenMP's pool) acts as that rank in every MPI call it makes; the rank is recorded when
//!   the thread starts, before the program's start routine runs;
//! - `pthread_join` called by a subrank parks it (polling for the thread's end), so that its
//!   siblings on the worker run meanwhile, as separate processes would; anywhere else it is
//!   the C library's.
//!
//! Threads that Toucan starts itself (workers, the progress thread: their start routine is in
//! this library) and threads started outside any rank are the C library's, untouched.

use crate::sched;
use std::os::raw::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

use super::libc_state::real;

type StartFn = unsafe extern "C-unwind" fn(*mut c_void) -> *mut c_void;
type CreateFn = unsafe extern "C" fn(*mut libc::pthread_t, *const libc::pthread_attr_t, StartFn, *mut c_void) -> c_int;

extern "C" {
    fn pthread_tryjoin_np(th: libc::pthread_t, ret: *mut *mut c_void) -> c_int;
}

/// What the new thread needs before it runs the program's start routine.
struct Start {
    f: StartFn,
    arg: *mut c_void,
    rank: usize,
}

/// The new thread's first function: it becomes a thread of rank `rank`, then runs the
/// program's start routine. "C-unwind": `pthread_exit` unwinds through it (nothing here has
/// a destructor by then).
unsafe extern "C-unwind" fn trampoline(p: *mut c_void) -> *mut c_void {
    // SAFETY: `p` is the box `pthread_create` leaked for this thread, taken once.
    let st = unsafe { Box::from_raw(p as *mut Start) };
    let (f, arg, rank) = (st.f, st.arg, st.rank);
    drop(st);
    sched::foreign::adopt(rank, rank);
    // SAFETY: a new thread: the program has not run on it yet.
    unsafe { crate::privatize::tls::init_thread(rank) };
    // SAFETY: the program's start routine with its argument, as it asked.
    unsafe { f(arg) }
}

/// Load address of this library (threads whose start routine lies in it are Toucan's own).
fn our_base() -> usize {
    static BASE: AtomicUsize = AtomicUsize::new(0);
    match BASE.load(Ordering::Relaxed) {
        0 => {
            let b = base_of(our_base as *const c_void);
            BASE.store(b, Ordering::Relaxed);
            b
        }
        b => b,
    }
}

/// Load address of the object holding `p` (0 when none).
fn base_of(p: *const c_void) -> usize {
    // SAFETY: dladdr only reads the loader's tables; `info` is written on success.
    unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        if libc::dladdr(p, &mut info) == 0 {
            return 0;
        }
        info.dli_fbase as usize
    }
}

/// The local subrank whose thread the caller would start (None: a plain thread).
fn creator_rank() -> Option<usize> {
    let r = sched::rank();
    // A subrank, or a thread of one; not a helper task (its id is no rank).
    sched::task::get(r).filter(|s| !s.helper.load(Ordering::Relaxed)).map(|_| r)
}

/// # Safety
/// As the C library's `pthread_create`.
#[no_mangle]
pub unsafe extern "C" fn pthread_create(
    thread: *mut libc::pthread_t,
    attr: *const libc::pthread_attr_t,
    start: StartFn,
    arg: *mut c_void,
) -> c_int {
    static REAL: AtomicUsize = AtomicUsize::new(0);
    // SAFETY: the C library's `pthread_create` has this type.
    let create: CreateFn = unsafe { std::mem::transmute(real(&REAL, c"pthread_create")) };
    let rank = creator_rank().filter(|_| base_of(start as *const c_void) != our_base());
    let Some(rank) = rank else {
        // SAFETY: called as the program (or Toucan) asked.
        return unsafe { create(thread, attr, start, arg) };
    };
    // A parked thread drives the progress engine itself (nobody else may poll meanwhile).
    sched::foreign::set_poll(poll);
    let st = Box::into_raw(Box::new(Start { f: start, arg, rank }));
    // SAFETY: as asked, with our trampoline, which takes `st` once.
    let r = unsafe { create(thread, attr, trampoline, st as *mut c_void) };
    if r != 0 {
        // SAFETY: no thread was started: the box is still ours.
        drop(unsafe { Box::from_raw(st) });
    }
    r
}

/// One progress step for a parked thread of the program (when nobody else is making one).
fn poll() -> bool {
    crate::core::state::try_with(|s| s.progress()).unwrap_or(false)
}

/// Longest pause of a subrank between two looks at the thread it joins.
const JOIN_MAX_NS: u64 = 1_000_000;

/// # Safety
/// As the C library's `pthread_join`.
#[no_mangle]
pub unsafe extern "C" fn pthread_join(thread: libc::pthread_t, ret: *mut *mut c_void) -> c_int {
    if !sched::in_coroutine() {
        static REAL: AtomicUsize = AtomicUsize::new(0);
        type F = unsafe extern "C" fn(libc::pthread_t, *mut *mut c_void) -> c_int;
        // SAFETY: the C library's `pthread_join` has this type.
        let f: F = unsafe { std::mem::transmute(real(&REAL, c"pthread_join")) };
        // SAFETY: called as the program asked.
        return unsafe { f(thread, ret) };
    }
    // A subrank: the worker must go on running its siblings (and the joined thread may need
    // them to finish its MPI calls), so it looks now and then, parked in between.
    let mut nap = 10_000u64;
    loop {
        // SAFETY: as the program's pthread_join; the C library checks the handle.
        let r = unsafe { pthread_tryjoin_np(thread, ret) };
        if r != libc::EBUSY {
            return r;
        }
        sched::timer::sleep_until(sched::timer::now().saturating_add(nap));
        nap = (nap * 2).min(JOIN_MAX_NS);
    }
}
