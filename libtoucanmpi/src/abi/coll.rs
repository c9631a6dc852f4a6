//! Collective exports. Each collective has one `prep_*` function that checks the arguments
//! (and resolves MPI_IN_PLACE) and returns the work as a job; the blocking form runs the job
//! at once, the nonblocking form (`MPI_I*`) runs it in a helper task that progresses while
//! the rank computes, and completes the request when done.

use super::consts as c;
use super::handles::{self as hd, comm};
use crate::core::coll::{Buf, Coll};
use crate::core::comm::CommRef;
use crate::core::datatype::DtRef;
use crate::core::error::{err, MpiResult};
use crate::core::reduce::Reducer;
use crate::core::state;
use std::os::raw::{c_int, c_void};

type Job = Box<dyn FnOnce(&Coll) -> MpiResult<()>>;
pub(crate) type Prepared = (usize, CommRef, Job);

fn in_place(p: *const c_void) -> bool {
    p as usize == c::MPI_IN_PLACE_ADDR
}

fn typed(buf: *const c_void, count: c_int, dt: usize) -> MpiResult<(usize, DtRef)> {
    let n = hd::count(count as i64)?;
    let d = hd::dtype(dt)?;
    hd::buffer(buf as *const u8, n, &d)?;
    Ok((n, d))
}

/// Runs a prepared collective now (`req` null) or in a helper task completing `*req`.
pub(crate) unsafe fn run(p: Prepared, comm_h: usize, req: Option<*mut usize>) -> MpiResult<()> {
    let (sub, cm, job) = p;
    let coll = Coll::new(sub, &cm, comm_h)?;
    let Some(req) = req else { return job(&coll) };
    if req.is_null() {
        return err(c::MPI_ERR_ARG, "null request pointer");
    }
    let id = state::with(|s| {
        let id = s.new_request(sub, comm_h);
        if let Some(r) = s.reqs.get_mut(id) {
            r.pending = 1;
        }
        id
    })?;
    let body = Box::new(move || {
        let res = job(&coll);
        let _ = state::with(|s| {
            if let (Err(e), Some(r)) = (&res, s.reqs.get_mut(id)) {
                r.status.error = e.class;
            }
            s.event_done(id);
        });
        0
    });
    if let Err(e) = crate::sched::worker::spawn(body) {
        return err(c::MPI_ERR_NO_MEM, format!("cannot start a nonblocking collective: {e}"));
    }
    *req = id as usize;
    Ok(())
}

/// `n` parts of a buffer, from counts and displacements (in elements).
unsafe fn parts(buf: *mut c_void, counts: &[i32], displs: Option<&[i32]>, each: usize, d: &DtRef) -> MpiResult<Vec<Buf>> {
    let mut v = Vec::with_capacity(counts.len());
    for (i, &k) in counts.iter().enumerate() {
        let k = hd::count(k as i64)?;
        let off = match displs {
            Some(ds) => ds[i] as isize,
            None => (i * each) as isize,
        };
        v.push(Buf::new((buf as *mut u8).wrapping_offset(off * d.extent), k, d.clone()));
    }
    Ok(v)
}

fn same_parts(buf: *mut c_void, n: usize, each: usize, d: &DtRef) -> MpiResult<Vec<Buf>> {
    // SAFETY: only computes addresses.
    unsafe { parts(buf, &vec![each as i32; n], None, each, d) }
}

/// The `n` per-rank parts of a buffer: from counts and displacements (the v-forms), or
/// `count` elements each, back to back.
fn buf_parts(buf: *mut c_void, counts: Option<&[i32]>, displs: Option<&[i32]>, count: c_int, dt: usize, n: usize) -> MpiResult<Vec<Buf>> {
    match counts {
        // SAFETY: only computes addresses from the user's counts and displacements.
        Some(c) => unsafe { parts(buf, c, displs, 0, &hd::dtype(dt)?) },
        None => {
            let (k, d) = typed(buf, count, dt)?;
            same_parts(buf, n, k, &d)
        }
    }
}

fn send_buf(sbuf: *const c_void, scount: c_int, sdt: usize) -> MpiResult<Buf> {
    let (n, d) = typed(sbuf, scount, sdt)?;
    Ok(Buf::new(sbuf as *mut u8, n, d))
}

fn prep_barrier(comm_h: usize) -> MpiResult<Prepared> {
    let (sub, cm) = comm(comm_h)?;
    Ok((sub, cm, Box::new(|c: &Coll| c.barrier())))
}

fn prep_bcast(buf: *mut c_void, count: c_int, dt: usize, root: c_int, comm_h: usize) -> MpiResult<Prepared> {
    let (sub, cm) = comm(comm_h)?;
    let (n, d) = typed(buf, count, dt)?;
    hd::root(&cm, root)?;
    let b = Buf::new(buf as *mut u8, n, d);
    // SAFETY (job): MPI requires the buffer to stay valid until the collective completes.
    Ok((sub, cm, Box::new(move |c: &Coll| unsafe { c.bcast(&b, root) })))
}

fn prep_reduce(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    count: c_int,
    dt: usize,
    op: usize,
    root: Option<c_int>,
    comm_h: usize,
) -> MpiResult<Prepared> {
    let (sub, cm) = comm(comm_h)?;
    let (n, d) = typed(if in_place(sbuf) { rbuf } else { sbuf }, count, dt)?;
    let red = Reducer::new(op, &d, dt)?;
    if let Some(r) = root {
        hd::root(&cm, r)?;
        if in_place(sbuf) && cm.rank != r {
            return err(c::MPI_ERR_BUFFER, "MPI_IN_PLACE is only valid at the root");
        }
    }
    if root.is_none_or(|r| r == cm.rank) {
        hd::buffer(rbuf as *const u8, n, &d)?;
    }
    let (s, r) = (sbuf as usize, rbuf as usize);
    Ok((
        sub,
        cm,
        Box::new(move |c: &Coll| unsafe {
            match root {
                Some(root) => c.reduce(s as *const u8, r as *mut u8, n, &d, &red, root),
                None => c.allreduce(s as *const u8, r as *mut u8, n, &d, &red),
            }
        }),
    ))
}

fn prep_gather(
    sbuf: *const c_void,
    scount: c_int,
    sdt: usize,
    rbuf: *mut c_void,
    rcounts: Option<&[i32]>,
    displs: Option<&[i32]>,
    rcount: c_int,
    rdt: usize,
    root: c_int,
    comm_h: usize,
) -> MpiResult<Prepared> {
    let (sub, cm) = comm(comm_h)?;
    hd::root(&cm, root)?;
    let is_root = cm.rank == root;
    let send = if is_root && in_place(sbuf) {
        None
    } else {
        Some(send_buf(sbuf, scount, sdt)?)
    };
    let ps = if is_root {
        buf_parts(rbuf, rcounts, displs, rcount, rdt, cm.size() as usize)?
    } else {
        Vec::new()
    };
    Ok((sub, cm, Box::new(move |c: &Coll| unsafe { c.gatherv(send.as_ref(), &ps, root) })))
}

fn prep_scatter(
    sbuf: *const c_void,
    scounts: Option<&[i32]>,
    displs: Option<&[i32]>,
    scount: c_int,
    sdt: usize,
    rbuf: *mut c_void,
    rcount: c_int,
    rdt: usize,
    root: c_int,
    comm_h: usize,
) -> MpiResult<Prepared> {
    let (sub, cm) = comm(comm_h)?;
    hd::root(&cm, root)?;
    let is_root = cm.rank == root;
    let recv = if is_root && in_place(rbuf) {
        None
    } else {
        Some(send_buf(rbuf, rcount, rdt)?)
    };
    let ps = if is_root {
        buf_parts(sbuf as *mut c_void, scounts, displs, scount, sdt, cm.size() as usize)?
    } else {
        Vec::new()
    };
    Ok((sub, cm, Box::new(move |c: &Coll| unsafe { c.scatterv(&ps, recv.as_ref(), root) })))
}

fn prep_allgather(
    sbuf: *const c_void,
    scount: c_int,
    sdt: usize,
    rbuf: *mut c_void,
    rcounts: Option<&[i32]>,
    displs: Option<&[i32]>,
    rcount: c_int,
    rdt: usize,
    comm_h: usize,
) -> MpiResult<Prepared> {
    let (sub, cm) = comm(comm_h)?;
    let send = if in_place(sbuf) { None } else { Some(send_buf(sbuf, scount, sdt)?) };
    let ps = buf_parts(rbuf, rcounts, displs, rcount, rdt, cm.size() as usize)?;
    Ok((sub, cm, Box::new(move |c: &Coll| unsafe { c.allgatherv(send.as_ref(), &ps) })))
}

/// With MPI_IN_PLACE the send data is the receive buffer: the job copies it first.
unsafe fn snapshot(ps: &[Buf]) -> (Vec<Vec<u8>>, Vec<Buf>) {
    let byte = crate::core::datatype::byte();
    let mut keep = Vec::new();
    for p in ps {
        let mut v = Vec::new();
        p.dt.pack(p.ptr, p.count, &mut v);
        keep.push(v);
    }
    let bufs = keep.iter_mut().map(|v| Buf::new(v.as_mut_ptr(), v.len(), byte.clone())).collect();
    (keep, bufs)
}

fn prep_alltoall(
    sbuf: *const c_void,
    scounts: Option<(&[i32], &[i32])>,
    scount: c_int,
    sdt: usize,
    rbuf: *mut c_void,
    rcounts: Option<(&[i32], &[i32])>,
    rcount: c_int,
    rdt: usize,
    comm_h: usize,
) -> MpiResult<Prepared> {
    let (sub, cm) = comm(comm_h)?;
    let n = cm.size() as usize;
    let rps = buf_parts(rbuf, rcounts.map(|x| x.0), rcounts.map(|x| x.1), rcount, rdt, n)?;
    let sps = if in_place(sbuf) {
        None
    } else {
        Some(buf_parts(
            sbuf as *mut c_void,
            scounts.map(|x| x.0),
            scounts.map(|x| x.1),
            scount,
            sdt,
            n,
        )?)
    };
    Ok((
        sub,
        cm,
        Box::new(move |c: &Coll| unsafe {
            match sps {
                Some(sps) => c.alltoallv(&sps, &rps),
                None => {
                    let (_keep, sps) = snapshot(&rps);
                    c.alltoallv(&sps, &rps)
                }
            }
        }),
    ))
}

fn prep_reduce_scatter(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    counts: Vec<usize>,
    dt: usize,
    op: usize,
    comm_h: usize,
) -> MpiResult<Prepared> {
    let (sub, cm) = comm(comm_h)?;
    let d = hd::dtype(dt)?;
    if !in_place(sbuf) {
        hd::buffer(sbuf as *const u8, counts.iter().sum(), &d)?;
    }
    hd::buffer(rbuf as *const u8, counts.get(cm.rank as usize).copied().unwrap_or(0), &d)?;
    let red = Reducer::new(op, &d, dt)?;
    let (s, r) = (sbuf as usize, rbuf as usize);
    Ok((
        sub,
        cm,
        Box::new(move |c: &Coll| unsafe { c.reduce_scatter(s as *const u8, r as *mut u8, &counts, &d, &red) }),
    ))
}

fn prep_scan(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    count: c_int,
    dt: usize,
    op: usize,
    exclusive: bool,
    comm_h: usize,
) -> MpiResult<Prepared> {
    let (sub, cm) = comm(comm_h)?;
    let (n, d) = typed(rbuf, count, dt)?;
    if !in_place(sbuf) {
        hd::buffer(sbuf as *const u8, n, &d)?;
    }
    let red = Reducer::new(op, &d, dt)?;
    let (s, r) = (sbuf as usize, rbuf as usize);
    Ok((
        sub,
        cm,
        Box::new(move |c: &Coll| unsafe { c.scan(s as *const u8, r as *mut u8, n, &d, &red, exclusive) }),
    ))
}

/// The communicator size, for reading count arrays.
fn size_of(comm_h: usize) -> MpiResult<usize> {
    Ok(comm(comm_h)?.1.size() as usize)
}

/// Defines the blocking export and its nonblocking twin from one argument list and one
/// expression producing the `Prepared` job.
macro_rules! coll_fns {
    ($name:ident, $pname:ident, $iname:ident, $piname:ident, $cm:ident, |$($arg:ident : $ty:ty),*| $prep:expr) => {
        mpi_fn!($name, $pname, |$($arg: $ty),*| errcomm = $cm, { run($prep, $cm, None) });
        mpi_fn!($iname, $piname, |$($arg: $ty,)* req: *mut usize| errcomm = $cm, { run($prep, $cm, Some(req)) });
    };
}

coll_fns!(MPI_Barrier, PMPI_Barrier, MPI_Ibarrier, PMPI_Ibarrier, comm_h, |comm_h: usize| {
    prep_barrier(comm_h)?
});

coll_fns!(
    MPI_Bcast,
    PMPI_Bcast,
    MPI_Ibcast,
    PMPI_Ibcast,
    comm_h,
    |buf: *mut c_void, count: c_int, dt: usize, root: c_int, comm_h: usize| prep_bcast(buf, count, dt, root, comm_h)?
);

coll_fns!(
    MPI_Reduce,
    PMPI_Reduce,
    MPI_Ireduce,
    PMPI_Ireduce,
    comm_h,
    |sbuf: *const c_void, rbuf: *mut c_void, count: c_int, dt: usize, op: usize, root: c_int, comm_h: usize| {
        prep_reduce(sbuf, rbuf, count, dt, op, Some(root), comm_h)?
    }
);

coll_fns!(
    MPI_Allreduce,
    PMPI_Allreduce,
    MPI_Iallreduce,
    PMPI_Iallreduce,
    comm_h,
    |sbuf: *const c_void, rbuf: *mut c_void, count: c_int, dt: usize, op: usize, comm_h: usize| {
        prep_reduce(sbuf, rbuf, count, dt, op, None, comm_h)?
    }
);

coll_fns!(
    MPI_Gather,
    PMPI_Gather,
    MPI_Igather,
    PMPI_Igather,
    comm_h,
    |sbuf: *const c_void, scount: c_int, sdt: usize, rbuf: *mut c_void, rcount: c_int, rdt: usize, root: c_int, comm_h: usize| {
        prep_gather(sbuf, scount, sdt, rbuf, None, None, rcount, rdt, root, comm_h)?
    }
);

coll_fns!(
    MPI_Gatherv,
    PMPI_Gatherv,
    MPI_Igatherv,
    PMPI_Igatherv,
    comm_h,
    |sbuf: *const c_void,
     scount: c_int,
     sdt: usize,
     rbuf: *mut c_void,
     rcounts: *const c_int,
     displs: *const c_int,
     rdt: usize,
     root: c_int,
     comm_h: usize| {
        let (_, cm) = comm(comm_h)?;
        let n = if cm.rank == root { cm.size() as usize } else { 0 };
        prep_gather(
            sbuf,
            scount,
            sdt,
            rbuf,
            Some(hd::ints(rcounts, n)?),
            Some(hd::ints(displs, n)?),
            0,
            rdt,
            root,
            comm_h,
        )?
    }
);

coll_fns!(
    MPI_Scatter,
    PMPI_Scatter,
    MPI_Iscatter,
    PMPI_Iscatter,
    comm_h,
    |sbuf: *const c_void, scount: c_int, sdt: usize, rbuf: *mut c_void, rcount: c_int, rdt: usize, root: c_int, comm_h: usize| {
        prep_scatter(sbuf, None, None, scount, sdt, rbuf, rcount, rdt, root, comm_h)?
    }
);

coll_fns!(
    MPI_Scatterv,
    PMPI_Scatterv,
    MPI_Iscatterv,
    PMPI_Iscatterv,
    comm_h,
    |sbuf: *const c_void,
     scounts: *const c_int,
     displs: *const c_int,
     sdt: usize,
     rbuf: *mut c_void,
     rcount: c_int,
     rdt: usize,
     root: c_int,
     comm_h: usize| {
        let (_, cm) = comm(comm_h)?;
        let n = if cm.rank == root { cm.size() as usize } else { 0 };
        prep_scatter(
            sbuf,
            Some(hd::ints(scounts, n)?),
            Some(hd::ints(displs, n)?),
            0,
            sdt,
            rbuf,
            rcount,
            rdt,
            root,
            comm_h,
        )?
    }
);

coll_fns!(
    MPI_Allgather,
    PMPI_Allgather,
    MPI_Iallgather,
    PMPI_Iallgather,
    comm_h,
    |sbuf: *const c_void, scount: c_int, sdt: usize, rbuf: *mut c_void, rcount: c_int, rdt: usize, comm_h: usize| {
        prep_allgather(sbuf, scount, sdt, rbuf, None, None, rcount, rdt, comm_h)?
    }
);

coll_fns!(
    MPI_Allgatherv,
    PMPI_Allgatherv,
    MPI_Iallgatherv,
    PMPI_Iallgatherv,
    comm_h,
    |sbuf: *const c_void,
     scount: c_int,
     sdt: usize,
     rbuf: *mut c_void,
     rcounts: *const c_int,
     displs: *const c_int,
     rdt: usize,
     comm_h: usize| {
        let n = size_of(comm_h)?;
        prep_allgather(
            sbuf,
            scount,
            sdt,
            rbuf,
            Some(hd::ints(rcounts, n)?),
            Some(hd::ints(displs, n)?),
            0,
            rdt,
            comm_h,
        )?
    }
);

coll_fns!(
    MPI_Alltoall,
    PMPI_Alltoall,
    MPI_Ialltoall,
    PMPI_Ialltoall,
    comm_h,
    |sbuf: *const c_void, scount: c_int, sdt: usize, rbuf: *mut c_void, rcount: c_int, rdt: usize, comm_h: usize| {
        prep_alltoall(sbuf, None, scount, sdt, rbuf, None, rcount, rdt, comm_h)?
    }
);

coll_fns!(
    MPI_Alltoallv,
    PMPI_Alltoallv,
    MPI_Ialltoallv,
    PMPI_Ialltoallv,
    comm_h,
    |sbuf: *const c_void,
     scounts: *const c_int,
     sdispls: *const c_int,
     sdt: usize,
     rbuf: *mut c_void,
     rcounts: *const c_int,
     rdispls: *const c_int,
     rdt: usize,
     comm_h: usize| {
        let n = size_of(comm_h)?;
        let s = if in_place(sbuf) {
            None
        } else {
            Some((hd::ints(scounts, n)?, hd::ints(sdispls, n)?))
        };
        prep_alltoall(
            sbuf,
            s,
            0,
            sdt,
            rbuf,
            Some((hd::ints(rcounts, n)?, hd::ints(rdispls, n)?)),
            0,
            rdt,
            comm_h,
        )?
    }
);

coll_fns!(
    MPI_Reduce_scatter_block,
    PMPI_Reduce_scatter_block,
    MPI_Ireduce_scatter_block,
    PMPI_Ireduce_scatter_block,
    comm_h,
    |sbuf: *const c_void, rbuf: *mut c_void, rcount: c_int, dt: usize, op: usize, comm_h: usize| {
        let k = hd::count(rcount as i64)?;
        prep_reduce_scatter(sbuf, rbuf, vec![k; size_of(comm_h)?], dt, op, comm_h)?
    }
);

coll_fns!(
    MPI_Reduce_scatter,
    PMPI_Reduce_scatter,
    MPI_Ireduce_scatter,
    PMPI_Ireduce_scatter,
    comm_h,
    |sbuf: *const c_void, rbuf: *mut c_void, rcounts: *const c_int, dt: usize, op: usize, comm_h: usize| {
        let counts = hd::ints(rcounts, size_of(comm_h)?)?
            .iter()
            .map(|&k| hd::count(k as i64))
            .collect::<MpiResult<Vec<usize>>>()?;
        prep_reduce_scatter(sbuf, rbuf, counts, dt, op, comm_h)?
    }
);

coll_fns!(
    MPI_Scan,
    PMPI_Scan,
    MPI_Iscan,
    PMPI_Iscan,
    comm_h,
    |sbuf: *const c_void, rbuf: *mut c_void, count: c_int, dt: usize, op: usize, comm_h: usize| {
        prep_scan(sbuf, rbuf, count, dt, op, false, comm_h)?
    }
);

coll_fns!(
    MPI_Exscan,
    PMPI_Exscan,
    MPI_Iexscan,
    PMPI_Iexscan,
    comm_h,
    |sbuf: *const c_void, rbuf: *mut c_void, count: c_int, dt: usize, op: usize, comm_h: usize| {
        prep_scan(sbuf, rbuf, count, dt, op, true, comm_h)?
    }
);

mpi_fn!(
    MPI_Op_create,
    PMPI_Op_create,
    |f: Option<crate::core::reduce::UserFn>, commute: c_int, op: *mut usize| errcomm = c::MPI_COMM_WORLD,
    {
        let Some(f) = f else {
            return err(c::MPI_ERR_ARG, "null user function");
        };
        if op.is_null() {
            return err(c::MPI_ERR_ARG, "null op pointer");
        }
        *op = crate::core::reduce::create(f, commute != 0);
        Ok(())
    }
);

mpi_fn!(MPI_Op_free, PMPI_Op_free, |op: *mut usize| errcomm = c::MPI_COMM_WORLD, {
    if op.is_null() {
        return err(c::MPI_ERR_ARG, "null op pointer");
    }
    if !crate::core::reduce::free(*op) {
        return err(
            c::MPI_ERR_OP,
            format!("cannot free operation {:#x} (predefined, or not an operation)", *op),
        );
    }
    *op = c::MPI_OP_NULL;
    Ok(())
});

mpi_fn!(
    MPI_Op_commutative,
    PMPI_Op_commutative,
    |op: usize, flag: *mut c_int| errcomm = c::MPI_COMM_WORLD,
    {
        let Some(k) = crate::core::reduce::commutative(op) else {
            return err(c::MPI_ERR_OP, format!("invalid operation {op:#x}"));
        };
        hd::put(flag, k as c_int, "commute")
    }
);

mpi_fn!(
    MPI_Reduce_local,
    PMPI_Reduce_local,
    |inbuf: *const c_void, inout: *mut c_void, count: c_int, dt: usize, op: usize| errcomm = c::MPI_COMM_WORLD,
    {
        let (n, d) = typed(inbuf, count, dt)?;
        hd::buffer(inout as *const u8, n, &d)?;
        let red = crate::core::reduce::Reducer::new(op, &d, dt)?;
        let a = red.load(inbuf as *const u8, n, &d);
        let mut b = red.load(inout as *const u8, n, &d);
        red.apply(&a, &mut b, n, &d);
        red.store(&b, inout as *mut u8, n, &d);
        Ok(())
    }
);
