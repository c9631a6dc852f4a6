//! Environment: init/finalize, abort, versions, time, processor name.

use super::consts as c;
use super::handles::{comm, me, put};
use crate::core::error::{err, MpiResult};
use crate::core::runtime;
use crate::core::state;
use std::os::raw::{c_char, c_int, c_void};

/// Copies `s` into a C buffer of `max` bytes (NUL-terminated) and stores its length.
///
/// # Safety
/// `buf` must have `max` bytes; `len` must be writable.
pub unsafe fn put_string(s: &str, buf: *mut c_char, len: *mut c_int, max: usize) -> MpiResult<()> {
    if buf.is_null() || len.is_null() {
        return err(c::MPI_ERR_ARG, "null output argument");
    }
    let b = s.as_bytes();
    let n = b.len().min(max.saturating_sub(1));
    std::ptr::copy_nonoverlapping(b.as_ptr() as *const c_char, buf, n);
    *buf.add(n) = 0;
    *len = n as c_int;
    Ok(())
}

unsafe fn init(argc: *mut c_int, argv: *mut *mut *mut c_char) -> MpiResult<()> {
    let sub = me()?;
    let fin = state::with(|s| s.locals[sub].finalized).unwrap_or(false);
    if fin {
        return err(c::MPI_ERR_OTHER, "MPI_Init after MPI_Finalize");
    }
    runtime::init(sub, argc, argv as _)?;
    let base = state::with(|s| s.myproc * s.cfg.local())?;
    crate::sched::guard::set_rank_base(base);
    // The real MPI's initialisation may have replaced our fault handler.
    crate::sched::guard::install();
    Ok(())
}

/// The thread level each rank was given (by local subrank; MPI_THREAD_SINGLE when unset).
static LEVELS: crate::sched::lock::Lock<Vec<c_int>> = crate::sched::lock::Lock::new(Vec::new());

fn set_level(sub: usize, level: c_int) {
    let mut l = LEVELS.lock();
    if l.len() <= sub {
        l.resize(sub + 1, c::MPI_THREAD_SINGLE);
    }
    l[sub] = level;
}

/// The thread level of the calling rank (MPI_Init gives MPI_THREAD_SINGLE, as MPICH's
/// default; MPI_Init_thread what was asked, up to MPI_THREAD_MULTIPLE).
pub(super) fn level() -> c_int {
    let sub = crate::sched::rank();
    LEVELS.lock().get(sub).copied().unwrap_or(c::MPI_THREAD_SINGLE)
}

mpi_fn!(
    MPI_Init,
    PMPI_Init,
    |argc: *mut c_int, argv: *mut *mut *mut c_char| errcomm = c::MPI_COMM_WORLD,
    {
        init(argc, argv)?;
        set_level(me()?, c::MPI_THREAD_SINGLE);
        Ok(())
    }
);

mpi_fn!(
    MPI_Init_thread,
    PMPI_Init_thread,
    |argc: *mut c_int, argv: *mut *mut *mut c_char, required: c_int, provided: *mut c_int| errcomm = c::MPI_COMM_WORLD,
    {
        init(argc, argv)?;
        // Every level: the rank's own threads (`sched::foreign`) may call MPI concurrently.
        let level = required.clamp(c::MPI_THREAD_SINGLE, c::MPI_THREAD_MULTIPLE);
        set_level(me()?, level);
        if !provided.is_null() {
            *provided = level;
        }
        Ok(())
    }
);

mpi_fn!(MPI_Initialized, PMPI_Initialized, |flag: *mut c_int| errcomm = c::MPI_COMM_WORLD, {
    let sub = me()?;
    put(flag, state::with(|s| s.locals[sub].initialized).unwrap_or(false) as c_int, "flag")
});

mpi_fn!(MPI_Finalized, PMPI_Finalized, |flag: *mut c_int| errcomm = c::MPI_COMM_WORLD, {
    let sub = me()?;
    put(flag, state::with(|s| s.locals[sub].finalized).unwrap_or(false) as c_int, "flag")
});

mpi_fn!(MPI_Finalize, PMPI_Finalize, || errcomm = c::MPI_COMM_WORLD, {
    let (sub, world) = comm(c::MPI_COMM_WORLD)?;
    // MPI_Finalize first deletes MPI_COMM_SELF's attributes, running their delete callbacks
    // (applications use this as a finalize hook).
    super::attr::delete_all(sub, crate::core::state::AttrKind::Comm, c::MPI_COMM_SELF)?;
    // Like MPICH, finalize synchronises the world, so no rank leaves while others still
    // need it; buffered sends drain first.
    crate::core::p2p::blocking::block_on(|s| (s.locals[sub].bsend_used == 0).then_some(()))?;
    crate::core::coll::Coll::new(sub, &world, c::MPI_COMM_WORLD)?.barrier()?;
    state::with(|s| s.locals[sub].finalized = true)?;
    Ok(())
});

mpi_fn!(MPI_Abort, PMPI_Abort, |comm_h: usize, code: c_int| errcomm = c::MPI_COMM_WORLD, {
    let _ = std::io::Write::flush(&mut std::io::stdout());
    let sub = crate::sched::rank();
    let rank = state::with(|s| s.myproc * s.cfg.v + sub).ok().filter(|_| sub != usize::MAX);
    let comm = if comm_h == c::MPI_COMM_WORLD {
        "MPI_COMM_WORLD".to_string()
    } else {
        format!("{comm_h:#x}")
    };
    match rank {
        Some(r) => super::say(&format!(
            "toucan: virtual rank {r} called MPI_Abort({comm}, {code}): ending the job\n"
        )),
        None => super::say(&format!(
            "toucan: MPI_Abort({comm}, {code}) called outside any rank: ending the job\n"
        )),
    }
    super::export::abort_job(code)
});

mpi_fn!(
    MPI_Query_thread,
    PMPI_Query_thread,
    |provided: *mut c_int| errcomm = c::MPI_COMM_WORLD,
    { put(provided, level(), "provided") }
);

mpi_fn!(
    MPI_Is_thread_main,
    PMPI_Is_thread_main,
    |flag: *mut c_int| errcomm = c::MPI_COMM_WORLD,
    {
        // Every subrank (its coroutine) is the main thread of its rank; the threads it
        // started are not.
        put(flag, crate::sched::in_coroutine() as c_int, "flag")
    }
);

mpi_fn!(
    MPI_Get_version,
    PMPI_Get_version,
    |v: *mut c_int, sv: *mut c_int| errcomm = c::MPI_COMM_WORLD,
    {
        if v.is_null() || sv.is_null() {
            return err(c::MPI_ERR_ARG, "null version argument");
        }
        put(v, c::MPI_VERSION, "version")?;
        put(sv, c::MPI_SUBVERSION, "subversion")
    }
);

mpi_fn!(
    MPI_Get_library_version,
    PMPI_Get_library_version,
    |buf: *mut c_char, len: *mut c_int| errcomm = c::MPI_COMM_WORLD,
    {
        let real = state::with(|s| s.real_version.clone()).unwrap_or_else(|_| "real MPI not loaded yet".into());
        let cfg = runtime::config();
        let layout = match cfg.workers {
            1 => format!("V={}", cfg.v),
            w => format!("V={}, W={w}", cfg.v),
        };
        let text = format!("Toucan-MPI {} ({layout}) over {real}", env!("CARGO_PKG_VERSION"));
        put_string(&text, buf, len, c::MPI_MAX_LIBRARY_VERSION_STRING as usize)
    }
);

mpi_fn!(
    MPI_Get_processor_name,
    PMPI_Get_processor_name,
    |buf: *mut c_char, len: *mut c_int| errcomm = c::MPI_COMM_WORLD,
    {
        let mut host = [0 as c_char; 256];
        libc::gethostname(host.as_mut_ptr(), host.len() - 1);
        let name = std::ffi::CStr::from_ptr(host.as_ptr()).to_string_lossy().to_string();
        put_string(&name, buf, len, c::MPI_MAX_PROCESSOR_NAME as usize)
    }
);

fn now() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

#[no_mangle]
pub extern "C" fn PMPI_Wtime() -> f64 {
    now()
}
#[no_mangle]
pub extern "C" fn MPI_Wtime() -> f64 {
    PMPI_Wtime()
}
#[no_mangle]
pub extern "C" fn PMPI_Wtick() -> f64 {
    1e-9
}
#[no_mangle]
pub extern "C" fn MPI_Wtick() -> f64 {
    PMPI_Wtick()
}

// ---- memory allocation and profiling control ----

mpi_fn!(
    MPI_Alloc_mem,
    PMPI_Alloc_mem,
    |size: isize, info: usize, baseptr: *mut c_void| errcomm = c::MPI_COMM_WORLD,
    {
        if size < 0 {
            return err(c::MPI_ERR_SIZE, format!("negative size {size}"));
        }
        if baseptr.is_null() {
            return err(c::MPI_ERR_ARG, "null baseptr");
        }
        // Hints (e.g. "mpi_minimum_memory_alignment") are accepted and not needed: malloc's
        // alignment is that of every basic type.
        super::info::check(info)?;
        // SAFETY: plain allocation; a zero-size request still gets a unique pointer.
        let p = unsafe { libc::malloc((size as usize).max(1)) };
        if p.is_null() {
            return err(c::MPI_ERR_NO_MEM, format!("cannot allocate {size} bytes"));
        }
        // `baseptr` is the address of the caller's pointer (C passes `&p` as `void *`).
        *(baseptr as *mut *mut c_void) = p;
        Ok(())
    }
);

mpi_fn!(MPI_Free_mem, PMPI_Free_mem, |base: *mut c_void| errcomm = c::MPI_COMM_WORLD, {
    // SAFETY: `base` came from MPI_Alloc_mem (malloc), or is null, which free ignores.
    unsafe { libc::free(base) };
    Ok(())
});

/// `MPI_Pcontrol(level, ...)`: a hint for profiling libraries, which interpose `MPI_Pcontrol`;
/// without one it does nothing. (The C prototype is variadic; the extra arguments are never
/// read, which the x86-64 and AArch64 calling conventions allow.)
#[no_mangle]
pub extern "C" fn PMPI_Pcontrol(_level: c_int) -> c_int {
    c::MPI_SUCCESS
}

#[no_mangle]
pub extern "C" fn MPI_Pcontrol(level: c_int) -> c_int {
    PMPI_Pcontrol(level)
}
