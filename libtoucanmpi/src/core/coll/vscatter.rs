//! Session 29 (vscat29, issue 16): `MPI_Iscatterv` at several members per process on the
//! two-level records, started early and sent as flat real messages.
//!
//! The record is `nbrec`'s early one (`Early`, as the equal-block Iscatter's since session
//! 27), with each local member's block at its own offset (`Early::slots`):
//!
//! - **The root's process** packs every rank's block at the root's join (its siblings need
//!   not have joined: the root holds every block), by process in process order, each
//!   process's members in rank order (`nbrecv::spread`), and sends every other process its
//!   chunk at once as one real point-to-point message on the twin (`RealColl::FlatScatterv`,
//!   `Transport::chunk_send`), tagged with the call's place as the trees are (`nbc::tree_tag`).
//!   MPICH's `MPI_Iscatterv` schedule (advanced one step per poll of our progress engine) is
//!   not used. The members of the root's process take their blocks from the packed buffer,
//!   at their join or at the root's, whichever comes later; the root completes when every
//!   send finished (the buffer lives in the record until then: `nbrec::landed`).
//! - **Every other process** posts one real receive of its members' total bytes at its last
//!   member's join (the sum of their receive counts, known only then; the root's process
//!   sends exactly that many, since the root's count for each rank equals the rank's own:
//!   MPI's rule), into the record's buffer, each member taking its block at its offset (its
//!   members' counts in rank order) once it is here.
//!
//! Decided alike: a message per (root's process, process) pair needs only that pair to agree
//! on its length, which both know; a chunk of more than `collp2p::P2P_MAX` bytes goes as
//! several messages of at most that, in order on the same tag (`collp2p::chunks`: both sides
//! cut it alike), which MPI matches in order; an empty chunk sends nothing. The choice of
//! this path over the general one reads only what every rank has alike (`nbrecv::serves`,
//! the launch, `flat`).
//!
//! Errors: a member of the root's process whose count differs from what the root sends it
//! gets MPI_ERR_TRUNCATE (`nbrec::settle_rec`, as the Iscatter's); away from the root's
//! process a chunk longer than the members' total makes the real receive fail with the
//! truncation class, which every member of that process gets (`nbrec::early_failed`); a
//! shorter one is not seen (the real receive takes it, the missing bytes stay as they were).

use super::flatv::{launch, resolve, root_messages, From, SPLIT_MIN};
use super::nbrec::{copy_view, early_rec_v};
use super::nbrecv::vbytes;
use crate::core::coll::hier::CommKey;
use crate::core::coll::team::{Blocks, Part};
use crate::core::comm::CommRef;
use crate::core::error::MpiResult;
use crate::core::request::ReqId;
use crate::core::state::State;
use crate::transport::RealColl;

/// A block's offset in `Early::slots` when it landed in its member's buffer (`nbrec::settle_rec`
/// has nothing to copy: no place in `data` ends there).
const LANDED: usize = usize::MAX;

/// The root's part (in the root's process, at the root's join): this process's members take
/// their blocks straight from the root's buffer (`slots`, by local index: `LANDED`, with the
/// root's count; `take`, the root holding its request until every one joined), and every
/// other process's messages go from the root's buffer where they lie as they go, else packed
/// into `data`.
///
/// # Safety
/// The root's blocks `all` are valid.
unsafe fn root_part(
    procs: &[(usize, usize)],
    local: &[i32],
    all: &Blocks,
    rp: usize,
    data: &mut Vec<u8>,
    slots: &mut Vec<(usize, usize)>,
) -> Vec<(usize, From, usize)> {
    slots.clear();
    slots.extend(local.iter().map(|&r| (LANDED, vbytes(all.get(r as usize)))));
    root_messages(procs, all, rp, data, |_, v, data| {
        // SAFETY: the root's blocks are valid (the caller's contract); `pack` appends to `data`.
        unsafe { v.dt.pack(v.ptr, v.count, data) }
    })
}

/// A process's part away from the root's (at its last join): the receives of its members'
/// blocks (`parts`, by local index), into their buffers where the chunk goes block by block
/// (`SPLIT_MIN`) and a member's type is contiguous, else into `data` at its slot.
fn away_part(parts: &[Option<(Part, ReqId)>], rp: usize, data: &mut Vec<u8>, slots: &mut Vec<(usize, usize)>) -> Vec<(usize, From, usize)> {
    let recv = |s: &Option<(Part, ReqId)>| match s {
        Some((Part::Scatter { recv: Some(b), .. }, _)) => Some(b.clone()),
        _ => None,
    };
    let total: usize = parts.iter().filter_map(recv).map(|b| b.count * b.dt.size).sum();
    slots.clear();
    let mut msgs = Vec::new();
    let mut at = 0;
    for b in parts.iter().map(recv) {
        let n = b.as_ref().map_or(0, |b| b.count * b.dt.size);
        match b {
            Some(b) if n > 0 && total >= SPLIT_MIN && b.dt.is_contiguous() => {
                msgs.push((rp, From::At(b.ptr as usize), n));
                slots.push((LANDED, n));
            }
            _ => {
                if total >= SPLIT_MIN && n > 0 {
                    msgs.push((rp, From::Data(at), n));
                }
                slots.push((at, n));
                at += n;
            }
        }
    }
    if total > 0 && total < SPLIT_MIN {
        msgs.push((rp, From::Data(0), total));
    }
    // The receive overwrites every byte it brings: only a buffer longer than the last call's
    // (a recycled shell's) needs filling. Session 30: the fill of the whole buffer at every
    // call (`rep stosb`) was 4.1k of this process's 13.5k instructions per iteration at 1 KiB
    // (callgrind 2x4, `bench/nbc-callgrind.sh v4 iscatterv 1024`; 9.3k without it).
    data.truncate(at);
    data.resize(at, 0);
    msgs
}

/// vscat29: member `j` of the root's process (its receive buffer `recv`) takes its block from
/// the root's blocks `all` (`me`: its rank), when it receives one (not the root in place).
///
/// # Safety
/// Both buffers are valid (the root's request does not complete before every local member
/// joined: `Early::hold`).
unsafe fn take(all: &Blocks, me: usize, part: &Part) {
    if let (Part::Scatter { recv: Some(b), .. }, Some(v)) = (part, all.get(me)) {
        // SAFETY: the caller's contract; not in place (`recv` is Some), so they do not overlap.
        unsafe { copy_view(v, b.into()) };
    }
}

/// A v-form scatter's join (`nbrec::join_in`, under the state lock): member `cm.rank`'s
/// arguments `part` and request `id` (made, awaiting one event) into call `key`'s early
/// record; the root's join in the root's process and the last join elsewhere start the real
/// messages (see the module documentation); a member whose block is here takes it and
/// completes (`nbrec::settle`).
///
/// Kept out of line: inlined into `nbrec::join_in` it cost the equal Iscatter's join about
/// 25 instructions per member (callgrind, 2x4).
///
/// # Safety
/// MPI requires the buffers of `part` to stay valid until the request completes.
#[inline(never)]
pub(super) unsafe fn join_in(s: &mut State, cm: &CommRef, key: (CommKey, u64), part: Part, id: ReqId) -> MpiResult<()> {
    let me = cm.rank;
    let Part::Scatter { root, .. } = part else {
        unreachable!("vscatter::join_in takes scatters")
    };
    if !s.rcoll.recs.contains_key(&key) {
        let r = early_rec_v(s, cm, root);
        s.rcoll.recs.insert(key, r);
    }
    let rec = s.rcoll.recs.get_mut(&key).expect("inserted above");
    let i = rec.local.binary_search(&me).unwrap_or(0);
    rec.joined += 1;
    rec.parts[i] = Some((part, id));
    let last = rec.joined == rec.local.len();
    let rp = rec.procs[root as usize].0;
    let e = rec.early.as_mut().expect("a scatter's record is early");
    let root_args = |j: Option<usize>| match j.and_then(|j| rec.parts[j].as_ref()) {
        Some((Part::Scatter { parts: all, .. }, _)) => Some(all),
        _ => None,
    };
    let msgs = if e.root == Some(i) {
        let all = root_args(e.root).expect("the root's arguments were just put there");
        e.here = true;
        e.hold = true;
        // SAFETY: the root's blocks are valid during its call, and so are the receive buffers
        // of the members that joined (their requests are not complete).
        unsafe {
            for (j, slot) in rec.parts.iter().enumerate() {
                if let Some((p, _)) = slot {
                    take(all, rec.local[j] as usize, p);
                }
            }
            Some(root_part(&rec.procs, &rec.local, all, rp, &mut e.data, &mut e.slots))
        }
    } else if e.here && e.root.is_some() {
        // After the root's join in its process: this member's block from the root's buffer.
        if let (Some(all), Some((p, _))) = (root_args(e.root), &rec.parts[i]) {
            // SAFETY: as above (the root holds its request until this join).
            unsafe { take(all, me as usize, p) };
        }
        None
    } else if e.root.is_none() && last {
        Some(away_part(&rec.parts, rp, &mut e.data, &mut e.slots))
    } else {
        None
    };
    let (settle_now, start) = resolve(e, msgs, last);
    // SAFETY: the messages' places are the record's `data` (`flatv::launch`), the root's send
    // blocks and the members' receive buffers, valid until their requests complete, which is
    // after the operation finished.
    unsafe { launch(s, key, settle_now, start, RealColl::FlatScatterv { root: rp, tag: 0 }) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    /// Away from the root's process: one message of the members' total into `data` below
    /// `SPLIT_MIN`, else one per non-empty block, straight into a contiguous member's buffer
    /// (`LANDED`) and into `data` for a vector type. `ints`: each member's ints (None: a
    /// vector of two ints with a hole); `msgs`: (into `data` at, bytes) or (landed, bytes).
    #[rstest]
    #[case::small(vec![Some(1), Some(0), Some(3)], vec![(Some(0), 16)], 16)]
    #[case::empty(vec![Some(0), Some(0)], vec![], 0)]
    #[case::split(vec![Some(4096), Some(0), Some(2048)], vec![(None, 16384), (None, 8192)], 0)]
    #[case::split_vector(vec![Some(4096), None], vec![(None, 16384), (Some(0), 8)], 8)]
    fn away_messages(#[case] ints: Vec<Option<usize>>, #[case] msgs: Vec<(Option<usize>, usize)>, #[case] data_len: usize) {
        let mut bufs: Vec<Vec<i32>> = ints.iter().map(|n| vec![0; n.unwrap_or(3)]).collect();
        let parts: Vec<Option<(Part, ReqId)>> = ints
            .iter()
            .zip(bufs.iter_mut())
            .map(|(n, b)| {
                let buf = super::super::flatv::test_block(b.as_mut_ptr(), *n);
                let part = Part::Scatter {
                    parts: Blocks::List(Vec::new()),
                    recv: Some(buf),
                    root: 0,
                };
                Some((part, 0))
            })
            .collect();
        let (mut data, mut slots) = (Vec::new(), Vec::new());
        let got = away_part(&parts, 1, &mut data, &mut slots);
        assert_eq!(data.len(), data_len);
        assert_eq!(slots.len(), parts.len());
        let got: Vec<(Option<usize>, usize)> = got
            .iter()
            .map(|&(p, f, n)| {
                assert_eq!(p, 1);
                (
                    match f {
                        From::Data(o) => Some(o),
                        From::At(_) => None,
                    },
                    n,
                )
            })
            .collect();
        assert_eq!(got, msgs);
        for slot in &slots {
            assert!(slot.0 == LANDED || slot.0 + slot.1 <= data.len());
        }
    }
}
