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

use super::nbrec::{copy_view, early_rec_v, settle};
use super::nbrecv::{spread, vbytes};
use crate::core::coll::hier::CommKey;
use crate::core::coll::team::{Blocks, Part, View};
use crate::core::comm::CommRef;
use crate::core::error::MpiResult;
use crate::core::request::ReqId;
use crate::core::state::State;
use crate::transport::real::RComm;
use crate::transport::{CollMem, RealColl};

/// Whether a v-form scatter's record goes as flat real messages (this module): unless
/// `TOUCAN_NBC_TREE_MAX=0` (no collectives as real point-to-point messages; the same on every
/// process), which keeps the real `MPI_Iscatterv` started at the last member's join
/// (`nbrecv::combine`).
pub(super) fn flat() -> bool {
    crate::core::runtime::config().nbc_tree_max > 0
}

/// Bytes of a process's chunk from which its members' blocks go as one real message each
/// (rank order, empty ones left out) rather than one message for the whole chunk: each block
/// then goes from the root's buffer (a contiguous send type) and lands in its member's buffer
/// (a contiguous receive type), where a chunk's message is packed at the root and unpacked
/// at the other end. Both ends decide from the chunk's length and the blocks' lengths, which
/// both know. Callgrind at 2x4, 64 KiB blocks (IMB's loop, per iteration): see
/// docs/collectives.md, "Session 29 (vscat29)".
const SPLIT_MIN: usize = 16 << 10;

/// A block's offset in `Early::slots` when it landed in its member's buffer (`nbrec::settle_rec`
/// has nothing to copy: no place in `data` ends there).
const LANDED: usize = usize::MAX;

/// Where one message's bytes are: at an offset of the record's `data` (its final address is
/// known once `data` is complete), or at an address of the program's.
#[derive(Clone, Copy)]
enum From {
    Data(usize),
    At(usize),
}

/// The messages of this process's part (peer process, where, bytes), in the order both ends
/// make them, as `CollMem::keep` carries them to `start` (native-order `usize` triples, the
/// places resolved against `data`).
fn put_messages(msgs: &[(usize, From, usize)], data: *const u8) -> Vec<u8> {
    let mut keep = Vec::with_capacity(msgs.len() * 3 * std::mem::size_of::<usize>());
    for &(p, from, n) in msgs {
        let at = match from {
            From::Data(off) => data as usize + off,
            From::At(a) => a,
        };
        for x in [p, at, n] {
            keep.extend_from_slice(&x.to_ne_bytes());
        }
    }
    keep
}

/// `put_messages`'s triples back.
fn messages(keep: &[u8]) -> impl Iterator<Item = (usize, usize, usize)> + '_ {
    let w = std::mem::size_of::<usize>();
    keep.chunks_exact(3 * w).map(move |t| {
        let x = |i: usize| usize::from_ne_bytes(t[i * w..(i + 1) * w].try_into().expect("a usize's bytes"));
        (x(0), x(1), x(2))
    })
}

/// The address of the first of blocks `views` when they lie back to back in memory, of a
/// contiguous type (empty ones anywhere), else None.
fn back_to_back<'a>(views: impl Iterator<Item = View<'a>>) -> Option<usize> {
    let (mut first, mut next) = (None, 0usize);
    for v in views {
        let n = v.count * v.dt.size;
        if n == 0 {
            continue;
        }
        if !v.dt.is_contiguous() || first.is_some_and(|_| v.ptr as usize != next) {
            return None;
        }
        first.get_or_insert(v.ptr as usize);
        next = v.ptr as usize + n;
    }
    Some(first.unwrap_or(0))
}

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
    let nproc = procs.iter().map(|p| p.0 + 1).max().unwrap_or(1);
    let sp = spread(procs, nproc, |r| vbytes(all.get(r)));
    let mut ranks: Vec<Vec<usize>> = vec![Vec::new(); nproc];
    for (r, &(p, _)) in procs.iter().enumerate() {
        ranks[p].push(r);
    }
    data.clear();
    slots.clear();
    slots.extend(local.iter().map(|&r| (LANDED, vbytes(all.get(r as usize)))));
    let mut msgs = Vec::new();
    // SAFETY (the packs): the root's blocks are valid (the caller's contract); `pack`
    // appends to `data`.
    unsafe {
        for (p, rs) in ranks.iter().enumerate() {
            let len = sp.per_proc[p];
            if p == rp || len == 0 {
                continue;
            }
            if len >= SPLIT_MIN {
                for &r in rs {
                    let Some(v) = all.get(r).filter(|v| v.count * v.dt.size > 0) else {
                        continue;
                    };
                    let n = v.count * v.dt.size;
                    if v.dt.is_contiguous() {
                        msgs.push((p, From::At(v.ptr as usize), n));
                    } else {
                        msgs.push((p, From::Data(data.len()), n));
                        v.dt.pack(v.ptr, v.count, data);
                    }
                }
            } else if let Some(a) = back_to_back(rs.iter().filter_map(|&r| all.get(r))) {
                msgs.push((p, From::At(a), len));
            } else {
                msgs.push((p, From::Data(data.len()), len));
                for &r in rs {
                    if let Some(v) = all.get(r) {
                        v.dt.pack(v.ptr, v.count, data);
                    }
                }
            }
        }
    }
    msgs
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
    let uid = e.uid;
    // The messages' places in `data` are final now (it does not change until the record goes).
    let mem = msgs.map(|m| {
        let p = e.data.as_mut_ptr();
        CollMem {
            send: p,
            recv: p,
            bytes: e.data.len(),
            keep: put_messages(&m, p),
        }
    });
    if e.here || e.done || last {
        settle(s, key);
    }
    let Some(mem) = mem else { return Ok(()) };
    let what = RealColl::FlatScatterv { root: rp, tag: 0 };
    // SAFETY: the messages' places are the record's `data`, which stays (and does not move)
    // until the operation finished (`nbrec::landed`), the root's send blocks and the members'
    // receive buffers, valid until their requests complete, which is after that.
    unsafe { super::real::queue_early(s, key, uid, what, mem) }
}

/// Starts this process's part of flat v-form scatter `token` at `place` of twin `comm` from
/// process `root` (`RealColl::FlatScatterv`): the messages in `mem.keep` (`put_messages`),
/// sent at the root, received elsewhere. True: done at once (every send complete, or nothing
/// to receive).
///
/// # Safety
/// The messages' bytes stay valid (readable at the root, writable elsewhere) until the
/// operation completes.
pub(super) unsafe fn start(
    s: &mut State,
    comm: RComm,
    root: usize,
    place: super::real::Place,
    mem: CollMem,
    token: u64,
) -> Result<bool, String> {
    let tag = super::nbc::tree_tag(s, place);
    let mut under_way = 0;
    let at_root = s.tp.myproc == root;
    for (p, at, n) in messages(&mem.keep) {
        // SAFETY: the caller's contract.
        under_way += unsafe {
            if at_root {
                s.tp.chunk_send(comm, p, tag, at as *const u8, n, token)
            } else {
                s.tp.chunk_recv(comm, p, tag, at as *mut u8, n, token)
            }
        }?;
    }
    super::nbc::expect(s, token, under_way);
    Ok(under_way == 0)
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
        use crate::consts as c;
        let int = crate::core::datatype::lookup(c::MPI_INT).expect("MPI_INT");
        let vec2 = std::sync::Arc::new(crate::core::datatype::typemap::hvector(2, 1, 8, &int).expect("vector"));
        let mut bufs: Vec<Vec<i32>> = ints.iter().map(|n| vec![0; n.unwrap_or(3)]).collect();
        let parts: Vec<Option<(Part, ReqId)>> = ints
            .iter()
            .zip(bufs.iter_mut())
            .map(|(n, b)| {
                let buf = match n {
                    Some(n) => crate::core::coll::Buf::new(b.as_mut_ptr() as *mut u8, *n, int.clone()),
                    None => crate::core::coll::Buf::new(b.as_mut_ptr() as *mut u8, 1, vec2.clone()),
                };
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

    /// The messages reach `start` as they were put, places in `data` resolved.
    #[rstest]
    #[case(vec![])]
    #[case(vec![(1, From::Data(0), 8)])]
    #[case(vec![(0, From::At(4096), 3), (2, From::Data(16), 1 << 21), (5, From::At(usize::MAX), 0)])]
    fn messages_round_trip(#[case] msgs: Vec<(usize, From, usize)>) {
        let data = 1000 as *const u8;
        let want: Vec<(usize, usize, usize)> = msgs
            .iter()
            .map(|&(p, f, n)| match f {
                From::Data(o) => (p, 1000 + o, n),
                From::At(a) => (p, a, n),
            })
            .collect();
        assert_eq!(messages(&put_messages(&msgs, data)).collect::<Vec<_>>(), want);
    }
}
