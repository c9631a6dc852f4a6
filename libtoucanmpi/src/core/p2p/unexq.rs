//! A subrank's queue of unexpected messages, kept in one lane per sender (context and
//! source rank), so that a receive from one source looks only at that source's messages.
//!
//! Session 28 (issue 16): the queue was one deque in arrival order, searched from the front.
//! Senders that run ahead of their receiver fill it with many messages from several
//! sources, and a receive from a source whose messages arrived late scanned (and removed
//! from the middle of) everything in front: a loop of `MPI_Gather` at 8 B without a barrier,
//! n=2 V=4, cost 25 µs per call at 1000 calls and 370 µs at 20 000 (callgrind: 68% of the
//! root's instructions in the deque's `remove` shifting entries, 24% in the search), where
//! the queue here makes it the same per call at any length. This is the classic per-source
//! matching list (MPICH's ch4 and UCX hash their unexpected queues the same way).
//!
//! MPI's order: messages from one sender on one communicator stay in arrival order in their
//! lane (the non-overtaking rule is per sender), and a receive from any source takes, among
//! the first match of every lane, the one that arrived first (`seq`).
//!
//! Lanes are looked up by a linear scan while there are at most `LINEAR` of them (the usual
//! case: a few peers at a time) and through a hash index beyond (a root gathering from
//! thousands of ranks). An emptied lane stays while there are at most `LINEAR` (a ping-pong
//! reuses its lane and its deque's memory); beyond, it goes and its deque is kept for reuse.
//!
//! Session 29 (lane29): a message that arrives into an empty queue is kept alone (`solo`),
//! outside the lanes, until it is taken; messages behind it go to their lanes. It arrived
//! before every one of them, so a receive (or cancel) it matches takes it first, and MPI's
//! order holds. A blocking collective's messages mostly come one at a time, and such a
//! message is queued and taken without a lane look-up or a deque (callgrind, 2x4
//! MPI_Allreduce 8 B, process 1: 7547 -> 7504 instructions per iteration).

use super::matching::{Pattern, Unexp};
use crate::consts as c;
use crate::core::idmap::IdMap;
use std::collections::VecDeque;

/// Lanes up to which a lane is found by a linear scan (and emptied lanes stay).
const LINEAR: usize = 8;

/// Emptied lanes' deques kept for new lanes.
const SPARE: usize = 8;

/// `Slot::lane` of the message kept alone (`UnexpQueue::solo`).
const SOLO: usize = usize::MAX;

/// Where a message is: its lane and its place there (valid until the queue changes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    lane: usize,
    at: usize,
}

struct Lane {
    ctx: u64,
    src: i32,
    /// Messages with their arrival number, in arrival order.
    q: VecDeque<(u64, Unexp)>,
}

/// The unexpected messages of one subrank.
#[derive(Default)]
pub struct UnexpQueue {
    lanes: Vec<Lane>,
    /// Lane of each (context, source) while `lanes.len() > LINEAR`; empty otherwise.
    index: IdMap<(u64, i32), usize>,
    len: usize,
    /// Arrival number of the next message.
    seq: u64,
    spare: Vec<VecDeque<(u64, Unexp)>>,
    /// The message that arrived into an empty queue, kept outside the lanes until it is
    /// taken: it came before every message in the lanes, so a receive it matches takes it
    /// first. A collective's messages mostly come one at a time, and such a message is
    /// queued, found and taken without a lane look-up or a deque.
    solo: Option<Unexp>,
}

impl UnexpQueue {
    pub fn new() -> Self {
        Self::default()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// Every queued message (lane by lane: not in arrival order across senders).
    pub fn iter(&self) -> impl Iterator<Item = &Unexp> + '_ {
        self.solo.iter().chain(self.lanes.iter().flat_map(|l| l.q.iter().map(|(_, u)| u)))
    }

    #[inline]
    fn lane_of(&self, ctx: u64, src: i32) -> Option<usize> {
        if self.lanes.len() <= LINEAR {
            self.lanes.iter().position(|l| l.src == src && l.ctx == ctx)
        } else {
            self.index.get(&(ctx, src)).copied()
        }
    }

    /// Queues message `u` behind every earlier one from its sender.
    #[inline(always)]
    pub fn push_back(&mut self, u: Unexp) {
        if self.len == 0 {
            self.len = 1;
            self.solo = Some(u);
        } else {
            self.push_lane(u);
        }
    }

    /// Queues `u` in its sender's lane (behind the message kept alone, if any: that one came
    /// into an empty queue, before every message in the lanes).
    #[inline(never)]
    fn push_lane(&mut self, u: Unexp) {
        self.len += 1;
        let seq = self.seq;
        self.seq += 1;
        let k = match self.lane_of(u.env.ctx, u.env.src) {
            Some(k) => k,
            None => self.new_lane(u.env.ctx, u.env.src),
        };
        self.lanes[k].q.push_back((seq, u));
    }

    /// A lane for a sender that has none; its index.
    #[cold]
    fn new_lane(&mut self, ctx: u64, src: i32) -> usize {
        let q = self.spare.pop().unwrap_or_default();
        self.lanes.push(Lane { ctx, src, q });
        let k = self.lanes.len() - 1;
        if self.lanes.len() == LINEAR + 1 {
            self.index = self.lanes.iter().enumerate().map(|(i, l)| ((l.ctx, l.src), i)).collect();
        } else if self.lanes.len() > LINEAR {
            self.index.insert((ctx, src), k);
        }
        k
    }

    /// The first message (in MPI's order) that `p` matches.
    #[inline(always)]
    pub fn find(&self, p: &Pattern) -> Option<Slot> {
        if self.len == 0 {
            return None;
        }
        // The message kept alone came before every other: the first match if it matches.
        if let Some(u) = &self.solo {
            if p.matches(&u.env) {
                return Some(Slot { lane: SOLO, at: 0 });
            }
        }
        let tag_ok = |u: &Unexp| p.tag == c::MPI_ANY_TAG || p.tag == u.env.tag;
        if p.src != c::MPI_ANY_SOURCE {
            let lane = self.lane_of(p.ctx, p.src)?;
            let q = &self.lanes[lane].q;
            // The lane's first message is the usual match (the deque's iterator costs more).
            let at = match q.front() {
                Some((_, u)) if tag_ok(u) => 0,
                _ => q.iter().position(|(_, u)| tag_ok(u))?,
            };
            return Some(Slot { lane, at });
        }
        // Any source: the earliest first match among the context's lanes.
        self.earliest(|l| l.ctx == p.ctx, tag_ok)
    }

    /// The first message (in arrival order) that `f` accepts.
    pub fn find_by(&self, f: impl Fn(&Unexp) -> bool) -> Option<Slot> {
        match &self.solo {
            Some(u) if f(u) => Some(Slot { lane: SOLO, at: 0 }),
            _ => self.earliest(|_| true, f),
        }
    }

    /// Among the lanes `lane_ok` accepts, the first message of each that `f` accepts, and of
    /// those the one that arrived first.
    fn earliest(&self, lane_ok: impl Fn(&Lane) -> bool, f: impl Fn(&Unexp) -> bool) -> Option<Slot> {
        let mut best: Option<(u64, Slot)> = None;
        for (lane, l) in self.lanes.iter().enumerate().filter(|(_, l)| lane_ok(l)) {
            if let Some((at, (seq, _))) = l.q.iter().enumerate().find(|(_, (_, u))| f(u)) {
                if best.is_none_or(|(s, _)| *seq < s) {
                    best = Some((*seq, Slot { lane, at }));
                }
            }
        }
        best.map(|(_, s)| s)
    }

    /// Takes out the message at `s` (from `find`/`find_by`, the queue unchanged since).
    #[inline(always)]
    pub fn take_at(&mut self, s: Slot) -> Option<Unexp> {
        // `SOLO` is no lane's index: the lane path's bounds check finds it.
        let Some(l) = self.lanes.get_mut(s.lane) else {
            let u = if s.lane == SOLO { self.solo.take()? } else { return None };
            self.len -= 1;
            return Some(u);
        };
        let (_, u) = if s.at == 0 { l.q.pop_front()? } else { l.q.remove(s.at)? };
        self.len -= 1;
        if l.q.is_empty() && self.lanes.len() > LINEAR {
            self.drop_lane(s.lane);
        }
        Some(u)
    }

    /// Removes empty lane `k` (beyond `LINEAR` lanes), keeping its deque for reuse.
    fn drop_lane(&mut self, k: usize) {
        let gone = self.lanes.swap_remove(k);
        if self.spare.len() < SPARE {
            self.spare.push(gone.q);
        }
        if self.lanes.len() <= LINEAR {
            self.index.clear();
            return;
        }
        self.index.remove(&(gone.ctx, gone.src));
        if let Some(moved) = self.lanes.get(k) {
            self.index.insert((moved.ctx, moved.src), k);
        }
    }
}

impl std::ops::Index<Slot> for UnexpQueue {
    type Output = Unexp;
    fn index(&self, s: Slot) -> &Unexp {
        match (self.lanes.get(s.lane), &self.solo) {
            (Some(l), _) => &l.q[s.at].1,
            (None, Some(u)) if s.lane == SOLO => u,
            _ => panic!("no message at {s:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::p2p::matching::{Body, Envelope, SyncAck};
    use crate::transport::Payload;
    use rstest::rstest;

    const ANY_S: i32 = c::MPI_ANY_SOURCE;
    const ANY_T: i32 = c::MPI_ANY_TAG;

    fn msg(ctx: u64, src: i32, tag: i32, len: usize) -> Unexp {
        Unexp {
            env: Envelope { ctx, src, tag },
            len,
            body: Body::Eager(Payload::copy_of(&[])),
            sync: SyncAck::None,
        }
    }

    #[rstest]
    // One sender: arrival order, tag matching within the lane.
    #[case(&[(0, 1, 5), (0, 1, 6), (0, 1, 5)], &[(0, 1, 6), (0, 1, 5), (0, 1, ANY_T)], &[Some(1), Some(0), Some(2)])]
    // Any source takes the earliest first match across lanes.
    #[case(&[(0, 2, 1), (0, 1, 1), (0, 2, 2)], &[(0, ANY_S, 2), (0, ANY_S, ANY_T), (0, ANY_S, ANY_T)], &[Some(2), Some(0), Some(1)])]
    // Contexts apart.
    #[case(&[(1, 0, 0), (2, 0, 0)], &[(2, 0, 0), (2, ANY_S, ANY_T), (1, ANY_S, 0)], &[Some(1), None, Some(0)])]
    // A source whose messages came last is found without the others.
    #[case(&[(0, 1, 0), (0, 1, 0), (0, 2, 0)], &[(0, 2, 0), (0, 1, 0), (0, 1, 0)], &[Some(2), Some(0), Some(1)])]
    fn receives_in_mpi_order(#[case] msgs: &[(u64, i32, i32)], #[case] pats: &[(u64, i32, i32)], #[case] want: &[Option<usize>]) {
        let mut q = UnexpQueue::new();
        for (i, &(c, s, t)) in msgs.iter().enumerate() {
            q.push_back(msg(c, s, t, i));
        }
        let got: Vec<Option<usize>> = pats
            .iter()
            .map(|&(ctx, src, tag)| q.find(&Pattern { ctx, src, tag }).and_then(|s| q.take_at(s)).map(|u| u.len))
            .collect();
        assert_eq!(got, want);
        let taken = got.iter().filter(|g| g.is_some()).count();
        assert_eq!(q.len(), msgs.len() - taken);
        assert_eq!(q.iter().count(), q.len());
    }

    /// Many senders (beyond the linear lanes, through the index and back): every message
    /// comes out once, each sender's in order, and any-source receives in arrival order.
    #[rstest]
    #[case(3, 4)]
    #[case(20, 3)]
    #[case(100, 2)]
    fn many_senders(#[case] senders: i32, #[case] each: usize) {
        let mut q = UnexpQueue::new();
        let mut n = 0;
        for k in 0..each {
            for s in 0..senders {
                q.push_back(msg(7, s, k as i32, n));
                n += 1;
            }
        }
        // Sender by sender from the last, then what is left from any source.
        let mut got = Vec::new();
        for s in (0..senders).rev().step_by(2) {
            for k in 0..each {
                let slot = q
                    .find(&Pattern {
                        ctx: 7,
                        src: s,
                        tag: ANY_T,
                    })
                    .expect("queued");
                let u = q.take_at(slot).expect("taken");
                assert_eq!((u.env.src, u.env.tag), (s, k as i32));
                got.push(u.len);
            }
        }
        let mut last = None;
        while let Some(slot) = q.find(&Pattern {
            ctx: 7,
            src: ANY_S,
            tag: ANY_T,
        }) {
            let u = q.take_at(slot).expect("taken");
            assert!(last.is_none_or(|l| u.len > l), "any source in arrival order");
            last = Some(u.len);
            got.push(u.len);
        }
        got.sort_unstable();
        assert_eq!(got, (0..n).collect::<Vec<_>>());
        assert!(q.is_empty());
        // Lanes past `LINEAR` went; the index follows them.
        assert!(q.lanes.len() <= LINEAR);
        assert!(q.index.is_empty());
    }

    /// Arrivals (`Some` pattern: a receive; `None` envelope: a message) interleaved, the
    /// message kept alone (`solo`) among them: taken alone, before or after messages queued
    /// behind it in the lanes, and the queue emptied and filled again.
    #[rstest]
    // Alone: matched by its pattern only; then emptied, a new message is alone again.
    #[case(&[M(0, 1, 5), R(0, 2, 5, None), R(0, 1, 6, None), R(0, ANY_S, ANY_T, Some(0)), M(0, 2, 1), R(0, 2, ANY_T, Some(4))])]
    // A second message from another sender: the first keeps its place for any source.
    #[case(&[M(0, 3, 0), M(0, 1, 0), R(0, ANY_S, 0, Some(0)), R(0, ANY_S, 0, Some(1))])]
    // The second message from the same sender: non-overtaking.
    #[case(&[M(0, 3, 0), M(0, 3, 0), R(0, 3, 0, Some(0)), R(0, 3, ANY_T, Some(1)), R(0, 3, ANY_T, None)])]
    // Taken from behind the alone one's successor, then a third message after a take.
    #[case(&[M(0, 3, 7), M(0, 1, 0), R(0, 1, 0, Some(1)), M(0, 2, 7), R(0, ANY_S, 7, Some(0)), R(0, ANY_S, 7, Some(3))])]
    // The same sender's later messages queue behind it in their lane.
    #[case(&[M(0, 3, 0), M(0, 3, 1), M(0, 3, 0), R(0, 3, 0, Some(0)), R(0, 3, 0, Some(2)), R(0, 3, ANY_T, Some(1))])]
    // Passed over by its tag, then alone with an empty lane, then first for any source.
    #[case(&[M(0, 3, 5), M(0, 3, 6), R(0, 3, 6, Some(1)), M(0, 4, 5), R(0, ANY_S, 5, Some(0)), R(0, ANY_S, 5, Some(3))])]
    // Another context is not matched.
    #[case(&[M(4, 0, 0), R(5, 0, 0, None), R(5, ANY_S, ANY_T, None), R(4, 0, 0, Some(0))])]
    fn alone_and_after(#[case] ops: &[Op]) {
        let mut q = UnexpQueue::new();
        let mut live = 0;
        for (i, op) in ops.iter().enumerate() {
            match *op {
                M(ctx, src, tag) => {
                    q.push_back(msg(ctx, src, tag, i));
                    live += 1;
                }
                R(ctx, src, tag, want) => {
                    let got = q.find(&Pattern { ctx, src, tag });
                    assert_eq!(got.map(|s| q[s].len), want, "op {i}");
                    if let Some(s) = got {
                        assert_eq!(q.take_at(s).map(|u| u.len), want);
                        live -= 1;
                    }
                }
            }
            assert_eq!((q.len(), q.iter().count(), q.is_empty()), (live, live, live == 0), "op {i}");
        }
    }

    #[derive(Clone, Copy)]
    enum Op {
        /// A message (context, source, tag) arrives; its number is its place in the list.
        M(u64, i32, i32),
        /// A receive (context, source, tag) takes the message of that number, or none.
        R(u64, i32, i32, Option<usize>),
    }
    use Op::{M, R};

    #[test]
    fn find_by_takes_the_earliest() {
        let mut q = UnexpQueue::new();
        for (i, s) in [3, 1, 3, 1].into_iter().enumerate() {
            q.push_back(msg(0, s, 0, i));
        }
        let s = q.find_by(|u| u.len % 2 == 1).expect("found");
        assert_eq!(q.take_at(s).map(|u| u.len), Some(1));
        let s = q.find_by(|u| u.env.src == 3 && u.len > 0).expect("found");
        assert_eq!(q.take_at(s).map(|u| u.len), Some(2));
        assert!(q.find_by(|u| u.len > 10).is_none());
        // The message kept alone (every lane empty).
        while let Some(s) = q.find_by(|_| true) {
            q.take_at(s);
        }
        q.push_back(msg(0, 5, 0, 9));
        assert!(q.find_by(|u| u.len == 8).is_none());
        let s = q.find_by(|u| u.env.src == 5).expect("found");
        assert_eq!(q.take_at(s).map(|u| u.len), Some(9));
        assert!(q.is_empty());
    }
}
