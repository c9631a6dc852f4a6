//! coll6 (issue 16): small collectives as real point-to-point messages on a twin, in place of
//! the real MPI's nonblocking schedule (`core::coll::nbc`, "Session 15" of docs/collectives.md).
//!
//! A small broadcast is a binomial tree of eager real sends rooted at the root's process:
//! the root sends to its children in the `MPI_I*` call (blocking eager sends of at most
//! `TINY` bytes complete locally, so the root's request is complete at once); every other
//! process posts one real receive from its parent, and forwards to its own children when it
//! completes (`tree_forward`, called by the core on completion). The tag names the
//! virtual call (its place on the twin), so the messages of different calls never match
//! each other, whatever order the processes make them in. Used only on twins whose
//! point-to-point space carries nothing else (not with the pass-through, `direct`).
//!
//! The wait of such a request polls its one real request alone (`coll_test`), as a direct
//! point-to-point wait does (`direct_test`).

use super::engine::{check, Action, Event, Pending, Transport};
use super::real::{self, h, RComm, RRequest, RealStatus};
use std::os::raw::{c_int, c_void};

/// Largest message sent with a blocking real send (it is eager: it completes locally);
/// larger ones go with a nonblocking send whose completion is awaited.
pub const TREE_MAX: usize = super::engine::TINY;

/// Largest message of these collectives (the core's choice of sizes stays below it).
pub const P2P_MAX: usize = 1 << 20;

/// The parent of process `me` in the binomial tree over `n` processes rooted at `root`
/// (None at the root).
pub fn tree_parent(me: usize, root: usize, n: usize) -> Option<usize> {
    let rel = (me + n - root) % n;
    if rel == 0 {
        return None;
    }
    let low = rel & rel.wrapping_neg();
    Some((rel - low + root) % n)
}

/// The children of process `me` in that tree, largest subtree first.
pub fn tree_children(me: usize, root: usize, n: usize) -> impl Iterator<Item = usize> {
    let rel = (me + n - root) % n;
    // Children are rel + 2^k for every 2^k below rel's lowest set bit (all of them at the
    // root), while inside the tree.
    let top = if rel == 0 {
        n.next_power_of_two()
    } else {
        rel & rel.wrapping_neg()
    };
    let mut mask = top >> 1;
    std::iter::from_fn(move || {
        while mask > 0 {
            let m = mask;
            mask >>= 1;
            if rel + m < n {
                return Some((rel + m + root) % n);
            }
        }
        None
    })
}

/// Session 27: how many processes the subtree of process `me` holds in that tree (itself
/// included): the relative ranks `rel .. rel + lowest bit of rel` (every process at the root),
/// within the `n`.
pub fn tree_span(me: usize, root: usize, n: usize) -> usize {
    let rel = (me + n - root) % n;
    if rel == 0 {
        return n;
    }
    (rel + (rel & rel.wrapping_neg())).min(n) - rel
}

/// Session 27: the sends of a tree scatter from process `me` (blocks of `blk` bytes laid out
/// by rank relative to `root`, this process's first): per child, its process, the offset of
/// its subtree's blocks in this process's buffer and their length.
pub fn scatter_sends(me: usize, root: usize, n: usize, blk: usize) -> impl Iterator<Item = (usize, usize, usize)> {
    let rel = (me + n - root) % n;
    tree_children(me, root, n).map(move |c| {
        let crel = (c + n - root) % n;
        (c, (crel - rel) * blk, tree_span(c, root, n) * blk)
    })
}

/// Session 29 (vscat29): the pieces (offset, bytes) of a message of `len` bytes sent as
/// messages of at most `P2P_MAX` bytes (`chunk_send`, `chunk_recv`): none for 0 bytes.
pub fn chunks(len: usize) -> impl Iterator<Item = (usize, usize)> {
    (0..len.div_ceil(P2P_MAX)).map(move |i| (i * P2P_MAX, (len - i * P2P_MAX).min(P2P_MAX)))
}

impl Transport {
    /// Sends `len` (at most `P2P_MAX`) bytes at `data` to process `dst` of twin `comm` with
    /// `tag`: up to `TREE_MAX` bytes a blocking eager send (complete locally), above that a
    /// nonblocking one, which returns true when it is still under way (its completion comes
    /// back as `Event::CollDone { token, .. }`; the bytes must stay until then). Not counted as
    /// point-to-point messages (these are real collectives for the deadlock detector: see
    /// `core::quiescence`).
    ///
    /// # Safety
    /// `data..data+len` is readable for the call, and until the completion when it returns
    /// true.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn coll_send(&mut self, comm: RComm, dst: usize, tag: i32, data: *const u8, len: usize, token: u64) -> Result<bool, String> {
        debug_assert!(len <= P2P_MAX);
        // Session 29: to a process of this node, through the node queue (`collq`).
        // SAFETY: forwarded from the caller.
        if unsafe { self.queue_send(comm, dst, tag, data, len) }? {
            return Ok(false);
        }
        let byte = h(real::REAL_MPI_BYTE);
        if len <= TREE_MAX {
            // SAFETY: the caller's bytes, for the duration of the call.
            check(
                unsafe {
                    self.real
                        .PMPI_Send(data as *const c_void, len as c_int, byte, dst as c_int, tag, comm)
                },
                "MPI_Send",
            )?;
            return Ok(false);
        }
        // SAFETY: the caller keeps the bytes until the completion (an eager send is usually
        // complete already, as `direct_send`'s).
        let Some(req) = (unsafe { self.isend_now(comm, dst as c_int, tag, data, len, false) })? else {
            return Ok(false);
        };
        self.push_coll(req, token);
        Ok(true)
    }

    /// Posts the real receive of `len` bytes into `buf` from process `src` of twin `comm`
    /// with `tag`, a request of collective operation `token` (`push_coll`).
    ///
    /// # Safety
    /// `buf..buf+len` stays valid until the completion is reported.
    unsafe fn coll_recv(&mut self, comm: RComm, src: usize, tag: i32, buf: *mut u8, len: usize, token: u64) -> Result<(), String> {
        // Session 29: from a process of this node, through the node queue (`collq`).
        // SAFETY: forwarded from the caller.
        if unsafe { self.queue_recv(comm, src, tag, buf, len, token) } {
            return Ok(());
        }
        let mut req: RRequest = h(real::REAL_MPI_REQUEST_NULL);
        // SAFETY: the buffer stays valid until completion (the caller's contract).
        check(
            unsafe {
                self.real.PMPI_Irecv(
                    buf as *mut c_void,
                    len as c_int,
                    h(real::REAL_MPI_BYTE),
                    src as c_int,
                    tag,
                    comm,
                    &mut req,
                )
            },
            "MPI_Irecv",
        )?;
        self.push_coll(req, token);
        Ok(())
    }

    /// Real request `req` of collective operation `token`: its completion comes back as
    /// `Event::CollDone { token, .. }`.
    fn push_coll(&mut self, req: RRequest, token: u64) {
        self.pending.push(Pending {
            req,
            action: Action::Coll(token),
            buf: None,
            comm: None,
        });
    }

    /// Sends `len` bytes at `data` to every child of this process in the broadcast tree
    /// rooted at `root` on twin `comm`, with `tag` (`coll_send`). Returns how many sends are
    /// still under way.
    ///
    /// # Safety
    /// As `coll_send`.
    pub unsafe fn tree_forward(
        &mut self,
        comm: RComm,
        root: usize,
        tag: i32,
        data: *const u8,
        len: usize,
        token: u64,
    ) -> Result<u32, String> {
        let mut pending = 0;
        for child in tree_children(self.myproc, root, self.nproc) {
            // SAFETY: forwarded from the caller.
            pending += u32::from(unsafe { self.coll_send(comm, child, tag, data, len, token) }?);
        }
        Ok(pending)
    }

    /// Starts this process's part of a tree broadcast of `len` bytes at `buf` rooted at
    /// process `root` on twin `comm` with `tag`: at the root, the sends to its children
    /// (Some: how many are still under way); elsewhere the receive from the parent, whose
    /// completion comes back as `Event::CollDone { token, .. }` (None; the caller forwards
    /// then).
    ///
    /// # Safety
    /// `buf..buf+len` stays valid until the completion is reported (and is readable for the
    /// call at the root).
    pub unsafe fn start_tree_bcast(
        &mut self,
        comm: RComm,
        root: usize,
        tag: i32,
        buf: *mut u8,
        len: usize,
        token: u64,
    ) -> Result<Option<u32>, String> {
        let Some(parent) = tree_parent(self.myproc, root, self.nproc) else {
            // SAFETY: forwarded from the caller.
            return unsafe { self.tree_forward(comm, root, tag, buf, len, token) }.map(Some);
        };
        // SAFETY: forwarded from the caller.
        unsafe { self.coll_recv(comm, parent, tag, buf, len, token) }?;
        Ok(None)
    }

    /// Session 27: sends every child of this process in the scatter tree rooted at `root` on
    /// twin `comm` its subtree's blocks (`scatter_sends`: `blk` bytes per process at `data`,
    /// laid out by rank relative to the root), with `tag` (`coll_send`). Returns how many
    /// sends are still under way.
    ///
    /// # Safety
    /// `data` holds `tree_span(myproc, root, nproc) * blk` bytes, as `coll_send` says.
    pub unsafe fn scatter_forward(
        &mut self,
        comm: RComm,
        root: usize,
        tag: i32,
        data: *const u8,
        blk: usize,
        token: u64,
    ) -> Result<u32, String> {
        let mut pending = 0;
        for (child, at, len) in scatter_sends(self.myproc, root, self.nproc, blk) {
            // SAFETY: the child's blocks lie inside this process's span (the caller's
            // contract: `at + len` is at most the span's bytes).
            pending += u32::from(unsafe { self.coll_send(comm, child, tag, data.add(at), len, token) }?);
        }
        Ok(pending)
    }

    /// Session 27: starts this process's part of a tree scatter of `blk` bytes per process
    /// rooted at process `root` on twin `comm` with `tag`: at the root, the sends of every
    /// other process's blocks down the tree from `buf` (`nproc * blk` bytes, laid out by rank
    /// relative to the root; Some: how many sends are still under way); elsewhere the receive
    /// of its subtree's blocks from its parent into `buf` (`tree_span * blk` bytes), whose
    /// completion comes back as `Event::CollDone { token, .. }` (None; the caller forwards
    /// then, `scatter_forward`).
    ///
    /// # Safety
    /// `buf` holds as many bytes as said, valid until the completion is reported.
    pub unsafe fn start_tree_scatter(
        &mut self,
        comm: RComm,
        root: usize,
        tag: i32,
        buf: *mut u8,
        blk: usize,
        token: u64,
    ) -> Result<Option<u32>, String> {
        let Some(parent) = tree_parent(self.myproc, root, self.nproc) else {
            // SAFETY: forwarded from the caller.
            return unsafe { self.scatter_forward(comm, root, tag, buf, blk, token) }.map(Some);
        };
        let len = tree_span(self.myproc, root, self.nproc) * blk;
        // SAFETY: forwarded from the caller.
        unsafe { self.coll_recv(comm, parent, tag, buf, len, token) }?;
        Ok(None)
    }

    /// Session 29 (vscat29): sends `len` bytes at `data` to process `dst` of twin `comm` with
    /// `tag` as consecutive messages of at most `P2P_MAX` bytes (`chunks`; none when `len` is
    /// 0), in order (`coll_send`): the receiver posts the same pieces (`chunk_recv`), which
    /// MPI matches in order. Returns how many sends are still under way.
    ///
    /// # Safety
    /// As `coll_send`, for the whole `len` bytes.
    pub unsafe fn chunk_send(&mut self, comm: RComm, dst: usize, tag: i32, data: *const u8, len: usize, token: u64) -> Result<u32, String> {
        let mut pending = 0;
        for (at, n) in chunks(len) {
            // SAFETY: the piece lies inside the caller's `len` bytes.
            pending += u32::from(unsafe { self.coll_send(comm, dst, tag, data.add(at), n, token) }?);
        }
        Ok(pending)
    }

    /// Session 29 (vscat29): posts the receives of `len` bytes into `buf` from process `src`
    /// of twin `comm` with `tag`, in the pieces `chunk_send` sends them in; each completion
    /// comes back as `Event::CollDone { token, .. }`. Returns how many were posted.
    ///
    /// # Safety
    /// `buf..buf+len` stays valid until every completion is reported.
    pub unsafe fn chunk_recv(&mut self, comm: RComm, src: usize, tag: i32, buf: *mut u8, len: usize, token: u64) -> Result<u32, String> {
        let mut posted = 0;
        for (at, n) in chunks(len) {
            // SAFETY: the piece lies inside the caller's `len` bytes.
            unsafe { self.coll_recv(comm, src, tag, buf.add(at), n, token) }?;
            posted += 1;
        }
        Ok(posted)
    }

    /// One step of a recursive-doubling exchange with process `partner` on twin `comm`:
    /// the receive of `rlen` bytes into `recv` (its completion comes back as
    /// `Event::CollDone { token, .. }`), then the send of `slen` bytes at `send`
    /// (`coll_send`: true when it is still under way, its completion a second `CollDone`).
    ///
    /// # Safety
    /// `recv..recv+rlen` stays valid until the completion is reported; `send..send+slen` as
    /// `coll_send` says.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn start_exchange(
        &mut self,
        comm: RComm,
        partner: usize,
        tag: i32,
        send: *const u8,
        slen: usize,
        recv: *mut u8,
        rlen: usize,
        token: u64,
    ) -> Result<bool, String> {
        // SAFETY: the receive buffer stays valid until completion (the caller's contract).
        unsafe { self.coll_recv(comm, partner, tag, recv, rlen, token) }?;
        // SAFETY: forwarded from the caller.
        unsafe { self.coll_send(comm, partner, tag, send, slen, token) }
    }

    /// Tests the real request of collective operation `token` alone (a wait's poll: one
    /// progress step of the real MPI, as its own `MPI_Wait` makes): its completion event when
    /// it finished; None when it has not, or when it is not pending here.
    pub fn coll_test(&mut self, token: u64) -> Result<Option<Event>, String> {
        // Session 29: a receive the node queue completed (`collq`).
        if let Some(e) = self.take_ready(token) {
            return Ok(Some(e));
        }
        let Some(i) = self.pending.iter().rposition(|p| matches!(p.action, Action::Coll(t) if t == token)) else {
            return Ok(None);
        };
        let mut flag: c_int = 0;
        // SAFETY: a live request of ours; the status is ignored.
        let rc = unsafe {
            self.real
                .PMPI_Test(&mut self.pending[i].req, &mut flag, real::REAL_MPI_STATUS_IGNORE as *mut RealStatus)
        };
        // faults16: a request that completed with an error (a truncating receive) ends its
        // operation with the error class (`coll_error`); any other failure is the real MPI's.
        if flag == 0 || rc == real::REAL_MPI_SUCCESS as c_int {
            check(rc, "MPI_Test")?;
        }
        if flag == 0 {
            return Ok(None);
        }
        let p = self.pending.swap_remove(i);
        self.dup_done(token, p.comm.as_deref().copied());
        Ok(Some(Event::CollDone {
            token,
            buf: p.buf.unwrap_or_default(),
            comm: p.comm.map(|c| *c),
            error: self.coll_error(rc),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    /// Every process but the root has one parent, is its parent's child, and the tree
    /// reaches every process from the root.
    #[rstest]
    #[case(1, 0)]
    #[case(2, 0)]
    #[case(2, 1)]
    #[case(3, 2)]
    #[case(5, 3)]
    #[case(8, 0)]
    #[case(13, 7)]
    #[case(64, 63)]
    fn binomial_tree(#[case] n: usize, #[case] root: usize) {
        let mut reached = vec![false; n];
        let mut todo = vec![root];
        while let Some(p) = todo.pop() {
            assert!(!std::mem::replace(&mut reached[p], true), "process {p} reached twice");
            for c in tree_children(p, root, n) {
                assert_eq!(tree_parent(c, root, n), Some(p));
                todo.push(c);
            }
        }
        assert!(reached.iter().all(|&r| r));
        assert_eq!(tree_parent(root, root, n), None);
    }

    /// Session 29 (vscat29): a message's pieces cover it, in order, each of 1 to `P2P_MAX`
    /// bytes; none for an empty one.
    #[rstest]
    #[case(0, 0)]
    #[case(1, 1)]
    #[case(P2P_MAX, 1)]
    #[case(P2P_MAX + 1, 2)]
    #[case(3 * P2P_MAX - 5, 3)]
    fn chunks_cover_the_message(#[case] len: usize, #[case] want: usize) {
        let got: Vec<(usize, usize)> = chunks(len).collect();
        assert_eq!(got.len(), want);
        let mut next = 0;
        for (at, n) in got {
            assert_eq!(at, next);
            assert!(n > 0 && n <= P2P_MAX);
            next += n;
        }
        assert_eq!(next, len);
    }

    /// Session 27: played down the tree, a scatter's sends give every process exactly its
    /// own block first in what it receives, and every block of its subtree after it (the
    /// root's buffer holds block r, relative to the root, at r; each send's range lies in
    /// the sender's span).
    #[rstest]
    #[case(1, 0)]
    #[case(2, 1)]
    #[case(3, 0)]
    #[case(5, 3)]
    #[case(8, 2)]
    #[case(13, 7)]
    #[case(64, 5)]
    fn scatter_tree_delivers_each_block(#[case] n: usize, #[case] root: usize) {
        let mut got: Vec<Option<Vec<usize>>> = vec![None; n];
        got[root] = Some((0..n).map(|rel| (rel + root) % n).collect());
        let mut todo = vec![root];
        while let Some(p) = todo.pop() {
            let mine = got[p].clone().expect("received before forwarding");
            assert_eq!(mine.len(), tree_span(p, root, n));
            assert_eq!(mine[0], p, "process {p}'s own block first");
            for (c, at, len) in scatter_sends(p, root, n, 1) {
                assert!(at + len <= mine.len(), "send to {c} inside {p}'s span");
                assert!(got[c].replace(mine[at..at + len].to_vec()).is_none());
                todo.push(c);
            }
        }
        for (p, g) in got.iter().enumerate() {
            let g = g.as_ref().expect("every process reached");
            let want: Vec<usize> = (0..g.len()).map(|i| (p + i) % n).collect();
            assert_eq!(g, &want, "process {p}");
        }
    }
}
