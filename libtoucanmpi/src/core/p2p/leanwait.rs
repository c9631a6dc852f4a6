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
use crate::core::request::{ReqId, Request};
use crate::core::state::State;
use crate::transport::Transport;

/// What one poll of `State::lean_poll` found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeanPoll {
    /// Every lean request finished (statuses set, real requests freed).
    Done,
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
            return LeanPoll::Done;
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
            let mut all = true;
            for (k, &pos) in at.iter().enumerate() {
                let id = handles[pos as usize] as ReqId;
                if reals[k] == null {
                    self.lean_done(sub, id, k, n, rc, statuses);
                } else if let Some(l) = self.locals[sub].reqs.get_mut(id).and_then(|r| r.lean.as_mut()) {
                    // Not freed: still lean, its real request as the real MPI left it.
                    l.req = reals[k];
                    all = false;
                }
            }
            if all {
                LeanPoll::Done
            } else {
                LeanPoll::Failed
            }
        } else {
            LeanPoll::Pending
        };
        self.lean_reqs = reals;
        self.direct_tokens = at;
        out
    }
}
