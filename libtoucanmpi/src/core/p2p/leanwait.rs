//! issue 16 (rate15): waits and tests whose outstanding requests are all lean direct ones
//! (`request::Lean`, `p2p::direct`: at V = 1 a program's message passes through to the real
//! MPI and its real request stays in ours).
//!
//! Such a wait looks at their real requests with `MPI_Request_get_status` from the first
//! incomplete one on (`Transport::lean_look`: a complete request costs no progress step, and
//! stays complete, so the next poll starts where this one stopped), and when all are
//! complete frees them with one real `MPI_Waitall` (`Transport::lean_free`). The handles are
//! looked up once per wait (`lean_scan`), not once per poll: session 17's poll
//! (`State::direct_wait_poll`'s lean branch) looked at every handle, and every real request
//! from the first, each time (a window of 8 receives posted before their messages arrived:
//! 9562 instructions against MPICH's own `MPI_Waitall` of the same, 5256). A real
//! `MPI_Testall` per poll measured worse (13005): MPICH 4.0.2's `MPI_Testall` costs about
//! 2950 instructions per call, a progress step included, against 674 for a look that steps.
//!
//! Only the lean requests' real requests are handed to the real MPI; null handles, the
//! built-in complete send and complete or inactive requests of the running subrank are
//! taken as before (`abi::p2p::take_own_done`). Anything else (another subrank's request, a
//! registered one, a bad handle) leaves the wait to the other paths, with nothing done.

use crate::consts as c;
use crate::core::p2p::fatal_transport;
use crate::core::request::{ReqId, Request, Status};
use crate::core::state::State;
use crate::transport::Transport;

/// What one poll of `State::lean_poll` found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeanPoll {
    /// Every lean request's real request completed and was freed by one real call with
    /// this code: the caller takes each with `lean_take` (its `k` the request's place
    /// among the lean ones, `n` their number).
    Done(i32),
    /// Not all complete; nothing changed but the cursor.
    Pending,
    /// The real `MPI_Waitall` met a failed request (a truncated receive) and left those
    /// after it unfreed (MPICH 4.0.2 gives them `MPI_ERR_PENDING`): the freed ones finished,
    /// the others are still lean; scan again (cursor at 0) before the next poll.
    Failed,
}

impl State {
    /// Looks at the handles of a wait or test by the running subrank `sub` once: true when
    /// every one is null, the built-in complete send, a complete or inactive request of
    /// `sub`, or a lean direct request of `sub`, whose real requests (and their places in
    /// `handles`) are then kept for `lean_poll`. False: the other paths wait (nothing done).
    pub fn lean_scan(&mut self, sub: usize, handles: &[usize]) -> bool {
        let mut at = std::mem::take(&mut self.direct_tokens);
        let mut reals = std::mem::take(&mut self.lean_reqs);
        at.clear();
        reals.clear();
        let l = &self.locals[sub];
        let mut ok = true;
        for (k, &h) in handles.iter().enumerate() {
            let id = h as ReqId;
            if h == c::MPI_REQUEST_NULL || l.reqs.is_done_send(id) {
                continue;
            }
            // The slab knows only `sub`'s own requests (`Slab::locate` checks the owner).
            match l.reqs.get(id) {
                Some(r) if r.complete || !r.active => {}
                Some(Request { lean: Some(le), .. }) => {
                    reals.push(le.req);
                    at.push(k as u64);
                }
                _ => {
                    ok = false;
                    break;
                }
            }
        }
        self.direct_tokens = at;
        self.lean_reqs = reals;
        ok
    }

    /// One poll of the lean requests `lean_scan` kept for `handles` (the same handles, of
    /// the running subrank `sub`), from the `*from`th on (0 at a wait's first poll; the
    /// poll moves it). When all are complete they are finished as `on_direct_done` would
    /// leave them (`statuses`: the caller wants them; see `Transport::lean_testall`).
    pub fn lean_poll(&mut self, sub: usize, handles: &[usize], from: &mut usize, statuses: bool) -> LeanPoll {
        if self.lean_reqs.is_empty() {
            return LeanPoll::Done(crate::transport::real::REAL_MPI_SUCCESS as i32);
        }
        super::super::background::stepped();
        let mut reals = std::mem::take(&mut self.lean_reqs);
        let at = std::mem::take(&mut self.direct_tokens);
        let out = if self.tp.lean_look(&reals, from).unwrap_or_else(|e| fatal_transport(e)) {
            let rc = self.tp.lean_free(&mut reals, statuses);
            let n = reals.len();
            // A failure the statuses do not carry is the real MPI's own (lost messages): it
            // ends the job, as `direct_testall`'s does.
            if rc != crate::transport::real::REAL_MPI_SUCCESS as i32 && !Transport::lean_failed(rc, n).1 {
                fatal_transport(format!("the real MPI_Waitall failed (error {rc})"));
            }
            let null = Transport::null_request();
            if reals.iter().all(|&r| r == null) {
                LeanPoll::Done(rc)
            } else {
                for (k, &pos) in at.iter().enumerate() {
                    let id = handles[pos as usize] as ReqId;
                    if reals[k] == null {
                        self.lean_done(sub, id, k, n, rc, statuses);
                    } else if let Some(l) = self.locals[sub].reqs.get_mut(id).and_then(|r| r.lean.as_mut()) {
                        // Not freed: still lean, its real request as the real MPI left it.
                        l.req = reals[k];
                    }
                }
                LeanPoll::Failed
            }
        } else {
            LeanPoll::Pending
        };
        self.lean_reqs = reals;
        self.direct_tokens = at;
        out
    }

    /// The places in the wait's handles of the lean requests `lean_scan` kept (ascending),
    /// lent to the caller of `lean_take` (`lean_places_back` returns them).
    pub fn lean_places(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.direct_tokens)
    }

    /// Gives back what `lean_places` lent.
    pub fn lean_places_back(&mut self, at: Vec<u64>) {
        self.direct_tokens = at;
    }

    /// After `lean_poll` gave `Done(rc)`: finishes lean request `id` of the running subrank
    /// `sub` (the `k`th of the `n` lean ones) and drops it, with one look at its slab entry
    /// (`lean_done` then `take_own_done` made two): its status and communicator handle.
    /// None: not a lean request of `sub` (nothing done; the caller takes it as any other).
    pub fn lean_take(&mut self, sub: usize, id: ReqId, k: usize, n: usize, rc: i32, statuses: bool) -> Option<(Status, usize)> {
        let l = &mut self.locals[sub];
        let i = l.reqs.index_of(id)?;
        let r = l.reqs.at_mut(i)?;
        r.lean?;
        if r.persist.is_some() {
            // (Not made lean today: `MPI_Start` registers.) Finished in place, kept.
            self.lean_done(sub, id, k, n, rc, statuses);
            return None;
        }
        let lean = r.lean.take()?;
        let (base, is_send, comm) = (r.status, r.is_send, r.comm);
        // A lean request has no generalized request's callbacks to give back.
        let _ = l.reqs.discard_at(i);
        self.lean_live -= 1;
        if is_send {
            return Some((base, comm));
        }
        self.tp.direct_recvd += 1;
        Some((self.lean_status(base, &lean, k, n, rc, statuses), comm))
    }
}
