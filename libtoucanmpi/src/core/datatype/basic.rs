//! The predefined ("basic") datatypes of MPI: their standard-ABI handles, names, and C layout.
//!
//! Layouts are those of x86-64 Linux (LP64, System V ABI): `long` is 8 bytes, `wchar_t` is a
//! 4-byte signed integer, `long double` is the x87 80-bit extended format stored in a 16-byte,
//! 16-aligned slot, and the Fortran types are gfortran's defaults (`INTEGER`, `LOGICAL` and
//! `REAL` are 4 bytes). Sizes, extents and names were checked against MPICH 4.0.2 on this
//! machine (`MPI_Type_size`, `MPI_Type_get_extent`, `MPI_Type_get_name`).

/// One predefined MPI datatype.
///
/// Aliases that share a handle in the MPI 5.0 standard ABI share a variant: `MPI_LONG_LONG_INT`
/// is [`BasicType::LongLong`] and `MPI_C_COMPLEX` is [`BasicType::CFloatComplex`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BasicType {
    /// `MPI_CHAR`: C `char` (signed on x86-64), a printable character.
    Char,
    /// `MPI_SIGNED_CHAR`: `signed char` as an integer.
    SignedChar,
    /// `MPI_UNSIGNED_CHAR`: `unsigned char` as an integer.
    UnsignedChar,
    /// `MPI_BYTE`: an uninterpreted byte.
    Byte,
    /// `MPI_PACKED`: a byte of packed data.
    Packed,
    /// `MPI_SHORT`: `short`.
    Short,
    /// `MPI_UNSIGNED_SHORT`: `unsigned short`.
    UnsignedShort,
    /// `MPI_INT`: `int`.
    Int,
    /// `MPI_UNSIGNED`: `unsigned int`.
    Unsigned,
    /// `MPI_LONG`: `long` (8 bytes).
    Long,
    /// `MPI_UNSIGNED_LONG`: `unsigned long`.
    UnsignedLong,
    /// `MPI_LONG_LONG` / `MPI_LONG_LONG_INT`: `long long`.
    LongLong,
    /// `MPI_UNSIGNED_LONG_LONG`: `unsigned long long`.
    UnsignedLongLong,
    /// `MPI_WCHAR`: `wchar_t` (4 bytes, signed), a printable character.
    Wchar,
    /// `MPI_FLOAT`: `float`.
    Float,
    /// `MPI_DOUBLE`: `double`.
    Double,
    /// `MPI_LONG_DOUBLE`: x87 80-bit extended precision in a 16-byte slot.
    LongDouble,
    /// `MPI_C_FLOAT_COMPLEX` / `MPI_C_COMPLEX`: `float _Complex`.
    CFloatComplex,
    /// `MPI_C_DOUBLE_COMPLEX`: `double _Complex`.
    CDoubleComplex,
    /// `MPI_C_LONG_DOUBLE_COMPLEX`: `long double _Complex` (two 16-byte slots).
    CLongDoubleComplex,
    /// `MPI_C_BOOL`: `_Bool` (1 byte).
    CBool,
    /// `MPI_INT8_T`.
    Int8,
    /// `MPI_INT16_T`.
    Int16,
    /// `MPI_INT32_T`.
    Int32,
    /// `MPI_INT64_T`.
    Int64,
    /// `MPI_UINT8_T`.
    Uint8,
    /// `MPI_UINT16_T`.
    Uint16,
    /// `MPI_UINT32_T`.
    Uint32,
    /// `MPI_UINT64_T`.
    Uint64,
    /// `MPI_AINT`: `MPI_Aint` (`intptr_t`, 8 bytes).
    Aint,
    /// `MPI_OFFSET`: `MPI_Offset` (`int64_t`).
    Offset,
    /// `MPI_COUNT`: `MPI_Count` (`int64_t`).
    Count,
    /// `MPI_FLOAT_INT`: `struct { float; int; }`.
    FloatInt,
    /// `MPI_DOUBLE_INT`: `struct { double; int; }` (4 bytes of tail padding).
    DoubleInt,
    /// `MPI_LONG_INT`: `struct { long; int; }` (4 bytes of tail padding).
    LongInt,
    /// `MPI_2INT`: `struct { int; int; }`.
    TwoInt,
    /// `MPI_SHORT_INT`: `struct { short; int; }` (2 bytes of padding before the int).
    ShortInt,
    /// `MPI_LONG_DOUBLE_INT`: `struct { long double; int; }` (12 bytes of tail padding).
    LongDoubleInt,
    /// `MPI_INTEGER`: Fortran `INTEGER` (4 bytes).
    Integer,
    /// `MPI_LOGICAL`: Fortran `LOGICAL` (4 bytes; nonzero is true).
    Logical,
    /// `MPI_REAL`: Fortran `REAL` (`f32`).
    Real,
    /// `MPI_DOUBLE_PRECISION`: Fortran `DOUBLE PRECISION` (`f64`).
    DoublePrecision,
    /// `MPI_COMPLEX`: Fortran `COMPLEX` (two `f32`).
    Complex,
    /// `MPI_DOUBLE_COMPLEX`: Fortran `DOUBLE COMPLEX` (two `f64`).
    DoubleComplex,
    /// `MPI_INTEGER1`: Fortran `INTEGER*1`.
    Integer1,
    /// `MPI_INTEGER2`: Fortran `INTEGER*2`.
    Integer2,
    /// `MPI_INTEGER4`: Fortran `INTEGER*4`.
    Integer4,
    /// `MPI_INTEGER8`: Fortran `INTEGER*8`.
    Integer8,
    /// `MPI_INTEGER16`: Fortran `INTEGER*16` (`i128`, 16-aligned).
    Integer16,
    /// `MPI_REAL4`: Fortran `REAL*4`.
    Real4,
    /// `MPI_REAL8`: Fortran `REAL*8`.
    Real8,
    /// `MPI_REAL16`: Fortran `REAL*16` (IEEE binary128). No Rust type: no arithmetic support.
    Real16,
    /// `MPI_COMPLEX8`: Fortran `COMPLEX*8` (two `f32`).
    Complex8,
    /// `MPI_COMPLEX16`: Fortran `COMPLEX*16` (two `f64`).
    Complex16,
    /// `MPI_COMPLEX32`: Fortran `COMPLEX*32` (two binary128). No arithmetic support.
    Complex32,
    /// `MPI_2REAL`: two Fortran `REAL`s (value, index).
    TwoReal,
    /// `MPI_2DOUBLE_PRECISION`: two `DOUBLE PRECISION`s (value, index).
    TwoDoublePrecision,
    /// `MPI_2INTEGER`: two Fortran `INTEGER`s (value, index).
    TwoInteger,
    /// `MPI_CHARACTER`: Fortran `CHARACTER(1)`.
    Character,
    /// `MPI_CXX_BOOL`: C++ `bool` (1 byte).
    CxxBool,
    /// `MPI_CXX_FLOAT_COMPLEX`: `std::complex<float>`.
    CxxFloatComplex,
    /// `MPI_CXX_DOUBLE_COMPLEX`: `std::complex<double>`.
    CxxDoubleComplex,
    /// `MPI_CXX_LONG_DOUBLE_COMPLEX`: `std::complex<long double>`.
    CxxLongDoubleComplex,
}

/// The groups of basic datatypes that decide which predefined reduction operations apply
/// (MPI standard, "Predefined Reduction Operations"), folded to what the op code needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TypeClass {
    /// C integers, Fortran integers and the multi-language types `MPI_AINT`, `MPI_OFFSET`,
    /// `MPI_COUNT`. Also `MPI_CHAR` and `MPI_CHARACTER`: the standard leaves these printable
    /// characters out of every reduction group, but MPICH accepts them as integers
    /// (its "C_INTEGER_EXTRA"/"FORTRAN_INTEGER_EXTRA" groups), so we do the same.
    Integer,
    /// Floating point: `float`, `double`, `long double`, `REAL`, `DOUBLE PRECISION`, `REALn`.
    Floating,
    /// Complex: the C, C++ and Fortran complex types.
    Complex,
    /// Logical: `MPI_LOGICAL`, `MPI_C_BOOL`, `MPI_CXX_BOOL`.
    Logical,
    /// `MPI_BYTE`.
    Byte,
    /// The value-index pairs of `MPI_MAXLOC`/`MPI_MINLOC`.
    Pair,
    /// Types that take part in no arithmetic: `MPI_PACKED`, `MPI_WCHAR`.
    Other,
}

/// One table drives every per-type fact, so the handle, name, layout and class of a type are
/// written on one line. Columns: variant, ABI handle, MPI name, size, extent, alignment, class.
macro_rules! basic_types {
    ($($v:ident = $h:literal, $name:literal, $size:literal, $ext:literal, $align:literal, $class:ident;)*) => {
        impl BasicType {
            /// Every predefined datatype, in ABI handle order.
            pub const ALL: &'static [BasicType] = &[$(BasicType::$v),*];

            /// The type for an MPI 5.0 standard-ABI datatype handle, or `None` if `h` is not a
            /// predefined basic datatype (`MPI_DATATYPE_NULL`, user types, unknown values).
            pub fn from_handle(h: usize) -> Option<BasicType> {
                match h {
                    $($h => Some(BasicType::$v),)*
                    _ => None,
                }
            }

            /// The MPI 5.0 standard-ABI handle value of this type (inverse of `from_handle`).
            pub fn handle(self) -> usize {
                match self {
                    $(BasicType::$v => $h,)*
                }
            }

            /// The MPI name, as `MPI_Type_get_name` reports it by default (`"MPI_INT"`).
            /// For aliased handles this is the standard's primary name, as MPICH reports it:
            /// `"MPI_LONG_LONG_INT"` and `"MPI_C_COMPLEX"`.
            pub fn name(self) -> &'static str {
                match self {
                    $(BasicType::$v => $name,)*
                }
            }

            /// Bytes of data in one element (`MPI_Type_size`): the C `sizeof` for scalars
            /// (16 for `long double`), the sum of the members for pair types.
            pub fn size(self) -> usize {
                match self {
                    $(BasicType::$v => $size,)*
                }
            }

            /// Distance between consecutive elements (`MPI_Type_get_extent`): the C `sizeof`,
            /// including a pair struct's padding.
            pub fn extent(self) -> usize {
                match self {
                    $(BasicType::$v => $ext,)*
                }
            }

            /// The C alignment of the type (of the struct, for pair types).
            pub fn align(self) -> usize {
                match self {
                    $(BasicType::$v => $align,)*
                }
            }

            /// The reduction group of the type; see [`TypeClass`].
            pub fn class(self) -> TypeClass {
                match self {
                    $(BasicType::$v => TypeClass::$class,)*
                }
            }
        }
    };
}

basic_types! {
    Aint = 0x201, "MPI_AINT", 8, 8, 8, Integer;
    Count = 0x202, "MPI_COUNT", 8, 8, 8, Integer;
    Offset = 0x203, "MPI_OFFSET", 8, 8, 8, Integer;
    Packed = 0x207, "MPI_PACKED", 1, 1, 1, Other;
    Short = 0x208, "MPI_SHORT", 2, 2, 2, Integer;
    Int = 0x209, "MPI_INT", 4, 4, 4, Integer;
    Long = 0x20a, "MPI_LONG", 8, 8, 8, Integer;
    LongLong = 0x20b, "MPI_LONG_LONG_INT", 8, 8, 8, Integer;
    UnsignedShort = 0x20c, "MPI_UNSIGNED_SHORT", 2, 2, 2, Integer;
    Unsigned = 0x20d, "MPI_UNSIGNED", 4, 4, 4, Integer;
    UnsignedLong = 0x20e, "MPI_UNSIGNED_LONG", 8, 8, 8, Integer;
    UnsignedLongLong = 0x20f, "MPI_UNSIGNED_LONG_LONG", 8, 8, 8, Integer;
    Float = 0x210, "MPI_FLOAT", 4, 4, 4, Floating;
    CFloatComplex = 0x212, "MPI_C_COMPLEX", 8, 8, 4, Complex;
    CxxFloatComplex = 0x213, "MPI_CXX_FLOAT_COMPLEX", 8, 8, 4, Complex;
    Double = 0x214, "MPI_DOUBLE", 8, 8, 8, Floating;
    CDoubleComplex = 0x216, "MPI_C_DOUBLE_COMPLEX", 16, 16, 8, Complex;
    CxxDoubleComplex = 0x217, "MPI_CXX_DOUBLE_COMPLEX", 16, 16, 8, Complex;
    Integer = 0x219, "MPI_INTEGER", 4, 4, 4, Integer;
    Logical = 0x218, "MPI_LOGICAL", 4, 4, 4, Logical;
    Real = 0x21a, "MPI_REAL", 4, 4, 4, Floating;
    Complex = 0x21b, "MPI_COMPLEX", 8, 8, 4, Complex;
    DoublePrecision = 0x21c, "MPI_DOUBLE_PRECISION", 8, 8, 8, Floating;
    DoubleComplex = 0x21d, "MPI_DOUBLE_COMPLEX", 16, 16, 8, Complex;
    LongDouble = 0x220, "MPI_LONG_DOUBLE", 16, 16, 16, Floating;
    CLongDoubleComplex = 0x224, "MPI_C_LONG_DOUBLE_COMPLEX", 32, 32, 16, Complex;
    CxxLongDoubleComplex = 0x225, "MPI_CXX_LONG_DOUBLE_COMPLEX", 32, 32, 16, Complex;
    FloatInt = 0x228, "MPI_FLOAT_INT", 8, 8, 4, Pair;
    DoubleInt = 0x229, "MPI_DOUBLE_INT", 12, 16, 8, Pair;
    LongInt = 0x22a, "MPI_LONG_INT", 12, 16, 8, Pair;
    TwoInt = 0x22b, "MPI_2INT", 8, 8, 4, Pair;
    ShortInt = 0x22c, "MPI_SHORT_INT", 6, 8, 4, Pair;
    LongDoubleInt = 0x22d, "MPI_LONG_DOUBLE_INT", 20, 32, 16, Pair;
    TwoReal = 0x230, "MPI_2REAL", 8, 8, 4, Pair;
    TwoDoublePrecision = 0x231, "MPI_2DOUBLE_PRECISION", 16, 16, 8, Pair;
    TwoInteger = 0x232, "MPI_2INTEGER", 8, 8, 4, Pair;
    CBool = 0x238, "MPI_C_BOOL", 1, 1, 1, Logical;
    CxxBool = 0x239, "MPI_CXX_BOOL", 1, 1, 1, Logical;
    Wchar = 0x23c, "MPI_WCHAR", 4, 4, 4, Other;
    Int8 = 0x240, "MPI_INT8_T", 1, 1, 1, Integer;
    Uint8 = 0x241, "MPI_UINT8_T", 1, 1, 1, Integer;
    Char = 0x243, "MPI_CHAR", 1, 1, 1, Integer;
    SignedChar = 0x244, "MPI_SIGNED_CHAR", 1, 1, 1, Integer;
    UnsignedChar = 0x245, "MPI_UNSIGNED_CHAR", 1, 1, 1, Integer;
    Byte = 0x247, "MPI_BYTE", 1, 1, 1, Byte;
    Int16 = 0x248, "MPI_INT16_T", 2, 2, 2, Integer;
    Uint16 = 0x249, "MPI_UINT16_T", 2, 2, 2, Integer;
    Int32 = 0x250, "MPI_INT32_T", 4, 4, 4, Integer;
    Uint32 = 0x251, "MPI_UINT32_T", 4, 4, 4, Integer;
    Int64 = 0x258, "MPI_INT64_T", 8, 8, 8, Integer;
    Uint64 = 0x259, "MPI_UINT64_T", 8, 8, 8, Integer;
    Integer1 = 0x2c1, "MPI_INTEGER1", 1, 1, 1, Integer;
    Character = 0x21e, "MPI_CHARACTER", 1, 1, 1, Integer;
    Integer2 = 0x2c9, "MPI_INTEGER2", 2, 2, 2, Integer;
    Integer4 = 0x2d1, "MPI_INTEGER4", 4, 4, 4, Integer;
    Real4 = 0x2d2, "MPI_REAL4", 4, 4, 4, Floating;
    Integer8 = 0x2d9, "MPI_INTEGER8", 8, 8, 8, Integer;
    Real8 = 0x2da, "MPI_REAL8", 8, 8, 8, Floating;
    Complex8 = 0x2db, "MPI_COMPLEX8", 8, 8, 4, Complex;
    Integer16 = 0x2e1, "MPI_INTEGER16", 16, 16, 16, Integer;
    Real16 = 0x2e2, "MPI_REAL16", 16, 16, 16, Floating;
    Complex16 = 0x2e3, "MPI_COMPLEX16", 16, 16, 8, Complex;
    Complex32 = 0x2eb, "MPI_COMPLEX32", 32, 32, 16, Complex;
}

impl BasicType {
    /// Whether this is a value-index pair type for `MPI_MAXLOC`/`MPI_MINLOC`.
    pub fn is_pair(self) -> bool {
        self.class() == TypeClass::Pair
    }

    /// For pair types, `(size of the value member, byte offset of the index member)`.
    ///
    /// The index is a C `int` for the C pairs, and has the value's own type for the Fortran
    /// pairs `MPI_2INTEGER`, `MPI_2REAL` and `MPI_2DOUBLE_PRECISION`. `None` for other types.
    pub fn pair_layout(self) -> Option<(usize, usize)> {
        use BasicType::*;
        Some(match self {
            FloatInt | TwoInt | TwoReal | TwoInteger => (4, 4),
            DoubleInt | LongInt | TwoDoublePrecision => (8, 8),
            ShortInt => (2, 4),
            LongDoubleInt => (16, 16),
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::BasicType::{self, *};
    use super::TypeClass;
    use rstest::rstest;
    use std::collections::HashSet;

    #[rstest]
    #[case(0x201, Aint)]
    #[case(0x20b, LongLong)]
    #[case(0x212, CFloatComplex)]
    #[case(0x220, LongDouble)]
    #[case(0x22b, TwoInt)]
    #[case(0x22d, LongDoubleInt)]
    #[case(0x243, Char)]
    #[case(0x247, Byte)]
    #[case(0x21e, Character)]
    #[case(0x2eb, Complex32)]
    fn handle_maps_to_type(#[case] h: usize, #[case] t: BasicType) {
        assert_eq!(BasicType::from_handle(h), Some(t));
        assert_eq!(t.handle(), h);
    }

    #[rstest]
    #[case(0x0)]
    #[case(0x200)] // MPI_DATATYPE_NULL
    #[case(0x2c3)] // not a handle in the MPI 5.0 ABI
    #[case(0x211)]
    #[case(0x242)]
    #[case(0x21)] // an op handle
    #[case(0x1000)]
    #[case(usize::MAX)]
    fn unknown_handles(#[case] h: usize) {
        assert_eq!(BasicType::from_handle(h), None);
    }

    #[test]
    fn table_is_consistent() {
        assert_eq!(BasicType::ALL.len(), 63);
        let mut handles = HashSet::new();
        let mut names = HashSet::new();
        for &t in BasicType::ALL {
            assert!(handles.insert(t.handle()), "duplicate handle for {t:?}");
            assert!(names.insert(t.name()), "duplicate name for {t:?}");
            assert_eq!(BasicType::from_handle(t.handle()), Some(t));
            assert!(t.name().starts_with("MPI_"));
            assert!((0x201..0x300).contains(&t.handle()));
            assert!(t.align().is_power_of_two());
            assert_eq!(t.extent() % t.align(), 0, "{t:?}");
            assert!(t.size() <= t.extent(), "{t:?}");
            assert_eq!(t.is_pair(), t.pair_layout().is_some(), "{t:?}");
            if !t.is_pair() {
                assert_eq!(t.size(), t.extent(), "{t:?}");
            }
        }
    }

    // Expected values as MPICH 4.0.2 reports them on x86-64.
    #[rstest]
    #[case(Char, 1, 1, 1, "MPI_CHAR")]
    #[case(Short, 2, 2, 2, "MPI_SHORT")]
    #[case(Long, 8, 8, 8, "MPI_LONG")]
    #[case(LongLong, 8, 8, 8, "MPI_LONG_LONG_INT")]
    #[case(Wchar, 4, 4, 4, "MPI_WCHAR")]
    #[case(LongDouble, 16, 16, 16, "MPI_LONG_DOUBLE")]
    #[case(CFloatComplex, 8, 8, 4, "MPI_C_COMPLEX")]
    #[case(CLongDoubleComplex, 32, 32, 16, "MPI_C_LONG_DOUBLE_COMPLEX")]
    #[case(CBool, 1, 1, 1, "MPI_C_BOOL")]
    #[case(Aint, 8, 8, 8, "MPI_AINT")]
    #[case(FloatInt, 8, 8, 4, "MPI_FLOAT_INT")]
    #[case(DoubleInt, 12, 16, 8, "MPI_DOUBLE_INT")]
    #[case(LongInt, 12, 16, 8, "MPI_LONG_INT")]
    #[case(TwoInt, 8, 8, 4, "MPI_2INT")]
    #[case(ShortInt, 6, 8, 4, "MPI_SHORT_INT")]
    #[case(LongDoubleInt, 20, 32, 16, "MPI_LONG_DOUBLE_INT")]
    #[case(TwoDoublePrecision, 16, 16, 8, "MPI_2DOUBLE_PRECISION")]
    #[case(DoubleComplex, 16, 16, 8, "MPI_DOUBLE_COMPLEX")]
    #[case(Integer16, 16, 16, 16, "MPI_INTEGER16")]
    #[case(Complex32, 32, 32, 16, "MPI_COMPLEX32")]
    fn layout_and_name(#[case] t: BasicType, #[case] size: usize, #[case] extent: usize, #[case] align: usize, #[case] name: &str) {
        assert_eq!((t.size(), t.extent(), t.align(), t.name()), (size, extent, align, name));
    }

    #[rstest]
    #[case(FloatInt, Some((4, 4)))]
    #[case(DoubleInt, Some((8, 8)))]
    #[case(LongInt, Some((8, 8)))]
    #[case(TwoInt, Some((4, 4)))]
    #[case(ShortInt, Some((2, 4)))]
    #[case(LongDoubleInt, Some((16, 16)))]
    #[case(TwoReal, Some((4, 4)))]
    #[case(TwoDoublePrecision, Some((8, 8)))]
    #[case(TwoInteger, Some((4, 4)))]
    #[case(Int, None)]
    #[case(CDoubleComplex, None)]
    fn pair_layouts(#[case] t: BasicType, #[case] layout: Option<(usize, usize)>) {
        assert_eq!(t.pair_layout(), layout);
        if let Some((vsize, off)) = layout {
            // The index member (an int, or a second value for the Fortran pairs) ends the data.
            let isize = if matches!(t, TwoDoublePrecision) { 8 } else { 4 };
            assert_eq!(vsize + isize, t.size());
            assert!(off >= vsize && off + isize <= t.extent());
        }
    }

    /// The C layouts agree with Rust's `repr(C)` for the types that have a Rust twin.
    #[test]
    fn layouts_match_repr_c() {
        use std::mem::{align_of, size_of};
        #[repr(C)]
        struct P<V, I>(V, I);
        let cases: [(BasicType, usize, usize); 10] = [
            (Int, size_of::<libc::c_int>(), align_of::<libc::c_int>()),
            (Long, size_of::<libc::c_long>(), align_of::<libc::c_long>()),
            (Wchar, size_of::<libc::wchar_t>(), align_of::<libc::wchar_t>()),
            (Aint, size_of::<isize>(), align_of::<isize>()),
            (Integer16, size_of::<i128>(), align_of::<i128>()),
            (FloatInt, size_of::<P<f32, i32>>(), align_of::<P<f32, i32>>()),
            (DoubleInt, size_of::<P<f64, i32>>(), align_of::<P<f64, i32>>()),
            (LongInt, size_of::<P<libc::c_long, i32>>(), align_of::<P<i64, i32>>()),
            (ShortInt, size_of::<P<i16, i32>>(), align_of::<P<i16, i32>>()),
            (CDoubleComplex, size_of::<[f64; 2]>(), align_of::<[f64; 2]>()),
        ];
        for (t, size, align) in cases {
            assert_eq!((t.extent(), t.align()), (size, align), "{t:?}");
        }
    }

    #[rstest]
    #[case(Int, TypeClass::Integer)]
    #[case(UnsignedLongLong, TypeClass::Integer)]
    #[case(Char, TypeClass::Integer)] // MPICH extension, see TypeClass::Integer
    #[case(Character, TypeClass::Integer)] // MPICH extension
    #[case(Count, TypeClass::Integer)]
    #[case(Integer8, TypeClass::Integer)]
    #[case(Wchar, TypeClass::Other)]
    #[case(Packed, TypeClass::Other)]
    #[case(LongDouble, TypeClass::Floating)]
    #[case(Real16, TypeClass::Floating)]
    #[case(DoubleComplex, TypeClass::Complex)]
    #[case(CxxLongDoubleComplex, TypeClass::Complex)]
    #[case(Logical, TypeClass::Logical)]
    #[case(CBool, TypeClass::Logical)]
    #[case(CxxBool, TypeClass::Logical)]
    #[case(Byte, TypeClass::Byte)]
    #[case(ShortInt, TypeClass::Pair)]
    #[case(TwoReal, TypeClass::Pair)]
    fn classes(#[case] t: BasicType, #[case] class: TypeClass) {
        assert_eq!(t.class(), class);
    }

    #[test]
    fn handles_match_the_header() {
        for t in BasicType::ALL {
            if let Some((_, h)) = crate::consts::HANDLES.iter().find(|(n, _)| *n == t.name()) {
                assert_eq!(t.handle(), *h, "{} disagrees with headers/mpi.h", t.name());
            }
        }
    }
}
