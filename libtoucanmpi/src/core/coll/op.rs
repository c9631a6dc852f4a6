//! The predefined reduction operations (`MPI_SUM` ... `MPI_NO_OP`) on the basic datatypes.
//!
//! [`valid`] says which operation applies to which type and [`apply`] computes
//! `inout[i] = in[i] op inout[i]` the way MPICH's own kernels do: integers wrap, floating
//! `MAX`/`MIN` keep MPICH's operand order, and `long double` is computed by the x87 unit like C
//! does. Checked against `MPI_Reduce_local` of MPICH 4.0.2 on this machine (about 14,000 random
//! vectors over every accepted type and op): bit-identical results, inout padding included,
//! except where MPICH is wrong or differs by design:
//! - unsigned `MAX`/`MIN`: MPICH 4.0.2 compares unsigned types as signed (pmodels/mpich#6083,
//!   fixed in later releases); we compare them as unsigned;
//! - `LAND`/`LOR`/`LXOR` on `MPI_REAL`/`MPI_DOUBLE_PRECISION`/`MPI_REAL4`/`MPI_REAL8`: MPICH
//!   4.0.2 returns success and leaves inout unchanged; we compute them;
//! - `PROD` of the C `_Complex` types when the textbook formula gives NaN in both parts: C's
//!   `*` (Annex G) may recover an infinity there; we keep the NaNs, as MPICH does for the
//!   Fortran complex types.
#![deny(unsafe_op_in_unsafe_fn)]

use crate::core::datatype::basic::{BasicType, TypeClass};
use std::cmp::Ordering;
use std::ptr;

/// A predefined MPI reduction operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    /// `MPI_SUM`.
    Sum,
    /// `MPI_PROD`.
    Prod,
    /// `MPI_MAX`.
    Max,
    /// `MPI_MIN`.
    Min,
    /// `MPI_LAND`: logical and.
    Land,
    /// `MPI_LOR`: logical or.
    Lor,
    /// `MPI_LXOR`: logical exclusive or.
    Lxor,
    /// `MPI_BAND`: bitwise and.
    Band,
    /// `MPI_BOR`: bitwise or.
    Bor,
    /// `MPI_BXOR`: bitwise exclusive or.
    Bxor,
    /// `MPI_MAXLOC`: maximum value and its (smallest) index.
    MaxLoc,
    /// `MPI_MINLOC`: minimum value and its (smallest) index.
    MinLoc,
    /// `MPI_REPLACE`: the result is the incoming value (one-sided accumulate).
    Replace,
    /// `MPI_NO_OP`: the target is left as it is (one-sided accumulate).
    NoOp,
}

/// Columns: variant, MPI 5.0 standard-ABI handle, MPI name.
macro_rules! op_kinds {
    ($($v:ident = $h:literal, $name:literal;)*) => {
        impl OpKind {
            /// Every predefined operation, in ABI handle order.
            pub const ALL: &'static [OpKind] = &[$(OpKind::$v),*];

            /// The operation for an MPI 5.0 standard-ABI `MPI_Op` handle, or `None` if `h` is
            /// not a predefined operation (`MPI_OP_NULL`, user operations, unknown values).
            pub fn from_handle(h: usize) -> Option<OpKind> {
                match h {
                    $($h => Some(OpKind::$v),)*
                    _ => None,
                }
            }

            /// The MPI 5.0 standard-ABI handle value (inverse of `from_handle`).
            pub fn handle(self) -> usize {
                match self {
                    $(OpKind::$v => $h,)*
                }
            }

            /// The MPI name, e.g. `"MPI_SUM"`.
            pub fn name(self) -> &'static str {
                match self {
                    $(OpKind::$v => $name,)*
                }
            }
        }
    };
}

op_kinds! {
    Sum = 0x21, "MPI_SUM";
    Min = 0x22, "MPI_MIN";
    Max = 0x23, "MPI_MAX";
    Prod = 0x24, "MPI_PROD";
    Band = 0x28, "MPI_BAND";
    Bor = 0x29, "MPI_BOR";
    Bxor = 0x2a, "MPI_BXOR";
    Land = 0x30, "MPI_LAND";
    Lor = 0x31, "MPI_LOR";
    Lxor = 0x32, "MPI_LXOR";
    MinLoc = 0x38, "MPI_MINLOC";
    MaxLoc = 0x39, "MPI_MAXLOC";
    Replace = 0x3c, "MPI_REPLACE";
    NoOp = 0x3d, "MPI_NO_OP";
}

/// Whether [`apply`] can compute on `ty` at all. `REAL16`/`COMPLEX32` (IEEE binary128) have no
/// Rust type; `long double` needs the x87 unit of x86-64.
fn computable(ty: BasicType) -> bool {
    use BasicType::*;
    match ty {
        Real16 | Complex32 => false,
        LongDouble | CLongDoubleComplex | CxxLongDoubleComplex | LongDoubleInt => {
            cfg!(target_arch = "x86_64")
        }
        _ => true,
    }
}

/// Whether `op` may be applied to `ty`, as MPICH 4.0.2 accepts it (the real MPI under us, and
/// the library whose test suite we run). Use this to raise `MPI_ERR_OP`.
///
/// - `MAX`, `MIN`: integers and floating point.
/// - `SUM`, `PROD`: integers, floating point and complex.
/// - `LAND`, `LOR`, `LXOR`: integers, floating point and logicals.
/// - `BAND`, `BOR`, `BXOR`: integers and `MPI_BYTE`.
/// - `MAXLOC`, `MINLOC`: the pair types only.
/// - `REPLACE`, `NO_OP`: every type. They are meant for one-sided accumulates: a reduction
///   collective must reject them itself (MPICH's `MPI_Reduce_local` returns `MPI_ERR_OP`).
///
/// "Integers" is [`TypeClass::Integer`]: C integers, Fortran integers, `MPI_AINT`,
/// `MPI_OFFSET`, `MPI_COUNT`, plus `MPI_CHAR` and `MPI_CHARACTER`. That is wider than the
/// standard (see [`valid_strict`]) in two ways, both MPICH's: `MPI_CHAR`/`MPI_CHARACTER` count
/// as integers, and the logical operations also take Fortran integers, the multi-language
/// types and floating point (MPICH 4.0.2 accepts `LAND`/`LOR` on `MPI_FLOAT`, `MPI_DOUBLE` and
/// `MPI_LONG_DOUBLE` but then fails an internal assertion; we compute them). `MPI_WCHAR`,
/// `MPI_PACKED`, and on every op `MPI_REAL16`/`MPI_COMPLEX32` (no Rust type) are refused, and so
/// are the `long double` types off x86-64.
pub fn valid(op: OpKind, ty: BasicType) -> bool {
    use OpKind::*;
    use TypeClass::*;
    let class = ty.class();
    let by_class = match op {
        Replace | NoOp => return true,
        Max | Min => matches!(class, Integer | Floating),
        Sum | Prod => matches!(class, Integer | Floating | Complex),
        Land | Lor | Lxor => matches!(class, Integer | Floating | Logical),
        Band | Bor | Bxor => matches!(class, Integer | Byte),
        MaxLoc | MinLoc => class == Pair,
    };
    by_class && computable(ty)
}

/// Whether the MPI standard's table ("Predefined Reduction Operations") allows `op` on `ty`:
/// `MAX`/`MIN` on C integer, Fortran integer, floating point and the multi-language types;
/// `SUM`/`PROD` on those and complex; `LAND`/`LOR`/`LXOR` on C integer and logical;
/// `BAND`/`BOR`/`BXOR` on C integer, Fortran integer, byte and the multi-language types;
/// `MAXLOC`/`MINLOC` on pairs; `REPLACE`/`NO_OP` on all. `MPI_CHAR` and `MPI_CHARACTER` are in
/// no group. Always a subset of [`valid`] (same computability limits).
pub fn valid_strict(op: OpKind, ty: BasicType) -> bool {
    use BasicType::*;
    use OpKind::*;
    let fortran_or_multi = matches!(
        ty,
        Integer | Integer1 | Integer2 | Integer4 | Integer8 | Integer16 | Aint | Offset | Count
    );
    let standard = match op {
        Replace | NoOp => true,
        _ if matches!(ty, Char | Character) => false,
        Land | Lor | Lxor => ty.class() == TypeClass::Logical || (ty.class() == TypeClass::Integer && !fortran_or_multi),
        _ => true,
    };
    standard && valid(op, ty)
}

/// Combines `count` elements of type `ty`: `inout[i] = in[i] op inout[i]`.
///
/// Element `i` starts at byte `i * ty.extent()` of each buffer; only its data bytes are read
/// and written (a pair's padding and a `long double`'s 6 unused bytes are left as they are,
/// except by `REPLACE` on `long double`, which copies all 16 bytes as MPICH does). Pointers
/// need no alignment.
///
/// Semantics, which follow MPICH's kernels (`a` is the inout element, `b` the incoming one):
/// - Integer `SUM`/`PROD` wrap around (two's complement), as MPICH's C code does in practice.
/// - Floating `MAX` is `a > b ? a : b` and `MIN` is `a < b ? a : b`: when either value is
///   NaN the comparison is false and the result is the incoming `b`, so a NaN arriving in
///   `in` propagates while a NaN already in `inout` is replaced. `+0.0`/`-0.0` compare equal,
///   so the incoming one wins too.
/// - `LAND`/`LOR`/`LXOR` treat any nonzero value (NaN included) as true and store 0 or 1 of
///   the element type (`1.0` for floating types).
/// - Complex `PROD` is `(ar*br - ai*bi) + i(ar*bi + ai*br)` in the element precision, without
///   C Annex G's recovery of infinities from NaN results.
/// - `MAXLOC`/`MINLOC` take the incoming pair if its value is strictly better, keep the
///   value and take the smaller index if the values compare equal, and otherwise (including
///   NaN) keep `inout`.
/// - `long double` arithmetic and comparisons run on the x87 unit at full 64-bit precision.
/// - `NO_OP` leaves `inout` unchanged; `REPLACE` copies `in` into `inout`.
///
/// If `valid(op, ty)` is false nothing is written: callers must check `valid` first.
///
/// # Safety
/// `invec` must be valid for reads and `inoutvec` for reads and writes of `count` elements of
/// `ty` laid out `ty.extent()` bytes apart (the last one needs only its data bytes).
/// `invec` may equal `inoutvec`; otherwise the two ranges must not overlap.
pub unsafe fn apply(op: OpKind, ty: BasicType, invec: *const u8, inoutvec: *mut u8, count: usize) {
    use BasicType::*;
    if !valid(op, ty) || op == OpKind::NoOp || count == 0 {
        return;
    }
    let b = Bufs {
        inv: invec,
        io: inoutvec,
        count,
        stride: ty.extent(),
    };
    if op == OpKind::Replace {
        // SAFETY: the caller's contract on the buffers is exactly `replace`'s.
        return unsafe { replace(ty, b) };
    }
    // SAFETY (for every arm): the caller guarantees `count` elements of `ty` at stride
    // `extent()` in both buffers; each arm reads and writes only members of those elements,
    // at the offsets and with the sizes of `ty`'s C layout (see `basic.rs`).
    unsafe {
        match ty {
            Char | SignedChar | Int8 | Integer1 | Character => bits::<i8>(op, b),
            UnsignedChar | Uint8 | Byte | CBool | CxxBool => bits::<u8>(op, b),
            Short | Int16 | Integer2 => bits::<i16>(op, b),
            UnsignedShort | Uint16 => bits::<u16>(op, b),
            Int | Int32 | Integer | Integer4 | Logical => bits::<i32>(op, b),
            Unsigned | Uint32 => bits::<u32>(op, b),
            Long | LongLong | Int64 | Integer8 | Aint | Offset | Count => bits::<i64>(op, b),
            UnsignedLong | UnsignedLongLong | Uint64 => bits::<u64>(op, b),
            Integer16 => bits::<i128>(op, b),
            Float | Real | Real4 => scalar::<f32>(op, b),
            Double | DoublePrecision | Real8 => scalar::<f64>(op, b),
            CFloatComplex | CxxFloatComplex | Complex | Complex8 => complex::<f32>(op, b, 4),
            CDoubleComplex | CxxDoubleComplex | DoubleComplex | Complex16 => complex::<f64>(op, b, 8),
            FloatInt => loc::<f32, i32>(op, b, 4),
            DoubleInt => loc::<f64, i32>(op, b, 8),
            LongInt => loc::<i64, i32>(op, b, 8),
            TwoInt | TwoInteger => loc::<i32, i32>(op, b, 4),
            ShortInt => loc::<i16, i32>(op, b, 4),
            TwoReal => loc::<f32, f32>(op, b, 4),
            TwoDoublePrecision => loc::<f64, f64>(op, b, 8),
            #[cfg(target_arch = "x86_64")]
            LongDouble => scalar::<x87::F80>(op, b),
            #[cfg(target_arch = "x86_64")]
            CLongDoubleComplex | CxxLongDoubleComplex => complex::<x87::F80>(op, b, 16),
            #[cfg(target_arch = "x86_64")]
            LongDoubleInt => loc::<x87::F80, i32>(op, b, 16),
            // Refused by `valid`: no arithmetic on these.
            _ => {}
        }
    }
}

/// The arithmetic one element type offers to the reduction kernels.
trait Scalar: Copy {
    fn add(self, o: Self) -> Self;
    fn sub(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    /// `None` when unordered (a NaN is involved).
    fn compare(self, o: Self) -> Option<Ordering>;
    /// C truth: nonzero.
    fn truth(self) -> bool;
    /// C `(T)(int)b`: 1 or 0.
    fn from_truth(b: bool) -> Self;
}

/// The bitwise operations of integer element types.
trait Bits: Scalar {
    fn and(self, o: Self) -> Self;
    fn or(self, o: Self) -> Self;
    fn xor(self, o: Self) -> Self;
}

macro_rules! int_scalar {
    ($($t:ty),*) => {$(
        impl Scalar for $t {
            fn add(self, o: Self) -> Self { self.wrapping_add(o) }
            fn sub(self, o: Self) -> Self { self.wrapping_sub(o) }
            fn mul(self, o: Self) -> Self { self.wrapping_mul(o) }
            fn compare(self, o: Self) -> Option<Ordering> { Some(self.cmp(&o)) }
            fn truth(self) -> bool { self != 0 }
            fn from_truth(b: bool) -> Self { b.into() }
        }
        impl Bits for $t {
            fn and(self, o: Self) -> Self { self & o }
            fn or(self, o: Self) -> Self { self | o }
            fn xor(self, o: Self) -> Self { self ^ o }
        }
    )*};
}
int_scalar!(i8, u8, i16, u16, i32, u32, i64, u64, i128);

macro_rules! float_scalar {
    ($($t:ty),*) => {$(
        impl Scalar for $t {
            fn add(self, o: Self) -> Self { self + o }
            fn sub(self, o: Self) -> Self { self - o }
            fn mul(self, o: Self) -> Self { self * o }
            fn compare(self, o: Self) -> Option<Ordering> { self.partial_cmp(&o) }
            fn truth(self) -> bool { self != 0.0 }
            fn from_truth(b: bool) -> Self { if b { 1.0 } else { 0.0 } }
        }
    )*};
}
float_scalar!(f32, f64);

/// The two buffers of one [`apply`] call.
#[derive(Clone, Copy)]
struct Bufs {
    inv: *const u8,
    io: *mut u8,
    count: usize,
    stride: usize,
}

impl Bufs {
    /// Reads the member of type `T` at byte `off` of element `i` from both buffers:
    /// `(incoming, inout)`.
    ///
    /// # Safety
    /// `i < count`, and `off + size_of::<T>()` must lie within the element's data bytes.
    unsafe fn get<T: Copy>(self, i: usize, off: usize) -> (T, T) {
        let at = i * self.stride + off;
        // SAFETY: in bounds by the caller's contract and `apply`'s; unaligned reads.
        unsafe {
            (
                ptr::read_unaligned(self.inv.add(at).cast::<T>()),
                ptr::read_unaligned(self.io.add(at).cast::<T>()),
            )
        }
    }

    /// Writes the member of type `T` at byte `off` of element `i` of the inout buffer.
    ///
    /// # Safety
    /// As for [`Bufs::get`].
    unsafe fn put<T: Copy>(self, i: usize, off: usize, v: T) {
        // SAFETY: in bounds by the caller's contract and `apply`'s; unaligned write.
        unsafe { ptr::write_unaligned(self.io.add(i * self.stride + off).cast::<T>(), v) }
    }
}

/// Session 19: from this many elements the back-to-back loop runs in its AVX2 build when the
/// CPU has AVX2 (the base x86-64 target vectorizes with 128-bit SSE2 only): a 64 KiB sum of
/// floats took about half the time (bench/RESULTS.md "Reductions"). Below it the feature
/// check and the call would cost more than they save.
#[cfg(target_arch = "x86_64")]
const WIDE_MIN: usize = 64;

/// `inout[i] = f(in[i], inout[i])` for `count` elements back to back; element by element,
/// so the result is the same whatever width the compiler vectorizes the loop with.
///
/// # Safety
/// `inv` must be valid for reads and `io` for reads and writes of `count` `T`s; the ranges
/// are the same or do not overlap.
#[inline(always)]
unsafe fn back_to_back<T: Copy>(inv: *const T, io: *mut T, count: usize, f: impl Fn(T, T) -> T) {
    for i in 0..count {
        // SAFETY: element `i < count` of each buffer is one `T` (this function's contract).
        unsafe { ptr::write_unaligned(io.add(i), f(ptr::read_unaligned(inv.add(i)), ptr::read_unaligned(io.add(i)))) };
    }
}

/// [`back_to_back`] compiled for AVX2 (256-bit vectors).
///
/// # Safety
/// As [`back_to_back`], and the CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn back_to_back_avx2<T: Copy>(inv: *const T, io: *mut T, count: usize, f: impl Fn(T, T) -> T) {
    // SAFETY: forwarded from the caller.
    unsafe { back_to_back(inv, io, count, f) }
}

/// `inout = f(in, inout)` for every element, where the element is a single `T` at offset 0.
///
/// # Safety
/// Each element of `b` holds a `T` at offset 0.
unsafe fn each<T: Copy>(b: Bufs, f: impl Fn(T, T) -> T) {
    if b.stride == std::mem::size_of::<T>() {
        // Elements back to back: a loop the compiler can vectorize (a stride known only at
        // run time kept a 64 KiB sum of floats element by element).
        let (inv, io) = (b.inv.cast::<T>(), b.io.cast::<T>());
        #[cfg(target_arch = "x86_64")]
        if b.count >= WIDE_MIN && std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (checked just above); the buffers are as `back_to_back`
            // requires (this function's contract with a stride of one `T`).
            return unsafe { back_to_back_avx2(inv, io, b.count, f) };
        }
        // SAFETY: as above.
        return unsafe { back_to_back(inv, io, b.count, f) };
    }
    for i in 0..b.count {
        // SAFETY: element `i < count` holds a `T` at offset 0 (this function's contract).
        unsafe {
            let (x, y) = b.get::<T>(i, 0);
            b.put(i, 0, f(x, y));
        }
    }
}

/// Like [`each`] for elements made of an `A` at offset 0 and a `B` at offset `off`.
///
/// # Safety
/// Each element of `b` holds an `A` at offset 0 and a `B` at offset `off`.
unsafe fn each_pair<A: Copy, B: Copy>(b: Bufs, off: usize, f: impl Fn((A, B), (A, B)) -> (A, B)) {
    for i in 0..b.count {
        // SAFETY: element `i < count` holds an `A` at 0 and a `B` at `off` (the contract).
        unsafe {
            let (xa, ya) = b.get::<A>(i, 0);
            let (xb, yb) = b.get::<B>(i, off);
            let (ra, rb) = f((xa, xb), (ya, yb));
            b.put(i, 0, ra);
            b.put(i, off, rb);
        }
    }
}

/// The operations every scalar type has. `x` is the incoming element, `y` the inout one, and
/// the C expression MPICH evaluates is `y op x`.
///
/// # Safety
/// Each element of `b` is one `T`.
unsafe fn scalar<T: Scalar>(op: OpKind, b: Bufs) {
    use OpKind::*;
    // SAFETY: each element of `b` is one `T` (this function's contract).
    unsafe {
        match op {
            Sum => each(b, |x: T, y: T| y.add(x)),
            Prod => each(b, |x: T, y: T| y.mul(x)),
            Max => each(b, |x: T, y: T| if y.compare(x) == Some(Ordering::Greater) { y } else { x }),
            Min => each(b, |x: T, y: T| if y.compare(x) == Some(Ordering::Less) { y } else { x }),
            Land => each(b, |x: T, y: T| T::from_truth(y.truth() && x.truth())),
            Lor => each(b, |x: T, y: T| T::from_truth(y.truth() || x.truth())),
            Lxor => each(b, |x: T, y: T| T::from_truth(y.truth() != x.truth())),
            _ => {}
        }
    }
}

/// Integer types: the bitwise operations, and everything [`scalar`] does.
///
/// # Safety
/// Each element of `b` is one `T`.
unsafe fn bits<T: Bits>(op: OpKind, b: Bufs) {
    use OpKind::*;
    // SAFETY: each element of `b` is one `T` (this function's contract).
    unsafe {
        match op {
            Band => each(b, |x: T, y: T| y.and(x)),
            Bor => each(b, |x: T, y: T| y.or(x)),
            Bxor => each(b, |x: T, y: T| y.xor(x)),
            _ => scalar::<T>(op, b),
        }
    }
}

/// Complex types: the real part at offset 0, the imaginary part at `im`.
///
/// # Safety
/// Each element of `b` holds a `T` at offsets 0 and `im`.
unsafe fn complex<T: Scalar>(op: OpKind, b: Bufs, im: usize) {
    // SAFETY: each element of `b` holds a `T` at 0 and at `im` (this function's contract).
    unsafe {
        match op {
            OpKind::Sum => each_pair(b, im, |(xr, xi): (T, T), (yr, yi): (T, T)| (yr.add(xr), yi.add(xi))),
            OpKind::Prod => each_pair(b, im, |(xr, xi): (T, T), (yr, yi): (T, T)| {
                (yr.mul(xr).sub(yi.mul(xi)), yr.mul(xi).add(yi.mul(xr)))
            }),
            _ => {}
        }
    }
}

/// `MAXLOC`/`MINLOC` on pairs: the value `V` at offset 0, the index `I` at `off`.
///
/// # Safety
/// Each element of `b` holds a `V` at offset 0 and an `I` at `off`.
unsafe fn loc<V: Scalar, I: Scalar>(op: OpKind, b: Bufs, off: usize) {
    // `better` is the ordering of the inout value against the incoming one that makes the
    // incoming pair win.
    let better = match op {
        OpKind::MaxLoc => Ordering::Less,
        OpKind::MinLoc => Ordering::Greater,
        _ => return,
    };
    let pick = |(xv, xi): (V, I), (yv, yi): (V, I)| match yv.compare(xv) {
        Some(o) if o == better => (xv, xi),
        Some(Ordering::Equal) => (yv, if yi.compare(xi) == Some(Ordering::Less) { yi } else { xi }),
        _ => (yv, yi),
    };
    // SAFETY: each element of `b` holds a `V` at 0 and an `I` at `off` (the contract).
    unsafe { each_pair(b, off, pick) }
}

/// `MPI_REPLACE`: copies each element's data bytes from `in` to `inout`.
///
/// # Safety
/// `apply`'s contract on `b`.
unsafe fn replace(ty: BasicType, b: Bufs) {
    match ty.pair_layout() {
        // Pairs with padding: the value and the index, not the padding.
        Some((vsize, off)) if ty.size() != ty.extent() => {
            for i in 0..b.count {
                let at = i * b.stride;
                // SAFETY: element `i < count` has its value at `at` and its index (the rest of
                // its `size()` data bytes) at `at + off`, in both buffers; `ptr::copy` allows
                // the buffers to be the same.
                unsafe {
                    ptr::copy(b.inv.add(at), b.io.add(at), vsize);
                    ptr::copy(b.inv.add(at + off), b.io.add(at + off), ty.size() - vsize);
                }
            }
        }
        // Elements without padding are contiguous: one copy.
        _ => {
            // SAFETY: both buffers hold `count` contiguous elements of `size() == extent()`
            // bytes; `ptr::copy` allows the buffers to be the same.
            unsafe { ptr::copy(b.inv, b.io, b.count * ty.size()) }
        }
    }
}

/// x87 80-bit extended precision: the C `long double` of x86-64, which Rust lacks.
#[cfg(target_arch = "x86_64")]
mod x87 {
    use super::Scalar;
    use std::arch::asm;
    use std::cmp::Ordering;

    /// The 10 data bytes of a `long double` (64-bit significand with explicit integer bit,
    /// then sign and 15-bit exponent), exactly what `fstp tbyte` stores.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    #[repr(transparent)]
    pub(super) struct F80(pub(super) [u8; 10]);

    /// A C `long double` slot: 16 bytes, 16-aligned, for the asm to load from and store to.
    #[repr(C, align(16))]
    struct Slot([u8; 16]);

    impl Slot {
        fn of(v: F80) -> Slot {
            let mut s = Slot([0; 16]);
            s.0[..10].copy_from_slice(&v.0);
            s
        }

        fn value(&self) -> F80 {
            let mut v = [0; 10];
            v.copy_from_slice(&self.0[..10]);
            F80(v)
        }
    }

    /// `a OP b` with one x87 instruction `$ins` of the form `fOP st(0), st(1)`, which
    /// computes `st(0) = st(0) OP st(1)` (no reversed-operand ambiguity).
    macro_rules! x87_arith {
        ($a:expr, $b:expr, $ins:literal) => {{
            let (a, b) = (Slot::of($a), Slot::of($b));
            let mut r = Slot([0; 16]);
            // SAFETY: `a`, `b` and `r` are live, 16-aligned 16-byte locals; the asm reads 10
            // bytes from each of `a` and `b` and writes 10 bytes to `r`, nothing else. It
            // pushes two x87 registers and pops both, so the x87 stack is empty again on exit
            // as Rust's asm rules require, and all eight x87 registers are declared clobbered
            // (which also guarantees it starts empty). It does not touch the Rust stack or the
            // x87 control word; EFLAGS may change, which `asm!` assumes by default.
            unsafe {
                asm!(
                    "fld tbyte ptr [{b}]",
                    "fld tbyte ptr [{a}]",
                    $ins,
                    "fstp tbyte ptr [{r}]",
                    "fstp st(0)",
                    a = in(reg) a.0.as_ptr(),
                    b = in(reg) b.0.as_ptr(),
                    r = in(reg) r.0.as_mut_ptr(),
                    out("st(0)") _, out("st(1)") _, out("st(2)") _, out("st(3)") _,
                    out("st(4)") _, out("st(5)") _, out("st(6)") _, out("st(7)") _,
                    options(nostack),
                );
            }
            r.value()
        }};
    }

    impl F80 {
        /// `+0.0`.
        pub(super) const ZERO: F80 = F80([0; 10]);
        /// `1.0`: significand `0x8000_0000_0000_0000`, exponent `0x3fff` (the bias).
        pub(super) const ONE: F80 = F80([0, 0, 0, 0, 0, 0, 0, 0x80, 0xff, 0x3f]);
    }

    impl Scalar for F80 {
        fn add(self, o: Self) -> Self {
            x87_arith!(self, o, "fadd st(0), st(1)")
        }

        fn sub(self, o: Self) -> Self {
            x87_arith!(self, o, "fsub st(0), st(1)")
        }

        fn mul(self, o: Self) -> Self {
            x87_arith!(self, o, "fmul st(0), st(1)")
        }

        fn compare(self, o: Self) -> Option<Ordering> {
            let (a, b) = (Slot::of(self), Slot::of(o));
            let (gt, lt, unordered): (u8, u8, u8);
            // SAFETY: `a` and `b` are live, 16-aligned 16-byte locals of which the asm reads
            // 10 bytes each, and it writes no memory. It pushes two x87 registers and pops
            // both (`fucomip` pops one), leaving the x87 stack empty as on entry; all eight
            // x87 registers are declared clobbered. `fucomip` sets ZF/PF/CF (all three when
            // unordered), `fstp` leaves EFLAGS alone, and the `set*` read them into outputs.
            unsafe {
                asm!(
                    "fld tbyte ptr [{b}]",
                    "fld tbyte ptr [{a}]",
                    "fucomip st, st(1)",
                    "fstp st(0)",
                    "seta {gt}",
                    "setb {lt}",
                    "setp {un}",
                    a = in(reg) a.0.as_ptr(),
                    b = in(reg) b.0.as_ptr(),
                    gt = out(reg_byte) gt,
                    lt = out(reg_byte) lt,
                    un = out(reg_byte) unordered,
                    out("st(0)") _, out("st(1)") _, out("st(2)") _, out("st(3)") _,
                    out("st(4)") _, out("st(5)") _, out("st(6)") _, out("st(7)") _,
                    options(nostack, readonly),
                );
            }
            match (unordered, gt, lt) {
                (1, _, _) => None,
                (_, 1, _) => Some(Ordering::Greater),
                (_, _, 1) => Some(Ordering::Less),
                _ => Some(Ordering::Equal),
            }
        }

        /// Nonzero as C sees it: anything that does not compare equal to zero (NaNs and the
        /// invalid encodings included).
        fn truth(self) -> bool {
            self.compare(F80::ZERO) != Some(Ordering::Equal)
        }

        fn from_truth(b: bool) -> Self {
            if b {
                F80::ONE
            } else {
                F80::ZERO
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::BasicType::{self, *};
    use super::OpKind::{self, *};
    use super::{apply, valid, valid_strict};
    use rstest::rstest;

    /// Filler for bytes that are not data (padding, misalignment): must survive every op.
    const PAD: u8 = 0xAA;

    /// Session 19: the AVX2 build of the back-to-back loop (from `WIDE_MIN` elements) gives
    /// every element the same bits as one element at a time (NaNs, signed zeros and
    /// infinities in MAX/MIN included), at lengths around the threshold and vector widths.
    #[rstest]
    #[case(Sum, Float, 63)]
    #[case(Sum, Float, 64)]
    #[case(Max, Float, 67)]
    #[case(Min, Double, 131)]
    #[case(Prod, Double, 1000)]
    #[case(Sum, Int, 65)]
    #[case(Max, Long, 200)]
    #[case(Band, Unsigned, 77)]
    #[case(Lxor, Short, 300)]
    fn wide_loops_match_one_element_at_a_time(#[case] op: OpKind, #[case] ty: BasicType, #[case] n: usize) {
        let size = ty.extent();
        let special: [f64; 8] = [f64::NAN, -0.0, 0.0, f64::INFINITY, f64::NEG_INFINITY, 1.5, -2.25, 3.0e10];
        let elem = |i: usize, salt: usize| -> Vec<u8> {
            let x = special[(i * 7 + salt) % special.len()];
            match ty {
                Float => (x as f32).to_ne_bytes().to_vec(),
                Double => x.to_ne_bytes().to_vec(),
                _ => ((i * 2_654_435_761 + salt * 97) as u64).to_ne_bytes()[..size].to_vec(),
            }
        };
        let inv: Vec<u8> = (0..n).flat_map(|i| elem(i, 1)).collect();
        let io0: Vec<u8> = (0..n).flat_map(|i| elem(i, 4)).collect();
        let mut whole = io0.clone();
        // SAFETY: both buffers hold `n` elements of `ty`, back to back.
        unsafe { apply(op, ty, inv.as_ptr(), whole.as_mut_ptr(), n) };
        for i in 0..n {
            let mut one = io0[i * size..(i + 1) * size].to_vec();
            // SAFETY: one element each (below the threshold: the plain loop).
            unsafe { apply(op, ty, inv[i * size..].as_ptr(), one.as_mut_ptr(), 1) };
            assert_eq!(one, whole[i * size..(i + 1) * size], "element {i} of {n}");
        }
    }

    /// The x87 encoding of `m * 2^e`, exactly (`m != 0`, result normal).
    fn big(m: i128, e: i32) -> [u8; 10] {
        let mag = u64::try_from(m.unsigned_abs()).unwrap();
        let shift = mag.leading_zeros();
        let sig = mag << shift;
        let exp = (16383 + 63 - shift as i32 + e) as u16 | if m < 0 { 0x8000 } else { 0 };
        let mut b = [0; 10];
        b[..8].copy_from_slice(&sig.to_le_bytes());
        b[8..].copy_from_slice(&exp.to_le_bytes());
        b
    }

    /// x87 `+inf`.
    const INF80: [u8; 10] = [0, 0, 0, 0, 0, 0, 0, 0x80, 0xff, 0x7f];

    /// The x87 encoding of an `f64` (zero, normal, infinite or NaN), by bit manipulation,
    /// independent of the asm under test.
    fn ld(x: f64) -> [u8; 10] {
        let bits = x.to_bits();
        let sign = if bits >> 63 == 1 { 0x8000 } else { 0 };
        let (e, m) = ((bits >> 52) & 0x7ff, bits & ((1 << 52) - 1));
        let (exp, sig) = match e {
            0 => {
                assert_eq!(m, 0, "subnormal");
                (0, 0)
            }
            0x7ff => (0x7fff, 1 << 63 | m << 11),
            _ => ((e + 16383 - 1023) as u16, 1 << 63 | m << 11),
        };
        let mut b = [0; 10];
        b[..8].copy_from_slice(&sig.to_le_bytes());
        b[8..].copy_from_slice(&(exp | sign).to_le_bytes());
        b
    }

    /// The data bytes of a scalar of type `ty` with value `x` (integers truncate).
    fn enc(ty: BasicType, x: f64) -> Vec<u8> {
        match ty {
            Float | Real | Real4 => (x as f32).to_le_bytes().to_vec(),
            Double | DoublePrecision | Real8 => x.to_le_bytes().to_vec(),
            LongDouble => ld(x).to_vec(),
            _ => (x as i128).to_le_bytes()[..ty.size()].to_vec(),
        }
    }

    /// One element of `ty`: `parts` are `(offset, data bytes)`, the rest is `PAD`.
    fn elem(ty: BasicType, parts: &[(usize, Vec<u8>)]) -> Vec<u8> {
        let mut e = vec![PAD; ty.extent()];
        for (off, data) in parts {
            e[*off..off + data.len()].copy_from_slice(data);
        }
        e
    }

    fn int(ty: BasicType, v: i128) -> Vec<u8> {
        elem(ty, &[(0, v.to_le_bytes()[..ty.size()].to_vec())])
    }

    fn real(ty: BasicType, x: f64) -> Vec<u8> {
        elem(ty, &[(0, enc(ty, x))])
    }

    /// The part type of a complex type.
    fn part(ty: BasicType) -> BasicType {
        match ty.extent() {
            8 => Float,
            16 => Double,
            _ => LongDouble,
        }
    }

    fn cplx(ty: BasicType, (re, im): (f64, f64)) -> Vec<u8> {
        let p = part(ty);
        elem(ty, &[(0, enc(p, re)), (ty.extent() / 2, enc(p, im))])
    }

    /// The (value, index) member types of a pair type.
    fn members(ty: BasicType) -> (BasicType, BasicType) {
        match ty {
            FloatInt => (Float, Int),
            DoubleInt => (Double, Int),
            LongInt => (Long, Int),
            TwoInt | TwoInteger => (Int, Int),
            ShortInt => (Short, Int),
            LongDoubleInt => (LongDouble, Int),
            TwoReal => (Real, Real),
            TwoDoublePrecision => (DoublePrecision, DoublePrecision),
            _ => unreachable!(),
        }
    }

    fn pair(ty: BasicType, (v, i): (f64, i64)) -> Vec<u8> {
        let (vt, it) = members(ty);
        let off = ty.pair_layout().unwrap().1;
        elem(ty, &[(0, enc(vt, v)), (off, enc(it, i as f64))])
    }

    /// Runs `apply` on elements laid out `shift` bytes past an aligned start (so unaligned
    /// for every `shift` that is not a multiple of the alignment) and returns the inout
    /// elements afterwards; also checks that no byte outside the elements changed.
    fn run(op: OpKind, ty: BasicType, shift: usize, inv: &[Vec<u8>], io: &[Vec<u8>]) -> Vec<Vec<u8>> {
        assert_eq!(inv.len(), io.len());
        let (n, ext) = (io.len(), ty.extent());
        let lay = |els: &[Vec<u8>]| {
            let mut buf = vec![PAD; shift + n * ext + 8];
            for (i, e) in els.iter().enumerate() {
                buf[shift + i * ext..shift + (i + 1) * ext].copy_from_slice(e);
            }
            buf
        };
        let (a, mut b) = (lay(inv), lay(io));
        // SAFETY: both buffers hold `n` elements of `ty` at stride `extent()` from `shift`.
        unsafe { apply(op, ty, a[shift..].as_ptr(), b[shift..].as_mut_ptr(), n) };
        assert!(b[..shift].iter().chain(&b[shift + n * ext..]).all(|&x| x == PAD));
        (0..n).map(|i| b[shift + i * ext..shift + (i + 1) * ext].to_vec()).collect()
    }

    fn check(op: OpKind, ty: BasicType, shift: usize, inv: Vec<Vec<u8>>, io: Vec<Vec<u8>>, want: Vec<Vec<u8>>) {
        assert!(valid(op, ty), "{} on {}", op.name(), ty.name());
        assert_eq!(run(op, ty, shift, &inv, &io), want, "{} on {}", op.name(), ty.name());
    }

    const I32MIN: i128 = i32::MIN as i128;
    const I32MAX: i128 = i32::MAX as i128;
    const U64MAX: i128 = u64::MAX as i128;

    #[rstest]
    #[case(Sum, Int, &[1, -2, I32MAX], &[2, -3, 1], &[3, -5, I32MIN])]
    #[case(Sum, UnsignedChar, &[200, 255], &[100, 1], &[44, 0])]
    #[case(Sum, Uint64, &[U64MAX, 5], &[2, 6], &[1, 11])]
    #[case(Sum, Char, &[100, -3], &[100, 1], &[-56, -2])]
    #[case(Sum, Integer16, &[1 << 126, -1], &[1 << 126, 1], &[i128::MIN, 0])]
    #[case(Prod, Short, &[300, -7], &[300, 3], &[24464, -21])]
    #[case(Prod, Long, &[i64::MAX as i128, -4], &[2, -5], &[-2, 20])]
    #[case(Prod, Uint8, &[16, 3], &[16, 5], &[0, 15])]
    #[case(Prod, Integer, &[-65536], &[65536], &[0])]
    #[case(Max, Int, &[-5, 7, 0], &[3, 7, -1], &[3, 7, 0])]
    #[case(Max, Unsigned, &[0x8000_0000, 1], &[1, 0xffff_ffff], &[0x8000_0000, 0xffff_ffff])]
    #[case(Max, UnsignedLong, &[U64MAX, 0], &[0, 1], &[U64MAX, 1])]
    #[case(Max, UnsignedChar, &[200], &[100], &[200])]
    #[case(Min, Uint8, &[200, 0], &[100, 255], &[100, 0])]
    #[case(Min, UnsignedLongLong, &[0, U64MAX], &[U64MAX, 7], &[0, 7])]
    #[case(Min, SignedChar, &[-128, 5], &[127, -6], &[-128, -6])]
    #[case(Min, Count, &[-(1 << 40)], &[5], &[-(1 << 40)])]
    #[case(Min, Integer2, &[-2], &[-3], &[-3])]
    #[case(Land, Int, &[2, 0, -1, 0], &[7, 5, 0, 0], &[1, 0, 0, 0])]
    #[case(Land, Char, &[100, 0], &[97, 97], &[1, 0])]
    #[case(Land, Integer8, &[3, 1 << 40], &[4, 0], &[1, 0])]
    #[case(Lor, Short, &[0, 0, -3], &[0, 9, 0], &[0, 1, 1])]
    #[case(Lor, Uint64, &[1 << 63, 0], &[0, 0], &[1, 0])]
    #[case(Lxor, Uint16, &[0, 0x100, 3, 0], &[0, 0, 4, 5], &[0, 1, 0, 1])]
    #[case(Land, CBool, &[2, 1, 0, 0], &[255, 0, 1, 0], &[1, 0, 0, 0])]
    #[case(Lor, CxxBool, &[0, 7, 0], &[0, 0, 2], &[0, 1, 1])]
    #[case(Lxor, Logical, &[-1, 0, 0, 2], &[1, 2, 0, 0], &[0, 1, 0, 1])]
    #[case(Band, Byte, &[0xf0, 0xff], &[0x3c, 0x00], &[0x30, 0])]
    #[case(Band, Integer, &[-1, 6], &[0x1234, 3], &[0x1234, 2])]
    #[case(Bor, UnsignedShort, &[0x00f0, 0x8000], &[0x0f00, 1], &[0x0ff0, 0x8001])]
    #[case(Bor, Character, &[0x40], &[0x01], &[0x41])]
    #[case(Bxor, Int64, &[-1], &[0x0f], &[-16])]
    #[case(Bxor, Aint, &[1 << 62], &[1 << 62 | 1], &[1])]
    #[case(Bxor, Integer16, &[-1], &[1 << 100], &[!(1i128 << 100)])]
    fn integer_ops(
        #[case] op: OpKind,
        #[case] ty: BasicType,
        #[case] inv: &[i128],
        #[case] io: &[i128],
        #[case] want: &[i128],
        #[values(0, 1, 7)] shift: usize,
    ) {
        let v = |xs: &[i128]| xs.iter().map(|&x| int(ty, x)).collect();
        check(op, ty, shift, v(inv), v(io), v(want));
    }

    const NAN: f64 = f64::NAN;
    const INF: f64 = f64::INFINITY;

    #[rstest]
    #[case(Sum, Float, &[1.5, -2.0, 0.1], &[2.25, 2.0, 0.2], &[3.75, 0.0, (0.1f32 + 0.2f32) as f64])]
    #[case(Sum, Double, &[1e308, 0.1], &[1e308, 0.2], &[INF, 0.1 + 0.2])]
    #[case(Sum, LongDouble, &[1.5, -0.5, INF], &[2.25, 0.25, 1.0], &[3.75, -0.25, INF])]
    #[case(Sum, Real8, &[-0.0], &[-0.0], &[-0.0])]
    #[case(Prod, Real, &[3.0, -0.0], &[-0.5, 5.0], &[-1.5, -0.0])]
    #[case(Prod, DoublePrecision, &[1e200], &[-1e200], &[-INF])]
    #[case(Prod, LongDouble, &[3.0, -0.0, 1e300], &[-0.5, 5.0, 0.25], &[-1.5, -0.0, 0.25e300])]
    #[case(Max, Float, &[1.0, -1.0, NAN, 2.0], &[2.0, -2.0, 3.0, NAN], &[2.0, -1.0, NAN, 2.0])]
    #[case(Max, Double, &[-0.0, 0.0, -INF], &[0.0, -0.0, -1e300], &[-0.0, 0.0, -1e300])]
    #[case(Max, LongDouble, &[1.0, 2.0, NAN, 5.0], &[1.5, -7.0, 1.0, NAN], &[1.5, 2.0, NAN, 5.0])]
    #[case(Min, Double, &[NAN, 1.0, 4.0], &[1.0, NAN, 3.0], &[NAN, 1.0, 3.0])]
    #[case(Min, Real4, &[-3.0, 0.0], &[-4.0, -0.0], &[-4.0, 0.0])]
    #[case(Min, LongDouble, &[-3.0, NAN, 2.0, 0.0], &[-4.0, 5.0, NAN, -0.0], &[-4.0, NAN, 2.0, 0.0])]
    #[case(Land, Float, &[0.5, 0.0, -0.0, NAN], &[2.0, 1.0, 3.0, 1.0], &[1.0, 0.0, 0.0, 1.0])]
    #[case(Lor, Double, &[0.0, -0.0, NAN], &[-0.0, 2.0, 0.0], &[0.0, 1.0, 1.0])]
    #[case(Lxor, LongDouble, &[NAN, 3.0, 0.0, -0.0], &[0.0, 1.0, -0.0, 1e-300], &[1.0, 0.0, 0.0, 1.0])]
    #[case(Land, LongDouble, &[3.0, 0.0, INF], &[-2.0, 1.0, 1.0], &[1.0, 0.0, 1.0])]
    fn floating_ops(
        #[case] op: OpKind,
        #[case] ty: BasicType,
        #[case] inv: &[f64],
        #[case] io: &[f64],
        #[case] want: &[f64],
        #[values(0, 1, 7)] shift: usize,
    ) {
        let v = |xs: &[f64]| xs.iter().map(|&x| real(ty, x)).collect();
        check(op, ty, shift, v(inv), v(io), v(want));
    }

    #[rstest]
    #[case(Sum, CFloatComplex, &[(1.0, 2.0)], &[(3.0, -5.0)], &[(4.0, -3.0)])]
    #[case(Prod, CFloatComplex, &[(1.0, 2.0), (0.0, 1.0)], &[(3.0, 4.0), (0.0, 1.0)], &[(-5.0, 10.0), (-1.0, 0.0)])]
    #[case(Prod, Complex, &[(2.0, -1.0)], &[(0.5, 0.25)], &[(1.25, 0.0)])]
    #[case(Sum, Complex8, &[(0.5, 0.5)], &[(0.25, -1.0)], &[(0.75, -0.5)])]
    #[case(Prod, CxxFloatComplex, &[(1.0, 1.0)], &[(1.0, -1.0)], &[(2.0, 0.0)])]
    #[case(Prod, CDoubleComplex, &[(1.5, -2.0)], &[(2.0, 0.5)], &[(4.0, -3.25)])]
    #[case(Sum, DoubleComplex, &[(1e300, 1.0)], &[(1e300, -1.0)], &[(2e300, 0.0)])]
    #[case(Prod, Complex16, &[(0.0, 2.0)], &[(0.0, 3.0)], &[(-6.0, 0.0)])]
    #[case(Sum, CxxDoubleComplex, &[(-1.0, -2.0)], &[(1.0, 2.0)], &[(0.0, 0.0)])]
    #[case(Prod, CLongDoubleComplex, &[(1.0, 2.0), (0.0, 1.0)], &[(3.0, 4.0), (0.0, 1.0)], &[(-5.0, 10.0), (-1.0, 0.0)])]
    #[case(Sum, CxxLongDoubleComplex, &[(0.5, -1.0)], &[(0.25, 1.0)], &[(0.75, 0.0)])]
    #[case(Prod, CxxLongDoubleComplex, &[(1.5, -2.0)], &[(2.0, 0.5)], &[(4.0, -3.25)])]
    fn complex_ops(
        #[case] op: OpKind,
        #[case] ty: BasicType,
        #[case] inv: &[(f64, f64)],
        #[case] io: &[(f64, f64)],
        #[case] want: &[(f64, f64)],
        #[values(0, 3)] shift: usize,
    ) {
        let v = |xs: &[(f64, f64)]| xs.iter().map(|&x| cplx(ty, x)).collect();
        check(op, ty, shift, v(inv), v(io), v(want));
    }

    #[rstest]
    #[case(MaxLoc, TwoInt, &[(5.0, 3), (1.0, 0), (7.0, 9)], &[(4.0, 1), (1.0, 2), (7.0, 2)], &[(5.0, 3), (1.0, 0), (7.0, 2)])]
    #[case(MinLoc, TwoInt, &[(5.0, 3), (1.0, 2), (7.0, -9)], &[(4.0, 1), (1.0, 0), (7.0, 2)], &[(4.0, 1), (1.0, 0), (7.0, -9)])]
    #[case(MaxLoc, FloatInt, &[(NAN, 0), (2.0, 5), (-1.0, 1)], &[(1.0, 4), (NAN, 1), (-1.0, 0)], &[(1.0, 4), (NAN, 1), (-1.0, 0)])]
    #[case(MaxLoc, DoubleInt, &[(2.5, 7), (2.5, 1), (3.0, 8)], &[(2.5, 3), (2.5, 4), (1e300, 9)], &[(2.5, 3), (2.5, 1), (1e300, 9)])]
    #[case(MinLoc, DoubleInt, &[(-0.0, 2)], &[(0.0, 6)], &[(0.0, 2)])]
    #[case(MinLoc, LongInt, &[(-1099511627776.0, 5), (3.0, 1)], &[(0.0, 0), (2.0, 7)], &[(-1099511627776.0, 5), (2.0, 7)])]
    #[case(MaxLoc, ShortInt, &[(-3.0, 1), (-4.0, 5)], &[(-4.0, 0), (-4.0, 6)], &[(-3.0, 1), (-4.0, 5)])]
    #[case(MinLoc, ShortInt, &[(-3.0, 1)], &[(-4.0, 0)], &[(-4.0, 0)])]
    #[case(MinLoc, LongDoubleInt, &[(1.0, 2), (-0.0, 9), (NAN, 0)], &[(1.0, 3), (0.0, 4), (2.0, 5)], &[(1.0, 2), (0.0, 4), (2.0, 5)])]
    #[case(MaxLoc, LongDoubleInt, &[(3.0, 1), (1.0, 1)], &[(2.0, 0), (1.5, 0)], &[(3.0, 1), (1.5, 0)])]
    #[case(MaxLoc, TwoReal, &[(1.5, 2), (4.0, 0)], &[(1.5, 1), (3.0, 1)], &[(1.5, 1), (4.0, 0)])]
    #[case(MinLoc, TwoDoublePrecision, &[(-1.0, 4), (2.0, 3)], &[(0.5, 1), (2.0, 8)], &[(-1.0, 4), (2.0, 3)])]
    #[case(MaxLoc, TwoInteger, &[(9.0, 3)], &[(9.0, 2)], &[(9.0, 2)])]
    fn location_ops(
        #[case] op: OpKind,
        #[case] ty: BasicType,
        #[case] inv: &[(f64, i64)],
        #[case] io: &[(f64, i64)],
        #[case] want: &[(f64, i64)],
        #[values(0, 1, 5)] shift: usize,
    ) {
        let v = |xs: &[(f64, i64)]| xs.iter().map(|&x| pair(ty, x)).collect();
        check(op, ty, shift, v(inv), v(io), v(want));
    }

    /// `long double` beyond `f64`'s range and precision: `m * 2^e` values built bit by bit.
    #[rstest]
    #[case(Sum, &[big(1, 5000)], &[big(1, 5000)], &[big(1, 5001)])]
    #[case(Sum, &[big(3, 5000)], &[big(-1, 5000)], &[big(1, 5001)])]
    #[case(Sum, &[big(1, 0)], &[big(1, -63)], &[big(1 << 63 | 1, -63)])]
    #[case(Sum, &[big(1, 16383)], &[big(1, 16383)], &[INF80])]
    #[case(Prod, &[big(1, 5000)], &[big(1, 5000)], &[big(1, 10000)])]
    #[case(Prod, &[big(3, 6644)], &[big(3, 6644)], &[big(9, 13288)])] // ~9e4000
    #[case(Prod, &[big(3, 5000)], &[big(-5, -9000)], &[big(-15, -4000)])]
    #[case(Prod, &[big(1, 16000)], &[big(1, 16000)], &[INF80])]
    #[case(Max, &[big(1, 5000), big(-1, 6000)], &[big(3, 4999), big(1, -6000)], &[big(3, 4999), big(1, -6000)])]
    #[case(Max, &[big(1 << 62 | 1, 0)], &[big(1 << 62, 0)], &[big(1 << 62 | 1, 0)])]
    #[case(Min, &[big(1, 5000), big(-1, 6000)], &[big(3, 4999), big(1, -6000)], &[big(1, 5000), big(-1, 6000)])]
    #[case(Land, &[big(1, -16000)], &[big(-1, 16000)], &[ld(1.0)])]
    fn long_double_beyond_f64(
        #[case] op: OpKind,
        #[case] inv: &[[u8; 10]],
        #[case] io: &[[u8; 10]],
        #[case] want: &[[u8; 10]],
        #[values(0, 9)] shift: usize,
    ) {
        let v = |xs: &[[u8; 10]]| xs.iter().map(|x| elem(LongDouble, &[(0, x.to_vec())])).collect();
        check(op, LongDouble, shift, v(inv), v(io), v(want));
    }

    #[rstest]
    fn long_double_complex_and_pair_beyond_f64(#[values(0, 3)] shift: usize) {
        // (2^5000 + 2^5000 i) * (3*2^5000 - 2^5000 i) = 2^10002 + 2^10001 i
        let c = |re: [u8; 10], im: [u8; 10]| elem(CLongDoubleComplex, &[(0, re.to_vec()), (16, im.to_vec())]);
        check(
            Prod,
            CLongDoubleComplex,
            shift,
            vec![c(big(1, 5000), big(1, 5000))],
            vec![c(big(3, 5000), big(-1, 5000))],
            vec![c(big(1, 10002), big(1, 10001))],
        );
        let p = |v: [u8; 10], i: i32| elem(LongDoubleInt, &[(0, v.to_vec()), (16, i.to_le_bytes().to_vec())]);
        check(
            MaxLoc,
            LongDoubleInt,
            shift,
            vec![p(big(1, 9000), 4), p(big(1, 9000), 1), p(big(-1, 9000), 0)],
            vec![p(big(1 << 40 | 1, 8960), 7), p(big(1, 9000), 2), p(big(-1, 8999), 3)],
            vec![p(big(1 << 40 | 1, 8960), 7), p(big(1, 9000), 1), p(big(-1, 8999), 3)],
        );
    }

    /// The test helpers agree with the constants of the x87 code.
    #[test]
    fn f80_encodings() {
        assert_eq!(ld(1.0), super::x87::F80::ONE.0);
        assert_eq!(ld(0.0), super::x87::F80::ZERO.0);
        assert_eq!(big(1, 0), ld(1.0));
        assert_eq!(big(-3, -2), ld(-0.75));
        assert_eq!(ld(INF), INF80);
    }

    /// REPLACE copies the data bytes (not a pair's padding); NO_OP writes nothing.
    #[rstest]
    #[case(Int)]
    #[case(Byte)]
    #[case(Packed)]
    #[case(Wchar)]
    #[case(LongDouble)]
    #[case(CDoubleComplex)]
    #[case(CLongDoubleComplex)]
    #[case(FloatInt)]
    #[case(DoubleInt)]
    #[case(LongInt)]
    #[case(ShortInt)]
    #[case(LongDoubleInt)]
    #[case(TwoDoublePrecision)]
    #[case(Real16)]
    #[case(Complex32)]
    fn replace_and_no_op(#[case] ty: BasicType, #[values(0, 1)] shift: usize) {
        let n = 3;
        let inv: Vec<Vec<u8>> = (0..n).map(|i| (0..ty.extent()).map(|j| (i * 31 + j) as u8).collect()).collect();
        let io: Vec<Vec<u8>> = (0..n).map(|i| vec![0x50 + i as u8; ty.extent()]).collect();
        assert!(valid(NoOp, ty) && valid(Replace, ty) && valid_strict(Replace, ty));
        assert_eq!(run(NoOp, ty, shift, &inv, &io), io);
        let data = |j: usize| match ty.pair_layout() {
            Some((vsize, off)) => j < vsize || (off..off + ty.size() - vsize).contains(&j),
            None => true,
        };
        let want: Vec<Vec<u8>> = (0..n)
            .map(|i| (0..ty.extent()).map(|j| if data(j) { inv[i][j] } else { io[i][j] }).collect())
            .collect();
        assert_eq!(run(Replace, ty, shift, &inv, &io), want);
    }

    /// `invec == inoutvec` is allowed.
    #[test]
    fn in_place() {
        let mut b = [0u8; 13];
        b[1..].copy_from_slice(&[3i32.to_le_bytes(), (-4i32).to_le_bytes(), i32::MAX.to_le_bytes()].concat());
        let p = b[1..].as_mut_ptr();
        // SAFETY: 3 ints at `p`, read and written through the same pointer.
        unsafe { apply(Sum, Int, p, p, 3) };
        assert_eq!(&b[1..], [6i32.to_le_bytes(), (-8i32).to_le_bytes(), (-2i32).to_le_bytes()].concat());
        let mut pairs = [pair(DoubleInt, (1.5, 3)), pair(DoubleInt, (-2.0, 1))].concat();
        let before = pairs.clone();
        let p = pairs.as_mut_ptr();
        // SAFETY: 2 `double_int`s at `p`, read and written through the same pointer.
        unsafe {
            apply(MaxLoc, DoubleInt, p, p, 2);
            apply(Replace, DoubleInt, p, p, 2);
        }
        assert_eq!(pairs, before);
    }

    /// Nothing is touched for `count == 0` or for an invalid (op, type) pair.
    #[rstest]
    #[case(Sum, FloatInt)]
    #[case(Band, Double)]
    #[case(MaxLoc, Int)]
    #[case(Sum, Real16)]
    #[case(Max, Wchar)]
    fn invalid_pairs_write_nothing(#[case] op: OpKind, #[case] ty: BasicType) {
        assert!(!valid(op, ty));
        let inv = vec![vec![0x11; ty.extent()]; 2];
        let io = vec![vec![0x22; ty.extent()]; 2];
        assert_eq!(run(op, ty, 1, &inv, &io), io);
        let dangling = std::ptr::NonNull::<u8>::dangling().as_ptr();
        // SAFETY: with `count == 0` no byte is accessed.
        unsafe { apply(Sum, Int, dangling, dangling, 0) };
    }

    #[rstest]
    #[case(Sum, Int, true, true)]
    #[case(Sum, FloatInt, false, false)]
    #[case(Band, Double, false, false)]
    #[case(MaxLoc, Int, false, false)]
    #[case(MinLoc, CDoubleComplex, false, false)]
    #[case(Sum, Char, true, false)]
    #[case(Band, Character, true, false)]
    #[case(Max, Wchar, false, false)]
    #[case(Land, Long, true, true)]
    #[case(Land, Int8, true, true)]
    #[case(Land, CBool, true, true)]
    #[case(Lxor, Logical, true, true)]
    #[case(Land, Double, true, false)]
    #[case(Lor, LongDouble, true, false)]
    #[case(Land, Integer, true, false)]
    #[case(Land, Aint, true, false)]
    #[case(Sum, Logical, false, false)]
    #[case(Band, CBool, false, false)]
    #[case(Max, CDoubleComplex, false, false)]
    #[case(Prod, CLongDoubleComplex, true, true)]
    #[case(Band, Byte, true, true)]
    #[case(Sum, Byte, false, false)]
    #[case(Bor, Count, true, true)]
    #[case(Max, Offset, true, true)]
    #[case(Sum, Integer16, true, true)]
    #[case(Sum, Real16, false, false)]
    #[case(Prod, Complex32, false, false)]
    #[case(Sum, Packed, false, false)]
    #[case(MinLoc, TwoReal, true, true)]
    #[case(MaxLoc, LongDoubleInt, true, true)]
    #[case(Replace, Wchar, true, true)]
    #[case(NoOp, Packed, true, true)]
    #[case(Replace, Real16, true, true)]
    fn validity(#[case] op: OpKind, #[case] ty: BasicType, #[case] mpich: bool, #[case] strict: bool) {
        assert_eq!(valid(op, ty), mpich, "valid({}, {})", op.name(), ty.name());
        assert_eq!(valid_strict(op, ty), strict, "valid_strict({}, {})", op.name(), ty.name());
    }

    /// What MPICH 4.0.2's `MPI_Reduce_local` accepted on this machine, per type handle, for
    /// SUM MIN MAX PROD BAND BOR BXOR LAND LOR LXOR MINLOC MAXLOC (`Y` = accepted; LAND/LOR on
    /// FLOAT, DOUBLE and LONG_DOUBLE pass its check and then abort in an assertion).
    /// `MPI_INTEGER16` is `MPI_DATATYPE_NULL` there; we refuse `MPI_REAL16`, which it accepts.
    const MPICH_402: &[(&str, &[usize])] = &[
        (
            "YYYYYYYYYY..",
            &[
                0x201, 0x202, 0x203, 0x208, 0x209, 0x20a, 0x20b, 0x20c, 0x20d, 0x20e, 0x20f, 0x219, 0x240, 0x241, 0x243, 0x244, 0x245,
                0x248, 0x249, 0x250, 0x251, 0x258, 0x259, 0x2c1, 0x21e, 0x2c9, 0x2d1, 0x2d9,
            ],
        ),
        ("YYYY...YYY..", &[0x210, 0x214, 0x21a, 0x21c, 0x220, 0x2d2, 0x2da]),
        (
            "Y..Y........",
            &[0x212, 0x213, 0x216, 0x217, 0x21b, 0x21d, 0x224, 0x225, 0x2db, 0x2e3],
        ),
        ("..........YY", &[0x228, 0x229, 0x22a, 0x22b, 0x22c, 0x22d, 0x230, 0x231, 0x232]),
        (".......YYY..", &[0x218, 0x238, 0x239]),
        ("....YYY.....", &[0x247]),
        ("............", &[0x207, 0x23c, 0x2eb]),
    ];

    #[test]
    fn validity_matches_mpich() {
        let ops = [Sum, Min, Max, Prod, Band, Bor, Bxor, Land, Lor, Lxor, MinLoc, MaxLoc];
        let mut seen = 0;
        for (row, handles) in MPICH_402 {
            for &h in *handles {
                let ty = BasicType::from_handle(h).unwrap();
                let ours: String = ops.iter().map(|&op| if valid(op, ty) { 'Y' } else { '.' }).collect();
                assert_eq!(&ours, row, "{}", ty.name());
                seen += 1;
            }
        }
        assert_eq!(seen, BasicType::ALL.len() - 2); // all but INTEGER16 and REAL16
    }

    /// The standard's table is a subset of what we accept.
    #[test]
    fn strict_is_subset() {
        for &op in OpKind::ALL {
            for &ty in BasicType::ALL {
                assert!(!valid_strict(op, ty) || valid(op, ty), "{} {}", op.name(), ty.name());
            }
        }
    }

    #[rstest]
    #[case(0x21, Sum, "MPI_SUM")]
    #[case(0x22, Min, "MPI_MIN")]
    #[case(0x23, Max, "MPI_MAX")]
    #[case(0x24, Prod, "MPI_PROD")]
    #[case(0x28, Band, "MPI_BAND")]
    #[case(0x29, Bor, "MPI_BOR")]
    #[case(0x2a, Bxor, "MPI_BXOR")]
    #[case(0x30, Land, "MPI_LAND")]
    #[case(0x31, Lor, "MPI_LOR")]
    #[case(0x32, Lxor, "MPI_LXOR")]
    #[case(0x38, MinLoc, "MPI_MINLOC")]
    #[case(0x39, MaxLoc, "MPI_MAXLOC")]
    #[case(0x3c, Replace, "MPI_REPLACE")]
    #[case(0x3d, NoOp, "MPI_NO_OP")]
    fn op_handles(#[case] h: usize, #[case] op: OpKind, #[case] name: &str) {
        assert_eq!(OpKind::from_handle(h), Some(op));
        assert_eq!((op.handle(), op.name()), (h, name));
    }

    #[rstest]
    #[case(0x20)] // MPI_OP_NULL
    #[case(0x25)]
    #[case(0x3e)]
    #[case(0x209)] // a datatype handle
    #[case(0)]
    fn unknown_op_handles(#[case] h: usize) {
        assert_eq!(OpKind::from_handle(h), None);
    }

    #[test]
    fn all_ops_listed() {
        assert_eq!(OpKind::ALL.len(), 14);
        for &op in OpKind::ALL {
            assert_eq!(OpKind::from_handle(op.handle()), Some(op));
        }
    }
}
