//! Datatype exports (MPI chapter 5): derived datatype constructors and their large-count
//! (`_c`) forms, commit/free/dup, size and extent queries, envelope/contents decoding, names,
//! `MPI_Type_match_size`, pack/unpack and address arithmetic. The typemap math lives in
//! `core::datatype::typemap`, handles and layouts in `core::datatype`.
//!
//! Errors go to `MPI_COMM_WORLD`'s handler, as MPICH does (MPI-4 says `MPI_COMM_SELF`), except
//! for the pack calls, which take a communicator.

use super::consts as c;
use super::handles as hd;
use crate::core::datatype::typemap::{self as tm, Distrib, Order};
use crate::core::datatype::{self as dt, Contents, Datatype, DtRef};
use crate::core::error::{err, MpiError, MpiResult};
use std::os::raw::{c_char, c_int, c_void};
use std::sync::Arc;

const WORLD: usize = c::MPI_COMM_WORLD;

/// Integers that arrive from C as counts and displacements.
trait Num: Copy {
    fn get(self) -> i64;
}
impl Num for i32 {
    fn get(self) -> i64 {
        self as i64
    }
}
impl Num for i64 {
    fn get(self) -> i64 {
        self
    }
}
impl Num for isize {
    fn get(self) -> i64 {
        self as i64
    }
}

/// Reads a C array of `n` values.
///
/// # Safety
/// `p` must point to `n` values (or be null with n = 0).
unsafe fn array<'a, T>(p: *const T, n: usize, what: &str) -> MpiResult<&'a [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return err(c::MPI_ERR_ARG, format!("null {what} array"));
    }
    Ok(std::slice::from_raw_parts(p, n))
}

/// Non-negative counts (block lengths), else `MPI_ERR_COUNT`.
fn counts<T: Num>(v: &[T]) -> MpiResult<Vec<usize>> {
    v.iter().map(|x| hd::count(x.get())).collect()
}

fn too_large() -> MpiError {
    MpiError::new(c::MPI_ERR_ARG, "displacement overflows MPI_Aint")
}

/// Displacements in units of `unit` bytes, as byte offsets.
fn scaled<T: Num>(v: &[T], unit: isize) -> MpiResult<Vec<isize>> {
    v.iter()
        .map(|x| (x.get() as isize).checked_mul(unit).ok_or_else(too_large))
        .collect()
}

/// Stores one output value.
///
/// # Safety
/// `p` must be null or valid for a write.
unsafe fn put<T>(p: *mut T, v: T) -> MpiResult<()> {
    if p.is_null() {
        return err(c::MPI_ERR_ARG, "null output argument");
    }
    *p = v;
    Ok(())
}

fn contents(combiner: i32, ints: Vec<i32>, aints: Vec<isize>, counts: Vec<i64>, types: Vec<DtRef>) -> Contents {
    Contents {
        combiner,
        ints,
        aints,
        counts,
        types,
    }
}

/// Registers a new derived type built by `f` and stores its handle in `newtype`.
///
/// # Safety
/// `newtype` must be null or valid for a write.
unsafe fn create(newtype: *mut usize, f: impl FnOnce() -> MpiResult<(Datatype, Contents)>) -> MpiResult<()> {
    if newtype.is_null() {
        return err(c::MPI_ERR_ARG, "null newtype argument");
    }
    let (mut d, k) = f()?;
    d.contents = Some(Arc::new(k));
    *newtype = dt::register(Arc::new(d))?;
    Ok(())
}

// ---- shared constructor bodies (int and large-count forms) ----

fn contiguous(count: i64, oldtype: usize) -> MpiResult<(Datatype, DtRef)> {
    let n = hd::count(count)?;
    let o = dt::lookup(oldtype)?;
    Ok((tm::contiguous(n, &o)?, o))
}

/// Vector with `stride` in elements of `oldtype`, or in bytes with `bytes`.
fn vector(count: i64, blocklen: i64, stride: i64, bytes: bool, oldtype: usize) -> MpiResult<(Datatype, DtRef)> {
    let (n, b) = (hd::count(count)?, hd::count(blocklen)?);
    let o = dt::lookup(oldtype)?;
    let unit = if bytes { 1 } else { o.extent };
    let s = (stride as isize).checked_mul(unit).ok_or_else(too_large)?;
    Ok((tm::hvector(n, b, s, &o)?, o))
}

/// Indexed types: `disps` in elements of `oldtype`, or in bytes with `bytes`.
fn indexed<B: Num, D: Num>(blocklens: &[B], disps: &[D], bytes: bool, oldtype: usize) -> MpiResult<(Datatype, DtRef)> {
    let bl = counts(blocklens)?;
    let o = dt::lookup(oldtype)?;
    let ds = scaled(disps, if bytes { 1 } else { o.extent })?;
    Ok((tm::hindexed(&bl, &ds, &o)?, o))
}

fn structure<B: Num, D: Num>(blocklens: &[B], disps: &[D], types: &[usize]) -> MpiResult<(Datatype, Vec<DtRef>)> {
    let bl = counts(blocklens)?;
    let ds = scaled(disps, 1)?;
    let ts = types.iter().map(|&h| dt::lookup(h)).collect::<MpiResult<Vec<DtRef>>>()?;
    let refs: Vec<&Datatype> = ts.iter().map(|t| &**t).collect();
    Ok((tm::structure(&bl, &ds, &refs)?, ts))
}

fn nonneg<T: Num>(v: &[T], what: &str, positive: bool) -> MpiResult<Vec<usize>> {
    v.iter()
        .map(|x| match x.get() {
            n if n > 0 || (n == 0 && !positive) => Ok(n as usize),
            n => err(c::MPI_ERR_ARG, format!("invalid {what} {n}")),
        })
        .collect()
}

fn dims(ndims: c_int) -> MpiResult<usize> {
    if ndims <= 0 {
        return err(c::MPI_ERR_ARG, format!("invalid number of dimensions {ndims}"));
    }
    Ok(ndims as usize)
}

fn subarray<T: Num>(sizes: &[T], subsizes: &[T], starts: &[T], order: c_int, oldtype: usize) -> MpiResult<(Datatype, DtRef)> {
    let o = dt::lookup(oldtype)?;
    let order = Order::from_abi(order)?;
    let sz = nonneg(sizes, "array size", true)?;
    let sub = nonneg(subsizes, "subarray size", false)?;
    let st = nonneg(starts, "subarray start", false)?;
    Ok((tm::subarray(&sz, &sub, &st, order, &o)?, o))
}

#[allow(clippy::too_many_arguments)]
fn darray<T: Num>(
    size: c_int,
    rank: c_int,
    gsizes: &[T],
    distribs: &[c_int],
    dargs: &[c_int],
    psizes: &[c_int],
    order: c_int,
    oldtype: usize,
) -> MpiResult<(Datatype, DtRef)> {
    let o = dt::lookup(oldtype)?;
    if size <= 0 {
        return err(c::MPI_ERR_ARG, format!("invalid process group size {size}"));
    }
    if rank < 0 || rank >= size {
        return err(c::MPI_ERR_RANK, format!("invalid rank {rank} (group size {size})"));
    }
    let order = Order::from_abi(order)?;
    let gs = nonneg(gsizes, "global array size", true)?;
    let ps = nonneg(psizes, "process grid size", true)?;
    let ds = distribs
        .iter()
        .zip(dargs)
        .map(|(&d, &a)| Distrib::from_abi(d, a))
        .collect::<MpiResult<Vec<Distrib>>>()?;
    Ok((tm::darray(size as usize, rank as usize, &gs, &ds, &ps, order, &o)?, o))
}

fn resized(oldtype: usize, lb: i64, extent: i64) -> MpiResult<(Datatype, DtRef)> {
    let o = dt::lookup(oldtype)?;
    Ok((tm::resized(&o, lb as isize, extent as isize)?, o))
}

// ---- constructors ----

mpi_fn!(
    MPI_Type_contiguous,
    PMPI_Type_contiguous,
    |count: c_int, oldtype: usize, newtype: *mut usize| errcomm = WORLD,
    {
        create(newtype, || {
            let (d, o) = contiguous(count as i64, oldtype)?;
            Ok((d, contents(c::MPI_COMBINER_CONTIGUOUS, vec![count], vec![], vec![], vec![o])))
        })
    }
);

mpi_fn!(
    MPI_Type_contiguous_c,
    PMPI_Type_contiguous_c,
    |count: i64, oldtype: usize, newtype: *mut usize| errcomm = WORLD,
    {
        create(newtype, || {
            let (d, o) = contiguous(count, oldtype)?;
            Ok((d, contents(c::MPI_COMBINER_CONTIGUOUS, vec![], vec![], vec![count], vec![o])))
        })
    }
);

mpi_fn!(
    MPI_Type_vector,
    PMPI_Type_vector,
    |count: c_int, blocklength: c_int, stride: c_int, oldtype: usize, newtype: *mut usize| errcomm = WORLD,
    {
        create(newtype, || {
            let (d, o) = vector(count as i64, blocklength as i64, stride as i64, false, oldtype)?;
            let k = contents(c::MPI_COMBINER_VECTOR, vec![count, blocklength, stride], vec![], vec![], vec![o]);
            Ok((d, k))
        })
    }
);

mpi_fn!(
    MPI_Type_vector_c,
    PMPI_Type_vector_c,
    |count: i64, blocklength: i64, stride: i64, oldtype: usize, newtype: *mut usize| errcomm = WORLD,
    {
        create(newtype, || {
            let (d, o) = vector(count, blocklength, stride, false, oldtype)?;
            let k = contents(c::MPI_COMBINER_VECTOR, vec![], vec![], vec![count, blocklength, stride], vec![o]);
            Ok((d, k))
        })
    }
);

mpi_fn!(
    MPI_Type_create_hvector,
    PMPI_Type_create_hvector,
    |count: c_int, blocklength: c_int, stride: isize, oldtype: usize, newtype: *mut usize| errcomm = WORLD,
    {
        create(newtype, || {
            let (d, o) = vector(count as i64, blocklength as i64, stride as i64, true, oldtype)?;
            let k = contents(c::MPI_COMBINER_HVECTOR, vec![count, blocklength], vec![stride], vec![], vec![o]);
            Ok((d, k))
        })
    }
);

mpi_fn!(
    MPI_Type_create_hvector_c,
    PMPI_Type_create_hvector_c,
    |count: i64, blocklength: i64, stride: i64, oldtype: usize, newtype: *mut usize| errcomm = WORLD,
    {
        create(newtype, || {
            let (d, o) = vector(count, blocklength, stride, true, oldtype)?;
            let k = contents(c::MPI_COMBINER_HVECTOR, vec![], vec![], vec![count, blocklength, stride], vec![o]);
            Ok((d, k))
        })
    }
);

mpi_fn!(
    MPI_Type_indexed,
    PMPI_Type_indexed,
    |count: c_int, blocklens: *const c_int, disps: *const c_int, oldtype: usize, newtype: *mut usize| errcomm = WORLD,
    {
        create(newtype, || {
            let n = hd::count(count as i64)?;
            let (bl, ds) = (array(blocklens, n, "blocklength")?, array(disps, n, "displacement")?);
            let (d, o) = indexed(bl, ds, false, oldtype)?;
            let k = contents(c::MPI_COMBINER_INDEXED, [&[count], bl, ds].concat(), vec![], vec![], vec![o]);
            Ok((d, k))
        })
    }
);

mpi_fn!(
    MPI_Type_indexed_c,
    PMPI_Type_indexed_c,
    |count: i64, blocklens: *const i64, disps: *const i64, oldtype: usize, newtype: *mut usize| errcomm = WORLD,
    {
        create(newtype, || {
            let n = hd::count(count)?;
            let (bl, ds) = (array(blocklens, n, "blocklength")?, array(disps, n, "displacement")?);
            let (d, o) = indexed(bl, ds, false, oldtype)?;
            let k = contents(c::MPI_COMBINER_INDEXED, vec![], vec![], [&[count], bl, ds].concat(), vec![o]);
            Ok((d, k))
        })
    }
);

mpi_fn!(
    MPI_Type_create_hindexed,
    PMPI_Type_create_hindexed,
    |count: c_int, blocklens: *const c_int, disps: *const isize, oldtype: usize, newtype: *mut usize| errcomm = WORLD,
    {
        create(newtype, || {
            let n = hd::count(count as i64)?;
            let (bl, ds) = (array(blocklens, n, "blocklength")?, array(disps, n, "displacement")?);
            let (d, o) = indexed(bl, ds, true, oldtype)?;
            let k = contents(c::MPI_COMBINER_HINDEXED, [&[count], bl].concat(), ds.to_vec(), vec![], vec![o]);
            Ok((d, k))
        })
    }
);

mpi_fn!(
    MPI_Type_create_hindexed_c,
    PMPI_Type_create_hindexed_c,
    |count: i64, blocklens: *const i64, disps: *const i64, oldtype: usize, newtype: *mut usize| errcomm = WORLD,
    {
        create(newtype, || {
            let n = hd::count(count)?;
            let (bl, ds) = (array(blocklens, n, "blocklength")?, array(disps, n, "displacement")?);
            let (d, o) = indexed(bl, ds, true, oldtype)?;
            let k = contents(c::MPI_COMBINER_HINDEXED, vec![], vec![], [&[count], bl, ds].concat(), vec![o]);
            Ok((d, k))
        })
    }
);

mpi_fn!(
    MPI_Type_create_indexed_block,
    PMPI_Type_create_indexed_block,
    |count: c_int, blocklength: c_int, disps: *const c_int, oldtype: usize, newtype: *mut usize| errcomm = WORLD,
    {
        create(newtype, || {
            let n = hd::count(count as i64)?;
            let ds = array(disps, n, "displacement")?;
            let (d, o) = indexed(&vec![blocklength; n], ds, false, oldtype)?;
            let k = contents(
                c::MPI_COMBINER_INDEXED_BLOCK,
                [&[count, blocklength], ds].concat(),
                vec![],
                vec![],
                vec![o],
            );
            Ok((d, k))
        })
    }
);

mpi_fn!(
    MPI_Type_create_indexed_block_c,
    PMPI_Type_create_indexed_block_c,
    |count: i64, blocklength: i64, disps: *const i64, oldtype: usize, newtype: *mut usize| errcomm = WORLD,
    {
        create(newtype, || {
            let n = hd::count(count)?;
            let ds = array(disps, n, "displacement")?;
            let (d, o) = indexed(&vec![blocklength; n], ds, false, oldtype)?;
            let k = contents(
                c::MPI_COMBINER_INDEXED_BLOCK,
                vec![],
                vec![],
                [&[count, blocklength], ds].concat(),
                vec![o],
            );
            Ok((d, k))
        })
    }
);

mpi_fn!(
    MPI_Type_create_hindexed_block,
    PMPI_Type_create_hindexed_block,
    |count: c_int, blocklength: c_int, disps: *const isize, oldtype: usize, newtype: *mut usize| errcomm = WORLD,
    {
        create(newtype, || {
            let n = hd::count(count as i64)?;
            let ds = array(disps, n, "displacement")?;
            let (d, o) = indexed(&vec![blocklength; n], ds, true, oldtype)?;
            let k = contents(
                c::MPI_COMBINER_HINDEXED_BLOCK,
                vec![count, blocklength],
                ds.to_vec(),
                vec![],
                vec![o],
            );
            Ok((d, k))
        })
    }
);

mpi_fn!(
    MPI_Type_create_hindexed_block_c,
    PMPI_Type_create_hindexed_block_c,
    |count: i64, blocklength: i64, disps: *const i64, oldtype: usize, newtype: *mut usize| errcomm = WORLD,
    {
        create(newtype, || {
            let n = hd::count(count)?;
            let ds = array(disps, n, "displacement")?;
            let (d, o) = indexed(&vec![blocklength; n], ds, true, oldtype)?;
            let k = contents(
                c::MPI_COMBINER_HINDEXED_BLOCK,
                vec![],
                vec![],
                [&[count, blocklength], ds].concat(),
                vec![o],
            );
            Ok((d, k))
        })
    }
);

mpi_fn!(
    MPI_Type_create_struct,
    PMPI_Type_create_struct,
    |count: c_int, blocklens: *const c_int, disps: *const isize, types: *const usize, newtype: *mut usize| errcomm = WORLD,
    {
        create(newtype, || {
            let n = hd::count(count as i64)?;
            let (bl, ds) = (array(blocklens, n, "blocklength")?, array(disps, n, "displacement")?);
            let (d, ts) = structure(bl, ds, array(types, n, "datatype")?)?;
            let k = contents(c::MPI_COMBINER_STRUCT, [&[count], bl].concat(), ds.to_vec(), vec![], ts);
            Ok((d, k))
        })
    }
);

mpi_fn!(
    MPI_Type_create_struct_c,
    PMPI_Type_create_struct_c,
    |count: i64, blocklens: *const i64, disps: *const i64, types: *const usize, newtype: *mut usize| errcomm = WORLD,
    {
        create(newtype, || {
            let n = hd::count(count)?;
            let (bl, ds) = (array(blocklens, n, "blocklength")?, array(disps, n, "displacement")?);
            let (d, ts) = structure(bl, ds, array(types, n, "datatype")?)?;
            let k = contents(c::MPI_COMBINER_STRUCT, vec![], vec![], [&[count], bl, ds].concat(), ts);
            Ok((d, k))
        })
    }
);

mpi_fn!(
    MPI_Type_create_subarray,
    PMPI_Type_create_subarray,
    |ndims: c_int, sizes: *const c_int, subs: *const c_int, starts: *const c_int, ord: c_int, old: usize, new: *mut usize| errcomm = WORLD,
    {
        create(new, || {
            let n = dims(ndims)?;
            let (sz, sub, st) = (array(sizes, n, "sizes")?, array(subs, n, "subs")?, array(starts, n, "starts")?);
            let (d, o) = subarray(sz, sub, st, ord, old)?;
            let k = contents(
                c::MPI_COMBINER_SUBARRAY,
                [&[ndims], sz, sub, st, &[ord]].concat(),
                vec![],
                vec![],
                vec![o],
            );
            Ok((d, k))
        })
    }
);

mpi_fn!(
    MPI_Type_create_subarray_c,
    PMPI_Type_create_subarray_c,
    |ndims: c_int, sizes: *const i64, subs: *const i64, starts: *const i64, order: c_int, old: usize, new: *mut usize| errcomm = WORLD,
    {
        create(new, || {
            let n = dims(ndims)?;
            let (sz, sub, st) = (array(sizes, n, "sizes")?, array(subs, n, "subs")?, array(starts, n, "starts")?);
            let (d, o) = subarray(sz, sub, st, order, old)?;
            let k = contents(
                c::MPI_COMBINER_SUBARRAY,
                vec![ndims, order],
                vec![],
                [sz, sub, st].concat(),
                vec![o],
            );
            Ok((d, k))
        })
    }
);

mpi_fn!(
    MPI_Type_create_darray,
    PMPI_Type_create_darray,
    |size: c_int,
     rank: c_int,
     ndims: c_int,
     gsizes: *const c_int,
     distribs: *const c_int,
     dargs: *const c_int,
     psizes: *const c_int,
     order: c_int,
     oldtype: usize,
     newtype: *mut usize| errcomm = WORLD,
    {
        create(newtype, || {
            let n = dims(ndims)?;
            let gs = array(gsizes, n, "gsizes")?;
            let (di, da, ps) = (
                array(distribs, n, "distribs")?,
                array(dargs, n, "dargs")?,
                array(psizes, n, "psizes")?,
            );
            let (d, o) = darray(size, rank, gs, di, da, ps, order, oldtype)?;
            let ints = [&[size, rank, ndims], gs, di, da, ps, &[order]].concat();
            Ok((d, contents(c::MPI_COMBINER_DARRAY, ints, vec![], vec![], vec![o])))
        })
    }
);

mpi_fn!(
    MPI_Type_create_darray_c,
    PMPI_Type_create_darray_c,
    |size: c_int,
     rank: c_int,
     ndims: c_int,
     gsizes: *const i64,
     distribs: *const c_int,
     dargs: *const c_int,
     psizes: *const c_int,
     order: c_int,
     oldtype: usize,
     newtype: *mut usize| errcomm = WORLD,
    {
        create(newtype, || {
            let n = dims(ndims)?;
            let gs = array(gsizes, n, "gsizes")?;
            let (di, da, ps) = (
                array(distribs, n, "distribs")?,
                array(dargs, n, "dargs")?,
                array(psizes, n, "psizes")?,
            );
            let (d, o) = darray(size, rank, gs, di, da, ps, order, oldtype)?;
            let ints = [&[size, rank, ndims], di, da, ps, &[order]].concat();
            Ok((d, contents(c::MPI_COMBINER_DARRAY, ints, vec![], gs.to_vec(), vec![o])))
        })
    }
);

mpi_fn!(
    MPI_Type_create_resized,
    PMPI_Type_create_resized,
    |oldtype: usize, lb: isize, extent: isize, newtype: *mut usize| errcomm = WORLD,
    {
        create(newtype, || {
            let (d, o) = resized(oldtype, lb as i64, extent as i64)?;
            Ok((d, contents(c::MPI_COMBINER_RESIZED, vec![], vec![lb, extent], vec![], vec![o])))
        })
    }
);

mpi_fn!(
    MPI_Type_create_resized_c,
    PMPI_Type_create_resized_c,
    |oldtype: usize, lb: i64, extent: i64, newtype: *mut usize| errcomm = WORLD,
    {
        create(newtype, || {
            let (d, o) = resized(oldtype, lb, extent)?;
            Ok((d, contents(c::MPI_COMBINER_RESIZED, vec![], vec![], vec![lb, extent], vec![o])))
        })
    }
);

mpi_fn!(
    MPI_Type_dup,
    PMPI_Type_dup,
    |oldtype: usize, newtype: *mut usize| errcomm = WORLD,
    {
        create(newtype, || {
            let o = dt::lookup(oldtype)?;
            let d = Datatype {
                committed: o.committed,
                ..o.derived_copy()
            };
            Ok((d, contents(c::MPI_COMBINER_DUP, vec![], vec![], vec![], vec![o])))
        })?;
        // A failing copy callback leaves no new type (MPI_DATATYPE_NULL comes back).
        super::attr::dup_type(oldtype, *newtype).inspect_err(|_| *newtype = c::MPI_DATATYPE_NULL)
    }
);

mpi_fn!(
    MPI_Type_get_value_index,
    PMPI_Type_get_value_index,
    |value_type: usize, index_type: usize, pair_type: *mut usize| errcomm = WORLD,
    {
        dt::lookup(value_type)?;
        dt::lookup(index_type)?;
        put(pair_type, dt::value_index(value_type, index_type))
    }
);

// ---- commit, free, names ----

mpi_fn!(MPI_Type_commit, PMPI_Type_commit, |datatype: *mut usize| errcomm = WORLD, {
    if datatype.is_null() {
        return err(c::MPI_ERR_ARG, "null datatype argument");
    }
    dt::commit(*datatype)
});

mpi_fn!(MPI_Type_free, PMPI_Type_free, |datatype: *mut usize| errcomm = WORLD, {
    if datatype.is_null() {
        return err(c::MPI_ERR_ARG, "null datatype argument");
    }
    super::attr::free_type(*datatype)?;
    dt::free(*datatype)?;
    *datatype = c::MPI_DATATYPE_NULL;
    Ok(())
});

mpi_fn!(
    MPI_Type_set_name,
    PMPI_Type_set_name,
    |datatype: usize, type_name: *const c_char| errcomm = WORLD,
    {
        if type_name.is_null() {
            return err(c::MPI_ERR_ARG, "null name");
        }
        let s = std::ffi::CStr::from_ptr(type_name).to_string_lossy();
        let mut end = s.len().min(c::MPI_MAX_OBJECT_NAME as usize - 1);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        dt::set_name(datatype, &s[..end])
    }
);

mpi_fn!(
    MPI_Type_get_name,
    PMPI_Type_get_name,
    |datatype: usize, type_name: *mut c_char, resultlen: *mut c_int| errcomm = WORLD,
    {
        let name = dt::get_name(datatype)?;
        if type_name.is_null() || resultlen.is_null() {
            return err(c::MPI_ERR_ARG, "null output argument");
        }
        let b = name.as_bytes();
        let n = b.len().min(c::MPI_MAX_OBJECT_NAME as usize - 1);
        std::ptr::copy_nonoverlapping(b.as_ptr() as *const c_char, type_name, n);
        *type_name.add(n) = 0;
        *resultlen = n as c_int;
        Ok(())
    }
);

mpi_fn!(
    MPI_Type_match_size,
    PMPI_Type_match_size,
    |typeclass: c_int, size: c_int, datatype: *mut usize| errcomm = WORLD,
    { put(datatype, dt::match_size(typeclass, size)?) }
);

// ---- size and extent ----

mpi_fn!(
    MPI_Type_size,
    PMPI_Type_size,
    |datatype: usize, size: *mut c_int| errcomm = WORLD,
    {
        let d = dt::lookup(datatype)?;
        put(size, c_int::try_from(d.size).unwrap_or(c::MPI_UNDEFINED))
    }
);

mpi_fn!(
    MPI_Type_size_x,
    PMPI_Type_size_x,
    |datatype: usize, size: *mut i64| errcomm = WORLD,
    { put(size, dt::lookup(datatype)?.size as i64) }
);

mpi_fn!(
    MPI_Type_size_c,
    PMPI_Type_size_c,
    |datatype: usize, size: *mut i64| errcomm = WORLD,
    { put(size, dt::lookup(datatype)?.size as i64) }
);

/// Stores a pair of bounds.
///
/// # Safety
/// The pointers must be null or valid for writes.
unsafe fn put2<T>(a: *mut T, b: *mut T, x: T, y: T) -> MpiResult<()> {
    if a.is_null() || b.is_null() {
        return err(c::MPI_ERR_ARG, "null output argument");
    }
    *a = x;
    *b = y;
    Ok(())
}

mpi_fn!(
    MPI_Type_get_extent,
    PMPI_Type_get_extent,
    |datatype: usize, lb: *mut isize, extent: *mut isize| errcomm = WORLD,
    {
        let d = dt::lookup(datatype)?;
        put2(lb, extent, d.lb, d.extent)
    }
);

mpi_fn!(
    MPI_Type_get_extent_x,
    PMPI_Type_get_extent_x,
    |datatype: usize, lb: *mut i64, extent: *mut i64| errcomm = WORLD,
    {
        let d = dt::lookup(datatype)?;
        put2(lb, extent, d.lb as i64, d.extent as i64)
    }
);

mpi_fn!(
    MPI_Type_get_extent_c,
    PMPI_Type_get_extent_c,
    |datatype: usize, lb: *mut i64, extent: *mut i64| errcomm = WORLD,
    {
        let d = dt::lookup(datatype)?;
        put2(lb, extent, d.lb as i64, d.extent as i64)
    }
);

mpi_fn!(
    MPI_Type_get_true_extent,
    PMPI_Type_get_true_extent,
    |datatype: usize, true_lb: *mut isize, true_extent: *mut isize| errcomm = WORLD,
    {
        let d = dt::lookup(datatype)?;
        put2(true_lb, true_extent, d.true_lb, d.true_extent)
    }
);

mpi_fn!(
    MPI_Type_get_true_extent_x,
    PMPI_Type_get_true_extent_x,
    |datatype: usize, true_lb: *mut i64, true_extent: *mut i64| errcomm = WORLD,
    {
        let d = dt::lookup(datatype)?;
        put2(true_lb, true_extent, d.true_lb as i64, d.true_extent as i64)
    }
);

mpi_fn!(
    MPI_Type_get_true_extent_c,
    PMPI_Type_get_true_extent_c,
    |datatype: usize, true_lb: *mut i64, true_extent: *mut i64| errcomm = WORLD,
    {
        let d = dt::lookup(datatype)?;
        put2(true_lb, true_extent, d.true_lb as i64, d.true_extent as i64)
    }
);

// ---- decoding ----

/// The contents of a derived type (`MPI_ERR_TYPE` for a predefined one).
fn decoded(datatype: usize) -> MpiResult<Arc<Contents>> {
    let d = dt::lookup(datatype)?;
    d.contents
        .clone()
        .ok_or_else(|| MpiError::new(c::MPI_ERR_TYPE, "MPI_Type_get_contents on a predefined datatype"))
}

/// A handle for each constructor argument type: predefined types are themselves, derived ones
/// get new handles the caller must free (MPI 5.1.13).
///
/// # Safety
/// `out` must have room for `types.len()` handles.
unsafe fn type_handles(types: &[DtRef], out: *mut usize) -> MpiResult<()> {
    for (i, t) in types.iter().enumerate() {
        let h = match t.predefined_handle() {
            Some(h) => h,
            None => dt::register(t.clone())?,
        };
        *out.add(i) = h;
    }
    Ok(())
}

/// Copies `v` to `out` after checking it fits in `max`.
///
/// # Safety
/// `out` must have room for `max` values.
unsafe fn copy_out<T: Copy>(v: &[T], out: *mut T, max: i64, what: &str) -> MpiResult<()> {
    if (max as i128) < v.len() as i128 {
        return err(
            c::MPI_ERR_ARG,
            format!("{what} array too small: {} entries needed, {max} given", v.len()),
        );
    }
    if !v.is_empty() {
        if out.is_null() {
            return err(c::MPI_ERR_ARG, format!("null {what} array"));
        }
        std::ptr::copy_nonoverlapping(v.as_ptr(), out, v.len());
    }
    Ok(())
}

fn no_large(k: &Contents) -> MpiResult<()> {
    if k.counts.is_empty() {
        Ok(())
    } else {
        err(
            c::MPI_ERR_TYPE,
            "datatype was made by a large-count constructor: use MPI_Type_get_envelope_c/MPI_Type_get_contents_c",
        )
    }
}

mpi_fn!(
    MPI_Type_get_envelope,
    PMPI_Type_get_envelope,
    |datatype: usize, ni: *mut c_int, na: *mut c_int, nd: *mut c_int, combiner: *mut c_int| errcomm = WORLD,
    {
        let d = dt::lookup(datatype)?;
        if ni.is_null() || na.is_null() || nd.is_null() || combiner.is_null() {
            return err(c::MPI_ERR_ARG, "null output argument");
        }
        let (i, a, t) = match &d.contents {
            None => (0, 0, 0),
            Some(k) => {
                no_large(k)?;
                (k.ints.len(), k.aints.len(), k.types.len())
            }
        };
        (*ni, *na, *nd) = (i as c_int, a as c_int, t as c_int);
        *combiner = d.combiner();
        Ok(())
    }
);

mpi_fn!(
    MPI_Type_get_envelope_c,
    PMPI_Type_get_envelope_c,
    |datatype: usize,
     num_integers: *mut i64,
     num_addresses: *mut i64,
     num_large_counts: *mut i64,
     num_datatypes: *mut i64,
     combiner: *mut c_int| errcomm = WORLD,
    {
        let d = dt::lookup(datatype)?;
        if num_integers.is_null() || num_addresses.is_null() || num_large_counts.is_null() || num_datatypes.is_null() || combiner.is_null()
        {
            return err(c::MPI_ERR_ARG, "null output argument");
        }
        let (ni, na, nc, nd) = match &d.contents {
            None => (0, 0, 0, 0),
            Some(k) => (k.ints.len(), k.aints.len(), k.counts.len(), k.types.len()),
        };
        *num_integers = ni as i64;
        *num_addresses = na as i64;
        *num_large_counts = nc as i64;
        *num_datatypes = nd as i64;
        *combiner = d.combiner();
        Ok(())
    }
);

mpi_fn!(
    MPI_Type_get_contents,
    PMPI_Type_get_contents,
    |datatype: usize,
     max_integers: c_int,
     max_addresses: c_int,
     max_datatypes: c_int,
     array_of_integers: *mut c_int,
     array_of_addresses: *mut isize,
     array_of_datatypes: *mut usize| errcomm = WORLD,
    {
        let k = decoded(datatype)?;
        no_large(&k)?;
        copy_out(&k.ints, array_of_integers, max_integers as i64, "integers")?;
        copy_out(&k.aints, array_of_addresses, max_addresses as i64, "addresses")?;
        copy_out(&vec![0usize; k.types.len()], array_of_datatypes, max_datatypes as i64, "datatypes")?;
        type_handles(&k.types, array_of_datatypes)
    }
);

mpi_fn!(
    MPI_Type_get_contents_c,
    PMPI_Type_get_contents_c,
    |datatype: usize,
     max_integers: i64,
     max_addresses: i64,
     max_large_counts: i64,
     max_datatypes: i64,
     array_of_integers: *mut c_int,
     array_of_addresses: *mut isize,
     array_of_large_counts: *mut i64,
     array_of_datatypes: *mut usize| errcomm = WORLD,
    {
        let k = decoded(datatype)?;
        copy_out(&k.ints, array_of_integers, max_integers, "integers")?;
        copy_out(&k.aints, array_of_addresses, max_addresses, "addresses")?;
        copy_out(&k.counts, array_of_large_counts, max_large_counts, "large counts")?;
        copy_out(&vec![0usize; k.types.len()], array_of_datatypes, max_datatypes, "datatypes")?;
        type_handles(&k.types, array_of_datatypes)
    }
);

// ---- pack and unpack ----

/// Packs `incount` elements at `inbuf` into `outbuf` at byte `position`; returns the new position.
///
/// # Safety
/// Buffers as MPI_Pack requires.
unsafe fn pack(
    inbuf: *const c_void,
    incount: i64,
    datatype: usize,
    outbuf: *mut c_void,
    outsize: i64,
    position: i64,
    comm: usize,
) -> MpiResult<i64> {
    hd::comm(comm)?;
    let n = hd::count(incount)?;
    let d = hd::dtype(datatype)?;
    if outsize < 0 || position < 0 || position > outsize {
        return err(c::MPI_ERR_ARG, format!("invalid position {position} or outsize {outsize}"));
    }
    let need = (n as i128 * d.size as i128) as i64;
    if need as i128 > (outsize - position) as i128 {
        return err(
            c::MPI_ERR_TRUNCATE,
            format!("pack buffer too small: {need} bytes at position {position}, outsize {outsize}"),
        );
    }
    hd::buffer(inbuf as *const u8, n, &d)?;
    if need > 0 {
        if outbuf.is_null() {
            return err(c::MPI_ERR_BUFFER, "null pack buffer");
        }
        d.pack_to(inbuf as *const u8, n, (outbuf as *mut u8).add(position as usize));
    }
    Ok(position + need)
}

/// Unpacks `outcount` elements from `inbuf` at byte `position`; returns the new position.
///
/// # Safety
/// Buffers as MPI_Unpack requires.
unsafe fn unpack(
    inbuf: *const c_void,
    insize: i64,
    position: i64,
    outbuf: *mut c_void,
    outcount: i64,
    datatype: usize,
    comm: usize,
) -> MpiResult<i64> {
    hd::comm(comm)?;
    let n = hd::count(outcount)?;
    let d = hd::dtype(datatype)?;
    if insize < 0 || position < 0 || position > insize {
        return err(c::MPI_ERR_ARG, format!("invalid position {position} or insize {insize}"));
    }
    let need = (n as i128 * d.size as i128) as i64;
    if need as i128 > (insize - position) as i128 {
        return err(
            c::MPI_ERR_TRUNCATE,
            format!("unpack of {need} bytes at position {position} runs past insize {insize}"),
        );
    }
    hd::buffer(outbuf as *const u8, n, &d)?;
    if need > 0 {
        if inbuf.is_null() {
            return err(c::MPI_ERR_BUFFER, "null unpack buffer");
        }
        let data = std::slice::from_raw_parts((inbuf as *const u8).add(position as usize), need as usize);
        d.unpack(data, outbuf as *mut u8, n);
    }
    Ok(position + need)
}

fn value_too_large(v: i64) -> MpiError {
    MpiError::new(
        c::MPI_ERR_VALUE_TOO_LARGE,
        format!("{v} does not fit in an int (use the _c function)"),
    )
}

mpi_fn!(
    MPI_Pack,
    PMPI_Pack,
    |inbuf: *const c_void, incount: c_int, dtype: usize, outbuf: *mut c_void, outsize: c_int, pos: *mut c_int, comm: usize| errcomm = comm,
    {
        if pos.is_null() {
            return err(c::MPI_ERR_ARG, "null position");
        }
        let p = pack(inbuf, incount as i64, dtype, outbuf, outsize as i64, *pos as i64, comm)?;
        *pos = c_int::try_from(p).map_err(|_| value_too_large(p))?;
        Ok(())
    }
);

mpi_fn!(
    MPI_Pack_c,
    PMPI_Pack_c,
    |inbuf: *const c_void, incount: i64, dtype: usize, outbuf: *mut c_void, outsize: i64, pos: *mut i64, comm: usize| errcomm = comm,
    {
        if pos.is_null() {
            return err(c::MPI_ERR_ARG, "null position");
        }
        *pos = pack(inbuf, incount, dtype, outbuf, outsize, *pos, comm)?;
        Ok(())
    }
);

mpi_fn!(
    MPI_Unpack,
    PMPI_Unpack,
    |inbuf: *const c_void, insize: c_int, pos: *mut c_int, outbuf: *mut c_void, outcount: c_int, dtype: usize, comm: usize| errcomm = comm,
    {
        if pos.is_null() {
            return err(c::MPI_ERR_ARG, "null position");
        }
        let p = unpack(inbuf, insize as i64, *pos as i64, outbuf, outcount as i64, dtype, comm)?;
        *pos = c_int::try_from(p).map_err(|_| value_too_large(p))?;
        Ok(())
    }
);

mpi_fn!(
    MPI_Unpack_c,
    PMPI_Unpack_c,
    |inbuf: *const c_void, insize: i64, pos: *mut i64, outbuf: *mut c_void, outcount: i64, dtype: usize, comm: usize| errcomm = comm,
    {
        if pos.is_null() {
            return err(c::MPI_ERR_ARG, "null position");
        }
        *pos = unpack(inbuf, insize, *pos, outbuf, outcount, dtype, comm)?;
        Ok(())
    }
);

fn pack_size(incount: i64, dtype: usize, comm: usize) -> MpiResult<i64> {
    hd::comm(comm)?;
    let n = hd::count(incount)?;
    let d = hd::dtype(dtype)?;
    (n as u64)
        .checked_mul(d.size as u64)
        .and_then(|v| i64::try_from(v).ok())
        .ok_or_else(|| value_too_large(i64::MAX))
}

mpi_fn!(
    MPI_Pack_size,
    PMPI_Pack_size,
    |incount: c_int, datatype: usize, comm: usize, size: *mut c_int| errcomm = comm,
    {
        let s = pack_size(incount as i64, datatype, comm)?;
        put(size, c_int::try_from(s).map_err(|_| value_too_large(s))?)
    }
);

mpi_fn!(
    MPI_Pack_size_c,
    PMPI_Pack_size_c,
    |incount: i64, datatype: usize, comm: usize, size: *mut i64| errcomm = comm,
    { put(size, pack_size(incount, datatype, comm)?) }
);

// ---- addresses ----

mpi_fn!(
    MPI_Get_address,
    PMPI_Get_address,
    |location: *const c_void, address: *mut isize| errcomm = WORLD,
    { put(address, location as isize) }
);

/// `MPI_Aint_add`: `base + disp` as an address (wrapping, like pointer arithmetic in C).
#[no_mangle]
pub extern "C" fn PMPI_Aint_add(base: isize, disp: isize) -> isize {
    base.wrapping_add(disp)
}

#[no_mangle]
pub extern "C" fn MPI_Aint_add(base: isize, disp: isize) -> isize {
    PMPI_Aint_add(base, disp)
}

/// `MPI_Aint_diff`: `addr1 - addr2`.
#[no_mangle]
pub extern "C" fn PMPI_Aint_diff(addr1: isize, addr2: isize) -> isize {
    addr1.wrapping_sub(addr2)
}

#[no_mangle]
pub extern "C" fn MPI_Aint_diff(addr1: isize, addr2: isize) -> isize {
    PMPI_Aint_diff(addr1, addr2)
}

#[cfg(test)]
mod tests {
    use super::*;

    unsafe fn contents_of(h: usize) -> (i32, Vec<i32>, Vec<isize>, Vec<usize>) {
        let (mut ni, mut na, mut nd, mut comb) = (0, 0, 0, 0);
        assert_eq!(PMPI_Type_get_envelope(h, &mut ni, &mut na, &mut nd, &mut comb), 0);
        let mut is = vec![0; ni as usize];
        let mut as_ = vec![0isize; na as usize];
        let mut ts = vec![0usize; nd as usize];
        if comb != c::MPI_COMBINER_NAMED {
            assert_eq!(
                PMPI_Type_get_contents(h, ni, na, nd, is.as_mut_ptr(), as_.as_mut_ptr(), ts.as_mut_ptr()),
                0
            );
        }
        (comb, is, as_, ts)
    }

    #[test]
    fn constructors_record_their_arguments() {
        unsafe {
            let mut v = 0usize;
            assert_eq!(PMPI_Type_vector(3, 2, 5, c::MPI_INT, &mut v), 0);
            let (comb, is, as_, ts) = contents_of(v);
            assert_eq!(
                (comb, is, as_, ts),
                (c::MPI_COMBINER_VECTOR, vec![3, 2, 5], vec![], vec![c::MPI_INT])
            );
            let mut s = 0usize;
            let (bl, ds, tys) = ([1, 2], [0isize, 8], [c::MPI_CHAR, v]);
            assert_eq!(PMPI_Type_create_struct(2, bl.as_ptr(), ds.as_ptr(), tys.as_ptr(), &mut s), 0);
            let (comb, is, as_, ts) = contents_of(s);
            assert_eq!((comb, is, as_), (c::MPI_COMBINER_STRUCT, vec![2, 1, 2], vec![0, 8]));
            assert_eq!(ts[0], c::MPI_CHAR);
            assert_ne!(ts[1], v, "a derived member comes back as a new handle");
            let (mut size, mut lb, mut ext) = (0, 0isize, 0isize);
            PMPI_Type_size(ts[1], &mut size);
            PMPI_Type_get_extent(ts[1], &mut lb, &mut ext);
            assert_eq!((size, lb, ext), (24, 0, 4 * 12));
            let mut r = 0usize;
            assert_eq!(PMPI_Type_create_resized_c(v, -4, 100, &mut r), 0);
            let (mut ni, mut na, mut nc, mut nd, mut comb) = (0, 0, 0, 0, 0);
            assert_eq!(PMPI_Type_get_envelope_c(r, &mut ni, &mut na, &mut nc, &mut nd, &mut comb), 0);
            assert_eq!((ni, na, nc, nd, comb), (0, 0, 2, 1, c::MPI_COMBINER_RESIZED));
            let mut d = 0usize;
            assert_eq!(PMPI_Type_dup(c::MPI_INT, &mut d), 0);
            assert_eq!(contents_of(d).3, vec![c::MPI_INT]);
            for mut h in [v, s, ts[1], r, d] {
                assert_eq!(PMPI_Type_free(&mut h), 0);
                assert_eq!(h, c::MPI_DATATYPE_NULL);
            }
        }
    }

    #[test]
    fn aint_arithmetic() {
        assert_eq!(MPI_Aint_add(100, -8), 92);
        assert_eq!(MPI_Aint_diff(100, 108), -8);
        let x = [0u64; 4];
        let (mut a0, mut a2) = (0isize, 0isize);
        unsafe {
            PMPI_Get_address(x.as_ptr() as *const c_void, &mut a0);
            PMPI_Get_address(x[2..].as_ptr() as *const c_void, &mut a2);
        }
        assert_eq!(MPI_Aint_diff(a2, a0), 16);
    }
}
