//! Window locks (`MPI_Win_lock`, `lock_all`), queued at the target's process (issue 18;
//! rma6 for the part between processes).
//!
//! Every process serves the locks of the window members it hosts: a table of those locks,
//! each with its holders (free, exclusive, or n shared) and one FIFO queue of waiters. A
//! request that conflicts with the holders, or finds others already queued, waits in the
//! queue; a release grants the lock to the head of the queue, all consecutive shared
//! requests at the head together. So requests are served in arrival order, from every
//! process alike (a writer does not starve behind a stream of readers).
//!
//! - A subrank of the target's own process takes the lock in the table; while it waits it is
//!   **parked** (its worker runs the others; the deadlock detector sees it blocked in
//!   `MPI_Win_lock`).
//! - A subrank of another process sends a request (`transport::rma::Note`, a header-only
//!   control message) to the target's process and parks. That process's progress engine
//!   (its idle worker, the background progress thread: not the target subrank, which may be
//!   computing) puts the request in the queue (`on_note`) and, when the lock is the
//!   requester's, answers with a grant, which wakes it. A release is one message; nothing is
//!   tried again and again.
//!
//! A lock is named in its process by its member's lock word address there (`Target::key`).

use crate::core::error::MpiResult;
use crate::core::state::State;
use crate::sched;
use crate::sched::lock::Lock;
use crate::transport::rma::{Note, NOTE_GRANT, NOTE_LOCK_EXCL, NOTE_LOCK_SHARED, NOTE_UNLOCK_EXCL, NOTE_UNLOCK_SHARED};
use crate::transport::Transport;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Holders count while one exclusive holder has the lock.
const EXCL: i64 = -1;

/// A lock of this process's table: its member's lock word address.
pub type Key = usize;

/// Who waits in a queue.
enum Who {
    /// A task of this process, woken when `granted` is set.
    Local { task: usize, granted: Arc<AtomicBool> },
    /// A request of process `proc`, answered by a grant of `token`.
    Remote { proc: usize, token: u64 },
}

struct Waiter {
    who: Who,
    excl: bool,
}

#[derive(Default)]
struct Entry {
    /// 0 free, EXCL held exclusively, n > 0 held shared by n.
    holders: i64,
    queue: VecDeque<Waiter>,
}

impl Entry {
    fn admits(&self, excl: bool) -> bool {
        if excl {
            self.holders == 0
        } else {
            self.holders >= 0
        }
    }

    fn take(&mut self, excl: bool) {
        self.holders = if excl { EXCL } else { self.holders + 1 };
    }

    fn release(&mut self, excl: bool) {
        self.holders = if excl { 0 } else { (self.holders - 1).max(0) };
    }

    /// Grants the lock to the head of the queue while it fits (FIFO; shared requests at
    /// the head go together); returns who got it.
    fn grant(&mut self) -> Vec<Who> {
        let mut granted = Vec::new();
        while let Some(w) = self.queue.front() {
            if !self.admits(w.excl) {
                break;
            }
            let w = self.queue.pop_front().expect("front exists");
            self.take(w.excl);
            granted.push(w.who);
        }
        granted
    }
}

static LOCKS: Lock<Option<HashMap<Key, Entry>>> = Lock::new(None);

/// Releases `key` held in mode `excl`; who the lock goes to next.
fn release_entry(key: Key, excl: bool) -> Vec<Who> {
    let mut t = LOCKS.lock();
    let Some(map) = t.as_mut() else { return Vec::new() };
    let Some(e) = map.get_mut(&key) else { return Vec::new() };
    e.release(excl);
    let granted = e.grant();
    if e.holders == 0 && e.queue.is_empty() {
        map.remove(&key);
    }
    granted
}

/// Tells everyone in `granted` that the lock of `key` is theirs: wakes this process's tasks,
/// sends a grant to the others' processes through `tp`. Called without the table's lock.
fn hand_over(tp: &mut Transport, key: Key, granted: Vec<Who>) -> Result<(), String> {
    for w in granted {
        match w {
            Who::Local { task, granted } => {
                granted.store(true, Ordering::Release);
                sched::wake(task);
            }
            Who::Remote { proc, token } => tp.rma_note(
                proc,
                Note {
                    op: NOTE_GRANT,
                    key,
                    token,
                },
            )?,
        }
    }
    Ok(())
}

/// Whether `granted` holds only tasks of this process (no message to send).
fn all_local(granted: &[Who]) -> bool {
    granted.iter().all(|w| matches!(w, Who::Local { .. }))
}

/// Takes lock `key` of this process's table (exclusive or shared), parking the calling
/// subrank until it is granted.
pub fn acquire(key: Key, excl: bool) {
    let granted = {
        let mut t = LOCKS.lock();
        let e = t.get_or_insert_with(HashMap::new).entry(key).or_default();
        if e.queue.is_empty() && e.admits(excl) {
            e.take(excl);
            return;
        }
        let granted = Arc::new(AtomicBool::new(false));
        e.queue.push_back(Waiter {
            who: Who::Local {
                task: sched::current(),
                granted: granted.clone(),
            },
            excl,
        });
        granted
    };
    wait_for(&granted, false);
}

/// Releases lock `key` of this process's table, held in mode `excl`, and hands it to the
/// waiters it now admits (sending grants to other processes' requesters).
pub fn release(key: Key, excl: bool) -> MpiResult<()> {
    let granted = release_entry(key, excl);
    if all_local(&granted) {
        // No message: no transport needed (windows within one process).
        for w in granted {
            if let Who::Local { task, granted } = w {
                granted.store(true, Ordering::Release);
                sched::wake(task);
            }
        }
        return Ok(());
    }
    super::ops::with_tp_mut(|tp| hand_over(tp, key, granted))
}

/// Parks the caller until `granted` is set (a wake-up between the queueing and the park is
/// not lost: the park then returns at once). A thread that is no task (none can park) keeps
/// looking, and drives the progress itself when the grant comes from another process
/// (`remote`).
fn wait_for(granted: &AtomicBool, remote: bool) {
    while !granted.load(Ordering::Acquire) {
        if sched::current() == usize::MAX {
            if remote {
                let _ = crate::core::state::try_with(|s| s.progress());
            }
            crate::sched::timer::os_yield();
        } else {
            sched::park();
        }
    }
}

/// A request to another process waiting for its grant: the task to wake and its flag.
type Asked = (usize, Arc<AtomicBool>);

/// This process's requests to other processes waiting for their grant, by token.
static PENDING: Lock<Option<HashMap<u64, Asked>>> = Lock::new(None);
static NEXT_TOKEN: AtomicU64 = AtomicU64::new(1);

/// Takes lock `key` of process `proc` (another one): sends the request, parks until the
/// grant arrives.
pub fn acquire_remote(proc: usize, key: Key, excl: bool) -> MpiResult<()> {
    let token = NEXT_TOKEN.fetch_add(1, Ordering::Relaxed);
    let granted = Arc::new(AtomicBool::new(false));
    PENDING
        .lock()
        .get_or_insert_with(HashMap::new)
        .insert(token, (sched::current(), granted.clone()));
    let op = if excl { NOTE_LOCK_EXCL } else { NOTE_LOCK_SHARED };
    if let Err(e) = super::ops::with_tp_mut(|tp| tp.rma_note(proc, Note { op, key, token })) {
        if let Some(p) = PENDING.lock().as_mut() {
            p.remove(&token);
        }
        return Err(e);
    }
    wait_for(&granted, true);
    Ok(())
}

/// Releases lock `key` of process `proc` (another one), held in mode `excl`.
pub fn release_remote(proc: usize, key: Key, excl: bool) -> MpiResult<()> {
    let op = if excl { NOTE_UNLOCK_EXCL } else { NOTE_UNLOCK_SHARED };
    super::ops::with_tp_mut(|tp| tp.rma_note(proc, Note { op, key, token: 0 }))
}

/// A lock message from process `src` (the progress engine's dispatch, under the state lock).
pub fn on_note(s: &mut State, src: usize, hdr: &crate::transport::wire::Header) {
    let n = Note::of(hdr);
    let r = match n.op {
        NOTE_LOCK_EXCL | NOTE_LOCK_SHARED => {
            let excl = n.op == NOTE_LOCK_EXCL;
            let now = {
                let mut t = LOCKS.lock();
                let e = t.get_or_insert_with(HashMap::new).entry(n.key).or_default();
                if e.queue.is_empty() && e.admits(excl) {
                    e.take(excl);
                    true
                } else {
                    e.queue.push_back(Waiter {
                        who: Who::Remote { proc: src, token: n.token },
                        excl,
                    });
                    false
                }
            };
            if now {
                hand_over(&mut s.tp, n.key, vec![Who::Remote { proc: src, token: n.token }])
            } else {
                Ok(())
            }
        }
        NOTE_UNLOCK_EXCL | NOTE_UNLOCK_SHARED => {
            let granted = release_entry(n.key, n.op == NOTE_UNLOCK_EXCL);
            hand_over(&mut s.tp, n.key, granted)
        }
        NOTE_GRANT => {
            let w = PENDING.lock().as_mut().and_then(|p| p.remove(&n.token));
            match w {
                Some((task, granted)) => {
                    granted.store(true, Ordering::Release);
                    if task != usize::MAX {
                        sched::wake(task);
                    }
                    Ok(())
                }
                None => Err(format!("a window lock grant for unknown request {} from process {src}", n.token)),
            }
        }
        op => Err(format!("a window lock message of unknown kind {op} from process {src}")),
    };
    if let Err(e) = r {
        crate::core::diag::fatal(&format!("window locks: {e}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn waiter(task: usize, excl: bool) -> Waiter {
        Waiter {
            who: if task.is_multiple_of(2) {
                Who::Local {
                    task,
                    granted: Arc::new(AtomicBool::new(false)),
                }
            } else {
                Who::Remote {
                    proc: 1,
                    token: task as u64,
                }
            },
            excl,
        }
    }

    fn id(w: &Who) -> usize {
        match w {
            Who::Local { task, .. } => *task,
            Who::Remote { token, .. } => *token as usize,
        }
    }

    /// Holders before, the queue's modes (true: exclusive; odd places are other processes'
    /// requests) -> places granted, holders after.
    #[rstest]
    #[case(0, &[true, false], &[0], EXCL)]
    #[case(0, &[false, false, true, false], &[0, 1], 2)]
    #[case(2, &[false, true], &[0], 3)]
    #[case(2, &[true, false], &[], 2)]
    #[case(EXCL, &[false], &[], EXCL)]
    #[case(0, &[], &[], 0)]
    #[case(0, &[false, false, false], &[0, 1, 2], 3)]
    fn grants_in_order_shared_together(#[case] holders: i64, #[case] q: &[bool], #[case] want: &[usize], #[case] after: i64) {
        let mut e = Entry {
            holders,
            queue: q.iter().enumerate().map(|(i, &x)| waiter(i, x)).collect(),
        };
        let got: Vec<usize> = e.grant().iter().map(id).collect();
        assert_eq!(got, want);
        assert_eq!(e.holders, after);
        assert_eq!(e.queue.len(), q.len() - want.len());
    }

    /// Holders before, the release's mode -> holders after.
    #[rstest]
    #[case(EXCL, true, 0)]
    #[case(3, false, 2)]
    #[case(1, false, 0)]
    fn release_counts(#[case] holders: i64, #[case] excl: bool, #[case] after: i64) {
        let mut e = Entry {
            holders,
            queue: VecDeque::new(),
        };
        e.release(excl);
        assert_eq!(e.holders, after);
    }
}
