//! Collectives over point-to-point, correct for any communicator. Traffic runs on the
//! communicator's collective context, so it never matches user messages. On an
//! inter-communicator each public method hands over to its counterpart in `inter.rs`.
//! On an intra-communicator, Barrier, Bcast, Reduce and Allreduce first try the two-level
//! versions of `hier` (members that share a process meet in memory); the flat algorithms
//! here also serve its inter-process level, through a view of one representative per process,
//! unless that level runs as a real collective (`coll::real`).

mod flatgather; // red30
mod flatv; // gath30: shared by vscatter and vgather
pub mod fold;
pub mod hier;
pub mod hiergather;
pub mod inter;
pub mod nbc;
pub mod nbrec;
pub mod nbrecv; // nbrecv27
pub mod op;
pub mod pairfold;
pub mod persist;
pub(crate) mod pool;
pub mod real;
pub mod reduce;
pub mod solo;
pub mod step;
pub mod team;
pub mod teamcall;
mod teamfold;
mod treereduce; // red30
pub mod vgather; // gath30
pub mod vscatter; // vscat29

use crate::consts as c;
use crate::core::coll::reduce::Reducer;
use crate::core::comm::{CommRef, CTX_COLL};
use crate::core::datatype::DtRef;
use crate::core::error::{err, MpiResult};
use crate::core::p2p::blocking::{irecv, isend, wait_all};
use crate::core::p2p::SendMode;
use crate::core::request::ReqId;
use crate::core::state;
use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;

pub(crate) const TAG_BARRIER: i32 = 1;
pub(crate) const TAG_BCAST: i32 = 2;
pub(crate) const TAG_REDUCE: i32 = 3;
pub(crate) const TAG_GATHER: i32 = 4;
pub(crate) const TAG_SCATTER: i32 = 5;
pub(crate) const TAG_ALLTOALL: i32 = 6;
pub(crate) const TAG_SCAN: i32 = 7;
pub(crate) const TAG_ALLGATHER: i32 = 8;

/// The tag bits of collective call number `seq` on its communicator (the kind goes in the low
/// four bits): `Coll::numbered`'s, and `abi::collpair`'s, whose messages must be the same.
#[inline(always)]
pub(crate) fn tag_base(seq: u64) -> i32 {
    ((seq & 0x3ff_ffff) << 4) as i32
}
/// Ranks up to which the point-to-point allgather sends every part straight to every rank
/// (one step); a ring beyond.
const ALLGATHER_DIRECT_MAX: usize = 64;

/// Round `k` of the ring allgather at rank `r` of `n`: (the part it sends to its right
/// neighbour, the part it receives from its left one). Round 0 sends the own part; each
/// later round forwards the part received in the round before.
fn ring_step(r: usize, k: usize, n: usize) -> (usize, usize) {
    ((r + n - k % n) % n, (r + 2 * n - k % n - 1) % n)
}

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
}

/// Copies `src` into `dst` through the type maps (same type signature assumed).
///
/// # Safety
/// Both buffers must be valid for their counts.
pub unsafe fn local_copy(src: &Buf, dst: &Buf) {
    if src.dt.is_contiguous() && dst.dt.is_contiguous() {
        // Session 19: both are their packed bytes: one move, no packed buffer (coll11 counted
        // ~170 instructions of a V=1 8-byte Allgather in the packed Vec). What unpacking the
        // packed source would write: no more than either side holds.
        let n = (src.count * src.dt.size).min(dst.count * dst.dt.size);
        let (a, b) = (src.ptr as usize, dst.ptr as usize);
        if a.saturating_add(n) <= b || b.saturating_add(n) <= a {
            // SAFETY: each buffer holds its count's bytes at its address (the caller's
            // contract, `is_contiguous`), and the two ranges are disjoint (just checked).
            unsafe { crate::transport::copy::bytes(src.ptr, dst.ptr, n) };
        } else if a != b {
            // SAFETY: as above; `copy` allows the ranges to overlap (as the packed copy did).
            unsafe { std::ptr::copy(src.ptr, dst.ptr, n) };
        }
        return;
    }
    let mut v = Vec::with_capacity(src.count * src.dt.size);
    src.dt.pack(src.ptr, src.count, &mut v);
    dst.dt.unpack(&v, dst.ptr, dst.count);
}

/// One subrank per process (V = 1, one worker): no two members of any communicator share a
/// process. Read once from the launch's configuration.
#[inline]
pub(crate) fn one_per_process() -> bool {
    static ONE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ONE.get_or_init(|| crate::core::runtime::config().local() == 1)
}

/// Whether `count` elements of `dt` are laid out as the reduction's work buffer (a
/// contiguous type whose work elements are contiguous too, the same bytes): the caller's
/// buffers may then be sent, received into and combined as they are.
fn plain_operands(count: usize, dt: &DtRef, red: &Reducer) -> bool {
    let (n, w) = red.work(count, dt);
    dt.is_contiguous() && w.is_contiguous() && n * w.size == count * dt.size
}

/// The send operand of a reduction: `recv` itself under MPI_IN_PLACE.
pub(super) fn in_place(send: *const u8, recv: *mut u8) -> *const u8 {
    if send == c::MPI_IN_PLACE_ADDR as *const u8 {
        recv as *const u8
    } else {
        send
    }
}

/// The work of one collective call, bound to its arguments.
pub type CollJob = Box<dyn Fn(&Coll) -> MpiResult<()>>;

/// A collective call ready to run: in a helper task for a nonblocking one, and again at each
/// `MPI_Start` for a persistent one (which keeps the call number, hence the tags, it got at
/// initialisation: successive starts are ordered on every rank, and messages between two
/// ranks do not overtake each other, so each start's messages match its own receives).
pub struct CollOp {
    pub coll: Coll,
    pub job: CollJob,
    /// coll5: a persistent call planned once (`persist`): each start runs the plan, not `job`.
    pub plan: Option<persist::PlanRef>,
}

/// One subrank's side of one collective call on one communicator.
pub struct Coll {
    pub sub: usize,
    pub comm: CommRef,
    pub handle: usize,
    /// This call's number on the communicator.
    pub seq: u64,
    /// This call's number, shifted into the tag.
    tag_base: i32,
    /// When set, the algorithms run among these communicator ranks only (index = rank in
    /// the view), e.g. one representative per process.
    view: Option<(Arc<[i32]>, i32)>,
    /// Two-level steps taken so far in this call (one call may run several, e.g. the
    /// broadcasts of an allgather); every member takes them in the same order.
    /// Session 20: made at the first two-level step or view (a call at one member per process
    /// takes none: its allocation was a malloc and a free per call).
    steps: std::cell::OnceCell<Rc<Cell<u32>>>,
    /// This call's inter-process level runs as one real collective (`real::enrol`).
    pub real: bool,
    /// That real collective is the real MPI's blocking one (`solo`).
    pub solo: bool,
    /// Session 19: this call's point-to-point messages may go in request-free steps
    /// (`step`): a blocking call of the subrank's own task at one member per process.
    pub quick: bool,
}

impl Coll {
    /// Starts collective call number `comm.coll_seq` of subrank `sub` on communicator
    /// `handle` (whose current view is `comm`).
    pub fn new(sub: usize, comm: &CommRef, handle: usize) -> MpiResult<Coll> {
        let seq = state::with(|s| {
            let i = crate::core::comm::comm_index(handle)?;
            let c = s.locals[sub].comms.get_mut(i)?.as_mut()?;
            c.coll_seq += 1;
            Some(c.coll_seq)
        })?
        .unwrap_or(0);
        Ok(Coll::numbered(sub, comm.clone(), handle, seq))
    }

    /// Collective call number `seq` of subrank `sub` on communicator `handle` (whose view is
    /// `comm`), numbered by the caller (session 20: `abi::coll::At`, with the look-up).
    pub fn numbered(sub: usize, comm: CommRef, handle: usize, seq: u64) -> Coll {
        Coll {
            sub,
            comm,
            handle,
            seq,
            tag_base: tag_base(seq),
            view: None,
            steps: Default::default(),
            real: false,
            solo: false,
            quick: false,
        }
    }

    /// Numbers the next two-level step of this call.
    pub fn next_step(&self) -> u32 {
        let steps = self.steps();
        let k = steps.get();
        steps.set(k + 1);
        k
    }

    /// The same call restricted to `ranks` (which must hold this rank): its rank and size
    /// are those of the view, and the view's index i names communicator rank `ranks[i]`.
    pub fn view(&self, ranks: Arc<[i32]>) -> Coll {
        let me = ranks.iter().position(|&r| r == self.comm.rank).expect("a view holds its own rank") as i32;
        Coll {
            sub: self.sub,
            comm: self.comm.clone(),
            handle: self.handle,
            seq: self.seq,
            tag_base: self.tag_base,
            view: Some((ranks, me)),
            steps: self.steps().clone().into(),
            real: false,
            solo: false,
            quick: self.quick,
        }
    }

    /// The call's step counter, shared with its views and local forms.
    fn steps(&self) -> &Rc<Cell<u32>> {
        self.steps.get_or_init(Default::default)
    }

    /// Whether the two-level algorithms may run (not inside a view already).
    pub fn flat_only(&self) -> bool {
        self.view.is_some()
    }

    /// Communicator rank of view rank `r`.
    fn peer(&self, r: i32) -> i32 {
        match &self.view {
            Some((v, _)) => v[r as usize],
            None => r,
        }
    }

    /// The local group of an inter-communicator as an intra-communicator, for the phases of
    /// an inter-communicator collective that stay inside one group. Same call (tag base), on
    /// the local context, which the other group never uses towards this one.
    pub fn local(&self) -> Coll {
        let mut cm = CommRef::new(self.comm.local_ctx(), self.comm.group.clone(), self.comm.rank, "");
        cm.errhandler = self.comm.errhandler;
        Coll {
            sub: self.sub,
            comm: cm,
            handle: self.handle,
            seq: self.seq,
            tag_base: self.tag_base,
            view: None,
            steps: self.steps().clone().into(),
            real: false,
            solo: false,
            quick: self.quick,
        }
    }

    /// The context of this call's messages (the communicator's collective context).
    pub fn ctx(&self) -> u64 {
        self.comm.ctx | CTX_COLL
    }
    pub fn rank(&self) -> i32 {
        match &self.view {
            Some((_, me)) => *me,
            None => self.comm.rank,
        }
    }
    pub fn size(&self) -> i32 {
        match &self.view {
            Some((v, _)) => v.len() as i32,
            None => self.comm.size(),
        }
    }
    pub(super) unsafe fn isend(&self, b: &Buf, dest: i32, tag: i32) -> MpiResult<ReqId> {
        isend(
            self.sub,
            &self.comm,
            self.handle,
            self.ctx(),
            b.ptr,
            b.count,
            &b.dt,
            self.peer(dest),
            self.tag_base | tag,
            SendMode::Standard,
        )
    }
    pub(super) unsafe fn irecv(&self, b: &Buf, src: i32, tag: i32) -> MpiResult<ReqId> {
        irecv(
            self.sub,
            self.handle,
            self.ctx(),
            b.ptr,
            b.count,
            &b.dt,
            self.peer(src),
            self.tag_base | tag,
        )
    }
    /// A blocking send (a step when the call takes them, `step`).
    pub(super) unsafe fn send(&self, b: &Buf, dest: i32, tag: i32) -> MpiResult<()> {
        let mut pend = Vec::new();
        self.post(b, dest, tag, &mut pend)?;
        step::finish(&pend)
    }
    /// A blocking receive (a step when the call takes them, `step`).
    pub(super) unsafe fn recv(&self, b: &Buf, src: i32, tag: i32) -> MpiResult<()> {
        self.take(b, src, tag)
    }

    /// Dissemination barrier: ceil(log2 n) rounds.
    pub fn barrier(&self) -> MpiResult<()> {
        if self.comm.is_inter() {
            return self.inter_barrier();
        }
        if let Some(r) = hier::barrier(self) {
            return r;
        }
        let (n, r) = (self.size(), self.rank());
        let empty = Buf::new(std::ptr::null_mut(), 0, crate::core::datatype::byte());
        let mut k = 1;
        while k < n {
            // SAFETY: zero-length messages touch no memory.
            unsafe { self.trade(&empty, (r + k) % n, &empty, (r - k + n) % n, TAG_BARRIER)? };
            k *= 2;
        }
        Ok(())
    }

    /// Binomial-tree broadcast.
    ///
    /// # Safety
    /// `b` must be valid on every rank for its count.
    pub unsafe fn bcast(&self, b: &Buf, root: i32) -> MpiResult<()> {
        if self.comm.is_inter() {
            return self.inter_bcast(b, root);
        }
        if let Some(r) = hier::bcast(self, b, root) {
            return r;
        }
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
                self.post(b, (rel + mask + root) % n, TAG_BCAST, &mut sends)?;
            }
            mask >>= 1;
        }
        step::finish(&sends)
    }

    /// Reduction of `send` (or, with MPI_IN_PLACE, of `recv`) into `recv` at root.
    ///
    /// # Safety
    /// Buffers valid for `count` elements (recv only significant at root).
    pub unsafe fn reduce(&self, send: *const u8, recv: *mut u8, count: usize, dt: &DtRef, red: &Reducer, root: i32) -> MpiResult<()> {
        if self.comm.is_inter() {
            return self.inter_reduce(send, recv, count, dt, red, root);
        }
        if let Some(r) = hier::reduce(self, send, recv, count, dt, red, root) {
            return r;
        }
        if self.size() == 2 && plain_operands(count, dt, red) {
            return self.reduce_pair(send, recv, count, dt, red, root);
        }
        let mine = red.load(in_place(send, recv), count, dt);
        if let Some(a) = self.reduce_work(mine, count, dt, red, root)? {
            red.store(&a, recv, count, dt);
        }
        Ok(())
    }

    /// Session 20: `reduce` between two ranks whose operands are laid out as work buffers
    /// (`plain_operands`): the tree's messages (rank 1 sends its operand to rank 0, which
    /// combines rank 0's operand first and sends the result on to a root 1), each sent from
    /// and received into the caller's buffers where it can, without loading the operand into
    /// a work buffer and storing the result back (two copies of the vector and an allocation;
    /// coll11's Reduce 1 KiB at 2x1 was 1.23x MPICH). Each side decides for itself: the
    /// messages are the same as `reduce_work`'s, so the other rank may take either path.
    ///
    /// # Safety
    /// As `reduce`; `plain_operands(count, dt, red)` holds.
    unsafe fn reduce_pair(&self, send: *const u8, recv: *mut u8, count: usize, dt: &DtRef, red: &Reducer, root: i32) -> MpiResult<()> {
        let (n, w) = red.work(count, dt);
        let own = in_place(send, recv);
        let len = n * w.size;
        if self.rank() == 1 {
            self.send(&Buf::new(own as *mut u8, n, w.clone()), 0, TAG_REDUCE)?;
            if root == 1 {
                self.recv(&Buf::new(recv, n, w), 0, TAG_REDUCE)?;
            }
            return Ok(());
        }
        let (a, b) = (own as usize, recv as usize);
        if root == 0 && (a.saturating_add(len) <= b || b.saturating_add(len) <= a) {
            // The root's own operand apart from its receive buffer: rank 1's lands there and
            // the root's is combined into it (rank 0's first: recv = own op recv).
            self.recv(&Buf::new(recv, n, w), 1, TAG_REDUCE)?;
            red.apply_raw(own, recv, count, dt);
            return Ok(());
        }
        let mut tmp = vec![0u8; red.work_len(count, dt)];
        self.recv(&Buf::new(tmp.as_mut_ptr(), n, w.clone()), 1, TAG_REDUCE)?;
        red.apply_raw(own, tmp.as_mut_ptr(), count, dt);
        if root == 0 {
            red.store(&tmp, recv, count, dt);
            return Ok(());
        }
        self.send(&Buf::new(tmp.as_mut_ptr(), n, w), 1, TAG_REDUCE)
    }

    /// Reduces work buffers (this rank's operand in `acc`) to `root`, where the result
    /// comes back (None elsewhere). Binomial tree over rank order: every step combines a
    /// lower rank range with the next higher one, so non-commutative operations see their
    /// operands in rank order.
    ///
    /// # Safety
    /// `acc` is a work buffer for `count` elements of `dt`.
    pub unsafe fn reduce_work(&self, acc: Vec<u8>, count: usize, dt: &DtRef, red: &Reducer, root: i32) -> MpiResult<Option<Vec<u8>>> {
        let acc = self.reduce_to_zero(acc, count, dt, red)?;
        let r = self.rank();
        let (n, w) = red.work(count, dt);
        if root == 0 {
            return Ok(acc);
        }
        if r == 0 {
            let mut a = acc.expect("rank 0 holds the result");
            self.send(&Buf::new(a.as_mut_ptr(), n, w), root, TAG_REDUCE)?;
        } else if r == root {
            let mut a = vec![0u8; red.work_len(count, dt)];
            self.recv(&Buf::new(a.as_mut_ptr(), n, w), 0, TAG_REDUCE)?;
            return Ok(Some(a));
        }
        Ok(None)
    }

    /// The reduction's work buffer at rank 0 (None elsewhere).
    pub(super) unsafe fn reduce_to_zero(&self, mut acc: Vec<u8>, count: usize, dt: &DtRef, red: &Reducer) -> MpiResult<Option<Vec<u8>>> {
        let (nr, r) = (self.size(), self.rank());
        let (n, w) = red.work(count, dt);
        let mut tmp = vec![0u8; red.work_len(count, dt)];
        let mut mask = 1;
        while mask < nr {
            if r & mask != 0 {
                self.send(&Buf::new(acc.as_mut_ptr(), n, w.clone()), r - mask, TAG_REDUCE)?;
                return Ok(None);
            }
            if r + mask < nr {
                self.recv(&Buf::new(tmp.as_mut_ptr(), n, w.clone()), r + mask, TAG_REDUCE)?;
                // acc holds the lower ranks: result = acc op tmp (inout = in op inout).
                red.apply(&acc, &mut tmp, count, dt);
                std::mem::swap(&mut acc, &mut tmp);
            }
            mask <<= 1;
        }
        Ok(Some(acc))
    }

    /// # Safety
    /// Buffers valid for `count` elements.
    pub unsafe fn allreduce(&self, send: *const u8, recv: *mut u8, count: usize, dt: &DtRef, red: &Reducer) -> MpiResult<()> {
        if self.comm.is_inter() {
            return self.inter_allreduce(send, recv, count, dt, red);
        }
        if let Some(r) = hier::allreduce(self, send, recv, count, dt, red) {
            return r;
        }
        let acc = self.allreduce_work(red.load(in_place(send, recv), count, dt), count, dt, red)?;
        red.store(&acc, recv, count, dt);
        Ok(())
    }

    /// Allreduce of work buffers: by recursive doubling when the size is a power of two
    /// (log2 n exchange rounds, where reduce-then-broadcast takes twice as many dependent
    /// messages: one round instead of two at n = 2), else reduce to rank 0, then broadcast.
    ///
    /// # Safety
    /// `acc` is a work buffer for `count` elements of `dt`.
    pub unsafe fn allreduce_work(&self, acc: Vec<u8>, count: usize, dt: &DtRef, red: &Reducer) -> MpiResult<Vec<u8>> {
        let nr = self.size();
        if nr > 1 && (nr & (nr - 1)) == 0 {
            return self.allreduce_doubling(acc, count, dt, red);
        }
        let (n, w) = red.work(count, dt);
        let mut acc = self
            .reduce_to_zero(acc, count, dt, red)?
            .unwrap_or_else(|| vec![0u8; red.work_len(count, dt)]);
        self.bcast(&Buf::new(acc.as_mut_ptr(), n, w), 0)?;
        Ok(acc)
    }

    /// Recursive doubling over a power-of-two number of ranks: in round k each rank swaps
    /// its partial result with rank `r ^ 2^k` and combines the lower rank range's operand
    /// before the higher one's, so non-commutative operations see rank order and every rank
    /// combines the same operands in the same grouping as `reduce_to_zero`'s binomial tree
    /// (bitwise the same floating-point result on every rank, and as before).
    ///
    /// # Safety
    /// `acc` is a work buffer for `count` elements of `dt`.
    unsafe fn allreduce_doubling(&self, mut acc: Vec<u8>, count: usize, dt: &DtRef, red: &Reducer) -> MpiResult<Vec<u8>> {
        let (nr, r) = (self.size(), self.rank());
        let (n, w) = red.work(count, dt);
        let mut tmp = vec![0u8; red.work_len(count, dt)];
        let mut mask = 1;
        while mask < nr {
            let peer = r ^ mask;
            let (out, inb) = (Buf::new(acc.as_mut_ptr(), n, w.clone()), Buf::new(tmp.as_mut_ptr(), n, w.clone()));
            self.trade(&out, peer, &inb, peer, TAG_REDUCE)?;
            if peer < r {
                // The peer holds the lower ranks: acc = tmp op acc.
                red.apply(&tmp, &mut acc, count, dt);
            } else {
                // acc holds the lower ranks: tmp = acc op tmp.
                red.apply(&acc, &mut tmp, count, dt);
                std::mem::swap(&mut acc, &mut tmp);
            }
            mask <<= 1;
        }
        Ok(acc)
    }

    /// Gatherv: `parts[i]` is where rank i's data goes at root. `send` None = in place.
    ///
    /// # Safety
    /// Buffers valid as described by the arguments.
    pub unsafe fn gatherv(&self, send: Option<&Buf>, parts: &[Buf], root: i32) -> MpiResult<()> {
        if self.comm.is_inter() {
            return self.inter_gatherv(send, parts, root);
        }
        if self.real {
            return real::gather(self, send, parts, root);
        }
        let r = self.rank();
        if r != root {
            return self.send(send.expect("non-root has a send buffer"), root, TAG_GATHER);
        }
        if let Some(s) = send {
            local_copy(s, &parts[r as usize]);
        }
        // Session 19: small blocks in steps, one receive after the other (the messages are
        // all on their way: each rank sent at once).
        if self.quick && step::all_small(parts) {
            for (i, p) in parts.iter().enumerate().filter(|&(i, _)| i as i32 != r) {
                self.take(p, i as i32, TAG_GATHER)?;
            }
            return Ok(());
        }
        let mut reqs = Vec::new();
        for (i, p) in parts.iter().enumerate() {
            if i as i32 != r {
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
        if self.comm.is_inter() {
            return self.inter_scatterv(parts, recv, root);
        }
        if self.real {
            return real::scatter(self, parts, recv, root);
        }
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
                self.post(p, i as i32, TAG_SCATTER, &mut reqs)?;
            }
        }
        step::finish(&reqs)
    }

    /// Allgatherv over point-to-point: every rank sends its part straight to every other
    /// (one step; n - 1 messages per rank) up to `ALLGATHER_DIRECT_MAX` ranks, around a ring
    /// beyond (n - 1 steps of one message each way, every part forwarded as received). It
    /// used to gather to rank 0 and broadcast each part in turn: n + 1 dependent rounds of
    /// messages, three one-way latencies at n = 2 where one does.
    ///
    /// # Safety
    /// Buffers valid as described by the arguments.
    pub unsafe fn allgatherv(&self, send: Option<&Buf>, parts: &[Buf]) -> MpiResult<()> {
        if self.comm.is_inter() {
            return self.inter_allgatherv(send, parts);
        }
        if self.real {
            return real::allgather(self, send, parts);
        }
        if let Some(r) = hiergather::allgatherv(self, send, parts) {
            return r;
        }
        let (n, r) = (self.size(), self.rank());
        let ru = r as usize;
        // In place: the own part is already in its slot.
        if let Some(s) = send {
            local_copy(s, &parts[ru]);
        }
        let own = send.unwrap_or(&parts[ru]);
        let check = |sts: Vec<crate::core::request::Status>| -> MpiResult<()> {
            match sts.iter().find(|st| st.error != c::MPI_SUCCESS) {
                Some(st) => err(st.error, "gathered message larger than its slot (mismatched counts?)"),
                None => Ok(()),
            }
        };
        if n as usize <= ALLGATHER_DIRECT_MAX && self.quick && step::all_small(parts) {
            // Session 19: in steps, every send first (eager: complete at once), then each
            // part received in turn (all are on their way).
            let mut pend = Vec::new();
            for k in 1..n {
                self.post(own, (r + k) % n, TAG_ALLGATHER, &mut pend)?;
            }
            for k in 1..n {
                let from = (r - k + n) % n;
                self.take(&parts[from as usize], from, TAG_ALLGATHER)?;
            }
            return step::finish(&pend);
        }
        if n as usize <= ALLGATHER_DIRECT_MAX {
            let mut reqs = Vec::with_capacity(2 * (n as usize - 1));
            for k in 1..n {
                let from = (r - k + n) % n;
                reqs.push(self.irecv(&parts[from as usize], from, TAG_ALLGATHER)?);
            }
            for k in 1..n {
                reqs.push(self.isend(own, (r + k) % n, TAG_ALLGATHER)?);
            }
            return check(wait_all(&reqs)?);
        }
        let (left, right) = ((r - 1 + n) % n, (r + 1) % n);
        for k in 0..n - 1 {
            let (give, take) = ring_step(ru, k as usize, n as usize);
            let out = if k == 0 { own } else { &parts[give] };
            if self.quick {
                self.trade(out, right, &parts[take], left, TAG_ALLGATHER)?;
                continue;
            }
            let q = self.irecv(&parts[take], left, TAG_ALLGATHER)?;
            let s = self.isend(out, right, TAG_ALLGATHER)?;
            check(wait_all(&[q, s])?)?;
        }
        Ok(())
    }

    /// Alltoallv: every pair exchanges directly. `sends[i]`/`recvs[i]` for peer i.
    ///
    /// # Safety
    /// Buffers valid as described by the arguments (sends must not alias recvs).
    pub unsafe fn alltoallv(&self, sends: &[Buf], recvs: &[Buf]) -> MpiResult<()> {
        if self.comm.is_inter() {
            return self.inter_alltoallv(sends, recvs);
        }
        if self.real {
            return real::alltoall(self, sends, recvs);
        }
        let (n, r) = (self.size(), self.rank());
        if self.quick && step::all_small(recvs) {
            // Session 19: in steps, as `allgatherv`.
            let mut pend = Vec::new();
            for k in 1..n {
                let to = (r + k) % n;
                self.post(&sends[to as usize], to, TAG_ALLTOALL, &mut pend)?;
            }
            local_copy(&sends[r as usize], &recvs[r as usize]);
            for k in 1..n {
                let from = (r - k + n) % n;
                self.take(&recvs[from as usize], from, TAG_ALLTOALL)?;
            }
            return step::finish(&pend);
        }
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
    pub unsafe fn scan(&self, send: *const u8, recv: *mut u8, count: usize, dt: &DtRef, red: &Reducer, exclusive: bool) -> MpiResult<()> {
        let (nr, r) = (self.size(), self.rank());
        let (n, w) = red.work(count, dt);
        let mine = red.load(in_place(send, recv), count, dt);
        let mut prefix = vec![0u8; red.work_len(count, dt)];
        if r > 0 {
            self.recv(&Buf::new(prefix.as_mut_ptr(), n, w.clone()), r - 1, TAG_SCAN)?;
        }
        // Inclusive prefix through r: prefix(r-1) op mine.
        let mut incl = mine;
        if r > 0 {
            red.apply(&prefix, &mut incl, count, dt);
        }
        if r + 1 < nr {
            self.send(&Buf::new(incl.as_mut_ptr(), n, w), r + 1, TAG_SCAN)?;
        }
        if !exclusive {
            red.store(&incl, recv, count, dt);
        } else if r > 0 {
            red.store(&prefix, recv, count, dt);
        }
        Ok(())
    }

    /// Reduce_scatter by recursive halving (session 18), for a predefined operation over a
    /// power-of-two number of ranks: in each of log2 n rounds a rank swaps half of the blocks
    /// it still holds partial results for with the rank across the halving line (it sends the
    /// half whose ranks lie on the peer's side and combines the peer's data into its own
    /// half), so each rank ends with its block reduced over every rank; every byte crosses
    /// between two ranks once per round, and there is no root. Reducing to rank 0 and
    /// scattering took two dependent steps through one rank (at V=1, n=2, IMB Reduce_scatter
    /// 8 B: 1.37 µs against MPICH's 0.59). Predefined operations commute, so the grouping (the
    /// ranks across each line first) needs no rank order; it is the same at every call.
    ///
    /// # Safety
    /// As `reduce_scatter`; `src` holds the whole vector.
    unsafe fn reduce_scatter_halving(&self, src: *const u8, recv: *mut u8, counts: &[usize], dt: &DtRef, red: &Reducer) -> MpiResult<()> {
        let (nr, r) = (self.size() as usize, self.rank() as usize);
        let total: usize = counts.iter().sum();
        let mut acc = red.load(src, total, dt);
        // The work buffer's byte offset of the blocks of ranks `..q`, and its (elements, type)
        // for `k` user elements.
        let at = |q: usize| {
            let (n, w) = red.work(counts[..q].iter().sum(), dt);
            n * w.extent.max(0) as usize
        };
        let mut tmp = Vec::new();
        let (mut lo, mut hi, mut mask) = (0, nr, nr / 2);
        while mask > 0 {
            let peer = r ^ mask;
            let mid = lo + mask;
            let (keep, give) = if r < mid { ((lo, mid), (mid, hi)) } else { ((mid, hi), (lo, mid)) };
            let kcount: usize = counts[keep.0..keep.1].iter().sum();
            let gcount: usize = counts[give.0..give.1].iter().sum();
            let (kn, w) = red.work(kcount, dt);
            let (gn, _) = red.work(gcount, dt);
            tmp.resize(red.work_len(kcount, dt), 0);
            let inb = Buf::new(tmp.as_mut_ptr(), kn, w.clone());
            let out = Buf::new(acc.as_mut_ptr().add(at(give.0)), gn, w);
            self.trade(&out, peer as i32, &inb, peer as i32, TAG_REDUCE)?;
            let k = at(keep.0);
            red.apply(&tmp, &mut acc[k..], kcount, dt);
            (lo, hi, mask) = (keep.0, keep.1, mask / 2);
        }
        red.store(&acc[at(r)..], recv, counts[r], dt);
        Ok(())
    }

    /// Reduce then scatter `counts[i]` elements to rank i.
    ///
    /// # Safety
    /// Buffers valid for the counts.
    pub unsafe fn reduce_scatter(&self, send: *const u8, recv: *mut u8, counts: &[usize], dt: &DtRef, red: &Reducer) -> MpiResult<()> {
        if self.comm.is_inter() {
            return self.inter_reduce_scatter(send, recv, counts, dt, red);
        }
        let total: usize = counts.iter().sum();
        let r = self.rank() as usize;
        let ext = dt.extent.max(0) as usize;
        let in_place = send == c::MPI_IN_PLACE_ADDR as *const u8;
        let src = if in_place { recv as *const u8 } else { send };
        if self.real {
            // Session 16: each local member gets only its block (`hier::reduce_scatter`).
            if let Some(res) = crate::core::coll::hier::reduce_scatter(self, send, recv, counts, dt, red) {
                return res;
            }
            // Session 16: not zeroed (the allreduce writes all of it before the own block is
            // read): zeroing the whole vector at every rank cost as much as the reduction.
            let mut full: Vec<u8> = Vec::with_capacity((total * ext).max(1));
            // Enrolled for a real collective (`abi::coll::prep_reduce_scatter`: a predefined
            // operation from `TOUCAN_REAL_COLL_MIN` bytes): the whole vector reduced by one
            // two-level allreduce, whose inter-process step is one real MPI_Iallreduce, and each
            // rank keeps its block. Between processes that beats reducing to rank 0 and
            // scattering over point-to-point by far (coll4: IMB Reduce_scatter 64 KiB at n=2
            // V=4 took 996 µs, 4x one process with 8 ranks), and a real allreduce of the whole
            // vector costs MPICH less than its own Reduce_scatter on one node (IMB 64 KiB,
            // -np 2: 21 against 107 µs). A predefined operation always goes two-level.
            if let Some(res) = crate::core::coll::hier::allreduce(self, src, full.as_mut_ptr(), total, dt, red) {
                res?;
                let off: usize = counts[..r].iter().sum();
                let mine = Buf::new(full.as_mut_ptr().add(off * ext), counts[r], dt.clone());
                local_copy(&mine, &Buf::new(recv, counts[r], dt.clone()));
                return Ok(());
            }
        }
        // One member per process (V = 1): recursive halving. With several members per process
        // the two-level reduce below wins (2x4, loaded: halving 8 B 6.3-6.5 against 5.6-5.8 µs).
        let halving = self.size().count_ones() == 1 && self.size() > 1 && crate::core::runtime::config().local() == 1;
        if let (true, Reducer::Builtin { .. }) = (halving, red) {
            return self.reduce_scatter_halving(src, recv, counts, dt, red);
        }
        let mut full = vec![0u8; (total * ext).max(1)];
        self.reduce(src, full.as_mut_ptr(), total, dt, red, 0)?;
        let mut parts = Vec::with_capacity(counts.len());
        let mut off = 0;
        for &k in counts {
            parts.push(Buf::new(full.as_mut_ptr().add(off * ext), k, dt.clone()));
            off += k;
        }
        let mine = Buf::new(recv, counts[r], dt.clone());
        self.scatterv(&parts, Some(&mine), 0)
    }
}

#[cfg(test)]
mod tests {
    use super::ring_step;
    use rstest::rstest;

    /// Plays the ring allgather: every rank ends with every part, and each round sends
    /// exactly the part the rank received the round before (its own in round 0).
    #[rstest]
    #[case(2)]
    #[case(3)]
    #[case(65)]
    #[case(130)]
    fn ring_allgather_delivers_every_part(#[case] n: usize) {
        let mut have: Vec<Vec<bool>> = (0..n).map(|r| (0..n).map(|p| p == r).collect()).collect();
        let mut last: Vec<usize> = (0..n).collect();
        for k in 0..n - 1 {
            let sent: Vec<usize> = (0..n).map(|r| ring_step(r, k, n).0).collect();
            for r in 0..n {
                assert_eq!(sent[r], last[r], "rank {r} round {k} forwards what it got");
                assert!(have[r][sent[r]], "rank {r} round {k} sends a part it has");
            }
            for r in 0..n {
                let left = (r + n - 1) % n;
                let take = ring_step(r, k, n).1;
                assert_eq!(take, sent[left], "rank {r} round {k} names the part its left sends");
                assert!(!have[r][take], "rank {r} round {k} receives a new part");
                have[r][take] = true;
                last[r] = take;
            }
        }
        assert!(have.iter().all(|h| h.iter().all(|&x| x)));
    }
}
