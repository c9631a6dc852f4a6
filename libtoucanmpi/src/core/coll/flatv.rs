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

use crate::core::coll::team::View;
use crate::core::state::State;
use crate::transport::real::RComm;
use crate::transport::CollMem;

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
pub(super) fn put_messages(msgs: &[(usize, From, usize)], data: *const u8) -> Vec<u8> {
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
