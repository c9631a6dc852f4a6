//! Point-to-point passed through to the real MPI (issue 16's V=1 line).
//!
//! When every process runs one subrank (V=1, one worker), a virtual communicator with a real
//! twin (`coll::real`: MPI_COMM_WORLD, and the dups, splits and topologies derived from it
//! that span every process) has exactly one member per process, in process order on the twin.
//! Its point-to-point traffic then needs none of our layers: a send is one real `MPI_Isend`
//! (`Issend` in synchronous mode) on the twin, a receive one real `MPI_Irecv`, matched by the
//! real MPI, with no header, no receive ring and no copy out of it. This departs from
//! DESIGN.md's "one real communicator carries all traffic, matching in our runtime": at V=1
//! our matching buys nothing, and the layering cost 2-3x MPICH on `MPI_Sendrecv` (session 12's
//! callgrind: 7078 instructions per exchange against 3375).
//!
//! What keeps MPI's rules: every message on a direct communicator goes this way (all modes,
//! persistent and buffered sends, probes), so the real MPI's non-overtaking order is ours;
//! other communicators (no twin: `MPI_COMM_SELF`, `Comm_create`d, inter-communicators) and
//! collectives' internal messages (their own contexts) keep the general path. The twin is made
//! before the communicator is returned (`coll::real::derive` waits for it here), so both ends
//! of every message agree on the way it goes.
//!
//! Completion: the real requests sit in the transport's pending list like rendezvous payloads;
//! `Event::DirectDone` completes ours. A receive also sits in its rank's posted queue (no
//! message of another path can match it: the context is the direct communicator's) so the
//! deadlock report names what it waits for.
//!
//! Deadlocks: a message that no receive matches waits in the real MPI's unexpected queue,
//! where our counts cannot see it. So when a process is idle and the detector asks, it first
//! takes every such message with a real `MPI_Improbe` into its own unexpected queue
//! (`Body::Real`), counted as received; receives and probes look there first, and receive a
//! message found there with a real `MPI_Imrecv`. Messages taken so were not matched by any
//! receive posted before (the real MPI would have matched them), and came before anything the
//! real MPI still holds from the same sender, so taking them first keeps the order.

use crate::consts as c;
use crate::core::idmap::IdMap;
use crate::core::p2p::matching::{Body, Envelope, Pattern, Posted, SyncAck, TakeAt, Unexp};
use crate::core::p2p::{fatal_transport, SendData, SendMode};
use crate::core::request::{Lean, ReqId, Status};
use crate::core::state::State;
use crate::transport::direct::DirectStatus;
use crate::transport::real::{self, RComm, RMessage, RRequest};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

/// Whether point-to-point passes through in this process (set once at start-up).
static ON: AtomicBool = AtomicBool::new(false);

/// The user tag bound: ours (every int) unless tags go to the real MPI as they are.
static TAG_UB: AtomicI32 = AtomicI32::new(i32::MAX);

/// The largest user tag of this run (MPI_TAG_UB).
#[inline]
pub fn tag_ub() -> i32 {
    TAG_UB.load(Ordering::Relaxed)
}

/// Whether point-to-point may pass through (V=1): the fast paths that assume our own matching
/// step aside, so everything reaches `State::start_send`/`start_recv`.
#[inline(always)]
pub fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// Turns the pass-through on (start-up, before any traffic); user tags are then the real
/// MPI's, bounded by its `MPI_TAG_UB`, `real_tag_ub`.
pub fn enable(real_tag_ub: i64) {
    TAG_UB.store(real_tag_ub.clamp(32767, i32::MAX as i64) as i32, Ordering::Relaxed);
    ON.store(true, Ordering::Relaxed);
}

/// A communicator whose point-to-point goes straight to its real twin.
pub struct DirectComm {
    pub comm: RComm,
    /// Process (twin rank) of each rank, and rank of each process, when the communicator's
    /// order is not the processes' (None: the identity).
    to_proc: Option<Vec<i32>>,
    to_rank: Option<Vec<i32>>,
}

impl DirectComm {
    /// `ranks`: the communicator's members (world ranks, one per process at V=1) in rank order.
    pub fn new(comm: RComm, ranks: &[u32]) -> DirectComm {
        let identity = ranks.iter().enumerate().all(|(i, &w)| w as usize == i);
        let (to_proc, to_rank) = if identity {
            (None, None)
        } else {
            let mut inv = vec![c::MPI_UNDEFINED; ranks.len()];
            for (i, &w) in ranks.iter().enumerate() {
                if let Some(x) = inv.get_mut(w as usize) {
                    *x = i as i32;
                }
            }
            (Some(ranks.iter().map(|&w| w as i32).collect()), Some(inv))
        };
        DirectComm { comm, to_proc, to_rank }
    }

    /// The twin's source argument for a receive from rank `src` (or MPI_ANY_SOURCE).
    fn source(&self, src: i32) -> i32 {
        if src == c::MPI_ANY_SOURCE {
            return real::REAL_MPI_ANY_SOURCE as i32;
        }
        self.to_proc.as_ref().map_or(src, |m| m[src as usize])
    }

    /// The rank of twin rank (process) `p`.
    fn rank(&self, p: i32) -> i32 {
        self.to_rank
            .as_ref()
            .map_or(p, |m| m.get(p as usize).copied().unwrap_or(c::MPI_UNDEFINED))
    }
}

/// The twin's tag argument for a receive with `tag` (or MPI_ANY_TAG).
fn real_tag(tag: i32) -> i32 {
    if tag == c::MPI_ANY_TAG {
        real::REAL_MPI_ANY_TAG as i32
    } else {
        tag
    }
}

/// The direct communicators of this process, by context.
#[derive(Default)]
pub struct Directs {
    comms: IdMap<u64, DirectComm>,
    /// issue 16 (p2p7): the first one added (MPI_COMM_WORLD's, made at start-up), looked up
    /// without hashing: most programs send on it alone.
    first: Option<(u64, DirectComm)>,
}

impl Directs {
    #[inline]
    pub fn get(&self, ctx: u64) -> Option<&DirectComm> {
        if !on() {
            return None;
        }
        match &self.first {
            Some((c, dc)) if *c == ctx => Some(dc),
            _ => self.comms.get(&ctx),
        }
    }

    pub fn add(&mut self, ctx: u64, comm: RComm, ranks: &[u32]) {
        if !on() {
            return;
        }
        let dc = DirectComm::new(comm, ranks);
        if self.first.is_none() {
            self.first = Some((ctx, dc));
        } else {
            self.comms.insert(ctx, dc);
        }
    }

    pub fn remove(&mut self, ctx: u64) {
        if self.first.as_ref().is_some_and(|(c, _)| *c == ctx) {
            self.first = None;
        }
        self.comms.remove(&ctx);
    }

    /// Every direct communicator's context.
    fn contexts(&self) -> Vec<u64> {
        self.first.iter().map(|(c, _)| *c).chain(self.comms.keys().copied()).collect()
    }
}

impl State {
    /// `start_send` on a direct communicator (twin `comm`): request `id` completes when the
    /// real send does.
    pub(super) fn send_direct(&mut self, id: ReqId, comm: RComm, dest: u32, tag: i32, data: SendData, mode: SendMode) {
        let (proc, _) = self.locate(dest);
        if let Some(r) = self.req_mut(id) {
            r.pending = 1;
        }
        // SAFETY: the send buffer stays valid until the request completes (MPI's rule), and
        // owned bytes move into the transport, which keeps them until then.
        let done = unsafe {
            self.tp
                .direct_send(comm, proc as i32, tag, data.ptr, data.len, mode == SendMode::Sync, data.owned, id)
        }
        .unwrap_or_else(|e| fatal_transport(e));
        if done {
            self.complete(id);
        }
    }

    /// `start_recv` on a direct communicator, nothing matching in the rank's own queue: one
    /// real receive into the target (or a temporary buffer for a non-contiguous type).
    pub(super) fn recv_direct(&mut self, id: ReqId, sub: usize, pat: Pattern) {
        let Some(dc) = self.direct.get(pat.ctx) else { return };
        let (comm, src) = (dc.comm, dc.source(pat.src));
        let Some(t) = self.req(id).and_then(|r| r.recv.clone()) else {
            return;
        };
        let cap = t.count * t.dt.size;
        let temp = (!t.dt.is_contiguous()).then(|| vec![0u8; cap]);
        // SAFETY: the receive buffer holds `cap` bytes until the request completes (or
        // `temp` is used, which the transport keeps).
        unsafe { self.tp.direct_recv(comm, src, real_tag(pat.tag), t.buf, cap, temp, id) }.unwrap_or_else(|e| fatal_transport(e));
        self.locals[sub].posted.push_back(Posted { pat, req: id });
    }

    /// A wait's poll of request `id` alone when it is a direct operation (see
    /// `Transport::direct_test`). Returns whether it finished.
    pub fn direct_test(&mut self, id: ReqId) -> bool {
        match self.tp.direct_test(id) {
            Ok(Some(e)) => {
                self.dispatch(e);
                true
            }
            Ok(None) => false,
            Err(e) => fatal_transport(e),
        }
    }

    /// One poll of a wait by the running subrank `sub` for its requests `handles` (null
    /// handles and complete or inactive requests are skipped) when every other one is a
    /// direct operation pending in the transport: one progress step of the real MPI for all
    /// of them (`Transport::direct_testall`), whose completions are dispatched as the engine's would
    /// be. None: a handle is not such a request (nothing was done: the general path waits).
    /// Some(all): whether every request is complete now.
    /// `statuses`: the caller needs them (see `Transport::direct_testall`).
    pub fn direct_wait_poll(&mut self, sub: usize, handles: &[usize], statuses: bool) -> Option<bool> {
        let mut tokens = std::mem::take(&mut self.direct_tokens);
        tokens.clear();
        let mut leans = std::mem::take(&mut self.lean_reqs);
        leans.clear();
        let mut plain = true;
        let mut registered = false;
        for &h in handles {
            if h == c::MPI_REQUEST_NULL {
                continue;
            }
            let id = h as ReqId;
            let r = (crate::core::request::owner_of(id) == Some(sub))
                .then(|| self.locals[sub].reqs.get(id))
                .flatten();
            match r {
                Some(r) if r.complete || !r.active => {}
                Some(r) => {
                    match r.lean {
                        Some(l) => leans.push(l.req),
                        None => registered = true,
                    }
                    tokens.push(id)
                }
                None => {
                    plain = false;
                    break;
                }
            }
        }
        // issue 16 (p2p8): lean requests and others together: all go the registered way.
        if plain && registered && !leans.is_empty() {
            self.unlean();
            leans.clear();
        }
        let r = match (plain, tokens.is_empty()) {
            (false, _) => None,
            (true, true) => Some(true),
            // issue 16 (p2p8): lean requests only, polled and finished here.
            (true, false) if !leans.is_empty() => {
                super::super::background::stepped();
                match self.tp.lean_testall(&mut leans, statuses).unwrap_or_else(|e| fatal_transport(e)) {
                    None => Some(false),
                    Some(rc) => {
                        let null = crate::transport::Transport::null_request();
                        let n = leans.len();
                        // A failure the statuses do not carry is the real MPI's own (lost
                        // messages): it ends the job, as `direct_testall`'s does.
                        if rc != crate::transport::real::REAL_MPI_SUCCESS as i32 && !crate::transport::Transport::lean_failed(rc, n).1 {
                            fatal_transport(format!("the real MPI_Waitall failed (error {rc})"));
                        }
                        let mut all = true;
                        for (k, &id) in tokens.iter().enumerate() {
                            if leans[k] == null {
                                self.lean_done(sub, id, k, n, rc, statuses);
                            } else if let Some(l) = self.locals[sub].reqs.get_mut(id).and_then(|r| r.lean.as_mut()) {
                                // Not freed by the real call (not expected of complete ones):
                                // still lean, its real request as the real MPI left it.
                                l.req = leans[k];
                                all = false;
                            }
                        }
                        Some(all)
                    }
                }
            }
            (true, false) => {
                super::super::background::stepped();
                let mut ev = std::mem::take(&mut self.events);
                let r = self
                    .tp
                    .direct_testall(&tokens, statuses, &mut ev)
                    .unwrap_or_else(|e| fatal_transport(e));
                for e in ev.drain(..) {
                    self.dispatch(e);
                }
                self.events = ev;
                r
            }
        };
        self.direct_tokens = tokens;
        self.lean_reqs = leans;
        r
    }

    /// MPI_Send's fast path on a direct communicator: at most `SMALL` bytes (the real MPI
    /// sends them eagerly) to world rank `dest`, with no request. False: not a direct
    /// communicator (nothing done).
    ///
    /// # Safety
    /// `ptr..ptr+len` is readable for the call, `len <= SMALL`.
    pub unsafe fn direct_send_small(&mut self, ctx: u64, dest: u32, tag: i32, ptr: *const u8, len: usize) -> bool {
        let Some(comm) = self.direct.get(ctx).map(|d| d.comm) else {
            return false;
        };
        let proc = self.locate(dest).0 as i32;
        // SAFETY: forwarded from the caller.
        unsafe { self.tp.direct_send_small(comm, proc, tag, ptr, len) }.unwrap_or_else(|e| fatal_transport(e));
        true
    }

    /// MPI_Recv's fast path on a direct communicator: starts a real receive into `buf`
    /// (`cap` contiguous bytes) that the caller polls in place (`direct_recv_poll`) and hands
    /// over (`direct_recv_adopt`) before it parks. None: the general path must run (not a
    /// direct communicator, or messages taken off the real MPI wait in the rank's queue).
    ///
    /// # Safety
    /// `buf..buf+cap` is writable until the receive completes.
    pub unsafe fn direct_recv_begin(&mut self, sub: usize, pat: &Pattern, buf: *mut u8, cap: usize) -> Option<RRequest> {
        if real_queued(&self.locals[sub], pat.ctx) {
            return None;
        }
        let dc = self.direct.get(pat.ctx)?;
        let (comm, src) = (dc.comm, dc.source(pat.src));
        // SAFETY: forwarded from the caller.
        Some(unsafe { self.tp.direct_irecv_raw(comm, src, real_tag(pat.tag), buf, cap) }.unwrap_or_else(|e| fatal_transport(e)))
    }

    /// Polls a receive from `direct_recv_begin`: its status (for a `cap`-byte buffer) once it
    /// finished.
    /// Without `count` (the caller ignores the status) the length stays 0.
    pub fn direct_recv_poll(&mut self, req: &mut RRequest, pat: &Pattern, cap: usize, count: bool) -> Option<Status> {
        let st = self.tp.direct_test_raw(req, count).unwrap_or_else(|e| fatal_transport(e))?;
        let source = self.direct.get(pat.ctx).map_or(st.source, |dc| dc.rank(st.source));
        Some(Status {
            source,
            tag: st.tag,
            error: if st.truncated { c::MPI_ERR_TRUNCATE } else { c::MPI_SUCCESS },
            bytes: st.bytes.min(cap as u64),
            cancelled: false,
        })
    }

    /// Makes a receive from `direct_recv_begin` an ordinary direct receive request of `sub`
    /// (target `t`, communicator handle `comm_h`), which the engine completes while the rank
    /// is parked; returns it.
    ///
    /// # Safety
    /// `t` is the receive's buffer, of the running subrank `sub`.
    pub unsafe fn direct_recv_adopt(
        &mut self,
        sub: usize,
        comm_h: usize,
        req: RRequest,
        pat: Pattern,
        t: crate::core::request::RecvTarget,
    ) -> ReqId {
        let id = self.new_request(sub, comm_h);
        // A new request is a receive with an empty status until told otherwise.
        if let Some(r) = self.req_mut(id) {
            // SAFETY: forwarded from the caller (a buffer outside the thread-locals: no bounce).
            unsafe { r.set_recv(t) };
        }
        self.tp.direct_adopt(req, id);
        self.locals[sub].posted.push_back(Posted { pat, req: id });
        id
    }

    /// MPI_Isend's fast path on a direct communicator: a standard-mode send of `len`
    /// contiguous bytes to world rank `dest` in a new request of the running subrank `sub`
    /// (handle `comm_h`). A message of at most `SMALL` bytes goes out with one blocking real
    /// send (eager: it completes locally) and the handle is the built-in complete send
    /// (`Slab::done_send`); a larger one is one real `MPI_Isend` in a lean request. None: not a direct communicator, or the rank's region hints track
    /// its requests (the general path runs; nothing was done).
    ///
    /// # Safety
    /// `ptr..ptr+len` stays readable until the request completes (MPI's rule).
    pub unsafe fn isend_direct(
        &mut self,
        sub: usize,
        comm_h: usize,
        ctx: u64,
        dest: u32,
        tag: i32,
        ptr: *const u8,
        len: usize,
    ) -> Option<ReqId> {
        if self.locals.get(sub)?.region.tracking {
            return None;
        }
        let comm = self.direct.get(ctx)?.comm;
        let proc = self.locate(dest).0 as i32;
        let real = if len <= crate::transport::direct::SMALL {
            // SAFETY: forwarded from the caller (only read during the call).
            unsafe { self.tp.direct_send_small(comm, proc, tag, ptr, len) }.unwrap_or_else(|e| fatal_transport(e));
            None
        } else {
            // issue 16 (p2p8): a larger one is a lean request (`request::Lean`) unless the real
            // MPI sent it at once.
            // SAFETY: forwarded from the caller.
            unsafe { self.tp.lean_send(comm, proc, tag, ptr, len, false) }.unwrap_or_else(|e| fatal_transport(e))
        };
        // issue 16 (p2p11): sent before anything could look at it: the built-in complete send
        // (`Slab::done_send`), as the general path's eager sends to another process: no slab
        // entry made and freed per message.
        let Some(req) = real else {
            return Some(self.locals[sub].reqs.done_send());
        };
        let id = self.new_request(sub, comm_h);
        let r = self.locals[sub].reqs.get_mut(id)?;
        r.mark_send(dest, tag);
        r.lean = Some(Lean {
            req,
            pat: Pattern { ctx, src: 0, tag },
            buf: std::ptr::null_mut(),
            count: 0,
            dt: 0,
        });
        self.lean_add(id);
        Some(id)
    }

    /// issue 16 (p2p8): request `id` was made lean.
    #[inline]
    fn lean_add(&mut self, id: ReqId) {
        // Finished ones are dropped from the list when none is left, or when they are most of
        // a long one (a program that always keeps some outstanding).
        if self.lean_live == 0 {
            self.leans.clear();
        } else if self.leans.len() >= 64 && self.leans.len() > 4 * self.lean_live {
            let locals = &self.locals;
            self.leans.retain(|&id| {
                crate::core::request::owner_of(id)
                    .and_then(|o| locals.get(o))
                    .and_then(|l| l.reqs.get(id))
                    .is_some_and(|r| r.lean.is_some())
            });
        }
        self.leans.push(id);
        self.lean_live += 1;
    }

    /// issue 16 (p2p8): hands every lean direct request to the engine, as the general path
    /// makes them: its real request to the transport's pending list (`DirectDone` completes
    /// it), a receive's pattern to its rank's posted queue (the deadlock report reads it) and
    /// its target to the request. Called before the general path looks at requests: a
    /// progress step of the engine (a parked owner, Test, Waitany, the deadlock detector...),
    /// Cancel, Request_free.
    pub fn unlean(&mut self) {
        let mut ids = std::mem::take(&mut self.leans);
        for &id in &ids {
            let Some(l) = crate::core::request::owner_of(id).and_then(|o| self.locals.get_mut(o)) else {
                continue;
            };
            let Some(r) = l.reqs.get_mut(id) else { continue };
            let Some(lean) = r.lean.take() else { continue };
            r.pending = 1;
            if r.is_send {
                self.tp.lean_adopt(lean.req, id, true);
                continue;
            }
            let Some(dt) = crate::core::datatype::predefined_arc(lean.dt) else {
                continue;
            };
            r.recv = Some(crate::core::request::RecvTarget {
                buf: lean.buf,
                count: lean.count,
                dt: dt.clone().into(),
            });
            l.posted.push_back(Posted { pat: lean.pat, req: id });
            self.tp.lean_adopt(lean.req, id, false);
        }
        ids.clear();
        self.leans = ids;
        self.lean_live = 0;
    }

    /// issue 16 (p2p8): finishes lean request `id` of `sub` whose real request a wait just
    /// completed: the `k`th of `n` in `lean_testall` with code `rc` (`statuses`: it asked for
    /// them). Its status is set and it is complete, as `on_direct_done` would leave it.
    pub(super) fn lean_done(&mut self, sub: usize, id: ReqId, k: usize, n: usize, rc: i32, statuses: bool) {
        let Some(r) = self.locals[sub].reqs.get_mut(id) else { return };
        let Some(lean) = r.lean.take() else { return };
        self.lean_live -= 1;
        r.complete = true;
        r.pending = 0;
        if r.is_send {
            return;
        }
        let base = r.status;
        self.tp.direct_recvd += 1;
        let st = self.lean_status(base, &lean, k, n, rc, statuses);
        if let Some(r) = self.locals[sub].reqs.get_mut(id) {
            r.status = st;
        }
    }

    /// The status of a lean receive (`lean`, status so far `base`) that a real wait just
    /// finished: the `k`th of `n` in `lean_testall`/`lean_free` with code `rc` (`statuses`:
    /// it asked for them).
    pub(super) fn lean_status(&self, base: Status, lean: &Lean, k: usize, n: usize, rc: i32, statuses: bool) -> Status {
        let (one, in_status) = crate::transport::Transport::lean_failed(rc, n);
        if !statuses {
            // The real MPI filled no status: a failure (a truncation) marks every operation
            // of the call, as `direct_testall` does (the caller reports MPI_ERR_IN_STATUS).
            let error = if in_status { c::MPI_ERR_TRUNCATE } else { c::MPI_SUCCESS };
            return Status { error, ..base };
        }
        let st = *self.tp.lean_stat(k);
        let err = match (one, in_status) {
            (true, _) => rc,
            (false, true) => st.MPI_ERROR,
            (false, false) => crate::transport::real::REAL_MPI_SUCCESS as i32,
        };
        let d = self.tp.direct_status(&st, err).unwrap_or_else(|e| fatal_transport(e));
        let source = self.direct.get(lean.pat.ctx).map_or(d.source, |dc| dc.rank(d.source));
        let cap = lean.count * crate::core::datatype::contiguous_size(lean.dt).unwrap_or(0);
        Status {
            source,
            tag: d.tag,
            error: if d.truncated { c::MPI_ERR_TRUNCATE } else { c::MPI_SUCCESS },
            bytes: d.bytes.min(cap as u64),
            cancelled: false,
        }
    }

    /// MPI_Irecv's fast path on a direct communicator: one real receive of at most `t`'s
    /// bytes (contiguous) in a new request of the running subrank `sub`. None: not a direct
    /// communicator, messages taken off the real MPI wait in the rank's queue (they come
    /// first), or the region hints track requests (the general path runs; nothing was done).
    ///
    /// # Safety
    /// `t` is a contiguous receive buffer of `sub` outside the program's thread-locals, valid
    /// until the request completes.
    /// issue 16 (p2p8): the request is lean (`request::Lean`): the real request stays in it, the
    /// target (`count` items of the predefined type `dt`, `cap` bytes at `buf`) too.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn irecv_direct(
        &mut self,
        sub: usize,
        comm_h: usize,
        pat: Pattern,
        buf: *mut u8,
        count: usize,
        dt: usize,
        cap: usize,
    ) -> Option<ReqId> {
        let l = self.locals.get(sub)?;
        if l.region.tracking || real_queued(l, pat.ctx) {
            return None;
        }
        let dc = self.direct.get(pat.ctx)?;
        let (comm, src) = (dc.comm, dc.source(pat.src));
        // SAFETY: the buffer holds `cap` bytes until the request completes (caller).
        let req = unsafe { self.tp.direct_irecv_raw(comm, src, real_tag(pat.tag), buf, cap) }.unwrap_or_else(|e| fatal_transport(e));
        let id = self.new_request(sub, comm_h);
        // A new request is a receive with an empty status until told otherwise; the buffer
        // lies outside the thread-locals (the caller's promise): no bounce (`set_recv`).
        if let Some(r) = self.locals[sub].reqs.get_mut(id) {
            r.lean = Some(Lean { req, pat, buf, count, dt });
        }
        self.lean_add(id);
        Some(id)
    }

    /// Receives a message taken from the real MPI by a probe (`Body::Real`) into request `rid`.
    pub(super) fn deliver_real(&mut self, rid: ReqId, env: Envelope, msg: RMessage) {
        let Some(r) = self.req_mut(rid) else { return };
        let Some(t) = r.recv.clone() else { return };
        r.status.source = env.src;
        r.status.tag = env.tag;
        r.pending = 1;
        let cap = t.count * t.dt.size;
        let temp = (!t.dt.is_contiguous()).then(|| vec![0u8; cap]);
        // SAFETY: as `recv_direct`.
        unsafe { self.tp.direct_mrecv(msg, t.buf, cap, temp, rid) }.unwrap_or_else(|e| fatal_transport(e));
    }

    /// A direct send or receive of request `rid` finished.
    pub fn on_direct_done(&mut self, rid: ReqId, st: DirectStatus, temp: Option<Vec<u8>>) {
        // One look at the owner's state (issue 16, p2p7: the request, its posted entry and its
        // completion were four lookups each).
        let Some(owner) = crate::core::request::owner_of(rid) else { return };
        let Some(l) = self.locals.get_mut(owner) else { return };
        let Some(is_send) = l.reqs.get(rid).map(|r| r.is_send) else {
            return;
        };
        let wake = if is_send {
            if st.cancelled {
                if let Some(r) = l.reqs.get_mut(rid) {
                    r.status.cancelled = true;
                }
            }
            l.event_done(rid)
        } else {
            // The posted entry of a receive (a probed message's has none: its envelope is set).
            let pat = match l.posted.front() {
                Some(p) if p.req == rid => l.posted.pop_front().map(|p| p.pat),
                _ => match l.posted.iter().position(|p| p.req == rid) {
                    Some(i) => l.posted.take_at(i).map(|p| p.pat),
                    None => None,
                },
            };
            let source = pat.and_then(|p| self.direct.get(p.ctx)).map(|dc| dc.rank(st.source));
            let Some(r) = l.reqs.get_mut(rid) else { return };
            if st.cancelled {
                r.status.cancelled = true;
                r.pending = 0;
                l.complete(rid)
            } else {
                if let Some(src) = source {
                    r.status.source = src;
                    r.status.tag = st.tag;
                }
                let cap = r.recv.as_ref().map_or(0, |t| t.count * t.dt.size);
                r.status.bytes = st.bytes.min(cap as u64);
                r.status.error = if st.truncated { c::MPI_ERR_TRUNCATE } else { c::MPI_SUCCESS };
                if let (Some(buf), Some(t)) = (temp, r.recv.as_ref()) {
                    let n = (st.bytes as usize).min(buf.len());
                    // SAFETY: the receive buffer holds `count` elements of its type; only the
                    // `n` bytes that arrived are unpacked.
                    unsafe { t.dt.unpack(&buf[..n], t.buf, t.count) };
                }
                l.event_done(rid)
            }
        };
        if let Some(w) = wake {
            crate::sched::wake(w);
        }
    }

    /// `probe` including messages the real MPI holds on a direct communicator (MPI_Iprobe).
    pub fn probe_all(&mut self, sub: usize, pat: &Pattern) -> Option<Status> {
        if let Some(st) = self.probe(sub, pat) {
            return Some(st);
        }
        let dc = self.direct.get(pat.ctx)?;
        let (comm, src) = (dc.comm, dc.source(pat.src));
        let st = self
            .tp
            .direct_probe(comm, src, real_tag(pat.tag))
            .unwrap_or_else(|e| fatal_transport(e))?;
        let dc = self.direct.get(pat.ctx)?;
        Some(Status {
            source: dc.rank(st.source),
            tag: st.tag,
            error: c::MPI_SUCCESS,
            bytes: st.bytes,
            cancelled: false,
        })
    }

    /// Takes a message matching `pat` from the real MPI into the rank's queue of probed
    /// messages (`mprobe`'s direct part): its envelope and length.
    pub(super) fn mprobe_real(&mut self, pat: &Pattern) -> Option<Unexp> {
        let dc = self.direct.get(pat.ctx)?;
        let (comm, src) = (dc.comm, dc.source(pat.src));
        let (msg, st) = self
            .tp
            .direct_mprobe(comm, src, real_tag(pat.tag))
            .unwrap_or_else(|e| fatal_transport(e))?;
        let dc = self.direct.get(pat.ctx)?;
        Some(Unexp {
            env: Envelope {
                ctx: pat.ctx,
                src: dc.rank(st.source),
                tag: st.tag,
            },
            len: st.bytes as usize,
            body: Body::Real { msg },
            sync: SyncAck::None,
        })
    }

    /// Wakes the rank when it is parked in a blocking probe on a direct communicator (its
    /// `waiting` pattern) and the real MPI now holds a matching message: no event of ours
    /// would tell it. Returns whether it did.
    pub fn direct_probe_waiters(&mut self) -> bool {
        let Some(pat) = self.locals.get(0).and_then(|l| l.waiting) else {
            return false;
        };
        let Some(dc) = self.direct.get(pat.ctx) else { return false };
        let (comm, src) = (dc.comm, dc.source(pat.src));
        let found = self
            .tp
            .direct_probe(comm, src, real_tag(pat.tag))
            .unwrap_or_else(|e| fatal_transport(e))
            .is_some();
        if found && crate::sched::current() != 0 {
            crate::sched::wake(0);
        }
        found
    }

    /// Takes every message no receive matched off the direct communicators into the rank's
    /// unexpected queue, where the deadlock detector counts it (see the module text). Only
    /// while every subrank of the process is parked.
    pub fn drain_direct(&mut self) {
        if !on() || self.locals.len() != 1 {
            return;
        }
        // issue 16 (p2p8): counted and reported like the others.
        self.unlean();
        let ctxs = self.direct.contexts();
        for ctx in ctxs {
            let any = Pattern {
                ctx,
                src: c::MPI_ANY_SOURCE,
                tag: c::MPI_ANY_TAG,
            };
            while let Some(u) = self.mprobe_real(&any) {
                self.locals[0].unexpected.push_back(u);
                // A probe or receive parked on it looks again.
                if crate::sched::current() != 0 {
                    crate::sched::wake(0);
                }
            }
        }
    }
}

/// Whether messages of context `ctx` wait in `l`'s queue: on a direct communicator only
/// messages taken off the real MPI (`drain_direct`) can, and a direct receive must look there
/// first. Messages of other contexts (a collective's internal ones, which come early) do not
/// hold it back.
#[inline]
fn real_queued(l: &crate::core::state::Local, ctx: u64) -> bool {
    !l.unexpected.is_empty() && l.unexpected.iter().any(|u| u.env.ctx == ctx)
}

/// Whether a message in a rank's queue is one the real MPI still holds (probed off a direct
/// communicator).
pub fn is_real(u: &Unexp) -> bool {
    matches!(u.body, Body::Real { .. })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::identity(&[0, 1, 2, 3], 2, 2, 1, 1)]
    #[case::reversed(&[3, 2, 1, 0], 0, 3, 3, 0)]
    #[case::rotated(&[1, 2, 3, 0], 3, 0, 0, 3)]
    fn ranks_map_to_processes_and_back(#[case] ranks: &[u32], #[case] rank: i32, #[case] proc: i32, #[case] p: i32, #[case] r: i32) {
        let dc = DirectComm::new(0, ranks);
        assert_eq!(dc.source(rank), proc);
        assert_eq!(dc.rank(p), r);
        assert_eq!(dc.source(c::MPI_ANY_SOURCE), real::REAL_MPI_ANY_SOURCE as i32);
    }

    #[rstest]
    #[case(c::MPI_ANY_TAG, real::REAL_MPI_ANY_TAG as i32)]
    #[case(0, 0)]
    #[case(77, 77)]
    fn tags_pass_through_but_the_wildcard(#[case] ours: i32, #[case] theirs: i32) {
        assert_eq!(real_tag(ours), theirs);
    }
}
