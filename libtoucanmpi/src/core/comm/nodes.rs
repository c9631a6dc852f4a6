//! Where the members of a group live (the two-level collectives' view, `coll::hier`): built
//! once per group and kept with it (`Group::nodes`).

use crate::core::comm::Group;
use std::collections::HashMap;
use std::sync::Arc;

/// Where the members of a group live, as seen from this process.
#[derive(Debug, PartialEq)]
pub struct NodeMap {
    /// Communicator ranks on this process, ascending.
    pub local: Vec<i32>,
    /// The lowest communicator rank of every process holding members, ordered by it.
    pub reps: Arc<[i32]>,
    /// For each communicator rank, its process's index in `reps`.
    pub owner: Vec<u32>,
    /// The process of each entry of `reps`.
    pub procs: Vec<usize>,
    /// This process's index in `reps`.
    pub me: usize,
    /// Each process holds a contiguous block of ranks.
    pub contiguous: bool,
}

impl NodeMap {
    /// The map of `group` (world ranks) for process `myproc`, `locate` giving the process of
    /// a world rank.
    pub fn build(group: &Group, myproc: usize, locate: impl Fn(u32) -> usize) -> NodeMap {
        let mut index: HashMap<usize, u32> = HashMap::new();
        let mut reps = Vec::new();
        let mut procs = Vec::new();
        let mut owner = Vec::with_capacity(group.size());
        let mut local = Vec::new();
        let mut contiguous = true;
        for (r, &w) in group.ranks.iter().enumerate() {
            let p = locate(w);
            let i = *index.entry(p).or_insert_with(|| {
                reps.push(r as i32);
                procs.push(p);
                (reps.len() - 1) as u32
            });
            if let Some(&prev) = owner.last() {
                contiguous &= i == prev || (i == prev + 1 && i as usize == reps.len() - 1);
            }
            owner.push(i);
            if p == myproc {
                local.push(r as i32);
            }
        }
        let me = index.get(&myproc).map_or(0, |&i| i as usize);
        NodeMap {
            local,
            reps: reps.into(),
            procs,
            owner,
            me,
            contiguous,
        }
    }

    /// Whether some process holds several members (otherwise two levels are one).
    pub fn shared(&self) -> bool {
        self.reps.len() < self.owner.len()
    }

    /// The representatives when `root` must represent its own process.
    pub(crate) fn reps_with(&self, root: i32) -> Arc<[i32]> {
        let mut v = self.reps.to_vec();
        v[self.owner[root as usize] as usize] = root;
        v.into()
    }

    /// The process holding communicator rank `r`.
    pub(crate) fn proc_of(&self, r: i32) -> usize {
        self.procs[self.owner[r as usize] as usize]
    }

    /// This process's representative when `root` represents its own process.
    pub(crate) fn my_rep(&self, root: i32) -> i32 {
        if self.owner[root as usize] as usize == self.me {
            root
        } else {
            self.local[0]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn map(ranks: &[u32], v: usize, myproc: usize) -> NodeMap {
        NodeMap::build(&Group::new(ranks.to_vec()), myproc, |w| w as usize / v)
    }

    #[rstest]
    // world of 8 as 2 processes x 4
    #[case(&[0, 1, 2, 3, 4, 5, 6, 7], 4, 1, &[4, 5, 6, 7], &[0, 4], true, true)]
    // one rank per process: nothing shared
    #[case(&[0, 4], 4, 0, &[0], &[0, 1], true, false)]
    // interleaved ranks: processes not contiguous in rank order
    #[case(&[0, 4, 1, 5], 4, 0, &[0, 2], &[0, 1], false, true)]
    // a single process
    #[case(&[2, 3], 4, 0, &[0, 1], &[0], true, true)]
    fn builds(
        #[case] ranks: &[u32],
        #[case] v: usize,
        #[case] me: usize,
        #[case] local: &[i32],
        #[case] reps: &[i32],
        #[case] contiguous: bool,
        #[case] shared: bool,
    ) {
        let m = map(ranks, v, me);
        assert_eq!(m.local, local);
        assert_eq!(&*m.reps, reps);
        assert_eq!(m.contiguous, contiguous);
        assert_eq!(m.shared(), shared);
    }

    #[test]
    fn root_represents_its_process() {
        let m = map(&[0, 1, 2, 3, 4, 5, 6, 7], 4, 1);
        assert_eq!(&*m.reps_with(6), &[0, 6]);
        assert_eq!(m.my_rep(6), 6);
        assert_eq!(m.my_rep(2), 4);
    }
}
