//! Point-to-point exports: send modes, receives, probes, requests and completion.

use super::consts as c;
use super::handles::{self as hd, comm, me};
use super::status::{store, store_at, MpiStatus};
use crate::core::comm::CommRef;
use crate::core::datatype::held::Held;
use crate::core::datatype::DtRef;
use crate::core::error::{err, MpiError, MpiResult};
use crate::core::p2p::blocking::{self, block_on, block_on_after, finish, is_done, status_result};
use crate::core::p2p::leanwait::LeanPoll;
use crate::core::p2p::matching::{Direct, Envelope, Pattern};
use crate::core::p2p::shared::{self, Finish, Take};
use crate::core::p2p::{direct, InPlace, SendData, SendMode};
use crate::core::request::{Persist, RecvTarget, ReqId, Status};
use crate::core::state::{self, Local, State};
use crate::sched;
use crate::transport::real::RRequest;
use std::cell::Cell;
use std::os::raw::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

type Req = usize;

/// Per task (by scheduler id), the communicator whose error handler a request-completion
/// error goes to: a per-rank word, not a thread-local, since a rank blocked in `MPI_Wait` may
/// resume on another worker thread (SMP mode). Tasks beyond the table use MPI_COMM_WORLD.
static ERRCOMM: [AtomicUsize; ERRCOMM_TASKS] = [const { AtomicUsize::new(c::MPI_COMM_WORLD) }; ERRCOMM_TASKS];
const ERRCOMM_TASKS: usize = 1 << 16;

fn errcomm() -> usize {
    ERRCOMM.get(sched::rank()).map_or(c::MPI_COMM_WORLD, |e| e.load(Ordering::Relaxed))
}
fn set_errcomm(s: &State, id: ReqId) {
    if let (Some(r), Some(e)) = (s.req(id), ERRCOMM.get(sched::rank())) {
        e.store(r.comm, Ordering::Relaxed);
    }
}

/// Checks the common send arguments; returns the resolved communicator and datatype.
pub(super) fn check_send(
    buf: *const c_void,
    count: i64,
    dt: usize,
    dest: i32,
    tag: i32,
    comm_h: usize,
) -> MpiResult<(usize, CommRef, DtRef, usize)> {
    let (sub, cm) = comm(comm_h)?;
    let n = hd::count(count)?;
    let d = hd::dtype(dt)?;
    hd::buffer(buf as *const u8, n, &d)?;
    hd::dest(&cm, dest)?;
    hd::send_tag(tag)?;
    Ok((sub, cm, d, n))
}

fn check_recv(buf: *mut c_void, count: i64, dt: usize, src: i32, tag: i32, comm_h: usize) -> MpiResult<(usize, CommRef, DtRef, usize)> {
    let (sub, cm) = comm(comm_h)?;
    let n = hd::count(count)?;
    let d = hd::dtype(dt)?;
    hd::buffer(buf as *const u8, n, &d)?;
    hd::source(&cm, src)?;
    hd::recv_tag(tag)?;
    Ok((sub, cm, d, n))
}

/// Starts a send in request `id` (already allocated), any mode.
///
/// # Safety
/// `buf` holds `n` elements of `d` until the request completes.
unsafe fn launch_send(
    s: &mut State,
    id: ReqId,
    sub: usize,
    cm: &CommRef,
    buf: *const u8,
    n: usize,
    d: &DtRef,
    dest: i32,
    tag: i32,
    mode: SendMode,
) -> MpiResult<()> {
    if dest == c::MPI_PROC_NULL {
        if let Some(r) = s.req_mut(id) {
            r.status = blocking::proc_null_status();
        }
        s.complete(id);
        return Ok(());
    }
    if mode == SendMode::Buffered {
        return bsend(s, id, sub, cm, buf, n, d, dest, tag);
    }
    let data = blocking::send_data(buf, n, d);
    s.start_send(id, sub, cm.ctx, cm.rank, cm.world_of(dest), tag, data, mode)
}

/// Buffered send: the data is copied and accounted against the attached buffer; the user's
/// request `id` completes at once, an internal one carries the message.
unsafe fn bsend(
    s: &mut State,
    id: ReqId,
    sub: usize,
    cm: &CommRef,
    buf: *const u8,
    n: usize,
    d: &DtRef,
    dest: i32,
    tag: i32,
) -> MpiResult<()> {
    let mut v = Vec::with_capacity(n * d.size);
    d.pack(buf, n, &mut v);
    let need = v.len() + c::MPI_BSEND_OVERHEAD as usize;
    let l = &mut s.locals[sub];
    let Some((_, size)) = l.bsend else {
        return err(
            c::MPI_ERR_BUFFER,
            "buffered send without an attached buffer (call MPI_Buffer_attach)",
        );
    };
    if l.bsend_used + need > size {
        return err(
            c::MPI_ERR_BUFFER,
            format!(
                "the attached buffer is too small: {need} bytes needed, {} free",
                size - l.bsend_used
            ),
        );
    }
    l.bsend_used += need;
    let comm_h = s.req(id).map(|r| r.comm).unwrap_or(c::MPI_COMM_WORLD);
    let inner = s.new_request(sub, comm_h);
    if let Some(r) = s.req_mut(inner) {
        r.freed = true;
        r.bsend_bytes = need;
    }
    let data = SendData {
        ptr: v.as_ptr(),
        len: v.len(),
        owned: Some(v),
    };
    s.start_send(inner, sub, cm.ctx, cm.rank, cm.world_of(dest), tag, data, SendMode::Standard)?;
    s.complete(id);
    Ok(())
}

pub(super) unsafe fn isend(
    buf: *const c_void,
    count: i64,
    dt: usize,
    dest: c_int,
    tag: c_int,
    comm_h: usize,
    mode: SendMode,
) -> MpiResult<ReqId> {
    if mode == SendMode::Standard {
        if let Some(id) = isend_quick(buf, count, dt, dest, tag, comm_h) {
            return Ok(id);
        }
    }
    let (sub, cm, d, n) = check_send(buf, count, dt, dest, tag, comm_h)?;
    state::with(|s| {
        let id = s.new_request(sub, comm_h);
        match launch_send(s, id, sub, &cm, buf as *const u8, n, &d, dest, tag, mode) {
            Ok(()) => Ok(id),
            Err(e) => {
                s.remove_req(id);
                Err(e)
            }
        }
    })?
}

pub(super) unsafe fn irecv(buf: *mut c_void, count: i64, dt: usize, src: c_int, tag: c_int, comm_h: usize) -> MpiResult<ReqId> {
    if let Some(id) = irecv_quick(buf, count, dt, src, tag, comm_h) {
        return Ok(id);
    }
    let (sub, cm, d, n) = check_recv(buf, count, dt, src, tag, comm_h)?;
    blocking::irecv(sub, comm_h, cm.ctx, buf as *mut u8, n, &d, src, tag)
}

/// MPI_Isend in standard mode of a contiguous predefined type to a rank of this
/// process, or eagerly to another, on the read side of the state (`shared::isend`,
/// `isend_remote`). None: the general path runs.
unsafe fn isend_shared(buf: *const c_void, count: i64, dt: usize, dest: c_int, tag: c_int, comm_h: usize) -> Option<ReqId> {
    if direct::on() {
        return None;
    }
    // (Whether this thread may read the state: `state::shared`'s first test.)
    let sub = sched::rank();
    let size = crate::core::datatype::contiguous_size(dt)?;
    if count < 0 || (buf.is_null() && count > 0) || tag < 0 {
        return None;
    }
    let len = count as usize * size;
    // A buffer in the program's thread-locals is copied by the general path (`tlsbuf`).
    if len != 0 && crate::sched::swap::in_blocks(buf as usize, buf as usize + len) {
        return None;
    }
    // SAFETY: the caller's buffer holds `len` bytes until the request completes.
    let data = unsafe { core_bytes(buf as *const u8, len) };
    state::shared(|sh| {
        // issue 16 (p2p12): one lock of the sender's `Local` for the communicator look-up
        // and, for an eager send, the built-in complete send it returns (`send_target` then
        // `isend_remote`/`isend` locked it twice). Released before the transport's lock or
        // the receiver's `Local` is taken.
        let (env, w, proc, dsub, done) = {
            let mut l = sh.local(sub)?;
            let cm = local_comm(&l, comm_h)?;
            let (ctx, src) = (cm.ctx, cm.rank);
            let w = fast_world_of(sh.world_size(), cm, comm_h, dest)?;
            let (proc, dsub) = sh.locate(w);
            let eager_max = if proc != sh.myproc() {
                sh.cfg().eager_max
            } else {
                sh.cfg().intra_eager_max
            };
            let done = shared::eager_done(&mut l, len, eager_max);
            (Envelope { ctx, src, tag }, w, proc, dsub, done)
        };
        if proc != sh.myproc() {
            let id = done?;
            shared::send_remote(&sh, proc, dsub, sub, env, data);
            return Some(id);
        }
        // SAFETY: forwarded from the caller.
        unsafe { shared::isend(&sh, sub, comm_h, dsub, w, env, data, done) }
    })?
}

/// The request-making fast paths of a standard-mode MPI_Isend: on a direct communicator
/// (`isend_direct`) or on the read side of the state (`isend_shared`). None: the general path
/// runs (nothing was done).
#[inline(always)]
unsafe fn isend_quick(buf: *const c_void, count: i64, dt: usize, dest: c_int, tag: c_int, comm_h: usize) -> Option<ReqId> {
    if direct::on() {
        isend_direct(buf, count, dt, dest, tag, comm_h)
    } else {
        isend_shared(buf, count, dt, dest, tag, comm_h)
    }
}

/// `isend_quick` for MPI_Irecv.
#[inline(always)]
unsafe fn irecv_quick(buf: *mut c_void, count: i64, dt: usize, src: c_int, tag: c_int, comm_h: usize) -> Option<ReqId> {
    if direct::on() {
        irecv_direct(buf, count, dt, src, tag, comm_h)
    } else {
        irecv_shared(buf, count, dt, src, tag, comm_h)
    }
}

/// The fast path of MPI_Isend/MPI_Irecv (`quick`: `isend_quick` or `irecv_quick`), outside
/// the general path's unwinding guard (`mpi_fn_fast`): the request in `*req`. Err: the
/// general path runs (nothing was done; `isend`/`irecv` try the same fast paths first, which
/// then decline again).
#[inline(always)]
unsafe fn req_fast(req: *mut Req, quick: impl FnOnce() -> Option<ReqId>) -> Result<c_int, ()> {
    if req.is_null() {
        return Err(());
    }
    let id = quick().ok_or(())?;
    // SAFETY: the caller's request pointer, checked non-null.
    unsafe { *req = id as Req };
    Ok(c::MPI_SUCCESS)
}

/// The bytes of a send of `count` items of `dt` with `tag` that a direct fast path may take
/// (`core::p2p::direct`): a contiguous predefined type, valid arguments, a user tag the real
/// MPI accepts. None: the general path decides (and reports any error).
#[inline(always)]
fn direct_send_len(buf: *const c_void, count: i64, dt: usize, tag: c_int) -> Option<usize> {
    let size = crate::core::datatype::contiguous_size(dt)?;
    if count < 0 || (buf.is_null() && count > 0) || !(0..=hd::tag_ub()).contains(&tag) {
        return None;
    }
    Some(count as usize * size)
}

/// `direct_send_len` for a receive into `buf` (tag or MPI_ANY_TAG): its capacity in bytes and
/// its datatype, when the buffer also lies outside the program's thread-locals (a direct
/// receive writes there while other subranks' values may be in place: see `recv_direct`).
/// issue 16 (p2p8): the datatype stays a handle (a contiguous predefined one: no reference
/// count on the way; `recv_target` makes the target when a receive needs one).
#[inline(always)]
fn direct_recv_cap(buf: *mut c_void, count: i64, dt: usize, tag: c_int) -> Option<usize> {
    let size = crate::core::datatype::contiguous_size(dt)?;
    if count < 0 || (buf.is_null() && count > 0) || (tag < 0 && tag != c::MPI_ANY_TAG) || tag > hd::tag_ub() {
        return None;
    }
    let cap = count as usize * size;
    if cap != 0 && crate::sched::swap::in_blocks(buf as usize, buf as usize + cap) {
        return None;
    }
    Some(cap)
}

/// The target of a receive of `count` items of the predefined datatype `dt` (checked by
/// `direct_recv_cap`) at `buf`.
fn recv_target(buf: *mut c_void, count: i64, dt: usize) -> RecvTarget {
    let dt = crate::core::datatype::predefined_arc(dt).expect("a predefined datatype (direct_recv_cap)");
    RecvTarget {
        buf: buf as *mut u8,
        count: count as usize,
        dt: Held::Table(dt),
    }
}

/// MPI_Isend in standard mode of a contiguous predefined type on a direct communicator
/// (`core::p2p::direct`, point-to-point passing through): checked and started under one lock,
/// without the general path's copies of the communicator and datatype. None: the general path
/// runs (nothing was done), for any error, MPI_PROC_NULL, another communicator...
#[inline(never)]
unsafe fn isend_direct(buf: *const c_void, count: i64, dt: usize, dest: c_int, tag: c_int, comm_h: usize) -> Option<ReqId> {
    let len = direct_send_len(buf, count, dt, tag)?;
    // A buffer in the program's thread-locals is copied by the general path (`tlsbuf`).
    if len != 0 && crate::sched::swap::in_blocks(buf as usize, buf as usize + len) {
        return None;
    }
    let sub = sched::rank();
    state::with_hot(|s| {
        let cm = fast_comm(s, sub, comm_h)?;
        let w = fast_world_of(s.world_size(), cm, comm_h, dest)?;
        let ctx = cm.ctx;
        // SAFETY: the caller's buffer holds `len` bytes until the request completes.
        unsafe { s.isend_direct(sub, comm_h, ctx, w, tag, buf as *const u8, len) }
    })
    .ok()
    .flatten()
}

/// MPI_Irecv of a contiguous predefined type on a direct communicator (`isend_direct`'s
/// counterpart). None: the general path runs (nothing was done).
#[inline(never)]
unsafe fn irecv_direct(buf: *mut c_void, count: i64, dt: usize, src: c_int, tag: c_int, comm_h: usize) -> Option<ReqId> {
    let cap = direct_recv_cap(buf, count, dt, tag)?;
    let sub = sched::rank();
    state::with_hot(|s| {
        let cm = fast_comm(s, sub, comm_h)?;
        if src != c::MPI_ANY_SOURCE {
            fast_world_of(s.world_size(), cm, comm_h, src)?;
        }
        let pat = Pattern { ctx: cm.ctx, src, tag };
        // SAFETY: the caller's buffer, valid until the request completes, outside the
        // thread-locals (above).
        unsafe { s.irecv_direct(sub, comm_h, pat, buf as *mut u8, count as usize, dt, cap) }
    })
    .ok()
    .flatten()
}

/// MPI_Irecv of a contiguous predefined type on the read side of the state
/// (`shared::irecv`). None: the general path runs.
unsafe fn irecv_shared(buf: *mut c_void, count: i64, dt: usize, src: c_int, tag: c_int, comm_h: usize) -> Option<ReqId> {
    if direct::on() {
        return None;
    }
    let sub = sched::rank();
    crate::core::datatype::contiguous_size(dt)?;
    if count < 0 || (buf.is_null() && count > 0) || (tag < 0 && tag != c::MPI_ANY_TAG) {
        return None;
    }
    // issue 16 (rate16): a contiguous predefined type (checked above) is the table's own
    // entry, taken without `lookup`'s other cases (session 26: and without its count,
    // `datatype::held`); whether this thread may read the state is `state::shared`'s first
    // test (a separate `state::readable` made it twice).
    let d = Held::Table(crate::core::datatype::predefined_arc(dt)?);
    state::shared(|sh| {
        let l = sh.local(sub)?;
        let ctx = {
            let cm = local_comm(&l, comm_h)?;
            if src != c::MPI_ANY_SOURCE {
                fast_world_of(sh.world_size(), cm, comm_h, src)?;
            }
            cm.ctx
        };
        let t = RecvTarget {
            buf: buf as *mut u8,
            count: count as usize,
            dt: d,
        };
        // SAFETY: the caller's buffer, valid until the request completes; the caller runs.
        unsafe { shared::irecv(&sh, l, sub, comm_h, Pattern { ctx, src, tag }, t) }
    })?
}

/// Waits on the read side of the state for the running subrank's own plain
/// request `h` and takes it. None: the general path runs (nothing was taken).
pub(super) fn wait_shared(h: usize) -> Option<Status> {
    if direct::on() {
        return None;
    }
    if !state::readable() {
        return None;
    }
    let sub = sched::rank();
    if crate::core::request::owner_of(h as ReqId) != Some(sub) {
        return None;
    }
    loop {
        match state::shared(|sh| sh.local(sub).map(|mut l| shared::finish_own(&mut l, h as ReqId)))?? {
            Finish::Done(st, comm) => {
                if let Some(e) = ERRCOMM.get(sub) {
                    e.store(comm, Ordering::Relaxed);
                }
                return Some(st);
            }
            Finish::Pending => {
                if sched::others_ready() || !blocking::spin_unlocked() {
                    sched::park();
                }
            }
            Finish::General => return None,
        }
    }
}

/// MPI_Test of the running subrank's own plain request `h` on the read side of
/// the state: Some(Some(status)) when it completed (taken), Some(None) when not yet (after a
/// progress step if nobody else is making one). None: the general path runs.
fn test_shared(h: usize) -> Option<Option<Status>> {
    if direct::on() {
        return None;
    }
    if !state::readable() {
        return None;
    }
    let sub = sched::rank();
    if crate::core::request::owner_of(h as ReqId) != Some(sub) {
        return None;
    }
    let look = || state::shared(|sh| sh.local(sub).map(|mut l| shared::finish_own(&mut l, h as ReqId))).flatten();
    let mut r = look()?;
    if matches!(r, Finish::Pending) && state::try_with(|s| s.progress()) == Some(true) {
        r = look()?;
    }
    match r {
        Finish::Done(st, comm) => {
            if let Some(e) = ERRCOMM.get(sub) {
                e.store(comm, Ordering::Relaxed);
            }
            Some(Some(st))
        }
        Finish::Pending => Some(None),
        Finish::General => None,
    }
}

/// MPI_Waitall on the read side of the state when every handle is null or a plain
/// request of the running subrank. Returns how many leading entries it finished (their
/// handles nulled, statuses stored) and whether one failed; the general path finishes the
/// rest (none, unless a wait turned general midway).
///
/// # Safety
/// `v` are the caller's handles; `statuses` is null or has room for `v.len()` statuses.
unsafe fn waitall_shared(v: &mut [Req], statuses: *mut MpiStatus) -> (usize, bool) {
    if !state::readable() || v.is_empty() || direct::on() {
        return (0, false);
    }
    let sub = sched::rank();
    let own = state::shared(|sh| sh.local(sub).is_some_and(|l| shared::all_own(&l, v, c::MPI_REQUEST_NULL)));
    if own != Some(true) {
        return (0, false);
    }
    let mut failed = false;
    for (i, h) in v.iter_mut().enumerate() {
        let st = if *h == c::MPI_REQUEST_NULL {
            Status::empty()
        } else {
            match wait_shared(*h) {
                Some(st) => st,
                None => return (i, failed),
            }
        };
        failed |= st.error != c::MPI_SUCCESS;
        *h = c::MPI_REQUEST_NULL;
        store_at(statuses, i, &st);
    }
    (v.len(), failed)
}

/// issue 16 (p2p9): MPI_Waitall with one worker per process (the general path, not the
/// pass-through) when every handle is null or a plain request of the running subrank: under one
/// lock, takes the complete requests in order and makes a progress step of the engine when the
/// next is not complete, until all are taken, for at most `SPIN_POLLS` steps (as the general
/// path spins before parking) or until another task is ready to run. A window's arrivals then
/// cost one progress step each, not a progress step, a lock and a look through the read side
/// per request (`waitall_shared`'s `wait_shared` per handle). Returns how many leading entries
/// it finished (handles nulled, statuses stored), whether one failed, and whether it spun (the
/// general path, which finishes the rest, then parks at once).
///
/// # Safety
/// `v` are the caller's handles; `statuses` is null or has room for `v.len()` statuses.
unsafe fn waitall_alone(v: &mut [Req], statuses: *mut MpiStatus) -> (usize, bool, bool) {
    let mut failed = false;
    let (k, spun) = wait_alone(v, |i, st| {
        failed |= st.error != c::MPI_SUCCESS;
        // SAFETY: the caller's statuses have room for `v.len()` (or are ignored).
        unsafe { store_at(statuses, i, &st) };
    });
    (k, failed, spun)
}

/// `waitall_alone`'s loop: each finished entry's index and status go to `each`. Returns how
/// many leading entries it finished and whether it spun.
unsafe fn wait_alone(v: &mut [Req], mut each: impl FnMut(usize, Status)) -> (usize, bool) {
    if v.is_empty() || direct::on() || !sched::in_coroutine() || sched::queue::workers() != 1 {
        return (0, false);
    }
    let sub = sched::rank();
    let mut g = state::lock();
    let Some(s) = g.as_mut() else { return (0, false) };
    if !s.locals.get(sub).is_some_and(|l| shared::all_own(l, v, c::MPI_REQUEST_NULL)) {
        return (0, false);
    }
    let mut k = 0;
    // issue 16 (rate16): the handles are looked at again only after a progress step that
    // moved something (a message from the ring, a real request, a direct receive): under the
    // state lock with one worker nothing else completes a request of this rank, so after a
    // step that brought nothing the look would fail again. A step that completed something
    // and said it did not costs only polls: the spin ends and the general path looks.
    let mut look = true;
    for i in 0..=blocking::SPIN_POLLS {
        while let Some(h) = v.get_mut(k).filter(|_| look) {
            let st = if *h == c::MPI_REQUEST_NULL {
                Status::empty()
            } else {
                match take_own_done(s, sub, h) {
                    Some(st) => st,
                    None => break,
                }
            };
            each(k, st);
            k += 1;
        }
        if k == v.len() {
            return (k, false);
        }
        if i == blocking::SPIN_POLLS || sched::others_ready() {
            break;
        }
        look = s.progress();
    }
    (k, true)
}

/// Waits for `id` and returns its status, with a truncation turned into the call's error.
fn wait_one(id: ReqId, what: &str) -> MpiResult<Status> {
    let st = blocking::wait(id)?;
    status_result(st, what)
}

/// Standard-mode send of a predefined contiguous type that completes without a request,
/// checked and done under one lock. Returns false when the general path must run.
#[inline(always)]
unsafe fn send_now(buf: *const c_void, count: i64, dt: usize, dest: c_int, tag: c_int, comm_h: usize) -> MpiResult<bool> {
    if direct::on() {
        return Ok(false);
    }
    let sub = sched::rank();
    let Some(d) = crate::core::datatype::predefined(dt) else {
        return Ok(false);
    };
    if sub == usize::MAX || count < 0 || !d.is_contiguous() || (buf.is_null() && count > 0) {
        return Ok(false);
    }
    state::with_hot(|s| -> MpiResult<bool> {
        hd::active(s, sub)?;
        let cm = hd::comm_in(s, sub, comm_h)?;
        hd::dest(cm, dest)?;
        hd::send_tag(tag)?;
        if dest == c::MPI_PROC_NULL {
            return Ok(true);
        }
        let (ctx, rank, w) = (cm.ctx, cm.rank, cm.world_of(dest));
        Ok(s.try_send_now(sub, ctx, rank, w, tag, buf as *const u8, count as usize * d.size))
    })?
}

/// Blocking receive of a predefined contiguous type without a request: the rank waits for
/// a matching message to reach its queue and copies it out. Receives it posted earlier still
/// match first (arrivals are matched against posted receives before they are queued). Returns
/// None when the general path must run (e.g. a rendezvous from another process).
#[inline(always)]
unsafe fn recv_direct(
    buf: *mut c_void,
    count: i64,
    dt: usize,
    src: c_int,
    tag: c_int,
    comm_h: usize,
    spun: bool,
) -> MpiResult<Option<Status>> {
    if direct::on() {
        return Ok(None);
    }
    let sub = sched::rank();
    let Some(d) = crate::core::datatype::predefined(dt) else {
        return Ok(None);
    };
    if sub == usize::MAX || count < 0 || !d.is_contiguous() || (buf.is_null() && count > 0) {
        return Ok(None);
    }
    // The rank's one direct receive belongs to its coroutine: its other threads (several may
    // receive at once, MPI_THREAD_MULTIPLE) post requests.
    if !sched::in_coroutine() {
        return Ok(None);
    }
    let cap = count as usize * d.size;
    // A buffer in the program's thread-locals holds the running subrank's values only: it
    // must not be written while this rank is parked (see core::p2p::tlsbuf).
    let direct_ok = cap == 0 || !crate::sched::swap::in_blocks(buf as usize, buf as usize + cap);
    // The argument checks run under the lock of block_on's first try (one lock, not two).
    let checked: Cell<Option<Pattern>> = Cell::new(None);
    block_on_after(
        |s| {
            let pat = match checked.get() {
                Some(p) => p,
                None => match recv_pattern(s, sub, comm_h, src, tag) {
                    Ok(Some(p)) => {
                        checked.set(Some(p));
                        p
                    }
                    Ok(None) => return Some(Ok(Some(blocking::proc_null_status()))),
                    Err(e) => return Some(Err(e)),
                },
            };
            // An arrival may have been copied in already while this rank was parked.
            let l = &s.locals[sub];
            let done = l.direct.filter(|d| !d.copying).and_then(|d| d.done);
            let r = match done {
                Some(st) => Some(Some(st)),
                // Nothing queued: nothing to scan.
                None if l.unexpected.is_empty() => None,
                None => match s.try_recv_now(sub, &pat, buf as *mut u8, cap) {
                    Some(st) => Some(Some(st)),
                    // A rendezvous message from another process needs a posted request.
                    None if s.probe(sub, &pat).is_some() => Some(None),
                    None => None,
                },
            };
            let l = &mut s.locals[sub];
            if r.is_some() {
                l.waiting = None;
                l.direct = None;
            } else {
                l.waiting = Some(pat);
                if direct_ok {
                    l.direct = Some(Direct {
                        pat,
                        buf: buf as *mut u8,
                        cap,
                        done: None,
                        copying: false,
                    });
                }
            }
            r.map(Ok)
        },
        // Polling in place (this rank runs): its own eager message goes straight from the
        // transport into `buf`.
        |s| match checked.get() {
            Some(pat) if direct_ok => {
                // SAFETY: the caller's buffer holds `cap` bytes, and this rank runs.
                let (moved, st) = unsafe { s.progress_recv(sub, &pat, buf as *mut u8, cap) };
                match st {
                    Some(st) => {
                        let l = &mut s.locals[sub];
                        l.waiting = None;
                        l.direct = None;
                        (true, Some(Ok(Some(st))))
                    }
                    None => (moved, None),
                }
            }
            _ => (s.progress(), None),
        },
        spun,
    )?
}

/// Checks a receive's arguments under the lock; returns its pattern, or None for
/// MPI_PROC_NULL.
#[inline]
fn recv_pattern(s: &State, sub: usize, comm_h: usize, src: c_int, tag: c_int) -> MpiResult<Option<Pattern>> {
    hd::active(s, sub)?;
    let cm = hd::comm_in(s, sub, comm_h)?;
    hd::source(cm, src)?;
    hd::recv_tag(tag)?;
    Ok((src != c::MPI_PROC_NULL).then_some(Pattern { ctx: cm.ctx, src, tag }))
}

/// MPI_Send: the request-free path inline, the general one out of line.
#[inline(always)]
unsafe fn send_std(buf: *const c_void, count: i64, dt: usize, dest: c_int, tag: c_int, comm_h: usize) -> MpiResult<()> {
    if send_now(buf, count, dt, dest, tag, comm_h)? {
        return Ok(());
    }
    send(buf, count, dt, dest, tag, comm_h, SendMode::Standard, "MPI_Send")
}

mpi_fn_fast!(MPI_Send, PMPI_Send, |buf: *const c_void, count: c_int, dt: usize, dest: c_int, tag: c_int, comm_h: usize|
    errcomm = comm_h, fast(_spun: ()) = send_fast(buf, count, dt, dest, tag, comm_h), {
    send_std(buf, i64::from(count), dt, dest, tag, comm_h)
});
mpi_fn!(
    MPI_Send_c,
    PMPI_Send_c,
    |buf: *const c_void, count: i64, dt: usize, dest: c_int, tag: c_int, comm_h: usize| errcomm = comm_h,
    { send_std(buf, count, dt, dest, tag, comm_h) }
);

/// The communicator `comm_h` of local subrank `sub` when both are valid and the subrank is
/// between MPI_Init and MPI_Finalize (None: the general path decides, with its errors).
#[inline(always)]
fn fast_comm(s: &State, sub: usize, comm_h: usize) -> Option<&CommRef> {
    local_comm(s.locals.get(sub)?, comm_h)
}

/// `fast_comm` on the subrank's `Local`.
#[inline(always)]
pub(super) fn local_comm(l: &Local, comm_h: usize) -> Option<&CommRef> {
    if !l.initialized || l.finalized {
        return None;
    }
    l.comms.get(hd::comm_index(comm_h)?)?.as_ref()
}

/// World rank of `rank` of `cm` (handle `comm_h`) when it is a valid rank (not
/// MPI_PROC_NULL) of a world of `world` ranks: in MPI_COMM_WORLD it is the rank itself.
#[inline(always)]
pub(super) fn fast_world_of(world: usize, cm: &CommRef, comm_h: usize, rank: c_int) -> Option<u32> {
    if comm_h == c::MPI_COMM_WORLD {
        return ((rank as u32 as usize) < world).then_some(rank as u32);
    }
    cm.peers().ranks.get(usize::try_from(rank).ok()?).copied()
}

/// `len` bytes at `ptr` as a slice (empty when `len` is 0, whatever `ptr` is).
///
/// # Safety
/// `ptr..ptr+len` must be readable for the returned lifetime.
#[inline(always)]
pub(super) unsafe fn core_bytes<'a>(ptr: *const u8, len: usize) -> &'a [u8] {
    if len == 0 || ptr.is_null() {
        &[]
    } else {
        // SAFETY: forwarded from the caller.
        unsafe { std::slice::from_raw_parts(ptr, len) }
    }
}

/// A send's envelope from the running subrank `sub` on communicator `comm_h` to its rank
/// `dest`, the destination's world rank, process and subrank (read side). None: the general
/// path decides (an invalid handle or rank, MPI_PROC_NULL, MPI not active).
#[inline(always)]
fn send_target(sh: &state::Shared<'_>, sub: usize, comm_h: usize, dest: c_int, tag: c_int) -> Option<(Envelope, u32, usize, usize)> {
    let (ctx, src, w) = {
        let l = sh.local(sub)?;
        let cm = local_comm(&l, comm_h)?;
        (cm.ctx, cm.rank, fast_world_of(sh.world_size(), cm, comm_h, dest)?)
    };
    let (proc, dsub) = sh.locate(w);
    Some((Envelope { ctx, src, tag }, w, proc, dsub))
}

/// MPI_Send's fast path on the read side of the state (`core::p2p::shared`): to a
/// rank of this process, or an eager message to another. None: not SMP mode; Some(false): the
/// other paths run.
#[inline(always)]
fn send_shared(sub: usize, comm_h: usize, dest: c_int, tag: c_int, data: &[u8]) -> Option<bool> {
    state::shared(|sh| {
        let (env, _, proc, dsub) = send_target(&sh, sub, comm_h, dest, tag)?;
        if proc != sh.myproc() {
            return Some(shared::send_remote(&sh, proc, dsub, sub, env, data));
        }
        Some(shared::send(&sh, dsub, env, data, sh.cfg().intra_eager_max))
    })
    .map(|r| r.unwrap_or(false))
}

/// MPI_Recv's fast path on the read side of the state: a queued copy, or a
/// direct receive registered and waited for without the state's write side (a cousin on
/// another worker sends meanwhile). None: not SMP mode, or the general path must run.
///
/// # Safety
/// `buf..buf+cap` must be writable, outside the swapped thread-locals.
#[inline(always)]
unsafe fn recv_shared(sub: usize, comm_h: usize, src: c_int, tag: c_int, buf: *mut u8, cap: usize) -> Option<Status> {
    let first = state::shared(|sh| {
        let l = sh.local(sub)?;
        let cm = local_comm(&l, comm_h)?;
        if src != c::MPI_ANY_SOURCE {
            fast_world_of(sh.world_size(), cm, comm_h, src)?;
        }
        let pat = Pattern { ctx: cm.ctx, src, tag };
        // SAFETY: forwarded from the caller; `l` is the running subrank's.
        Some(unsafe { shared::recv_start(l, &pat, buf, cap) })
    })??;
    match first {
        Take::Done(st) => Some(st),
        Take::Waiting => recv_shared_wait(sub),
        Take::General => None,
    }
}

/// Waits for the direct receive `recv_shared` registered.
#[inline(never)]
pub(super) fn recv_shared_wait(sub: usize) -> Option<Status> {
    loop {
        // A ready sibling runs at once; otherwise wait in place a little, for a cousin.
        if sched::others_ready() || !blocking::spin_unlocked() {
            sched::park();
        }
        let r = state::shared(|sh| sh.local(sub).map(|mut l| shared::recv_check(&mut l)))??;
        match r {
            Take::Done(st) => return Some(st),
            Take::Waiting => {}
            Take::General => return None,
        }
    }
}

// The fast paths take every non-negative tag as valid.
const _: () = assert!(hd::TAG_UB == i32::MAX);

/// MPI_Send's fast path: a valid standard send of a contiguous predefined type that needs no
/// request (`State::send_now_fast`), checked and done under one lock. Err: the general path
/// runs (from the start: this one had no effect), for any error, MPI_PROC_NULL, a send that
/// needs a request...
#[inline(always)]
unsafe fn send_fast(buf: *const c_void, count: c_int, dt: usize, dest: c_int, tag: c_int, comm_h: usize) -> Result<c_int, ()> {
    if direct::on() {
        return send_fast_direct(buf, count, dt, dest, tag, comm_h);
    }
    let sub = sched::rank();
    let size = crate::core::datatype::contiguous_size(dt).ok_or(())?;
    if count < 0 || (buf.is_null() && count > 0) || tag < 0 {
        return Err(());
    }
    let len = count as usize * size;
    // SAFETY: the caller's buffer holds `len` bytes for the duration of this call.
    if send_shared(sub, comm_h, dest, tag, unsafe { core_bytes(buf as *const u8, len) }) == Some(true) {
        return Ok(c::MPI_SUCCESS);
    }
    let mut g = state::lock();
    let Some(s) = g.as_mut() else { return Err(()) };
    let Some(cm) = fast_comm(s, sub, comm_h) else { return Err(()) };
    let Some(w) = fast_world_of(s.world_size(), cm, comm_h, dest) else {
        return Err(());
    };
    let (ctx, rank) = (cm.ctx, cm.rank);
    if s.send_now_fast(sub, ctx, rank, w, tag, buf as *const u8, len) {
        Ok(c::MPI_SUCCESS)
    } else {
        Err(())
    }
}

/// `send_fast` when point-to-point passes through (`core::p2p::direct`): a small message on
/// a direct communicator is one blocking real send.
#[inline(never)]
unsafe fn send_fast_direct(buf: *const c_void, count: c_int, dt: usize, dest: c_int, tag: c_int, comm_h: usize) -> Result<c_int, ()> {
    let sub = sched::rank();
    let len = direct_send_len(buf, i64::from(count), dt, tag).ok_or(())?;
    if len > crate::transport::direct::SMALL {
        return send_direct_large(buf, len, dest, tag, comm_h, sub);
    }
    let mut g = state::lock();
    let Some(s) = g.as_mut() else { return Err(()) };
    let Some(cm) = fast_comm(s, sub, comm_h) else { return Err(()) };
    let Some(w) = fast_world_of(s.world_size(), cm, comm_h, dest) else {
        return Err(());
    };
    if s.direct_send_small(cm.ctx, w, tag, buf as *const u8, len) {
        Ok(c::MPI_SUCCESS)
    } else {
        Err(())
    }
}

/// issue 16 (p2p7): `send_fast_direct` of more than `SMALL` bytes (`len`): one real
/// `MPI_Isend` in a request of the rank (`State::isend_direct`), finished at once when the real
/// MPI sent it eagerly, else waited for as MPI_Wait waits (it took the general path's export,
/// checks and request wait: 1 KiB ping-pong was slower than on the general path). Err: the
/// general path runs (nothing was done).
#[inline(never)]
unsafe fn send_direct_large(buf: *const c_void, len: usize, dest: c_int, tag: c_int, comm_h: usize, sub: usize) -> Result<c_int, ()> {
    // Threads of the program, and a buffer in the thread-locals (copied by the general path).
    if !sched::in_coroutine() || !outside_tls(buf, len) {
        return Err(());
    }
    let mut h = {
        let mut g = state::lock();
        let s = g.as_mut().ok_or(())?;
        let cm = fast_comm(s, sub, comm_h).ok_or(())?;
        let w = fast_world_of(s.world_size(), cm, comm_h, dest).ok_or(())?;
        let ctx = cm.ctx;
        // SAFETY: the caller's buffer holds `len` bytes until this call returns, after the
        // send completed.
        let id = unsafe { s.isend_direct(sub, comm_h, ctx, w, tag, buf as *const u8, len) }.ok_or(())?;
        if is_done(s, id) {
            finish(s, id);
            return Ok(c::MPI_SUCCESS);
        }
        id as Req
    };
    // SAFETY: `h` is the request just made.
    if let Err(spun) = unsafe { wait_direct(std::slice::from_mut(&mut h), false, |_, _| {}) } {
        let r = blocking::block_on_after(
            |s| is_done(s, h as ReqId).then(|| finish(s, h as ReqId)),
            |s| (s.progress(), None),
            spun,
        );
        if let Err(e) = r {
            return Ok(super::raise(comm_h, "MPI_Send", e));
        }
    }
    Ok(c::MPI_SUCCESS)
}

/// `recv_fast` when point-to-point passes through (`core::p2p::direct`): a receive on a
/// direct communicator is one real receive, polled in place as the real MPI_Recv would, then
/// (when nothing came) handed to the engine as a request the rank parks on.
#[inline(never)]
unsafe fn recv_fast_direct(
    buf: *mut c_void,
    count: c_int,
    dt: usize,
    src: c_int,
    tag: c_int,
    comm_h: usize,
    status: *mut MpiStatus,
) -> Result<c_int, bool> {
    let sub = sched::rank();
    // Its other threads (MPI_THREAD_MULTIPLE) take the general path.
    if !sched::in_coroutine() {
        return Err(false);
    }
    let cap = direct_recv_cap(buf, i64::from(count), dt, tag).ok_or(false)?;
    let started = {
        let mut g = state::lock();
        let Some(s) = g.as_mut() else { return Err(false) };
        let Some(cm) = fast_comm(s, sub, comm_h) else { return Err(false) };
        if src != c::MPI_ANY_SOURCE && fast_world_of(s.world_size(), cm, comm_h, src).is_none() {
            return Err(false);
        }
        let pat = Pattern { ctx: cm.ctx, src, tag };
        // SAFETY: the caller's buffer holds `cap` bytes until this call returns, which is not
        // before the receive completes.
        match unsafe { s.direct_recv_begin(sub, &pat, buf as *mut u8, cap) } {
            // Polled in place under the same lock (issue 16, p2p7: was a second one).
            Some(mut req) => match poll_in_place(s, &mut req, &pat, cap, !status.is_null()) {
                Some(st) => Ok(st),
                None => Err((req, pat)),
            },
            None => return Err(false),
        }
    };
    let r = match started {
        Ok(st) => Ok(st),
        Err((req, pat)) => {
            let t = recv_target(buf, i64::from(count), dt);
            // SAFETY: the caller's buffer, outside the thread-locals (above); the caller runs.
            unsafe { direct_recv_park(sub, comm_h, req, pat, t) }
        }
    };
    match r {
        Ok(st) => {
            store(status, &st);
            if st.error == c::MPI_SUCCESS {
                Ok(c::MPI_SUCCESS)
            } else {
                Ok(recv_failed(st, comm_h))
            }
        }
        Err(e) => Ok(super::raise(comm_h, "MPI_Recv", e)),
    }
}

/// The polls in place of a direct blocking receive (`recv_fast_direct`, `sendrecv_direct`) (`count`: the caller wants the status's length).
#[inline(always)]
fn poll_in_place(s: &mut State, req: &mut RRequest, pat: &Pattern, cap: usize, count: bool) -> Option<Status> {
    for i in 1..=blocking::SPIN_POLLS {
        if let Some(st) = s.direct_recv_poll(req, pat, cap, count) {
            return Some(st);
        }
        // The rest of the engine now and then (the ring, other requests), as a wait does;
        // the rank's lean requests stay lean (p2p8: it runs, and waits for them itself).
        if i.is_multiple_of(blocking::DIRECT_FULL_POLL) {
            s.progress_step();
        }
    }
    None
}

/// A direct blocking receive whose polls in place found nothing: the receive becomes a
/// request that the engine completes while the rank is parked.
///
/// # Safety
/// `t` is the receive's contiguous buffer outside the thread-locals, of the running subrank.
#[inline(never)]
unsafe fn direct_recv_park(sub: usize, comm_h: usize, req: RRequest, pat: Pattern, t: RecvTarget) -> MpiResult<Status> {
    // SAFETY: forwarded from the caller.
    let id = state::with(|s| unsafe { s.direct_recv_adopt(sub, comm_h, req, pat, t) })?;
    blocking::wait(id)
}

/// MPI_Sendrecv's fast path when point-to-point passes through (`core::p2p::direct`): a small
/// contiguous send and a contiguous receive on a direct communicator: the real receive
/// starts, the real send goes out, the receive is waited for as `recv_fast_direct` does.
/// None: the general path runs (nothing was done).
///
/// # Safety
/// As MPI_Sendrecv's arguments.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn sendrecv_direct(
    sbuf: *const c_void,
    scount: i64,
    sdt: usize,
    dest: c_int,
    stag: c_int,
    rbuf: *mut c_void,
    rcount: i64,
    rdt: usize,
    src: c_int,
    rtag: c_int,
    comm_h: usize,
) -> Option<MpiResult<Status>> {
    if !direct::on() || !sched::in_coroutine() {
        return None;
    }
    let sub = sched::rank();
    let len = direct_send_len(sbuf, scount, sdt, stag)?;
    // issue 16 (p2p7): a larger send is a real MPI_Isend (`State::isend_direct`), waited for
    // after the receive (it was taken by the general path, 2.5x MPICH at 1 KiB).
    let small = len <= crate::transport::direct::SMALL;
    if !small && !outside_tls(sbuf, len) {
        return None;
    }
    let cap = direct_recv_cap(rbuf, rcount, rdt, rtag)?;
    let (got, sreq) = {
        let mut g = state::lock();
        let s = g.as_mut()?;
        let cm = fast_comm(s, sub, comm_h)?;
        let w = fast_world_of(s.world_size(), cm, comm_h, dest)?;
        if src != c::MPI_ANY_SOURCE {
            fast_world_of(s.world_size(), cm, comm_h, src)?;
        }
        // The region hints' bookkeeping wants the general path's requests.
        if !small && s.locals.get(sub)?.region.tracking {
            return None;
        }
        let (ctx, pat) = (
            cm.ctx,
            Pattern {
                ctx: cm.ctx,
                src,
                tag: rtag,
            },
        );
        // SAFETY: the receive buffer holds `cap` bytes until this call returns, after the
        // receive completed.
        let req = unsafe { s.direct_recv_begin(sub, &pat, rbuf as *mut u8, cap) }?;
        let sreq = if small {
            // SAFETY: the send buffer holds `len <= SMALL` bytes.
            let sent = unsafe { s.direct_send_small(ctx, w, stag, sbuf as *const u8, len) };
            debug_assert!(sent, "a direct communicator (its receive began)");
            None
        } else {
            // SAFETY: the send buffer holds `len` bytes (outside the thread-locals) until this
            // call returns, after the send completed.
            let id = unsafe { s.isend_direct(sub, comm_h, ctx, w, stag, sbuf as *const u8, len) };
            debug_assert!(id.is_some(), "a direct communicator (its receive began), no hints");
            id
        };
        // Polled in place under the same lock (issue 16, p2p8: `direct_recv_finish` took a
        // second one, and a reference on the datatype).
        let mut req = req;
        let got = poll_in_place(s, &mut req, &pat, cap, true);
        (got.ok_or((req, pat)), sreq)
    };
    let r = match got {
        Ok(st) => Ok(st),
        Err((req, pat)) => {
            let t = recv_target(rbuf, rcount, rdt);
            // SAFETY: the caller's receive buffer, outside the thread-locals (above); the
            // caller runs.
            unsafe { direct_recv_park(sub, comm_h, req, pat, t) }
        }
    };
    if let Some(mut h) = sreq.map(|id| id as Req) {
        // The send's buffer may be reused once it completed (usually at once: eager).
        // SAFETY: `h` is the request just made for this call.
        if let Err(spun) = unsafe { wait_direct(std::slice::from_mut(&mut h), false, |_, _| {}) } {
            if let Err(e) = blocking::block_on_after(
                |s| {
                    let done = is_done(s, h as ReqId);
                    done.then(|| finish(s, h as ReqId))
                },
                |s| (s.progress(), None),
                spun,
            ) {
                return Some(Err(e));
            }
        }
    }
    Some(r)
}

/// Whether `len` bytes at `p` lie outside the program's swapped thread-locals.
fn outside_tls(p: *const c_void, len: usize) -> bool {
    len == 0 || !crate::sched::swap::in_blocks(p as usize, p as usize + len)
}

/// Blocking send in any mode.
#[inline(never)]
unsafe fn send(
    buf: *const c_void,
    count: i64,
    dt: usize,
    dest: c_int,
    tag: c_int,
    comm_h: usize,
    mode: SendMode,
    what: &str,
) -> MpiResult<()> {
    if matches!(mode, SendMode::Standard | SendMode::Ready) && send_now(buf, count, dt, dest, tag, comm_h)? {
        return Ok(());
    }
    let id = isend(buf, count, dt, dest, tag, comm_h, mode)?;
    wait_one(id, what).map(|_| ())
}

macro_rules! send_fn {
    ($name:ident, $pname:ident, $cname:ident, $pcname:ident, $mode:expr) => {
        with_c!($name, $pname, $cname, $pcname, (buf: *const c_void), count, (dt: usize, dest: c_int, tag: c_int, comm_h: usize),
            errcomm = comm_h, send, $mode, stringify!($name));
    };
}
send_fn!(MPI_Ssend, PMPI_Ssend, MPI_Ssend_c, PMPI_Ssend_c, SendMode::Sync);
send_fn!(MPI_Rsend, PMPI_Rsend, MPI_Rsend_c, PMPI_Rsend_c, SendMode::Ready);
send_fn!(MPI_Bsend, PMPI_Bsend, MPI_Bsend_c, PMPI_Bsend_c, SendMode::Buffered);

/// Nonblocking send in any mode; the request goes to `*req`.
unsafe fn isend_req(
    buf: *const c_void,
    count: i64,
    dt: usize,
    dest: c_int,
    tag: c_int,
    comm_h: usize,
    req: *mut Req,
    mode: SendMode,
) -> MpiResult<()> {
    if req.is_null() {
        return err(c::MPI_ERR_ARG, "null request pointer");
    }
    *req = isend(buf, count, dt, dest, tag, comm_h, mode)? as Req;
    Ok(())
}

macro_rules! isend_fn {
    ($name:ident, $pname:ident, $cname:ident, $pcname:ident, $mode:expr) => {
        with_c!($name, $pname, $cname, $pcname, (buf: *const c_void), count,
            (dt: usize, dest: c_int, tag: c_int, comm_h: usize, req: *mut Req), errcomm = comm_h, isend_req, $mode);
    };
}
mpi_fn_fast!(MPI_Isend, PMPI_Isend, |buf: *const c_void, count: c_int, dt: usize, dest: c_int, tag: c_int, comm_h: usize, req: *mut Req|
    errcomm = comm_h, fast(_no: ()) = req_fast(req, || isend_quick(buf, i64::from(count), dt, dest, tag, comm_h)), {
    isend_req(buf, i64::from(count), dt, dest, tag, comm_h, req, SendMode::Standard)
});
mpi_fn!(
    MPI_Isend_c,
    PMPI_Isend_c,
    |buf: *const c_void, count: i64, dt: usize, dest: c_int, tag: c_int, comm_h: usize, req: *mut Req| errcomm = comm_h,
    { isend_req(buf, count, dt, dest, tag, comm_h, req, SendMode::Standard) }
);
isend_fn!(MPI_Issend, PMPI_Issend, MPI_Issend_c, PMPI_Issend_c, SendMode::Sync);
isend_fn!(MPI_Irsend, PMPI_Irsend, MPI_Irsend_c, PMPI_Irsend_c, SendMode::Ready);
isend_fn!(MPI_Ibsend, PMPI_Ibsend, MPI_Ibsend_c, PMPI_Ibsend_c, SendMode::Buffered);

/// MPI_Recv: the request-free path inline, the general one out of line.
#[inline(always)]
unsafe fn recv(
    buf: *mut c_void,
    count: i64,
    dt: usize,
    src: c_int,
    tag: c_int,
    comm_h: usize,
    status: *mut MpiStatus,
    spun: bool,
) -> MpiResult<()> {
    match recv_direct(buf, count, dt, src, tag, comm_h, spun)? {
        Some(st) => {
            store(status, &st);
            if st.error == c::MPI_SUCCESS {
                Ok(())
            } else {
                status_result(st, "MPI_Recv").map(|_| ())
            }
        }
        None => recv_request(buf, count, dt, src, tag, comm_h, status),
    }
}

/// MPI_Recv's general path, giving the status back (issue 16, sr16: the receive of
/// `sendrecv::sendrecv_alone` after its send went out; `spun` as `recv`'s).
///
/// # Safety
/// As MPI_Recv's arguments.
pub(super) unsafe fn recv_status(
    buf: *mut c_void,
    count: i64,
    dt: usize,
    src: c_int,
    tag: c_int,
    comm_h: usize,
    spun: bool,
) -> MpiResult<Status> {
    match recv_direct(buf, count, dt, src, tag, comm_h, spun)? {
        Some(st) => Ok(st),
        None => blocking::wait(irecv(buf, count, dt, src, tag, comm_h)?),
    }
}

/// MPI_Recv through a request (a rendezvous message, a derived datatype, ...).
#[inline(never)]
unsafe fn recv_request(
    buf: *mut c_void,
    count: i64,
    dt: usize,
    src: c_int,
    tag: c_int,
    comm_h: usize,
    status: *mut MpiStatus,
) -> MpiResult<()> {
    let id = irecv(buf, count, dt, src, tag, comm_h)?;
    let st = blocking::wait(id)?;
    store(status, &st);
    status_result(st, "MPI_Recv").map(|_| ())
}

mpi_fn_fast!(MPI_Recv, PMPI_Recv, |buf: *mut c_void, count: c_int, dt: usize, src: c_int, tag: c_int, comm_h: usize, status: *mut MpiStatus|
    errcomm = comm_h, fast(spun: bool) = recv_fast(buf, count, dt, src, tag, comm_h, status), {
    recv(buf, i64::from(count), dt, src, tag, comm_h, status, spun)
});
mpi_fn!(
    MPI_Recv_c,
    PMPI_Recv_c,
    |buf: *mut c_void, count: i64, dt: usize, src: c_int, tag: c_int, comm_h: usize, status: *mut MpiStatus| errcomm = comm_h,
    { recv(buf, count, dt, src, tag, comm_h, status, false) }
);

/// MPI_Recv's fast path: a valid receive of a contiguous predefined type from a rank (or
/// MPI_ANY_SOURCE) into a buffer outside the swapped thread-locals, by a subrank with nothing
/// queued, posted or in flight, polling the transport in place (`State::recv_in_place`) when
/// no sibling can run. Err: the general path runs (with `true` when this one polled for as
/// long as the general path would before parking); this one then had no effect beyond
/// dispatching what arrived, as the general path's progress would.
#[inline(always)]
unsafe fn recv_fast(
    buf: *mut c_void,
    count: c_int,
    dt: usize,
    src: c_int,
    tag: c_int,
    comm_h: usize,
    status: *mut MpiStatus,
) -> Result<c_int, bool> {
    if direct::on() {
        return recv_fast_direct(buf, count, dt, src, tag, comm_h, status);
    }
    let sub = sched::rank();
    let size = crate::core::datatype::contiguous_size(dt).ok_or(false)?;
    if count < 0 || (buf.is_null() && count > 0) || (tag < 0 && tag != c::MPI_ANY_TAG) {
        return Err(false);
    }
    let cap = count as usize * size;
    // A buffer in the program's thread-locals: see recv_direct.
    if cap != 0 && crate::sched::swap::in_blocks(buf as usize, buf as usize + cap) {
        return Err(false);
    }
    if sched::metrics::on() {
        return Err(false);
    }
    // With one worker and no sibling ready, polling in place below (the message goes from
    // the transport straight into `buf`) is the shorter way to a message from another process.
    if state::readable() && (sched::queue::workers() > 1 || sched::others_ready()) {
        // SAFETY: the caller's buffer holds `cap` bytes, outside the thread-locals (above).
        return match unsafe { recv_shared(sub, comm_h, src, tag, buf as *mut u8, cap) } {
            Some(st) => {
                store(status, &st);
                if st.error == c::MPI_SUCCESS {
                    Ok(c::MPI_SUCCESS)
                } else {
                    Ok(recv_failed(st, comm_h))
                }
            }
            None => Err(false),
        };
    }
    if sched::others_ready() {
        return Err(false);
    }
    let r = {
        let mut g = state::lock();
        let Some(s) = g.as_mut() else { return Err(false) };
        let Some(cm) = fast_comm(s, sub, comm_h) else { return Err(false) };
        if src != c::MPI_ANY_SOURCE && fast_world_of(s.world_size(), cm, comm_h, src).is_none() {
            return Err(false);
        }
        let pat = Pattern { ctx: cm.ctx, src, tag };
        // With several workers (SMP mode), no polling in place under the state lock: a cousin
        // on another worker may be about to send, and needs it (the general path waits
        // without the lock).
        let (polls, multi) = if s.cfg.workers > 1 {
            (1, true)
        } else {
            (blocking::SPIN_POLLS, false)
        };
        // SAFETY: the caller's buffer holds `cap` bytes, and this rank runs.
        match unsafe { s.recv_in_place(sub, &pat, buf as *mut u8, cap, polls) } {
            InPlace::Spun if multi => InPlace::General,
            r => r,
        }
    };
    match r {
        InPlace::Done(st) => {
            store(status, &st);
            if st.error == c::MPI_SUCCESS {
                Ok(c::MPI_SUCCESS)
            } else {
                Ok(recv_failed(st, comm_h))
            }
        }
        InPlace::Spun => Err(true),
        InPlace::General => Err(false),
    }
}

/// A receive that took its message but ends with an error (truncation): the error goes to
/// the communicator's handler, as the general path's would.
#[cold]
#[inline(never)]
fn recv_failed(st: Status, comm_h: usize) -> c_int {
    match status_result(st, "MPI_Recv") {
        Ok(_) => c::MPI_SUCCESS,
        Err(e) => super::raise(comm_h, "MPI_Recv", e),
    }
}

unsafe fn irecv_req(buf: *mut c_void, count: i64, dt: usize, src: c_int, tag: c_int, comm_h: usize, req: *mut Req) -> MpiResult<()> {
    if req.is_null() {
        return err(c::MPI_ERR_ARG, "null request pointer");
    }
    *req = irecv(buf, count, dt, src, tag, comm_h)? as Req;
    Ok(())
}

mpi_fn_fast!(MPI_Irecv, PMPI_Irecv, |buf: *mut c_void, count: c_int, dt: usize, src: c_int, tag: c_int, comm_h: usize, req: *mut Req|
    errcomm = comm_h, fast(_no: ()) = req_fast(req, || irecv_quick(buf, i64::from(count), dt, src, tag, comm_h)), {
    irecv_req(buf, i64::from(count), dt, src, tag, comm_h, req)
});
mpi_fn!(
    MPI_Irecv_c,
    PMPI_Irecv_c,
    |buf: *mut c_void, count: i64, dt: usize, src: c_int, tag: c_int, comm_h: usize, req: *mut Req| errcomm = comm_h,
    { irecv_req(buf, count, dt, src, tag, comm_h, req) }
);

fn pattern(cm: &CommRef, src: i32, tag: i32) -> Pattern {
    Pattern { ctx: cm.ctx, src, tag }
}

fn check_probe(src: i32, tag: i32, comm_h: usize) -> MpiResult<(usize, CommRef)> {
    let (sub, cm) = comm(comm_h)?;
    hd::source(&cm, src)?;
    hd::recv_tag(tag)?;
    Ok((sub, cm))
}

/// The pattern of a probe by the running subrank `sub` of `l` (its `Local`) on `comm_h`, when
/// the read side may serve it: a valid communicator and source rank (or MPI_ANY_SOURCE; not
/// MPI_PROC_NULL) and a valid tag. None: the general path decides.
#[inline]
fn probe_pattern(sh: &state::Shared<'_>, l: &Local, comm_h: usize, src: c_int, tag: c_int) -> Option<Pattern> {
    if tag < 0 && tag != c::MPI_ANY_TAG {
        return None;
    }
    let cm = local_comm(l, comm_h)?;
    if src != c::MPI_ANY_SOURCE {
        fast_world_of(sh.world_size(), cm, comm_h, src)?;
    }
    Some(Pattern { ctx: cm.ctx, src, tag })
}

/// MPI_Iprobe on the read side of the state: the running subrank's queue, then (when nothing
/// matched) one poll of the transport and a second look. Some(None): nothing matches. None:
/// the general path runs (nothing was done).
fn iprobe_shared(src: c_int, tag: c_int, comm_h: usize) -> Option<Option<Status>> {
    if direct::on() || !state::readable() {
        return None;
    }
    let sub = sched::rank();
    let look = || {
        state::shared(|sh| {
            let l = sh.local(sub)?;
            let pat = probe_pattern(&sh, &l, comm_h, src, tag)?;
            Some(shared::probe(&l, &pat))
        })
        .flatten()
    };
    let found = look()?;
    if found.is_none() && blocking::poll_unlocked() {
        return look();
    }
    Some(found)
}

/// MPI_Probe on the read side of the state: the running subrank looks at its queue, and
/// waits as a blocked receive does (in place for a cousin, then parked) until a matching
/// message is queued; whoever queues one wakes it. None: the general path runs (nothing
/// was done).
fn probe_shared(src: c_int, tag: c_int, comm_h: usize) -> Option<Status> {
    if direct::on() || !state::readable() {
        return None;
    }
    let sub = sched::rank();
    loop {
        // What it waits for, for the deadlock report, while nothing matches.
        let found = state::shared(|sh| {
            let mut l = sh.local(sub)?;
            let pat = probe_pattern(&sh, &l, comm_h, src, tag)?;
            let st = shared::probe(&l, &pat);
            l.waiting = st.is_none().then_some(pat);
            Some(st)
        })??;
        if found.is_some() {
            return found;
        }
        if sched::others_ready() || !blocking::spin_unlocked() {
            sched::park();
        }
    }
}

mpi_fn!(
    MPI_Probe,
    PMPI_Probe,
    |src: c_int, tag: c_int, comm_h: usize, status: *mut MpiStatus| errcomm = comm_h,
    {
        if let Some(st) = probe_shared(src, tag, comm_h) {
            store(status, &st);
            return Ok(());
        }
        let (sub, cm) = check_probe(src, tag, comm_h)?;
        if src == c::MPI_PROC_NULL {
            store(status, &blocking::proc_null_status());
            return Ok(());
        }
        let st = blocking::probe(sub, pattern(&cm, src, tag))?;
        store(status, &st);
        Ok(())
    }
);

mpi_fn!(
    MPI_Iprobe,
    PMPI_Iprobe,
    |src: c_int, tag: c_int, comm_h: usize, flag: *mut c_int, status: *mut MpiStatus| errcomm = comm_h,
    {
        if !flag.is_null() {
            match iprobe_shared(src, tag, comm_h) {
                Some(Some(st)) => {
                    *flag = 1;
                    store(status, &st);
                    return Ok(());
                }
                Some(None) => {
                    *flag = 0;
                    sched::yield_now();
                    return Ok(());
                }
                None => {}
            }
        }
        let (sub, cm) = check_probe(src, tag, comm_h)?;
        hd::out(flag, "flag")?;
        if src == c::MPI_PROC_NULL {
            *flag = 1;
            store(status, &blocking::proc_null_status());
            return Ok(());
        }
        let pat = pattern(&cm, src, tag);
        let found = state::with(|s| {
            s.probe_all(sub, &pat).or_else(|| {
                s.progress();
                s.probe_all(sub, &pat)
            })
        })?;
        match found {
            Some(st) => {
                *flag = 1;
                store(status, &st);
            }
            None => {
                *flag = 0;
                sched::yield_now();
            }
        }
        Ok(())
    }
);

const MSG_BASE: usize = 0x100_0000_0000;

fn msg_handle(id: u64) -> usize {
    MSG_BASE + id as usize
}

unsafe fn improbe_common(
    src: c_int,
    tag: c_int,
    comm_h: usize,
    block: bool,
    flag: *mut c_int,
    msg: *mut usize,
    status: *mut MpiStatus,
) -> MpiResult<()> {
    let (sub, cm) = check_probe(src, tag, comm_h)?;
    if msg.is_null() {
        return err(c::MPI_ERR_ARG, "null message pointer");
    }
    if src == c::MPI_PROC_NULL {
        if !flag.is_null() {
            *flag = 1;
        }
        *msg = c::MPI_MESSAGE_NO_PROC;
        store(status, &blocking::proc_null_status());
        return Ok(());
    }
    let pat = pattern(&cm, src, tag);
    let got = if block {
        let r = block_on(|s| {
            let m = s.mprobe(sub, &pat);
            // A parked probe is woken by the engine when the real MPI holds a match
            // (`p2p::direct`), and named by the deadlock report.
            s.locals[sub].waiting = m.is_none().then_some(pat);
            m
        });
        state::with(|s| s.locals[sub].waiting = None)?;
        Some(r?)
    } else {
        let r = state::with(|s| {
            s.mprobe(sub, &pat).or_else(|| {
                s.progress();
                s.mprobe(sub, &pat)
            })
        })?;
        if r.is_none() {
            sched::yield_now();
        }
        r
    };
    match got {
        Some((id, st)) => {
            if !flag.is_null() {
                *flag = 1;
            }
            *msg = msg_handle(id);
            store(status, &st);
        }
        None => *flag = 0,
    }
    Ok(())
}

mpi_fn!(
    MPI_Mprobe,
    PMPI_Mprobe,
    |src: c_int, tag: c_int, comm_h: usize, msg: *mut usize, status: *mut MpiStatus| errcomm = comm_h,
    { improbe_common(src, tag, comm_h, true, std::ptr::null_mut(), msg, status) }
);

mpi_fn!(
    MPI_Improbe,
    PMPI_Improbe,
    |src: c_int, tag: c_int, comm_h: usize, flag: *mut c_int, msg: *mut usize, status: *mut MpiStatus| errcomm = comm_h,
    {
        if flag.is_null() {
            return err(c::MPI_ERR_ARG, "null flag pointer");
        }
        improbe_common(src, tag, comm_h, false, flag, msg, status)
    }
);

/// Starts receiving a message taken by MPI_Mprobe; returns its request.
unsafe fn imrecv(buf: *mut c_void, count: i64, dt: usize, msg: *mut usize) -> MpiResult<ReqId> {
    let sub = me()?;
    if msg.is_null() {
        return err(c::MPI_ERR_ARG, "null message pointer");
    }
    let n = hd::count(count)?;
    let d = hd::dtype(dt)?;
    hd::buffer(buf as *const u8, n, &d)?;
    let h = *msg;
    let id = state::with(|s| -> MpiResult<ReqId> {
        let rid = s.new_request(sub, c::MPI_COMM_WORLD);
        if h == c::MPI_MESSAGE_NO_PROC {
            if let Some(r) = s.req_mut(rid) {
                r.status = blocking::proc_null_status();
            }
            s.complete(rid);
            return Ok(rid);
        }
        let key = h.wrapping_sub(MSG_BASE) as u64;
        let Some(u) = (h >= MSG_BASE).then(|| s.locals[sub].messages.remove(&key)).flatten() else {
            s.remove_req(rid);
            return err(
                c::MPI_ERR_REQUEST,
                format!("invalid message handle {h:#x} (not from MPI_Mprobe, or already received)"),
            );
        };
        if let Some(r) = s.req_mut(rid) {
            // SAFETY: the caller's buffer, and the caller runs.
            unsafe {
                r.set_recv(RecvTarget {
                    buf: buf as *mut u8,
                    count: n,
                    dt: d.clone().into(),
                })
            };
        }
        s.deliver(rid, u);
        Ok(rid)
    })??;
    *msg = c::MPI_MESSAGE_NULL;
    Ok(id)
}

unsafe fn mrecv(buf: *mut c_void, count: i64, dt: usize, msg: *mut usize, status: *mut MpiStatus) -> MpiResult<()> {
    let id = imrecv(buf, count, dt, msg)?;
    let st = blocking::wait(id)?;
    store(status, &st);
    status_result(st, "MPI_Mrecv").map(|_| ())
}

with_c!(MPI_Mrecv, PMPI_Mrecv, MPI_Mrecv_c, PMPI_Mrecv_c, (buf: *mut c_void), count,
    (dt: usize, msg: *mut usize, status: *mut MpiStatus), errcomm = c::MPI_COMM_WORLD, mrecv);

unsafe fn imrecv_req(buf: *mut c_void, count: i64, dt: usize, msg: *mut usize, req: *mut Req) -> MpiResult<()> {
    if req.is_null() {
        return err(c::MPI_ERR_ARG, "null request pointer");
    }
    *req = imrecv(buf, count, dt, msg)? as Req;
    Ok(())
}

with_c!(MPI_Imrecv, PMPI_Imrecv, MPI_Imrecv_c, PMPI_Imrecv_c, (buf: *mut c_void), count,
    (dt: usize, msg: *mut usize, req: *mut Req), errcomm = c::MPI_COMM_WORLD, imrecv_req);

// ---- completion ----

fn bad_request(h: usize) -> MpiError {
    MpiError::new(
        c::MPI_ERR_REQUEST,
        format!("invalid request handle {h:#x} (freed, completed, or never created)"),
    )
}

/// Checks that `h` is MPI_REQUEST_NULL or a live request of this process.
fn check_req(s: &State, h: usize) -> MpiResult<()> {
    if h == c::MPI_REQUEST_NULL || s.req(h as ReqId).is_some() {
        Ok(())
    } else {
        Err(bad_request(h))
    }
}

/// Whether `h` needs waiting for: not null and an active request.
fn live(s: &State, h: usize) -> bool {
    h != c::MPI_REQUEST_NULL && s.req(h as ReqId).map(|r| r.active).unwrap_or(false)
}

/// Finishes request `*req` (complete): returns its status, and nulls a non-persistent handle.
unsafe fn take(s: &mut State, req: *mut Req) -> Status {
    let h = *req;
    let persistent = s.req(h as ReqId).map(|r| r.persist.is_some()).unwrap_or(false);
    set_errcomm(s, h as ReqId);
    let st = finish(s, h as ReqId);
    if !persistent {
        *req = c::MPI_REQUEST_NULL;
    }
    st
}

/// issue 16 (p2p11): `take` of handle `*h` (null or a request of the running subrank `sub`)
/// when it is complete, with one look at its entry: its status, the handle nulled unless it
/// is persistent; the built-in complete send is taken without a look at its entry (a send's
/// status, no communicator to report, nothing to free). An inactive persistent request, or a
/// handle the slab does not know, gives an empty status. None: not complete yet (nothing
/// done). (rate15: the waits over direct requests take theirs with it too; session 16's
/// `take_own` looked each entry up twice.)
#[inline(always)]
fn take_own_done(s: &mut State, sub: usize, h: &mut Req) -> Option<Status> {
    let id = *h as ReqId;
    let l = &mut s.locals[sub];
    if l.reqs.is_done_send(id) {
        *h = c::MPI_REQUEST_NULL;
        return Some(Status::sent());
    }
    let Some((i, r)) = l.reqs.index_of(id).and_then(|i| Some((i, l.reqs.at_mut(i)?))) else {
        return Some(Status::empty());
    };
    if !r.active {
        return Some(Status::empty());
    }
    if !r.complete {
        return None;
    }
    // SAFETY: the request is complete, and its owner runs (the caller).
    unsafe { r.settle() };
    let (st, comm) = (r.status, r.comm);
    if r.persist.is_some() {
        r.active = false;
        r.keep = None;
    } else {
        if let Some(g) = l.reqs.discard_at(i) {
            l.greq_frees.push(g);
        }
        *h = c::MPI_REQUEST_NULL;
    }
    if let Some(e) = ERRCOMM.get(sub) {
        e.store(comm, Ordering::Relaxed);
    }
    Some(st)
}

/// issue 16 (p2p7): a wait (MPI_Wait, MPI_Waitall) when point-to-point passes through
/// (`core::p2p::direct`) and every handle in `v` is null, complete, or a direct operation of
/// the running subrank: polls them all with one progress step of the real MPI per poll, in place and
/// under one lock, as the real MPI_Waitall would (`State::direct_wait_poll`), with the whole
/// engine (the ring, other requests) every `DIRECT_FULL_POLL`th poll. When all completed, each
/// handle's status goes to `each(index, status)` (handles nulled, as `take` does; without
/// `statuses` only its error is meaningful: the caller ignores them). Err: the
/// general path runs (nothing was taken), with `true` when this one polled for as long as the
/// general path would before parking (`SPIN_POLLS`) or another task is ready to run.
///
/// # Safety
/// `v` are the caller's request handles.
unsafe fn wait_direct(v: &mut [Req], statuses: bool, mut each: impl FnMut(usize, Status)) -> Result<(), bool> {
    // Threads of the program (MPI_THREAD_MULTIPLE) wait on the general path.
    if !sched::in_coroutine() {
        return Err(false);
    }
    let sub = sched::rank();
    let mut g = state::lock();
    let Some(s) = g.as_mut() else { return Err(false) };
    // issue 16 (rate15): all lean (or nothing to wait for): the handles looked at once, the
    // real requests from the first incomplete one on (`core::p2p::leanwait`).
    let mut lean = s.lean_scan(sub, v);
    let mut from = 0;
    // Polls in a row that completed nothing: the wait parks after `SPIN_POLLS` of them. A
    // lean poll is one look (session 16's looked at every handle and every real request from
    // the first): counting every poll made a window of 64 receives park while its messages
    // were still streaming in (IMB Uniband 1 KiB 0.58x of the session's start).
    let mut idle = 0;
    for i in 1u32.. {
        let was = from;
        let done = if lean {
            match s.lean_poll(sub, v, &mut from, statuses) {
                LeanPoll::Done(rc) => {
                    take_lean(s, sub, v, rc, statuses, &mut each);
                    return Ok(());
                }
                LeanPoll::Pending => false,
                LeanPoll::Failed => {
                    (lean, from) = (s.lean_scan(sub, v), 0);
                    false
                }
            }
        } else {
            match s.direct_wait_poll(sub, v, statuses) {
                None => return Err(false),
                Some(d) => d,
            }
        };
        if done {
            // Every one complete: each taken with one look at its slab entry.
            for (k, h) in v.iter_mut().enumerate() {
                each(k, take_own_done(s, sub, h).unwrap_or_else(Status::empty));
            }
            return Ok(());
        }
        if i.is_multiple_of(blocking::DIRECT_FULL_POLL) {
            s.progress_step();
        }
        if sched::others_ready() {
            return Err(true);
        }
        // A lean poll that moved the cursor completed a request (at most one reset per
        // request: the spin stays bounded).
        idle = if from > was { 0 } else { idle + 1 };
        if idle >= blocking::SPIN_POLLS {
            return Err(true);
        }
    }
    Err(true)
}

/// MPI_Wait's fast path (session 26): the running subrank's own plain request, waited for on
/// the read side of the state (`wait_shared`) without the general path's frames (the
/// `catch_unwind`, the generalized-request round, the look for a nonblocking collective's
/// helper operation), which cost a wait on a complete request about 220 of its 390
/// instructions. Taken only while no generalized request is live and no nonblocking
/// collective has a helper operation noted (both checked with one load each: then neither
/// `greq::around` nor `nbc::wait` would do anything). Err: nothing was taken (`wait_shared`
/// takes the request only when it returns it); the general path runs.
#[inline(always)]
unsafe fn wait_fast(req: *mut Req, status: *mut MpiStatus) -> Result<c_int, ()> {
    if req.is_null() || super::greq::live() || crate::core::coll::nbc::tracked() {
        return Err(());
    }
    // SAFETY: checked not null; the program's request handle.
    let st = done_fast(unsafe { *req }).or_else(|| wait_shared(unsafe { *req })).ok_or(())?;
    // SAFETY: as above.
    let rc = unsafe { taken_fast(req, status, st, "MPI_Wait") };
    // nbc8: siblings whose broadcast landed with this one and called first go first.
    crate::core::coll::nbrec::after_wait();
    Ok(rc)
}

/// MPI_Test's fast path, on the terms of `wait_fast`: one look at the request on the read
/// side of the state (`test_shared`, with a progress step when it is not complete and nobody
/// else is making one). Err: nothing was taken; the general path runs.
#[inline(always)]
unsafe fn test_fast(req: *mut Req, flag: *mut c_int, status: *mut MpiStatus) -> Result<c_int, ()> {
    if req.is_null() || flag.is_null() || super::greq::live() || crate::core::coll::nbc::tracked() {
        return Err(());
    }
    // SAFETY: checked not null; the program's request handle and flag.
    unsafe {
        let done = done_fast(*req).map(Some);
        match done.or_else(|| test_shared(*req)).ok_or(())? {
            Some(st) => {
                *flag = 1;
                Ok(taken_fast(req, status, st, "MPI_Test"))
            }
            None => {
                *flag = 0;
                sched::yield_now();
                Ok(c::MPI_SUCCESS)
            }
        }
    }
}

/// The running subrank's built-in complete send (`Slab::done_send`: sends that completed at
/// once, nonblocking pair collectives that did), recognised from its handle alone: its
/// status, as `shared::finish_own` gives it. None: another handle.
#[inline(always)]
fn done_fast(h: Req) -> Option<Status> {
    let sub = sched::rank();
    if !crate::core::request::is_done_handle(sub, h as ReqId) {
        return None;
    }
    if let Some(e) = ERRCOMM.get(sub) {
        e.store(c::MPI_COMM_WORLD, Ordering::Relaxed);
    }
    Some(Status::sent())
}

/// A request taken by a fast path: its handle nulled, its status stored, its error (a
/// truncated receive) through the error handler of its communicator (`ERRCOMM`, set by the
/// take).
///
/// # Safety
/// `req` is the program's handle (not null), `status` null or the program's status.
unsafe fn taken_fast(req: *mut Req, status: *mut MpiStatus, st: Status, call: &str) -> c_int {
    // SAFETY: forwarded from the caller.
    unsafe { *req = c::MPI_REQUEST_NULL };
    store(status, &st);
    match status_result(st, call) {
        Ok(_) => c::MPI_SUCCESS,
        Err(e) => super::raise(errcomm(), call, e),
    }
}

mpi_fn_fast!(MPI_Wait, PMPI_Wait, |req: *mut Req, status: *mut MpiStatus| errcomm = errcomm(),
    fast(_no: ()) = wait_fast(req, status), {
    me()?;
    super::greq::around(|| {
        if req.is_null() {
            return err(c::MPI_ERR_ARG, "null request pointer");
        }
        let h = *req;
        // coll6: a nonblocking collective's one real operation, polled alone.
        if let Some(r) = crate::core::coll::nbc::wait(h) {
            let (st, comm, persistent) = r?;
            if let Some(e) = ERRCOMM.get(sched::rank()) {
                e.store(comm, Ordering::Relaxed);
            }
            if !persistent {
                *req = c::MPI_REQUEST_NULL;
            }
            store(status, &st);
            return status_result(st, "MPI_Wait").map(|_| ());
        }
        if let Some(st) = wait_shared(h) {
            *req = c::MPI_REQUEST_NULL;
            store(status, &st);
            // nbc8: siblings whose broadcast landed with this one and called first go first.
            crate::core::coll::nbrec::after_wait();
            return status_result(st, "MPI_Wait").map(|_| ());
        }
        // issue 16 (p2p7): a direct operation, polled in place with the real MPI.
        let mut spun = false;
        if direct::on() {
            let mut got = None;
            match wait_direct(std::slice::from_mut(&mut *req), !status.is_null(), |_, st| got = Some(st)) {
                Ok(()) => {
                    let st = got.unwrap_or_else(Status::empty);
                    store(status, &st);
                    return status_result(st, "MPI_Wait").map(|_| ());
                }
                Err(s) => spun = s,
            }
        }
        state::with(|s| check_req(s, h))??;
        let st = blocking::block_on_after(
            |s| {
                if !live(s, h) {
                    return Some(Status::empty());
                }
                is_done(s, h as ReqId).then(|| take(s, req))
            },
            |s| (s.progress(), None),
            spun,
        )?;
        store(status, &st);
        status_result(st, "MPI_Wait").map(|_| ())
    })
});

mpi_fn_fast!(
    MPI_Test,
    PMPI_Test,
    |req: *mut Req, flag: *mut c_int, status: *mut MpiStatus| errcomm = errcomm(),
    fast(_no: ()) = test_fast(req, flag, status),
    {
        me()?;
        super::greq::around(|| {
            if req.is_null() || flag.is_null() {
                return err(c::MPI_ERR_ARG, "null argument");
            }
            let h = *req;
            // coll6: a nonblocking collective's one real operation, polled alone.
            let coll = crate::core::coll::nbc::test(h).map(|t| {
                t.map(|(st, comm, persistent)| {
                    if let Some(e) = ERRCOMM.get(sched::rank()) {
                        e.store(comm, Ordering::Relaxed);
                    }
                    if !persistent {
                        *req = c::MPI_REQUEST_NULL;
                    }
                    st
                })
            });
            let st = match coll {
                Some(st) => st,
                None => match test_shared(h) {
                    Some(Some(st)) => {
                        *req = c::MPI_REQUEST_NULL;
                        Some(st)
                    }
                    Some(None) => None,
                    None => test_general(h, req)?,
                },
            };
            match st {
                Some(st) => {
                    *flag = 1;
                    store(status, &st);
                    status_result(st, "MPI_Test").map(|_| ())
                }
                None => {
                    *flag = 0;
                    sched::yield_now();
                    Ok(())
                }
            }
        })
    }
);

/// MPI_Test under the state's write side.
unsafe fn test_general(h: usize, req: *mut Req) -> MpiResult<Option<Status>> {
    state::with(|s| -> MpiResult<Option<Status>> {
        check_req(s, h)?;
        if !live(s, h) {
            return Ok(Some(Status::empty()));
        }
        if !is_done(s, h as ReqId) {
            s.progress();
        }
        Ok(is_done(s, h as ReqId).then(|| take(s, req)))
    })?
}

/// Shared by the all/any/some forms: checks every handle first.
unsafe fn reqs<'a>(n: c_int, p: *mut Req) -> MpiResult<&'a mut [Req]> {
    if n < 0 {
        return err(c::MPI_ERR_COUNT, format!("negative request count {n}"));
    }
    if n == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return err(c::MPI_ERR_ARG, "null request array");
    }
    let v = std::slice::from_raw_parts_mut(p, n as usize);
    state::with(|s| v.iter().try_for_each(|&h| check_req(s, h)))??;
    Ok(v)
}

/// Finishes entries that are complete; returns how many were taken and whether any failed.
unsafe fn take_done(s: &mut State, v: &mut [Req], statuses: *mut MpiStatus, only: Option<&mut Vec<usize>>) -> (usize, bool) {
    let mut n = 0;
    let mut failed = false;
    // The indices are collected only for a caller that asks (Waitsome/Testsome): Waitall's
    // polls allocate nothing.
    let mut only = only;
    if let Some(o) = only.as_deref_mut() {
        o.clear();
    }
    for (i, h) in v.iter_mut().enumerate() {
        if live(s, *h) && is_done(s, *h as ReqId) {
            let st = take(s, h);
            failed |= st.error != c::MPI_SUCCESS;
            let pos = match only.as_deref_mut() {
                Some(o) => {
                    o.push(i);
                    o.len() - 1
                }
                None => i,
            };
            store_at(statuses, pos, &st);
            n += 1;
        }
    }
    (n, failed)
}

mpi_fn!(
    MPI_Waitall,
    PMPI_Waitall,
    |n: c_int, p: *mut Req, statuses: *mut MpiStatus| errcomm = errcomm(),
    {
        me()?;
        super::greq::around(|| {
            let mut spun = false;
            let (v, statuses, mut failed) = if n > 0 && !p.is_null() {
                let v = std::slice::from_raw_parts_mut(p, n as usize);
                // issue 16 (p2p7): direct operations, polled together in place.
                if direct::on() {
                    let mut failed = false;
                    match wait_direct(v, !statuses.is_null(), |i, st| {
                        failed |= st.error != c::MPI_SUCCESS;
                        store_at(statuses, i, &st);
                    }) {
                        Ok(()) if failed => return err(c::MPI_ERR_IN_STATUS, "a request failed (see the statuses' MPI_ERROR fields)"),
                        Ok(()) => return Ok(()),
                        Err(s) => spun = s,
                    }
                }
                // issue 16 (p2p9): one worker: one lock for the whole wait.
                let (k, failed, s) = waitall_alone(v, statuses);
                spun |= s;
                let (k, failed) = if k == v.len() || s {
                    (k, failed)
                } else {
                    let statuses_k = if statuses.is_null() { statuses } else { statuses.add(k) };
                    let (k2, f2) = waitall_shared(&mut v[k..], statuses_k);
                    (k + k2, failed | f2)
                };
                let rest = if statuses.is_null() { statuses } else { statuses.add(k) };
                (&mut v[k..], rest, failed)
            } else {
                (reqs(n, p)?, statuses, false)
            };
            // What the read side did not finish (SMP mode), or everything.
            if !v.is_empty() {
                // Every handle checked, and those with nothing to wait for given an empty
                // status, under one lock.
                state::with(|s| {
                    v.iter().try_for_each(|&h| check_req(s, h))?;
                    for (i, &h) in v.iter().enumerate() {
                        if !live(s, h) {
                            store_at(statuses, i, &Status::empty());
                        }
                    }
                    Ok::<(), MpiError>(())
                })??;
                blocking::block_on_after(
                    |s| {
                        failed |= take_done(s, v, statuses, None).1;
                        v.iter().all(|&h| !live(s, h)).then_some(())
                    },
                    |s| (s.progress(), None),
                    spun,
                )?;
            }
            if failed {
                return err(c::MPI_ERR_IN_STATUS, "a request failed (see the statuses' MPI_ERROR fields)");
            }
            Ok(())
        })
    }
);

mpi_fn!(
    MPI_Testall,
    PMPI_Testall,
    |n: c_int, p: *mut Req, flag: *mut c_int, statuses: *mut MpiStatus| errcomm = errcomm(),
    {
        me()?;
        super::greq::around(|| {
            let v = reqs(n, p)?;
            hd::out(flag, "flag")?;
            // issue 16 (rate15): lean direct requests stay lean (the general path below
            // registers them all first).
            if direct::on() {
                if let Some(failed) = test_lean(v, statuses) {
                    *flag = failed.is_some() as c_int;
                    if failed == Some(true) {
                        return err(c::MPI_ERR_IN_STATUS, "a request failed (see the statuses' MPI_ERROR fields)");
                    }
                    if failed.is_none() {
                        sched::yield_now();
                    }
                    return Ok(());
                }
            }
            let all = state::with(|s| {
                s.progress();
                v.iter().all(|&h| !live(s, h) || is_done(s, h as ReqId))
            })?;
            if !all {
                *flag = 0;
                sched::yield_now();
                return Ok(());
            }
            *flag = 1;
            let failed = state::with(|s| {
                for (i, &h) in v.iter().enumerate() {
                    if !live(s, h) {
                        store_at(statuses, i, &Status::empty());
                    }
                }
                take_done(s, v, statuses, None).1
            })?;
            if failed {
                return err(c::MPI_ERR_IN_STATUS, "a request failed (see the statuses' MPI_ERROR fields)");
            }
            Ok(())
        })
    }
);

/// issue 16 (rate15): MPI_Testall when point-to-point passes through and every handle of
/// `v` (checked) is null, complete, or a lean direct request of the running subrank
/// (`State::lean_scan`): one look at the real requests (`State::lean_poll`), and when all
/// are complete each taken into `statuses` (an array, or MPI_STATUSES_IGNORE). Some(None):
/// not all complete (nothing taken; a step of the rest of the engine made); Some(Some(failed)):
/// all taken, `failed` when one failed. None: the general path runs (nothing done).
///
/// # Safety
/// `v` are the caller's request handles; `statuses` has room for `v.len()` or is ignored.
unsafe fn test_lean(v: &mut [Req], statuses: *mut MpiStatus) -> Option<Option<bool>> {
    if !sched::in_coroutine() {
        return None;
    }
    let sub = sched::rank();
    let mut g = state::lock();
    let s = g.as_mut()?;
    if !s.lean_scan(sub, v) {
        return None;
    }
    let mut from = 0;
    let LeanPoll::Done(rc) = s.lean_poll(sub, v, &mut from, !statuses.is_null()) else {
        // Not all complete, or a failed one finished (the others not): the next call takes it.
        s.progress_step();
        return Some(None);
    };
    let mut failed = false;
    take_lean(s, sub, v, rc, !statuses.is_null(), |k, st| {
        failed |= st.error != c::MPI_SUCCESS;
        store_at(statuses, k, &st);
    });
    Some(Some(failed))
}

/// issue 16 (rate15): takes every handle of `v` (the running subrank `sub`'s) after
/// `State::lean_poll` gave `Done(rc)`: the lean ones with `State::lean_take` (one look each),
/// the others (null, the built-in complete send, complete requests) with `take_own_done`;
/// each status to `each(index, status)`, handles nulled as `take` does.
fn take_lean(s: &mut State, sub: usize, v: &mut [Req], rc: c_int, statuses: bool, mut each: impl FnMut(usize, Status)) {
    let at = s.lean_places();
    let n = at.len();
    let mut next = 0;
    for (i, h) in v.iter_mut().enumerate() {
        let lean = at.get(next).is_some_and(|&p| p as usize == i);
        let taken = if lean {
            next += 1;
            s.lean_take(sub, *h as ReqId, next - 1, n, rc, statuses)
        } else {
            None
        };
        let st = match taken {
            Some((st, comm)) => {
                *h = c::MPI_REQUEST_NULL;
                if let Some(e) = ERRCOMM.get(sub) {
                    e.store(comm, Ordering::Relaxed);
                }
                st
            }
            None => take_own_done(s, sub, h).unwrap_or_else(Status::empty),
        };
        each(i, st);
    }
    s.lean_places_back(at);
}

unsafe fn any(v: &mut [Req], block: bool, index: *mut c_int, flag: *mut c_int, status: *mut MpiStatus) -> MpiResult<()> {
    let mut step = |s: &mut State| -> Option<Option<(usize, Status)>> {
        if v.iter().all(|&h| !live(s, h)) {
            return Some(None);
        }
        for (i, h) in v.iter_mut().enumerate() {
            if live(s, *h) && is_done(s, *h as ReqId) {
                return Some(Some((i, take(s, h))));
            }
        }
        None
    };
    let r = if block {
        Some(block_on(step)?)
    } else {
        state::with(|s| {
            s.progress();
            step(s)
        })?
    };
    match r {
        None => {
            *flag = 0;
            *index = c::MPI_UNDEFINED;
            sched::yield_now();
            Ok(())
        }
        Some(None) => {
            *flag = 1;
            *index = c::MPI_UNDEFINED;
            store(status, &Status::empty());
            Ok(())
        }
        Some(Some((i, st))) => {
            *flag = 1;
            *index = i as c_int;
            store(status, &st);
            status_result(st, "completion").map(|_| ())
        }
    }
}

mpi_fn!(
    MPI_Waitany,
    PMPI_Waitany,
    |n: c_int, p: *mut Req, index: *mut c_int, status: *mut MpiStatus| errcomm = errcomm(),
    {
        me()?;
        super::greq::around(|| {
            let v = reqs(n, p)?;
            hd::out(index, "index")?;
            let mut f = 0;
            any(v, true, index, &mut f, status)
        })
    }
);

mpi_fn!(
    MPI_Testany,
    PMPI_Testany,
    |n: c_int, p: *mut Req, index: *mut c_int, flag: *mut c_int, status: *mut MpiStatus| errcomm = errcomm(),
    {
        me()?;
        super::greq::around(|| {
            let v = reqs(n, p)?;
            hd::out(index, "index")?;
            hd::out(flag, "flag")?;
            any(v, false, index, flag, status)
        })
    }
);

unsafe fn some(v: &mut [Req], block: bool, outcount: *mut c_int, indices: *mut c_int, statuses: *mut MpiStatus) -> MpiResult<()> {
    let mut idx = Vec::new();
    let mut failed = false;
    let mut step = |s: &mut State, idx: &mut Vec<usize>, failed: &mut bool| -> Option<bool> {
        if v.iter().all(|&h| !live(s, h)) {
            return Some(false);
        }
        let (n, f) = take_done(s, v, statuses, Some(idx));
        *failed |= f;
        (n > 0).then_some(true)
    };
    let r = if block {
        Some(block_on(|s| step(s, &mut idx, &mut failed))?)
    } else {
        state::with(|s| {
            s.progress();
            step(s, &mut idx, &mut failed)
        })?
    };
    match r {
        Some(false) => *outcount = c::MPI_UNDEFINED,
        Some(true) => {
            *outcount = idx.len() as c_int;
            for (k, &i) in idx.iter().enumerate() {
                *indices.add(k) = i as c_int;
            }
        }
        None => {
            *outcount = 0;
            sched::yield_now();
        }
    }
    if failed {
        return err(c::MPI_ERR_IN_STATUS, "a request failed (see the statuses' MPI_ERROR fields)");
    }
    Ok(())
}

mpi_fn!(
    MPI_Waitsome,
    PMPI_Waitsome,
    |n: c_int, p: *mut Req, outcount: *mut c_int, indices: *mut c_int, statuses: *mut MpiStatus| errcomm = errcomm(),
    {
        me()?;
        super::greq::around(|| {
            let v = reqs(n, p)?;
            hd::out(outcount, "outcount")?;
            some(v, true, outcount, indices, statuses)
        })
    }
);

mpi_fn!(
    MPI_Testsome,
    PMPI_Testsome,
    |n: c_int, p: *mut Req, outcount: *mut c_int, indices: *mut c_int, statuses: *mut MpiStatus| errcomm = errcomm(),
    {
        me()?;
        super::greq::around(|| {
            let v = reqs(n, p)?;
            hd::out(outcount, "outcount")?;
            some(v, false, outcount, indices, statuses)
        })
    }
);

mpi_fn!(
    MPI_Request_get_status,
    PMPI_Request_get_status,
    |h: Req, flag: *mut c_int, status: *mut MpiStatus| errcomm = errcomm(),
    {
        me()?;
        hd::out(flag, "flag")?;
        super::greq::around(|| {
            let r = state::with(|s| -> MpiResult<Option<Status>> {
                check_req(s, h)?;
                if !live(s, h) {
                    return Ok(Some(Status::empty()));
                }
                if !is_done(s, h as ReqId) {
                    s.progress();
                }
                if !is_done(s, h as ReqId) {
                    return Ok(None);
                }
                if let Some(r) = s.req_mut(h as ReqId) {
                    // SAFETY: complete, and its owner asks (the data must be in place once the
                    // flag says complete).
                    unsafe { r.settle() };
                }
                Ok(Some(s.status_of(h as ReqId).unwrap_or_else(Status::empty)))
            })??;
            match r {
                Some(st) => {
                    *flag = 1;
                    store(status, &st);
                }
                None => {
                    *flag = 0;
                    sched::yield_now();
                }
            }
            Ok(())
        })
    }
);

mpi_fn!(MPI_Request_free, PMPI_Request_free, |req: *mut Req| errcomm = errcomm(), {
    me()?;
    if req.is_null() {
        return err(c::MPI_ERR_ARG, "null request pointer");
    }
    if *req == c::MPI_REQUEST_NULL {
        return err(c::MPI_ERR_REQUEST, "MPI_Request_free of MPI_REQUEST_NULL");
    }
    let h = *req as ReqId;
    state::with(|s| -> MpiResult<()> {
        // issue 16 (p2p8): a lean direct request is completed (then dropped) by the engine.
        s.unlean();
        let Some(r) = s.req_mut(h) else {
            return Err(bad_request(h as usize));
        };
        if r.complete || !r.active {
            s.drop_request(h);
        } else {
            r.freed = true;
            r.persist = None;
        }
        Ok(())
    })??;
    *req = c::MPI_REQUEST_NULL;
    super::greq::after_free()
});

mpi_fn!(MPI_Cancel, PMPI_Cancel, |req: *mut Req| errcomm = errcomm(), {
    me()?;
    if req.is_null() {
        return err(c::MPI_ERR_ARG, "null request pointer");
    }
    if *req == c::MPI_REQUEST_NULL {
        return err(c::MPI_ERR_REQUEST, "MPI_Cancel of MPI_REQUEST_NULL");
    }
    let h = *req;
    state::with(|s| check_req(s, h))??;
    if let Some(r) = super::greq::cancel(h as ReqId) {
        return r;
    }
    state::with(|s| -> MpiResult<()> {
        s.cancel(h as ReqId);
        Ok(())
    })??;
    Ok(())
});

mpi_fn!(
    MPI_Test_cancelled,
    PMPI_Test_cancelled,
    |status: *const MpiStatus, flag: *mut c_int| errcomm = c::MPI_COMM_WORLD,
    {
        if status.is_null() || flag.is_null() {
            return err(c::MPI_ERR_ARG, "null argument");
        }
        *flag = (*status).cancelled() as c_int;
        Ok(())
    }
);

/// Whole elements of `dt` in the status's data (`MPI_UNDEFINED` when not a whole number).
///
/// # Safety
/// `status` must be null or point to a status.
unsafe fn count_of(status: *const MpiStatus, dt: usize) -> MpiResult<i64> {
    if status.is_null() {
        return err(c::MPI_ERR_ARG, "null status");
    }
    let d = crate::core::datatype::lookup(dt)?;
    let b = (*status).bytes();
    Ok(if d.size == 0 {
        0
    } else if !b.is_multiple_of(d.size as u64) {
        c::MPI_UNDEFINED as i64
    } else {
        (b / d.size as u64) as i64
    })
}

/// Basic elements of `dt` in the status's data (`MPI_Get_elements`).
///
/// # Safety
/// `status` must be null or point to a status.
unsafe fn elements_of(status: *const MpiStatus, dt: usize) -> MpiResult<i64> {
    if status.is_null() {
        return err(c::MPI_ERR_ARG, "null status");
    }
    Ok(crate::core::datatype::lookup(dt)?.elements_in((*status).bytes()))
}

/// Exports a status query (`MPI_Get_count`, `MPI_Get_elements` and their `_x`/`_c` forms)
/// that stores `$f(status, datatype)` in a count of type `$t` (clamped to its maximum).
macro_rules! status_count_fn {
    ($name:ident, $pname:ident, $t:ty, $f:ident) => {
        mpi_fn!(
            $name,
            $pname,
            |status: *const MpiStatus, dt: usize, count: *mut $t| errcomm = c::MPI_COMM_WORLD,
            {
                if count.is_null() {
                    return err(c::MPI_ERR_ARG, "null count");
                }
                *count = <$t>::try_from($f(status, dt)?).unwrap_or(<$t>::MAX);
                Ok(())
            }
        );
    };
}
status_count_fn!(MPI_Get_count, PMPI_Get_count, c_int, count_of);
status_count_fn!(MPI_Get_count_c, PMPI_Get_count_c, i64, count_of);
status_count_fn!(MPI_Get_elements, PMPI_Get_elements, c_int, elements_of);
status_count_fn!(MPI_Get_elements_x, PMPI_Get_elements_x, i64, elements_of);
status_count_fn!(MPI_Get_elements_c, PMPI_Get_elements_c, i64, elements_of);

// ---- persistent requests ----

unsafe fn persist(spec: Persist, comm_h: usize, req: *mut Req) -> MpiResult<()> {
    if req.is_null() {
        return err(c::MPI_ERR_ARG, "null request pointer");
    }
    let sub = me()?;
    let id = state::with(|s| {
        let id = s.new_request(sub, comm_h);
        if let Some(r) = s.req_mut(id) {
            r.persist = Some(Box::new(spec));
            r.active = false;
        }
        id
    })?;
    *req = id as Req;
    Ok(())
}

#[allow(clippy::too_many_arguments)]
unsafe fn send_init(
    buf: *const c_void,
    count: i64,
    dt: usize,
    dest: c_int,
    tag: c_int,
    comm_h: usize,
    req: *mut Req,
    mode: SendMode,
) -> MpiResult<()> {
    let (_, _, d, n) = check_send(buf, count, dt, dest, tag, comm_h)?;
    persist(
        Persist::Send {
            buf: buf as *const u8,
            count: n,
            dt: d,
            dest,
            tag,
            comm: comm_h,
            mode,
        },
        comm_h,
        req,
    )
}

macro_rules! send_init_fn {
    ($name:ident, $pname:ident, $cname:ident, $pcname:ident, $mode:expr) => {
        with_c!($name, $pname, $cname, $pcname, (buf: *const c_void), count,
            (dt: usize, dest: c_int, tag: c_int, comm_h: usize, req: *mut Req), errcomm = comm_h, send_init, $mode);
    };
}
send_init_fn!(MPI_Send_init, PMPI_Send_init, MPI_Send_init_c, PMPI_Send_init_c, SendMode::Standard);
send_init_fn!(MPI_Ssend_init, PMPI_Ssend_init, MPI_Ssend_init_c, PMPI_Ssend_init_c, SendMode::Sync);
send_init_fn!(
    MPI_Rsend_init,
    PMPI_Rsend_init,
    MPI_Rsend_init_c,
    PMPI_Rsend_init_c,
    SendMode::Ready
);
send_init_fn!(
    MPI_Bsend_init,
    PMPI_Bsend_init,
    MPI_Bsend_init_c,
    PMPI_Bsend_init_c,
    SendMode::Buffered
);

unsafe fn recv_init(buf: *mut c_void, count: i64, dt: usize, src: c_int, tag: c_int, comm_h: usize, req: *mut Req) -> MpiResult<()> {
    let (_, _, d, n) = check_recv(buf, count, dt, src, tag, comm_h)?;
    persist(
        Persist::Recv {
            buf: buf as *mut u8,
            count: n,
            dt: d,
            src,
            tag,
            comm: comm_h,
        },
        comm_h,
        req,
    )
}

with_c!(MPI_Recv_init, PMPI_Recv_init, MPI_Recv_init_c, PMPI_Recv_init_c, (buf: *mut c_void), count,
    (dt: usize, src: c_int, tag: c_int, comm_h: usize, req: *mut Req), errcomm = comm_h, recv_init);

unsafe fn start(h: Req) -> MpiResult<()> {
    let sub = me()?;
    let spec = state::with(|s| -> MpiResult<Persist> {
        let r = s.req(h as ReqId).ok_or_else(|| bad_request(h))?;
        let Some(p) = r.persist.as_ref() else {
            return err(c::MPI_ERR_REQUEST, "MPI_Start on a request that is not persistent");
        };
        if r.active && !r.complete {
            return err(c::MPI_ERR_REQUEST, "MPI_Start on a request that is still active");
        }
        Ok((**p).clone())
    })??;
    let comm_h = match &spec {
        Persist::Send { comm, .. } | Persist::Recv { comm, .. } => *comm,
        Persist::Coll(op) => {
            state::with(|s| {
                if let Some(r) = s.req_mut(h as ReqId) {
                    r.active = true;
                    r.complete = false;
                    r.status = Status::empty();
                }
            })?;
            return super::coll::launch(h as ReqId, op.clone());
        }
        Persist::Team(call) => {
            state::with(|s| {
                if let Some(r) = s.req_mut(h as ReqId) {
                    r.active = true;
                    r.complete = false;
                    r.pending = 1;
                    r.status = Status::empty();
                }
            })?;
            return crate::core::coll::teamcall::restart(call);
        }
    };
    let (_, cm) = comm(comm_h)?;
    state::with(|s| -> MpiResult<()> {
        if let Some(r) = s.req_mut(h as ReqId) {
            r.active = true;
            r.complete = false;
            r.pending = 0;
            r.status = Status::empty();
        }
        match spec {
            Persist::Send {
                buf,
                count,
                dt,
                dest,
                tag,
                mode,
                ..
            } => launch_send(s, h as ReqId, sub, &cm, buf, count, &dt, dest, tag, mode),
            Persist::Recv {
                buf, count, dt, src, tag, ..
            } => {
                if src == c::MPI_PROC_NULL {
                    if let Some(r) = s.req_mut(h as ReqId) {
                        r.status = blocking::proc_null_status();
                    }
                    s.complete(h as ReqId);
                } else {
                    // SAFETY: the buffer given to MPI_Recv_init, by its owner, running.
                    unsafe {
                        s.start_recv(
                            h as ReqId,
                            sub,
                            Pattern { ctx: cm.ctx, src, tag },
                            RecvTarget { buf, count, dt: dt.into() },
                        )
                    };
                }
                Ok(())
            }
            Persist::Coll(_) | Persist::Team(_) => unreachable!("started above"),
        }
    })?
}

mpi_fn!(MPI_Start, PMPI_Start, |req: *mut Req| errcomm = errcomm(), {
    if req.is_null() {
        return err(c::MPI_ERR_ARG, "null request pointer");
    }
    start(*req)
});

mpi_fn!(MPI_Startall, PMPI_Startall, |n: c_int, p: *mut Req| errcomm = errcomm(), {
    me()?;
    let v = reqs(n, p)?;
    for &h in v.iter() {
        start(h)?;
    }
    Ok(())
});

// ---- buffered-send buffer ----

fn buffer_attach(buf: *mut c_void, size: i64) -> MpiResult<()> {
    let sub = me()?;
    if size < 0 {
        return err(c::MPI_ERR_ARG, format!("negative buffer size {size}"));
    }
    if buf.is_null() && size > 0 {
        return err(c::MPI_ERR_BUFFER, format!("null buffer of {size} bytes"));
    }
    state::with(|s| {
        let l = &mut s.locals[sub];
        if l.bsend.is_some() {
            return err(c::MPI_ERR_BUFFER, "a buffer is already attached (detach it first)");
        }
        l.bsend = Some((buf as usize, size as usize));
        Ok(())
    })?
}

mpi_fn!(
    MPI_Buffer_attach,
    PMPI_Buffer_attach,
    |buf: *mut c_void, size: c_int| errcomm = c::MPI_COMM_WORLD,
    { buffer_attach(buf, size.into()) }
);

mpi_fn!(
    MPI_Buffer_attach_c,
    PMPI_Buffer_attach_c,
    |buf: *mut c_void, size: i64| errcomm = c::MPI_COMM_WORLD,
    { buffer_attach(buf, size) }
);

/// Detaches the buffered-send buffer once every buffered message has left it; returns its
/// address and size (null and 0 when none was attached).
fn buffer_detach() -> MpiResult<(*mut c_void, usize)> {
    let sub = me()?;
    block_on(|s| (s.locals[sub].bsend_used == 0).then_some(()))?;
    let b = state::with(|s| s.locals[sub].bsend.take())?;
    Ok(b.map_or((std::ptr::null_mut(), 0), |(p, n)| (p as *mut c_void, n)))
}

/// MPI_Buffer_detach(_c): detaches and writes the buffer's address and size (`conv`: into
/// the binding's size type).
///
/// # Safety
/// `addr` and `size` are null (refused) or writable.
unsafe fn detach_into<T>(addr: *mut *mut c_void, size: *mut T, conv: impl Fn(usize) -> T) -> MpiResult<()> {
    hd::out(addr, "buffer address")?;
    hd::out(size, "size")?;
    let (p, n) = buffer_detach()?;
    // SAFETY: both checked non-null above; the caller's pointers are writable.
    unsafe {
        *addr = p;
        *size = conv(n);
    }
    Ok(())
}

mpi_fn!(
    MPI_Buffer_detach,
    PMPI_Buffer_detach,
    |addr: *mut *mut c_void, size: *mut c_int| errcomm = c::MPI_COMM_WORLD,
    { detach_into(addr, size, |n| n as c_int) }
);

mpi_fn!(
    MPI_Buffer_detach_c,
    PMPI_Buffer_detach_c,
    |addr: *mut *mut c_void, size: *mut i64| errcomm = c::MPI_COMM_WORLD,
    { detach_into(addr, size, |n| n as i64) }
);

mpi_fn!(
    MPI_Status_set_elements,
    PMPI_Status_set_elements,
    |status: *mut MpiStatus, dt: usize, count: c_int| errcomm = c::MPI_COMM_WORLD,
    { set_elements(status, dt, count as i64) }
);

mpi_fn!(
    MPI_Status_set_elements_c,
    PMPI_Status_set_elements_c,
    |status: *mut MpiStatus, dt: usize, count: i64| errcomm = c::MPI_COMM_WORLD,
    { set_elements(status, dt, count) }
);

mpi_fn!(
    MPI_Status_set_elements_x,
    PMPI_Status_set_elements_x,
    |status: *mut MpiStatus, dt: usize, count: i64| errcomm = c::MPI_COMM_WORLD,
    { set_elements(status, dt, count) }
);

/// Records `count` basic elements of `dt` in a status (as bytes, which Get_count/Get_elements
/// read back).
unsafe fn set_elements(status: *mut MpiStatus, dt: usize, count: i64) -> MpiResult<()> {
    if status.is_null() {
        return err(c::MPI_ERR_ARG, "null status");
    }
    let n = hd::count(count)?;
    let d = crate::core::datatype::lookup(dt)?;
    let bytes = d.bytes_for_elements(n as u64);
    let st = &mut *status;
    st.internal[0] = (bytes & 0xffff_ffff) as i32;
    st.internal[1] = (bytes >> 32) as i32;
    Ok(())
}

mpi_fn!(
    MPI_Status_set_cancelled,
    PMPI_Status_set_cancelled,
    |status: *mut MpiStatus, flag: c_int| errcomm = c::MPI_COMM_WORLD,
    {
        if status.is_null() {
            return err(c::MPI_ERR_ARG, "null status");
        }
        (*status).internal[2] = (flag != 0) as i32;
        Ok(())
    }
);

/// A new request that is already complete (for operations that finish at once).
pub fn completed_request(comm_h: usize) -> MpiResult<usize> {
    let sub = me()?;
    let id = state::with(|s| {
        let id = s.new_request(sub, comm_h);
        s.complete(id);
        id
    })?;
    Ok(id as usize)
}
