//! Point-to-point between subranks of one process on the read side of the state
//! (`state::shared`, SMP mode): each step locks one subrank's `Local` only, so workers
//! exchanging messages among their own subranks never wait for each other. The common cases
//! are done here (a posted receive or a parked direct receive served by one copy, a small
//! queued copy, a sibling's rendezvous, a request that completed); anything else answers
//! "general" before doing anything, and the caller takes the general path from the start.

use crate::consts as c;
use crate::core::p2p::matching::{find_posted, Body, Direct, Envelope, Pattern, Posted, SyncAck, TakeAt, Unexp};
use crate::core::p2p::{eager_header, fatal_transport, received};
use crate::core::request::{owner_of, RecvTarget, ReqId, Status};
use crate::core::state::{Local, Shared};
use crate::sched;
use crate::transport::Payload;

/// What a reader's step of a blocking receive found.
pub enum Take {
    /// The message is in the buffer: its status.
    Done(Status),
    /// A direct receive is registered (or still waits): park until woken, then `recv_check`.
    Waiting,
    /// The general path must run.
    General,
}

/// Copies a message into `l`'s parked direct receive when it matches and has not been
/// served. Returns whether it did (the caller wakes the receiver).
pub fn direct_into(l: &mut Local, env: &Envelope, data: &[u8]) -> bool {
    let Some(d) = l.direct.as_mut() else {
        return false;
    };
    if d.done.is_some() || !d.pat.matches(env) {
        return false;
    }
    let n = data.len().min(d.cap);
    if n > 0 {
        // SAFETY: the receiver registered `buf` with room for `cap` bytes and stays parked in
        // its receive until it has taken `done`; `data` holds `n` bytes.
        unsafe { crate::transport::copy::bytes(data.as_ptr(), d.buf, n) };
    }
    d.done = Some(received(env, data.len(), d.cap));
    true
}

/// Queues an unmatched message in `l`. A parked direct receive it matches gives up its
/// registration: a later message must not be copied past this earlier one (the receive then
/// takes this one through its queue). The caller wakes the receiver.
pub fn queue_into(l: &mut Local, u: Unexp) {
    if l.direct.is_some_and(|d| d.done.is_none() && d.pat.matches(&u.env)) {
        l.direct = None;
    }
    l.unexpected.push_back(u);
}

/// Copies (unpacks) a message's bytes into receive `rid` of `l` and fills its status.
pub fn copy_into(l: &mut Local, rid: ReqId, env: Envelope, src: &[u8], len: usize) {
    let Some(r) = l.reqs.get_mut(rid) else { return };
    let t = r.recv.as_ref().expect("receive request has a target");
    let cap = t.count * t.dt.size;
    // SAFETY: the receive buffer holds `count` elements of its type (MPI's rule).
    let n = unsafe { t.dt.unpack(src, t.buf, t.count) };
    r.status.source = env.src;
    r.status.tag = env.tag;
    r.status.bytes = n as u64;
    r.status.error = if len > cap { c::MPI_ERR_TRUNCATE } else { c::MPI_SUCCESS };
}

/// Receive `rid` of `l` got `len` bytes with envelope `env` into `cap` contiguous bytes
/// (copied by the caller): its status.
fn set_received(l: &mut Local, rid: ReqId, env: &Envelope, len: usize, cap: usize) {
    if let Some(r) = l.reqs.get_mut(rid) {
        let st = received(env, len, cap);
        r.status.source = st.source;
        r.status.tag = st.tag;
        r.status.bytes = st.bytes;
        r.status.error = st.error;
    }
}

fn wake(task: usize) {
    if task != sched::current() {
        sched::wake(task);
    }
}

/// How a send to a sibling or cousin went (`deliver_send`).
pub enum Sent {
    /// The bytes are where they go (or in a queued copy): the send is complete.
    Done,
    /// The receiver copies them from the sender's buffer later (`Body::Intra`).
    Rendezvous,
    /// Nothing was done.
    General,
}

/// Messages from this size on are copied outside the receiver's lock (`deliver_send`): the
/// lock is then held for a few steps only, never for a long copy that the receiver (polling
/// its requests) or its other senders would wait for.
pub const COPY_UNLOCKED: usize = 16 << 10;

/// A standard-mode send of `data` (at `ptr`) to subrank `dsub`: into a matching posted
/// receive, or its parked direct receive, or a queued copy when at most `eager_max` bytes;
/// with `sreq` (the sender's request) larger ones wait in the queue for the receiver to copy
/// them. Wakes the receiver.
///
/// From `COPY_UNLOCKED` bytes on the copy is made without the receiver's lock: a posted
/// receive is taken out of the queue first (only this sender reaches it then, until it
/// completes it), a direct receive is marked served and `copying` (its owner waits on),
/// and a queued copy is made before the lock is taken again (and the queues looked at
/// again). The read side is held throughout, so no writer sees the receive half done.
pub fn deliver_send(sh: &Shared<'_>, dsub: usize, env: Envelope, data: &[u8], eager_max: usize, sreq: Option<ReqId>) -> Sent {
    if data.len() >= COPY_UNLOCKED {
        return deliver_big(sh, dsub, env, data, eager_max, sreq);
    }
    let Some(mut l) = sh.local(dsub) else {
        return Sent::General;
    };
    let mut out = Sent::Done;
    let mut woken = dsub;
    if let Some(i) = find_posted(l.posted.iter(), &env) {
        let rid = l.posted[i].req;
        if owner_of(rid) != Some(dsub) {
            return Sent::General;
        }
        l.posted.take_at(i);
        copy_into(&mut l, rid, env, data, data.len());
        match l.complete(rid) {
            Some(w) => woken = w,
            None => return Sent::Done,
        }
    } else if !direct_into(&mut l, &env, data) {
        let body = if data.len() <= eager_max {
            Body::Eager(Payload::copy_of(data))
        } else if let Some(sreq) = sreq {
            out = Sent::Rendezvous;
            Body::Intra { sreq, ptr: data.as_ptr() }
        } else {
            return Sent::General;
        };
        let u = Unexp {
            env,
            len: data.len(),
            body,
            sync: SyncAck::None,
        };
        queue_into(&mut l, u);
    }
    drop(l);
    wake(woken);
    out
}

/// `deliver_send` of `COPY_UNLOCKED` bytes or more: the copy without the receiver's lock.
#[inline(never)]
fn deliver_big(sh: &Shared<'_>, dsub: usize, env: Envelope, data: &[u8], eager_max: usize, sreq: Option<ReqId>) -> Sent {
    let Some(mut l) = sh.local(dsub) else {
        return Sent::General;
    };
    let mut copied: Option<Payload> = None;
    loop {
        if let Some(i) = find_posted(l.posted.iter(), &env) {
            let rid = l.posted[i].req;
            if owner_of(rid) != Some(dsub) {
                return Sent::General;
            }
            l.posted.take_at(i);
            let target = l
                .reqs
                .get(rid)
                .and_then(|r| r.recv.as_ref())
                .filter(|t| t.dt.is_contiguous())
                .map(|t| (t.buf, t.count * t.dt.size));
            let waiter = match target {
                Some((buf, cap)) => {
                    drop(l);
                    let n = data.len().min(cap);
                    if n > 0 {
                        // SAFETY: the receive's buffer holds `cap` contiguous bytes until its
                        // request completes, which only this sender does now (below); `data`
                        // holds `n`.
                        unsafe { crate::transport::copy::bytes(data.as_ptr(), buf, n) };
                    }
                    let Some(mut l) = sh.local(dsub) else {
                        return Sent::Done;
                    };
                    set_received(&mut l, rid, &env, data.len(), cap);
                    l.complete(rid)
                }
                None => {
                    copy_into(&mut l, rid, env, data, data.len());
                    let w = l.complete(rid);
                    drop(l);
                    w
                }
            };
            if let Some(w) = waiter {
                wake(w);
            }
            return Sent::Done;
        }
        if let Some(d) = l.direct.as_mut().filter(|d| d.done.is_none() && d.pat.matches(&env)) {
            d.done = Some(received(&env, data.len(), d.cap));
            d.copying = true;
            let (buf, n) = (d.buf, data.len().min(d.cap));
            drop(l);
            // SAFETY: the receiver registered `buf` with room for `cap >= n` bytes and stays
            // in its receive until it has taken `done`, which it does not while `copying` is
            // set.
            unsafe { crate::transport::copy::bytes(data.as_ptr(), buf, n) };
            if let Some(d) = sh.local(dsub).as_mut().and_then(|l| l.direct.as_mut()) {
                d.copying = false;
            }
            wake(dsub);
            return Sent::Done;
        }
        let mut out = Sent::Done;
        let body = if data.len() <= eager_max {
            let Some(p) = copied.take() else {
                // Copy without the lock, then look again: a receive may come meanwhile.
                drop(l);
                copied = Some(Payload::copy_of(data));
                let Some(g) = sh.local(dsub) else {
                    return Sent::General;
                };
                l = g;
                continue;
            };
            Body::Eager(p)
        } else if let Some(sreq) = sreq {
            out = Sent::Rendezvous;
            Body::Intra { sreq, ptr: data.as_ptr() }
        } else {
            return Sent::General;
        };
        let u = Unexp {
            env,
            len: data.len(),
            body,
            sync: SyncAck::None,
        };
        queue_into(&mut l, u);
        drop(l);
        wake(dsub);
        return out;
    }
}

/// A standard-mode send of `data` to subrank `dsub` of this process, needing no request:
/// into a matching posted receive or its parked direct receive, or queued as a copy when at
/// most `eager_max` bytes. False (nothing done) otherwise.
pub fn send(sh: &Shared<'_>, dsub: usize, env: Envelope, data: &[u8], eager_max: usize) -> bool {
    matches!(deliver_send(sh, dsub, env, data, eager_max, None), Sent::Done)
}

/// A standard-mode eager message (at most `eager_max` bytes of the configuration) from the
/// running subrank `sub` to subrank `dsub` of process `proc`, through the transport's own
/// lock. False (nothing done) when it is larger.
pub fn send_remote(sh: &Shared<'_>, proc: usize, dsub: usize, sub: usize, env: Envelope, data: &[u8]) -> bool {
    if data.len() > sh.cfg().eager_max {
        return false;
    }
    if let Err(e) = sh.transport().send_eager(proc, dsub, sub, &eager_header(&env, data.len()), data) {
        fatal_transport(e)
    }
    true
}

/// A new send request of the running subrank `sub` (in its slab) to world rank `dest`, with
/// one event pending; None when its region hints track requests (the general path does).
fn send_request(sh: &Shared<'_>, sub: usize, comm_h: usize, dest: u32, tag: i32) -> Option<ReqId> {
    send_request_in(&mut *sh.local(sub)?, comm_h, dest, tag)
}

/// `send_request` in the running subrank's `Local`, locked by the caller.
fn send_request_in(l: &mut Local, comm_h: usize, dest: u32, tag: i32) -> Option<ReqId> {
    if l.region.tracking {
        return None;
    }
    let id = l.reqs.insert_new(comm_h, sched::current());
    let r = l.reqs.get_mut(id)?;
    r.mark_send(dest, tag);
    r.pending = 1;
    Some(id)
}

/// The request of a standard-mode MPI_Isend of `len` bytes by the subrank whose `Local` is
/// `l` (locked by the caller), when it is eager (at most `eager_max` bytes): the sender's
/// built-in complete send (`Slab::done_send`, as MPICH's built-in complete request), since an
/// eager send completes in the call that sends it (issue 16, p2p9/p2p10). None: a longer
/// send, or the region hints track requests (the general path makes one).
#[inline]
pub fn eager_done(l: &mut Local, len: usize, eager_max: usize) -> Option<ReqId> {
    if len > eager_max || l.region.tracking {
        return None;
    }
    Some(l.reqs.done_send())
}

/// MPI_Isend in standard mode from the running subrank `sub` to subrank `dsub` of this
/// process (world rank `dest`): its request, complete unless the receiver is to copy the
/// data from `data` later. None: nothing was done (the general path runs).
///
/// # Safety
/// `data` stays valid until the request completes (MPI's rule for a send buffer).
pub unsafe fn isend(
    sh: &Shared<'_>,
    sub: usize,
    comm_h: usize,
    dsub: usize,
    dest: u32,
    env: Envelope,
    data: &[u8],
    done: Option<ReqId>,
) -> Option<ReqId> {
    let eager_max = sh.cfg().intra_eager_max;
    // issue 16 (p2p10): an eager send completes in `deliver_send` (copied into the matching
    // receive, or queued as a copy; no request needed), so its request is `done`, the
    // sender's built-in complete send the caller took (`eager_done`) with the communicator
    // look-up: no slab entry to make and free. The sender's `Local` lock is released before
    // the receiver's is taken.
    if data.len() <= eager_max {
        let id = done?;
        return match deliver_send(sh, dsub, env, data, eager_max, None) {
            Sent::Done => Some(id),
            Sent::Rendezvous | Sent::General => None,
        };
    }
    let id = send_request(sh, sub, comm_h, dest, env.tag)?;
    match deliver_send(sh, dsub, env, data, eager_max, Some(id)) {
        Sent::Done => {
            sh.local(sub)?.complete(id);
        }
        Sent::Rendezvous => {}
        Sent::General => {
            sh.local(sub)?.reqs.remove(id);
            return None;
        }
    }
    Some(id)
}

/// Where a blocking send-receive goes (`sendrecv`), resolved by the caller from the
/// communicator: the send's envelope and destination (world rank, process, subrank), the
/// receive's pattern.
#[derive(Clone, Copy)]
pub struct SendRecvTo {
    pub env: Envelope,
    pub dest: u32,
    pub proc: usize,
    pub dsub: usize,
    pub pat: Pattern,
}

/// What the read side did of a blocking send-receive (`sendrecv`).
pub struct SendRecv {
    /// The receive: `Done`, or `Waiting` on a direct receive (`recv_check`); never `General`.
    pub recv: Take,
    /// The send: `Done`; `Rendezvous` (the receiver copies from the send buffer: wait for
    /// `sreq`); or `General` (nothing was sent: the caller sends through the general path).
    pub send: Sent,
    /// The send's request, for a rendezvous.
    pub sreq: Option<ReqId>,
}

/// MPI_Sendrecv of contiguous bytes by the running subrank `sub` (its `Local` is `l`, locked
/// by the caller), on the read side, as MPI says: the receive first (a queued copy taken into
/// `rbuf`, or a direct receive registered there, as MPI_Recv's `recv_start`), then the send
/// (`deliver_send` to a subrank of this process, with a request for a rendezvous when larger
/// than a queued copy may be; an eager message to another process), each under one lock.
/// None, having done nothing: the receive needs the general path (receives posted before,
/// a rendezvous or synchronous message queued...), or the send does (a rendezvous to another
/// process, region hints tracking requests).
///
/// # Safety
/// `rbuf..rbuf+cap` is writable, outside the swapped thread-locals, until the receive ends
/// (the caller waits for it); `data` stays readable until the send ends.
pub unsafe fn sendrecv(
    sh: &Shared<'_>,
    sub: usize,
    l: crate::sched::lock::Guard<'_, Local>,
    comm_h: usize,
    to: SendRecvTo,
    data: &[u8],
    rbuf: *mut u8,
    cap: usize,
) -> Option<SendRecv> {
    let remote = to.proc != sh.myproc();
    if remote && data.len() > sh.cfg().eager_max {
        return None;
    }
    let rndv = !remote && data.len() > sh.cfg().intra_eager_max;
    if rndv && l.region.tracking {
        return None;
    }
    // SAFETY: forwarded from the caller.
    let recv = unsafe { recv_start(l, &to.pat, rbuf, cap) };
    if matches!(recv, Take::General) {
        return None;
    }
    // The region hints do not track this rank's requests (above): a request is made.
    let sreq = if rndv {
        send_request(sh, sub, comm_h, to.dest, to.env.tag)
    } else {
        None
    };
    let send = if remote {
        send_remote(sh, to.proc, to.dsub, sub, to.env, data);
        Sent::Done
    } else {
        deliver_send(sh, to.dsub, to.env, data, sh.cfg().intra_eager_max, sreq)
    };
    let sreq = match (&send, sreq) {
        (Sent::Rendezvous, s) => s,
        (_, Some(id)) => {
            sh.local(sub)?.reqs.remove(id);
            None
        }
        (_, None) => None,
    };
    Some(SendRecv { recv, send, sreq })
}

/// MPI_Irecv by the running subrank `sub`: a queued copy or a sibling's rendezvous that
/// matches is taken at once, else the receive is posted. None: nothing was done (the region
/// hints track requests, or the match needs the transport).
///
/// issue 16 (p2p11): `l` is `sub`'s `Local`, locked by the caller (who looked up the
/// communicator in it: one lock, not two).
///
/// # Safety
/// `t` is a receive buffer of `sub`, which runs, valid until the request completes.
pub unsafe fn irecv<'a>(
    sh: &Shared<'a>,
    mut l: crate::sched::lock::Guard<'a, Local>,
    sub: usize,
    comm_h: usize,
    pat: Pattern,
    t: RecvTarget,
) -> Option<ReqId> {
    if l.region.tracking {
        return None;
    }
    // Session 27 (msgrate27): an empty queue (a receive posted before its message) is not
    // searched (the deque's iterator costs some 25 instructions even then).
    let found = if l.unexpected.is_empty() { None } else { l.unexpected.find(&pat) };
    if let Some(i) = found {
        let u = &l.unexpected[i];
        let ok = match u.body {
            Body::Eager(_) => true,
            Body::Intra { sreq, .. } => owner_of(sreq).is_some(),
            Body::Inter { .. } | Body::Real { .. } => false,
        };
        if !ok || !matches!(u.sync, SyncAck::None) {
            return None;
        }
    }
    // issue 16 (p2p9): built where it is kept (a request is a few hundred bytes; `insert` of
    // one built on the stack copied it).
    let id = l.reqs.insert_new(comm_h, sched::current());
    let r = l.reqs.get_mut(id)?;
    // SAFETY: forwarded from the caller.
    unsafe { r.set_recv(t) };
    let Some(i) = found else {
        l.posted.push_back(Posted { pat, req: id });
        return Some(id);
    };
    let u = l.unexpected.take_at(i).expect("index from find_unexpected");
    let (src, sender) = match &u.body {
        Body::Eager(p) => (p.as_slice(), None),
        // SAFETY: the sender's buffer stays valid until its request completes, which
        // happens below, after the copy.
        Body::Intra { sreq, ptr } => (unsafe { std::slice::from_raw_parts(*ptr, u.len) }, Some(*sreq)),
        Body::Inter { .. } | Body::Real { .. } => unreachable!("checked above"),
    };
    // A large contiguous copy is made without the lock (the new request is this rank's
    // alone until it returns it), so that its senders do not wait for it.
    let target = (u.len >= COPY_UNLOCKED)
        .then(|| l.reqs.get(id).and_then(|r| r.recv.as_ref()))
        .flatten()
        .filter(|t| t.dt.is_contiguous())
        .map(|t| (t.buf, t.count * t.dt.size));
    match target {
        Some((buf, cap)) => {
            drop(l);
            let n = u.len.min(cap);
            if n > 0 {
                // SAFETY: the receive buffer holds `cap` contiguous bytes (the caller's), the
                // message `u.len >= n`.
                unsafe { crate::transport::copy::bytes(src.as_ptr(), buf, n) };
            }
            l = sh.local(sub)?;
            set_received(&mut l, id, &u.env, u.len, cap);
        }
        None => copy_into(&mut l, id, u.env, src, u.len),
    }
    l.complete(id);
    drop(l);
    if let Some(sreq) = sender {
        let o = owner_of(sreq)?;
        let w = sh.local(o)?.send_copied(sreq);
        if let Some(w) = w {
            sched::wake(w);
        }
    }
    Some(id)
}

/// What a wait or test found of one of the running subrank's requests.
pub enum Finish {
    /// Complete and taken (freed): its status and communicator handle.
    Done(Status, usize),
    /// Not complete yet.
    Pending,
    /// The general path must run (persistent or generalized request, another rank's, ...).
    General,
}

/// Takes request `id` of the running subrank when it is complete.
pub fn finish_own(l: &mut Local, id: ReqId) -> Finish {
    if !l.greq_ready.is_empty() {
        return Finish::General;
    }
    // issue 16 (p2p10): the built-in complete send, taken without a look at its entry.
    if l.reqs.is_done_send(id) {
        return Finish::Done(Status::sent(), c::MPI_COMM_WORLD);
    }
    let Some(r) = l.reqs.get_mut(id) else {
        return Finish::General;
    };
    if r.persist.is_some() || r.greq.is_some() || !r.active {
        return Finish::General;
    }
    if !r.complete {
        return Finish::Pending;
    }
    // SAFETY: the request is complete and its owner, the running subrank, takes it.
    unsafe { r.settle() };
    let (st, comm) = (r.status, r.comm);
    l.drop_request(id);
    Finish::Done(st, comm)
}

/// A blocking receive's first look: a queued copy matching `pat` goes into `buf`; with
/// nothing queued that matches, a direct receive into `buf` is registered. General when the
/// rank has receives posted, a direct receive registered, generalized requests to settle, or
/// when the matching message needs more than a copy (a sibling's rendezvous, a synchronous
/// or inter-process message).
///
/// The copy out of a queued message is made after `l` (the running subrank's `Local`,
/// locked) is released, so that senders to this rank never wait for it.
///
/// # Safety
/// `buf..buf+cap` must be writable until the receive ends, and `l` is the running subrank's.
pub unsafe fn recv_start(mut l: crate::sched::lock::Guard<'_, Local>, pat: &Pattern, buf: *mut u8, cap: usize) -> Take {
    if !l.posted.is_empty() || l.direct.is_some() || !l.greq_ready.is_empty() {
        return Take::General;
    }
    if let Some(i) = l.unexpected.find(pat) {
        let u = &l.unexpected[i];
        if !matches!(u.body, Body::Eager(_)) || !matches!(u.sync, SyncAck::None) {
            return Take::General;
        }
        let u = l.unexpected.take_at(i).expect("index from find_unexpected");
        drop(l);
        let Body::Eager(p) = &u.body else { unreachable!("checked above") };
        let data = p.as_slice();
        let n = data.len().min(cap);
        if n > 0 {
            // SAFETY: the queued copy holds `len >= n` bytes; `buf` has room for `cap >= n`.
            unsafe { crate::transport::copy::bytes(data.as_ptr(), buf, n) };
        }
        return Take::Done(received(&u.env, u.len, cap));
    }
    l.waiting = Some(*pat);
    l.direct = Some(Direct {
        pat: *pat,
        buf,
        cap,
        done: None,
        copying: false,
    });
    Take::Waiting
}

/// After a wake-up: whether the registered direct receive got its message. General when the
/// registration was given up (an earlier matching message was queued instead).
pub fn recv_check(l: &mut Local) -> Take {
    match l.direct {
        Some(Direct {
            done: Some(st),
            copying: false,
            ..
        }) => {
            l.direct = None;
            l.waiting = None;
            Take::Done(st)
        }
        Some(_) => Take::Waiting,
        None => Take::General,
    }
}

/// Gives up the direct receive `recv_start` registered (its call failed otherwise): its
/// status when a message was copied in already, else None, and no message goes there any
/// more. None while a sender is still copying a message in (look again).
pub fn recv_abandon(l: &mut Local) -> Option<Option<Status>> {
    if l.direct.is_some_and(|d| d.copying) {
        return None;
    }
    let d = l.direct.take();
    l.waiting = None;
    Some(d.and_then(|d| d.done))
}

/// The status of the first message in `l`'s queue that matches `pat` (MPI_Probe, MPI_Iprobe).
pub fn probe(l: &Local, pat: &Pattern) -> Option<Status> {
    let i = l.unexpected.find(pat)?;
    let u = &l.unexpected[i];
    Some(Status {
        source: u.env.src,
        tag: u.env.tag,
        error: c::MPI_SUCCESS,
        bytes: u.len as u64,
        cancelled: false,
    })
}

/// Whether every one of `ids` is MPI_REQUEST_NULL (`null`) or a plain request of `l` (not
/// persistent, not generalized) that `finish_own` can take.
pub fn all_own(l: &Local, ids: &[usize], null: usize) -> bool {
    l.greq_ready.is_empty()
        && ids.iter().all(|&h| {
            h == null
                || l.reqs.is_done_send(h as ReqId)
                || l.reqs
                    .get(h as ReqId)
                    .is_some_and(|r| r.persist.is_none() && r.greq.is_none() && r.active)
        })
}

/// What a reader's poll of the transport did (`poll`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Polled {
    /// Nothing arrived, or another reader is polling now.
    Nothing,
    /// Messages arrived and were delivered (and something may need the write side too: the
    /// next poll says so). Delivered takes precedence over `General` because a message
    /// delivered to the polling task itself woke nobody: a task waiting in place must look
    /// at what it got before it parks (answering `General` here lost that wake-up in
    /// `stress` at 2x2x1 when the in-place wait first polled on the read side).
    Delivered,
    /// Nothing was delivered, and something needs the write side (`State::progress`): a
    /// message other than a plain eager one (handed back to the transport, first in line),
    /// or real requests whose completion is an event.
    General,
}

/// Most messages one reader's poll delivers.
const POLL_DRAIN: usize = 32;

/// One poll of the transport on the read side: plain eager messages from other
/// processes (no synchronous send) go straight to their receiver's `Local`, into a matching
/// posted receive of its own, its parked direct receive, or its queue, the transport's lock
/// held (so arrivals keep their order) and then that one `Local`'s. Eager sends' copies that
/// the real MPI finished are freed. Anything else is left to the write side.
pub fn poll(sh: &Shared<'_>) -> Polled {
    let Some(mut tp) = sh.try_transport() else {
        return Polled::Nothing;
    };
    crate::core::background::stepped();
    let mut did = false;
    for _ in 0..POLL_DRAIN {
        let a = match tp.poll_ring_raw() {
            Ok(Some(a)) => a,
            Ok(None) => break,
            Err(e) => fatal_transport(e),
        };
        let hdr = tp.header(&a);
        let payload = tp.eager_payload(&a, &hdr);
        let (Some(payload), true) = (
            payload,
            hdr.kind == crate::transport::wire::KIND_EAGER && hdr.flags & crate::transport::wire::FLAG_SYNC == 0,
        ) else {
            tp.hold(a);
            return if did { Polled::Delivered } else { Polled::General };
        };
        let env = Envelope {
            ctx: hdr.ctx,
            src: hdr.src_rank,
            tag: hdr.tag,
        };
        // SAFETY: the slot stays as it is until the next poll of the transport, whose lock
        // we hold until the copy below is done.
        let data = unsafe { payload.as_slice() };
        // Delivered as a sibling's send is (`send`), with no size limit: always one copy,
        // into the receive or into its queue. Not done (no such subrank, a posted receive of
        // another owner):
        // the write side takes it.
        if !send(sh, a.dst_sub, env, data, usize::MAX) {
            tp.hold(a);
            return if did { Polled::Delivered } else { Polled::General };
        }
        did = true;
    }
    if tp.has_pending() {
        if tp.pending_events() {
            return if did { Polled::Delivered } else { Polled::General };
        }
        let mut none = Vec::new();
        if let Err(e) = tp.poll_pending(&mut none) {
            fatal_transport(e)
        }
        debug_assert!(none.is_empty());
    }
    if did {
        Polled::Delivered
    } else {
        Polled::Nothing
    }
}
