//! Groups and communicators. A communicator handle is local to one subrank (each rank owns
//! its handles, error handler and name); members of one communicator share its group and
//! context id.

pub mod nodes;

use crate::consts as c;
use std::sync::{Arc, OnceLock};

/// An ordered set of world ranks.
#[derive(Debug)]
pub struct Group {
    pub ranks: Vec<u32>,
    /// Where its members live (`nodes::NodeMap`), made at its first two-level collective.
    pub nodes: OnceLock<Arc<nodes::NodeMap>>,
}

/// Groups are equal when their ranks are (the node map is derived from them).
impl PartialEq for Group {
    fn eq(&self, o: &Group) -> bool {
        self.ranks == o.ranks
    }
}

impl Eq for Group {}

impl Group {
    pub fn new(ranks: Vec<u32>) -> Group {
        Group {
            ranks,
            nodes: OnceLock::new(),
        }
    }
    pub fn size(&self) -> usize {
        self.ranks.len()
    }
    /// Rank in this group of world rank `w`.
    pub fn rank_of(&self, w: u32) -> Option<usize> {
        self.ranks.iter().position(|&r| r == w)
    }
}

/// Context ids: the low bit separates point-to-point (0) from collective (1) traffic.
pub const CTX_WORLD: u64 = 0x10;
pub const CTX_SELF: u64 = 0x20;
pub const CTX_COLL: u64 = 1;

/// Context id of a communicator derived from `parent` by its members' `seq`-th collective
/// creation call, for members with `color`. Every member computes the same value without
/// communicating; distinct (parent, seq, color) give distinct ids except with probability
/// about 2^-63 per pair.
pub fn derive_ctx(parent: u64, seq: u64, color: i64) -> u64 {
    let x = parent ^ seq.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (color as u64).wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    (crate::core::idmap::mix64(x) & !CTX_COLL) | 0x100
}

/// One subrank's view of a communicator.
#[derive(Clone, Debug)]
pub struct CommRef {
    pub ctx: u64,
    pub group: Arc<Group>,
    /// This subrank's rank in it.
    pub rank: i32,
    pub errhandler: usize,
    /// Communicators created from this one so far (collectively, so members agree).
    pub seq: u64,
    /// Collective calls made on it so far (members agree: collectives are called in order);
    /// each call's messages carry its number in their tag, so overlapping nonblocking
    /// collectives never match each other's messages.
    pub coll_seq: u64,
    pub name: Arc<str>,
    /// The remote group of an inter-communicator (point-to-point ranks name its members).
    pub remote: Option<Arc<Group>>,
    /// Its shared-memory team, once looked up (`core::team`).
    pub team: TeamCell,
}

/// Whether a communicator's members meet in shared memory (`core::team`): not looked up
/// yet, no (they span processes), or their team.
#[derive(Clone, Debug, Default)]
pub enum TeamCell {
    #[default]
    Unknown,
    Absent,
    Here(Arc<super::coll::team::Team>),
}

impl CommRef {
    pub fn new(ctx: u64, group: Arc<Group>, rank: i32, name: &str) -> CommRef {
        CommRef {
            ctx,
            group,
            rank,
            errhandler: c::MPI_ERRORS_ARE_FATAL,
            seq: 0,
            coll_seq: 0,
            name: name.into(),
            remote: None,
            team: TeamCell::Unknown,
        }
    }
    pub fn size(&self) -> i32 {
        self.group.size() as i32
    }
    /// World rank of the peer with rank `r` (in the remote group of an inter-communicator).
    pub fn world_of(&self, r: i32) -> u32 {
        self.peers().ranks[r as usize]
    }
    /// The group point-to-point ranks refer to.
    pub fn peers(&self) -> &Group {
        self.remote.as_deref().unwrap_or(&self.group)
    }
    /// Number of valid destination ranks.
    pub fn peer_size(&self) -> i32 {
        self.peers().size() as i32
    }
    pub fn is_inter(&self) -> bool {
        self.remote.is_some()
    }
    /// Context for traffic among the local group of an inter-communicator (never the same
    /// as its own context, which carries traffic between the two groups).
    pub fn local_ctx(&self) -> u64 {
        derive_ctx(self.ctx, u64::MAX, -7)
    }
}

/// Handle values: predefined ones are the ABI's; ours start above them.
pub const COMM_HANDLE_BASE: usize = 0x10000;
/// (Communicator handles fill the range below: slots are not reused, so it must be wide.)
pub const GROUP_HANDLE_BASE: usize = 0x1000_0000;

/// Index of a communicator handle in a subrank's table.
#[inline]
pub fn comm_index(h: usize) -> Option<usize> {
    match h {
        c::MPI_COMM_WORLD => Some(0),
        c::MPI_COMM_SELF => Some(1),
        _ if (COMM_HANDLE_BASE + 2..GROUP_HANDLE_BASE).contains(&h) => Some(h - COMM_HANDLE_BASE),
        _ => None,
    }
}

pub fn comm_handle(idx: usize) -> usize {
    match idx {
        0 => c::MPI_COMM_WORLD,
        1 => c::MPI_COMM_SELF,
        i => COMM_HANDLE_BASE + i,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case(CTX_WORLD, 0, 0)]
    #[case(CTX_WORLD, 1, 0)]
    #[case(CTX_WORLD, 0, 1)]
    #[case(CTX_SELF, 0, 0)]
    fn derived_contexts_are_pt2pt_and_distinct(#[case] p: u64, #[case] s: u64, #[case] col: i64) {
        let x = derive_ctx(p, s, col);
        assert_eq!(x & CTX_COLL, 0);
        assert_ne!(x, CTX_WORLD);
        assert_ne!(x, CTX_SELF);
        assert_eq!(x, derive_ctx(p, s, col));
    }

    #[test]
    fn many_derivations_do_not_collide() {
        let mut v: Vec<u64> = (0..64).flat_map(|s| (-4..64).map(move |c| derive_ctx(CTX_WORLD, s, c))).collect();
        let n = v.len();
        v.sort();
        v.dedup();
        assert_eq!(v.len(), n);
    }

    #[test]
    fn group_rank_of() {
        let g = Group::new(vec![5, 3, 9]);
        assert_eq!(g.rank_of(9), Some(2));
        assert_eq!(g.rank_of(4), None);
    }
}
