//! Session 30 (gath30, issue 16): `MPI_Igatherv` at several members per process on the
//! two-level records as flat real messages, the mirror of session 29's Iscatterv
//! (`vscatter`; the shared pieces in `flatv`).
//!
//! The record is `nbrec`'s early one (`Early`):
//!
//! - **Every process away from the root's** sends its members' chunk to the root's process
//!   at its last member's join (their send counts, in rank order, are known then), as one
//!   real point-to-point message on the twin (`RealColl::FlatGatherv`, tagged with the call's
//!   place, `nbc::tree_tag`): below `SPLIT_MIN` the packed chunk (or straight from the
//!   members' buffers when they lie back to back), from it one message per non-empty block,
//!   straight from each member's buffer when its type is contiguous (packed into the
//!   record's `data` otherwise). Members whose block goes from their own buffer complete
//!   when the sends did (`Early::here` stays false until then); otherwise every member of the
//!   process completes at once after the pack.
//! - **The root's process** posts at the root's join (the root's arguments hold every rank's
//!   count) one receive per other process with a non-empty chunk: below `SPLIT_MIN` into the
//!   root's buffer when that process's blocks lie back to back there (contiguous type), else
//!   into `data` (unpacked when it lands: `unpack`, from `nbrec::settle_rec`); from it one
//!   receive per non-empty block, straight into the root's buffer at that rank's place
//!   (contiguous type), else into `data`. The local members' blocks are copied into the
//!   root's buffer at the root's join for those that joined before it, at their own join
//!   for the later ones (the root then holds its request until every local member joined:
//!   `Early::hold`); an in-place root leaves its own block. The root completes when every
//!   receive landed and every local member joined; the other members once their block is
//!   copied.
//!
//! Decided alike: a message between a process and the root's needs only those two to agree
//! on its length and split, and both know the blocks' lengths (MPI's rule: the root's count
//! for a rank is that rank's own); the choice of this path reads only what every rank has
//! alike (`nbrecv::serves`, the launch, `flatv::flat`).
//!
//! Errors: a local member's block longer than the root's place for it, or a message longer
//! than the root's receive (the real receive fails with the truncation class:
//! `nbrec::early_failed`), gives the root MPI_ERR_TRUNCATE (what fits is kept); the other
//! members complete without error, as MPI's senders do.

use super::flatv::{back_to_back, launch, resolve, root_messages, From, SPLIT_MIN};
use super::nbrec::{copy_view, early_rec_v, Early};
use super::nbrecv::vbytes;
use crate::core::coll::hier::CommKey;
use crate::core::coll::team::{Blocks, Part, View};
use crate::core::comm::CommRef;
use crate::core::error::MpiResult;
use crate::core::request::ReqId;
use crate::core::state::State;
use crate::transport::RealColl;

/// A record's member slot (`nbrec::Rec::parts`).
type Slot = Option<(Part, ReqId)>;

/// A gather member's own block (None: the root in place).
fn sent(p: &Part) -> Option<View<'_>> {
    match p {
        Part::Gather { send: Some(b), .. } => Some(b.into()),
        _ => None,
    }
}

/// Member `rank`'s own block (`part`) into its place in the root's blocks `all`; false when
/// it is longer than that place (what fits is copied: a truncation for the root).
///
/// # Safety
/// Both buffers are valid.
unsafe fn put(all: &Blocks, rank: usize, part: &Part) -> bool {
    let (Some(src), Some(dst)) = (sent(part), all.get(rank)) else {
        return true;
    };
    let fits = vbytes(Some(src)) <= vbytes(Some(dst));
    // SAFETY: the caller's contract; a member's send block is not the root's receive buffer
    // (MPI's rule: an in-place root passes no send block).
    unsafe { copy_view(src, dst) };
    fits
}

/// The root's part (in the root's process, at the root's join): the receives of every other
/// process's chunk, from the root's blocks `all`, straight into the root's buffer where the
/// layout allows it, else into `data` at an offset noted in `unpacks` (offset, rank).
fn root_part(
    procs: &[(usize, usize)],
    all: &Blocks,
    rp: usize,
    data: &mut Vec<u8>,
    unpacks: &mut Vec<(usize, usize)>,
) -> Vec<(usize, From, usize)> {
    unpacks.clear();
    root_messages(procs, all, rp, data, |r, v, data| {
        let at = data.len();
        unpacks.push((at, r));
        data.resize(at + vbytes(Some(v)), 0);
    })
}

/// A process's part away from the root's (at its last join): the sends of its members'
/// blocks (`parts`, by local index) to the root's process `rp`, from their buffers where the
/// chunk goes block by block (`SPLIT_MIN`) and a member's type is contiguous, or where the
/// blocks lie back to back, else packed into `data`. Also: whether a member's buffer is sent
/// from (its request then completes with the sends).
///
/// # Safety
/// The members' send blocks are valid.
unsafe fn away_part(parts: &[Slot], rp: usize, data: &mut Vec<u8>) -> (Vec<(usize, From, usize)>, bool) {
    let blocks = || parts.iter().filter_map(|s| s.as_ref().and_then(|(p, _)| sent(p)));
    let total: usize = blocks().map(|v| vbytes(Some(v))).sum();
    data.clear();
    let mut msgs = Vec::new();
    let mut lent = false;
    // SAFETY (the packs): the members' blocks are valid (the caller's contract); `pack`
    // appends to `data`.
    unsafe {
        if total >= SPLIT_MIN {
            for v in blocks().filter(|v| vbytes(Some(*v)) > 0) {
                let n = vbytes(Some(v));
                if v.dt.is_contiguous() {
                    msgs.push((rp, From::At(v.ptr as usize), n));
                    lent = true;
                } else {
                    msgs.push((rp, From::Data(data.len()), n));
                    v.dt.pack(v.ptr, v.count, data);
                }
            }
        } else if total > 0 {
            match back_to_back(blocks()) {
                Some(a) => {
                    msgs.push((rp, From::At(a), total));
                    lent = true;
                }
                None => {
                    for v in blocks() {
                        v.dt.pack(v.ptr, v.count, data);
                    }
                    msgs.push((rp, From::Data(0), total));
                }
            }
        }
    }
    (msgs, lent)
}

/// The root's blocks `parts` take what landed in `data` at the offsets of `unpacks` (offset,
/// rank: `root_part`), when the root completes (`nbrec::settle_rec`; a block that did not all
/// come, after a failed receive, takes what is there).
///
/// # Safety
/// The root's blocks are valid.
#[inline(never)]
pub(super) unsafe fn unpack(parts: &Blocks, e: &Early) {
    for &(at, r) in &e.slots {
        if let Some(v) = parts.get(r) {
            let end = (at + vbytes(Some(v))).min(e.data.len());
            // SAFETY: the caller's contract.
            unsafe { v.dt.unpack(&e.data[at.min(end)..end], v.ptr, v.count) };
        }
    }
}

/// A v-form gather's join (`nbrec::join_in`, under the state lock): member `cm.rank`'s
/// arguments `part` and request `id` (made, awaiting one event) into call `key`'s early
/// record; the root's join in the root's process and the last join elsewhere start the real
/// messages (see the module documentation); a member of the root's process puts its block
/// in the root's buffer once the root joined, and completes (`nbrec::settle`).
///
/// # Safety
/// MPI requires the buffers of `part` to stay valid until the request completes.
#[inline(never)]
pub(super) unsafe fn join_in(s: &mut State, cm: &CommRef, key: (CommKey, u64), part: Part, id: ReqId) -> MpiResult<()> {
    let Part::Gather { root, .. } = part else {
        unreachable!("vgather::join_in takes gathers")
    };
    if !s.rcoll.recs.contains_key(&key) {
        let r = early_rec_v(s, cm, root);
        s.rcoll.recs.insert(key, r);
    }
    let rec = s.rcoll.recs.get_mut(&key).expect("inserted above");
    let i = rec.local.binary_search(&cm.rank).unwrap_or(0);
    rec.parts[i] = Some((part, id));
    rec.joined += 1;
    let last = rec.joined == rec.local.len();
    let rp = rec.procs[root as usize].0;
    let e = rec.early.as_mut().expect("a gather's record is early");
    // The root's blocks, once it joined (in the root's process).
    let all = match e.root.and_then(|j| rec.parts[j].as_ref()) {
        Some((Part::Gather { parts, .. }, _)) => Some(parts),
        _ => None,
    };
    let mut fits = true;
    let msgs = match all {
        Some(all) if e.root == Some(i) => {
            (e.here, e.hold) = (true, true);
            for (slot, &r) in rec.parts.iter().zip(rec.local.iter()) {
                if let Some((p, _)) = slot {
                    // SAFETY: the root's blocks are valid during its call, and so are the send
                    // blocks of the members that joined (their requests are not complete).
                    fits &= unsafe { put(all, r as usize, p) };
                }
            }
            Some(root_part(&rec.procs, all, rp, &mut e.data, &mut e.slots))
        }
        Some(all) => {
            // After the root's join in its process: this member's block into the root's buffer.
            if let Some((p, _)) = &rec.parts[i] {
                // SAFETY: as above (the root holds its request until this join).
                fits = unsafe { put(all, cm.rank as usize, p) };
            }
            None
        }
        None if e.root.is_none() && last => {
            // SAFETY: the members' send blocks are valid until their requests complete.
            let (m, lent) = unsafe { away_part(&rec.parts, rp, &mut e.data) };
            e.here = !lent;
            Some(m)
        }
        None => None,
    };
    if !fits && e.err == 0 {
        e.err = crate::consts::MPI_ERR_TRUNCATE;
    }
    let (settle_now, start) = resolve(e, msgs, last);
    // SAFETY: the messages' places are the record's `data` (`flatv::launch`), the root's receive
    // blocks and the members' send blocks, valid until their requests complete, which is after
    // the operation finished.
    unsafe { launch(s, key, settle_now, start, RealColl::FlatGatherv { root: rp, tag: 0 }) }
}

#[cfg(test)]
mod tests {
    use super::super::flatv::test_block;
    use super::*;
    use rstest::rstest;

    /// The root's receives over two processes (the root's is 0, ranks 0-1 there, 2-4 on
    /// process 1): one message of the chunk below `SPLIT_MIN`, into the root's buffer when
    /// process 1's blocks lie back to back there, else into `data`; from it one per non-empty
    /// block, into `data` for a vector type. `at`/`ints`: each rank's block (int offset in the
    /// root's buffer, ints; None: a vector of two ints with a hole); `msgs`: (into `data` at,
    /// bytes) or (into the root's buffer, bytes); `unpacks`: (offset, rank).
    #[rstest]
    #[case::back_to_back(vec![0, 1, 2, 3, 3], vec![Some(1), Some(1), Some(1), Some(0), Some(2)], vec![(None, 12)], vec![])]
    #[case::reversed(vec![0, 1, 4, 3, 2], vec![Some(1), Some(1), Some(1), Some(1), Some(1)], vec![(Some(0), 12)], vec![(0, 2), (4, 3), (8, 4)])]
    #[case::empty(vec![0, 1, 2, 3, 4], vec![Some(1), Some(1), Some(0), Some(0), Some(0)], vec![], vec![])]
    #[case::split(vec![0, 1, 2, 4098, 4098], vec![Some(1), Some(1), Some(4096), Some(0), Some(2048)], vec![(None, 16384), (None, 8192)], vec![])]
    #[case::split_vector(vec![0, 1, 2, 4098, 9000], vec![Some(1), Some(1), Some(4096), Some(0), None], vec![(None, 16384), (Some(0), 8)], vec![(0, 4)])]
    fn root_receives(
        #[case] at: Vec<usize>,
        #[case] ints: Vec<Option<usize>>,
        #[case] msgs: Vec<(Option<usize>, usize)>,
        #[case] unpacks: Vec<(usize, usize)>,
    ) {
        let mut buf = vec![0i32; 10000];
        let p = buf.as_mut_ptr();
        let all = Blocks::List(at.iter().zip(&ints).map(|(&a, n)| test_block(p.wrapping_add(a), *n)).collect());
        let procs = vec![(0, 0), (0, 1), (1, 0), (1, 1), (1, 2)];
        let (mut data, mut got_unpacks) = (Vec::new(), Vec::new());
        let got = root_part(&procs, &all, 0, &mut data, &mut got_unpacks);
        let got: Vec<(Option<usize>, usize)> = got
            .iter()
            .map(|&(q, f, n)| {
                assert_eq!(q, 1);
                match f {
                    From::Data(o) => (Some(o), n),
                    From::At(a) => {
                        assert!(a >= p as usize && a + n <= p as usize + 40000);
                        (None, n)
                    }
                }
            })
            .collect();
        assert_eq!(got, msgs);
        assert_eq!(got_unpacks, unpacks);
        let in_data: usize = msgs.iter().filter(|m| m.0.is_some()).map(|m| m.1).sum();
        assert_eq!(data.len(), in_data);
    }

    /// Away from the root's process: the packed chunk below `SPLIT_MIN` (from the members'
    /// buffers when back to back), one message per non-empty block from it, packed for a
    /// vector type; whether a member's buffer is lent. `ints`: each member's ints (None: a
    /// vector of two ints with a hole), `adjacent`: the blocks in one buffer back to back.
    #[rstest]
    #[case::packed(vec![Some(1), Some(0), Some(3)], false, vec![(Some(0), 16)], false, 16)]
    #[case::back_to_back(vec![Some(1), Some(0), Some(3)], true, vec![(None, 16)], true, 0)]
    #[case::empty(vec![Some(0), Some(0)], true, vec![], false, 0)]
    #[case::split(vec![Some(4096), Some(0), Some(2048)], false, vec![(None, 16384), (None, 8192)], true, 0)]
    #[case::split_vector(vec![Some(4096), None], false, vec![(None, 16384), (Some(0), 8)], true, 8)]
    #[case::vector_small(vec![Some(1), None], true, vec![(Some(0), 12)], false, 12)]
    fn away_sends(
        #[case] ints: Vec<Option<usize>>,
        #[case] adjacent: bool,
        #[case] msgs: Vec<(Option<usize>, usize)>,
        #[case] lent: bool,
        #[case] data_len: usize,
    ) {
        // One buffer; blocks back to back, or each 16 ints after the previous one's end.
        let mut buf = vec![0i32; 10000];
        let mut at = 0;
        let parts: Vec<Slot> = ints
            .iter()
            .map(|n| {
                let b = test_block(buf.as_mut_ptr().wrapping_add(at), *n);
                at += n.unwrap_or(3) + if adjacent { 0 } else { 16 };
                let part = Part::Gather {
                    send: Some(b),
                    parts: Blocks::List(Vec::new()),
                    root: 0,
                };
                Some((part, 0))
            })
            .collect();
        let mut data = Vec::new();
        // SAFETY: the blocks lie in `buf`.
        let (got, got_lent) = unsafe { away_part(&parts, 0, &mut data) };
        let got: Vec<(Option<usize>, usize)> = got
            .iter()
            .map(|&(_, f, n)| match f {
                From::Data(o) => (Some(o), n),
                From::At(_) => (None, n),
            })
            .collect();
        assert_eq!(got, msgs);
        assert_eq!(got_lent, lent);
        assert_eq!(data.len(), data_len);
    }
}
