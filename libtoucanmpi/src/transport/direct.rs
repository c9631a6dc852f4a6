//! Point-to-point straight through the real MPI (`core::p2p::direct`): when every process
//! runs one subrank, a message on a communicator with a real twin is one real send and one
//! real receive on that twin, matched by the real MPI (no header, no ring, no copy).
//!
//! Completions come back through the pending list as `Event::DirectDone`.

use super::engine::{check, Action, Event, Transport};
use super::real::{self, h, RComm, RMessage, RRequest, RealStatus};
use std::os::raw::{c_int, c_void};

/// Largest blocking send that goes out with a blocking real send (`direct_send_small`).
pub const SMALL: usize = super::engine::TINY;

/// `direct_testall` looks its requests up in the pending list only while that costs at most
/// this many comparisons (a window of 64 requests with 64 pending); larger waits take the
/// general path.
const TESTALL_SCAN: usize = 4096;

/// issue 16 (p2p8): the byte count and cancel flag of a status of the real MPI, read from the
/// fields of MPICH's `MPI_Status` (as its `MPIR_STATUS_GET_COUNT` and
/// `MPIR_STATUS_GET_CANCEL_BIT` read them), valid when `status_layout_ok`.
#[inline(always)]
fn status_fields(st: &RealStatus) -> (u64, bool) {
    let hi = (st.count_hi_and_cancelled as u32 >> 1) as u64;
    ((st.count_lo as u32 as u64) | hi << 32, st.count_hi_and_cancelled & 1 != 0)
}

/// Whether `status_fields` reads the real MPI's statuses right: a status whose count and
/// cancel flag the real MPI set (`MPI_Status_set_elements_x`, `MPI_Status_set_cancelled`)
/// reads back as set, for a count above 32 bits and both flag values. Checked once at
/// start-up; otherwise statuses are read with the real MPI's calls.
pub(super) fn status_layout_ok(real: &super::real::RealMpi) -> bool {
    let n: i64 = 0x1_2345_6789;
    [true, false].into_iter().all(|cancelled| {
        // SAFETY: MPI_Status is plain integers; all zeros is a valid value.
        let mut st: RealStatus = unsafe { std::mem::zeroed() };
        // SAFETY: plain calls on a local status.
        let ok = unsafe {
            real.PMPI_Status_set_elements_x(&mut st, h(real::REAL_MPI_BYTE), n as _) == real::REAL_MPI_SUCCESS as c_int
                && real.PMPI_Status_set_cancelled(&mut st, cancelled as c_int) == real::REAL_MPI_SUCCESS as c_int
        };
        ok && status_fields(&st) == (n as u64, cancelled)
    })
}

/// What the real MPI said about a finished direct receive (or a probed message).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DirectStatus {
    /// The sender's rank in the twin (its process).
    pub source: i32,
    pub tag: i32,
    /// Bytes received (or, probed, in the message).
    pub bytes: u64,
    /// The message did not fit the receive buffer.
    pub truncated: bool,
    pub cancelled: bool,
}

impl Transport {
    /// Reads status `st` of a finished direct operation; `err` is its error field's meaning
    /// (set only when the real call reported `MPI_ERR_IN_STATUS`, else success).
    pub fn direct_status(&self, st: &RealStatus, err: c_int) -> Result<DirectStatus, String> {
        let (count, cancelled) = if self.status_fields {
            let (n, c) = status_fields(st);
            (n as i64, c as c_int)
        } else {
            let mut count: i64 = 0;
            let mut cancelled: c_int = 0;
            // SAFETY: `st` is a status the real MPI filled.
            unsafe {
                check(
                    self.real.PMPI_Get_count_c(st, h(real::REAL_MPI_BYTE), &mut count),
                    "MPI_Get_count_c",
                )?;
                check(self.real.PMPI_Test_cancelled(st, &mut cancelled), "MPI_Test_cancelled")?;
            }
            (count, cancelled)
        };
        let mut truncated = false;
        if err != real::REAL_MPI_SUCCESS as c_int {
            let mut class: c_int = 0;
            // SAFETY: a plain query.
            check(unsafe { self.real.PMPI_Error_class(err, &mut class) }, "MPI_Error_class")?;
            if class != real::REAL_MPI_ERR_TRUNCATE as c_int {
                return Err(format!("the real MPI failed a receive (error class {class})"));
            }
            truncated = true;
        }
        Ok(DirectStatus {
            source: st.MPI_SOURCE,
            tag: st.MPI_TAG,
            bytes: count.max(0) as u64,
            truncated,
            cancelled: cancelled != 0,
        })
    }

    /// Sends `len` bytes at `data` to rank `dst` of twin `comm` (synchronous mode when
    /// `sync`). Returns true when the send completed at once; otherwise `DirectDone(token)`
    /// reports it. `keep` owns the bytes when they are not the user's.
    ///
    /// # Safety
    /// `data..data+len` stays valid and unchanged until the send completes.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn direct_send(
        &mut self,
        comm: RComm,
        dst: i32,
        tag: i32,
        data: *const u8,
        len: usize,
        sync: bool,
        keep: Option<Vec<u8>>,
        token: u64,
    ) -> Result<bool, String> {
        // SAFETY: forwarded from the caller; `keep` moves into the pending list, which holds
        // it until completion.
        match unsafe { self.lean_send(comm, dst, tag, data, len, sync) }? {
            None => Ok(true),
            Some(req) => {
                self.post_direct(req, Action::DirectSent(token), keep);
                Ok(false)
            }
        }
    }

    /// issue 16 (p2p8): starts a real send (`direct_send` without its pending entry): None
    /// when it completed at once (the real request is freed), else the real request, which
    /// the caller keeps (a lean request, `core::p2p::direct`) or hands to `lean_adopt`.
    ///
    /// # Safety
    /// As `direct_send`.
    pub unsafe fn lean_send(
        &mut self,
        comm: RComm,
        dst: i32,
        tag: i32,
        data: *const u8,
        len: usize,
        sync: bool,
    ) -> Result<Option<RRequest>, String> {
        // SAFETY: forwarded from the caller.
        let req = unsafe { self.isend_now(comm, dst, tag, data, len, sync) }?;
        self.direct_sent += 1;
        Ok(req)
    }

    /// Starts a real send of `len` bytes at `data` to rank `dst` of `comm` (synchronous mode
    /// when `sync`): None when it completed at once (the real request is freed), else the
    /// real request. Counts nothing (`lean_send` counts a program's message; `coll_send` a
    /// collective's is not one).
    ///
    /// # Safety
    /// As `direct_send`.
    #[inline]
    pub(super) unsafe fn isend_now(
        &mut self,
        comm: RComm,
        dst: i32,
        tag: i32,
        data: *const u8,
        len: usize,
        sync: bool,
    ) -> Result<Option<RRequest>, String> {
        let mut req: RRequest = h(real::REAL_MPI_REQUEST_NULL);
        let start = if sync { self.real.PMPI_Issend_c } else { self.real.PMPI_Isend_c };
        // SAFETY: the caller keeps the bytes valid until completion.
        check(
            unsafe { start(data as *const c_void, len as _, h(real::REAL_MPI_BYTE), dst, tag, comm, &mut req) },
            if sync { "MPI_Issend_c" } else { "MPI_Isend_c" },
        )?;
        // An eager send is usually complete already: MPI_Request_get_status then costs no
        // progress step (MPI_Test would make one), and MPI_Wait frees the complete request
        // without one.
        let mut done: c_int = 0;
        // SAFETY: `req` is the request just started; the status is ignored.
        let rc = unsafe { (self.real.PMPI_Request_get_status)(req, &mut done, real::REAL_MPI_STATUS_IGNORE as *mut RealStatus) };
        if done == 0 {
            check(rc, "MPI_Request_get_status")?;
            return Ok(Some(req));
        }
        // SAFETY: the request is complete.
        check(
            unsafe { self.real.PMPI_Wait(&mut req, real::REAL_MPI_STATUS_IGNORE as *mut RealStatus) },
            "MPI_Wait",
        )?;
        Ok(None)
    }

    /// issue 16 (p2p8): hands a lean operation's real request (`lean_send`, `direct_irecv_raw`)
    /// to the pending list: `DirectDone(token)` reports it from now on.
    pub fn lean_adopt(&mut self, req: RRequest, token: u64, send: bool) {
        let action = if send {
            Action::DirectSent(token)
        } else {
            Action::DirectRecv(token, false)
        };
        self.post_direct(req, action, None);
    }

    /// issue 16 (p2p8): one poll of a wait over lean operations only (real requests the
    /// caller keeps, `reqs`): `MPI_Request_get_status` of each in order (a complete one costs
    /// no progress step; the first incomplete one makes one and ends the poll: Ok(None)), then
    /// one real `MPI_Waitall` (`MPI_Wait` for one) that frees them all (their entries become
    /// the real `MPI_REQUEST_NULL`). Ok(Some(rc)): the real call's code; with `statuses`
    /// their statuses are `stat(k)`, and a failure is `MPI_ERR_IN_STATUS` with the error in
    /// the status (`rc` itself for one request).
    pub fn lean_testall(&mut self, reqs: &mut [RRequest], statuses: bool) -> Result<Option<c_int>, String> {
        let mut from = 0;
        if !self.lean_look(reqs, &mut from)? {
            return Ok(None);
        }
        Ok(Some(self.lean_free(reqs, statuses)))
    }

    /// issue 16 (rate15): `MPI_Request_get_status` of `reqs[*from..]` in order, up to the
    /// first incomplete one (whose look makes a progress step: the others cost none), whose
    /// index is left in `*from` for the next look (a complete request stays complete).
    /// Whether all are complete.
    #[inline]
    pub fn lean_look(&mut self, reqs: &[RRequest], from: &mut usize) -> Result<bool, String> {
        let get_status = self.real.PMPI_Request_get_status;
        while let Some(&r) = reqs.get(*from) {
            let mut flag: c_int = 0;
            // SAFETY: a live request of the caller's; the status is ignored.
            let rc = unsafe { get_status(r, &mut flag, real::REAL_MPI_STATUS_IGNORE as *mut RealStatus) };
            if flag == 0 {
                check(rc, "MPI_Request_get_status")?;
                return Ok(false);
            }
            *from += 1;
        }
        Ok(true)
    }

    /// issue 16 (rate15): frees `reqs`, all complete (`lean_look`), with one real
    /// `MPI_Waitall` (`MPI_Wait` for one), which then makes no progress step: its code, as
    /// `lean_testall`'s.
    pub fn lean_free(&mut self, reqs: &mut [RRequest], statuses: bool) -> c_int {
        let n = reqs.len();
        let stats = if statuses {
            // SAFETY: MPI_Status is plain integers; all zeros is a valid value.
            self.stats.resize(n.max(self.stats.len()), unsafe { std::mem::zeroed() });
            self.stats.as_mut_ptr()
        } else {
            real::REAL_MPI_STATUSES_IGNORE as *mut RealStatus
        };
        // SAFETY: `reqs` (and `stats` when given) have n entries; the requests are live ones
        // of the caller's, all complete (no progress step).
        unsafe {
            if n == 1 {
                self.real.PMPI_Wait(reqs.as_mut_ptr(), stats)
            } else {
                self.real.PMPI_Waitall(n as c_int, reqs.as_mut_ptr(), stats)
            }
        }
    }

    /// The status `lean_testall` left for its `k`th request.
    #[inline]
    pub fn lean_stat(&self, k: usize) -> &RealStatus {
        &self.stats[k]
    }

    /// Whether `rc` of `lean_testall` (of `n` requests) or a status's error field means a
    /// failed operation (a truncated receive): (the call failed as a whole, the error is in
    /// the statuses).
    pub fn lean_failed(rc: c_int, n: usize) -> (bool, bool) {
        let one = n == 1 && rc != real::REAL_MPI_SUCCESS as c_int;
        (one, one || rc == real::REAL_MPI_ERR_IN_STATUS as c_int)
    }

    /// The real MPI's `MPI_REQUEST_NULL`.
    #[inline]
    pub fn null_request() -> RRequest {
        h(real::REAL_MPI_REQUEST_NULL)
    }

    /// Receives into `into` (`cap` bytes; or into `temp`, which comes back in `DirectDone`)
    /// from rank `src` (or the real `MPI_ANY_SOURCE`) with tag `tag` (or `MPI_ANY_TAG`) of
    /// twin `comm`.
    ///
    /// # Safety
    /// `into..into+cap` stays valid until `DirectDone(token)` (unless `temp` is given).
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn direct_recv(
        &mut self,
        comm: RComm,
        src: i32,
        tag: i32,
        into: *mut u8,
        cap: usize,
        temp: Option<Vec<u8>>,
        token: u64,
    ) -> Result<(), String> {
        let mut temp = temp;
        let dst = temp.as_mut().map_or(into, |t| t.as_mut_ptr());
        // SAFETY: the destination stays valid until completion (caller's guarantee, or
        // `temp`, kept in the pending list).
        let req = unsafe { self.direct_irecv_raw(comm, src, tag, dst, cap) }?;
        self.post_direct(req, Action::DirectRecv(token, false), temp);
        Ok(())
    }

    /// Receives message `msg` (from `direct_mprobe`) like `direct_recv`.
    ///
    /// # Safety
    /// As `direct_recv`.
    pub unsafe fn direct_mrecv(
        &mut self,
        mut msg: RMessage,
        into: *mut u8,
        cap: usize,
        temp: Option<Vec<u8>>,
        token: u64,
    ) -> Result<(), String> {
        let mut temp = temp;
        let dst = temp.as_mut().map_or(into, |t| t.as_mut_ptr());
        let mut req: RRequest = h(real::REAL_MPI_REQUEST_NULL);
        // SAFETY: as `direct_recv`; `msg` is a live message handle of the real MPI.
        check(
            unsafe {
                self.real
                    .PMPI_Imrecv_c(dst as *mut c_void, cap as _, h(real::REAL_MPI_BYTE), &mut msg, &mut req)
            },
            "MPI_Imrecv_c",
        )?;
        // Counted as received when it was probed.
        self.post_direct(req, Action::DirectRecv(token, true), temp);
        Ok(())
    }

    /// Whether a message from `src` with `tag` waits on twin `comm` (MPI_Iprobe).
    pub fn direct_probe(&mut self, comm: RComm, src: i32, tag: i32) -> Result<Option<DirectStatus>, String> {
        let mut flag: c_int = 0;
        let mut st = std::mem::MaybeUninit::<RealStatus>::uninit();
        // SAFETY: plain call with pointers to locals.
        check(
            unsafe { self.real.PMPI_Iprobe(src, tag, comm, &mut flag, st.as_mut_ptr()) },
            "MPI_Iprobe",
        )?;
        if flag == 0 {
            return Ok(None);
        }
        // SAFETY: with flag set the real MPI filled the status.
        self.direct_status(unsafe { st.assume_init_ref() }, real::REAL_MPI_SUCCESS as c_int)
            .map(Some)
    }

    /// Takes a message from `src` with `tag` off twin `comm` (MPI_Improbe): its handle and
    /// status. Counted as received (for the deadlock detector) from now on.
    pub fn direct_mprobe(&mut self, comm: RComm, src: i32, tag: i32) -> Result<Option<(RMessage, DirectStatus)>, String> {
        let mut flag: c_int = 0;
        let mut msg: RMessage = h(real::REAL_MPI_MESSAGE_NULL);
        let mut st = std::mem::MaybeUninit::<RealStatus>::uninit();
        // SAFETY: plain call with pointers to locals.
        check(
            unsafe { self.real.PMPI_Improbe(src, tag, comm, &mut flag, &mut msg, st.as_mut_ptr()) },
            "MPI_Improbe",
        )?;
        if flag == 0 {
            return Ok(None);
        }
        self.direct_recvd += 1;
        // SAFETY: with flag set the real MPI filled the status.
        let st = self.direct_status(unsafe { st.assume_init_ref() }, real::REAL_MPI_SUCCESS as c_int)?;
        Ok(Some((msg, st)))
    }

    /// Asks the real MPI to cancel the direct operation of request `token`; its completion
    /// (cancelled or not) still comes as `DirectDone`. False when no such operation is
    /// pending (it finished already).
    pub fn direct_cancel(&mut self, token: u64) -> Result<bool, String> {
        let Some(p) = self
            .pending
            .iter_mut()
            .find(|p| matches!(p.action, Action::DirectSent(t) | Action::DirectRecv(t, _) if t == token))
        else {
            return Ok(false);
        };
        // SAFETY: a live request of ours; it stays in the pending list until it completes.
        check(unsafe { self.real.PMPI_Cancel(&mut p.req) }, "MPI_Cancel")?;
        self.direct_cancels += 1;
        Ok(true)
    }

    /// Tests the direct operation of request `token` alone (a wait's poll: one progress step
    /// of the real MPI, as its own `MPI_Wait` makes): its event when it finished.
    pub fn direct_test(&mut self, token: u64) -> Result<Option<Event>, String> {
        let Some(i) = self
            .pending
            .iter()
            .rposition(|p| matches!(p.action, Action::DirectSent(t) | Action::DirectRecv(t, _) if t == token))
        else {
            return Ok(None);
        };
        let mut flag: c_int = 0;
        let mut st = std::mem::MaybeUninit::<RealStatus>::zeroed();
        // SAFETY: a live request of ours; the status is a local.
        let rc = unsafe { self.real.PMPI_Test(&mut self.pending[i].req, &mut flag, st.as_mut_ptr()) };
        if flag == 0 {
            check(rc, "MPI_Test")?;
            return Ok(None);
        }
        let p = self.pending.swap_remove(i);
        // SAFETY: zeroed, then filled by the real MPI for the completed request.
        let st = unsafe { st.assume_init() };
        self.direct_done(&p.action, p.buf, &st, rc).map(Some)
    }

    /// Tests the direct operations of requests `tokens` together (the poll of a wait over
    /// direct requests only: one progress step of the real MPI for all of them, and every
    /// request taken at once with one real `MPI_Waitall` when all finished, where
    /// `poll_direct` takes one per step). Ok(None): one of them is not a pending direct operation, or the
    /// set is too large to look up cheaply (nothing was done: the caller's general path
    /// decides). Ok(Some(all)): whether every one finished; the events of those that did are
    /// in `out` (all of them, or, when the real MPI reported an error in a status, the ones it
    /// completed).
    ///
    /// `statuses`: the caller needs the operations' statuses. Without (a wait that ignores
    /// them), and while no direct operation was ever cancelled, the real MPI fills none (its
    /// cheaper completion) and the events carry no source, tag or length; a failure (a
    /// truncated receive: the only error a status reports) then cannot be told apart and marks
    /// every operation it completed as truncated, which the caller reports as MPI_Waitall's
    /// `MPI_ERR_IN_STATUS`, as it would have anyway.
    pub fn direct_testall(&mut self, tokens: &[u64], statuses: bool, out: &mut Vec<Event>) -> Result<Option<bool>, String> {
        if tokens.len().saturating_mul(self.pending.len()) > TESTALL_SCAN {
            return Ok(None);
        }
        let mut sel = std::mem::take(&mut self.done);
        sel.clear();
        self.reqs.clear();
        for (k, &t) in tokens.iter().enumerate() {
            let Some(i) = self
                .pending
                .iter()
                .rposition(|p| matches!(p.action, Action::DirectSent(x) | Action::DirectRecv(x, _) if x == t))
            else {
                self.done = sel;
                return Ok(None);
            };
            sel.push((i, k));
            self.reqs.push(self.pending[i].req);
        }
        let n = self.reqs.len();
        let statuses = statuses || self.direct_cancels > 0;
        let stats = if statuses {
            // SAFETY: MPI_Status is plain integers; all zeros is a valid value.
            self.stats.resize(n, unsafe { std::mem::zeroed() });
            self.stats.as_mut_ptr()
        } else {
            real::REAL_MPI_STATUSES_IGNORE as *mut RealStatus
        };
        // Complete ones first, as the real MPI_Waitall's own loop looks at them:
        // MPI_Request_get_status of a complete request makes no progress step, so a poll
        // costs one step (at the first incomplete request) and a completed window costs none,
        // where MPI_Testall makes one (MPICH 4.0.2: two for 8 requests) before it looks.
        let get_status = self.real.PMPI_Request_get_status;
        for k in 0..n {
            let mut flag: c_int = 0;
            // SAFETY: a live request of ours; the status is ignored.
            let rc = unsafe { get_status(self.reqs[k], &mut flag, real::REAL_MPI_STATUS_IGNORE as *mut RealStatus) };
            if flag == 0 {
                self.done = sel;
                check(rc, "MPI_Request_get_status")?;
                return Ok(Some(false));
            }
        }
        // All complete: MPI_Waitall (MPI_Wait for one: shorter in MPICH 4.0.2) finishes them
        // without a progress step.
        // SAFETY: `reqs` (and `stats` when given) have n entries; the requests are live ones
        // of ours.
        let rc = unsafe {
            if n == 1 {
                self.real.PMPI_Wait(self.reqs.as_mut_ptr(), stats)
            } else {
                self.real.PMPI_Waitall(n as c_int, self.reqs.as_mut_ptr(), stats)
            }
        };
        // MPI_Wait reports a failure (a truncated receive) as its code, MPI_Waitall in the
        // statuses.
        let one_failed = n == 1 && rc != real::REAL_MPI_SUCCESS as c_int;
        let in_status = one_failed || rc == real::REAL_MPI_ERR_IN_STATUS as c_int;
        if !in_status {
            if let Err(e) = check(rc, "MPI_Waitall") {
                self.done = sel;
                return Err(e);
            }
        }
        let null: RRequest = h(real::REAL_MPI_REQUEST_NULL);
        // Finished (freed by the real MPI), highest pending index first (swap_remove keeps the
        // lower ones in place).
        sel.retain(|&(_, k)| self.reqs[k] == null);
        sel.sort_unstable_by_key(|&(i, _)| std::cmp::Reverse(i));
        let mut r = Ok(Some(sel.len() == n));
        let first = out.len();
        for &(i, k) in &sel {
            let p = self.pending.swap_remove(i);
            if !statuses {
                out.push(self.direct_done_blind(&p.action, p.buf, in_status));
                continue;
            }
            let st = self.stats[k];
            let err = match (one_failed, in_status) {
                (true, _) => rc,
                (false, true) => st.MPI_ERROR,
                (false, false) => real::REAL_MPI_SUCCESS as c_int,
            };
            match self.direct_done(&p.action, p.buf, &st, err) {
                Ok(e) => out.push(e),
                Err(e) => r = Err(e),
            }
        }
        // In pending order (the order they were started: a receive's posted entry is then the
        // first of its rank's queue when it is handled).
        out[first..].reverse();
        self.done = sel;
        r
    }

    /// A blocking standard-mode send of at most `SMALL` bytes: the real MPI sends it eagerly,
    /// so it completes locally (as `send_tiny`'s do), with no request to track.
    ///
    /// # Safety
    /// `data..data+len` is readable for the call.
    pub unsafe fn direct_send_small(&mut self, comm: RComm, dst: i32, tag: i32, data: *const u8, len: usize) -> Result<(), String> {
        debug_assert!(len <= SMALL);
        self.direct_sent += 1;
        // SAFETY: the caller's bytes, for the duration of the call.
        check(
            unsafe {
                self.real
                    .PMPI_Send(data as *const c_void, len as c_int, h(real::REAL_MPI_BYTE), dst, tag, comm)
            },
            "MPI_Send",
        )
    }

    /// A receive whose real request the caller keeps (a blocking receive polling in place):
    /// `direct_test_raw` polls it, `direct_adopt` hands it to the pending list.
    ///
    /// # Safety
    /// `into..into+cap` stays valid until the request completes.
    pub unsafe fn direct_irecv_raw(&mut self, comm: RComm, src: i32, tag: i32, into: *mut u8, cap: usize) -> Result<RRequest, String> {
        let mut req: RRequest = h(real::REAL_MPI_REQUEST_NULL);
        // SAFETY: forwarded from the caller.
        check(
            unsafe {
                self.real
                    .PMPI_Irecv_c(into as *mut c_void, cap as _, h(real::REAL_MPI_BYTE), src, tag, comm, &mut req)
            },
            "MPI_Irecv_c",
        )?;
        Ok(req)
    }

    /// Tests a receive from `direct_irecv_raw`: its status once it finished (a receive with
    /// no request of the program's: never cancelled; without `count` its length is left 0,
    /// for a caller that ignores the status, which saves the real MPI two queries).
    pub fn direct_test_raw(&mut self, req: &mut RRequest, count: bool) -> Result<Option<DirectStatus>, String> {
        let mut flag: c_int = 0;
        // MPI_Request_get_status polls (one progress step, fewer instructions than a failed
        // MPI_Test in MPICH 4.0.2, as the ring's polls do); the complete request is then
        // finished by MPI_Wait, which needs no progress step.
        // SAFETY: a live request of the caller's; the status is ignored.
        let rc = unsafe { (self.real.PMPI_Request_get_status)(*req, &mut flag, real::REAL_MPI_STATUS_IGNORE as *mut RealStatus) };
        if flag == 0 {
            check(rc, "MPI_Request_get_status")?;
            return Ok(None);
        }
        // Complete: a truncation comes back from MPI_Wait below too.
        let mut st = std::mem::MaybeUninit::<RealStatus>::zeroed();
        // SAFETY: a complete request of the caller's; the status is a local.
        let rc = unsafe { self.real.PMPI_Wait(req, st.as_mut_ptr()) };
        self.direct_recvd += 1;
        // SAFETY: zeroed, then filled by the real MPI for the completed request.
        let st = unsafe { st.assume_init_ref() };
        // A failure (a truncation) gets the whole status: its error message names the length.
        if count || rc != real::REAL_MPI_SUCCESS as c_int {
            return self.direct_status(st, rc).map(Some);
        }
        Ok(Some(DirectStatus {
            source: st.MPI_SOURCE,
            tag: st.MPI_TAG,
            ..DirectStatus::default()
        }))
    }

    /// Hands a receive from `direct_irecv_raw` to the pending list: `DirectDone(token)` reports
    /// it.
    pub fn direct_adopt(&mut self, req: RRequest, token: u64) {
        self.post_direct(req, Action::DirectRecv(token, false), None);
    }

    /// Whether direct operations wait in the pending list.
    #[inline]
    pub fn direct_pending(&self) -> bool {
        self.direct_pending > 0
    }

    fn post_direct(&mut self, req: RRequest, action: Action, buf: Option<Vec<u8>>) {
        self.direct_pending += 1;
        self.pending.push(super::engine::Pending {
            req,
            action,
            buf,
            comm: None,
        });
    }

    /// `direct_done` of an operation finished without a status (`direct_testall`): nothing
    /// cancelled (none was asked), a receive counted as received, `failed` as a truncation.
    fn direct_done_blind(&mut self, action: &Action, buf: Option<Vec<u8>>, failed: bool) -> Event {
        self.direct_pending -= 1;
        let token = match *action {
            Action::DirectSent(t) => t,
            Action::DirectRecv(t, counted) => {
                if !counted {
                    self.direct_recvd += 1;
                }
                t
            }
            _ => unreachable!("only direct actions come here"),
        };
        let st = DirectStatus {
            truncated: failed,
            ..DirectStatus::default()
        };
        Event::DirectDone { token, st, temp: buf }
    }

    /// The event of a finished direct operation (`poll_pending`), status `st` with error
    /// `err` (see `direct_status`).
    pub(super) fn direct_done(&mut self, action: &Action, buf: Option<Vec<u8>>, st: &RealStatus, err: c_int) -> Result<Event, String> {
        self.direct_pending -= 1;
        let (token, recv, counted) = match *action {
            Action::DirectSent(t) => (t, false, false),
            Action::DirectRecv(t, counted) => (t, true, counted),
            _ => unreachable!("only direct actions come here"),
        };
        let st = if recv {
            let d = self.direct_status(st, err)?;
            if !d.cancelled && !counted {
                self.direct_recvd += 1;
            }
            d
        } else {
            let mut cancelled: c_int = 0;
            if self.status_fields {
                cancelled = status_fields(st).1 as c_int;
            } else {
                // SAFETY: the status of the completed send.
                check(unsafe { self.real.PMPI_Test_cancelled(st, &mut cancelled) }, "MPI_Test_cancelled")?;
            }
            if cancelled != 0 {
                self.direct_sent -= 1;
            }
            DirectStatus {
                cancelled: cancelled != 0,
                ..DirectStatus::default()
            }
        };
        Ok(Event::DirectDone { token, st, temp: buf })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    /// A status as MPICH's `MPIR_STATUS_SET_COUNT` and `MPIR_STATUS_SET_CANCEL_BIT` leave it.
    fn mpich_status(count: u64, cancelled: bool) -> RealStatus {
        RealStatus {
            count_lo: count as u32 as c_int,
            count_hi_and_cancelled: (((count >> 32) as c_int) << 1) | cancelled as c_int,
            MPI_SOURCE: 3,
            MPI_TAG: 7,
            MPI_ERROR: 0,
        }
    }

    #[rstest]
    #[case::empty(0, false)]
    #[case::small(8, false)]
    #[case::cancelled(0, true)]
    #[case::low_word_sign_bit(0x8000_0000, false)]
    #[case::above_32_bits(0x1_2345_6789, true)]
    #[case::large(0x3fff_ffff_ffff, false)]
    fn status_fields_read_mpich_statuses(#[case] count: u64, #[case] cancelled: bool) {
        assert_eq!(status_fields(&mpich_status(count, cancelled)), (count, cancelled));
    }
}
