//! One-sided communication between processes (issue 18).
//!
//! **The process-wide dynamic window**: one real dynamic window per process over a
//! duplicate of the real world, created at start-up and kept in a passive epoch
//! (`MPI_Win_lock_all` with `MPI_MODE_NOCHECK`) until finalize. Virtual windows that have no
//! real window of their own attach their members' memory (and every window its lock words)
//! to it; an operation on a target in another process is a real `MPI_Put`/`Get`/
//! `Accumulate`/... on it with the target's absolute address as displacement.
//!
//! **Created windows** (rma4): a virtual `MPI_Win_create` window gets real windows of its own
//! (`rma_create`, one per "slot": each process exposes one contiguous run of its members'
//! memory in each), so the real MPI reaches the memory directly (MPICH registers a created
//! window's memory with UCX; its dynamic windows are served by active messages applied by the
//! target's progress). Displacements there are byte offsets from the run's start. Each is
//! kept in a passive epoch until `rma_free`.
//!
//! Every operation completes at the next real flush of its window. The real MPI applies it
//! at the target process from its own progress (the worker's polls or the background
//! progress thread), whatever the target subranks do.
//!
//! Layouts cross as real datatypes: a list of (byte offset, length) blocks becomes
//! `MPI_BYTE` (one block at offset 0) or an hindexed type of bytes; element runs of one basic
//! type become that type or an hindexed type of it (accumulates). Nothing here knows virtual
//! windows or user handles.

use super::engine::check;
use super::real::{self, h, RDatatype, RealMpi};
use super::Transport;
use std::os::raw::{c_int, c_void};

/// A real window of the real MPI (MPICH's handles are `int`).
pub type RealWin = c_int;

/// Which real window an operation goes to: the process-wide dynamic one (None), or a
/// window made by `rma_create`.
pub type On = Option<RealWin>;

/// The process's real window and its communicator.
pub struct RealRma {
    win: c_int,
    comm: real::RComm,
}

impl RealRma {
    /// Creates the window (collective over the real world: every process at start-up).
    ///
    /// # Safety
    /// The real MPI must be initialised; called from one thread.
    pub(super) unsafe fn create(real: &RealMpi, world: real::RComm) -> Result<RealRma, String> {
        let mut comm: real::RComm = h(real::REAL_MPI_COMM_NULL);
        let mut win: c_int = h(real::REAL_MPI_WIN_NULL);
        check(real.PMPI_Comm_dup(world, &mut comm), "MPI_Comm_dup")?;
        check(
            real.PMPI_Win_create_dynamic(h(real::REAL_MPI_INFO_NULL), comm, &mut win),
            "MPI_Win_create_dynamic",
        )?;
        check(
            real.PMPI_Win_set_errhandler(win, h(real::REAL_MPI_ERRORS_RETURN)),
            "MPI_Win_set_errhandler",
        )?;
        check(
            real.PMPI_Win_lock_all(real::REAL_MPI_MODE_NOCHECK as c_int, win),
            "MPI_Win_lock_all",
        )?;
        Ok(RealRma { win, comm })
    }

    /// Ends the epoch and frees the window (collective, at finalize).
    ///
    /// # Safety
    /// As `create`; no operation may be outstanding.
    pub(super) unsafe fn free(&mut self, real: &RealMpi) -> Result<(), String> {
        check(real.PMPI_Win_unlock_all(self.win), "MPI_Win_unlock_all")?;
        check(real.PMPI_Win_free(&mut self.win), "MPI_Win_free")?;
        check(real.PMPI_Comm_free(&mut self.comm), "MPI_Comm_free")
    }
}

/// A real datatype for one side of an operation: `count` items of `dt`, freed after use when
/// `owned`.
pub struct RType {
    dt: RDatatype,
    count: c_int,
    owned: bool,
}

impl RType {
    /// `n` contiguous bytes (`MPI_BYTE`, nothing to free).
    #[inline]
    pub fn bytes(n: usize) -> Result<RType, String> {
        if n > c_int::MAX as usize {
            return Err(int(n, "a block").err().unwrap_or_default());
        }
        Ok(RType {
            dt: h(real::REAL_MPI_BYTE),
            count: n as c_int,
            owned: false,
        })
    }
}

/// The kind of items a layout is made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Bytes (`MPI_BYTE`): puts and gets.
    Bytes,
    /// Elements of one basic type, given as the real MPI's handle (accumulates).
    Elem(i64),
}

fn int(n: usize, what: &str) -> Result<c_int, String> {
    c_int::try_from(n).map_err(|_| format!("{what} of {n} items is beyond the real MPI's int counts"))
}

impl Transport {
    fn rma(&self) -> Result<&RealRma, String> {
        self.rma.as_ref().ok_or_else(|| "no real window (one process only)".to_string())
    }

    fn win_of(&self, on: On) -> Result<c_int, String> {
        match on {
            Some(w) => Ok(w),
            None => self.rma().map(|r| r.win),
        }
    }

    /// Creates real windows over processes `procs` (increasing process numbers; this process
    /// among them), one per region of `regions` (this process's memory in each: address and
    /// length, (0, 0) for none), each in a passive epoch until `rma_free`. Collective over
    /// `procs`, in the same order everywhere, and blocking: the caller makes sure every
    /// process of `procs` comes here without needing this one to progress meanwhile. The
    /// displacement unit is one byte; a process's real rank is its index in `procs`.
    pub fn rma_create(&self, procs: &[usize], regions: &[(usize, usize)]) -> Result<Vec<RealWin>, String> {
        let r = self.rma()?;
        let all = procs.len() == self.nproc && procs.iter().enumerate().all(|(i, &p)| i == p);
        let mut comm = r.comm;
        if !all {
            let ranks = procs.iter().map(|&p| int(p, "a process")).collect::<Result<Vec<_>, _>>()?;
            let (mut world_g, mut g) = (Default::default(), Default::default());
            let mut c: real::RComm = h(real::REAL_MPI_COMM_NULL);
            // SAFETY: plain calls on our communicator; the groups are freed below.
            unsafe {
                check(self.real.PMPI_Comm_group(r.comm, &mut world_g), "MPI_Comm_group")?;
                let rc = self
                    .real
                    .PMPI_Group_incl(world_g, int(ranks.len(), "a group")?, ranks.as_ptr(), &mut g);
                self.real.PMPI_Group_free(&mut world_g);
                check(rc, "MPI_Group_incl")?;
                let rc = self.real.PMPI_Comm_create_group(r.comm, g, 0, &mut c);
                self.real.PMPI_Group_free(&mut g);
                check(rc, "MPI_Comm_create_group")?;
            }
            comm = c;
        }
        let mut wins = Vec::with_capacity(regions.len());
        let mut res = Ok(());
        for &(addr, len) in regions {
            let mut win: c_int = h(real::REAL_MPI_WIN_NULL);
            let base = if len == 0 { std::ptr::null_mut() } else { addr as *mut c_void };
            // SAFETY: the caller keeps the memory until `rma_free`; a zero-length region
            // exposes nothing.
            res = unsafe {
                check(
                    self.real
                        .PMPI_Win_create(base, len as i64, 1, h(real::REAL_MPI_INFO_NULL), comm, &mut win),
                    "MPI_Win_create",
                )
                .and_then(|_| {
                    check(
                        self.real.PMPI_Win_set_errhandler(win, h(real::REAL_MPI_ERRORS_RETURN)),
                        "MPI_Win_set_errhandler",
                    )
                })
                .and_then(|_| {
                    check(
                        self.real.PMPI_Win_lock_all(real::REAL_MPI_MODE_NOCHECK as c_int, win),
                        "MPI_Win_lock_all",
                    )
                })
            };
            if res.is_err() {
                break;
            }
            wins.push(win);
        }
        if !all {
            // SAFETY: our communicator; the windows hold their own duplicates of it.
            unsafe { self.real.PMPI_Comm_free(&mut comm) };
        }
        res.map(|_| wins)
    }

    /// Ends the epochs and frees windows made by `rma_create` (collective, as there).
    pub fn rma_free(&self, wins: &[RealWin]) -> Result<(), String> {
        for &w in wins {
            let mut w = w;
            // SAFETY: a window of `rma_create`, every operation on it flushed by the caller.
            unsafe {
                check(self.real.PMPI_Win_unlock_all(w), "MPI_Win_unlock_all")?;
                check(self.real.PMPI_Win_free(&mut w), "MPI_Win_free")?;
            }
        }
        Ok(())
    }

    /// A real datatype for `blocks` (offset, items) of `unit`.
    pub fn rma_type(&self, unit: Unit, blocks: &[(isize, usize)]) -> Result<RType, String> {
        let base: RDatatype = match unit {
            Unit::Bytes => h(real::REAL_MPI_BYTE),
            Unit::Elem(t) => h(t),
        };
        match blocks {
            [] => Ok(RType {
                dt: base,
                count: 0,
                owned: false,
            }),
            [(0, n)] => Ok(RType {
                dt: base,
                count: int(*n, "a block")?,
                owned: false,
            }),
            _ => {
                let lens = blocks.iter().map(|b| int(b.1, "a block")).collect::<Result<Vec<_>, _>>()?;
                let disps: Vec<i64> = blocks.iter().map(|b| b.0 as i64).collect();
                let mut dt: RDatatype = h(real::REAL_MPI_DATATYPE_NULL);
                // SAFETY: arrays of equal length `blocks.len()`, a valid base type.
                unsafe {
                    check(
                        self.real.PMPI_Type_create_hindexed(
                            int(blocks.len(), "a layout")?,
                            lens.as_ptr(),
                            disps.as_ptr() as _,
                            base,
                            &mut dt,
                        ),
                        "MPI_Type_create_hindexed",
                    )?;
                    check(self.real.PMPI_Type_commit(&mut dt), "MPI_Type_commit")?;
                }
                Ok(RType { dt, count: 1, owned: true })
            }
        }
    }

    /// Makes one real operation, `call(window)`, then frees the datatypes built for it
    /// (the real MPI keeps them alive for the pending operation).
    fn rma_call(&self, what: &str, on: On, types: &[&RType], call: impl FnOnce(c_int) -> c_int) -> Result<(), String> {
        let rc = self.win_of(on).map(call);
        for t in types.iter().filter(|t| t.owned) {
            let mut dt = t.dt;
            // SAFETY: a type we created, not used after this.
            unsafe { self.real.PMPI_Type_free(&mut dt) };
        }
        check(rc?, what)
    }

    /// Makes `[addr, addr+len)` of this process a target of the real window.
    pub fn rma_attach(&self, addr: usize, len: usize) -> Result<(), String> {
        let r = self.rma()?;
        // SAFETY: the caller keeps the memory until `rma_detach`.
        check(
            unsafe { self.real.PMPI_Win_attach(r.win, addr as *mut c_void, len.max(1) as i64) },
            "MPI_Win_attach",
        )
    }

    pub fn rma_detach(&self, addr: usize) -> Result<(), String> {
        let r = self.rma()?;
        // SAFETY: `addr` was attached by `rma_attach`.
        check(unsafe { self.real.PMPI_Win_detach(r.win, addr as *const c_void) }, "MPI_Win_detach")
    }

    /// Starts a put of `origin` (layout `o`) into process `proc` at address `addr` (layout `t`).
    ///
    /// # Safety
    /// `origin` must stay valid and unchanged until the next flush of `proc`; the target
    /// memory must be attached.
    pub unsafe fn rma_put(&self, on: On, origin: *const u8, o: RType, proc: usize, addr: usize, t: RType) -> Result<(), String> {
        self.rma_call("MPI_Put", on, &[&o, &t], |win| {
            self.real.PMPI_Put(
                origin as *const c_void,
                o.count,
                o.dt,
                proc as c_int,
                addr as i64,
                t.count,
                t.dt,
                win,
            )
        })
    }

    /// Starts a put (or a get, `get`) of `n` contiguous bytes between `origin` and process
    /// `proc` at displacement `addr`: `rma_put`/`rma_get` with `MPI_BYTE` on both sides, the
    /// small-operation path (no `RType`s).
    ///
    /// # Safety
    /// As `rma_put` (`get`: `origin` writable).
    #[inline]
    pub unsafe fn rma_put_get_bytes(&self, on: On, origin: *mut u8, n: usize, proc: usize, addr: usize, get: bool) -> Result<(), String> {
        let n = int(n, "a block")?;
        let win = self.win_of(on)?;
        let byte = h(real::REAL_MPI_BYTE);
        let (rc, what) = if get {
            let rc = self
                .real
                .PMPI_Get(origin as *mut c_void, n, byte, proc as c_int, addr as i64, n, byte, win);
            (rc, "MPI_Get")
        } else {
            let rc = self
                .real
                .PMPI_Put(origin as *const c_void, n, byte, proc as c_int, addr as i64, n, byte, win);
            (rc, "MPI_Put")
        };
        check(rc, what)
    }

    /// Starts a get into `origin`.
    ///
    /// # Safety
    /// As `rma_put`, `origin` writable.
    pub unsafe fn rma_get(&self, on: On, origin: *mut u8, o: RType, proc: usize, addr: usize, t: RType) -> Result<(), String> {
        self.rma_call("MPI_Get", on, &[&o, &t], |win| {
            self.real
                .PMPI_Get(origin as *mut c_void, o.count, o.dt, proc as c_int, addr as i64, t.count, t.dt, win)
        })
    }

    /// Starts an accumulate with real operation `op`; with `result` a get-accumulate.
    ///
    /// # Safety
    /// As `rma_put`; `result` writable for its layout.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn rma_acc(
        &self,
        on: On,
        origin: *const u8,
        o: RType,
        result: Option<(*mut u8, RType)>,
        proc: usize,
        addr: usize,
        t: RType,
        op: i64,
    ) -> Result<(), String> {
        let (o, t) = (&o, &t);
        let (o_ptr, proc, disp) = (origin as *const c_void, proc as c_int, addr as i64);
        match &result {
            None => self.rma_call("MPI_Accumulate", on, &[o, t], |win| {
                self.real
                    .PMPI_Accumulate(o_ptr, o.count, o.dt, proc, disp, t.count, t.dt, h(op), win)
            }),
            Some((res, rt)) => self.rma_call("MPI_Get_accumulate", on, &[o, t, rt], |win| {
                self.real.PMPI_Get_accumulate(
                    o_ptr,
                    o.count,
                    o.dt,
                    *res as *mut c_void,
                    rt.count,
                    rt.dt,
                    proc,
                    disp,
                    t.count,
                    t.dt,
                    h(op),
                    win,
                )
            }),
        }
    }

    /// Starts a compare-and-swap of one element of real type `ty`.
    ///
    /// # Safety
    /// Pointers valid for one element; `result` written at the next flush.
    pub unsafe fn rma_cas(
        &self,
        on: On,
        origin: *const u8,
        compare: *const u8,
        result: *mut u8,
        ty: i64,
        proc: usize,
        addr: usize,
    ) -> Result<(), String> {
        self.rma_call("MPI_Compare_and_swap", on, &[], |win| {
            self.real.PMPI_Compare_and_swap(
                origin as *const c_void,
                compare as *const c_void,
                result as *mut c_void,
                h(ty),
                proc as c_int,
                addr as i64,
                win,
            )
        })
    }

    /// Starts a fetch-and-op of one element of real type `ty`.
    ///
    /// # Safety
    /// As `rma_cas`.
    pub unsafe fn rma_fetch_op(
        &self,
        on: On,
        origin: *const u8,
        result: *mut u8,
        ty: i64,
        proc: usize,
        addr: usize,
        op: i64,
    ) -> Result<(), String> {
        self.rma_call("MPI_Fetch_and_op", on, &[], |win| {
            self.real.PMPI_Fetch_and_op(
                origin as *const c_void,
                result as *mut c_void,
                h(ty),
                proc as c_int,
                addr as i64,
                h(op),
                win,
            )
        })
    }

    /// Completes every operation of this process on `proc` (None: on every process), at the
    /// target too (`local`: at the origin only).
    pub fn rma_flush(&self, on: On, proc: Option<usize>, local: bool) -> Result<(), String> {
        let Ok(win) = self.win_of(on) else {
            return Ok(());
        };
        // SAFETY: plain calls on our window.
        let rc = unsafe {
            match (proc, local) {
                (Some(p), false) => self.real.PMPI_Win_flush(p as c_int, win),
                (Some(p), true) => self.real.PMPI_Win_flush_local(p as c_int, win),
                (None, false) => self.real.PMPI_Win_flush_all(win),
                (None, true) => self.real.PMPI_Win_flush_local_all(win),
            }
        };
        check(rc, "MPI_Win_flush")
    }

    /// `MPI_Win_sync` on the real window (memory barrier for the unified model).
    pub fn rma_sync(&self, on: On) -> Result<(), String> {
        let Ok(win) = self.win_of(on) else {
            return Ok(());
        };
        // SAFETY: a plain call on our window.
        check(unsafe { self.real.PMPI_Win_sync(win) }, "MPI_Win_sync")
    }

    /// Whether the real window exists (more than one process).
    pub fn rma_ready(&self) -> bool {
        self.rma.is_some()
    }
}

/// A window-lock message between processes (issue 18, rma6: the lock queue at the target):
/// a request for or a release of the lock named `key` in the receiving process, or the grant
/// of the request `token` of the receiving process. It travels as a header-only control
/// message of kind `wire::KIND_RMA` (`op` in `flags`, `key` in `ctx`, `token`), so the
/// target's progress engine, whoever drives it (an idle worker, the background progress
/// thread), serves it without the target subrank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Note {
    pub op: u32,
    pub key: usize,
    pub token: u64,
}

/// `Note::op`: an exclusive lock request (answered by `GRANT` with its token).
pub const NOTE_LOCK_EXCL: u32 = 1;
/// `Note::op`: a shared lock request.
pub const NOTE_LOCK_SHARED: u32 = 2;
/// `Note::op`: the release of an exclusive lock.
pub const NOTE_UNLOCK_EXCL: u32 = 3;
/// `Note::op`: the release of a shared lock.
pub const NOTE_UNLOCK_SHARED: u32 = 4;
/// `Note::op`: the lock asked for by request `token` is the receiver's.
pub const NOTE_GRANT: u32 = 5;

impl Note {
    /// The note a `KIND_RMA` header carries.
    pub fn of(hdr: &super::wire::Header) -> Note {
        Note {
            op: hdr.flags,
            key: hdr.ctx as usize,
            token: hdr.token,
        }
    }
}

impl Transport {
    /// Sends `note` to process `proc` (never this one): a tiny control message, complete
    /// when this returns (the real MPI's eager protocol).
    pub fn rma_note(&mut self, proc: usize, note: Note) -> Result<(), String> {
        let hdr = super::wire::Header {
            kind: super::wire::KIND_RMA,
            flags: note.op,
            ctx: note.key as u64,
            token: note.token,
            ..Default::default()
        };
        self.send_eager(proc, 0, 0, &hdr, &[])
    }
}

/// Request-based operations (rma6): the real MPI's `MPI_Rput`/`Rget`/`Raccumulate`/
/// `Rget_accumulate` on the same windows. The real request joins the transport's pending
/// ones; when it completes (locally: the origin buffer may be reused, a get's or a fetch's
/// data is in) the progress engine reports `Event::SendDone { token }`.
impl Transport {
    /// Frees the real datatypes built for one operation (the real MPI keeps them alive for
    /// the pending operation), then keeps its request (`rc` its return code).
    fn r_call(&mut self, what: &str, types: &[&RType], rc: c_int, req: super::real::RRequest, token: u64) -> Result<(), String> {
        for t in types.iter().filter(|t| t.owned) {
            let mut dt = t.dt;
            // SAFETY: a type we created, not used after this.
            unsafe { self.real.PMPI_Type_free(&mut dt) };
        }
        check(rc, what)?;
        self.post(req, super::engine::Action::Sent(token), None);
        Ok(())
    }

    /// `rma_put_get_bytes` as a request-based operation completing with `token`.
    ///
    /// # Safety
    /// As `rma_put_get_bytes`, until the request completes.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn rma_r_bytes(
        &mut self,
        on: On,
        origin: *mut u8,
        n: usize,
        proc: usize,
        addr: usize,
        get: bool,
        token: u64,
    ) -> Result<(), String> {
        let b = RType::bytes(n)?;
        self.rma_r_put_get(on, origin, b, proc, addr, RType::bytes(n)?, get, token)
    }

    /// `rma_put`/`rma_get` as a request-based operation completing with `token`.
    ///
    /// # Safety
    /// As `rma_put` (`get`: `origin` writable), until the request completes.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn rma_r_put_get(
        &mut self,
        on: On,
        origin: *mut u8,
        o: RType,
        proc: usize,
        addr: usize,
        t: RType,
        get: bool,
        token: u64,
    ) -> Result<(), String> {
        let win = self.win_of(on)?;
        let mut req: super::real::RRequest = h(real::REAL_MPI_REQUEST_NULL);
        let (rc, what) = if get {
            let rc = self.real.PMPI_Rget(
                origin as *mut c_void,
                o.count,
                o.dt,
                proc as c_int,
                addr as i64,
                t.count,
                t.dt,
                win,
                &mut req,
            );
            (rc, "MPI_Rget")
        } else {
            let rc = self.real.PMPI_Rput(
                origin as *const c_void,
                o.count,
                o.dt,
                proc as c_int,
                addr as i64,
                t.count,
                t.dt,
                win,
                &mut req,
            );
            (rc, "MPI_Rput")
        };
        self.r_call(what, &[&o, &t], rc, req, token)
    }

    /// `rma_acc` as a request-based operation completing with `token`.
    ///
    /// # Safety
    /// As `rma_acc`, until the request completes.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn rma_r_acc(
        &mut self,
        on: On,
        origin: *const u8,
        o: RType,
        result: Option<(*mut u8, RType)>,
        proc: usize,
        addr: usize,
        t: RType,
        op: i64,
        token: u64,
    ) -> Result<(), String> {
        let win = self.win_of(on)?;
        let mut req: super::real::RRequest = h(real::REAL_MPI_REQUEST_NULL);
        let (o_ptr, rproc, disp) = (origin as *const c_void, proc as c_int, addr as i64);
        match result {
            None => {
                let rc = self
                    .real
                    .PMPI_Raccumulate(o_ptr, o.count, o.dt, rproc, disp, t.count, t.dt, h(op), win, &mut req);
                self.r_call("MPI_Raccumulate", &[&o, &t], rc, req, token)
            }
            Some((res, rt)) => {
                let rc = self.real.PMPI_Rget_accumulate(
                    o_ptr,
                    o.count,
                    o.dt,
                    res as *mut c_void,
                    rt.count,
                    rt.dt,
                    rproc,
                    disp,
                    t.count,
                    t.dt,
                    h(op),
                    win,
                    &mut req,
                );
                self.r_call("MPI_Rget_accumulate", &[&o, &t, &rt], rc, req, token)
            }
        }
    }
}
