//! red30 (session 30, issue 16): a small equal-block Gather between processes as flat real
//! messages to the root's process (`start`), in place of MPICH's `MPI_Igather` schedule on the
//! communicator's twin; the records (`nbrec`) and V=1 calls reach it through
//! `real::start_real`. Moved out of `nbc` (which passed 900 lines) at the lead's review.

use crate::core::coll::nbc::{expect, tree_tag};
use crate::core::coll::real;
use crate::core::state::State;
use crate::transport::real::RComm;
use crate::transport::{CollMem, RealColl};

/// Largest block per process (a record's members' blocks together) of a Gather sent as one
/// real message to the root's process (`start`); larger ones keep MPICH's
/// `MPI_Igather`. The records serve Gather up to `nbrec::ROOTED_MAX` per rank.
const FLAT_GATHER_MAX: usize = 16 * 1024;

/// A flat gather's memory, kept until its messages are done (`Tracked::flat`).
pub(super) struct Flat {
    pub(super) key: real::CommKey,
    mem: CollMem,
}

/// Starts real operation `token` (`what` over `mem`, at `place` of twin `comm`) as flat
/// messages when it is a Gather of 1 to `FLAT_GATHER_MAX` bytes per process and
/// `TOUCAN_NBC_TREE_MAX` is not 0 (the scatter tree's switch: decided from `what` and the
/// environment, alike everywhere): each other process sends its block to the root's process
/// (`coll_send`, with the call's `tree_tag`), which receives each into its place of the result
/// buffer (the own block copied in unless in place); gives `mem` back otherwise. Ok(true):
/// done at once (a sender whose send completed).
///
/// # Safety
/// As `Transport::start_coll`: the memory `mem` names outside `mem.keep` stays valid until
/// the operation completes.
pub(super) unsafe fn start(
    s: &mut State,
    key: real::CommKey,
    comm: RComm,
    what: &RealColl,
    mem: CollMem,
    token: u64,
    place: real::Place,
) -> Result<Result<bool, String>, CollMem> {
    let RealColl::Gather { root, bytes } = *what else { return Err(mem) };
    let n = s.tp.nproc;
    if n < 2 || bytes == 0 || bytes > FLAT_GATHER_MAX || crate::core::runtime::config().nbc_tree_max == 0 {
        return Err(mem);
    }
    let (me, tag) = (s.tp.myproc, tree_tag(s, place));
    let pending = if me == root {
        if !mem.send.is_null() {
            // SAFETY: the own block and its place in the result buffer (`n` blocks), which do
            // not overlap (not in place).
            unsafe { std::ptr::copy_nonoverlapping(mem.send, mem.recv.add(me * bytes), bytes) };
        }
        let mut posted = 0;
        for p in (0..n).filter(|&p| p != me) {
            // SAFETY: block p of the result buffer, valid until the operation completes (the
            // caller's, or `mem.keep`, kept in `Tracked::flat` below).
            match unsafe { s.tp.chunk_recv(comm, p, tag, mem.recv.add(p * bytes), bytes, token) } {
                Ok(k) => posted += k,
                Err(e) => return Ok(Err(e)),
            }
        }
        posted
    } else {
        let from = if mem.send.is_null() { mem.recv as *const u8 } else { mem.send };
        // SAFETY: this process's block, valid until the operation completes (as above).
        match unsafe { s.tp.coll_send(comm, root, tag, from, bytes, token) } {
            Ok(under_way) => u32::from(under_way),
            Err(e) => return Ok(Err(e)),
        }
    };
    if pending == 0 {
        return Ok(Ok(true));
    }
    expect(s, token, pending);
    s.rcoll.tree.flat.insert(token, Flat { key, mem });
    Ok(Ok(false))
}

/// A flat gather's last message is done (`nbc::on_step`): its result buffer (ours, when the
/// operation owns it) goes back; any other operation's `buf` passes through.
pub(super) fn done(s: &mut State, token: u64, buf: Vec<u8>) -> Vec<u8> {
    if s.rcoll.tree.flat.is_empty() {
        return buf;
    }
    let Some(mut f) = s.rcoll.tree.flat.remove(&token) else {
        return buf;
    };
    let keep = std::mem::take(&mut f.mem.keep);
    real::release_if_unused(s, f.key);
    keep
}
