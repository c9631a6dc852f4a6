//! `Toucan_Region` hints: the receive / send / compute pipeline of the paper.
//!
//! A superblock is one pass of the pattern: a `RECEIVE` region (post receives), a `SEND`
//! region (post sends), a `COMPUTE` region (work that needs those messages), closed by
//! `END` or by the next superblock's first region. The requests a subrank creates in its
//! receive and send regions are the dependencies of its compute region.
//!
//! Entering a compute region passes a gate: while the dependencies are incomplete, the
//! subrank defers (`sched::defer`) to every other ready task, so that all siblings post their
//! receives and sends before any of them computes, and, once every runnable subrank waits at
//! a gate, one whose messages have arrived computes first. It never waits for its own
//! dependencies: when no other task has anything better to do (or after a bounded number of
//! deferrals, so a sibling that polls with `MPI_Test` cannot hold it back), it enters its
//! compute region anyway and the program's own waits block as usual. Hints therefore change
//! only the order in which subranks run, never what they compute, and cannot deadlock a
//! correct program.

use super::error::MpiResult;
use super::request::ReqId;
use super::state::{self, State};
use crate::sched::{self, metrics::Kind};

/// The hints (`TOUCAN_*` in toucan.h).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hint {
    Receive,
    Send,
    Compute,
    End,
}

/// A subrank's region state.
#[derive(Debug, Default)]
pub struct Superblock {
    /// Requests created now are dependencies (in a receive or send region).
    pub tracking: bool,
    pub reqs: Vec<ReqId>,
    /// More than `TRACK_MAX` live requests: the gate treats this superblock as having none.
    overflow: bool,
    /// Waiting at its compute region's gate.
    gated: bool,
    kind: Option<Hint>,
}

/// Live dependencies tracked per superblock (beyond this the hint is ignored).
const TRACK_MAX: usize = 4096;

/// Records request `id` of subrank `owner` as a dependency of its next compute region.
pub fn track(s: &mut State, owner: usize, id: ReqId) {
    // The dependencies are the owner's own requests, in its own slab.
    let l = &mut s.locals[owner];
    let (slab, sb) = (&l.reqs, &mut l.region);
    if sb.reqs.len() >= TRACK_MAX {
        sb.reqs.retain(|&r| !slab.is_done(r));
        if sb.reqs.len() >= TRACK_MAX {
            sb.reqs.clear();
            sb.overflow = true;
            sb.tracking = false;
            return;
        }
    }
    sb.reqs.push(id);
}

/// Whether subrank `sub`'s compute region has what it needs.
fn deps_done(s: &State, sub: usize) -> bool {
    let sb = &s.locals[sub].region;
    sb.overflow || sb.reqs.iter().all(|&r| s.req_done(r))
}

/// Applies hint `hint` for the running subrank `sub`.
pub fn enter(sub: usize, hint: Hint) -> MpiResult<()> {
    let kind = match hint {
        Hint::Receive => Kind::Receive,
        Hint::Send => Kind::Send,
        Hint::Compute => Kind::Compute,
        Hint::End => Kind::None,
    };
    sched::metrics::region(sched::current(), kind);
    state::with(|s| transition(&mut s.locals[sub].region, hint))?;
    if hint == Hint::Compute {
        gate(sub)?;
    }
    Ok(())
}

/// The region state after `hint`.
fn transition(sb: &mut Superblock, hint: Hint) {
    let prev = sb.kind.replace(hint);
    match hint {
        Hint::Receive | Hint::Send => {
            // A receive or send region after a compute region (or outside any) opens the
            // next superblock; one directly after the other belongs to the same.
            if !matches!(prev, Some(Hint::Receive | Hint::Send)) {
                sb.reqs.clear();
                sb.overflow = false;
            }
            sb.tracking = !sb.overflow;
        }
        Hint::Compute => sb.tracking = false,
        Hint::End => {
            sb.tracking = false;
            sb.reqs.clear();
            sb.overflow = false;
            sb.kind = None;
        }
    }
}

/// The compute region's gate (see the module's documentation).
fn gate(sub: usize) -> MpiResult<()> {
    let mut defers = 0usize;
    let mut waiting: Option<std::time::Instant> = None;
    loop {
        let gate = state::with(|s| {
            let g = gate_open(s, sub, defers);
            s.locals[sub].region.gated = g != Gate::Open;
            if g == Gate::Open {
                s.locals[sub].region.reqs.clear();
            }
            g
        })?;
        match gate {
            Gate::Open => return Ok(()),
            Gate::Defer => defers += 1,
            // Only tasks of other workers (SMP mode) can still post their traffic: a turn of
            // ours gave them nothing, so it does not count; a bounded time does (they may
            // poll with MPI_Test for ever, waiting for this one).
            Gate::Wait => {
                if waiting.get_or_insert_with(std::time::Instant::now).elapsed() > GATE_WAIT_MAX {
                    defers = usize::MAX;
                }
            }
        }
        sched::defer();
    }
}

/// Longest a compute region waits for tasks of other workers to post their traffic (a
/// worker thread descheduled on a loaded machine can take tens of milliseconds).
const GATE_WAIT_MAX: std::time::Duration = std::time::Duration::from_millis(200);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Gate {
    Open,
    /// Let the queued tasks go first.
    Defer,
    /// Let the tasks running on other workers go on.
    Wait,
}

fn gate_open(s: &mut State, sub: usize, defers: usize) -> Gate {
    // Enough for every sibling to post its traffic twice over; a sibling that keeps yielding
    // (polling with MPI_Test) must not hold this one back for ever.
    let limit = 2 * s.cfg.local() + 4;
    if defers >= limit || deps_done(s, sub) {
        return Gate::Open;
    }
    // Let arrivals since the last poll count.
    s.progress();
    if deps_done(s, sub) {
        return Gate::Open;
    }
    let n = s.locals.len();
    let gated = |t: usize| t < n && s.locals[t].region.gated;
    // A runnable task that is not waiting at a gate: a sibling that has not posted its
    // traffic yet, one just woken, a helper task. (Runnable = queued, or running on another
    // worker.)
    match sched::park::runnable(sub, |t| !gated(t)) {
        (true, _) => return Gate::Defer,
        (false, true) => return Gate::Wait,
        _ => {}
    }
    // Every other runnable task waits at a gate (a gated subrank is always runnable): go
    // after one whose messages are there.
    match sched::park::runnable(sub, |t| gated(t) && deps_done(s, t)) {
        (true, _) => Gate::Defer,
        (false, true) => Gate::Wait,
        _ => Gate::Open,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::pipeline(&[Hint::Receive, Hint::Send], true, true)]
    #[case::send_only(&[Hint::Send], true, true)]
    #[case::compute_stops_tracking(&[Hint::Receive, Hint::Send, Hint::Compute], false, true)]
    #[case::next_superblock_clears(&[Hint::Receive, Hint::Compute, Hint::Receive], true, false)]
    #[case::receive_after_send_same(&[Hint::Send, Hint::Receive], true, true)]
    #[case::end_clears(&[Hint::Receive, Hint::End], false, false)]
    fn transitions(#[case] hints: &[Hint], #[case] tracking: bool, #[case] keeps_first: bool) {
        let mut sb = Superblock::default();
        for (i, &h) in hints.iter().enumerate() {
            transition(&mut sb, h);
            if i == 0 {
                sb.reqs.push(7);
            }
        }
        assert_eq!(sb.tracking, tracking);
        assert_eq!(sb.reqs == [7], keeps_first);
    }
}
