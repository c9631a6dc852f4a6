//! Generalized requests (`MPI_Grequest_start`, `MPI_Grequest_complete`): requests that the
//! application completes itself, with query, free and cancel callbacks.
//!
//! `MPI_Grequest_complete` only marks the request and wakes its owner; the query callback,
//! which gives the status, runs in the owner's next completion call (or while it blocks in
//! one: `core::p2p::blocking::block_on` calls [`settle`]), outside the state lock since callbacks
//! may call MPI. The free callback runs when a completion call or `MPI_Request_free` drops
//! the request: `State::drop_request` queues it under the lock and [`around`] runs it after,
//! its error code becoming the call's.

use super::consts as c;
use super::handles::me;
use super::status::MpiStatus;
use crate::core::error::{err, MpiError, MpiResult};
use crate::core::request::{Greq, ReqId, Status};
use crate::core::state;
use crate::sched;
use std::os::raw::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

type QueryFn = unsafe extern "C" fn(*mut c_void, *mut MpiStatus) -> c_int;
type FreeFn = unsafe extern "C" fn(*mut c_void) -> c_int;
type CancelFn = unsafe extern "C" fn(*mut c_void, c_int) -> c_int;

/// Generalized requests of this process whose free callback has not run yet: while there are
/// none, completion calls skip the extra steps.
static LIVE: AtomicUsize = AtomicUsize::new(0);

/// Whether any generalized request of this process is live (one load).
#[inline(always)]
pub fn live() -> bool {
    LIVE.load(Ordering::Relaxed) != 0
}

fn callback_error(what: &str, rc: c_int) -> MpiResult<()> {
    if rc == c::MPI_SUCCESS {
        Ok(())
    } else {
        err(rc, format!("the {what} callback of a generalized request returned {rc}"))
    }
}

/// Runs the query callback of every generalized request of the running subrank that the
/// application completed, and completes the request with the status it gives.
pub fn settle() -> MpiResult<()> {
    let sub = me()?;
    loop {
        let ids = state::with(|s| std::mem::take(&mut s.locals[sub].greq_ready))?;
        if ids.is_empty() {
            return Ok(());
        }
        for id in ids {
            let Some(g) = state::with(|s| s.req(id).and_then(|r| r.greq.as_deref().copied()))? else {
                continue;
            };
            let mut ms = MpiStatus::from(&Status::empty());
            let rc = if g.query == 0 {
                c::MPI_SUCCESS
            } else {
                // SAFETY: the application registered `query` as an MPI_Grequest_query_function.
                unsafe {
                    let f: QueryFn = std::mem::transmute(g.query);
                    f(g.extra as *mut c_void, &mut ms)
                }
            };
            let st = Status {
                source: ms.source,
                tag: ms.tag,
                error: rc,
                bytes: ms.bytes(),
                cancelled: ms.cancelled(),
            };
            state::with(|s| {
                if let Some(r) = s.req_mut(id) {
                    r.status = st;
                }
                s.complete(id);
            })?;
        }
    }
}

/// Runs the queued free callbacks of subrank `sub`'s dropped generalized requests; the first
/// failing one's code is the error.
fn run_frees(sub: usize) -> MpiResult<()> {
    let frees = state::with(|s| std::mem::take(&mut s.locals[sub].greq_frees))?;
    let mut res = Ok(());
    for g in frees {
        LIVE.fetch_sub(1, Ordering::Relaxed);
        if g.free != 0 {
            // SAFETY: the application registered `free` as an MPI_Grequest_free_function.
            let rc = unsafe {
                let f: FreeFn = std::mem::transmute(g.free);
                f(g.extra as *mut c_void)
            };
            res = res.and(callback_error("free", rc));
        }
    }
    res
}

/// Runs a request completion call (`MPI_Wait`, `MPI_Test`, ...): generalized requests the
/// application completed are settled first, and the free callbacks of those the call drops
/// run after it.
pub fn around(body: impl FnOnce() -> MpiResult<()>) -> MpiResult<()> {
    if LIVE.load(Ordering::Relaxed) == 0 {
        return body();
    }
    settle()?;
    let r = body();
    let f = run_frees(me()?);
    r.and(f)
}

/// `MPI_Cancel` of a generalized request: runs its cancel callback (told whether the
/// application already completed it). `None` when `h` is not a generalized request.
pub fn cancel(h: ReqId) -> Option<MpiResult<()>> {
    if LIVE.load(Ordering::Relaxed) == 0 {
        return None;
    }
    let g = state::with(|s| s.req(h).and_then(|r| r.greq.as_deref().copied())).ok().flatten()?;
    if g.cancel == 0 {
        return Some(Ok(()));
    }
    // SAFETY: the application registered `cancel` as an MPI_Grequest_cancel_function.
    let rc = unsafe {
        let f: CancelFn = std::mem::transmute(g.cancel);
        f(g.extra as *mut c_void, g.done as c_int)
    };
    Some(callback_error("cancel", rc))
}

fn not_greq(h: usize) -> MpiError {
    MpiError::new(c::MPI_ERR_REQUEST, format!("request {h:#x} is not an active generalized request"))
}

mpi_fn!(
    MPI_Grequest_start,
    PMPI_Grequest_start,
    |query: usize, free: usize, cancel: usize, extra: *mut c_void, request: *mut usize| errcomm = c::MPI_COMM_WORLD,
    {
        let sub = me()?;
        if request.is_null() {
            return err(c::MPI_ERR_ARG, "null request pointer");
        }
        crate::core::request::on_greq_settle(settle);
        let id = state::with(|s| {
            let id = s.new_request(sub, c::MPI_COMM_WORLD);
            if let Some(r) = s.req_mut(id) {
                r.greq = Some(Box::new(Greq {
                    query,
                    free,
                    cancel,
                    extra: extra as usize,
                    done: false,
                }));
            }
            id
        })?;
        LIVE.fetch_add(1, Ordering::Relaxed);
        *request = id as usize;
        Ok(())
    }
);

mpi_fn!(
    MPI_Grequest_complete,
    PMPI_Grequest_complete,
    |request: usize| errcomm = c::MPI_COMM_WORLD,
    {
        me()?;
        let freed_by = state::with(|s| -> MpiResult<Option<usize>> {
            let id = request as ReqId;
            let r = s.req_mut(id).ok_or_else(|| not_greq(request))?;
            let (owner, waiter, freed) = (r.owner, r.waiter, r.freed);
            match r.greq.as_mut() {
                Some(g) if !g.done => g.done = true,
                _ => return Err(not_greq(request)),
            }
            if freed {
                // MPI_Request_free came first: nobody wants the status.
                s.drop_request(id);
                return Ok(Some(owner));
            }
            s.locals[owner].greq_ready.push(id);
            if waiter != sched::current() {
                sched::wake(waiter);
            }
            Ok(None)
        })??;
        match freed_by {
            Some(owner) => run_frees(owner),
            None => Ok(()),
        }
    }
);

/// `MPI_Request_free`'s last step: free callbacks of a dropped generalized request.
pub fn after_free() -> MpiResult<()> {
    if LIVE.load(Ordering::Relaxed) == 0 {
        return Ok(());
    }
    run_frees(me()?)
}
