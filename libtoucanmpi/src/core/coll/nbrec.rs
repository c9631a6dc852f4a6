//! Nonblocking collectives between processes at several members per process (V>1, or SMP
//! mode) without a helper task: the two-level scheme as a three-step schedule.
//!
//! 1. **Join.** Each local member's `MPI_I*` leaves its arguments and request in the record
//!    of the call on this process (keyed by the communicator and the call's number, which is
//!    the same on every member) and returns.
//! 2. **Combine and start.** The member that joins last takes the record out, does the local
//!    step in shared memory (reduces the operands into one work buffer, or packs the blocks
//!    into one buffer laid out per process) and starts the real MPI's nonblocking collective
//!    on the communicator's twin (`real::submit_rec`, in the twin's issue order).
//! 3. **Distribute and complete.** Whoever polls the progress engine when the real request
//!    finishes (the background thread while the members compute, a waiting member,
//!    `MPI_Test`) copies the result into every local member's buffers and completes their
//!    requests (`finish`, from `real::on_done`).
//!
//! No coroutine per call: the members that are not last pay a record entry; the last pays the
//! local combine, as the team's records do (`teamcall`).
//!
//! Served (`eligible`, decided from what every rank passes alike, so every process and every
//! local member decides the same): Barrier, Bcast, Reduce and Allreduce (a predefined
//! operation on a C basic type), and Gather, Scatter (coll3) and Allgather with equal blocks
//! when every process holds the same number of members (not Alltoall: see `eligible`); on a communicator with a twin
//! (members on every process), when the program has no swapped thread-locals (a buffer there would be
//! another subrank's while its owner is switched out: `sched::swap`, as `team::of` decides).

use crate::core::coll::hier::{key_of, CommKey};
use crate::core::coll::real;
use crate::core::coll::team::{Blocks, Part};
use crate::core::coll::{in_place, Coll};
use crate::core::comm::CommRef;
use crate::core::error::MpiResult;
use crate::core::request::ReqId;
use crate::core::state::{self, State};
use crate::transport::{CollMem, RealColl};

/// Bytes per rank below which Gather and Scatter take this path. Above, packing every
/// member's block into a fresh per-process buffer (and unpacking it at the other end) costs
/// more than the helper task's messages straight between the buffers: IMB-NBC at n=2 V=4
/// (loaded machine, load 6 to 8), t_pure this path / helper path: Igather 8 B 13 / 36 µs,
/// 4 KiB 9-22 / 40, 64 KiB 120-280 / 110; Iscatter 8 B 5 / 35, 4 KiB 17-56 / 37, 64 KiB
/// 210-460 / 230. To be re-measured quietly.
const ROOTED_MAX: usize = 16 * 1024;

/// One call's record on this process.
pub struct Rec {
    /// Communicator ranks on this process, ascending.
    local: Vec<i32>,
    /// Each local member's arguments and request (by local index), once joined.
    parts: Vec<Option<(Part, ReqId)>>,
    joined: usize,
    /// The process of each communicator rank, and its index among that process's members.
    procs: Vec<(usize, usize)>,
    /// Members per process (Allgather: the same everywhere).
    per: usize,
}

impl Rec {
    /// coll5: local members of the call (`coll::persist`).
    pub(super) fn local_count(&self) -> usize {
        self.local.len()
    }

    /// coll5: member `me` binds its arguments and request (`coll::persist`, at initialisation).
    pub(super) fn join(&mut self, me: i32, part: Part, id: ReqId) {
        let i = self.local.binary_search(&me).unwrap_or(0);
        self.parts[i] = Some((part, id));
        self.joined += 1;
    }
}

/// Open records of this process.
pub type Recs = crate::core::idmap::IdMap<(CommKey, u64), Rec>;

/// Whether a nonblocking call on `cm` with arguments `part` is served here (see the module
/// documentation); `equal`: the binding has equal blocks (not a v/w form).
pub fn eligible(cm: &CommRef, part: &Part, equal: bool) -> bool {
    if cm.is_inter() || crate::sched::swap::active() || !real::has_twin(cm) {
        return false;
    }
    let worth = super::nbc::worth;
    match part {
        Part::Barrier => true,
        Part::Bcast { buf, .. } => worth(buf.count * buf.dt.size),
        Part::Reduce { count, dt, red, .. } => real::reducible(red) && worth(count * dt.size),
        // In place the root's own block has the size every rank's has.
        Part::Gather { send: b, parts, .. } | Part::Scatter { recv: b, parts, .. } => {
            let bytes = match (b, parts) {
                (Some(b), _) => b.count * b.dt.size,
                (None, Blocks::Equal { count, dt, .. }) => count * dt.size,
                (None, Blocks::List(_)) => return false,
            };
            equal && worth(bytes) && bytes < ROOTED_MAX && even(cm)
        }
        Part::Allgather { parts: b, .. } => match b {
            Blocks::Equal { count, dt, .. } => equal && worth(count * dt.size) && even(cm),
            Blocks::List(_) => false,
        },
        // Not Alltoall: its record packs every member's every block (the process's own
        // included) into a fresh buffer of 2 x processes x members^2 blocks and sends it all
        // through the real Ialltoall. Measured quietly (IMB-NBC, n=2 V=4, 1 MiB): t_pure
        // 51.7 ms this way against 4.0 ms on the helper path (blocking Alltoall 3.3 ms).
        // A version exchanging only the blocks between processes could come back here.
        _ => false,
    }
}

/// Whether every process holding members of `cm` holds the same number.
fn even(cm: &CommRef) -> bool {
    state::with(|s| {
        let mut count = vec![0usize; s.nproc];
        for &w in cm.group.ranks.iter() {
            count[s.locate(w).0] += 1;
        }
        let first = count.iter().copied().find(|&c| c > 0).unwrap_or(0);
        count.iter().all(|&c| c == 0 || c == first)
    })
    .unwrap_or(false)
}

/// Joins call `c` (enrolled: `c.real`) with arguments `part` for request `id`; the last local
/// member to join combines and starts the real collective.
///
/// # Safety
/// MPI requires the buffers of `part` to stay valid until the request completes.
pub unsafe fn join(c: &Coll, part: Part, id: ReqId) -> MpiResult<()> {
    let key = (key_of(c.comm.ctx, &c.comm.group.ranks), c.seq);
    let me = c.comm.rank;
    let full = state::with(|s| {
        if !s.rcoll.recs.contains_key(&key) {
            let r = new_rec(s, c);
            s.rcoll.recs.insert(key, r);
        }
        let rec = s.rcoll.recs.get_mut(&key).expect("inserted above");
        let i = rec.local.binary_search(&me).unwrap_or(0);
        rec.parts[i] = Some((part, id));
        rec.joined += 1;
        if rec.joined == rec.local.len() {
            s.rcoll.recs.remove(&key)
        } else {
            None
        }
    })?;
    let Some(rec) = full else { return Ok(()) };
    // SAFETY: every member's buffers stay valid until its request completes.
    let (what, mem) = unsafe { combine(&rec, c.comm.rank) };
    // SAFETY: `mem` is ours (`keep`), or points at nothing.
    unsafe { real::submit_rec(c, what, mem, Box::new(rec)) }
}

pub(super) fn new_rec(s: &State, c: &Coll) -> Rec {
    let mut seen = vec![0usize; s.nproc];
    let mut local = Vec::new();
    let procs: Vec<(usize, usize)> = c
        .comm
        .group
        .ranks
        .iter()
        .enumerate()
        .map(|(r, &w)| {
            let p = s.locate(w).0;
            if p == s.myproc {
                local.push(r as i32);
            }
            seen[p] += 1;
            (p, seen[p] - 1)
        })
        .collect();
    let per = local.len();
    Rec {
        parts: (0..local.len()).map(|_| None).collect(),
        local,
        joined: 0,
        procs,
        per,
    }
}

/// Each joined member's arguments, in local rank order.
fn members(rec: &Rec) -> impl Iterator<Item = &Part> {
    rec.parts.iter().filter_map(|p| p.as_ref().map(|(part, _)| part))
}

/// Bytes of one block of `b` (equal blocks).
fn block_bytes(b: &Blocks) -> usize {
    match b {
        Blocks::Equal { count, dt, .. } => count * dt.size,
        Blocks::List(v) => v.first().map_or(0, |b| b.count * b.dt.size),
    }
}

/// Packs block `i` of `b` into `out` at `at`.
///
/// # Safety
/// `b`'s buffers are valid.
unsafe fn pack_block(b: &Blocks, i: usize, out: &mut [u8], at: usize, scratch: &mut Vec<u8>) {
    if let Some(v) = b.get(i) {
        scratch.clear();
        v.dt.pack(v.ptr, v.count, scratch);
        out[at..at + scratch.len()].copy_from_slice(scratch);
    }
}

/// Unpacks `bytes` at `at` of `from` into block `i` of `b`.
///
/// # Safety
/// `b`'s buffers are valid.
unsafe fn unpack_block(b: &Blocks, i: usize, from: &[u8], at: usize, bytes: usize) {
    if let Some(v) = b.get(i) {
        v.dt.unpack(&from[at..at + bytes], v.ptr, v.count);
    }
}

/// The local step: the real operation and its memory (`me`: a local member's rank).
///
/// # Safety
/// The members' buffers are valid.
pub(super) unsafe fn combine(rec: &Rec, me: i32) -> (RealColl, CollMem) {
    let Some(first) = members(rec).next() else {
        return (RealColl::Barrier, CollMem::owned(Vec::new()));
    };
    let nproc = rec.procs.iter().map(|p| p.0 + 1).max().unwrap_or(1);
    match first {
        Part::Bcast { buf, root } => {
            let rp = rec.procs[*root as usize].0;
            let len = buf.count * buf.dt.size;
            let mut v = Vec::with_capacity(len);
            // In the root's process the data comes from the root's buffer.
            let src = rec.local.iter().position(|r| r == root).and_then(|j| match &rec.parts[j] {
                Some((Part::Bcast { buf, .. }, _)) => Some(buf),
                _ => None,
            });
            match src {
                Some(b) => b.dt.pack(b.ptr, b.count, &mut v),
                None => v.resize(len, 0),
            }
            (RealColl::Bcast { root: rp }, CollMem::owned(v))
        }
        Part::Reduce { count, dt, red, root, .. } => {
            let (op, ty) = real::real_reduction(red).expect("eligible reductions are real");
            let (n, _) = red.work(*count, dt);
            let mut acc: Option<Vec<u8>> = None;
            let mut x = Vec::new();
            for p in members(rec) {
                if let Part::Reduce { send, recv, count, dt, .. } = p {
                    let operand = in_place(*send, *recv);
                    match acc.as_mut() {
                        None => acc = Some(red.load(operand, *count, dt)),
                        Some(a) => {
                            red.load_into(operand, *count, dt, &mut x);
                            red.apply(&x, a, *count, dt);
                        }
                    }
                }
            }
            let acc = acc.unwrap_or_default();
            let what = match root {
                Some(r) => RealColl::Reduce {
                    root: rec.procs[*r as usize].0,
                    op,
                    ty,
                    count: n,
                },
                None => RealColl::Allreduce { op, ty, count: n },
            };
            (what, CollMem::owned(acc))
        }
        Part::Allgather { parts, .. } => {
            let bytes = block_bytes(parts);
            let blk = rec.per * bytes;
            let mut all = vec![0u8; nproc * blk];
            let mut scratch = Vec::with_capacity(bytes);
            let base = rec.procs[me as usize].0 * blk;
            for (j, p) in members(rec).enumerate() {
                if let Part::Allgather { send, parts } = p {
                    let at = base + j * bytes;
                    match send {
                        Some(b) => pack_block(&Blocks::List(vec![b.clone()]), 0, &mut all, at, &mut scratch),
                        None => pack_block(parts, rec.local[j] as usize, &mut all, at, &mut scratch),
                    }
                }
            }
            (RealColl::Allgather { bytes: blk }, CollMem::owned(all))
        }
        Part::Gather { root, .. } => {
            let bytes = rooted_bytes(rec);
            let blk = rec.per * bytes;
            let me = rec.procs[me as usize].0;
            let rp = rec.procs[*root as usize].0;
            // The root's process receives every process's block, its own in place; the
            // others send theirs from the start of the buffer.
            let (len, base) = if me == rp { (nproc * blk, me * blk) } else { (blk, 0) };
            let mut all = vec![0u8; len];
            let mut scratch = Vec::with_capacity(bytes);
            for (j, p) in members(rec).enumerate() {
                if let Part::Gather { send, parts, .. } = p {
                    let at = base + j * bytes;
                    match send {
                        Some(b) => pack_block(&Blocks::List(vec![b.clone()]), 0, &mut all, at, &mut scratch),
                        None => pack_block(parts, rec.local[j] as usize, &mut all, at, &mut scratch),
                    }
                }
            }
            (RealColl::Gather { root: rp, bytes: blk }, CollMem::owned(all))
        }
        Part::Scatter { root, .. } => {
            let bytes = rooted_bytes(rec);
            let blk = rec.per * bytes;
            let me = rec.procs[me as usize].0;
            let rp = rec.procs[*root as usize].0;
            if me != rp {
                return (RealColl::Scatter { root: rp, bytes: blk }, CollMem::owned(vec![0u8; blk]));
            }
            // The root's blocks laid out per process; this process's own stays in place.
            let mut all = vec![0u8; nproc * blk];
            let mut scratch = Vec::with_capacity(bytes);
            let src = rec.local.iter().position(|r| r == root).and_then(|j| match &rec.parts[j] {
                Some((Part::Scatter { parts, .. }, _)) => Some(parts),
                _ => None,
            });
            if let Some(parts) = src {
                for (i, &(p, k)) in rec.procs.iter().enumerate() {
                    pack_block(parts, i, &mut all, p * blk + k * bytes, &mut scratch);
                }
            }
            let mem = CollMem {
                send: all.as_ptr(),
                recv: std::ptr::null_mut(),
                bytes: all.len(),
                keep: all,
            };
            (RealColl::Scatter { root: rp, bytes: blk }, mem)
        }
        // coll5: only for a persistent plan at one member per process (`coll::persist`), whose
        // blocks cannot go as they are (`eligible` keeps Alltoall off this path otherwise). Per
        // process p, one block of per x per: (local member j -> p's member k) at j*per + k.
        Part::Alltoall { recvs, .. } => {
            let bytes = block_bytes(recvs);
            let blk = rec.per * rec.per * bytes;
            let half = nproc * blk;
            let mut keep = vec![0u8; 2 * half];
            let mut scratch = Vec::with_capacity(bytes);
            for (j, p) in members(rec).enumerate() {
                if let Part::Alltoall { sends, recvs } = p {
                    // In place the send data is the receive buffer, packed before anything arrives.
                    let from = sends.as_ref().unwrap_or(recvs);
                    for (i, &(q, k)) in rec.procs.iter().enumerate() {
                        pack_block(from, i, &mut keep, q * blk + (j * rec.per + k) * bytes, &mut scratch);
                    }
                }
            }
            let send = keep.as_ptr();
            // SAFETY: the second half of `keep`, `half` bytes long.
            let recv = unsafe { keep.as_mut_ptr().add(half) };
            let mem = CollMem {
                send,
                recv,
                bytes: half,
                keep,
            };
            (RealColl::Alltoall { bytes: blk }, mem)
        }
        _ => (RealColl::Barrier, CollMem::owned(Vec::new())),
    }
}

/// Bytes per rank of a Gather or Scatter record: any member's own block (the same
/// everywhere, MPI requires it; an in-place root's is the one in its own slot).
fn rooted_bytes(rec: &Rec) -> usize {
    let mut own = members(rec).zip(&rec.local).map(|(p, &r)| match p {
        Part::Gather { send: Some(b), .. } | Part::Scatter { recv: Some(b), .. } => b.count * b.dt.size,
        Part::Gather { parts, .. } | Part::Scatter { parts, .. } => parts.get(r as usize).map_or(0, |v| v.count * v.dt.size),
        _ => 0,
    });
    own.next().unwrap_or(0)
}

/// The real collective of `rec` finished with `buf` (its memory): distributes the result to
/// the local members and completes their requests (from the progress engine).
pub fn finish(s: &mut State, rec: &Rec, buf: Vec<u8>) {
    // SAFETY: every member's buffers stay valid until its request completes (below).
    unsafe { distribute(rec, &buf, s.myproc) };
    for (_, id) in rec.parts.iter().flatten() {
        s.event_done(*id);
    }
}

/// `finish`'s copies of the result `buf` into the local members' buffers (this is process
/// `myproc`).
///
/// # Safety
/// Every member's buffers are valid.
unsafe fn distribute(rec: &Rec, buf: &[u8], myproc: usize) {
    for (j, slot) in rec.parts.iter().enumerate() {
        let Some((part, _)) = slot else { continue };
        let me = rec.local[j];
        // SAFETY: every member's buffers stay valid until its request completes (below).
        unsafe {
            match part {
                Part::Bcast { buf: b, root } if *root != me => {
                    b.dt.unpack(&buf[..b.count * b.dt.size], b.ptr, b.count);
                }
                Part::Reduce {
                    recv,
                    count,
                    dt,
                    red,
                    root,
                    ..
                } if root.is_none_or(|r| r == me) => red.store(buf, *recv, *count, dt),
                Part::Gather { parts, root, .. } if *root == me => {
                    let bytes = rooted_bytes(rec);
                    let blk = rec.per * bytes;
                    for (i, &(p, k)) in rec.procs.iter().enumerate() {
                        unpack_block(parts, i, buf, p * blk + k * bytes, bytes);
                    }
                }
                Part::Scatter { recv: Some(b), root, .. } => {
                    let bytes = rooted_bytes(rec);
                    // The root's process kept the whole send buffer, its own block in place.
                    let base = if rec.procs[*root as usize].0 == myproc {
                        myproc * rec.per * bytes
                    } else {
                        0
                    };
                    let at = base + j * bytes;
                    b.dt.unpack(&buf[at..at + bytes], b.ptr, b.count);
                }
                Part::Allgather { parts, .. } => {
                    let bytes = block_bytes(parts);
                    let blk = rec.per * bytes;
                    for (i, &(p, k)) in rec.procs.iter().enumerate() {
                        unpack_block(parts, i, buf, p * blk + k * bytes, bytes);
                    }
                }
                // coll5: the layout of `combine`'s Alltoall; the received half follows the sent one.
                Part::Alltoall { recvs, .. } => {
                    let bytes = block_bytes(recvs);
                    let blk = rec.per * rec.per * bytes;
                    let half = buf.len() / 2;
                    for (i, &(q, k)) in rec.procs.iter().enumerate() {
                        unpack_block(recvs, i, buf, half + q * blk + (k * rec.per + j) * bytes, bytes);
                    }
                }
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::consts as c;
    use rstest::rstest;

    /// coll5: the per-process layout of a packed Alltoall (`combine` and `distribute`), with
    /// the real Ialltoall played by copying block q of process p's send half into block p of
    /// process q's receive half. Every rank sends 100 * from + to.
    #[rstest]
    #[case::one_per_process(2, 1)]
    #[case::two_per_process(2, 2)]
    #[case::three_by_two(3, 2)]
    fn packed_alltoall_delivers_every_block(#[case] nproc: usize, #[case] per: usize) {
        let int = crate::core::datatype::lookup(c::MPI_INT).expect("MPI_INT");
        let n = nproc * per;
        let procs: Vec<(usize, usize)> = (0..n).map(|r| (r / per, r % per)).collect();
        let mut sends: Vec<Vec<i32>> = (0..n).map(|f| (0..n).map(|t| (100 * f + t) as i32).collect()).collect();
        let mut recvs: Vec<Vec<i32>> = vec![vec![-1; n]; n];
        let blocks = |v: &mut Vec<i32>| Blocks::Equal {
            ptr: v.as_mut_ptr() as *mut u8,
            count: 1,
            dt: int.clone(),
            n,
        };
        let recs: Vec<Rec> = (0..nproc)
            .map(|p| {
                let local: Vec<i32> = (0..per).map(|k| (p * per + k) as i32).collect();
                let parts = local
                    .iter()
                    .map(|&r| {
                        let part = Part::Alltoall {
                            sends: Some(blocks(&mut sends[r as usize])),
                            recvs: blocks(&mut recvs[r as usize]),
                        };
                        Some((part, 0))
                    })
                    .collect();
                Rec {
                    local,
                    parts,
                    joined: per,
                    procs: procs.clone(),
                    per,
                }
            })
            .collect();
        // SAFETY: the blocks point at the vectors above, alive until the end.
        let mems: Vec<(RealColl, CollMem)> = recs.iter().map(|r| unsafe { combine(r, r.local[0]) }).collect();
        let RealColl::Alltoall { bytes: blk } = mems[0].0 else {
            panic!("not an alltoall")
        };
        let half = nproc * blk;
        for q in 0..nproc {
            let mut buf = mems[q].1.keep.clone();
            for p in 0..nproc {
                let from = &mems[p].1.keep[q * blk..(q + 1) * blk];
                buf[half + p * blk..half + (p + 1) * blk].copy_from_slice(from);
            }
            // SAFETY: as above.
            unsafe { distribute(&recs[q], &buf, q) };
        }
        for (to, got) in recvs.iter().enumerate() {
            let want: Vec<i32> = (0..n).map(|f| (100 * f + to) as i32).collect();
            assert_eq!(got, &want, "rank {to}");
        }
    }
}
