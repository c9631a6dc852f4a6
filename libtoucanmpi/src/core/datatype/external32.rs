//! The "external32" data representation (MPI standard, "External Data Representation"):
//! every basic element is stored big-endian with a fixed size (`MPI_LONG` and
//! `MPI_UNSIGNED_LONG` take 4 bytes, `MPI_WCHAR` 2, `long double` is an IEEE binary128),
//! elements packed one after the other in typemap order. Used by `MPI_Pack_external`,
//! `MPI_Unpack_external` and `MPI_Pack_external_size`.

use crate::core::datatype::basic::BasicType;
use crate::core::datatype::Datatype;

/// One scalar field of a basic element, as stored natively and in external32.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    /// An integer of `native` bytes stored in `ext` bytes (truncated on packing; sign- or
    /// zero-extended on unpacking).
    Int { native: usize, ext: usize, signed: bool },
    /// An IEEE float of `n` bytes: only the byte order changes.
    Float(usize),
    /// x87 80-bit extended precision in a 16-byte slot, stored as IEEE binary128.
    X87,
    /// One uninterpreted byte (`MPI_BYTE`, `MPI_PACKED`, characters).
    Byte,
}

impl Field {
    /// Bytes the field occupies natively (x87 uses 10 of its 16-byte slot).
    fn native(self) -> usize {
        match self {
            Field::Int { native, .. } => native,
            Field::Float(n) => n,
            Field::X87 => 10,
            Field::Byte => 1,
        }
    }

    fn ext(self) -> usize {
        match self {
            Field::Int { ext, .. } => ext,
            Field::Float(n) => n,
            Field::X87 => 16,
            Field::Byte => 1,
        }
    }
}

const fn int(native: usize, ext: usize, signed: bool) -> Field {
    Field::Int { native, ext, signed }
}

/// The fields of one basic element, with their byte offsets in the native element.
fn fields(b: BasicType) -> Vec<(usize, Field)> {
    use BasicType::*;
    let one = |f: Field| vec![(0, f)];
    let two = |f: Field, off: usize| vec![(0, f), (off, f)];
    let c_int = int(4, 4, true);
    match b {
        Byte | Packed | Char | Character => one(Field::Byte),
        SignedChar | Int8 | Integer1 => one(int(1, 1, true)),
        UnsignedChar | Uint8 | CBool | CxxBool => one(int(1, 1, false)),
        Short | Int16 | Integer2 => one(int(2, 2, true)),
        UnsignedShort | Uint16 => one(int(2, 2, false)),
        Int | Int32 | Integer | Integer4 | Logical => one(c_int),
        Unsigned | Uint32 => one(int(4, 4, false)),
        Long => one(int(8, 4, true)),
        UnsignedLong => one(int(8, 4, false)),
        LongLong | Int64 | Integer8 | Aint | Offset | Count => one(int(8, 8, true)),
        UnsignedLongLong | Uint64 => one(int(8, 8, false)),
        Integer16 => one(int(16, 16, true)),
        Wchar => one(int(4, 2, true)),
        Float | Real | Real4 => one(Field::Float(4)),
        Double | DoublePrecision | Real8 => one(Field::Float(8)),
        Real16 => one(Field::Float(16)),
        LongDouble => one(Field::X87),
        CFloatComplex | CxxFloatComplex | Complex | Complex8 | TwoReal => two(Field::Float(4), 4),
        CDoubleComplex | CxxDoubleComplex | DoubleComplex | Complex16 | TwoDoublePrecision => two(Field::Float(8), 8),
        Complex32 => two(Field::Float(16), 16),
        CLongDoubleComplex | CxxLongDoubleComplex => two(Field::X87, 16),
        TwoInt | TwoInteger => two(c_int, 4),
        FloatInt => vec![(0, Field::Float(4)), (4, c_int)],
        DoubleInt => vec![(0, Field::Float(8)), (8, c_int)],
        LongInt => vec![(0, int(8, 4, true)), (8, c_int)],
        ShortInt => vec![(0, int(2, 2, true)), (4, c_int)],
        LongDoubleInt => vec![(0, Field::X87), (16, c_int)],
    }
}

/// Bytes of one basic element in external32.
pub fn basic_size(b: BasicType) -> usize {
    fields(b).iter().map(|f| f.1.ext()).sum()
}

/// Bytes of `count` elements of `d` in external32, or `None` on overflow.
pub fn size(d: &Datatype, count: usize) -> Option<usize> {
    let one = d
        .runs()
        .iter()
        .try_fold(0usize, |acc, r| r.n.checked_mul(basic_size(r.ty))?.checked_add(acc))?;
    one.checked_mul(count)
}

/// x87 extended (little-endian, 10 significant bytes) to IEEE binary128 bits.
fn x87_to_quad(x: &[u8]) -> u128 {
    let m = u64::from_le_bytes(x[..8].try_into().expect("8 bytes"));
    let se = u16::from_le_bytes([x[8], x[9]]);
    let (sign, mut exp) = ((se >> 15) as u128, (se & 0x7fff) as u128);
    if exp == 0 && m >> 63 == 1 {
        // A pseudo-denormal has the value of the smallest normal exponent.
        exp = 1;
    }
    let frac = ((m & !(1 << 63)) as u128) << 49;
    sign << 127 | exp << 112 | frac
}

/// IEEE binary128 bits to x87 extended (16 bytes, the 6 padding bytes zero). The fraction is
/// truncated to the 63 bits x87 keeps; a NaN stays a NaN.
fn quad_to_x87(q: u128) -> [u8; 16] {
    let sign = (q >> 127) as u16;
    let exp = ((q >> 112) & 0x7fff) as u16;
    let frac = q & ((1u128 << 112) - 1);
    let mut m = (frac >> 49) as u64;
    if exp == 0x7fff && frac != 0 && m == 0 {
        m = 1 << 62;
    }
    if exp != 0 {
        m |= 1 << 63;
    }
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&m.to_le_bytes());
    out[8..10].copy_from_slice(&(sign << 15 | exp).to_le_bytes());
    out
}

/// Writes field `f` of native bytes `src` as external32 into `dst`.
fn encode(f: Field, src: &[u8], dst: &mut [u8]) {
    match f {
        Field::Byte => dst[0] = src[0],
        Field::Float(n) => {
            for i in 0..n {
                dst[i] = src[n - 1 - i];
            }
        }
        Field::Int { ext, .. } => {
            // Little-endian native: the low `ext` bytes, reversed.
            for i in 0..ext {
                dst[i] = src[ext - 1 - i];
            }
        }
        Field::X87 => dst[..16].copy_from_slice(&x87_to_quad(src).to_be_bytes()),
    }
}

/// Reads field `f` from external32 bytes `src` into native bytes `dst`.
fn decode(f: Field, src: &[u8], dst: &mut [u8]) {
    match f {
        Field::Byte => dst[0] = src[0],
        Field::Float(n) => {
            for i in 0..n {
                dst[i] = src[n - 1 - i];
            }
        }
        Field::Int { native, ext, signed } => {
            let negative = signed && src[0] & 0x80 != 0;
            for i in 0..native {
                dst[i] = if i < ext {
                    src[ext - 1 - i]
                } else if negative {
                    0xff
                } else {
                    0
                };
            }
        }
        Field::X87 => {
            let q = u128::from_be_bytes(src[..16].try_into().expect("16 bytes"));
            dst[..16].copy_from_slice(&quad_to_x87(q));
        }
    }
}

/// Calls `f` with the native offset (from the buffer address) and the field of every scalar
/// of `count` elements of `d`, in typemap order.
fn walk(d: &Datatype, count: usize, mut f: impl FnMut(isize, Field)) {
    let plan: Vec<_> = d
        .runs()
        .iter()
        .map(|r| (r.off, r.n, r.ty.extent() as isize, fields(r.ty)))
        .collect();
    for i in 0..count {
        let base = i as isize * d.extent;
        for (off, n, stride, fs) in &plan {
            for k in 0..*n {
                let el = base + off + k as isize * stride;
                for &(foff, field) in fs {
                    f(el + foff as isize, field);
                }
            }
        }
    }
}

/// Packs `count` elements of `d` at `buf` into `out`, which must hold [`size`] bytes.
///
/// # Safety
/// `buf` must hold `count` elements of `d`.
pub unsafe fn pack(d: &Datatype, buf: *const u8, count: usize, out: &mut [u8]) {
    let mut pos = 0;
    walk(d, count, |off, f| {
        // SAFETY: the caller guarantees the elements' data is readable at these offsets.
        let src = unsafe { std::slice::from_raw_parts(buf.wrapping_offset(off), f.native()) };
        encode(f, src, &mut out[pos..pos + f.ext()]);
        pos += f.ext();
    });
}

/// Unpacks `count` elements of `d` from `data` (at least [`size`] bytes) into `buf`.
///
/// # Safety
/// `buf` must have room for `count` elements of `d`.
pub unsafe fn unpack(d: &Datatype, data: &[u8], buf: *mut u8, count: usize) {
    let mut pos = 0;
    walk(d, count, |off, f| {
        let mut tmp = [0u8; 16];
        decode(f, &data[pos..pos + f.ext()], &mut tmp);
        // SAFETY: the caller guarantees room for the elements at these offsets.
        unsafe { std::ptr::copy_nonoverlapping(tmp.as_ptr(), buf.wrapping_offset(off), f.native()) };
        pos += f.ext();
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::consts as c;
    use crate::core::datatype::lookup;
    use crate::core::datatype::typemap::{hvector, structure};
    use rstest::rstest;

    /// Packs one element of predefined type `h` from native bytes.
    fn enc(h: usize, native: &[u8]) -> Vec<u8> {
        let d = lookup(h).unwrap();
        let mut out = vec![0u8; size(&d, 1).unwrap()];
        let mut src = native.to_vec();
        src.resize(d.extent as usize, 0);
        unsafe { pack(&d, src.as_ptr(), 1, &mut out) };
        out
    }

    fn dec(h: usize, ext: &[u8]) -> Vec<u8> {
        let d = lookup(h).unwrap();
        let mut out = vec![0u8; d.extent as usize];
        unsafe { unpack(&d, ext, out.as_mut_ptr(), 1) };
        out
    }

    #[rstest]
    #[case(c::MPI_INT, 1i32.to_le_bytes().to_vec(), vec![0, 0, 0, 1])]
    #[case(c::MPI_INT, (-2i32).to_le_bytes().to_vec(), vec![0xff, 0xff, 0xff, 0xfe])]
    #[case(c::MPI_SHORT, 0x1234i16.to_le_bytes().to_vec(), vec![0x12, 0x34])]
    #[case(c::MPI_LONG, (-3i64).to_le_bytes().to_vec(), vec![0xff, 0xff, 0xff, 0xfd])]
    #[case(c::MPI_UNSIGNED_LONG, 0x0102_0304u64.to_le_bytes().to_vec(), vec![1, 2, 3, 4])]
    #[case(c::MPI_LONG_LONG, 0x0102_0304_0506_0708i64.to_le_bytes().to_vec(), vec![1, 2, 3, 4, 5, 6, 7, 8])]
    #[case(c::MPI_WCHAR, ('A' as i32).to_le_bytes().to_vec(), vec![0, 0x41])]
    #[case(c::MPI_CHAR, vec![b'x'], vec![b'x'])]
    #[case(c::MPI_FLOAT, 1.0f32.to_le_bytes().to_vec(), vec![0x3f, 0x80, 0, 0])]
    #[case(c::MPI_DOUBLE, (-2.0f64).to_le_bytes().to_vec(), vec![0xc0, 0, 0, 0, 0, 0, 0, 0])]
    #[case(c::MPI_C_BOOL, vec![1], vec![1])]
    #[case(c::MPI_2INT, [7i32.to_le_bytes(), 9i32.to_le_bytes()].concat(), vec![0, 0, 0, 7, 0, 0, 0, 9])]
    #[case(c::MPI_SHORT_INT, vec![5, 0, 0xaa, 0xaa, 6, 0, 0, 0], vec![0, 5, 0, 0, 0, 6])]
    #[case(c::MPI_DOUBLE_INT, [1.0f64.to_le_bytes().to_vec(), vec![3, 0, 0, 0]].concat(), vec![0x3f, 0xf0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3])]
    // long double 1.0: x87 mantissa 0x8000.., exponent 0x3fff -> binary128 0x3fff0000...
    #[case(c::MPI_LONG_DOUBLE, vec![0, 0, 0, 0, 0, 0, 0, 0x80, 0xff, 0x3f], [vec![0x3f, 0xff], vec![0; 14]].concat())]
    // -1.5: mantissa 0xc000.., sign set -> 0xbfff8000...
    #[case(c::MPI_LONG_DOUBLE, vec![0, 0, 0, 0, 0, 0, 0, 0xc0, 0xff, 0xbf], [vec![0xbf, 0xff, 0x80], vec![0; 13]].concat())]
    fn encodes_big_endian_standard_sizes(#[case] h: usize, #[case] native: Vec<u8>, #[case] want: Vec<u8>) {
        assert_eq!(enc(h, &native), want);
        let back = dec(h, &want);
        let d = lookup(h).unwrap();
        // Data bytes come back (padding stays zero); LONG is sign-extended from 4 bytes.
        for &(off, len) in &d.blocks {
            let (o, l) = (off as usize, len.min(if h == c::MPI_LONG_DOUBLE { 10 } else { len }));
            assert_eq!(&back[o..o + l], &native[o..o + l], "round trip of {h:#x}");
        }
    }

    #[rstest]
    #[case(c::MPI_LONG, 8, 4)]
    #[case(c::MPI_WCHAR, 4, 2)]
    #[case(c::MPI_LONG_DOUBLE, 16, 16)]
    #[case(c::MPI_LONG_INT, 12, 8)]
    #[case(c::MPI_DOUBLE_INT, 12, 12)]
    #[case(c::MPI_C_LONG_DOUBLE_COMPLEX, 32, 32)]
    #[case(c::MPI_INTEGER16, 16, 16)]
    fn external_sizes(#[case] h: usize, #[case] native: usize, #[case] ext: usize) {
        let d = lookup(h).unwrap();
        assert_eq!((d.size, size(&d, 1).unwrap()), (native, ext));
        assert_eq!(size(&d, 3), Some(3 * ext));
    }

    #[test]
    fn unpack_extends_signs() {
        assert_eq!(dec(c::MPI_LONG, &[0xff, 0xff, 0xff, 0xfd]), (-3i64).to_le_bytes());
        assert_eq!(dec(c::MPI_UNSIGNED_LONG, &[0xff, 0, 0, 1]), 0xff00_0001u64.to_le_bytes());
        assert_eq!(dec(c::MPI_WCHAR, &[0xff, 0xfe]), (-2i32).to_le_bytes());
    }

    #[rstest]
    #[case(0.0)]
    #[case(1.0e-300)]
    #[case(-3.25e100)]
    #[case(f64::INFINITY)]
    fn x87_quad_round_trip(#[case] v: f64) {
        // x87 from a double: exponent rebiased, 52-bit fraction moved to the top of 63 bits.
        let bits = v.to_bits();
        let (sign, e, f) = ((bits >> 63) as u16, ((bits >> 52) & 0x7ff) as u16, bits & ((1 << 52) - 1));
        let (exp, m) = match e {
            0 if f == 0 => (0u16, 0u64),
            0x7ff => (0x7fff, 1 << 63 | f << 11),
            e => (e + 16383 - 1023, 1 << 63 | f << 11),
        };
        let mut x = [0u8; 16];
        x[..8].copy_from_slice(&m.to_le_bytes());
        x[8..10].copy_from_slice(&(sign << 15 | exp).to_le_bytes());
        let q = x87_to_quad(&x);
        // binary128 of a double: same sign, rebiased exponent, fraction at the top.
        let want = match e {
            0 if f == 0 => (sign as u128) << 127,
            0x7ff => (sign as u128) << 127 | 0x7fffu128 << 112 | (f as u128) << 60,
            e => (sign as u128) << 127 | ((e as u128) + 16383 - 1023) << 112 | (f as u128) << 60,
        };
        assert_eq!(q, want);
        assert_eq!(quad_to_x87(q), x);
    }

    #[test]
    fn nan_stays_nan() {
        let q = 0x7fffu128 << 112 | 1;
        let x = quad_to_x87(q);
        assert_eq!(u16::from_le_bytes([x[8], x[9]]), 0x7fff);
        assert_ne!(u64::from_le_bytes(x[..8].try_into().unwrap()) << 1, 0);
    }

    #[test]
    fn derived_types_pack_in_typemap_order() {
        let int = lookup(c::MPI_INT).unwrap();
        let v = hvector(2, 1, 8, &int).unwrap();
        let src: [i32; 4] = [1, 2, 3, 4];
        let mut out = vec![0u8; size(&v, 2).unwrap()];
        unsafe { pack(&v, src.as_ptr() as *const u8, 1, &mut out[..8]) };
        assert_eq!(out[..8], [0, 0, 0, 1, 0, 0, 0, 3]);
        let (ch, lg) = (lookup(c::MPI_CHAR).unwrap(), lookup(c::MPI_LONG).unwrap());
        let s = structure(&[1, 1], &[0, 8], &[&ch, &lg]).unwrap();
        assert_eq!(size(&s, 2), Some(10));
        #[repr(C)]
        struct S {
            c: u8,
            l: i64,
        }
        let src = [S { c: b'a', l: -1 }, S { c: b'b', l: 258 }];
        let mut out = vec![0u8; 10];
        unsafe { pack(&s, src.as_ptr() as *const u8, 2, &mut out) };
        assert_eq!(out, [b'a', 0xff, 0xff, 0xff, 0xff, b'b', 0, 0, 1, 2]);
        let mut back = [S { c: 0, l: 0 }, S { c: 0, l: 0 }];
        unsafe { unpack(&s, &out, back.as_mut_ptr() as *mut u8, 2) };
        assert_eq!((back[0].c, back[0].l, back[1].c, back[1].l), (b'a', -1, b'b', 258));
    }
}
