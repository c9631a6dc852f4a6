//! Two-level Allgather(v) (session 22). Before, a communicator spanning processes with several
//! members on each ran the flat algorithm among all its members: at n = 2 V = 16, 31 messages
//! per member (half of them between processes) or, beyond 64 members, a ring of n - 1
//! dependent steps each crossing between processes; IMB's 8 B Allgather took ~100 µs at 2x16,
//! three times AMPI's `+p2 +vp32`, and 3 ms at 2x64.
//!
//! Here the members that share a process meet (`hier`'s meeting point): the representative
//! (the process's lowest rank) packs their blocks into one buffer laid out in rank order,
//! exchanges its process's blocks with the other representatives (one allgather among
//! them, of one chunk per process), and publishes the whole buffer; every member then copies
//! the blocks into its own receive buffer itself, once released (in SMP mode on its own
//! worker, in parallel; and a receive buffer among the program's thread-locals is written
//! while its owner runs). One message per pair of processes instead of one per pair of
//! members.
//!
//! Every member takes the same decision from the communicator's group alone (`hier::plan`:
//! some process holds several members), so the levels match across processes. The sizes of
//! the blocks come from the receive side's counts, which MPI requires to match what each
//! rank sends; a member's block larger than its slot is MPI_ERR_TRUNCATE.

use crate::consts as c;
use crate::core::coll::hier::{self, Member, NodeMap};
use crate::core::coll::team::{Blocks, View};
use crate::core::coll::{Buf, Coll};
use crate::core::datatype;
use crate::core::error::{err, MpiResult};
use std::sync::Arc;

/// The receive blocks of an allgather as the caller holds them: a list, or (MPI_Allgather)
/// equal blocks described once, whose views cost no datatype reference each (at 2x64, making
/// the list of 128 blocks per member was a fifth of the call).
pub trait Slots {
    fn n(&self) -> usize;
    fn slot(&self, i: usize) -> View<'_>;
    /// The start of the blocks when they lie back to back from the first, each a contiguous
    /// type's packed bytes: the whole gathered buffer is then one copy.
    fn back_to_back(&self) -> Option<*mut u8>;
    /// Bytes of block `i`.
    fn bytes(&self, i: usize) -> usize {
        let v = self.slot(i);
        v.count * v.dt.size
    }
}

impl Slots for [Buf] {
    fn n(&self) -> usize {
        self.len()
    }
    fn slot(&self, i: usize) -> View<'_> {
        View::from(&self[i])
    }
    fn back_to_back(&self) -> Option<*mut u8> {
        let base = self.first()?.ptr;
        let mut at = 0usize;
        for b in self {
            if !b.dt.is_contiguous() || b.ptr != base.wrapping_add(at) {
                return None;
            }
            at += b.count * b.dt.size;
        }
        Some(base)
    }
}

impl Slots for Blocks {
    fn n(&self) -> usize {
        self.len()
    }
    fn slot(&self, i: usize) -> View<'_> {
        self.get(i).expect("a block of every rank")
    }
    fn back_to_back(&self) -> Option<*mut u8> {
        match self {
            Blocks::Equal { ptr, dt, .. } => dt.is_contiguous().then_some(*ptr),
            Blocks::List(v) => v.back_to_back(),
        }
    }
}

/// Byte offset of every rank's block in the gathered buffer (rank order), and the total.
fn offsets<S: Slots + ?Sized>(parts: &S) -> (Vec<usize>, usize) {
    let mut off = Vec::with_capacity(parts.n());
    let mut at = 0usize;
    for i in 0..parts.n() {
        off.push(at);
        at += parts.bytes(i);
    }
    (off, at)
}

/// The ranks of each process (index into `nm.reps`), in rank order.
fn ranks_by_process(nm: &NodeMap) -> Vec<Vec<usize>> {
    let mut by = vec![Vec::new(); nm.reps.len()];
    for (r, &p) in nm.owner.iter().enumerate() {
        by[p as usize].push(r);
    }
    by
}

/// # Safety
/// As `Coll::allgatherv`. None: not served here (one member per process, a view, an
/// inter-communicator, or a call enrolled for a real collective).
#[inline(always)]
pub unsafe fn allgatherv(c: &Coll, send: Option<&Buf>, parts: &[Buf]) -> Option<MpiResult<()>> {
    if !hier::may_meet(c) {
        return None;
    }
    // SAFETY: the caller's contract.
    unsafe { run(c, send, parts) }
}

/// `allgatherv` over MPI_Allgather's blocks as the call's arguments describe them
/// (`abi::coll::exec`, before it makes them a list).
///
/// # Safety
/// As `Coll::allgatherv`.
#[inline(always)]
pub unsafe fn allgather(c: &Coll, send: Option<&Buf>, parts: &Blocks) -> Option<MpiResult<()>> {
    if !hier::may_meet(c) {
        return None;
    }
    // SAFETY: the caller's contract.
    unsafe { run(c, send, parts) }
}

/// # Safety
/// As `Coll::allgatherv`.
unsafe fn run<S: Slots + ?Sized>(c: &Coll, send: Option<&Buf>, parts: &S) -> Option<MpiResult<()>> {
    // A call enrolled for a real collective is `real::allgather`'s (`plan` refuses views and
    // inter-communicators).
    if c.real {
        return None;
    }
    let (nm, key) = hier::plan(c)?;
    let me = c.comm.rank;
    // The caller's own block: its send buffer, or (in place) its slot.
    let own = match send {
        Some(b) => b.clone(),
        None => {
            let v = parts.slot(me as usize);
            Buf::new(v.ptr, v.count, v.dt.clone())
        }
    };
    let rep = me == nm.local[0];
    let (off, total) = offsets(parts);
    if nm.local.len() == 1 {
        let ms = [Member::new(me, own)];
        // SAFETY: the caller's buffers, valid for the call.
        let all = match unsafe { gather_all(c, &nm, &ms, &off, total, parts) } {
            Ok(a) => a,
            Err(e) => return Some(Err(e)),
        };
        // SAFETY: as above.
        unsafe { scatter_out(&all, &off, parts, send.is_none().then_some(me)) };
        hier::recycle(all);
        return Some(Ok(()));
    }
    // A member's block in the program's thread-locals is read by the representative while
    // the member is parked: it registers a copy (`hier::Shadow`), which it keeps alive.
    let shadow = hier::Shadow::of(&own);
    let reg = match &shadow {
        Some(sh) => Buf::new(sh.at(own.ptr), own.count, own.dt.clone()),
        None => own,
    };
    let data = if rep {
        if let Err(e) = hier::arrive(key, &nm, me, true, reg.ptr, Some(reg)) {
            return Some(Err(e));
        }
        let r = hier::members(key, &nm).and_then(|ms| {
            // SAFETY: the members' blocks stay valid while they are parked in this call.
            unsafe { gather_all(c, &nm, &ms, &off, total, parts) }.map(Arc::new)
        });
        hier::publish(key, r.as_ref().ok().cloned());
        hier::release(key, &nm, &r.as_ref().map(|_| ()).map_err(Clone::clone));
        r
    } else {
        if let Err(e) = hier::arrive(key, &nm, me, false, reg.ptr, Some(reg)) {
            return Some(Err(e));
        }
        hier::wait_published(key, &nm)
    };
    drop(shadow);
    let data = match data {
        Ok(d) => d,
        Err(e) => return Some(Err(e)),
    };
    // SAFETY: the caller's receive buffer, written while it runs.
    unsafe { scatter_out(&data, &off, parts, send.is_none().then_some(me)) };
    // The last member done with the buffer gives it back to the spares.
    if let Ok(v) = Arc::try_unwrap(data) {
        hier::recycle(v);
    }
    Some(Ok(()))
}

/// The representative's work: the local members' blocks packed at their offsets, then the
/// processes' chunks exchanged among the representatives.
///
/// # Safety
/// The members' blocks are readable (they are parked in this call, or it is the caller's).
unsafe fn gather_all<S: Slots + ?Sized>(
    c: &Coll,
    nm: &NodeMap,
    ms: &[Member],
    off: &[usize],
    total: usize,
    parts: &S,
) -> MpiResult<Vec<u8>> {
    let mut all = hier::spare();
    all.clear();
    all.resize(total, 0);
    // A block larger than its slot (an erroneous program) is cut to the slot and reported
    // after the exchange, which the other processes wait for.
    let mut trunc = None;
    for m in ms {
        let b = m.buf.as_ref().expect("allgather members register their block");
        let r = m.rank as usize;
        let (bytes, slot) = (b.count * b.dt.size, parts.bytes(r));
        if bytes > slot {
            let mut v = Vec::with_capacity(bytes);
            // SAFETY: the member's block is readable (the caller's contract).
            unsafe { b.dt.pack(b.ptr, b.count, &mut v) };
            all[off[r]..off[r] + slot].copy_from_slice(&v[..slot]);
            trunc.get_or_insert(format!("rank {r}'s block ({bytes} bytes) is larger than its slot ({slot} bytes)"));
            continue;
        }
        // SAFETY: the member's block is readable (the caller's contract); the slot holds at
        // least its bytes (just checked).
        unsafe { b.dt.pack_to(b.ptr, b.count, all.as_mut_ptr().add(off[r])) };
    }
    if nm.reps.len() > 1 {
        exchange(c, nm, &mut all, off, parts)?;
    }
    match trunc {
        Some(m) => err(c::MPI_ERR_TRUNCATE, m),
        None => Ok(all),
    }
}

/// The chunk of each process (its members' blocks in rank order) exchanged among the
/// representatives: in place in `all` when every process holds a contiguous block of ranks,
/// through a buffer of chunks otherwise.
fn exchange<S: Slots + ?Sized>(c: &Coll, nm: &NodeMap, all: &mut [u8], off: &[usize], parts: &S) -> MpiResult<()> {
    let by = ranks_by_process(nm);
    let size = |r: usize| parts.bytes(r);
    let byte = datatype::byte();
    let view = c.view(nm.reps.clone());
    if nm.contiguous {
        let chunks: Vec<Buf> = by
            .iter()
            .map(|rs| {
                let len: usize = rs.iter().map(|&r| size(r)).sum();
                Buf::new(all.as_mut_ptr().wrapping_add(off[rs[0]]), len, byte.clone())
            })
            .collect();
        // SAFETY: the chunks lie inside `all`, ours for the call; in place (own chunk set).
        return unsafe { view.allgatherv(None, &chunks) };
    }
    let lens: Vec<usize> = by.iter().map(|rs| rs.iter().map(|&r| size(r)).sum()).collect();
    let mut packed = vec![0u8; lens.iter().sum()];
    let mut starts = Vec::with_capacity(by.len());
    let mut at = 0;
    for &l in &lens {
        starts.push(at);
        at += l;
    }
    let mut pos = starts[nm.me];
    for &r in &by[nm.me] {
        packed[pos..pos + size(r)].copy_from_slice(&all[off[r]..off[r] + size(r)]);
        pos += size(r);
    }
    let chunks: Vec<Buf> = starts
        .iter()
        .zip(&lens)
        .map(|(&s, &l)| Buf::new(packed.as_mut_ptr().wrapping_add(s), l, byte.clone()))
        .collect();
    // SAFETY: the chunks lie inside `packed`, ours; in place (own chunk set).
    unsafe { view.allgatherv(None, &chunks) }?;
    for (p, rs) in by.iter().enumerate() {
        if p == nm.me {
            continue;
        }
        let mut pos = starts[p];
        for &r in rs {
            all[off[r]..off[r] + size(r)].copy_from_slice(&packed[pos..pos + size(r)]);
            pos += size(r);
        }
    }
    Ok(())
}

/// Every block of the gathered buffer into the caller's receive buffer (`skip`: its own
/// slot, already in place).
///
/// # Safety
/// The caller's receive buffer is writable as `parts` describes.
unsafe fn scatter_out<S: Slots + ?Sized>(all: &[u8], off: &[usize], parts: &S, skip: Option<i32>) {
    if let Some(base) = parts.back_to_back() {
        // The blocks back to back (MPI_Allgather's usual case): the buffer as it is, one copy
        // (the own slot, in place, gets its own bytes back).
        // SAFETY: the receive buffer spans all the blocks (`back_to_back`), as many bytes as
        // `all` holds (the offsets add up the same sizes).
        unsafe { crate::transport::copy::bytes(all.as_ptr(), base, all.len()) };
        return;
    }
    for i in 0..parts.n() {
        if skip == Some(i as i32) {
            continue;
        }
        let p = parts.slot(i);
        let n = p.count * p.dt.size;
        // SAFETY: as the caller's; the block lies inside `all` (offsets from the same parts).
        unsafe { p.dt.unpack(&all[off[i]..off[i] + n], p.ptr, p.count) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn map(ranks: &[u32], v: usize, myproc: usize) -> NodeMap {
        NodeMap::build(&crate::core::comm::Group::new(ranks.to_vec()), myproc, |w| w as usize / v)
    }

    fn int() -> crate::core::datatype::DtRef {
        crate::core::datatype::lookup(c::MPI_INT).expect("MPI_INT")
    }

    /// Blocks back to back (one copy out) only when each starts where the one before ended and
    /// is a contiguous type's packed bytes; equal blocks of a contiguous type always are.
    #[rstest]
    #[case::back_to_back(&[(0, 2), (8, 1), (12, 0), (12, 3)], Some(0))]
    #[case::gap(&[(0, 2), (12, 1)], None)]
    #[case::reversed(&[(8, 2), (0, 2)], None)]
    fn lists_back_to_back(#[case] blocks: &[(usize, usize)], #[case] want: Option<usize>) {
        let mut mem = [0i32; 16];
        let base = mem.as_mut_ptr() as *mut u8;
        let list: Vec<Buf> = blocks.iter().map(|&(at, n)| Buf::new(base.wrapping_add(at), n, int())).collect();
        assert_eq!(list.back_to_back(), want.map(|o| base.wrapping_add(o)));
        assert_eq!(Blocks::List(list).back_to_back(), want.map(|o| base.wrapping_add(o)));
        let equal = Blocks::Equal {
            ptr: base,
            count: 2,
            dt: int(),
            n: 4,
        };
        assert_eq!(equal.back_to_back(), Some(base));
        assert_eq!((0..4).map(|i| equal.bytes(i)).sum::<usize>(), 32);
    }

    #[rstest]
    #[case(&[0, 1, 2, 3], 2, vec![vec![0, 1], vec![2, 3]])]
    #[case(&[0, 2, 1, 3], 2, vec![vec![0, 2], vec![1, 3]])]
    #[case(&[4, 0, 5, 1, 2], 2, vec![vec![0, 2], vec![1, 3], vec![4]])]
    fn groups_ranks_by_process(#[case] ranks: &[u32], #[case] v: usize, #[case] want: Vec<Vec<usize>>) {
        assert_eq!(ranks_by_process(&map(ranks, v, 0)), want);
    }
}
