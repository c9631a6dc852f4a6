//! The communication calls: put, get, the accumulates, fetch-and-op and compare-and-swap.
//! Each checks its target and epoch, then either works on memory this process holds (a
//! target in this process, or any target of a shared-memory window) or starts the real
//! MPI's operation on the process-wide window (completed by the next flush, fence,
//! unlock or complete).

use super::{Target, Win};
use crate::consts as c;
use crate::core::coll::op::{self, OpKind};
use crate::core::coll::real::{real_op, real_type};
use crate::core::datatype::basic::{BasicType, TypeClass};
use crate::core::datatype::DtRef;
use crate::core::error::{err, MpiError, MpiResult};
use crate::core::state;
use crate::transport::rma::{RType, Unit};
use crate::transport::Transport;
use std::sync::atomic::{AtomicI64, Ordering};

/// A request-based operation's request (`abi::rma`): the token whose event completes it when
/// the operation goes to the real MPI (`Transport::rma_r_*`). The communication calls return
/// whether they did so (otherwise the operation is complete at the call: a copy).
pub type Token = Option<u64>;

/// One side of an operation: `count` elements of `dt` at `ptr`.
#[derive(Clone)]
pub struct Side {
    pub ptr: *mut u8,
    pub count: usize,
    pub dt: DtRef,
}

/// Where an operation lands.
pub struct Place {
    pub t: Target,
    /// Address of the target buffer (in its process; in ours when `local`).
    pub addr: usize,
    /// The target's memory is reachable here by loads and stores.
    pub local: bool,
    /// Where a real operation goes: the real window (None: the process-wide dynamic one),
    /// the target's real rank there and the displacement (bytes).
    pub on: crate::transport::rma::On,
    pub rrank: usize,
    pub rdisp: usize,
}

pub fn real_err(e: String) -> MpiError {
    MpiError::new(c::MPI_ERR_OTHER, format!("the real MPI failed: {e}"))
}

/// Runs the real-MPI step `f` (a real operation, flush or sync) on the transport. On a
/// worker that may read the state, it runs on the read side with only the transport's lock
/// held: the other workers keep running their subranks (their polls skip the busy
/// transport), and a blocking real flush holds neither them nor the state's write side's
/// readers; a writer (a general path on another worker) waits for it. Elsewhere (a thread of
/// the program) under the state lock. The real MPI runs at `MPI_THREAD_SERIALIZED`: one
/// thread in it at a time either way. `f`'s error becomes `MPI_ERR_OTHER`.
#[inline]
pub fn with_tp(f: impl FnOnce(&Transport) -> Result<(), String>) -> MpiResult<()> {
    let mut f = Some(f);
    let done = state::shared(|sh| f.take().map(|f| f(&sh.transport()))).flatten();
    let r = match done {
        Some(r) => r,
        None => match state::with(|s| f.take().map(|f| f(&s.tp)))? {
            Some(r) => r,
            None => return err(c::MPI_ERR_INTERN, "the real-MPI step ran neither side"),
        },
    };
    r.map_err(real_err)
}

/// `with_tp` for a step that changes the transport (sending a window-lock message).
pub fn with_tp_mut(f: impl FnOnce(&mut Transport) -> Result<(), String>) -> MpiResult<()> {
    let mut f = Some(f);
    let done = state::shared(|sh| f.take().map(|f| f(&mut sh.transport()))).flatten();
    let r = match done {
        Some(r) => r,
        None => match state::with(|s| f.take().map(|f| f(&mut s.tp)))? {
            Some(r) => r,
            None => return err(c::MPI_ERR_INTERN, "the real-MPI step ran neither side"),
        },
    };
    r.map_err(real_err)
}

/// Checks rank, epoch and range of an access to `count` elements of `dt` at displacement
/// `disp` of window rank `rank`; None for MPI_PROC_NULL.
#[inline]
pub fn resolve(w: &Win, rank: i32, disp: i64, count: usize, dt: &DtRef) -> MpiResult<Option<Place>> {
    if rank == c::MPI_PROC_NULL {
        return Ok(None);
    }
    let n = w.size_of_group();
    if !(0..n).contains(&rank) {
        return err(c::MPI_ERR_RANK, format!("invalid target rank {rank} (window group size {n})"));
    }
    if w.open.load(Ordering::Relaxed) == 0 && !w.st.lock().ep.may_access(rank) {
        return err(
            c::MPI_ERR_RMA_SYNC,
            format!("no access epoch is open for target rank {rank} (call MPI_Win_fence, MPI_Win_start, MPI_Win_lock or MPI_Win_lock_all first)"),
        );
    }
    let t = w.common.targets[rank as usize];
    let local = w.common.shm.is_some() || t.proc == w.common.myproc;
    let addr = if w.flavor == c::MPI_WIN_FLAVOR_DYNAMIC {
        disp as usize
    } else {
        if disp < 0 {
            return err(c::MPI_ERR_DISP, format!("negative target displacement {disp}"));
        }
        if count > 0 && dt.size > 0 {
            let off = disp as i128 * t.unit as i128;
            let lo = off + dt.true_lb as i128;
            let hi = off + (count as i128 - 1) * dt.extent as i128 + dt.true_lb as i128 + dt.true_extent as i128;
            if disp < 0 || lo < 0 || hi > t.size as i128 {
                return err(
                    c::MPI_ERR_RMA_RANGE,
                    format!(
                        "access to bytes {lo}..{hi} of target rank {rank}, whose window has {} bytes (displacement {disp}, unit {})",
                        t.size, t.unit
                    ),
                );
            }
        }
        (t.base as i128 + disp as i128 * t.unit as i128) as usize
    };
    let (on, rrank, rdisp) = match &w.common.created {
        Some(c) => {
            let (slot, rrank, run) = c.at[rank as usize];
            (Some(c.wins[slot]), rrank, addr.wrapping_sub(run))
        }
        None => (None, t.proc, addr),
    };
    Ok(Some(Place {
        t,
        addr,
        local,
        on,
        rrank,
        rdisp,
    }))
}

/// The real byte type of `count` elements of `dt`: a contiguous layout without building its
/// block list (no allocation on the small-put path).
fn bytes_type(tp: &Transport, dt: &DtRef, count: usize) -> Result<RType, String> {
    if dt.is_contiguous() {
        return RType::bytes(count * dt.size);
    }
    tp.rma_type(Unit::Bytes, &byte_blocks(dt, count))
}

/// A put or get between processes (`get`: from the target into the origin). Both sides
/// contiguous (the common case: a buffer of a predefined type) go as plain bytes, with no
/// real datatype built.
///
/// # Safety
/// As `put`/`get`.
#[inline]
unsafe fn real_put_get(p: &Place, o: &Side, tcount: usize, tdt: &DtRef, get: bool, token: Token) -> MpiResult<bool> {
    if let Some(token) = token {
        return with_tp_mut(|tp| {
            let ot = bytes_type(tp, &o.dt, o.count)?;
            let tt = bytes_type(tp, tdt, tcount)?;
            tp.rma_r_put_get(p.on, o.ptr, ot, p.rrank, p.rdisp, tt, get, token)
        })
        .map(|_| true);
    }
    if o.dt.is_contiguous() && tdt.is_contiguous() {
        let n = o.count * o.dt.size;
        let (ot, tt) = (RType::bytes(n).map_err(real_err)?, RType::bytes(n).map_err(real_err)?);
        return with_tp(|tp| {
            if get {
                tp.rma_get(p.on, o.ptr, ot, p.rrank, p.rdisp, tt)
            } else {
                tp.rma_put(p.on, o.ptr, ot, p.rrank, p.rdisp, tt)
            }
        })
        .map(|_| false);
    }
    with_tp(|tp| {
        let ot = bytes_type(tp, &o.dt, o.count)?;
        let tt = bytes_type(tp, tdt, tcount)?;
        if get {
            tp.rma_get(p.on, o.ptr, ot, p.rrank, p.rdisp, tt)
        } else {
            tp.rma_put(p.on, o.ptr, ot, p.rrank, p.rdisp, tt)
        }
    })
    .map(|_| false)
}

/// The byte blocks of `count` elements of `dt`, adjacent ones merged.
fn byte_blocks(dt: &DtRef, count: usize) -> Vec<(isize, usize)> {
    if dt.is_contiguous() {
        return if count * dt.size == 0 { vec![] } else { vec![(0, count * dt.size)] };
    }
    let mut out: Vec<(isize, usize)> = Vec::new();
    for i in 0..count {
        for &(o, l) in &dt.blocks {
            let off = o + i as isize * dt.extent;
            match out.last_mut() {
                Some(last) if last.0 + last.1 as isize == off => last.1 += l,
                _ => out.push((off, l)),
            }
        }
    }
    out
}

/// The runs (offset, elements) of `count` elements of `dt`, all of basic type `b`.
fn elem_runs(dt: &DtRef, count: usize, b: BasicType) -> Vec<(isize, usize)> {
    let ext = b.extent() as isize;
    let runs = dt.runs();
    let mut out: Vec<(isize, usize)> = Vec::new();
    for i in 0..count {
        for r in runs.iter() {
            let off = r.off + i as isize * dt.extent;
            match out.last_mut() {
                Some(last) if last.0 + last.1 as isize * ext == off => last.1 += r.n,
                _ => out.push((off, r.n)),
            }
        }
    }
    out
}

#[inline]
fn same_size(o: &Side, tcount: usize, tdt: &DtRef) -> MpiResult<()> {
    if o.count * o.dt.size != tcount * tdt.size {
        return err(
            c::MPI_ERR_TYPE,
            format!(
                "origin ({} x {}, {} bytes) and target ({} x {}, {} bytes) datatypes do not match",
                o.count,
                o.dt.name,
                o.count * o.dt.size,
                tcount,
                tdt.name,
                tcount * tdt.size
            ),
        );
    }
    Ok(())
}

/// MPI_Put.
///
/// # Safety
/// `o` must describe a valid buffer, kept until the operation completes.
#[inline]
pub unsafe fn put(w: &Win, o: &Side, rank: i32, disp: i64, tcount: usize, tdt: &DtRef, token: Token) -> MpiResult<bool> {
    same_size(o, tcount, tdt)?;
    let Some(p) = resolve(w, rank, disp, tcount, tdt)? else {
        return Ok(false);
    };
    if p.local {
        if o.dt.is_contiguous() {
            // One copy: the target type scatters straight from the origin's bytes.
            let v = std::slice::from_raw_parts(o.ptr as *const u8, o.count * o.dt.size);
            tdt.unpack(v, p.addr as *mut u8, tcount);
        } else {
            let mut v = Vec::with_capacity(o.count * o.dt.size);
            o.dt.pack(o.ptr, o.count, &mut v);
            tdt.unpack(&v, p.addr as *mut u8, tcount);
        }
        return Ok(false);
    }
    real_put_get(&p, o, tcount, tdt, false, token)
}

/// MPI_Get.
///
/// # Safety
/// As `put`, the origin buffer writable.
#[inline]
pub unsafe fn get(w: &Win, o: &Side, rank: i32, disp: i64, tcount: usize, tdt: &DtRef, token: Token) -> MpiResult<bool> {
    same_size(o, tcount, tdt)?;
    let Some(p) = resolve(w, rank, disp, tcount, tdt)? else {
        return Ok(false);
    };
    if p.local {
        if tdt.is_contiguous() {
            // One copy: the origin type scatters straight from the target's bytes.
            let v = std::slice::from_raw_parts(p.addr as *const u8, tcount * tdt.size);
            o.dt.unpack(v, o.ptr, o.count);
        } else {
            let mut v = Vec::with_capacity(tcount * tdt.size);
            tdt.pack(p.addr as *const u8, tcount, &mut v);
            o.dt.unpack(&v, o.ptr, o.count);
        }
        return Ok(false);
    }
    real_put_get(&p, o, tcount, tdt, true, token)
}

/// MPI_Put (or MPI_Get, `get`) of `n` bytes at `ptr` when both sides are contiguous
/// predefined types of the same total size (`abi` checked that): the small-put path, with
/// no datatype reference, no layout and no real datatype. The same checks, in the same
/// order, as `resolve` makes for such types.
///
/// # Safety
/// As `put` (`get`: the origin writable).
#[inline]
pub unsafe fn put_get_bytes(w: &Win, ptr: *mut u8, n: usize, rank: i32, disp: i64, get: bool, token: Token) -> MpiResult<bool> {
    if rank == c::MPI_PROC_NULL {
        return Ok(false);
    }
    let targets = &w.common.targets;
    let Some(t) = usize::try_from(rank).ok().and_then(|r| targets.get(r)) else {
        return err(
            c::MPI_ERR_RANK,
            format!("invalid target rank {rank} (window group size {})", targets.len()),
        );
    };
    if w.open.load(Ordering::Relaxed) == 0 && !w.st.lock().ep.may_access(rank) {
        return err(
            c::MPI_ERR_RMA_SYNC,
            format!("no access epoch is open for target rank {rank} (call MPI_Win_fence, MPI_Win_start, MPI_Win_lock or MPI_Win_lock_all first)"),
        );
    }
    let addr = if w.flavor == c::MPI_WIN_FLAVOR_DYNAMIC {
        disp as usize
    } else {
        if disp < 0 {
            return err(c::MPI_ERR_DISP, format!("negative target displacement {disp}"));
        }
        let off = (disp as u64 as u128) * t.unit as u128;
        if n > 0 && off + n as u128 > t.size as u128 {
            return err(
                c::MPI_ERR_RMA_RANGE,
                format!(
                    "access to bytes {off}..{} of target rank {rank}, whose window has {} bytes (displacement {disp}, unit {})",
                    off + n as u128,
                    t.size,
                    t.unit
                ),
            );
        }
        t.base.wrapping_add(off as usize)
    };
    if w.common.shm.is_some() || t.proc == w.common.myproc {
        if get {
            std::ptr::copy(addr as *const u8, ptr, n);
        } else {
            std::ptr::copy(ptr as *const u8, addr as *mut u8, n);
        }
        return Ok(false);
    }
    let (on, rrank, rdisp) = match &w.common.created {
        Some(c) => {
            let (slot, rrank, run) = c.at[rank as usize];
            (Some(c.wins[slot]), rrank, addr.wrapping_sub(run))
        }
        None => (None, t.proc, addr),
    };
    match token {
        None => with_tp(|tp| tp.rma_put_get_bytes(on, ptr, n, rrank, rdisp, get)).map(|_| false),
        Some(t) => with_tp_mut(|tp| tp.rma_r_bytes(on, ptr, n, rrank, rdisp, get, t)).map(|_| true),
    }
}

/// The operation of an accumulate (predefined, REPLACE or NO_OP).
pub fn acc_op(h: usize) -> MpiResult<OpKind> {
    if h == c::MPI_OP_NULL {
        return err(c::MPI_ERR_OP, "MPI_OP_NULL is not a valid operation");
    }
    OpKind::from_handle(h).ok_or_else(|| {
        MpiError::new(
            c::MPI_ERR_OP,
            format!("operation {h:#x} is not a predefined operation (one-sided accumulates take only those, MPI_REPLACE and MPI_NO_OP)"),
        )
    })
}

/// The basic type every side of an accumulate is made of.
fn acc_basic(sides: &[&DtRef], op: OpKind) -> MpiResult<BasicType> {
    let mut b = None;
    for d in sides {
        if d.size == 0 {
            continue;
        }
        match (d.basic, b) {
            (None, _) => {
                return err(
                    c::MPI_ERR_TYPE,
                    format!("datatype {} is not made of one predefined type (accumulate)", d.name),
                );
            }
            (Some(x), None) => b = Some(x),
            (Some(x), Some(y)) if x != y => {
                return err(
                    c::MPI_ERR_TYPE,
                    format!("accumulate on {} and {}: the predefined types differ", x.name(), y.name()),
                );
            }
            _ => {}
        }
    }
    let b = b.unwrap_or(BasicType::Byte);
    if !op::valid(op, b) {
        return err(c::MPI_ERR_OP, format!("{} is not defined on {}", op.name(), b.name()));
    }
    Ok(b)
}

/// The real MPI's type for basic type `b` in an accumulate: its own, or a C type of the same
/// layout and arithmetic (the Fortran types: INTEGER as int32_t, REAL as float, LOGICAL as int,
/// ...).
fn real_elem(b: BasicType) -> Option<i64> {
    use crate::transport::real as r;
    real_type(b).or(match (b.class(), b.size()) {
        (TypeClass::Integer, 1) => Some(r::REAL_MPI_INT8_T),
        (TypeClass::Integer, 2) => Some(r::REAL_MPI_INT16_T),
        (TypeClass::Integer, 4) => Some(r::REAL_MPI_INT32_T),
        (TypeClass::Integer, 8) => Some(r::REAL_MPI_INT64_T),
        (TypeClass::Floating, 4) => Some(r::REAL_MPI_FLOAT),
        (TypeClass::Floating, 8) => Some(r::REAL_MPI_DOUBLE),
        (TypeClass::Complex, 8) => Some(r::REAL_MPI_C_FLOAT_COMPLEX),
        (TypeClass::Complex, 16) => Some(r::REAL_MPI_C_DOUBLE_COMPLEX),
        (TypeClass::Logical, 4) => Some(r::REAL_MPI_INT),
        (TypeClass::Byte, 1) => Some(r::REAL_MPI_BYTE),
        _ => None,
    })
}

fn real_acc(b: BasicType, op: OpKind) -> MpiResult<(i64, i64)> {
    let ty = real_elem(b).ok_or_else(|| {
        MpiError::new(
            c::MPI_ERR_TYPE,
            format!("{} is not supported in one-sided accumulates between processes", b.name()),
        )
    })?;
    let rop = match op {
        OpKind::Replace => crate::transport::real::REAL_MPI_REPLACE,
        OpKind::NoOp => crate::transport::real::REAL_MPI_NO_OP,
        o => real_op(o).ok_or_else(|| MpiError::new(c::MPI_ERR_OP, format!("{} is not supported here", o.name())))?,
    };
    Ok((ty, rop))
}

/// Runs `f` with the window's accumulate lock held (memory this process reaches).
fn with_acc_lock<R>(w: &Win, t: &Target, f: impl FnOnce() -> R) -> R {
    match &w.common.shm {
        Some(seg) if w.common.remote => {
            // SAFETY: the segment's first word is its accumulate lock (shm layout, `create`).
            let word = unsafe { &*(seg.ptr as *const AtomicI64) };
            let mut spins = 0u32;
            while word.compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed).is_err() {
                spins += 1;
                if spins.is_multiple_of(64) {
                    crate::sched::timer::os_yield();
                }
                std::hint::spin_loop();
            }
            let r = f();
            word.store(0, Ordering::Release);
            r
        }
        _ => {
            let _g = super::acc_lock(t.lock).lock();
            f()
        }
    }
}

/// Walks two run lists of elements `ext` bytes apart in step: `f(a, b, n)` on each stretch of
/// `n` elements contiguous in both.
fn walk(a0: usize, a: &[(isize, usize)], b0: usize, b: &[(isize, usize)], ext: usize, mut f: impl FnMut(usize, usize, usize)) {
    let (mut i, mut j, mut ai, mut bj) = (0, 0, 0usize, 0usize);
    while i < a.len() && j < b.len() {
        let n = (a[i].1 - ai).min(b[j].1 - bj);
        if n > 0 {
            let pa = (a0 as isize + a[i].0) as usize + ai * ext;
            let pb = (b0 as isize + b[j].0) as usize + bj * ext;
            f(pa, pb, n);
        }
        ai += n;
        bj += n;
        if ai == a[i].1 {
            i += 1;
            ai = 0;
        }
        if j < b.len() && bj == b[j].1 {
            j += 1;
            bj = 0;
        }
    }
}

/// MPI_Accumulate, or MPI_Get_accumulate with `result`.
///
/// # Safety
/// As `put`; `result` writable.
pub unsafe fn accumulate(
    w: &Win,
    o: &Side,
    result: Option<&Side>,
    rank: i32,
    disp: i64,
    tcount: usize,
    tdt: &DtRef,
    op: OpKind,
    token: Token,
) -> MpiResult<bool> {
    let mut sides = vec![tdt];
    if op != OpKind::NoOp {
        sides.push(&o.dt);
        same_size(o, tcount, tdt)?;
    }
    if let Some(r) = result {
        sides.push(&r.dt);
        same_size(r, tcount, tdt)?;
    }
    if tcount == 0 || tdt.size == 0 {
        // Nothing moves (and the sides' sizes agree): no type or operation to check, as
        // under MPICH (its badrma test accumulates zero counts of mismatched types).
        resolve(w, rank, disp, tcount, tdt)?;
        return Ok(false);
    }
    let b = acc_basic(&sides, op)?;
    let Some(p) = resolve(w, rank, disp, tcount, tdt)? else {
        return Ok(false);
    };
    let ext = b.extent();
    let truns = elem_runs(tdt, tcount, b);
    if p.local && !w.common.real() {
        let oruns = if op == OpKind::NoOp { vec![] } else { elem_runs(&o.dt, o.count, b) };
        with_acc_lock(w, &p.t, || {
            if let Some(r) = result {
                let rruns = elem_runs(&r.dt, r.count, b);
                walk(p.addr, &truns, r.ptr as usize, &rruns, ext, |t, res, n| {
                    // SAFETY: both inside their buffers (runs of the caller's layouts).
                    unsafe { std::ptr::copy(t as *const u8, res as *mut u8, (n - 1) * ext + b.size()) }
                });
            }
            if op != OpKind::NoOp {
                walk(o.ptr as usize, &oruns, p.addr, &truns, ext, |src, t, n| {
                    // SAFETY: as above; `valid` was checked.
                    unsafe { op::apply(op, b, src as *const u8, t as *mut u8, n) }
                });
            }
        });
        return Ok(false);
    }
    let (rty, rop) = real_acc(b, op)?;
    let oruns = if op == OpKind::NoOp {
        truns.clone()
    } else {
        elem_runs(&o.dt, o.count, b)
    };
    // With MPI_NO_OP the origin is not read: any valid address of the right layout.
    let optr = if op == OpKind::NoOp && o.ptr.is_null() {
        result.map_or(std::ptr::null_mut(), |r| r.ptr)
    } else {
        o.ptr
    };
    let types = |tp: &Transport| -> Result<_, String> {
        let ot = tp.rma_type(Unit::Elem(rty), &oruns)?;
        let tt = tp.rma_type(Unit::Elem(rty), &truns)?;
        let res = match result {
            Some(r) => Some((r.ptr, tp.rma_type(Unit::Elem(rty), &elem_runs(&r.dt, r.count, b))?)),
            None => None,
        };
        Ok((ot, tt, res))
    };
    match token {
        None => with_tp(|tp| {
            let (ot, tt, res) = types(tp)?;
            tp.rma_acc(p.on, optr, ot, res, p.rrank, p.rdisp, tt, rop)
        })
        .map(|_| false),
        Some(t) => with_tp_mut(|tp| {
            let (ot, tt, res) = types(tp)?;
            tp.rma_r_acc(p.on, optr, ot, res, p.rrank, p.rdisp, tt, rop, t)
        })
        .map(|_| true),
    }
}

/// MPI_Fetch_and_op: one element.
///
/// # Safety
/// `origin` (unless the op is NO_OP) and `result` valid for one element of `dt`.
pub unsafe fn fetch_and_op(w: &Win, origin: *const u8, result: *mut u8, dt: &DtRef, rank: i32, disp: i64, op: OpKind) -> MpiResult<()> {
    if dt.contents.is_some() || dt.basic.is_none() {
        return err(
            c::MPI_ERR_TYPE,
            format!("MPI_Fetch_and_op needs a predefined datatype, not {}", dt.name),
        );
    }
    let o = Side {
        ptr: origin as *mut u8,
        count: 1,
        dt: dt.clone(),
    };
    let r = Side {
        ptr: result,
        count: 1,
        dt: dt.clone(),
    };
    accumulate(w, &o, Some(&r), rank, disp, 1, dt, op, None).map(|_| ())
}

/// MPI_Compare_and_swap: one element of an integer-like type.
///
/// # Safety
/// The three pointers valid for one element of `dt`.
pub unsafe fn compare_and_swap(
    w: &Win,
    origin: *const u8,
    compare: *const u8,
    result: *mut u8,
    dt: &DtRef,
    rank: i32,
    disp: i64,
) -> MpiResult<()> {
    let b = match (dt.contents.is_none(), dt.basic) {
        (true, Some(b)) if matches!(b.class(), TypeClass::Integer | TypeClass::Logical | TypeClass::Byte) => b,
        _ => {
            return err(
                c::MPI_ERR_TYPE,
                format!(
                    "MPI_Compare_and_swap needs a predefined integer, logical or byte type, not {}",
                    dt.name
                ),
            )
        }
    };
    let Some(p) = resolve(w, rank, disp, 1, dt)? else {
        return Ok(());
    };
    let n = b.size();
    if p.local && !w.common.real() {
        with_acc_lock(w, &p.t, || {
            let t = p.addr as *mut u8;
            // SAFETY: one element at each pointer (caller), the target inside the window (checked).
            unsafe {
                let old: Vec<u8> = std::slice::from_raw_parts(t, n).to_vec();
                if old.as_slice() == std::slice::from_raw_parts(compare, n) {
                    std::ptr::copy(origin, t, n);
                }
                std::ptr::copy_nonoverlapping(old.as_ptr(), result, n);
            }
        });
        return Ok(());
    }
    let (rty, _) = real_acc(b, OpKind::Replace)?;
    with_tp(|tp| tp.rma_cas(p.on, origin, compare, result, rty, p.rrank, p.rdisp))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::datatype::{self, typemap};
    use rstest::rstest;
    use std::sync::Arc;

    fn int() -> DtRef {
        datatype::lookup(c::MPI_INT).unwrap()
    }

    fn vector(count: usize, bl: usize, stride: isize) -> DtRef {
        let i = int();
        Arc::new(typemap::hvector(count, bl, stride * 4, &i).unwrap())
    }

    #[rstest]
    #[case::contiguous(int(), 5, vec![(0, 20)])]
    #[case::empty(int(), 0, vec![])]
    #[case::vector(vector(3, 1, 2), 1, vec![(0, 4), (8, 4), (16, 4)])]
    #[case::vector_twice_merges(vector(2, 1, 1), 2, vec![(0, 16)])]
    fn blocks(#[case] dt: DtRef, #[case] count: usize, #[case] want: Vec<(isize, usize)>) {
        assert_eq!(byte_blocks(&dt, count), want);
    }

    #[rstest]
    #[case::contiguous(int(), 3, vec![(0, 3)])]
    #[case::vector(vector(2, 2, 3), 1, vec![(0, 2), (12, 2)])]
    fn runs(#[case] dt: DtRef, #[case] count: usize, #[case] want: Vec<(isize, usize)>) {
        assert_eq!(elem_runs(&dt, count, BasicType::Int), want);
    }

    #[rstest]
    #[case::same(vec![(0, 4)], vec![(0, 4)], vec![(0, 0, 4)])]
    #[case::split_right(vec![(0, 4)], vec![(0, 1), (8, 3)], vec![(0, 0, 1), (4, 8, 3)])]
    #[case::split_both(vec![(0, 2), (16, 2)], vec![(0, 3), (32, 1)], vec![(0, 0, 2), (16, 8, 1), (20, 32, 1)])]
    fn walks(#[case] a: Vec<(isize, usize)>, #[case] b: Vec<(isize, usize)>, #[case] want: Vec<(usize, usize, usize)>) {
        let mut got = Vec::new();
        walk(0, &a, 0, &b, 4, |x, y, n| got.push((x, y, n)));
        assert_eq!(got, want);
    }

    #[test]
    fn replace_and_noop_are_accumulate_ops() {
        assert_eq!(acc_op(c::MPI_REPLACE).unwrap(), OpKind::Replace);
        assert_eq!(acc_op(c::MPI_NO_OP).unwrap(), OpKind::NoOp);
        assert_eq!(acc_op(c::MPI_OP_NULL).unwrap_err().class, c::MPI_ERR_OP);
    }
}
