//! A process's sentinel: a small child process, made at start-up, that names the process's
//! virtual ranks when the process dies of a signal it could not report itself (SIGKILL from
//! `kill -9` or the kernel's out-of-memory killer; any other uncaught signal).
//!
//! Why a child: a killed process cannot speak, and MPICH's launcher (hydra) kills every other
//! process of the node as soon as it notices the death, which it does when the process's PMI
//! socket closes or when it reaps it, so no surviving process can speak for it either. The
//! sentinel holds a copy of the PMI socket and of stdout/stderr, so the launcher notices
//! nothing until the sentinel, woken by the death (a pidfd), has read the signal from the
//! dead process's `/proc/PID/stat` (a zombie until the launcher reaps it), written
//! `toucan: process 1 (pid P, virtual ranks 4-7) was killed by signal 9 (SIGKILL)` and
//! exited; then the launcher ends the job as before. When the process ends any other way
//! (normally, by its own report of a fault or a termination request, by MPI_Abort) the
//! sentinel says nothing and exits at once; it shares the process group, so the launcher's
//! clean-up signals end it too. It is made with `clone` without an exit signal, so the
//! program's own `wait()` never sees it, and is named `toucan-sentinel` (`ps`).
//!
//! Only under a launcher that names the process's rank (`PMI_RANK`); `TOUCAN_SENTINEL=off`
//! turns it off.

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};

/// What the process tells its sentinel after start-up (a shared page).
#[repr(C)]
struct Shared {
    /// World rank of subrank 0 (usize::MAX: not known).
    base: AtomicUsize,
    /// Subranks of the process.
    count: AtomicUsize,
    /// The process has reported its own end (a fault, a termination request).
    said: AtomicBool,
}

static SHARED: AtomicPtr<Shared> = AtomicPtr::new(std::ptr::null_mut());

fn shared() -> Option<&'static Shared> {
    let p = SHARED.load(Ordering::Acquire);
    // SAFETY: set once to a page that stays mapped for the life of the process.
    (!p.is_null()).then(|| unsafe { &*p })
}

/// The world rank of subrank 0, once MPI_Init knows it.
pub fn set_rank_base(base: usize) {
    if let Some(s) = shared() {
        s.base.store(base, Ordering::SeqCst);
    }
}

/// The process reported its own end: the sentinel need not speak for it.
pub fn said() {
    if let Some(s) = shared() {
        s.said.store(true, Ordering::SeqCst);
    }
}

fn wanted() -> bool {
    !std::env::var("TOUCAN_SENTINEL").is_ok_and(|v| matches!(v.trim(), "off" | "0"))
}

/// Starts the sentinel of a process of `count` subranks. Call while single-threaded.
pub fn start(count: usize) {
    let rank = std::env::var("PMI_RANK").ok().and_then(|r| r.trim().parse::<usize>().ok());
    let Some(rank) = rank else { return };
    if !wanted() || shared().is_some() {
        return;
    }
    let pmi_fd = std::env::var("PMI_FD").ok().and_then(|f| f.trim().parse::<i32>().ok());
    // SAFETY: an anonymous shared mapping of one page, checked; it is never unmapped.
    let page = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if page == libc::MAP_FAILED {
        return;
    }
    let sh = page as *mut Shared;
    // SAFETY: the page is ours, writable and large enough; nothing else sees it yet.
    unsafe {
        sh.write(Shared {
            base: AtomicUsize::new(rank.saturating_mul(count.max(1))),
            count: AtomicUsize::new(count.max(1)),
            said: AtomicBool::new(false),
        })
    };
    SHARED.store(sh, Ordering::Release);
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    // A fork without an exit signal (a "clone" child): the program's wait() and waitpid(-1)
    // do not see it, and its end sends the process nothing.
    // SAFETY: clone without CLONE_VM copies the address space like fork; the process is
    // single-threaded here, and the child only makes system calls before it exits.
    let pid = unsafe { libc::syscall(libc::SYS_clone, 0 as libc::c_ulong, 0usize, 0usize, 0usize, 0usize) };
    if pid == 0 {
        // SAFETY: `sh` is mapped in the child too (the mapping is inherited).
        watch(parent, pmi_fd, unsafe { &*sh });
    }
}

/// The sentinel's life: wait for the parent's end, speak if it was killed unreported, exit.
fn watch(parent: libc::pid_t, pmi_fd: Option<i32>, sh: &Shared) -> ! {
    // SAFETY: raw system calls on our own process: name, signal dispositions, descriptors.
    unsafe {
        libc::prctl(libc::PR_SET_NAME, c"toucan-sentinel".as_ptr() as libc::c_ulong, 0, 0, 0);
        // The process group's signals (the launcher's forwarded SIGTERM/SIGINT, SIGUSR1, a
        // terminal's SIGTSTP) are for the process, which reports them itself; our faults
        // take their default action (no handler of the program or of Toucan runs here).
        for sig in 1..32 {
            if sig == libc::SIGKILL || sig == libc::SIGSTOP {
                continue;
            }
            let ignore = matches!(
                sig,
                libc::SIGHUP
                    | libc::SIGINT
                    | libc::SIGQUIT
                    | libc::SIGTERM
                    | libc::SIGUSR1
                    | libc::SIGUSR2
                    | libc::SIGPIPE
                    | libc::SIGALRM
                    | libc::SIGTSTP
                    | libc::SIGTTIN
                    | libc::SIGTTOU
            );
            libc::signal(sig, if ignore { libc::SIG_IGN } else { libc::SIG_DFL });
        }
        // Keep only stdout, stderr and the PMI socket (so that the launcher notices nothing
        // before we have spoken).
        libc::close(0);
        let keep = pmi_fd.filter(|&f| f > 2);
        match keep {
            Some(f) => {
                close_from_to(3, f - 1);
                close_from_to(f + 1, u32::MAX as i32);
            }
            None => close_from_to(3, u32::MAX as i32),
        }
    }
    wait_for(parent);
    if !sh.said.load(Ordering::SeqCst) {
        if let Some(sig) = killed_by(parent) {
            let mut l = super::guard::Line::new();
            l.s(b"toucan: process ");
            let (base, count) = (sh.base.load(Ordering::SeqCst), sh.count.load(Ordering::SeqCst));
            if base != usize::MAX {
                l.n(base / count).s(b" ");
            }
            l.s(b"(pid ").n(parent as usize);
            if base != usize::MAX {
                if count == 1 {
                    l.s(b", virtual rank ").n(base);
                } else {
                    l.s(b", virtual ranks ").n(base).s(b"-").n(base + count - 1);
                }
            }
            l.s(b") was killed by signal ").n(sig as usize);
            if let Some(name) = signal_name(sig) {
                l.s(b" (").s(name).s(b")");
            }
            l.s(b"\n").emit();
        }
    }
    // SAFETY: ending the sentinel.
    unsafe { libc::_exit(0) }
}

/// Closes descriptors `from..=to` (close_range, else one by one up to the soft limit).
///
/// # Safety
/// Only in the sentinel, whose descriptors are its own copies.
unsafe fn close_from_to(from: i32, to: i32) {
    if from > to {
        return;
    }
    if libc::syscall(libc::SYS_close_range, from as libc::c_uint, to as libc::c_uint, 0 as libc::c_uint) == 0 {
        return;
    }
    let mut lim: libc::rlimit = std::mem::zeroed();
    let top = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
        lim.rlim_cur.min(1 << 16) as i32
    } else {
        1024
    };
    for fd in from..=to.min(top) {
        libc::close(fd);
    }
}

/// Returns once `parent` has ended (a zombie, or gone).
fn wait_for(parent: libc::pid_t) {
    // SAFETY: pidfd_open and poll on our own descriptor; getppid has no preconditions.
    unsafe {
        let fd = libc::syscall(libc::SYS_pidfd_open, parent, 0 as libc::c_uint) as i32;
        if fd >= 0 && libc::getppid() == parent {
            let mut p = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            while libc::poll(&mut p, 1, -1) < 0 {}
            return;
        }
        // No pidfd: the parent has ended when we are someone else's child.
        while libc::getppid() == parent {
            let t = libc::timespec {
                tv_sec: 0,
                tv_nsec: 20_000_000,
            };
            libc::nanosleep(&t, std::ptr::null_mut());
        }
    }
}

/// The signal that ended `pid`, read from its zombie's `/proc/PID/stat` (field 52, the exit
/// code as waitpid would return it); None when it exited, or was already reaped.
fn killed_by(pid: libc::pid_t) -> Option<i32> {
    let mut path = super::guard::Line::new();
    path.s(b"/proc/").n(pid as usize).s(b"/stat\0");
    let mut buf = [0u8; 2048];
    // SAFETY: a NUL-terminated path; read into our buffer; the descriptor is closed.
    let n = unsafe {
        let fd = libc::open(path.bytes().as_ptr() as *const libc::c_char, libc::O_RDONLY);
        if fd < 0 {
            return None;
        }
        let n = libc::read(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len());
        libc::close(fd);
        n
    };
    let stat = buf.get(..usize::try_from(n).ok()?)?;
    exit_signal(stat)
}

/// From a `/proc/PID/stat` line: the signal that ended a zombie, if a signal did.
fn exit_signal(stat: &[u8]) -> Option<i32> {
    // Fields after the command (which may hold spaces and parentheses) start at field 3.
    let close = stat.iter().rposition(|&b| b == b')')?;
    let mut fields = stat[close + 1..].split(|&b| b == b' ').filter(|f| !f.is_empty());
    if fields.next()? != b"Z" {
        return None;
    }
    let code: i64 = std::str::from_utf8(fields.nth(52 - 4)?).ok()?.trim().parse().ok()?;
    let sig = (code & 0x7f) as i32;
    (sig != 0).then_some(sig)
}

fn signal_name(sig: i32) -> Option<&'static [u8]> {
    Some(match sig {
        libc::SIGHUP => b"SIGHUP",
        libc::SIGINT => b"SIGINT",
        libc::SIGQUIT => b"SIGQUIT",
        libc::SIGILL => b"SIGILL",
        libc::SIGTRAP => b"SIGTRAP",
        libc::SIGABRT => b"SIGABRT",
        libc::SIGBUS => b"SIGBUS",
        libc::SIGFPE => b"SIGFPE",
        libc::SIGKILL => b"SIGKILL",
        libc::SIGUSR1 => b"SIGUSR1",
        libc::SIGSEGV => b"SIGSEGV",
        libc::SIGUSR2 => b"SIGUSR2",
        libc::SIGPIPE => b"SIGPIPE",
        libc::SIGALRM => b"SIGALRM",
        libc::SIGTERM => b"SIGTERM",
        libc::SIGXCPU => b"SIGXCPU",
        libc::SIGXFSZ => b"SIGXFSZ",
        libc::SIGVTALRM => b"SIGVTALRM",
        libc::SIGPROF => b"SIGPROF",
        libc::SIGSYS => b"SIGSYS",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::exit_signal;
    use rstest::rstest;

    fn stat(state: &str, code: i64) -> Vec<u8> {
        // 52 fields: pid (comm) state, then 49 more, the exit code last.
        let mut s = format!("1234 (a (b) c) {state}");
        for i in 4..52 {
            s += &format!(" {i}");
        }
        s += &format!(" {code}\n");
        s.into_bytes()
    }

    #[rstest]
    #[case("Z", 9, Some(9))]
    #[case("Z", 0x80 | 11, Some(11))]
    #[case("Z", 3 << 8, None)]
    #[case("Z", 0, None)]
    #[case("S", 9, None)]
    fn the_exit_signal_of_a_zombie(#[case] state: &str, #[case] code: i64, #[case] want: Option<i32>) {
        assert_eq!(exit_signal(&stat(state, code)), want);
    }
}
