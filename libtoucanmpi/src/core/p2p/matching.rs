//! Message envelopes and the per-subrank posted-receive and unexpected-message queues.
//! Matching follows MPI exactly: (context, source or ANY_SOURCE, tag or ANY_TAG), first
//! match in arrival order, so messages between a pair never overtake.

use crate::consts as c;
use crate::core::request::{ReqId, Status};
use crate::transport::Payload;

/// issue 16 (p2p10): takes the `i`th entry of a posted or unexpected queue. The first entry,
/// the common case (a receive posted in order, a message that arrived in order), is a
/// `pop_front` of a few instructions; `VecDeque::remove` is an out-of-line call of about 90
/// even at the front.
pub trait TakeAt<T> {
    fn take_at(&mut self, i: usize) -> Option<T>;
}

impl<T> TakeAt<T> for std::collections::VecDeque<T> {
    #[inline(always)]
    fn take_at(&mut self, i: usize) -> Option<T> {
        if i == 0 {
            self.pop_front()
        } else {
            self.remove(i)
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Envelope {
    pub ctx: u64,
    /// Source rank in the communicator.
    pub src: i32,
    pub tag: i32,
}

/// A posted receive (or a probe's pattern).
#[derive(Clone, Copy, Debug)]
pub struct Pattern {
    pub ctx: u64,
    pub src: i32,
    pub tag: i32,
}

impl Pattern {
    pub fn matches(&self, e: &Envelope) -> bool {
        self.ctx == e.ctx && (self.src == c::MPI_ANY_SOURCE || self.src == e.src) && (self.tag == c::MPI_ANY_TAG || self.tag == e.tag)
    }
}

pub struct Posted {
    pub pat: Pattern,
    pub req: ReqId,
}

/// A blocking receive waiting without a request (MPI_Recv's fast path): an eager message
/// that matches it, and that no earlier posted receive takes, is copied straight into its
/// buffer and leaves its status here for the parked receiver.
#[derive(Clone, Copy, Debug)]
pub struct Direct {
    pub pat: Pattern,
    pub buf: *mut u8,
    pub cap: usize,
    pub done: Option<Status>,
    /// A sender on the read side is copying the message in, outside the receiver's lock
    /// (`shared::deliver_send`): `done` is set, but the bytes are not all there yet.
    pub copying: bool,
}

/// Where an unmatched message's bytes are.
pub enum Body {
    /// Copied already (inter-process eager, or an intra-process copy).
    Eager(Payload),
    /// In the sending sibling's memory; its request completes when a receive copies it.
    Intra { sreq: ReqId, ptr: *const u8 },
    /// Still in the sending process; fetched on the data communicator with `msgid`.
    Inter { src_proc: usize, msgid: u32 },
    /// Still in the real MPI, taken off a direct communicator by a probe (`direct`).
    Real { msg: crate::transport::real::RMessage },
}

/// Who must hear that a synchronous send was matched.
#[derive(Clone, Copy, Debug)]
pub enum SyncAck {
    None,
    Intra(ReqId),
    Inter { proc: usize, sub: usize, token: u64 },
}

pub struct Unexp {
    pub env: Envelope,
    pub len: usize,
    pub body: Body,
    pub sync: SyncAck,
}

/// Index of the first posted receive matching `e`.
pub fn find_posted<'a>(q: impl Iterator<Item = &'a Posted>, e: &Envelope) -> Option<usize> {
    q.into_iter().position(|p| p.pat.matches(e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const ANY_S: i32 = c::MPI_ANY_SOURCE;
    const ANY_T: i32 = c::MPI_ANY_TAG;

    #[rstest]
    #[case(1, 2, 5, 1, 2, 5, true)]
    #[case(1, ANY_S, 5, 1, 7, 5, true)]
    #[case(1, 2, ANY_T, 1, 2, 99, true)]
    #[case(1, ANY_S, ANY_T, 1, 0, 0, true)]
    #[case(1, 2, 5, 3, 2, 5, false)]
    #[case(1, 2, 5, 1, 3, 5, false)]
    #[case(1, 2, 5, 1, 2, 6, false)]
    #[case(1, ANY_S, ANY_T, 2, 0, 0, false)]
    fn pattern_matching(
        #[case] pc: u64,
        #[case] ps: i32,
        #[case] pt: i32,
        #[case] ec: u64,
        #[case] es: i32,
        #[case] et: i32,
        #[case] want: bool,
    ) {
        let p = Pattern { ctx: pc, src: ps, tag: pt };
        assert_eq!(p.matches(&Envelope { ctx: ec, src: es, tag: et }), want);
    }
}
