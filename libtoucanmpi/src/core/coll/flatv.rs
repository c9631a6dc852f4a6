//! The v-form rooted collectives on the two-level records as flat real point-to-point
//! messages between the root's process and every other process (session 29's Iscatterv,
//! `vscatter`; session 30's Igatherv, `vgather`): what both directions share.
//!
//! Each message goes between the root's process and one other process, so only those two
//! need agree on its length, and both know it (MPI's rule: the root's count for a rank is
//! that rank's own). A process's chunk of `SPLIT_MIN` bytes or more goes as one message per
//! non-empty block, in rank order, so that each block leaves and lands where the program
//! keeps it (contiguous types); below, one message of the whole chunk. A message above
//! `collp2p::P2P_MAX` goes as several, in order on the same tag (`Transport::chunk_send`,
//! `chunk_recv`). The messages' places ride in `CollMem::keep` (`put_messages`) to `start`.

use super::nbrec::Early;
use super::nbrecv::vbytes;
use crate::core::coll::hier::CommKey;
use crate::core::coll::team::{Blocks, View};
use crate::core::error::MpiResult;
use crate::core::state::State;
use crate::transport::real::RComm;
use crate::transport::{CollMem, RealColl};

/// Whether a v-form rooted record goes as flat real messages: unless
/// `TOUCAN_NBC_TREE_MAX=0` (no collectives as real point-to-point messages; the same on every
/// process), which keeps the real `MPI_Iscatterv` / `MPI_Igatherv` started at the last
/// member's join (`nbrecv::combine`).
pub(super) fn flat() -> bool {
    crate::core::runtime::config().nbc_tree_max > 0
}

/// Bytes of a process's chunk from which its members' blocks go as one real message each
/// (rank order, empty ones left out) rather than one message for the whole chunk: each block
/// then goes from the sender's buffer (a contiguous send type) and lands in the receiver's
/// (a contiguous receive type), where a chunk's message is packed at one end and unpacked at
/// the other. Both ends decide from the chunk's length and the blocks' lengths, which both
/// know. Callgrind at 2x4, 64 KiB blocks (IMB's loop, per iteration): see
/// docs/collectives.md, "Session 29 (vscat29)".
pub(super) const SPLIT_MIN: usize = 16 << 10;

/// Where one message's bytes are: at an offset of the record's `data` (its final address is
/// known once `data` is complete), or at an address of the program's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum From {
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

/// The root's messages to or from every other process with a non-empty chunk (peer process,
/// where, bytes), in process order, each process's blocks in rank order, from the root's
/// blocks `all` (`procs`: each rank's process and index there; `rp`: the root's process):
/// from `SPLIT_MIN` one per non-empty block, at the block where its type is contiguous; below
/// it one per process, at the blocks where they lie back to back. Any other block makes its
/// place at the end of `data` (`into_data(rank, block, data)` appends its bytes: packed for a
/// send, room for a receive), `data` cleared first.
pub(super) fn root_messages(
    procs: &[(usize, usize)],
    all: &Blocks,
    rp: usize,
    data: &mut Vec<u8>,
    mut into_data: impl FnMut(usize, View<'_>, &mut Vec<u8>),
) -> Vec<(usize, From, usize)> {
    let nproc = procs.iter().map(|p| p.0 + 1).max().unwrap_or(1);
    let sp = super::nbrecv::spread(procs, nproc, |r| vbytes(all.get(r)));
    let mut ranks: Vec<Vec<usize>> = vec![Vec::new(); nproc];
    for (r, &(p, _)) in procs.iter().enumerate() {
        ranks[p].push(r);
    }
    data.clear();
    let mut msgs = Vec::new();
    for (p, rs) in ranks.iter().enumerate() {
        let len = sp.per_proc[p];
        if p == rp || len == 0 {
            continue;
        }
        let blocks = || {
            rs.iter()
                .filter_map(|&r| all.get(r).map(|v| (r, v)))
                .filter(|(_, v)| vbytes(Some(*v)) > 0)
        };
        if len >= SPLIT_MIN {
            for (r, v) in blocks() {
                let from = if v.dt.is_contiguous() {
                    From::At(v.ptr as usize)
                } else {
                    let at = data.len();
                    into_data(r, v, data);
                    From::Data(at)
                };
                msgs.push((p, from, vbytes(Some(v))));
            }
        } else if let Some(a) = back_to_back(blocks().map(|(_, v)| v)) {
            msgs.push((p, From::At(a), len));
        } else {
            msgs.push((p, From::Data(data.len()), len));
            for (r, v) in blocks() {
                into_data(r, v, data);
            }
        }
    }
    msgs
}

/// The address of the first of blocks `views` when they lie back to back in memory, of a
/// contiguous type (empty ones anywhere), else None.
pub(super) fn back_to_back<'a>(views: impl Iterator<Item = View<'a>>) -> Option<usize> {
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

/// What a flat v-form join (`vscatter::join_in`, `vgather::join_in`) leaves to `launch`
/// once record part `e` holds its messages `msgs` (None: this join starts nothing; `last`:
/// it is the last local member's): whether the record is to settle (a member may complete),
/// and the real operation's start, its record's uid and memory, the messages' places resolved
/// against `data`, which is final now (it does not change until the record goes).
#[inline(always)]
pub(super) fn resolve(e: &mut Early, msgs: Option<Vec<(usize, From, usize)>>, last: bool) -> (bool, Option<(u64, CollMem)>) {
    let settle_now = e.here || e.done || last;
    let start = msgs.map(|m| {
        let p = e.data.as_mut_ptr();
        let mem = CollMem {
            send: p,
            recv: p,
            bytes: e.data.len(),
            keep: put_messages(&m, p),
        };
        (e.uid, mem)
    });
    (settle_now, start)
}

/// The end of a flat v-form join, under the state lock: settles record `key` when
/// `settle_now` (a member may complete), then queues real operation `what` at the call's
/// place with `start` (`resolve`).
///
/// # Safety
/// The messages' places are the record's `data`, which stays (and does not move) until the
/// operation finished (`nbrec::landed`), or the program's buffers of members whose requests
/// complete after that.
#[inline(always)]
pub(super) unsafe fn launch(
    s: &mut State,
    key: (CommKey, u64),
    settle_now: bool,
    start: Option<(u64, CollMem)>,
    what: RealColl,
) -> MpiResult<()> {
    if settle_now {
        super::nbrec::settle(s, key);
    }
    let Some((uid, mem)) = start else { return Ok(()) };
    // SAFETY: the caller's contract.
    unsafe { super::real::queue_early(s, key, uid, what, mem) }
}

/// Starts this process's part of flat v-form operation `token` at `place` of twin `comm`
/// (`RealColl::FlatScatterv`, `FlatGatherv`): the messages in `mem.keep` (`put_messages`),
/// sent when `sends` (a scatter's root, a gather's other processes), else received. True:
/// done at once (every send complete, or nothing to receive).
///
/// # Safety
/// The messages' bytes stay valid (readable when sending, writable when receiving) until the
/// operation completes.
pub(super) unsafe fn start(
    s: &mut State,
    comm: RComm,
    sends: bool,
    place: super::real::Place,
    mem: CollMem,
    token: u64,
) -> Result<bool, String> {
    let tag = super::nbc::tree_tag(s, place);
    let mut under_way = 0;
    for (p, at, n) in messages(&mem.keep) {
        // SAFETY: the caller's contract.
        under_way += unsafe {
            if sends {
                s.tp.chunk_send(comm, p, tag, at as *const u8, n, token)
            } else {
                s.tp.chunk_recv(comm, p, tag, at as *mut u8, n, token)
            }
        }?;
    }
    super::nbc::expect(s, token, under_way);
    Ok(under_way == 0)
}

/// For the tests of `vscatter` and `vgather`: a block at `p` of `ints` ints, or (None) of one
/// vector of two ints with a hole (8 bytes, extent 12).
#[cfg(test)]
pub(super) fn test_block(p: *mut i32, ints: Option<usize>) -> crate::core::coll::Buf {
    let int = crate::core::datatype::lookup(crate::consts::MPI_INT).expect("MPI_INT");
    match ints {
        Some(n) => crate::core::coll::Buf::new(p as *mut u8, n, int),
        None => {
            let vec2 = crate::core::datatype::typemap::hvector(2, 1, 8, &int).expect("vector");
            crate::core::coll::Buf::new(p as *mut u8, 1, std::sync::Arc::new(vec2))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

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
