//! Inter-communicators: creation from two intra-communicators, merging, and queries.
//! Point-to-point on them works like on any communicator (ranks name the remote group);
//! their collectives are in `core::coll::inter`.

use super::consts as c;
use super::handles::{self as hd, comm, put};
use crate::core::coll::{Buf, Coll};
use crate::core::comm::{derive_ctx, CommRef, Group};
use crate::core::datatype;
use crate::core::error::{err, MpiResult};
use crate::core::p2p::blocking::{irecv, isend, wait};
use crate::core::p2p::SendMode;
use crate::core::state;
use std::os::raw::c_int;
use std::sync::Arc;

fn hash_ranks(r: &[u32]) -> u64 {
    r.iter()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, &x| (h ^ x as u64).wrapping_mul(0x100_0000_01b3))
}

/// Exchanges `mine` with `peer` of `cm` on context `ctx`; returns what the peer sent.
///
/// # Safety
/// Called by a running subrank (blocks).
unsafe fn swap_ints(sub: usize, cm: &CommRef, h: usize, ctx: u64, peer: i32, tag: i32, mine: &[i32]) -> MpiResult<Vec<i32>> {
    let int = datatype::lookup(c::MPI_INT)?;
    let mut n = [mine.len() as i32];
    let mut m = [0i32];
    let r = irecv(sub, h, ctx, m.as_mut_ptr() as *mut u8, 1, &int, peer, tag)?;
    let s = isend(sub, cm, h, ctx, n.as_mut_ptr() as *const u8, 1, &int, peer, tag, SendMode::Standard)?;
    wait(s)?;
    wait(r)?;
    let mut theirs = vec![0i32; m[0].max(0) as usize];
    let r = irecv(sub, h, ctx, theirs.as_mut_ptr() as *mut u8, theirs.len(), &int, peer, tag)?;
    let s = isend(
        sub,
        cm,
        h,
        ctx,
        mine.as_ptr() as *const u8,
        mine.len(),
        &int,
        peer,
        tag,
        SendMode::Standard,
    )?;
    wait(s)?;
    wait(r)?;
    Ok(theirs)
}

/// Broadcasts a vector of ints from `root` over the intra-communicator view `cm`.
unsafe fn bcast_ints(coll: &Coll, root: i32, v: &mut Vec<i32>) -> MpiResult<()> {
    let int = datatype::lookup(c::MPI_INT)?;
    let mut n = [v.len() as i32];
    coll.bcast(&Buf::new(n.as_mut_ptr() as *mut u8, 1, int.clone()), root)?;
    v.resize(n[0].max(0) as usize, 0);
    coll.bcast(&Buf::new(v.as_mut_ptr() as *mut u8, v.len(), int), root)
}

fn add(sub: usize, cm: CommRef) -> MpiResult<usize> {
    state::with(|s| {
        let t = &mut s.locals[sub].comms;
        t.push(Some(cm));
        hd::comm_handle(t.len() - 1)
    })
}

mpi_fn!(
    MPI_Intercomm_create,
    PMPI_Intercomm_create,
    |local_h: usize, local_leader: c_int, peer_h: usize, remote_leader: c_int, tag: c_int, out: *mut usize| errcomm = local_h,
    {
        let (sub, lc) = comm(local_h)?;
        if lc.is_inter() {
            return err(c::MPI_ERR_COMM, "the local communicator must be an intra-communicator");
        }
        if !(0..lc.size()).contains(&local_leader) {
            return err(
                c::MPI_ERR_RANK,
                format!("invalid local leader {local_leader} (communicator size {})", lc.size()),
            );
        }
        // Checked by every member, so that a bad tag fails everywhere instead of leaving the
        // others waiting for their leader.
        hd::send_tag(tag)?;
        if out.is_null() {
            return err(c::MPI_ERR_ARG, "null newintercomm pointer");
        }
        let coll = Coll::new(sub, &lc, local_h)?;
        let mut remote: Vec<i32> = Vec::new();
        if lc.rank == local_leader {
            let (_, pc) = comm(peer_h)?;
            hd::dest(&pc, remote_leader)?;
            hd::send_tag(tag)?;
            let mine: Vec<i32> = lc.group.ranks.iter().map(|&w| w as i32).collect();
            remote = swap_ints(sub, &pc, peer_h, pc.ctx, remote_leader, tag, &mine)?;
        }
        bcast_ints(&coll, local_leader, &mut remote)?;
        let remote: Vec<u32> = remote.iter().map(|&w| w as u32).collect();
        if remote.iter().any(|w| lc.group.rank_of(*w).is_some()) {
            return err(c::MPI_ERR_COMM, "the two groups of an inter-communicator must be disjoint");
        }
        // Both sides derive the same context: the groups in a canonical order, the tag, and how
        // many such inter-communicators this rank made before.
        let (a, b) = if lc.group.ranks[0] < remote[0] {
            (&lc.group.ranks, &remote)
        } else {
            (&remote, &lc.group.ranks)
        };
        let key = hash_ranks(a).rotate_left(17) ^ hash_ranks(b);
        let n = state::with(|s| {
            let e = s.locals[sub].group_creations.entry((key, 0x1c, tag)).or_insert(0);
            *e += 1;
            *e
        })?;
        let mut ic = CommRef::new(derive_ctx(key, n, tag as i64), lc.group.clone(), lc.rank, "");
        ic.remote = Some(Arc::new(Group::new(remote)));
        ic.errhandler = lc.errhandler;
        put(out, add(sub, ic)?, "newintercomm")
    }
);

mpi_fn!(
    MPI_Intercomm_merge,
    PMPI_Intercomm_merge,
    |inter_h: usize, high: c_int, out: *mut usize| errcomm = inter_h,
    {
        let (sub, ic) = comm(inter_h)?;
        let Some(remote) = ic.remote.clone() else {
            return err(c::MPI_ERR_COMM, "MPI_Intercomm_merge needs an inter-communicator");
        };
        if out.is_null() {
            return err(c::MPI_ERR_ARG, "null newintracomm pointer");
        }
        let theirs = Coll::new(sub, &ic, inter_h)?.swap_remote(&[(high != 0) as i32])?;
        let (mine_high, their_high) = (high != 0, theirs.first().copied().unwrap_or(0) != 0);
        let local_first = if mine_high != their_high {
            !mine_high
        } else {
            ic.group.ranks[0] < remote.ranks[0]
        };
        let mut ranks = Vec::with_capacity(ic.group.size() + remote.size());
        if local_first {
            ranks.extend(&ic.group.ranks);
            ranks.extend(&remote.ranks);
        } else {
            ranks.extend(&remote.ranks);
            ranks.extend(&ic.group.ranks);
        }
        let me = state::with(|s| s.locals[sub].world_rank)?;
        let rank = ranks.iter().position(|&w| w == me).expect("a member of its own group") as i32;
        let seq = super::comm::next_seq(sub, inter_h)?;
        let mut m = CommRef::new(derive_ctx(ic.ctx, seq, 0x4d45), Arc::new(Group::new(ranks)), rank, "");
        m.errhandler = ic.errhandler;
        put(out, add(sub, m)?, "newintracomm")
    }
);

mpi_fn!(
    MPI_Comm_test_inter,
    PMPI_Comm_test_inter,
    |h: usize, flag: *mut c_int| errcomm = h,
    {
        let (_, cm) = comm(h)?;
        put(flag, cm.is_inter() as c_int, "flag")
    }
);

mpi_fn!(
    MPI_Comm_remote_size,
    PMPI_Comm_remote_size,
    |h: usize, size: *mut c_int| errcomm = h,
    {
        let (_, cm) = comm(h)?;
        let Some(r) = cm.remote.as_ref() else {
            return err(c::MPI_ERR_COMM, "not an inter-communicator");
        };
        put(size, r.size() as c_int, "size")
    }
);

mpi_fn!(
    MPI_Comm_remote_group,
    PMPI_Comm_remote_group,
    |h: usize, g: *mut usize| errcomm = h,
    {
        let (sub, cm) = comm(h)?;
        let Some(r) = cm.remote.as_ref() else {
            return err(c::MPI_ERR_COMM, "not an inter-communicator");
        };
        hd::out(g, "group")?;
        put(g, super::group::add_group(sub, r.ranks.clone())?, "group")
    }
);
