//! Datatypes: size, bounds and the flattened layout of one element, with pack/unpack, and the
//! process-wide table that gives user datatypes their handles.
//!
//! Predefined types map to their basic type; derived types (built in [`crate::core::datatype::typemap`]) keep
//! their layout as blocks (byte offset from the buffer address, length) in typemap order, and
//! the arguments they were made from so `MPI_Type_get_contents` can answer.

pub mod basic;
pub mod external32;
pub mod held;
pub mod typemap;

use crate::consts as c;
use crate::core::datatype::basic::BasicType;
use crate::core::datatype::typemap::Run;
use crate::core::error::{err, MpiError, MpiResult};
use crate::core::idmap::IdMap;
use crate::sched::lock::Lock;
use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

#[derive(Clone, Debug)]
pub struct Datatype {
    /// Bytes of data in one element.
    pub size: usize,
    pub lb: isize,
    pub extent: isize,
    /// Bounds of the data alone (`MPI_Type_get_true_extent`).
    pub true_lb: isize,
    pub true_extent: isize,
    /// Contiguous blocks (offset from the buffer address of the element, so including `lb`;
    /// length) of one element, in typemap order, adjacent blocks merged.
    pub blocks: Vec<(isize, usize)>,
    /// The uniform basic type, when there is one (reductions need it).
    pub basic: Option<BasicType>,
    /// Basic elements in one element (for MPI_Get_elements).
    pub elements: usize,
    pub committed: bool,
    pub name: String,
    /// The largest alignment of the basic types inside (a struct's extent is padded to it).
    pub align: usize,
    /// The typemap as runs of basic elements, kept when `blocks` cannot tell it (several basic
    /// types, or pair types with padding); empty for uniform types. See [`Datatype::runs`].
    pub(crate) runs: Vec<Run>,
    /// How the type was made; `None` for predefined types.
    pub contents: Option<Arc<Contents>>,
}

/// The constructor and arguments of a derived datatype (`MPI_Type_get_envelope/contents`).
#[derive(Debug)]
pub struct Contents {
    /// `MPI_COMBINER_*`.
    pub combiner: i32,
    pub ints: Vec<i32>,
    pub aints: Vec<isize>,
    /// The `MPI_Count` arguments of the large-count (`_c`) constructors.
    pub counts: Vec<i64>,
    pub types: Vec<DtRef>,
}

pub type DtRef = Arc<Datatype>;

impl Datatype {
    fn predefined(b: BasicType) -> Datatype {
        let size = b.size();
        let blocks = typemap::basic_blocks(b);
        Datatype {
            size,
            lb: 0,
            extent: b.extent() as isize,
            true_lb: 0,
            true_extent: blocks.iter().map(|&(o, l)| o + l as isize).max().unwrap_or(0),
            blocks,
            basic: Some(b),
            elements: if b.is_pair() { 2 } else { 1 },
            committed: true,
            name: b.name().to_string(),
            align: b.align(),
            runs: if b.is_pair() || b.size() != b.extent() {
                vec![Run { off: 0, ty: b, n: 1 }]
            } else {
                Vec::new()
            },
            contents: None,
        }
    }

    /// The handle of a predefined type (`None` for derived ones).
    pub fn predefined_handle(&self) -> Option<usize> {
        match self.contents {
            None => self.basic.map(|b| b.handle()),
            Some(_) => None,
        }
    }

    /// `MPI_COMBINER_*` of the type.
    pub fn combiner(&self) -> i32 {
        self.contents.as_ref().map_or(c::MPI_COMBINER_NAMED, |k| k.combiner)
    }

    /// A new derived type with this layout: uncommitted, unnamed, no contents yet.
    pub fn derived_copy(&self) -> Datatype {
        Datatype {
            committed: false,
            name: String::new(),
            contents: None,
            ..self.clone()
        }
    }

    /// The typemap as runs of basic elements, in order.
    pub fn runs(&self) -> Cow<'_, [Run]> {
        match (self.runs.is_empty(), self.basic) {
            (false, _) | (true, None) => Cow::Borrowed(&self.runs),
            (true, Some(b)) => Cow::Owned(typemap::runs_from_blocks(&self.blocks, b)),
        }
    }

    /// One element's bytes are one block starting at offset 0, and elements follow each other
    /// without gaps: `count` elements are `count * size` bytes at the buffer's address.
    pub fn is_contiguous(&self) -> bool {
        self.blocks.len() == 1 && self.blocks[0].0 == 0 && self.extent as usize == self.size && self.lb == 0
    }

    /// Basic elements in `bytes` of packed data of this type (`MPI_Get_elements`), or
    /// `MPI_UNDEFINED` when the data ends inside a basic element.
    pub fn elements_in(&self, bytes: u64) -> i64 {
        if self.size == 0 {
            return 0;
        }
        let mut n = bytes / self.size as u64 * self.elements as u64;
        let mut rem = (bytes % self.size as u64) as usize;
        if rem > 0 {
            for r in self.runs().iter() {
                let per = r.ty.size();
                let k = (rem / per).min(r.n);
                n += (k * if r.ty.is_pair() { 2 } else { 1 }) as u64;
                rem -= k * per;
                if k < r.n || rem == 0 {
                    break;
                }
            }
            if rem > 0 {
                return c::MPI_UNDEFINED as i64;
            }
        }
        n as i64
    }

    /// Bytes of packed data that hold the first `n` basic elements of a sequence of elements of
    /// this type (`MPI_Status_set_elements`; the inverse of [`Datatype::elements_in`]). Half a
    /// pair is its value member.
    pub fn bytes_for_elements(&self, n: u64) -> u64 {
        if self.elements == 0 {
            return 0;
        }
        let per_elem = self.elements as u64;
        let mut bytes = n / per_elem * self.size as u64;
        let mut rem = n % per_elem;
        for r in self.runs().iter() {
            if rem == 0 {
                break;
            }
            let per = if r.ty.is_pair() { 2 } else { 1 };
            let k = (rem / per).min(r.n as u64);
            bytes += k * r.ty.size() as u64;
            rem -= k * per;
            if k < r.n as u64 && rem > 0 {
                bytes += r.ty.pair_layout().map_or(0, |p| p.0) as u64;
                rem = 0;
            }
        }
        bytes
    }

    /// Copies `count` elements at `buf` to `out`, which receives `count * size` bytes.
    ///
    /// # Safety
    /// `buf` must hold `count` elements of this type and `out` have room for their data.
    pub unsafe fn pack_to(&self, buf: *const u8, count: usize, out: *mut u8) -> usize {
        if self.is_contiguous() {
            std::ptr::copy_nonoverlapping(buf, out, count * self.size);
            return count * self.size;
        }
        let mut pos = 0;
        for i in 0..count {
            let base = buf.wrapping_offset(i as isize * self.extent);
            for &(off, len) in &self.blocks {
                std::ptr::copy_nonoverlapping(base.wrapping_offset(off), out.add(pos), len);
                pos += len;
            }
        }
        pos
    }

    /// Copies `count` elements at `buf` into `out` (appended).
    ///
    /// # Safety
    /// `buf` must hold `count` elements of this type.
    pub unsafe fn pack(&self, buf: *const u8, count: usize, out: &mut Vec<u8>) {
        let n = count * self.size;
        out.reserve(n);
        let len = out.len();
        self.pack_to(buf, count, out.as_mut_ptr().add(len));
        out.set_len(len + n);
    }

    /// Copies packed bytes `data` into at most `count` elements at `buf`; a trailing partial
    /// element is filled as far as the data goes. Returns the bytes consumed.
    ///
    /// # Safety
    /// `buf` must have room for `count` elements of this type.
    pub unsafe fn unpack(&self, data: &[u8], buf: *mut u8, count: usize) -> usize {
        let total = data.len().min(count * self.size);
        if self.is_contiguous() {
            crate::transport::copy::bytes(data.as_ptr(), buf, total);
            return total;
        }
        let mut pos = 0;
        'outer: for i in 0..count {
            let base = buf.wrapping_offset(i as isize * self.extent);
            for &(off, len) in &self.blocks {
                if pos >= total {
                    break 'outer;
                }
                let n = len.min(total - pos);
                std::ptr::copy_nonoverlapping(data.as_ptr().add(pos), base.wrapping_offset(off), n);
                pos += n;
            }
        }
        pos
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

/// User datatype handles are `USER_BASE + n`, `n < USER_SPAN`, not reused until the counter
/// wraps (after `USER_SPAN` creations), so a freed handle stays invalid.
pub const USER_BASE: usize = 0x3000_0000;
const USER_SPAN: usize = 0x1000_0000;

struct Users {
    types: IdMap<usize, DtRef>,
    next: usize,
    /// Names given to predefined types, per (subrank, handle): each subrank is its own process.
    names: IdMap<(usize, usize), String>,
}

static USERS: Lock<Users> = Lock::new(Users {
    types: HashMap::with_hasher(BuildHasherDefault::new()),
    next: 0,
    names: HashMap::with_hasher(BuildHasherDefault::new()),
});

fn is_predefined(h: usize) -> bool {
    (PREDEF_BASE..PREDEF_END).contains(&h) && BasicType::from_handle(h).is_some()
}

fn bad_handle(h: usize) -> MpiError {
    MpiError::new(
        c::MPI_ERR_TYPE,
        format!("invalid datatype handle {h:#x} (freed, or not a datatype)"),
    )
}

/// The predefined datatype a handle names, without touching reference counts (fast paths);
/// `None` for user datatypes and invalid handles.
pub fn predefined(h: usize) -> Option<&'static Datatype> {
    h.checked_sub(PREDEF_BASE).and_then(|i| table().get(i)).and_then(|d| d.as_deref())
}

/// The table's own `Arc` of a predefined datatype (smp7: lent by `abi::collteam` without a
/// clone, whose count every caller would write).
pub fn predefined_arc(h: usize) -> Option<&'static DtRef> {
    h.checked_sub(PREDEF_BASE).and_then(|i| table().get(i)).and_then(|d| d.as_ref())
}

/// Element size + 1 of each predefined datatype known to be contiguous (0: not known yet,
/// or not contiguous), indexed by handle - PREDEF_BASE: a single load on the fast paths.
static CONTIG_SIZE: [AtomicUsize; PREDEF_END - PREDEF_BASE] = [const { AtomicUsize::new(0) }; PREDEF_END - PREDEF_BASE];

/// Element size of `h` when it is a contiguous predefined datatype (the request-free paths
/// of MPI_Send and MPI_Recv); None otherwise.
#[inline(always)]
pub fn contiguous_size(h: usize) -> Option<usize> {
    let i = h.wrapping_sub(PREDEF_BASE);
    if i < CONTIG_SIZE.len() {
        let v = CONTIG_SIZE[i].load(Ordering::Relaxed);
        if v != 0 {
            return Some(v - 1);
        }
    }
    contiguous_size_slow(h)
}

#[cold]
#[inline(never)]
fn contiguous_size_slow(h: usize) -> Option<usize> {
    let d = predefined(h).filter(|d| d.is_contiguous())?;
    CONTIG_SIZE[h - PREDEF_BASE].store(d.size + 1, Ordering::Relaxed);
    Some(d.size)
}

/// The datatype a handle names.
pub fn lookup(h: usize) -> MpiResult<DtRef> {
    if h == c::MPI_DATATYPE_NULL {
        return err(c::MPI_ERR_TYPE, "MPI_DATATYPE_NULL is not a valid datatype");
    }
    if let Some(Some(d)) = h.checked_sub(PREDEF_BASE).and_then(|i| table().get(i)) {
        return Ok(d.clone());
    }
    if (USER_BASE..USER_BASE + USER_SPAN).contains(&h) {
        if let Some(d) = USERS.lock().types.get(&h) {
            return Ok(d.clone());
        }
    }
    Err(bad_handle(h))
}

/// Gives a derived datatype a new handle.
pub fn register(d: DtRef) -> MpiResult<usize> {
    let mut u = USERS.lock();
    for _ in 0..USER_SPAN {
        let h = USER_BASE + u.next;
        u.next = (u.next + 1) % USER_SPAN;
        if let std::collections::hash_map::Entry::Vacant(e) = u.types.entry(h) {
            e.insert(d);
            return Ok(h);
        }
    }
    err(c::MPI_ERR_NO_MEM, "too many datatypes")
}

/// `h` names a datatype that `MPI_Type_free` may free.
pub fn freeable(h: usize) -> MpiResult<()> {
    if is_predefined(h) {
        return err(c::MPI_ERR_TYPE, "predefined datatypes cannot be freed");
    }
    lookup(h).map(|_| ())
}

/// `MPI_Type_free`: the handle becomes invalid; operations that hold the type keep it alive.
pub fn free(h: usize) -> MpiResult<()> {
    freeable(h)?;
    USERS.lock().types.remove(&h).map(|_| ()).ok_or_else(|| bad_handle(h))
}

/// Applies `f` to the user datatype `h` (cloned first if an operation still holds it).
fn modify(h: usize, f: impl FnOnce(&mut Datatype)) -> MpiResult<()> {
    let mut u = USERS.lock();
    match u.types.get_mut(&h) {
        Some(d) => {
            f(Arc::make_mut(d));
            Ok(())
        }
        None => Err(bad_handle(h)),
    }
}

/// `MPI_Type_commit` (a no-op for predefined types).
pub fn commit(h: usize) -> MpiResult<()> {
    if lookup(h)?.committed {
        return Ok(());
    }
    modify(h, |d| d.committed = true)
}

/// `MPI_Type_set_name`.
pub fn set_name(h: usize, name: &str) -> MpiResult<()> {
    lookup(h)?;
    if is_predefined(h) {
        USERS.lock().names.insert((crate::sched::rank(), h), name.to_string());
        return Ok(());
    }
    modify(h, |d| d.name = name.to_string())
}

/// `MPI_Type_get_name`.
pub fn get_name(h: usize) -> MpiResult<String> {
    let d = lookup(h)?;
    if is_predefined(h) {
        if let Some(n) = USERS.lock().names.get(&(crate::sched::rank(), h)) {
            return Ok(n.clone());
        }
    }
    Ok(d.name.clone())
}

/// The predefined MPI_BYTE.
pub fn byte() -> DtRef {
    lookup(c::MPI_BYTE).expect("MPI_BYTE is predefined")
}

/// `MPI_Type_match_size`: the predefined Fortran-sized type of a class and byte size, as MPICH
/// answers (`MPI_INTEGERn`, `MPI_REALn`, `MPI_COMPLEXn`). Handles come from the header.
pub fn match_size(class: i32, size: i32) -> MpiResult<usize> {
    let h = match (class, size) {
        (c::MPI_TYPECLASS_INTEGER, 1) => c::MPI_INTEGER1,
        (c::MPI_TYPECLASS_INTEGER, 2) => c::MPI_INTEGER2,
        (c::MPI_TYPECLASS_INTEGER, 4) => c::MPI_INTEGER4,
        (c::MPI_TYPECLASS_INTEGER, 8) => c::MPI_INTEGER8,
        (c::MPI_TYPECLASS_INTEGER, 16) => c::MPI_INTEGER16,
        (c::MPI_TYPECLASS_REAL, 4) => c::MPI_REAL4,
        (c::MPI_TYPECLASS_REAL, 8) => c::MPI_REAL8,
        (c::MPI_TYPECLASS_REAL, 16) => c::MPI_REAL16,
        (c::MPI_TYPECLASS_COMPLEX, 8) => c::MPI_COMPLEX8,
        (c::MPI_TYPECLASS_COMPLEX, 16) => c::MPI_COMPLEX16,
        (c::MPI_TYPECLASS_COMPLEX, 32) => c::MPI_COMPLEX32,
        (c::MPI_TYPECLASS_INTEGER | c::MPI_TYPECLASS_REAL | c::MPI_TYPECLASS_COMPLEX, _) => {
            return err(c::MPI_ERR_ARG, format!("no predefined type of class {class} has size {size}"))
        }
        _ => return err(c::MPI_ERR_ARG, format!("invalid type class {class}")),
    };
    Ok(h)
}

/// `MPI_Type_get_value_index`: the predefined pair type of a value and an index type, or
/// `MPI_DATATYPE_NULL`.
pub fn value_index(value: usize, index: usize) -> usize {
    match (value, index) {
        (c::MPI_FLOAT, c::MPI_INT) => c::MPI_FLOAT_INT,
        (c::MPI_DOUBLE, c::MPI_INT) => c::MPI_DOUBLE_INT,
        (c::MPI_LONG, c::MPI_INT) => c::MPI_LONG_INT,
        (c::MPI_INT, c::MPI_INT) => c::MPI_2INT,
        (c::MPI_SHORT, c::MPI_INT) => c::MPI_SHORT_INT,
        (c::MPI_LONG_DOUBLE, c::MPI_INT) => c::MPI_LONG_DOUBLE_INT,
        (c::MPI_REAL, c::MPI_REAL) => c::MPI_2REAL,
        (c::MPI_DOUBLE_PRECISION, c::MPI_DOUBLE_PRECISION) => c::MPI_2DOUBLE_PRECISION,
        (c::MPI_INTEGER, c::MPI_INTEGER) => c::MPI_2INTEGER,
        _ => c::MPI_DATATYPE_NULL,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::datatype::typemap::{contiguous, hindexed, hvector, resized, structure, subarray, Order};
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

    // True extents as MPICH reports them: the data of the pair types, without tail padding.
    #[rstest]
    #[case(c::MPI_DOUBLE_INT, 12)]
    #[case(c::MPI_SHORT_INT, 8)]
    #[case(c::MPI_LONG_DOUBLE_INT, 20)]
    #[case(c::MPI_LONG_DOUBLE, 16)]
    fn predefined_true_extent(#[case] h: usize, #[case] text: isize) {
        let d = lookup(h).unwrap();
        assert_eq!((d.true_lb, d.true_extent), (0, text));
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
        assert_eq!(lookup(USER_BASE + USER_SPAN - 1).unwrap_err().class, c::MPI_ERR_TYPE);
    }

    fn int() -> DtRef {
        lookup(c::MPI_INT).unwrap()
    }

    /// Packs `count` elements of `d` from an array of i32 values 0.., unpacks them into a
    /// zeroed array, and returns (packed values, array after unpacking).
    fn round_trip(d: &Datatype, count: usize, base: usize) -> (Vec<i32>, Vec<i32>) {
        let src: Vec<i32> = (0..64).collect();
        let mut packed = Vec::new();
        unsafe { d.pack(src.as_ptr().add(base) as *const u8, count, &mut packed) };
        assert_eq!(packed.len(), count * d.size);
        let vals: Vec<i32> = packed.chunks(4).map(|c| i32::from_ne_bytes(c.try_into().unwrap())).collect();
        let mut dst = vec![-1i32; 64];
        let used = unsafe { d.unpack(&packed, dst.as_mut_ptr().add(base) as *mut u8, count) };
        assert_eq!(used, packed.len());
        (vals, dst)
    }

    #[rstest]
    #[case(hvector(3, 2, 5 * 4, &int()).unwrap(), 2, 0, vec![0, 1, 5, 6, 10, 11, 12, 13, 17, 18, 22, 23])]
    #[case(hvector(3, 1, -2 * 4, &int()).unwrap(), 1, 8, vec![8, 6, 4])]
    #[case(hindexed(&[2, 1], &[12, -4], &int()).unwrap(), 2, 4, vec![7, 8, 3, 13, 14, 9])]
    #[case(subarray(&[4, 4], &[2, 2], &[1, 1], Order::C, &int()).unwrap(), 2, 0, vec![5, 6, 9, 10, 21, 22, 25, 26])]
    #[case(resized(&int(), 0, 12).unwrap(), 3, 0, vec![0, 3, 6])]
    #[case(contiguous(5, &int()).unwrap(), 2, 1, (1..11).collect())]
    fn pack_unpack_round_trip(#[case] d: Datatype, #[case] count: usize, #[case] base: usize, #[case] want: Vec<i32>) {
        let (vals, dst) = round_trip(&d, count, base);
        assert_eq!(vals, want);
        for (i, &v) in dst.iter().enumerate() {
            let i = i as i32;
            assert!(v == -1 || v == i, "element {i} got {v}");
            assert_eq!(v == i, want.contains(&i), "element {i}");
        }
    }

    #[test]
    fn struct_round_trip_and_elements() {
        #[repr(C)]
        #[derive(Clone, Copy, Debug, PartialEq)]
        struct S {
            c: u8,
            d: f64,
            i: [i32; 3],
        }
        let (ch, db) = (lookup(c::MPI_CHAR).unwrap(), lookup(c::MPI_DOUBLE).unwrap());
        let st = structure(&[1, 1, 3], &[0, 8, 16], &[&ch, &db, &int()]).unwrap();
        assert_eq!((st.size, st.extent, st.elements, st.basic), (21, 32, 5, None));
        assert_eq!(st.extent as usize, std::mem::size_of::<S>());
        let src = [
            S {
                c: 7,
                d: 1.5,
                i: [1, 2, 3],
            },
            S {
                c: 9,
                d: -2.0,
                i: [4, 5, 6],
            },
        ];
        let mut packed = Vec::new();
        unsafe { st.pack(src.as_ptr() as *const u8, 2, &mut packed) };
        assert_eq!(packed.len(), 42);
        let mut dst = [S { c: 0, d: 0.0, i: [0; 3] }; 2];
        unsafe { st.unpack(&packed, dst.as_mut_ptr() as *mut u8, 2) };
        assert_eq!(dst, src);
        // Get_elements: whole elements, then the basic elements of a partial one.
        assert_eq!(st.elements_in(42), 10);
        assert_eq!(st.elements_in(21 + 9), 7);
        assert_eq!(st.elements_in(21 + 13), 8);
        assert_eq!(st.elements_in(21 + 3), c::MPI_UNDEFINED as i64);
        for (elems, bytes) in [(0, 0), (1, 1), (2, 9), (4, 17), (5, 21), (7, 30), (10, 42)] {
            assert_eq!(st.bytes_for_elements(elems), bytes, "{elems} elements");
            assert_eq!(st.elements_in(bytes), elems as i64);
        }
        let v = hvector(2, 2, 16, &int()).unwrap();
        assert_eq!(
            (v.elements_in(16), v.elements_in(24), v.elements_in(6)),
            (4, 6, c::MPI_UNDEFINED as i64)
        );
    }

    #[test]
    fn user_table_lifecycle() {
        let h = register(Arc::new(contiguous(4, &int()).unwrap())).unwrap();
        assert!(h >= USER_BASE);
        let d = lookup(h).unwrap();
        assert!(!d.committed);
        commit(h).unwrap();
        assert!(lookup(h).unwrap().committed);
        assert!(!d.committed, "a held reference keeps its old state");
        set_name(h, "four ints").unwrap();
        assert_eq!(get_name(h).unwrap(), "four ints");
        free(h).unwrap();
        assert_eq!(lookup(h).unwrap_err().class, c::MPI_ERR_TYPE);
        assert_eq!(free(h).unwrap_err().class, c::MPI_ERR_TYPE);
        assert_eq!(d.size, 16, "a pending operation's reference survives the free");
        let h2 = register(d).unwrap();
        assert_ne!(h2, h, "handles are not reused at once");
        free(h2).unwrap();
        assert_eq!(free(c::MPI_INT).unwrap_err().class, c::MPI_ERR_TYPE);
        commit(c::MPI_INT).unwrap();
        assert_eq!(get_name(c::MPI_INT).unwrap(), "MPI_INT");
    }

    #[rstest]
    #[case(c::MPI_TYPECLASS_INTEGER, 4, Ok(c::MPI_INTEGER4))]
    #[case(c::MPI_TYPECLASS_REAL, 8, Ok(c::MPI_REAL8))]
    #[case(c::MPI_TYPECLASS_COMPLEX, 16, Ok(c::MPI_COMPLEX16))]
    #[case(c::MPI_TYPECLASS_INTEGER, 3, Err(c::MPI_ERR_ARG))]
    #[case(77, 4, Err(c::MPI_ERR_ARG))]
    fn type_match_size(#[case] class: i32, #[case] size: i32, #[case] want: Result<usize, i32>) {
        assert_eq!(match_size(class, size).map_err(|e| e.class), want);
    }

    #[test]
    fn value_index_pairs() {
        assert_eq!(value_index(c::MPI_DOUBLE, c::MPI_INT), c::MPI_DOUBLE_INT);
        assert_eq!(value_index(c::MPI_INT, c::MPI_DOUBLE), c::MPI_DATATYPE_NULL);
    }
}
