//! Collective exports: argument checks and MPI_IN_PLACE, then `core::coll`.

use super::consts as c;
use super::handles::{self as hd, comm};
use crate::core::coll::{Buf, Coll};
use crate::core::comm::CommRef;
use crate::core::datatype::DtRef;
use crate::core::error::{err, MpiResult};
use std::os::raw::{c_int, c_void};

fn in_place(p: *const c_void) -> bool {
    p as usize == c::MPI_IN_PLACE_ADDR
}

fn typed(buf: *const c_void, count: c_int, dt: usize) -> MpiResult<(usize, DtRef)> {
    let n = hd::count(count as i64)?;
    let d = hd::dtype(dt)?;
    hd::buffer(buf as *const u8, n, &d)?;
    Ok((n, d))
}

fn coll<'a>(sub: usize, cm: &'a CommRef, h: usize) -> Coll<'a> {
    Coll { sub, comm: cm, handle: h }
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

mpi_fn!(MPI_Barrier, PMPI_Barrier, |comm_h: usize| errcomm = comm_h, {
    let (sub, cm) = comm(comm_h)?;
    coll(sub, &cm, comm_h).barrier()
});

mpi_fn!(
    MPI_Bcast,
    PMPI_Bcast,
    |buf: *mut c_void, count: c_int, dt: usize, root: c_int, comm_h: usize| errcomm = comm_h,
    {
        let (sub, cm) = comm(comm_h)?;
        let (n, d) = typed(buf, count, dt)?;
        hd::root(&cm, root)?;
        coll(sub, &cm, comm_h).bcast(&Buf::new(buf as *mut u8, n, d), root)
    }
);

mpi_fn!(
    MPI_Reduce,
    PMPI_Reduce,
    |sbuf: *const c_void, rbuf: *mut c_void, count: c_int, dt: usize, op: usize, root: c_int, comm_h: usize| errcomm = comm_h,
    {
        let (sub, cm) = comm(comm_h)?;
        let (n, d) = typed(sbuf, count, dt)?;
        let o = crate::core::reduce::Reducer::new(op, &d, dt)?;
        hd::root(&cm, root)?;
        if in_place(sbuf) && cm.rank != root {
            return err(c::MPI_ERR_BUFFER, "MPI_IN_PLACE is only valid at the root");
        }
        coll(sub, &cm, comm_h).reduce(sbuf as *const u8, rbuf as *mut u8, n, &d, &o, root)
    }
);

mpi_fn!(
    MPI_Allreduce,
    PMPI_Allreduce,
    |sbuf: *const c_void, rbuf: *mut c_void, count: c_int, dt: usize, op: usize, comm_h: usize| errcomm = comm_h,
    {
        let (sub, cm) = comm(comm_h)?;
        let (n, d) = typed(rbuf, count, dt)?;
        let o = crate::core::reduce::Reducer::new(op, &d, dt)?;
        coll(sub, &cm, comm_h).allreduce(sbuf as *const u8, rbuf as *mut u8, n, &d, &o)
    }
);

mpi_fn!(
    MPI_Gather,
    PMPI_Gather,
    |sbuf: *const c_void, scount: c_int, sdt: usize, rbuf: *mut c_void, rcount: c_int, rdt: usize, root: c_int, comm_h: usize| errcomm =
        comm_h,
    {
        let (sub, cm) = comm(comm_h)?;
        hd::root(&cm, root)?;
        let is_root = cm.rank == root;
        let send = if is_root && in_place(sbuf) {
            None
        } else {
            let (n, d) = typed(sbuf, scount, sdt)?;
            Some(Buf::new(sbuf as *mut u8, n, d))
        };
        let ps = if is_root {
            let (rn, rd) = typed(rbuf, rcount, rdt)?;
            parts(rbuf, &vec![rn as i32; cm.size() as usize], None, rn, &rd)?
        } else {
            Vec::new()
        };
        coll(sub, &cm, comm_h).gatherv(send.as_ref(), &ps, root)
    }
);

mpi_fn!(
    MPI_Gatherv,
    PMPI_Gatherv,
    |sbuf: *const c_void,
     scount: c_int,
     sdt: usize,
     rbuf: *mut c_void,
     rcounts: *const c_int,
     displs: *const c_int,
     rdt: usize,
     root: c_int,
     comm_h: usize| errcomm = comm_h,
    {
        let (sub, cm) = comm(comm_h)?;
        hd::root(&cm, root)?;
        let is_root = cm.rank == root;
        let send = if is_root && in_place(sbuf) {
            None
        } else {
            let (n, d) = typed(sbuf, scount, sdt)?;
            Some(Buf::new(sbuf as *mut u8, n, d))
        };
        let ps = if is_root {
            let rd = hd::dtype(rdt)?;
            let n = cm.size() as usize;
            parts(rbuf, hd::ints(rcounts, n)?, Some(hd::ints(displs, n)?), 0, &rd)?
        } else {
            Vec::new()
        };
        coll(sub, &cm, comm_h).gatherv(send.as_ref(), &ps, root)
    }
);

mpi_fn!(
    MPI_Scatter,
    PMPI_Scatter,
    |sbuf: *const c_void, scount: c_int, sdt: usize, rbuf: *mut c_void, rcount: c_int, rdt: usize, root: c_int, comm_h: usize| errcomm =
        comm_h,
    {
        let (sub, cm) = comm(comm_h)?;
        hd::root(&cm, root)?;
        let is_root = cm.rank == root;
        let recv = if is_root && in_place(rbuf) {
            None
        } else {
            let (n, d) = typed(rbuf, rcount, rdt)?;
            Some(Buf::new(rbuf as *mut u8, n, d))
        };
        let ps = if is_root {
            let (sn, sd) = typed(sbuf, scount, sdt)?;
            parts(sbuf as *mut c_void, &vec![sn as i32; cm.size() as usize], None, sn, &sd)?
        } else {
            Vec::new()
        };
        coll(sub, &cm, comm_h).scatterv(&ps, recv.as_ref(), root)
    }
);

mpi_fn!(
    MPI_Scatterv,
    PMPI_Scatterv,
    |sbuf: *const c_void,
     scounts: *const c_int,
     displs: *const c_int,
     sdt: usize,
     rbuf: *mut c_void,
     rcount: c_int,
     rdt: usize,
     root: c_int,
     comm_h: usize| errcomm = comm_h,
    {
        let (sub, cm) = comm(comm_h)?;
        hd::root(&cm, root)?;
        let is_root = cm.rank == root;
        let recv = if is_root && in_place(rbuf) {
            None
        } else {
            let (n, d) = typed(rbuf, rcount, rdt)?;
            Some(Buf::new(rbuf as *mut u8, n, d))
        };
        let ps = if is_root {
            let sd = hd::dtype(sdt)?;
            let n = cm.size() as usize;
            parts(sbuf as *mut c_void, hd::ints(scounts, n)?, Some(hd::ints(displs, n)?), 0, &sd)?
        } else {
            Vec::new()
        };
        coll(sub, &cm, comm_h).scatterv(&ps, recv.as_ref(), root)
    }
);

mpi_fn!(
    MPI_Allgather,
    PMPI_Allgather,
    |sbuf: *const c_void, scount: c_int, sdt: usize, rbuf: *mut c_void, rcount: c_int, rdt: usize, comm_h: usize| errcomm = comm_h,
    {
        let (sub, cm) = comm(comm_h)?;
        let send = if in_place(sbuf) {
            None
        } else {
            let (n, d) = typed(sbuf, scount, sdt)?;
            Some(Buf::new(sbuf as *mut u8, n, d))
        };
        let (rn, rd) = typed(rbuf, rcount, rdt)?;
        let ps = parts(rbuf, &vec![rn as i32; cm.size() as usize], None, rn, &rd)?;
        coll(sub, &cm, comm_h).allgatherv(send.as_ref(), &ps)
    }
);

mpi_fn!(
    MPI_Allgatherv,
    PMPI_Allgatherv,
    |sbuf: *const c_void,
     scount: c_int,
     sdt: usize,
     rbuf: *mut c_void,
     rcounts: *const c_int,
     displs: *const c_int,
     rdt: usize,
     comm_h: usize| errcomm = comm_h,
    {
        let (sub, cm) = comm(comm_h)?;
        let send = if in_place(sbuf) {
            None
        } else {
            let (n, d) = typed(sbuf, scount, sdt)?;
            Some(Buf::new(sbuf as *mut u8, n, d))
        };
        let rd = hd::dtype(rdt)?;
        let n = cm.size() as usize;
        let ps = parts(rbuf, hd::ints(rcounts, n)?, Some(hd::ints(displs, n)?), 0, &rd)?;
        coll(sub, &cm, comm_h).allgatherv(send.as_ref(), &ps)
    }
);

/// With MPI_IN_PLACE the send data is the receive buffer: copy it first.
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

mpi_fn!(
    MPI_Alltoall,
    PMPI_Alltoall,
    |sbuf: *const c_void, scount: c_int, sdt: usize, rbuf: *mut c_void, rcount: c_int, rdt: usize, comm_h: usize| errcomm = comm_h,
    {
        let (sub, cm) = comm(comm_h)?;
        let n = cm.size() as usize;
        let (rn, rd) = typed(rbuf, rcount, rdt)?;
        let rps = parts(rbuf, &vec![rn as i32; n], None, rn, &rd)?;
        if in_place(sbuf) {
            let (_keep, sps) = snapshot(&rps);
            return coll(sub, &cm, comm_h).alltoallv(&sps, &rps);
        }
        let (sn, sd) = typed(sbuf, scount, sdt)?;
        let sps = parts(sbuf as *mut c_void, &vec![sn as i32; n], None, sn, &sd)?;
        coll(sub, &cm, comm_h).alltoallv(&sps, &rps)
    }
);

mpi_fn!(
    MPI_Alltoallv,
    PMPI_Alltoallv,
    |sbuf: *const c_void,
     scounts: *const c_int,
     sdispls: *const c_int,
     sdt: usize,
     rbuf: *mut c_void,
     rcounts: *const c_int,
     rdispls: *const c_int,
     rdt: usize,
     comm_h: usize| errcomm = comm_h,
    {
        let (sub, cm) = comm(comm_h)?;
        let n = cm.size() as usize;
        let rd = hd::dtype(rdt)?;
        let rps = parts(rbuf, hd::ints(rcounts, n)?, Some(hd::ints(rdispls, n)?), 0, &rd)?;
        if in_place(sbuf) {
            let (_keep, sps) = snapshot(&rps);
            return coll(sub, &cm, comm_h).alltoallv(&sps, &rps);
        }
        let sd = hd::dtype(sdt)?;
        let sps = parts(sbuf as *mut c_void, hd::ints(scounts, n)?, Some(hd::ints(sdispls, n)?), 0, &sd)?;
        coll(sub, &cm, comm_h).alltoallv(&sps, &rps)
    }
);

mpi_fn!(
    MPI_Reduce_scatter_block,
    PMPI_Reduce_scatter_block,
    |sbuf: *const c_void, rbuf: *mut c_void, rcount: c_int, dt: usize, op: usize, comm_h: usize| errcomm = comm_h,
    {
        let (sub, cm) = comm(comm_h)?;
        let (n, d) = typed(rbuf, rcount, dt)?;
        let o = crate::core::reduce::Reducer::new(op, &d, dt)?;
        let counts = vec![n; cm.size() as usize];
        coll(sub, &cm, comm_h).reduce_scatter(sbuf as *const u8, rbuf as *mut u8, &counts, &d, &o)
    }
);

mpi_fn!(
    MPI_Reduce_scatter,
    PMPI_Reduce_scatter,
    |sbuf: *const c_void, rbuf: *mut c_void, rcounts: *const c_int, dt: usize, op: usize, comm_h: usize| errcomm = comm_h,
    {
        let (sub, cm) = comm(comm_h)?;
        let d = hd::dtype(dt)?;
        let o = crate::core::reduce::Reducer::new(op, &d, dt)?;
        let counts: Vec<usize> = hd::ints(rcounts, cm.size() as usize)?
            .iter()
            .map(|&k| hd::count(k as i64))
            .collect::<MpiResult<_>>()?;
        coll(sub, &cm, comm_h).reduce_scatter(sbuf as *const u8, rbuf as *mut u8, &counts, &d, &o)
    }
);

mpi_fn!(
    MPI_Scan,
    PMPI_Scan,
    |sbuf: *const c_void, rbuf: *mut c_void, count: c_int, dt: usize, op: usize, comm_h: usize| errcomm = comm_h,
    {
        let (sub, cm) = comm(comm_h)?;
        let (n, d) = typed(rbuf, count, dt)?;
        let o = crate::core::reduce::Reducer::new(op, &d, dt)?;
        coll(sub, &cm, comm_h).scan(sbuf as *const u8, rbuf as *mut u8, n, &d, &o, false)
    }
);

mpi_fn!(
    MPI_Exscan,
    PMPI_Exscan,
    |sbuf: *const c_void, rbuf: *mut c_void, count: c_int, dt: usize, op: usize, comm_h: usize| errcomm = comm_h,
    {
        let (sub, cm) = comm(comm_h)?;
        let (n, d) = typed(rbuf, count, dt)?;
        let o = crate::core::reduce::Reducer::new(op, &d, dt)?;
        coll(sub, &cm, comm_h).scan(sbuf as *const u8, rbuf as *mut u8, n, &d, &o, true)
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
        *flag = k as c_int;
        Ok(())
    }
);

mpi_fn!(
    MPI_Reduce_local,
    PMPI_Reduce_local,
    |inbuf: *const c_void, inout: *mut c_void, count: c_int, dt: usize, op: usize| errcomm = c::MPI_COMM_WORLD,
    {
        let (n, d) = typed(inbuf, count, dt)?;
        let red = crate::core::reduce::Reducer::new(op, &d, dt)?;
        let a = red.load(inbuf as *const u8, n, &d);
        let mut b = red.load(inout as *const u8, n, &d);
        red.apply(&a, &mut b, n, &d);
        red.store(&b, inout as *mut u8, n, &d);
        Ok(())
    }
);
