//! nbrecv27 (issue 16): Igatherv, Iscatterv, Iallgatherv and Ireduce_scatter(_block) at
//! several members per process on the two-level record path (`nbrec`), with any counts.
//!
//! The record is `nbrec`'s (join, last member's combine, one real nonblocking collective on
//! the communicator's twin, distribution when it lands); this module is its local step for
//! these kinds (`combine`, `distribute`). Among processes the call is the real v-form
//! (`transport::vcoll`), each process's count the sum of its members' byte counts, and each
//! process's blocks packed in the communicator's rank order of its members (`Spread`), so
//! that a communicator whose ranks are not in process order (a split with a reversed key)
//! still gets every block in its place. What each process knows: a Gatherv's root every
//! count, another process its members' send counts; a Scatterv's root every count, another
//! process its members' receive counts; an Allgatherv's and a Reduce_scatter's every rank
//! every count. Reduce_scatter reduces the members' whole operands locally (a predefined
//! operation on a C basic type: `real::reducible`), lays the result out by process, and each
//! process's block comes back in place from the real `MPI_Ireduce_scatter`.
//!
//! Every process and every local member decides alike from what all ranks pass alike: the
//! call's kind and binding (`is_v`), the operation, the launch (`serves`), never a count.

use super::nbrec::{copy_view, fold_into};
use crate::core::coll::team::{Blocks, Part, View};
use crate::core::coll::{in_place, real};
use crate::core::request::ReqId;
use crate::transport::vcoll::{put_arrays, put_blocks, put_counts};
use crate::transport::{CollMem, RealColl};

/// A record's member slot (`nbrec::Rec::parts`).
type Slot = Option<(Part, ReqId)>;

/// Whether a call with arguments `part` (`equal`: not a v-form binding) is one of this
/// module's records: Gatherv, Scatterv, Allgatherv (its blocks a list), Reduce_scatter(_block).
pub(super) fn is_v(part: &Part, equal: bool) -> bool {
    match part {
        Part::Gather { .. } | Part::Scatter { .. } => !equal,
        Part::Allgather { parts, .. } => matches!(parts, Blocks::List(_)),
        Part::ReduceScatter { .. } => true,
        _ => false,
    }
}

/// Which of this module's kinds take the record path (`TOUCAN_NBC_REC_V`, read with the
/// other variables, `runtime::config`; the same on every process): 0 none (`off`), 1
/// Allgatherv, Reduce_scatter, (session 28) Gatherv and (session 29) Scatterv (the default),
/// 2 (`all`) the same since session 29.
///
/// Session 27 left Gatherv and Scatterv off: no size limit can be decided alike (a process
/// away from the root knows only its members' counts), and at 64 KiB the record path cost
/// the receiving process several times the general path's instructions (callgrind, 2x4,
/// IMB's loop, process 1 per iteration: Igatherv 1.08M against 343k, Iscatterv 826k against
/// 80k: the blocks packed into one buffer, sent, unpacked, where the helper tasks' rendezvous
/// moves them straight between the buffers). IMB-NBC at 2x4, quiet, t_pure this / general
/// path: Igatherv 8 B 4.15 / 4.88 µs, 1 KiB 4.68 / 5.22, 64 KiB 58.3 / 28.9; Iscatterv 8 B
/// 3.69 / 3.20, 1 KiB 4.57 / 3.45, 64 KiB 82.0 / 28.8 (docs/collectives.md, "Session 27
/// (nbrecv27)").
///
/// Session 28 (vrec28) put Gatherv on by default with no size limit: the root's process
/// receives straight into the root's buffer when the layout allows it (`gather_landing`: no
/// pack there and no unpack of the result), and a process away from the root sends a chunk
/// of `GATHER_IN_PLACE_MIN` or more from its members' buffers (`in_place_blocks`). Callgrind
/// (`bench/nbc-callgrind.sh v4 igatherv 65536`, per iteration, whole process): the sending
/// process 590k-653k against 1.09M packed and 313k on the general path, the root's 566k-875k
/// against 591k on the general path (counts that include a waiting process's polls). Scatterv
/// stayed with `all`: its receiving process started the real operation when its last
/// member joined, through MPICH's Iscatterv schedule.
///
/// Session 29 (vscat29) put Scatterv on by default: it starts at the root's join in the
/// root's process and goes as flat real messages (`vscatter`; this module's `combine` keeps
/// the real `MPI_Iscatterv` only with `TOUCAN_NBC_TREE_MAX=0`). Callgrind (`bench/nbc-callgrind.sh
/// v4 iscatterv`, whole process per iteration, process 1 / the root's): 8 B 35.6k / 32.9k
/// against 43.5k / 51.5k on the general path, 1 KiB 46.6k / 40.7k against 75.4k / 98.1k,
/// 64 KiB 49.8k / 832k against 87.3k / 1.04M.
///
/// Session 30 (gath30): Gatherv goes as flat real messages too (`vgather`: each other process
/// sends its members' chunk at its last join, the root's process receives at the root's join);
/// this module's `combine` (`gather_landing`, `in_place_blocks`) keeps the real
/// `MPI_Igatherv` only with `TOUCAN_NBC_TREE_MAX=0`. Callgrind (`bench/nbc-callgrind.sh v4
/// igatherv`, whole process per iteration, process 1 / the root's): 8 B 35.0k / 48.5k against
/// 90.6k / 103.6k with the real `MPI_Igatherv`, 1 KiB 23.1k / 42.6k against 58.2k / 49.3k,
/// 64 KiB 439k / 588k against 704k / 867k.
fn level() -> u8 {
    crate::core::runtime::config().nbc_rec_v
}

/// Whether a record of `is_v`'s kinds takes this path: several subranks per process (at one,
/// the general path stays as it was), the kind let through by `level`, and for a reduction
/// a predefined operation on a C basic type. The same on every rank.
pub(super) fn serves(part: &Part) -> bool {
    if crate::core::runtime::config().local() == 1 {
        return false;
    }
    match part {
        Part::Gather { .. } => level() >= 1,
        Part::Scatter { .. } => level() >= 1,
        Part::Allgather { .. } => level() >= 1,
        Part::ReduceScatter { red, .. } => level() >= 1 && real::reducible(red),
        _ => false,
    }
}

/// Most bytes of a Reduce_scatter's whole vector that go as one real Allreduce of the vector
/// (each member then takes its block where it is) rather than the real `MPI_Ireduce_scatter`:
/// up to `nbc::SMALL_MAX`, where the Allreduce runs as our recursive doubling of real
/// messages (`nbc::start_rd`) and MPICH's multi-step schedule, advanced one step per poll of
/// the progress engine, costs most. IMB-NBC at 2x4 (loaded), t_pure, real Ireduce_scatter /
/// general path (helper task): 8 B 41.6 / 7.7 µs, 1 KiB 55.6 / 17.6, 64 KiB 311 / 374; with
/// this bound, quiet: 8 B 3.83 / 6.28, 1 KiB 8.52 / 13.8, 64 KiB 350 / 372. Decided from the
/// counts, which every rank passes.
const RS_ALLREDUCE_MAX: usize = super::nbc::SMALL_MAX;

/// Whether a Reduce_scatter of `bytes` bytes in all goes as an Allreduce (`RS_ALLREDUCE_MAX`).
fn rs_allreduce(bytes: usize) -> bool {
    bytes <= RS_ALLREDUCE_MAX
}

/// Where every rank's block goes in a buffer of all processes' blocks back to back in
/// process order, each process's members in rank order.
#[derive(Debug, PartialEq)]
pub(super) struct Spread {
    /// Bytes per process.
    pub(super) per_proc: Vec<usize>,
    /// Byte offset of each rank's block.
    pub(super) at: Vec<usize>,
    pub(super) total: usize,
}

/// The `Spread` of blocks of `bytes(r)` bytes for rank r, `procs` the process (and index
/// there) of each rank, `nproc` processes.
pub(super) fn spread(procs: &[(usize, usize)], nproc: usize, bytes: impl Fn(usize) -> usize) -> Spread {
    let mut per_proc = vec![0usize; nproc];
    for (r, &(p, _)) in procs.iter().enumerate() {
        per_proc[p] += bytes(r);
    }
    let mut next = Vec::with_capacity(nproc);
    let mut total = 0;
    for &c in &per_proc {
        next.push(total);
        total += c;
    }
    let at = procs
        .iter()
        .enumerate()
        .map(|(r, &(p, _))| {
            let a = next[p];
            next[p] += bytes(r);
            a
        })
        .collect();
    Spread { per_proc, at, total }
}

/// vrec28: where a Gatherv's real operation lands in the root's process when it needs no
/// buffer of ours: the root's receive buffer, when each process's blocks (of a contiguous
/// type) lie back to back there in the rank order of its members, as `Spread` packs them.
#[derive(Debug, PartialEq)]
struct Landing {
    /// The lowest chunk's address: the real receive buffer.
    base: *mut u8,
    /// Each process's chunk's byte offset from `base` (0 for an empty one).
    displs: Vec<usize>,
}

/// The `Landing` of the root's receive blocks `all` (`procs`, `nproc`: as `spread`), if
/// they allow it. Decided in the root's process only, from the root's arguments (the other
/// processes send their chunk either way); `combine` and `distribute` decide it alike.
/// Zero-byte blocks are anywhere.
fn gather_landing(procs: &[(usize, usize)], nproc: usize, all: &Blocks) -> Option<Landing> {
    let mut start: Vec<Option<usize>> = vec![None; nproc];
    let mut next = vec![0usize; nproc];
    for (r, &(p, _)) in procs.iter().enumerate() {
        let v = all.get(r)?;
        let n = v.count * v.dt.size;
        if n == 0 {
            continue;
        }
        if !v.dt.is_contiguous() {
            return None;
        }
        let a = v.ptr as usize;
        match start[p] {
            Some(_) if a != next[p] => return None,
            Some(_) => {}
            None => start[p] = Some(a),
        }
        next[p] = a + n;
    }
    let base = start.iter().flatten().copied().min()?;
    let displs = start.iter().map(|s| s.map_or(0, |a| a - base)).collect();
    Some(Landing {
        base: base as *mut u8,
        displs,
    })
}

/// vrec28: bytes of a process's chunk from which a Gatherv away from the root's process
/// sends from its members' buffers (an hindexed real datatype of their addresses, from
/// `MPI_BOTTOM`: `vcoll::start`) rather than from a packed copy. Those members then complete
/// when the real operation does (their buffers are in use until then), not at its start: so
/// only where the copy costs more than that. Decided in each process alone (the root
/// receives the same bytes either way).
const GATHER_IN_PLACE_MIN: usize = 16 << 10;

/// vrec28: the (address, bytes) of this process's members' send blocks, in rank order, when
/// the chunk (`total` bytes) goes from where they are (`GATHER_IN_PLACE_MIN`, every block of
/// a contiguous type and at most `c_int::MAX` bytes), else None.
fn in_place_blocks(local: &[i32], parts: &[Slot], total: usize) -> Option<Vec<(usize, usize)>> {
    if total < GATHER_IN_PLACE_MIN {
        return None;
    }
    let mut out = Vec::with_capacity(local.len());
    for (r, p) in members(local, parts) {
        let Some(v) = own_view(r, p) else { continue };
        let n = v.count * v.dt.size;
        if n == 0 {
            continue;
        }
        if !v.dt.is_contiguous() || n > i32::MAX as usize {
            return None;
        }
        out.push((v.ptr as usize, n));
    }
    Some(out)
}

/// Whether the real operation `what` reads the members' own buffers until it completes
/// (`in_place_blocks`): those that only send complete with it, not at its start.
pub(super) fn borrows(what: &RealColl) -> bool {
    matches!(what, RealColl::Gatherv { blocks, .. } if *blocks > 0)
}

/// Whether a Gather member's call is the root's in place (its block already in its slot).
fn is_in_place(p: &Part) -> bool {
    matches!(p, Part::Gather { send: None, .. })
}

pub(super) fn vbytes(v: Option<View<'_>>) -> usize {
    v.map_or(0, |v| v.count * v.dt.size)
}

/// The joined members (rank, arguments), in rank order.
fn members<'a>(local: &'a [i32], parts: &'a [Slot]) -> impl Iterator<Item = (usize, &'a Part)> + 'a {
    parts
        .iter()
        .zip(local)
        .filter_map(|(s, &r)| s.as_ref().map(|(p, _)| (r as usize, p)))
}

/// Local member `rank`'s arguments.
fn part_of<'a>(local: &[i32], parts: &'a [Slot], rank: i32) -> Option<&'a Part> {
    let j = local.binary_search(&rank).ok()?;
    parts.get(j)?.as_ref().map(|(p, _)| p)
}

/// Packs `v` into `out` at `at`.
///
/// # Safety
/// `v`'s buffer is valid.
unsafe fn pack(v: View<'_>, out: &mut [u8], at: usize) {
    let n = v.count * v.dt.size;
    if n == 0 {
        return;
    }
    let dst = &mut out[at..at + n];
    // SAFETY: `dst` has room for the packed data (bounds-checked above); `v` is valid.
    unsafe { v.dt.pack_to(v.ptr, v.count, dst.as_mut_ptr()) };
}

/// Unpacks `v`'s bytes at `at` of `from` into `v` (nothing when they are not all there: a
/// count that differs from the sender's, the program's error, which the real MPI reports).
///
/// # Safety
/// `v`'s buffer is valid.
unsafe fn unpack(v: View<'_>, from: &[u8], at: usize) {
    let n = v.count * v.dt.size;
    if n == 0 {
        return;
    }
    if let Some(src) = from.get(at..at + n) {
        // SAFETY: `v` is valid (the caller's contract) and `src` holds its packed bytes.
        unsafe { v.dt.unpack(src, v.ptr, v.count) };
    }
}

/// A member's own block: a Gather's send, a Scatter's receive (an in-place Gather root's:
/// its own slot of the receive blocks).
fn own_view(rank: usize, p: &Part) -> Option<View<'_>> {
    match p {
        Part::Gather { send: Some(b), .. } | Part::Scatter { recv: Some(b), .. } | Part::Allgather { send: Some(b), .. } => Some(b.into()),
        Part::Gather { send: None, parts, .. } | Part::Allgather { send: None, parts } => parts.get(rank),
        _ => None,
    }
}

/// Our buffer `keep` (its first `bytes` the data, then the arrays), in place.
fn mem_of(mut keep: Vec<u8>, bytes: usize) -> CollMem {
    CollMem {
        send: std::ptr::null(),
        recv: keep.as_mut_ptr(),
        bytes,
        keep,
    }
}

/// Bytes of one element of `dt` in a reduction's work buffer, and of one element of the
/// real type (the real counts are in those).
fn units(red: &crate::core::coll::reduce::Reducer, dt: &crate::core::datatype::DtRef) -> (usize, usize) {
    let (w, work) = red.work(1, dt);
    let elem = work.extent.max(0) as usize;
    (w * elem, elem.max(1))
}

/// `nbrec::combine` for this module's records (`is_v`): the real operation and its memory
/// (`me`: a local member's rank; `local`, `procs`, `parts`: the record's).
///
/// # Safety
/// The members' buffers are valid.
pub(super) unsafe fn combine(local: &[i32], procs: &[(usize, usize)], parts: &[Slot], me: i32) -> (RealColl, CollMem) {
    let nproc = procs.iter().map(|p| p.0 + 1).max().unwrap_or(1);
    let myp = procs[me as usize].0;
    let Some((_, first)) = members(local, parts).next() else {
        return (RealColl::Barrier, CollMem::owned(Vec::new()));
    };
    // SAFETY (the packs): the members' buffers are valid (the caller's contract).
    unsafe {
        match first {
            Part::Gather { root, .. } | Part::Scatter { root, .. } => {
                let gather = matches!(first, Part::Gather { .. });
                let rp = procs[*root as usize].0;
                if myp == rp {
                    // The root's counts lay out every process's blocks.
                    let all = match part_of(local, parts, *root) {
                        Some(Part::Gather { parts, .. } | Part::Scatter { parts, .. }) => parts,
                        _ => return (RealColl::Barrier, CollMem::owned(Vec::new())),
                    };
                    let sp = spread(procs, nproc, |r| vbytes(all.get(r)));
                    if let Some(land) = gather.then(|| gather_landing(procs, nproc, all)).flatten() {
                        // vrec28: this process's blocks straight into the root's buffer, the
                        // other processes' chunks landing there (no copy of ours).
                        for (r, p) in members(local, parts) {
                            match (own_view(r, p), all.get(r)) {
                                (Some(v), Some(to)) if !(r == *root as usize && is_in_place(p)) => copy_view(v, to),
                                _ => {}
                            }
                        }
                        let mut keep = Vec::new();
                        let arrays = put_arrays(&mut keep, &sp.per_proc, Some(&land.displs));
                        let mem = CollMem {
                            send: std::ptr::null(),
                            recv: land.base,
                            bytes: 0,
                            keep,
                        };
                        return (
                            RealColl::Gatherv {
                                root: rp,
                                arrays,
                                blocks: 0,
                            },
                            mem,
                        );
                    }
                    let mut keep = vec![0u8; sp.total];
                    if gather {
                        for (r, p) in members(local, parts) {
                            if let Some(v) = own_view(r, p) {
                                pack(v, &mut keep, sp.at[r]);
                            }
                        }
                    } else {
                        for (r, &at) in sp.at.iter().enumerate() {
                            if let Some(v) = all.get(r) {
                                pack(v, &mut keep, at);
                            }
                        }
                    }
                    let arrays = put_counts(&mut keep, &sp.per_proc, true);
                    let what = if gather {
                        RealColl::Gatherv {
                            root: rp,
                            arrays,
                            blocks: 0,
                        }
                    } else {
                        RealColl::Scatterv { root: rp, arrays }
                    };
                    return (what, mem_of(keep, sp.total));
                }
                // Away from the root's process: this process's members' blocks, in rank order
                // (the root's counts, unused here, as zeros).
                let total: usize = members(local, parts).map(|(r, p)| vbytes(own_view(r, p))).sum();
                if let Some(blocks) = gather.then(|| in_place_blocks(local, parts, total)).flatten() {
                    // vrec28: sent from the members' buffers (`in_place_blocks`).
                    let mut keep = Vec::new();
                    let arrays = put_counts(&mut keep, &vec![0; nproc], true);
                    put_blocks(&mut keep, &blocks);
                    let what = RealColl::Gatherv {
                        root: rp,
                        arrays,
                        blocks: blocks.len(),
                    };
                    return (what, mem_of(keep, 0));
                }
                let mut keep = vec![0u8; total];
                if gather {
                    let mut at = 0;
                    for (r, p) in members(local, parts) {
                        if let Some(v) = own_view(r, p) {
                            pack(v, &mut keep, at);
                            at += v.count * v.dt.size;
                        }
                    }
                }
                let arrays = put_counts(&mut keep, &vec![0; nproc], true);
                let what = if gather {
                    RealColl::Gatherv {
                        root: rp,
                        arrays,
                        blocks: 0,
                    }
                } else {
                    RealColl::Scatterv { root: rp, arrays }
                };
                (what, mem_of(keep, total))
            }
            Part::Allgather { parts: all, .. } => {
                let sp = spread(procs, nproc, |r| vbytes(all.get(r)));
                let mut keep = vec![0u8; sp.total];
                for (r, p) in members(local, parts) {
                    if let Some(v) = own_view(r, p) {
                        pack(v, &mut keep, sp.at[r]);
                    }
                }
                // Every process's blocks as long (IMB's equal counts, as many members on each):
                // the real Allgather, which has our recursive doubling for small blocks
                // (`nbc::start_rd`; MPICH's Iallgatherv schedule is advanced one step per
                // poll). Every rank has every count: every process decides alike.
                if let Some(&blk) = sp.per_proc.first().filter(|&&b| sp.per_proc.iter().all(|&c| c == b)) {
                    return (RealColl::Allgather { bytes: blk }, CollMem::owned(keep));
                }
                let arrays = put_counts(&mut keep, &sp.per_proc, true);
                (RealColl::Allgatherv { arrays }, mem_of(keep, sp.total))
            }
            Part::ReduceScatter { counts, dt, red, .. } => {
                let Some((op, ty)) = real::real_reduction(red) else {
                    return (RealColl::Barrier, CollMem::owned(Vec::new()));
                };
                let (unit, elem) = units(red, dt);
                let total: usize = counts.iter().sum();
                let mut acc: Option<Vec<u8>> = None;
                let mut x = Vec::new();
                for (_, p) in members(local, parts) {
                    if let Part::ReduceScatter { send, recv, dt, .. } = p {
                        let operand = in_place(*send, *recv);
                        match acc.as_mut() {
                            None => acc = Some(red.load(operand, total, dt)),
                            // SAFETY: every member's operand holds the whole vector (`total`
                            // elements of `dt`: MPI's rule), `a` a work buffer as long.
                            Some(a) => fold_into(red, operand, total, dt, a, &mut x),
                        }
                    }
                }
                let mut acc = acc.unwrap_or_default();
                acc.resize(total * unit, 0);
                if rs_allreduce(total * unit) {
                    let what = RealColl::Allreduce {
                        op,
                        ty,
                        count: total * unit / elem,
                    };
                    return (what, CollMem::owned(acc));
                }
                // The reduced vector by process (a predefined operation is elementwise: the
                // blocks may move, each stays whole).
                let sp = spread(procs, nproc, |r| counts[r] * unit);
                let mut keep = if procs.windows(2).all(|w| w[0].0 <= w[1].0) {
                    acc
                } else {
                    let mut out = vec![0u8; total * unit];
                    let mut from = 0;
                    for (r, &at) in sp.at.iter().enumerate() {
                        let n = counts[r] * unit;
                        out[at..at + n].copy_from_slice(&acc[from..from + n]);
                        from += n;
                    }
                    out
                };
                let elems: Vec<usize> = sp.per_proc.iter().map(|b| b / elem).collect();
                let arrays = put_counts(&mut keep, &elems, false);
                (RealColl::ReduceScatter { op, ty, arrays }, mem_of(keep, total * unit))
            }
            _ => (RealColl::Barrier, CollMem::owned(Vec::new())),
        }
    }
}

/// `nbrec::distribute` for this module's records: copies the result `buf` (the memory of
/// `combine`'s operation) into the local members' buffers (this is process `myproc`). The
/// members that only send (a Gatherv's non-roots, a Scatterv's root) are left alone: they
/// completed at the start.
///
/// # Safety
/// Every receiving member's buffers are valid.
pub(super) unsafe fn distribute(local: &[i32], procs: &[(usize, usize)], parts: &[Slot], buf: &[u8], myproc: usize) {
    let nproc = procs.iter().map(|p| p.0 + 1).max().unwrap_or(1);
    let Some((_, first)) = members(local, parts).next() else { return };
    // SAFETY (the unpacks): the receiving members' buffers are valid (the caller's contract).
    unsafe {
        match first {
            Part::Gather { root, .. } => {
                if let Some(Part::Gather { send, parts: all, .. }) = part_of(local, parts, *root) {
                    // vrec28: landed in place (`gather_landing`, decided as `combine` did).
                    if gather_landing(procs, nproc, all).is_some() {
                        return;
                    }
                    let sp = spread(procs, nproc, |r| vbytes(all.get(r)));
                    for (r, &at) in sp.at.iter().enumerate() {
                        // In place, the root's own block is where it belongs.
                        if send.is_none() && r == *root as usize {
                            continue;
                        }
                        if let Some(v) = all.get(r) {
                            unpack(v, buf, at);
                        }
                    }
                }
            }
            Part::Scatter { root, .. } => {
                let sp = match part_of(local, parts, *root) {
                    Some(Part::Scatter { parts: all, .. }) if procs[*root as usize].0 == myproc => {
                        Some(spread(procs, nproc, |r| vbytes(all.get(r))))
                    }
                    _ => None,
                };
                let mut at = 0;
                for (r, p) in members(local, parts) {
                    let Some(v) = own_view(r, p) else { continue };
                    if r != *root as usize {
                        unpack(v, buf, sp.as_ref().map_or(at, |sp| sp.at[r]));
                    }
                    at += v.count * v.dt.size;
                }
            }
            Part::Allgather { parts: all, .. } => {
                let sp = spread(procs, nproc, |r| vbytes(all.get(r)));
                for (r, p) in members(local, parts) {
                    if let Part::Allgather { send, parts: mine } = p {
                        for (i, &at) in sp.at.iter().enumerate() {
                            if send.is_none() && i == r {
                                continue;
                            }
                            if let Some(v) = mine.get(i) {
                                unpack(v, buf, at);
                            }
                        }
                    }
                }
            }
            Part::ReduceScatter { dt, red, counts, .. } => {
                let (unit, _) = units(red, dt);
                // The whole vector in rank order (`rs_allreduce`), else this process's blocks.
                let whole = rs_allreduce(counts.iter().sum::<usize>() * unit);
                let mut at = 0;
                for (r, p) in members(local, parts) {
                    if let Part::ReduceScatter { recv, counts, dt, .. } = p {
                        if whole {
                            at = counts[..r].iter().sum::<usize>() * unit;
                        }
                        let n = counts.get(r).copied().unwrap_or(0);
                        if let (true, Some(work)) = (n > 0, buf.get(at..at + n * unit)) {
                            red.store(work, *recv, n, dt);
                        }
                        at += n * unit;
                    }
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    /// Blocks by process, each process's members in rank order, whatever the ranks' order.
    #[rstest]
    #[case::in_order(vec![(0, 0), (0, 1), (1, 0), (1, 1)], 2, vec![1, 2, 3, 4], vec![3, 7], vec![0, 1, 3, 6])]
    // A split with a reversed key over 2 processes x 2: ranks 0, 1 on process 1.
    #[case::reversed(vec![(1, 0), (1, 1), (0, 0), (0, 1)], 2, vec![1, 2, 3, 4], vec![7, 3], vec![7, 8, 0, 3])]
    #[case::uneven(vec![(0, 0), (1, 0), (1, 1), (0, 1), (1, 2)], 2, vec![5, 0, 2, 1, 3], vec![6, 5], vec![0, 6, 6, 5, 8])]
    fn spread_by_process(
        #[case] procs: Vec<(usize, usize)>,
        #[case] nproc: usize,
        #[case] bytes: Vec<usize>,
        #[case] per: Vec<usize>,
        #[case] at: Vec<usize>,
    ) {
        let sp = spread(&procs, nproc, |r| bytes[r]);
        let total = bytes.iter().sum();
        assert_eq!(sp, Spread { per_proc: per, at, total });
    }

    /// vrec28: a Gatherv lands in the root's buffer when each process's blocks (in its
    /// members' rank order) lie back to back there, whatever the processes' order and the
    /// gaps between processes; zero-count blocks are anywhere. `at`/`n`: each rank's block
    /// (offset in ints, ints); `want`: each process's chunk's offset in bytes from the lowest.
    #[rstest]
    #[case::in_order(vec![(0, 0), (0, 1), (1, 0), (1, 1)], vec![0, 1, 2, 3], vec![1, 1, 1, 1], Some(vec![0, 8]))]
    #[case::gap_between_processes(vec![(0, 0), (0, 1), (1, 0), (1, 1)], vec![0, 1, 5, 6], vec![1, 1, 1, 1], Some(vec![0, 20]))]
    #[case::processes_reversed(vec![(1, 0), (1, 1), (0, 0), (0, 1)], vec![0, 2, 4, 5], vec![2, 2, 1, 1], Some(vec![16, 0]))]
    #[case::zero_count_anywhere(vec![(0, 0), (0, 1), (0, 2), (1, 0)], vec![0, 9, 1, 3], vec![1, 0, 2, 4], Some(vec![0, 12]))]
    #[case::gap_in_a_process(vec![(0, 0), (0, 1), (1, 0), (1, 1)], vec![0, 2, 3, 4], vec![1, 1, 1, 1], None)]
    #[case::members_reversed(vec![(0, 0), (0, 1), (1, 0), (1, 1)], vec![1, 0, 2, 3], vec![1, 1, 1, 1], None)]
    fn gatherv_lands_when_back_to_back(
        #[case] procs: Vec<(usize, usize)>,
        #[case] at: Vec<usize>,
        #[case] n: Vec<usize>,
        #[case] want: Option<Vec<usize>>,
    ) {
        use crate::consts as c;
        let int = crate::core::datatype::lookup(c::MPI_INT).expect("MPI_INT");
        let mut v = vec![0i32; 16];
        let p = v.as_mut_ptr();
        let all = Blocks::List(
            at.iter()
                .zip(&n)
                .map(|(&a, &k)| crate::core::coll::Buf::new(p.wrapping_add(a) as *mut u8, k, int.clone()))
                .collect(),
        );
        let got = gather_landing(&procs, 2, &all).map(|l| {
            let lowest = at.iter().zip(&n).filter(|(_, &k)| k > 0).map(|(&a, _)| a).min().expect("a block");
            assert_eq!(l.base, p.wrapping_add(lowest) as *mut u8);
            l.displs
        });
        assert_eq!(got, want);
    }

    /// Which calls are this module's records: the v bindings of Gather and Scatter, an
    /// Allgather whose blocks are a list, every Reduce_scatter.
    #[rstest]
    #[case::gatherv("gather", false, true)]
    #[case::gather("gather", true, false)]
    #[case::scatterv("scatter", false, true)]
    #[case::allgatherv("allgatherv", true, true)]
    #[case::allgather("allgather", true, false)]
    #[case::reduce_scatter("reduce_scatter", true, true)]
    #[case::barrier("barrier", true, false)]
    fn v_records(#[case] kind: &str, #[case] equal: bool, #[case] want: bool) {
        use crate::consts as c;
        let int = crate::core::datatype::lookup(c::MPI_INT).expect("MPI_INT");
        let mut v = vec![0i32; 4];
        let buf = crate::core::coll::Buf::new(v.as_mut_ptr() as *mut u8, 1, int.clone());
        let equal_blocks = Blocks::Equal {
            ptr: v.as_mut_ptr() as *mut u8,
            count: 1,
            dt: int.clone(),
            n: 4,
        };
        let part = match kind {
            "gather" => Part::Gather {
                send: Some(buf),
                parts: Blocks::List(Vec::new()),
                root: 0,
            },
            "scatter" => Part::Scatter {
                parts: Blocks::List(Vec::new()),
                recv: Some(buf),
                root: 0,
            },
            "allgatherv" => Part::Allgather {
                send: Some(buf),
                parts: Blocks::List(Vec::new()),
            },
            "allgather" => Part::Allgather {
                send: Some(buf),
                parts: equal_blocks,
            },
            "reduce_scatter" => Part::ReduceScatter {
                send: v.as_ptr() as *const u8,
                recv: v.as_mut_ptr() as *mut u8,
                counts: vec![1; 4],
                red: crate::core::coll::reduce::Reducer::new(c::MPI_SUM, &int, c::MPI_INT).expect("sum"),
                dt: int,
            },
            _ => Part::Barrier,
        };
        assert_eq!(is_v(&part, equal), want);
    }
}
