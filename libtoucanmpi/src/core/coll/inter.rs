//! Collectives on inter-communicators (MPI 4.0 §6.2.2): every operation moves data from one
//! group to the other.
//!
//! Design: operations whose result is a reduction or a broadcast go through the two group
//! leaders (local rank 0): a group combines (or fans out) among itself with the
//! intra-communicator algorithms of `coll.rs`, run on the inter-communicator's local context
//! (`Coll::local`), and only the leaders talk across. Operations that move distinct data per
//! pair of ranks (gather, scatter, allgather, alltoall) send it directly between the two
//! groups: every rank knows the counts and datatypes of the blocks it sends and receives, so
//! no sizes need to be exchanged and derived datatypes need no repacking. Traffic across runs
//! on the inter-communicator's collective context, where ranks name the remote group.
//!
//! Roots: in the group that holds the root, the root passes `MPI_ROOT` and the others
//! `MPI_PROC_NULL` (they take no part); the other group passes the root's rank in the remote
//! group. `MPI_IN_PLACE` is not allowed (the caller checks).

use crate::consts as c;
use crate::core::coll::reduce::Reducer;
use crate::core::coll::{in_place, Buf, Coll};
use crate::core::datatype::{self, byte, DtRef};
use crate::core::error::{err, MpiResult};
use crate::core::p2p::blocking::wait_all;

const TAG_BARRIER: i32 = 9;
const TAG_BCAST: i32 = 10;
const TAG_REDUCE: i32 = 11;
const TAG_BLOCK: i32 = 12;
const TAG_SWAP: i32 = 13;

fn empty() -> Buf {
    Buf::new(std::ptr::null_mut(), 0, byte())
}

/// Checks the statuses of finished receives.
fn received(sts: Vec<crate::core::request::Status>, what: &str) -> MpiResult<()> {
    match sts.iter().find(|st| st.error != c::MPI_SUCCESS) {
        Some(st) => err(st.error, format!("{what} message larger than its slot (mismatched counts?)")),
        None => Ok(()),
    }
}

impl Coll {
    /// The two leaders swap `mine` for `theirs` (same size on both sides).
    unsafe fn leaders_swap(&self, mine: &Buf, theirs: &Buf, tag: i32) -> MpiResult<()> {
        let r = self.irecv(theirs, 0, tag)?;
        let s = self.isend(mine, 0, tag)?;
        received(wait_all(&[r, s])?, "inter-communicator")
    }

    /// Gives every rank the ints that the other group's leader passed as `mine` (the leaders
    /// swap their vectors, then each broadcasts what it got in its group). For creating
    /// communicators: `mine` must be the same on every rank of a group.
    ///
    /// # Safety
    /// Called by a running subrank (blocks).
    pub unsafe fn swap_remote(&self, mine: &[i32]) -> MpiResult<Vec<i32>> {
        let int = datatype::lookup(c::MPI_INT)?;
        let ints = |v: &mut [i32]| Buf::new(v.as_mut_ptr() as *mut u8, v.len(), int.clone());
        let local = self.local();
        let (mut n, mut m) = ([mine.len() as i32], [0i32]);
        if self.rank() == 0 {
            self.leaders_swap(&ints(&mut n), &ints(&mut m), TAG_SWAP)?;
        }
        local.bcast(&ints(&mut m), 0)?;
        let mut theirs = vec![0i32; m[0].max(0) as usize];
        if self.rank() == 0 {
            let mut mine = mine.to_vec();
            self.leaders_swap(&ints(&mut mine), &ints(&mut theirs), TAG_SWAP)?;
        }
        local.bcast(&ints(&mut theirs), 0)?;
        Ok(theirs)
    }

    /// Nobody leaves before every rank of both groups has entered.
    pub(super) fn inter_barrier(&self) -> MpiResult<()> {
        let local = self.local();
        local.barrier()?;
        // SAFETY: zero-length messages touch no memory.
        unsafe {
            if self.rank() == 0 {
                self.leaders_swap(&empty(), &empty(), TAG_BARRIER)?;
            }
            local.bcast(&empty(), 0)
        }
    }

    /// The root sends to the remote leader, which broadcasts in its group.
    ///
    /// # Safety
    /// `b` valid for its count at the root and in the receiving group.
    pub(super) unsafe fn inter_bcast(&self, b: &Buf, root: i32) -> MpiResult<()> {
        match root {
            c::MPI_PROC_NULL => Ok(()),
            c::MPI_ROOT => self.send(b, 0, TAG_BCAST),
            _ => {
                if self.rank() == 0 {
                    self.recv(b, root, TAG_BCAST)?;
                }
                self.local().bcast(b, 0)
            }
        }
    }

    /// The sending group reduces to its leader (in rank order), which sends to the root.
    ///
    /// # Safety
    /// `send` valid in the sending group, `recv` at the root, for `count` elements.
    pub(super) unsafe fn inter_reduce(
        &self,
        send: *const u8,
        recv: *mut u8,
        count: usize,
        dt: &DtRef,
        red: &Reducer,
        root: i32,
    ) -> MpiResult<()> {
        let (n, w) = red.work(count, dt);
        match root {
            c::MPI_PROC_NULL => Ok(()),
            c::MPI_ROOT => {
                let mut a = vec![0u8; red.work_len(count, dt)];
                self.recv(&Buf::new(a.as_mut_ptr(), n, w), 0, TAG_REDUCE)?;
                red.store(&a, recv, count, dt);
                Ok(())
            }
            _ => match self
                .local()
                .reduce_to_zero(red.load(in_place(send, recv), count, dt), count, dt, red)?
            {
                Some(mut a) => self.send(&Buf::new(a.as_mut_ptr(), n, w), root, TAG_REDUCE),
                None => Ok(()),
            },
        }
    }

    /// Each group's reduction, delivered to every rank of the other group.
    ///
    /// # Safety
    /// Buffers valid for `count` elements.
    pub(super) unsafe fn inter_allreduce(&self, send: *const u8, recv: *mut u8, count: usize, dt: &DtRef, red: &Reducer) -> MpiResult<()> {
        let theirs = self.remote_reduction(send, recv, count, dt, red)?;
        red.store(&theirs, recv, count, dt);
        Ok(())
    }

    /// Reduces this group's `count` elements at its leader, swaps the result with the other
    /// leader and broadcasts the other group's reduction here: returns it as a work buffer.
    unsafe fn remote_reduction(&self, send: *const u8, recv: *mut u8, count: usize, dt: &DtRef, red: &Reducer) -> MpiResult<Vec<u8>> {
        let mut theirs = self.leaders_reduce_swap(send, recv, count, dt, red)?;
        let (n, w) = red.work(count, dt);
        self.local().bcast(&Buf::new(theirs.as_mut_ptr(), n, w), 0)?;
        Ok(theirs)
    }

    /// Reduces this group's `count` elements at its leader and swaps the result with the
    /// other leader: returns the other group's reduction (a work buffer) at the leader, a
    /// buffer of the same size elsewhere.
    unsafe fn leaders_reduce_swap(&self, send: *const u8, recv: *mut u8, count: usize, dt: &DtRef, red: &Reducer) -> MpiResult<Vec<u8>> {
        let (n, w) = red.work(count, dt);
        let mut theirs = vec![0u8; red.work_len(count, dt)];
        if let Some(mut mine) = self
            .local()
            .reduce_to_zero(red.load(in_place(send, recv), count, dt), count, dt, red)?
        {
            let tb = Buf::new(theirs.as_mut_ptr(), n, w.clone());
            self.leaders_swap(&Buf::new(mine.as_mut_ptr(), n, w), &tb, TAG_REDUCE)?;
        }
        Ok(theirs)
    }

    /// The other group's reduction of `sum(counts)` elements, scattered here by `counts`.
    ///
    /// # Safety
    /// Buffers valid for the counts.
    pub(super) unsafe fn inter_reduce_scatter(
        &self,
        send: *const u8,
        recv: *mut u8,
        counts: &[usize],
        dt: &DtRef,
        red: &Reducer,
    ) -> MpiResult<()> {
        let total: usize = counts.iter().sum();
        let local = self.local();
        let theirs = self.leaders_reduce_swap(send, recv, total, dt, red)?;
        // The leader holds the result: lay it out in the user's type and scatter it.
        let ext = dt.extent.max(0) as usize;
        let mut full = vec![0u8; (total * ext).max(1)];
        let mut parts = Vec::new();
        if local.rank() == 0 {
            red.store(&theirs, full.as_mut_ptr(), total, dt);
            let mut off = 0;
            for &k in counts {
                parts.push(Buf::new(full.as_mut_ptr().add(off * ext), k, dt.clone()));
                off += k;
            }
        }
        let mine = Buf::new(recv, counts[local.rank() as usize], dt.clone());
        local.scatterv(&parts, Some(&mine), 0)
    }

    /// The root receives `parts[i]` from rank i of the other group.
    ///
    /// # Safety
    /// Buffers valid as described by the arguments.
    pub(super) unsafe fn inter_gatherv(&self, send: Option<&Buf>, parts: &[Buf], root: i32) -> MpiResult<()> {
        match root {
            c::MPI_PROC_NULL => Ok(()),
            c::MPI_ROOT => self.exchange(&[], parts),
            _ => self.send(send.expect("a sending rank has a send buffer"), root, TAG_BLOCK),
        }
    }

    /// The root sends `parts[i]` to rank i of the other group.
    ///
    /// # Safety
    /// Buffers valid as described by the arguments.
    pub(super) unsafe fn inter_scatterv(&self, parts: &[Buf], recv: Option<&Buf>, root: i32) -> MpiResult<()> {
        match root {
            c::MPI_PROC_NULL => Ok(()),
            c::MPI_ROOT => self.exchange(parts, &[]),
            _ => self.recv(recv.expect("a receiving rank has a receive buffer"), root, TAG_BLOCK),
        }
    }

    /// Every rank sends its block to every rank of the other group; `parts[i]` receives
    /// remote rank i's.
    ///
    /// # Safety
    /// Buffers valid as described by the arguments.
    pub(super) unsafe fn inter_allgatherv(&self, send: Option<&Buf>, parts: &[Buf]) -> MpiResult<()> {
        let send = send.expect("no MPI_IN_PLACE on an inter-communicator");
        let sends = vec![send.clone(); self.comm.peer_size() as usize];
        self.exchange(&sends, parts)
    }

    /// `sends[j]` goes to remote rank j, `recvs[i]` comes from remote rank i.
    ///
    /// # Safety
    /// Buffers valid as described by the arguments.
    pub(super) unsafe fn inter_alltoallv(&self, sends: &[Buf], recvs: &[Buf]) -> MpiResult<()> {
        self.exchange(sends, recvs)
    }

    /// Sends `sends[j]` to remote rank j and receives `recvs[i]` from remote rank i, starting
    /// at this rank's own number so that the senders do not all hit the same rank first.
    unsafe fn exchange(&self, sends: &[Buf], recvs: &[Buf]) -> MpiResult<()> {
        let r = self.rank().max(0) as usize;
        let mut reqs = Vec::with_capacity(sends.len() + recvs.len());
        for k in 0..recvs.len() {
            let i = (r + k) % recvs.len();
            reqs.push(self.irecv(&recvs[i], i as i32, TAG_BLOCK)?);
        }
        for k in 0..sends.len() {
            let j = (r + k) % sends.len();
            reqs.push(self.isend(&sends[j], j as i32, TAG_BLOCK)?);
        }
        received(wait_all(&reqs)?, "inter-communicator collective")
    }
}
