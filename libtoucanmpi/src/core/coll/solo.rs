//! Blocking collectives at one subrank per process as the real MPI's own blocking collectives
//! (issue 16, session 15).
//!
//! At V = 1 with one worker (`on`), every communicator with a real twin holds exactly one
//! member per process, so its whole collective is one collective of the real MPI. MPICH's
//! *blocking* collectives use its shared-memory algorithms on a node, which its nonblocking
//! ones do not (about 2x faster at 8 B here): this module calls them.
//!
//! **Why it needs `MPI_THREAD_MULTIPLE`.** While the worker sits in the real call our progress
//! engine does not run on it, and a legal program may need it to: process A posts
//! `MPI_Irecv` from B and enters the collective, B sends A a large message or an `MPI_Ssend`
//! first (our rendezvous and acknowledgements are matched by A's engine); a helper task of
//! A's (a nonblocking collective over point-to-point) must run for B to get its part; another
//! process's one-sided operations need A's polls. Nor may A take another algorithm when it has
//! such an obligation: a blocking real collective matches only blocking ones, so every process
//! must decide from the arguments alone. So the path is on only when the real MPI runs at
//! `MPI_THREAD_MULTIPLE` (`TOUCAN_REAL_THREAD=multiple`), and each call chooses *where* it
//! blocks, never *whether*:
//! - **in place** (`Route::Inline`), the common case: no other task is alive; the call is made
//!   without the state lock, and when something may need our engine (`background::awaits_transport`)
//!   the background progress thread runs it meanwhile (started on demand);
//! - **on a side thread** (`Route::Side`), when another task is alive (a helper task, a thread
//!   of the program) or no background thread may run: the subrank parks, its worker keeps
//!   running tasks and polling, and the side thread wakes it when the real call returned.
//!
//! **Order on the twin.** The call takes its place in the twin's issue order like every real
//! operation (`real::enrol`): it is made only once every earlier registered place started, so
//! it never overtakes a nonblocking collective of the program's on the same communicator.
//!
//! Costs and measurements: docs/collectives.md, "Session 15: blocking collectives at V=1".

use crate::consts as c;
use crate::core::coll::hier::{key_of, CommKey};
use crate::core::coll::{real, Coll};
use crate::core::comm::CommRef;
use crate::core::error::{err, MpiResult};
use crate::core::p2p::blocking::block_on;
use crate::core::state::{self, State};
use crate::transport::collective::{Blocking, Failed};
use crate::transport::real::RComm;
use crate::transport::{CollMem, RealColl};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex, OnceLock};

/// Whether blocking collectives on communicators with a twin run as the real MPI's blocking
/// collectives: one subrank per process and the real MPI at `MPI_THREAD_MULTIPLE`. The same
/// answer on every process (launch settings).
#[inline]
pub fn on() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| {
        let cfg = crate::core::runtime::config();
        cfg.real_multiple && cfg.real_coll && cfg.local() == 1
    })
}

/// Where the real call blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Route {
    Inline,
    Side,
}

/// A call whose turn came: the real communicator and the functions to call.
pub struct Turn {
    key: CommKey,
    comm: RComm,
    fns: &'static Blocking,
    route: Route,
    /// A side call's entry in the running real operations (`real::release` removes it).
    token: u64,
}

/// Takes the turn of call `place` on twin `key` if it has come (every earlier registered
/// place started); marks it started. None: not yet (or no twin made yet).
fn take(s: &mut State, key: CommKey, place: (u64, u32)) -> Option<Turn> {
    let t = s.rcoll.twins.get_mut(&key)?;
    let (Some(comm), true) = (t.comm, t.waiting.first() == Some(&place)) else {
        // Woken when the twin is made or operations before this one start (`real::pump`).
        t.solo_waiter = Some(crate::sched::current());
        return None;
    };
    t.waiting.remove(&place);
    let number = t.start(place);
    Some(turn(s, key, comm, number))
}

/// The real MPI's blocking collectives (fixed once it is initialised).
fn fns(s: &State) -> &'static Blocking {
    static FNS: OnceLock<Blocking> = OnceLock::new();
    FNS.get_or_init(|| s.tp.blocking())
}

/// Where a call made now blocks (see the module's text).
fn route(s: &State) -> Route {
    if crate::sched::park::live() > 1 || INLINE.load(Ordering::Relaxed) {
        // Another task is alive, or a thread of the program sits in a call in place.
        return Route::Side;
    }
    if crate::core::background::awaits_transport(s) && !crate::core::background::serve() {
        return Route::Side;
    }
    Route::Inline
}

/// Starts operation number `number` of twin `key`: claims the in-place slot (one call at a
/// time: a second, from a thread of the program, goes to the side) or registers the side
/// call among the running real operations, for the deadlock detector.
fn turn(s: &mut State, key: CommKey, comm: RComm, number: u64) -> Turn {
    let route = route(s);
    let mut token = 0;
    match route {
        Route::Inline => {
            // Claimed and released by the holder of the state lock only (`turn` runs under
            // it; `call` releases): plain stores suffice.
            INLINE.store(true, Ordering::Relaxed);
            s.rcoll.inline = Some((key, number));
            INLINE_SEQ.store(INLINE_SEQ.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
            if !SERVED.load(Ordering::Relaxed) {
                // The background thread answers the deadlock detector for a process whose
                // only subrank sits in a real call (`watch`).
                SERVED.store(true, Ordering::Relaxed);
                crate::core::background::serve();
            }
        }
        Route::Side => {
            token = s.rcoll.token();
            s.rcoll.running.insert(token, (key, number));
            if let Some(t) = s.rcoll.twins.get_mut(&key) {
                t.hold = true;
            }
        }
    }
    Turn {
        key,
        comm,
        fns: fns(s),
        route,
        token,
    }
}

/// The fast path's turn (`abi::collsolo`): call number and place of a blocking collective of
/// subrank `sub` on communicator `comm_h`, in one pass under the state lock, when `check`
/// accepts the caller's view of the communicator and its twin is made, idle (nothing waits
/// for a turn) and its ranks are in process order. None: the general path (which makes the
/// same real call).
pub fn begin(s: &mut State, sub: usize, comm_h: usize, check: impl FnOnce(&CommRef) -> bool) -> Option<Turn> {
    let (key, comm, number) = real::begin_straight(s, sub, comm_h, check)?;
    Some(turn(s, key, comm, number))
}

/// Makes the real call of a turn: in place or on the side thread.
///
/// # Safety
/// The memory of `mem` is valid for `what` until this returns.
pub unsafe fn call(turn: Turn, what: RealColl, mem: &CollMem) -> MpiResult<()> {
    let res = match turn.route {
        Route::Inline => {
            // SAFETY: the caller's contract; the turn's communicator is a live twin.
            let r = unsafe { turn.fns.run(turn.comm, what, mem) };
            INLINE.store(false, Ordering::Release);
            r
        }
        Route::Side => {
            let (key, token) = (turn.key, turn.token);
            // SAFETY: as above; `side` returns only after the call did.
            let r = unsafe { side(turn, what, mem) };
            state::with(|s| real::release(s, key, token))?;
            r?
        }
    };
    res.or_else(|e| err(if e.truncated { c::MPI_ERR_TRUNCATE } else { c::MPI_ERR_INTERN }, e.msg))
}

/// The general path's real call (`real::run` for a call marked `Coll::solo`): waits for the
/// call's turn on its twin, then makes it. Returns the operation's owned buffer.
///
/// # Safety
/// As `call`.
pub unsafe fn run(c: &Coll, what: RealColl, mem: CollMem) -> MpiResult<Vec<u8>> {
    let key = key_of(c.comm.ctx, &c.comm.group.ranks);
    let place = (c.seq, 0);
    let turn = block_on(|s| take(s, key, place))?;
    // SAFETY: forwarded from the caller.
    unsafe { call(turn, what, &mem) }?;
    Ok(mem.keep)
}

/// A real call handed to the side thread.
struct Job {
    turn: Turn,
    what: RealColl,
    mem: *const CollMem,
    task: usize,
    done: Arc<AtomicBool>,
    out: Arc<Mutex<Option<Result<(), Failed>>>>,
}

// SAFETY: the job's memory (`mem` and what it points to) belongs to the subrank that made it,
// parked in `side` until the job's `done` is set: nothing else touches it meanwhile.
unsafe impl Send for Job {}

/// Side threads waiting for a call. A blocked call holds its thread, and calls on different
/// communicators may be blocked at once (threads of the program): so one thread per call in
/// progress, kept for the next one when it returns.
static IDLE_SIDE: Mutex<Vec<Sender<Job>>> = Mutex::new(Vec::new());

/// A side thread: runs the calls it is given, and offers itself again after each.
fn side_thread() -> std::io::Result<Sender<Job>> {
    let (tx, rx) = channel::<Job>();
    let me = tx.clone();
    std::thread::Builder::new().name("toucan-coll".into()).spawn(move || {
        for j in rx {
            // SAFETY: the job's memory stays valid until `done` is set (see `Job`).
            let r = unsafe { j.turn.fns.run(j.turn.comm, j.what, &*j.mem) };
            *j.out.lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
            IDLE_SIDE.lock().unwrap_or_else(|e| e.into_inner()).push(me.clone());
            j.done.store(true, Ordering::Release);
            SIDE_CALLS.fetch_sub(1, Ordering::AcqRel);
            crate::sched::wake(j.task);
        }
    })?;
    Ok(tx)
}

/// Real calls on the side thread now (the deadlock detector counts them as real collectives
/// outstanding: `quiescence::Snapshot`).
static SIDE_CALLS: AtomicUsize = AtomicUsize::new(0);
/// A call runs in place now (its twin and number in `RealComms::inline`); how many have.
static INLINE: AtomicBool = AtomicBool::new(false);
static INLINE_SEQ: AtomicU64 = AtomicU64::new(0);
/// The background thread was asked to serve once (`turn`).
static SERVED: AtomicBool = AtomicBool::new(false);

/// Real calls outstanding on this process's behalf outside the transport: on the side thread,
/// or in place.
pub fn calls() -> usize {
    SIDE_CALLS.load(Ordering::Acquire) + INLINE.load(Ordering::Acquire) as usize
}

/// The number of the call in place now, if one is.
pub fn inline_busy() -> Option<u64> {
    INLINE.load(Ordering::Acquire).then(|| INLINE_SEQ.load(Ordering::Relaxed))
}

/// The background thread's look at a process whose worker sits in a call in place: after it
/// has been in the same call for a while, the thread runs the deadlock detector's step that
/// the worker's idle hook would run (`deadlock::tick`). At one subrank per process the call's
/// subrank is the only one, so the process is as idle as it can be. Called under the state
/// lock.
pub fn watch(s: &mut State) {
    static SEEN: Mutex<Option<(u64, std::time::Instant)>> = Mutex::new(None);
    let mut g = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    let Some(seq) = inline_busy() else {
        *g = None;
        return;
    };
    let since = match *g {
        Some((k, t)) if k == seq => t,
        _ => {
            let now = std::time::Instant::now();
            *g = Some((seq, now));
            now
        }
    };
    drop(g);
    crate::core::deadlock::tick(s, since.elapsed());
}

/// Runs the real call on a side thread (an idle one, or a new one) and parks until it returned.
///
/// # Safety
/// As `call`.
unsafe fn side(turn: Turn, what: RealColl, mem: &CollMem) -> MpiResult<Result<(), Failed>> {
    let done = Arc::new(AtomicBool::new(false));
    let out = Arc::new(Mutex::new(None));
    let job = Job {
        turn,
        what,
        mem,
        task: crate::sched::current(),
        done: done.clone(),
        out: out.clone(),
    };
    let idle = IDLE_SIDE.lock().unwrap_or_else(|e| e.into_inner()).pop();
    let tx = match idle {
        Some(tx) => tx,
        None => side_thread().map_err(|e| crate::core::error::MpiError::new(c::MPI_ERR_OTHER, format!("cannot start a thread: {e}")))?,
    };
    SIDE_CALLS.fetch_add(1, Ordering::AcqRel);
    if tx.send(job).is_err() {
        SIDE_CALLS.fetch_sub(1, Ordering::AcqRel);
        return err(c::MPI_ERR_INTERN, "a side thread of the collectives is gone");
    }
    block_on(|_| done.load(Ordering::Acquire).then_some(()))?;
    let r = out.lock().unwrap_or_else(|e| e.into_inner()).take();
    Ok(r.unwrap_or_else(|| Err("the side thread gave no result".into())))
}
