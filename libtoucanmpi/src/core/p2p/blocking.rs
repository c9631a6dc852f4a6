//! Operations that may block, run by a subrank: they take the state lock only for
//! non-blocking steps and park the subrank (letting its siblings run) in between.

use crate::consts as c;
use crate::core::comm::CommRef;
use crate::core::datatype::DtRef;
use crate::core::error::{MpiError, MpiResult};
use crate::core::p2p::matching::Pattern;
use crate::core::p2p::{SendData, SendMode};
use crate::core::request::{RecvTarget, ReqId, Status};
use crate::core::state::{self, State};
use crate::sched;

/// Takes the result of a complete request: persistent ones become inactive, others are freed.
pub fn finish(s: &mut State, id: ReqId) -> Status {
    let Some(r) = s.req_mut(id) else { return Status::empty() };
    // SAFETY: the request is complete, and its owner takes it (Wait, Test, a collective's
    // step), so the owner's thread-locals are in place.
    unsafe { r.settle() };
    let st = r.status;
    if r.persist.is_some() {
        r.active = false;
        r.keep = None;
    } else {
        s.drop_request(id);
    }
    st
}

/// Whether request `id` is complete (or not a live active request).
pub fn is_done(s: &State, id: ReqId) -> bool {
    s.req_done(id)
}

/// Parks the running subrank until `f` (run under the lock, after a progress step when it
/// first says no) returns `Some`.
///
/// When siblings are ready it parks at once (they run, the worker polls); when none is, it
/// polls the transport in place a few times first, which saves two context switches per
/// message when a reply is about to arrive, then parks so the worker can back off the core.
pub fn block_on<T>(f: impl FnMut(&mut State) -> Option<T>) -> MpiResult<T> {
    block_on_with(f, |s| (s.progress(), None))
}

/// `block_on` whose polls in place are `step` (in place of `State::progress`): it returns
/// whether anything happened and may produce the result itself (a blocking receive whose
/// message it copied straight from the transport).
pub fn block_on_with<T>(f: impl FnMut(&mut State) -> Option<T>, step: impl FnMut(&mut State) -> (bool, Option<T>)) -> MpiResult<T> {
    block_on_after(f, step, false)
}

/// `block_on_with` for a caller that has just polled in place for as long as `block_on`
/// would have (`spun`): its first round parks at once instead of polling again.
#[inline(always)]
pub fn block_on_after<T>(
    mut f: impl FnMut(&mut State) -> Option<T>,
    mut step: impl FnMut(&mut State) -> (bool, Option<T>),
    spun: bool,
) -> MpiResult<T> {
    let mut spun = spun;
    loop {
        let mut settle = false;
        let mut unlocked = false;
        let r = state::with_hot(|s| {
            if let Some(v) = f(s) {
                return Some(v);
            }
            // Generalized requests completed by the application need their query callback,
            // which must run outside the lock.
            settle = s.locals.get(sched::rank()).is_some_and(|l| !l.greq_ready.is_empty());
            if settle || spun || sched::others_ready() {
                return None;
            }
            // With several workers (SMP mode) the answer may come from a cousin running on
            // another one, which needs the lock: wait for it without holding it.
            if s.cfg.workers > 1 {
                unlocked = true;
                return None;
            }
            let me = sched::current();
            sched::metrics::spin_begin(me);
            let r = spin(s, &mut f, &mut step);
            sched::metrics::spin_end(me);
            r
        })?;
        if let Some(v) = r {
            return Ok(v);
        }
        spun = false;
        if settle {
            settle_greqs()?;
            continue;
        }
        if unlocked && spin_unlocked() {
            continue;
        }
        park();
    }
}

/// Rounds of `spin_unlocked`'s wait (a few microseconds) and how often it polls the
/// transport meanwhile.
const UNLOCKED_SPINS: u32 = 4096;
const UNLOCKED_POLL_EVERY: u32 = 64;

/// SMP mode, nobody else to run: waits in place, without the state lock, for a wake-up (a
/// cousin on another worker completed what this rank waits for) or for the transport to
/// move (polled now and then, when the lock is free). True when it is worth looking again;
/// false when the caller should park (the wait was long, or another task became ready).
#[inline(never)]
pub fn spin_unlocked() -> bool {
    let me = sched::current();
    if sched::queue::workers() == 1 {
        return spin_alone(me);
    }
    sched::metrics::spin_begin(me);
    let mut again = false;
    for i in 1..=UNLOCKED_SPINS {
        if sched::park::take_notified(me) {
            again = true;
            break;
        }
        if i % UNLOCKED_POLL_EVERY == 0 {
            if poll_unlocked() {
                again = true;
                break;
            }
            if sched::others_ready() {
                break;
            }
        }
        std::hint::spin_loop();
    }
    sched::metrics::spin_end(me);
    again
}

/// One poll of the transport by a rank waiting in place: on the read side
/// (`shared::poll`: plain eager arrivals go to their receivers under the transport's lock and
/// one `Local`'s), and through the write side only when something else arrived or real
/// requests wait for events (and the write side is free: a waiting rank never waits for it).
/// Whether anything moved: what it delivered to the rank itself woke nobody (it runs), so it
/// must look again.
pub fn poll_unlocked() -> bool {
    match state::shared(|sh| super::shared::poll(&sh)) {
        Some(super::shared::Polled::Delivered) => true,
        Some(super::shared::Polled::Nothing) => false,
        Some(super::shared::Polled::General) | None => state::try_with(|s| s.progress()).unwrap_or(false),
    }
}

/// `spin_unlocked` with one worker: nobody else can wake this rank while it runs, only what
/// its own polls bring, so it polls at once, as `spin` does under the lock.
fn spin_alone(me: usize) -> bool {
    sched::metrics::spin_begin(me);
    let mut again = false;
    for _ in 0..SPIN_POLLS {
        if state::try_with(|s| s.progress()).unwrap_or(false) || sched::park::take_notified(me) {
            again = true;
            break;
        }
    }
    sched::metrics::spin_end(me);
    again
}

/// Out of line, so that the thread-local lookups of parking are not hoisted into every
/// blocking call's entry.
#[inline(never)]
fn park() {
    sched::park();
}

#[cold]
#[inline(never)]
fn settle_greqs() -> MpiResult<()> {
    crate::core::request::settle_greqs()
}

/// Polls in place before parking when no sibling can run.
pub const SPIN_POLLS: u32 = 64;

/// Nobody else can run: polls in place. Only an event can change `f`'s answer, and an event
/// that woke a sibling means it is time to let the sibling run.
#[inline(always)]
fn spin<T>(
    s: &mut State,
    f: &mut impl FnMut(&mut State) -> Option<T>,
    step: &mut impl FnMut(&mut State) -> (bool, Option<T>),
) -> Option<T> {
    for _ in 0..SPIN_POLLS {
        let (moved, v) = step(s);
        if v.is_some() {
            return v;
        }
        if moved {
            if let Some(v) = f(s) {
                return Some(v);
            }
            if sched::others_ready() {
                return None;
            }
        }
    }
    None
}

/// Waits for request `id` and finishes it.
pub fn wait(id: ReqId) -> MpiResult<Status> {
    let me = sched::current();
    let f = |s: &mut State| {
        if is_done(s, id) {
            return Some(finish(s, id));
        }
        // The completion wakes whoever waits: with MPI_THREAD_MULTIPLE that may be another
        // thread of the rank than the one that started the request.
        if let Some(r) = s.req_mut(id) {
            r.waiter = me;
        }
        None
    };
    if !super::direct::on() {
        return block_on(f);
    }
    // Point-to-point passing through (`direct`): polls the real request alone, as the real
    // MPI_Wait does, and the whole engine only now and then (the ring, other requests).
    let mut n = 0u32;
    block_on_with(f, |s| {
        n = n.wrapping_add(1);
        if !n.is_multiple_of(DIRECT_FULL_POLL) && s.direct_test(id) {
            return (true, None);
        }
        (n.is_multiple_of(DIRECT_FULL_POLL) && s.progress(), None)
    })
}

/// A wait on a direct request polls the whole progress engine once in this many polls.
pub const DIRECT_FULL_POLL: u32 = 16;

/// Waits for all of `ids`; returns their statuses in order.
pub fn wait_all(ids: &[ReqId]) -> MpiResult<Vec<Status>> {
    let mut out = Vec::with_capacity(ids.len());
    for &id in ids {
        out.push(wait(id)?);
    }
    Ok(out)
}

/// Turns a status's error into the call's error (truncation etc.).
pub fn status_result(st: Status, what: &str) -> MpiResult<Status> {
    if st.error == c::MPI_SUCCESS {
        Ok(st)
    } else if st.error == c::MPI_ERR_TRUNCATE {
        Err(MpiError::new(
            c::MPI_ERR_TRUNCATE,
            format!("{what}: message truncated: {} bytes arrived for a smaller buffer", st.bytes),
        ))
    } else {
        Err(MpiError::new(st.error, format!("{what} failed")))
    }
}

/// Packs a send buffer unless it can be sent in place.
///
/// # Safety
/// `buf` must hold `count` elements of `dt`.
pub unsafe fn send_data(buf: *const u8, count: usize, dt: &DtRef) -> SendData {
    // A buffer in the program's thread-locals is copied now: it holds this subrank's values
    // only while it runs (`tlsbuf`).
    if dt.is_contiguous() && crate::core::p2p::tlsbuf::in_swapped(buf, count, dt).is_none() {
        SendData {
            ptr: buf,
            len: count * dt.size,
            owned: None,
        }
    } else {
        let mut v = Vec::with_capacity(count * dt.size);
        dt.pack(buf, count, &mut v);
        SendData {
            ptr: v.as_ptr(),
            len: v.len(),
            owned: Some(v),
        }
    }
}

/// Starts a send of `count` elements to rank `dest` of `comm`, on context `ctx`.
///
/// # Safety
/// `buf` must hold `count` elements of `dt` until the request completes.
#[allow(clippy::too_many_arguments)]
pub unsafe fn isend(
    sub: usize,
    comm: &CommRef,
    handle: usize,
    ctx: u64,
    buf: *const u8,
    count: usize,
    dt: &DtRef,
    dest: i32,
    tag: i32,
    mode: SendMode,
) -> MpiResult<ReqId> {
    let data = send_data(buf, count, dt);
    state::with(|s| {
        let id = s.new_request(sub, handle);
        if dest == c::MPI_PROC_NULL {
            if let Some(r) = s.req_mut(id) {
                r.status = proc_null_status();
            }
            s.complete(id);
            return Ok(id);
        }
        s.start_send(id, sub, ctx, comm.rank, comm.world_of(dest), tag, data, mode)?;
        Ok(id)
    })?
}

/// Starts a receive of up to `count` elements from rank `src` (or ANY_SOURCE) of `comm`.
///
/// # Safety
/// `buf` must have room for `count` elements of `dt` until the request completes.
#[allow(clippy::too_many_arguments)]
pub unsafe fn irecv(sub: usize, handle: usize, ctx: u64, buf: *mut u8, count: usize, dt: &DtRef, src: i32, tag: i32) -> MpiResult<ReqId> {
    state::with(|s| {
        let id = s.new_request(sub, handle);
        if src == c::MPI_PROC_NULL {
            if let Some(r) = s.req_mut(id) {
                r.status = proc_null_status();
            }
            s.complete(id);
            return id;
        }
        // SAFETY: the caller's buffer, and the caller runs.
        unsafe {
            s.start_recv(
                id,
                sub,
                Pattern { ctx, src, tag },
                RecvTarget {
                    buf,
                    count,
                    dt: dt.clone().into(),
                },
            )
        };
        id
    })
}

/// The status of a communication with MPI_PROC_NULL.
pub fn proc_null_status() -> Status {
    Status {
        source: c::MPI_PROC_NULL,
        tag: c::MPI_ANY_TAG,
        error: c::MPI_SUCCESS,
        bytes: 0,
        cancelled: false,
    }
}

/// Blocks until a message matching `pat` is in `sub`'s queue; returns its status.
pub fn probe(sub: usize, pat: Pattern) -> MpiResult<Status> {
    let r = block_on(|s| {
        let st = s.probe_all(sub, &pat);
        s.locals[sub].waiting = st.is_none().then_some(pat);
        st
    });
    state::with(|s| s.locals[sub].waiting = None)?;
    r
}
