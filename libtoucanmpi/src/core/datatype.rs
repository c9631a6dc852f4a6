//! Datatypes: size, extent and the flattened layout of one element, with pack/unpack.
//! Predefined types map to their basic type; derived constructors build on the same layout.

use super::basic::BasicType;
use super::error::{err, MpiResult};
use crate::abi::consts as c;
use std::sync::{Arc, OnceLock};

#[derive(Debug)]
pub struct Datatype {
    /// Bytes of data in one element.
    pub size: usize,
    pub lb: isize,
    pub extent: isize,
    /// Contiguous blocks (offset from the element's start, length) of one element.
    pub blocks: Vec<(isize, usize)>,
    /// The uniform basic type, when there is one (reductions need it).
    pub basic: Option<BasicType>,
    /// Basic elements in one element (for MPI_Get_elements).
    pub elements: usize,
    pub committed: bool,
    pub name: String,
}

pub type DtRef = Arc<Datatype>;

impl Datatype {
    fn predefined(b: BasicType) -> Datatype {
        let size = b.size();
        Datatype {
            size,
            lb: 0,
            extent: b.extent() as isize,
            blocks: pair_blocks(b),
            basic: Some(b),
            elements: if b.is_pair() { 2 } else { 1 },
            committed: true,
            name: b.name().to_string(),
        }
    }

    /// One element's bytes are one block starting at offset 0, and elements follow each other
    /// without gaps: `count` elements are `count * size` bytes at the buffer's address.
    pub fn is_contiguous(&self) -> bool {
        self.blocks.len() == 1 && self.blocks[0].0 == 0 && self.extent as usize == self.size && self.lb == 0
    }

    /// Copies `count` elements at `buf` into `out` (appended).
    ///
    /// # Safety
    /// `buf` must hold `count` elements of this type.
    pub unsafe fn pack(&self, buf: *const u8, count: usize, out: &mut Vec<u8>) {
        if self.is_contiguous() {
            out.extend_from_slice(std::slice::from_raw_parts(buf, count * self.size));
            return;
        }
        for i in 0..count {
            let base = buf.offset(i as isize * self.extent);
            for &(off, len) in &self.blocks {
                out.extend_from_slice(std::slice::from_raw_parts(base.offset(off), len));
            }
        }
    }

    /// Copies packed bytes `data` into at most `count` elements at `buf`; a trailing partial
    /// element is filled as far as the data goes. Returns the bytes consumed.
    ///
    /// # Safety
    /// `buf` must have room for `count` elements of this type.
    pub unsafe fn unpack(&self, data: &[u8], buf: *mut u8, count: usize) -> usize {
        let total = data.len().min(count * self.size);
        if self.is_contiguous() {
            std::ptr::copy_nonoverlapping(data.as_ptr(), buf, total);
            return total;
        }
        let mut pos = 0;
        'outer: for i in 0..count {
            let base = buf.offset(i as isize * self.extent);
            for &(off, len) in &self.blocks {
                if pos >= total {
                    break 'outer;
                }
                let n = len.min(total - pos);
                std::ptr::copy_nonoverlapping(data.as_ptr().add(pos), base.offset(off), n);
                pos += n;
            }
        }
        pos
    }
}

/// Data blocks of one element of a basic type (pair types have padding between members).
fn pair_blocks(b: BasicType) -> Vec<(isize, usize)> {
    match b.pair_layout() {
        Some((vsize, ioff)) if ioff != vsize => vec![(0, vsize), (ioff as isize, 4)],
        _ => vec![(0, b.size())],
    }
}

/// Predefined datatypes indexed by handle - PREDEF_BASE (handles 0x200..0x300).
fn table() -> &'static [Option<DtRef>] {
    static T: OnceLock<Vec<Option<DtRef>>> = OnceLock::new();
    T.get_or_init(|| {
        (PREDEF_BASE..PREDEF_END)
            .map(|h| BasicType::from_handle(h).map(|b| Arc::new(Datatype::predefined(b))))
            .collect()
    })
}

const PREDEF_BASE: usize = c::MPI_DATATYPE_NULL;
const PREDEF_END: usize = PREDEF_BASE + 0x100;

/// The datatype a handle names.
pub fn lookup(h: usize) -> MpiResult<DtRef> {
    if h == c::MPI_DATATYPE_NULL {
        return err(c::MPI_ERR_TYPE, "MPI_DATATYPE_NULL is not a valid datatype");
    }
    match h.checked_sub(PREDEF_BASE).and_then(|i| table().get(i)) {
        Some(Some(d)) => Ok(d.clone()),
        _ => err(c::MPI_ERR_TYPE, format!("invalid datatype handle {h:#x}")),
    }
}

/// The predefined MPI_BYTE.
pub fn byte() -> DtRef {
    lookup(c::MPI_BYTE).expect("MPI_BYTE is predefined")
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case(c::MPI_INT, 4, 4, true)]
    #[case(c::MPI_DOUBLE, 8, 8, true)]
    #[case(c::MPI_DOUBLE_INT, 12, 16, false)]
    #[case(c::MPI_SHORT_INT, 6, 8, false)]
    #[case(c::MPI_2INT, 8, 8, true)]
    #[case(c::MPI_BYTE, 1, 1, true)]
    fn predefined_layout(#[case] h: usize, #[case] size: usize, #[case] extent: isize, #[case] contig: bool) {
        let d = lookup(h).unwrap();
        assert_eq!((d.size, d.extent, d.is_contiguous()), (size, extent, contig));
    }

    #[test]
    fn pair_pack_skips_padding() {
        let d = lookup(c::MPI_DOUBLE_INT).unwrap();
        let mut src = [0u8; 32];
        for (i, b) in src.iter_mut().enumerate() {
            *b = i as u8;
        }
        let mut packed = Vec::new();
        unsafe { d.pack(src.as_ptr(), 2, &mut packed) };
        assert_eq!(packed.len(), 24);
        assert_eq!(&packed[8..12], &[8, 9, 10, 11]);
        assert_eq!(packed[12], 16);
        let mut dst = [0xffu8; 32];
        let used = unsafe { d.unpack(&packed, dst.as_mut_ptr(), 2) };
        assert_eq!(used, 24);
        assert_eq!(&dst[..12], &src[..12]);
        assert_eq!(dst[12], 0xff, "padding untouched");
        assert_eq!(&dst[16..28], &src[16..28]);
    }

    #[test]
    fn null_and_garbage_handles_fail() {
        assert_eq!(lookup(c::MPI_DATATYPE_NULL).unwrap_err().class, c::MPI_ERR_TYPE);
        assert_eq!(lookup(0xdead).unwrap_err().class, c::MPI_ERR_TYPE);
    }
}
