//! Collectives over point-to-point, correct for any communicator (hierarchical and
//! nonblocking versions come later). Traffic runs on the communicator's collective context,
//! so it never matches user messages.

use super::blocking::{irecv, isend, wait, wait_all};
use super::comm::{CommRef, CTX_COLL};
use super::datatype::DtRef;
use super::error::{err, MpiResult};
use super::op::{self, OpKind};
use super::p2p::SendMode;
use super::request::ReqId;
use crate::abi::consts as c;

const TAG_BARRIER: i32 = 1;
const TAG_BCAST: i32 = 2;
const TAG_REDUCE: i32 = 3;
const TAG_GATHER: i32 = 4;
const TAG_SCATTER: i32 = 5;
const TAG_ALLTOALL: i32 = 6;
const TAG_SCAN: i32 = 7;

/// A (buffer, count, datatype) triple.
#[derive(Clone)]
pub struct Buf {
    pub ptr: *mut u8,
    pub count: usize,
    pub dt: DtRef,
}

impl Buf {
    pub fn new(ptr: *mut u8, count: usize, dt: DtRef) -> Buf {
        Buf { ptr, count, dt }
    }
    /// The same type `n` elements further, `count` elements long.
    pub fn at(&self, n: usize, count: usize) -> Buf {
        Buf {
            ptr: self.ptr.wrapping_offset(n as isize * self.dt.extent),
            count,
            dt: self.dt.clone(),
        }
    }
    fn bytes_span(&self) -> usize {
        self.count * self.dt.extent.max(0) as usize
    }
}

/// Copies `src` into `dst` through the type maps (same type signature assumed).
///
/// # Safety
/// Both buffers must be valid for their counts.
pub unsafe fn local_copy(src: &Buf, dst: &Buf) {
    let mut v = Vec::with_capacity(src.count * src.dt.size);
    src.dt.pack(src.ptr, src.count, &mut v);
    dst.dt.unpack(&v, dst.ptr, dst.count);
}

/// One subrank's side of a collective on one communicator.
pub struct Coll<'a> {
    pub sub: usize,
    pub comm: &'a CommRef,
    pub handle: usize,
}

impl Coll<'_> {
    fn ctx(&self) -> u64 {
        self.comm.ctx | CTX_COLL
    }
    fn rank(&self) -> i32 {
        self.comm.rank
    }
    fn size(&self) -> i32 {
        self.comm.size()
    }
    unsafe fn isend(&self, b: &Buf, dest: i32, tag: i32) -> MpiResult<ReqId> {
        isend(
            self.sub,
            self.comm,
            self.handle,
            self.ctx(),
            b.ptr,
            b.count,
            &b.dt,
            dest,
            tag,
            SendMode::Standard,
        )
    }
    unsafe fn irecv(&self, b: &Buf, src: i32, tag: i32) -> MpiResult<ReqId> {
        irecv(self.sub, self.handle, self.ctx(), b.ptr, b.count, &b.dt, src, tag)
    }
    unsafe fn send(&self, b: &Buf, dest: i32, tag: i32) -> MpiResult<()> {
        wait(self.isend(b, dest, tag)?).map(|_| ())
    }
    unsafe fn recv(&self, b: &Buf, src: i32, tag: i32) -> MpiResult<()> {
        let st = wait(self.irecv(b, src, tag)?)?;
        if st.error != c::MPI_SUCCESS {
            return err(st.error, "collective message did not fit the receive buffer (mismatched counts?)");
        }
        Ok(())
    }

    /// Dissemination barrier: ceil(log2 n) rounds.
    pub fn barrier(&self) -> MpiResult<()> {
        let (n, r) = (self.size(), self.rank());
        let empty = Buf::new(std::ptr::null_mut(), 0, super::datatype::byte());
        let mut k = 1;
        while k < n {
            // SAFETY: zero-length messages touch no memory.
            unsafe {
                let s = self.isend(&empty, (r + k) % n, TAG_BARRIER)?;
                self.recv(&empty, (r - k + n) % n, TAG_BARRIER)?;
                wait(s)?;
            }
            k *= 2;
        }
        Ok(())
    }

    /// Binomial-tree broadcast.
    ///
    /// # Safety
    /// `b` must be valid on every rank for its count.
    pub unsafe fn bcast(&self, b: &Buf, root: i32) -> MpiResult<()> {
        let (n, r) = (self.size(), self.rank());
        let rel = (r - root + n) % n;
        let mut mask = 1;
        while mask < n {
            if rel & mask != 0 {
                self.recv(b, (rel - mask + root) % n, TAG_BCAST)?;
                break;
            }
            mask <<= 1;
        }
        mask >>= 1;
        let mut sends = Vec::new();
        while mask > 0 {
            if rel + mask < n {
                sends.push(self.isend(b, (rel + mask + root) % n, TAG_BCAST)?);
            }
            mask >>= 1;
        }
        wait_all(&sends).map(|_| ())
    }

    fn check_op(&self, op: OpKind, dt: &DtRef) -> MpiResult<super::basic::BasicType> {
        match dt.basic {
            // REPLACE and NO_OP are for one-sided accumulates, not reductions.
            Some(b) if op::valid(op, b) && !matches!(op, OpKind::Replace | OpKind::NoOp) => Ok(b),
            _ => err(c::MPI_ERR_OP, format!("{} is not defined for datatype {}", op.name(), dt.name)),
        }
    }

    /// Binomial-tree reduction of `send` (or, with `in_place`, of `recv`) into `recv` at root.
    /// Operands are combined in rank order, so the result is the same as a left fold.
    ///
    /// # Safety
    /// Buffers valid for `count` elements (recv only significant at root).
    pub unsafe fn reduce(&self, send: *const u8, recv: *mut u8, count: usize, dt: &DtRef, op: OpKind, root: i32) -> MpiResult<()> {
        let ty = self.check_op(op, dt)?;
        let (n, r) = (self.size(), self.rank());
        let span = count * dt.extent as usize;
        // Accumulator over a contiguous rank range [r, r + 2^k), combined as rank order wants.
        let mut acc = vec![0u8; span.max(1)];
        let src = if send == c::MPI_IN_PLACE_ADDR as *const u8 {
            recv as *const u8
        } else {
            send
        };
        if span > 0 {
            std::ptr::copy_nonoverlapping(src, acc.as_mut_ptr(), span);
        }
        let mut tmp = vec![0u8; span.max(1)];
        // Reduce towards rank 0 over ranks in natural order, then move to root.
        let mut mask = 1;
        while mask < n {
            if r & mask != 0 {
                self.send(&Buf::new(acc.as_mut_ptr(), count, dt.clone()), r - mask, TAG_REDUCE)?;
                break;
            }
            if r + mask < n {
                self.recv(&Buf::new(tmp.as_mut_ptr(), count, dt.clone()), r + mask, TAG_REDUCE)?;
                // acc covers lower ranks: acc = acc op tmp  (inout = in op inout with in = acc)
                op::apply(op, ty, acc.as_ptr(), tmp.as_mut_ptr(), count);
                std::mem::swap(&mut acc, &mut tmp);
            }
            mask <<= 1;
        }
        if root == 0 {
            if r == 0 && span > 0 {
                std::ptr::copy_nonoverlapping(acc.as_ptr(), recv, span);
            }
        } else if r == 0 {
            self.send(&Buf::new(acc.as_mut_ptr(), count, dt.clone()), root, TAG_REDUCE)?;
        } else if r == root {
            self.recv(&Buf::new(recv, count, dt.clone()), 0, TAG_REDUCE)?;
        }
        Ok(())
    }

    /// # Safety
    /// Buffers valid for `count` elements.
    pub unsafe fn allreduce(&self, send: *const u8, recv: *mut u8, count: usize, dt: &DtRef, op: OpKind) -> MpiResult<()> {
        self.reduce(send, recv, count, dt, op, 0)?;
        self.bcast(&Buf::new(recv, count, dt.clone()), 0)
    }

    /// Gatherv: `parts[i]` is where rank i's data goes at root. `send` None = in place.
    ///
    /// # Safety
    /// Buffers valid as described by the arguments.
    pub unsafe fn gatherv(&self, send: Option<&Buf>, parts: &[Buf], root: i32) -> MpiResult<()> {
        let r = self.rank();
        if r != root {
            return self.send(send.expect("non-root has a send buffer"), root, TAG_GATHER);
        }
        let mut reqs = Vec::new();
        for (i, p) in parts.iter().enumerate() {
            if i as i32 == r {
                if let Some(s) = send {
                    local_copy(s, p);
                }
            } else {
                reqs.push(self.irecv(p, i as i32, TAG_GATHER)?);
            }
        }
        for st in wait_all(&reqs)? {
            if st.error != c::MPI_SUCCESS {
                return err(st.error, "gathered message larger than its slot (mismatched counts?)");
            }
        }
        Ok(())
    }

    /// Scatterv: `parts[i]` is rank i's slice at root. `recv` None = in place (root).
    ///
    /// # Safety
    /// Buffers valid as described by the arguments.
    pub unsafe fn scatterv(&self, parts: &[Buf], recv: Option<&Buf>, root: i32) -> MpiResult<()> {
        let r = self.rank();
        if r != root {
            return self.recv(recv.expect("non-root has a receive buffer"), root, TAG_SCATTER);
        }
        let mut reqs = Vec::new();
        for (i, p) in parts.iter().enumerate() {
            if i as i32 == r {
                if let Some(d) = recv {
                    local_copy(p, d);
                }
            } else {
                reqs.push(self.isend(p, i as i32, TAG_SCATTER)?);
            }
        }
        wait_all(&reqs).map(|_| ())
    }

    /// Allgatherv by gather to rank 0 and broadcast of each part.
    ///
    /// # Safety
    /// Buffers valid as described by the arguments.
    pub unsafe fn allgatherv(&self, send: Option<&Buf>, parts: &[Buf]) -> MpiResult<()> {
        let r = self.rank() as usize;
        // In place: a non-root rank's own part is its contribution; rank 0's is already there.
        let own = match send {
            Some(s) => Some(s.clone()),
            None if r != 0 => Some(parts[r].clone()),
            None => None,
        };
        self.gatherv(own.as_ref(), parts, 0)?;
        for p in parts {
            self.bcast(p, 0)?;
        }
        Ok(())
    }

    /// Alltoallv: every pair exchanges directly. `sends[i]`/`recvs[i]` for peer i.
    ///
    /// # Safety
    /// Buffers valid as described by the arguments (sends must not alias recvs).
    pub unsafe fn alltoallv(&self, sends: &[Buf], recvs: &[Buf]) -> MpiResult<()> {
        let (n, r) = (self.size(), self.rank());
        let mut reqs = Vec::new();
        for k in 1..n {
            let from = (r - k + n) % n;
            reqs.push(self.irecv(&recvs[from as usize], from, TAG_ALLTOALL)?);
        }
        for k in 1..n {
            let to = (r + k) % n;
            reqs.push(self.isend(&sends[to as usize], to, TAG_ALLTOALL)?);
        }
        local_copy(&sends[r as usize], &recvs[r as usize]);
        for st in wait_all(&reqs)? {
            if st.error != c::MPI_SUCCESS {
                return err(st.error, "alltoall message larger than its slot (mismatched counts?)");
            }
        }
        Ok(())
    }

    /// Inclusive (or exclusive) prefix reduction along rank order.
    ///
    /// # Safety
    /// Buffers valid for `count` elements.
    pub unsafe fn scan(&self, send: *const u8, recv: *mut u8, count: usize, dt: &DtRef, op: OpKind, exclusive: bool) -> MpiResult<()> {
        let ty = self.check_op(op, dt)?;
        let (n, r) = (self.size(), self.rank());
        let span = count * dt.extent as usize;
        let src = if send == c::MPI_IN_PLACE_ADDR as *const u8 {
            recv as *const u8
        } else {
            send
        };
        let mut mine = vec![0u8; span.max(1)];
        if span > 0 {
            std::ptr::copy_nonoverlapping(src, mine.as_mut_ptr(), span);
        }
        let mut prefix = vec![0u8; span.max(1)];
        if r > 0 {
            self.recv(&Buf::new(prefix.as_mut_ptr(), count, dt.clone()), r - 1, TAG_SCAN)?;
        }
        // Inclusive prefix through r: prefix(r-1) op mine.
        let mut incl = mine.clone();
        if r > 0 {
            op::apply(op, ty, prefix.as_ptr(), incl.as_mut_ptr(), count);
        }
        if r + 1 < n {
            self.send(&Buf::new(incl.as_mut_ptr(), count, dt.clone()), r + 1, TAG_SCAN)?;
        }
        let out = if exclusive { &prefix } else { &incl };
        if span > 0 && (!exclusive || r > 0) {
            std::ptr::copy_nonoverlapping(out.as_ptr(), recv, span);
        }
        Ok(())
    }

    /// Reduce then scatter `counts[i]` elements to rank i.
    ///
    /// # Safety
    /// Buffers valid for the counts.
    pub unsafe fn reduce_scatter(&self, send: *const u8, recv: *mut u8, counts: &[usize], dt: &DtRef, op: OpKind) -> MpiResult<()> {
        let total: usize = counts.iter().sum();
        let r = self.rank() as usize;
        let ext = dt.extent as usize;
        let mut full = vec![0u8; (total * ext).max(1)];
        let in_place = send == c::MPI_IN_PLACE_ADDR as *const u8;
        let src = if in_place { recv as *const u8 } else { send };
        self.reduce(src, full.as_mut_ptr(), total, dt, op, 0)?;
        let mut parts = Vec::with_capacity(counts.len());
        let mut off = 0;
        for &k in counts {
            parts.push(Buf::new(full.as_mut_ptr().add(off * ext), k, dt.clone()));
            off += k;
        }
        let mine = Buf::new(recv, counts[r], dt.clone());
        self.scatterv(&parts, Some(&mine), 0)
    }

    #[allow(dead_code)]
    fn span(b: &Buf) -> usize {
        b.bytes_span()
    }
}
