//! Window creation and freeing, and the synchronisation calls: fence, post-start-complete-
//! wait, and passive target (locks, flushes). Epoch errors are `MPI_ERR_RMA_SYNC`.

use super::ops::{real_err, with_tp};
use super::{lookup, register, unregister, Common, Created, Target, Win, WinState};
use crate::consts as c;
use crate::core::coll::{Buf, Coll};
use crate::core::comm::CommRef;
use crate::core::datatype;
use crate::core::error::{err, MpiError, MpiResult};
use crate::core::p2p::blocking::{irecv, isend, wait};
use crate::core::p2p::matching::Pattern;
use crate::core::p2p::SendMode;
use crate::core::state;
use crate::sched::lock::Lock;
use crate::transport::shm::Segment;
use std::sync::atomic::{fence as mfence, AtomicI64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;

const TAG_POST: i32 = 1;
const TAG_COMPLETE: i32 = 2;

/// Words each member contributes at creation.
const INFO_WORDS: usize = 8;

/// How a window gets its memory.
pub enum Memory {
    /// The caller's (MPI_Win_create).
    Given(usize, usize),
    /// Allocated here, `size` bytes (MPI_Win_allocate).
    Allocate(usize),
    /// Allocated in memory shared by every member (MPI_Win_allocate_shared).
    Shared(usize),
    /// None yet (MPI_Win_create_dynamic).
    Dynamic,
}

/// Shared segments being set up, by window context (members of a process meet here).
static SEGMENTS: Lock<Vec<(u64, Arc<Segment>)>> = Lock::new(Vec::new());

fn coll(w_sub: usize, cm: &CommRef, h: usize) -> MpiResult<Coll> {
    Coll::new(w_sub, cm, h)
}

/// Attached regions of the real window, by (address, length), with a count (two windows may
/// expose the same memory).
static ATTACHED: Lock<Vec<(usize, usize, usize)>> = Lock::new(Vec::new());

fn attach(addr: usize, len: usize) -> MpiResult<()> {
    {
        let mut a = ATTACHED.lock();
        if let Some(e) = a.iter_mut().find(|e| e.0 == addr && e.1 == len) {
            e.2 += 1;
            return Ok(());
        }
        a.push((addr, len, 1));
    }
    state::with(|s| s.tp.rma_attach(addr, len))?.map_err(real_err)
}

fn detach(addr: usize, len: usize) -> MpiResult<()> {
    {
        let mut a = ATTACHED.lock();
        let Some(i) = a.iter().position(|e| e.0 == addr && e.1 == len) else {
            return Ok(());
        };
        a[i].2 -= 1;
        if a[i].2 > 0 {
            return Ok(());
        }
        a.remove(i);
    }
    state::with(|s| s.tp.rma_detach(addr))?.map_err(real_err)
}

/// Creates a window of subrank `sub` on its private communicator `comm_h` (already a
/// duplicate of the user's); returns its handle and base address.
pub fn create(
    sub: usize,
    comm_h: usize,
    cm: CommRef,
    mem: Memory,
    unit: usize,
    flavor: i32,
    errhandler: usize,
) -> MpiResult<(usize, usize)> {
    let n = cm.size() as usize;
    let me = cm.rank as usize;
    let (myproc, real_ok, per_proc) = state::with(|s| (s.myproc, s.tp.rma_ready(), s.cfg.local()))?;
    let lockword = Box::new(AtomicI64::new(0));
    let (mut base, size, mut owned) = match mem {
        Memory::Given(b, s) => (b, s, None),
        Memory::Allocate(s) => {
            // SAFETY: plain allocation; freed with the window.
            let p = unsafe { libc::calloc(s.max(1), 1) } as usize;
            if p == 0 {
                return err(c::MPI_ERR_NO_MEM, format!("cannot allocate {s} bytes for the window"));
            }
            (p, s, Some(p))
        }
        Memory::Shared(s) => (0, s, None),
        Memory::Dynamic => (0, 0, None),
    };
    // Everyone's process, memory, lock word, pid and node.
    let pid = std::process::id() as i64;
    let mine = [
        myproc as i64,
        base as i64,
        size as i64,
        unit as i64,
        &*lockword as *const AtomicI64 as i64,
        pid,
        host_key(),
        LIVE_REAL.load(Ordering::Acquire) as i64,
    ];
    let mut all = vec![0i64; n * INFO_WORDS];
    let dt = datatype::lookup(c::MPI_INT64_T)?;
    {
        let cl = coll(sub, &cm, comm_h)?;
        let parts: Vec<Buf> = (0..n)
            .map(|r| Buf::new(all.as_mut_ptr().wrapping_add(r * INFO_WORDS) as *mut u8, INFO_WORDS, dt.clone()))
            .collect();
        let send = Buf::new(mine.as_ptr() as *mut u8, INFO_WORDS, dt.clone());
        // SAFETY: `mine` and `all` outlive the call; sizes as described.
        unsafe { cl.allgatherv(Some(&send), &parts)? };
    }
    let row = |r: usize| &all[r * INFO_WORDS..(r + 1) * INFO_WORDS];
    let remote = (0..n).any(|r| row(r)[0] as usize != myproc);
    let mut targets: Vec<Target> = (0..n)
        .map(|r| Target {
            proc: row(r)[0] as usize,
            base: row(r)[1] as usize,
            size: row(r)[2] as usize,
            unit: row(r)[3] as usize,
            lock: row(r)[4] as usize,
            key: row(r)[4] as usize,
        })
        .collect();
    let mut shm = None;
    let mut created = None;
    let align = if matches!(mem, Memory::Allocate(_)) { 64 } else { 1 };
    let (offs, total) = segment_layout(targets.iter().map(|t| t.size), align);
    let one_node = (0..n).all(|r| row(r)[6] == row(0)[6]);
    if let Memory::Shared(_) = mem {
        shm = Some(shared_segment(sub, comm_h, &cm, &targets, total, row(0)[5], myproc)?);
    } else if matches!(mem, Memory::Allocate(_)) && remote && one_node && allocate_in_shm() {
        // MPI_Win_allocate across the processes of one node: the memory is a shared segment,
        // as MPICH does (its "shm allocated" windows), so every operation is a load, store or
        // copy (no real MPI call, no target progress needed). If some member could not map it
        // (e.g. /dev/shm full), all keep their calloc'ed memory and use the real window.
        // Members on several nodes: the real window.
        let seg = shared_segment(sub, comm_h, &cm, &targets, total, row(0)[5], myproc);
        if all_ok(sub, comm_h, &cm, seg.is_ok())? {
            if let Some(p) = owned.take() {
                // SAFETY: our calloc above; nobody keeps its address (the allgather's copies
                // are replaced by the segment's addresses below).
                unsafe { libc::free(p as *mut libc::c_void) };
            }
            shm = seg.ok();
        }
    }
    if let Some(seg) = &shm {
        // Layout (`segment_layout`): accumulate lock word, one lock word per member (64
        // bytes), then the members' memory one after another: contiguous for a shared window
        // (MPICH's default), each member 64-byte aligned for MPI_Win_allocate.
        for (r, t) in targets.iter_mut().enumerate() {
            t.lock = seg.ptr + 64 * (r + 1);
            t.base = seg.ptr + offs[r];
        }
        // A member of a shared window without memory gets a null base, as under MPICH.
        if let Memory::Shared(_) = mem {
            for t in targets.iter_mut().filter(|t| t.size == 0) {
                t.base = 0;
            }
        }
        base = targets[me].base;
    } else if remote {
        if !real_ok {
            return err(c::MPI_ERR_OTHER, "window across processes without the real window");
        }
        // Memory the program gave, or that we allocated for MPI_Win_allocate when the members
        // are not all on one node (or could not share a segment): real windows of its own.
        if matches!(mem, Memory::Given(..) | Memory::Allocate(_)) && create_real() && whole_processes(&targets, per_proc) {
            let (at, runs) = slots(&targets);
            let nslots = runs.values().map(Vec::len).max().unwrap_or(0).max(1);
            // Every member decides alike: from the allgathered counts of live real windows.
            let live = (0..n).map(|r| row(r)[7] as usize).max().unwrap_or(0);
            if nslots <= MAX_SLOTS && live + nslots <= MAX_REAL {
                created = Some(real_windows(sub, comm_h, &cm, &targets, at, runs, myproc)?);
            }
        }
        if size > 0 && created.is_none() {
            attach(base, size)?;
        }
    }
    if remote {
        // Other processes' lock requests (and, off shared memory, their operations) are
        // served by this process's progress, also while its subranks compute.
        start_progress()?;
    }
    let common = Arc::new(Common {
        targets,
        remote,
        shm,
        created,
        myproc,
    });
    let w = Win {
        sub,
        comm_h,
        comm: cm,
        common,
        flavor,
        base,
        size: size as i64,
        unit: unit as i32,
        model: c::MPI_WIN_UNIFIED,
        owned,
        lockword,
        st: Lock::new(WinState {
            errhandler,
            name: String::new(),
            info: Vec::new(),
            ..Default::default()
        }),
        open: AtomicU8::new(0),
    };
    Ok((register(w), base))
}

/// Most real windows one virtual window may get (one per slot): each takes a context id of
/// the real MPI (MPICH has a few thousand). Beyond, the process-wide dynamic window serves it.
const MAX_SLOTS: usize = 8;

/// Most real windows a process keeps for created windows (a program may keep a thousand
/// windows alive, as MPICH's window_creation does; beyond this the dynamic window serves them).
const MAX_REAL: usize = 512;

/// Real windows of created windows alive in this process. Changed only by whole-process
/// windows (`whole_processes`), whose creations and frees a process makes one at a time with
/// all its subranks inside: every member of a process reads the same count at creation.
static LIVE_REAL: AtomicUsize = AtomicUsize::new(0);

/// Whether `MPI_Win_create` windows across processes get real windows of their own
/// (`TOUCAN_RMA_CREATE=0`: they use the process-wide dynamic window, for comparison).
fn create_real() -> bool {
    std::env::var("TOUCAN_RMA_CREATE").map_or(true, |v| v != "0")
}

/// Whether every process hosting a member hosts only members (`per_proc` subranks each).
/// Only then may the real windows be created by a blocking real collective: every subrank of
/// those processes is inside this creation, so none is kept from running meanwhile, and their
/// creations come in one order (a program must order collectives on shared members).
fn whole_processes(targets: &[Target], per_proc: usize) -> bool {
    let mut count: std::collections::BTreeMap<usize, usize> = Default::default();
    for t in targets {
        *count.entry(t.proc).or_default() += 1;
    }
    count.values().all(|&n| n == per_proc)
}

/// Per process, its runs of contiguous member memory (start, length), in slot order.
type Runs = std::collections::BTreeMap<usize, Vec<(usize, usize)>>;

/// Runs of contiguous memory per process (members whose memory overlaps or touches share
/// one) and, per window rank, (slot: index of its run in its process, its run's start).
/// Members without memory take slot 0 at their own address.
fn slots(targets: &[Target]) -> (Vec<(usize, usize)>, Runs) {
    let mut runs: Runs = Default::default();
    let mut by_proc: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
    for (r, t) in targets.iter().enumerate() {
        by_proc.entry(t.proc).or_default().push(r);
    }
    let mut at = vec![(0usize, 0usize); targets.len()];
    for (&p, members) in &by_proc {
        let mut m: Vec<usize> = members.iter().copied().filter(|&r| targets[r].size > 0).collect();
        m.sort_by_key(|&r| targets[r].base);
        let list = runs.entry(p).or_default();
        for r in m {
            let (b, e) = (targets[r].base, targets[r].base + targets[r].size);
            match list.last_mut() {
                Some(last) if b <= last.0 + last.1 => last.1 = last.1.max(e - last.0),
                _ => list.push((b, e - b)),
            }
            at[r] = (list.len() - 1, list.last().map_or(b, |l| l.0));
        }
        for &r in members.iter().filter(|&&r| targets[r].size == 0) {
            at[r] = (0, targets[r].base);
        }
    }
    (at, runs)
}

/// What a real window exposes of run (start, length): from the start of its page. MPICH sets
/// a created window's base to the address UCX reports for the mapped memory (`ucp_mem_query`
/// after `ucp_mem_map`), which may lie below the address given (seen here: 0x...70008 became
/// 0x...70000; glibc's 16-byte aligned blocks hide it, 8-byte blocks of a small-object heap do
/// not): its active-message accumulates then land that far below the target. From a page
/// start the two agree; the bytes below the run are never addressed (ranges are checked
/// against each member's own window first).
fn exposed(run: (usize, usize)) -> (usize, usize) {
    let lo = run.0 & !4095;
    (lo, run.0 + run.1 - lo)
}

/// Meeting points of a window's members in this process, by (window context, phase): the
/// number arrived so far.
static MEET: Lock<Vec<(u64, u8, usize)>> = Lock::new(Vec::new());

/// Counts an arrival at meeting (`key`, `phase`) of `n` members; true for the last one.
fn last_of(key: u64, phase: u8, n: usize) -> bool {
    let mut m = MEET.lock();
    let i = match m.iter().position(|e| e.0 == key && e.1 == phase) {
        Some(i) => i,
        None => {
            m.push((key, phase, 0));
            m.len() - 1
        }
    };
    m[i].2 += 1;
    if m[i].2 == n {
        m.remove(i);
        true
    } else {
        false
    }
}

/// Real windows being created, by window context, with how many members took them.
type Made = (u64, Result<Arc<Created>, String>, usize);
static MADE: Lock<Vec<Made>> = Lock::new(Vec::new());

/// Makes a created window's real windows: the last of this process's members to get here
/// (all of them have finished the creation's allgather, so nothing more is owed to the
/// other members) calls the real, blocking `MPI_Win_create`s for the process, once per slot
/// in slot order; then a barrier, after which every member takes them.
fn real_windows(
    sub: usize,
    comm_h: usize,
    cm: &CommRef,
    targets: &[Target],
    at: Vec<(usize, usize)>,
    runs: Runs,
    myproc: usize,
) -> MpiResult<Arc<Created>> {
    let procs: Vec<usize> = runs.keys().copied().collect();
    let nslots = runs.values().map(Vec::len).max().unwrap_or(0).max(1);
    let here = targets.iter().filter(|t| t.proc == myproc).count();
    let key = cm.ctx;
    if last_of(key, 0, here) {
        let mine: Vec<(usize, usize)> = (0..nslots)
            .map(|j| runs.get(&myproc).and_then(|l| l.get(j)).map_or((0, 0), |&r| exposed(r)))
            .collect();
        let mut wins = Err(String::new());
        let r = with_tp(|tp| {
            wins = tp.rma_create(&procs, &mine);
            Ok(())
        });
        let made = match (r, wins) {
            (Ok(()), Ok(wins)) => {
                LIVE_REAL.fetch_add(wins.len(), Ordering::AcqRel);
                let at = targets
                    .iter()
                    .zip(&at)
                    .map(|(t, &(slot, run))| (slot, procs.binary_search(&t.proc).unwrap_or(0), exposed((run, 0)).0))
                    .collect();
                Ok(Arc::new(Created { wins, at }))
            }
            (Err(e), _) => Err(e.msg),
            (_, Err(e)) => Err(e),
        };
        MADE.lock().push((key, made, 0));
    }
    coll(sub, cm, comm_h)?.barrier()?;
    let mut m = MADE.lock();
    let i = m
        .iter()
        .position(|e| e.0 == key)
        .ok_or_else(|| MpiError::new(c::MPI_ERR_INTERN, "the created window's real windows are missing"))?;
    m[i].2 += 1;
    let made = m[i].1.clone();
    if m[i].2 == here {
        drop(m.remove(i));
    }
    drop(m);
    made.map_err(real_err)
}

/// Whether `ok` holds at every member of the window's communicator.
fn all_ok(sub: usize, comm_h: usize, cm: &CommRef, ok: bool) -> MpiResult<bool> {
    let n = cm.size() as usize;
    let mine = [ok as i64];
    let mut all = vec![0i64; n];
    let dt = datatype::lookup(c::MPI_INT64_T)?;
    let cl = coll(sub, cm, comm_h)?;
    let parts: Vec<Buf> = (0..n)
        .map(|r| Buf::new(all.as_mut_ptr().wrapping_add(r) as *mut u8, 1, dt.clone()))
        .collect();
    let send = Buf::new(mine.as_ptr() as *mut u8, 1, dt.clone());
    // SAFETY: `mine` and `all` outlive the call; one int64 per member.
    unsafe { cl.allgatherv(Some(&send), &parts)? };
    Ok(all.iter().all(|&v| v == 1))
}

/// Where each member's memory starts in a shared segment (after the accumulate lock word and
/// one 64-byte lock word per member; each part aligned to `align`), and the segment's length.
fn segment_layout(sizes: impl ExactSizeIterator<Item = usize>, align: usize) -> (Vec<usize>, usize) {
    let mut off = 64 * (sizes.len() + 1);
    let mut offs = Vec::with_capacity(sizes.len());
    for size in sizes {
        off = off.next_multiple_of(align);
        offs.push(off);
        off += size;
    }
    (offs, off)
}

/// Whether MPI_Win_allocate across the processes of a node uses shared memory
/// (`TOUCAN_RMA_SHM=0` turns it off: every window across processes then uses the real
/// window, as MPI_Win_create's do).
fn allocate_in_shm() -> bool {
    std::env::var("TOUCAN_RMA_SHM").map_or(true, |v| v != "0")
}

/// This host's name, hashed (FNV-1a): members with equal keys are on one node, as
/// `MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)` decides. When the real MPI is told to treat
/// every process as remote (`MPIR_CVAR_NOLOCAL` / `MPIR_CVAR_CH4_NOLOCAL`, as
/// `bench/netns.sh` does to emulate an interconnect), so does this: the pid joins the key.
fn host_key() -> i64 {
    let mut host = [0u8; 256];
    // SAFETY: the buffer has room for the name and a NUL (the last byte stays 0).
    unsafe { libc::gethostname(host.as_mut_ptr() as *mut libc::c_char, host.len() - 1) };
    let name = host.split(|&b| b == 0).next().unwrap_or(&[]);
    let key = name
        .iter()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3));
    let on = |v: &str| std::env::var(v).is_ok_and(|x| !x.is_empty() && x != "0");
    if on("MPIR_CVAR_NOLOCAL") || on("MPIR_CVAR_CH4_NOLOCAL") {
        return (key ^ (std::process::id() as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)) as i64;
    }
    key as i64
}

/// Passive target must not need the target's subranks to call MPI: with a window across
/// processes, the background progress thread runs, at V = 1 too (where it is off by default)
/// unless `TOUCAN_PROGRESS` was set explicitly.
fn start_progress() -> MpiResult<()> {
    let us = state::with(|s| s.cfg.progress_us)?;
    if us == 0 && std::env::var_os("TOUCAN_PROGRESS").is_none() {
        let d = std::time::Duration::from_micros(crate::core::runtime::PROGRESS_US as u64);
        crate::core::background::start(d).map_err(|e| MpiError::new(c::MPI_ERR_OTHER, format!("cannot start the progress thread: {e}")))?;
    }
    Ok(())
}

/// The shared segment of a shared window: the first member of the first process creates
/// and maps it, the first member of each other process maps it, then the name goes. Only
/// one member per process maps (`SEGMENTS`), the others take its mapping.
fn shared_segment(
    sub: usize,
    comm_h: usize,
    cm: &CommRef,
    targets: &[Target],
    total: usize,
    pid0: i64,
    myproc: usize,
) -> MpiResult<Arc<Segment>> {
    let me = cm.rank as usize;
    let first_here = targets.iter().position(|t| t.proc == myproc) == Some(me);
    let single = targets.iter().all(|t| t.proc == myproc);
    let name = format!("/toucan-rma-{pid0}-{:x}", cm.ctx);
    let key = cm.ctx;
    let owner_proc = targets[0].proc;
    let mut result: MpiResult<()> = Ok(());
    if first_here && (single || myproc == owner_proc) {
        let seg = if single {
            Segment::private(total)
        } else {
            Segment::map(&name, total, true)
        };
        match seg {
            Ok(s) => SEGMENTS.lock().push((key, Arc::new(s))),
            Err(e) => result = err(c::MPI_ERR_RMA_SHARED, format!("cannot create the shared window's memory: {e}")),
        }
    }
    coll(sub, cm, comm_h)?.barrier()?;
    if first_here && !single && myproc != owner_proc {
        match Segment::map(&name, total, false) {
            Ok(s) => SEGMENTS.lock().push((key, Arc::new(s))),
            Err(e) => {
                result = err(
                    c::MPI_ERR_RMA_SHARED,
                    format!("cannot map the shared window's memory (are all members on one node?): {e}"),
                )
            }
        }
    }
    coll(sub, cm, comm_h)?.barrier()?;
    if me == 0 && !single {
        Segment::unlink(&name);
    }
    // Every member goes through every barrier, also after a failure (MPI_Win_allocate falls
    // back to the real window when some member failed: the others must not wait here).
    let seg = result.and_then(|_| {
        SEGMENTS
            .lock()
            .iter()
            .find(|e| e.0 == key)
            .map(|e| e.1.clone())
            .ok_or_else(|| MpiError::new(c::MPI_ERR_RMA_SHARED, "the shared window's memory is missing in this process"))
    });
    // The first member of this process drops the meeting entry (one barrier later everyone
    // has taken its reference).
    coll(sub, cm, comm_h)?.barrier()?;
    if first_here {
        SEGMENTS.lock().retain(|e| e.0 != key);
    }
    seg
}

/// Passive-target calls that complete without waiting (unlock, flush, sync) let the other
/// ready subranks of the worker run first: a program polling in a loop of them (MPICH's
/// linked-list benchmarks chase a list tail with lock/get/unlock and no other call, shared
/// memory waits spin on MPI_Win_sync) must not keep a sibling, maybe the one it waits for,
/// from running, as separate processes would not.
#[inline]
fn give_way() {
    if crate::sched::others_ready() {
        crate::sched::yield_now();
    }
}

fn sync_err(msg: String) -> MpiError {
    MpiError::new(c::MPI_ERR_RMA_SYNC, msg)
}

/// Completes this rank's operations on window rank `r` (None: all ranks), at the target
/// (`local`: at the origin only).
#[inline]
pub fn flush(w: &Win, r: Option<i32>, local: bool) -> MpiResult<()> {
    // Copies to targets in memory we reach are complete; a fence makes them visible. A
    // flush of one target in another process is the real MPI's (its completion orders).
    if r.is_none_or(|r| w.common.shm.is_some() || w.common.targets[r as usize].proc == w.common.myproc) {
        mfence(Ordering::SeqCst);
    }
    if !w.common.real() {
        return Ok(());
    }
    // The real flush blocks the worker until the operations completed at their targets: let
    // the ready siblings run first (they compute while the data moves; at V > 1 a fence's
    // first arrival then waits only for what is still in flight when they are done).
    give_way();
    match &w.common.created {
        Some(c) => match r {
            Some(r) => {
                let (slot, rrank, _) = c.at[r as usize];
                with_tp(|tp| tp.rma_flush(Some(c.wins[slot]), Some(rrank), local))
            }
            None => with_tp(|tp| c.wins.iter().try_for_each(|&x| tp.rma_flush(Some(x), None, local))),
        },
        None => {
            let proc = r.map(|r| w.common.targets[r as usize].proc);
            with_tp(|tp| tp.rma_flush(None, proc, local))
        }
    }
}

/// MPI_Win_fence.
pub fn fence(w: &Win, assert: i32) -> MpiResult<()> {
    {
        let st = w.st.lock();
        if st.ep.access.is_some() || st.ep.exposure.is_some() || !st.ep.locks.is_empty() || st.ep.lock_all.is_some() {
            return Err(sync_err(
                "MPI_Win_fence inside a post-start-complete-wait or passive-target epoch".into(),
            ));
        }
    }
    flush(w, None, false)?;
    coll(w.sub, &w.comm, w.comm_h)?.barrier()?;
    mfence(Ordering::SeqCst);
    let open = assert & c::MPI_MODE_NOSUCCEED == 0;
    w.st.lock().ep.fence = open;
    w.set_open(super::OPEN_FENCE, open);
    Ok(())
}

fn note(w: &Win, r: i32, tag: i32) -> MpiResult<()> {
    let empty = datatype::byte();
    // SAFETY: zero-length message.
    let id = unsafe {
        isend(
            w.sub,
            &w.comm,
            w.comm_h,
            w.comm.ctx,
            std::ptr::null(),
            0,
            &empty,
            r,
            tag,
            SendMode::Standard,
        )?
    };
    wait(id).map(|_| ())
}

fn await_note(w: &Win, r: i32, tag: i32) -> MpiResult<()> {
    let empty = datatype::byte();
    // SAFETY: zero-length message.
    let id = unsafe { irecv(w.sub, w.comm_h, w.comm.ctx, std::ptr::null_mut(), 0, &empty, r, tag)? };
    wait(id).map(|_| ())
}

/// MPI_Win_post: exposes this rank's memory to `group` (window ranks).
pub fn post(w: &Win, group: Vec<i32>, _assert: i32) -> MpiResult<()> {
    {
        let mut st = w.st.lock();
        if st.ep.exposure.is_some() {
            return Err(sync_err(
                "MPI_Win_post while an exposure epoch is open (call MPI_Win_wait first)".into(),
            ));
        }
        st.ep.exposure = Some((group.clone(), 0));
    }
    mfence(Ordering::SeqCst);
    for &r in &group {
        note(w, r, TAG_POST)?;
    }
    Ok(())
}

/// MPI_Win_start: opens an access epoch to `group` once each of them posted.
pub fn start(w: &Win, group: Vec<i32>, _assert: i32) -> MpiResult<()> {
    if w.st.lock().ep.access.is_some() {
        return Err(sync_err(
            "MPI_Win_start while an access epoch is open (call MPI_Win_complete first)".into(),
        ));
    }
    for &r in &group {
        await_note(w, r, TAG_POST)?;
    }
    w.st.lock().ep.access = Some(group);
    Ok(())
}

/// MPI_Win_complete.
pub fn complete(w: &Win) -> MpiResult<()> {
    let Some(group) = w.st.lock().ep.access.take() else {
        return Err(sync_err("MPI_Win_complete without MPI_Win_start".into()));
    };
    flush(w, None, false)?;
    for &r in &group {
        note(w, r, TAG_COMPLETE)?;
    }
    Ok(())
}

/// MPI_Win_wait (`block`) or MPI_Win_test: whether every origin completed.
pub fn wait_post(w: &Win, block: bool) -> MpiResult<bool> {
    let (group, done) = match &w.st.lock().ep.exposure {
        Some((g, d)) => (g.clone(), *d),
        None => return Err(sync_err("MPI_Win_wait/MPI_Win_test without MPI_Win_post".into())),
    };
    let mut k = done;
    while k < group.len() {
        let r = group[k];
        if !block {
            let pat = Pattern {
                ctx: w.comm.ctx,
                src: w.comm.world_of(r) as i32,
                tag: TAG_COMPLETE,
            };
            let sub = w.sub;
            let there = state::with(|s| {
                s.progress();
                s.probe_all(sub, &pat).is_some()
            })?;
            if !there {
                break;
            }
        }
        await_note(w, r, TAG_COMPLETE)?;
        k += 1;
    }
    let mut st = w.st.lock();
    if k == group.len() {
        st.ep.exposure = None;
        drop(st);
        mfence(Ordering::SeqCst);
        Ok(true)
    } else {
        if let Some(e) = st.ep.exposure.as_mut() {
            e.1 = k;
        }
        drop(st);
        // A rank polling with MPI_Win_test lets its siblings (maybe the origins) run.
        crate::sched::yield_now();
        Ok(false)
    }
}

/// Takes the lock of window rank `r`: in this process's table when its process is ours
/// (parking in the queue), otherwise by a request to its process, which queues it and
/// answers with a grant (`wlock`; parked meanwhile).
fn acquire(w: &Win, r: i32, kind: i32) -> MpiResult<()> {
    let excl = kind == c::MPI_LOCK_EXCLUSIVE;
    let t = w.common.targets[r as usize];
    if t.proc == w.common.myproc {
        super::wlock::acquire(t.key, excl);
    } else {
        super::wlock::acquire_remote(t.proc, t.key, excl)?;
    }
    mfence(Ordering::SeqCst);
    Ok(())
}

fn release(w: &Win, r: i32, kind: i32) -> MpiResult<()> {
    mfence(Ordering::SeqCst);
    let excl = kind == c::MPI_LOCK_EXCLUSIVE;
    let t = w.common.targets[r as usize];
    if t.proc == w.common.myproc {
        super::wlock::release(t.key, excl)
    } else {
        super::wlock::release_remote(t.proc, t.key, excl)
    }
}

fn check_rank(w: &Win, r: i32) -> MpiResult<()> {
    let n = w.size_of_group();
    if !(0..n).contains(&r) {
        return err(c::MPI_ERR_RANK, format!("invalid target rank {r} (window group size {n})"));
    }
    Ok(())
}

/// MPI_Win_lock.
pub fn lock(w: &Win, kind: i32, r: i32, assert: i32) -> MpiResult<()> {
    if kind != c::MPI_LOCK_EXCLUSIVE && kind != c::MPI_LOCK_SHARED {
        return err(c::MPI_ERR_LOCKTYPE, format!("invalid lock type {kind}"));
    }
    if r == c::MPI_PROC_NULL {
        return Ok(());
    }
    check_rank(w, r)?;
    {
        let st = w.st.lock();
        if st.ep.locks.contains_key(&r) || st.ep.lock_all.is_some() {
            return Err(sync_err(format!("target rank {r} is already locked by this rank")));
        }
        if st.ep.access.is_some() {
            return Err(sync_err("MPI_Win_lock inside a post-start-complete-wait access epoch".into()));
        }
    }
    if assert & c::MPI_MODE_NOCHECK == 0 {
        acquire(w, r, kind)?;
    }
    w.st.lock().ep.locks.insert(r, (kind, assert));
    Ok(())
}

/// MPI_Win_unlock.
pub fn unlock(w: &Win, r: i32) -> MpiResult<()> {
    if r == c::MPI_PROC_NULL {
        return Ok(());
    }
    check_rank(w, r)?;
    let Some((kind, assert)) = w.st.lock().ep.locks.remove(&r) else {
        return Err(sync_err(format!("target rank {r} is not locked by this rank")));
    };
    flush(w, Some(r), false)?;
    if assert & c::MPI_MODE_NOCHECK == 0 {
        release(w, r, kind)?;
    }
    give_way();
    Ok(())
}

/// MPI_Win_lock_all: a shared lock on every member.
pub fn lock_all(w: &Win, assert: i32) -> MpiResult<()> {
    {
        let st = w.st.lock();
        if st.ep.lock_all.is_some() || !st.ep.locks.is_empty() {
            return Err(sync_err("MPI_Win_lock_all while this rank holds locks on the window".into()));
        }
    }
    if assert & c::MPI_MODE_NOCHECK == 0 {
        for r in 0..w.size_of_group() {
            acquire(w, r, c::MPI_LOCK_SHARED)?;
        }
    }
    w.st.lock().ep.lock_all = Some(assert);
    w.set_open(super::OPEN_ALL, true);
    Ok(())
}

/// MPI_Win_unlock_all.
pub fn unlock_all(w: &Win) -> MpiResult<()> {
    let Some(assert) = w.st.lock().ep.lock_all.take() else {
        return Err(sync_err("MPI_Win_unlock_all without MPI_Win_lock_all".into()));
    };
    w.set_open(super::OPEN_ALL, false);
    flush(w, None, false)?;
    if assert & c::MPI_MODE_NOCHECK == 0 {
        for r in 0..w.size_of_group() {
            release(w, r, c::MPI_LOCK_SHARED)?;
        }
    }
    give_way();
    Ok(())
}

/// The flush calls: need a passive-target epoch on the target (`r`) or on every target.
#[inline]
pub fn flush_call(w: &Win, r: Option<i32>, local: bool) -> MpiResult<()> {
    if w.open.load(Ordering::Relaxed) & super::OPEN_ALL != 0 {
        // Inside MPI_Win_lock_all every target may be flushed.
        if let Some(r) = r {
            if r == c::MPI_PROC_NULL {
                return Ok(());
            }
            check_rank(w, r)?;
        }
    } else {
        let st = w.st.lock();
        match r {
            Some(c::MPI_PROC_NULL) => return Ok(()),
            Some(r) => {
                check_rank(w, r)?;
                if st.ep.lock_all.is_none() && !st.ep.locks.contains_key(&r) {
                    return Err(sync_err(format!("flush of target rank {r}, which this rank has not locked")));
                }
            }
            None => {
                if st.ep.lock_all.is_none() && st.ep.locks.is_empty() {
                    return Err(sync_err("flush outside a passive-target epoch".into()));
                }
            }
        }
    }
    flush(w, r, local)?;
    give_way();
    Ok(())
}

/// MPI_Win_sync.
pub fn win_sync(w: &Win) -> MpiResult<()> {
    mfence(Ordering::SeqCst);
    match &w.common.created {
        Some(c) => with_tp(|tp| c.wins.iter().try_for_each(|&x| tp.rma_sync(Some(x))))?,
        None if w.common.real() => with_tp(|tp| tp.rma_sync(None))?,
        None => {}
    }
    give_way();
    Ok(())
}

/// MPI_Win_attach.
pub fn win_attach(w: &Win, addr: usize, size: usize) -> MpiResult<()> {
    if w.flavor != c::MPI_WIN_FLAVOR_DYNAMIC {
        return err(
            c::MPI_ERR_RMA_FLAVOR,
            "MPI_Win_attach on a window that was not created with MPI_Win_create_dynamic",
        );
    }
    {
        let st = w.st.lock();
        if st.attached.iter().any(|&(a, l)| addr < a + l && a < addr + size) {
            return err(
                c::MPI_ERR_RMA_ATTACH,
                format!("memory {addr:#x}+{size} overlaps memory already attached"),
            );
        }
    }
    if w.common.real() && size > 0 {
        attach(addr, size)?;
    }
    w.st.lock().attached.push((addr, size));
    Ok(())
}

/// MPI_Win_detach.
pub fn win_detach(w: &Win, addr: usize) -> MpiResult<()> {
    if w.flavor != c::MPI_WIN_FLAVOR_DYNAMIC {
        return err(
            c::MPI_ERR_RMA_FLAVOR,
            "MPI_Win_detach on a window that was not created with MPI_Win_create_dynamic",
        );
    }
    let r = {
        let mut st = w.st.lock();
        let i = st.attached.iter().position(|&(a, _)| a == addr);
        i.map(|i| st.attached.remove(i))
    };
    let Some((a, l)) = r else {
        return err(c::MPI_ERR_RMA_ATTACH, format!("no memory attached at {addr:#x}"));
    };
    if w.common.real() && l > 0 {
        detach(a, l)?;
    }
    Ok(())
}

/// MPI_Win_free's collective part: every rank's operations complete, then the memory goes.
/// The caller frees the communicator and the attributes.
pub fn free(h: usize) -> MpiResult<Arc<Win>> {
    let sub = crate::sched::rank();
    let w = lookup(sub, h)?;
    {
        let st = w.st.lock();
        if st.ep.access.is_some() || st.ep.exposure.is_some() || !st.ep.locks.is_empty() || st.ep.lock_all.is_some() {
            return Err(sync_err("MPI_Win_free while an epoch is open on the window".into()));
        }
    }
    flush(&w, None, false)?;
    coll(w.sub, &w.comm, w.comm_h)?.barrier()?;
    if let Some(c) = &w.common.created {
        // As at creation: every member of every process of the window is past the barrier
        // before its process's last member calls the real (blocking) MPI_Win_free; the
        // second barrier keeps everyone's memory exposed until the real windows are gone.
        let here = w.common.targets.iter().filter(|t| t.proc == w.common.myproc).count();
        if last_of(w.comm.ctx, 1, here) {
            with_tp(|tp| tp.rma_free(&c.wins))?;
            LIVE_REAL.fetch_sub(c.wins.len(), Ordering::AcqRel);
        }
        coll(w.sub, &w.comm, w.comm_h)?.barrier()?;
    }
    if w.common.real() {
        let attached: Vec<(usize, usize)> = w.st.lock().attached.drain(..).collect();
        for (a, l) in attached {
            if l > 0 {
                detach(a, l)?;
            }
        }
        if w.size > 0 && w.flavor != c::MPI_WIN_FLAVOR_DYNAMIC && w.common.created.is_none() {
            detach(w.base, w.size as usize)?;
        }
    }
    unregister(h);
    if let Some(p) = w.owned {
        // SAFETY: allocated by `create` with calloc, the window is gone from the table.
        unsafe { libc::free(p as *mut libc::c_void) };
    }
    Ok(w)
}

/// Attribute and query values of a window, for the `abi` layer.
pub fn shared_query(w: &Win, r: i32) -> MpiResult<(usize, i32, usize)> {
    if w.flavor != c::MPI_WIN_FLAVOR_SHARED {
        return err(
            c::MPI_ERR_RMA_FLAVOR,
            "MPI_Win_shared_query on a window not allocated with MPI_Win_allocate_shared",
        );
    }
    let t = if r == c::MPI_PROC_NULL {
        match w.common.targets.iter().find(|t| t.size > 0) {
            Some(t) => *t,
            None => return Ok((0, w.common.targets[0].unit as i32, 0)),
        }
    } else {
        check_rank(w, r)?;
        w.common.targets[r as usize]
    };
    Ok((t.size, t.unit as i32, t.base))
}

#[cfg(test)]
mod tests {
    use super::{segment_layout, slots, whole_processes, Target};
    use rstest::rstest;

    fn t(proc: usize, base: usize, size: usize) -> Target {
        Target {
            proc,
            base,
            size,
            unit: 1,
            lock: 0,
            key: 0,
        }
    }

    /// Members (process, base, size) -> per member (slot, run start), per process its runs.
    #[rstest]
    #[case::one_each(vec![(0, 100, 8), (1, 500, 8)], vec![(0, 100), (0, 500)], vec![(0, vec![(100, 8)]), (1, vec![(500, 8)])])]
    #[case::apart(vec![(0, 100, 8), (0, 300, 8)], vec![(0, 100), (1, 300)], vec![(0, vec![(100, 8), (300, 8)])])]
    #[case::touching_merge(vec![(0, 108, 8), (0, 100, 8)], vec![(0, 100), (0, 100)], vec![(0, vec![(100, 16)])])]
    #[case::overlap_merge(vec![(0, 100, 64), (0, 120, 8)], vec![(0, 100), (0, 100)], vec![(0, vec![(100, 64)])])]
    #[case::empty_member(vec![(0, 100, 8), (0, 0, 0)], vec![(0, 100), (0, 0)], vec![(0, vec![(100, 8)])])]
    fn slot_table(
        #[case] members: Vec<(usize, usize, usize)>,
        #[case] at: Vec<(usize, usize)>,
        #[case] runs: Vec<(usize, Vec<(usize, usize)>)>,
    ) {
        let targets: Vec<Target> = members.iter().map(|&(p, b, s)| t(p, b, s)).collect();
        let (got_at, got_runs) = slots(&targets);
        assert_eq!(got_at, at);
        assert_eq!(got_runs.into_iter().collect::<Vec<_>>(), runs);
    }

    #[rstest]
    #[case::all(vec![0, 0, 1, 1], 2, true)]
    #[case::missing_one(vec![0, 0, 1], 2, false)]
    #[case::v1(vec![0, 1, 2], 1, true)]
    fn whole(#[case] procs: Vec<usize>, #[case] per_proc: usize, #[case] want: bool) {
        let targets: Vec<Target> = procs.iter().map(|&p| t(p, 0, 0)).collect();
        assert_eq!(whole_processes(&targets, per_proc), want);
    }

    #[rstest]
    #[case::shared_contiguous(vec![3, 5, 0, 8], 1, vec![320, 323, 328, 328], 336)]
    #[case::allocate_aligned(vec![3, 5, 0, 8], 64, vec![320, 384, 448, 448], 456)]
    #[case::one_member(vec![0], 64, vec![128], 128)]
    fn layout(#[case] sizes: Vec<usize>, #[case] align: usize, #[case] offs: Vec<usize>, #[case] total: usize) {
        assert_eq!(segment_layout(sizes.into_iter(), align), (offs, total));
    }
}
