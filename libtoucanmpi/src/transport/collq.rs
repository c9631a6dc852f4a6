//! Session 29 (issue 16): the collectives' point-to-point messages (`collp2p`: the broadcast
//! and scatter trees, the recursive doublings of `core::coll::nbc`) between two processes of
//! one node go through the node's shared-memory queue (`shmq`), as the point-to-point
//! control messages do, instead of the real MPI.
//!
//! Why: at 2x4 a small nonblocking collective's real receive cost the waiting process about
//! 2300 instructions (MPICH's `MPI_Irecv` ~650, UCX's queue ~500, a `MPI_Testsome` ~1100 per
//! poll, UCX comparing it with the ring's wildcard receives ~290; callgrind, session 28),
//! where a message of the node queue costs a poll ~50 and its send one copy into a cell.
//!
//! What names a message: the job-wide name of its real communicator (`chan`), the sending
//! process and the tag (the call's place on the twin), as the real MPI matches (communicator,
//! source, tag). A real communicator's name is the same on every process without talking:
//! the real world's collective duplicate is `WORLD_CHAN`; every other one the collectives use
//! is a real `MPI_Comm_idup` of a named one (`RealColl::Dup`), and a communicator's idups
//! start in the same order on every process (MPI's rule for collectives), so the n-th idup of
//! communicator `c` is named `child(c, n)` everywhere. A communicator without a name (none
//! made otherwise is used here) keeps the real MPI.
//!
//! Matching: a receive takes the earliest unexpected message of its (name, source, tag), or
//! waits in `posted`; an arrival completes the earliest posted receive of its triple, or
//! waits in `unexp`. One sender's messages keep their order in its queue, which is all MPI's
//! non-overtaking asks. Which way a message goes depends only on the pair of processes (on one
//! node, with the queues), the communicator's name and the message's length (a cell holds
//! it), which both ends know alike: these collectives' receives are always as long as their
//! message.
//!
//! Completion: a receive completed here (at its arrival, or at once from `unexp`) is noted in
//! `ready`; the next poll of pending work reports it as `Event::CollDone` (`drain_ready`),
//! and `has_pending` says there is such work. A send completes at once (a cell, or the outbox
//! when the queue is full: `shmq`'s sends never wait).

use super::engine::{Event, Transport};
use super::real::RComm;
use super::shmq::Meta;
use super::wire::{Header, HDR_LEN, KIND_COLL};
use std::collections::VecDeque;

/// `shmq::Meta::dst_sub` of a collective's message (no subrank is numbered so:
/// `wire::MAX_SUBS` is 2^24).
pub(super) const COLL_SUB: u32 = u32::MAX;

/// The name of the real world's duplicate for collectives (`Transport::coll`).
const WORLD_CHAN: u64 = 1;

/// The node queue's side of the collectives' messages (`Transport::collq`).
#[derive(Default)]
pub struct CollQ {
    /// Named real communicators: (communicator, name, idups started on it so far).
    names: Vec<(RComm, u64, u64)>,
    /// Idups under way: (their operation's token, the name of the communicator they make).
    naming: Vec<(u64, u64)>,
    /// Receives waiting for their message, in posting order.
    posted: Vec<Posted>,
    /// Messages that came before their receive, in arrival order. Session 30: a deque, since
    /// a receive usually takes the oldest: a root that runs ahead of a process (a flat
    /// Iscatterv whose root completes at once) leaves thousands here, and `Vec::remove(0)`
    /// moved them all at every receive (a third of the receiving process's time at 8 B).
    unexp: VecDeque<Unexp>,
    /// Receives completed and not reported yet: (token, MPI error class or 0).
    ready: Vec<(u64, i32)>,
    /// Buffers of taken unexpected messages, for the next ones (at most `SPARE`).
    spare: Vec<Vec<u8>>,
}

/// Unexpected messages' buffers kept for reuse.
const SPARE: usize = 8;

struct Posted {
    chan: u64,
    src: usize,
    tag: i32,
    buf: *mut u8,
    len: usize,
    token: u64,
}

struct Unexp {
    chan: u64,
    src: usize,
    tag: i32,
    bytes: Vec<u8>,
}

// SAFETY: `Posted::buf` is memory of an operation under way that the core keeps valid until
// the completion is reported; the transport is used by one thread at a time (its lock).
unsafe impl Send for CollQ {}

/// The name of the `n`-th (from 0) idup of the communicator named `parent`: a mix of both
/// (splitmix64's finaliser), so that names of different communicators do not meet.
fn child(parent: u64, n: u64) -> u64 {
    let mut z = parent.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ n.wrapping_add(1);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) | 2
}

/// The completion event of a receive completed here (`CollQ::ready`'s (token, class)): what
/// a real request's `Event::CollDone` says, with no buffer of the transport's and no new
/// communicator.
fn ready_event((token, error): (u64, i32)) -> Event {
    Event::CollDone {
        token,
        buf: Vec::new(),
        comm: None,
        error,
    }
}

impl CollQ {
    fn name_of(&self, comm: RComm) -> Option<u64> {
        self.names.iter().find(|n| n.0 == comm).map(|n| n.1)
    }

    /// Copies message `bytes` into posted receive `p` and notes its completion.
    fn complete(&mut self, p: Posted, bytes: &[u8]) {
        let n = bytes.len().min(p.len);
        // SAFETY: the receive's buffer holds `p.len` bytes until its completion is reported
        // (`queue_recv`'s contract); the message is in our own memory or a cell we hold.
        unsafe { super::copy::bytes(bytes.as_ptr(), p.buf, n) };
        let class = if bytes.len() > p.len { crate::consts::MPI_ERR_TRUNCATE } else { 0 };
        self.ready.push((p.token, class));
    }
}

impl Transport {
    /// At start-up: names the real world's duplicate for collectives.
    pub(super) fn name_world(&mut self) {
        let coll = self.coll;
        self.collq.names.push((coll, WORLD_CHAN, 0));
    }

    /// An idup of `parent` started as operation `token`: the communicator it makes will be
    /// named after its parent's name and how many idups of it started before.
    pub(super) fn dup_started(&mut self, parent: RComm, token: u64) {
        let q = &mut self.collq;
        if let Some(n) = q.names.iter_mut().find(|n| n.0 == parent) {
            let name = child(n.1, n.2);
            n.2 += 1;
            q.naming.push((token, name));
        }
    }

    /// Operation `token` finished; when it was an idup, `comm` is what it made.
    pub(super) fn dup_done(&mut self, token: u64, comm: Option<RComm>) {
        let q = &mut self.collq;
        if q.naming.is_empty() {
            return;
        }
        if let Some(i) = q.naming.iter().position(|n| n.0 == token) {
            let (_, name) = q.naming.swap_remove(i);
            if let Some(c) = comm {
                q.names.push((c, name, 0));
            }
        }
    }

    /// Real communicator `comm` is freed: its handle may come back for another one.
    pub(super) fn unname(&mut self, comm: RComm) {
        self.collq.names.retain(|n| n.0 != comm);
    }

    /// The node queue and the name a message of `len` bytes to or from process `proc` on
    /// `comm` goes with, when it goes through the queue.
    #[inline]
    fn coll_route(&self, comm: RComm, proc: usize, len: usize) -> Option<(usize, u64)> {
        let n = self.shmq.as_ref()?;
        let q = n.index_of(proc)?;
        if HDR_LEN + len > n.cell_max() {
            return None;
        }
        Some((q, self.collq.name_of(comm)?))
    }

    /// `coll_send` through the node queue: Ok(true) when sent (complete: the bytes are
    /// copied), Ok(false) when the message goes through the real MPI.
    ///
    /// # Safety
    /// `data..data+len` is readable for the call.
    pub(super) unsafe fn queue_send(&mut self, comm: RComm, dst: usize, tag: i32, data: *const u8, len: usize) -> Result<bool, String> {
        let Some((q, chan)) = self.coll_route(comm, dst, len) else {
            return Ok(false);
        };
        let hdr = Header {
            kind: KIND_COLL,
            ctx: chan,
            src_rank: self.myproc as i32,
            tag,
            len: len as u64,
            ..Default::default()
        };
        let meta = Meta {
            src_proc: self.myproc as u32,
            dst_sub: COLL_SUB,
            src_sub: 0,
            len: 0,
        };
        let payload: &[u8] = if len == 0 {
            &[]
        } else {
            // SAFETY: the caller's readable bytes, for the duration of the call.
            unsafe { std::slice::from_raw_parts(data, len) }
        };
        let n = self.shmq.as_mut().ok_or("no node queue")?;
        n.send(q, meta, &hdr.to_bytes(), payload)
            .map_err(|max| format!("a {len}-byte collective message exceeds the node queue's {max}-byte cells"))?;
        Ok(true)
    }

    /// `coll_recv` through the node queue: true when taken here (its completion comes back as
    /// `Event::CollDone { token, .. }`), false when it goes through the real MPI.
    ///
    /// # Safety
    /// `buf..buf+len` stays valid until the completion is reported.
    pub(super) unsafe fn queue_recv(&mut self, comm: RComm, src: usize, tag: i32, buf: *mut u8, len: usize, token: u64) -> bool {
        let Some((_, chan)) = self.coll_route(comm, src, len) else {
            return false;
        };
        let q = &mut self.collq;
        let p = Posted {
            chan,
            src,
            tag,
            buf,
            len,
            token,
        };
        match q.unexp.iter().position(|u| u.chan == chan && u.src == src && u.tag == tag) {
            Some(i) => {
                let u = q.unexp.remove(i).expect("found just above");
                q.complete(p, &u.bytes);
                if q.spare.len() < SPARE {
                    q.spare.push(u.bytes);
                }
            }
            None => q.posted.push(p),
        }
        true
    }

    /// A collective's message taken from the node queue at `pos`: into its posted receive, or
    /// kept until one is posted.
    #[inline(never)]
    pub(super) fn coll_arrived(&mut self, meta: Meta, pos: u64) {
        let Some(n) = self.shmq.as_ref() else { return };
        let bytes = n.bytes(&meta, pos);
        let Some(hdr) = Header::from_bytes(bytes) else { return };
        let end = (HDR_LEN + hdr.len as usize).min(bytes.len());
        let payload = &bytes[HDR_LEN..end];
        let (chan, src, tag) = (hdr.ctx, meta.src_proc as usize, hdr.tag);
        let q = &mut self.collq;
        match q.posted.iter().position(|p| p.chan == chan && p.src == src && p.tag == tag) {
            Some(i) => {
                let p = q.posted.remove(i);
                q.complete(p, payload);
            }
            None => {
                let mut b = q.spare.pop().unwrap_or_default();
                b.clear();
                b.extend_from_slice(payload);
                q.unexp.push_back(Unexp { chan, src, tag, bytes: b });
            }
        }
    }

    /// Reports the receives completed here (`ready`) into `out`; whether there were any.
    #[inline]
    pub(super) fn drain_ready(&mut self, out: &mut Vec<Event>) -> bool {
        if self.collq.ready.is_empty() {
            return false;
        }
        out.extend(self.collq.ready.drain(..).map(ready_event));
        true
    }

    /// Whether a receive of collective operation `token` completed here and is not reported.
    pub(super) fn take_ready(&mut self, token: u64) -> Option<Event> {
        let i = self.collq.ready.iter().position(|r| r.0 == token)?;
        Some(ready_event(self.collq.ready.swap_remove(i)))
    }

    /// Whether collective operation `token` waits for a message of the node queue (a wait
    /// then polls the queue, `core::coll::nbc`, not a real request).
    pub fn coll_queued(&self, token: u64) -> bool {
        self.collq.posted.iter().any(|p| p.token == token)
    }

    /// Receives waiting or completed here (the deadlock detector's real collectives).
    pub(super) fn queued_colls(&self) -> usize {
        self.collq.posted.len() + self.collq.ready.len()
    }

    /// Completed receives not reported yet (`has_pending`).
    #[inline(always)]
    pub(super) fn colls_ready(&self) -> bool {
        !self.collq.ready.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    /// Names of communicators made from one another (a few generations of idups) are all
    /// different, and never the world's.
    #[rstest]
    #[case(3, 40)]
    #[case(5, 8)]
    fn children_are_named_apart(#[case] depth: usize, #[case] width: u64) {
        let mut seen = std::collections::HashSet::from([WORLD_CHAN]);
        let mut level = vec![WORLD_CHAN];
        for _ in 0..depth {
            let mut next = Vec::new();
            for &p in &level {
                for n in 0..width {
                    let c = child(p, n);
                    assert!(seen.insert(c), "name {c:#x} given twice");
                    next.push(c);
                }
            }
            level = next;
            level.truncate(64);
        }
    }

    /// The same parent and count name the same communicator on every process.
    #[rstest]
    #[case(WORLD_CHAN, 0)]
    #[case(WORLD_CHAN, 7)]
    #[case(0x1234_5678_9abc_def0, 3)]
    fn names_agree(#[case] parent: u64, #[case] n: u64) {
        assert_eq!(child(parent, n), child(parent, n));
        assert_ne!(child(parent, n), child(parent, n + 1));
    }
}
