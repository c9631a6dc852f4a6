//! Persistent collectives between processes planned once (coll5, issue 16): `MPI_*_init` on
//! a communicator with a twin (members on every process, `real`) computes its schedule at
//! initialisation, and each `MPI_Start` only runs it.
//!
//! MPI 4.0 lets processes start different persistent collectives in different orders, so a
//! start has no place in the twin's issue order. Each planned call therefore gets a **private
//! twin**: an `MPI_Comm_idup` of the communicator's twin, started at initialisation in the
//! call's place of the twin's order (`real::private_twin`), so every process makes the same
//! private twins in the same order. Round r of the call is the r-th real operation on its
//! private twin on every process (a member cannot start round r+1 before its request of round
//! r completes), so rounds need no place bookkeeping beyond their number.
//!
//! What is bound once, per process (`Plan`): the private twin; the record of the local
//! members' arguments and persistent requests (`nbrec::Rec`: the members' ranks, the process
//! and index of every rank, the layout per process); and at one member per process (V=1),
//! when the buffers can go to the real MPI as they are, the real operation itself (kind,
//! root's process, counts, real type and operation, buffer addresses: `nbc::shape`). A start
//! then costs one count under the state lock and, for the round's last local member, the
//! real `MPI_I*` call on the private twin (V=1, as is), or the local combine of `nbrec` (the
//! operands reduced, the blocks packed per process) and that call. The round's completion
//! (`finish`, from the progress engine) distributes the result and completes every local
//! member's request, as `nbrec::finish` does for a nonblocking call.
//!
//! Served (`eligible`, decided from what every rank passes alike): what `nbc` serves at one
//! member per process (Barrier, Bcast, Reduce, Allreduce with a predefined operation on a C
//! basic type, Gather, Scatter, Allgather, Alltoall with equal blocks) and what `nbrec` serves
//! at several (the same, Gather/Scatter below `nbrec::ROOTED_MAX`, Alltoall (nbc9) up to
//! `nbrec::ALLTOALL_MAX` packed bytes, Allgather, Alltoall and the rooted ones with as many
//! members on every process); not with swapped thread-locals.
//! At most `real::MAX_PERSISTENT` calls per communicator over its lifetime get a private twin.
//! Everything else (v/w forms, Scan/Exscan, Reduce_scatter, user operations, communicators
//! without a twin, inter-communicators, neighbourhood collectives) keeps its job bound at
//! initialisation and reruns it in a helper task at each start (`abi::coll::launch`); among
//! the subranks of one process the team's records do the same job (`teamcall`).
//!
//! A freed request gives its plan up through `PlanRef`'s drop, which cannot take the state
//! lock (requests are freed under it): the plan's number goes to a list that the next plan
//! operation, or `settle` at finalisation, drains; the plan's last request frees its private
//! twin (`real::drop_private`).

use crate::consts as c;
use crate::core::coll::hier::{key_of, CommKey};
use crate::core::coll::nbrec::{self, Rec};
use crate::core::coll::team::Part;
use crate::core::coll::{nbc, real, Coll};
use crate::core::comm::{CommRef, CTX_COLL};
use crate::core::error::{err, MpiResult};
use crate::core::idmap::IdMap;
use crate::core::request::ReqId;
use crate::core::state::{self, State};
use crate::transport::{CollMem, RealColl};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// The real operation of a V=1 plan whose buffers go as they are: (kind, send, recv, bytes),
/// the fields of its `CollMem` (which holds no memory of ours).
type Direct = (RealColl, *const u8, *mut u8, usize);

/// A round to run on a plan's record: (the record, a local member's rank, the private twin,
/// the round's number).
type Round = (Box<Rec>, i32, CommKey, u64);

/// One planned persistent call on this process.
struct Plan {
    /// Its private twin.
    key: CommKey,
    /// Local members, and how many of them started the current round.
    local: usize,
    started: usize,
    /// Rounds started so far.
    round: u64,
    /// Local members' requests still alive.
    refs: usize,
    /// The local members' arguments and requests; out while a round runs on the record.
    rec: Option<Box<Rec>>,
    /// A local member's rank (`nbrec::combine` finds this process from it).
    me: i32,
    direct: Option<Direct>,
}

/// This process's planned persistent calls.
#[derive(Default)]
pub struct Plans {
    map: IdMap<u64, Plan>,
    /// Calls some local member has not initialised yet: (communicator, call number) ->
    /// (the plan, None if the call is not planned; members joined; local members).
    open: IdMap<(CommKey, u64), (Option<u64>, usize, usize)>,
    next: u64,
}

/// Plans whose requests were freed, to drain under the state lock.
static FREED: Mutex<Vec<u64>> = Mutex::new(Vec::new());
static ANY_FREED: AtomicBool = AtomicBool::new(false);

/// One local member's hold on a plan (in its persistent request); dropping it gives the
/// member's part up.
#[derive(Debug)]
pub struct PlanRef(u64);

impl Drop for PlanRef {
    fn drop(&mut self) {
        // Requests are freed under the state lock: only note it here (`drain`).
        FREED.lock().unwrap_or_else(|e| e.into_inner()).push(self.0);
        ANY_FREED.store(true, Ordering::Release);
    }
}

/// Gives up the plans of freed requests; the last local request of a plan frees its twin.
fn drain(s: &mut State) {
    if !ANY_FREED.swap(false, Ordering::AcqRel) {
        return;
    }
    let ids = std::mem::take(&mut *FREED.lock().unwrap_or_else(|e| e.into_inner()));
    for id in ids {
        let Some(p) = s.rcoll.plans.map.get_mut(&id) else { continue };
        p.refs = p.refs.saturating_sub(1);
        if p.refs == 0 {
            let key = p.key;
            s.rcoll.plans.map.remove(&id);
            real::drop_private(s, key);
        }
    }
}

/// At finalisation: frees the private twins of plans whose requests were freed.
pub fn settle(s: &mut State) {
    drain(s);
}

/// The key of persistent call `seq`'s private twin on the communicator of twin `parent`: no
/// communicator of the program has a first member `u32::MAX`.
fn private_key(parent: CommKey, seq: u64) -> CommKey {
    let ctx = crate::core::idmap::mix64(parent.0 ^ seq.rotate_left(32) ^ 0x0070_6572_7369_7374) | CTX_COLL;
    (ctx, u32::MAX, seq as usize)
}

/// Whether `key` names a persistent call's private twin.
pub fn is_private(key: CommKey) -> bool {
    key.1 == u32::MAX
}

/// Whether a persistent call on `cm` with arguments `part` is planned here (the same answer
/// on every process and local member); `equal`: not a v/w form.
pub fn eligible(cm: &CommRef, part: &Part, equal: bool) -> bool {
    if cm.is_inter() || crate::sched::swap::active() || !real::has_twin(cm) {
        return false;
    }
    if real::one_per_process(cm) {
        nbc::eligible(cm, part, equal)
    } else {
        // nbrecv27: the v-forms' and Reduce_scatter's records are for nonblocking calls only.
        nbrec::eligible(cm, part, equal) && !crate::core::coll::nbrecv::is_v(part, equal)
    }
}

/// Binds member `c.comm.rank`'s persistent call `c` (its call number taken, not enrolled)
/// with arguments `part` to its persistent request `id`. Err gives `part` back when the call
/// is not planned (the communicator's budget of private twins is spent): it then runs as a
/// job, the same on every process.
///
/// # Safety
/// MPI requires the buffers of `part` to stay valid while the request lives, and every member
/// to initialise its collectives in the same order.
pub unsafe fn init(c: &Coll, part: Part, id: ReqId) -> MpiResult<Result<PlanRef, Part>> {
    let parent = key_of(c.comm.ctx, &c.comm.group.ranks);
    // At one member per process, the real operation as it will run each round, if the
    // buffers can go as they are (computed outside the lock: `shape` takes it).
    let direct = if real::one_per_process(&c.comm) {
        match nbc::shape(c, &part) {
            Some(Ok((what, mem))) if mem.keep.is_empty() => Some((what, mem.send, mem.recv, mem.bytes)),
            Some(Err(e)) => return Err(e),
            _ => None,
        }
    } else {
        None
    };
    let me = c.comm.rank;
    // Session 19: near the budget of private twins, its exact count (`real::private_twin`).
    real::await_exact_budget(|s| real::private_near_budget(s, parent, c.seq))?;
    state::with(|s| {
        drain(s);
        let okey = (parent, c.seq);
        let pid = match s.rcoll.plans.open.get_mut(&okey) {
            Some(e) => {
                e.1 += 1;
                let (pid, done) = (e.0, e.1 >= e.2);
                if done {
                    s.rcoll.plans.open.remove(&okey);
                }
                pid
            }
            None => {
                let rec = nbrec::new_rec(s, c);
                let local = rec.local_count();
                let child = private_key(parent, c.seq);
                let pid = real::private_twin(s, parent, c.seq, child).then(|| {
                    let ps = &mut s.rcoll.plans;
                    ps.next += 1;
                    ps.map.insert(
                        ps.next,
                        Plan {
                            key: child,
                            local,
                            started: 0,
                            round: 0,
                            refs: local,
                            rec: Some(Box::new(rec)),
                            me,
                            direct: if local == 1 { direct } else { None },
                        },
                    );
                    ps.next
                });
                if local > 1 {
                    s.rcoll.plans.open.insert(okey, (pid, 1, local));
                }
                pid
            }
        };
        let Some(pid) = pid else { return Ok(Err(part)) };
        let Some(rec) = s.rcoll.plans.map.get_mut(&pid).and_then(|p| p.rec.as_mut()) else {
            return err(c::MPI_ERR_INTERN, "persistent collective plan lost at initialisation");
        };
        rec.join(me, part, id);
        Ok(Ok(PlanRef(pid)))
    })?
}

/// One member's `MPI_Start` of planned call `plan` (its request `id` active; made to await
/// one event here): the round's last local start runs it.
pub fn start(plan: &PlanRef, id: ReqId) -> MpiResult<()> {
    let job = state::with(|s| -> MpiResult<Option<Round>> {
        if let Some(r) = s.req_mut(id) {
            r.pending = 1;
        }
        drain(s);
        let Some(p) = s.rcoll.plans.map.get_mut(&plan.0) else {
            return err(c::MPI_ERR_INTERN, "MPI_Start of a persistent collective without its plan");
        };
        p.started += 1;
        if p.started < p.local {
            return Ok(None);
        }
        p.started = 0;
        p.round += 1;
        let (key, round) = (p.key, p.round);
        if let Some((what, send, recv, bytes)) = p.direct {
            let mem = CollMem {
                send,
                recv,
                bytes,
                keep: Vec::new(),
            };
            // SAFETY: the user's buffers, valid while the request lives (MPI's rule).
            unsafe { real::queue_private(s, key, round, what, mem, Err(id)) }?;
            return Ok(None);
        }
        let Some(rec) = p.rec.take() else {
            return err(c::MPI_ERR_INTERN, "persistent collective started while its last round runs");
        };
        Ok(Some((rec, p.me, key, round)))
    })??;
    let Some((rec, me, key, round)) = job else { return Ok(()) };
    // SAFETY: every local member started this round, so its buffers are ready and stay valid
    // until its request completes.
    let (what, mem) = unsafe { nbrec::combine(&rec, me) };
    let pid = plan.0;
    // SAFETY: `mem` is ours (`keep`), or points at nothing.
    state::with(|s| unsafe { real::queue_private(s, key, round, what, mem, Ok((pid, rec))) })?
}

/// A round of plan `plan` on its record finished with `buf` (from the progress engine):
/// distributes the result, completes the local members' requests and puts the record back
/// for the next round (under the same lock, so no start sees it missing).
pub fn finish(s: &mut State, plan: u64, rec: Box<Rec>, buf: Vec<u8>) {
    nbrec::finish(s, &rec, buf);
    if let Some(p) = s.rcoll.plans.map.get_mut(&plan) {
        p.rec = Some(rec);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case((0x11, 0, 8), 1)]
    #[case((0x11, 0, 8), 2)]
    #[case((0x1234_5601, 3, 4), 1)]
    fn private_keys_are_private_and_distinct(#[case] parent: CommKey, #[case] seq: u64) {
        let k = private_key(parent, seq);
        assert!(is_private(k));
        assert!(!is_private(parent));
        assert_ne!(k, private_key(parent, seq + 1));
        assert_eq!(k, private_key(parent, seq));
    }
}
