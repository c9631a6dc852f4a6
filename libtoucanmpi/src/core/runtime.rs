//! Launch configuration and the process-wide steps: bringing the real MPI up at the first
//! `MPI_Init`, and down once every subrank has finalized.

use super::error::{err, MpiResult};
use super::state::{self, Config, State};
use crate::consts as c;
use crate::sched::bind;
use crate::transport::{real, Transport};
use std::os::raw::c_int;
use std::sync::OnceLock;

static CONFIG: OnceLock<Config> = OnceLock::new();
static PLAN: OnceLock<bind::Plan> = OnceLock::new();
/// Held while the real MPI is brought up.
static INIT: crate::sched::lock::Lock<()> = crate::sched::lock::Lock::new(());
static ABORT: OnceLock<(unsafe extern "C" fn(real::RComm, c_int) -> c_int, real::RComm)> = OnceLock::new();

fn env_usize(name: &str, default: usize, min: usize, max: usize) -> Result<usize, String> {
    parse_usize(name, std::env::var(name).ok().as_deref(), default, min, max)
}

/// `env_usize` on the value `val` of variable `name` (None: unset).
fn parse_usize(name: &str, val: Option<&str>, default: usize, min: usize, max: usize) -> Result<usize, String> {
    match val {
        None => Ok(default),
        Some(s) if s.trim().is_empty() => Ok(default),
        Some(s) => {
            let t = s.trim();
            let (num, mult) = match t.char_indices().last() {
                Some((i, 'k' | 'K')) => (&t[..i], 1 << 10),
                Some((i, 'm' | 'M')) => (&t[..i], 1 << 20),
                Some((i, 'g' | 'G')) => (&t[..i], 1 << 30),
                _ => (t, 1),
            };
            match num.parse::<usize>() {
                Ok(v) if v * mult >= min && v * mult <= max => Ok(v * mult),
                _ => Err(format!("{name}={s} is not valid: expected an integer from {min} to {max}")),
            }
        }
    }
}

/// Default pause of the background progress thread, in microseconds (`TOUCAN_PROGRESS`).
pub(crate) const PROGRESS_US: usize = 200;
/// Default of `TOUCAN_REAL_COLL_MIN` (reductions): below it our point-to-point reduction
/// costs less than the schedule of a real nonblocking collective (Allreduce at n=2, V=1 on
/// this machine: 8 B 1.2 us over point-to-point, 1.6 us through MPI_Iallreduce; 4 KiB 3.1 us
/// against 3.4; 8 KiB 5.1 against 4.3; 1 MiB 381 against 168).
const REAL_COLL_MIN: usize = 8 << 10;
/// Default of `TOUCAN_REAL_BCAST_MIN`: a broadcast over point-to-point between two processes
/// is one message straight into the receiver's buffer, which MPI_Ibcast does not beat (8 KiB
/// 1.0 us against 1.8; 1 MiB 31 against 32 at n=2, V=1); only its algorithms for many
/// processes and large messages can pay.
const REAL_BCAST_MIN: usize = 512 << 10;

/// An on/off switch: `on`/`1` or `off`/`0` (unset or empty: `default`).
fn env_switch(name: &str, default: bool) -> Result<bool, String> {
    parse_switch(name, std::env::var(name).ok().as_deref(), default)
}

/// `env_switch` on the value `val` of variable `name` (None: unset).
fn parse_switch(name: &str, val: Option<&str>, default: bool) -> Result<bool, String> {
    match val.map(str::trim) {
        None | Some("") => Ok(default),
        Some("on" | "1") => Ok(true),
        Some("off" | "0") => Ok(false),
        Some(s) => Err(format!("{name}={s} is not valid: expected on or off")),
    }
}

// coll7 (issue 16, session 16): the small nonblocking collectives' variables (`coll::nbc`).

/// `TOUCAN_NBC_TREE_MAX` with value `val`: bytes up to which a broadcast at one member per
/// process runs as a tree of real messages (default `nbc::SMALL_MAX`; at most
/// `collp2p::P2P_MAX`, larger values are clamped; 0: never).
fn nbc_tree_max(val: Option<&str>) -> Result<usize, String> {
    let max = crate::transport::collp2p::P2P_MAX;
    parse_usize("TOUCAN_NBC_TREE_MAX", val, super::coll::nbc::SMALL_MAX, 0, usize::MAX / 2).map(|v| v.min(max))
}

/// `TOUCAN_NBC_RD` with value `val` (default on).
fn nbc_rd(val: Option<&str>) -> Result<bool, String> {
    parse_switch("TOUCAN_NBC_RD", val, true)
}

/// Session 27: `TOUCAN_NBC_REC_V` with value `val`: 0 `off`, 1 `on` (the default: session 28,
/// Igatherv as well; session 29, Iscatterv too), 2 `all` (since session 29 the same as `on`)
/// (`coll::nbrecv::level`).
fn nbc_rec_v(val: Option<&str>) -> Result<u8, String> {
    match val.map(str::trim) {
        Some("all" | "2") => Ok(2),
        v => parse_switch("TOUCAN_NBC_REC_V", v, true)
            .map(u8::from)
            .map_err(|e| format!("{e} or all")),
    }
}

/// `TOUCAN_REAL_THREAD`: the thread level asked of the real MPI, `serialized` (the default)
/// or `multiple`. Either way Toucan calls it from one thread at a time (under the state's
/// write side or the transport's lock); `multiple` only measures what the real MPI's own
/// locking costs (docs/design-decisions.md).
fn real_thread_level() -> Result<bool, String> {
    match std::env::var("TOUCAN_REAL_THREAD").as_deref().map(str::trim) {
        Err(_) | Ok("") | Ok("serialized") => Ok(false),
        Ok("multiple") => Ok(true),
        Ok(s) => Err(format!("TOUCAN_REAL_THREAD={s} is not valid: expected serialized or multiple")),
    }
}

/// Default period of the load balance between workers (`TOUCAN_BALANCE`), in ms: many time
/// steps of a typical stencil, so that where a period cuts a step does not move subranks (on
/// bench/imbalance.c, 10 ms steps: 20 ms moved subranks 19 to 34 times a run, 50 to 200 ms
/// once, 4 moves; single runs at 1x2x4: 1.16-1.26 s at 20 ms, 1.12-1.24 s at 100 ms, 1.25-1.40 s off).
const BALANCE_MS: usize = 100;

/// `TOUCAN_BALANCE`: `on` (the default: every BALANCE_MS), `off`, or the period in ms.
fn balance_period() -> Result<usize, String> {
    match std::env::var("TOUCAN_BALANCE").as_deref().map(str::trim) {
        Err(_) | Ok("") | Ok("on") => Ok(BALANCE_MS),
        Ok("off") => Ok(0),
        Ok(_) => env_usize("TOUCAN_BALANCE", BALANCE_MS, 0, 3_600_000)
            .map_err(|_| "TOUCAN_BALANCE is not valid: expected on, off or a period in ms".to_string()),
    }
}

/// Reads the configuration from the environment (once).
pub fn load_config() -> Result<Config, String> {
    let v = env_usize("TOUCAN_V", 1, 1, 256)?;
    let plan = worker_plan()?;
    let workers = plan.workers;
    let cfg = Config {
        v,
        workers,
        stack: env_usize("TOUCAN_STACK", 8 << 20, 64 << 10, 1 << 40)?,
        eager_max: env_usize("TOUCAN_EAGER", 8 << 10, 0, 1 << 30)?,
        intra_eager_max: env_usize("TOUCAN_INTRA_EAGER", 64 << 10, 0, 1 << 30)?,
        // Background progress by default only with siblings to overlap: at V=1 its wake-ups
        // cost a ping-pong about 0.03 us per message (0.45 against 0.42 us, quiet machine).
        progress_us: env_usize("TOUCAN_PROGRESS", if v * workers > 1 { PROGRESS_US } else { 0 }, 0, 1_000_000)?,
        real_coll: env_switch("TOUCAN_REAL_COLL", true)?,
        real_coll_derived: env_switch("TOUCAN_REAL_COLL_DERIVED", true)?,
        real_coll_min: env_usize("TOUCAN_REAL_COLL_MIN", REAL_COLL_MIN, 0, usize::MAX / 2)?,
        real_bcast_min: env_usize("TOUCAN_REAL_BCAST_MIN", REAL_BCAST_MIN, 0, usize::MAX / 2)?,
        real_nbc_min: env_usize("TOUCAN_REAL_NBC_MIN", 0, 0, usize::MAX / 2)?,
        real_multiple: real_thread_level()?,
        balance_ms: balance_period()?,
        p2p_direct: env_switch("TOUCAN_P2P_DIRECT", false)?,
        // coll7
        nbc_tree_max: nbc_tree_max(std::env::var("TOUCAN_NBC_TREE_MAX").ok().as_deref())?,
        nbc_rd: nbc_rd(std::env::var("TOUCAN_NBC_RD").ok().as_deref())?,
        nbc_rec_v: nbc_rec_v(std::env::var("TOUCAN_NBC_REC_V").ok().as_deref())?,
    };
    Ok(*CONFIG.get_or_init(|| cfg))
}

/// Where the workers run (`TOUCAN_WORKERS`, `TOUCAN_BIND`), decided once at start-up, before
/// the real MPI is up. When the machine cannot be read (no hwloc), the workers asked for run
/// unbound, with a warning.
fn worker_plan() -> Result<&'static bind::Plan, String> {
    if let Some(p) = PLAN.get() {
        return Ok(p);
    }
    let var = |n: &str| std::env::var(n).ok();
    let w = bind::parse_workers(var("TOUCAN_WORKERS").as_deref())?;
    let b = bind::parse_bind(var("TOUCAN_BIND").as_deref())?;
    let plan = match bind::plan(w, b) {
        Ok(p) => p,
        Err(e) => {
            let n = match w {
                bind::Workers::Count(n) => n,
                bind::Workers::Auto => std::thread::available_parallelism().map_or(1, |n| n.get()),
            };
            let mut p = bind::Plan::unbound(n);
            p.warning = Some(format!("cannot place the workers ({e}): {n} unbound worker(s)"));
            p
        }
    };
    Ok(PLAN.get_or_init(|| plan))
}

/// The workers' plan (one unbound worker when the program did not start through our entry
/// point).
pub fn plan() -> &'static bind::Plan {
    PLAN.get_or_init(|| bind::Plan::unbound(1))
}

/// Control receives the transport keeps posted (`transport::engine`). Each is a wildcard
/// receive, which the real MPI (UCX) compares with every arriving message posted after it:
/// with point-to-point passing through (`p2p::direct`) the ring carries only collectives'
/// and other internal messages, and a short one keeps that comparison cheap. So it does when
/// blocking collectives run as the real MPI's (`coll::solo`: one subrank per process, the real
/// MPI at MULTIPLE): MPICH's own blocking collectives poll the network for every posted wildcard
/// receive (8 B Allreduce 1.08 -> 1.00 µs with 4 slots; the 8 B message rate the same or
/// better in two interleaved sets: bench/RESULTS.md, session 15). Session 27: at several
/// subranks per process, `SUBRANK_RING`.
fn ring_slots() -> usize {
    let c = config();
    let def = if (c.p2p_direct || c.real_multiple) && c.local() == 1 {
        DIRECT_RING
    } else if c.local() > 1 {
        SUBRANK_RING
    } else {
        crate::transport::engine::RING
    };
    std::env::var("TOUCAN_RING")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(def)
        .clamp(1, crate::transport::engine::RING)
}

/// `ring_slots` with point-to-point passing through.
const DIRECT_RING: usize = 4;

/// Session 27: `ring_slots` at several subranks per process. Every real message outside the
/// ring (a nonblocking collective's tree or exchange steps on a twin, the real MPI's own
/// collectives' messages, large point-to-point payloads) is compared by UCX with each posted
/// wildcard receive (`ucp_tag_exp_search_all`: ~840 instructions per arrival with 32 slots,
/// callgrind at 2x4, the largest single item of an Iscatter or Iallreduce iteration there).
/// With 8: IMB-NBC 2x4 t_pure 3-7% lower (Iallreduce 8 B 2.87-3.02 -> 2.79-2.85 µs, Ibcast
/// 1 KiB 2.50-2.58 -> 2.39-2.40) in alternating sets, and the message rate between the
/// processes unchanged (msgrate's windows of 8 with every pair across the two processes: 2x4
/// 8.4-9.6 M/s with either, 2x16 7.3-7.7 with either).
const SUBRANK_RING: usize = 8;

/// The configuration (defaults when the program did not start through our entry point).
pub fn config() -> Config {
    *CONFIG.get_or_init(|| Config {
        v: 1,
        workers: 1,
        stack: 8 << 20,
        eager_max: 8 << 10,
        intra_eager_max: 64 << 10,
        progress_us: 0,
        real_coll: true,
        real_coll_derived: true,
        real_coll_min: REAL_COLL_MIN,
        real_bcast_min: REAL_BCAST_MIN,
        real_nbc_min: 0,
        real_multiple: false,
        balance_ms: 0,
        p2p_direct: false,
        // coll7
        nbc_tree_max: super::coll::nbc::SMALL_MAX,
        nbc_rd: true,
        nbc_rec_v: 1,
    })
}

/// Brings the real MPI up if no subrank has yet; marks `sub` initialized.
///
/// # Safety
/// `argc`/`argv` must be null or the program's argument count and vector.
pub unsafe fn init(sub: usize, argc: *mut c_int, argv: *mut *mut *mut i8) -> MpiResult<()> {
    // Subranks on several workers (SMP mode) may call MPI_Init at the same time: one brings
    // the real MPI up, the others wait for it here (nothing else to do before it is up).
    let once = INIT.lock();
    if !state::exists() {
        // The real MPI's libraries bind the malloc family to the C library's: loaded and
        // initialised with every allocation on the shared heap, then bound to ours, so that
        // blocks of a subrank's heap never reach the C library's free (see `heap`).
        let realmpi = crate::heap::shared_while(real::load).map_err(|e| super::error::MpiError::new(c::MPI_ERR_OTHER, e))?;
        crate::heap::rebind();
        let version = real::library_version(&realmpi);
        let _ = ABORT.set((realmpi.PMPI_Abort, real::h(real::REAL_MPI_COMM_WORLD)));
        crate::transport::node::set_threads(config().workers);
        // issue 16 (shmq16): control messages between processes of one node through shared
        // memory (`transport::shmq`) unless TOUCAN_SHMQ=off; every process reads the same
        // environment, and the node's processes agree at set-up (any off: none uses it).
        let shmq = env_switch("TOUCAN_SHMQ", true).map_err(|e| super::error::MpiError::new(c::MPI_ERR_OTHER, e))?;
        let tp = crate::heap::shared_while(|| {
            Transport::init(realmpi, argc, argv, config().eager_max, config().real_multiple, ring_slots(), shmq)
        })
        .map_err(|e| super::error::MpiError::new(c::MPI_ERR_OTHER, e))?;
        // And the transport modules it loaded during its initialisation.
        crate::heap::rebind();
        let cfg = config();
        if tp.nproc * cfg.local() > i32::MAX as usize / 2 {
            return err(c::MPI_ERR_OTHER, "world too large");
        }
        let background = tp.nproc > 1 && tp.serialized;
        if crate::privatize::verbose() && tp.myproc == 0 {
            let (answer, idle) = if crate::transport::node::shares_core() {
                ("yes", "sleep between polls")
            } else {
                ("no", "keep polling")
            };
            eprintln!("toucan: processes outnumber the CPUs on process 0's node: {answer}; idle workers {idle}");
        }
        state::install(State::new(cfg, tp, version));
        if background {
            let pause = std::time::Duration::from_micros(cfg.progress_us as u64);
            super::background::start(pause)
                .map_err(|e| super::error::MpiError::new(c::MPI_ERR_OTHER, format!("cannot start the progress thread: {e}")))?;
            // At V = 1 (no thread by default), the first nonblocking collective between
            // processes starts it, unless TOUCAN_PROGRESS says otherwise.
            if pause.is_zero() && std::env::var("TOUCAN_PROGRESS").map_or(true, |v| v.trim().is_empty()) {
                super::background::on_demand(std::time::Duration::from_micros(PROGRESS_US as u64));
            }
        }
    }
    drop(once);
    state::with(|s| {
        let l = &mut s.locals[sub];
        if l.initialized {
            return err(c::MPI_ERR_OTHER, "MPI_Init was already called by this rank");
        }
        l.initialized = true;
        Ok(())
    })?
}

/// Aborts the job through the real MPI when it is up; returns if it is not.
pub fn abort_real(code: i32) {
    if let Some((f, world)) = ABORT.get() {
        // Other threads (workers in SMP mode, the progress thread) call the real MPI only under
        // the state lock: hold it, so that none is inside the real MPI while it aborts.
        state::freeze(std::time::Duration::from_millis(100));
        // SAFETY: the pointer is the real MPI's PMPI_Abort, valid while the library is loaded
        // (never unloaded); aborting is allowed from any state.
        unsafe { f(*world, code) };
    }
}

/// Called when every subrank of the process has ended: finalizes the real MPI if it is up.
pub fn process_exit() -> Result<(), String> {
    super::background::stop();
    if let Some(mut s) = state::take() {
        super::report::finish(&mut s);
        super::coll::real::settle(&mut s);
        s.tp.finalize()?;
        // The real MPI's library stays loaded (its atexit handlers may still run).
        std::mem::forget(s);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    /// coll7: the small nonblocking collectives' variables (`TOUCAN_NBC_TREE_MAX`,
    /// `TOUCAN_NBC_RD`), read with the others.
    #[rstest]
    #[case::unset(None, Ok(2048))]
    #[case::empty(Some(" "), Ok(2048))]
    #[case::off(Some("0"), Ok(0))]
    #[case::bytes(Some("300"), Ok(300))]
    #[case::kib(Some("64k"), Ok(64 << 10))]
    #[case::clamped(Some("4m"), Ok(crate::transport::collp2p::P2P_MAX))]
    #[case::bad(Some("big"), Err(()))]
    #[case::negative(Some("-1"), Err(()))]
    fn nbc_tree_max_reads(#[case] val: Option<&str>, #[case] want: Result<usize, ()>) {
        assert_eq!(nbc_tree_max(val).map_err(|_| ()), want);
    }

    #[rstest]
    #[case::unset(None, Ok(true))]
    #[case::on(Some("on"), Ok(true))]
    #[case::one(Some("1"), Ok(true))]
    #[case::zero(Some("0"), Ok(false))]
    #[case::off(Some(" off "), Ok(false))]
    #[case::bad(Some("maybe"), Err(()))]
    fn nbc_rd_reads(#[case] val: Option<&str>, #[case] want: Result<bool, ()>) {
        assert_eq!(nbc_rd(val).map_err(|_| ()), want);
    }

    /// Session 27: `TOUCAN_NBC_REC_V`.
    #[rstest]
    #[case::unset(None, Ok(1))]
    #[case::on(Some("on"), Ok(1))]
    #[case::off(Some("off"), Ok(0))]
    #[case::zero(Some("0"), Ok(0))]
    #[case::all(Some(" all "), Ok(2))]
    #[case::two(Some("2"), Ok(2))]
    #[case::bad(Some("some"), Err(()))]
    fn nbc_rec_v_reads(#[case] val: Option<&str>, #[case] want: Result<u8, ()>) {
        assert_eq!(nbc_rec_v(val).map_err(|_| ()), want);
    }
}
