//! The file typemap of an etype or filetype in a data representation whose basic types take
//! another size in the file than in memory (`external32`'s `MPI_LONG`, a user representation's
//! 8-byte `MPI_INT`, ...).
//!
//! MPI 4.1 section 14.5.1 ("Datatypes for File Interoperability"): the constructors that take
//! displacements in bytes (`hvector`, `hindexed`, `hindexed_block`, `struct`, the bounds of
//! `create_resized`) give *file* byte displacements, taken as they are; the ones counted in
//! elements (`contiguous`, `vector`, `indexed`, `indexed_block`, `subarray`, `darray`, `dup`)
//! are scaled, because they count elements of their old type, whose extent is now its file
//! extent. The standard's advice to users says how to read it: the types are "defined at a file
//! server by the same sequence of calls". So the file typemap is the type built again, through
//! its constructor tree (`Contents`, what `MPI_Type_get_contents` answers), from the basic
//! types' file forms: `MPI_X` becomes a run of `file_size(MPI_X)` bytes with extent
//! `file_size(MPI_X)` (external32 stores every item byte-aligned, packed).
//!
//! Alignment: "All data is byte aligned, regardless of type" (external32, 14.5.2) and "User
//! defined data representations are restricted to use byte alignment for all types" (14.5.3),
//! so a struct gets no alignment padding in the file (the standard's epsilon is 0 there): its
//! file extent runs from its lowest to its highest file byte, unless `MPI_Type_create_resized`
//! says otherwise. (`View` uses the memory typemap itself when no basic type changes size, as
//! ROMIO does: a struct keeps its memory padding then, so files stay the same as MPICH's.)

use crate::consts as c;
use crate::core::datatype::basic::BasicType;
use crate::core::datatype::typemap::{self, Builder, Distrib, Order};
use crate::core::datatype::{self, Contents, Datatype, DtRef};
use crate::core::error::{err, MpiResult};
use std::collections::HashMap;

/// How many bytes one basic element takes in the file.
pub type FileSize<'a> = &'a dyn Fn(BasicType) -> MpiResult<usize>;

/// The typemap of `d` in the file (blocks in file bytes, bounds and extent in file bytes).
pub fn file_typemap(d: &Datatype, size: FileSize) -> MpiResult<Datatype> {
    Walk {
        size,
        done: HashMap::new(),
    }
    .of(d)
}

/// One walk of a constructor tree; types met more than once (a struct of the same derived
/// type many times) are built once.
struct Walk<'a> {
    size: FileSize<'a>,
    done: HashMap<*const Datatype, DtRef>,
}

fn unsupported(what: &str) -> MpiResult<Datatype> {
    err(
        c::MPI_ERR_UNSUPPORTED_DATAREP,
        format!("the file layout of {what} cannot be derived (no constructor recorded)"),
    )
}

/// A non-negative argument as a count.
fn count(v: i64) -> MpiResult<usize> {
    usize::try_from(v).or_else(|_| err(c::MPI_ERR_TYPE, format!("invalid count {v} in a datatype's contents")))
}

fn counts(v: &[i64]) -> MpiResult<Vec<usize>> {
    v.iter().map(|&x| count(x)).collect()
}

/// An argument slice `v[at..at + n]`, or an error for contents of the wrong shape.
fn take(v: &[i64], at: usize, n: usize) -> MpiResult<&[i64]> {
    v.get(at..at + n).map_or_else(
        || err(c::MPI_ERR_TYPE, "a datatype's contents are shorter than its constructor needs"),
        Ok,
    )
}

/// Scales element displacements by `unit` bytes.
fn scale(v: &[i64], unit: isize) -> MpiResult<Vec<isize>> {
    v.iter()
        .map(|&x| {
            (x as isize)
                .checked_mul(unit)
                .ok_or_else(|| crate::core::error::MpiError::new(c::MPI_ERR_ARG, "file displacement overflows"))
        })
        .collect()
}

/// The integer arguments of a constructor in one sequence, the order the large-count (`_c`)
/// forms store them as `counts`: the `int` forms keep them as `ints` followed by `aints`.
fn flat(k: &Contents) -> Vec<i64> {
    if !k.counts.is_empty() {
        return k.counts.clone();
    }
    k.ints.iter().map(|&x| x as i64).chain(k.aints.iter().map(|&x| x as i64)).collect()
}

impl Walk<'_> {
    fn of(&mut self, d: &Datatype) -> MpiResult<Datatype> {
        let k = match &d.contents {
            Some(k)
                if !matches!(
                    k.combiner,
                    c::MPI_COMBINER_F90_INTEGER | c::MPI_COMBINER_F90_REAL | c::MPI_COMBINER_F90_COMPLEX
                ) =>
            {
                k
            }
            // Predefined types and the Fortran parameterized ones (copies of a basic type).
            _ => match d.basic {
                Some(b) if d.lb == 0 && d.size == b.size() && d.extent == b.extent() as isize => return self.basic(b),
                _ => return unsupported("a datatype"),
            },
        };
        let a = flat(k);
        match k.combiner {
            c::MPI_COMBINER_DUP => Ok((*self.old(k)?).clone()),
            c::MPI_COMBINER_CONTIGUOUS => typemap::contiguous(count(take(&a, 0, 1)?[0])?, &*self.old(k)?),
            c::MPI_COMBINER_VECTOR | c::MPI_COMBINER_HVECTOR => {
                let v = take(&a, 0, 3)?;
                let ft = self.old(k)?;
                let unit = if k.combiner == c::MPI_COMBINER_VECTOR { ft.extent } else { 1 };
                typemap::hvector(count(v[0])?, count(v[1])?, scale(&v[2..], unit)?[0], &ft)
            }
            c::MPI_COMBINER_INDEXED | c::MPI_COMBINER_HINDEXED => {
                let n = count(take(&a, 0, 1)?[0])?;
                let ft = self.old(k)?;
                let unit = if k.combiner == c::MPI_COMBINER_INDEXED { ft.extent } else { 1 };
                typemap::hindexed(&counts(take(&a, 1, n)?)?, &scale(take(&a, 1 + n, n)?, unit)?, &ft)
            }
            c::MPI_COMBINER_INDEXED_BLOCK | c::MPI_COMBINER_HINDEXED_BLOCK => {
                let v = take(&a, 0, 2)?;
                let (n, bl) = (count(v[0])?, count(v[1])?);
                let ft = self.old(k)?;
                let unit = if k.combiner == c::MPI_COMBINER_INDEXED_BLOCK {
                    ft.extent
                } else {
                    1
                };
                typemap::hindexed(&vec![bl; n], &scale(take(&a, 2, n)?, unit)?, &ft)
            }
            c::MPI_COMBINER_STRUCT => {
                let n = count(take(&a, 0, 1)?[0])?;
                let (bl, ds) = (counts(take(&a, 1, n)?)?, scale(take(&a, 1 + n, n)?, 1)?);
                if k.types.len() != n {
                    return unsupported("a struct datatype");
                }
                let mut b = Builder::new();
                for i in 0..n {
                    let ft = self.sub(&k.types[i])?;
                    b.part(&ft, ds[i], bl[i], ft.extent)?;
                }
                // Byte-aligned: no padding (see the module's comment).
                b.finish(None, false)
            }
            c::MPI_COMBINER_RESIZED => {
                let v = take(&a, 0, 2)?;
                typemap::resized(&*self.old(k)?, v[0] as isize, v[1] as isize)
            }
            c::MPI_COMBINER_SUBARRAY => {
                // ints: ndims, sizes, subsizes, starts, order; the large-count form: ndims,
                // order, with the three arrays in counts.
                let ints: Vec<i64> = k.ints.iter().map(|&x| x as i64).collect();
                let nd = count(take(&ints, 0, 1)?[0])?;
                let (dims, ord) = if k.counts.is_empty() {
                    (take(&ints, 1, 3 * nd)?, take(&ints, 1 + 3 * nd, 1)?[0])
                } else {
                    (take(&k.counts, 0, 3 * nd)?, take(&ints, 1, 1)?[0])
                };
                let dims = counts(dims)?;
                let order = Order::from_abi(ord as i32)?;
                typemap::subarray(&dims[..nd], &dims[nd..2 * nd], &dims[2 * nd..], order, &*self.old(k)?)
            }
            c::MPI_COMBINER_DARRAY => {
                // ints: size, rank, ndims, gsizes, distribs, dargs, psizes, order; the
                // large-count form keeps gsizes in counts.
                let ints: Vec<i64> = k.ints.iter().map(|&x| x as i64).collect();
                let hdr = take(&ints, 0, 3)?;
                let (size, rank, nd) = (count(hdr[0])?, count(hdr[1])?, count(hdr[2])?);
                let (gs, rest) = if k.counts.is_empty() {
                    (take(&ints, 3, nd)?, 3 + nd)
                } else {
                    (take(&k.counts, 0, nd)?, 3)
                };
                let r = take(&ints, rest, 3 * nd + 1)?;
                let ds = (0..nd)
                    .map(|j| Distrib::from_abi(r[j] as i32, r[nd + j] as i32))
                    .collect::<MpiResult<Vec<Distrib>>>()?;
                let ps = counts(&r[2 * nd..3 * nd])?;
                let order = Order::from_abi(r[3 * nd] as i32)?;
                typemap::darray(size, rank, &counts(gs)?, &ds, &ps, order, &*self.old(k)?)
            }
            _ => unsupported("a datatype of this constructor"),
        }
    }

    /// The file form of the old type of a one-type constructor.
    fn old(&mut self, k: &Contents) -> MpiResult<DtRef> {
        match k.types.first() {
            Some(t) => self.sub(t),
            None => unsupported("a derived datatype").map(std::sync::Arc::new),
        }
    }

    /// The file form of an old type of a constructor, built once per walk.
    fn sub(&mut self, t: &DtRef) -> MpiResult<DtRef> {
        let key = std::sync::Arc::as_ptr(t);
        if let Some(f) = self.done.get(&key) {
            return Ok(f.clone());
        }
        let f = std::sync::Arc::new(self.of(t)?);
        self.done.insert(key, f.clone());
        Ok(f)
    }

    /// A basic element in the file: its file size in bytes, byte-aligned, extent equal to the
    /// size.
    fn basic(&self, b: BasicType) -> MpiResult<Datatype> {
        typemap::contiguous((self.size)(b)?, &datatype::byte())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::datatype::{external32, lookup};
    use rstest::rstest;
    use std::sync::Arc;

    fn ext32(b: BasicType) -> MpiResult<usize> {
        Ok(external32::basic_size(b))
    }

    fn native(b: BasicType) -> MpiResult<usize> {
        Ok(b.size())
    }

    fn t(h: usize) -> DtRef {
        lookup(h).unwrap()
    }

    /// A derived type with its contents, as the ABI layer records them.
    fn mk(d: Datatype, combiner: i32, ints: Vec<i32>, aints: Vec<isize>, counts: Vec<i64>, types: Vec<DtRef>) -> DtRef {
        let mut d = d;
        d.contents = Some(Arc::new(Contents {
            combiner,
            ints,
            aints,
            counts,
            types,
        }));
        Arc::new(d)
    }

    fn layout(d: &Datatype) -> (Vec<(isize, usize)>, isize, isize, usize) {
        (d.blocks.clone(), d.lb, d.extent, d.size)
    }

    /// struct { long l; int i; double d; } (offsets 0, 8, 16; extent 24)
    fn lid() -> DtRef {
        let (l, i, d) = (t(c::MPI_LONG), t(c::MPI_INT), t(c::MPI_DOUBLE));
        let m = typemap::structure(&[1, 1, 1], &[0, 8, 16], &[&l, &i, &d]).unwrap();
        mk(m, c::MPI_COMBINER_STRUCT, vec![3, 1, 1, 1], vec![0, 8, 16], vec![], vec![l, i, d])
    }

    #[test]
    fn struct_byte_displacements_as_is() {
        // external32: the long takes 4 bytes at 0, the int 4 at 8, the double 8 at 16.
        let f = file_typemap(&lid(), &ext32).unwrap();
        assert_eq!(layout(&f), (vec![(0, 4), (8, 4), (16, 8)], 0, 24, 16));
    }

    #[test]
    fn element_counts_scale() {
        let l = t(c::MPI_LONG);
        // vector(3, 1, 2) of MPI_LONG: elements 0, 2, 4 -> file bytes 0, 8, 16 (4 each)
        let v = mk(
            typemap::hvector(3, 1, 16, &l).unwrap(),
            c::MPI_COMBINER_VECTOR,
            vec![3, 1, 2],
            vec![],
            vec![],
            vec![l.clone()],
        );
        assert_eq!(
            layout(&file_typemap(&v, &ext32).unwrap()),
            (vec![(0, 4), (8, 4), (16, 4)], 0, 20, 12)
        );
        // the same from the large-count constructor
        let vc = mk((*v).clone(), c::MPI_COMBINER_VECTOR, vec![], vec![], vec![3, 1, 2], vec![l.clone()]);
        assert_eq!(file_typemap(&vc, &ext32).unwrap().blocks, vec![(0, 4), (8, 4), (16, 4)]);
        // hvector with the same 16-byte stride: taken as file bytes
        let h = mk(
            typemap::hvector(3, 1, 16, &l).unwrap(),
            c::MPI_COMBINER_HVECTOR,
            vec![3, 1],
            vec![16],
            vec![],
            vec![l.clone()],
        );
        assert_eq!(
            layout(&file_typemap(&h, &ext32).unwrap()),
            (vec![(0, 4), (16, 4), (32, 4)], 0, 36, 12)
        );
        // indexed (elements) and hindexed (bytes) of longs
        let ix = mk(
            typemap::hindexed(&[2, 1], &[8, 40], &l).unwrap(),
            c::MPI_COMBINER_INDEXED,
            vec![2, 2, 1, 1, 5],
            vec![],
            vec![],
            vec![l.clone()],
        );
        assert_eq!(file_typemap(&ix, &ext32).unwrap().blocks, vec![(4, 8), (20, 4)]);
        let hx = mk(
            typemap::hindexed(&[2, 1], &[8, 40], &l).unwrap(),
            c::MPI_COMBINER_HINDEXED,
            vec![2, 2, 1],
            vec![8, 40],
            vec![],
            vec![l],
        );
        assert_eq!(file_typemap(&hx, &ext32).unwrap().blocks, vec![(8, 8), (40, 4)]);
    }

    #[test]
    fn resized_and_nesting() {
        // contiguous(2) of resized(struct, 0, 32): the resized extent is file bytes as given
        let s = lid();
        let r = mk(
            typemap::resized(&s, 0, 32).unwrap(),
            c::MPI_COMBINER_RESIZED,
            vec![],
            vec![0, 32],
            vec![],
            vec![s],
        );
        let cg = mk(
            typemap::contiguous(2, &r).unwrap(),
            c::MPI_COMBINER_CONTIGUOUS,
            vec![2],
            vec![],
            vec![],
            vec![r],
        );
        let f = file_typemap(&cg, &ext32).unwrap();
        assert_eq!(layout(&f), (vec![(0, 4), (8, 4), (16, 8), (32, 4), (40, 4), (48, 8)], 0, 64, 32));
    }

    #[rstest]
    #[case(c::MPI_LONG, 4)]
    #[case(c::MPI_DOUBLE_INT, 12)]
    #[case(c::MPI_LONG_DOUBLE, 16)]
    #[case(c::MPI_WCHAR, 2)]
    fn basic_types_packed(#[case] h: usize, #[case] want: usize) {
        let f = file_typemap(&t(h), &ext32).unwrap();
        assert_eq!(layout(&f), (vec![(0, want)], 0, want as isize, want));
    }

    /// A representation that keeps every size gives the memory layout back (subarray and
    /// darray bounds included), except a struct's alignment padding: none in the file.
    #[test]
    fn same_sizes_give_the_memory_layout_but_padding() {
        let (i, d, ch) = (t(c::MPI_INT), t(c::MPI_DOUBLE), t(c::MPI_CHAR));
        let s = mk(
            typemap::structure(&[1, 1, 2], &[0, 8, 12], &[&d, &ch, &i]).unwrap(),
            c::MPI_COMBINER_STRUCT,
            vec![3, 1, 1, 2],
            vec![0, 8, 12],
            vec![],
            vec![d, ch, i.clone()],
        );
        assert_eq!(s.extent, 24);
        assert_eq!(layout(&file_typemap(&s, &native).unwrap()), (vec![(0, 9), (12, 8)], 0, 20, 17));
        let r = mk(
            typemap::resized(&s, 0, 24).unwrap(),
            c::MPI_COMBINER_RESIZED,
            vec![],
            vec![0, 24],
            vec![],
            vec![s],
        );
        let sub = mk(
            typemap::subarray(&[4, 6], &[2, 3], &[1, 2], Order::C, &r).unwrap(),
            c::MPI_COMBINER_SUBARRAY,
            vec![2, 4, 6, 2, 3, 1, 2, c::MPI_ORDER_C],
            vec![],
            vec![],
            vec![r.clone()],
        );
        let subc = mk(
            (*sub).clone(),
            c::MPI_COMBINER_SUBARRAY,
            vec![2, c::MPI_ORDER_C],
            vec![],
            vec![4, 6, 2, 3, 1, 2],
            vec![r.clone()],
        );
        let ds = [Distrib::Cyclic(Some(2)), Distrib::Block(None)];
        let da = mk(
            typemap::darray(4, 3, &[8, 5], &ds, &[2, 2], Order::Fortran, &i).unwrap(),
            c::MPI_COMBINER_DARRAY,
            vec![
                4,
                3,
                2,
                8,
                5,
                c::MPI_DISTRIBUTE_CYCLIC,
                c::MPI_DISTRIBUTE_BLOCK,
                2,
                c::MPI_DISTRIBUTE_DFLT_DARG,
                2,
                2,
                c::MPI_ORDER_FORTRAN,
            ],
            vec![],
            vec![],
            vec![i.clone()],
        );
        let dac = mk(
            (*da).clone(),
            c::MPI_COMBINER_DARRAY,
            vec![
                4,
                3,
                2,
                c::MPI_DISTRIBUTE_CYCLIC,
                c::MPI_DISTRIBUTE_BLOCK,
                2,
                c::MPI_DISTRIBUTE_DFLT_DARG,
                2,
                2,
                c::MPI_ORDER_FORTRAN,
            ],
            vec![],
            vec![8, 5],
            vec![i],
        );
        for ty in [r, sub, subc, da, dac] {
            assert_eq!(layout(&file_typemap(&ty, &native).unwrap()), layout(&ty));
        }
    }

    #[test]
    fn wider_file_items() {
        // a representation storing MPI_INT in 8 bytes: indexed_block(2 ints at elements 0, 3)
        let i = t(c::MPI_INT);
        let wide = |b: BasicType| Ok(if b == BasicType::Int { 8 } else { b.size() });
        let ib = mk(
            typemap::hindexed(&[2, 2], &[0, 12], &i).unwrap(),
            c::MPI_COMBINER_INDEXED_BLOCK,
            vec![2, 2, 0, 3],
            vec![],
            vec![],
            vec![i.clone()],
        );
        assert_eq!(layout(&file_typemap(&ib, &wide).unwrap()), (vec![(0, 16), (24, 16)], 0, 40, 32));
        // hindexed_block at bytes 0 and 4: the 8-byte items overlap in the file
        let hb = mk(
            typemap::hindexed(&[1, 1], &[0, 4], &i).unwrap(),
            c::MPI_COMBINER_HINDEXED_BLOCK,
            vec![2, 1],
            vec![0, 4],
            vec![],
            vec![i],
        );
        assert_eq!(file_typemap(&hb, &wide).unwrap().blocks, vec![(0, 8), (4, 8)]);
    }
}
