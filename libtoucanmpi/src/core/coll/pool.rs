//! Spare real communicators (`coll::real`'s twins), kept for later children.
//!
//! Session 17 (coll8) gave each parent twin a pool of the real communicators made for its
//! children: a released child's goes back there, and a new child *picks* one with one 8-byte
//! real `MPI_Iallreduce` (bitwise and) of the masks of entries free on each process, at its
//! place in the parent's issue order. Picks of one pool run one at a time, in place order, so
//! slots are made in the same order with the same indices on every process.
//!
//! Session 18 (tidy9): **a pool belongs to the real communicator, not to the virtual one.**
//! Every slot of a twin's pool is a duplicate of the twin's real communicator (an idup of it),
//! so when a twin that came from a slot is released, its pool goes back into the slot with its
//! real communicator (`Slot::Free { pool }`) instead of being freed; the next child that picks
//! that slot takes the real communicator *and* its spares. A program that makes
//! `dup(world) -> split -> free -> free` per step then reuses both levels: the dup picks the
//! world's slot and gets the split's spare with it. Consistent because the pool travels whole:
//! a twin is released only when nothing waits for a turn on it (every pick of its pool
//! decided), so its pool has the same slots, in the same order, on every process; the slot it
//! goes back to is the same on every process; only which slots are free differs, which the
//! pick's mask agreement already handles. Pools live in one arena (`Pools`) under ids that are
//! never reused, so a child released after its parent finds its slot wherever the pool went.
//!
//! Bounds: at most `POOL_MAX` slots per pool (one 64-bit mask) and `SPARES_MAX` free real
//! communicators per process over all pools (the real MPI's context ids: MPICH 4.0.2 has about
//! 2000). A communicator that would go past the budget is freed and its slot becomes `Dead`
//! here (never free here again, so never picked); another process may keep its end of it as a
//! spare, counted in its own budget, until that pool goes.

use crate::core::coll::hier::CommKey;
use crate::core::coll::real::Place;
use crate::core::idmap::IdMap;
use crate::transport::real::RComm;
use std::collections::VecDeque;

/// A pool's name in `Pools` (never reused).
pub(super) type PoolId = u64;

/// Slots of one pool at most (one 64-bit mask).
pub(super) const POOL_MAX: usize = 64;
/// Free real communicators per process, over all pools, at most.
pub(super) const SPARES_MAX: usize = 256;

/// One real communicator of a pool, as seen from this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// Free here, with the pool of its own spares (if it had children).
    Free { comm: RComm, pool: Option<PoolId> },
    /// A child twin holds it.
    Held,
    /// Freed here (over the budget): never free here again.
    Dead,
}

/// One twin's spare real communicators and its children's picks.
#[derive(Default)]
pub(super) struct Pool {
    slots: Vec<Slot>,
    /// Children waiting for their pick, in place order: (the pick's place, the child).
    pub(super) queue: VecDeque<(Place, CommKey)>,
    /// A pick's allreduce runs.
    pub(super) active: bool,
}

impl Pool {
    /// The mask of the slots free here (this process's operand of a pick).
    pub(super) fn mask(&self) -> u64 {
        self.slots
            .iter()
            .enumerate()
            .fold(0, |m, (i, e)| if matches!(e, Slot::Free { .. }) { m | 1 << i } else { m })
    }
}

/// A pick's outcome.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Picked {
    /// Slot `index` (free on every process) is the child's: its real communicator and spares.
    Reuse { index: usize, comm: RComm, pool: Option<PoolId> },
    /// None is free everywhere: the child makes its real communicator, which becomes slot
    /// `index` (None: the pool is full, it is freed when released).
    Make { index: Option<usize> },
}

/// Every pool of this process.
#[derive(Default)]
pub(super) struct Pools {
    map: IdMap<PoolId, Pool>,
    next: PoolId,
    /// Free slots over all pools.
    spares: usize,
}

impl Pools {
    /// A new empty pool.
    pub(super) fn create(&mut self) -> PoolId {
        self.next += 1;
        self.map.insert(self.next, Pool::default());
        self.next
    }

    pub(super) fn get(&self, id: PoolId) -> Option<&Pool> {
        self.map.get(&id)
    }

    pub(super) fn get_mut(&mut self, id: PoolId) -> Option<&mut Pool> {
        self.map.get_mut(&id)
    }

    /// Whether a pick is queued or running in some pool (`real::settle`).
    pub(super) fn picking(&self) -> bool {
        self.map.values().any(|p| p.active || !p.queue.is_empty())
    }

    /// Pool `id`'s pick is decided: `agreed` is the and of every process's mask. The lowest
    /// slot free everywhere is taken, or a new slot is made for the child's own.
    pub(super) fn pick(&mut self, id: PoolId, agreed: u64) -> Picked {
        let Some(p) = self.map.get_mut(&id) else {
            return Picked::Make { index: None };
        };
        p.active = false;
        if agreed != 0 {
            let index = agreed.trailing_zeros() as usize;
            if let Some(&Slot::Free { comm, pool }) = p.slots.get(index) {
                p.slots[index] = Slot::Held;
                self.spares -= 1;
                return Picked::Reuse { index, comm, pool };
            }
        }
        if p.slots.len() >= POOL_MAX {
            return Picked::Make { index: None };
        }
        p.slots.push(Slot::Held);
        Picked::Make {
            index: Some(p.slots.len() - 1),
        }
    }

    /// A child that picked a slot carrying `pool` (Reuse) had queued picks of its own in
    /// `placeholder` meanwhile (made at its creation, when its real communicator was not
    /// known): they move there, in order. Returns the child's pool from now on.
    pub(super) fn adopt(&mut self, placeholder: Option<PoolId>, pool: Option<PoolId>) -> Option<PoolId> {
        let (Some(old), Some(new)) = (placeholder, pool) else {
            return pool.or(placeholder);
        };
        // No pick of the placeholder ran (the child had no real communicator): it has no slot.
        let queued = self.map.remove(&old).map(|p| p.queue).unwrap_or_default();
        if let Some(p) = self.map.get_mut(&new) {
            p.queue.extend(queued);
        }
        Some(new)
    }

    /// A twin whose real communicator is `comm` and whose pool is `pool` was released: back
    /// into slot `entry` (free here) when there is one and the budget allows; else returns
    /// what to free (`comm` and the spares of `pool`, whose other slots' holders free theirs).
    pub(super) fn release(&mut self, entry: Option<(PoolId, usize)>, comm: RComm, pool: Option<PoolId>) -> Vec<RComm> {
        let under = self.spares < SPARES_MAX;
        if let Some(slot) = entry.and_then(|(id, i)| self.map.get_mut(&id)?.slots.get_mut(i)) {
            if *slot == Slot::Held {
                if under {
                    *slot = Slot::Free { comm, pool };
                    self.spares += 1;
                    return Vec::new();
                }
                *slot = Slot::Dead;
            }
        }
        let mut out = vec![comm];
        self.destroy(pool, &mut out);
        out
    }

    /// Removes pool `id` and, depth first, the pools of its free slots; their real
    /// communicators go to `out`.
    fn destroy(&mut self, id: Option<PoolId>, out: &mut Vec<RComm>) {
        let mut stack: Vec<PoolId> = id.into_iter().collect();
        while let Some(id) = stack.pop() {
            let Some(p) = self.map.remove(&id) else { continue };
            for s in p.slots {
                if let Slot::Free { comm, pool } = s {
                    self.spares -= 1;
                    out.push(comm);
                    stack.extend(pool);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    /// `n` processes' views of one pool, grown alike: slots made by picks that found nothing.
    fn grown(n: usize, slots: usize) -> (Vec<Pools>, PoolId) {
        let mut ps: Vec<Pools> = (0..n).map(|_| Pools::default()).collect();
        let ids: Vec<PoolId> = ps.iter_mut().map(Pools::create).collect();
        assert!(ids.iter().all(|&i| i == ids[0]));
        for k in 0..slots {
            for p in ps.iter_mut() {
                assert_eq!(p.pick(ids[0], 0), Picked::Make { index: Some(k) });
            }
        }
        (ps, ids[0])
    }

    fn reuse(index: usize, comm: RComm, pool: Option<PoolId>) -> Picked {
        Picked::Reuse { index, comm, pool }
    }

    /// A pick as the real allreduce makes it: every process's mask, and-reduced.
    fn agree(ps: &mut [Pools], id: PoolId) -> Vec<Picked> {
        let m = ps.iter_mut().fold(!0, |m, p| m & p.get_mut(id).map_or(0, |q| q.mask()));
        ps.iter_mut().map(|p| p.pick(id, m)).collect()
    }

    #[rstest]
    // Slots released on every process: the lowest is taken.
    #[case(vec![vec![0, 1, 2], vec![0, 1, 2]], Some(0))]
    // Released at different times: only one free everywhere counts.
    #[case(vec![vec![0, 2], vec![1, 2]], Some(2))]
    #[case(vec![vec![3], vec![0, 1, 2, 3], vec![3, 1]], Some(3))]
    // Nothing free everywhere: every process makes a new slot (index 4).
    #[case(vec![vec![0, 1], vec![2, 3]], None)]
    #[case(vec![vec![], vec![0, 1, 2, 3]], None)]
    fn picks_agree(#[case] freed: Vec<Vec<usize>>, #[case] want: Option<usize>) {
        let (mut ps, id) = grown(freed.len(), 4);
        for (p, f) in ps.iter_mut().zip(&freed) {
            for &i in f.iter() {
                assert!(p.release(Some((id, i)), 100 + i as RComm, None).is_empty());
            }
        }
        let got = agree(&mut ps, id);
        for g in &got {
            match want {
                Some(i) => assert_eq!(
                    *g,
                    Picked::Reuse {
                        index: i,
                        comm: 100 + i as RComm,
                        pool: None
                    }
                ),
                None => assert_eq!(*g, Picked::Make { index: Some(4) }),
            }
        }
        // What stays free here: what was, but the one taken.
        for (p, f) in ps.iter_mut().zip(&freed) {
            let left = f.iter().filter(|&&i| Some(i) != want).fold(0u64, |m, &i| m | 1 << i);
            assert_eq!(p.get_mut(id).unwrap().mask(), left);
        }
    }

    #[test]
    fn a_pool_travels_with_its_communicator() {
        // World's pool W; child D took slot 0 of W and made a pool P with one slot (its
        // child S's). S then D are released: D's communicator goes back to W's slot with P.
        let mut ps = Pools::default();
        let w = ps.create();
        assert_eq!(ps.pick(w, 0), Picked::Make { index: Some(0) });
        let p = ps.create();
        assert_eq!(ps.pick(p, 0), Picked::Make { index: Some(0) });
        assert!(ps.release(Some((p, 0)), 21, None).is_empty());
        assert!(ps.release(Some((w, 0)), 11, Some(p)).is_empty());
        assert_eq!(ps.spares, 2);
        // The next dup picks W's slot 0 and gets P; the next split picks P's slot 0.
        assert_eq!(ps.pick(w, 1), reuse(0, 11, Some(p)));
        assert_eq!(ps.pick(p, 1), reuse(0, 21, None));
        assert_eq!(ps.spares, 0);
    }

    #[test]
    fn a_child_outliving_its_parent_goes_back_to_the_moved_pool() {
        let mut ps = Pools::default();
        let w = ps.create();
        ps.pick(w, 0);
        let p = ps.create();
        ps.pick(p, 0);
        // D released while S still holds P's slot 0.
        assert!(ps.release(Some((w, 0)), 11, Some(p)).is_empty());
        assert_eq!(ps.pick(w, 1), reuse(0, 11, Some(p)));
        // S released now: its slot in P, wherever P is.
        assert!(ps.release(Some((p, 0)), 21, None).is_empty());
        assert_eq!(ps.get_mut(p).unwrap().mask(), 1);
    }

    #[test]
    fn a_pool_freed_with_an_unpooled_twin_frees_its_spares_once() {
        let mut ps = Pools::default();
        let p = ps.create();
        ps.pick(p, 0);
        ps.pick(p, 0);
        let q = ps.create();
        ps.pick(q, 0);
        assert!(ps.release(Some((q, 0)), 31, None).is_empty());
        assert!(ps.release(Some((p, 0)), 21, Some(q)).is_empty());
        // Slot 1 of P still held by a child when P's owner (no slot of its own) goes.
        let mut freed = ps.release(None, 11, Some(p));
        freed.sort();
        assert_eq!(freed, vec![11, 21, 31]);
        assert_eq!(ps.spares, 0);
        // The child holding P's slot 1 frees its own when released.
        assert_eq!(ps.release(Some((p, 1)), 22, None), vec![22]);
    }

    #[test]
    fn over_the_budget_a_slot_dies_here() {
        let mut ps = Pools::default();
        let p = ps.create();
        for _ in 0..POOL_MAX {
            ps.pick(p, 0);
        }
        assert_eq!(ps.pick(p, 0), Picked::Make { index: None });
        ps.spares = SPARES_MAX - 1;
        assert!(ps.release(Some((p, 0)), 1, None).is_empty());
        assert_eq!(ps.release(Some((p, 1)), 2, None), vec![2]);
        // Dead: never offered again, not even when another process offers it.
        assert_eq!(ps.get_mut(p).unwrap().mask(), 1);
        assert_eq!(ps.pick(p, 2), Picked::Make { index: None });
    }

    #[test]
    fn picks_queued_before_the_communicator_was_known_move_to_its_pool() {
        let mut ps = Pools::default();
        let carried = ps.create();
        let placeholder = ps.create();
        ps.get_mut(placeholder).unwrap().queue.push_back(((7, 0), (1, 0, 2)));
        assert_eq!(ps.adopt(Some(placeholder), Some(carried)), Some(carried));
        assert!(ps.get_mut(placeholder).is_none());
        assert_eq!(ps.get_mut(carried).unwrap().queue.len(), 1);
        assert_eq!(ps.adopt(Some(placeholder), None), Some(placeholder));
        assert_eq!(ps.adopt(None, Some(carried)), Some(carried));
    }
}
