//! red30 (issue 16): a small real Reduce as a binomial tree of real point-to-point messages
//! toward the root's process, in place of the real MPI's `MPI_Ireduce` schedule on the twin.
//!
//! Served: `RealColl::Reduce` of at most `nbc::SMALL_MAX` bytes, a predefined operation on a
//! type of `nbc::RD_TYPES` (`nbc::small_reduction`, as the recursive-doubling Allreduce), at
//! any number of processes from 2, unless `TOUCAN_NBC_RD=off`. Decided from the operation and
//! the process count only, so every process of the call decides alike (the two-level
//! records, the V=1 nonblocking calls, persistent rounds and the blocking calls' helper steps
//! all start their real operation through `real::start_real`).
//!
//! The tree is MPICH's binomial one (`MPIR_Ireduce_intra_sched_binomial`, which MPICH 4.0.2's
//! `MPI_Ireduce` takes up to 2 KiB on a communicator of one node): process `me` at rank `rel`
//! relative to the root's process receives the partial result of the subtree of each child
//! `rel + 2^k` (for every 2^k below `rel`'s lowest set bit), folds them into its operand in
//! order of increasing `k` (`acc = child op acc`, as MPICH's `MPIR_Reduce_local(tmp, recv)`),
//! and sends the result to its parent. The same association, so the same bits for floating
//! point sums as the real MPI's schedule gave. Every child's receive is posted at the start
//! (each into a slot of its own); the fold waits for all of them (`nbc::expect`).

use crate::core::coll::nbc::{self, expect, small_reduction, tree_tag};
use crate::core::coll::op::{apply, OpKind};
use crate::core::coll::real;
use crate::core::datatype::basic::BasicType;
use crate::core::state::State;
use crate::transport::collp2p::{tree_children, tree_parent};
use crate::transport::real::RComm;
use crate::transport::{CollMem, RealColl};

/// A tree reduction under way (`nbc::Tracked::red`, by token).
pub(super) struct TreeRed {
    pub(super) key: real::CommKey,
    comm: RComm,
    tag: i32,
    op: OpKind,
    ty: BasicType,
    count: usize,
    /// Where this process's subtree's result goes (None: this is the root's process).
    parent: Option<usize>,
    /// The children's partial results, one slot of `count` elements each, smallest subtree
    /// first (the order they are folded in).
    slots: Vec<u8>,
    /// The accumulator, when it is neither the result buffer nor a buffer of ours in `mem`.
    own: Vec<u8>,
    mem: CollMem,
    /// The send to the parent is under way: its completion ends the operation.
    sending: bool,
}

impl TreeRed {
    /// The accumulator: the root's result buffer, this process's operand when it lies in a
    /// buffer of ours, else `own` (a copy of it).
    fn acc(&mut self) -> *mut u8 {
        if self.own.is_empty() {
            self.mem.recv
        } else {
            self.own.as_mut_ptr()
        }
    }
}

/// The tree form of real operation `what`: (root's process, operation, type, elements).
fn tree_kind(s: &State, what: &RealColl) -> Option<(usize, OpKind, BasicType, usize)> {
    let RealColl::Reduce { root, op, ty, count } = *what else {
        return None;
    };
    if s.tp.nproc < 2 || !nbc::rd_enabled() {
        return None;
    }
    let (op, ty) = small_reduction(op, ty, count)?;
    Some((root, op, ty, count))
}

/// Starts real operation `token` (`what` over `mem`, at `place` of twin `comm`) as a tree
/// when it has that form (`tree_kind`); gives `mem` back otherwise (nothing done). Ok(true):
/// done at once (a leaf whose send completed).
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
    let Some((root, op, ty, count)) = tree_kind(s, what) else {
        return Err(mem);
    };
    let (me, n) = (s.tp.myproc, s.tp.nproc);
    let len = count * ty.size();
    let tag = tree_tag(s, place);
    let parent = tree_parent(me, root, n);
    let mut kids: Vec<usize> = tree_children(me, root, n).collect();
    kids.reverse();
    // The operand: `send`, or in place at `recv`.
    let operand = if mem.send.is_null() { mem.recv as *const u8 } else { mem.send };
    // The operation's state (`TreeRed`): a leaf's while its send is under way, an inner
    // node's while it awaits its children.
    let node = |slots, own, mem, sending| TreeRed {
        key,
        comm,
        tag,
        op,
        ty,
        count,
        parent,
        slots,
        own,
        mem,
        sending,
    };
    if kids.is_empty() {
        let Some(p) = parent else { return Ok(Ok(true)) };
        // A leaf: its operand straight to its parent.
        // SAFETY: the operand holds `len` bytes until the operation completes (the caller's
        // contract, or `mem.keep`, kept below while the send is under way).
        let sent = unsafe { s.tp.coll_send(comm, p, tag, operand, len, token) };
        return Ok(match sent {
            Ok(false) => Ok(true),
            Ok(true) => {
                s.rcoll.tree.red.insert(token, node(Vec::new(), Vec::new(), mem, true));
                Ok(false)
            }
            Err(e) => Err(e),
        });
    }
    let ours = !mem.keep.is_empty() && std::ptr::eq(mem.recv, mem.keep.as_ptr()) && mem.send.is_null();
    let own = if parent.is_none() {
        if !mem.send.is_null() {
            // SAFETY: the operand and the root's result buffer hold `len` bytes each and do
            // not overlap (not in place).
            unsafe { std::ptr::copy_nonoverlapping(mem.send, mem.recv, len) };
        }
        Vec::new()
    } else if ours {
        Vec::new()
    } else {
        // SAFETY: the operand holds `len` bytes (the caller's contract).
        unsafe { std::slice::from_raw_parts(operand, len) }.to_vec()
    };
    let mut t = node(vec![0u8; kids.len() * len], own, mem, false);
    for (i, &c) in kids.iter().enumerate() {
        // SAFETY: slot i of `t.slots`, a heap block that stays put in `t` until the operation
        // completes (the map below keeps it).
        let posted = unsafe { s.tp.chunk_recv(comm, c, tag, t.slots.as_mut_ptr().add(i * len), len, token) };
        if let Err(e) = posted {
            return Ok(Err(e));
        }
    }
    expect(s, token, kids.len() as u32);
    s.rcoll.tree.red.insert(token, t);
    Ok(Ok(false))
}

/// A real request of operation `token` finished (`nbc::on_step`, once every receive of its
/// step did): for a tree reduction, folds the children's results and sends to the parent
/// (None: that send is under way), or gives the buffer back when done; any other operation's
/// `buf` passes through.
pub(super) fn step(s: &mut State, token: u64, buf: Vec<u8>) -> Option<Vec<u8>> {
    if s.rcoll.tree.red.is_empty() {
        return Some(buf);
    }
    let Some(mut t) = s.rcoll.tree.red.remove(&token) else {
        return Some(buf);
    };
    if !t.sending {
        let len = t.count * t.ty.size();
        let acc = t.acc();
        for i in 0..t.slots.len() / len {
            // SAFETY: slot i holds child i's `count` elements; the accumulator holds this
            // process's (the root's result buffer, valid until the request completes, or
            // ours); they do not overlap. Every process folds in the same order.
            unsafe { apply(t.op, t.ty, t.slots.as_ptr().add(i * len), acc, t.count) };
        }
        if let Some(p) = t.parent {
            // SAFETY: the accumulator lives in `t` (or is the caller's memory, valid until
            // the request completes) until the send completed.
            let sent = unsafe { s.tp.coll_send(t.comm, p, t.tag, acc, len, token) };
            match sent {
                Ok(false) => {}
                Ok(true) => {
                    t.sending = true;
                    s.rcoll.tree.red.insert(token, t);
                    return None;
                }
                Err(e) => crate::core::diag::fatal(&format!("real collective: {e}")),
            }
        }
    }
    let keep = std::mem::take(&mut t.mem.keep);
    real::release_if_unused(s, t.key);
    Some(keep)
}

/// Whether a tree reduction still sends on twin `key` (`nbc::busy`).
pub(super) fn busy(s: &State, key: real::CommKey) -> bool {
    s.rcoll.tree.red.values().any(|t| t.key == key)
}

#[cfg(test)]
mod tests {
    use crate::transport::collp2p::{tree_children, tree_parent};
    use rstest::rstest;

    /// Plays the tree with sums of distinct powers of two for each process count and root:
    /// every process's operand reaches the root exactly once, and the association is
    /// MPICH's binomial one (children folded in order of increasing subtree, child first).
    #[rstest]
    #[case(2, 0)]
    #[case(2, 1)]
    #[case(3, 1)]
    #[case(5, 4)]
    #[case(6, 2)]
    #[case(8, 0)]
    #[case(9, 5)]
    fn tree_matches_mpich_binomial(#[case] n: usize, #[case] root: usize) {
        // Ours: each process folds its children (smallest subtree first) into its operand.
        fn ours(p: usize, root: usize, n: usize) -> String {
            let mut kids: Vec<usize> = tree_children(p, root, n).collect();
            kids.reverse();
            kids.into_iter()
                .fold(p.to_string(), |acc, c| format!("({}+{acc})", ours(c, root, n)))
        }
        // MPICH's MPIR_Reduce_intra_binomial for a commutative operation.
        fn mpich(rank: usize, root: usize, n: usize) -> String {
            let rel = (rank + n - root) % n;
            let mut acc = rank.to_string();
            let mut mask = 1;
            while mask < n {
                if mask & rel == 0 {
                    let src = rel | mask;
                    if src < n {
                        acc = format!("({}+{acc})", mpich((src + root) % n, root, n));
                    }
                } else {
                    break;
                }
                mask <<= 1;
            }
            acc
        }
        assert_eq!(ours(root, root, n), mpich(root, root, n));
        for p in 0..n {
            if p != root {
                assert!(tree_parent(p, root, n).is_some());
            }
        }
    }
}
