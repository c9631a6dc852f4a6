//! Point-to-point: starting sends and receives, matching them, and moving the bytes:
//! one memcpy between siblings, the transport between processes.

pub mod blocking;
pub mod direct;
pub mod leanwait;
pub mod matching;
pub mod shared;
pub mod takenow;
pub mod tlsbuf;
pub mod unexq;

use crate::consts as c;
use crate::core::error::MpiResult;
use crate::core::p2p::matching::{find_posted, Body, Envelope, Pattern, Posted, SyncAck, TakeAt, Unexp};
use crate::core::p2p::shared::{copy_into, direct_into, queue_into};
use crate::core::request::{owner_of, RecvTarget, ReqId, Status};
use crate::core::state::State;
use crate::sched;
use crate::transport::engine::Arrived;
use crate::transport::wire::{self, Header};
use crate::transport::{Payload, RingBytes};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendMode {
    Standard,
    Sync,
    Ready,
    Buffered,
}

/// What `State::recv_in_place` did.
pub enum InPlace {
    /// The message is in the buffer: its status.
    Done(Status),
    /// Nothing arrived in all the polls.
    Spun,
    /// The general path must run (something else arrived and was dispatched, or the state
    /// needs the general path).
    General,
}

/// Bytes of a send: a pointer into user memory or into `owned`.
pub struct SendData {
    pub ptr: *const u8,
    pub len: usize,
    pub owned: Option<Vec<u8>>,
}

/// # Safety
/// `ptr..ptr+len` must be readable for the returned lifetime (or `len` zero).
unsafe fn bytes<'a>(ptr: *const u8, len: usize) -> &'a [u8] {
    if len == 0 || ptr.is_null() {
        &[]
    } else {
        std::slice::from_raw_parts(ptr, len)
    }
}

/// Wakes `sub` unless it is the running subrank, which looks at its queue and its direct
/// receive again after every progress step it makes (as `State::complete` does).
fn wake_other(sub: usize) {
    if sub != sched::current() {
        sched::wake(sub);
    }
}

/// The header of a standard-mode eager message (no acknowledgement).
#[inline(always)]
pub(super) fn eager_header(env: &Envelope, len: usize) -> Header {
    Header {
        kind: wire::KIND_EAGER,
        ctx: env.ctx,
        src_rank: env.src,
        tag: env.tag,
        len: len as u64,
        ..Default::default()
    }
}

#[cold]
#[inline(never)]
pub(super) fn fatal_transport(e: String) -> ! {
    crate::core::diag::fatal(&format!("transport: {e}"))
}

impl State {
    /// Starts a send in request `id` from local subrank `sub` (whose rank in the communicator
    /// is `src_rank`) to world rank `dest`.
    pub fn start_send(
        &mut self,
        id: ReqId,
        sub: usize,
        ctx: u64,
        src_rank: i32,
        dest: u32,
        tag: i32,
        data: SendData,
        mode: SendMode,
    ) -> MpiResult<()> {
        let env = Envelope { ctx, src: src_rank, tag };
        let (proc, dsub) = self.locate(dest);
        if let Some(r) = self.req_mut(id) {
            r.mark_send(dest, tag);
        }
        if let Some(dc) = self.direct.get(ctx) {
            let comm = dc.comm;
            self.send_direct(id, comm, dest, tag, data, mode);
            return Ok(());
        }
        if proc == self.myproc {
            self.send_intra(id, dsub, env, data, mode);
            return Ok(());
        }
        let sync = mode == SendMode::Sync;
        let mut hdr = Header {
            kind: wire::KIND_EAGER,
            flags: if sync { wire::FLAG_SYNC } else { 0 },
            ctx,
            src_rank,
            tag,
            len: data.len as u64,
            token: id,
            ..Default::default()
        };
        if data.len <= self.cfg.eager_max {
            // SAFETY: the caller guarantees the send buffer holds `len` bytes.
            let payload = unsafe { bytes(data.ptr, data.len) };
            self.tp
                .send_eager(proc, dsub, sub, &hdr, payload)
                .unwrap_or_else(|e| fatal_transport(e));
            if sync {
                if let Some(r) = self.req_mut(id) {
                    r.pending = 1;
                }
            } else {
                self.complete(id);
            }
        } else {
            hdr.kind = wire::KIND_RNDV;
            if let Some(r) = self.req_mut(id) {
                r.pending = 1 + sync as u32;
            }
            // SAFETY: user memory stays valid until the request completes (MPI's rule), and
            // owned memory moves into the transport, which keeps it until SendDone.
            unsafe { self.tp.send_rndv(proc, dsub, sub, hdr, data.ptr, data.owned, id) }.unwrap_or_else(|e| fatal_transport(e));
        }
        Ok(())
    }

    /// `try_send_now` for MPI_Send's fast path: an eager message to another process inline,
    /// the rest out of line.
    ///
    /// # Safety
    /// As `try_send_now`.
    #[inline(always)]
    pub unsafe fn send_now_fast(&mut self, sub: usize, ctx: u64, src_rank: i32, dest: u32, tag: i32, ptr: *const u8, len: usize) -> bool {
        let (proc, dsub) = self.locate(dest);
        if proc != self.myproc && len <= self.cfg.eager_max {
            // SAFETY: the caller's buffer holds `len` bytes for the duration of this call.
            self.send_eager_to(proc, dsub, sub, Envelope { ctx, src: src_rank, tag }, unsafe { bytes(ptr, len) });
            return true;
        }
        // SAFETY: forwarded from the caller.
        unsafe { self.try_send_now(sub, ctx, src_rank, dest, tag, ptr, len) }
    }

    /// An eager message (standard mode: no acknowledgement) with envelope `env` from subrank
    /// `sub` to subrank `dsub` of process `proc`; the transport's failure ends the job.
    #[inline(always)]
    fn send_eager_to(&mut self, proc: usize, dsub: usize, sub: usize, env: Envelope, data: &[u8]) {
        if let Err(e) = self.tp.send_eager(proc, dsub, sub, &eager_header(&env, data.len()), data) {
            fatal_transport(e)
        }
    }

    /// Completes a standard-mode send of contiguous bytes at once when no request is needed:
    /// an eager message to another process, a sibling's posted receive, or a small copy into
    /// a sibling's queue. Returns false (having done nothing) otherwise.
    ///
    /// # Safety
    /// `ptr..ptr+len` must be readable.
    #[inline]
    pub unsafe fn try_send_now(&mut self, sub: usize, ctx: u64, src_rank: i32, dest: u32, tag: i32, ptr: *const u8, len: usize) -> bool {
        let env = Envelope { ctx, src: src_rank, tag };
        let (proc, dsub) = self.locate(dest);
        // SAFETY: the caller's buffer holds `len` bytes for the duration of this call.
        let data = unsafe { bytes(ptr, len) };
        if proc != self.myproc {
            if len > self.cfg.eager_max {
                return false;
            }
            self.send_eager_to(proc, dsub, sub, env, data);
            return true;
        }
        if let Some(i) = find_posted(self.locals[dsub].posted.iter(), &env) {
            let p = self.locals[dsub].posted.take_at(i).expect("index from find_posted");
            self.copy_into(p.req, env, data, len);
            self.complete(p.req);
            return true;
        }
        if self.try_direct(dsub, &env, data, SyncAck::None) {
            return true;
        }
        if len > self.cfg.intra_eager_max {
            return false;
        }
        let u = Unexp {
            env,
            len,
            body: Body::Eager(Payload::copy_of(data)),
            sync: SyncAck::None,
        };
        self.queue(dsub, u);
        true
    }

    /// Queues an unmatched message for `dsub` and wakes it (see `shared::queue_into`).
    fn queue(&mut self, dsub: usize, u: Unexp) {
        queue_into(&mut self.locals[dsub], u);
        wake_other(dsub);
    }

    /// Copies a message straight into `dsub`'s parked direct receive (see `Direct`) when it
    /// matches; the caller has checked the posted receives, which come first. Returns
    /// whether it did.
    #[inline]
    fn try_direct(&mut self, dsub: usize, env: &Envelope, data: &[u8], sync: SyncAck) -> bool {
        if !direct_into(&mut self.locals[dsub], env, data) {
            return false;
        }
        if let SyncAck::Inter { proc, sub, token } = sync {
            self.tp.send_ack(proc, sub, dsub, token).unwrap_or_else(|e| fatal_transport(e));
        }
        wake_other(dsub);
        true
    }

    /// Receives a message already queued for `sub` into a contiguous buffer without a
    /// request, when its bytes are here (not a rendezvous from another process).
    ///
    /// # Safety
    /// `buf..buf+cap` must be writable.
    pub unsafe fn try_recv_now(&mut self, sub: usize, pat: &Pattern, buf: *mut u8, cap: usize) -> Option<Status> {
        let i = self.locals[sub].unexpected.find(pat)?;
        if matches!(self.locals[sub].unexpected[i].body, Body::Inter { .. } | Body::Real { .. }) {
            return None;
        }
        let u = self.locals[sub].unexpected.take_at(i).expect("index from find_unexpected");
        if let SyncAck::Inter { proc, sub: ssub, token } = u.sync {
            self.tp.send_ack(proc, ssub, sub, token).unwrap_or_else(|e| fatal_transport(e));
        }
        let n = u.len.min(cap);
        let st = received(&u.env, u.len, cap);
        let src = match &u.body {
            Body::Eager(p) => p.as_slice().as_ptr(),
            Body::Intra { ptr, .. } => *ptr,
            Body::Inter { .. } | Body::Real { .. } => unreachable!("checked above"),
        };
        if n > 0 {
            // SAFETY: the source holds `len >= n` bytes (a queued copy, or the sending
            // sibling's buffer, valid until its request completes below); the receive buffer
            // holds `cap >= n` bytes.
            unsafe { crate::transport::copy::bytes(src, buf, n) };
        }
        if let Body::Intra { sreq, .. } = u.body {
            self.send_copied(sreq);
        }
        Some(st)
    }

    fn send_intra(&mut self, id: ReqId, dsub: usize, env: Envelope, data: SendData, mode: SendMode) {
        if let Some(i) = find_posted(self.locals[dsub].posted.iter(), &env) {
            let p = self.locals[dsub].posted.take_at(i).expect("index from find_posted");
            // SAFETY: the send buffer holds `len` bytes (caller's guarantee).
            let src = unsafe { bytes(data.ptr, data.len) };
            self.copy_into(p.req, env, src, data.len);
            self.complete(p.req);
            self.complete(id);
            return;
        }
        let rendezvous = mode == SendMode::Sync || (data.len > self.cfg.intra_eager_max && data.owned.is_none());
        let unexp = if rendezvous {
            if let Some(r) = self.req_mut(id) {
                r.pending = 1;
                r.keep = data.owned.map(Box::new);
            }
            Unexp {
                env,
                len: data.len,
                body: Body::Intra { sreq: id, ptr: data.ptr },
                sync: SyncAck::None,
            }
        } else {
            let payload = match data.owned {
                Some(v) => Payload::from_vec(v),
                // SAFETY: as above.
                None => Payload::copy_of(unsafe { bytes(data.ptr, data.len) }),
            };
            self.complete(id);
            Unexp {
                env,
                len: data.len,
                body: Body::Eager(payload),
                sync: SyncAck::None,
            }
        };
        self.queue(dsub, unexp);
    }

    /// Starts a receive in request `id` for local subrank `sub`.
    ///
    /// # Safety
    /// `target` is a receive buffer of `sub`, which is running.
    pub unsafe fn start_recv(&mut self, id: ReqId, sub: usize, pat: Pattern, target: RecvTarget) {
        if let Some(r) = self.req_mut(id) {
            // SAFETY: forwarded from the caller.
            unsafe { r.set_recv(target) };
            r.is_send = false;
            r.status = Status::empty();
        }
        if let Some(i) = self.locals[sub].unexpected.find(&pat) {
            let u = self.locals[sub].unexpected.take_at(i).expect("index from find_unexpected");
            self.deliver(id, u);
        } else if self.direct.get(pat.ctx).is_some() {
            self.recv_direct(id, sub, pat);
        } else {
            self.locals[sub].posted.push_back(Posted { pat, req: id });
        }
    }

    /// Copies (unpacks) a message's bytes into receive `rid`'s buffer and fills its status.
    fn copy_into(&mut self, rid: ReqId, env: Envelope, src: &[u8], len: usize) {
        if let Some(l) = owner_of(rid).and_then(|o| self.locals.get_mut(o)) {
            copy_into(l, rid, env, src, len);
        }
    }

    /// Hands a matched message to receive `rid`.
    pub fn deliver(&mut self, rid: ReqId, u: Unexp) {
        if let SyncAck::Inter { proc, sub, token } = u.sync {
            let me = self.req(rid).map(|r| r.owner).unwrap_or(0);
            self.tp.send_ack(proc, sub, me, token).unwrap_or_else(|e| fatal_transport(e));
        }
        match u.body {
            Body::Eager(p) => {
                self.copy_into(rid, u.env, p.as_slice(), u.len);
                self.complete(rid);
            }
            Body::Intra { sreq, ptr } => {
                // SAFETY: the sending sibling's buffer stays valid until its request completes,
                // which happens just below, after the copy.
                let src = unsafe { bytes(ptr, u.len) };
                self.copy_into(rid, u.env, src, u.len);
                self.complete(rid);
                self.send_copied(sreq);
            }
            Body::Inter { src_proc, msgid } => {
                let Some(r) = self.req_mut(rid) else { return };
                let t = r.recv.clone().expect("receive request has a target");
                let cap = t.count * t.dt.size;
                r.status.source = u.env.src;
                r.status.tag = u.env.tag;
                r.status.bytes = u.len.min(cap) as u64;
                r.status.error = if u.len > cap { c::MPI_ERR_TRUNCATE } else { c::MPI_SUCCESS };
                r.pending = 1;
                let direct = t.dt.is_contiguous() && u.len <= cap;
                let temp = if direct { None } else { Some(vec![0u8; u.len]) };
                // SAFETY: a direct receive writes `len <= cap` bytes into the user's contiguous
                // buffer, valid until the request completes; otherwise `temp` is used.
                unsafe { self.tp.recv_rndv(src_proc, msgid, u.len, t.buf, temp, rid) }.unwrap_or_else(|e| fatal_transport(e));
            }
            Body::Real { msg } => self.deliver_real(rid, u.env, msg),
        }
    }

    /// A message from another process for local subrank `dst_sub`. An eager payload is
    /// borrowed from the transport's receive ring: copied straight into a matching posted
    /// receive, or into the unexpected queue.
    #[inline]
    pub fn on_message(&mut self, dst_sub: usize, src_proc: usize, src_sub: usize, hdr: Header, payload: RingBytes) {
        if dst_sub >= self.locals.len() {
            crate::core::diag::fatal(&format!(
                "a message for subrank {dst_sub} arrived, but this process runs {}",
                self.locals.len()
            ));
        }
        let env = Envelope {
            ctx: hdr.ctx,
            src: hdr.src_rank,
            tag: hdr.tag,
        };
        let sync = if hdr.flags & wire::FLAG_SYNC != 0 {
            SyncAck::Inter {
                proc: src_proc,
                sub: src_sub,
                token: hdr.token,
            }
        } else {
            SyncAck::None
        };
        let posted = find_posted(self.locals[dst_sub].posted.iter(), &env);
        let eager = hdr.kind == wire::KIND_EAGER;
        if let (Some(i), true) = (posted, eager) {
            let p = self.locals[dst_sub].posted.take_at(i).expect("index from find_posted");
            if let SyncAck::Inter { proc, sub, token } = sync {
                self.tp.send_ack(proc, sub, dst_sub, token).unwrap_or_else(|e| fatal_transport(e));
            }
            // SAFETY: the ring slot stays untouched until the next poll of the transport.
            self.copy_into(p.req, env, unsafe { payload.as_slice() }, hdr.len as usize);
            self.complete(p.req);
            return;
        }
        // SAFETY: as above.
        if eager && posted.is_none() && self.try_direct(dst_sub, &env, unsafe { payload.as_slice() }, sync) {
            return;
        }
        let body = if eager {
            // SAFETY: as above.
            Body::Eager(Payload::copy_of(unsafe { payload.as_slice() }))
        } else {
            Body::Inter {
                src_proc,
                msgid: hdr.msgid,
            }
        };
        let u = Unexp {
            env,
            len: hdr.len as usize,
            body,
            sync,
        };
        if let Some(i) = posted {
            let p = self.locals[dst_sub].posted.take_at(i).expect("index from find_posted");
            self.deliver(p.req, u);
        } else {
            self.queue(dst_sub, u);
        }
    }

    /// One progress step for subrank `sub` polling in place in a blocking receive of up to
    /// `cap` contiguous bytes into `buf` (`abi::p2p::recv_direct`): an eager message for it
    /// that matches `pat` is copied from the ring slot straight into `buf`, and its status
    /// returned, without the general path's event, matching and direct-receive hand-over.
    /// Anything else (a message for another rank or pattern, a synchronous send, other
    /// traffic in flight, receives of `sub` posted earlier, which match first) takes the
    /// general path. Returns whether anything happened, and the status when `buf` got its
    /// message.
    ///
    /// # Safety
    /// `buf..buf+cap` must be writable, and `sub` is the running subrank.
    #[inline]
    pub unsafe fn progress_recv(&mut self, sub: usize, pat: &Pattern, buf: *mut u8, cap: usize) -> (bool, Option<Status>) {
        if self.tp.has_pending() || !self.locals[sub].posted.is_empty() {
            return (self.progress(), None);
        }
        crate::core::background::stepped();
        let a = match self.tp.poll_ring_raw() {
            Ok(Some(a)) => a,
            Ok(None) => return (false, None),
            Err(e) => crate::core::state::progress_failed(e),
        };
        // SAFETY: forwarded from the caller.
        (true, unsafe { self.take_arrived(sub, pat, buf, cap, a) })
    }

    /// The request-free blocking receive's first attempt (`abi::p2p`'s MPI_Recv fast path):
    /// when nothing of `sub` can match first (no posted receive, nothing queued, no direct
    /// receive registered) and the transport has nothing in flight, polls the ring in place
    /// up to `polls` times; an eager message for `sub` that matches `pat` goes from its slot
    /// straight into `buf`. Anything else that arrives is dispatched as usual and ends the
    /// attempt ([`InPlace::General`]), as does a state this path does not handle.
    ///
    /// # Safety
    /// `buf..buf+cap` must be writable, and `sub` is the running subrank.
    #[inline(always)]
    pub unsafe fn recv_in_place(&mut self, sub: usize, pat: &Pattern, buf: *mut u8, cap: usize, polls: u32) -> InPlace {
        let Some(l) = self.locals.get(sub) else {
            return InPlace::General;
        };
        if !l.unexpected.is_empty() || !l.posted.is_empty() || l.direct.is_some() || !l.greq_ready.is_empty() || self.tp.has_pending() {
            return InPlace::General;
        }
        let a = match self.tp.spin_ring(polls, crate::core::background::stepped) {
            Ok(Some(a)) => a,
            Ok(None) => return InPlace::Spun,
            Err(e) => crate::core::state::progress_failed(e),
        };
        // SAFETY: forwarded from the caller.
        match unsafe { self.take_arrived(sub, pat, buf, cap, a) } {
            Some(st) => InPlace::Done(st),
            None => InPlace::General,
        }
    }

    /// A message just taken from the ring by a receive of `sub` polling in place: an eager
    /// one for `sub` matching `pat` is copied into `buf` and its status returned; anything
    /// else is dispatched (None).
    ///
    /// # Safety
    /// As `progress_recv`.
    #[inline(always)]
    unsafe fn take_arrived(&mut self, sub: usize, pat: &Pattern, buf: *mut u8, cap: usize, a: Arrived) -> Option<Status> {
        let hdr = self.tp.header(&a);
        let env = Envelope {
            ctx: hdr.ctx,
            src: hdr.src_rank,
            tag: hdr.tag,
        };
        if a.dst_sub == sub && hdr.kind == wire::KIND_EAGER && hdr.flags & wire::FLAG_SYNC == 0 && pat.matches(&env) {
            if let Some(p) = self.tp.eager_payload(&a, &hdr) {
                // SAFETY: the slot is reposted only at the next poll.
                let data = unsafe { p.as_slice() };
                let n = data.len().min(cap);
                // SAFETY: `data` holds `n` bytes; the caller's buffer has room for `cap >= n`.
                unsafe { crate::transport::copy::bytes(data.as_ptr(), buf, n) };
                return Some(received(&env, data.len(), cap));
            }
        }
        self.dispatch_arrived(a);
        None
    }

    #[inline(never)]
    fn dispatch_arrived(&mut self, a: Arrived) {
        if self.eager_to_posted(&a) {
            return;
        }
        match self.tp.event_of(a) {
            Ok(e) => self.dispatch(e),
            Err(e) => crate::core::state::progress_failed(e),
        }
    }

    /// A message just taken from the ring by a progress step (`State::progress_step`):
    /// matched in place when it can be (`eager_to_posted`), else made an event and
    /// dispatched. Returns whether it was an eager message (which ends the step: see
    /// `Transport::poll_ring`).
    #[inline(always)]
    pub(crate) fn on_arrived(&mut self, a: Arrived) -> bool {
        if self.eager_to_posted(&a) {
            return true;
        }
        let eager = self.tp.header(&a).kind == wire::KIND_EAGER;
        match self.tp.event_of(a) {
            Ok(e) => self.dispatch(e),
            Err(e) => crate::core::state::progress_failed(e),
        }
        eager
    }

    /// issue 16 (p2p11): an eager message just taken from the ring that matches the front
    /// posted receive of its subrank is copied from its slot straight into that receive's
    /// buffer and the receive completed, without the event, `dispatch` and `on_message` of
    /// the general path (the message rate's common case: receives posted in order, their
    /// messages arriving in order). Matching order is MPI's: the front receive is the first
    /// posted, so when it matches it is the first match (a receive behind it that matches
    /// too must wait, non-overtaking); when it does not match, the general path searches the
    /// whole queue. A synchronous send (its acknowledgement), a rendezvous header, an
    /// acknowledgement, a receive made by another subrank's task, and a payload longer than a
    /// slot (the general path reports it) all take the general path. Returns whether it
    /// took the message (false: nothing was done).
    #[inline(always)]
    fn eager_to_posted(&mut self, a: &Arrived) -> bool {
        let hdr = self.tp.header(a);
        if hdr.kind != wire::KIND_EAGER || hdr.flags & wire::FLAG_SYNC != 0 {
            return false;
        }
        let Some(l) = self.locals.get_mut(a.dst_sub) else {
            return false;
        };
        let Some(p) = l.posted.front() else {
            return false;
        };
        let env = Envelope {
            ctx: hdr.ctx,
            src: hdr.src_rank,
            tag: hdr.tag,
        };
        let rid = p.req;
        if !p.pat.matches(&env) || owner_of(rid) != Some(a.dst_sub) {
            return false;
        }
        let Some(payload) = self.tp.eager_payload(a, &hdr) else {
            return false;
        };
        // issue 16 (rate16): the receive's slab entry is located once for the copy, its
        // status and its completion (`copy_into` then `Local::complete` located it twice).
        let Some(i) = l.reqs.index_of(rid) else {
            return false;
        };
        l.posted.pop_front();
        // SAFETY: the ring slot stays untouched until the next poll of the transport.
        if let Some(w) = fill_posted(l, i, env, unsafe { payload.as_slice() }, hdr.len as usize) {
            sched::wake(w);
        }
        true
    }

    /// A rendezvous payload arrived for receive `rid`.
    pub fn on_rndv_arrived(&mut self, rid: ReqId, temp: Option<Vec<u8>>) {
        if let Some(buf) = temp {
            if let Some(r) = self.req(rid) {
                let t = r.recv.clone().expect("receive request has a target");
                // SAFETY: the receive buffer holds `count` elements of its type.
                unsafe { t.dt.unpack(&buf, t.buf, t.count) };
            }
        }
        self.event_done(rid);
    }

    /// Status of the first unexpected message matching `pat`, if any (MPI_Iprobe).
    pub fn probe(&self, sub: usize, pat: &Pattern) -> Option<Status> {
        shared::probe(&self.locals[sub], pat)
    }

    /// Takes the first matching message out of the queue (MPI_Improbe); returns its id.
    pub fn mprobe(&mut self, sub: usize, pat: &Pattern) -> Option<(u64, Status)> {
        let (u, st) = match self.probe(sub, pat) {
            Some(st) => {
                let i = self.locals[sub].unexpected.find(pat)?;
                (self.locals[sub].unexpected.take_at(i)?, st)
            }
            None => {
                let u = self.mprobe_real(pat)?;
                let st = Status {
                    source: u.env.src,
                    tag: u.env.tag,
                    error: c::MPI_SUCCESS,
                    bytes: u.len as u64,
                    cancelled: false,
                };
                (u, st)
            }
        };
        let l = &mut self.locals[sub];
        l.next_message += 1;
        let id = l.next_message;
        l.messages.insert(id, u);
        Some((id, st))
    }

    /// Cancels request `id` if it has not been matched yet. Returns whether it was.
    pub fn cancel(&mut self, id: ReqId) -> bool {
        // issue 16 (p2p8): a lean direct request is cancelled as a registered one.
        if !self.leans.is_empty() {
            self.unlean();
        }
        let Some(r) = self.req(id) else { return false };
        if r.complete {
            return false;
        }
        let (owner, is_send) = (r.owner, r.is_send);
        // A direct operation is cancelled by the real MPI; its completion says whether it was.
        if direct::on() && self.tp.direct_cancel(id).unwrap_or_else(|e| fatal_transport(e)) {
            return true;
        }
        if !is_send {
            if let Some(i) = self.locals[owner].posted.iter().position(|p| p.req == id) {
                self.locals[owner].posted.take_at(i);
                if let Some(r) = self.req_mut(id) {
                    r.status.cancelled = true;
                }
                self.complete(id);
                return true;
            }
            return false;
        }
        for k in 0..self.locals.len() {
            let l = &mut self.locals[k];
            if let Some(i) = l.unexpected.find_by(|u| matches!(u.body, Body::Intra { sreq, .. } if sreq == id)) {
                l.unexpected.take_at(i);
                if let Some(r) = self.req_mut(id) {
                    r.status.cancelled = true;
                    r.pending = 0;
                    r.keep = None;
                }
                self.complete(id);
                return true;
            }
        }
        false
    }
}

/// The status of a receive of a `len`-byte message with envelope `env` into `cap` bytes
/// (MPI_ERR_TRUNCATE when it did not fit; the bytes that did are counted).
pub(crate) fn received(env: &Envelope, len: usize, cap: usize) -> Status {
    Status {
        source: env.src,
        tag: env.tag,
        error: if len > cap { c::MPI_ERR_TRUNCATE } else { c::MPI_SUCCESS },
        bytes: len.min(cap) as u64,
        cancelled: false,
    }
}

/// issue 16 (rate16): an eager message of `len` bytes (`src`, its bytes in hand) goes into
/// the receive in slot `i` of `l`'s slab (from `Slab::index_of`, taken off the posted queue
/// by the caller): the copy, the status (`MPI_ERR_TRUNCATE` beyond the buffer) and the
/// completion with one look at the entry, as `copy_into` and `Local::complete` do with two.
/// Returns the task to wake (None: nobody, or the running task).
#[inline(always)]
fn fill_posted(l: &mut crate::core::state::Local, i: usize, env: Envelope, src: &[u8], len: usize) -> Option<usize> {
    let r = l.reqs.at_mut(i)?;
    let t = r.recv.as_ref().expect("receive request has a target");
    let cap = t.count * t.dt.size;
    // SAFETY: the receive buffer holds `count` elements of its type (MPI's rule).
    let n = unsafe { t.dt.unpack(src, t.buf, t.count) };
    r.status.source = env.src;
    r.status.tag = env.tag;
    r.status.bytes = n as u64;
    r.status.error = if len > cap { c::MPI_ERR_TRUNCATE } else { c::MPI_SUCCESS };
    r.complete = true;
    let (waiter, bsend, drop_now) = (r.waiter, r.bsend_bytes, r.freed && r.persist.is_none());
    if bsend > 0 {
        l.bsend_used -= bsend;
    }
    // A receive the program freed (`MPI_Request_free`) goes now, as `Local::complete` does.
    if drop_now {
        if let Some(g) = l.reqs.discard_at(i) {
            l.greq_frees.push(g);
        }
    }
    (waiter != sched::current()).then_some(waiter)
}
