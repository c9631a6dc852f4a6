//! Collective exports. Each collective has one `prep_*` function that checks the arguments
//! (and resolves MPI_IN_PLACE and the caller's part in a rooted collective) and returns the
//! work as a job; the blocking form runs the job at once, the nonblocking form (`MPI_I*`) runs
//! it in a helper task that progresses while the rank computes and completes the request when
//! done, and the persistent form (`*_init`) keeps it in an inactive request that every
//! `MPI_Start` runs like a nonblocking one. `coll_family!` makes all of them, in the `int` and
//! the large-count (`_c`) bindings, from one argument list.

use super::consts as c;
use super::handles as hd;
use crate::core::coll::reduce::Reducer;
use crate::core::coll::team::{self, Blocks, Part};
use crate::core::coll::teamcall;
use crate::core::coll::{hiergather, nbc, nbrec, persist, real, solo, step};
use crate::core::coll::{Buf, Coll, CollJob, CollOp};
use crate::core::comm::{comm_index, CommRef, TeamCell};
use crate::core::datatype::DtRef;
use crate::core::error::{err, MpiResult};
use crate::core::request::{Persist, ReqId};
use crate::core::state;
use std::cell::Cell;
use std::os::raw::{c_int, c_void};
use std::rc::Rc;
use std::sync::Arc;

/// A collective call checked and bound to its arguments, ready to run.
pub(crate) struct Prepared {
    sub: usize,
    cm: CommRef,
    work: Work,
    /// Whether the call may run as one real collective among processes (`core::coll::real`):
    /// decided from arguments every rank passes alike, so all processes agree.
    real: bool,
    /// The call has equal blocks (not a v/w form), for `nbc::eligible`.
    equal: bool,
}

/// What a prepared call does: a job over point-to-point, or the arguments of a collective
/// that a team of subranks of one process can run in shared memory (`core::team`) and that
/// otherwise becomes a job (`job_of`).
enum Work {
    Job(CollJob),
    Part(Part),
}

impl Prepared {
    pub(crate) fn new(sub: usize, cm: CommRef, job: CollJob) -> Prepared {
        Prepared {
            sub,
            cm,
            work: Work::Job(job),
            real: false,
            equal: false,
        }
    }
    fn part(sub: usize, cm: CommRef, part: Part) -> Prepared {
        Prepared {
            sub,
            cm,
            work: Work::Part(part),
            real: false,
            equal: true,
        }
    }
    fn real(mut self, yes: bool) -> Prepared {
        self.real = yes;
        self
    }
    fn equal(mut self, yes: bool) -> Prepared {
        self.equal = yes;
        self
    }
}

/// Session 20: the communicator argument of one collective call. For the blocking form,
/// `At::now`: the look-up that checks the communicator also numbers the call (its
/// `coll_seq`), in one state lock, when the communicator's route is known to be the general
/// one over point-to-point (its team looked up and absent: members on several processes);
/// the number then goes to `run`, which needs no second lock (coll11: ~210 instructions of
/// a V=1 call in `Coll::new`). A call whose arguments fail a later check gives its number
/// back when the `At` is dropped unused, so the failed call leaves the count as it was.
pub(crate) struct At {
    pub(crate) h: usize,
    now: bool,
    /// (subrank, number) taken by the look-up and not yet used by `run`.
    taken: Cell<Option<(usize, u64)>>,
}

impl At {
    /// The communicator of a blocking call.
    pub(crate) fn now(h: usize) -> At {
        At {
            h,
            now: true,
            taken: Cell::new(None),
        }
    }
    /// The communicator of a nonblocking or persistent call (numbered when it starts).
    pub(crate) fn later(h: usize) -> At {
        At {
            h,
            now: false,
            taken: Cell::new(None),
        }
    }

    /// The running subrank and its view of the communicator (`handles::comm`); numbers a
    /// blocking call as described above.
    pub(crate) fn comm(&self) -> MpiResult<(usize, CommRef)> {
        if !self.now {
            return hd::comm(self.h);
        }
        let sub = hd::me()?;
        let r = state::with_hot(|s| {
            hd::active(s, sub)?;
            match comm_index(self.h).and_then(|i| s.locals[sub].comms.get_mut(i)) {
                Some(Some(cm)) => {
                    if matches!(cm.team, TeamCell::Absent) {
                        cm.coll_seq += 1;
                        self.taken.set(Some((sub, cm.coll_seq)));
                    }
                    Ok(cm.clone())
                }
                _ => hd::comm_in(s, sub, self.h).cloned(),
            }
        });
        match r {
            Ok(x) => Ok((sub, x?)),
            Err(_) => err(c::MPI_ERR_OTHER, "MPI is not initialized (call MPI_Init first)"),
        }
    }

    /// Whether the look-up numbered the call (its communicator's route is the general one:
    /// `TeamCell::Absent`).
    #[inline(always)]
    fn numbered(&self) -> bool {
        self.taken.get().is_some()
    }

    /// The number the look-up took, now used.
    fn take(&self) -> Option<u64> {
        self.taken.take().map(|(_, seq)| seq)
    }

    /// Gives back the number the look-up took (a call that numbers itself elsewhere, or
    /// fails a later check).
    /// Session 29: the check inlined into every caller (each blocking call drops an `At`),
    /// the rare return of the number kept apart: left to the compiler, the whole function
    /// went out of line in some builds and cost some 50 instructions per blocking call.
    #[inline(always)]
    fn give_back(&self) {
        if let Some((sub, seq)) = self.taken.take() {
            Self::unnumber(self.h, sub, seq);
        }
    }

    /// Undoes number `seq` of communicator `h` for subrank `sub` if it is still the last.
    #[inline(never)]
    fn unnumber(h: usize, sub: usize, seq: u64) {
        let _ = state::with(|s| {
            if let Some(Some(cm)) = comm_index(h).and_then(|i| s.locals[sub].comms.get_mut(i)) {
                if cm.coll_seq == seq {
                    cm.coll_seq -= 1;
                }
            }
        });
    }
}

impl Drop for At {
    fn drop(&mut self) {
        self.give_back();
    }
}

#[inline(always)]
pub(super) fn in_place(p: *const c_void) -> bool {
    p as usize == c::MPI_IN_PLACE_ADDR
}

/// Session 18: the two sides of an exchange with one block per rank (MPI_Allgather,
/// MPI_Alltoall, MPI_Gather, MPI_Scatter) as the program passed them, for the blocking fast
/// paths (`collsolo`, `collteam`), which read them each in their own way (bytes for the real
/// MPI, `Part`s for the team).
#[derive(Clone, Copy)]
pub(super) struct Sides {
    pub(super) sbuf: *const c_void,
    pub(super) scount: i64,
    pub(super) sdt: usize,
    pub(super) rbuf: *mut c_void,
    pub(super) rcount: i64,
    pub(super) rdt: usize,
}

impl Sides {
    /// (send buffer, count, type, receive buffer, count, type).
    #[inline(always)]
    pub(super) fn unpack(&self) -> (*const c_void, i64, usize, *mut c_void, i64, usize) {
        (self.sbuf, self.scount, self.sdt, self.rbuf, self.rcount, self.rdt)
    }
}

/// MPI_IN_PLACE is not allowed on inter-communicators.
fn not_in_place(cm: &CommRef, p: *const c_void) -> MpiResult<()> {
    if cm.is_inter() && in_place(p) {
        return err(c::MPI_ERR_BUFFER, "MPI_IN_PLACE is not allowed on an inter-communicator");
    }
    Ok(())
}

/// A count of either binding (`int` or `MPI_Count`), widened.
pub(crate) fn wide<T: Into<i64>>(n: T) -> i64 {
    n.into()
}

fn typed(buf: *const c_void, count: i64, dt: usize) -> MpiResult<(usize, DtRef)> {
    let n = hd::count(count)?;
    let d = hd::dtype(dt)?;
    hd::buffer(buf as *const u8, n, &d)?;
    Ok((n, d))
}

/// `typed` for the second side of an exchange: when it names the datatype handle `seen` of
/// the side checked first (`Some((handle, type))`), that look-up serves (same handle, same
/// answer: session 21, one `handles::dtype` of ~60 instructions less per Allgather, Alltoall,
/// and rooted Gather/Scatter call); the count and buffer are checked as `typed` does.
fn typed_as(buf: *const c_void, count: i64, dt: usize, seen: Option<(usize, &DtRef)>) -> MpiResult<(usize, DtRef)> {
    match seen {
        Some((h, d)) if h == dt => {
            let n = hd::count(count)?;
            hd::buffer(buf as *const u8, n, d)?;
            Ok((n, d.clone()))
        }
        _ => typed(buf, count, dt),
    }
}

fn send_buf(sbuf: *const c_void, scount: i64, sdt: usize) -> MpiResult<Buf> {
    let (n, d) = typed(sbuf, scount, sdt)?;
    Ok(Buf::new(sbuf as *mut u8, n, d))
}

/// How a collective runs: now, in the background (`MPI_I*`), or at each `MPI_Start`
/// (`*_init`, with its info argument).
pub(crate) enum Mode {
    Now,
    Start(*mut usize),
    Init(usize, *mut usize),
}

/// Runs a prepared collective as `mode` says; the nonblocking and persistent forms store the
/// request in `*req`.
///
/// Session 22: it takes the checks' result as it is (the `?` in each export moved the whole
/// `Prepared` out of its `Result` first: a `memcpy` of ~29 instructions per call).
pub(crate) unsafe fn run(p: MpiResult<Prepared>, at: &At, mode: Mode) -> MpiResult<()> {
    let comm_h = at.h;
    let Prepared {
        sub,
        cm,
        work,
        real,
        equal,
    } = p?;
    // Session 22: a blocking call numbered by its look-up was on a communicator whose team
    // was looked up and found absent (`At::comm`): `team::of` would only say so again, and
    // the work runs where it lies (no rebinding of the whole `Work`).
    if matches!(mode, Mode::Now) && at.numbered() {
        // SAFETY: the caller's contract.
        return unsafe { now(sub, cm, work, real, equal, at) };
    }
    let work = match work {
        Work::Part(part) => match team::of(sub, &cm, comm_h)? {
            Some(t) => return run_team(&t, sub, &cm, comm_h, part, mode),
            None => Work::Part(part),
        },
        w => w,
    };
    let (req, persistent) = match mode {
        // SAFETY: the caller's contract.
        Mode::Now => return unsafe { now(sub, cm, work, real, equal, at) },
        Mode::Start(req) => (req, false),
        Mode::Init(info, req) => {
            super::info::check(info)?;
            (req, true)
        }
    };
    if req.is_null() {
        return err(c::MPI_ERR_ARG, "null request pointer");
    }
    // coll7: at several members per process, the two-level call in one pass (`nbrec::fast`).
    let work = match work {
        // SAFETY: MPI requires the buffers to stay valid until the request completes.
        Work::Part(p) if !persistent => match unsafe { nbrec::fast(sub, comm_h, &cm, p, equal) } {
            Ok(r) => {
                *req = r? as usize;
                return Ok(());
            }
            Err(p) => Work::Part(p),
        },
        w => w,
    };
    // coll5: at one member per process on an idle twin, the whole call in one pass.
    if !persistent {
        if let Work::Part(p) = &work {
            // SAFETY: MPI requires the buffers to stay valid until the request completes.
            if let Some(id) = unsafe { nbc::fast(sub, comm_h, p, equal) } {
                *req = id as usize;
                return Ok(());
            }
        }
    }
    // A nonblocking call at one member per process goes to the real MPI's nonblocking
    // collective without a helper task where it can (`nbc`); the choice depends only on
    // what every rank passes alike.
    let direct = !persistent && matches!(&work, Work::Part(p) if nbc::eligible(&cm, p, equal));
    // At several members per process, the two-level schedule of `nbrec` (the same choice on
    // every member and every process).
    let twolevel = !persistent && !direct && matches!(&work, Work::Part(p) if nbrec::eligible(&cm, p, equal));
    // A persistent call keeps its call number for every start, and starts need not come in
    // the same order on every process: it stays on point-to-point.
    let coll = real::enrol(Coll::new(sub, &cm, comm_h)?, (real || direct || twolevel) && !persistent)?;
    let id = state::with(|s| s.new_request(sub, comm_h))?;
    if twolevel && coll.real {
        if let Work::Part(p) = work {
            // The join marks the request as awaiting its one event (coll7: under its lock).
            *req = id as usize;
            crate::core::background::wanted();
            // SAFETY: MPI requires the buffers to stay valid until the request completes.
            return unsafe { nbrec::join(&coll, p, id, equal) };
        }
        unreachable!("a two-level call has arguments");
    }
    if direct && coll.real {
        if let Work::Part(p) = &work {
            state::with(|s| {
                if let Some(r) = s.req_mut(id) {
                    r.pending = 1;
                }
            })?;
            // SAFETY: MPI requires the buffers to stay valid until the request completes.
            if let Some(res) = unsafe { nbc::start(&coll, p, id) } {
                *req = id as usize;
                crate::core::background::wanted();
                return res;
            }
        }
    }
    // coll5: a persistent call on a communicator with a twin is planned once (`persist`).
    let work = match work {
        Work::Part(p) if persistent && persist::eligible(&cm, &p, equal) => {
            // SAFETY: MPI requires the buffers to stay valid while the request lives, and
            // every member to initialise its collectives in the same order.
            match unsafe { persist::init(&coll, p, id) }? {
                Ok(plan) => {
                    let job: CollJob = Box::new(|_: &Coll| err(c::MPI_ERR_INTERN, "a planned persistent collective has no job"));
                    let op = Rc::new(CollOp {
                        coll,
                        job,
                        plan: Some(plan),
                    });
                    state::with(|s| {
                        if let Some(r) = s.req_mut(id) {
                            r.persist = Some(Box::new(Persist::Coll(op)));
                            r.active = false;
                        }
                    })?;
                    *req = id as usize;
                    return Ok(());
                }
                Err(p) => Work::Part(p),
            }
        }
        w => w,
    };
    let job = match work {
        Work::Job(j) => j,
        Work::Part(p) => job_of(p),
    };
    let op = Rc::new(CollOp { coll, job, plan: None });
    if persistent {
        state::with(|s| {
            if let Some(r) = s.req_mut(id) {
                r.persist = Some(Box::new(Persist::Coll(op)));
                r.active = false;
            }
        })?;
    } else {
        launch(id, op)?;
    }
    *req = id as usize;
    Ok(())
}

/// The blocking form of `run`: the call numbered (by its look-up, `At::comm`, or here), the
/// real MPI's collective where it fits, request-free steps where allowed, then the work.
///
/// # Safety
/// MPI requires the buffers to stay valid until the call returns.
#[inline(always)]
unsafe fn now(sub: usize, cm: CommRef, work: Work, real: bool, equal: bool, at: &At) -> MpiResult<()> {
    let comm_h = at.h;
    // Session 28: a small Alltoall at several members per process as its record and a wait.
    if let Work::Part(p) = &work {
        if by_record(&cm, p, equal) {
            at.give_back();
            let Work::Part(p) = work else { unreachable!("matched above") };
            // SAFETY: the caller's contract; the call returns after the wait.
            return unsafe { record_now(sub, cm, p, equal, comm_h) };
        }
    }
    // Session 15: at one subrank per process, the real MPI's blocking collective.
    let solo = solo::on() && matches!(&work, Work::Part(p) if solo_fits(&cm, p, equal));
    // Session 20: numbered by the look-up when the route was known (`At`).
    let mut coll = match at.take() {
        Some(seq) => Coll::numbered(sub, cm, comm_h, seq),
        None => Coll::new(sub, &cm, comm_h)?,
    };
    // Session 22: moved through `enrol` only when eligible (the move of the whole `Coll` was
    // a `memcpy` of ~29 instructions per V=1 call).
    if real || solo {
        coll = real::enrol(coll, true)?;
        coll.solo = solo && coll.real;
    }
    // Session 19: point-to-point rounds without request objects (`step`).
    coll.quick = step::allowed(sub);
    // Session 29: the work lent, not moved out of `work` (the move copied the whole `Part`).
    match &work {
        Work::Job(j) => j(&coll),
        // SAFETY: the caller's contract.
        Work::Part(p) => unsafe { exec(&coll, p) },
    }
}

/// Session 28: most bytes per block of a blocking Alltoall at several members per process
/// that runs as its nonblocking record and a wait (`record_now`), not over point-to-point.
/// The point-to-point Alltoall sends (n·V)² messages (memory copies between subranks of one
/// process, real messages between processes, each with a request); the record packs every
/// member's blocks per process and makes one real exchange, which its packing outweighs as
/// blocks grow. Callgrind at 2x4 (`bench/nbc-callgrind.sh v4 alltoall`, process 1, per
/// iteration of IMB's loop, the call's instructions / the whole program's), point-to-point
/// against this: 8 B 48.4k / 96.1k against 26.0k / 65.4k, 32 B 47.3k / 88.0k against 29.0k /
/// 56.5k, 128 B 48.6k / 89.0k against 38.5k / 46.9k, 256 B 51.8k / 91.7k against 53.9k /
/// 94.9k (even). Decided from the block size, which every rank passes alike.
const ALLTOALL_RECORD_MAX: usize = 128;

/// Session 28: whether blocking call `p` runs as `record_now`: an Alltoall of equal blocks up
/// to `ALLTOALL_RECORD_MAX` bytes on a communicator with several members on some process
/// that the nonblocking record path serves (`nbrec::eligible`: the same rule as `MPI_Ialltoall`,
/// so every rank decides alike from what all pass alike).
fn by_record(cm: &CommRef, p: &Part, equal: bool) -> bool {
    let small = matches!(p, Part::Alltoall { recvs: Blocks::Equal { count, dt, .. }, .. } if count * dt.size <= ALLTOALL_RECORD_MAX);
    small && equal && crate::core::runtime::config().local() > 1 && !real::one_per_process(cm) && nbrec::eligible(cm, p, equal)
}

/// Session 28: blocking call `p` (`by_record`) as the nonblocking call's two-level record
/// (`nbrec`, as `run` starts `MPI_Ialltoall`) and a wait for it.
///
/// # Safety
/// MPI requires the buffers to stay valid until the call returns (it returns after the wait).
unsafe fn record_now(sub: usize, cm: CommRef, p: Part, equal: bool, comm_h: usize) -> MpiResult<()> {
    // SAFETY (both): the buffers stay valid until the wait below returns.
    let id = match unsafe { nbrec::fast(sub, comm_h, &cm, p, equal) } {
        Ok(r) => r?,
        Err(p) => {
            let coll = real::enrol(Coll::new(sub, &cm, comm_h)?, true)?;
            if !coll.real {
                // SAFETY: as above.
                return unsafe { exec(&coll, &p) };
            }
            let id = state::with(|s| s.new_request(sub, comm_h))?;
            crate::core::background::wanted();
            // SAFETY: as above.
            unsafe { nbrec::join(&coll, p, id, equal) }?;
            id
        }
    };
    let st = crate::core::p2p::blocking::wait(id)?;
    nbrec::after_wait();
    match st.error {
        c::MPI_SUCCESS => Ok(()),
        e => err(e, "the alltoall's exchange between processes failed"),
    }
}

/// Whether a blocking call with arguments `p` runs as the real MPI's blocking collective at
/// one subrank per process (`core::coll::solo`): the kinds whose inter-process level the real
/// MPI can run as a whole (reductions with a predefined operation on a C type it knows, equal
/// blocks), on an intra-communicator holding one member per process. Decided from what every
/// rank passes alike (the real collective of the calls on other processes must match).
fn solo_fits(cm: &CommRef, p: &Part, equal: bool) -> bool {
    if cm.is_inter() {
        return false;
    }
    match p {
        Part::Barrier | Part::Bcast { .. } => true,
        Part::Reduce { red, .. } => real::reducible(red),
        // Session 16: MPICH's blocking Reduce_scatter loses to our path (coll4: one real
        // allreduce, then the own block): 2x1, quiet, 8 B 1.43 against 1.11 µs, 64 KiB 86.4
        // against 43.6 (bench/RESULTS.md, "Session 16: V=1 A/B").
        Part::ReduceScatter { .. } => false,
        // `equal` is not set for Allgatherv: its blocks say.
        Part::Allgather { parts, .. } => matches!(parts, Blocks::Equal { .. }) && real::one_per_process(cm),
        Part::Alltoall { .. } | Part::Gather { .. } | Part::Scatter { .. } => equal && real::one_per_process(cm),
        _ => false,
    }
}

/// Runs a collective among the subranks of one process (`team`) in shared memory: the
/// blocking form at once, the nonblocking and persistent ones through a shared record of the
/// call (`teamcall`), without a helper task.
unsafe fn run_team(t: &Arc<team::Team>, sub: usize, cm: &CommRef, comm_h: usize, part: Part, mode: Mode) -> MpiResult<()> {
    let rank = cm.rank as usize;
    let (req, persistent) = match mode {
        // SAFETY: MPI requires the buffers to stay valid until the call returns, and every
        // member to make the same collective calls in the same order.
        Mode::Now => return t.run(cm.rank, &part),
        Mode::Start(req) => (req, false),
        Mode::Init(info, req) => {
            super::info::check(info)?;
            (req, true)
        }
    };
    if req.is_null() {
        return err(c::MPI_ERR_ARG, "null request pointer");
    }
    let id = state::with(|s| s.new_request(sub, comm_h))?;
    *req = id as usize;
    if persistent {
        // SAFETY: MPI requires the buffers to stay valid while the request lives, and every
        // member to initialise its collectives in the same order.
        let call = teamcall::init(t, rank, part, id);
        state::with(|s| {
            if let Some(r) = s.req_mut(id) {
                r.persist = Some(Box::new(Persist::Team(call)));
                r.active = false;
            }
        })
    } else {
        state::with(|s| {
            if let Some(r) = s.req_mut(id) {
                r.pending = 1;
            }
        })?;
        // SAFETY: MPI requires the buffers to stay valid until the request completes, and
        // every member to start its collectives in the same order.
        teamcall::start(t, rank, part, id)
    }
}

/// Runs `op` in a helper task that completes request `id` when it is done; a planned
/// persistent call (`MPI_Start`, coll5) runs its plan instead.
pub(crate) fn launch(id: ReqId, op: Rc<CollOp>) -> MpiResult<()> {
    if let Some(plan) = &op.plan {
        crate::core::background::wanted();
        return persist::start(plan, id);
    }
    state::with(|s| {
        if let Some(r) = s.req_mut(id) {
            r.pending = 1;
        }
    })?;
    let body = Box::new(move || {
        let res = (op.job)(&op.coll);
        let _ = state::with(|s| {
            if let (Err(e), Some(r)) = (&res, s.req_mut(id)) {
                r.status.error = e.class;
            }
            s.event_done(id);
        });
        0
    });
    if let Err(e) = crate::sched::worker::spawn(body) {
        return err(c::MPI_ERR_NO_MEM, format!("cannot start a nonblocking collective: {e}"));
    }
    crate::core::background::wanted();
    // Let it run up to its first wait before the caller goes on computing: its first
    // messages are posted, or its real collective started, and the progress engine (the
    // background thread during a long compute phase) moves them meanwhile. Queued behind
    // the caller, it would start only at the caller's next MPI call, usually the wait.
    crate::sched::yield_now();
    Ok(())
}

/// The job over point-to-point (`core::coll`, `hier`, `realcoll`) of a call's arguments, for
/// a helper task or a persistent call's starts. Session 18: an exchange's blocks are made
/// into a list once here, not at every start (`exec` makes them per call, for the blocking
/// call that runs once).
fn job_of(p: Part) -> CollJob {
    // SAFETY (each job): MPI requires the buffers to stay valid until the collective completes.
    match p {
        Part::Gather { send, parts, root } => {
            let parts = parts.into_vec();
            Box::new(move |c: &Coll| unsafe { c.gatherv(send.as_ref(), &parts, root) })
        }
        Part::Scatter { parts, recv, root } => {
            let parts = parts.into_vec();
            Box::new(move |c: &Coll| unsafe { c.scatterv(&parts, recv.as_ref(), root) })
        }
        Part::Allgather { send, parts } => {
            let parts = parts.into_vec();
            Box::new(move |c: &Coll| unsafe { c.allgatherv(send.as_ref(), &parts) })
        }
        Part::Alltoall { sends, recvs } => {
            let (sends, recvs) = (sends.map(Blocks::into_vec), recvs.into_vec());
            Box::new(move |c: &Coll| unsafe { alltoall(c, sends.as_deref(), &recvs) })
        }
        p => Box::new(move |c: &Coll| unsafe { exec(c, &p) }),
    }
}

/// An alltoall over point-to-point; `sends` None: in place (from a snapshot of `recvs`).
///
/// # Safety
/// As `Coll::alltoallv`.
unsafe fn alltoall(c: &Coll, sends: Option<&[Buf]>, recvs: &[Buf]) -> MpiResult<()> {
    // SAFETY (both): the caller's contract.
    match sends {
        Some(sends) => unsafe { c.alltoallv(sends, recvs) },
        None => {
            let (_keep, sends) = team::snapshot(recvs);
            unsafe { c.alltoallv(&sends, recvs) }
        }
    }
}

/// Runs call `c` with arguments `p` over point-to-point (`core::coll`, `hier`, `realcoll`);
/// the blocking form calls it in place, without boxing a job.
///
/// # Safety
/// MPI requires the buffers to stay valid until the collective completes.
unsafe fn exec(c: &Coll, p: &Part) -> MpiResult<()> {
    // SAFETY (each arm): the caller's contract.
    unsafe {
        match p {
            Part::Idle => Ok(()),
            Part::Barrier => c.barrier(),
            Part::Bcast { buf, root } => c.bcast(buf, *root),
            Part::Reduce {
                send,
                recv,
                count,
                dt,
                red,
                root,
            } => match root {
                Some(root) => c.reduce(*send, *recv, *count, dt, red, *root),
                None => c.allreduce(*send, *recv, *count, dt, red),
            },
            Part::Gather { send, parts, root } => listed(parts, |ps| c.gatherv(send.as_ref(), ps, *root)),
            Part::Scatter { parts, recv, root } => listed(parts, |ps| c.scatterv(ps, recv.as_ref(), *root)),
            // Session 22: the two-level allgather reads the blocks as they are described.
            Part::Allgather { send, parts } => match hiergather::allgather(c, send.as_ref(), parts) {
                Some(r) => r,
                None => listed(parts, |ps| c.allgatherv(send.as_ref(), ps)),
            },
            Part::Alltoall { sends: Some(sends), recvs } => listed(sends, |ss| listed(recvs, |rs| alltoall(c, Some(ss), rs))),
            Part::Alltoall { sends: None, recvs } => listed(recvs, |rs| alltoall(c, None, rs)),
            Part::ReduceScatter {
                send,
                recv,
                counts,
                dt,
                red,
            } => c.reduce_scatter(*send, *recv, counts, dt, red),
            Part::Scan {
                send,
                recv,
                count,
                dt,
                red,
                exclusive,
            } => c.scan(*send, *recv, *count, dt, red, *exclusive),
        }
    }
}

/// Calls `f` with `b`'s blocks as a list: a list as it is; equal blocks made into `Buf`s on
/// the stack up to 8 of them (session 20: the blocking call's per-call `Vec`, coll11: ~150
/// instructions of a V=1 Allgather, and its free), in a `Vec` beyond.
fn listed<R>(b: &Blocks, f: impl FnOnce(&[Buf]) -> R) -> R {
    let (ptr, count, dt, n) = match b {
        Blocks::List(v) => return f(v),
        Blocks::Equal { ptr, count, dt, n } => (*ptr, *count, dt, *n),
    };
    // Block i (as `Blocks::to_vec` makes it: `Buf::at` of the first block); the slots past
    // `n` are never read. Session 22: made directly, one `DtRef` clone per block (`at` on a
    // temporary `Buf` cloned it twice and dropped one).
    let at = |i: usize| Buf::new(ptr.wrapping_offset((i * count) as isize * dt.extent), count, dt.clone());
    match n {
        0..=2 => f(&std::array::from_fn::<Buf, 2, _>(at)[..n]),
        3..=4 => f(&std::array::from_fn::<Buf, 4, _>(at)[..n]),
        5..=8 => f(&std::array::from_fn::<Buf, 8, _>(at)[..n]),
        _ => f(&b.to_vec()),
    }
}

/// A C array of counts or displacements: `int` in the classic binding, `MPI_Count` or
/// `MPI_Aint` (64 bits) in the large-count one.
#[derive(Clone, Copy)]
pub(crate) struct CArr {
    p: *const c_void,
    wide: bool,
}

impl CArr {
    pub(crate) fn of<T>(p: *const T) -> CArr {
        CArr {
            p: p as *const c_void,
            wide: std::mem::size_of::<T>() == 8,
        }
    }

    /// Its two entries (a two-member communicator's array), without allocating; None when
    /// it is null.
    ///
    /// # Safety
    /// The array must have two entries (the standard obliges the caller).
    pub(crate) unsafe fn two(&self) -> Option<[i64; 2]> {
        if self.p.is_null() {
            return None;
        }
        // SAFETY: the caller's contract: two entries of the width the binding gives.
        Some(unsafe {
            if self.wide {
                std::ptr::read_unaligned(self.p as *const [i64; 2])
            } else {
                let a = std::ptr::read_unaligned(self.p as *const [i32; 2]);
                [a[0] as i64, a[1] as i64]
            }
        })
    }

    /// Its first `n` entries.
    ///
    /// # Safety
    /// The array must have `n` entries (the standard obliges the caller).
    pub(crate) unsafe fn read(self, n: usize) -> MpiResult<Vec<i64>> {
        if n == 0 {
            return Ok(Vec::new());
        }
        if self.p.is_null() {
            return err(c::MPI_ERR_ARG, "null array argument");
        }
        Ok(if self.wide {
            std::slice::from_raw_parts(self.p as *const i64, n).to_vec()
        } else {
            std::slice::from_raw_parts(self.p as *const i32, n)
                .iter()
                .map(|&x| x as i64)
                .collect()
        })
    }
}

/// A plain side for the v-forms' pair paths (`abi::pairv`).
fn plain(buf: *const c_void, count: i64, dt: usize) -> crate::abi::pairv::Plain {
    crate::abi::pairv::Plain { buf, count, dt }
}

/// A v-form side for their pair paths.
fn vside(buf: *const c_void, counts: CArr, displs: CArr, dt: usize) -> crate::abi::pairv::V {
    crate::abi::pairv::V { buf, counts, displs, dt }
}

/// How a buffer splits into one block per peer.
#[derive(Clone, Copy)]
pub(crate) enum Layout {
    /// `count` elements of the datatype each, back to back.
    Equal(i64, usize),
    /// Counts and displacements in extents of the datatype (the v-forms).
    V(CArr, CArr, usize),
    /// Counts, displacements in bytes and a datatype each (the w-forms).
    W(CArr, CArr, *const usize),
}

/// The `n` blocks of `buf` laid out by `l`.
///
/// # Safety
/// The arrays of `l` must have `n` entries; only addresses are computed from `buf`.
pub(crate) unsafe fn blocks(buf: *const c_void, l: Layout, n: usize) -> MpiResult<Vec<Buf>> {
    Ok(split(buf, l, n)?.into_vec())
}

/// `blocks` without a list for the equal layout.
///
/// # Safety
/// As `blocks`.
unsafe fn split(buf: *const c_void, l: Layout, n: usize) -> MpiResult<Blocks> {
    // SAFETY: the caller's contract.
    unsafe { split_as(buf, l, n, None) }
}

/// `split` with the other side's checked datatype (`typed_as`).
///
/// # Safety
/// As `blocks`.
unsafe fn split_as(buf: *const c_void, l: Layout, n: usize, seen: Option<(usize, &DtRef)>) -> MpiResult<Blocks> {
    let at = |bytes: i64, k: i64, d: DtRef| -> MpiResult<Buf> {
        Ok(Buf::new((buf as *mut u8).wrapping_offset(bytes as isize), hd::count(k)?, d))
    };
    let list: MpiResult<Vec<Buf>> = match l {
        Layout::Equal(k, dt) => {
            let (count, dt) = typed_as(buf, k, dt, seen)?;
            return Ok(Blocks::Equal {
                ptr: buf as *mut u8,
                count,
                dt,
                n,
            });
        }
        Layout::V(cs, ds, dt) => {
            let d = hd::dtype(dt)?;
            let (cs, ds) = (cs.read(n)?, ds.read(n)?);
            (0..n).map(|i| at(ds[i] * d.extent as i64, cs[i], d.clone())).collect()
        }
        Layout::W(cs, ds, ts) => {
            let (cs, ds) = (cs.read(n)?, ds.read(n)?);
            if n > 0 && ts.is_null() {
                return err(c::MPI_ERR_ARG, "null datatype array");
            }
            (0..n).map(|i| at(ds[i], cs[i], hd::dtype(*ts.add(i))?)).collect()
        }
    };
    list.map(Blocks::List)
}

/// This rank's part in a rooted collective.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    /// The root (MPI_ROOT on an inter-communicator).
    Root,
    /// Sends to or receives from the root.
    Leaf,
    /// MPI_PROC_NULL: a rank of the root's group, other than the root, of an inter-communicator.
    Idle,
}

fn role(cm: &CommRef, root: c_int) -> MpiResult<Role> {
    if !cm.is_inter() {
        hd::root(cm, root)?;
        return Ok(if cm.rank == root { Role::Root } else { Role::Leaf });
    }
    match root {
        c::MPI_ROOT => Ok(Role::Root),
        c::MPI_PROC_NULL => Ok(Role::Idle),
        r if (0..cm.peer_size()).contains(&r) => Ok(Role::Leaf),
        _ => err(
            c::MPI_ERR_ROOT,
            format!(
                "invalid root {root} on an inter-communicator (MPI_ROOT, MPI_PROC_NULL or a rank of the remote group of size {})",
                cm.peer_size()
            ),
        ),
    }
}

/// The job of a rank with no part in the collective.
fn idle(sub: usize, cm: CommRef) -> Prepared {
    Prepared::part(sub, cm, Part::Idle)
}

fn prep_barrier(at: &At) -> MpiResult<Prepared> {
    let (sub, cm) = at.comm()?;
    Ok(Prepared::part(sub, cm, Part::Barrier).real(real::worth(0)))
}

fn prep_bcast(buf: *mut c_void, count: i64, dt: usize, root: c_int, at: &At) -> MpiResult<Prepared> {
    let (sub, cm) = at.comm()?;
    if role(&cm, root)? == Role::Idle {
        return Ok(idle(sub, cm));
    }
    let (n, d) = typed(buf, count, dt)?;
    let real = real::bcast_worth(n * d.size);
    let b = Buf::new(buf as *mut u8, n, d);
    Ok(Prepared::part(sub, cm, Part::Bcast { buf: b, root }).real(real))
}

fn prep_reduce(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    count: i64,
    dt: usize,
    op: usize,
    root: Option<c_int>,
    at: &At,
) -> MpiResult<Prepared> {
    let (sub, cm) = at.comm()?;
    let part = match root {
        Some(r) => role(&cm, r)?,
        None => Role::Leaf,
    };
    if part == Role::Idle {
        return Ok(idle(sub, cm));
    }
    // The inter-communicator root only receives; everyone else sends.
    let inter_root = cm.is_inter() && part == Role::Root;
    if !inter_root {
        not_in_place(&cm, sbuf)?;
    }
    if in_place(sbuf) && part == Role::Leaf && root.is_some() {
        return err(c::MPI_ERR_BUFFER, "MPI_IN_PLACE is only valid at the root");
    }
    let (n, d) = typed(if inter_root || in_place(sbuf) { rbuf } else { sbuf }, count, dt)?;
    let red = Reducer::new(op, &d, dt)?;
    // The receive buffer matters at the root (or everywhere, for an allreduce).
    if root.is_none() || part == Role::Root {
        hd::buffer(rbuf as *const u8, n, &d)?;
    }
    let real = real::reducible(&red) && real::worth(n * d.size);
    let part = Part::Reduce {
        send: sbuf as *const u8,
        recv: rbuf as *mut u8,
        count: n,
        dt: d,
        red,
        root,
    };
    Ok(Prepared::part(sub, cm, part).real(real))
}

#[allow(clippy::too_many_arguments)]
fn prep_gather(sbuf: *const c_void, scount: i64, sdt: usize, rbuf: *mut c_void, rl: Layout, root: c_int, at: &At) -> MpiResult<Prepared> {
    let (sub, cm) = at.comm()?;
    let part = role(&cm, root)?;
    let send = match part {
        Role::Idle => return Ok(idle(sub, cm)),
        // The inter-communicator root only receives; the intra one may give MPI_IN_PLACE.
        Role::Root if cm.is_inter() || in_place(sbuf) => None,
        Role::Leaf if in_place(sbuf) => return err(c::MPI_ERR_BUFFER, "MPI_IN_PLACE is only valid at the root"),
        _ => Some(send_buf(sbuf, scount, sdt)?),
    };
    let ps = if part == Role::Root {
        let seen = send.as_ref().map(|b| (sdt, &b.dt));
        // SAFETY: the standard gives the arrays one entry per peer; only addresses are computed.
        unsafe { split_as(rbuf, rl, cm.peer_size() as usize, seen)? }
    } else {
        Blocks::List(Vec::new())
    };
    let equal = matches!(rl, Layout::Equal(..));
    Ok(Prepared::part(sub, cm, Part::Gather { send, parts: ps, root }).equal(equal))
}

#[allow(clippy::too_many_arguments)]
fn prep_scatter(sbuf: *const c_void, sl: Layout, rbuf: *mut c_void, rcount: i64, rdt: usize, root: c_int, at: &At) -> MpiResult<Prepared> {
    let (sub, cm) = at.comm()?;
    let part = role(&cm, root)?;
    let recv = match part {
        Role::Idle => return Ok(idle(sub, cm)),
        Role::Root if cm.is_inter() || in_place(rbuf) => None,
        Role::Leaf if in_place(rbuf) => return err(c::MPI_ERR_BUFFER, "MPI_IN_PLACE is only valid at the root"),
        _ => Some(send_buf(rbuf, rcount, rdt)?),
    };
    let ps = if part == Role::Root {
        let seen = recv.as_ref().map(|b| (rdt, &b.dt));
        // SAFETY: the standard gives the arrays one entry per peer; only addresses are computed.
        unsafe { split_as(sbuf, sl, cm.peer_size() as usize, seen)? }
    } else {
        Blocks::List(Vec::new())
    };
    let equal = matches!(sl, Layout::Equal(..));
    Ok(Prepared::part(sub, cm, Part::Scatter { parts: ps, recv, root }).equal(equal))
}

fn prep_allgather(sbuf: *const c_void, scount: i64, sdt: usize, rbuf: *mut c_void, rl: Layout, at: &At) -> MpiResult<Prepared> {
    let (sub, cm) = at.comm()?;
    not_in_place(&cm, sbuf)?;
    let send = if in_place(sbuf) { None } else { Some(send_buf(sbuf, scount, sdt)?) };
    let seen = send.as_ref().map(|b| (sdt, &b.dt));
    // SAFETY: the standard gives the arrays one entry per peer; only addresses are computed.
    let ps = unsafe { split_as(rbuf, rl, cm.peer_size() as usize, seen)? };
    let real = equal_real(&ps, &cm);
    Ok(Prepared::part(sub, cm, Part::Allgather { send, parts: ps }).real(real))
}

fn prep_alltoall(sbuf: *const c_void, sl: Layout, rbuf: *mut c_void, rl: Layout, at: &At) -> MpiResult<Prepared> {
    let (sub, cm) = at.comm()?;
    not_in_place(&cm, sbuf)?;
    let n = cm.peer_size() as usize;
    // SAFETY: the standard gives the arrays one entry per peer; only addresses are computed.
    let rps = unsafe { split(rbuf, rl, n)? };
    let sps = if in_place(sbuf) {
        None
    } else {
        let seen = match (&rl, &rps) {
            (Layout::Equal(_, rdt), Blocks::Equal { dt, .. }) => Some((*rdt, dt)),
            _ => None,
        };
        // SAFETY: as above.
        Some(unsafe { split_as(sbuf, sl, n, seen)? })
    };
    // With MPI_IN_PLACE (sends None) the send data is the receive buffer, copied first.
    let equal = matches!(sl, Layout::Equal(..));
    let real = equal && equal_real(&rps, &cm);
    Ok(Prepared::part(sub, cm, Part::Alltoall { sends: sps, recvs: rps })
        .real(real)
        .equal(equal))
}

/// Whether an Allgather or Alltoall (equal blocks on every rank: `blocks` is `Blocks::Equal`)
/// runs as one real collective: one member per process (V=1), from `TOUCAN_REAL_COLL_MIN`
/// bytes per block. Decided from what every rank passes alike.
fn equal_real(blocks: &Blocks, cm: &CommRef) -> bool {
    match blocks {
        Blocks::Equal { count, dt, .. } => real::worth(count * dt.size) && real::one_per_process(cm),
        Blocks::List(_) => false,
    }
}

/// Reduce_scatter (`counts` per local rank) or Reduce_scatter_block (`count` each).
fn prep_reduce_scatter(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    counts: Option<CArr>,
    count: i64,
    dt: usize,
    op: usize,
    at: &At,
) -> MpiResult<Prepared> {
    let (sub, cm) = at.comm()?;
    not_in_place(&cm, sbuf)?;
    let n = cm.size() as usize;
    let counts = match counts {
        // SAFETY: the standard gives the array one entry per rank of the (local) group.
        Some(a) => unsafe { a.read(n)? },
        None => vec![count; n],
    };
    let counts = counts.into_iter().map(hd::count).collect::<MpiResult<Vec<usize>>>()?;
    let d = hd::dtype(dt)?;
    if !in_place(sbuf) {
        hd::buffer(sbuf as *const u8, counts.iter().sum(), &d)?;
    }
    hd::buffer(rbuf as *const u8, counts.get(cm.rank as usize).copied().unwrap_or(0), &d)?;
    let red = Reducer::new(op, &d, dt)?;
    // coll4: from TOUCAN_REAL_COLL_MIN bytes of the whole vector, one real allreduce
    // (`Coll::reduce_scatter`); the same decision on every rank.
    let real = real::reducible(&red) && real::worth(counts.iter().sum::<usize>() * d.size);
    let part = Part::ReduceScatter {
        send: sbuf as *const u8,
        recv: rbuf as *mut u8,
        counts,
        dt: d,
        red,
    };
    Ok(Prepared::part(sub, cm, part).real(real))
}

fn prep_scan(sbuf: *const c_void, rbuf: *mut c_void, count: i64, dt: usize, op: usize, exclusive: bool, at: &At) -> MpiResult<Prepared> {
    let (sub, cm) = at.comm()?;
    if cm.is_inter() {
        return err(c::MPI_ERR_COMM, "prefix reductions are not defined on inter-communicators");
    }
    let (n, d) = typed(rbuf, count, dt)?;
    if !in_place(sbuf) {
        hd::buffer(sbuf as *const u8, n, &d)?;
    }
    let red = Reducer::new(op, &d, dt)?;
    let part = Part::Scan {
        send: sbuf as *const u8,
        recv: rbuf as *mut u8,
        count: n,
        dt: d,
        red,
        exclusive,
    };
    Ok(Prepared::part(sub, cm, part))
}

// coll4: the blocking collectives' fast path among the subranks of one process; smp7: on the
// read side, in `abi::collteam`.

/// Defines the blocking, nonblocking and persistent exports of one collective (names in that
/// order, each with its PMPI twin) from one argument list and one expression producing the
/// `Prepared` job as an `MpiResult` (session 22: handed to `run` as it is, not unwrapped with
/// `?` first); `fast` (coll4), an expression of the arguments giving
/// `Option<MpiResult<()>>`, is tried first by the blocking form (None: the general path).
macro_rules! coll_forms {
    ($cm:ident, $names:tt, |$($arg:ident : $ty:ty),*| $prep:expr) => {
        coll_forms!($cm, $names, fast = None, |$($arg: $ty),*| $prep);
    };
    ($cm:ident, $names:tt, fast = $fast:expr, |$($arg:ident : $ty:ty),*| $prep:expr) => {
        coll_forms!($cm, $names, fast = $fast, ifast = |_r| None, |$($arg: $ty),*| $prep);
    };
    ($cm:ident, [$name:ident $pname:ident $iname:ident $piname:ident $init:ident $pinit:ident], fast = $fast:expr, ifast = |$r:ident| $ifast:expr, |$($arg:ident : $ty:ty),*| $prep:expr) => {
        // `$prep` sees the communicator argument `$cm` as an `At` (session 20): the blocking
        // form's look-up numbers the call (`At::now`). The error handler is the argument's.
        mpi_fn!($name, $pname, |$($arg: $ty),*| errcomm = $cm, {
            if let Some(r) = $fast {
                return r;
            }
            let $cm = &$crate::abi::coll::At::now($cm);
            $crate::abi::coll::run($prep, $cm, $crate::abi::coll::Mode::Now)
        });
        mpi_fn!($iname, $piname, |$($arg: $ty,)* req: *mut usize| errcomm = $cm, {
            // Session 24 (nbcpair16): `ifast`, given the request pointer, is tried first.
            let $r = req;
            let quick: Option<$crate::core::error::MpiResult<()>> = $ifast;
            if let Some(r) = quick {
                return r;
            }
            let $cm = &$crate::abi::coll::At::later($cm);
            $crate::abi::coll::run($prep, $cm, $crate::abi::coll::Mode::Start(req))
        });
        mpi_fn!($init, $pinit, |$($arg: $ty,)* info: usize, req: *mut usize| errcomm = $cm, {
            let $cm = &$crate::abi::coll::At::later($cm);
            $crate::abi::coll::run($prep, $cm, $crate::abi::coll::Mode::Init(info, req))
        });
    };
}

/// `coll_forms!` for both bindings, in a module `$m`: in the argument list, `Count` is `int`
/// for the first set of names and `MPI_Count` for the second (`_c`), `Displ` is `int` and
/// `MPI_Aint`.
macro_rules! coll_family {
    ($m:ident, $cm:ident, $names:tt, $cnames:tt, |$($arg:ident : $ty:ty),*| $prep:expr) => {
        coll_family!($m, $cm, $names, $cnames, fast = None, |$($arg: $ty),*| $prep);
    };
    ($m:ident, $cm:ident, $names:tt, $cnames:tt, fast = $fast:expr, |$($arg:ident : $ty:ty),*| $prep:expr) => {
        coll_family!($m, $cm, $names, $cnames, fast = $fast, ifast = |_r| None, |$($arg: $ty),*| $prep);
    };
    ($m:ident, $cm:ident, $names:tt, $cnames:tt, fast = $fast:expr, ifast = |$r:ident| $ifast:expr, |$($arg:ident : $ty:ty),*| $prep:expr) => {
        mod $m {
            use super::*;
            mod int {
                use super::*;
                #[allow(dead_code)]
                type Count = std::os::raw::c_int;
                #[allow(dead_code)]
                type Displ = std::os::raw::c_int;
                coll_forms!($cm, $names, fast = $fast, ifast = |$r| $ifast, |$($arg: $ty),*| $prep);
            }
            mod large {
                use super::*;
                #[allow(dead_code)]
                type Count = i64;
                #[allow(dead_code)]
                type Displ = isize;
                coll_forms!($cm, $cnames, fast = $fast, ifast = |$r| $ifast, |$($arg: $ty),*| $prep);
            }
        }
    };
}

coll_forms!(
    comm_h,
    [MPI_Barrier PMPI_Barrier MPI_Ibarrier PMPI_Ibarrier MPI_Barrier_init PMPI_Barrier_init],
    fast = crate::abi::collsolo::barrier(comm_h)
        .or_else(|| crate::abi::collpair::barrier(comm_h))
        .or_else(|| crate::abi::collteam::barrier(comm_h)),
    // SAFETY: the request pointer from the program.
    ifast = |req| unsafe { crate::abi::nbcpair::ibarrier(comm_h, req) },
    |comm_h: usize| prep_barrier(comm_h)
);

coll_family!(
    bcast,
    comm_h,
    [MPI_Bcast PMPI_Bcast MPI_Ibcast PMPI_Ibcast MPI_Bcast_init PMPI_Bcast_init],
    [MPI_Bcast_c PMPI_Bcast_c MPI_Ibcast_c PMPI_Ibcast_c MPI_Bcast_init_c PMPI_Bcast_init_c],
    fast = crate::abi::collsolo::bcast(buf, wide(count), dt, root, comm_h)
        .or_else(|| crate::abi::collpair::bcast(buf, wide(count), dt, root, comm_h))
        .or_else(|| crate::abi::collteam::bcast(buf, wide(count), dt, root, comm_h)),
    // SAFETY: the buffer and request pointer from the program.
    ifast = |req| unsafe { crate::abi::nbcpair::ibcast(buf, wide(count), dt, root, comm_h, req) },
    |buf: *mut c_void, count: Count, dt: usize, root: c_int, comm_h: usize| prep_bcast(buf, wide(count), dt, root, comm_h)
);

coll_family!(
    reduce,
    comm_h,
    [MPI_Reduce PMPI_Reduce MPI_Ireduce PMPI_Ireduce MPI_Reduce_init PMPI_Reduce_init],
    [MPI_Reduce_c PMPI_Reduce_c MPI_Ireduce_c PMPI_Ireduce_c MPI_Reduce_init_c PMPI_Reduce_init_c],
    fast = crate::abi::collsolo::reduce(sbuf, rbuf, wide(count), dt, op, Some(root), comm_h)
        .or_else(|| crate::abi::collteam::reduce(sbuf, rbuf, wide(count), dt, op, Some(root), comm_h)),
    // SAFETY: the buffers and request pointer from the program.
    ifast = |req| unsafe { crate::abi::nbcpair::ireduce(sbuf, rbuf, wide(count), dt, op, Some(root), comm_h, req) },
    |sbuf: *const c_void, rbuf: *mut c_void, count: Count, dt: usize, op: usize, root: c_int, comm_h: usize| {
        prep_reduce(sbuf, rbuf, wide(count), dt, op, Some(root), comm_h)
    }
);

coll_family!(
    allreduce,
    comm_h,
    [MPI_Allreduce PMPI_Allreduce MPI_Iallreduce PMPI_Iallreduce MPI_Allreduce_init PMPI_Allreduce_init],
    [MPI_Allreduce_c PMPI_Allreduce_c MPI_Iallreduce_c PMPI_Iallreduce_c MPI_Allreduce_init_c PMPI_Allreduce_init_c],
    fast = crate::abi::collsolo::reduce(sbuf, rbuf, wide(count), dt, op, None, comm_h)
        .or_else(|| crate::abi::collteam::reduce(sbuf, rbuf, wide(count), dt, op, None, comm_h)),
    // SAFETY: the buffers and request pointer from the program.
    ifast = |req| unsafe { crate::abi::nbcpair::ireduce(sbuf, rbuf, wide(count), dt, op, None, comm_h, req) },
    |sbuf: *const c_void, rbuf: *mut c_void, count: Count, dt: usize, op: usize, comm_h: usize| {
        prep_reduce(sbuf, rbuf, wide(count), dt, op, None, comm_h)
    }
);

coll_family!(
    gather,
    comm_h,
    [MPI_Gather PMPI_Gather MPI_Igather PMPI_Igather MPI_Gather_init PMPI_Gather_init],
    [MPI_Gather_c PMPI_Gather_c MPI_Igather_c PMPI_Igather_c MPI_Gather_init_c PMPI_Gather_init_c],
    fast = {
        let x = Sides { sbuf, scount: wide(scount), sdt, rbuf, rcount: wide(rcount), rdt };
        crate::abi::collsolo::rooted(&x, root, comm_h, true)
            .or_else(|| crate::abi::collpair::rooted(&x, root, comm_h, true))
            .or_else(|| crate::abi::collteam::rooted(&x, root, comm_h, true))
    },
    ifast = |req| {
        let x = Sides { sbuf, scount: wide(scount), sdt, rbuf, rcount: wide(rcount), rdt };
        // SAFETY: the buffers and request pointer from the program.
        unsafe { crate::abi::nbcpair::irooted(&x, root, comm_h, true, req) }
    },
    |sbuf: *const c_void, scount: Count, sdt: usize, rbuf: *mut c_void, rcount: Count, rdt: usize, root: c_int, comm_h: usize| {
        prep_gather(sbuf, wide(scount), sdt, rbuf, Layout::Equal(wide(rcount), rdt), root, comm_h)
    }
);

coll_family!(
    gatherv,
    comm_h,
    [MPI_Gatherv PMPI_Gatherv MPI_Igatherv PMPI_Igatherv MPI_Gatherv_init PMPI_Gatherv_init],
    [MPI_Gatherv_c PMPI_Gatherv_c MPI_Igatherv_c PMPI_Igatherv_c MPI_Gatherv_init_c PMPI_Gatherv_init_c],
    fast = {
        let (one, many) = (plain(sbuf, wide(scount), sdt), vside(rbuf, CArr::of(rcounts), CArr::of(displs), rdt));
        crate::abi::pairv::rooted(one, many, root, comm_h, true)
    },
    ifast = |req| {
        let (one, many) = (plain(sbuf, wide(scount), sdt), vside(rbuf, CArr::of(rcounts), CArr::of(displs), rdt));
        // SAFETY: the buffers, arrays and request pointer from the program.
        unsafe { crate::abi::pairv::irooted(one, many, root, comm_h, true, req) }
    },
    |sbuf: *const c_void,
     scount: Count,
     sdt: usize,
     rbuf: *mut c_void,
     rcounts: *const Count,
     displs: *const Displ,
     rdt: usize,
     root: c_int,
     comm_h: usize| {
        let rl = Layout::V(CArr::of(rcounts), CArr::of(displs), rdt);
        prep_gather(sbuf, wide(scount), sdt, rbuf, rl, root, comm_h)
    }
);

coll_family!(
    scatter,
    comm_h,
    [MPI_Scatter PMPI_Scatter MPI_Iscatter PMPI_Iscatter MPI_Scatter_init PMPI_Scatter_init],
    [MPI_Scatter_c PMPI_Scatter_c MPI_Iscatter_c PMPI_Iscatter_c MPI_Scatter_init_c PMPI_Scatter_init_c],
    fast = {
        let x = Sides { sbuf, scount: wide(scount), sdt, rbuf, rcount: wide(rcount), rdt };
        crate::abi::collsolo::rooted(&x, root, comm_h, false)
            .or_else(|| crate::abi::collpair::rooted(&x, root, comm_h, false))
            .or_else(|| crate::abi::collteam::rooted(&x, root, comm_h, false))
    },
    ifast = |req| {
        let x = Sides { sbuf, scount: wide(scount), sdt, rbuf, rcount: wide(rcount), rdt };
        // SAFETY: the buffers and request pointer from the program.
        unsafe { crate::abi::nbcpair::irooted(&x, root, comm_h, false, req) }
    },
    |sbuf: *const c_void, scount: Count, sdt: usize, rbuf: *mut c_void, rcount: Count, rdt: usize, root: c_int, comm_h: usize| {
        prep_scatter(sbuf, Layout::Equal(wide(scount), sdt), rbuf, wide(rcount), rdt, root, comm_h)
    }
);

coll_family!(
    scatterv,
    comm_h,
    [MPI_Scatterv PMPI_Scatterv MPI_Iscatterv PMPI_Iscatterv MPI_Scatterv_init PMPI_Scatterv_init],
    [MPI_Scatterv_c PMPI_Scatterv_c MPI_Iscatterv_c PMPI_Iscatterv_c MPI_Scatterv_init_c PMPI_Scatterv_init_c],
    fast = {
        let (one, many) = (plain(rbuf, wide(rcount), rdt), vside(sbuf, CArr::of(scounts), CArr::of(displs), sdt));
        crate::abi::pairv::rooted(one, many, root, comm_h, false)
    },
    ifast = |req| {
        let (one, many) = (plain(rbuf, wide(rcount), rdt), vside(sbuf, CArr::of(scounts), CArr::of(displs), sdt));
        // SAFETY: the buffers, arrays and request pointer from the program.
        unsafe { crate::abi::pairv::irooted(one, many, root, comm_h, false, req) }
    },
    |sbuf: *const c_void,
     scounts: *const Count,
     displs: *const Displ,
     sdt: usize,
     rbuf: *mut c_void,
     rcount: Count,
     rdt: usize,
     root: c_int,
     comm_h: usize| {
        let sl = Layout::V(CArr::of(scounts), CArr::of(displs), sdt);
        prep_scatter(sbuf, sl, rbuf, wide(rcount), rdt, root, comm_h)
    }
);

coll_family!(
    allgather,
    comm_h,
    [MPI_Allgather PMPI_Allgather MPI_Iallgather PMPI_Iallgather MPI_Allgather_init PMPI_Allgather_init],
    [MPI_Allgather_c PMPI_Allgather_c MPI_Iallgather_c PMPI_Iallgather_c MPI_Allgather_init_c PMPI_Allgather_init_c],
    fast = {
        let x = Sides { sbuf, scount: wide(scount), sdt, rbuf, rcount: wide(rcount), rdt };
        crate::abi::collsolo::exchange(&x, comm_h, true)
            .or_else(|| crate::abi::collpair::exchange(&x, comm_h, true))
            .or_else(|| crate::abi::collteam::exchange(&x, comm_h, true))
    },
    ifast = |req| {
        let x = Sides { sbuf, scount: wide(scount), sdt, rbuf, rcount: wide(rcount), rdt };
        // SAFETY: the buffers and request pointer from the program.
        unsafe { crate::abi::nbcpair::iexchange(&x, comm_h, true, req) }
    },
    |sbuf: *const c_void, scount: Count, sdt: usize, rbuf: *mut c_void, rcount: Count, rdt: usize, comm_h: usize| {
        prep_allgather(sbuf, wide(scount), sdt, rbuf, Layout::Equal(wide(rcount), rdt), comm_h)
    }
);

coll_family!(
    allgatherv,
    comm_h,
    [MPI_Allgatherv PMPI_Allgatherv MPI_Iallgatherv PMPI_Iallgatherv MPI_Allgatherv_init PMPI_Allgatherv_init],
    [MPI_Allgatherv_c PMPI_Allgatherv_c MPI_Iallgatherv_c PMPI_Iallgatherv_c MPI_Allgatherv_init_c PMPI_Allgatherv_init_c],
    fast = {
        let (send, recv) = (plain(sbuf, wide(scount), sdt), vside(rbuf, CArr::of(rcounts), CArr::of(displs), rdt));
        crate::abi::pairv::allgatherv(send, recv, comm_h)
    },
    ifast = |req| {
        let (send, recv) = (plain(sbuf, wide(scount), sdt), vside(rbuf, CArr::of(rcounts), CArr::of(displs), rdt));
        // SAFETY: the buffers, arrays and request pointer from the program.
        unsafe { crate::abi::pairv::iallgatherv(send, recv, comm_h, req) }
    },
    |sbuf: *const c_void,
     scount: Count,
     sdt: usize,
     rbuf: *mut c_void,
     rcounts: *const Count,
     displs: *const Displ,
     rdt: usize,
     comm_h: usize| {
        let rl = Layout::V(CArr::of(rcounts), CArr::of(displs), rdt);
        prep_allgather(sbuf, wide(scount), sdt, rbuf, rl, comm_h)
    }
);

coll_family!(
    alltoall,
    comm_h,
    [MPI_Alltoall PMPI_Alltoall MPI_Ialltoall PMPI_Ialltoall MPI_Alltoall_init PMPI_Alltoall_init],
    [MPI_Alltoall_c PMPI_Alltoall_c MPI_Ialltoall_c PMPI_Ialltoall_c MPI_Alltoall_init_c PMPI_Alltoall_init_c],
    fast = {
        let x = Sides { sbuf, scount: wide(scount), sdt, rbuf, rcount: wide(rcount), rdt };
        crate::abi::collsolo::exchange(&x, comm_h, false)
            .or_else(|| crate::abi::collpair::exchange(&x, comm_h, false))
            .or_else(|| crate::abi::collteam::exchange(&x, comm_h, false))
    },
    ifast = |req| {
        let x = Sides { sbuf, scount: wide(scount), sdt, rbuf, rcount: wide(rcount), rdt };
        // SAFETY: the buffers and request pointer from the program.
        unsafe { crate::abi::nbcpair::iexchange(&x, comm_h, false, req) }
    },
    |sbuf: *const c_void, scount: Count, sdt: usize, rbuf: *mut c_void, rcount: Count, rdt: usize, comm_h: usize| {
        let (sl, rl) = (Layout::Equal(wide(scount), sdt), Layout::Equal(wide(rcount), rdt));
        prep_alltoall(sbuf, sl, rbuf, rl, comm_h)
    }
);

coll_family!(
    alltoallv,
    comm_h,
    [MPI_Alltoallv PMPI_Alltoallv MPI_Ialltoallv PMPI_Ialltoallv MPI_Alltoallv_init PMPI_Alltoallv_init],
    [MPI_Alltoallv_c PMPI_Alltoallv_c MPI_Ialltoallv_c PMPI_Ialltoallv_c MPI_Alltoallv_init_c PMPI_Alltoallv_init_c],
    fast = {
        let send = vside(sbuf, CArr::of(scounts), CArr::of(sdispls), sdt);
        let recv = vside(rbuf, CArr::of(rcounts), CArr::of(rdispls), rdt);
        crate::abi::pairv::alltoallv(send, recv, comm_h)
    },
    ifast = |req| {
        let send = vside(sbuf, CArr::of(scounts), CArr::of(sdispls), sdt);
        let recv = vside(rbuf, CArr::of(rcounts), CArr::of(rdispls), rdt);
        // SAFETY: the buffers, arrays and request pointer from the program.
        unsafe { crate::abi::pairv::ialltoallv(send, recv, comm_h, req) }
    },
    |sbuf: *const c_void,
     scounts: *const Count,
     sdispls: *const Displ,
     sdt: usize,
     rbuf: *mut c_void,
     rcounts: *const Count,
     rdispls: *const Displ,
     rdt: usize,
     comm_h: usize| {
        let sl = Layout::V(CArr::of(scounts), CArr::of(sdispls), sdt);
        let rl = Layout::V(CArr::of(rcounts), CArr::of(rdispls), rdt);
        prep_alltoall(sbuf, sl, rbuf, rl, comm_h)
    }
);

coll_family!(
    alltoallw,
    comm_h,
    [MPI_Alltoallw PMPI_Alltoallw MPI_Ialltoallw PMPI_Ialltoallw MPI_Alltoallw_init PMPI_Alltoallw_init],
    [MPI_Alltoallw_c PMPI_Alltoallw_c MPI_Ialltoallw_c PMPI_Ialltoallw_c MPI_Alltoallw_init_c PMPI_Alltoallw_init_c],
    |sbuf: *const c_void,
     scounts: *const Count,
     sdispls: *const Displ,
     sdts: *const usize,
     rbuf: *mut c_void,
     rcounts: *const Count,
     rdispls: *const Displ,
     rdts: *const usize,
     comm_h: usize| {
        let sl = Layout::W(CArr::of(scounts), CArr::of(sdispls), sdts);
        let rl = Layout::W(CArr::of(rcounts), CArr::of(rdispls), rdts);
        prep_alltoall(sbuf, sl, rbuf, rl, comm_h)
    }
);

coll_family!(
    reduce_scatter_block,
    comm_h,
    [MPI_Reduce_scatter_block PMPI_Reduce_scatter_block MPI_Ireduce_scatter_block PMPI_Ireduce_scatter_block
     MPI_Reduce_scatter_block_init PMPI_Reduce_scatter_block_init],
    [MPI_Reduce_scatter_block_c PMPI_Reduce_scatter_block_c MPI_Ireduce_scatter_block_c PMPI_Ireduce_scatter_block_c
     MPI_Reduce_scatter_block_init_c PMPI_Reduce_scatter_block_init_c],
    fast = None,
    // SAFETY: the buffers and request pointer from the program.
    ifast = |req| unsafe { crate::abi::nbcpair::ireduce_scatter(sbuf, rbuf, None, wide(rcount), dt, op, comm_h, req) },
    |sbuf: *const c_void, rbuf: *mut c_void, rcount: Count, dt: usize, op: usize, comm_h: usize| {
        prep_reduce_scatter(sbuf, rbuf, None, wide(rcount), dt, op, comm_h)
    }
);

coll_family!(
    reduce_scatter,
    comm_h,
    [MPI_Reduce_scatter PMPI_Reduce_scatter MPI_Ireduce_scatter PMPI_Ireduce_scatter MPI_Reduce_scatter_init PMPI_Reduce_scatter_init],
    [MPI_Reduce_scatter_c PMPI_Reduce_scatter_c MPI_Ireduce_scatter_c PMPI_Ireduce_scatter_c MPI_Reduce_scatter_init_c
     PMPI_Reduce_scatter_init_c],
    fast = None,
    // SAFETY: the buffers, counts and request pointer from the program.
    ifast = |req| unsafe { crate::abi::nbcpair::ireduce_scatter(sbuf, rbuf, Some(CArr::of(rcounts)), 0, dt, op, comm_h, req) },
    |sbuf: *const c_void, rbuf: *mut c_void, rcounts: *const Count, dt: usize, op: usize, comm_h: usize| {
        prep_reduce_scatter(sbuf, rbuf, Some(CArr::of(rcounts)), 0, dt, op, comm_h)
    }
);

coll_family!(
    scan,
    comm_h,
    [MPI_Scan PMPI_Scan MPI_Iscan PMPI_Iscan MPI_Scan_init PMPI_Scan_init],
    [MPI_Scan_c PMPI_Scan_c MPI_Iscan_c PMPI_Iscan_c MPI_Scan_init_c PMPI_Scan_init_c],
    fast = None,
    // SAFETY: the buffers and request pointer from the program.
    ifast = |req| unsafe { crate::abi::nbcpair::iscan(sbuf, rbuf, wide(count), dt, op, false, comm_h, req) },
    |sbuf: *const c_void, rbuf: *mut c_void, count: Count, dt: usize, op: usize, comm_h: usize| {
        prep_scan(sbuf, rbuf, wide(count), dt, op, false, comm_h)
    }
);

coll_family!(
    exscan,
    comm_h,
    [MPI_Exscan PMPI_Exscan MPI_Iexscan PMPI_Iexscan MPI_Exscan_init PMPI_Exscan_init],
    [MPI_Exscan_c PMPI_Exscan_c MPI_Iexscan_c PMPI_Iexscan_c MPI_Exscan_init_c PMPI_Exscan_init_c],
    fast = None,
    // SAFETY: the buffers and request pointer from the program.
    ifast = |req| unsafe { crate::abi::nbcpair::iscan(sbuf, rbuf, wide(count), dt, op, true, comm_h, req) },
    |sbuf: *const c_void, rbuf: *mut c_void, count: Count, dt: usize, op: usize, comm_h: usize| {
        prep_scan(sbuf, rbuf, wide(count), dt, op, true, comm_h)
    }
);

fn op_create(f: Option<crate::core::coll::reduce::UserCall>, commute: c_int, op: *mut usize) -> MpiResult<()> {
    let Some(f) = f else {
        return err(c::MPI_ERR_ARG, "null user function");
    };
    if op.is_null() {
        return err(c::MPI_ERR_ARG, "null op pointer");
    }
    // SAFETY: checked non-null; the caller passes a writable MPI_Op.
    unsafe { *op = crate::core::coll::reduce::create(f, commute != 0) };
    Ok(())
}

mpi_fn!(
    MPI_Op_create,
    PMPI_Op_create,
    |f: Option<crate::core::coll::reduce::UserFn>, commute: c_int, op: *mut usize| errcomm = c::MPI_COMM_WORLD,
    { op_create(f.map(crate::core::coll::reduce::UserCall::Int), commute, op) }
);

mpi_fn!(
    MPI_Op_create_c,
    PMPI_Op_create_c,
    |f: Option<crate::core::coll::reduce::UserFnC>, commute: c_int, op: *mut usize| errcomm = c::MPI_COMM_WORLD,
    { op_create(f.map(crate::core::coll::reduce::UserCall::Count), commute, op) }
);

mpi_fn!(MPI_Op_free, PMPI_Op_free, |op: *mut usize| errcomm = c::MPI_COMM_WORLD, {
    if op.is_null() {
        return err(c::MPI_ERR_ARG, "null op pointer");
    }
    if !crate::core::coll::reduce::free(*op) {
        return err(
            c::MPI_ERR_OP,
            format!("cannot free operation {:#x} (predefined, or not an operation)", *op),
        );
    }
    *op = c::MPI_OP_NULL;
    Ok(())
});

mpi_fn!(
    MPI_Op_commutative,
    PMPI_Op_commutative,
    |op: usize, flag: *mut c_int| errcomm = c::MPI_COMM_WORLD,
    {
        let Some(k) = crate::core::coll::reduce::commutative(op) else {
            return err(c::MPI_ERR_OP, format!("invalid operation {op:#x}"));
        };
        hd::put(flag, k as c_int, "commute")
    }
);

/// MPI_Reduce_local: `inout = in op inout`.
unsafe fn reduce_local(inbuf: *const c_void, inout: *mut c_void, count: i64, dt: usize, op: usize) -> MpiResult<()> {
    let (n, d) = typed(inbuf, count, dt)?;
    hd::buffer(inout as *const u8, n, &d)?;
    let red = Reducer::new(op, &d, dt)?;
    // Session 19: straight between the caller's buffers when they are the work buffers'
    // layout (a contiguous type, the packed elements) and do not overlap, as MPICH does:
    // three 64 KiB copies per call were most of a 16384-float call's time.
    let (p, q) = (inbuf as *const u8, inout as *mut u8);
    let bytes = n * d.size;
    let apart = (p as usize).saturating_add(bytes) <= q as usize || (q as usize).saturating_add(bytes) <= p as usize;
    if apart && d.is_contiguous() && red.work(n, &d).1.is_contiguous() {
        // SAFETY: `typed` and `hd::buffer` checked both buffers hold `n` elements of `d`, which
        // is contiguous and laid out as the work buffer (so each is a work buffer of `n`
        // elements); they do not overlap.
        red.apply_raw(p, q, n, &d);
        return Ok(());
    }
    let a = red.load(p, n, &d);
    let mut b = red.load(q, n, &d);
    red.apply(&a, &mut b, n, &d);
    red.store(&b, q, n, &d);
    Ok(())
}

mpi_fn!(
    MPI_Reduce_local,
    PMPI_Reduce_local,
    |inbuf: *const c_void, inout: *mut c_void, count: c_int, dt: usize, op: usize| errcomm = c::MPI_COMM_WORLD,
    { reduce_local(inbuf, inout, wide(count), dt, op) }
);

mpi_fn!(
    MPI_Reduce_local_c,
    PMPI_Reduce_local_c,
    |inbuf: *const c_void, inout: *mut c_void, count: i64, dt: usize, op: usize| errcomm = c::MPI_COMM_WORLD,
    { reduce_local(inbuf, inout, count, dt, op) }
);

#[cfg(test)]
mod tests {
    use super::CArr;
    use rstest::rstest;

    #[rstest]
    #[case(0)]
    #[case(3)]
    fn arrays_of_both_bindings_read_alike(#[case] n: usize) {
        let ints: Vec<i32> = vec![7, -1, 1 << 30];
        let counts: Vec<i64> = vec![7, -1, 1 << 30];
        let aints: Vec<isize> = vec![7, -1, 1 << 30];
        // SAFETY: each array has 3 entries and n <= 3.
        let (a, b, c) = unsafe {
            (
                CArr::of(ints.as_ptr()).read(n).unwrap(),
                CArr::of(counts.as_ptr()).read(n).unwrap(),
                CArr::of(aints.as_ptr()).read(n).unwrap(),
            )
        };
        assert_eq!(a, counts[..n]);
        assert_eq!(b, counts[..n]);
        assert_eq!(c, counts[..n]);
    }

    #[rstest]
    #[case(0)]
    #[case(1)]
    #[case(2)]
    #[case(3)]
    #[case(4)]
    #[case(5)]
    #[case(8)]
    #[case(9)]
    #[case(33)]
    fn equal_blocks_listed_on_the_stack_are_the_list(#[case] n: usize) {
        use crate::core::coll::team::Blocks;
        let mut mem = vec![0u8; 3 * n + 1];
        let b = Blocks::Equal {
            ptr: mem.as_mut_ptr(),
            count: 3,
            dt: crate::core::datatype::byte(),
            n,
        };
        let got = super::listed(&b, |ps| ps.iter().map(|p| (p.ptr as usize, p.count, p.dt.size)).collect::<Vec<_>>());
        let want: Vec<_> = b.to_vec().iter().map(|p| (p.ptr as usize, p.count, p.dt.size)).collect();
        assert_eq!(got, want);
        assert_eq!(got.len(), n);
    }

    #[test]
    fn a_null_array_is_an_error_unless_empty() {
        let p: *const i32 = std::ptr::null();
        // SAFETY: a null array is never dereferenced.
        unsafe {
            assert!(CArr::of(p).read(0).unwrap().is_empty());
            assert!(CArr::of(p).read(1).is_err());
        }
    }
}
