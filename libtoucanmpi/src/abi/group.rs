//! Group constructors and comparisons, and communicators made from groups.

use super::consts as c;
use super::handles::{self as hd, comm, put};
use crate::core::coll::Coll;
use crate::core::comm::{derive_ctx, CommRef, Group, GROUP_HANDLE_BASE};
use crate::core::error::{err, MpiError, MpiResult};
use crate::core::state;
use std::os::raw::c_int;
use std::sync::Arc;

/// The group a handle names (MPI_GROUP_EMPTY included).
pub fn group(h: usize) -> MpiResult<(usize, Arc<Group>)> {
    let sub = hd::me()?;
    if h == c::MPI_GROUP_EMPTY {
        return Ok((sub, Arc::new(Group::new(vec![]))));
    }
    if h == c::MPI_GROUP_NULL {
        return err(c::MPI_ERR_GROUP, "MPI_GROUP_NULL is not a valid group");
    }
    let g = state::with(|s| hd::group_index(h).and_then(|i| s.locals[sub].groups.get(i).cloned().flatten()))?;
    g.map(|g| (sub, g))
        .ok_or_else(|| MpiError::new(c::MPI_ERR_GROUP, format!("invalid group handle {h:#x} (freed?)")))
}

/// Adds a group to the subrank's table (an empty group is MPI_GROUP_EMPTY).
pub fn add_group(sub: usize, ranks: Vec<u32>) -> MpiResult<usize> {
    if ranks.is_empty() {
        return Ok(c::MPI_GROUP_EMPTY);
    }
    state::with(|s| {
        let t = &mut s.locals[sub].groups;
        t.push(Some(Arc::new(Group::new(ranks))));
        GROUP_HANDLE_BASE + t.len() - 1
    })
}

fn hash_ranks(r: &[u32]) -> u64 {
    r.iter()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, &x| (h ^ x as u64).wrapping_mul(0x100_0000_01b3))
}

/// Distinct in-range ranks of `g`, from a C array.
unsafe fn rank_list(g: &Group, n: c_int, p: *const c_int) -> MpiResult<Vec<usize>> {
    let n = array_len(n)?;
    let v = hd::ints(p, n)?;
    let mut seen = vec![false; g.size()];
    let mut out = Vec::with_capacity(n);
    for &r in v {
        if r < 0 || r as usize >= g.size() {
            return err(c::MPI_ERR_RANK, format!("rank {r} is not in the group (size {})", g.size()));
        }
        if std::mem::replace(&mut seen[r as usize], true) {
            return err(c::MPI_ERR_RANK, format!("rank {r} appears twice"));
        }
        out.push(r as usize);
    }
    Ok(out)
}

/// Ranks named by (first, last, stride) triplets.
/// The length of an array argument (MPI_ERR_ARG when negative).
fn array_len(n: c_int) -> MpiResult<usize> {
    usize::try_from(n).map_err(|_| MpiError::new(c::MPI_ERR_ARG, format!("negative array length {n}")))
}

unsafe fn range_list(g: &Group, n: c_int, p: *const [c_int; 3]) -> MpiResult<Vec<usize>> {
    let n = array_len(n)?;
    if n > 0 && p.is_null() {
        return err(c::MPI_ERR_ARG, "null ranges array");
    }
    let mut seen = vec![false; g.size()];
    let mut out = Vec::new();
    for i in 0..n {
        let [first, last, stride] = *p.add(i);
        if stride == 0 {
            return err(c::MPI_ERR_ARG, "range stride 0");
        }
        let mut r = first;
        while (stride > 0 && r <= last) || (stride < 0 && r >= last) {
            if r < 0 || r as usize >= g.size() {
                return err(c::MPI_ERR_RANK, format!("rank {r} is not in the group (size {})", g.size()));
            }
            if std::mem::replace(&mut seen[r as usize], true) {
                return err(c::MPI_ERR_RANK, format!("rank {r} appears twice"));
            }
            out.push(r as usize);
            r += stride;
        }
    }
    Ok(out)
}

mpi_fn!(
    MPI_Group_incl,
    PMPI_Group_incl,
    |h: usize, n: c_int, ranks: *const c_int, out: *mut usize| errcomm = c::MPI_COMM_WORLD,
    {
        let (sub, g) = group(h)?;
        let l = rank_list(&g, n, ranks)?;
        hd::out(out, "newgroup")?;
        put(out, add_group(sub, l.iter().map(|&r| g.ranks[r]).collect())?, "newgroup")
    }
);

mpi_fn!(
    MPI_Group_excl,
    PMPI_Group_excl,
    |h: usize, n: c_int, ranks: *const c_int, out: *mut usize| errcomm = c::MPI_COMM_WORLD,
    {
        let (sub, g) = group(h)?;
        let l = rank_list(&g, n, ranks)?;
        hd::out(out, "newgroup")?;
        put(
            out,
            add_group(sub, (0..g.size()).filter(|r| !l.contains(r)).map(|r| g.ranks[r]).collect())?,
            "newgroup",
        )
    }
);

mpi_fn!(
    MPI_Group_range_incl,
    PMPI_Group_range_incl,
    |h: usize, n: c_int, ranges: *const [c_int; 3], out: *mut usize| errcomm = c::MPI_COMM_WORLD,
    {
        let (sub, g) = group(h)?;
        let l = range_list(&g, n, ranges)?;
        hd::out(out, "newgroup")?;
        put(out, add_group(sub, l.iter().map(|&r| g.ranks[r]).collect())?, "newgroup")
    }
);

mpi_fn!(
    MPI_Group_range_excl,
    PMPI_Group_range_excl,
    |h: usize, n: c_int, ranges: *const [c_int; 3], out: *mut usize| errcomm = c::MPI_COMM_WORLD,
    {
        let (sub, g) = group(h)?;
        let l = range_list(&g, n, ranges)?;
        hd::out(out, "newgroup")?;
        put(
            out,
            add_group(sub, (0..g.size()).filter(|r| !l.contains(r)).map(|r| g.ranks[r]).collect())?,
            "newgroup",
        )
    }
);

fn set_op(a: usize, b: usize, out: *mut usize, f: impl Fn(&Group, &Group) -> Vec<u32>) -> MpiResult<()> {
    let (sub, ga) = group(a)?;
    let (_, gb) = group(b)?;
    if out.is_null() {
        return err(c::MPI_ERR_ARG, "null output group");
    }
    let h = add_group(sub, f(&ga, &gb))?;
    // SAFETY: checked non-null; the caller passes a writable MPI_Group.
    unsafe { *out = h };
    Ok(())
}

mpi_fn!(
    MPI_Group_union,
    PMPI_Group_union,
    |a: usize, b: usize, out: *mut usize| errcomm = c::MPI_COMM_WORLD,
    {
        set_op(a, b, out, |x, y| {
            let mut v = x.ranks.clone();
            v.extend(y.ranks.iter().filter(|r| !x.ranks.contains(r)));
            v
        })
    }
);

mpi_fn!(
    MPI_Group_intersection,
    PMPI_Group_intersection,
    |a: usize, b: usize, out: *mut usize| errcomm = c::MPI_COMM_WORLD,
    { set_op(a, b, out, |x, y| x.ranks.iter().copied().filter(|r| y.ranks.contains(r)).collect()) }
);

mpi_fn!(
    MPI_Group_difference,
    PMPI_Group_difference,
    |a: usize, b: usize, out: *mut usize| errcomm = c::MPI_COMM_WORLD,
    { set_op(a, b, out, |x, y| x.ranks.iter().copied().filter(|r| !y.ranks.contains(r)).collect()) }
);

mpi_fn!(
    MPI_Group_compare,
    PMPI_Group_compare,
    |a: usize, b: usize, result: *mut c_int| errcomm = c::MPI_COMM_WORLD,
    {
        let (_, ga) = group(a)?;
        let (_, gb) = group(b)?;
        let (mut x, mut y) = (ga.ranks.clone(), gb.ranks.clone());
        let r = if ga.ranks == gb.ranks {
            c::MPI_IDENT
        } else {
            x.sort_unstable();
            y.sort_unstable();
            if x == y {
                c::MPI_SIMILAR
            } else {
                c::MPI_UNEQUAL
            }
        };
        put(result, r, "result")
    }
);

/// Registers a new communicator over `ranks` (with remote group `remote` for an
/// inter-communicator) for this subrank, or returns MPI_COMM_NULL when it is not a member.
fn make_comm(sub: usize, parent: &CommRef, ctx: u64, ranks: Vec<u32>, remote: Option<Vec<u32>>) -> MpiResult<usize> {
    let me = state::with(|s| s.locals[sub].world_rank)?;
    let Some(rank) = ranks.iter().position(|&w| w == me) else {
        return Ok(c::MPI_COMM_NULL);
    };
    let mut n = CommRef::new(ctx, Arc::new(Group::new(ranks)), rank as i32, "");
    n.errhandler = parent.errhandler;
    n.remote = remote.map(|r| Arc::new(Group::new(r)));
    state::with(|s| {
        let t = &mut s.locals[sub].comms;
        t.push(Some(n));
        hd::comm_handle(t.len() - 1)
    })
}

/// Every world rank of `g` must be in the (local) group of `parent`.
fn check_subset(parent: &CommRef, g: &Group) -> MpiResult<()> {
    if let Some(w) = g.ranks.iter().find(|w| parent.group.rank_of(**w).is_none()) {
        return err(c::MPI_ERR_GROUP, format!("world rank {w} of the group is not in the communicator"));
    }
    Ok(())
}

/// MPI_Comm_create on an inter-communicator: each side names a subset of its own group, the
/// leaders swap them, and the result joins the two subsets (MPI_COMM_NULL for a rank outside
/// its side's subset, and for everyone when either subset is empty).
fn create_inter(sub: usize, comm_h: usize, cm: &CommRef, g: &Group) -> MpiResult<usize> {
    let seq = super::comm::next_seq(sub, comm_h)?;
    let mine: Vec<i32> = g.ranks.iter().map(|&w| w as i32).collect();
    // SAFETY: a blocking collective on buffers it owns.
    let theirs: Vec<u32> = unsafe { Coll::new(sub, cm, comm_h)?.swap_remote(&mine)? }
        .into_iter()
        .map(|w| w as u32)
        .collect();
    if theirs.is_empty() {
        return Ok(c::MPI_COMM_NULL);
    }
    // Both sides derive the same context: the hash of the two subsets does not depend on which
    // side is local.
    let ctx = derive_ctx(cm.ctx, seq, (hash_ranks(&g.ranks) ^ hash_ranks(&theirs)) as i64);
    make_comm(sub, cm, ctx, g.ranks.clone(), Some(theirs))
}

mpi_fn!(
    MPI_Comm_create,
    PMPI_Comm_create,
    |comm_h: usize, gh: usize, newcomm: *mut usize| errcomm = comm_h,
    {
        let (sub, cm) = comm(comm_h)?;
        let (_, g) = group(gh)?;
        check_subset(&cm, &g)?;
        hd::out(newcomm, "newcomm")?;
        if cm.is_inter() {
            return put(newcomm, create_inter(sub, comm_h, &cm, &g)?, "newcomm");
        }
        let seq = super::comm::next_seq(sub, comm_h)?;
        let ctx = derive_ctx(cm.ctx, seq, hash_ranks(&g.ranks) as i64);
        put(newcomm, make_comm(sub, &cm, ctx, g.ranks.clone(), None)?, "newcomm")
    }
);

mpi_fn!(
    MPI_Comm_create_group,
    PMPI_Comm_create_group,
    |comm_h: usize, gh: usize, tag: c_int, newcomm: *mut usize| errcomm = comm_h,
    {
        let (sub, cm) = comm(comm_h)?;
        if cm.is_inter() {
            return err(c::MPI_ERR_COMM, "MPI_Comm_create_group needs an intra-communicator");
        }
        let (_, g) = group(gh)?;
        check_subset(&cm, &g)?;
        hd::send_tag(tag)?;
        hd::out(newcomm, "newcomm")?;
        // Only the group's members call this, so the parent's creation counter cannot be used:
        // count calls per (parent, group, tag) instead, which the members see in the same order.
        let key = (cm.ctx, hash_ranks(&g.ranks), tag);
        let n = state::with(|s| {
            let e = s.locals[sub].group_creations.entry(key).or_insert(0);
            *e += 1;
            *e
        })?;
        let ctx = derive_ctx(cm.ctx ^ 0x5a5a_5a5a_0000_0000, n, (key.1 ^ tag as u64) as i64);
        put(newcomm, make_comm(sub, &cm, ctx, g.ranks.clone(), None)?, "newcomm")
    }
);
