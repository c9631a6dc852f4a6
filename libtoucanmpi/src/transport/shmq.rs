//! issue 16 (shmq16): control messages between the processes of one node through a shared
//! memory queue, instead of the real MPI's ring of wildcard receives.
//!
//! Every process of a node owns one bounded multi-producer single-consumer queue (Vyukov's
//! bounded queue) in one POSIX shared-memory segment that all of them map: a producer claims a
//! position with a compare-and-swap on the queue's tail, writes the message into that position's
//! cell and publishes it with a release store of the cell's sequence word; the owner reads
//! cells in place, in position order, and frees each one later with another release store.
//! One producer's messages keep their order (its positions increase), which is all MPI's
//! non-overtaking asks of a channel between two processes.
//!
//! A cell: the sequence word, the message's source process, destination and source
//! subranks and length, then the message (header and eager payload, as the ring carries it).

use super::real::{self as r, h, RComm, RealMpi};
use super::shm::Segment;
use std::collections::VecDeque;
use std::os::raw::{c_int, c_void};
use std::sync::atomic::{AtomicU64, Ordering};

/// Cells per queue (a power of two).
pub const CELLS: usize = 64;
/// Bytes before a cell's message: sequence word, then four `u32` (source process, destination
/// subrank, source subrank, length); 32 keeps the message 16-byte aligned.
const CELL_HDR: usize = 32;
/// Bytes of a queue's tail word (a cache line of its own, away from the cells).
const TAIL: usize = 64;
/// Longest message (header + payload) a cell may hold: with a larger eager limit the queue is
/// not used (64 cells of it per process would be too much memory).
pub const MSG_LIMIT: usize = (64 << 10) + 64;

/// Who sent a queued message, to whom, and how long it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Meta {
    pub src_proc: u32,
    pub dst_sub: u32,
    pub src_sub: u32,
    pub len: u32,
}

/// Bytes of one cell for messages of up to `msg_max` bytes (whole cache lines).
pub fn cell_len(msg_max: usize) -> usize {
    (CELL_HDR + msg_max).next_multiple_of(64)
}

/// Bytes of one queue for messages of up to `msg_max` bytes.
pub fn queue_len(msg_max: usize) -> usize {
    TAIL + CELLS * cell_len(msg_max)
}

/// A view of one queue in memory mapped by this process.
#[derive(Clone, Copy, Debug)]
pub struct Queue {
    base: *mut u8,
    cell_len: usize,
}

impl Queue {
    /// # Safety
    /// `base` must be 64-byte aligned and point at `queue_len(msg_max)` bytes that stay mapped
    /// while the view is used, and that every process touches only through `Queue` views of
    /// the same `msg_max`.
    pub unsafe fn at(base: *mut u8, msg_max: usize) -> Queue {
        Queue {
            base,
            cell_len: cell_len(msg_max),
        }
    }

    /// Longest message a cell holds.
    pub fn msg_max(&self) -> usize {
        self.cell_len - CELL_HDR
    }

    fn tail(&self) -> &AtomicU64 {
        // SAFETY: the first 8 bytes of the queue, aligned (`at`), only ever used atomically.
        unsafe { &*(self.base as *const AtomicU64) }
    }

    fn cell(&self, pos: u64) -> *mut u8 {
        let i = pos as usize & (CELLS - 1);
        // SAFETY: i < CELLS, so the cell is inside the queue's bytes (`at`).
        unsafe { self.base.add(TAIL + i * self.cell_len) }
    }

    fn seq(&self, pos: u64) -> &AtomicU64 {
        // SAFETY: a cell starts 64-byte aligned with its sequence word, only used atomically.
        unsafe { &*(self.cell(pos) as *const AtomicU64) }
    }

    /// Makes the queue empty; before any other process or thread uses it.
    pub fn reset(&self) {
        self.tail().store(0, Ordering::Relaxed);
        for i in 0..CELLS as u64 {
            self.seq(i).store(i, Ordering::Relaxed);
        }
    }

    /// Producer: `hdr` then `payload` as one message with `meta` (its `len` is set here), in
    /// the next free position. False when the queue is full (or the message too long).
    pub fn push(&self, mut meta: Meta, hdr: &[u8], payload: &[u8]) -> bool {
        let n = hdr.len() + payload.len();
        if n > self.msg_max() {
            return false;
        }
        meta.len = n as u32;
        let mut pos = self.tail().load(Ordering::Relaxed);
        loop {
            // Acquire: pairs with the consumer's release in `release`, so its reads of the
            // cell's previous message happen before our writes below.
            let seq = self.seq(pos).load(Ordering::Acquire);
            let dif = seq.wrapping_sub(pos) as i64;
            if dif == 0 {
                // Relaxed: the position is only a claim; the cell's contents are ordered by
                // its sequence word, not by the tail.
                match self
                    .tail()
                    .compare_exchange_weak(pos, pos + 1, Ordering::Relaxed, Ordering::Relaxed)
                {
                    Ok(_) => break,
                    Err(now) => pos = now,
                }
            } else if dif < 0 {
                return false;
            } else {
                pos = self.tail().load(Ordering::Relaxed);
            }
        }
        let cell = self.cell(pos);
        // SAFETY: the claim above makes this cell ours until we publish it: no producer
        // claims the position again and the consumer reads it only after the store below.
        // The writes stay inside the cell (n <= msg_max).
        unsafe {
            let m = cell.add(8) as *mut u32;
            m.write(meta.src_proc);
            m.add(1).write(meta.dst_sub);
            m.add(2).write(meta.src_sub);
            m.add(3).write(meta.len);
            let at = cell.add(CELL_HDR);
            std::ptr::copy_nonoverlapping(hdr.as_ptr(), at, hdr.len());
            super::copy::bytes(payload.as_ptr(), at.add(hdr.len()), payload.len());
        }
        // Release: the message written above is visible to the consumer's acquire load.
        self.seq(pos).store(pos + 1, Ordering::Release);
        true
    }

    /// Consumer: whether the message at position `pos` is published (`peek` would find it).
    #[inline(always)]
    pub fn published(&self, pos: u64) -> bool {
        // Acquire: pairs with the producer's release in `push`.
        self.seq(pos).load(Ordering::Acquire) == pos + 1
    }

    /// Consumer: the message at position `pos`, if published: its meta and its bytes in
    /// place (valid until `release(pos)`).
    #[inline(always)]
    pub fn peek(&self, pos: u64) -> Option<(Meta, *const u8)> {
        // Acquire: pairs with the producer's release in `push`.
        if self.seq(pos).load(Ordering::Acquire) != pos + 1 {
            return None;
        }
        let cell = self.cell(pos);
        // SAFETY: a published cell, the producer's writes visible (acquire above); nobody
        // writes it before we release it.
        let meta = unsafe {
            let m = cell.add(8) as *const u32;
            Meta {
                src_proc: m.read(),
                dst_sub: m.add(1).read(),
                src_sub: m.add(2).read(),
                len: m.add(3).read().min(self.msg_max() as u32),
            }
        };
        // SAFETY: inside the cell.
        Some((meta, unsafe { cell.add(CELL_HDR) } as *const u8))
    }

    /// Consumer: frees position `pos` (taken with `peek`) for the producer of one lap later.
    #[inline(always)]
    pub fn release(&self, pos: u64) {
        // Release: our reads of the cell happen before a producer's acquire sees it free.
        self.seq(pos).store(pos + CELLS as u64, Ordering::Release);
    }
}

/// This process's view of its node's queues.
///
/// A send to a full queue does not wait: the message is copied into the outbox of its
/// destination and pushed by later polls, in order, ahead of any later message to the same
/// destination (a sender waiting for room, draining its own queue meanwhile, deadlocks when
/// two processes each hold a taken cell, which blocks the next lap of their queue, while
/// sending to each other: the compat test `stress` hung that way).
pub struct NodeQueues {
    _seg: Segment,
    queues: Vec<Queue>,
    /// Queue index (node rank) of each world rank; `u32::MAX` off this node.
    index: Vec<u32>,
    me: usize,
    /// Next position to read of the own queue.
    head: u64,
    /// A cell taken by the last poll, freed at the next one.
    unfreed: Option<u64>,
    /// Messages that found their destination's queue full, per destination queue, oldest first.
    outbox: Vec<VecDeque<(Meta, Vec<u8>)>>,
    /// Session 25 (bcastq16): buffers of messages the outboxes pushed, kept for the next
    /// messages that find a queue full (at most `SPARE` of them): a flooding sender's outbox
    /// then copies into memory it already has instead of allocating and freeing per message.
    spare: Vec<Vec<u8>>,
    /// Messages in all outboxes.
    pub outboxed: usize,
    /// Some process of the job runs on another node (its messages come through the ring).
    pub remote: bool,
    polls: u32,
    /// Messages taken from the queue in a row (`ring_first`).
    streak: u32,
}

// SAFETY: the queues point into the segment this value owns; the consumer side is used by
// one thread at a time (the transport's lock), producers synchronise through the atomics.
unsafe impl Send for NodeQueues {}

/// Polls of the own queue between two looks at the real MPI's ring when no process is on
/// another node and no real request is pending (its progress engine still runs, for one-sided
/// traffic and anything else the real MPI does on its own).
pub const RING_EVERY: u32 = 64;

/// Messages in a row from the queue after which the ring goes first (`ring_first`).
const RING_FAIR: u32 = 16;

/// Session 25 (bcastq16): outbox buffers kept for reuse (`NodeQueues::spare`); at most this
/// many times a cell's message bytes (64 x 8.3 KiB with the default eager limit, when floods
/// of the largest eager messages filled them), usually a few KiB.
const SPARE: usize = 64;

impl NodeQueues {
    /// Whether the ring should be polled now (`remote` or every `RING_EVERY`th poll); the
    /// caller adds its own reasons (pending real requests).
    #[inline(always)]
    pub fn ring_due(&mut self) -> bool {
        self.polls = self.polls.wrapping_add(1);
        self.remote || self.polls.is_multiple_of(RING_EVERY)
    }

    /// With processes on other nodes: whether the ring goes before the queue this time, after
    /// `RING_FAIR` messages in a row from the queue (a queue that never empties must not keep
    /// a message of the ring waiting for ever).
    #[inline(always)]
    pub fn ring_first(&mut self) -> bool {
        if self.remote && self.streak >= RING_FAIR {
            self.streak = 0;
            return true;
        }
        false
    }

    /// Frees what the last poll took, then takes the next message of the own queue.
    #[inline(always)]
    pub fn take(&mut self) -> Option<(Meta, u64)> {
        if let Some(pos) = self.unfreed.take() {
            self.queues[self.me].release(pos);
        }
        let (meta, _) = self.queues[self.me].peek(self.head)?;
        let pos = self.head;
        self.head += 1;
        self.unfreed = Some(pos);
        self.streak += 1;
        Some((meta, pos))
    }

    /// Whether the next message of the own queue is published (what `take` would return).
    #[inline(always)]
    pub fn has_next(&self) -> bool {
        self.queues[self.me].published(self.head)
    }

    /// The bytes of the message taken by `take` at `pos` (valid until the next `take`).
    #[inline(always)]
    pub fn bytes(&self, meta: &Meta, pos: u64) -> &[u8] {
        match self.queues[self.me].peek(pos) {
            // SAFETY: the cell stays published and unreleased until the next `take`; meta.len
            // was clamped to the cell by `peek`.
            Some((_, p)) => unsafe { std::slice::from_raw_parts(p, meta.len as usize) },
            None => &[],
        }
    }

    /// Sends `hdr` + `payload` to queue `q` (an index from `index_of`): into a cell, or into the
    /// outbox when the queue is full or earlier messages to it wait there. Err when the
    /// message is longer than a cell.
    #[inline(always)]
    pub fn send(&mut self, q: usize, meta: Meta, hdr: &[u8], payload: &[u8]) -> Result<(), usize> {
        if self.outboxed == 0 && self.queues[q].push(meta, hdr, payload) {
            return Ok(());
        }
        self.send_later(q, meta, hdr, payload)
    }

    #[inline(never)]
    fn send_later(&mut self, q: usize, mut meta: Meta, hdr: &[u8], payload: &[u8]) -> Result<(), usize> {
        let max = self.queues[q].msg_max();
        if hdr.len() + payload.len() > max {
            return Err(max);
        }
        // Only this destination's outbox: order is per destination, and a poll pushes the
        // others (`flush`); looking at every process's outbox per send would cost a node of
        // many processes a pass over all of them for each message of a flood.
        self.flush_one(q);
        if self.outbox[q].is_empty() && self.queues[q].push(meta, hdr, payload) {
            return Ok(());
        }
        meta.len = (hdr.len() + payload.len()) as u32;
        let mut bytes = self.spare.pop().unwrap_or_default();
        bytes.clear();
        bytes.extend_from_slice(hdr);
        bytes.extend_from_slice(payload);
        self.outbox[q].push_back((meta, bytes));
        self.outboxed += 1;
        Ok(())
    }

    /// Pushes what the outboxes hold, in order per destination, until each queue is full.
    #[inline(never)]
    pub fn flush(&mut self) {
        for q in 0..self.outbox.len() {
            self.flush_one(q);
        }
    }

    /// Pushes what the outbox of queue `q` holds, in order, until the queue is full; the
    /// pushed messages' buffers go back to `spare`.
    fn flush_one(&mut self, q: usize) {
        let out = &mut self.outbox[q];
        while let Some((meta, bytes)) = out.front() {
            if !self.queues[q].push(*meta, bytes, &[]) {
                break;
            }
            let (_, bytes) = out.pop_front().expect("front just seen");
            self.outboxed -= 1;
            if self.spare.len() < SPARE {
                self.spare.push(bytes);
            }
        }
    }

    /// Longest message (header and payload) a cell holds (the same in every queue).
    #[inline(always)]
    pub fn cell_max(&self) -> usize {
        self.queues[self.me].msg_max()
    }

    /// The queue index of world rank `proc`, when it is on this node.
    #[inline(always)]
    pub fn index_of(&self, proc: usize) -> Option<usize> {
        self.index.get(proc).filter(|&&i| i != u32::MAX).map(|&i| i as usize)
    }
}

/// Sets the node's queues up (collective over the real `world`): every process of this node
/// says whether it wants them (`want`, and messages of at most `msg_max` bytes fit a cell);
/// when all do, the first creates the segment and every one maps it, and the name is removed
/// as soon as all have (a crash later leaves nothing in /dev/shm). None when some process did
/// not want it, could not map it, or is alone on its node.
pub fn setup(real: &RealMpi, world: RComm, want: bool, msg_max: usize) -> Result<Option<NodeQueues>, String> {
    let check = super::engine::check;
    let mut node: RComm = h(r::REAL_MPI_COMM_NULL);
    let (mut n, mut me, mut everyone, mut rank): (c_int, c_int, c_int, c_int) = (0, 0, 0, 0);
    // SAFETY: plain calls on live real communicators with valid out-pointers.
    unsafe {
        check(
            real.PMPI_Comm_split_type(world, r::REAL_MPI_COMM_TYPE_SHARED as c_int, 0, h(r::REAL_MPI_INFO_NULL), &mut node),
            "MPI_Comm_split_type",
        )?;
        check(real.PMPI_Comm_size(node, &mut n), "MPI_Comm_size")?;
        check(real.PMPI_Comm_rank(node, &mut me), "MPI_Comm_rank")?;
        check(real.PMPI_Comm_size(world, &mut everyone), "MPI_Comm_size")?;
        check(real.PMPI_Comm_rank(world, &mut rank), "MPI_Comm_rank")?;
    }
    let r = setup_on(
        real,
        node,
        n as usize,
        me as usize,
        everyone as usize,
        rank as u32,
        want && msg_max <= MSG_LIMIT,
        msg_max,
    );
    // SAFETY: our own communicator.
    unsafe { real.PMPI_Comm_free(&mut node) };
    r
}

/// `setup` over the node communicator `node` (`n` processes, this one `me`).
#[allow(clippy::too_many_arguments)]
fn setup_on(
    real: &RealMpi,
    node: RComm,
    n: usize,
    me: usize,
    everyone: usize,
    rank: u32,
    want: bool,
    msg_max: usize,
) -> Result<Option<NodeQueues>, String> {
    let check = super::engine::check;
    let byte = h(r::REAL_MPI_BYTE);
    let mine = [rank.to_le_bytes(), (want as u32).to_le_bytes()].concat();
    let all = super::engine::allgather_bytes(real, node, n, &mine)?;
    let ranks: Vec<usize> = all
        .chunks(8)
        .map(|e| u32::from_le_bytes([e[0], e[1], e[2], e[3]]) as usize)
        .collect();
    if n < 2 || !all.chunks(8).all(|e| e[4] != 0) {
        return Ok(None);
    }
    let qlen = queue_len(msg_max);
    let total = qlen * n;
    let mut name = [0u8; 64];
    let mut seg = None;
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let label = format!("/toucan-shmq-{}-{stamp:x}", std::process::id());
    if me == 0 {
        if let Ok(s) = Segment::map(&label, total, true) {
            for i in 0..n {
                // SAFETY: queue i lies inside the fresh mapping (total = n * qlen bytes, page
                // aligned; qlen is a multiple of 64); nobody else has it yet.
                unsafe { Queue::at((s.ptr + i * qlen) as *mut u8, msg_max) }.reset();
            }
            seg = Some(s);
            name[..label.len()].copy_from_slice(label.as_bytes());
        }
    }
    // SAFETY: 64 bytes, the same on every process.
    check(
        unsafe { real.PMPI_Bcast(name.as_mut_ptr() as *mut c_void, 64, byte, 0, node) },
        "MPI_Bcast",
    )?;
    let len = name.iter().position(|&b| b == 0).unwrap_or(64);
    let name = String::from_utf8_lossy(&name[..len]).into_owned();
    if me != 0 && len > 0 {
        seg = Segment::map(&name, total, false).ok();
    }
    let ok = [seg.is_some() as u8];
    let oks = super::engine::allgather_bytes(real, node, n, &ok)?;
    if me == 0 && len > 0 {
        Segment::unlink(&name);
    }
    let Some(seg) = seg.filter(|_| oks.iter().all(|&b| b != 0)) else {
        return Ok(None);
    };
    // SAFETY: each queue lies inside the mapping, which the returned value owns.
    let queues = (0..n)
        .map(|i| unsafe { Queue::at((seg.ptr + i * qlen) as *mut u8, msg_max) })
        .collect();
    let mut index = vec![u32::MAX; everyone];
    for (i, &p) in ranks.iter().enumerate() {
        if p < everyone {
            index[p] = i as u32;
        }
    }
    Ok(Some(NodeQueues {
        _seg: seg,
        queues,
        index,
        me,
        head: 0,
        unfreed: None,
        outbox: (0..n).map(|_| VecDeque::new()).collect(),
        spare: Vec::new(),
        outboxed: 0,
        remote: n < everyone,
        polls: 0,
        streak: 0,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    /// Memory for one queue of `msg_max`-byte messages, 64-byte aligned.
    fn memory(msg_max: usize) -> Vec<[u64; 8]> {
        vec![[0u64; 8]; queue_len(msg_max) / 64]
    }

    fn meta(src: u32) -> Meta {
        Meta {
            src_proc: src,
            dst_sub: 1,
            src_sub: 2,
            len: 0,
        }
    }

    fn read(q: &Queue, pos: u64) -> Option<(Meta, Vec<u8>)> {
        let (m, p) = q.peek(pos)?;
        // SAFETY: a published cell of m.len bytes.
        Some((m, unsafe { std::slice::from_raw_parts(p, m.len as usize) }.to_vec()))
    }

    #[rstest]
    #[case::tiny(40, 3)]
    #[case::laps(40, CELLS * 5 + 7)]
    #[case::big_cells(8192 + 40, CELLS * 2 + 1)]
    fn wraps_around_in_order(#[case] msg_max: usize, #[case] count: usize) {
        let mut mem = memory(msg_max);
        // SAFETY: the memory is aligned and queue_len bytes long.
        let q = unsafe { Queue::at(mem.as_mut_ptr() as *mut u8, msg_max) };
        q.reset();
        for i in 0..count as u64 {
            let body = vec![i as u8; (i as usize * 7) % (msg_max - 4)];
            assert!(q.push(meta(i as u32), &(i as u32).to_le_bytes(), &body));
            let (m, bytes) = read(&q, i).expect("published");
            assert_eq!((m.src_proc, m.dst_sub, m.src_sub, m.len as usize), (i as u32, 1, 2, 4 + body.len()));
            assert_eq!(&bytes[..4], &(i as u32).to_le_bytes());
            assert_eq!(&bytes[4..], &body[..]);
            q.release(i);
            assert!(q.peek(i + 1).is_none());
        }
    }

    /// `published` (the progress step's look for a next queued message) agrees with `peek`,
    /// before a push, after it, after its release and one lap later.
    #[rstest]
    #[case::first_lap(0, 3)]
    #[case::later_lap(CELLS as u64 + 5, 2)]
    #[case::full_lap(7, CELLS)]
    fn published_agrees_with_peek(#[case] start: u64, #[case] pushed: usize) {
        let mut mem = memory(40);
        // SAFETY: as above.
        let q = unsafe { Queue::at(mem.as_mut_ptr() as *mut u8, 40) };
        q.reset();
        for i in 0..start {
            assert!(q.push(meta(0), &[1], &[]));
            q.release(i);
        }
        assert!(!q.published(start), "nothing pushed yet");
        for _ in 0..pushed {
            assert!(q.push(meta(0), &[2], &[]));
        }
        for pos in start..start + pushed as u64 + 2 {
            assert_eq!(q.published(pos), q.peek(pos).is_some(), "position {pos}");
            assert_eq!(q.published(pos), pos < start + pushed as u64);
        }
        q.release(start);
        assert!(!q.published(start), "a released cell is not published again");
    }

    #[rstest]
    #[case(0)]
    #[case(CELLS / 2)]
    fn full_until_freed(#[case] start: usize) {
        let mut mem = memory(40);
        // SAFETY: as above.
        let q = unsafe { Queue::at(mem.as_mut_ptr() as *mut u8, 40) };
        q.reset();
        for i in 0..start as u64 {
            assert!(q.push(meta(0), &[1], &[]));
            q.release(i);
        }
        for _ in 0..CELLS {
            assert!(q.push(meta(0), &[2], &[]));
        }
        assert!(!q.push(meta(0), &[3], &[]), "a full queue refuses");
        q.release(start as u64);
        assert!(q.push(meta(0), &[4], &[]), "one freed cell takes one message");
        assert!(!q.push(meta(0), &[5], &[]));
        assert!(!q.push(meta(0), &[0; 200], &[]), "longer than a cell");
    }

    #[rstest]
    #[case(2, 5000)]
    #[case(4, 3000)]
    fn producers_on_threads_keep_their_order(#[case] producers: usize, #[case] each: u32) {
        let msg_max = 64;
        let mut mem = memory(msg_max);
        let base = mem.as_mut_ptr() as usize;
        // SAFETY: as above; the memory outlives the scope's threads.
        let q = unsafe { Queue::at(base as *mut u8, msg_max) };
        q.reset();
        std::thread::scope(|s| {
            for p in 0..producers as u32 {
                s.spawn(move || {
                    // SAFETY: as above.
                    let q = unsafe { Queue::at(base as *mut u8, msg_max) };
                    for i in 0..each {
                        while !q.push(meta(p), &i.to_le_bytes(), &[p as u8; 9]) {
                            std::hint::spin_loop();
                        }
                    }
                });
            }
            let mut next = vec![0u32; producers];
            let mut pos = 0u64;
            while next.iter().any(|&n| n < each) {
                let Some((m, bytes)) = read(&q, pos) else {
                    std::hint::spin_loop();
                    continue;
                };
                let p = m.src_proc as usize;
                assert_eq!(
                    u32::from_le_bytes(bytes[..4].try_into().unwrap()),
                    next[p],
                    "producer {p} out of order"
                );
                assert_eq!(&bytes[4..], &[p as u8; 9]);
                next[p] += 1;
                q.release(pos);
                pos += 1;
            }
        });
    }

    /// A node's queues over plain memory: `n` processes, this one `me`.
    fn node(mem: &mut [[u64; 8]], n: usize, me: usize, msg_max: usize) -> NodeQueues {
        let qlen = queue_len(msg_max);
        let queues: Vec<Queue> = (0..n)
            // SAFETY: each queue inside `mem`.
            .map(|i| unsafe { Queue::at((mem.as_mut_ptr() as *mut u8).add(i * qlen), msg_max) })
            .collect();
        queues.iter().for_each(|q| q.reset());
        NodeQueues {
            _seg: Segment::private(1).unwrap(),
            queues,
            index: (0..n as u32).collect(),
            me,
            head: 0,
            unfreed: None,
            outbox: (0..n).map(|_| VecDeque::new()).collect(),
            spare: Vec::new(),
            outboxed: 0,
            remote: false,
            polls: 0,
            streak: 0,
        }
    }

    #[rstest]
    #[case::alone_on_the_node(false, None)]
    #[case::other_nodes(true, Some(RING_FAIR as usize))]
    fn the_ring_goes_first_after_a_streak(#[case] remote: bool, #[case] after: Option<usize>) {
        let msg_max = 48;
        let mut mem = vec![[0u64; 8]; queue_len(msg_max) * 2 / 64];
        let mut nq = node(&mut mem, 2, 0, msg_max);
        nq.remote = remote;
        let mut first = None;
        for i in 0..3 * RING_FAIR as usize {
            if nq.ring_first() {
                first = first.or(Some(i));
                continue;
            }
            nq.send(0, meta(1), &[i as u8], &[]).unwrap();
            assert!(nq.take().is_some());
        }
        assert_eq!(first, after);
    }

    #[rstest]
    #[case::one_lap(CELLS as u32 + 3)]
    #[case::laps(CELLS as u32 * 4 + 3)]
    fn full_queues_send_later_in_order(#[case] count: u32) {
        let msg_max = 48;
        let mut mem = vec![[0u64; 8]; queue_len(msg_max) * 2 / 64];
        // Process 0 sends to itself (queue 0) and to process 1 (queue 1), which never reads.
        let mut nq = node(&mut mem, 2, 0, msg_max);
        // One message taken and not yet freed blocks the queue's next lap.
        nq.send(0, meta(0), &0u32.to_le_bytes(), &[]).unwrap();
        let (m, pos) = nq.take().unwrap();
        assert_eq!(pos, 0);
        let mut got = Vec::new();
        for i in 1..count {
            nq.send(0, meta(0), &i.to_le_bytes(), &[]).unwrap();
            nq.send(1, meta(0), &i.to_le_bytes(), &[]).unwrap();
            if i == 2 {
                assert_eq!(nq.bytes(&m, pos), &0u32.to_le_bytes(), "the taken message is still readable");
            }
            if i as usize == CELLS + 1 {
                assert_eq!(nq.outbox[1].len(), 1, "a full queue: the outbox has it");
            }
            if i % 3 == 0 {
                nq.flush();
                while let Some((m, pos)) = nq.take() {
                    got.push(u32::from_le_bytes(nq.bytes(&m, pos).try_into().unwrap()));
                    if got.len() % 7 == 0 {
                        break;
                    }
                }
            }
        }
        loop {
            nq.flush();
            match nq.take() {
                Some((m, pos)) => got.push(u32::from_le_bytes(nq.bytes(&m, pos).try_into().unwrap())),
                None if nq.outbox[0].is_empty() => break,
                None => {}
            }
        }
        assert_eq!(got, (1..count).collect::<Vec<_>>());
        assert_eq!(nq.outbox[1].len() + CELLS, count as usize - 1, "queue 1 full, the rest waits");
        assert!(nq.send(1, meta(0), &[0; 200], &[]).is_err(), "longer than a cell");
    }

    /// Session 25 (bcastq16): the outbox reuses the buffers of messages it pushed (a buffer
    /// that held a longer message holds a shorter one exactly), keeps at most `SPARE` of them,
    /// and a send to one destination leaves the other destinations' outboxes to the polls.
    #[rstest]
    #[case::short_after_long(CELLS * 3, 40)]
    #[case::one_lap(CELLS + 5, 1)]
    #[case::many_laps(CELLS * 9 + 1, 33)]
    fn outbox_buffers_are_reused(#[case] count: usize, #[case] step: usize) {
        let msg_max = 200;
        let mut mem = vec![[0u64; 8]; queue_len(msg_max) * 3 / 64];
        // Process 0 floods processes 1 and 2 (queues 1 and 2), which read in rounds.
        let mut nq = node(&mut mem, 3, 0, msg_max);
        let body = |i: usize| vec![i as u8; (i * step) % (msg_max - 8)];
        let (mut next, mut sent) = (vec![0usize; 3], 0usize);
        let mut reader = [0u64; 3];
        while next[1] < count || next[2] < count {
            for _ in 0..CELLS / 2 {
                if sent < count {
                    nq.send(1, meta(0), &(sent as u32).to_le_bytes(), &body(sent)).unwrap();
                    sent += 1;
                    assert!(nq.spare.len() <= SPARE);
                }
            }
            if sent == count && next[2] == 0 {
                // Queue 2's outbox waits while sends go to queue 1 only: only a poll pushes it.
                for i in 0..CELLS + 3 {
                    nq.send(2, meta(0), &(i as u32).to_le_bytes(), &body(i)).unwrap();
                }
                let waiting = nq.outbox[2].len();
                nq.send(1, meta(0), &[], &[]).unwrap();
                assert_eq!(nq.outbox[2].len(), waiting, "a send flushes its own outbox only");
                next[2] = count - (CELLS + 3);
            }
            // Queues 1 and 2 read what is there, in order, and free it.
            for q in 1..3 {
                while let Some((m, p)) = nq.queues[q].peek(reader[q]) {
                    // SAFETY: a published cell of m.len bytes.
                    let bytes = unsafe { std::slice::from_raw_parts(p, m.len as usize) };
                    if bytes.is_empty() {
                        assert_eq!(q, 1);
                    } else {
                        let i = u32::from_le_bytes(bytes[..4].try_into().unwrap()) as usize;
                        let base = if q == 2 { count - (CELLS + 3) } else { 0 };
                        assert_eq!(i + base, next[q], "queue {q} in order");
                        assert_eq!(&bytes[4..], &body(i)[..], "queue {q} message {i} intact");
                        next[q] += 1;
                    }
                    nq.queues[q].release(reader[q]);
                    reader[q] += 1;
                }
            }
            nq.flush();
        }
        assert_eq!(nq.outboxed, 0);
        assert!(!nq.spare.is_empty() && nq.spare.len() <= SPARE, "buffers kept for reuse");
    }
}
