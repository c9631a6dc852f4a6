//! File views: the displacement, etype and filetype an `MPI_File_set_view` gives, and the
//! mapping from a position in the view's data (bytes of etypes, counted from the start of the
//! view) to extents of the file. The filetype's blocks come from the datatype typemap
//! (`Datatype::blocks`), tiled from the displacement every `extent` bytes.

use crate::consts as c;
use crate::core::datatype::basic::BasicType;
use crate::core::datatype::{external32, DtRef};
use crate::core::error::{err, MpiResult};
use crate::core::io::{datarep, filetype};

/// The data representation of a view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rep {
    /// `native` (and `internal`, which we store as native).
    Native,
    Internal,
    External32,
    /// A representation the program registered (`core::io::datarep`, by index).
    User(u32),
}

impl Rep {
    /// The representation named `s` for the running subrank (its registered ones included).
    pub fn parse(s: &str) -> MpiResult<Rep> {
        match s {
            "native" => Ok(Rep::Native),
            "internal" => Ok(Rep::Internal),
            "external32" => Ok(Rep::External32),
            _ => match datarep::lookup(crate::sched::rank(), s) {
                Some(i) => Ok(Rep::User(i)),
                None => err(
                    c::MPI_ERR_UNSUPPORTED_DATAREP,
                    format!("data representation \"{s}\" is not supported (native, internal, external32, or one registered with MPI_Register_datarep)"),
                ),
            },
        }
    }
    pub fn name(self) -> String {
        match self {
            Rep::Native => "native".into(),
            Rep::Internal => "internal".into(),
            Rep::External32 => "external32".into(),
            Rep::User(i) => datarep::get(i).name.clone(),
        }
    }
    /// Whether the stream is the data in memory order and native form (no conversion).
    pub fn is_native(self) -> bool {
        matches!(self, Rep::Native | Rep::Internal)
    }
}

/// Bytes one element of `d` takes in the file in representation `rep` (a user
/// representation's extent function can fail).
pub fn file_size(d: &crate::core::datatype::Datatype, rep: Rep) -> MpiResult<usize> {
    Ok(match rep {
        Rep::External32 => external32::size(d, 1).unwrap_or(d.size),
        Rep::User(i) => datarep::get(i).size(d)?,
        _ => d.size,
    })
}

/// Whether `d`'s basic types all take their native size in the file under `rep` (then its
/// file layout is its memory layout, only the bytes' form may differ).
fn layout_kept(d: &crate::core::datatype::Datatype, rep: Rep) -> MpiResult<bool> {
    match rep {
        Rep::External32 => Ok(same_sizes(d)),
        Rep::User(i) => datarep::get(i).same_sizes(d),
        _ => Ok(true),
    }
}

/// Whether every basic type in `d` has the same size in external32 as in memory (then the
/// file layout of `d` is its memory layout, only the byte order differs).
fn same_sizes(d: &crate::core::datatype::Datatype) -> bool {
    d.runs().iter().all(|r: &crate::core::datatype::typemap::Run| {
        external32::basic_size(r.ty) == r.ty.size() && r.ty.size() == r.ty.extent() && !r.ty.is_pair()
    }) && (d.basic.is_none_or(|b: BasicType| external32::basic_size(b) == b.size()))
}

/// The typemap of `d` in the file under `rep` (`core::io::filetype`): built again from its
/// constructors with each basic type at its file size (MPI 4.1 section 14.5.1).
pub fn file_typemap(d: &crate::core::datatype::Datatype, rep: Rep) -> MpiResult<crate::core::datatype::Datatype> {
    let size = |b: BasicType| -> MpiResult<usize> {
        match rep {
            Rep::External32 => Ok(external32::basic_size(b)),
            Rep::User(i) => datarep::get(i).extent(b),
            _ => Ok(b.size()),
        }
    };
    filetype::file_typemap(d, &size)
}

/// The extent of `d` in the file under `rep` (`MPI_File_get_type_extent`): its memory extent
/// when its basic types keep their sizes, else the extent of its file typemap.
pub fn file_extent(d: &crate::core::datatype::Datatype, rep: Rep) -> MpiResult<u64> {
    if rep.is_native() || layout_kept(d, rep)? {
        return Ok(d.extent.max(0) as u64);
    }
    Ok(file_typemap(d, rep)?.extent.max(0) as u64)
}

/// The typemap of an etype or filetype: displacements non-negative and non-decreasing, no
/// overlaps in a writable file's view (`MPI_ERR_IO`, ROMIO's class; the standard names none).
fn check_layout(d: &crate::core::datatype::Datatype, what: &str, overlap_ok: bool) -> MpiResult<()> {
    if d.extent < 0 {
        return err(c::MPI_ERR_IO, format!("the {what} has a negative extent"));
    }
    let (mut last_start, mut last_end) = (0i64, 0i64);
    for (i, &(off, len)) in d.blocks.iter().enumerate() {
        let off = off as i64;
        if off < 0 {
            return err(c::MPI_ERR_IO, format!("the {what}'s displacements must be non-negative"));
        }
        if i > 0 && off < last_start {
            return err(
                c::MPI_ERR_IO,
                format!("the {what}'s displacements must be monotonically non-decreasing"),
            );
        }
        if i > 0 && off < last_end && !overlap_ok {
            return err(
                c::MPI_ERR_IO,
                format!("the {what} of a writable file may not contain overlapping regions"),
            );
        }
        last_start = off;
        last_end = last_end.max(off + len as i64);
    }
    Ok(())
}

/// The checks of an etype and a filetype (memory typemaps, or file typemaps with `rep` naming
/// the representation): the filetype's size a multiple of the etype's (`MPI_ERR_ARG`, as
/// ROMIO), layouts as [`check_layout`] wants them.
fn check_view_types(
    etype: &crate::core::datatype::Datatype,
    filetype: &crate::core::datatype::Datatype,
    rep: &str,
    overlap_ok: bool,
) -> MpiResult<()> {
    if etype.size == 0 {
        return err(c::MPI_ERR_TYPE, format!("the {rep}etype has size 0"));
    }
    if !filetype.size.is_multiple_of(etype.size) {
        return err(
            c::MPI_ERR_ARG,
            format!(
                "the {rep}filetype's size {} is not a multiple of the {rep}etype's {}",
                filetype.size, etype.size
            ),
        );
    }
    check_layout(etype, &format!("{rep}etype"), overlap_ok)?;
    check_layout(filetype, &format!("{rep}filetype"), overlap_ok)
}

#[derive(Debug)]
pub struct View {
    pub disp: u64,
    pub etype: DtRef,
    pub filetype: DtRef,
    pub rep: Rep,
    /// File blocks of one filetype tile: (offset from the tile's start, bytes).
    blocks: Vec<(u64, u64)>,
    /// Data bytes of the tile before block i.
    prefix: Vec<u64>,
    tile_size: u64,
    tile_extent: u64,
    /// Bytes of one etype in the file.
    pub esize: u64,
}

impl View {
    /// The view of a newly opened file: displacement 0, etype and filetype `MPI_BYTE`.
    pub fn bytes() -> View {
        let b = crate::core::datatype::byte();
        View::new(0, b.clone(), b, Rep::Native).expect("the default view is valid")
    }

    /// Checks and builds a view (`MPI_File_set_view`).
    /// Displacements that go back or overlap are `MPI_ERR_IO` (ROMIO's class; the standard
    /// names none); overlaps only when the file is writable (`overlap_ok` false).
    pub fn new(disp: u64, etype: DtRef, filetype: DtRef, rep: Rep) -> MpiResult<View> {
        View::checked(disp, etype, filetype, rep, false)
    }

    pub fn checked(disp: u64, etype: DtRef, filetype: DtRef, rep: Rep, overlap_ok: bool) -> MpiResult<View> {
        if etype.size == 0 {
            return err(c::MPI_ERR_TYPE, "the etype has size 0");
        }
        let (blocks, tile_extent, esize): (Vec<(u64, u64)>, u64, u64) =
            if rep.is_native() || (layout_kept(&etype, rep)? && layout_kept(&filetype, rep)?) {
                check_view_types(&etype, &filetype, "", overlap_ok)?;
                (
                    filetype.blocks.iter().map(|&(o, l)| (o as u64, l as u64)).collect(),
                    filetype.extent as u64,
                    etype.size as u64,
                )
            } else {
                // Basic types change size in the file: the view is the file typemap, and the
                // checks are of it (byte displacements are the file's: they may overlap in memory).
                let (fe, ff) = (file_typemap(&etype, rep)?, file_typemap(&filetype, rep)?);
                check_view_types(&fe, &ff, &format!("{} ", rep.name()), overlap_ok)?;
                (
                    ff.blocks.iter().map(|&(o, l)| (o as u64, l as u64)).collect(),
                    ff.extent as u64,
                    fe.size as u64,
                )
            };
        let blocks: Vec<(u64, u64)> = blocks.into_iter().filter(|b| b.1 > 0).collect();
        let mut prefix = Vec::with_capacity(blocks.len());
        let mut t = 0;
        for b in &blocks {
            prefix.push(t);
            t += b.1;
        }
        Ok(View {
            disp,
            etype,
            filetype,
            rep,
            blocks,
            prefix,
            tile_size: t,
            tile_extent,
            esize,
        })
    }

    /// The file extents (offset, bytes) holding `len` bytes of the view's data from data
    /// position `pos`, in order, adjacent ones merged.
    pub fn segments(&self, pos: u64, len: u64) -> MpiResult<Vec<(u64, u64)>> {
        let mut out: Vec<(u64, u64)> = Vec::new();
        if len == 0 {
            return Ok(out);
        }
        if self.tile_size == 0 {
            return err(c::MPI_ERR_IO, "the view's filetype holds no data: nothing can be accessed");
        }
        if self.blocks.len() == 1 && self.blocks[0].0 == 0 && self.tile_size == self.tile_extent {
            // Tiles follow each other without gaps (MPI_BYTE, a contiguous type): one extent.
            let off = self
                .disp
                .checked_add(pos)
                .filter(|o| o.checked_add(len).is_some())
                .ok_or_else(|| crate::core::error::MpiError::new(c::MPI_ERR_ARG, "file offset overflows"))?;
            out.push((off, len));
            return Ok(out);
        }
        let mut k = pos / self.tile_size;
        let r = pos % self.tile_size;
        let mut i = self.prefix.partition_point(|&p| p <= r) - 1;
        let mut skip = r - self.prefix[i];
        let mut left = len;
        while left > 0 {
            let (boff, blen) = self.blocks[i];
            let take = (blen - skip).min(left);
            let off = k
                .checked_mul(self.tile_extent)
                .and_then(|x| x.checked_add(self.disp + boff + skip))
                .ok_or_else(|| crate::core::error::MpiError::new(c::MPI_ERR_ARG, "file offset overflows"))?;
            match out.last_mut() {
                Some(l) if l.0 + l.1 == off => l.1 += take,
                _ => out.push((off, take)),
            }
            left -= take;
            skip = 0;
            i += 1;
            if i == self.blocks.len() {
                i = 0;
                k += 1;
            }
        }
        Ok(out)
    }

    /// The absolute file offset of data position `pos` (`MPI_File_get_byte_offset`).
    pub fn byte_offset(&self, pos: u64) -> MpiResult<u64> {
        if self.tile_size == 0 {
            return Ok(self.disp);
        }
        Ok(self.segments(pos, 1)?[0].0)
    }

    /// Data bytes of the view that lie before file offset `size` (the view's end of file).
    pub fn data_before(&self, size: u64) -> u64 {
        if size <= self.disp || self.tile_size == 0 {
            return 0;
        }
        let rel = size - self.disp;
        let (k, rem) = match rel.checked_div(self.tile_extent) {
            Some(k) => (k, rel % self.tile_extent),
            None => (0, rel),
        };
        let mut n = k * self.tile_size;
        for &(o, l) in &self.blocks {
            if rem > o {
                n += l.min(rem - o);
            }
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::datatype::{lookup, typemap};
    use rstest::rstest;
    use std::sync::Arc;

    fn int() -> DtRef {
        lookup(c::MPI_INT).unwrap()
    }

    #[rstest]
    // contiguous bytes: one extent
    #[case(0, 1, 1, 0, 10, vec![(0, 10)])]
    // two blocks of 2 ints, 16 bytes apart: tile = 16 bytes of data over an extent of 24
    // bytes (the second block ends where the next tile starts: extents merge)
    #[case(100, 4, 2, 0, 20, vec![(100, 8), (116, 12)])]
    #[case(0, 4, 2, 12, 8, vec![(20, 8)])]
    #[case(0, 8, 2, 4, 16, vec![(4, 4), (32, 12)])]
    fn maps_data_to_file(
        #[case] disp: u64,
        #[case] stride: usize,
        #[case] nblk: usize,
        #[case] pos: u64,
        #[case] len: u64,
        #[case] want: Vec<(u64, u64)>,
    ) {
        let ft = if stride == 1 {
            crate::core::datatype::byte()
        } else {
            let mut d = typemap::hvector(nblk, 2, (stride * 4) as isize, &int()).unwrap();
            d.committed = true;
            Arc::new(d)
        };
        let v = View::new(disp, if stride == 1 { ft.clone() } else { int() }, ft, Rep::Native).unwrap();
        assert_eq!(v.segments(pos, len).unwrap(), want);
    }

    /// A derived type with its constructor recorded, as `MPI_Type_*` makes it.
    fn made(d: crate::core::datatype::Datatype, combiner: i32, ints: Vec<i32>, aints: Vec<isize>, old: &DtRef) -> DtRef {
        let mut d = d;
        d.contents = Some(Arc::new(crate::core::datatype::Contents {
            combiner,
            ints,
            aints,
            counts: vec![],
            types: vec![old.clone()],
        }));
        d.committed = true;
        Arc::new(d)
    }

    #[test]
    fn external32_views_follow_the_file_typemap() {
        let long = lookup(c::MPI_LONG).unwrap();
        // vector(2, 1, 3) of MPI_LONG (elements 0 and 3): 4 bytes each in external32, 12 apart
        let v = made(
            typemap::hvector(2, 1, 24, &long).unwrap(),
            c::MPI_COMBINER_VECTOR,
            vec![2, 1, 3],
            vec![],
            &long,
        );
        let vw = View::new(100, long.clone(), v.clone(), Rep::External32).unwrap();
        assert_eq!(vw.esize, 4);
        assert_eq!(vw.segments(0, 16).unwrap(), vec![(100, 4), (112, 8), (128, 4)]);
        assert_eq!(file_extent(&v, Rep::External32).unwrap(), 16);
        // hvector(2, 1, 20 bytes): taken as file bytes, longs at 0 and 20, tile extent 24
        let h = made(
            typemap::hvector(2, 1, 20, &long).unwrap(),
            c::MPI_COMBINER_HVECTOR,
            vec![2, 1],
            vec![20],
            &long,
        );
        let hw = View::new(0, long.clone(), h.clone(), Rep::External32).unwrap();
        assert_eq!(hw.segments(0, 12).unwrap(), vec![(0, 4), (20, 8)]);
        assert_eq!(file_extent(&h, Rep::External32).unwrap(), 24);
        // hvector(2, 1, 2 bytes): the 4-byte file items overlap: refused for a writable file
        let o = made(
            typemap::hvector(2, 1, 2, &long).unwrap(),
            c::MPI_COMBINER_HVECTOR,
            vec![2, 1],
            vec![2],
            &long,
        );
        assert_eq!(
            View::new(0, long.clone(), o.clone(), Rep::External32).unwrap_err().class,
            c::MPI_ERR_IO
        );
        assert!(View::checked(0, long, o, Rep::External32, true).is_ok());
    }

    #[test]
    fn rejects_decreasing_filetype() {
        let d = typemap::hindexed(&[1, 1], &[8, 0], &int()).unwrap();
        assert_eq!(View::new(0, int(), Arc::new(d), Rep::Native).unwrap_err().class, c::MPI_ERR_IO);
    }

    #[test]
    fn data_before_end() {
        let d = typemap::hvector(2, 1, 8, &int()).unwrap();
        let v = View::new(0, int(), Arc::new(d), Rep::Native).unwrap();
        // tile: ints at 0 and 8, extent 12
        assert_eq!(v.data_before(12), 8);
        assert_eq!(v.data_before(10), 6);
        assert_eq!(v.data_before(26), 16 + 2);
        assert_eq!(v.data_before(4), 4);
    }
}
