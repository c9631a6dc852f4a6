//! What the library says to the user when something goes wrong, and how it ends the job:
//! one whole line on stderr naming the virtual rank, then every process of the job ends.

use crate::core::state;
use crate::sched;
use std::io::Write;

/// "virtual rank R" of the running subrank (or of the process, outside one).
pub fn who() -> String {
    let sub = sched::rank();
    let v = crate::core::runtime::config().local();
    let base = crate::sched::guard::rank_base();
    match state::try_with(|s| s.myproc).map(|p| p * v).or(base) {
        Some(b) if sub != usize::MAX => format!("virtual rank {}", b + sub),
        Some(b) => format!("process {}", b / v.max(1)),
        None if sub != usize::MAX => format!("subrank {sub} (before MPI_Init)"),
        None => "toucan".into(),
    }
}

/// Ends the whole job after printing `msg` (an unrecoverable runtime failure).
pub fn fatal(msg: &str) -> ! {
    say(&format!("toucan: {}: {msg}\n", who()));
    abort_job(1)
}

/// Writes a whole message to stderr in one write, so that a job abort right after it cannot
/// cut it in pieces.
pub fn say(line: &str) {
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// Ends every process of the job with `code`.
pub fn abort_job(code: i32) -> ! {
    let _ = std::io::stdout().flush();
    // Give the launcher a moment to forward what was just written before it kills the job.
    crate::sched::timer::os_sleep(std::time::Duration::from_millis(200));
    // try_lock: we may be called while the state lock is held (from inside progress).
    crate::core::runtime::abort_real(code);
    // SAFETY: ending the process; stdout was flushed above. (Not `exit`: ours would
    // treat a call from a subrank specially.)
    unsafe { libc::_exit(if code == 0 { 1 } else { code }) }
}
