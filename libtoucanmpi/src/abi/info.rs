//! Info objects (key/value hints) and the communicator calls that take them.

use super::consts as c;
use super::env::put_string;
use super::handles::{self as hd, comm, put};
use crate::core::error::{err, MpiError, MpiResult};
use crate::sched::lock::Lock;
use std::ffi::CStr;
use std::os::raw::{c_char, c_int};

/// Handles of info objects start here (predefined ones are below 0x200).
const INFO_BASE: usize = 0x6000_0000;

pub(super) type Pairs = Vec<(String, String)>;

/// Info objects of the process (created by any subrank; handles are not shared across ranks
/// by correct programs, so one table serves all).
static INFOS: Lock<Vec<Option<Pairs>>> = Lock::new(Vec::new());

pub(super) fn new_info(p: Pairs) -> usize {
    let mut t = INFOS.lock();
    t.push(Some(p));
    INFO_BASE + t.len() - 1
}

/// Runs `f` on the pairs of info `h` (MPI_INFO_ENV is a read-only empty set here).
pub(super) fn with_info<R>(h: usize, f: impl FnOnce(&mut Pairs) -> R) -> MpiResult<R> {
    if h == c::MPI_INFO_ENV {
        return Ok(f(&mut env_pairs()));
    }
    let mut t = INFOS.lock();
    match h.checked_sub(INFO_BASE).and_then(|i| t.get_mut(i)).and_then(|x| x.as_mut()) {
        Some(p) => Ok(f(p)),
        None => err(c::MPI_ERR_INFO, format!("invalid info handle {h:#x}")),
    }
}

/// What MPI_INFO_ENV reports: the command name and the thread level, as the standard suggests.
fn env_pairs() -> Pairs {
    let mut p = Vec::new();
    if let Some(cmd) = std::env::args().next() {
        p.push(("command".to_string(), cmd));
    }
    let level = match super::env::level() {
        c::MPI_THREAD_SINGLE => "MPI_THREAD_SINGLE",
        c::MPI_THREAD_FUNNELED => "MPI_THREAD_FUNNELED",
        c::MPI_THREAD_SERIALIZED => "MPI_THREAD_SERIALIZED",
        _ => "MPI_THREAD_MULTIPLE",
    };
    p.push(("thread_level".to_string(), level.to_string()));
    p
}

/// # Safety
/// `s` must be null or a NUL-terminated string.
unsafe fn key(s: *const c_char) -> MpiResult<String> {
    if s.is_null() {
        return err(c::MPI_ERR_INFO_KEY, "null info key");
    }
    let k = CStr::from_ptr(s).to_string_lossy().to_string();
    if k.is_empty() || k.len() >= c::MPI_MAX_INFO_KEY as usize {
        return err(
            c::MPI_ERR_INFO_KEY,
            format!("info key of length {} (must be 1..{})", k.len(), c::MPI_MAX_INFO_KEY - 1),
        );
    }
    Ok(k)
}

mpi_fn!(MPI_Info_create, PMPI_Info_create, |out: *mut usize| errcomm = c::MPI_COMM_WORLD, {
    if out.is_null() {
        return err(c::MPI_ERR_ARG, "null info pointer");
    }
    *out = new_info(Vec::new());
    Ok(())
});

mpi_fn!(
    MPI_Info_create_env,
    PMPI_Info_create_env,
    |_argc: c_int, _argv: *mut *mut c_char, out: *mut usize| errcomm = c::MPI_COMM_WORLD,
    {
        if out.is_null() {
            return err(c::MPI_ERR_ARG, "null info pointer");
        }
        *out = new_info(env_pairs());
        Ok(())
    }
);

mpi_fn!(
    MPI_Info_set,
    PMPI_Info_set,
    |h: usize, k: *const c_char, v: *const c_char| errcomm = c::MPI_COMM_WORLD,
    {
        let k = key(k)?;
        if v.is_null() {
            return err(c::MPI_ERR_INFO_VALUE, "null info value");
        }
        let v = CStr::from_ptr(v).to_string_lossy().to_string();
        if v.len() >= c::MPI_MAX_INFO_VAL as usize {
            return err(
                c::MPI_ERR_INFO_VALUE,
                format!("info value of length {} (at most {})", v.len(), c::MPI_MAX_INFO_VAL - 1),
            );
        }
        if h == c::MPI_INFO_ENV {
            return err(c::MPI_ERR_INFO, "MPI_INFO_ENV is read-only");
        }
        with_info(h, |p| match p.iter_mut().find(|e| e.0 == k) {
            Some(e) => e.1 = v,
            None => p.push((k, v)),
        })
    }
);

fn lookup(h: usize, k: &str) -> MpiResult<Option<String>> {
    with_info(h, |p| p.iter().find(|e| e.0 == k).map(|e| e.1.clone()))
}

mpi_fn!(
    MPI_Info_get,
    PMPI_Info_get,
    |h: usize, k: *const c_char, len: c_int, v: *mut c_char, flag: *mut c_int| errcomm = c::MPI_COMM_WORLD,
    {
        let k = key(k)?;
        if len < 0 {
            return err(c::MPI_ERR_ARG, format!("negative value length {len}"));
        }
        hd::out(flag, "flag")?;
        match lookup(h, &k)? {
            Some(val) => {
                let mut n = 0;
                // The standard's valuelen excludes the terminating NUL.
                put_string(&val, v, &mut n, len as usize + 1)?;
                *flag = 1;
            }
            None => *flag = 0,
        }
        Ok(())
    }
);

mpi_fn!(
    MPI_Info_get_string,
    PMPI_Info_get_string,
    |h: usize, k: *const c_char, buflen: *mut c_int, v: *mut c_char, flag: *mut c_int| errcomm = c::MPI_COMM_WORLD,
    {
        let k = key(k)?;
        if buflen.is_null() || flag.is_null() {
            return err(c::MPI_ERR_ARG, "null argument");
        }
        match lookup(h, &k)? {
            Some(val) => {
                let cap = (*buflen).max(0) as usize;
                if cap > 0 && !v.is_null() {
                    let mut n = 0;
                    put_string(&val, v, &mut n, cap)?;
                }
                *buflen = val.len() as c_int + 1;
                *flag = 1;
            }
            None => *flag = 0,
        }
        Ok(())
    }
);

mpi_fn!(
    MPI_Info_get_valuelen,
    PMPI_Info_get_valuelen,
    |h: usize, k: *const c_char, len: *mut c_int, flag: *mut c_int| errcomm = c::MPI_COMM_WORLD,
    {
        let k = key(k)?;
        hd::out(len, "valuelen")?;
        hd::out(flag, "flag")?;
        match lookup(h, &k)? {
            Some(val) => {
                *len = val.len() as c_int;
                *flag = 1;
            }
            None => *flag = 0,
        }
        Ok(())
    }
);

mpi_fn!(
    MPI_Info_get_nkeys,
    PMPI_Info_get_nkeys,
    |h: usize, n: *mut c_int| errcomm = c::MPI_COMM_WORLD,
    {
        let k = with_info(h, |p| p.len() as c_int)?;
        put(n, k, "nkeys")
    }
);

mpi_fn!(
    MPI_Info_get_nthkey,
    PMPI_Info_get_nthkey,
    |h: usize, n: c_int, out: *mut c_char| errcomm = c::MPI_COMM_WORLD,
    {
        let k = with_info(h, |p| p.get(n.max(0) as usize).map(|e| e.0.clone()).filter(|_| n >= 0))?;
        let Some(k) = k else {
            return err(c::MPI_ERR_ARG, format!("info has no key number {n}"));
        };
        let mut len = 0;
        put_string(&k, out, &mut len, c::MPI_MAX_INFO_KEY as usize)
    }
);

mpi_fn!(
    MPI_Info_delete,
    PMPI_Info_delete,
    |h: usize, k: *const c_char| errcomm = c::MPI_COMM_WORLD,
    {
        let k = key(k)?;
        let found = with_info(h, |p| {
            let n = p.len();
            p.retain(|e| e.0 != k);
            p.len() != n
        })?;
        if !found {
            return err(c::MPI_ERR_INFO_NOKEY, format!("info key '{k}' is not set"));
        }
        Ok(())
    }
);

mpi_fn!(
    MPI_Info_dup,
    PMPI_Info_dup,
    |h: usize, out: *mut usize| errcomm = c::MPI_COMM_WORLD,
    {
        let p = with_info(h, |p| p.clone())?;
        hd::out(out, "newinfo")?;
        put(out, new_info(p), "newinfo")
    }
);

mpi_fn!(MPI_Info_free, PMPI_Info_free, |h: *mut usize| errcomm = c::MPI_COMM_WORLD, {
    if h.is_null() {
        return err(c::MPI_ERR_ARG, "null info pointer");
    }
    let i = (*h)
        .checked_sub(INFO_BASE)
        .ok_or_else(|| MpiError::new(c::MPI_ERR_INFO, format!("cannot free info {:#x}", *h)))?;
    let ok = INFOS.lock().get_mut(i).map(|x| x.take().is_some()).unwrap_or(false);
    if !ok {
        return err(c::MPI_ERR_INFO, format!("invalid info handle {:#x}", *h));
    }
    *h = c::MPI_INFO_NULL;
    Ok(())
});

/// An info argument must be MPI_INFO_NULL or valid.
pub fn check(h: usize) -> MpiResult<()> {
    if h == c::MPI_INFO_NULL {
        return Ok(());
    }
    with_info(h, |_| ())
}

mpi_fn!(
    MPI_Comm_set_info,
    PMPI_Comm_set_info,
    |comm_h: usize, info: usize| errcomm = comm_h,
    {
        comm(comm_h)?;
        // No communicator hints are acted on yet; the call validates and accepts them.
        check(info)
    }
);

mpi_fn!(
    MPI_Comm_get_info,
    PMPI_Comm_get_info,
    |comm_h: usize, out: *mut usize| errcomm = comm_h,
    {
        comm(comm_h)?;
        if out.is_null() {
            return err(c::MPI_ERR_ARG, "null info pointer");
        }
        // No hints in use: a new, empty info object, which the caller frees.
        *out = new_info(Vec::new());
        Ok(())
    }
);

mpi_fn!(
    MPI_Comm_dup_with_info,
    PMPI_Comm_dup_with_info,
    |comm_h: usize, info: usize, newcomm: *mut usize| errcomm = comm_h,
    {
        comm(comm_h)?;
        check(info)?;
        super::comm::dup(comm_h, newcomm)
    }
);

mpi_fn!(
    MPI_Comm_idup,
    PMPI_Comm_idup,
    |comm_h: usize, newcomm: *mut usize, req: *mut usize| errcomm = comm_h,
    {
        // Duplication needs no communication here (contexts are derived locally), so the
        // nonblocking form completes at once.
        comm(comm_h)?;
        hd::out(req, "request")?;
        super::comm::dup(comm_h, newcomm)?;
        put(req, super::p2p::completed_request(comm_h)?, "request")
    }
);

mpi_fn!(
    MPI_Comm_idup_with_info,
    PMPI_Comm_idup_with_info,
    |comm_h: usize, info: usize, newcomm: *mut usize, req: *mut usize| errcomm = comm_h,
    {
        comm(comm_h)?;
        check(info)?;
        hd::out(req, "request")?;
        super::comm::dup(comm_h, newcomm)?;
        put(req, super::p2p::completed_request(comm_h)?, "request")
    }
);

mpi_fn!(
    MPI_Comm_split_type,
    PMPI_Comm_split_type,
    |comm_h: usize, kind: c_int, key: c_int, info: usize, newcomm: *mut usize| errcomm = comm_h,
    {
        comm(comm_h)?;
        check(info)?;
        let color = match kind {
            c::MPI_UNDEFINED => c::MPI_UNDEFINED,
            // Processes of one node share memory: every subrank of every process on this host.
            c::MPI_COMM_TYPE_SHARED | c::MPI_COMM_TYPE_HW_UNGUIDED => host_color(),
            // Guided splits need a resource type we do not know: MPI_COMM_NULL, as the standard says.
            c::MPI_COMM_TYPE_HW_GUIDED | c::MPI_COMM_TYPE_RESOURCE_GUIDED => c::MPI_UNDEFINED,
            _ => return err(c::MPI_ERR_ARG, format!("invalid split type {kind}")),
        };
        let _ = hd::count(0)?;
        super::comm::split(comm_h, color, key, newcomm)
    }
);

/// A non-negative color naming this host.
fn host_color() -> c_int {
    let mut host = [0 as c_char; 256];
    // SAFETY: the buffer has room for the name and a NUL.
    unsafe { libc::gethostname(host.as_mut_ptr(), host.len() - 1) };
    // SAFETY: gethostname wrote a NUL-terminated string (the last byte stays 0).
    let name = unsafe { CStr::from_ptr(host.as_ptr()) }.to_bytes();
    (name.iter().fold(0x811c_9dc5u32, |h, &b| (h ^ b as u32).wrapping_mul(0x0100_0193)) & 0x7fff_ffff) as c_int
}
