//! `MPI_Sendrecv`, `MPI_Sendrecv_replace` and their nonblocking forms `MPI_Isendrecv`,
//! `MPI_Isendrecv_replace` (MPI 4.0), each with its large-count `_c` twin.
//!
//! All start the receive, then the send, at the call (so they match in call order with the
//! rank's other operations). The blocking forms wait for both; the nonblocking ones return a
//! request that a helper task completes once both have, with the receive's status.

use super::consts as c;
use super::handles::{self as hd, comm};
use super::p2p::{check_send, irecv, isend};
use super::status::{store, MpiStatus};
use crate::core::error::{err, MpiResult};
use crate::core::p2p::blocking::{self, status_result};
use crate::core::p2p::matching::{Envelope, Pattern};
use crate::core::p2p::shared::{self, Take};
use crate::core::p2p::{InPlace, SendMode};
use crate::core::request::{ReqId, Status};
use crate::core::state;
use std::os::raw::{c_int, c_void};

/// The two halves of a started send-receive, and the packed copy a `_replace` send reads.
struct Started {
    send: ReqId,
    recv: ReqId,
    copy: Option<Vec<u8>>,
}

#[allow(clippy::too_many_arguments)]
unsafe fn start(
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
) -> MpiResult<Started> {
    check_send(sbuf, scount, sdt, dest, stag, comm_h)?;
    let recv = irecv(rbuf, rcount, rdt, src, rtag, comm_h)?;
    let send = isend(sbuf, scount, sdt, dest, stag, comm_h, SendMode::Standard)?;
    Ok(Started { send, recv, copy: None })
}

/// The `_replace` form: the send goes from a packed copy of `buf`, the receive into `buf`.
#[allow(clippy::too_many_arguments)]
unsafe fn start_replace(
    buf: *mut c_void,
    count: i64,
    dt: usize,
    dest: c_int,
    stag: c_int,
    src: c_int,
    rtag: c_int,
    comm_h: usize,
) -> MpiResult<Started> {
    let (sub, cm, d, n) = check_send(buf, count, dt, dest, stag, comm_h)?;
    hd::source(&cm, src)?;
    hd::recv_tag(rtag)?;
    let mut copy = Vec::with_capacity(n * d.size);
    d.pack(buf as *const u8, n, &mut copy);
    let recv = blocking::irecv(sub, comm_h, cm.ctx, buf as *mut u8, n, &d, src, rtag)?;
    let bytes = crate::core::datatype::byte();
    let send = blocking::isend(
        sub,
        &cm,
        comm_h,
        cm.ctx,
        copy.as_ptr(),
        copy.len(),
        &bytes,
        dest,
        stag,
        SendMode::Standard,
    )?;
    Ok(Started {
        send,
        recv,
        copy: Some(copy),
    })
}

/// Waits for one half: on the read side of the state when it can (a plain request of the
/// running subrank), else through the general path.
fn wait(id: ReqId) -> MpiResult<Status> {
    match super::p2p::wait_shared(id as usize) {
        Some(st) => Ok(st),
        None => blocking::wait(id),
    }
}

/// Waits for both halves; the receive's status, with a failed send's error.
fn finish(st: Started) -> MpiResult<Status> {
    let sent = wait(st.send)?;
    let mut got = wait(st.recv)?;
    drop(st.copy);
    if got.error == c::MPI_SUCCESS {
        got.error = sent.error;
    }
    Ok(got)
}

/// Blocking form: waits, then reports like MPI_Recv.
unsafe fn complete(st: Started, status: *mut MpiStatus, what: &str) -> MpiResult<()> {
    let got = finish(st)?;
    store(status, &got);
    status_result(got, what).map(|_| ())
}

/// Nonblocking form: a request that a helper task completes when both halves have.
unsafe fn request(st: Started, comm_h: usize, req: *mut usize) -> MpiResult<()> {
    let (sub, _) = comm(comm_h)?;
    let id = state::with(|s| {
        let id = s.new_request(sub, comm_h);
        if let Some(r) = s.req_mut(id) {
            r.pending = 1;
        }
        id
    })?;
    let (send, recv) = (st.send, st.recv);
    let done = move |res: MpiResult<Status>| {
        let _ = state::with(|s| {
            if let Some(r) = s.req_mut(id) {
                match res {
                    Ok(got) => r.status = got,
                    Err(e) => r.status.error = e.class,
                }
            }
            s.event_done(id);
        });
    };
    let body = Box::new(move || {
        done(finish(st));
        0
    });
    match crate::sched::worker::spawn(body) {
        Ok(helper) => {
            // The halves wake the helper, which waits for them, not the rank.
            state::with(|s| {
                for h in [send, recv] {
                    if let Some(r) = s.req_mut(h) {
                        r.waiter = helper;
                    }
                }
            })?;
        }
        Err(e) => {
            let _ = state::with(|s| s.drop_request(id));
            return err(c::MPI_ERR_NO_MEM, format!("cannot start a nonblocking send-receive: {e}"));
        }
    }
    *req = id as usize;
    Ok(())
}

fn check_req(req: *mut usize) -> MpiResult<()> {
    if req.is_null() {
        return err(c::MPI_ERR_REQUEST, "null request pointer");
    }
    Ok(())
}

/// Exports a send-receive with two counts of type `$cnt`, ending with a status (blocking) or a
/// request (nonblocking) argument.
macro_rules! sendrecv_fn {
    ($name:ident, $pname:ident, $cnt:ty, status) => {
        sendrecv_fn!(@def $name, $pname, $cnt, comm_h, status: *mut MpiStatus, blocking_fast, |st| complete(st, status, stringify!($name)));
    };
    ($name:ident, $pname:ident, $cnt:ty, request) => {
        sendrecv_fn!(@def $name, $pname, $cnt, comm_h, req: *mut usize, no_fast, |st| request(st, comm_h, req), check_req(req)?);
    };
    (@def $name:ident, $pname:ident, $cnt:ty, $comm:ident, $last:ident: $lty:ty, $fast:ident, |$st:ident| $then:expr $(, $first:expr)?) => {
        mpi_fn!(
            $name,
            $pname,
            |sbuf: *const c_void,
             scount: $cnt,
             sdt: usize,
             dest: c_int,
             stag: c_int,
             rbuf: *mut c_void,
             rcount: $cnt,
             rdt: usize,
             src: c_int,
             rtag: c_int,
             $comm: usize,
             $last: $lty| errcomm = $comm,
            {
                $($first;)?
                if let Some(r) = $fast(sbuf, scount.into(), sdt, dest, stag, rbuf, rcount.into(), rdt, src, rtag, $comm, $last, stringify!($name)) {
                    return r;
                }
                let $st = start(sbuf, scount.into(), sdt, dest, stag, rbuf, rcount.into(), rdt, src, rtag, $comm)?;
                $then
            }
        );
    };
}

/// The blocking forms' fast paths (`p2p::sendrecv_direct`, point-to-point passing through;
/// `sendrecv_shared`, the read side of the state): None when the general path must run.
#[allow(clippy::too_many_arguments)]
unsafe fn blocking_fast(
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
    status: *mut MpiStatus,
    what: &str,
) -> Option<MpiResult<()>> {
    let r = match super::p2p::sendrecv_direct(sbuf, scount, sdt, dest, stag, rbuf, rcount, rdt, src, rtag, comm_h) {
        Some(r) => r,
        None => sendrecv_fast(sbuf, scount, sdt, dest, stag, rbuf, rcount, rdt, src, rtag, comm_h)?,
    };
    let got = match r {
        Ok(st) => st,
        Err(e) => return Some(Err(e)),
    };
    store(status, &got);
    Some(status_result(got, what).map(|_| ()))
}

/// Whether `len` bytes at `p` lie outside the program's swapped thread-locals (a buffer there
/// holds the running subrank's values only while it runs: the general path bounces it).
fn outside_tls(p: *const c_void, len: usize) -> bool {
    len == 0 || !crate::sched::swap::in_blocks(p as usize, p as usize + len)
}

/// The request-free blocking send-receive of contiguous predefined types: `sendrecv_alone`
/// when one worker runs this rank alone, else the read side's `sendrecv_shared`. None: the
/// general path runs (nothing was done).
///
/// # Safety
/// As MPI_Sendrecv's arguments.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn sendrecv_fast(
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
    // SAFETY: forwarded from the caller.
    if let Some(r) = unsafe { sendrecv_alone(sbuf, scount, sdt, dest, stag, rbuf, rcount, rdt, src, rtag, comm_h) } {
        return Some(r);
    }
    // SAFETY: forwarded from the caller.
    unsafe { sendrecv_shared(sbuf, scount, sdt, dest, stag, rbuf, rcount, rdt, src, rtag, comm_h) }
}

/// What `sendrecv_alone` did with the receive after the send went out.
enum Alone {
    /// The message is in the buffer: its status.
    Done(Status),
    /// Not received yet: the general receive runs, `true` when it polled for as long as a
    /// blocking receive would before parking.
    Recv(bool),
}

/// issue 16 (sr16): MPI_Sendrecv of an eager message to a rank of another process by a
/// subrank that runs alone on its worker (one worker, no sibling ready), the way MPI_Recv's
/// fast path receives (`State::recv_in_place`): under one lock of the state, the send goes
/// out as one real message (`State::send_now_fast`), then the ring is polled in place and the
/// reply copied from its slot straight into `rbuf`. The read side's path (`sendrecv_shared`)
/// registered a direct receive in the rank's `Local` first, and its wait polled the whole
/// engine: every arrival went through an event, `dispatch` and the direct receive's hand-over,
/// and the checks and look-ups ran under three locks.
///
/// Taken only when nothing of the rank can match first (no receive posted, nothing queued, no
/// direct receive, no generalized request to settle) and nothing is in flight: then the
/// receive, though polled after the send, matches exactly what it would have matched had it
/// been started first (the send goes to another process and no other receive of the rank
/// runs in between), and the ring yields messages in the real MPI's order (non-overtaking).
/// When nothing arrives in `SPIN_POLLS` polls, or something else does (dispatched as usual),
/// the receive finishes as MPI_Recv's general path would. None: not taken, nothing done.
///
/// # Safety
/// As MPI_Sendrecv's arguments.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn sendrecv_alone(
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
    if crate::core::p2p::direct::on() || crate::sched::queue::workers() > 1 || crate::sched::others_ready() {
        return None;
    }
    if crate::sched::metrics::on() {
        return None;
    }
    let (len, cap) = plain_pair(sbuf, scount, sdt, stag, rbuf, rcount, rdt, rtag)?;
    let sub = crate::sched::rank();
    let got = {
        let mut g = state::lock();
        let s = g.as_mut()?;
        if s.cfg.workers > 1 || len > s.cfg.eager_max || s.tp.has_pending() {
            return None;
        }
        let l = s.locals.get(sub)?;
        if !l.posted.is_empty() || l.direct.is_some() || !l.greq_ready.is_empty() {
            return None;
        }
        let queued = !l.unexpected.is_empty();
        let cm = super::p2p::local_comm(l, comm_h)?;
        let w = super::p2p::fast_world_of(s.world_size(), cm, comm_h, dest)?;
        if src != c::MPI_ANY_SOURCE {
            super::p2p::fast_world_of(s.world_size(), cm, comm_h, src)?;
        }
        let (ctx, rank) = (cm.ctx, cm.rank);
        if s.locate(w).0 == s.myproc {
            return None;
        }
        let pat = Pattern { ctx, src, tag: rtag };
        // The receive first, as MPI orders it: a queued copy that matches is taken now
        // (`State::try_recv_now`, as MPI_Recv takes one); a queued message that needs more
        // (a rendezvous from another process) leaves the whole call to the general path.
        let taken = if queued {
            // SAFETY: the receive buffer holds `cap` bytes.
            match unsafe { s.try_recv_now(sub, &pat, rbuf as *mut u8, cap) } {
                Some(st) => Some(st),
                None if s.probe(sub, &pat).is_some() => return None,
                None => None,
            }
        } else {
            None
        };
        // An eager message to another process (checked above): always sent here (a failure
        // of the transport ends the job).
        // SAFETY: the caller's send buffer holds `len` bytes for the duration of this call.
        let sent = unsafe { s.send_now_fast(sub, ctx, rank, w, stag, sbuf as *const u8, len) };
        debug_assert!(sent, "an eager send to another process goes out at once");
        match taken {
            Some(st) => Alone::Done(st),
            // Messages of other envelopes are queued: the general receive looks at them.
            None if queued => Alone::Recv(false),
            // SAFETY: the receive buffer holds `cap` bytes outside the thread-locals (above),
            // and this rank runs.
            None => match unsafe { s.recv_in_place(sub, &pat, rbuf as *mut u8, cap, blocking::SPIN_POLLS) } {
                InPlace::Done(st) => Alone::Done(st),
                InPlace::Spun => Alone::Recv(true),
                InPlace::General => Alone::Recv(false),
            },
        }
    };
    Some(match got {
        Alone::Done(st) => Ok(st),
        // SAFETY: forwarded from the caller.
        Alone::Recv(spun) => unsafe { super::p2p::recv_status(rbuf, rcount, rdt, src, rtag, comm_h, spun) },
    })
}

/// The fast Sendrecv paths' arguments (`sendrecv_alone`, `sendrecv_shared`): contiguous
/// predefined types, valid counts, buffers and tags, both buffers outside the swapped
/// thread-locals. The send's and the receive's bytes; None: the general path judges them.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn plain_pair(
    sbuf: *const c_void,
    scount: i64,
    sdt: usize,
    stag: c_int,
    rbuf: *mut c_void,
    rcount: i64,
    rdt: usize,
    rtag: c_int,
) -> Option<(usize, usize)> {
    let ssize = crate::core::datatype::contiguous_size(sdt)?;
    let rsize = crate::core::datatype::contiguous_size(rdt)?;
    if scount < 0 || rcount < 0 || (sbuf.is_null() && scount > 0) || (rbuf.is_null() && rcount > 0) {
        return None;
    }
    if stag < 0 || (rtag < 0 && rtag != c::MPI_ANY_TAG) {
        return None;
    }
    let (len, cap) = (scount as usize * ssize, rcount as usize * rsize);
    if !outside_tls(sbuf, len) || !outside_tls(rbuf, cap) {
        return None;
    }
    Some((len, cap))
}

/// MPI_Sendrecv of contiguous predefined types on the read side of the state
/// (`shared::sendrecv`): no request for the receive (a queued copy, or a direct receive the
/// sender copies into, as MPI_Recv's fast path) nor for a send that completes at once, one
/// subrank's lock at a time, and no write side, so that cousins on two workers exchange
/// without stopping each other. A send that must wait for its receiver (a rendezvous) has a
/// request of the running subrank. None: the general path runs (nothing was done).
///
/// # Safety
/// As MPI_Sendrecv's arguments.
#[allow(clippy::too_many_arguments)]
unsafe fn sendrecv_shared(
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
    if crate::core::p2p::direct::on() || !state::readable() {
        return None;
    }
    let (len, cap) = plain_pair(sbuf, scount, sdt, stag, rbuf, rcount, rdt, rtag)?;
    let sub = crate::sched::rank();
    // SAFETY: the caller's send buffer holds `len` bytes until this call returns, which is
    // not before the send completed.
    let data = unsafe { super::p2p::core_bytes(sbuf as *const u8, len) };
    let sr = state::shared(|sh| {
        let l = sh.local(sub)?;
        let cm = super::p2p::local_comm(&l, comm_h)?;
        let w = super::p2p::fast_world_of(sh.world_size(), cm, comm_h, dest)?;
        if src != c::MPI_ANY_SOURCE {
            super::p2p::fast_world_of(sh.world_size(), cm, comm_h, src)?;
        }
        let (proc, dsub) = sh.locate(w);
        let to = shared::SendRecvTo {
            env: Envelope {
                ctx: cm.ctx,
                src: cm.rank,
                tag: stag,
            },
            dest: w,
            proc,
            dsub,
            pat: Pattern {
                ctx: cm.ctx,
                src,
                tag: rtag,
            },
        };
        // SAFETY: the receive buffer holds `cap` bytes outside the thread-locals (above) until
        // this call returns, after the receive ended; the send buffer, `len` until the send did.
        unsafe { shared::sendrecv(&sh, sub, l, comm_h, to, data, rbuf as *mut u8, cap) }
    })??;
    Some(sendrecv_finish(
        sr, sub, sbuf, scount, sdt, dest, stag, rbuf, rcount, rdt, src, rtag, comm_h,
    ))
}

/// Waits for what `sendrecv_shared` started: a send the read side could not make goes
/// through the general path first (before this rank waits: its peer may wait for it), then
/// the receive (a direct receive given up for an earlier queued message is received through
/// the general path), then a rendezvous send.
#[allow(clippy::too_many_arguments)]
unsafe fn sendrecv_finish(
    sr: shared::SendRecv,
    sub: usize,
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
) -> MpiResult<Status> {
    let general_send = match sr.send {
        shared::Sent::General => match isend(sbuf, scount, sdt, dest, stag, comm_h, SendMode::Standard) {
            Ok(id) => Some(id),
            Err(e) => {
                // No receive may write into the buffer after the call returned.
                abandon(sub);
                return Err(e);
            }
        },
        _ => None,
    };
    // A send to itself may have served the receive already: look before waiting.
    let recv = match sr.recv {
        Take::Waiting => state::shared(|sh| sh.local(sub).map(|mut l| shared::recv_check(&mut l)))
            .flatten()
            .unwrap_or(Take::General),
        r => r,
    };
    let waited = match recv {
        Take::Done(st) => Some(st),
        Take::Waiting => super::p2p::recv_shared_wait(sub),
        Take::General => None,
    };
    let mut got = match waited {
        Some(st) => st,
        None => {
            // The registration was given up (an earlier matching message was queued):
            // nothing was received, the general receive takes it.
            abandon(sub);
            let id = irecv(rbuf, rcount, rdt, src, rtag, comm_h)?;
            blocking::wait(id)?
        }
    };
    let sent = match general_send.or(sr.sreq) {
        Some(id) => wait(id)?,
        None => Status::empty(),
    };
    if got.error == c::MPI_SUCCESS {
        got.error = sent.error;
    }
    Ok(got)
}

/// Gives up the running subrank `sub`'s direct receive (`shared::recv_abandon`), waiting for
/// a sender that is copying into it.
fn abandon(sub: usize) {
    while let Some(Some(None)) = state::shared(|sh| sh.local(sub).map(|mut l| shared::recv_abandon(&mut l))) {
        std::hint::spin_loop();
    }
}

/// The nonblocking forms have none.
#[allow(clippy::too_many_arguments)]
fn no_fast(
    _: *const c_void,
    _: i64,
    _: usize,
    _: c_int,
    _: c_int,
    _: *mut c_void,
    _: i64,
    _: usize,
    _: c_int,
    _: c_int,
    _: usize,
    _: *mut usize,
    _: &str,
) -> Option<MpiResult<()>> {
    None
}
sendrecv_fn!(MPI_Sendrecv, PMPI_Sendrecv, c_int, status);
sendrecv_fn!(MPI_Sendrecv_c, PMPI_Sendrecv_c, i64, status);
sendrecv_fn!(MPI_Isendrecv, PMPI_Isendrecv, c_int, request);
sendrecv_fn!(MPI_Isendrecv_c, PMPI_Isendrecv_c, i64, request);

#[allow(clippy::too_many_arguments)]
unsafe fn sendrecv_replace(
    buf: *mut c_void,
    count: i64,
    dt: usize,
    dest: c_int,
    stag: c_int,
    src: c_int,
    rtag: c_int,
    comm_h: usize,
    status: *mut MpiStatus,
) -> MpiResult<()> {
    // The read side's path (`sendrecv_shared`), the send going from a copy of `buf`.
    if let Some(size) = crate::core::datatype::contiguous_size(dt).filter(|_| count >= 0 && state::readable()) {
        let len = count as usize * size;
        let copy = if len == 0 || buf.is_null() {
            Vec::new()
        } else {
            // SAFETY: the caller's buffer holds `count` elements of the contiguous `dt`.
            unsafe { std::slice::from_raw_parts(buf as *const u8, len) }.to_vec()
        };
        let sbuf = if len == 0 {
            buf as *const c_void
        } else {
            copy.as_ptr() as *const c_void
        };
        // The copy is a byte buffer of `len` bytes: sent as `count` elements of `dt`, which is
        // contiguous, it is the same bytes.
        if let Some(r) = sendrecv_fast(sbuf, count, dt, dest, stag, buf, count, dt, src, rtag, comm_h) {
            drop(copy);
            let got = r?;
            store(status, &got);
            return status_result(got, "MPI_Sendrecv_replace").map(|_| ());
        }
    }
    let st = start_replace(buf, count, dt, dest, stag, src, rtag, comm_h)?;
    complete(st, status, "MPI_Sendrecv_replace")
}

with_c!(MPI_Sendrecv_replace, PMPI_Sendrecv_replace, MPI_Sendrecv_replace_c, PMPI_Sendrecv_replace_c, (buf: *mut c_void), count,
    (dt: usize, dest: c_int, stag: c_int, src: c_int, rtag: c_int, comm_h: usize, status: *mut MpiStatus), errcomm = comm_h,
    sendrecv_replace);

#[allow(clippy::too_many_arguments)]
unsafe fn isendrecv_replace(
    buf: *mut c_void,
    count: i64,
    dt: usize,
    dest: c_int,
    stag: c_int,
    src: c_int,
    rtag: c_int,
    comm_h: usize,
    req: *mut usize,
) -> MpiResult<()> {
    check_req(req)?;
    let st = start_replace(buf, count, dt, dest, stag, src, rtag, comm_h)?;
    request(st, comm_h, req)
}

with_c!(MPI_Isendrecv_replace, PMPI_Isendrecv_replace, MPI_Isendrecv_replace_c, PMPI_Isendrecv_replace_c, (buf: *mut c_void), count,
    (dt: usize, dest: c_int, stag: c_int, src: c_int, rtag: c_int, comm_h: usize, req: *mut usize), errcomm = comm_h,
    isendrecv_replace);
