//! Starting subranks with no source change: our library exports `__libc_start_main`, so the
//! program's startup code hands us its `main`; we give the C library a trampoline that runs
//! `main` once per subrank, each on its own coroutine. With privatization (see `privatize`),
//! subrank k > 0 runs `main` of its own copy of the executable.

use crate::core::runtime;
use crate::privatize::{self, MainFn};
use crate::sched::{self, coroutine::Subrank};
use std::io::Write;
use std::os::raw::{c_char, c_int, c_void};

type StartMain = unsafe extern "C" fn(MainFn, c_int, *mut *mut c_char, *const c_void, *const c_void, *const c_void, *mut c_void) -> c_int;

static mut USER_MAIN: Option<MainFn> = None;

/// The C library's startup entry point, interposed.
///
/// # Safety
/// Called once by the program's `_start`, with the arguments the C library expects.
#[no_mangle]
pub unsafe extern "C" fn __libc_start_main(
    main: MainFn,
    argc: c_int,
    argv: *mut *mut c_char,
    init: *const c_void,
    fini: *const c_void,
    rtld_fini: *const c_void,
    stack_end: *mut c_void,
) -> c_int {
    let real = libc::dlsym(libc::RTLD_NEXT, c"__libc_start_main".as_ptr());
    if real.is_null() {
        let _ = writeln!(std::io::stderr(), "toucan: cannot find the C library's __libc_start_main");
        libc::_exit(127);
    }
    // SAFETY: written once, before any other thread exists, read by the trampoline.
    USER_MAIN = Some(main);
    let real: StartMain = std::mem::transmute(real);
    real(trampoline, argc, argv, init, fini, rtld_fini, stack_end)
}

/// Says where the workers run (`TOUCAN_VERBOSE=1`), and warns of an oversubscribed or
/// unplaced layout, once per job: from the launcher's first process (the real MPI is not up
/// yet, so its rank comes from the environment).
fn report_plan(plan: &sched::bind::Plan) {
    let first = ["PMI_RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"]
        .iter()
        .find_map(|v| std::env::var(v).ok())
        .is_none_or(|r| r.trim() == "0");
    if !first {
        return;
    }
    if crate::privatize::verbose() {
        let _ = writeln!(std::io::stderr(), "toucan: workers of process 0: {}", sched::bind::describe(plan));
    } else if let Some(w) = &plan.warning {
        let _ = writeln!(std::io::stderr(), "toucan: warning: {w}");
    }
}

unsafe extern "C" fn trampoline(argc: c_int, argv: *mut *mut c_char, envp: *mut *mut c_char) -> c_int {
    let cfg = match runtime::load_config() {
        Ok(c) => c,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "toucan: {e}");
            return 1;
        }
    };
    // SAFETY: set by __libc_start_main before it called us.
    let Some(main) = USER_MAIN else { return 127 };
    // Set before the real MPI is loaded, while single-threaded.
    crate::transport::ucx::prepare_env();
    // One `main` per subrank: the program's own, or that of the subrank's copy of it.
    let local = cfg.local();
    // Before the copies are loaded and any thread starts (see sched::sentinel).
    sched::sentinel::start(local);
    let mains = match privatize::prepare(local, main, argc, argv, envp) {
        Ok(m) => m,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "toucan: {e}");
            return 1;
        }
    };
    let args: Vec<*mut c_char> = (0..argc as usize).map(|i| *argv.add(i)).collect();
    let envp = envp as usize;
    let mut subs = Vec::with_capacity(local);
    for (i, main) in mains.into_iter().enumerate() {
        // Each subrank gets its own argv array (MPI_Init may rewrite it); strings are shared.
        let mut own: Vec<*mut c_char> = args.clone();
        own.push(std::ptr::null_mut());
        let own = Box::leak(own.into_boxed_slice()).as_mut_ptr() as usize;
        let body = Box::new(move || {
            // SAFETY: calling the program's main as the C library would, with a valid argv;
            // then, as at a thread's end, its thread-local objects are destroyed.
            let code = unsafe { main(argc, own as *mut *mut c_char, envp as *mut *mut c_char) };
            crate::abi::exit::returned_from_main(code);
            // SAFETY: the subrank still runs, so its thread-locals are in place.
            unsafe { privatize::tls::run_dtors(i) };
            code
        });
        match Subrank::new(cfg.stack, body) {
            Ok(mut s) => {
                s.tls = i;
                sched::guard::register(i, s.limit, s.base - s.limit);
                subs.push(s);
            }
            Err(e) => {
                let _ = writeln!(
                    std::io::stderr(),
                    "toucan: cannot allocate a {}-byte stack for subrank {i}: {e} (set TOUCAN_STACK)",
                    cfg.stack
                );
                return 1;
            }
        }
    }
    sched::guard::install();
    if crate::core::report::wanted().is_some() {
        sched::metrics::start(local, cfg.workers);
        crate::core::report::memory_start();
    }
    // SMP mode: W workers, each the home of V consecutive subranks. Tasks may move between
    // workers unless the program's thread-locals are swapped per worker thread (`swap`).
    let plan = runtime::plan();
    report_plan(plan);
    // The main thread is worker 0 (its affinity before that is the process's).
    crate::transport::node::remember_mask();
    if let Err(e) = sched::bind::bind_current_thread(plan, 0) {
        let _ = writeln!(std::io::stderr(), "toucan: {e}");
    }
    let layout = sched::worker::Layout {
        workers: cfg.workers,
        home: (0..local).map(|k| cfg.home(k)).collect(),
        // Nor when the program uses OpenMP, whose runtime keeps per kernel thread the team
        // a subrank's main thread is in (`privatize::interposed`).
        steal: !sched::swap::active() && !crate::privatize::interposed::openmp_loaded(),
        order: Some(plan.steal_order.clone()),
        balance: (cfg.balance_ms > 0).then(|| std::time::Duration::from_millis(cfg.balance_ms as u64)),
    };
    let codes = sched::worker::run(subs, layout, &crate::core::hooks::Progress);
    let _ = std::io::stdout().flush();
    if let Err(e) = runtime::process_exit() {
        let _ = writeln!(std::io::stderr(), "toucan: {e}");
        return 1;
    }
    codes.into_iter().find(|&c| c != 0).unwrap_or(0)
}
