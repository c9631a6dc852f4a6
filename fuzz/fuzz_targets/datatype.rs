//! Fuzz target: the datatype layer. The input is a small program that builds derived
//! datatypes (contiguous, hvector, hindexed, struct, resized, subarray, darray) from the
//! predefined ones and from each other, with sizes, strides and displacements taken from the
//! input (small most of the time, extreme now and then). A constructor may refuse its
//! arguments (an `MpiResult` error is fine) but must not panic; every type it makes must be
//! consistent: its size is the sum of its blocks, its true bounds are theirs, its runs of
//! basic elements add up to its size, `elements_in` counts whole elements, and packing
//! `count` elements then unpacking them elsewhere reproduces exactly the bytes its typemap
//! covers and nothing else.
#![no_main]

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use toucanmpi::core::datatype::{self, Datatype};
use toucanmpi::core::datatype::typemap::{self, Distrib, Order};

/// Types with more blocks or a larger span than this are not packed (time and memory).
const MAX_BLOCKS: usize = 4096;
const MAX_SPAN: isize = 1 << 20;

fn predefined(u: &mut Unstructured) -> Result<Datatype> {
    let all: Vec<usize> = (0x200..0x300).filter(|&h| datatype::predefined(h).is_some()).collect();
    let h = *u.choose(&all)?;
    Ok(datatype::predefined(h).expect("listed above").clone())
}

/// A count: small usually, sometimes zero or huge (overflow checks must catch those).
fn count(u: &mut Unstructured) -> Result<usize> {
    Ok(match u.int_in_range(0u8..=63)? {
        0..=3 => 0,
        4 => usize::MAX / u.int_in_range(1usize..=8)?,
        5 => isize::MAX as usize / u.int_in_range(1usize..=8)?,
        6 => 1 << 16, // (i32::MAX: a few seconds per type when its copies do not tile)
        7..=10 => u.int_in_range(9usize..=300)?,
        _ => u.int_in_range(1usize..=8)?,
    })
}

/// A byte displacement or stride: small (either sign) usually, sometimes extreme.
fn disp(u: &mut Unstructured) -> Result<isize> {
    Ok(match u.int_in_range(0u8..=15)? {
        0 => isize::MAX / u.int_in_range(1isize..=4)?,
        1 => isize::MIN / u.int_in_range(1isize..=4)?,
        _ => u.int_in_range(-256isize..=256)?,
    })
}

fn build(u: &mut Unstructured, made: &[Datatype]) -> Result<Option<Datatype>> {
    let pick = |u: &mut Unstructured| -> Result<Datatype> {
        if made.is_empty() || u.ratio(1, 3)? {
            predefined(u)
        } else {
            Ok(u.choose(made)?.clone())
        }
    };
    let old = pick(u)?;
    let r = match u.int_in_range(0u8..=6)? {
        0 => typemap::contiguous(count(u)?, &old),
        1 => typemap::hvector(count(u)?, count(u)?, disp(u)?, &old),
        2 => {
            let n = u.int_in_range(0usize..=6)?;
            let (mut bl, mut ds) = (Vec::new(), Vec::new());
            for _ in 0..n {
                bl.push(count(u)?);
                ds.push(disp(u)?);
            }
            typemap::hindexed(&bl, &ds, &old)
        }
        3 => {
            let n = u.int_in_range(0usize..=4)?;
            let (mut bl, mut ds, mut ts) = (Vec::new(), Vec::new(), Vec::new());
            for _ in 0..n {
                bl.push(count(u)?);
                ds.push(disp(u)?);
                ts.push(pick(u)?);
            }
            let refs: Vec<&Datatype> = ts.iter().collect();
            typemap::structure(&bl, &ds, &refs)
        }
        4 => typemap::resized(&old, disp(u)?, disp(u)?),
        5 => {
            let n = u.int_in_range(1usize..=3)?;
            let (mut sz, mut sub, mut st) = (Vec::new(), Vec::new(), Vec::new());
            for _ in 0..n {
                sz.push(u.int_in_range(0usize..=6)?);
                sub.push(u.int_in_range(0usize..=6)?);
                st.push(u.int_in_range(0usize..=6)?);
            }
            let order = if u.arbitrary()? { Order::C } else { Order::Fortran };
            typemap::subarray(&sz, &sub, &st, order, &old)
        }
        _ => {
            let n = u.int_in_range(1usize..=3)?;
            let (mut gs, mut ds, mut ps) = (Vec::new(), Vec::new(), Vec::new());
            for _ in 0..n {
                gs.push(u.int_in_range(0usize..=9)?);
                ps.push(u.int_in_range(0usize..=3)?);
                ds.push(match u.int_in_range(0u8..=2)? {
                    0 => Distrib::None,
                    1 => Distrib::Block(if u.arbitrary()? { None } else { Some(u.int_in_range(1usize..=4)?) }),
                    _ => Distrib::Cyclic(if u.arbitrary()? { None } else { Some(u.int_in_range(1usize..=4)?) }),
                });
            }
            let size: usize = ps.iter().product::<usize>().max(1);
            let rank = u.int_in_range(0..=size)?; // one past the end now and then
            let order = if u.arbitrary()? { Order::C } else { Order::Fortran };
            typemap::darray(size, rank, &gs, &ds, &ps, order, &old)
        }
    };
    Ok(r.ok())
}

/// The consistency rules every datatype must obey.
fn check(d: &Datatype) {
    let sum: usize = d.blocks.iter().map(|b| b.1).sum();
    assert_eq!(sum, d.size, "size is not the sum of the blocks: {d:?}");
    let runs: usize = d.runs().iter().map(|r| r.n * r.ty.size()).sum();
    assert_eq!(runs, d.size, "runs do not add up to the size: {d:?}");
    let nonempty: Vec<_> = d.blocks.iter().filter(|b| b.1 > 0).collect();
    if let (Some(lo), Some(hi)) = (
        nonempty.iter().map(|b| b.0).min(),
        nonempty.iter().map(|b| b.0 + b.1 as isize).max(),
    ) {
        assert_eq!(d.true_lb, lo, "true lower bound: {d:?}");
        assert_eq!(d.true_extent, hi - lo, "true extent: {d:?}");
    }
    if let (Some(b), Some(e)) = ((d.size as u64).checked_mul(3), (d.elements as i64).checked_mul(3)) {
        if d.size > 0 {
            assert_eq!(d.elements_in(b), e, "whole elements: {d:?}");
        }
    }
}

/// Packs `count` elements from a patterned buffer and unpacks them into a zeroed one: the
/// bytes the typemap covers must arrive, the others stay zero.
fn roundtrip(d: &Datatype, count: usize) {
    if d.blocks.len() > MAX_BLOCKS || d.size == 0 || d.extent.unsigned_abs() as isize > MAX_SPAN {
        return;
    }
    // Bounds in i128: a type's blocks may sit anywhere in the address space.
    let (mut lo, mut hi) = (0i128, 0i128);
    for i in 0..count as i128 {
        for &(o, l) in &d.blocks {
            let at = i * d.extent as i128 + o as i128;
            lo = lo.min(at);
            hi = hi.max(at + l as i128);
        }
    }
    if hi - lo > MAX_SPAN as i128 {
        return;
    }
    let (lo, hi) = (lo as isize, hi as isize);
    let span = (hi - lo) as usize;
    let src: Vec<u8> = (0..span).map(|i| (i % 251) as u8 + 1).collect();
    let mut covered = vec![false; span];
    for i in 0..count as isize {
        for &(o, l) in &d.blocks {
            let at = (i * d.extent + o - lo) as usize;
            covered[at..at + l].iter_mut().for_each(|c| *c = true);
        }
    }
    let mut packed = Vec::new();
    // SAFETY: `src` spans every byte of the `count` elements (measured above); the element
    // at offset 0 of the buffer is at `src[-lo]`.
    unsafe { d.pack(src.as_ptr().offset(-lo), count, &mut packed) };
    assert_eq!(packed.len(), count * d.size, "packed length: {d:?}");
    let mut dst = vec![0u8; span];
    // SAFETY: as above, for `dst`.
    let n = unsafe { d.unpack(&packed, dst.as_mut_ptr().offset(-lo), count) };
    assert_eq!(n, packed.len(), "unpacked length: {d:?}");
    for i in 0..span {
        let want = if covered[i] { src[i] } else { 0 };
        assert_eq!(dst[i], want, "byte {i} after pack/unpack: {d:?}");
    }
    // A short message fills a prefix and stops.
    let short = packed.len() / 2;
    let mut dst2 = vec![0u8; span];
    // SAFETY: as above.
    let n2 = unsafe { d.unpack(&packed[..short], dst2.as_mut_ptr().offset(-lo), count) };
    assert_eq!(n2, short, "short unpack: {d:?}");
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let mut made: Vec<Datatype> = Vec::new();
    for _ in 0..6 {
        match build(&mut u, &made) {
            Ok(Some(d)) => {
                check(&d);
                roundtrip(&d, 1 + (d.size % 3));
                made.push(d);
            }
            Ok(None) => {}
            Err(_) => break,
        }
    }
});
