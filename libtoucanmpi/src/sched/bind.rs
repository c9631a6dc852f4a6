//! Worker layout and binding (SMP mode): how many workers a process runs, which cores they are
//! bound to, and in which order an idle worker visits the others for work to steal.
//!
//! `plan` is called once, single-threaded, before the real MPI starts. It reads the machine
//! through a thin hwloc layer (`hw`, libhwloc loaded with dlopen only when a plan needs it),
//! the launcher's environment for the processes that share the node (`local_from_env`), and
//! leaves every decision to a pure function (`plan_on`) that the tests drive with synthetic
//! machines. Each worker thread then calls `bind_current_thread` (a `sched_setaffinity`, no
//! hwloc). Knows nothing of MPI.
//!
//! Rules (README, "SMP mode"):
//! - The process's cores are those of the CPU set the launcher bound it to. When the launcher
//!   bound nothing (the set is everything the process may use), the node's cores are shared
//!   among the node's processes: local rank `i` of `n` takes the `i`-th of `n` contiguous
//!   blocks (in hwloc's topological order, so a block stays inside a NUMA node when it can).
//! - `TOUCAN_WORKERS=auto`: one worker per core of that share. `TOUCAN_BIND`: `core` (default
//!   when `auto` or W > 1) binds worker `k` to core `k·S/W` of the share's S cores (spread over
//!   the share when W < S, so each worker gets the most cache and memory bandwidth); `none`
//!   (default at W = 1: exactly the behaviour before SMP mode) binds nothing.
//! - Oversubscribed (W > S, or more processes on the node than cores): allowed, with a
//!   warning, and by default not bound, so the OS balances the threads over the cores (pinned,
//!   3 processes × 2 workers on 2 cores would put 4 threads on one core and 2 on the other);
//!   `TOUCAN_BIND=core` still binds them, round-robin over the share.
//! - Steal order: the other workers nearest first (same core, L2, L3, NUMA node, package),
//!   ties broken in ring order starting after the worker itself, so that thieves spread.

use std::fmt::Write as _;

/// Most workers a process may run (`TOUCAN_WORKERS`): the ready queues' bound.
pub use super::queue::MAX_WORKERS;

/// `TOUCAN_WORKERS`: a number of workers, or one per core of the process's share.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workers {
    Count(usize),
    Auto,
}

/// `TOUCAN_BIND`: workers bound to distinct cores, or left to the OS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bind {
    Core,
    None,
}

/// OS indices of processing units (Linux CPU numbers), ascending.
pub type Cpus = Vec<u32>;

/// Levels of the hierarchy that group cores, nearest first (`Core::groups`).
const LEVELS: [&str; 4] = ["L2", "L3", "NUMA node", "package"];
/// Index of the NUMA level in `LEVELS`.
const NUMA: usize = 2;

/// One core of the machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Core {
    /// Its processing units (hardware threads).
    pub pus: Cpus,
    /// Index of its L2 cache, L3 cache, NUMA node and package (`LEVELS`); None: unknown.
    pub groups: [Option<usize>; 4],
}

/// What `plan` needs to know of the machine (from hwloc, or synthetic in tests).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Machine {
    /// Cores in topological order (hwloc's logical order).
    pub cores: Vec<Core>,
    /// PUs the process may use at all (its cgroup); empty: every PU of `cores`.
    pub allowed: Cpus,
    /// PUs the calling thread is bound to (the launcher's binding); empty: unknown.
    pub bound: Cpus,
}

/// This process's place among the node's processes, from the launcher's environment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Local {
    pub rank: usize,
    pub size: usize,
}

/// The layout of one process's workers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub workers: usize,
    /// Per worker: the PUs of the core it is bound to; None: not bound.
    pub cpus: Vec<Option<Cpus>>,
    /// Per worker: the other workers, nearest first, for work stealing.
    pub steal_order: Vec<Vec<usize>>,
    /// Set when the plan oversubscribes cores (allowed): the text to print.
    pub warning: Option<String>,
    /// Every PU of the process's cores when workers are bound (empty otherwise): where its
    /// other threads belong (`bind_current_thread_to_process`).
    pub process_cpus: Cpus,
    /// Per worker: where it is bound, for `describe`.
    place: Vec<Option<Place>>,
    /// Where the process's cores came from, for `describe`.
    origin: String,
}

/// (index of a core in the machine, its NUMA node).
type Place = (usize, Option<usize>);

impl Plan {
    /// One unbound worker: the layout before SMP mode, decided without looking at the machine.
    fn single() -> Plan {
        Plan::unbound(1)
    }

    /// `n` workers, none bound, each stealing from the next ones: when the machine was not
    /// looked at.
    pub fn unbound(n: usize) -> Plan {
        let n = n.clamp(1, MAX_WORKERS);
        Plan {
            workers: n,
            cpus: vec![None; n],
            steal_order: (0..n).map(|w| (1..n).map(|d| (w + d) % n).collect()).collect(),
            warning: None,
            process_cpus: Vec::new(),
            place: vec![None; n],
            origin: format!("not looked up ({n} worker{}, not bound)", if n == 1 { "" } else { "s" }),
        }
    }
}

/// Parses `TOUCAN_WORKERS` (unset or empty: 1).
pub fn parse_workers(v: Option<&str>) -> Result<Workers, String> {
    let Some(s) = v.map(str::trim).filter(|s| !s.is_empty()) else {
        return Ok(Workers::Count(1));
    };
    if s.eq_ignore_ascii_case("auto") {
        return Ok(Workers::Auto);
    }
    match s.parse::<usize>() {
        Ok(n) if (1..=MAX_WORKERS).contains(&n) => Ok(Workers::Count(n)),
        _ => Err(format!(
            "TOUCAN_WORKERS='{s}' is not valid: give a whole number from 1 to {MAX_WORKERS}, or 'auto' (one worker per core)"
        )),
    }
}

/// Parses `TOUCAN_BIND` (unset or empty: None, the default chosen by `plan`).
pub fn parse_bind(v: Option<&str>) -> Result<Option<Bind>, String> {
    let Some(s) = v.map(str::trim).filter(|s| !s.is_empty()) else {
        return Ok(None);
    };
    if s.eq_ignore_ascii_case("core") {
        Ok(Some(Bind::Core))
    } else if s.eq_ignore_ascii_case("none") {
        Ok(Some(Bind::None))
    } else {
        Err(format!(
            "TOUCAN_BIND='{s}' is not valid: give 'core' (workers bound to distinct cores) or 'none' (not bound)"
        ))
    }
}

/// This process's local rank and the number of processes on its node, from the launcher's
/// environment (`get` reads a variable): MPICH's hydra (`MPI_LOCALRANKID`, `MPI_LOCALNRANKS`,
/// checked here with `mpirun -np 2 env`), Open MPI (`OMPI_COMM_WORLD_LOCAL_RANK`/`_SIZE`),
/// Slurm (`SLURM_LOCALID`, with `SLURM_NTASKS_PER_NODE` or this node's entry of
/// `SLURM_TASKS_PER_NODE`). None when no launcher said.
pub fn local_from_env(get: impl Fn(&str) -> Option<String>) -> Option<Local> {
    let num = |k: &str| get(k).and_then(|v| v.trim().parse::<usize>().ok());
    let pairs = [
        ("MPI_LOCALRANKID", "MPI_LOCALNRANKS"),
        ("OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"),
    ];
    for (r, s) in pairs {
        if let (Some(rank), Some(size)) = (num(r), num(s)) {
            return (rank < size).then_some(Local { rank, size });
        }
    }
    let rank = num("SLURM_LOCALID")?;
    let size =
        num("SLURM_NTASKS_PER_NODE").or_else(|| slurm_tasks_on_node(&get("SLURM_TASKS_PER_NODE")?, num("SLURM_NODEID").unwrap_or(0)))?;
    (rank < size).then_some(Local { rank, size })
}

/// The number of tasks on node `node` from Slurm's compressed list, e.g. `2(x3),1`.
fn slurm_tasks_on_node(spec: &str, node: usize) -> Option<usize> {
    let mut seen = 0usize;
    for item in spec.trim().split(',') {
        let (n, times) = match item.split_once("(x") {
            Some((n, t)) => (n, t.strip_suffix(')')?.parse::<usize>().ok()?),
            None => (item, 1),
        };
        let n = n.parse::<usize>().ok()?;
        seen = seen.checked_add(times)?;
        if node < seen {
            return Some(n);
        }
    }
    None
}

/// The plan for this process. `bind` None: the default (`core` when `auto` or W > 1). At one
/// worker and no binding asked for, the machine is not looked at (no hwloc): W = 1 behaves as
/// before SMP mode.
pub fn plan(w: Workers, bind: Option<Bind>) -> Result<Plan, String> {
    if let Workers::Count(n) = w {
        check_count(n)?;
        if n == 1 && bind != Some(Bind::Core) {
            return Ok(Plan::single());
        }
    }
    let m = hw::machine()?;
    plan_on(&m, w, bind, local_from_env(|k| std::env::var(k).ok()))
}

fn check_count(n: usize) -> Result<(), String> {
    if (1..=MAX_WORKERS).contains(&n) {
        Ok(())
    } else {
        Err(format!("{n} workers asked for: TOUCAN_WORKERS must be from 1 to {MAX_WORKERS}"))
    }
}

/// `plan`'s decisions, on a described machine.
pub fn plan_on(m: &Machine, w: Workers, bind: Option<Bind>, local: Option<Local>) -> Result<Plan, String> {
    let all: Cpus = {
        let mut v: Cpus = m.cores.iter().flat_map(|c| c.pus.iter().copied()).collect();
        v.sort_unstable();
        v.dedup();
        if m.allowed.is_empty() {
            v
        } else {
            intersect(&v, &m.allowed)
        }
    };
    let bound: &[u32] = if m.bound.is_empty() { &all } else { &m.bound };
    // The cores this thread may run on: (index in the machine, its usable PUs).
    let mine: Vec<(usize, Cpus)> = m
        .cores
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            let p = intersect(&intersect(&c.pus, &all), bound);
            (!p.is_empty()).then_some((i, p))
        })
        .collect();
    if mine.is_empty() {
        return Err("no core of the machine is in this process's CPU set (hwloc)".into());
    }
    let unbound = is_subset(&all, bound);
    let mut warnings = Vec::new();
    let mut crowded = false;
    let c = mine.len();
    let (share, origin) = match local {
        Some(l) if unbound && l.size > 1 => {
            let lo = (l.rank * c / l.size).min(c - 1);
            let hi = ((l.rank + 1) * c / l.size).clamp(lo + 1, c);
            if c < l.size {
                crowded = true;
                warnings.push(format!("{} processes share this node's {c} cores", l.size));
            }
            let origin = format!(
                "cores {lo}..{} of the node's {c} (not bound by the launcher: share {} of {} processes on the node)",
                hi - 1,
                l.rank,
                l.size
            );
            (&mine[lo..hi], origin)
        }
        _ if unbound => {
            let who = if local.is_some() {
                "the only process on it"
            } else {
                "no launcher said how many processes share the node"
            };
            (&mine[..], format!("all {c} cores of the node (not bound by the launcher; {who})"))
        }
        _ => (
            &mine[..],
            format!(
                "the {c} core{} of the CPU set the launcher bound it to",
                if c == 1 { "" } else { "s" }
            ),
        ),
    };
    let s = share.len();
    let n = match w {
        Workers::Count(n) => n,
        Workers::Auto => {
            if s > MAX_WORKERS {
                warnings.push(format!("TOUCAN_WORKERS=auto: {s} cores, using {MAX_WORKERS} workers (the most)"));
            }
            s.min(MAX_WORKERS)
        }
    };
    check_count(n)?;
    if n > s {
        crowded = true;
        warnings.push(format!("{n} workers on {s} core{}: oversubscribed", if s == 1 { "" } else { "s" }));
    }
    let bind = bind.unwrap_or(if crowded {
        warnings.push("workers not bound (TOUCAN_BIND=core binds them round-robin)".into());
        Bind::None
    } else if w == Workers::Auto || n > 1 {
        Bind::Core
    } else {
        Bind::None
    });
    // Worker k's core in the share: spread when the share has room, round-robin otherwise.
    let slot = |k: usize| if n <= s { k * s / n } else { k % s };
    let (cpus, place): (Vec<Option<Cpus>>, Vec<Option<Place>>) = (0..n)
        .map(|k| match bind {
            Bind::Core => {
                let (i, pus) = &share[slot(k)];
                (Some(pus.clone()), Some((*i, m.cores[*i].groups[NUMA])))
            }
            Bind::None => (None, None),
        })
        .unzip();
    let dist = |a: usize, b: usize| -> usize {
        let (Some((ca, _)), Some((cb, _))) = (place[a], place[b]) else {
            return 0;
        };
        if ca == cb {
            return 0;
        }
        let (ga, gb) = (&m.cores[ca].groups, &m.cores[cb].groups);
        (0..LEVELS.len())
            .find(|&l| ga[l].is_some() && ga[l] == gb[l])
            .map_or(LEVELS.len() + 1, |l| l + 1)
    };
    let steal_order = (0..n)
        .map(|k| {
            let mut o: Vec<usize> = (0..n).filter(|&j| j != k).collect();
            o.sort_by_key(|&j| (dist(k, j), (j + n - k) % n));
            o
        })
        .collect();
    let process_cpus = match bind {
        Bind::Core => {
            let mut v: Cpus = share.iter().flat_map(|(_, p)| p.iter().copied()).collect();
            v.sort_unstable();
            v
        }
        Bind::None => Vec::new(),
    };
    Ok(Plan {
        workers: n,
        cpus,
        steal_order,
        warning: (!warnings.is_empty()).then(|| warnings.join("; ")),
        process_cpus,
        place,
        origin,
    })
}

/// The layout in words, for `TOUCAN_VERBOSE`: one line for the process, one per worker.
pub fn describe(plan: &Plan) -> String {
    let bound = plan.cpus.iter().any(Option::is_some);
    let mut s = format!(
        "{} worker{}, {}; cores: {}",
        plan.workers,
        if plan.workers == 1 { "" } else { "s" },
        if bound { "bound to cores" } else { "not bound" },
        plan.origin
    );
    if let Some(w) = &plan.warning {
        let _ = write!(s, "\n  warning: {w}");
    }
    for k in 0..plan.workers {
        let _ = write!(s, "\n  worker {k}: ");
        match (&plan.cpus[k], plan.place[k]) {
            (Some(c), Some((core, numa))) => {
                let _ = write!(s, "core {core} (PU {})", fmt_cpus(c));
                if let Some(nn) = numa {
                    let _ = write!(s, ", NUMA node {nn}");
                }
            }
            _ => s.push_str("not bound"),
        }
        if plan.workers > 1 {
            let o = &plan.steal_order[k];
            let shown: Vec<String> = o.iter().take(8).map(|j| j.to_string()).collect();
            let _ = write!(s, "; steals from {}{}", shown.join(" "), if o.len() > 8 { " ..." } else { "" });
        }
    }
    s
}

/// Binds the calling thread to worker `worker`'s core (nothing when the plan binds nothing).
pub fn bind_current_thread(plan: &Plan, worker: usize) -> Result<(), String> {
    let Some(c) = plan.cpus.get(worker) else {
        return Err(format!("worker {worker} is not in the plan ({} workers)", plan.workers));
    };
    match c {
        None => Ok(()),
        Some(cpus) => set_affinity(cpus).map_err(|e| format!("binding worker {worker} to PU {}: {e}", fmt_cpus(cpus))),
    }
}

/// Widens the calling thread to all the process's cores, when workers are bound: for a thread
/// that is no worker (a progress thread, an application thread) started by a bound worker,
/// which would otherwise inherit that worker's single core. Nothing when workers are not bound.
pub fn bind_current_thread_to_process(plan: &Plan) -> Result<(), String> {
    if plan.process_cpus.is_empty() {
        return Ok(());
    }
    set_affinity(&plan.process_cpus).map_err(|e| format!("binding a thread to PU {}: {e}", fmt_cpus(&plan.process_cpus)))
}

/// `sched_setaffinity` of the calling thread to `cpus`, with a mask as large as they need.
fn set_affinity(cpus: &[u32]) -> Result<(), String> {
    let Some(&max) = cpus.iter().max() else {
        return Err("empty CPU set".into());
    };
    // At least glibc's cpu_set_t (1024 bits), more for larger machines.
    let words = (max as usize / 64 + 1).max(std::mem::size_of::<libc::cpu_set_t>() / 8);
    let mut mask = vec![0u64; words];
    for &c in cpus {
        mask[c as usize / 64] |= 1u64 << (c % 64);
    }
    // SAFETY: `mask` holds `words * 8` bytes, 8-aligned like cpu_set_t; the kernel reads at
    // most that many; pid 0 is the calling thread.
    let rc = unsafe { libc::sched_setaffinity(0, words * 8, mask.as_ptr() as *const libc::cpu_set_t) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error().to_string())
    }
}

/// `0-3,8,10-11`.
fn fmt_cpus(c: &[u32]) -> String {
    crate::ranges::ranges(c)
}

/// Sorted intersection of two ascending lists.
fn intersect(a: &[u32], b: &[u32]) -> Cpus {
    a.iter().copied().filter(|x| b.binary_search(x).is_ok()).collect()
}

/// Whether every element of ascending `a` is in ascending `b`.
fn is_subset(a: &[u32], b: &[u32]) -> bool {
    a.iter().all(|x| b.binary_search(x).is_ok())
}

/// The thin hwloc layer: the machine's cores, their groups, the allowed and bound CPU sets.
mod hw {
    use super::{Core, Cpus, Machine, LEVELS};
    use std::os::raw::c_int;
    use std::ptr;

    mod ffi {
        #![allow(non_upper_case_globals, non_camel_case_types, non_snake_case, dead_code)]
        #![allow(clippy::all, unsafe_op_in_unsafe_fn)]
        include!(concat!(env!("OUT_DIR"), "/hwloc.rs"));
    }
    use ffi::*;

    /// Types of `LEVELS`, in the same order.
    const LEVEL_TYPES: [hwloc_obj_type_t; 4] = [
        hwloc_obj_type_t_HWLOC_OBJ_L2CACHE,
        hwloc_obj_type_t_HWLOC_OBJ_L3CACHE,
        hwloc_obj_type_t_HWLOC_OBJ_NUMANODE,
        hwloc_obj_type_t_HWLOC_OBJ_PACKAGE,
    ];

    /// A loaded topology, destroyed on drop.
    struct Topo<'a> {
        lib: &'a HwlocLib,
        t: hwloc_topology_t,
    }

    impl Drop for Topo<'_> {
        fn drop(&mut self) {
            // SAFETY: `t` was initialised by hwloc_topology_init and is destroyed once, here.
            unsafe { self.lib.hwloc_topology_destroy(self.t) }
        }
    }

    impl Topo<'_> {
        /// The objects at `depth`, as their CPU sets.
        fn sets(&self, depth: c_int) -> Vec<Cpus> {
            // SAFETY: a loaded topology; a depth hwloc returned (or a virtual one it accepts).
            let n = unsafe { self.lib.hwloc_get_nbobjs_by_depth(self.t, depth) };
            (0..n)
                .filter_map(|i| {
                    // SAFETY: i < the number of objects at that depth.
                    let o = unsafe { self.lib.hwloc_get_obj_by_depth(self.t, depth, i) };
                    // SAFETY: a non-null object of the loaded topology stays valid until it
                    // is destroyed; its cpuset is a bitmap of that topology or null.
                    (!o.is_null()).then(|| self.bits(unsafe { (*o).cpuset }))
                })
                .collect()
        }

        /// The indices set in a bitmap (null: none).
        fn bits(&self, b: hwloc_const_bitmap_t) -> Cpus {
            let mut v = Vec::new();
            if b.is_null() {
                return v;
            }
            // SAFETY: `b` is a valid bitmap; iterating it does not modify it.
            let mut i = unsafe { self.lib.hwloc_bitmap_first(b) };
            // An infinite (never-ending) set is not a CPU set of real PUs: stop at 2^20.
            while i >= 0 && v.len() < 1 << 20 {
                v.push(i as u32);
                // SAFETY: as above.
                i = unsafe { self.lib.hwloc_bitmap_next(b, i) };
            }
            v
        }
    }

    /// Reads the machine with hwloc: `TOUCAN_HWLOC_LIB` or the library found at build time.
    pub fn machine() -> Result<Machine, String> {
        let path = std::env::var("TOUCAN_HWLOC_LIB").unwrap_or_else(|_| env!("TOUCAN_HWLOC_DEFAULT").to_string());
        // SAFETY: loading libhwloc runs its initialisers, which have no preconditions.
        let lib = unsafe { HwlocLib::new(&path) }
            .or_else(|_| {
                // SAFETY: as above.
                unsafe { HwlocLib::new("libhwloc.so.15") }
            })
            .map_err(|e| format!("cannot load hwloc ({path}), needed to place workers: {e}"))?;
        // SAFETY: no arguments.
        let api = unsafe { lib.hwloc_get_api_version() };
        if api >> 16 != HWLOC_API_VERSION >> 16 {
            return Err(format!(
                "{path} is hwloc API {api:#x}, Toucan was built against {HWLOC_API_VERSION:#x} (a 2.x release is needed)"
            ));
        }
        let mut t: hwloc_topology_t = ptr::null_mut();
        // SAFETY: `t` is an out-pointer.
        if unsafe { lib.hwloc_topology_init(&mut t) } != 0 {
            return Err("hwloc could not initialise a topology".into());
        }
        let topo = Topo { lib: &lib, t };
        // SAFETY: an initialised, not yet loaded topology.
        if unsafe { lib.hwloc_topology_load(topo.t) } != 0 {
            return Err("hwloc could not read this machine's topology".into());
        }
        let depth = |ty: hwloc_obj_type_t| -> Option<c_int> {
            // SAFETY: a loaded topology.
            let d = unsafe { lib.hwloc_get_type_depth(topo.t, ty) };
            let none = d == hwloc_get_type_depth_e_HWLOC_TYPE_DEPTH_UNKNOWN || d == hwloc_get_type_depth_e_HWLOC_TYPE_DEPTH_MULTIPLE;
            (!none).then_some(d)
        };
        // No core objects (some virtual machines): each PU is a core.
        let core_depth = depth(hwloc_obj_type_t_HWLOC_OBJ_CORE)
            .or_else(|| depth(hwloc_obj_type_t_HWLOC_OBJ_PU))
            .ok_or("hwloc found neither cores nor processing units")?;
        let levels: Vec<Vec<Cpus>> = LEVEL_TYPES
            .iter()
            .map(|&ty| depth(ty).map(|d| topo.sets(d)).unwrap_or_default())
            .collect();
        debug_assert_eq!(levels.len(), LEVELS.len());
        let cores = topo
            .sets(core_depth)
            .into_iter()
            .filter(|pus| !pus.is_empty())
            .map(|pus| {
                let mut groups = [None; 4];
                for (g, sets) in groups.iter_mut().zip(&levels) {
                    *g = sets.iter().position(|s| s.binary_search(&pus[0]).is_ok());
                }
                Core { pus, groups }
            })
            .collect();
        // SAFETY: a loaded topology; the returned set belongs to it.
        let allowed = topo.bits(unsafe { lib.hwloc_topology_get_allowed_cpuset(topo.t) });
        // SAFETY: a fresh bitmap, freed below; the binding of the calling thread.
        let bound = unsafe {
            let set = lib.hwloc_bitmap_alloc();
            let ok = !set.is_null() && lib.hwloc_get_cpubind(topo.t, set, hwloc_cpubind_flags_t_HWLOC_CPUBIND_THREAD as c_int) == 0;
            let b = if ok { topo.bits(set) } else { Vec::new() };
            if !set.is_null() {
                lib.hwloc_bitmap_free(set);
            }
            b
        };
        Ok(Machine { cores, allowed, bound })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    /// A synthetic machine: `packages` × `numa` NUMA nodes per package × `l3` L3 caches per
    /// NUMA node × `cores` cores per L3, `smt` PUs per core; each core has its own L2. PUs are
    /// numbered like Linux does on x86: first every core's first hardware thread, then the
    /// second ones.
    fn machine(packages: usize, numa: usize, l3: usize, cores: usize, smt: usize) -> Machine {
        let total = packages * numa * l3 * cores;
        let mut v = Vec::new();
        for i in 0..total {
            let l3i = i / cores;
            let numai = l3i / l3;
            let pkg = numai / numa;
            let pus = (0..smt).map(|t| (t * total + i) as u32).collect();
            v.push(Core {
                pus,
                groups: [Some(i), Some(l3i), Some(numai), Some(pkg)],
            });
        }
        Machine {
            cores: v,
            allowed: Vec::new(),
            bound: Vec::new(),
        }
    }

    fn bound_to(mut m: Machine, pus: std::ops::Range<u32>) -> Machine {
        m.bound = pus.collect();
        m
    }

    fn first_pus(p: &Plan) -> Vec<Option<u32>> {
        p.cpus.iter().map(|c| c.as_ref().map(|c| c[0])).collect()
    }

    #[rstest]
    #[case(None, Ok(Workers::Count(1)))]
    #[case(Some(""), Ok(Workers::Count(1)))]
    #[case(Some("1"), Ok(Workers::Count(1)))]
    #[case(Some(" 64 "), Ok(Workers::Count(64)))]
    #[case(Some("1024"), Ok(Workers::Count(1024)))]
    #[case(Some("auto"), Ok(Workers::Auto))]
    #[case(Some("AUTO"), Ok(Workers::Auto))]
    #[case(Some("0"), Err(()))]
    #[case(Some("1025"), Err(()))]
    #[case(Some("-2"), Err(()))]
    #[case(Some("2x"), Err(()))]
    #[case(Some("all"), Err(()))]
    fn workers_parse(#[case] v: Option<&str>, #[case] want: Result<Workers, ()>) {
        let got = parse_workers(v);
        match want {
            Ok(w) => assert_eq!(got, Ok(w)),
            Err(()) => {
                let e = got.unwrap_err();
                assert!(e.contains("TOUCAN_WORKERS") && e.contains("auto"), "{e}");
            }
        }
    }

    #[rstest]
    #[case(None, Ok(None))]
    #[case(Some("core"), Ok(Some(Bind::Core)))]
    #[case(Some("None"), Ok(Some(Bind::None)))]
    #[case(Some(" "), Ok(None))]
    #[case(Some("socket"), Err(()))]
    fn bind_parse(#[case] v: Option<&str>, #[case] want: Result<Option<Bind>, ()>) {
        let got = parse_bind(v);
        match want {
            Ok(b) => assert_eq!(got, Ok(b)),
            Err(()) => {
                let e = got.unwrap_err();
                assert!(e.contains("TOUCAN_BIND") && e.contains("core") && e.contains("none"), "{e}");
            }
        }
    }

    #[rstest]
    #[case(&[], None)]
    #[case(&[("MPI_LOCALRANKID", "1"), ("MPI_LOCALNRANKS", "2")], Some((1, 2)))]
    #[case(&[("MPI_LOCALRANKID", "2"), ("MPI_LOCALNRANKS", "2")], None)]
    #[case(&[("OMPI_COMM_WORLD_LOCAL_RANK", "3"), ("OMPI_COMM_WORLD_LOCAL_SIZE", "4")], Some((3, 4)))]
    #[case(&[("SLURM_LOCALID", "0"), ("SLURM_NTASKS_PER_NODE", "8")], Some((0, 8)))]
    #[case(&[("SLURM_LOCALID", "1"), ("SLURM_TASKS_PER_NODE", "4(x2),2"), ("SLURM_NODEID", "2")], Some((1, 2)))]
    #[case(&[("SLURM_LOCALID", "1"), ("SLURM_TASKS_PER_NODE", "4(x2),2"), ("SLURM_NODEID", "1")], Some((1, 4)))]
    #[case(&[("SLURM_LOCALID", "1"), ("SLURM_TASKS_PER_NODE", "4(x2"), ("SLURM_NODEID", "1")], None)]
    #[case(&[("SLURM_LOCALID", "0")], None)]
    // hydra first: it is what our mpirun sets, even inside a Slurm allocation.
    #[case(&[("SLURM_LOCALID", "0"), ("SLURM_NTASKS_PER_NODE", "1"), ("MPI_LOCALRANKID", "1"), ("MPI_LOCALNRANKS", "3")], Some((1, 3)))]
    fn local_env(#[case] vars: &[(&str, &str)], #[case] want: Option<(usize, usize)>) {
        let got = local_from_env(|k| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string()));
        assert_eq!(got.map(|l| (l.rank, l.size)), want);
    }

    // This machine: 1 package, 1 NUMA node, 1 L3, 2 cores.
    #[rstest]
    // auto, unbound, 2 processes on 2 cores: one worker each, each its own core.
    #[case(machine(1, 1, 1, 2, 1), Workers::Auto, None, Some((0, 2)), 1, vec![Some(0)], false)]
    #[case(machine(1, 1, 1, 2, 1), Workers::Auto, None, Some((1, 2)), 1, vec![Some(1)], false)]
    // auto alone: both cores.
    #[case(machine(1, 1, 1, 2, 1), Workers::Auto, None, None, 2, vec![Some(0), Some(1)], false)]
    #[case(machine(1, 1, 1, 2, 1), Workers::Auto, None, Some((0, 1)), 2, vec![Some(0), Some(1)], false)]
    // W=2 unbound with one process: bound by default.
    #[case(machine(1, 1, 1, 2, 1), Workers::Count(2), None, None, 2, vec![Some(0), Some(1)], false)]
    #[case(machine(1, 1, 1, 2, 1), Workers::Count(2), Some(Bind::None), None, 2, vec![None, None], false)]
    // W=1: not bound unless asked; asked, the local share's core.
    #[case(machine(1, 1, 1, 2, 1), Workers::Count(1), None, Some((1, 2)), 1, vec![None], false)]
    #[case(machine(1, 1, 1, 2, 1), Workers::Count(1), Some(Bind::Core), Some((1, 2)), 1, vec![Some(1)], false)]
    // Oversubscribed: 3 workers on 2 cores, warned, not bound unless asked (then round-robin).
    #[case(machine(1, 1, 1, 2, 1), Workers::Count(3), None, None, 3, vec![None, None, None], true)]
    #[case(machine(1, 1, 1, 2, 1), Workers::Count(3), Some(Bind::Core), None, 3, vec![Some(0), Some(1), Some(0)], true)]
    // 2 workers of each of 2 processes on 2 cores (compat layout 2x2x1): one core each.
    #[case(machine(1, 1, 1, 2, 1), Workers::Count(2), None, Some((1, 2)), 2, vec![None, None], true)]
    #[case(machine(1, 1, 1, 2, 1), Workers::Count(2), Some(Bind::Core), Some((1, 2)), 2, vec![Some(1), Some(1)], true)]
    // 3 processes on 2 cores: one core each, warned.
    #[case(machine(1, 1, 1, 2, 1), Workers::Auto, None, Some((2, 3)), 1, vec![None], true)]
    #[case(machine(1, 1, 1, 2, 1), Workers::Auto, Some(Bind::Core), Some((2, 3)), 1, vec![Some(1)], true)]
    #[case(machine(1, 1, 1, 2, 1), Workers::Auto, Some(Bind::Core), Some((1, 3)), 1, vec![Some(0)], true)]
    // 2 sockets × 32 cores, 2 hardware threads each (PUs 0-63, 64-127).
    #[case(machine(2, 1, 1, 32, 2), Workers::Auto, None, None, 64, (0..64).map(Some).collect(), false)]
    // W=2 spreads over the share: one per socket.
    #[case(machine(2, 1, 1, 32, 2), Workers::Count(2), None, None, 2, vec![Some(0), Some(32)], false)]
    // Launcher bound to the second socket (-bind-to socket): its 32 cores.
    #[case(bound_to(machine(2, 1, 1, 32, 2), 32..64), Workers::Auto, None, Some((1, 2)), 32, (32..64).map(Some).collect(), false)]
    // Unbound, 4 processes on the 64 cores: 16 each, the third gets cores 32..48.
    #[case(machine(2, 1, 1, 32, 2), Workers::Auto, None, Some((2, 4)), 16, (32..48).map(Some).collect(), false)]
    // Bound to one core (-bind-to core) with W=2: oversubscribed on it.
    #[case(bound_to(machine(2, 1, 1, 32, 1), 5..6), Workers::Count(2), None, None, 2, vec![None, None], true)]
    #[case(bound_to(machine(2, 1, 1, 32, 1), 5..6), Workers::Count(2), Some(Bind::Core), None, 2, vec![Some(5), Some(5)], true)]
    fn plans(
        #[case] m: Machine,
        #[case] w: Workers,
        #[case] bind: Option<Bind>,
        #[case] local: Option<(usize, usize)>,
        #[case] workers: usize,
        #[case] first: Vec<Option<u32>>,
        #[case] warned: bool,
    ) {
        let p = plan_on(&m, w, bind, local.map(|(rank, size)| Local { rank, size })).unwrap();
        assert_eq!(p.workers, workers);
        assert_eq!(first_pus(&p), first);
        assert_eq!(p.warning.is_some(), warned, "{:?}", p.warning);
        assert_eq!(p.cpus.len(), workers);
        assert_eq!(p.steal_order.len(), workers);
        for (k, o) in p.steal_order.iter().enumerate() {
            let mut s = o.clone();
            s.sort_unstable();
            assert_eq!(s, (0..workers).filter(|&j| j != k).collect::<Vec<_>>(), "worker {k}");
        }
        // The process's CPUs hold every worker's, and are empty when nothing is bound.
        assert_eq!(p.process_cpus.is_empty(), p.cpus.iter().all(Option::is_none));
        for c in p.cpus.iter().flatten() {
            assert!(is_subset(c, &p.process_cpus), "{c:?} not in {:?}", p.process_cpus);
        }
        let d = describe(&p);
        assert!(d.starts_with(&format!("{workers} worker")), "{d}");
        assert_eq!(d.lines().filter(|l| l.starts_with("  worker ")).count(), workers, "{d}");
    }

    #[test]
    fn bound_workers_have_distinct_cores_with_their_threads() {
        let p = plan_on(&machine(2, 2, 2, 8, 2), Workers::Auto, None, None).unwrap();
        assert_eq!(p.workers, 64);
        let mut firsts: Vec<u32> = p.cpus.iter().map(|c| c.as_ref().unwrap()[0]).collect();
        firsts.dedup();
        assert_eq!(firsts.len(), 64);
        // Each core with both of its hardware threads.
        assert_eq!(p.cpus[3], Some(vec![3, 67]));
        assert_eq!(p.process_cpus, (0..128).collect::<Vec<u32>>());
    }

    /// 2 packages × 2 NUMA nodes × 2 L3 × 8 cores = 64 cores: the steal order goes L3, then
    /// NUMA node, then package, then the other package, each group in ring order.
    #[rstest]
    #[case(0, &[1, 2, 3, 4, 5, 6, 7], &[8, 9], &[16, 17], &[32, 33])]
    #[case(13, &[14, 15, 8, 9, 10, 11, 12], &[0, 1], &[16, 17], &[32, 33])]
    #[case(63, &[56, 57, 58, 59, 60, 61, 62], &[48, 49], &[32, 33], &[0, 1])]
    fn steal_nearest_first(
        #[case] k: usize,
        #[case] same_l3: &[usize],
        #[case] same_numa: &[usize],
        #[case] same_pkg: &[usize],
        #[case] far: &[usize],
    ) {
        let p = plan_on(&machine(2, 2, 2, 8, 1), Workers::Auto, None, None).unwrap();
        let o = &p.steal_order[k];
        assert_eq!(&o[..7], same_l3);
        assert_eq!(&o[7..9], same_numa);
        assert_eq!(&o[15..17], same_pkg);
        assert_eq!(&o[31..33], far);
    }

    #[test]
    fn unbound_workers_steal_in_ring_order() {
        let p = plan_on(&machine(2, 1, 1, 4, 1), Workers::Count(4), Some(Bind::None), None).unwrap();
        assert_eq!(p.steal_order[2], vec![3, 0, 1]);
        assert!(p.cpus.iter().all(Option::is_none));
    }

    #[rstest]
    #[case(Workers::Count(0))]
    #[case(Workers::Count(MAX_WORKERS + 1))]
    fn bad_counts_are_errors(#[case] w: Workers) {
        assert!(plan_on(&machine(1, 1, 1, 2, 1), w, None, None).is_err());
        assert!(plan(w, None).is_err());
    }

    #[test]
    fn no_core_in_the_cpuset_is_an_error() {
        let m = bound_to(machine(1, 1, 1, 2, 1), 7..8);
        assert!(plan_on(&m, Workers::Auto, None, None).is_err());
    }

    #[test]
    fn auto_caps_at_the_most_workers() {
        let p = plan_on(&machine(2, 1, 1, 600, 1), Workers::Auto, None, None).unwrap();
        assert_eq!(p.workers, MAX_WORKERS);
        assert!(p.warning.is_some());
    }

    #[test]
    fn one_worker_does_not_look_at_the_machine() {
        assert_eq!(plan(Workers::Count(1), None).unwrap(), Plan::single());
        assert_eq!(plan(Workers::Count(1), Some(Bind::None)).unwrap(), Plan::single());
    }

    #[rstest]
    #[case(&[], "")]
    #[case(&[3], "3")]
    #[case(&[0, 1, 2, 3, 8, 10, 11], "0-3,8,10-11")]
    fn cpu_lists(#[case] c: &[u32], #[case] want: &str) {
        assert_eq!(fmt_cpus(c), want);
    }

    /// The real machine, through hwloc: every core found, this thread's binding inside it.
    #[test]
    fn hwloc_reads_this_machine() {
        let t0 = std::time::Instant::now();
        let m = hw::machine().unwrap();
        eprintln!("hwloc: {} cores read in {:?}", m.cores.len(), t0.elapsed());
        assert!(!m.cores.is_empty());
        let p = plan_on(&m, Workers::Auto, None, None).unwrap();
        assert!(p.workers >= 1);
        let d = describe(&p);
        assert!(d.contains("worker 0: core"), "{d}");
        eprintln!("{d}");
    }

    /// `plan` itself, with this process's environment: under `mpirun -np 2` on a 2-core node
    /// (run the test binary under it), each process gets one worker on its own core.
    #[test]
    fn plan_here() {
        let p = plan(Workers::Auto, None).unwrap();
        assert!(p.workers >= 1);
        assert!(p.warning.is_some() || p.cpus.iter().all(Option::is_some));
        eprintln!("{}", describe(&p));
    }

    fn now_allowed(set: &libc::cpu_set_t) -> Cpus {
        // SAFETY: reading bits of an initialised set.
        (0..1024u32).filter(|&c| unsafe { libc::CPU_ISSET(c as usize, set) }).collect()
    }

    /// Binding a thread to the first CPU it may run on leaves it on that CPU only.
    #[test]
    fn binds_a_thread() {
        std::thread::spawn(|| {
            // SAFETY: a zeroed cpu_set_t is an empty set; the out-pointer is to a local.
            let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
            // SAFETY: as above; the calling thread.
            assert_eq!(
                unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) },
                0
            );
            // SAFETY: reading bits of an initialised set.
            let first = (0..1024u32).find(|&c| unsafe { libc::CPU_ISSET(c as usize, &set) }).unwrap();
            let mut p = Plan::single();
            bind_current_thread_to_process(&p).unwrap();
            p.cpus = vec![Some(vec![first])];
            p.process_cpus = now_allowed(&set);
            bind_current_thread(&p, 0).unwrap();
            assert!(bind_current_thread(&p, 1).is_err());
            // SAFETY: as above.
            unsafe { libc::CPU_ZERO(&mut set) };
            // SAFETY: as above.
            assert_eq!(
                unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) },
                0
            );
            // SAFETY: as above.
            let now: Vec<u32> = (0..1024u32).filter(|&c| unsafe { libc::CPU_ISSET(c as usize, &set) }).collect();
            assert_eq!(now, vec![first]);
            // And back to all the CPUs it had.
            bind_current_thread_to_process(&p).unwrap();
            // SAFETY: as above.
            assert_eq!(
                unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) },
                0
            );
            assert_eq!(now_allowed(&set), p.process_cpus);
        })
        .join()
        .unwrap();
    }
}
