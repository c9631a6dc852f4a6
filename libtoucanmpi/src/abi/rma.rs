//! One-sided communication (issue 18): the `MPI_Win_*` calls, the communication calls and
//! their large-count (`_c`) forms. Errors go through the window's error handler (an invalid
//! window through MPI_COMM_WORLD's); see core/rma for the semantics.

use super::consts as c;
use super::handles::{self as hd, comm, me, put};
use crate::core::error::{err, MpiError, MpiResult};
use crate::core::rma::ops::{self, Side};
use crate::core::rma::sync::{self, Memory};
use crate::core::rma::{self, Win};
use crate::core::state::AttrKind;
use std::os::raw::{c_char, c_int, c_void};

/// Like `mpi_fn!`, with errors raised on window `$w`.
macro_rules! win_fn {
    ($name:ident, $pname:ident, |$($arg:ident : $ty:ty),* $(,)?| win = $w:expr, $body:block) => {
        #[no_mangle]
        pub unsafe extern "C" fn $pname($($arg: $ty),*) -> std::os::raw::c_int {
            $crate::core::deadlock::enter(stringify!($name));
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| -> MpiResult<()> { $body }));
            outcome(r, $w, stringify!($name))
        }
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> std::os::raw::c_int {
            $pname($($arg),*)
        }
    };
}

#[inline(always)]
fn outcome(r: std::thread::Result<MpiResult<()>>, win: usize, call: &str) -> c_int {
    match r {
        Ok(Ok(())) => 0,
        r => failed(r, win, call),
    }
}

/// `outcome` of a call that failed or panicked.
#[cold]
#[inline(never)]
fn failed(r: std::thread::Result<MpiResult<()>>, win: usize, call: &str) -> c_int {
    match r {
        Ok(Ok(())) => 0,
        Ok(Err(e)) => raise_win(win, call, e),
        Err(p) => super::raise(
            c::MPI_COMM_WORLD,
            call,
            MpiError::new(c::MPI_ERR_INTERN, super::export::panic_text(&p)),
        ),
    }
}

/// Applies window `win`'s error handler (MPI_COMM_WORLD's when `win` is not a window).
fn raise_win(win: usize, call: &str, e: MpiError) -> c_int {
    match rma::errhandler_of(win) {
        Some(h) => super::export::apply_handler(h, win, call, e.class, &e.msg),
        None => super::raise(c::MPI_COMM_WORLD, call, e),
    }
}

/// The running subrank's window `h`, for the length of this call (the window it named last is
/// found without the table's lock).
fn win(h: usize) -> MpiResult<rma::WinRef> {
    rma::lookup_fast(me()?, h)
}

fn info_ok(info: usize) -> MpiResult<()> {
    super::info::check(info)
}

fn disp_unit(u: i64) -> MpiResult<usize> {
    if u <= 0 {
        return err(c::MPI_ERR_DISP, format!("invalid displacement unit {u} (must be positive)"));
    }
    Ok(u as usize)
}

fn win_size(s: i64) -> MpiResult<usize> {
    if s < 0 {
        return err(c::MPI_ERR_SIZE, format!("invalid window size {s}"));
    }
    Ok(s as usize)
}

/// Creates a window on a private duplicate of `comm_h`; writes its handle.
unsafe fn make(comm_h: usize, mem: Memory, unit: i64, flavor: i32, out: *mut usize) -> MpiResult<usize> {
    make_with(comm_h, mem, unit, flavor, out, c::MPI_INFO_NULL)
}

/// `make`, with the creation's info hints kept (as MPI_Win_set_info would).
unsafe fn make_with(comm_h: usize, mem: Memory, unit: i64, flavor: i32, out: *mut usize, info: usize) -> MpiResult<usize> {
    let (sub, cm) = comm(comm_h)?;
    if cm.is_inter() {
        return err(c::MPI_ERR_COMM, "windows need an intra-communicator");
    }
    let unit = disp_unit(unit)?;
    hd::out(out, "window")?;
    let mut wc = c::MPI_COMM_NULL;
    super::comm::dup(comm_h, &mut wc)?;
    let (_, wcm) = comm(wc)?;
    let (h, base) = sync::create(sub, wc, wcm, mem, unit, flavor, c::MPI_ERRORS_ARE_FATAL)?;
    put(out, h, "window")?;
    if info != c::MPI_INFO_NULL {
        let pairs = super::info::with_info(info, |p| p.clone())?;
        let w = win(h)?;
        let mut st = w.st.lock();
        for (k, v) in pairs {
            if HINTS.iter().any(|e| e.0 == k) {
                st.info.retain(|e| e.0 != k);
                st.info.push((k, v));
            }
        }
    }
    Ok(base)
}

unsafe fn create(base: *mut c_void, size: i64, unit: i64, info: usize, comm_h: usize, out: *mut usize) -> MpiResult<()> {
    info_ok(info)?;
    let size = win_size(size)?;
    if base.is_null() && size > 0 {
        return err(c::MPI_ERR_BUFFER, format!("null base with window size {size}"));
    }
    make_with(
        comm_h,
        Memory::Given(base as usize, size),
        unit,
        c::MPI_WIN_FLAVOR_CREATE,
        out,
        info,
    )
    .map(|_| ())
}

mpi_fn!(
    MPI_Win_create,
    PMPI_Win_create,
    |base: *mut c_void, size: isize, unit: c_int, info: usize, comm_h: usize, out: *mut usize| errcomm = comm_h,
    { create(base, size as i64, unit as i64, info, comm_h, out) }
);
mpi_fn!(
    MPI_Win_create_c,
    PMPI_Win_create_c,
    |base: *mut c_void, size: isize, unit: isize, info: usize, comm_h: usize, out: *mut usize| errcomm = comm_h,
    { create(base, size as i64, unit as i64, info, comm_h, out) }
);

unsafe fn allocate(size: i64, unit: i64, info: usize, comm_h: usize, baseptr: *mut c_void, out: *mut usize, shared: bool) -> MpiResult<()> {
    info_ok(info)?;
    let size = win_size(size)?;
    hd::out(baseptr as *mut usize, "base pointer")?;
    let (mem, flavor) = if shared {
        (Memory::Shared(size), c::MPI_WIN_FLAVOR_SHARED)
    } else {
        (Memory::Allocate(size), c::MPI_WIN_FLAVOR_ALLOCATE)
    };
    let base = make_with(comm_h, mem, unit, flavor, out, info)?;
    put(baseptr as *mut usize, base, "base pointer")
}

mpi_fn!(
    MPI_Win_allocate,
    PMPI_Win_allocate,
    |size: isize, unit: c_int, info: usize, comm_h: usize, baseptr: *mut c_void, out: *mut usize| errcomm = comm_h,
    { allocate(size as i64, unit as i64, info, comm_h, baseptr, out, false) }
);
mpi_fn!(
    MPI_Win_allocate_c,
    PMPI_Win_allocate_c,
    |size: isize, unit: isize, info: usize, comm_h: usize, baseptr: *mut c_void, out: *mut usize| errcomm = comm_h,
    { allocate(size as i64, unit as i64, info, comm_h, baseptr, out, false) }
);
mpi_fn!(
    MPI_Win_allocate_shared,
    PMPI_Win_allocate_shared,
    |size: isize, unit: c_int, info: usize, comm_h: usize, baseptr: *mut c_void, out: *mut usize| errcomm = comm_h,
    { allocate(size as i64, unit as i64, info, comm_h, baseptr, out, true) }
);
mpi_fn!(
    MPI_Win_allocate_shared_c,
    PMPI_Win_allocate_shared_c,
    |size: isize, unit: isize, info: usize, comm_h: usize, baseptr: *mut c_void, out: *mut usize| errcomm = comm_h,
    { allocate(size as i64, unit as i64, info, comm_h, baseptr, out, true) }
);

mpi_fn!(
    MPI_Win_create_dynamic,
    PMPI_Win_create_dynamic,
    |info: usize, comm_h: usize, out: *mut usize| errcomm = comm_h,
    {
        info_ok(info)?;
        make(comm_h, Memory::Dynamic, 1, c::MPI_WIN_FLAVOR_DYNAMIC, out).map(|_| ())
    }
);

win_fn!(
    MPI_Win_attach,
    PMPI_Win_attach,
    |w: usize, base: *mut c_void, size: isize| win = w,
    {
        let wn = win(w)?;
        let size = win_size(size as i64)?;
        if base.is_null() && size > 0 {
            return err(c::MPI_ERR_BUFFER, "null base in MPI_Win_attach");
        }
        sync::win_attach(&wn, base as usize, size)
    }
);

win_fn!(MPI_Win_detach, PMPI_Win_detach, |w: usize, base: *const c_void| win = w, {
    let wn = win(w)?;
    sync::win_detach(&wn, base as usize)
});

win_fn!(
    MPI_Win_free,
    PMPI_Win_free,
    |p: *mut usize| win = if p.is_null() { 0 } else { *p },
    {
        let h = *hd::out(p, "window")?;
        let sub = me()?;
        rma::lookup(sub, h)?;
        super::attr::delete_all(sub, AttrKind::Win, h)?;
        let w = sync::free(h)?;
        let mut wc = w.comm_h;
        let rc = super::comm::PMPI_Comm_free(&mut wc);
        if rc != 0 {
            return err(rc, "freeing the window's communicator failed");
        }
        *p = c::MPI_WIN_NULL;
        Ok(())
    }
);

// ---- communication ----

fn target_disp(d: isize) -> i64 {
    d as i64
}

#[inline]
unsafe fn side(ptr: *const c_void, count: i64, dt: usize) -> MpiResult<Side> {
    let d = hd::dtype(dt)?;
    let n = hd::count(count)?;
    Ok(Side {
        ptr: ptr as *mut u8,
        count: n,
        dt: d,
    })
}

#[allow(clippy::too_many_arguments)]
#[inline]
unsafe fn do_put(
    o: *const c_void,
    oc: i64,
    odt: usize,
    rank: c_int,
    disp: isize,
    tc: i64,
    tdt: usize,
    w: usize,
    get: bool,
    token: ops::Token,
) -> MpiResult<bool> {
    let wn = win(w)?;
    // Both sides contiguous predefined types (a buffer of bytes, ints, doubles...) of one
    // size: plain bytes, no datatype reference taken (the small-put path).
    if let (Some(os), Some(ts), Ok(on), Ok(tn)) = (
        crate::core::datatype::contiguous_size(odt),
        crate::core::datatype::contiguous_size(tdt),
        hd::count(oc),
        hd::count(tc),
    ) {
        if let (Some(ob), Some(tb)) = (on.checked_mul(os), tn.checked_mul(ts)) {
            if ob == tb {
                return ops::put_get_bytes(&wn, o as *mut u8, ob, rank, target_disp(disp), get, token);
            }
        }
    }
    let os = side(o, oc, odt)?;
    // Mostly one type on both sides: one lookup (and one reference count taken).
    let other;
    let t = if tdt == odt {
        &os.dt
    } else {
        other = hd::dtype(tdt)?;
        &other
    };
    let tc = hd::count(tc)?;
    if get {
        ops::get(&wn, &os, rank, target_disp(disp), tc, t, token)
    } else {
        ops::put(&wn, &os, rank, target_disp(disp), tc, t, token)
    }
}

/// A count argument (`int` or `MPI_Count`) as the layer below takes it.
fn cnt(n: impl Into<i64>) -> i64 {
    n.into()
}

/// A request-based operation (MPI_Rput, ...): `op` starts it with the token of a new request,
/// which is written to `req`. It completes at MPI_Wait/MPI_Test when the real MPI has
/// completed the operation locally (`op` returned true: the origin buffer may be reused, a
/// get's data is in), or is complete at once (false: a copy, done in the call).
unsafe fn with_request(req: *mut usize, op: impl FnOnce(ops::Token) -> MpiResult<bool>) -> MpiResult<()> {
    hd::out(req, "request")?;
    let sub = me()?;
    let id = crate::core::state::with(|s| {
        let id = s.new_request(sub, c::MPI_COMM_WORLD);
        if let Some(r) = s.req_mut(id) {
            r.pending = 1;
        }
        id
    })?;
    match op(Some(id as u64)) {
        Ok(true) => {}
        Ok(false) => crate::core::state::with(|s| s.complete(id))?,
        Err(e) => {
            let _ = crate::core::state::with(|s| s.drop_request(id));
            return Err(e);
        }
    }
    put(req, id as usize, "request")
}

/// MPI_Put/Get (`get`) and their request-based forms (Rput/Rget), for one count type.
macro_rules! put_get_fns {
    ($name:ident, $pname:ident, $rname:ident, $rpname:ident, $optr:ty, $cnt:ty, get = $get:expr) => {
        win_fn!(
            $name,
            $pname,
            |o: $optr, oc: $cnt, odt: usize, rank: c_int, disp: isize, tc: $cnt, tdt: usize, w: usize| win = w,
            { do_put(o, cnt(oc), odt, rank, disp, cnt(tc), tdt, w, $get, None).map(|_| ()) }
        );
        win_fn!(
            $rname,
            $rpname,
            |o: $optr, oc: $cnt, odt: usize, rank: c_int, disp: isize, tc: $cnt, tdt: usize, w: usize, req: *mut usize| win = w,
            { with_request(req, |t| do_put(o, cnt(oc), odt, rank, disp, cnt(tc), tdt, w, $get, t)) }
        );
    };
}

put_get_fns!(MPI_Put, PMPI_Put, MPI_Rput, PMPI_Rput, *const c_void, c_int, get = false);
put_get_fns!(MPI_Put_c, PMPI_Put_c, MPI_Rput_c, PMPI_Rput_c, *const c_void, i64, get = false);
put_get_fns!(MPI_Get, PMPI_Get, MPI_Rget, PMPI_Rget, *mut c_void, c_int, get = true);
put_get_fns!(MPI_Get_c, PMPI_Get_c, MPI_Rget_c, PMPI_Rget_c, *mut c_void, i64, get = true);

#[allow(clippy::too_many_arguments)]
unsafe fn do_acc(
    o: *const c_void,
    oc: i64,
    odt: usize,
    res: Option<(*mut c_void, i64, usize)>,
    rank: c_int,
    disp: isize,
    tc: i64,
    tdt: usize,
    op: usize,
    w: usize,
    token: ops::Token,
) -> MpiResult<bool> {
    let wn = win(w)?;
    let opk = ops::acc_op(op)?;
    let os = if opk == crate::core::coll::op::OpKind::NoOp && (odt == c::MPI_DATATYPE_NULL || oc == 0) {
        Side {
            ptr: o as *mut u8,
            count: 0,
            dt: hd::dtype(tdt)?,
        }
    } else {
        side(o, oc, odt)?
    };
    let rs = match res {
        Some((p, n, d)) => Some(side(p, n, d)?),
        None => None,
    };
    let t = hd::dtype(tdt)?;
    let tc = hd::count(tc)?;
    ops::accumulate(&wn, &os, rs.as_ref(), rank, target_disp(disp), tc, &t, opk, token)
}

/// MPI_Accumulate and MPI_Raccumulate, for one count type.
macro_rules! acc_fns {
    ($name:ident, $pname:ident, $rname:ident, $rpname:ident, $cnt:ty) => {
        win_fn!(
            $name,
            $pname,
            |o: *const c_void, oc: $cnt, odt: usize, rank: c_int, disp: isize, tc: $cnt, tdt: usize, op: usize, w: usize| win = w,
            { do_acc(o, cnt(oc), odt, None, rank, disp, cnt(tc), tdt, op, w, None).map(|_| ()) }
        );
        win_fn!(
            $rname,
            $rpname,
            |o: *const c_void,
             oc: $cnt,
             odt: usize,
             rank: c_int,
             disp: isize,
             tc: $cnt,
             tdt: usize,
             op: usize,
             w: usize,
             req: *mut usize| win = w,
            { with_request(req, |t| do_acc(o, cnt(oc), odt, None, rank, disp, cnt(tc), tdt, op, w, t)) }
        );
    };
}

/// MPI_Get_accumulate and MPI_Rget_accumulate, for one count type.
macro_rules! get_acc_fns {
    ($name:ident, $pname:ident, $rname:ident, $rpname:ident, $cnt:ty) => {
        win_fn!(
            $name,
            $pname,
            |o: *const c_void,
             oc: $cnt,
             odt: usize,
             r: *mut c_void,
             rc: $cnt,
             rdt: usize,
             rank: c_int,
             disp: isize,
             tc: $cnt,
             tdt: usize,
             op: usize,
             w: usize| win = w,
            {
                do_acc(
                    o,
                    cnt(oc),
                    odt,
                    Some((r, cnt(rc), rdt)),
                    rank,
                    disp,
                    cnt(tc),
                    tdt,
                    op,
                    w,
                    None,
                )
                .map(|_| ())
            }
        );
        win_fn!(
            $rname,
            $rpname,
            |o: *const c_void,
             oc: $cnt,
             odt: usize,
             r: *mut c_void,
             rc: $cnt,
             rdt: usize,
             rank: c_int,
             disp: isize,
             tc: $cnt,
             tdt: usize,
             op: usize,
             w: usize,
             req: *mut usize| win = w,
            {
                with_request(req, |t| {
                    do_acc(o, cnt(oc), odt, Some((r, cnt(rc), rdt)), rank, disp, cnt(tc), tdt, op, w, t)
                })
            }
        );
    };
}

acc_fns!(MPI_Accumulate, PMPI_Accumulate, MPI_Raccumulate, PMPI_Raccumulate, c_int);
acc_fns!(MPI_Accumulate_c, PMPI_Accumulate_c, MPI_Raccumulate_c, PMPI_Raccumulate_c, i64);
get_acc_fns!(
    MPI_Get_accumulate,
    PMPI_Get_accumulate,
    MPI_Rget_accumulate,
    PMPI_Rget_accumulate,
    c_int
);
get_acc_fns!(
    MPI_Get_accumulate_c,
    PMPI_Get_accumulate_c,
    MPI_Rget_accumulate_c,
    PMPI_Rget_accumulate_c,
    i64
);

win_fn!(
    MPI_Fetch_and_op,
    PMPI_Fetch_and_op,
    |o: *const c_void, r: *mut c_void, dt: usize, rank: c_int, disp: isize, op: usize, w: usize| win = w,
    {
        let wn = win(w)?;
        let d = hd::dtype(dt)?;
        let opk = ops::acc_op(op)?;
        if r.is_null() {
            return err(c::MPI_ERR_BUFFER, "null result buffer");
        }
        ops::fetch_and_op(&wn, o as *const u8, r as *mut u8, &d, rank, target_disp(disp), opk)
    }
);

win_fn!(
    MPI_Compare_and_swap,
    PMPI_Compare_and_swap,
    |o: *const c_void, cmp: *const c_void, r: *mut c_void, dt: usize, rank: c_int, disp: isize, w: usize| win = w,
    {
        let wn = win(w)?;
        let d = hd::dtype(dt)?;
        if o.is_null() || cmp.is_null() || r.is_null() {
            return err(c::MPI_ERR_BUFFER, "null buffer in MPI_Compare_and_swap");
        }
        ops::compare_and_swap(&wn, o as *const u8, cmp as *const u8, r as *mut u8, &d, rank, target_disp(disp))
    }
);

// ---- synchronisation ----

fn assert_ok(a: c_int) -> MpiResult<()> {
    let all = c::MPI_MODE_NOCHECK | c::MPI_MODE_NOSTORE | c::MPI_MODE_NOPUT | c::MPI_MODE_NOPRECEDE | c::MPI_MODE_NOSUCCEED;
    if a & !all != 0 {
        return err(c::MPI_ERR_ASSERT, format!("invalid assert {a:#x}"));
    }
    Ok(())
}

win_fn!(MPI_Win_fence, PMPI_Win_fence, |a: c_int, w: usize| win = w, {
    let wn = win(w)?;
    assert_ok(a)?;
    sync::fence(&wn, a)
});

/// Window ranks of the members of group `g`.
fn group_ranks(wn: &Win, g: usize) -> MpiResult<Vec<i32>> {
    let (_, grp) = super::group::group(g)?;
    grp.ranks
        .iter()
        .map(|&w| {
            wn.comm
                .group
                .rank_of(w)
                .map(|r| r as i32)
                .ok_or_else(|| MpiError::new(c::MPI_ERR_GROUP, "the group holds a process that is not in the window"))
        })
        .collect()
}

win_fn!(MPI_Win_post, PMPI_Win_post, |g: usize, a: c_int, w: usize| win = w, {
    let wn = win(w)?;
    assert_ok(a)?;
    let ranks = group_ranks(&wn, g)?;
    sync::post(&wn, ranks, a)
});

win_fn!(MPI_Win_start, PMPI_Win_start, |g: usize, a: c_int, w: usize| win = w, {
    let wn = win(w)?;
    assert_ok(a)?;
    let ranks = group_ranks(&wn, g)?;
    sync::start(&wn, ranks, a)
});

win_fn!(MPI_Win_complete, PMPI_Win_complete, |w: usize| win = w, {
    sync::complete(&*win(w)?)
});

win_fn!(MPI_Win_wait, PMPI_Win_wait, |w: usize| win = w, {
    sync::wait_post(&*win(w)?, true).map(|_| ())
});

win_fn!(MPI_Win_test, PMPI_Win_test, |w: usize, flag: *mut c_int| win = w, {
    let wn = win(w)?;
    hd::out(flag, "flag")?;
    let done = sync::wait_post(&wn, false)?;
    put(flag, done as c_int, "flag")
});

win_fn!(
    MPI_Win_lock,
    PMPI_Win_lock,
    |kind: c_int, rank: c_int, a: c_int, w: usize| win = w,
    {
        let wn = win(w)?;
        assert_ok(a)?;
        sync::lock(&wn, kind, rank, a)
    }
);

win_fn!(MPI_Win_unlock, PMPI_Win_unlock, |rank: c_int, w: usize| win = w, {
    sync::unlock(&*win(w)?, rank)
});

win_fn!(MPI_Win_lock_all, PMPI_Win_lock_all, |a: c_int, w: usize| win = w, {
    let wn = win(w)?;
    assert_ok(a)?;
    sync::lock_all(&wn, a)
});

win_fn!(MPI_Win_unlock_all, PMPI_Win_unlock_all, |w: usize| win = w, {
    sync::unlock_all(&*win(w)?)
});

win_fn!(MPI_Win_flush, PMPI_Win_flush, |rank: c_int, w: usize| win = w, {
    sync::flush_call(&*win(w)?, Some(rank), false)
});

win_fn!(MPI_Win_flush_local, PMPI_Win_flush_local, |rank: c_int, w: usize| win = w, {
    sync::flush_call(&*win(w)?, Some(rank), true)
});

win_fn!(MPI_Win_flush_all, PMPI_Win_flush_all, |w: usize| win = w, {
    sync::flush_call(&*win(w)?, None, false)
});

win_fn!(MPI_Win_flush_local_all, PMPI_Win_flush_local_all, |w: usize| win = w, {
    sync::flush_call(&*win(w)?, None, true)
});

win_fn!(MPI_Win_sync, PMPI_Win_sync, |w: usize| win = w, { sync::win_sync(&*win(w)?) });

// ---- queries, attributes, info, names, error handlers ----

win_fn!(MPI_Win_get_group, PMPI_Win_get_group, |w: usize, g: *mut usize| win = w, {
    let wn = win(w)?;
    hd::out(g, "group")?;
    put(g, super::group::add_group(wn.sub, wn.comm.group.ranks.clone())?, "group")
});

unsafe fn shared_query(w: usize, rank: c_int, size: *mut isize, unit: *mut c_void, base: *mut c_void, large_unit: bool) -> MpiResult<()> {
    let wn = win(w)?;
    let (s, u, b) = sync::shared_query(&wn, rank)?;
    put(size, s as isize, "size")?;
    if large_unit {
        put(unit as *mut isize, u as isize, "displacement unit")?;
    } else {
        put(unit as *mut c_int, u, "displacement unit")?;
    }
    put(base as *mut usize, b, "base pointer")
}

win_fn!(
    MPI_Win_shared_query,
    PMPI_Win_shared_query,
    |w: usize, rank: c_int, size: *mut isize, unit: *mut c_int, base: *mut c_void| win = w,
    { shared_query(w, rank, size, unit as *mut c_void, base, false) }
);
win_fn!(
    MPI_Win_shared_query_c,
    PMPI_Win_shared_query_c,
    |w: usize, rank: c_int, size: *mut isize, unit: *mut isize, base: *mut c_void| win = w,
    { shared_query(w, rank, size, unit as *mut c_void, base, true) }
);

mpi_fn!(
    MPI_Win_create_keyval,
    PMPI_Win_create_keyval,
    |copy: usize, delete: usize, k: *mut c_int, extra: *mut c_void| errcomm = c::MPI_COMM_WORLD,
    { super::attr::create(AttrKind::Win, copy, delete, k, extra) }
);

mpi_fn!(
    MPI_Win_free_keyval,
    PMPI_Win_free_keyval,
    |k: *mut c_int| errcomm = c::MPI_COMM_WORLD,
    { super::attr::free_keyval(AttrKind::Win, k) }
);

win_fn!(
    MPI_Win_set_attr,
    PMPI_Win_set_attr,
    |w: usize, key: c_int, val: *mut c_void| win = w,
    {
        let wn = win(w)?;
        if (c::MPI_WIN_BASE..=c::MPI_WIN_MODEL).contains(&key) {
            return err(c::MPI_ERR_KEYVAL, format!("predefined attribute {key} cannot be set"));
        }
        super::attr::set(wn.sub, AttrKind::Win, w, key, val as usize)
    }
);

win_fn!(
    MPI_Win_get_attr,
    PMPI_Win_get_attr,
    |w: usize, key: c_int, val: *mut c_void, flag: *mut c_int| win = w,
    {
        let wn = win(w)?;
        hd::out(flag, "flag")?;
        let out = val as *mut usize;
        let v: Option<usize> = match key {
            c::MPI_WIN_BASE => Some(wn.base),
            c::MPI_WIN_SIZE => Some(&wn.size as *const i64 as usize),
            c::MPI_WIN_DISP_UNIT => Some(&wn.unit as *const i32 as usize),
            c::MPI_WIN_CREATE_FLAVOR => Some(&wn.flavor as *const i32 as usize),
            c::MPI_WIN_MODEL => Some(&wn.model as *const i32 as usize),
            _ => super::attr::get_user(wn.sub, AttrKind::Win, w, key)?,
        };
        match v {
            Some(x) => {
                put(out, x, "attribute value")?;
                *flag = 1;
            }
            None => *flag = 0,
        }
        Ok(())
    }
);

win_fn!(MPI_Win_delete_attr, PMPI_Win_delete_attr, |w: usize, key: c_int| win = w, {
    let wn = win(w)?;
    super::attr::delete(wn.sub, AttrKind::Win, w, key)
});

/// The hints a window reports (MPICH's names and defaults), with the values set.
const HINTS: &[(&str, &str)] = &[
    ("no_locks", "false"),
    ("accumulate_ordering", "rar,raw,war,waw"),
    ("accumulate_ops", "same_op_no_op"),
    ("same_size", "false"),
    ("same_disp_unit", "false"),
    ("alloc_shared_noncontig", "false"),
];

win_fn!(MPI_Win_set_info, PMPI_Win_set_info, |w: usize, info: usize| win = w, {
    let wn = win(w)?;
    info_ok(info)?;
    if info == c::MPI_INFO_NULL {
        return Ok(());
    }
    let pairs = super::info::with_info(info, |p| p.clone())?;
    let mut st = wn.st.lock();
    for (k, v) in pairs {
        if HINTS.iter().any(|h| h.0 == k) {
            st.info.retain(|e| e.0 != k);
            st.info.push((k, v));
        }
    }
    Ok(())
});

win_fn!(MPI_Win_get_info, PMPI_Win_get_info, |w: usize, info: *mut usize| win = w, {
    let wn = win(w)?;
    hd::out(info, "info")?;
    let st = wn.st.lock();
    let pairs: Vec<(String, String)> = HINTS
        .iter()
        .map(|&(k, d)| {
            let v = st.info.iter().find(|e| e.0 == k).map_or(d.to_string(), |e| e.1.clone());
            (k.to_string(), v)
        })
        .collect();
    drop(st);
    put(info, super::info::new_info(pairs), "info")
});

win_fn!(MPI_Win_set_name, PMPI_Win_set_name, |w: usize, name: *const c_char| win = w, {
    let wn = win(w)?;
    if name.is_null() {
        return err(c::MPI_ERR_ARG, "null name");
    }
    let n = std::ffi::CStr::from_ptr(name).to_string_lossy().to_string();
    wn.st.lock().name = n.chars().take(c::MPI_MAX_OBJECT_NAME as usize - 1).collect();
    Ok(())
});

win_fn!(
    MPI_Win_get_name,
    PMPI_Win_get_name,
    |w: usize, name: *mut c_char, len: *mut c_int| win = w,
    {
        let wn = win(w)?;
        let n = wn.st.lock().name.clone();
        super::env::put_string(&n, name, len, c::MPI_MAX_OBJECT_NAME as usize)
    }
);

mpi_fn!(
    MPI_Win_create_errhandler,
    PMPI_Win_create_errhandler,
    |f: Option<crate::core::errh::ErrFn>, out: *mut usize| errcomm = c::MPI_COMM_WORLD,
    {
        let Some(f) = f else {
            return err(c::MPI_ERR_ARG, "null error handler function");
        };
        hd::out(out, "error handler")?;
        put(out, crate::core::errh::create(f), "error handler")
    }
);

win_fn!(MPI_Win_set_errhandler, PMPI_Win_set_errhandler, |w: usize, e: usize| win = w, {
    let wn = win(w)?;
    if !crate::core::errh::is_valid(e) {
        return err(
            c::MPI_ERR_ERRHANDLER,
            format!("invalid error handler {e:#x} (freed, or not an error handler)"),
        );
    }
    crate::core::errh::retain(e);
    wn.st.lock().errhandler = e;
    Ok(())
});

win_fn!(
    MPI_Win_get_errhandler,
    PMPI_Win_get_errhandler,
    |w: usize, e: *mut usize| win = w,
    {
        let wn = win(w)?;
        hd::out(e, "error handler")?;
        let h = wn.st.lock().errhandler;
        crate::core::errh::retain(h);
        put(e, h, "error handler")
    }
);

#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_call_errhandler(w: usize, code: c_int) -> c_int {
    crate::core::deadlock::enter("MPI_Win_call_errhandler");
    match me().and_then(|s| rma::lookup(s, w)) {
        Ok(wn) => {
            let h = wn.st.lock().errhandler;
            let msg = crate::core::error::class_text(code).to_string();
            super::export::apply_handler(h, w, "MPI_Win_call_errhandler", code, &msg);
            c::MPI_SUCCESS
        }
        Err(e) => super::raise(c::MPI_COMM_WORLD, "MPI_Win_call_errhandler", e),
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_call_errhandler(w: usize, code: c_int) -> c_int {
    PMPI_Win_call_errhandler(w, code)
}
