//! What one process tells the deadlock detector (`deadlock`), and the job-wide verdict.
//!
//! Every control message sent must have arrived (job-wide counts agree), and every process
//! must be idle: all its subranks parked, and the real MPI holding nothing that is in
//! flight. Two kinds of real request can wait for ever and so do not count as in flight when
//! the job-wide view shows they cannot finish:
//! - a rendezvous payload send, which completes only when its receiver matches the header
//!   that already arrived: stuck when, job-wide, no more payload sends are outstanding than
//!   rendezvous headers wait unmatched in receivers' queues (none of them was matched);
//! - a real collective (`coll::real`), which completes only when every process started it:
//!   every twin spans all processes, so the n-th operation on a twin is stuck while some
//!   process started fewer than n operations on it. Each process reports, per twin, how
//!   many it started and the number of its earliest one still running.

use super::state::State;
use crate::core::idmap::IdMap;

/// Message kind of a status answer (the first word).
pub const STATUS: i64 = 2;

/// Fixed words of a status answer, before the per-twin triples.
const FIXED: usize = 9;

/// One process's answer to a wave.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// All subranks parked and nothing but payload sends and real collectives outstanding.
    pub idle: bool,
    /// Control messages sent and received.
    pub sent: i64,
    pub recvd: i64,
    /// Rendezvous payload sends outstanding in the real MPI.
    pub payloads: i64,
    /// Rendezvous headers received and not matched by any receive.
    pub unmatched: i64,
    /// Real collectives outstanding.
    pub colls: i64,
    /// Per twin: (key hash, operations started, earliest still running or 0); None when the
    /// process has too many twins to tell.
    pub twins: Option<Vec<(u64, u64, u64)>>,
}

impl Snapshot {
    pub fn of(s: &State) -> Snapshot {
        let k = s.tp.pending_kinds();
        Snapshot {
            // File accesses in flight on the I/O thread (issue 19) will wake a subrank.
            idle: !k.other && crate::core::io::ioq::pending() == 0,
            // Direct messages (`p2p::direct`) too: a receive cannot outrun its send on either
            // path, so the two sums agree only when both paths' do.
            sent: (s.tp.ctrl_sent + s.tp.direct_sent) as i64,
            recvd: (s.tp.ctrl_recvd + s.tp.direct_recvd) as i64,
            payloads: k.payloads as i64,
            unmatched: unmatched_headers(s) as i64,
            // Blocking real collectives made outside the transport count too (`coll::solo`).
            colls: (k.colls + crate::core::coll::solo::calls()) as i64,
            twins: super::coll::real::detector_view(s),
        }
    }

    /// The status answer to wave `epoch`.
    pub fn words(&self, epoch: i64) -> Vec<i64> {
        let mut w = vec![
            STATUS,
            epoch,
            self.idle as i64,
            self.sent,
            self.recvd,
            self.payloads,
            self.unmatched,
            self.colls,
            self.twins.as_ref().map_or(-1, |t| t.len() as i64),
        ];
        for &(key, started, earliest) in self.twins.iter().flatten() {
            w.extend([key as i64, started as i64, earliest as i64]);
        }
        w
    }

    /// Reads a status answer; None when it is malformed.
    pub fn from_words(m: &[i64]) -> Option<Snapshot> {
        if m.len() < FIXED || m[0] != STATUS {
            return None;
        }
        let twins = match usize::try_from(m[8]) {
            Ok(n) if m.len() == FIXED + 3 * n => Some(
                m[FIXED..]
                    .chunks_exact(3)
                    .map(|t| (t[0] as u64, t[1] as u64, t[2] as u64))
                    .collect(),
            ),
            Ok(_) => return None,
            Err(_) => None,
        };
        Some(Snapshot {
            idle: m[2] == 1,
            sent: m[3],
            recvd: m[4],
            payloads: m[5],
            unmatched: m[6],
            colls: m[7],
            twins,
        })
    }
}

/// Rendezvous headers waiting in this process's queues (unexpected, or taken by
/// `MPI_Mprobe` and not received yet).
fn unmatched_headers(s: &State) -> usize {
    let inter = |u: &&super::p2p::matching::Unexp| matches!(u.body, super::p2p::matching::Body::Inter { .. });
    s.locals
        .iter()
        .map(|l| l.unexpected.iter().filter(inter).count() + l.messages.values().filter(inter).count())
        .sum()
}

/// What must come back unchanged from two consecutive waves to call a deadlock.
pub type Key = (i64, i64, i64, i64, i64, u64);

/// The job-wide verdict of a complete wave: `Some(key)` when nothing that is outstanding
/// can ever finish (see the module text).
pub fn verdict(replies: &[Snapshot]) -> Option<Key> {
    let sum = |f: fn(&Snapshot) -> i64| replies.iter().map(f).sum::<i64>();
    let (sent, recvd, payloads, unmatched, colls) = (
        sum(|r| r.sent),
        sum(|r| r.recvd),
        sum(|r| r.payloads),
        sum(|r| r.unmatched),
        sum(|r| r.colls),
    );
    if !(replies.iter().all(|r| r.idle) && sent == recvd && payloads <= unmatched) {
        return None;
    }
    let mut fingerprint = 0u64;
    if colls > 0 {
        fingerprint = collectives_stuck(replies)?;
    }
    Some((sent, recvd, payloads, unmatched, colls, fingerprint))
}

/// Whether every running real collective waits for a process that never started it; then a
/// fingerprint of the twins' state (Some), else None.
fn collectives_stuck(replies: &[Snapshot]) -> Option<u64> {
    // The fewest operations any process started on each twin (a process that does not
    // report a twin sets no bound).
    let mut fewest: IdMap<u64, u64> = IdMap::default();
    for r in replies {
        for &(key, started, _) in r.twins.as_ref()? {
            let f = fewest.entry(key).or_insert(u64::MAX);
            *f = (*f).min(started);
        }
    }
    let mut fingerprint = 0u64;
    for r in replies {
        for &(key, started, earliest) in r.twins.as_ref()? {
            if earliest != 0 && fewest[&key] >= earliest {
                // Every process started it: it is on its way.
                return None;
            }
            fingerprint =
                fingerprint.wrapping_add(key.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ started.rotate_left(17) ^ earliest.rotate_left(41));
        }
    }
    Some(fingerprint)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn snap(idle: bool, sent: i64, recvd: i64, payloads: i64, unmatched: i64) -> Snapshot {
        Snapshot {
            idle,
            sent,
            recvd,
            payloads,
            unmatched,
            colls: 0,
            twins: Some(Vec::new()),
        }
    }

    fn colls(n: i64, twins: &[(u64, u64, u64)]) -> Snapshot {
        Snapshot {
            colls: n,
            twins: Some(twins.to_vec()),
            ..snap(true, 0, 0, 0, 0)
        }
    }

    #[rstest]
    // Everyone idle, every control message arrived, nothing outstanding.
    #[case::receive_cycle(vec![snap(true, 3, 2, 0, 0), snap(true, 2, 3, 0, 0)], true)]
    // A control message is still on its way.
    #[case::message_in_flight(vec![snap(true, 3, 2, 0, 0), snap(true, 2, 2, 0, 0)], false)]
    // A process computes or has a transfer in flight.
    #[case::busy(vec![snap(false, 1, 1, 0, 0), snap(true, 1, 1, 0, 0)], false)]
    // Head-to-head large sends: both payloads wait for receivers that never match.
    #[case::unmatched_large_sends(vec![snap(true, 1, 1, 1, 1), snap(true, 1, 1, 1, 1)], true)]
    // A payload send whose header was matched: its transfer is about to complete.
    #[case::matched_large_send(vec![snap(true, 1, 0, 1, 0), snap(true, 0, 1, 0, 0)], false)]
    // The real MPI finished one payload early (eager below its own threshold): still stuck.
    #[case::payload_finished_early(vec![snap(true, 2, 2, 1, 1), snap(true, 2, 2, 0, 1)], true)]
    // Process 0 started a real Allreduce (the 3rd on the world twin) that process 1 never
    // starts: stuck.
    #[case::collective_never_joined(vec![colls(1, &[(7, 3, 3)]), colls(0, &[(7, 2, 0)])], true)]
    // Both started it, one finished already: on its way.
    #[case::collective_running(vec![colls(1, &[(7, 3, 3)]), colls(0, &[(7, 3, 0)])], false)]
    // Running on both.
    #[case::collective_running_everywhere(vec![colls(1, &[(7, 3, 3)]), colls(1, &[(7, 3, 3)])], false)]
    // One twin stuck, another's operation still on its way: not yet.
    #[case::one_stuck_one_running(vec![colls(2, &[(7, 3, 3), (9, 1, 1)]), colls(1, &[(7, 2, 0), (9, 1, 1)])], false)]
    // A process that released the twin (it reports no bound) and one that has it running.
    #[case::released_twin(vec![colls(1, &[(7, u64::MAX, 4)]), colls(0, &[])], false)]
    // A process with too many twins to tell: no verdict.
    #[case::overflow(vec![colls(1, &[(7, 3, 3)]), Snapshot { twins: None, ..colls(0, &[]) }], false)]
    fn verdicts(#[case] replies: Vec<Snapshot>, #[case] deadlocked: bool) {
        assert_eq!(verdict(&replies).is_some(), deadlocked);
    }

    #[rstest]
    #[case::plain(snap(true, 5, 6, 7, 8))]
    #[case::twins(colls(2, &[(u64::MAX - 3, 4, 2), (11, 0, 0)]))]
    #[case::too_many(Snapshot { twins: None, ..colls(1, &[]) })]
    fn words_round_trip(#[case] s: Snapshot) {
        let w = s.words(3);
        assert_eq!(w[1], 3);
        assert_eq!(Snapshot::from_words(&w), Some(s));
    }

    #[test]
    fn malformed_words_are_refused() {
        assert_eq!(Snapshot::from_words(&[STATUS, 1, 1]), None);
        let mut w = colls(1, &[(1, 1, 1)]).words(1);
        w.pop();
        assert_eq!(Snapshot::from_words(&w), None);
    }
}
