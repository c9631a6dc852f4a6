//! Turns a fatal signal in a subrank into a clear message naming the virtual rank: a fault in
//! a subrank's guard page is reported as a stack overflow; SIGSEGV, SIGBUS, SIGFPE, SIGILL and
//! SIGABRT name the signal. A termination request (SIGTERM, SIGINT, SIGHUP: Ctrl-C or a kill
//! of the launcher, which forwards it to every process) names the process's virtual ranks.
//! The process then dies of the same signal, as it would have without us, so the launcher
//! reports it and ends the job with MPICH's status (the signal number). The handler runs on
//! an alternate signal stack (the faulting stack may be exhausted) and hands a signal to the
//! handler that was installed before ours (e.g. the program's own) when there is one.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Subranks whose stacks are watched (a process of 64 workers at V=64 holds 4096).
const MAX: usize = 1 << 16;
/// (limit, size) of each subrank's stack, written before the handler can see them.
static STACKS: [(AtomicUsize, AtomicUsize); MAX] = [const { (AtomicUsize::new(0), AtomicUsize::new(0)) }; MAX];
/// World rank of subrank 0 of this process (usize::MAX: not known yet).
static RANK_BASE: AtomicUsize = AtomicUsize::new(usize::MAX);

/// The signals we report, what we call them, and the handler each had before ours
/// (an `sa_sigaction` value, 0 = none to chain to) with whether it takes siginfo.
struct Watched {
    sig: libc::c_int,
    what: &'static [u8],
    prev: AtomicUsize,
    prev_siginfo: AtomicBool,
}

static WATCHED: [Watched; 8] = [
    Watched::new(libc::SIGSEGV, b"segmentation fault (SIGSEGV)"),
    Watched::new(libc::SIGBUS, b"bus error (SIGBUS)"),
    Watched::new(libc::SIGFPE, b"floating-point exception (SIGFPE)"),
    Watched::new(libc::SIGILL, b"illegal instruction (SIGILL)"),
    Watched::new(libc::SIGABRT, b"aborted (SIGABRT)"),
    // Termination requests (Ctrl-C or a kill of the launcher, which forwards them to every
    // process; a batch system's time limit): they end the whole process, whatever runs.
    Watched::new(libc::SIGTERM, b"SIGTERM"),
    Watched::new(libc::SIGINT, b"SIGINT"),
    Watched::new(libc::SIGHUP, b"SIGHUP"),
];

/// Whether `sig` asks the process to end (rather than reporting a fault of the running code).
fn is_termination(sig: libc::c_int) -> bool {
    sig == libc::SIGTERM || sig == libc::SIGINT || sig == libc::SIGHUP
}

impl Watched {
    const fn new(sig: libc::c_int, what: &'static [u8]) -> Watched {
        Watched {
            sig,
            what,
            prev: AtomicUsize::new(0),
            prev_siginfo: AtomicBool::new(false),
        }
    }
}

/// Number of subranks registered (ids below it).
static SUBRANKS: AtomicUsize = AtomicUsize::new(0);

pub fn register(id: usize, limit: usize, size: usize) {
    if id < MAX {
        SUBRANKS.fetch_max(id + 1, Ordering::SeqCst);
        STACKS[id].1.store(size, Ordering::SeqCst);
        STACKS[id].0.store(limit, Ordering::SeqCst);
    }
}

/// Lets messages name the virtual rank: subrank `s` is rank `base + s`.
pub fn set_rank_base(base: usize) {
    RANK_BASE.store(base, Ordering::SeqCst);
    super::sentinel::set_rank_base(base);
}

/// World rank of subrank 0, once known.
pub fn rank_base() -> Option<usize> {
    Some(RANK_BASE.load(Ordering::Relaxed)).filter(|&b| b != usize::MAX)
}

/// One line of a message, built on the stack and written with a single write(2) so that lines
/// of processes sharing the launcher's stderr do not interleave (async-signal-safe).
pub(super) struct Line {
    buf: [u8; 256],
    len: usize,
}

impl Line {
    pub(super) fn new() -> Line {
        Line { buf: [0; 256], len: 0 }
    }

    pub(super) fn s(&mut self, s: &[u8]) -> &mut Line {
        let n = s.len().min(self.buf.len() - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&s[..n]);
        self.len += n;
        self
    }

    pub(super) fn n(&mut self, mut n: usize) -> &mut Line {
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
        self.s(&buf[i..])
    }

    pub(super) fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    /// Writes the line: a report of the process's end (the sentinel then need not speak).
    pub(super) fn emit(&self) {
        super::sentinel::said();
        // SAFETY: write(2) on stderr with a valid buffer; async-signal-safe.
        unsafe { libc::write(2, self.buf.as_ptr() as *const libc::c_void, self.len) };
    }
}

/// "toucan: virtual rank R" (or the subrank / the process when the rank is not known).
fn write_who(l: &mut Line, sub: usize) {
    l.s(b"toucan: ");
    let base = RANK_BASE.load(Ordering::Relaxed);
    match (base != usize::MAX, sub != usize::MAX) {
        (true, true) => {
            l.s(b"virtual rank ");
            l.n(base + sub);
        }
        (false, true) => {
            l.s(b"subrank ");
            l.n(sub);
        }
        _ => {
            l.s(b"process ");
            // SAFETY: getpid has no preconditions and is async-signal-safe.
            l.n(unsafe { libc::getpid() } as usize);
            l.s(b" (pid, outside any rank)");
        }
    }
}

/// "toucan: virtual ranks A-B (pid P)": every rank of the process (a termination ends them all).
fn write_process_who(l: &mut Line) {
    let base = RANK_BASE.load(Ordering::Relaxed);
    let n = SUBRANKS.load(Ordering::Relaxed).max(1);
    l.s(b"toucan: ");
    if base == usize::MAX {
        l.s(b"process");
    } else if n == 1 {
        l.s(b"virtual rank ");
        l.n(base);
    } else {
        l.s(b"virtual ranks ");
        l.n(base);
        l.s(b"-");
        l.n(base + n - 1);
    }
    l.s(b" (pid ");
    // SAFETY: getpid has no preconditions and is async-signal-safe.
    l.n(unsafe { libc::getpid() } as usize);
    l.s(b")");
}

/// Set on the first fault: a second one (e.g. a handler chain that loops back to us) goes
/// straight to the default action.
static IN_FAULT: AtomicBool = AtomicBool::new(false);

/// Restores the default action and makes sure the signal is delivered again with it once
/// the handler returns (a faulting instruction re-executes; an abort or a signal sent by
/// kill is raised again, pending until then), so the process dies of `sig`.
fn die_of(sig: libc::c_int) {
    // SAFETY: signal and raise are async-signal-safe; `sig` is blocked while its handler
    // runs, so the raised signal waits for the return.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

extern "C" fn on_fault(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    if is_termination(sig) {
        on_termination(sig, info, ctx);
        return;
    }
    if IN_FAULT.swap(true, Ordering::SeqCst) {
        die_of(sig);
        return;
    }
    if sig == libc::SIGSEGV || sig == libc::SIGBUS {
        // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers.
        let addr = unsafe { (*info).si_addr() } as usize;
        for (id, (l, s)) in STACKS.iter().enumerate() {
            let (limit, size) = (l.load(Ordering::Relaxed), s.load(Ordering::Relaxed));
            if limit != 0 && addr < limit && addr + (1 << 20) >= limit {
                let mut l = Line::new();
                write_who(&mut l, id);
                l.s(b" overflowed its ").n(size).s(b"-byte stack (set TOUCAN_STACK)\n").emit();
                // SAFETY: terminating the process is always allowed in a handler.
                unsafe { libc::_exit(128 + sig) };
            }
        }
    }
    // Not a stack overflow: hand over to the previous handler, if any (it may recover).
    let Some(w) = ours(sig, info, ctx) else { return };
    let mut l = Line::new();
    write_who(&mut l, super::worker::rank());
    l.s(b": ").s(w.what).s(b"\n").emit();
    die_of(sig);
}

/// A termination request: handed to the program's own handler when it had one; otherwise
/// one line naming the process's virtual ranks and the signal, and the process dies of it
/// (the launcher then reports it and ends the job, as without us).
fn on_termination(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    let Some(w) = ours(sig, info, ctx) else { return };
    static ONCE: AtomicBool = AtomicBool::new(false);
    if !ONCE.swap(true, Ordering::SeqCst) {
        let mut l = Line::new();
        write_process_who(&mut l);
        l.s(b": ended by ")
            .s(w.what)
            .s(b" (from the launcher, a user or the batch system)\n")
            .emit();
    }
    die_of(sig);
}

/// The watched signal `sig`, when reporting it is ours to do; None when it was handed to the
/// handler installed before ours, or is not one we watch (then it takes its default action).
fn ours(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) -> Option<&'static Watched> {
    let Some(w) = WATCHED.iter().find(|w| w.sig == sig) else {
        die_of(sig);
        return None;
    };
    let prev = w.prev.load(Ordering::Relaxed);
    if prev != 0 {
        chain(w, prev, sig, info, ctx);
        return None;
    }
    Some(w)
}

/// Calls the handler that was installed before ours.
fn chain(w: &Watched, prev: usize, sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    if w.prev_siginfo.load(Ordering::Relaxed) {
        // SAFETY: `prev` is the sa_sigaction of the SA_SIGINFO handler installed before ours.
        let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) = unsafe { std::mem::transmute(prev) };
        f(sig, info, ctx);
    } else {
        // SAFETY: `prev` is the sa_handler of the plain handler installed before ours.
        let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(prev) };
        f(sig);
    }
}

/// Gives the calling thread an alternate signal stack if it has none big enough (each
/// worker thread needs its own: the faulting subrank's stack may be exhausted).
pub fn altstack() {
    // SAFETY: plain libc calls with initialised structures; the alternate stack is leaked so
    // it outlives every signal delivery on this thread.
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
    }
}

/// Installs the handler (again, after a library replaced it) on an alternate stack.
pub fn install() {
    // Before MPI_Init the process's rank is not known to us yet; hydra's PMI_RANK already
    // says it (the real rank: subrank s is virtual rank PMI_RANK * W * V + s), so that a
    // termination during start-up names the ranks too.
    if RANK_BASE.load(Ordering::SeqCst) == usize::MAX {
        let subranks = SUBRANKS.load(Ordering::SeqCst);
        if let Some(r) = std::env::var("PMI_RANK").ok().and_then(|r| r.trim().parse::<usize>().ok()) {
            if subranks > 0 {
                RANK_BASE.store(r * subranks, Ordering::SeqCst);
            }
        }
    }
    altstack();
    // SAFETY: plain libc calls with initialised structures.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_fault as *const () as usize;
        sa.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        libc::sigemptyset(&mut sa.sa_mask);
        for w in WATCHED.iter() {
            let mut old: libc::sigaction = std::mem::zeroed();
            // An ignored termination signal stays ignored (e.g. SIGINT of a job started in
            // the background, SIGHUP under nohup).
            libc::sigaction(w.sig, std::ptr::null(), &mut old);
            if is_termination(w.sig) && old.sa_sigaction == libc::SIG_IGN {
                continue;
            }
            libc::sigaction(w.sig, &sa, &mut old);
            if old.sa_sigaction == on_fault as *const () as usize {
                continue; // ours already: keep what was chained before
            }
            // SIG_DFL and SIG_IGN (0 and 1) are not handlers to chain to: an ignored fault
            // would only repeat.
            let prev = if old.sa_sigaction > 1 { old.sa_sigaction } else { 0 };
            w.prev_siginfo.store(old.sa_flags & libc::SA_SIGINFO != 0, Ordering::SeqCst);
            w.prev.store(prev, Ordering::SeqCst);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Line;

    #[test]
    fn a_line_is_built_in_one_buffer_and_cut_at_its_end() {
        let mut l = Line::new();
        l.s(b"toucan: virtual ranks ").n(4).s(b"-").n(7).s(b" (pid ").n(0).s(b")");
        assert_eq!(&l.buf[..l.len], b"toucan: virtual ranks 4-7 (pid 0)");
        let mut long = Line::new();
        for _ in 0..100 {
            long.s(b"abcdefgh").n(usize::MAX);
        }
        assert_eq!(long.len, long.buf.len());
    }
}
