//! Collectives among subranks of one process, in shared memory (issue 16, deliverable 1).
//!
//! A communicator whose members all live in this process (siblings on one worker, cousins on
//! others) gets a `Team`: one slot per member and one arrival counter. A blocking collective
//! on it needs no message and no matching queue:
//!
//! 1. each member writes a pointer to its arguments (`Part`, on its own stack) into its slot
//!    and counts itself in on the arrival tree (smp7): at its leaf (the members whose home
//!    is its worker), and, when it is the last there, at the nodes above, up to the root;
//! 2. the member that completes the root does the whole call from the members' buffers
//!    (copies each byte once, reduces in rank order into one work buffer and writes the
//!    results), then advances the team's generation and wakes the others: its own leaf's
//!    members, and on the other branches the member that completed each (its delegate),
//!    which wakes its own in turn (`wake_below`);
//! 3. the others wait for the generation to move: parked (their siblings run meanwhile), or,
//!    at several workers with nothing else to run, spinning briefly first for a cousin (a
//!    spinning member is not woken: it names its task only when it parks, `wait`).
//!
//! With one worker the tree is one leaf (the root): one atomic add per member, as before.
//!
//! A member that leaves early (a non-root of Reduce or Gather) may start the next call while
//! the one it left is still open (session 20): the slots' cells, the tree's counts and the
//! Reduce's fold come in two halves, for calls of even and odd generations, so it parks only
//! when it reaches the call after that one before the call it left is closed. Before, it parked
//! at its next call until the last arrival closed the previous one (IMB's Reduce loop at 1x8:
//! 14 parks per Reduce + Barrier round instead of 8).
//!
//! The generation orders consecutive calls on one communicator (every member calls them in
//! the same order, MPI's rule), different communicators have different teams, and nothing
//! goes through the point-to-point queues, so collectives never match user messages. The
//! nonblocking and persistent forms and the communicators spanning processes keep the
//! algorithms of `coll` and `hier` (`Part` turns into their job). Every member takes the same
//! decision: whether the communicator lies in this process, and whether the program has
//! thread-locals (then buffers may live in a block another subrank's values occupy while
//! their owner is switched out, `core::tlsbuf`: such programs keep the two-level path).

use super::reduce::Reducer;
use super::{in_place, op, Buf};
use crate::consts as c;
use crate::core::comm::{CommRef, TeamCell};
use crate::core::datatype::DtRef;
use crate::core::error::{err, MpiError, MpiResult};
use crate::core::state;
use crate::sched;
use crate::sched::lock::Lock;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// One block of a buffer, borrowed.
#[derive(Clone, Copy)]
pub struct View<'a> {
    pub(crate) ptr: *mut u8,
    pub(crate) count: usize,
    pub(crate) dt: &'a DtRef,
}

impl<'a> From<&'a Buf> for View<'a> {
    fn from(b: &'a Buf) -> View<'a> {
        View {
            ptr: b.ptr,
            count: b.count,
            dt: &b.dt,
        }
    }
}

/// A buffer split into one block per peer: `count` elements of one type each, back to back
/// (no list to build for the plain forms), or any list (the v- and w-forms).
pub enum Blocks {
    Equal { ptr: *mut u8, count: usize, dt: DtRef, n: usize },
    List(Vec<Buf>),
}

impl Blocks {
    pub fn len(&self) -> usize {
        match self {
            Blocks::Equal { n, .. } => *n,
            Blocks::List(v) => v.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Block `i`, if there is one.
    pub fn get(&self, i: usize) -> Option<View<'_>> {
        match self {
            Blocks::Equal { ptr, count, dt, n } => (i < *n).then(|| View {
                ptr: ptr.wrapping_offset((i * count) as isize * dt.extent),
                count: *count,
                dt,
            }),
            Blocks::List(v) => v.get(i).map(View::from),
        }
    }
    /// Every block as a `Buf`, the blocks left in place.
    pub fn to_vec(&self) -> Vec<Buf> {
        match self {
            Blocks::Equal { ptr, count, dt, n } => (0..*n).map(|i| Buf::new(*ptr, 0, dt.clone()).at(i * count, *count)).collect(),
            Blocks::List(v) => v.clone(),
        }
    }
    /// Every block as a `Buf` (a list moves out as it is).
    pub fn into_vec(self) -> Vec<Buf> {
        match self {
            Blocks::List(v) => v,
            equal => equal.to_vec(),
        }
    }
}

/// The arguments of one collective call, checked and owned. The blocking form lends them to
/// its team; the others become a job over point-to-point (`abi::coll`).
pub enum Part {
    /// A rank with no part (MPI_PROC_NULL in a rooted inter-communicator collective).
    Idle,
    Barrier,
    Bcast {
        buf: Buf,
        root: i32,
    },
    /// Reduce (`root` Some) or Allreduce; `send` may be MPI_IN_PLACE.
    Reduce {
        send: *const u8,
        recv: *mut u8,
        count: usize,
        dt: DtRef,
        red: Reducer,
        root: Option<i32>,
    },
    /// Gather(v): `send` None at an in-place root; `parts` (root only) one block per rank.
    Gather {
        send: Option<Buf>,
        parts: Blocks,
        root: i32,
    },
    /// Scatter(v): `parts` (root only) one block per rank; `recv` None at an in-place root.
    Scatter {
        parts: Blocks,
        recv: Option<Buf>,
        root: i32,
    },
    /// Allgather(v): `send` None in place (the own block of `parts` holds the data).
    Allgather {
        send: Option<Buf>,
        parts: Blocks,
    },
    /// Alltoall(v, w): `sends` None in place (the data is in `recvs`).
    Alltoall {
        sends: Option<Blocks>,
        recvs: Blocks,
    },
    /// Reduce_scatter(_block): rank i gets `counts[i]` elements; `send` may be MPI_IN_PLACE.
    ReduceScatter {
        send: *const u8,
        recv: *mut u8,
        counts: Vec<usize>,
        dt: DtRef,
        red: Reducer,
    },
    Scan {
        send: *const u8,
        recv: *mut u8,
        count: usize,
        dt: DtRef,
        red: Reducer,
        exclusive: bool,
    },
}

impl Part {
    /// Which collective: members of one call must agree.
    pub(super) fn kind(&self) -> u8 {
        match self {
            Part::Idle => 0,
            Part::Barrier => 1,
            Part::Bcast { .. } => 2,
            Part::Reduce { .. } => 3,
            Part::Gather { .. } => 4,
            Part::Scatter { .. } => 5,
            Part::Allgather { .. } => 6,
            Part::Alltoall { .. } => 7,
            Part::ReduceScatter { .. } => 8,
            Part::Scan { .. } => 9,
        }
    }

    /// Whether member `rank` may leave as soon as it has counted itself in, its contribution
    /// copied into its slot: a non-root of Gather and Reduce, which gets nothing back (as a
    /// small send returns before it is received).
    fn early(&self, rank: i32) -> bool {
        match self {
            Part::Gather { root, .. } => *root != rank,
            Part::Reduce { root: Some(root), .. } => *root != rank,
            _ => false,
        }
    }
}

/// What the combiner reads and writes of the members of one call: a blocking call's slots
/// (`Team`) or a nonblocking or persistent call's record (`teamcall::Call`).
pub(super) trait Members {
    /// How many members.
    fn count(&self) -> usize;
    /// Which collective member `i` called (`Part::kind`).
    ///
    /// # Safety
    /// Called by the combiner, every member counted in.
    unsafe fn kind(&self, i: usize) -> u8;
    /// Member `i`'s arguments.
    ///
    /// # Safety
    /// As `kind`; not for a member that left early (`staged`).
    unsafe fn part(&self, i: usize) -> &Part;
    /// Whether member `i` left early, its data in its stage.
    ///
    /// # Safety
    /// As `kind`.
    unsafe fn staged(&self, i: usize) -> bool;
    /// The staged data of member `i`.
    ///
    /// # Safety
    /// As `kind`, for a member that left early.
    unsafe fn stage(&self, i: usize) -> &[u8];
    /// Records member `i`'s error of this call.
    ///
    /// # Safety
    /// Called by the combiner before the members learn that the call is over.
    unsafe fn fail(&self, i: usize, e: MpiError);
    /// Takes member `i`'s error of this call.
    ///
    /// # Safety
    /// As `fail`, or by member `i` once the call is over.
    unsafe fn take_error(&self, i: usize) -> Option<MpiError>;
    /// `fail` for the error of `r`, if any.
    ///
    /// # Safety
    /// As `fail`.
    unsafe fn check(&self, i: usize, r: MpiResult<()>) {
        if let Err(e) = r {
            // SAFETY: as the caller's.
            unsafe { self.fail(i, e) };
        }
    }
}

/// What a member leaves in its slot for one call. A slot has two, used by calls of even and
/// odd generations (`half`): a member that left call g early may start call g + 1 while g is
/// still open, its part of g still to be read (session 20).
struct Half {
    /// The member's `Part` during a call (written by the member before it counts itself in;
    /// stale once a member that left early has gone: read only when `staged` is false).
    part: UnsafeCell<*const Part>,
    /// Which collective the member called (`Part::kind`).
    kind: UnsafeCell<u8>,
    /// The member left at once and its data is in `stage` (see `Part::early`).
    staged: UnsafeCell<bool>,
    /// Packed send data (Gather) or work buffer (Reduce) of a member that left early.
    stage: UnsafeCell<Vec<u8>>,
    /// The member's task, to wake (usize::MAX: it does not wait, or spins and sees the
    /// generation move by itself).
    task: AtomicUsize,
    /// The member's error in the call (written by the combiner before the generation
    /// moves, taken by the member after).
    error: UnsafeCell<Option<MpiError>>,
}

impl Half {
    fn new() -> Half {
        Half {
            part: UnsafeCell::new(std::ptr::null()),
            kind: UnsafeCell::new(0),
            staged: UnsafeCell::new(false),
            stage: UnsafeCell::new(Vec::new()),
            task: AtomicUsize::new(usize::MAX),
            error: UnsafeCell::new(None),
        }
    }
}

/// The half of the slots, nodes and folds that call `g` uses.
#[inline(always)]
fn half(g: u64) -> usize {
    (g & 1) as usize
}

/// One member's place in the team, on a cache line of its own.
#[repr(align(64))]
struct Slot {
    /// The member's cells for calls of even and odd generations.
    halves: [Half; 2],
    /// The generation of the member's next call (only the member touches it).
    next: UnsafeCell<u64>,
    /// The number of the member's next nonblocking or persistent call (only the member
    /// touches it; `teamcall`).
    next_call: UnsafeCell<u64>,
    /// The member's leaf of the arrival tree (fixed).
    leaf: usize,
}

#[repr(align(64))]
struct Padded<T>(T);

/// Work space of the combining member (one at a time: the last arrival of a call).
#[derive(Default)]
pub(super) struct Scratch {
    acc: Vec<u8>,
    x: Vec<u8>,
    /// The members' operands of a reduction combined in place (`reduce_direct`).
    operands: Vec<*const u8>,
}

/// A node of the arrival tree (smp7), on cache lines of its own. A leaf gathers the members
/// whose home is one worker, so they count themselves in on a line that stays in that
/// worker's cache; the nodes above gather up to `FAN_IN` nodes each. The last arrival at a
/// node goes on to its parent; the one that completes the root combines.
#[repr(align(128))]
struct Node {
    /// Arrivals still missing in the current call of each half: counts down from the number
    /// of children, and the last one sets it back before it goes on (nobody counts in for
    /// the call two generations on before the generation moves past this one).
    left: [AtomicUsize; 2],
    /// Members (a leaf) or nodes (above).
    children: Box<[usize]>,
    leaf: bool,
    /// The parent node (`NONE` at the root).
    parent: usize,
    /// The member that completed this node in the current call and waits for the call's
    /// end (`NONE`: it left early): it wakes the others under the node then (`wake_path`).
    /// Written before its completer counts in at the parent, read by whoever completes an
    /// ancestor, after the generation moves. One per half, as `left`.
    delegate: [AtomicUsize; 2],
}

/// No node, no member.
const NONE: usize = usize::MAX;
/// Children of a node above the leaves.
const FAN_IN: usize = 8;

/// The shared-memory meeting point of a communicator's members (all in this process).
pub struct Team {
    n: usize,
    /// Members on several workers: a waiting member may spin for a cousin before parking.
    spin: bool,
    slots: Box<[Slot]>,
    /// The arrival tree: leaves first, the root last.
    nodes: Box<[Node]>,
    /// Calls closed: call g's combiner moves it from g to g + 1 (calls close in order: the
    /// last arrival of a call combines it before it can arrive at the next one).
    generation: Padded<AtomicU64>,
    scratch: UnsafeCell<Scratch>,
    /// A blocking Reduce's fold (`teamfold`), one per half.
    fold: [super::teamfold::Folder; 2],
    /// Nonblocking and persistent calls some members have started and others not yet
    /// (`teamcall`): the call's number, its record, how many members joined it.
    pub(super) calls: Lock<Vec<(u64, Arc<super::teamcall::Call>, usize)>>,
}

// SAFETY: the cells are written by one party at a time, as the protocol orders it: a slot's
// part by its member before it counts itself in (release), read by the combiner after the
// last count (acquire); errors and the scratch by the combiner before the generation moves
// (release), read by each member after it sees it move (acquire). Parts point into parked
// members' stacks, valid until they leave the call, which is after the generation moves.
unsafe impl Sync for Team {}
// SAFETY: as above; the raw pointers are only dereferenced under that protocol.
unsafe impl Send for Team {}

impl std::fmt::Debug for Team {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Team({} members)", self.n)
    }
}

/// Rounds a waiting member spins (several workers, nothing else to run) before parking.
const SPINS: u32 = 4000;
/// Work buffers larger than this are not kept between calls.
const KEEP_MAX: usize = 16 << 20;

impl Team {
    /// A team whose member `i` has its home on worker `homes[i]`.
    fn new(homes: &[usize]) -> Team {
        let n = homes.len();
        let (nodes, leaf_of) = tree(homes);
        let slots = (0..n)
            .map(|i| Slot {
                halves: [Half::new(), Half::new()],
                next: UnsafeCell::new(0),
                next_call: UnsafeCell::new(0),
                leaf: leaf_of[i],
            })
            .collect();
        Team {
            n,
            spin: nodes.len() > 1,
            slots,
            nodes,
            generation: Padded(AtomicU64::new(0)),
            scratch: Default::default(),
            fold: [super::teamfold::Folder::new(n), super::teamfold::Folder::new(n)],
            calls: Lock::new(Vec::new()),
        }
    }

    /// Runs one blocking collective of member `rank` with arguments `part`.
    ///
    /// # Safety
    /// Every member calls this for the same collective in the same order; the buffers of
    /// `part` are valid as MPI requires until the call returns.
    pub unsafe fn run(&self, rank: i32, part: &Part) -> MpiResult<()> {
        let r = rank as usize;
        let slot = &self.slots[r];
        let folds = super::teamfold::eligible(part);
        // SAFETY: the cells of the call's half are this member's until it counts itself in
        // (below), once the call two generations back is closed: a member that left the
        // previous call early may start this one while that is still open (the other half),
        // but not the one after. The fold reads this member's stage only after it marked it
        // ready under the fold's lock, and it does not touch it again before the generation
        // moves past the call (`teamfold`).
        let (early, g) = unsafe {
            let g = *slot.next.get();
            let h = &slot.halves[half(g)];
            if !self.closed(g.wrapping_sub(2)) {
                // Whoever closes that call (or its delegate here) wakes this task, if it
                // parks (`wait`).
                self.wait(h, g.wrapping_sub(2), false);
            }
            *slot.next.get() = g.wrapping_add(1);
            *h.part.get() = part;
            *h.kind.get() = part.kind();
            *h.error.get() = None;
            let early = if folds {
                // Its operand is folded or staged before it counts in.
                let round = Round { t: self, g };
                self.fold[half(g)].arrive(&round, r, part, &mut *h.stage.get());
                part.early(rank)
            } else {
                part.early(rank) && stage(part, &mut *h.stage.get())
            };
            *h.staged.get() = early;
            (early, g)
        };
        let (p, h) = (half(g), &slot.halves[half(g)]);
        // Several workers: nobody wakes a member that spins (it sees the generation move);
        // it names its task when it parks (`wait`). One worker: it parks at once.
        let named = !early && !self.spin;
        h.task.store(if named { sched::current() } else { usize::MAX }, Ordering::Relaxed);
        // Count in at the leaf, and at each node above that this member completes.
        let mut node = slot.leaf;
        let combiner = loop {
            let nd = &self.nodes[node];
            if nd.left[p].fetch_sub(1, Ordering::AcqRel) != 1 {
                break false;
            }
            nd.left[p].store(nd.children.len(), Ordering::Relaxed);
            if nd.parent == NONE {
                break true;
            }
            nd.delegate[p].store(if early { NONE } else { r }, Ordering::Relaxed);
            node = nd.parent;
        };
        let round = Round { t: self, g };
        if !combiner {
            if early {
                return Ok(());
            }
            self.wait(h, g, named);
            // The nodes this member completed (those below `node`, where it stopped): it
            // wakes the others under them.
            self.wake_below(r, node, g);
            // SAFETY: the combiner wrote it before moving the generation (seen above).
            return unsafe { round.take_error(r) }.map_or(Ok(()), Err);
        }
        // The last arrival: every part is in place (acquired along the tree's counts), and
        // the previous call is closed (its last arrival closed it before it arrived here).
        // SAFETY: this member is the only combiner until the generation moves.
        let sc = unsafe { &mut *self.scratch.get() };
        // SAFETY: the parts are the waiting members' arguments, valid as the caller's.
        // A reduction that does not fold while others folded (their parts are gone) finds
        // the fold unfinished, which fails the call everywhere.
        let mine = unsafe {
            let fold = &self.fold[p];
            if folds || (matches!(part, Part::Reduce { .. }) && !fold.untouched()) {
                fold.finish(&round, r)
            } else {
                combine(&round, r, sc)
            }
        };
        for v in [&mut sc.acc, &mut sc.x] {
            if v.capacity() > KEEP_MAX {
                *v = Vec::new();
            }
        }
        self.generation.0.store(g.wrapping_add(1), Ordering::SeqCst);
        // The tasks are read after the generation moved (see `wait`): a member may already
        // be in its call two generations on then, with the same task (a subrank's own), or
        // none (usize::MAX) when it left that one early or spins. The scratch is still this
        // member's: the next call cannot combine before it arrives.
        self.wake_below(r, NONE, g);
        if !self.spin && self.n > 1 && matches!(part, Part::Barrier) {
            // One worker: the members the barrier held go on before its last arrival (it
            // had the core while they waited), so a root that arrives last at a barrier
            // (it waited for a Reduce's result) does not start the next call first and wait
            // through every other member's call, barrier entry and park (session 21).
            sched::yield_now();
        }
        mine
    }

    /// Whether call `g` is closed (the generation moved past it). Calls close in order, and
    /// a member's next call is at most two generations ahead of the generation.
    #[inline(always)]
    fn closed(&self, g: u64) -> bool {
        (self.generation.0.load(Ordering::SeqCst).wrapping_sub(g) as i64) > 0
    }

    /// A team of `n` members for unit tests (no process state needed).
    #[cfg(test)]
    pub(super) fn for_tests(n: usize) -> Team {
        Team::new(&vec![0; n])
    }

    /// How many members the team has.
    pub fn size(&self) -> usize {
        self.n
    }

    /// Numbers member `rank`'s next nonblocking or persistent call (every member numbers
    /// them alike: MPI orders them as it orders blocking ones).
    ///
    /// # Safety
    /// Called by member `rank` only.
    pub(super) unsafe fn next_call(&self, rank: usize) -> u64 {
        // SAFETY: only the member touches its counter (the caller's contract).
        unsafe {
            let k = &mut *self.slots[rank].next_call.get();
            *k += 1;
            *k - 1
        }
    }

    /// Waits (as the member of `h`, the half of call `g`) until call `g` is closed: with
    /// members on several workers it spins first while nothing else can run here, then
    /// names its task in its slot and parks. Whoever closes the call wakes the tasks it
    /// finds named (`wake_below`): each names its task (sequentially consistent) before it
    /// looks at the generation once more, and the waker moves or sees the generation
    /// (sequentially consistent) before it reads the task, so one of them sees the other.
    fn wait(&self, h: &Half, g: u64, named: bool) {
        let moved = || self.closed(g);
        if self.spin {
            for i in 0..SPINS {
                if moved() {
                    return;
                }
                // Another worker's ready task ends the spin too (this worker then steals
                // it): tried in session 16, spinning while only this worker's own queue is
                // empty (no steal of a cousin that its worker is about to run) measured 2x
                // slower at 1x2x4 on the loaded machine (2 µs against 1.2 for a barrier),
                // since a worker then waits for the other one's arrivals one by one
                // instead of sharing them.
                if i % 64 == 0 && sched::others_ready() {
                    break;
                }
                std::hint::spin_loop();
            }
        }
        // (`named`: at the count-in already, read by the combiner after it: one worker.)
        if !named {
            h.task.store(sched::current(), Ordering::SeqCst);
        }
        // A wake-up that comes before the park is kept (the task is marked notified), so
        // none is lost between the check and the park.
        while !moved() {
            sched::park();
        }
    }

    /// After the generation moved: member `r` wakes the others under the nodes it completed
    /// in this call, those on its path from its leaf up to (not including) `stop` (`NONE`:
    /// up to the root, for the combiner). A node's other children are woken through their
    /// delegate (who completed them and waits: it wakes its own nodes' others in turn), or,
    /// when theirs left early, one by one.
    #[inline]
    fn wake_below(&self, r: usize, stop: usize, g: u64) {
        let leaf = self.slots[r].leaf;
        if leaf != stop {
            self.wake_path(leaf, r, stop, half(g));
        }
    }

    /// `wake_below` from `node`, reached from its child `from`: the nodes above first (their
    /// members are on other workers, which can run them meanwhile). `p`: the call's half.
    fn wake_path(&self, node: usize, from: usize, stop: usize, p: usize) {
        let nd = &self.nodes[node];
        if nd.parent != stop {
            self.wake_path(nd.parent, node, stop, p);
        }
        let others = nd.children.iter().copied().filter(|&c| c != from);
        if nd.leaf {
            others.for_each(|m| self.wake_member(m, p));
        } else {
            others.for_each(|c| self.wake_under(c, p));
        }
    }

    /// Wakes the waiting members under node `node`, which someone else completed.
    fn wake_under(&self, node: usize, p: usize) {
        let nd = &self.nodes[node];
        let d = nd.delegate[p].load(Ordering::Relaxed);
        if d != NONE {
            self.wake_member(d, p);
        } else if nd.leaf {
            nd.children.iter().for_each(|&m| self.wake_member(m, p));
        } else {
            nd.children.iter().for_each(|&c| self.wake_under(c, p));
        }
    }

    /// Wakes member `i` if it named its task in half `p` (it parks, or parked).
    #[inline]
    fn wake_member(&self, i: usize, p: usize) {
        let t = self.slots[i].halves[p].task.load(Ordering::SeqCst);
        if t != usize::MAX {
            sched::wake(t);
        }
    }
}

/// The cells of one call of a team (generation `g`) as the combiner and the fold read them.
struct Round<'a> {
    t: &'a Team,
    g: u64,
}

impl Round<'_> {
    #[inline(always)]
    fn cell(&self, i: usize) -> &Half {
        &self.t.slots[i].halves[half(self.g)]
    }
}

impl Members for Round<'_> {
    fn count(&self) -> usize {
        self.t.n
    }

    /// # Safety
    /// Called by the combiner.
    unsafe fn kind(&self, i: usize) -> u8 {
        // SAFETY: written by the member before it counted itself in.
        unsafe { *self.cell(i).kind.get() }
    }

    /// Whether member `i` left early (its data in its stage).
    ///
    /// # Safety
    /// Called by the combiner.
    unsafe fn staged(&self, i: usize) -> bool {
        // SAFETY: written by the member before it counted itself in.
        unsafe { *self.cell(i).staged.get() }
    }

    /// # Safety
    /// Called by the combiner, for a member that left early.
    unsafe fn stage(&self, i: usize) -> &[u8] {
        // SAFETY: written by the member before it counted itself in; it touches it again only
        // after the generation moves.
        unsafe { &*self.cell(i).stage.get() }
    }

    /// # Safety
    /// Called by the combiner, every member's part in place.
    unsafe fn part(&self, i: usize) -> &Part {
        // SAFETY: as the caller's.
        unsafe { &**self.cell(i).part.get() }
    }

    /// Records member `i`'s error of this call.
    ///
    /// # Safety
    /// Called by the combiner before the generation moves.
    unsafe fn fail(&self, i: usize, e: MpiError) {
        // SAFETY: as the caller's; the member reads it only after the generation moves.
        unsafe { *self.cell(i).error.get() = Some(e) };
    }

    /// # Safety
    /// Called by member `i` after the generation moved, or by the combiner for itself.
    unsafe fn take_error(&self, i: usize) -> Option<MpiError> {
        // SAFETY: as the caller's.
        unsafe { (*self.cell(i).error.get()).take() }
    }
}

/// The combiner's work: the whole collective from the members' parts. Returns the
/// combiner's own outcome; the others' are left in their slots.
///
/// # Safety
/// Every member's part is in place and valid.
pub(super) unsafe fn combine<M: Members + ?Sized>(m: &M, me: usize, sc: &mut Scratch) -> MpiResult<()> {
    let n = m.count();
    // Every member's part, of the kind of the combiner's (checked first).
    macro_rules! each {
        ($i:expr, $pat:pat => $e:expr) => {
            match m.part($i) {
                $pat => $e,
                _ => unreachable!("kinds checked"),
            }
        };
    }
    // SAFETY (whole body): the parts and their buffers are valid (the caller's contract);
    // every operand is read before a result is written where they may alias (in place).
    unsafe {
        agree(m, me)?;
        match m.part(me) {
            Part::Idle | Part::Barrier => {}
            Part::Bcast { root, .. } => {
                let rt = *root as usize;
                let src = each!(rt, Part::Bcast { buf, .. } => View::from(buf));
                for i in (0..n).filter(|&i| i != rt) {
                    m.check(i, copy(src, each!(i, Part::Bcast { buf, .. } => buf.into())));
                }
            }
            Part::Reduce { red, root, .. } if reduce_direct(m, sc, red, *root) => {}
            Part::Reduce { count, dt, red, root, .. } => {
                reduce_all(m, sc, *count, dt, red, |i| {
                    if m.staged(i) {
                        Src::Work(m.stage(i))
                    } else {
                        each!(i, Part::Reduce { send, recv, dt, .. } => Src::Buf(in_place(*send, *recv), dt))
                    }
                });
                for i in 0..n {
                    if root.is_none_or(|r| r as usize == i) {
                        each!(i, Part::Reduce { recv, count, dt, .. } => red.store(&sc.acc, *recv, *count, dt));
                    }
                }
            }
            Part::Gather { root, .. } => {
                let rt = *root as usize;
                let parts = each!(rt, Part::Gather { parts, .. } => parts);
                for i in 0..n {
                    if m.staged(i) {
                        if let Some(p) = parts.get(i) {
                            m.check(rt, unpack(m.stage(i), p));
                        }
                    } else if let (Some(s), Some(p)) = (each!(i, Part::Gather { send, .. } => send), parts.get(i)) {
                        m.check(rt, copy(s.into(), p));
                    }
                }
            }
            Part::Scatter { root, .. } => {
                let parts = each!(*root as usize, Part::Scatter { parts, .. } => parts);
                for i in 0..n {
                    if let (Some(d), Some(p)) = (each!(i, Part::Scatter { recv, .. } => recv), parts.get(i)) {
                        m.check(i, copy(p, d.into()));
                    }
                }
            }
            Part::Allgather { .. } if allgather_rows(m) => {}
            Part::Allgather { .. } => {
                for j in 0..n {
                    let (send, parts) = each!(j, Part::Allgather { send, parts } => (send, parts));
                    // In place, member j's block of its own receive buffer holds its data.
                    let Some(src) = send.as_ref().map(View::from).or_else(|| parts.get(j)) else {
                        continue;
                    };
                    for i in (0..n).filter(|&i| i != j || send.is_some()) {
                        if let Some(d) = each!(i, Part::Allgather { parts, .. } => parts.get(j)) {
                            m.check(i, copy(src, d));
                        }
                    }
                }
            }
            Part::Alltoall { .. } => {
                // In place, a member's send data is its receive buffer: copied first.
                let kept: Vec<_> = (0..n)
                    .map(|j| each!(j, Part::Alltoall { sends, recvs } => sends.is_none().then(|| snapshot_blocks(recvs))))
                    .collect();
                for (j, kept) in kept.iter().enumerate() {
                    let sends = each!(j, Part::Alltoall { sends, .. } => sends);
                    for i in 0..n {
                        let s = match (sends, kept) {
                            (Some(s), _) => s.get(i),
                            (None, Some((_, s))) => s.get(i).map(View::from),
                            (None, None) => None,
                        };
                        if let (Some(s), Some(d)) = (s, each!(i, Part::Alltoall { recvs, .. } => recvs.get(j))) {
                            m.check(i, copy(s, d));
                        }
                    }
                }
            }
            Part::ReduceScatter { counts, dt, red, .. } => {
                let total: usize = counts.iter().sum();
                reduce_all(
                    m,
                    sc,
                    total,
                    dt,
                    red,
                    |i| each!(i, Part::ReduceScatter { send, recv, dt, .. } => Src::Buf(in_place(*send, *recv), dt)),
                );
                let mut off = 0;
                for (i, &k) in counts.iter().enumerate().take(n) {
                    let (w_off, w) = red.work(off, dt);
                    let at = (w_off * w.extent.max(0) as usize).min(sc.acc.len());
                    each!(i, Part::ReduceScatter { recv, dt, .. } => red.store(&sc.acc[at..], *recv, k, dt));
                    off += k;
                }
            }
            Part::Scan {
                count, dt, red, exclusive, ..
            } => {
                for i in 0..n {
                    let (send, recv, ci, di) = each!(i, Part::Scan { send, recv, count, dt, .. } => (*send, *recv, *count, dt));
                    // The operand first: in place, it is the receive buffer.
                    red.load_into(in_place(send, recv), ci, di, &mut sc.x);
                    if i > 0 {
                        if *exclusive {
                            red.store(&sc.acc, recv, ci, di);
                        }
                        red.apply(&sc.acc, &mut sc.x, *count, dt);
                    }
                    std::mem::swap(&mut sc.acc, &mut sc.x);
                    if !*exclusive {
                        red.store(&sc.acc, recv, ci, di);
                    }
                }
            }
        }
        m.take_error(me).map_or(Ok(()), Err)
    }
}

/// Fails the call everywhere when the members called different collectives.
///
/// # Safety
/// As `combine`.
pub(super) unsafe fn agree<M: Members + ?Sized>(m: &M, me: usize) -> MpiResult<()> {
    let n = m.count();
    // SAFETY: the kinds are in place (the caller's contract).
    unsafe {
        if (0..n).any(|i| m.kind(i) != m.kind(me)) {
            let e = MpiError::new(c::MPI_ERR_OTHER, "members called different collectives on one communicator");
            for j in 0..n {
                m.fail(j, e.clone());
            }
            return Err(e);
        }
    }
    Ok(())
}

/// Reduces the members' operands (`operand` gives member i's) in rank order into
/// `sc.acc`.
///
/// # Safety
/// As `combine`; every operand holds `count` elements of its datatype.
unsafe fn reduce_all<'a, M: Members + ?Sized>(
    m: &M,
    sc: &mut Scratch,
    count: usize,
    dt: &DtRef,
    red: &Reducer,
    operand: impl Fn(usize) -> Src<'a>,
) {
    let (nw, _) = red.work(count, dt);
    // SAFETY (whole body): as the caller's; a work buffer holds `count` elements' worth.
    let builtin = match red {
        Reducer::Builtin { op, ty, .. } => Some((*op, *ty)),
        Reducer::User { .. } => None,
    };
    unsafe {
        for i in 0..m.count() {
            match (operand(i), builtin) {
                (Src::Buf(p, d), _) if i == 0 => red.load_into(p, count, d, &mut sc.acc),
                (Src::Work(w), _) if i == 0 => {
                    sc.acc.clear();
                    sc.acc.extend_from_slice(w);
                }
                // Predefined operations commute exactly (acc = p op acc equals acc op p),
                // and a contiguous operand or a work buffer needs no copy.
                (Src::Buf(p, d), Some((op, ty))) if d.is_contiguous() => op::apply(op, ty, p, sc.acc.as_mut_ptr(), nw),
                (Src::Work(w), Some((op, ty))) => op::apply(op, ty, w.as_ptr(), sc.acc.as_mut_ptr(), nw),
                // acc op x, in rank order (non-commutative user operations).
                (src, _) => {
                    match src {
                        Src::Buf(p, d) => red.load_into(p, count, d, &mut sc.x),
                        Src::Work(w) => {
                            sc.x.clear();
                            sc.x.extend_from_slice(w);
                        }
                    }
                    red.apply(&sc.acc, &mut sc.x, count, dt);
                    std::mem::swap(&mut sc.acc, &mut sc.x);
                }
            }
        }
    }
}

/// A Reduce or Allreduce with a predefined operation whose buffers are all laid out like the
/// work buffer (contiguous basic elements), combined straight into the result buffer (coll4):
/// the root's receive buffer (Reduce), or member 0's (Allreduce, then copied to the others'),
/// folding the operands in rank order as `reduce_all` does, without the work buffer and its
/// two copies. False (nothing done) when it does not apply: a user operation, a buffer of
/// another layout, or an in-place root other than rank 0 (its operand, in the result
/// buffer, comes after the lower ranks' in the fold).
///
/// # Safety
/// As `combine`.
unsafe fn reduce_direct<M: Members + ?Sized>(m: &M, sc: &mut Scratch, red: &Reducer, root: Option<i32>) -> bool {
    let Reducer::Builtin { op, ty, work_dt } = red else {
        return false;
    };
    if !work_dt.is_contiguous() {
        return false;
    }
    let n = m.count();
    let target = root.map_or(0, |r| r as usize);
    // SAFETY (whole body): as the caller's; every operand is read before a result buffer it
    // may share (in place) is written: the fold writes only `target`'s receive buffer, whose
    // own operand (in place) is the first folded, and the copies come after the fold.
    unsafe {
        let (dst, bytes, nw) = match m.part(target) {
            Part::Reduce { send, recv, count, dt, .. }
                if dt.is_contiguous() && (target == 0 || !std::ptr::eq(in_place(*send, *recv), *recv)) =>
            {
                (*recv, *count * dt.size, *count * dt.elements / if ty.is_pair() { 2 } else { 1 })
            }
            _ => return false,
        };
        // Every operand (a staged one, or the member's buffer laid out like the work buffer).
        sc.operands.clear();
        for i in 0..n {
            sc.operands.push(if m.staged(i) {
                m.stage(i).as_ptr()
            } else {
                match m.part(i) {
                    Part::Reduce { send, recv, dt, .. } if dt.is_contiguous() => in_place(*send, *recv),
                    _ => return false,
                }
            });
        }
        if !std::ptr::eq(sc.operands[0], dst) {
            std::ptr::copy_nonoverlapping(sc.operands[0], dst, bytes);
        }
        for &p in &sc.operands[1..] {
            op::apply(*op, *ty, p, dst, nw);
        }
        if root.is_none() {
            for i in 1..n {
                if let Part::Reduce { recv, .. } = m.part(i) {
                    if *recv != dst {
                        std::ptr::copy_nonoverlapping(dst, *recv, bytes);
                    }
                }
            }
        }
    }
    true
}

/// One member's operand of a reduction: its buffer (address, datatype) or its staged work
/// buffer.
enum Src<'a> {
    Buf(*const u8, &'a DtRef),
    Work(&'a [u8]),
}

/// The arrival tree of a team whose member `i` has its home on worker `homes[i]`: one leaf
/// per worker that has members (in worker order), then levels of up to `FAN_IN` nodes until
/// one is left, the root (a team on one worker: one leaf, the root). Returns the nodes,
/// leaves first and the root last, and each member's leaf.
fn tree(homes: &[usize]) -> (Box<[Node]>, Vec<usize>) {
    let node = |children: Vec<usize>, leaf: bool| Node {
        left: [AtomicUsize::new(children.len()), AtomicUsize::new(children.len())],
        children: children.into_boxed_slice(),
        leaf,
        parent: NONE,
        delegate: [AtomicUsize::new(NONE), AtomicUsize::new(NONE)],
    };
    let mut workers: Vec<usize> = homes.to_vec();
    workers.sort_unstable();
    workers.dedup();
    let mut leaf_of = vec![0; homes.len()];
    let mut nodes: Vec<Node> = workers
        .iter()
        .enumerate()
        .map(|(l, &w)| {
            let members: Vec<usize> = (0..homes.len()).filter(|&i| homes[i] == w).collect();
            members.iter().for_each(|&i| leaf_of[i] = l);
            node(members, true)
        })
        .collect();
    if nodes.is_empty() {
        nodes.push(node(Vec::new(), true));
    }
    // The level being gathered: nodes[lo..].
    let mut lo = 0;
    while nodes.len() - lo > 1 {
        let hi = nodes.len();
        for start in (lo..hi).step_by(FAN_IN) {
            let children: Vec<usize> = (start..hi.min(start + FAN_IN)).collect();
            let p = nodes.len();
            children.iter().for_each(|&c| nodes[c].parent = p);
            nodes.push(node(children, false));
        }
        lo = hi;
    }
    (nodes.into_boxed_slice(), leaf_of)
}

/// A member that leaves early copies what it contributes into its stage (packed send data of
/// a Gather, the work buffer of a Reduce operand). Returns false when it cannot (then it waits).
///
/// # Safety
/// The part's buffers are valid.
unsafe fn stage(part: &Part, into: &mut Vec<u8>) -> bool {
    into.clear();
    // SAFETY: as the caller's.
    unsafe {
        match part {
            Part::Gather { send: Some(b), .. } => b.dt.pack(b.ptr, b.count, into),
            Part::Reduce { send, count, dt, red, .. } => red.load_into(*send, *count, dt, into),
            _ => return false,
        }
    }
    true
}

/// Unpacks staged bytes into `dst`; an error when they do not fit.
///
/// # Safety
/// `dst` is valid for its count.
unsafe fn unpack(bytes: &[u8], dst: View) -> MpiResult<()> {
    let room = dst.count * dst.dt.size;
    if bytes.len() > room {
        return err(
            c::MPI_ERR_TRUNCATE,
            format!(
                "collective data of {} bytes does not fit the receive buffer of {room} bytes (mismatched counts?)",
                bytes.len()
            ),
        );
    }
    if bytes.is_empty() {
        return Ok(());
    }
    // SAFETY: as the caller's; `dst` holds at least `bytes.len()` (checked above).
    unsafe {
        if dst.dt.is_contiguous() {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst.ptr, bytes.len());
        } else {
            dst.dt.unpack(bytes, dst.ptr, bytes.len() / dst.dt.size);
        }
    }
    Ok(())
}

/// Copies `src` into `dst` through their type maps: every byte once (one memmove when both
/// are contiguous). An error when `dst` is too small.
///
/// # Safety
/// Both buffers are valid for their counts.
unsafe fn copy(src: View, dst: View) -> MpiResult<()> {
    let bytes = src.count * src.dt.size;
    if bytes > dst.count * dst.dt.size {
        return err(
            c::MPI_ERR_TRUNCATE,
            format!(
                "collective data of {bytes} bytes does not fit the receive buffer of {} bytes (mismatched counts?)",
                dst.count * dst.dt.size
            ),
        );
    }
    if bytes == 0 || src.ptr == dst.ptr {
        return Ok(());
    }
    // SAFETY: as the caller's; `dst` holds at least `bytes` (checked above).
    unsafe {
        if src.dt.is_contiguous() && dst.dt.is_contiguous() {
            std::ptr::copy(src.ptr, dst.ptr, bytes);
        } else {
            let mut v = Vec::with_capacity(bytes);
            src.dt.pack(src.ptr, src.count, &mut v);
            dst.dt.unpack(&v, dst.ptr, bytes / dst.dt.size);
        }
    }
    Ok(())
}

/// Blocks up to this size gather as rows (`allgather_rows`); beyond, each block's copy costs
/// more than its call, and the row pass measured slower (IMB 1x8, quiet: 64 KiB 54.8 against
/// 44.8 µs block by block; 8 B 1.08 against 1.38).
const ROWS_MAX: usize = 4 << 10;

/// Allgather when every member's receive buffer is equal contiguous blocks of one size, each
/// source no larger than a block (session 22): the combiner fills member 0's receive buffer
/// with every member's block (n copies, any source type), then copies that row whole into the
/// others' (n - 1 copies of n blocks), instead of n x n block copies: at 1x64, 8 B, the
/// block copies were ~4700 instructions per member and call. In place, every source is read
/// into the row before any other receive buffer is written (a member's own slot then gets its
/// own bytes back). False: not served (the caller copies block by block and reports errors).
///
/// # Safety
/// As `combine`'s: every member's part is in place and valid.
unsafe fn allgather_rows<M: Members + ?Sized>(m: &M) -> bool {
    let n = m.count();
    // SAFETY (whole body): the parts and their buffers are valid (the caller's contract).
    unsafe {
        let row = |i: usize| match m.part(i) {
            Part::Allgather {
                parts: Blocks::Equal { ptr, count, dt, .. },
                ..
            } if dt.is_contiguous() => Some((*ptr, count * dt.size)),
            _ => None,
        };
        let Some((first, bytes)) = row(0) else {
            return false;
        };
        let src = |j: usize| match m.part(j) {
            Part::Allgather { send, parts } => send.as_ref().map(View::from).or_else(|| parts.get(j)),
            _ => None,
        };
        if n < 2
            || bytes > ROWS_MAX
            || (1..n).any(|i| row(i).is_none_or(|(_, b)| b != bytes))
            || (0..n).any(|j| src(j).is_none_or(|v| v.count * v.dt.size > bytes))
        {
            return false;
        }
        let byte = crate::core::datatype::byte();
        let slot = |i: usize| View {
            ptr: first.wrapping_add(i * bytes),
            count: bytes,
            dt: &byte,
        };
        for j in 0..n {
            let s = src(j).expect("checked above");
            // Sized above: cannot fail.
            let _ = copy(s, slot(j));
        }
        let whole = n * bytes;
        for i in 1..n {
            let (dst, _) = row(i).expect("checked above");
            if dst != first {
                std::ptr::copy(first, dst, whole);
            }
        }
        true
    }
}

/// Packed copies of `ps` and byte buffers over them (the send side of an in-place alltoall).
///
/// # Safety
/// The buffers are valid for their counts.
pub unsafe fn snapshot(ps: &[Buf]) -> (Vec<Vec<u8>>, Vec<Buf>) {
    // SAFETY: as the caller's.
    unsafe { snapshot_views(ps.iter().map(View::from)) }
}

/// `snapshot` of blocks.
///
/// # Safety
/// As `snapshot`'s.
unsafe fn snapshot_blocks(b: &Blocks) -> (Vec<Vec<u8>>, Vec<Buf>) {
    // SAFETY: as the caller's.
    unsafe { snapshot_views((0..b.len()).filter_map(|i| b.get(i))) }
}

/// # Safety
/// As `snapshot`'s.
unsafe fn snapshot_views<'a>(ps: impl Iterator<Item = View<'a>>) -> (Vec<Vec<u8>>, Vec<Buf>) {
    let byte = crate::core::datatype::byte();
    let mut keep = Vec::new();
    for p in ps {
        let mut v = Vec::new();
        // SAFETY: as the caller's.
        unsafe { p.dt.pack(p.ptr, p.count, &mut v) };
        keep.push(v);
    }
    let bufs = keep.iter_mut().map(|v| Buf::new(v.as_mut_ptr(), v.len(), byte.clone())).collect();
    (keep, bufs)
}

/// Teams being joined: created by a communicator's first member to look, dropped from here
/// when its last member has taken it.
static JOINING: Lock<Vec<(super::hier::CommKey, Arc<Team>, usize)>> = Lock::new(Vec::new());

/// The team of subrank `sub`'s communicator `cm` (handle `comm_h`), None when its members
/// do not all live in this process (or the program has thread-locals, or it is an
/// inter-communicator). Looked up once per member and communicator, then kept in `cm`.
pub fn of(sub: usize, cm: &CommRef, comm_h: usize) -> MpiResult<Option<Arc<Team>>> {
    match &cm.team {
        TeamCell::Here(t) => return Ok(Some(t.clone())),
        TeamCell::Absent => return Ok(None),
        TeamCell::Unknown => {}
    }
    // Each member's home worker (smp7: the leaves of the arrival tree), when all are here.
    let homes = state::with(|s| {
        let me = s.myproc;
        let local = cm.group.ranks.iter().all(|&w| s.locate(w).0 == me);
        local.then(|| cm.group.ranks.iter().map(|&w| s.cfg.home(s.locate(w).1)).collect::<Vec<usize>>())
    })?;
    let team = homes.filter(|_| !cm.is_inter() && !sched::swap::active()).map(|h| join(cm, &h));
    let cell = team.clone().map_or(TeamCell::Absent, TeamCell::Here);
    state::with(|s| {
        let i = crate::core::comm::comm_index(comm_h)?;
        s.locals[sub].comms.get_mut(i)?.as_mut()?.team = cell;
        Some(())
    })?;
    Ok(team)
}

fn join(cm: &CommRef, homes: &[usize]) -> Arc<Team> {
    let key = super::hier::key_of(cm.ctx, &cm.group.ranks);
    let n = cm.group.size();
    let mut j = JOINING.lock();
    let i = match j.iter().position(|e| e.0 == key) {
        Some(i) => i,
        None => {
            j.push((key, Arc::new(Team::new(homes)), 0));
            j.len() - 1
        }
    };
    j[i].2 += 1;
    let t = j[i].1.clone();
    if j[i].2 == n {
        j.swap_remove(i);
    }
    t
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use rstest::rstest;

    fn int() -> DtRef {
        crate::core::datatype::lookup(c::MPI_INT).expect("MPI_INT")
    }

    #[rstest]
    #[case(3, 3, Ok(()))]
    #[case(2, 3, Ok(()))]
    #[case(3, 2, Err(c::MPI_ERR_TRUNCATE))]
    #[case(0, 0, Ok(()))]
    fn copies_or_reports_truncation(#[case] from: usize, #[case] room: usize, #[case] want: Result<(), i32>) {
        let mut a = [1i32, 2, 3];
        let mut b = [0i32; 3];
        let (s, d) = (
            Buf::new(a.as_mut_ptr() as *mut u8, from, int()),
            Buf::new(b.as_mut_ptr() as *mut u8, room, int()),
        );
        // SAFETY: both arrays hold 3 ints, the counts are at most 3.
        let r = unsafe { copy((&s).into(), (&d).into()) };
        assert_eq!(r.map_err(|e| e.class), want);
        if want.is_ok() {
            assert_eq!(&b[..from], &a[..from]);
        }
    }

    /// The members of one collective call without a team (coll4; `teamfold`'s tests too):
    /// their parts, and the stages and early-leaving flags of those that left early (a stage
    /// is written only before it is read, by its member).
    pub(in crate::core::coll) struct Held {
        pub parts: Vec<Part>,
        pub stages: Vec<std::cell::UnsafeCell<Vec<u8>>>,
        pub early: Vec<bool>,
        pub errors: std::cell::RefCell<Vec<Option<MpiError>>>,
    }

    impl Held {
        /// Members with these parts, the `early` ones holding `stages` (empty otherwise).
        pub(in crate::core::coll) fn new(parts: Vec<Part>, stages: Vec<Option<Vec<u8>>>) -> Held {
            let n = parts.len();
            Held {
                parts,
                early: stages.iter().map(Option::is_some).collect(),
                stages: stages
                    .into_iter()
                    .map(|s| std::cell::UnsafeCell::new(s.unwrap_or_default()))
                    .collect(),
                errors: std::cell::RefCell::new(vec![None; n]),
            }
        }
    }

    impl Members for Held {
        fn count(&self) -> usize {
            self.parts.len()
        }
        unsafe fn kind(&self, i: usize) -> u8 {
            self.parts[i].kind()
        }
        unsafe fn part(&self, i: usize) -> &Part {
            &self.parts[i]
        }
        unsafe fn staged(&self, i: usize) -> bool {
            self.early[i]
        }
        unsafe fn stage(&self, i: usize) -> &[u8] {
            // SAFETY: a stage is written by its member before anybody reads it (the tests
            // run one member at a time).
            unsafe { &*self.stages[i].get() }
        }
        unsafe fn fail(&self, i: usize, e: MpiError) {
            self.errors.borrow_mut()[i] = Some(e);
        }
        unsafe fn take_error(&self, i: usize) -> Option<MpiError> {
            self.errors.borrow_mut()[i].take()
        }
    }

    /// Reduce (root Some) and Allreduce of 3 doubles over 4 members, some in place, some
    /// staged (left early): every result buffer that MPI defines holds the sum of the
    /// operands, whether the fold went straight into it (`reduce_direct`) or through the
    /// work buffer (an in-place root other than 0).
    #[rstest]
    #[case::reduce_root0(Some(0), &[], &[1, 2, 3], true)]
    #[case::reduce_root2(Some(2), &[], &[1, 3], true)]
    #[case::reduce_root0_in_place(Some(0), &[0], &[1, 2, 3], true)]
    #[case::reduce_root2_in_place(Some(2), &[2], &[0, 1, 3], false)]
    #[case::allreduce(None, &[], &[], true)]
    #[case::allreduce_in_place(None, &[0, 1, 3], &[], true)]
    fn reductions_fold_in_rank_order(
        #[case] root: Option<i32>,
        #[case] in_place_at: &[usize],
        #[case] staged: &[usize],
        #[case] direct: bool,
    ) {
        let dbl = crate::core::datatype::lookup(c::MPI_DOUBLE).expect("MPI_DOUBLE");
        let red = Reducer::new(c::MPI_SUM, &dbl, c::MPI_DOUBLE).expect("sum of doubles");
        let n = 4;
        let mut sends: Vec<[f64; 3]> = (0..n).map(|i| [i as f64, 10.0 * i as f64, 0.5]).collect();
        let mut recvs: Vec<[f64; 3]> = (0..n)
            .map(|i| if in_place_at.contains(&i) { sends[i] } else { [-1.0; 3] })
            .collect();
        let parts = (0..n)
            .map(|i| Part::Reduce {
                send: if in_place_at.contains(&i) {
                    c::MPI_IN_PLACE_ADDR as *const u8
                } else {
                    sends[i].as_mut_ptr() as *const u8
                },
                recv: recvs[i].as_mut_ptr() as *mut u8,
                count: 3,
                dt: dbl.clone(),
                red: red.clone(),
                root,
            })
            .collect();
        // SAFETY: the arrays hold 3 doubles each.
        let stages = (0..n)
            .map(|i| {
                staged
                    .contains(&i)
                    .then(|| unsafe { red.load(sends[i].as_ptr() as *const u8, 3, &dbl) })
            })
            .collect();
        let held = Held::new(parts, stages);
        let mut sc = Scratch::default();
        // SAFETY: every part's buffers are live locals; staged members' parts are not read.
        assert_eq!(unsafe { reduce_direct(&held, &mut Scratch::default(), &red, root) }, direct);
        for (i, r) in recvs.iter_mut().enumerate() {
            *r = if in_place_at.contains(&i) { sends[i] } else { [-1.0; 3] };
        }
        // SAFETY: as above.
        unsafe { combine(&held, n - 1, &mut sc) }.expect("combines");
        let want = [6.0, 60.0, 2.0];
        for (i, r) in recvs.iter().enumerate() {
            if root.is_none_or(|rt| rt as usize == i) {
                assert_eq!(*r, want, "member {i}");
            }
        }
    }

    /// Allgather of 2 ints over 4 members (session 22): with equal contiguous receive blocks
    /// the rows (`allgather_rows`) serve it, in place or not, from any send type; a strided
    /// receive type or a send larger than a block leaves it to the block loop, which reports
    /// the truncation. Every receive buffer ends as the gathered row either way.
    #[rstest]
    #[case::plain(&[], false, false, true, None)]
    #[case::in_place(&[0, 2], false, false, true, None)]
    #[case::all_in_place(&[0, 1, 2, 3], false, false, true, None)]
    #[case::strided_recv(&[], true, false, false, None)]
    #[case::too_large(&[], false, true, false, Some(c::MPI_ERR_TRUNCATE))]
    fn allgather_fills_every_row(
        #[case] in_place_at: &[usize],
        #[case] strided: bool,
        #[case] oversize: bool,
        #[case] rows: bool,
        #[case] error: Option<i32>,
    ) {
        let n = 4;
        let val = |j: usize, k: usize| (100 * j + k) as i32;
        let mut sends: Vec<[i32; 3]> = (0..n).map(|j| [val(j, 0), val(j, 1), val(j, 2)]).collect();
        // Strided: each block 2 ints one apart (a vector resized to 4 ints), 16 ints a row.
        let mut recvs: Vec<[i32; 16]> = vec![[-1; 16]; n];
        let rdt = if strided {
            let v = crate::core::datatype::typemap::hvector(2, 1, 8, &int()).expect("vector");
            let r = crate::core::datatype::typemap::resized(&v, 0, 16).expect("resized");
            Arc::new(r)
        } else {
            int()
        };
        let rcount = if strided { 1 } else { 2 };
        let at = |i: usize, j: usize| if strided { 4 * j + 2 * i } else { 2 * j + i };
        for &i in in_place_at {
            recvs[i][at(0, i)] = val(i, 0);
            recvs[i][at(1, i)] = val(i, 1);
        }
        let parts: Vec<Part> = (0..n)
            .map(|i| Part::Allgather {
                send: (!in_place_at.contains(&i))
                    .then(|| Buf::new(sends[i].as_mut_ptr() as *mut u8, if oversize && i == 1 { 3 } else { 2 }, int())),
                parts: Blocks::Equal {
                    ptr: recvs[i].as_mut_ptr() as *mut u8,
                    count: rcount,
                    dt: rdt.clone(),
                    n,
                },
            })
            .collect();
        let held = Held::new(parts, vec![None; n]);
        // SAFETY: every part's buffers are live locals.
        assert_eq!(unsafe { allgather_rows(&held) }, rows);
        let r = unsafe { combine(&held, n - 1, &mut Scratch::default()) };
        let errs: Vec<Option<i32>> = (0..n)
            .map(|i| {
                if i == n - 1 {
                    r.clone().err()
                } else {
                    unsafe { held.take_error(i) }
                }
                .map(|e| e.class)
            })
            .collect();
        if let Some(e) = error {
            assert!(errs.contains(&Some(e)), "{errs:?}");
            return;
        }
        assert_eq!(errs, vec![None; n]);
        for (i, r) in recvs.iter().enumerate() {
            for j in 0..n {
                assert_eq!((r[at(0, j)], r[at(1, j)]), (val(j, 0), val(j, 1)), "member {i} block {j}");
            }
        }
    }

    /// The arrival tree (smp7): a leaf per worker with members, in worker order, levels of at
    /// most `FAN_IN` nodes above, the root last; every member in its worker's leaf.
    #[rstest]
    #[case::one_worker(vec![0; 4], 1)]
    #[case::two_workers(vec![0, 0, 1, 1], 3)]
    #[case::interleaved(vec![1, 0, 1, 0, 2], 4)]
    #[case::eight_leaves(vec![0, 1, 2, 3, 4, 5, 6, 7], 9)]
    #[case::nine_leaves((0..9).collect(), 12)]
    #[case::sixty_four_workers((0..128).map(|i| i / 2).collect(), 64 + 8 + 1)]
    #[case::empty(vec![], 1)]
    fn the_tree_has_a_leaf_per_worker(#[case] homes: Vec<usize>, #[case] nodes: usize) {
        let (t, leaf_of) = tree(&homes);
        assert_eq!(t.len(), nodes);
        let root = t.len() - 1;
        assert_eq!(t[root].parent, NONE);
        for (i, &h) in homes.iter().enumerate() {
            let l = &t[leaf_of[i]];
            assert!(l.leaf && l.children.contains(&i));
            assert!(l.children.iter().all(|&m| homes[m] == h), "a leaf holds one worker's members");
        }
        for (k, nd) in t.iter().enumerate() {
            assert!(nd.leaf || (1..=FAN_IN).contains(&nd.children.len()));
            assert_eq!(nd.left[0].load(Ordering::Relaxed), nd.children.len());
            if !nd.leaf {
                assert!(nd.children.iter().all(|&c| t[c].parent == k));
            }
            // Every node reaches the root.
            let (mut x, mut hops) = (k, 0);
            while t[x].parent != NONE {
                x = t[x].parent;
                hops += 1;
                assert!(hops < 16);
            }
            assert_eq!(x, root);
        }
    }

    /// Members on threads of their own (no scheduler: waits spin) run many Allreduces and
    /// Barriers on trees of one to three levels: every result is the sum of the round's
    /// operands, whoever arrives last.
    #[rstest]
    #[case::one_leaf(vec![0; 3], 100)]
    #[case::two_leaves(vec![0, 0, 1, 1], 100)]
    #[case::three_levels((0..9).collect(), 6)]
    fn members_on_threads_meet_every_round(#[case] homes: Vec<usize>, #[case] rounds: i64) {
        let t = Team::new(&homes);
        let n = homes.len();
        let dbl = crate::core::datatype::lookup(c::MPI_LONG).expect("MPI_LONG");
        let red = Reducer::new(c::MPI_SUM, &dbl, c::MPI_LONG).expect("sum of longs");
        std::thread::scope(|sc| {
            for r in 0..n {
                let (t, dbl, red) = (&t, dbl.clone(), red.clone());
                sc.spawn(move || {
                    for k in 0..rounds {
                        let mut x = [k * 100 + r as i64, 1];
                        let mut y = [-1i64; 2];
                        let p = Part::Reduce {
                            send: x.as_mut_ptr() as *const u8,
                            recv: y.as_mut_ptr() as *mut u8,
                            count: 2,
                            dt: dbl.clone(),
                            red: red.clone(),
                            root: if k % 3 == 0 { Some((k as usize % n) as i32) } else { None },
                        };
                        // SAFETY: the buffers are this thread's locals, alive until run returns;
                        // every member makes the same calls in the same order.
                        unsafe { t.run(r as i32, &p) }.expect("reduces");
                        let want = [k * 100 * n as i64 + (n * (n - 1) / 2) as i64, n as i64];
                        if k % 3 != 0 || k as usize % n == r {
                            assert_eq!(y, want, "member {r}, round {k}");
                        }
                        // SAFETY: no buffers.
                        unsafe { t.run(r as i32, &Part::Barrier) }.expect("barrier");
                    }
                });
            }
        });
        assert_eq!(t.generation.0.load(Ordering::Relaxed), 2 * rounds as u64);
    }

    /// Rooted calls back to back, no barrier between them (session 20): a non-root leaves
    /// each call early and starts the next while the call it left is still open (the other
    /// half of the slots), but not the one after. Reduce and Gather alternate, their roots
    /// move each round, and every root checks its result.
    #[rstest]
    #[case::one_leaf(vec![0; 4], 100)]
    #[case::two_leaves(vec![0, 0, 1, 1, 1], 60)]
    #[case::three_levels((0..9).collect(), 20)]
    fn non_roots_run_ahead_of_open_calls(#[case] homes: Vec<usize>, #[case] rounds: i64) {
        let t = Team::new(&homes);
        let n = homes.len();
        let long = crate::core::datatype::lookup(c::MPI_LONG).expect("MPI_LONG");
        let red = Reducer::new(c::MPI_SUM, &long, c::MPI_LONG).expect("sum of longs");
        std::thread::scope(|sc| {
            for r in 0..n {
                let (t, long, red) = (&t, long.clone(), red.clone());
                sc.spawn(move || {
                    for k in 0..rounds {
                        let mut x = [k * 100 + r as i64, 1];
                        let mut y = [-1i64; 2];
                        let root = (k as usize * 3 + 1) % n;
                        let p = Part::Reduce {
                            send: x.as_mut_ptr() as *const u8,
                            recv: y.as_mut_ptr() as *mut u8,
                            count: 2,
                            dt: long.clone(),
                            red: red.clone(),
                            root: Some(root as i32),
                        };
                        // SAFETY: the buffers are this thread's locals, alive until run returns;
                        // every member makes the same calls in the same order.
                        unsafe { t.run(r as i32, &p) }.expect("reduces");
                        if r == root {
                            assert_eq!(y, [k * 100 * n as i64 + (n * (n - 1) / 2) as i64, n as i64], "round {k}");
                        }
                        let groot = (k as usize + 2) % n;
                        let mut mine = [k * 7 + r as i64];
                        let mut all = vec![-1i64; n];
                        let g = Part::Gather {
                            send: Some(Buf::new(mine.as_mut_ptr() as *mut u8, 1, long.clone())),
                            parts: Blocks::Equal {
                                ptr: all.as_mut_ptr() as *mut u8,
                                count: 1,
                                dt: long.clone(),
                                n: if r == groot { n } else { 0 },
                            },
                            root: groot as i32,
                        };
                        // SAFETY: as above.
                        unsafe { t.run(r as i32, &g) }.expect("gathers");
                        if r == groot {
                            assert_eq!(all, (0..n as i64).map(|j| k * 7 + j).collect::<Vec<_>>(), "round {k}");
                        }
                    }
                });
            }
        });
        assert_eq!(t.generation.0.load(Ordering::Relaxed), 2 * rounds as u64);
    }

    #[rstest]
    #[case(1)]
    #[case(4)]
    fn a_team_of_one_runs_alone(#[case] rounds: usize) {
        let t = Team::new(&[0]);
        let mut x = [7i32];
        let mut y = [0i32];
        for _ in 0..rounds {
            let p = Part::Allgather {
                send: Some(Buf::new(x.as_mut_ptr() as *mut u8, 1, int())),
                parts: Blocks::List(vec![Buf::new(y.as_mut_ptr() as *mut u8, 1, int())]),
            };
            // SAFETY: the buffers are live locals; one member, so no other part is read.
            unsafe { t.run(0, &p) }.expect("runs");
        }
        assert_eq!(y, [7]);
        assert_eq!(t.generation.0.load(Ordering::Relaxed), rounds as u64);
    }
}
