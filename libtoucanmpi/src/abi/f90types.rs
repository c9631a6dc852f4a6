//! `MPI_Type_create_f90_integer`, `_real` and `_complex`: the datatype of a Fortran
//! `SELECTED_INT_KIND(r)` / `SELECTED_REAL_KIND(p, r)` variable.
//!
//! The answer has the layout of the sized predefined type that holds such values (as gfortran
//! on x86-64 picks the kinds: `MPI_INTEGER1..16`, `MPI_REAL4..16`, `MPI_COMPLEX8..32`) and
//! the envelope the standard gives it (`MPI_COMBINER_F90_INTEGER` with `r`,
//! `MPI_COMBINER_F90_REAL`/`_COMPLEX` with `p, r`). The standard makes these types
//! predefined: the same arguments give the same handle (a program may call this in a loop),
//! so each process keeps the types it made, one per (combiner, p, r); a handle the program
//! freed anyway (erroneous) is made again.

use super::consts as c;
use crate::core::datatype::{self as dt, Contents, Datatype};
use crate::core::error::{err, MpiResult};
use crate::sched::lock::Lock;
use std::sync::Arc;

/// What a type was made for: (combiner, p, r).
type Key = (i32, i32, i32);

/// The types made so far in this process, with their handles.
static MADE: Lock<Vec<(Key, usize)>> = Lock::new(Vec::new());

/// `SELECTED_INT_KIND(r)`: the byte size of the smallest integer with `r` decimal digits.
fn int_size(r: i32) -> Option<i32> {
    [(2, 1), (4, 2), (9, 4), (18, 8), (38, 16)]
        .into_iter()
        .find(|&(digits, _)| r <= digits)
        .map(|(_, size)| size)
}

/// `SELECTED_REAL_KIND(p, r)`: the byte size of the smallest real with precision `p` and
/// exponent range `r` (`MPI_UNDEFINED`: not constrained).
fn real_size(p: i32, r: i32) -> Option<i32> {
    let p = if p == c::MPI_UNDEFINED { 0 } else { p };
    let r = if r == c::MPI_UNDEFINED { 0 } else { r };
    [(6, 37, 4), (15, 307, 8), (33, 4931, 16)]
        .into_iter()
        .find(|&(prec, range, _)| p <= prec && r <= range)
        .map(|(_, _, size)| size)
}

/// The datatype for (combiner, p, r), made once per process.
fn f90_type(combiner: i32, p: i32, r: i32) -> MpiResult<usize> {
    let (class, size, ints) = match combiner {
        c::MPI_COMBINER_F90_INTEGER => (c::MPI_TYPECLASS_INTEGER, int_size(r), vec![r]),
        c::MPI_COMBINER_F90_REAL => (c::MPI_TYPECLASS_REAL, real_size(p, r), vec![p, r]),
        _ => (c::MPI_TYPECLASS_COMPLEX, real_size(p, r).map(|s| 2 * s), vec![p, r]),
    };
    let Some(size) = size else {
        return err(
            c::MPI_ERR_ARG,
            format!("no Fortran kind has precision {p} and range {r} (the largest is 33 digits, range 4931)"),
        );
    };
    let key = (combiner, p, r);
    let mut made = MADE.lock();
    if let Some(&(_, h)) = made.iter().find(|(k, h)| *k == key && dt::lookup(*h).is_ok()) {
        return Ok(h);
    }
    let base = dt::lookup(dt::match_size(class, size)?)?;
    let d = Datatype {
        committed: true,
        contents: Some(Arc::new(Contents {
            combiner,
            ints,
            aints: vec![],
            counts: vec![],
            types: vec![],
        })),
        ..base.derived_copy()
    };
    let h = dt::register(Arc::new(d))?;
    made.retain(|(k, _)| *k != key);
    made.push((key, h));
    Ok(h)
}

/// Stores the handle.
///
/// # Safety
/// `newtype` must be null or valid for a write.
unsafe fn put(newtype: *mut usize, h: MpiResult<usize>) -> MpiResult<()> {
    if newtype.is_null() {
        return err(c::MPI_ERR_ARG, "null newtype argument");
    }
    *newtype = h?;
    Ok(())
}

mpi_fn!(
    MPI_Type_create_f90_integer,
    PMPI_Type_create_f90_integer,
    |r: i32, newtype: *mut usize| errcomm = c::MPI_COMM_WORLD,
    { put(newtype, f90_type(c::MPI_COMBINER_F90_INTEGER, c::MPI_UNDEFINED, r)) }
);

mpi_fn!(
    MPI_Type_create_f90_real,
    PMPI_Type_create_f90_real,
    |p: i32, r: i32, newtype: *mut usize| errcomm = c::MPI_COMM_WORLD,
    { put(newtype, f90_type(c::MPI_COMBINER_F90_REAL, p, r)) }
);

mpi_fn!(
    MPI_Type_create_f90_complex,
    PMPI_Type_create_f90_complex,
    |p: i32, r: i32, newtype: *mut usize| errcomm = c::MPI_COMM_WORLD,
    { put(newtype, f90_type(c::MPI_COMBINER_F90_COMPLEX, p, r)) }
);

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case(1, Some(1))]
    #[case(2, Some(1))]
    #[case(3, Some(2))]
    #[case(9, Some(4))]
    #[case(10, Some(8))]
    #[case(18, Some(8))]
    #[case(38, Some(16))]
    #[case(39, None)]
    fn integer_kinds_as_gfortran(#[case] r: i32, #[case] size: Option<i32>) {
        assert_eq!(int_size(r), size);
    }

    #[rstest]
    #[case(6, 37, Some(4))]
    #[case(7, c::MPI_UNDEFINED, Some(8))]
    #[case(c::MPI_UNDEFINED, 38, Some(8))]
    #[case(15, 307, Some(8))]
    #[case(16, 10, Some(16))]
    #[case(33, 4931, Some(16))]
    #[case(34, 1, None)]
    #[case(1, 5000, None)]
    fn real_kinds_as_gfortran(#[case] p: i32, #[case] r: i32, #[case] size: Option<i32>) {
        assert_eq!(real_size(p, r), size);
    }
}
