//! Job-wide deadlock detection: when every subrank of every process is blocked in MPI and
//! the job-wide counts of control messages sent and received agree on two consecutive
//! waves, nothing can ever wake anyone: report each rank's blocking call and end the job.
//!
//! Large sends and real collectives leave requests in the real MPI that can wait for ever
//! (a receiver never matches, a process never joins): `quiescence` tells from every
//! process's answer whether anything outstanding can still finish.
//!
//! Process 0 coordinates. A process answers a query only while it is idle (all its subranks
//! parked, nothing in flight in its transport), from the worker's idle hook, so a process
//! that is computing — however long — simply delays the wave: no false report. Detector
//! messages travel on their own real communicator and are not counted.

use super::p2p::matching::Pattern;
use super::quiescence::{self, Snapshot, STATUS};
use super::state::State;
use crate::sched;
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const QUERY: i64 = 1;
const REPORT: i64 = 3;
const REPORTED: i64 = 4;

/// Idle time before process 0 starts asking, and the pause between waves.
const FIRST_WAVE: Duration = Duration::from_secs(2);
const BETWEEN_WAVES: Duration = Duration::from_millis(500);

const MAX_SUBS: usize = 1 << 16;
/// The MPI function each subrank entered last (pointer and length of a &'static str).
static CALL_PTR: [AtomicUsize; MAX_SUBS] = [const { AtomicUsize::new(0) }; MAX_SUBS];
static CALL_LEN: [AtomicUsize; MAX_SUBS] = [const { AtomicUsize::new(0) }; MAX_SUBS];

/// Records that the running subrank entered MPI function `name` (called by every export).
#[inline]
pub fn enter(name: &'static str) {
    let s = sched::current();
    if s < MAX_SUBS {
        CALL_PTR[s].store(name.as_ptr() as usize, Ordering::Relaxed);
        CALL_LEN[s].store(name.len(), Ordering::Relaxed);
    }
}

fn call_of(sub: usize) -> &'static str {
    if sub >= MAX_SUBS {
        return "MPI";
    }
    let (p, n) = (CALL_PTR[sub].load(Ordering::Relaxed), CALL_LEN[sub].load(Ordering::Relaxed));
    if p == 0 {
        return "MPI";
    }
    // SAFETY: (p, n) was stored from a &'static str by `enter`.
    unsafe { std::str::from_utf8_unchecked(std::slice::from_raw_parts(p as *const u8, n)) }
}

#[derive(Default)]
pub struct Detector {
    pub disabled: bool,
    epoch: i64,
    replies: Vec<Option<Snapshot>>,
    open: bool,
    prev: Option<quiescence::Key>,
    last_wave: Option<Instant>,
    reporting: Option<(Instant, usize)>,
}

impl Detector {
    pub fn new() -> Detector {
        let disabled = std::env::var("TOUCAN_DEADLOCK").map(|v| v == "off" || v == "0").unwrap_or(false);
        Detector {
            disabled,
            ..Default::default()
        }
    }
}

fn send(s: &mut State, dst: usize, m: &[i64]) {
    if let Err(e) = s.tp.det_send(dst, m) {
        crate::core::diag::fatal(&format!("deadlock detector: {e}"));
    }
}

/// Called by the worker while every subrank of this process has been parked for `idle`.
pub fn tick(s: &mut State, idle: Duration) {
    if s.det.disabled {
        return;
    }
    loop {
        let msg = match s.tp.det_poll() {
            Ok(m) => m,
            Err(e) => crate::core::diag::fatal(&format!("deadlock detector: {e}")),
        };
        let Some((src, m)) = msg else { break };
        match m.first().copied().unwrap_or(0) {
            QUERY if m.len() > 1 => {
                s.drain_direct();
                let w = Snapshot::of(s).words(m[1]);
                send(s, 0, &w);
            }
            STATUS if m.len() > 1 && m[1] == s.det.epoch && src < s.det.replies.len() => {
                s.det.replies[src] = Snapshot::from_words(&m);
                if s.det.replies[src].is_none() {
                    crate::core::diag::fatal("deadlock detector: a malformed status message");
                }
            }
            REPORT => {
                report(s);
                send(s, 0, &[REPORTED]);
            }
            REPORTED => {
                if let Some((_, n)) = s.det.reporting.as_mut() {
                    *n += 1;
                }
            }
            _ => {}
        }
    }
    if s.myproc != 0 {
        return;
    }
    if let Some((since, n)) = s.det.reporting {
        if n + 1 >= s.nproc || since.elapsed() > Duration::from_secs(3) {
            let _ = std::io::stderr().flush();
            crate::core::diag::abort_job(1);
        }
        return;
    }
    if idle < FIRST_WAVE {
        return;
    }
    if !s.det.open {
        if s.det.last_wave.is_some_and(|t| t.elapsed() < BETWEEN_WAVES) {
            return;
        }
        s.det.epoch += 1;
        s.det.replies = vec![None; s.nproc];
        s.drain_direct();
        s.det.replies[0] = Some(Snapshot::of(s));
        s.det.open = true;
        s.det.last_wave = Some(Instant::now());
        for p in 1..s.nproc {
            send(s, p, &[QUERY, s.det.epoch]);
        }
        return;
    }
    let Some(replies) = s.det.replies.iter().cloned().collect::<Option<Vec<Snapshot>>>() else {
        return;
    };
    s.det.open = false;
    let Some(key) = quiescence::verdict(&replies) else {
        s.det.prev = None;
        return;
    };
    if s.det.prev != Some(key) {
        s.det.prev = Some(key);
        return;
    }
    // Two consecutive waves saw the same quiescent state: deadlock.
    crate::core::diag::say("toucan: deadlock: every rank is blocked in MPI and no message can arrive\n");
    report(s);
    s.det.reporting = Some((Instant::now(), 0));
    for p in 1..s.nproc {
        send(s, p, &[REPORT]);
    }
}

/// Prints this process's blocked ranks, one line per distinct call (ranks grouped).
fn report(s: &State) {
    let v = s.cfg.local();
    let mut lines: Vec<(String, Vec<usize>)> = Vec::new();
    for sub in 0..v {
        let w = s.myproc * v + sub;
        let what = match Some(sched::park::state(sub)) {
            Some(sched::park::State::Done) => "finished (returned from main)".to_string(),
            _ => format!("blocked in {}", describe(s, sub)),
        };
        match lines.iter_mut().find(|l| l.0 == what) {
            Some(l) => l.1.push(w),
            None => lines.push((what, vec![w])),
        }
    }
    let mut text = String::new();
    for (what, ranks) in lines {
        let who = if ranks.len() == 1 {
            format!("virtual rank {}", ranks[0])
        } else {
            format!("virtual ranks {}", crate::ranges::ranges(&ranks))
        };
        text.push_str(&format!("toucan: deadlock: {who} {what}\n"));
    }
    crate::core::diag::say(&text);
}

/// "MPI_Recv(source=S, tag=T, comm=NAME)" from the call name and what the rank waits for.
fn describe(s: &State, sub: usize) -> String {
    let call = call_of(sub);
    let l = &s.locals[sub];
    let pat: Option<Pattern> = l.waiting.or_else(|| l.posted.front().map(|p| p.pat));
    let Some(p) = pat else { return describe_send(s, sub, call) };
    let comm = l
        .comms
        .iter()
        .flatten()
        .find(|c| c.ctx == p.ctx & !super::comm::CTX_COLL)
        .map(comm_name)
        .unwrap_or_else(|| format!("{:#x}", p.ctx));
    let src = if p.src == crate::consts::MPI_ANY_SOURCE {
        "MPI_ANY_SOURCE".to_string()
    } else {
        p.src.to_string()
    };
    let tag = if p.tag == crate::consts::MPI_ANY_TAG {
        "MPI_ANY_TAG".to_string()
    } else {
        p.tag.to_string()
    };
    if p.ctx & super::comm::CTX_COLL != 0 {
        format!("{call}(comm={comm})")
    } else {
        format!("{call}(source={src}, tag={tag}, comm={comm})")
    }
}

fn comm_name(c: &super::comm::CommRef) -> String {
    if c.name.is_empty() {
        format!("{:#x}", c.ctx)
    } else {
        c.name.to_string()
    }
}

/// "MPI_Send(dest=D, tag=T, comm=NAME)" for a rank waiting on a send that was not matched
/// (one of its incomplete sends), else just the call's name.
fn describe_send(s: &State, sub: usize, call: &str) -> String {
    let Some((r, (dest, tag))) = s
        .requests()
        .filter(|r| r.owner == sub && r.is_send && !r.complete && !r.freed)
        .find_map(|r| r.send_to.map(|d| (r, d)))
    else {
        return call.to_string();
    };
    let comm = crate::core::comm::comm_index(r.comm)
        .and_then(|i| s.locals[sub].comms.get(i))
        .and_then(|c| c.as_ref());
    match comm {
        Some(c) => {
            let d = c
                .peers()
                .rank_of(dest)
                .map_or_else(|| format!("world rank {dest}"), |d| d.to_string());
            format!("{call}(dest={d}, tag={tag}, comm={})", comm_name(c))
        }
        None => format!("{call}(dest=world rank {dest}, tag={tag})"),
    }
}

#[cfg(test)]
mod tests {
    use crate::ranges::ranges;
    use rstest::rstest;

    #[rstest]
    #[case(&[0], "0")]
    #[case(&[0, 1, 2, 3], "0-3")]
    #[case(&[0, 1, 3, 5, 6], "0-1,3,5-6")]
    fn rank_ranges(#[case] r: &[usize], #[case] want: &str) {
        assert_eq!(ranges(r), want);
    }
}
