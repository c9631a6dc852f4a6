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

use super::nbrec::{early_rec, settle};
use super::nbrecv::{pack, spread, vbytes};
use crate::core::coll::hier::CommKey;
use crate::core::coll::team::Part;
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

/// The lengths of every process's chunk, in process order, as `CollMem::keep` carries them
/// to `start` (native-order `usize`s).
fn put_lengths(per_proc: &[usize]) -> Vec<u8> {
    per_proc.iter().flat_map(|n| n.to_ne_bytes()).collect()
}

/// `put_lengths`'s lengths back.
fn lengths(keep: &[u8]) -> impl Iterator<Item = usize> + '_ {
    keep.chunks_exact(std::mem::size_of::<usize>())
        .map(|b| usize::from_ne_bytes(b.try_into().expect("a usize's bytes")))
}

/// A v-form scatter's join (`nbrec::join_in`, under the state lock): member `cm.rank`'s
/// arguments `part` and request `id` (made, awaiting one event) into call `key`'s early
/// record; the root's join in the root's process and the last join elsewhere start the real
/// messages (see the module documentation); a member whose block is here takes it and
/// completes (`nbrec::settle`).
///
/// # Safety
/// MPI requires the buffers of `part` to stay valid until the request completes.
pub(super) unsafe fn join_in(s: &mut State, cm: &CommRef, key: (CommKey, u64), part: Part, id: ReqId) -> MpiResult<()> {
    let me = cm.rank;
    let Part::Scatter { root, .. } = part else {
        unreachable!("vscatter::join_in takes scatters")
    };
    if !s.rcoll.recs.contains_key(&key) {
        let r = early_rec(s, cm, root, 0, None);
        s.rcoll.recs.insert(key, r);
    }
    let rec = s.rcoll.recs.get_mut(&key).expect("inserted above");
    let i = rec.local.binary_search(&me).unwrap_or(0);
    rec.joined += 1;
    rec.parts[i] = Some((part, id));
    let last = rec.joined == rec.local.len();
    let rp = rec.procs[root as usize].0;
    let nproc = rec.procs.iter().map(|p| p.0 + 1).max().unwrap_or(1);
    let e = rec.early.as_mut().expect("a scatter's record is early");
    let mem = if e.root == Some(i) {
        let Some((Part::Scatter { parts: all, .. }, _)) = &rec.parts[i] else {
            unreachable!("the root's arguments were just put there")
        };
        // The root's counts lay out every process's chunk and every local member's block.
        let sp = spread(&rec.procs, nproc, |r| vbytes(all.get(r)));
        e.data.clear();
        e.data.resize(sp.total, 0);
        for (r, &at) in sp.at.iter().enumerate() {
            if let Some(v) = all.get(r) {
                // SAFETY: the root's blocks are valid during its call; `data` has room for
                // every block at its `Spread` offset (`pack` checks the bounds).
                unsafe { pack(v, &mut e.data, at) };
            }
        }
        e.slots.clear();
        e.slots
            .extend(rec.local.iter().map(|&r| (sp.at[r as usize], vbytes(all.get(r as usize)))));
        e.here = true;
        let p = e.data.as_mut_ptr();
        Some(CollMem {
            send: p,
            recv: p,
            bytes: sp.total,
            keep: put_lengths(&sp.per_proc),
        })
    } else if e.root.is_none() && last {
        // This process's chunk: its members' blocks in rank order, as the root packed them.
        e.slots.clear();
        let mut at = 0;
        for slot in &rec.parts {
            let n = match slot {
                Some((Part::Scatter { recv: Some(b), .. }, _)) => b.count * b.dt.size,
                _ => 0,
            };
            e.slots.push((at, n));
            at += n;
        }
        e.data.clear();
        e.data.resize(at, 0);
        let p = e.data.as_mut_ptr();
        Some(CollMem::at(p, p, at))
    } else {
        None
    };
    let uid = e.uid;
    if e.here || e.done || last {
        settle(s, key);
    }
    let Some(mem) = mem else { return Ok(()) };
    let what = RealColl::FlatScatterv { root: rp, tag: 0 };
    // SAFETY: `mem` is the record's `data`, which stays (and does not move) until the
    // operation finished (`nbrec::landed`).
    unsafe { super::real::queue_early(s, key, uid, what, mem) }
}

/// Starts this process's part of flat v-form scatter `token` at `place` of twin `comm` from
/// process `root` (`RealColl::FlatScatterv`): at the root, the send of every other process's
/// chunk (`mem.recv`, lengths in `mem.keep`); elsewhere the receive of its chunk
/// (`mem.bytes`). True: done at once (every send complete, or nothing to receive).
///
/// # Safety
/// `mem.recv` holds the bytes said until the operation completes.
pub(super) unsafe fn start(
    s: &mut State,
    comm: RComm,
    root: usize,
    place: super::real::Place,
    mem: CollMem,
    token: u64,
) -> Result<bool, String> {
    let tag = super::nbc::tree_tag(s, place);
    let under_way = if s.tp.myproc == root {
        let mut under_way = 0;
        let mut at = 0;
        for (p, n) in lengths(&mem.keep).enumerate() {
            if p != root {
                // SAFETY: process p's chunk lies inside `mem.recv`'s bytes (the lengths add
                // up to them), kept until the operation completes (the caller's contract).
                under_way += unsafe { s.tp.chunk_send(comm, p, tag, mem.recv.add(at), n, token) }?;
            }
            at += n;
        }
        under_way
    } else {
        // SAFETY: the caller's contract.
        unsafe { s.tp.chunk_recv(comm, root, tag, mem.recv, mem.bytes, token) }?
    };
    super::nbc::expect(s, token, under_way);
    Ok(under_way == 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    /// The chunks' lengths reach `start` as they were put.
    #[rstest]
    #[case(vec![])]
    #[case(vec![0, 8])]
    #[case(vec![3, 0, 1 << 21, usize::MAX])]
    fn lengths_round_trip(#[case] per: Vec<usize>) {
        assert_eq!(lengths(&put_lengths(&per)).collect::<Vec<_>>(), per);
    }
}
