//! Typemap construction for derived datatypes (MPI chapter 5): every constructor is reduced to a
//! sequence of *parts* (`count` copies of an old type at a displacement, `stride` bytes apart),
//! and [`Builder`] turns parts into the flat layout of one element: runs of basic elements in
//! typemap order, merged where they touch, plus the bounds.
//!
//! Bounds follow the MPI-3 rules without `MPI_LB`/`MPI_UB` markers, as MPICH computes them: a
//! part spans its old type's `[lb, ub)` moved by its displacements, the new `lb`/`ub` are the
//! minimum and maximum over parts, and the true bounds are those of the data alone. A struct's
//! extent is rounded up to the largest alignment of its members (the standard's epsilon, what a
//! C compiler does to `sizeof`) unless all members have the same shape, which is how MPICH
//! behaves (`{int at 0, int at 5}` has extent 9, `{int at 0, float at 5}` has 12). Subarray and
//! darray types are resized to the whole array (`lb` 0, extent = array size × old extent).

use crate::consts as c;
use crate::core::datatype::basic::{BasicType, TypeClass};
use crate::core::datatype::Datatype;
use crate::core::error::{err, MpiError, MpiResult};
use std::borrow::Cow;

/// `n` consecutive basic elements of type `ty`, `ty.extent()` bytes apart, starting `off` bytes
/// from the buffer address (so `off` includes the type's lower bound).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    pub off: isize,
    pub ty: BasicType,
    pub n: usize,
}

impl Run {
    fn end(&self) -> isize {
        self.off + (self.n * self.ty.extent()) as isize
    }
}

/// Most runs a flattened typemap may hold: a bound on memory (runs and blocks together cost
/// about 40 bytes each). Only pathological types (huge vectors of tiny blocks) reach it.
pub const MAX_RUNS: usize = 1 << 25;

fn too_large() -> MpiError {
    MpiError::new(c::MPI_ERR_ARG, "datatype too large (size or displacement overflows)")
}

fn mul(a: isize, b: isize) -> MpiResult<isize> {
    a.checked_mul(b).ok_or_else(too_large)
}

fn add(a: isize, b: isize) -> MpiResult<isize> {
    a.checked_add(b).ok_or_else(too_large)
}

fn sub(a: isize, b: isize) -> MpiResult<isize> {
    a.checked_sub(b).ok_or_else(too_large)
}

/// Accumulates parts into a typemap.
pub struct Builder {
    runs: Vec<Run>,
    size: usize,
    elements: usize,
    bounds: Option<(isize, isize)>,
    true_bounds: Option<(isize, isize)>,
    align: usize,
    /// `None` before the first part, `Some(None)` once two parts disagree.
    basic: Option<Option<BasicType>>,
    /// The same over parts without elements (used when no part has any).
    empty_basic: Option<Option<BasicType>>,
}

impl Default for Builder {
    fn default() -> Self {
        Self::new()
    }
}

impl Builder {
    pub fn new() -> Builder {
        Builder {
            runs: Vec::new(),
            size: 0,
            elements: 0,
            bounds: None,
            true_bounds: None,
            align: 1,
            basic: None,
            empty_basic: None,
        }
    }

    fn widen(b: &mut Option<(isize, isize)>, lo: isize, hi: isize) {
        *b = Some(match *b {
            None => (lo, hi),
            Some((l, h)) => (l.min(lo), h.max(hi)),
        });
    }

    /// Extends the bounds without adding data (MPICH's vector with zero-length blocks).
    pub fn touch(&mut self, lo: isize, hi: isize) {
        Self::widen(&mut self.bounds, lo, hi);
    }

    fn push(&mut self, r: Run) -> MpiResult<()> {
        if r.n == 0 {
            return Ok(());
        }
        if let Some(last) = self.runs.last_mut() {
            if last.ty == r.ty && last.end() == r.off {
                last.n += r.n;
                return Ok(());
            }
        }
        if self.runs.len() >= MAX_RUNS {
            return err(
                c::MPI_ERR_NO_MEM,
                format!("derived datatype too fragmented: more than {MAX_RUNS} separate blocks per element"),
            );
        }
        self.runs.push(r);
        Ok(())
    }

    /// Adds `count` copies of `t`, the first at byte displacement `disp`, the others `stride`
    /// bytes apart. A part with `count == 0` adds nothing, not even to the bounds.
    pub fn part(&mut self, t: &Datatype, disp: isize, count: usize, stride: isize) -> MpiResult<()> {
        self.part_with(t, &t.runs(), disp, count, stride)
    }

    /// [`Builder::part`] with `t`'s runs already at hand (loops over many parts of one type).
    pub fn part_with(&mut self, t: &Datatype, runs: &[Run], disp: isize, count: usize, stride: isize) -> MpiResult<()> {
        if count == 0 {
            self.empty_basic(t);
            return Ok(());
        }
        self.bounds_of(t, disp, count, stride)?;
        self.tally(t, count)?;
        self.append(runs, disp, count, stride)
    }

    /// Remembers the basic type of a part without elements, for a type that has none at all.
    fn empty_basic(&mut self, t: &Datatype) {
        self.empty_basic = Some(match self.empty_basic {
            None => t.basic,
            Some(b) if b == t.basic => b,
            Some(_) => None,
        });
    }

    /// Widens the bounds by those of `count` copies of `t` at `disp`, `stride` bytes apart.
    fn bounds_of(&mut self, t: &Datatype, disp: isize, count: usize, stride: isize) -> MpiResult<()> {
        // (A count above isize::MAX would wrap negative here.)
        let span = mul(isize::try_from(count).map_err(|_| too_large())? - 1, stride)?;
        let (lo, hi) = (span.min(0), span.max(0));
        let lb = add(disp, t.lb)?;
        Self::widen(&mut self.bounds, add(lb, lo)?, add(add(lb, t.extent)?, hi)?);
        if t.size > 0 {
            let tlb = add(disp, t.true_lb)?;
            Self::widen(&mut self.true_bounds, add(tlb, lo)?, add(add(tlb, t.true_extent)?, hi)?);
        }
        Ok(())
    }

    /// Counts the data of `count` copies of `t`.
    fn tally(&mut self, t: &Datatype, count: usize) -> MpiResult<()> {
        self.align = self.align.max(t.align);
        self.basic = Some(match self.basic {
            None => t.basic,
            Some(b) if b == t.basic => b,
            Some(_) => None,
        });
        // Sizes stay within isize, like every displacement and extent.
        self.size = count
            .checked_mul(t.size)
            .and_then(|s| s.checked_add(self.size))
            .filter(|&s| s <= isize::MAX as usize)
            .ok_or_else(too_large)?;
        self.elements = count
            .checked_mul(t.elements)
            .and_then(|s| s.checked_add(self.elements))
            .ok_or_else(too_large)?;
        Ok(())
    }

    /// Appends the runs of `count` copies of a type whose runs are `runs`.
    fn append(&mut self, runs: &[Run], disp: isize, count: usize, stride: isize) -> MpiResult<()> {
        match runs {
            [] => {}
            // Copies that tile: one longer run (a contiguous of a contiguous stays one block).
            [r] if (r.n * r.ty.extent()) as isize == stride => self.push(Run {
                off: add(disp, r.off)?,
                ty: r.ty,
                n: r.n.checked_mul(count).ok_or_else(too_large)?,
            })?,
            rs => {
                for k in 0..count {
                    let base = add(disp, mul(k as isize, stride)?)?;
                    for r in rs {
                        self.push(Run {
                            off: add(base, r.off)?,
                            ..*r
                        })?;
                    }
                }
            }
        }
        Ok(())
    }

    /// The datatype: bounds from the parts, or `explicit` `(lb, extent)`; with `pad`, the
    /// extent rounded up to the largest member alignment.
    pub fn finish(self, explicit: Option<(isize, isize)>, pad: bool) -> MpiResult<Datatype> {
        let (lb, ub) = match explicit {
            Some((lb, ext)) => (lb, add(lb, ext)?),
            None => {
                let (lb, mut ub) = self.bounds.unwrap_or((0, 0));
                if pad && self.align > 1 {
                    let rem = sub(ub, lb)?.rem_euclid(self.align as isize);
                    if rem != 0 {
                        ub = add(ub, self.align as isize - rem)?;
                    }
                }
                (lb, ub)
            }
        };
        let (tlb, tub) = self.true_bounds.unwrap_or((lb, ub));
        // Bounds far apart (displacements near both ends of the address space) have no
        // extent that fits.
        let (extent, true_extent) = (sub(ub, lb)?, sub(tub, tlb)?);
        let basic = self.basic.or(self.empty_basic).flatten();
        // Runs of a type with gaps inside its elements (pair types) become one block per
        // element: a long run of them (contiguous(2^31 - 1, MPI_DOUBLE_INT)) must not expand
        // into billions of blocks.
        let nblocks = self.runs.iter().try_fold(0usize, |a, r| {
            let per = if r.ty.size() == r.ty.extent() && !r.ty.is_pair() {
                1
            } else {
                r.n.checked_mul(basic_blocks(r.ty).len())?
            };
            a.checked_add(per)
        });
        if nblocks.is_none_or(|n| n > MAX_RUNS) {
            return err(
                c::MPI_ERR_NO_MEM,
                format!("derived datatype too fragmented: more than {MAX_RUNS} separate blocks per element"),
            );
        }
        let blocks = blocks_of(&self.runs);
        let keep_runs = basic.is_none_or(|b| b.size() != b.extent() || b.is_pair());
        Ok(Datatype {
            size: self.size,
            lb,
            extent,
            true_lb: tlb,
            true_extent,
            blocks,
            basic,
            elements: self.elements,
            committed: false,
            name: String::new(),
            align: self.align,
            runs: if keep_runs { self.runs } else { Vec::new() },
            contents: None,
        })
    }
}

/// Data blocks of one element of a basic type (pair types have padding between members).
pub fn basic_blocks(b: BasicType) -> Vec<(isize, usize)> {
    match b.pair_layout() {
        Some((vsize, ioff)) if ioff != vsize => vec![(0, vsize), (ioff as isize, b.size() - vsize)],
        _ => vec![(0, b.size())],
    }
}

/// The byte blocks of a run list, in order, adjacent blocks merged.
pub fn blocks_of(runs: &[Run]) -> Vec<(isize, usize)> {
    let mut out: Vec<(isize, usize)> = Vec::with_capacity(runs.len());
    let mut push = |off: isize, len: usize| {
        if let Some(last) = out.last_mut() {
            if last.0 + last.1 as isize == off {
                last.1 += len;
                return;
            }
        }
        out.push((off, len));
    };
    for r in runs {
        let (size, ext) = (r.ty.size(), r.ty.extent());
        if size == ext && !r.ty.is_pair() {
            push(r.off, r.n * size);
        } else {
            let bb = basic_blocks(r.ty);
            for k in 0..r.n {
                for &(o, l) in &bb {
                    push(r.off + (k * ext) as isize + o, l);
                }
            }
        }
    }
    out
}

/// Runs of a uniform, padding-free type, recovered from its blocks.
pub fn runs_from_blocks(blocks: &[(isize, usize)], b: BasicType) -> Vec<Run> {
    blocks
        .iter()
        .map(|&(off, len)| Run {
            off,
            ty: b,
            n: len / b.size(),
        })
        .collect()
}

/// Whether two types have the same layout and the same kinds of data, so that a struct of them
/// is no more than an indexed type (no alignment padding): integers of one size count as one
/// kind, as `MPI_INT` and `MPI_UNSIGNED` do in MPICH.
fn same_shape(a: &Datatype, b: &Datatype) -> bool {
    if std::ptr::eq(a, b) {
        return true;
    }
    if (a.lb, a.extent, a.size, a.elements) != (b.lb, b.extent, b.size, b.elements) || a.blocks != b.blocks {
        return false;
    }
    let kind = |t: BasicType| match t.class() {
        TypeClass::Integer => (None, t.size()),
        _ => (Some(t), 0),
    };
    let (ra, rb): (Cow<[Run]>, Cow<[Run]>) = (a.runs(), b.runs());
    ra.len() == rb.len()
        && ra
            .iter()
            .zip(rb.iter())
            .all(|(x, y)| x.off == y.off && x.n == y.n && kind(x.ty) == kind(y.ty))
}

// ---- constructors (arguments already checked for sign by the caller) ----

/// `count` copies of `old`, one after the other.
pub fn contiguous(count: usize, old: &Datatype) -> MpiResult<Datatype> {
    let mut b = Builder::new();
    b.part(old, 0, count, old.extent)?;
    b.finish(None, false)
}

/// `count` blocks of `blocklen` copies of `old`, block starts `stride` bytes apart.
pub fn hvector(count: usize, blocklen: usize, stride: isize, old: &Datatype) -> MpiResult<Datatype> {
    let mut b = Builder::new();
    let blen = mul(blocklen as isize, old.extent)?;
    if count == 0 {
        b.part(old, 0, 0, old.extent)?;
    } else if blocklen > 0 && stride == blen {
        b.part(old, 0, count.checked_mul(blocklen).ok_or_else(too_large)?, old.extent)?;
    } else {
        // Bounds are reached by the first or the last block; data comes from every block.
        let last = mul(isize::try_from(count).map_err(|_| too_large())? - 1, stride)?;
        if blocklen == 0 {
            // As MPICH: empty blocks still span their start (vector(2, 0, 1, MPI_INT) has extent 4).
            b.touch(add(last.min(0), old.lb)?, add(last.max(0), old.lb)?);
            b.empty_basic(old);
        } else {
            b.bounds_of(old, 0, blocklen, old.extent)?;
            b.bounds_of(old, last, blocklen, old.extent)?;
            b.tally(old, count.checked_mul(blocklen).ok_or_else(too_large)?)?;
            let runs = old.runs();
            if !runs.is_empty() {
                for i in 0..count {
                    b.append(&runs, mul(i as isize, stride)?, blocklen, old.extent)?;
                }
            }
        }
    }
    b.finish(None, false)
}

/// Blocks of `blocklens[i]` copies of `old` at byte displacements `disps[i]`.
pub fn hindexed(blocklens: &[usize], disps: &[isize], old: &Datatype) -> MpiResult<Datatype> {
    let mut b = Builder::new();
    let runs = old.runs();
    for (&n, &d) in blocklens.iter().zip(disps) {
        b.part_with(old, &runs, d, n, old.extent)?;
    }
    b.finish(None, false)
}

/// Blocks of `blocklens[i]` copies of `types[i]` at byte displacements `disps[i]`.
pub fn structure(blocklens: &[usize], disps: &[isize], types: &[&Datatype]) -> MpiResult<Datatype> {
    let mut b = Builder::new();
    for ((&n, &d), t) in blocklens.iter().zip(disps).zip(types) {
        b.part(t, d, n, t.extent)?;
    }
    let same = types.windows(2).all(|w| same_shape(w[0], w[1]));
    b.finish(None, !same)
}

/// `old` with its lower bound and extent set.
pub fn resized(old: &Datatype, lb: isize, extent: isize) -> MpiResult<Datatype> {
    add(lb, extent)?;
    let mut d = old.derived_copy();
    d.lb = lb;
    d.extent = extent;
    Ok(d)
}

/// Array storage order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    C,
    Fortran,
}

impl Order {
    pub fn from_abi(o: i32) -> MpiResult<Order> {
        match o {
            c::MPI_ORDER_C => Ok(Order::C),
            c::MPI_ORDER_FORTRAN => Ok(Order::Fortran),
            _ => err(
                c::MPI_ERR_ARG,
                format!("invalid array order {o} (MPI_ORDER_C or MPI_ORDER_FORTRAN)"),
            ),
        }
    }
}

/// Adds, for every combination of the selected indices of the outer dimensions, the segments
/// of the innermost one. `dims` are outermost first: (byte stride, selected segments as
/// (first index, length)). The innermost stride is `old.extent`.
fn grid(b: &mut Builder, old: &Datatype, dims: &[(isize, Vec<(usize, usize)>)]) -> MpiResult<()> {
    let Some(((_, inner), outer)) = dims.split_last() else {
        return Ok(());
    };
    if dims.iter().any(|(_, segs)| segs.is_empty()) {
        return Ok(());
    }
    // Odometer over the outer dimensions' selected indices.
    let sel: Vec<Vec<usize>> = outer
        .iter()
        .map(|(_, segs)| segs.iter().flat_map(|&(s, n)| s..s + n).collect())
        .collect();
    let mut idx = vec![0usize; sel.len()];
    let runs = old.runs();
    loop {
        let mut base = 0isize;
        for (k, (stride, _)) in outer.iter().enumerate() {
            base = add(base, mul(sel[k][idx[k]] as isize, *stride)?)?;
        }
        for &(s, n) in inner {
            b.part_with(old, &runs, add(base, mul(s as isize, old.extent)?)?, n, old.extent)?;
        }
        // Advance, innermost outer dimension fastest.
        let mut k = sel.len();
        loop {
            if k == 0 {
                return Ok(());
            }
            k -= 1;
            idx[k] += 1;
            if idx[k] < sel[k].len() {
                break;
            }
            idx[k] = 0;
        }
    }
}

/// Byte strides of each dimension of an array of `sizes` elements of extent `ext`, and the
/// dimensions listed outermost first.
fn strides(sizes: &[usize], order: Order, ext: isize) -> MpiResult<(Vec<isize>, Vec<usize>)> {
    let n = sizes.len();
    let dims: Vec<usize> = match order {
        Order::C => (0..n).collect(),
        Order::Fortran => (0..n).rev().collect(),
    };
    let mut st = vec![0isize; n];
    let mut acc = ext;
    for &d in dims.iter().rev() {
        st[d] = acc;
        acc = mul(acc, sizes[d] as isize)?;
    }
    Ok((st, dims))
}

fn whole_array(sizes: &[usize], ext: isize) -> MpiResult<isize> {
    sizes.iter().try_fold(ext, |a, &s| mul(a, s as isize))
}

/// The subarray `starts[i] .. starts[i] + subsizes[i]` of an array of `sizes` (checked).
pub fn subarray(sizes: &[usize], subsizes: &[usize], starts: &[usize], order: Order, old: &Datatype) -> MpiResult<Datatype> {
    if sizes.is_empty() {
        return err(c::MPI_ERR_ARG, "subarray with no dimensions");
    }
    for i in 0..sizes.len() {
        if sizes[i] == 0 {
            return err(c::MPI_ERR_ARG, format!("subarray: size of dimension {i} must be positive"));
        }
        if subsizes[i] > sizes[i] {
            return err(
                c::MPI_ERR_ARG,
                format!("subarray: subsize {} larger than size {} in dimension {i}", subsizes[i], sizes[i]),
            );
        }
        if starts[i] > sizes[i] - subsizes[i] {
            return err(
                c::MPI_ERR_ARG,
                format!(
                    "subarray: start {} + subsize {} exceeds size {} in dimension {i}",
                    starts[i], subsizes[i], sizes[i]
                ),
            );
        }
    }
    let (st, order_dims) = strides(sizes, order, old.extent)?;
    let dims: Vec<(isize, Vec<(usize, usize)>)> = order_dims
        .iter()
        .map(|&d| {
            (
                st[d],
                if subsizes[d] > 0 {
                    vec![(starts[d], subsizes[d])]
                } else {
                    Vec::new()
                },
            )
        })
        .collect();
    let mut b = Builder::new();
    grid(&mut b, old, &dims)?;
    b.finish(Some((0, whole_array(sizes, old.extent)?)), false)
}

/// How one dimension of a darray is spread over the process grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Distrib {
    /// Blocks of `darg` (or `ceil(gsize/psize)` if `None`) consecutive elements per process.
    Block(Option<usize>),
    /// Blocks of `darg` (or 1) elements dealt round-robin.
    Cyclic(Option<usize>),
    /// Not distributed (the process grid dimension must be 1).
    None,
}

impl Distrib {
    pub fn from_abi(d: i32, darg: i32) -> MpiResult<Distrib> {
        let arg = || -> MpiResult<Option<usize>> {
            match darg {
                c::MPI_DISTRIBUTE_DFLT_DARG => Ok(None),
                n if n > 0 => Ok(Some(n as usize)),
                n => err(c::MPI_ERR_ARG, format!("invalid distribution argument {n}")),
            }
        };
        match d {
            c::MPI_DISTRIBUTE_BLOCK => Ok(Distrib::Block(arg()?)),
            c::MPI_DISTRIBUTE_CYCLIC => Ok(Distrib::Cyclic(arg()?)),
            c::MPI_DISTRIBUTE_NONE => Ok(Distrib::None),
            _ => err(c::MPI_ERR_ARG, format!("invalid distribution {d}")),
        }
    }

    /// The segments (first index, length) of a dimension of `gsize` elements that process
    /// coordinate `r` of `psize` owns, in increasing order.
    fn segments(self, gsize: usize, psize: usize, r: usize) -> MpiResult<Vec<(usize, usize)>> {
        let (blk, step) = match self {
            Distrib::None => {
                if psize != 1 {
                    return err(c::MPI_ERR_ARG, "darray: MPI_DISTRIBUTE_NONE needs a process grid dimension of 1");
                }
                return Ok(vec![(0, gsize)]);
            }
            Distrib::Block(darg) => {
                let blk = darg.unwrap_or(gsize.div_ceil(psize));
                if blk.checked_mul(psize).is_none_or(|t| t < gsize) {
                    return err(
                        c::MPI_ERR_ARG,
                        format!("darray: block size {blk} x {psize} processes does not cover {gsize} elements"),
                    );
                }
                (blk, usize::MAX)
            }
            Distrib::Cyclic(darg) => {
                let blk = darg.unwrap_or(1);
                (blk, blk.saturating_mul(psize))
            }
        };
        let mut out = Vec::new();
        let mut s = r.saturating_mul(blk);
        while s < gsize {
            out.push((s, blk.min(gsize - s)));
            s = s.saturating_add(step);
        }
        Ok(out)
    }
}

/// The part of a `gsizes` array that process `rank` of `size` owns, processes arranged in a
/// `psizes` grid numbered in row-major order (whatever the array order).
pub fn darray(
    size: usize,
    rank: usize,
    gsizes: &[usize],
    distribs: &[Distrib],
    psizes: &[usize],
    order: Order,
    old: &Datatype,
) -> MpiResult<Datatype> {
    let n = gsizes.len();
    if n == 0 {
        return err(c::MPI_ERR_ARG, "darray with no dimensions");
    }
    if gsizes.contains(&0) || psizes.contains(&0) {
        return err(c::MPI_ERR_ARG, "darray: global sizes and process grid sizes must be positive");
    }
    let procs = psizes.iter().try_fold(1usize, |a, &p| a.checked_mul(p));
    if procs != Some(size) {
        return err(
            c::MPI_ERR_ARG,
            format!("darray: process grid {psizes:?} does not have {size} processes"),
        );
    }
    // Row-major coordinates of `rank`.
    let mut coords = vec![0usize; n];
    let mut rest = rank;
    for i in (0..n).rev() {
        coords[i] = rest % psizes[i];
        rest /= psizes[i];
    }
    let (st, order_dims) = strides(gsizes, order, old.extent)?;
    let mut dims = Vec::with_capacity(n);
    for &d in &order_dims {
        dims.push((st[d], distribs[d].segments(gsizes[d], psizes[d], coords[d])?));
    }
    let mut b = Builder::new();
    grid(&mut b, old, &dims)?;
    b.finish(Some((0, whole_array(gsizes, old.extent)?)), false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::datatype::lookup;
    use rstest::rstest;

    fn t(h: usize) -> std::sync::Arc<Datatype> {
        lookup(h).unwrap()
    }

    /// (size, lb, extent, true_lb, true_extent) of a type.
    fn shape(d: &Datatype) -> (usize, isize, isize, isize, isize) {
        (d.size, d.lb, d.extent, d.true_lb, d.true_extent)
    }

    /// Indices (in units of `unit` bytes) of the data of `count` elements at a buffer, in pack order.
    fn order(d: &Datatype, count: usize, unit: usize) -> Vec<isize> {
        let mut v = Vec::new();
        for i in 0..count as isize {
            for &(off, len) in &d.blocks {
                for k in 0..len / unit {
                    v.push((i * d.extent + off) / unit as isize + k as isize);
                }
            }
        }
        v
    }

    fn st(types: &[(usize, isize, usize)]) -> Datatype {
        let tys: Vec<_> = types.iter().map(|x| t(x.0)).collect();
        let refs: Vec<&Datatype> = tys.iter().map(|x| &**x).collect();
        let bl: Vec<usize> = types.iter().map(|x| x.2).collect();
        let ds: Vec<isize> = types.iter().map(|x| x.1).collect();
        structure(&bl, &ds, &refs).unwrap()
    }

    // Expected values are what MPICH 4.0.2 reports for the same constructions on x86-64.
    #[rstest]
    #[case(&[(c::MPI_DOUBLE, 0, 1), (c::MPI_CHAR, 8, 1)], (9, 0, 16, 0, 9))]
    #[case(&[(c::MPI_INT, 0, 1), (c::MPI_INT, 5, 1)], (8, 0, 9, 0, 9))]
    #[case(&[(c::MPI_INT, 0, 1), (c::MPI_FLOAT, 5, 1)], (8, 0, 12, 0, 9))]
    #[case(&[(c::MPI_UNSIGNED, 0, 1), (c::MPI_INT, 5, 1)], (8, 0, 9, 0, 9))]
    #[case(&[(c::MPI_CHAR, 0, 1), (c::MPI_CHAR, 4, 1)], (2, 0, 5, 0, 5))]
    #[case(&[(c::MPI_LONG_DOUBLE, 0, 1), (c::MPI_CHAR, 16, 1)], (17, 0, 32, 0, 17))]
    #[case(&[(c::MPI_DOUBLE_INT, 0, 1), (c::MPI_CHAR, 12, 1)], (13, 0, 16, 0, 13))]
    #[case(&[(c::MPI_SHORT_INT, 0, 1), (c::MPI_CHAR, 8, 1)], (7, 0, 12, 0, 9))]
    #[case(&[(c::MPI_INT, 4, 1), (c::MPI_DOUBLE, -8, 1)], (12, -8, 16, -8, 16))]
    #[case(&[(c::MPI_INT, 100, 0), (c::MPI_CHAR, 8, 1)], (1, 8, 1, 8, 1))]
    #[case(&[(c::MPI_DOUBLE, 0, 0), (c::MPI_INT, 0, 1), (c::MPI_INT, 5, 1)], (8, 0, 12, 0, 9))]
    #[case(&[(c::MPI_CHAR, -3, 1), (c::MPI_INT, 0, 1)], (5, -3, 8, -3, 7))]
    #[case(&[(c::MPI_INT8_T, 0, 1), (c::MPI_INT16_T, 1, 1)], (3, 0, 4, 0, 3))]
    #[case(&[(c::MPI_DOUBLE, 0, 1), (c::MPI_CHAR, 1, 1)], (9, 0, 8, 0, 8))]
    #[case(&[(c::MPI_CHAR, 0, 3), (c::MPI_SHORT, 4, 1)], (5, 0, 6, 0, 6))]
    #[case(&[(c::MPI_C_DOUBLE_COMPLEX, 0, 1), (c::MPI_CHAR, 16, 1)], (17, 0, 24, 0, 17))]
    fn struct_bounds(#[case] parts: &[(usize, isize, usize)], #[case] want: (usize, isize, isize, isize, isize)) {
        assert_eq!(shape(&st(parts)), want);
    }

    #[test]
    fn struct_of_resized_and_nested() {
        let r = resized(&t(c::MPI_INT), -4, 16).unwrap();
        let d = structure(&[1, 1], &[0, 20], &[&r, &t(c::MPI_DOUBLE)]).unwrap();
        assert_eq!(shape(&d), (12, -4, 32, 0, 28));
        let ri9 = resized(&t(c::MPI_INT), 0, 9).unwrap();
        let d = structure(&[1, 1], &[0, 9], &[&ri9, &t(c::MPI_INT)]).unwrap();
        assert_eq!(shape(&d), (8, 0, 16, 0, 13));
        let d = structure(&[1, 1], &[0, 9], &[&ri9, &ri9]).unwrap();
        assert_eq!(shape(&d), (8, 0, 18, 0, 13));
        // A heterogeneous struct resized below its padding, alone in a struct: no padding.
        let s = st(&[(c::MPI_DOUBLE, 0, 1), (c::MPI_CHAR, 8, 1)]);
        let r = resized(&s, 0, 9).unwrap();
        assert_eq!(shape(&structure(&[1], &[0], &[&r]).unwrap()), (9, 0, 9, 0, 9));
        assert_eq!(
            shape(&structure(&[1, 1], &[0, 9], &[&r, &t(c::MPI_CHAR)]).unwrap()),
            (10, 0, 16, 0, 10)
        );
        let c2 = contiguous(2, &st(&[(c::MPI_DOUBLE, 0, 1), (c::MPI_CHAR, 1, 1)])).unwrap();
        assert_eq!(shape(&c2), (18, 0, 16, 0, 16));
        assert!(s.basic.is_none() && s.elements == 2);
    }

    #[rstest]
    #[case(3, 2, -4, (24, -32, 40, -32, 40))]
    #[case(3, 2, 4, (24, 0, 40, 0, 40))]
    #[case(0, 2, 4, (0, 0, 0, 0, 0))]
    #[case(2, 0, 1, (0, 0, 4, 0, 4))]
    #[case(4, 3, 3, (48, 0, 48, 0, 48))]
    fn vector_bounds(#[case] count: usize, #[case] bl: usize, #[case] stride: isize, #[case] want: (usize, isize, isize, isize, isize)) {
        let int = t(c::MPI_INT);
        let v = hvector(count, bl, stride * 4, &int).unwrap();
        assert_eq!(shape(&v), want);
        if count * bl > 0 {
            assert_eq!((v.basic, v.elements), (Some(BasicType::Int), count * bl));
        }
    }

    #[test]
    fn vector_of_vector() {
        let int = t(c::MPI_INT);
        let v = hvector(3, 2, 16, &int).unwrap();
        let vv = hvector(2, 1, 3 * v.extent, &v).unwrap();
        assert_eq!(shape(&vv), (48, 0, 160, 0, 160));
        assert_eq!(order(&vv, 1, 4), vec![0, 1, 4, 5, 8, 9, 30, 31, 34, 35, 38, 39]);
        assert_eq!(vv.basic, Some(BasicType::Int));
        assert_eq!(vv.elements, 12);
        assert_eq!(vv.blocks.len(), 6);
    }

    #[test]
    fn contiguous_stays_one_block() {
        let int = t(c::MPI_INT);
        let a = contiguous(1 << 20, &int).unwrap();
        let b = contiguous(1 << 20, &a).unwrap();
        let v = hvector(1 << 20, 4, 16, &int).unwrap();
        assert_eq!(b.blocks, vec![(0, 1 << 42)]);
        assert!(b.is_contiguous() && v.is_contiguous());
        assert_eq!((b.elements, b.basic), (1 << 40, Some(BasicType::Int)));
        let r = contiguous(3, &t(c::MPI_DOUBLE_INT)).unwrap();
        assert_eq!(r.blocks, vec![(0, 12), (16, 12), (32, 12)]);
        assert_eq!(r.runs().len(), 1);
        assert!(!r.is_contiguous());
    }

    #[test]
    fn indexed_negative_displacements() {
        let int = t(c::MPI_INT);
        let d = hindexed(&[2, 1, 3], &[20, -8, 0], &int).unwrap();
        assert_eq!(shape(&d), (24, -8, 36, -8, 36));
        assert_eq!(order(&d, 2, 4), vec![5, 6, -2, 0, 1, 2, 14, 15, 7, 9, 10, 11]);
        let h = hvector(3, 2, -12, &int).unwrap();
        assert_eq!(shape(&h), (24, -24, 32, -24, 32));
        assert_eq!(order(&h, 2, 4), vec![0, 1, -3, -2, -6, -5, 8, 9, 5, 6, 2, 3]);
        // Blocks in typemap order, not address order; adjacent ones merge.
        assert_eq!(hindexed(&[1, 1, 1], &[4, 0, 4], &int).unwrap().blocks, vec![(4, 4), (0, 8)]);
    }

    #[rstest]
    #[case(Order::C, &[3, 4, 5], &[2, 2, 2], &[1, 1, 2], vec![27, 28, 32, 33, 47, 48, 52, 53], (32, 0, 240, 108, 108))]
    #[case(Order::Fortran, &[3, 4, 5], &[2, 2, 2], &[1, 1, 2], vec![28, 29, 31, 32, 40, 41, 43, 44], (32, 0, 240, 112, 68))]
    #[case(Order::C, &[4, 6], &[2, 3], &[1, 2], vec![8, 9, 10, 14, 15, 16], (24, 0, 96, 32, 36))]
    #[case(Order::Fortran, &[4, 6], &[2, 3], &[1, 2], vec![9, 10, 13, 14, 17, 18], (24, 0, 96, 36, 40))]
    #[case(Order::C, &[4, 6], &[4, 6], &[0, 0], (0..24).collect(), (96, 0, 96, 0, 96))]
    #[case(Order::C, &[4, 6], &[0, 6], &[0, 0], vec![], (0, 0, 96, 0, 96))]
    fn subarrays(
        #[case] o: Order,
        #[case] sizes: &[usize],
        #[case] sub: &[usize],
        #[case] starts: &[usize],
        #[case] elems: Vec<isize>,
        #[case] want: (usize, isize, isize, isize, isize),
    ) {
        let d = subarray(sizes, sub, starts, o, &t(c::MPI_INT)).unwrap();
        assert_eq!(order(&d, 1, 4), elems);
        assert_eq!(shape(&d), want);
    }

    #[test]
    fn subarray_of_resized_and_errors() {
        let r = resized(&t(c::MPI_INT), -4, 12).unwrap();
        let d = subarray(&[4], &[2], &[1], Order::C, &r).unwrap();
        assert_eq!(shape(&d), (8, 0, 48, 12, 16));
        let int = t(c::MPI_INT);
        for (s, sub, st) in [(4, 5, 0), (4, 2, 3), (0, 0, 0)] {
            assert_eq!(subarray(&[s], &[sub], &[st], Order::C, &int).unwrap_err().class, c::MPI_ERR_ARG);
        }
        assert_eq!(Order::from_abi(99).unwrap_err().class, c::MPI_ERR_ARG);
    }

    // A 5 x 7 int array, rows BLOCK over 2 processes, columns CYCLIC(2) over 2: the elements
    // each of the 4 ranks gets, in order, as MPICH packs them.
    #[rstest]
    #[case(Order::C, 0, vec![0, 1, 4, 5, 7, 8, 11, 12, 14, 15, 18, 19], (0, 80))]
    #[case(Order::C, 1, vec![2, 3, 6, 9, 10, 13, 16, 17, 20], (8, 76))]
    #[case(Order::C, 2, vec![21, 22, 25, 26, 28, 29, 32, 33], (84, 52))]
    #[case(Order::C, 3, vec![23, 24, 27, 30, 31, 34], (92, 48))]
    #[case(Order::Fortran, 0, vec![0, 1, 2, 5, 6, 7, 20, 21, 22, 25, 26, 27], (0, 112))]
    #[case(Order::Fortran, 1, vec![10, 11, 12, 15, 16, 17, 30, 31, 32], (40, 92))]
    #[case(Order::Fortran, 2, vec![3, 4, 8, 9, 23, 24, 28, 29], (12, 108))]
    #[case(Order::Fortran, 3, vec![13, 14, 18, 19, 33, 34], (52, 88))]
    fn darray_block_cyclic(#[case] o: Order, #[case] rank: usize, #[case] elems: Vec<isize>, #[case] tb: (isize, isize)) {
        let d = darray(
            4,
            rank,
            &[5, 7],
            &[Distrib::Block(None), Distrib::Cyclic(Some(2))],
            &[2, 2],
            o,
            &t(c::MPI_INT),
        )
        .unwrap();
        assert_eq!(order(&d, 1, 4), elems);
        assert_eq!((d.size, d.lb, d.extent), (elems.len() * 4, 0, 140));
        assert_eq!((d.true_lb, d.true_extent), tb);
    }

    #[test]
    fn darray_other_distributions() {
        let dbl = t(c::MPI_DOUBLE);
        let d = darray(
            4,
            1,
            &[5, 7],
            &[Distrib::Cyclic(None), Distrib::None],
            &[4, 1],
            Order::Fortran,
            &dbl,
        )
        .unwrap();
        assert_eq!(order(&d, 1, 8), vec![1, 6, 11, 16, 21, 26, 31]);
        assert_eq!(shape(&d), (56, 0, 280, 8, 248));
        let int = t(c::MPI_INT);
        let sizes: Vec<usize> = (0..4)
            .map(|r| darray(4, r, &[10], &[Distrib::Block(Some(3))], &[4], Order::C, &int).unwrap().size)
            .collect();
        assert_eq!(sizes, vec![12, 12, 12, 4]);
        let e = darray(4, 0, &[10], &[Distrib::Block(Some(2))], &[4], Order::C, &int).unwrap_err();
        assert_eq!(e.class, c::MPI_ERR_ARG);
        let e = darray(4, 0, &[4], &[Distrib::None], &[4], Order::C, &int).unwrap_err();
        assert_eq!(e.class, c::MPI_ERR_ARG);
        let e = darray(4, 0, &[4], &[Distrib::Block(None)], &[2], Order::C, &int).unwrap_err();
        assert_eq!(e.class, c::MPI_ERR_ARG);
    }

    #[test]
    fn resized_keeps_data() {
        let r = resized(&t(c::MPI_INT), -4, 16).unwrap();
        assert_eq!(shape(&r), (4, -4, 16, 0, 4));
        assert_eq!(r.blocks, vec![(0, 4)]);
        assert!(!r.is_contiguous());
        let c3 = contiguous(3, &resized(&t(c::MPI_DOUBLE), 0, 9).unwrap()).unwrap();
        assert_eq!(shape(&c3), (24, 0, 27, 0, 26));
        assert_eq!(c3.blocks, vec![(0, 8), (9, 8), (18, 8)]);
        // A resized type that tiles again is contiguous.
        let back = resized(&contiguous(2, &t(c::MPI_INT)).unwrap(), 0, 8).unwrap();
        assert!(back.is_contiguous());
    }

    #[test]
    fn fragmentation_is_bounded() {
        let int = t(c::MPI_INT);
        let e = hvector(MAX_RUNS + 1, 1, 8, &int).unwrap_err();
        assert_eq!(e.class, c::MPI_ERR_NO_MEM);
        assert_eq!(hvector(usize::MAX / 2, 2, isize::MAX, &int).unwrap_err().class, c::MPI_ERR_ARG);
        // No data: bounds only, however many blocks.
        let empty = contiguous(0, &int).unwrap();
        let v = hvector(1 << 40, 3, 8, &empty).unwrap();
        assert_eq!((v.size, v.lb, v.extent, v.basic), (0, 0, (1 << 43) - 8, Some(BasicType::Int)));
        assert_eq!(
            shape(&hvector(1 << 40, 0, -4, &int).unwrap()),
            (0, -(1 << 42) + 4, (1 << 42) - 4, -(1 << 42) + 4, (1 << 42) - 4)
        );
    }
}
