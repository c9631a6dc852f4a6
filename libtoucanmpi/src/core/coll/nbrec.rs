//! Nonblocking collectives between processes at several members per process (V>1, or SMP
//! mode) without a helper task: the two-level scheme as a three-step schedule.
//!
//! 1. **Join.** Each local member's `MPI_I*` leaves its arguments and request in the record
//!    of the call on this process (keyed by the communicator and the call's number, which is
//!    the same on every member) and returns.
//! 2. **Combine and start.** The member that joins last takes the record out, does the local
//!    step in shared memory (reduces the operands into one work buffer, or packs the blocks
//!    into one buffer laid out per process) and starts the real MPI's nonblocking collective
//!    on the communicator's twin (`real::submit_rec`, in the twin's issue order).
//! 3. **Distribute and complete.** Whoever polls the progress engine when the real request
//!    finishes (the background thread while the members compute, a waiting member,
//!    `MPI_Test`) copies the result into every local member's buffers and completes their
//!    requests (`finish`, from `real::on_done`).
//!
//! No coroutine per call: the members that are not last pay a record entry; the last pays the
//! local combine, as the team's records do (`teamcall`).
//!
//! Served (`eligible`, decided from what every rank passes alike, so every process and every
//! local member decides the same): Barrier, Bcast (nbc8: below `BCAST_MAX`), Reduce and Allreduce (a predefined
//! operation on a C basic type), and Gather, Scatter (coll3) and Allgather with equal blocks
//! when every process holds the same number of members, and (nbc9) Alltoall on the same
//! terms up to `ALLTOALL_MAX` packed bytes (the blocks between processes go through one real
//! exchange, those between local members are copied at the start); on a communicator with a twin
//! (members on every process), when the program has no swapped thread-locals (a buffer there would be
//! another subrank's while its owner is switched out: `sched::swap`, as `team::of` decides).

use crate::core::coll::hier::{key_of, CommKey};
use crate::core::coll::real;
use crate::core::coll::reduce::Reducer;
use crate::core::coll::team::{Blocks, Part, View};
use crate::core::coll::{in_place, Coll};
use crate::core::comm::CommRef;
use crate::core::datatype::DtRef;
use crate::core::error::MpiResult;
use crate::core::request::ReqId;
use crate::core::state::{self, State};
use crate::transport::{CollMem, RealColl};
use std::sync::Arc;

/// Bytes per rank below which Gather and Scatter take this path. Above, packing every
/// member's block into a fresh per-process buffer (and unpacking it at the other end) costs
/// more than the helper task's messages straight between the buffers: IMB-NBC at n=2 V=4
/// (loaded machine, load 6 to 8), t_pure this path / helper path: Igather 8 B 13 / 36 µs,
/// 4 KiB 9-22 / 40, 64 KiB 120-280 / 110; Iscatter 8 B 5 / 35, 4 KiB 17-56 / 37, 64 KiB
/// 210-460 / 230. To be re-measured quietly.
const ROOTED_MAX: usize = 16 * 1024;

/// nbc8: bytes from which a broadcast leaves this path for the helper task (the blocking
/// algorithm, whose inter-process step is our point-to-point rendezvous: the payload goes
/// once the receiver posted its real receive into the buffer). A loop like IMB's at 2x4
/// (call, wait, barrier; loaded, chrt; the machine in the state where IMB-NBC read 3.9x),
/// slowest rank, this path / blocking Bcast: 8 KiB 8.2 / 6.1 µs, 16 KiB 16.3 / 7.8, 32 KiB
/// 28.5 / 10.4, 64 KiB 56-58 / 16.3-17.5, and 64 KiB on the helper path 17.1-20.1. In the
/// machine's other state this path read 22-23 µs at 64 KiB (blocking 14-15). Below, this
/// path wins (three pairs, slowest rank, this path / helper: 4 KiB 5.7-5.8 / 6.4-6.7, 8 KiB
/// 7.9 / 8.4-9.6).
const BCAST_MAX: usize = 16 * 1024;

/// nbc9: most bytes a two-level Alltoall's record packs to send (processes x members^2 x
/// block; as many come back): `fits`. Above, the helper task's pairwise messages straight
/// between the buffers win. A loop like IMB's at 2x4 (call, wait, barrier; loaded, chrt),
/// slowest rank, this path / helper path: 8 B 4.1-7.2 / 14.0-18.1 µs, 1 KiB 14.5-22.8 /
/// 19.6-27.4, 8 KiB 45-103 / 40-136, 16 KiB (512 KiB packed) 197-200 / 230-245, 32 KiB
/// (1 MiB) 372-388 / 351-353, 64 KiB (2 MiB) 323-837 / 167-658.
const ALLTOALL_MAX: usize = 512 << 10;

/// One call's record on this process.
pub struct Rec {
    /// Communicator ranks on this process, ascending (coll7: shared by the communicator's
    /// records, `layout`).
    pub(super) local: Arc<[i32]>,
    /// Each local member's arguments and request (by local index), once joined.
    pub(super) parts: Vec<Option<(Part, ReqId)>>,
    pub(super) joined: usize,
    /// The process of each communicator rank, and its index among that process's members.
    pub(super) procs: Arc<[(usize, usize)]>,
    /// Members per process (Allgather: the same everywhere).
    per: usize,
    /// nbc9: rank r is member r % per of process r / per (`Layout::ordered`).
    ordered: bool,
    /// coll7: a broadcast (session 27: or a scatter) started before every local member
    /// joined (`join_early_in`).
    pub(super) early: Option<Box<Early>>,
    /// nbc8: the members that only send (`sends_only`) completed when the real operation
    /// started (`finish_join`); `finish` leaves them alone.
    sent: bool,
    /// nbrecv27: a v-form or Reduce_scatter record (`nbrecv::is_v`), combined and
    /// distributed by `nbrecv`.
    v: bool,
}

/// coll7 (issue 16, session 16): a broadcast's record whose real operation starts at the
/// first join that can start it (the root's, in the root's process; the first member's
/// elsewhere) rather than the last, and whose members complete as soon as the data is here
/// (at their own join, when they come after it), as the blocking form lets its
/// representative send or receive before its siblings arrive.
///
/// Session 27 (issue 16): a Scatter with equal blocks (as many members on every process) is
/// started the same way: in the root's process at the root's join (the root holds every
/// block: its siblings need not have joined), elsewhere at the first join (what lands there
/// does not depend on the members' arguments), and each member takes its block from `data`
/// once it is here.
pub struct Early {
    /// The root's block, packed: in the root's process at the root's join; elsewhere where
    /// the real operation lands. Allocated once, at its full length, before the real operation
    /// starts (its heap block does not move while the record lives). A scatter's: in the
    /// root's process every rank's block laid out per process (`base + k * block` for this
    /// process's member k); elsewhere this process's blocks.
    pub(super) data: Vec<u8>,
    /// Session 29 (vscat29): a v-form scatter's (offset, bytes) in `data` of each local
    /// member's block (`vscatter`); empty for every other record (`slot`).
    pub(super) slots: Vec<(usize, usize)>,
    /// Session 27: a scatter's bytes per member (0: a broadcast).
    block: usize,
    /// Session 27: where this process's blocks start in a scatter's `data`.
    base: usize,
    /// Session 27: a scatter goes as a tree of real messages (`tree_scatter`): `data` is
    /// laid out by process relative to the root's, this process's first (`base` 0), and
    /// holds its subtree's blocks away from the root.
    tree: bool,
    /// `data` holds the block.
    pub(super) here: bool,
    /// The real operation finished (the record goes once every local member joined too).
    pub(super) done: bool,
    /// Local members whose request completed, by local index.
    fin: Vec<bool>,
    /// The root's local index (in the root's process only).
    pub(super) root: Option<usize>,
    /// This record among every other (its real operation's completion finds it by this once
    /// it left the joins' map: `RealComms::landing`).
    pub(super) uid: u64,
    /// vscat29: the root completes only once every local member joined too (they copy their
    /// blocks from its buffer: `vscatter`).
    pub(super) hold: bool,
    /// Session 25 (faults16): the error class its real operation failed with (0: none).
    /// gath30: a v-form gather's root's only (`vgather`).
    pub(super) err: i32,
}

impl Early {
    /// Where local member `j`'s block is in a scatter's `data`, and its bytes: equal blocks
    /// from `base`, a v-form's from `slots` (vscat29).
    fn slot(&self, j: usize) -> (usize, usize) {
        match self.slots.get(j) {
            Some(&s) => s,
            None => (self.base + j * self.block, self.block),
        }
    }
}

impl Rec {
    /// coll5: local members of the call (`coll::persist`).
    pub(super) fn local_count(&self) -> usize {
        self.local.len()
    }

    /// coll5: member `me` binds its arguments and request (`coll::persist`, at initialisation).
    pub(super) fn join(&mut self, me: i32, part: Part, id: ReqId) {
        self.take(me, part, id);
    }
}

/// Open records of this process.
pub type Recs = crate::core::idmap::IdMap<(CommKey, u64), Rec>;

/// coll7: broadcast records every local member joined whose real operation is still under
/// way, by `Early::uid`.
pub type Landing = crate::core::idmap::IdMap<u64, Rec>;

/// coll7: communicators' layouts for the records (`layout`).
pub type Layouts = crate::core::idmap::IdMap<CommKey, Layout>;

/// coll7: a communicator's ranks on this process (ascending), and the process of each rank
/// with its index among that process's members.
#[derive(Clone)]
pub struct Layout {
    local: Arc<[i32]>,
    procs: Arc<[(usize, usize)]>,
    /// nbc8: every process holding members holds as many (Gather, Scatter and Allgather need
    /// it: `fits`), found with the rest.
    even: bool,
    /// nbc9: the ranks are in process order, as many on every process (rank r is member
    /// r % per of process r / per): a buffer of rank-ordered blocks is laid out per process.
    ordered: bool,
    /// iag16: processes holding members (the highest process index + 1), found with the rest.
    nproc: usize,
}

/// Whether a nonblocking call on `cm` with arguments `part` is served here (see the module
/// documentation); `equal`: the binding has equal blocks (not a v/w form).
pub fn eligible(cm: &CommRef, part: &Part, equal: bool) -> bool {
    if cm.is_inter() || crate::sched::swap::active() || !real::has_twin(cm) {
        return false;
    }
    fits(part, equal, || even(cm))
}

/// nbc8: whether a call with arguments `part` is of a kind this path serves, given the
/// members every process holds when every process holding members holds as many (`even`:
/// `(members per process, processes)`, None when uneven; asked only for the kinds that need
/// it). The one rule of both `eligible` (the general path) and `fast`, so both decide alike.
fn fits(part: &Part, equal: bool, even: impl FnOnce() -> Option<(usize, usize)>) -> bool {
    kind_fits(part, equal).is_some_and(|need| need.met(even))
}

/// iag16: what `fits` still asks of the communicator's layout once the arguments alone
/// passed (`kind_fits`), so that `fast` looks at the arguments once, outside the state lock,
/// and at the cached layout by reference under it (it ran `fits` twice per call and cloned
/// the layout's two `Arc`s: about 300 instructions per member at 2x4).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Need {
    /// Nothing (Barrier, Bcast, Reduce, Allreduce).
    Nothing,
    /// As many members on every process (Gather, Scatter, Allgather).
    Even,
    /// As many members on every process, and processes x members^2 blocks of this many bytes
    /// within `ALLTOALL_MAX` (Alltoall).
    Alltoall(usize),
}

impl Need {
    fn met(self, even: impl FnOnce() -> Option<(usize, usize)>) -> bool {
        match self {
            Need::Nothing => true,
            Need::Even => even().is_some(),
            Need::Alltoall(bytes) => even().is_some_and(|(per, nproc)| {
                per.checked_mul(per)
                    .and_then(|x| x.checked_mul(nproc))
                    .and_then(|x| x.checked_mul(bytes))
                    .is_some_and(|b| b <= ALLTOALL_MAX)
            }),
        }
    }
}

/// `fits` on the arguments alone: None when the kind or sizes are not served, else what is
/// left to ask of the layout.
fn kind_fits(part: &Part, equal: bool) -> Option<Need> {
    // nbrecv27: the v-forms and Reduce_scatter, any counts, any layout.
    if super::nbrecv::is_v(part, equal) {
        return super::nbrecv::serves(part).then_some(Need::Nothing);
    }
    let worth = super::nbc::worth;
    let ok = |b: bool, need: Need| b.then_some(need);
    match part {
        Part::Barrier => Some(Need::Nothing),
        Part::Bcast { buf, .. } => ok(worth(buf.count * buf.dt.size) && buf.count * buf.dt.size < BCAST_MAX, Need::Nothing),
        Part::Reduce { count, dt, red, .. } => ok(real::reducible(red) && worth(count * dt.size), Need::Nothing),
        // In place the root's own block has the size every rank's has.
        Part::Gather { send: b, parts, .. } | Part::Scatter { recv: b, parts, .. } => {
            let bytes = match (b, parts) {
                (Some(b), _) => b.count * b.dt.size,
                (None, Blocks::Equal { count, dt, .. }) => count * dt.size,
                (None, Blocks::List(_)) => return None,
            };
            ok(equal && worth(bytes) && bytes < ROOTED_MAX, Need::Even)
        }
        Part::Allgather { parts: b, .. } => match b {
            Blocks::Equal { count, dt, .. } => ok(equal && worth(count * dt.size), Need::Even),
            Blocks::List(_) => None,
        },
        // nbc9: Alltoall comes back (session 11 took it off: a 1 MiB Ialltoall at 2x4 packed
        // 2 x 2 x 16 MiB and read 51.7 ms against 4.0 on the helper path) with a bound on
        // what the record packs: processes x members^2 blocks each way, at most
        // `ALLTOALL_MAX` bytes.
        Part::Alltoall {
            recvs: Blocks::Equal { count, dt, .. },
            ..
        } => {
            let bytes = count * dt.size;
            ok(equal && worth(bytes), Need::Alltoall(bytes))
        }
        _ => None,
    }
}

/// Whether every process holding members of `cm` holds the same number: Some((members per
/// process, processes)) when it does.
fn even(cm: &CommRef) -> Option<(usize, usize)> {
    state::with(|s| layout(s, cm).per()).ok().flatten()
}

/// iag16: `layout(s, cm).per()` without cloning the layout when it is kept already.
fn layout_per(s: &mut State, cm: &CommRef) -> Option<(usize, usize)> {
    match s.rcoll.layouts.get(&key_of(cm.ctx, &cm.group.ranks)) {
        Some(l) => l.per(),
        None => layout(s, cm).per(),
    }
}

impl Layout {
    /// `(members per process, processes)` when every process holds as many (`fits`).
    fn per(&self) -> Option<(usize, usize)> {
        self.even.then_some((self.local.len(), self.nproc))
    }
}

/// Request `id` (just made) completes with one event: its record's.
fn await_one(s: &mut State, id: ReqId) {
    if let Some(r) = s.req_mut(id) {
        r.pending = 1;
    }
}

/// Joins call `c` (enrolled: `c.real`) with arguments `part` for request `id` (made, not yet
/// awaiting its event: the join marks it); the last local member to join combines and
/// starts the real collective.
///
/// # Safety
/// MPI requires the buffers of `part` to stay valid until the request completes.
pub unsafe fn join(c: &Coll, part: Part, id: ReqId, equal: bool) -> MpiResult<()> {
    let key = (key_of(c.comm.ctx, &c.comm.group.ranks), c.seq);
    let v = super::nbrecv::is_v(&part, equal);
    // SAFETY: forwarded from the caller.
    let next = state::with(|s| unsafe { join_in(s, &c.comm, key, part, id, v) })??;
    // SAFETY: forwarded from the caller.
    unsafe { finish_join(key, c.comm.rank, next) }
}

/// What a join leaves to do outside the state lock: the last member's combine and start.
pub enum Next {
    Nothing,
    Combine(Box<Rec>),
}

/// `join` under the state lock: records member `cm.rank`'s arguments `part` and request
/// `id` (made; marked here as awaiting one event) in call `key`'s record; a broadcast starts
/// (session 27: or a scatter) starts its real operation here when this join can
/// (`join_early_in`); the last member of any
/// other kind takes the record out for `finish_join`.
///
/// # Safety
/// As `join`.
unsafe fn join_in(s: &mut State, cm: &CommRef, key: (CommKey, u64), part: Part, id: ReqId, v: bool) -> MpiResult<Next> {
    await_one(s, id);
    // vscat29: a v-form Scatter starts early too, as flat real messages (`vscatter`);
    // gath30: a v-form Gather as well (`vgather`).
    if v && matches!(part, Part::Scatter { .. }) && super::flatv::flat() {
        // SAFETY: forwarded from the caller.
        unsafe { super::vscatter::join_in(s, cm, key, part, id) }?;
        return Ok(Next::Nothing);
    }
    if v && matches!(part, Part::Gather { .. }) && super::flatv::flat() {
        // SAFETY: forwarded from the caller.
        unsafe { super::vgather::join_in(s, cm, key, part, id) }?;
        return Ok(Next::Nothing);
    }
    // nbrecv27: a v-form's record (`v`) never starts early.
    if !v && matches!(part, Part::Bcast { .. } | Part::Scatter { .. }) {
        // SAFETY: forwarded from the caller.
        unsafe { join_early_in(s, cm, key, part, id) }?;
        return Ok(Next::Nothing);
    }
    // iag16: one look-up per join (it was a test, then a look-up).
    if let Some(rec) = s.rcoll.recs.get_mut(&key) {
        rec.v = v;
        if rec.take(cm.rank, part, id) {
            if let Some(r) = s.rcoll.recs.remove(&key) {
                return Ok(Next::Combine(Box::new(r)));
            }
        }
        return Ok(Next::Nothing);
    }
    let mut rec = rec_for(s, cm);
    rec.v = v;
    if rec.take(cm.rank, part, id) {
        // The only local member.
        return Ok(Next::Combine(Box::new(rec)));
    }
    s.rcoll.recs.insert(key, rec);
    Ok(Next::Nothing)
}

impl Rec {
    /// Member `me`'s arguments and request into the record; whether it was the last to join.
    fn take(&mut self, me: i32, part: Part, id: ReqId) -> bool {
        let i = self.local.binary_search(&me).unwrap_or(0);
        self.parts[i] = Some((part, id));
        self.joined += 1;
        self.joined == self.local.len()
    }
}

/// The last member's combine (in shared memory, outside the state lock) and the start of
/// the real operation at call `key`'s place.
///
/// # Safety
/// As `join`.
unsafe fn finish_join(key: (CommKey, u64), me: i32, next: Next) -> MpiResult<()> {
    let Next::Combine(mut rec) = next else { return Ok(()) };
    // SAFETY: every member's buffers stay valid until its request completes.
    let (what, mem) = unsafe { combine(&rec, me) };
    // nbc8: what the members that only send give is in `mem` now: they complete here.
    let mut sent = Completed::default();
    // vrec28: unless the real operation reads their own buffers (`nbrecv::borrows`).
    let lent = super::nbrecv::borrows(&what);
    for (j, (part, id)) in rec.parts.iter().enumerate().filter_map(|(j, p)| p.as_ref().map(|p| (j, p))) {
        if !lent && sends_only(part, rec.local[j]) {
            // SAFETY: the member's buffers stay valid until its request completes (below).
            unsafe { own_block(part) };
            sent.push(*id);
        }
    }
    rec.sent = sent.n > 0;
    state::with(|s| {
        for id in sent.ids() {
            s.event_done(id);
        }
        // SAFETY: `mem` is ours (`keep`), or points at nothing.
        unsafe { real::queue_rec(s, key, what, mem, rec) }
    })?
}

/// nbc8: whether local member `me` with arguments `part` receives nothing from the real
/// operation: a Gather's non-root, or a Scatter's root (its own block is copied at the start,
/// `own_block`). Its request completes once `combine` packed its blocks (the packed copy is
/// what the real operation sends), as the root of a broadcast does at its join.
fn sends_only(part: &Part, me: i32) -> bool {
    match part {
        Part::Gather { root, .. } => *root != me,
        Part::Scatter { root, .. } => *root == me,
        _ => false,
    }
}

/// nbc8: a Scatter root's own block into its receive buffer (nothing in place), before its
/// request completes at the start.
///
/// # Safety
/// The member's buffers are valid.
unsafe fn own_block(part: &Part) {
    if let Part::Scatter {
        parts,
        recv: Some(b),
        root,
    } = part
    {
        if let Some(v) = parts.get(*root as usize) {
            // SAFETY: the caller's contract; not in place (`recv` is Some), so they do not overlap.
            unsafe { copy_view(v, b.into()) };
        }
    }
}

/// coll7: the whole `MPI_I*` call at several members per process in one pass under the state
/// lock, for every kind `eligible` takes (Barrier, Bcast, Reduce and Allreduce; nbc8: also
/// Gather, Scatter and Allgather, whose members per process come from the communicator's
/// cached layout): what `abi::coll::run`'s general path does in six lock rounds (the call's
/// number, the eligibility, the place on the twin, the request, the join, the start).
/// `Err(part)`: nothing was done (the general path runs and decides the same: the same rule,
/// `fits`, as `eligible`, and not at one member per process, `nbc`'s).
///
/// # Safety
/// MPI requires the buffers of `part` to stay valid until the request completes.
pub unsafe fn fast(sub: usize, comm_h: usize, cm: &CommRef, part: Part, equal: bool) -> Result<MpiResult<ReqId>, Part> {
    // One subrank per process: every communicator with a twin has one member per process.
    // The members per process are looked at under the lock (`need`, below).
    if crate::core::runtime::config().local() == 1 || cm.is_inter() || crate::sched::swap::active() {
        return Err(part);
    }
    let Some(need) = kind_fits(&part, equal) else {
        return Err(part);
    };
    let v = super::nbrecv::is_v(&part, equal);
    let key = key_of(cm.ctx, &cm.group.ranks);
    let mut slot = Some(part);
    let r = state::with(|s| {
        let i = crate::core::comm::comm_index(comm_h)?;
        let l = s.locals.get(sub)?;
        if !l.initialized || l.finalized || l.comms.get(i)?.is_none() || !s.rcoll.twins.contains_key(&key) {
            return None;
        }
        // One member per process is `nbc`'s (`eligible` there); a communicator with a twin
        // spans every process, so it is that exactly when its size is the process count.
        if cm.group.ranks.len() == s.nproc {
            return None;
        }
        // nbc8: Gather, Scatter and Allgather want as many members on every process (nbc10:
        // the other kinds ask nothing of the layout; iag16: read where it is kept).
        if !need.met(|| layout_per(s, cm)) {
            return None;
        }
        let seq = real::next_place(s, sub, i)?.0;
        real::enrol_in(s, key, (seq, 0));
        let id = s.new_request(sub, comm_h);
        let part = slot.take()?;
        // SAFETY: forwarded from the caller.
        Some((id, seq, unsafe { join_in(s, cm, (key, seq), part, id, v) }))
    });
    let (id, seq, next) = match r {
        Ok(Some(x)) => x,
        Ok(None) => return Err(slot.take().expect("untouched")),
        Err(e) => return Ok(Err(e)),
    };
    crate::core::background::wanted();
    // SAFETY: forwarded from the caller.
    Ok(next.and_then(|n| unsafe { finish_join((key, seq), cm.rank, n) }).map(|()| id))
}

// coll7 (issue 16, session 16): broadcasts started at the first join that can start them.

/// A broadcast's join (`join_in`, under the state lock): the root's join in the root's process, and the first join
/// elsewhere, start the real operation (a tree of real messages up to `TOUCAN_NBC_TREE_MAX`,
/// else the real `MPI_Ibcast`, in the call's place on the twin as any: `real::queue_early`);
/// a member that joins once the data is here takes its copy and completes at once. Session
/// 27: a scatter's join the same way (the real `MPI_Iscatter` of this process's blocks,
/// `Early`).
///
/// # Safety
/// As `join`.
unsafe fn join_early_in(s: &mut State, cm: &CommRef, key: (CommKey, u64), part: Part, id: ReqId) -> MpiResult<()> {
    let me = cm.rank;
    let (root, bytes, block) = match &part {
        Part::Bcast { buf, root } => (*root, buf.count * buf.dt.size, None),
        Part::Scatter { root, .. } => (*root, 0, Some(scatter_block(&part, me))),
        _ => unreachable!("join_early_in takes broadcasts and scatters"),
    };
    if !s.rcoll.recs.contains_key(&key) {
        let r = early_rec(s, cm, root, bytes, block);
        s.rcoll.recs.insert(key, r);
    }
    let rec = s.rcoll.recs.get_mut(&key).expect("inserted above");
    let i = rec.local.binary_search(&me).unwrap_or(0);
    let first = rec.joined == 0;
    rec.joined += 1;
    let rp = rec.procs[root as usize].0;
    rec.parts[i] = Some((part, id));
    let e = rec.early.as_mut().expect("a broadcast's record is early");
    let go = if e.root == Some(i) {
        match &rec.parts[i] {
            // SAFETY: the root's buffer is valid during its call.
            Some((Part::Bcast { buf, .. }, _)) => unsafe { buf.dt.pack(buf.ptr, buf.count, &mut e.data) },
            Some((Part::Scatter { parts, .. }, _)) => {
                // The root's blocks decide the layout here (a member whose count differs
                // gets MPI_ERR_TRUNCATE in `settle_rec`).
                e.block = parts.get(0).map_or(0, |v| v.count * v.dt.size);
                let blk = rec.per * e.block;
                let nproc = rec.procs.iter().map(|p| p.0 + 1).max().unwrap_or(1);
                e.tree = tree_scatter(blk, nproc);
                // A tree's blocks by process relative to the root's (its own first).
                let at = |p: usize| if e.tree { (p + nproc - rp) % nproc } else { p };
                e.base = at(rp) * blk;
                // Every rank's block is packed below (as many members on every process):
                // only what the buffer grows by is zeroed first (session 30).
                e.data.truncate(nproc * blk);
                e.data.resize(nproc * blk, 0);
                for (r, &(p, k)) in rec.procs.iter().enumerate() {
                    // SAFETY: the root's blocks are valid during its call; `data` has room
                    // for every process's (`pack_buf` checks the bounds).
                    unsafe { pack_block(parts, r, &mut e.data, at(p) * blk + k * e.block) };
                }
            }
            _ => {}
        }
        e.here = true;
        true
    } else {
        e.root.is_none() && first
    };
    let start = go.then(|| {
        let p = e.data.as_mut_ptr();
        let (what, mem) = match block {
            None if super::nbc::tree_bcast(bytes) => (RealColl::TreeBcast { root: rp, tag: 0 }, CollMem::at(p, p, bytes)),
            None => (RealColl::Bcast { root: rp }, CollMem::at(p, p, bytes)),
            Some(b) => {
                let blk = rec.per * b;
                if e.tree {
                    let what = RealColl::TreeScatter {
                        root: rp,
                        bytes: blk,
                        tag: 0,
                    };
                    return (what, CollMem::at(p, p, e.data.len()), e.uid);
                }
                // At the root's process every block goes from `data`, its own in place
                // (`recv` null); elsewhere this process's blocks land there.
                let mem = match e.root {
                    Some(_) => CollMem {
                        send: p,
                        recv: std::ptr::null_mut(),
                        bytes: e.data.len(),
                        keep: Vec::new(),
                    },
                    None => CollMem::at(p, p, blk),
                };
                (RealColl::Scatter { root: rp, bytes: blk }, mem)
            }
        };
        (what, mem, e.uid)
    });
    // nbc10: a join before the data is here that is not the last completes nothing and
    // leaves the record where it is: no settle (about 300 instructions per such member,
    // callgrind at 2x4).
    if e.here || e.done || rec.joined == rec.local.len() {
        settle(s, key);
    }
    let Some((what, mem, uid)) = start else { return Ok(()) };
    // SAFETY: `mem` is the record's `data`, which stays (and does not move) until the
    // operation finished (`landed`).
    unsafe { real::queue_early(s, key, uid, what, mem) }
}

/// Session 27: bytes per process (`blk`, every process's members' blocks) up to which a
/// two-level Iscatter goes as a binomial tree of real messages (`RealColl::TreeScatter`) and
/// not as the real `MPI_Iscatter` (whose schedule cost about 2000 instructions per call in
/// the process away from the root at 2x4, callgrind, against ~300 for a real receive), when
/// all of them (`nproc * blk`) fit in `collp2p::P2P_MAX`. Off with `TOUCAN_NBC_TREE_MAX=0`,
/// as the broadcast's tree.
const SCATTER_TREE_MAX: usize = 64 << 10;

/// Session 27: whether a two-level scatter of `blk` bytes per process over `nproc` processes
/// goes as a tree of real messages (decided alike everywhere: the blocks' size, the layout).
fn tree_scatter(blk: usize, nproc: usize) -> bool {
    crate::core::runtime::config().nbc_tree_max > 0
        && blk <= SCATTER_TREE_MAX
        && nproc.checked_mul(blk).is_some_and(|b| b <= crate::transport::collp2p::P2P_MAX)
}

/// Session 27: a scatter member's block in bytes, from its own arguments (an in-place
/// root's: its own slot of the send blocks).
fn scatter_block(part: &Part, me: i32) -> usize {
    match part {
        Part::Scatter { recv: Some(b), .. } => b.count * b.dt.size,
        Part::Scatter { parts, .. } => parts.get(me as usize).map_or(0, |v| v.count * v.dt.size),
        _ => 0,
    }
}

/// Broadcast records' shells kept for reuse (their vectors keep their capacity).
const SPARE_SHELLS: usize = 8;
/// Larger buffers are not kept.
const SPARE_DATA_MAX: usize = 1 << 20;

/// coll7: a finished broadcast record's allocations, for the next one (`Shells`).
pub struct Shell {
    parts: Vec<Option<(Part, ReqId)>>,
    early: Box<Early>,
}

/// coll7: spare shells of this process (`RealComms::shells`).
pub type Shells = Vec<Shell>;

/// A broadcast record of `bytes` bytes from `root` for call `c`, from a spare shell when there
/// is one.
///
/// Session 27: a scatter's record (`block`: the joining member's bytes) whose `data` is
/// this process's blocks away from the root's process, and laid out at the root's join there.
#[inline(always)]
pub(super) fn early_rec(s: &mut State, cm: &CommRef, root: i32, bytes: usize, block: Option<usize>) -> Rec {
    early_with(s, cm, root, Some((bytes, block)))
}

/// Session 30: a v-form's early record (`vscatter`, `vgather`), whose `data` its module sizes itself: a
/// spare shell's buffer is left as it was (a receive of the same length then needs no fresh
/// zero fill at every call).
pub(super) fn early_rec_v(s: &mut State, cm: &CommRef, root: i32) -> Rec {
    early_with(s, cm, root, None)
}

/// `early_rec`'s body; `size`: its `bytes` and `block`, None for `early_rec_v`.
#[inline(always)]
fn early_with(s: &mut State, cm: &CommRef, root: i32, size: Option<(usize, Option<usize>)>) -> Rec {
    let Layout {
        local,
        procs,
        ordered,
        nproc,
        ..
    } = layout(s, cm);
    let n = local.len();
    let lroot = local.binary_search(&root).ok();
    let myproc = s.myproc;
    let Shell { mut parts, mut early } = s.rcoll.shells.pop().unwrap_or_else(|| Shell {
        parts: Vec::new(),
        early: Box::new(Early {
            data: Vec::new(),
            slots: Vec::new(),
            block: 0,
            base: 0,
            tree: false,
            here: false,
            done: false,
            fin: Vec::new(),
            root: None,
            uid: 0,
            err: 0,
            hold: false,
        }),
    });
    parts.resize_with(n, || None);
    let e = &mut *early;
    // The root's process packs the root's block in; elsewhere the real operation lands here
    // (a reused buffer keeps its old bytes, zeroing only what it grows by: nobody reads them
    // before the operation overwrote them all, `here`; session 30: a spare shell's length
    // alternates between the root's process and another, and the zero fill of the whole at
    // every call was ~4.6k instructions of an Iscatter's 1 KiB iteration at 2x4).
    // Session 27: a scatter's tree (decided again from the root's block at its join in the
    // root's process) brings this process its subtree's blocks.
    let block = size.and_then(|(_, b)| b);
    let tree = block.is_some_and(|b| tree_scatter(n * b, nproc));
    if let Some((bytes, _)) = size {
        let len = match block {
            None => bytes,
            Some(b) if tree => n * b * crate::transport::collp2p::tree_span(myproc, procs[root as usize].0, nproc),
            Some(b) => n * b,
        };
        if lroot.is_some() {
            // A broadcast's root packs its buffer in; a scatter's lays `data` out at the
            // root's join (`join_early_in`).
            if block.is_none() {
                e.data.clear();
                e.data.reserve(bytes);
            }
        } else {
            e.data.truncate(len);
            e.data.resize(len, 0);
        }
    }
    (e.block, e.base, e.tree) = (block.unwrap_or(0), 0, tree);
    e.slots.clear();
    e.hold = false;
    e.fin.resize(n, false);
    (e.here, e.done, e.root, e.uid, e.err) = (false, false, lroot, s.rcoll.token(), 0);
    Rec {
        parts,
        per: n,
        ordered,
        local,
        joined: 0,
        procs,
        early: Some(early),
        sent: false,
        v: false,
    }
}

/// Takes finished record `rec`'s allocations back into the spares.
fn recycle(s: &mut State, rec: Rec) {
    let Some(mut early) = rec.early else { return };
    if s.rcoll.shells.len() >= SPARE_SHELLS || early.data.capacity() > SPARE_DATA_MAX {
        return;
    }
    let mut parts = rec.parts;
    parts.clear();
    early.fin.clear();
    s.rcoll.shells.push(Shell { parts, early });
}

/// Requests a settle completes (most records have few local members: no allocation).
#[derive(Default)]
struct Completed {
    few: [ReqId; 8],
    n: usize,
    more: Vec<ReqId>,
    /// faults16: those that complete with an error class (a truncation).
    failed: Vec<(ReqId, i32)>,
}

impl Completed {
    /// faults16: gives the failed requests their class (before they complete).
    fn mark(&self, s: &mut State) {
        for &(id, class) in &self.failed {
            if let Some(r) = s.req_mut(id) {
                r.status.error = class;
            }
        }
    }
    fn push(&mut self, id: ReqId) {
        match self.few.get_mut(self.n) {
            Some(slot) => {
                *slot = id;
                self.n += 1;
            }
            None => self.more.push(id),
        }
    }
    fn ids(&self) -> impl Iterator<Item = ReqId> + '_ {
        self.few[..self.n].iter().chain(self.more.iter()).copied()
    }
}

/// Completes what broadcast record `key` allows: every joined member but the root once the
/// data is here (its copy taken), the root once the real operation finished; drops the
/// record once every local member joined and the operation finished. (nbc8 tried completing
/// the root at its own join, since the record holds the packed copy the real operation sends
/// from: the root's Ibcast + Wait of 64 KiB at 2x4 fell from 17 to 8.5 µs, but the other
/// process's members, the slowest ranks, rose from 22.5 to 25.5 µs in three loaded pairs, so
/// the root's process keeps polling the transfer in the root's wait.)
#[inline(always)]
pub(super) fn settle(s: &mut State, key: (CommKey, u64)) {
    let Some(rec) = s.rcoll.recs.get_mut(&key) else { return };
    let mut done = Completed::default();
    settle_rec(rec, &mut done);
    if rec.joined == rec.local.len() {
        // Every member joined: the record leaves the joins' map (a later communicator with
        // the same key may number its calls alike), finished or to finish when it lands.
        if let Some(rec) = s.rcoll.recs.remove(&key) {
            match rec.early.as_ref() {
                Some(e) if !e.done => {
                    s.rcoll.landing.insert(e.uid, rec);
                }
                _ => recycle(s, rec),
            }
        }
    }
    done.mark(s);
    note_order(s, done.ids());
    for id in done.ids() {
        s.event_done(id);
    }
}

/// `settle`'s copies and completions on record `rec` (the requests to complete go to `done`).
fn settle_rec(rec: &mut Rec, done: &mut Completed) {
    let all = rec.joined == rec.local.len();
    let Some(e) = rec.early.as_mut() else { return };
    for (j, slot) in rec.parts.iter().enumerate() {
        let Some((part, id)) = slot else { continue };
        let root = e.root == Some(j);
        if e.fin[j] || !(if root { e.done && (all || !e.hold) } else { e.here }) {
            continue;
        }
        let mut class = e.err;
        // Where the member's data is in `data`: a broadcast's whole, a scatter's block j
        // (the root's too: its own block, unless in place).
        let from = match (part, root) {
            (Part::Bcast { buf: b, .. }, false) => Some((b, 0, e.data.len())),
            (Part::Scatter { recv: Some(b), .. }, _) => {
                let (at, have) = e.slot(j);
                Some((b, at, have))
            }
            // gath30: a v-form gather's root takes the blocks that landed in `data`; its other
            // members only send (MPI's senders see no truncation).
            (Part::Gather { parts, .. }, true) => {
                // SAFETY: the root's blocks stay valid until its request completes (below).
                unsafe { super::vgather::unpack(parts, e) };
                None
            }
            (Part::Gather { .. }, false) => {
                class = 0;
                None
            }
            _ => None,
        };
        if let Some((b, at, have)) = from {
            // faults16: a member whose count differs from the block that came (the program's
            // error: a truncation) takes what fits and MPI_ERR_TRUNCATE; it used to panic.
            let want = b.count * b.dt.size;
            // vscat29: a block that landed in the member's buffer (`vscatter::LANDED`) has
            // no place in `data`.
            if want <= have && at.checked_add(want).is_some_and(|end| end <= e.data.len()) {
                // SAFETY: the member's buffer stays valid until its request completes (below).
                unsafe { b.dt.unpack(&e.data[at..at + want], b.ptr, b.count) };
            }
            if want != have && class == 0 {
                class = crate::consts::MPI_ERR_TRUNCATE;
            }
        }
        if class != 0 {
            done.failed.push((*id, class));
        }
        e.fin[j] = true;
        done.push(*id);
    }
}

std::thread_local! {
    /// nbc8: the task that completed its own broadcast request together with siblings that
    /// joined before it, in its own poll (`landed`), and lets them go first (`after_wait`).
    static GIVE_WAY: std::cell::Cell<usize> = const { std::cell::Cell::new(usize::MAX) };
}

/// nbc8: requests `done` of one landing complete together. When the running task (a member
/// that polled in its wait) is one of them but not the first, it would return first and run
/// on to its next call while the siblings that called before it (the ones whose span is the
/// longest) wait in the ready queue: note that it should give way (`after_wait`). Tried on
/// a reduction record's `finish` too and not kept there: in a loaded 2x4 loop it evened out
/// the ranks' times without lowering the slowest, and raised their mean.
fn note_order(s: &State, done: impl Iterator<Item = ReqId>) {
    let me = crate::sched::current();
    let mut owners = done.map(|id| s.req(id).map_or(usize::MAX, |r| r.owner));
    if owners.next().is_some_and(|first| first != me) && owners.any(|o| o == me) {
        GIVE_WAY.with(|g| g.set(me));
    }
}

/// nbc8: after a completed `MPI_Wait` (`abi::p2p`): lets the siblings whose broadcast landed
/// with the caller's, and who called before it, run first (one switch of the caller's; a
/// thread-local load otherwise).
pub fn after_wait() {
    let me = crate::sched::current();
    if GIVE_WAY.with(|g| g.get() == me && me != usize::MAX) {
        GIVE_WAY.with(|g| g.set(usize::MAX));
        crate::sched::yield_now();
    }
}

/// Broadcast record `uid` (call `key`)'s real operation finished (from `real::on_done`).
pub(super) fn landed(s: &mut State, key: (CommKey, u64), uid: u64) {
    if let Some(mut rec) = s.rcoll.landing.remove(&uid) {
        let mut done = Completed::default();
        if let Some(e) = rec.early.as_mut() {
            (e.here, e.done) = (true, true);
        }
        settle_rec(&mut rec, &mut done);
        recycle(s, rec);
        done.mark(s);
        note_order(s, done.ids());
        for id in done.ids() {
            s.event_done(id);
        }
        return;
    }
    if let Some(e) = s.rcoll.recs.get_mut(&key).and_then(|r| r.early.as_mut()).filter(|e| e.uid == uid) {
        (e.here, e.done) = (true, true);
    }
    settle(s, key);
}

pub(super) fn new_rec(s: &mut State, c: &Coll) -> Rec {
    rec_for(s, &c.comm)
}

/// A record for a call on `cm`.
fn rec_for(s: &mut State, cm: &CommRef) -> Rec {
    let Layout { local, procs, ordered, .. } = layout(s, cm);
    let per = local.len();
    Rec {
        parts: (0..local.len()).map(|_| None).collect(),
        local,
        joined: 0,
        procs,
        per,
        ordered,
        early: None,
        sent: false,
        v: false,
    }
}

/// Layouts kept at most (one per communicator in use), as `hier`'s node maps.
const MAX_LAYOUTS: usize = 1024;

/// The layout of call `c`'s communicator on this process: its ranks here, and the process of
/// each rank with its index among that process's members. coll7: found once per
/// communicator (`RealComms::layouts`; it was two vectors of the communicator's size built
/// per call).
fn layout(s: &mut State, cm: &CommRef) -> Layout {
    let key = key_of(cm.ctx, &cm.group.ranks);
    if let Some(l) = s.rcoll.layouts.get(&key) {
        return l.clone();
    }
    let mut seen = vec![0usize; s.nproc];
    let mut local = Vec::new();
    let procs: Arc<[(usize, usize)]> = cm
        .group
        .ranks
        .iter()
        .enumerate()
        .map(|(r, &w)| {
            let p = s.locate(w).0;
            if p == s.myproc {
                local.push(r as i32);
            }
            seen[p] += 1;
            (p, seen[p] - 1)
        })
        .collect();
    let first = seen.iter().copied().find(|&c| c > 0).unwrap_or(0);
    let even = seen.iter().all(|&c| c == 0 || c == first);
    let ordered = even && first > 0 && procs.iter().enumerate().all(|(r, &(p, k))| (p, k) == (r / first, r % first));
    let nproc = procs.iter().map(|p| p.0 + 1).max().unwrap_or(1);
    let l = Layout {
        local: local.into(),
        procs,
        even,
        ordered,
        nproc,
    };
    if s.rcoll.layouts.len() >= MAX_LAYOUTS {
        s.rcoll.layouts.clear();
    }
    s.rcoll.layouts.insert(key, l.clone());
    l
}

/// Each joined member's arguments, in local rank order.
fn members(rec: &Rec) -> impl Iterator<Item = &Part> {
    rec.parts.iter().filter_map(|p| p.as_ref().map(|(part, _)| part))
}

/// Bytes of one block of `b` (equal blocks).
fn block_bytes(b: &Blocks) -> usize {
    match b {
        Blocks::Equal { count, dt, .. } => count * dt.size,
        Blocks::List(v) => v.first().map_or(0, |b| b.count * b.dt.size),
    }
}

/// Packs block `i` of `b` into `out` at `at`.
///
/// # Safety
/// `b`'s buffers are valid.
unsafe fn pack_block(b: &Blocks, i: usize, out: &mut [u8], at: usize) {
    if let Some(v) = b.get(i) {
        // SAFETY: forwarded from the caller.
        unsafe { pack_buf(v, out, at) };
    }
}

/// nbc9: packs `v` into `out` at `at`, straight (it went through a scratch vector and a
/// second copy).
///
/// # Safety
/// `v`'s buffer is valid.
unsafe fn pack_buf(v: View<'_>, out: &mut [u8], at: usize) {
    let dst = &mut out[at..at + v.count * v.dt.size];
    // SAFETY: `dst` has room for the packed data (bounds-checked above); `v` is valid.
    unsafe { v.dt.pack_to(v.ptr, v.count, dst.as_mut_ptr()) };
}

/// Unpacks `bytes` at `at` of `from` into block `i` of `b`.
///
/// # Safety
/// `b`'s buffers are valid.
unsafe fn unpack_block(b: &Blocks, i: usize, from: &[u8], at: usize, bytes: usize) {
    if let Some(v) = b.get(i) {
        v.dt.unpack(&from[at..at + bytes], v.ptr, v.count);
    }
}

/// The local step: the real operation and its memory (`me`: a local member's rank).
///
/// # Safety
/// The members' buffers are valid.
pub(super) unsafe fn combine(rec: &Rec, me: i32) -> (RealColl, CollMem) {
    if rec.v {
        // SAFETY: forwarded from the caller.
        return unsafe { super::nbrecv::combine(&rec.local, &rec.procs, &rec.parts, me) };
    }
    let Some(first) = members(rec).next() else {
        return (RealColl::Barrier, CollMem::owned(Vec::new()));
    };
    let nproc = rec.procs.iter().map(|p| p.0 + 1).max().unwrap_or(1);
    match first {
        Part::Bcast { buf, root } => {
            let rp = rec.procs[*root as usize].0;
            let len = buf.count * buf.dt.size;
            let mut v = Vec::with_capacity(len);
            // In the root's process the data comes from the root's buffer.
            let src = rec.local.iter().position(|r| r == root).and_then(|j| match &rec.parts[j] {
                Some((Part::Bcast { buf, .. }, _)) => Some(buf),
                _ => None,
            });
            match src {
                Some(b) => b.dt.pack(b.ptr, b.count, &mut v),
                None => v.resize(len, 0),
            }
            (RealColl::Bcast { root: rp }, CollMem::owned(v))
        }
        Part::Reduce { count, dt, red, root, .. } => {
            let (op, ty) = real::real_reduction(red).expect("eligible reductions are real");
            let (n, _) = red.work(*count, dt);
            let mut acc: Option<Vec<u8>> = None;
            let mut x = Vec::new();
            for p in members(rec) {
                if let Part::Reduce { send, recv, count, dt, .. } = p {
                    let operand = in_place(*send, *recv);
                    match acc.as_mut() {
                        None => acc = Some(red.load(operand, *count, dt)),
                        // SAFETY: the member's operand holds `count` elements of `dt`; `a` is
                        // a work buffer of the same count (every member's type signature is
                        // the same, MPI requires it).
                        Some(a) => unsafe { fold_into(red, operand, *count, dt, a, &mut x) },
                    }
                }
            }
            let acc = acc.unwrap_or_default();
            let what = match root {
                Some(r) => RealColl::Reduce {
                    root: rec.procs[*r as usize].0,
                    op,
                    ty,
                    count: n,
                },
                None => RealColl::Allreduce { op, ty, count: n },
            };
            (what, CollMem::owned(acc))
        }
        Part::Allgather { parts, .. } => {
            let bytes = block_bytes(parts);
            let blk = rec.per * bytes;
            let base = rec.procs[me as usize].0 * blk;
            // nbc9: straight into the first member's receive buffer when it is laid out as
            // the real operation's (`landing`), else into a buffer of ours.
            let land = landing(rec);
            let mut keep = Vec::new();
            let all: &mut [u8] = match land {
                // SAFETY: the first member's receive buffer, `nproc * blk` contiguous bytes
                // (`landing`), valid until its request completes; no other member's buffer
                // overlaps it.
                Some(p) => unsafe { std::slice::from_raw_parts_mut(p, nproc * blk) },
                None => {
                    keep.resize(nproc * blk, 0);
                    &mut keep
                }
            };
            for (j, p) in members(rec).enumerate() {
                if let Part::Allgather { send, parts } = p {
                    let at = base + j * bytes;
                    match send {
                        Some(b) => pack_buf(b.into(), all, at),
                        // In place, the landing member's own block is where it belongs.
                        None if land.is_some() && j == 0 => {}
                        None => pack_block(parts, rec.local[j] as usize, all, at),
                    }
                }
            }
            let mem = match land {
                Some(p) => CollMem::at(p, p, nproc * blk),
                None => CollMem::owned(keep),
            };
            (RealColl::Allgather { bytes: blk }, mem)
        }
        Part::Gather { root, .. } => {
            let bytes = rooted_bytes(rec);
            let blk = rec.per * bytes;
            let me = rec.procs[me as usize].0;
            let rp = rec.procs[*root as usize].0;
            // The root's process receives every process's block, its own in place; the
            // others send theirs from the start of the buffer.
            let (len, base) = if me == rp { (nproc * blk, me * blk) } else { (blk, 0) };
            let mut all = vec![0u8; len];
            for (j, p) in members(rec).enumerate() {
                if let Part::Gather { send, parts, .. } = p {
                    let at = base + j * bytes;
                    match send {
                        Some(b) => pack_buf(b.into(), &mut all, at),
                        None => pack_block(parts, rec.local[j] as usize, &mut all, at),
                    }
                }
            }
            (RealColl::Gather { root: rp, bytes: blk }, CollMem::owned(all))
        }
        Part::Scatter { root, .. } => {
            let bytes = rooted_bytes(rec);
            let blk = rec.per * bytes;
            let me = rec.procs[me as usize].0;
            let rp = rec.procs[*root as usize].0;
            if me != rp {
                return (RealColl::Scatter { root: rp, bytes: blk }, CollMem::owned(vec![0u8; blk]));
            }
            // The root's blocks laid out per process; this process's own stays in place.
            let mut all = vec![0u8; nproc * blk];
            let src = rec.local.iter().position(|r| r == root).and_then(|j| match &rec.parts[j] {
                Some((Part::Scatter { parts, .. }, _)) => Some(parts),
                _ => None,
            });
            if let Some(parts) = src {
                for (i, &(p, k)) in rec.procs.iter().enumerate() {
                    pack_block(parts, i, &mut all, p * blk + k * bytes);
                }
            }
            let mem = CollMem {
                send: all.as_ptr(),
                recv: std::ptr::null_mut(),
                bytes: all.len(),
                keep: all,
            };
            (RealColl::Scatter { root: rp, bytes: blk }, mem)
        }
        // Per process q, one block of per x per: (local member j -> q's member k) at
        // j*per + k (coll5, for a persistent plan at one member per process whose blocks
        // cannot go as they are; nbc9: every two-level Ialltoall within `ALLTOALL_MAX`).
        Part::Alltoall { recvs, .. } => {
            let bytes = block_bytes(recvs);
            let blk = rec.per * rec.per * bytes;
            let half = nproc * blk;
            let myproc = rec.procs[me as usize].0;
            // nbc9: not in place, the blocks between local members are copied straight
            // (`direct`); this process's own block of the exchange is left as it is.
            let direct = direct_alltoall(rec);
            let mut keep = vec![0u8; 2 * half];
            for (j, p) in members(rec).enumerate() {
                if let Part::Alltoall { sends, recvs } = p {
                    // In place the send data is the receive buffer, packed before anything arrives.
                    let from = sends.as_ref().unwrap_or(recvs);
                    for (i, &(q, k)) in rec.procs.iter().enumerate() {
                        if direct && q == myproc {
                            // Block i of member j's sends is block j's rank of member k's receives.
                            let to = match &rec.parts[k] {
                                Some((Part::Alltoall { recvs, .. }, _)) => recvs.get(rec.local[j] as usize),
                                _ => None,
                            };
                            if let (Some(src), Some(dst)) = (from.get(i), to) {
                                copy_view(src, dst);
                            }
                        } else {
                            pack_block(from, i, &mut keep, q * blk + (j * rec.per + k) * bytes);
                        }
                    }
                }
            }
            let send = keep.as_ptr();
            // SAFETY: the second half of `keep`, `half` bytes long.
            let recv = unsafe { keep.as_mut_ptr().add(half) };
            let mem = CollMem {
                send,
                recv,
                bytes: half,
                keep,
            };
            (RealColl::Alltoall { bytes: blk }, mem)
        }
        _ => (RealColl::Barrier, CollMem::owned(Vec::new())),
    }
}

/// `acc = operand op acc` for one member's operand (`count` elements of `dt`) of a record's
/// reduction, `x` a scratch work buffer. nbc10: a predefined operation on a contiguous type
/// whose work buffer is its packed bytes (`Reducer::load_into`'s straight case) reads the
/// operand where it is instead of copying it into `x` first (callgrind, 2x4, `MPI_Iallreduce`
/// inclusive per member with the `needs_even` change: 8 B 3210 -> 2943, 1 KiB 3884 -> 3507).
///
/// # Safety
/// `operand` holds `count` elements of `dt`; `acc` is a work buffer of `red` for `count`
/// elements of `dt`, not overlapping `operand`.
pub(super) unsafe fn fold_into(red: &Reducer, operand: *const u8, count: usize, dt: &DtRef, acc: &mut [u8], x: &mut Vec<u8>) {
    if let Reducer::Builtin { op, ty, work_dt } = red {
        if dt.is_contiguous() && work_dt.is_contiguous() {
            let (n, _) = red.work(count, dt);
            // SAFETY: both layouts are the packed elements, so the operand is a work buffer
            // of `n` elements as it is (the caller's contract), and `acc` holds as many; they
            // do not overlap (the caller's contract).
            unsafe { super::op::apply(*op, *ty, operand, acc.as_mut_ptr(), n) };
            return;
        }
    }
    // SAFETY: the caller's contract.
    unsafe {
        red.load_into(operand, count, dt, x);
        red.apply(x, acc, count, dt);
    }
}

/// nbc9: where an Allgather record's real operation lands when not in a buffer of ours: the
/// first local member's receive buffer, when it holds the whole result laid out as the real
/// operation lays it out (the communicator's ranks in process order, equal blocks of a
/// contiguous type one after the other). Its members then copy from there, and the first
/// one has nothing to copy (one copy of the whole result fewer, and no zeroed buffer).
/// None for other kinds.
fn landing(rec: &Rec) -> Option<*mut u8> {
    if !rec.ordered {
        return None;
    }
    match rec.parts.first() {
        Some(Some((
            Part::Allgather {
                parts: Blocks::Equal { ptr, dt, n, .. },
                ..
            },
            _,
        ))) if dt.is_contiguous() && *n == rec.procs.len() => Some(*ptr),
        _ => None,
    }
}

/// nbc9: whether an Alltoall record's blocks between local members are copied straight from
/// sender to receiver at the start (`combine`) rather than through the real exchange: when
/// no member is in place (a receive buffer that is also a send buffer could be overwritten
/// before its blocks are read). False for other kinds.
fn direct_alltoall(rec: &Rec) -> bool {
    rec.parts
        .iter()
        .all(|p| matches!(p, Some((Part::Alltoall { sends: Some(_), .. }, _))))
}

/// nbc9: copies the data of `src` into `dst` (same type signature, MPI's rule for matching
/// blocks).
///
/// # Safety
/// Both buffers are valid and do not overlap.
pub(super) unsafe fn copy_view(src: View<'_>, dst: View<'_>) {
    let n = src.count * src.dt.size;
    if src.dt.is_contiguous() && dst.dt.is_contiguous() {
        // SAFETY: both hold `n` bytes (the caller's contract).
        unsafe { crate::transport::copy::bytes(src.ptr, dst.ptr, n.min(dst.count * dst.dt.size)) };
        return;
    }
    let mut tmp = Vec::with_capacity(n);
    // SAFETY: the caller's contract.
    unsafe {
        src.dt.pack(src.ptr, src.count, &mut tmp);
        dst.dt.unpack(&tmp, dst.ptr, dst.count);
    }
}

/// Bytes per rank of a Gather or Scatter record: any member's own block (the same
/// everywhere, MPI requires it; an in-place root's is the one in its own slot).
fn rooted_bytes(rec: &Rec) -> usize {
    let mut own = members(rec).zip(rec.local.iter()).map(|(p, &r)| match p {
        Part::Gather { send: Some(b), .. } | Part::Scatter { recv: Some(b), .. } => b.count * b.dt.size,
        Part::Gather { parts, .. } | Part::Scatter { parts, .. } => parts.get(r as usize).map_or(0, |v| v.count * v.dt.size),
        _ => 0,
    });
    own.next().unwrap_or(0)
}

/// Session 25 (faults16): the real operation of the broadcast record started early as `uid`
/// (call `key`) failed with error class `class`: its members complete with it.
pub(super) fn early_failed(s: &mut State, key: (CommKey, u64), uid: u64, class: i32) {
    let e = match s.rcoll.landing.get_mut(&uid) {
        Some(rec) => rec.early.as_mut(),
        None => s.rcoll.recs.get_mut(&key).and_then(|r| r.early.as_mut()).filter(|e| e.uid == uid),
    };
    if let Some(e) = e {
        e.err = class;
    }
}

/// Session 25 (faults16): the member requests record `rec` completes.
pub(super) fn requests(rec: &Rec) -> impl Iterator<Item = ReqId> + '_ {
    rec.parts.iter().flatten().map(|(_, id)| *id)
}

/// The real collective of `rec` finished with `buf` (its memory): distributes the result to
/// the local members and completes their requests (from the progress engine).
pub fn finish(s: &mut State, rec: &Rec, buf: Vec<u8>) {
    // SAFETY: every member's buffers stay valid until its request completes (below).
    unsafe { distribute(rec, &buf, s.myproc) };
    for (j, (part, id)) in rec.parts.iter().enumerate().filter_map(|(j, p)| p.as_ref().map(|p| (j, p))) {
        if !(rec.sent && sends_only(part, rec.local[j])) {
            s.event_done(*id);
        }
    }
}

/// `finish`'s copies of the result `buf` into the local members' buffers (this is process
/// `myproc`).
///
/// # Safety
/// Every member's buffers are valid.
unsafe fn distribute(rec: &Rec, buf: &[u8], myproc: usize) {
    if rec.v {
        // SAFETY: forwarded from the caller.
        return unsafe { super::nbrecv::distribute(&rec.local, &rec.procs, &rec.parts, buf, myproc) };
    }
    let direct = direct_alltoall(rec);
    let land = landing(rec);
    for (j, slot) in rec.parts.iter().enumerate() {
        let Some((part, _)) = slot else { continue };
        let me = rec.local[j];
        // nbc8: complete since the start (`finish_join`): its buffers are the program's again.
        if rec.sent && sends_only(part, me) {
            continue;
        }
        // SAFETY: every member's buffers stay valid until its request completes (below).
        unsafe {
            match part {
                Part::Bcast { buf: b, root } if *root != me => {
                    b.dt.unpack(&buf[..b.count * b.dt.size], b.ptr, b.count);
                }
                Part::Reduce {
                    recv,
                    count,
                    dt,
                    red,
                    root,
                    ..
                } if root.is_none_or(|r| r == me) => red.store(buf, *recv, *count, dt),
                Part::Gather { parts, root, .. } if *root == me => {
                    let bytes = rooted_bytes(rec);
                    let blk = rec.per * bytes;
                    for (i, &(p, k)) in rec.procs.iter().enumerate() {
                        unpack_block(parts, i, buf, p * blk + k * bytes, bytes);
                    }
                }
                Part::Scatter { recv: Some(b), root, .. } => {
                    let bytes = rooted_bytes(rec);
                    // The root's process kept the whole send buffer, its own block in place.
                    let base = if rec.procs[*root as usize].0 == myproc {
                        myproc * rec.per * bytes
                    } else {
                        0
                    };
                    let at = base + j * bytes;
                    b.dt.unpack(&buf[at..at + bytes], b.ptr, b.count);
                }
                Part::Allgather { parts, .. } => {
                    let bytes = block_bytes(parts);
                    let blk = rec.per * bytes;
                    // nbc9: the result landed in the first member's buffer (`landing`).
                    let src = match land {
                        _ if land.is_some() && j == 0 => continue,
                        // SAFETY: as in `combine`: the first member's buffer holds the
                        // result, and no other member's buffer overlaps it.
                        Some(p) => std::slice::from_raw_parts(p as *const u8, rec.procs.len() * bytes),
                        None => buf,
                    };
                    match parts {
                        Blocks::Equal { ptr, count, dt, n } if dt.is_contiguous() && *n == rec.procs.len() && rec.ordered => {
                            crate::transport::copy::bytes(src.as_ptr(), *ptr, n * count * dt.size)
                        }
                        _ => {
                            for (i, &(p, k)) in rec.procs.iter().enumerate() {
                                unpack_block(parts, i, src, p * blk + k * bytes, bytes);
                            }
                        }
                    }
                }
                // coll5: the layout of `combine`'s Alltoall; the received half follows the sent one.
                Part::Alltoall { recvs, .. } => {
                    let bytes = block_bytes(recvs);
                    let blk = rec.per * rec.per * bytes;
                    let half = buf.len() / 2;
                    // nbc9: the local members' blocks were copied at the start (`combine`).
                    let skip = direct.then_some(myproc);
                    for (i, &(q, k)) in rec.procs.iter().enumerate() {
                        if Some(q) != skip {
                            unpack_block(recvs, i, buf, half + q * blk + (k * rec.per + j) * bytes, bytes);
                        }
                    }
                }
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::consts as c;
    use crate::core::coll::Buf;
    use rstest::rstest;

    /// nbc8: the one rule of `eligible` and `fast` (`fits`): the rooted kinds and Allgather
    /// need as many members on every process (`even`), and Gather/Scatter blocks below
    /// `ROOTED_MAX`; v forms stay off; nbc9: Alltoall up to `ALLTOALL_MAX` packed bytes.
    #[rstest]
    #[case::barrier("barrier", 1, true, false, true)]
    #[case::barrier_uneven("barrier", 1, true, true, true)]
    #[case::gather("gather", 4, true, true, true)]
    #[case::gather_uneven("gather", 4, true, false, false)]
    #[case::gather_v("gather", 4, false, true, false)]
    #[case::gather_large("gather", ROOTED_MAX / 4, true, true, false)]
    #[case::scatter("scatter", 100, true, true, true)]
    #[case::scatter_uneven("scatter", 100, true, false, false)]
    #[case::allgather("allgather", 100_000, true, true, true)]
    #[case::allgather_uneven("allgather", 3, true, false, false)]
    #[case::alltoall("alltoall", 1, true, true, true)]
    #[case::alltoall_uneven("alltoall", 1, true, false, false)]
    #[case::alltoall_v("alltoall", 1, false, true, false)]
    #[case::alltoall_large("alltoall", ALLTOALL_MAX / 4 / 8 + 1, true, true, false)]
    #[case::bcast("bcast", 2048, true, false, true)]
    #[case::bcast_large("bcast", BCAST_MAX / 4, true, true, false)]
    fn fits_by_kind(#[case] kind: &str, #[case] ints: usize, #[case] equal: bool, #[case] even: bool, #[case] want: bool) {
        let int = crate::core::datatype::lookup(c::MPI_INT).expect("MPI_INT");
        let mut v = vec![0i32; ints];
        let buf = Buf::new(v.as_mut_ptr() as *mut u8, ints, int.clone());
        let blocks = Blocks::Equal {
            ptr: v.as_mut_ptr() as *mut u8,
            count: ints,
            dt: int.clone(),
            n: 1,
        };
        let part = match kind {
            "barrier" => Part::Barrier,
            "bcast" => Part::Bcast { buf, root: 0 },
            "gather" => Part::Gather {
                send: Some(buf),
                parts: blocks,
                root: 0,
            },
            "scatter" => Part::Scatter {
                parts: blocks,
                recv: Some(buf),
                root: 0,
            },
            "allgather" => Part::Allgather {
                send: Some(buf),
                parts: blocks,
            },
            _ => Part::Alltoall {
                sends: None,
                recvs: blocks,
            },
        };
        let mut asked = false;
        // Two processes of two members each.
        let got = fits(&part, equal, || {
            asked = true;
            even.then_some((2, 2))
        });
        assert_eq!(got, want);
        // Only the kinds that need the members per process look at them (nbc10; iag16: what
        // `fast` asks of the layout under the lock is `kind_fits`'s `Need`).
        let layout_free = matches!(kind, "barrier" | "bcast");
        if layout_free {
            assert!(!asked);
        }
        if let Some(need) = kind_fits(&part, equal) {
            assert_eq!(need == Need::Nothing, layout_free);
        }
    }

    /// nbc10: `fold_into` (the operand read where it is) leaves what loading the operand
    /// into a work buffer and applying it leaves, for scalar and pair types.
    #[rstest]
    #[case::int_sum(c::MPI_INT, c::MPI_SUM, 1)]
    #[case::int_prod(c::MPI_INT, c::MPI_PROD, 1)]
    #[case::long_max(c::MPI_LONG, c::MPI_MAX, 2)]
    #[case::two_int_minloc(c::MPI_2INT, c::MPI_MINLOC, 2)]
    fn fold_into_matches_load_and_apply(#[case] dt_h: usize, #[case] op_h: usize, #[case] ints: usize) {
        let dt = crate::core::datatype::lookup(dt_h).expect("type");
        let red = Reducer::new(op_h, &dt, dt_h).expect("reducer");
        let count = 7;
        let a: Vec<i32> = (0..count * ints as i32).map(|i| (i * 37) % 11 - 5).collect();
        let b: Vec<i32> = (0..count * ints as i32).map(|i| (i * 13) % 7 - 3).collect();
        let n = count as usize;
        // SAFETY: `a` and `b` hold `count` elements of `dt` each.
        let (got, want) = unsafe {
            let mut got = red.load(b.as_ptr() as *const u8, n, &dt);
            let mut x = Vec::new();
            fold_into(&red, a.as_ptr() as *const u8, n, &dt, &mut got, &mut x);
            let mut want = red.load(b.as_ptr() as *const u8, n, &dt);
            let operand = red.load(a.as_ptr() as *const u8, n, &dt);
            red.apply(&operand, &mut want, n, &dt);
            (got, want)
        };
        assert_eq!(got, want);
    }

    /// coll5: the per-process layout of a packed Alltoall (`combine` and `distribute`), with
    /// the real Ialltoall played by copying block q of process p's send half into block p of
    /// process q's receive half. Every rank sends 100 * from + to.
    #[rstest]
    #[case::one_per_process(2, 1)]
    #[case::two_per_process(2, 2)]
    #[case::three_by_two(3, 2)]
    fn packed_alltoall_delivers_every_block(#[case] nproc: usize, #[case] per: usize) {
        let int = crate::core::datatype::lookup(c::MPI_INT).expect("MPI_INT");
        let n = nproc * per;
        let procs: Vec<(usize, usize)> = (0..n).map(|r| (r / per, r % per)).collect();
        let mut sends: Vec<Vec<i32>> = (0..n).map(|f| (0..n).map(|t| (100 * f + t) as i32).collect()).collect();
        let mut recvs: Vec<Vec<i32>> = vec![vec![-1; n]; n];
        let blocks = |v: &mut Vec<i32>| Blocks::Equal {
            ptr: v.as_mut_ptr() as *mut u8,
            count: 1,
            dt: int.clone(),
            n,
        };
        let recs: Vec<Rec> = (0..nproc)
            .map(|p| {
                let local: Vec<i32> = (0..per).map(|k| (p * per + k) as i32).collect();
                let parts = local
                    .iter()
                    .map(|&r| {
                        let part = Part::Alltoall {
                            sends: Some(blocks(&mut sends[r as usize])),
                            recvs: blocks(&mut recvs[r as usize]),
                        };
                        Some((part, 0))
                    })
                    .collect();
                Rec {
                    local: local.into(),
                    parts,
                    joined: per,
                    procs: procs.clone().into(),
                    per,
                    ordered: true,
                    early: None,
                    sent: false,
                    v: false,
                }
            })
            .collect();
        // SAFETY: the blocks point at the vectors above, alive until the end.
        let mems: Vec<(RealColl, CollMem)> = recs.iter().map(|r| unsafe { combine(r, r.local[0]) }).collect();
        let RealColl::Alltoall { bytes: blk } = mems[0].0 else {
            panic!("not an alltoall")
        };
        let half = nproc * blk;
        for q in 0..nproc {
            let mut buf = mems[q].1.keep.clone();
            for p in 0..nproc {
                let from = &mems[p].1.keep[q * blk..(q + 1) * blk];
                buf[half + p * blk..half + (p + 1) * blk].copy_from_slice(from);
            }
            // SAFETY: as above.
            unsafe { distribute(&recs[q], &buf, q) };
        }
        for (to, got) in recvs.iter().enumerate() {
            let want: Vec<i32> = (0..n).map(|f| (100 * f + to) as i32).collect();
            assert_eq!(got, &want, "rank {to}");
        }
    }
}
