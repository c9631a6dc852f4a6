//! The blocking collectives' fast path on a team (`core::coll::team`: every member of the
//! communicator lives in this process), from the read side of the state (smp7).
//!
//! MPI_Barrier, MPI_Bcast, MPI_Reduce, MPI_Allreduce (predefined operations), MPI_Gather and
//! MPI_Scatter, MPI_Allgather
//! and MPI_Alltoall (the plain forms) find the caller's team through its own `Local` on the
//! read side (`state::shared`): no write side, which would stop every other worker's
//! readers, and no clone of the communicator or of the team's `Arc`, whose counts are lines
//! every member would write. The arguments become a `Part` handed to `Team::run`. Anything
//! unusual (the first call on the communicator, no team, a user operation, an argument to
//! report) answers None and takes the general path (`abi::coll::run`), which reports errors
//! as before. With one worker the lookup takes the write side (nobody else reads; it costs
//! less there). Threads of the program (`sched::foreign`) have no reader slot: they look the
//! team up on the write side and hold a clone.

use super::coll::{in_place, Sides};
use super::handles::{self as hd, DtHeld};
use crate::core::coll::op::OpKind;
use crate::core::coll::reduce::Reducer;
use crate::core::coll::team::{Blocks, Part, Team};
use crate::core::coll::Buf;
use crate::core::comm::{CommRef, TeamCell};
use crate::core::datatype::{self, DtRef};
use crate::core::error::MpiResult;
use crate::core::state;
use crate::sched;
use std::mem::ManuallyDrop;
use std::os::raw::{c_int, c_void};
use std::sync::Arc;

/// A team found for one call.
enum Held {
    /// Borrowed from the caller's communicator entry (a worker's task).
    Borrowed(*const Team),
    /// A clone (a thread of the program, on the write side).
    Owned(Arc<Team>),
}

impl Held {
    #[inline(always)]
    fn team(&self) -> &Team {
        match self {
            // SAFETY: the caller's own entry of the communicator holds an `Arc` of the team,
            // and only the caller can drop that entry (MPI_Comm_free, MPI_Finalize), which it
            // cannot do while it is inside this collective on the communicator (a thread of
            // the same rank doing so concurrently would break MPI's rule that collectives on
            // one communicator are ordered; such threads take the `Owned` form anyway).
            Held::Borrowed(p) => unsafe { &**p },
            Held::Owned(t) => t,
        }
    }
}

/// The caller's rank in communicator `comm_h` and its team, if the team was looked up
/// before (`team::of`, on the general path's first call) and MPI is active for the caller.
#[inline(always)]
fn team_of(comm_h: usize) -> Option<(i32, Held)> {
    fn pick(cm: &CommRef, borrow: bool) -> Option<(i32, Held)> {
        match &cm.team {
            TeamCell::Here(t) if borrow => Some((cm.rank, Held::Borrowed(Arc::as_ptr(t)))),
            TeamCell::Here(t) => Some((cm.rank, Held::Owned(t.clone()))),
            _ => None,
        }
    }
    let sub = sched::rank();
    if sub == usize::MAX || one_per_process() {
        return None;
    }
    // Several workers: the read side (None from `shared`: this thread has no reader slot, a
    // thread of the program). One worker: nobody else reads, and the write side costs one
    // atomic instruction less than the read side and the subrank's own lock (barrier at
    // 1x8, loaded machine: 0.70 µs with the read side, 0.68 with the write side).
    if sched::queue::workers() > 1 {
        if let Some(found) = state::shared(|sh| {
            let l = sh.local(sub)?;
            pick(super::p2p::local_comm(&l, comm_h)?, true)
        }) {
            return found;
        }
    }
    let borrow = sched::in_coroutine();
    state::with(|s| {
        hd::active(s, sub).ok()?;
        pick(hd::comm_in(s, sub, comm_h).ok()?, borrow)
    })
    .ok()
    .flatten()
}

/// One subrank per process (V = 1, one worker): a team then has one member (MPI_COMM_SELF and
/// its kind), which the general path serves; every other communicator spans processes, and
/// looking its team up would cost a state lock per call for nothing (callgrind: ~150 of the
/// ~2800 instructions of ours in a V=1 `MPI_Bcast`).
#[inline(always)]
fn one_per_process() -> bool {
    static ONE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ONE.get_or_init(|| crate::core::runtime::config().local() == 1)
}

/// An `Arc` for a call's `Part`: lent when `lend` (every datatype of the call is predefined,
/// `Call`), else a counted clone.
#[inline(always)]
fn arc(d: &DtHeld, lend: bool) -> DtRef {
    match d {
        DtHeld::Table(t) if lend => lent(t),
        d => d.arc(),
    }
}

/// A second `Arc` of a predefined datatype of the static table, made without adding to its
/// count: the count's cache line is then only read by the members of a call, instead of
/// written twice per member and call from every worker (the line moved between the cores
/// on every call at 1x2x4). Only made inside the `Part` of a `Call` that lends, which never
/// drops it; clones of it made meanwhile (the combiner's `Reducer::work`) take and give back
/// their own count.
#[inline(always)]
fn lent(d: &'static DtRef) -> DtRef {
    // SAFETY: the pointer comes from a live `Arc` of the table, a `static` that is never
    // dropped; the new `Arc` is never dropped (`Call::drop`), so the count it did not take is
    // never given back.
    unsafe { Arc::from_raw(Arc::as_ptr(d)) }
}

/// One call's arguments. A call that lends (`arc`) holds only lent datatypes and is
/// never dropped as a whole (its other fields own nothing: pointers, counts, the reduction's
/// operation); one that does not holds clones, dropped as usual.
struct Call {
    part: ManuallyDrop<Part>,
    lends: bool,
}

impl Call {
    #[inline(always)]
    fn new(part: Part, lends: bool) -> Call {
        Call {
            part: ManuallyDrop::new(part),
            lends,
        }
    }

    /// Runs the call on the team.
    #[inline(always)]
    fn run(&self, rank: i32, t: &Held) -> Option<MpiResult<()>> {
        // SAFETY: MPI requires the buffers to stay valid until the call returns, and every
        // member to make the same collective calls in the same order.
        Some(unsafe { t.team().run(rank, &self.part) })
    }
}

impl Drop for Call {
    #[inline(always)]
    fn drop(&mut self) {
        if !self.lends {
            // SAFETY: dropped once, here; its datatypes are clones (see `Call`).
            unsafe { ManuallyDrop::drop(&mut self.part) };
        }
    }
}

/// A count of either binding, checked.
#[inline(always)]
fn count(n: i64) -> Option<usize> {
    usize::try_from(n).ok()
}

/// MPI_Barrier.
/// Session 22: at one subrank per process (`team_of` refuses there) tested inline, so a V=1
/// call makes no call into the module only to be refused (coll14: ~40 instructions of a V=1
/// Bcast), as `abi::collsolo`'s wrappers test `solo::on()`.
#[inline(always)]
pub(super) fn barrier(comm_h: usize) -> Option<MpiResult<()>> {
    if one_per_process() {
        return None;
    }
    barrier_on(comm_h)
}

fn barrier_on(comm_h: usize) -> Option<MpiResult<()>> {
    let (rank, t) = team_of(comm_h)?;
    Call::new(Part::Barrier, true).run(rank, &t)
}

/// MPI_Bcast.
/// Session 22: tested inline at one subrank per process (`barrier`).
#[inline(always)]
pub(super) fn bcast(p: *mut c_void, count_: i64, dt: usize, root: c_int, comm_h: usize) -> Option<MpiResult<()>> {
    if one_per_process() {
        return None;
    }
    bcast_on(p, count_, dt, root, comm_h)
}

fn bcast_on(p: *mut c_void, count_: i64, dt: usize, root: c_int, comm_h: usize) -> Option<MpiResult<()>> {
    let (rank, t) = team_of(comm_h)?;
    let (n, d) = (count(count_)?, DtHeld::of(dt).ok()?);
    if !(0..t.team().size() as i32).contains(&root) || hd::buffer(p as *const u8, n, &d).is_err() {
        return None;
    }
    let lend = d.predefined();
    Call::new(
        Part::Bcast {
            buf: Buf::new(p as *mut u8, n, arc(&d, lend)),
            root,
        },
        lend,
    )
    .run(rank, &t)
}

/// MPI_Reduce (`root` Some) or MPI_Allreduce with a predefined operation.
/// Session 22: tested inline at one subrank per process (`barrier`).
#[inline(always)]
pub(super) fn reduce(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    count_: i64,
    dt: usize,
    op: usize,
    root: Option<c_int>,
    comm_h: usize,
) -> Option<MpiResult<()>> {
    if one_per_process() {
        return None;
    }
    reduce_on(sbuf, rbuf, count_, dt, op, root, comm_h)
}

fn reduce_on(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    count_: i64,
    dt: usize,
    op: usize,
    root: Option<c_int>,
    comm_h: usize,
) -> Option<MpiResult<()>> {
    // User operations take the general path.
    let op = OpKind::from_handle(op)?;
    let (rank, t) = team_of(comm_h)?;
    let (n, d) = (count(count_)?, DtHeld::of(dt).ok()?);
    let at_root = root.is_none_or(|r| r == rank);
    if root.is_some_and(|r| !(0..t.team().size() as i32).contains(&r))
        || (in_place(sbuf) && !at_root)
        || hd::buffer(if in_place(sbuf) { rbuf } else { sbuf } as *const u8, n, &d).is_err()
        || (at_root && hd::buffer(rbuf as *const u8, n, &d).is_err())
    {
        return None;
    }
    let lend = d.predefined();
    // The last step that may fail: nothing lent is dropped before the call holds it.
    let red = Reducer::builtin(op, &d, |b| match datatype::predefined_arc(b.handle()) {
        Some(w) if lend => Some(lent(w)),
        _ => datatype::lookup(b.handle()).ok(),
    })?;
    Call::new(
        Part::Reduce {
            send: sbuf as *const u8,
            recv: rbuf as *mut u8,
            count: n,
            dt: arc(&d, lend),
            red,
            root,
        },
        lend,
    )
    .run(rank, &t)
}

/// MPI_Allgather (`all`) or MPI_Alltoall, equal blocks.
/// Session 22: tested inline at one subrank per process (`barrier`).
#[inline(always)]
pub(super) fn exchange(x: &Sides, comm_h: usize, all: bool) -> Option<MpiResult<()>> {
    if one_per_process() {
        return None;
    }
    exchange_on(x, comm_h, all)
}

fn exchange_on(x: &Sides, comm_h: usize, all: bool) -> Option<MpiResult<()>> {
    let (sbuf, scount, sdt, rbuf, rcount, rdt) = x.unpack();
    let (rank, t) = team_of(comm_h)?;
    let n = t.team().size();
    let (rn, rd) = (count(rcount)?, DtHeld::of(rdt).ok()?);
    hd::buffer(rbuf as *const u8, rn, &rd).ok()?;
    // The send side (None in place: the data is in the receive buffer).
    let send = if in_place(sbuf) {
        None
    } else {
        let (sn, sd) = (count(scount)?, DtHeld::of(sdt).ok()?);
        hd::buffer(sbuf as *const u8, sn, &sd).ok()?;
        Some((sn, sd))
    };
    let lend = rd.predefined() && send.as_ref().is_none_or(|(_, d)| d.predefined());
    let recvs = Blocks::Equal {
        ptr: rbuf as *mut u8,
        count: rn,
        dt: arc(&rd, lend),
        n,
    };
    let part = match send {
        None if all => Part::Allgather { send: None, parts: recvs },
        None => Part::Alltoall { sends: None, recvs },
        Some((sn, sd)) if all => Part::Allgather {
            send: Some(Buf::new(sbuf as *mut u8, sn, arc(&sd, lend))),
            parts: recvs,
        },
        Some((sn, sd)) => Part::Alltoall {
            sends: Some(Blocks::Equal {
                ptr: sbuf as *mut u8,
                count: sn,
                dt: arc(&sd, lend),
                n,
            }),
            recvs,
        },
    };
    Call::new(part, lend).run(rank, &t)
}

/// MPI_Gather (`gather`) or MPI_Scatter, equal blocks (session 20: they took the general path
/// at V > 1, whose communicator lookup, argument preparation and block list cost a 1x8 Gather
/// of 8 bytes about 3500 of its 8900 instructions, callgrind).
/// Session 22: tested inline at one subrank per process (`barrier`).
#[inline(always)]
pub(super) fn rooted(x: &Sides, root: c_int, comm_h: usize, gather: bool) -> Option<MpiResult<()>> {
    if one_per_process() {
        return None;
    }
    rooted_on(x, root, comm_h, gather)
}

fn rooted_on(x: &Sides, root: c_int, comm_h: usize, gather: bool) -> Option<MpiResult<()>> {
    let (sbuf, scount, sdt, rbuf, rcount, rdt) = x.unpack();
    let (rank, t) = team_of(comm_h)?;
    let n = t.team().size();
    if !(0..n as i32).contains(&root) {
        return None;
    }
    let at_root = root == rank;
    // The side with one block per rank (significant at the root only) and the side with the
    // caller's own block.
    let (many, mcount, mdt, one, ocount, odt) = if gather {
        (rbuf, rcount, rdt, sbuf as *mut c_void, scount, sdt)
    } else {
        (sbuf as *mut c_void, scount, sdt, rbuf, rcount, rdt)
    };
    // MPI_IN_PLACE is the root's only (elsewhere the general path reports it): None there.
    let own = match (at_root, in_place(one)) {
        (true, true) => None,
        (false, true) => return None,
        _ => {
            let (k, d) = (count(ocount)?, DtHeld::of(odt).ok()?);
            hd::buffer(one as *const u8, k, &d).ok()?;
            Some((k, d))
        }
    };
    let blocks = if at_root {
        let (k, d) = (count(mcount)?, DtHeld::of(mdt).ok()?);
        hd::buffer(many as *const u8, k, &d).ok()?;
        Some((k, d))
    } else {
        None
    };
    let lend = own.as_ref().is_none_or(|(_, d)| d.predefined()) && blocks.as_ref().is_none_or(|(_, d)| d.predefined());
    // Away from the root an empty list (it owns nothing: a call that lends may hold it).
    let parts = match blocks {
        Some((k, d)) => Blocks::Equal {
            ptr: many as *mut u8,
            count: k,
            dt: arc(&d, lend),
            n,
        },
        None => Blocks::List(Vec::new()),
    };
    let own = own.map(|(k, d)| Buf::new(one as *mut u8, k, arc(&d, lend)));
    let part = if gather {
        Part::Gather { send: own, parts, root }
    } else {
        Part::Scatter { parts, recv: own, root }
    };
    Call::new(part, lend).run(rank, &t)
}
