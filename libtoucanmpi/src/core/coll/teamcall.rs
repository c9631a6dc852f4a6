//! Nonblocking (`MPI_I*`) and persistent (`MPI_*_init`) collectives among the subranks of
//! one process, in shared memory (issue 16): the team's scheme of `team.rs` without a helper
//! task per call and without waiting.
//!
//! Every member numbers its nonblocking and persistent calls on a communicator (MPI orders
//! them on every member alike, as it orders blocking ones), and the k-th call of every
//! member meets in one record, a `Call`, whatever order the members reach it in and however
//! many calls are outstanding:
//!
//! - a nonblocking call leaves its arguments (owned) and its request in the record and
//!   returns; the member that joins last does the whole collective from the members' buffers
//!   (`team::combine`, the blocking form's code) and completes every member's request, which
//!   MPI_Test/Wait then see like any other;
//! - a persistent call's initialisation leaves its arguments and its (persistent) request in
//!   the record, and every member's request keeps the record: the schedule is bound once. Each
//!   `MPI_Start` counts the member in; the last one of a round combines and completes the
//!   round. Starts of different persistent requests need not come in the same order on every
//!   member (MPI does not ask it), since each request counts in its own record.
//!
//! The record leaves the team's list of open calls when its last member has joined, so the
//! list holds only calls some member has not reached yet.

use super::team::{combine, Members, Part, Scratch, Team};
use crate::core::error::{MpiError, MpiResult};
use crate::core::request::ReqId;
use crate::core::state;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// One nonblocking or persistent collective call of a team: every member's arguments and
/// request.
pub struct Call {
    n: usize,
    /// Member i's arguments: written by member i under the team's lock of open calls.
    parts: Box<[UnsafeCell<Option<Part>>]>,
    /// Member i's request (the same at every start of a persistent call).
    reqs: Box<[UnsafeCell<ReqId>]>,
    /// Member i's error in the current round (the combiner's).
    errors: Box<[UnsafeCell<Option<MpiError>>]>,
    /// Members that started the current round of a persistent call.
    started: AtomicUsize,
    /// The combiner's work space (one combiner per round).
    scratch: UnsafeCell<Scratch>,
}

// SAFETY: each cell has one writer at a time, ordered as follows. A member writes its part
// and request under the team's lock of open calls (`join`); the last to join (non-persistent)
// takes the lock after every other writer, so it sees them all, and is the only one to touch
// the record afterwards. A persistent call's members each join (under the lock) before they
// can start it; the round's last start (an acquire-release add on `started`, after every
// member's own add) sees every part, and it alone touches the errors and the scratch until it
// completes the requests: no member can start the next round before its request of this one
// is complete, and `started` is reset before that. The parts point at the members' buffers,
// valid until their requests complete, as MPI requires.
unsafe impl Sync for Call {}
// SAFETY: as above.
unsafe impl Send for Call {}

impl std::fmt::Debug for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Call({} members)", self.n)
    }
}

impl Call {
    fn new(n: usize) -> Call {
        Call {
            n,
            parts: (0..n).map(|_| UnsafeCell::new(None)).collect(),
            reqs: (0..n).map(|_| UnsafeCell::new(0)).collect(),
            errors: (0..n).map(|_| UnsafeCell::new(None)).collect(),
            started: AtomicUsize::new(0),
            scratch: Default::default(),
        }
    }

    /// Runs the collective from every member's part and completes every member's request.
    ///
    /// # Safety
    /// Called by the round's combiner only (every member's part in place, see `Sync`).
    unsafe fn finish(&self) -> MpiResult<()> {
        // SAFETY: the combiner owns the errors and the scratch until the requests complete.
        unsafe {
            for e in self.errors.iter() {
                *e.get() = None;
            }
            let sc = &mut *self.scratch.get();
            if let Err(e) = combine(self, 0, sc) {
                *self.errors[0].get() = Some(e);
            }
            let done: Vec<(ReqId, Option<MpiError>)> = (0..self.n).map(|i| (*self.reqs[i].get(), (*self.errors[i].get()).take())).collect();
            state::with(|s| {
                for (id, e) in done {
                    if let (Some(e), Some(r)) = (e, s.req_mut(id)) {
                        r.status.error = e.class;
                    }
                    s.event_done(id);
                }
            })
        }
    }
}

impl Members for Call {
    fn count(&self) -> usize {
        self.n
    }
    unsafe fn kind(&self, i: usize) -> u8 {
        // SAFETY: as the caller's (every member's part in place).
        unsafe { self.part(i).kind() }
    }
    unsafe fn part(&self, i: usize) -> &Part {
        // SAFETY: as the caller's; a member that joined always leaves a part.
        unsafe { (*self.parts[i].get()).as_ref().unwrap_or(&Part::Idle) }
    }
    unsafe fn staged(&self, _: usize) -> bool {
        false
    }
    unsafe fn stage(&self, _: usize) -> &[u8] {
        &[]
    }
    unsafe fn fail(&self, i: usize, e: MpiError) {
        // SAFETY: as the caller's (the combiner).
        unsafe { *self.errors[i].get() = Some(e) };
    }
    unsafe fn take_error(&self, i: usize) -> Option<MpiError> {
        // SAFETY: as the caller's (the combiner).
        unsafe { (*self.errors[i].get()).take() }
    }
}

/// Member `rank` joins its next call with `part` and request `req`: returns the record, and
/// whether this member was the last to join.
///
/// # Safety
/// Called by member `rank` of `team`, which numbers its calls.
unsafe fn join(team: &Team, rank: usize, part: Part, req: ReqId) -> (Arc<Call>, bool) {
    // SAFETY: the caller is member `rank`.
    let k = unsafe { team.next_call(rank) };
    let n = team.size();
    let mut open = team.calls.lock();
    let i = match open.iter().position(|e| e.0 == k) {
        Some(i) => i,
        None => {
            open.push((k, Arc::new(Call::new(n)), 0));
            open.len() - 1
        }
    };
    let call = open[i].1.clone();
    // SAFETY: member `rank`'s cells, written under the lock (see `Sync for Call`).
    unsafe {
        *call.parts[rank].get() = Some(part);
        *call.reqs[rank].get() = req;
    }
    open[i].2 += 1;
    let last = open[i].2 == n;
    if last {
        open.swap_remove(i);
    }
    (call, last)
}

/// Starts member `rank`'s nonblocking collective `part`, completing request `req` (which
/// awaits one event) when the last member has started it too.
///
/// # Safety
/// Called by member `rank`; the buffers of `part` stay valid until `req` completes.
pub unsafe fn start(team: &Team, rank: usize, part: Part, req: ReqId) -> MpiResult<()> {
    // SAFETY: forwarded from the caller.
    let (call, last) = unsafe { join(team, rank, part, req) };
    if last {
        // SAFETY: the last to join is the only one to touch the record now.
        unsafe { call.finish() }?;
    }
    Ok(())
}

/// Binds member `rank`'s persistent collective `part` to its persistent request `req`: the
/// record every start of it counts in.
///
/// # Safety
/// As `start`, for as long as the request lives.
pub unsafe fn init(team: &Team, rank: usize, part: Part, req: ReqId) -> Arc<Call> {
    // SAFETY: forwarded from the caller.
    unsafe { join(team, rank, part, req) }.0
}

/// One member's `MPI_Start` of a persistent collective (its request already active and
/// awaiting one event): the last start of a round runs it.
pub fn restart(call: &Call) -> MpiResult<()> {
    if call.started.fetch_add(1, Ordering::AcqRel) + 1 < call.n {
        return Ok(());
    }
    // Every member started this round, so each had joined the record (see `Sync`), and none
    // can start the next round before its request of this one completes, after this store.
    call.started.store(0, Ordering::Release);
    // SAFETY: this is the round's only combiner.
    unsafe { call.finish() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    /// Members join their calls in `order` (member, request); the k-th call of every member
    /// meets in one record, and exactly the last member to join a call is told so.
    #[rstest]
    #[case::in_order(&[(0, 1), (0, 2), (1, 3), (1, 4), (2, 5), (2, 6)])]
    #[case::interleaved(&[(2, 1), (1, 2), (2, 3), (0, 4), (1, 5), (0, 6)])]
    fn calls_meet_by_number(#[case] order: &[(usize, ReqId)]) {
        let team = Team::for_tests(3);
        let mut seen: Vec<Vec<Arc<Call>>> = vec![Vec::new(); 3];
        let mut lasts = 0;
        for &(m, req) in order {
            // SAFETY: one thread plays every member in turn; the parts hold no buffers.
            let (call, last) = unsafe { join(&team, m, Part::Barrier, req) };
            let k = seen[m].len();
            let joined = seen.iter().filter(|v| v.len() > k).count() + 1;
            assert_eq!(last, joined == 3, "member {m} call {k}");
            lasts += last as usize;
            seen[m].push(call);
        }
        assert_eq!(lasts, 2);
        for ((a, b), c) in seen[0].iter().zip(&seen[1]).zip(&seen[2]) {
            assert!(Arc::ptr_eq(a, b) && Arc::ptr_eq(b, c));
        }
        assert!(!Arc::ptr_eq(&seen[0][0], &seen[0][1]));
        assert!(team.calls.lock().is_empty());
    }
}
