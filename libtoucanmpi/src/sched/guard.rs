//! Turns a fault in a subrank's guard page into a clear message instead of a bare SIGSEGV.
//! The handler runs on an alternate signal stack (the faulting stack is exhausted) and
//! chains to the previous handler (e.g. the real MPI's) for any other fault.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

const MAX: usize = 256;
/// (limit, size) of each subrank's stack, written before the handler can see them.
static STACKS: [(AtomicUsize, AtomicUsize); MAX] = [const { (AtomicUsize::new(0), AtomicUsize::new(0)) }; MAX];
/// World rank of subrank 0 of this process (usize::MAX: not known yet).
static RANK_BASE: AtomicUsize = AtomicUsize::new(usize::MAX);
static PREV: Mutex<Option<(libc::sigaction, libc::sigaction)>> = Mutex::new(None);
static PREV_SEGV: AtomicUsize = AtomicUsize::new(0);
static PREV_BUS: AtomicUsize = AtomicUsize::new(0);

pub fn register(id: usize, limit: usize, size: usize) {
    if id < MAX {
        STACKS[id].1.store(size, Ordering::SeqCst);
        STACKS[id].0.store(limit, Ordering::SeqCst);
    }
}

/// Lets messages name the virtual rank: subrank `s` is rank `base + s`.
pub fn set_rank_base(base: usize) {
    RANK_BASE.store(base, Ordering::SeqCst);
}

/// World rank of subrank 0, once known.
pub fn rank_base() -> Option<usize> {
    Some(RANK_BASE.load(Ordering::Relaxed)).filter(|&b| b != usize::MAX)
}

fn write_str(s: &[u8]) {
    // SAFETY: write(2) on stderr with a valid buffer; async-signal-safe.
    unsafe { libc::write(2, s.as_ptr() as *const libc::c_void, s.len()) };
}

fn write_num(mut n: usize) {
    let mut buf = [0u8; 24];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    write_str(&buf[i..]);
}

/// Set on the first fault: a second one (e.g. a handler chain that loops back to us) goes
/// straight to the default action.
static IN_FAULT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn on_fault(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    if IN_FAULT.swap(true, Ordering::SeqCst) {
        // SAFETY: restoring the default action; returning re-raises the fault with it.
        unsafe { libc::signal(sig, libc::SIG_DFL) };
        return;
    }
    // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers.
    let addr = unsafe { (*info).si_addr() } as usize;
    for (id, (l, s)) in STACKS.iter().enumerate() {
        let (limit, size) = (l.load(Ordering::Relaxed), s.load(Ordering::Relaxed));
        if limit != 0 && addr < limit && addr + (1 << 20) >= limit {
            write_str(b"toucan: ");
            let base = RANK_BASE.load(Ordering::Relaxed);
            if base == usize::MAX {
                write_str(b"subrank ");
                write_num(id);
            } else {
                write_str(b"virtual rank ");
                write_num(base + id);
            }
            write_str(b" overflowed its ");
            write_num(size);
            write_str(b"-byte stack (set TOUCAN_STACK)\n");
            // SAFETY: terminating the process is always allowed in a handler.
            unsafe { libc::_exit(128 + sig) };
        }
    }
    // Not ours: hand over to the previous handler, or to the default action.
    let prev = if sig == libc::SIGSEGV {
        PREV_SEGV.load(Ordering::Relaxed)
    } else {
        PREV_BUS.load(Ordering::Relaxed)
    };
    if prev > 1 {
        // SAFETY: `prev` is the sa_sigaction of the handler installed before ours.
        let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) = unsafe { std::mem::transmute(prev) };
        f(sig, info, ctx);
        return;
    }
    write_str(b"toucan: ");
    let base = RANK_BASE.load(Ordering::Relaxed);
    let cur = super::worker::current();
    if base != usize::MAX && cur != usize::MAX {
        write_str(b"virtual rank ");
        write_num(base + cur);
    } else {
        write_str(b"process");
    }
    write_str(if sig == libc::SIGSEGV {
        b": segmentation fault (SIGSEGV)\n"
    } else {
        b": bus error (SIGBUS)\n"
    });
    // SAFETY: restoring the default action and returning re-raises the fault with it.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
    }
}

/// Installs the handler (again, after a library replaced it) on an alternate stack.
pub fn install() {
    // SAFETY: plain libc calls with initialised structures; the alternate stack is leaked so
    // it outlives every signal delivery.
    unsafe {
        let mut cur: libc::stack_t = std::mem::zeroed();
        libc::sigaltstack(std::ptr::null(), &mut cur);
        if cur.ss_flags & libc::SS_DISABLE != 0 || cur.ss_size < 64 << 10 {
            let size = 256 << 10;
            let mem = Box::leak(vec![0u8; size].into_boxed_slice());
            let st = libc::stack_t {
                ss_sp: mem.as_mut_ptr() as *mut libc::c_void,
                ss_flags: 0,
                ss_size: size,
            };
            libc::sigaltstack(&st, std::ptr::null_mut());
        }
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_fault as *const () as usize;
        sa.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        libc::sigemptyset(&mut sa.sa_mask);
        let mut old_segv: libc::sigaction = std::mem::zeroed();
        let mut old_bus: libc::sigaction = std::mem::zeroed();
        libc::sigaction(libc::SIGSEGV, &sa, &mut old_segv);
        libc::sigaction(libc::SIGBUS, &sa, &mut old_bus);
        if old_segv.sa_sigaction != on_fault as *const () as usize {
            PREV_SEGV.store(
                if old_segv.sa_flags & libc::SA_SIGINFO != 0 {
                    old_segv.sa_sigaction
                } else {
                    0
                },
                Ordering::SeqCst,
            );
        }
        if old_bus.sa_sigaction != on_fault as *const () as usize {
            PREV_BUS.store(
                if old_bus.sa_flags & libc::SA_SIGINFO != 0 {
                    old_bus.sa_sigaction
                } else {
                    0
                },
                Ordering::SeqCst,
            );
        }
        *PREV.lock().unwrap_or_else(|e| e.into_inner()) = Some((old_segv, old_bus));
    }
}
