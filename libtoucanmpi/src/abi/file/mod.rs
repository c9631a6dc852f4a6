//! MPI-IO exports (chapter 14 of MPI 4.1): file handles, open/close/delete, sizes, info
//! hints, views, positions, atomicity, file error handlers (`MPI_ERRORS_RETURN` by default,
//! `MPI_FILE_NULL`'s handler for open errors), in this module; the data accesses in `access`
//! and the two-level collective algorithm in `twophase`. Views, POSIX access and the I/O thread
//! are `core::io`. Each file keeps a duplicate of its communicator for its own collective
//! steps, which call our own `PMPI_` collectives on it. See docs/io.md.

use super::consts as c;
use super::handles::{self as hd, me};
use crate::core::error::{err, MpiError, MpiResult};
use crate::core::io::posix::{self, Fd};
use crate::core::io::view::{self, Rep, View};
use crate::core::request::Status;
use crate::sched::lock::Lock;
use std::collections::HashMap;
use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_void};
use std::sync::Arc;

/// Routes an error of a file call through the file's error handler (`MPI_FILE_NULL`'s for a
/// call without a valid file).
macro_rules! file_fn {
    ($name:ident, $pname:ident, |$($arg:ident : $ty:ty),* $(,)?| file = $fh:expr, $body:block) => {
        #[no_mangle]
        pub unsafe extern "C" fn $pname($($arg: $ty),*) -> std::os::raw::c_int {
            $crate::core::deadlock::enter(stringify!($name));
            let fh_: usize = $fh;
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| -> $crate::core::error::MpiResult<()> { $body }));
            $crate::abi::file::outcome(r, fh_, stringify!($name))
        }
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> std::os::raw::c_int {
            $pname($($arg),*)
        }
    };
}

/// A data-access export in the `int`-count and the large-count (`_c`) binding: both call `$f`
/// with the arguments before the count, the count as `i64`, the arguments after, then `$extra`.
macro_rules! file_c {
    ($name:ident, $pname:ident, $cname:ident, $pcname:ident, ($fh:ident: $fht:ty, $($a:ident: $t:ty),*), $cnt:ident,
     ($($b:ident: $u:ty),*), $f:path $(, $extra:expr)*) => {
        file_fn!($name, $pname, |$fh: $fht, $($a: $t,)* $cnt: std::os::raw::c_int, $($b: $u),*| file = $fh, {
            $f($fh, $($a,)* i64::from($cnt), $($b,)* $($extra),*)
        });
        file_fn!($cname, $pcname, |$fh: $fht, $($a: $t,)* $cnt: i64, $($b: $u),*| file = $fh, {
            $f($fh, $($a,)* $cnt, $($b,)* $($extra),*)
        });
    };
}

mod access;
mod datarep;
mod twophase;

/// Our own exports, called for the collective steps of file operations (on the file's
/// duplicate communicator, whose error handler is `MPI_ERRORS_RETURN`).
mod ffi {
    use std::os::raw::{c_char, c_int, c_void};
    extern "C" {
        pub fn PMPI_Comm_dup(comm: usize, out: *mut usize) -> c_int;
        pub fn PMPI_Comm_free(comm: *mut usize) -> c_int;
        pub fn PMPI_Comm_set_errhandler(comm: usize, eh: usize) -> c_int;
        pub fn PMPI_Comm_rank(comm: usize, r: *mut c_int) -> c_int;
        pub fn PMPI_Comm_size(comm: usize, r: *mut c_int) -> c_int;
        pub fn PMPI_Comm_group(comm: usize, g: *mut usize) -> c_int;
        pub fn PMPI_Barrier(comm: usize) -> c_int;
        pub fn PMPI_Bcast(buf: *mut c_void, n: c_int, dt: usize, root: c_int, comm: usize) -> c_int;
        pub fn PMPI_Allreduce(s: *const c_void, r: *mut c_void, n: c_int, dt: usize, op: usize, comm: usize) -> c_int;
        pub fn PMPI_Allgather(s: *const c_void, sn: c_int, st: usize, r: *mut c_void, rn: c_int, rt: usize, comm: usize) -> c_int;
        pub fn PMPI_Alltoall(s: *const c_void, sn: c_int, st: usize, r: *mut c_void, rn: c_int, rt: usize, comm: usize) -> c_int;
        pub fn PMPI_Isend_c(b: *const c_void, n: i64, dt: usize, dst: c_int, tag: c_int, comm: usize, req: *mut usize) -> c_int;
        pub fn PMPI_Irecv_c(b: *mut c_void, n: i64, dt: usize, src: c_int, tag: c_int, comm: usize, req: *mut usize) -> c_int;
        pub fn PMPI_Waitall(n: c_int, reqs: *mut usize, st: *mut c_void) -> c_int;
        pub fn PMPI_Info_create(out: *mut usize) -> c_int;
        pub fn PMPI_Info_set(h: usize, k: *const c_char, v: *const c_char) -> c_int;
        pub fn PMPI_Info_get_nkeys(h: usize, n: *mut c_int) -> c_int;
        pub fn PMPI_Info_get_nthkey(h: usize, n: c_int, k: *mut c_char) -> c_int;
        pub fn PMPI_Info_get_valuelen(h: usize, k: *const c_char, len: *mut c_int, flag: *mut c_int) -> c_int;
        pub fn PMPI_Info_get(h: usize, k: *const c_char, len: c_int, v: *mut c_char, flag: *mut c_int) -> c_int;
    }
}

/// User file handles: `FILE_BASE + index` (MPI_FILE_NULL is predefined, below).
const FILE_BASE: usize = 0x7000_0000;

/// The shared file pointer (in etypes of the current view): in memory when the file's group
/// is one rank, else in a sidecar file that every process opens (see docs/io.md).
pub(super) enum SharedPtr {
    Mem(Lock<u64>),
    Side {
        fd: Fd,
        path: String,
    },
    /// The sidecar could not be created anywhere: shared-pointer calls fail.
    None(String),
}

impl SharedPtr {
    pub(super) fn fetch_add(&self, n: u64) -> MpiResult<u64> {
        match self {
            SharedPtr::Mem(v) => {
                let mut g = v.lock();
                let old = *g;
                *g += n;
                Ok(old)
            }
            SharedPtr::Side { fd, .. } => posix::fetch_add(fd, n).map_err(|e| posix::error("shared file pointer", &e)),
            SharedPtr::None(why) => unavailable(why),
        }
    }
    pub(super) fn get(&self) -> MpiResult<u64> {
        match self {
            SharedPtr::Mem(v) => Ok(*v.lock()),
            SharedPtr::Side { fd, .. } => posix::shared_get(fd).map_err(|e| posix::error("shared file pointer", &e)),
            SharedPtr::None(why) => unavailable(why),
        }
    }
    pub(super) fn set(&self, x: u64) -> MpiResult<()> {
        match self {
            SharedPtr::Mem(v) => {
                *v.lock() = x;
                Ok(())
            }
            SharedPtr::Side { fd, .. } => posix::shared_set(fd, x).map_err(|e| posix::error("shared file pointer", &e)),
            SharedPtr::None(why) => unavailable(why),
        }
    }
}

fn unavailable<T>(why: &str) -> MpiResult<T> {
    err(
        c::MPI_ERR_UNSUPPORTED_OPERATION,
        format!("no shared file pointer for this file: {why}"),
    )
}

/// The hints this implementation uses (`MPI_Info` keys), with ROMIO's defaults.
#[derive(Clone, Debug)]
pub(super) struct Hints {
    /// Every key the program gave (returned by `MPI_File_get_info`, after ours).
    pub given: Vec<(String, String)>,
}

impl Hints {
    fn get(&self, k: &str) -> Option<&str> {
        self.given.iter().rev().find(|e| e.0 == k).map(|e| e.1.as_str())
    }
    fn num(&self, k: &str) -> Option<u64> {
        self.get(k).and_then(|v| v.trim().parse::<u64>().ok())
    }
    /// Collective buffer bytes per aggregator and round (`cb_buffer_size`, default 16 MiB).
    pub fn cb_buffer_size(&self) -> u64 {
        self.num("cb_buffer_size").filter(|&n| n > 0).unwrap_or(16 << 20)
    }
    /// Most aggregators (`cb_nodes`; 0: one per process).
    pub fn cb_nodes(&self) -> u64 {
        self.num("cb_nodes").unwrap_or(0)
    }
    /// File domains are aligned to this many bytes (`striping_unit`; 0: no alignment).
    pub fn striping_unit(&self) -> u64 {
        self.num("striping_unit").unwrap_or(0)
    }
    /// Whether collective accesses aggregate (`romio_cb_read`/`romio_cb_write`: `disable`
    /// makes them independent).
    pub fn cb(&self, write: bool) -> bool {
        let k = if write { "romio_cb_write" } else { "romio_cb_read" };
        self.get(k) != Some("disable")
    }
    /// The data-sieving window of independent non-contiguous reads (`romio_ds_read`:
    /// `disable` gives 0, no sieving; else `ind_rd_buffer_size`, default 4 MiB as ROMIO's).
    pub fn ds_read_window(&self) -> u64 {
        if self.get("romio_ds_read") == Some("disable") {
            return 0;
        }
        self.get("ind_rd_buffer_size")
            .and_then(|v| v.parse().ok())
            .filter(|&v| v > 0)
            .unwrap_or(4 << 20)
    }
    /// The data-sieving window of independent non-contiguous writes (`romio_ds_write`:
    /// `disable` gives 0, no sieving and no locks; else `ind_wr_buffer_size`, default 512 KiB
    /// as ROMIO's). While it is on, every write of the file locks the bytes it writes (a
    /// sieving writer rewrites the holes between its pieces; see `posix::write_segments_sieved`).
    fn ds_write_window(&self) -> u64 {
        if self.get("romio_ds_write") == Some("disable") {
            return 0;
        }
        self.num("ind_wr_buffer_size").filter(|&v| v > 0).unwrap_or(512 << 10)
    }
    /// `ds_write_window` for a file opened with `amode`: 0 on a write-only file, whose
    /// descriptor cannot read the spans back (ROMIO reopens such a file read-write to sieve;
    /// we write its pieces one by one, and since every rank of the file has the same access
    /// mode, nobody sieves it and no lock is needed).
    pub fn ds_write_window_for(&self, amode: i32) -> u64 {
        if amode & c::MPI_MODE_WRONLY != 0 {
            return 0;
        }
        self.ds_write_window()
    }
    /// Whether a collective write's file write of one round overlaps the next round's
    /// exchange (`toucan_cb_pipeline=enable`; by default each round's write ends before the
    /// next round starts: on the 2 loaded cores measured, overlapping was 3-5% slower, the
    /// I/O thread taking the core the exchange needed; docs/io.md).
    pub fn cb_pipeline(&self) -> bool {
        self.get("toucan_cb_pipeline") == Some("enable")
    }
    /// Whether a collective read whose smallest average piece (over the ranks) is `piece`
    /// bytes skips the exchange, each process reading its own ranks' pieces
    /// (`toucan_cb_read_direct`: `disable`, `enable`, or the smallest average piece in bytes;
    /// default 64 KiB, measured in docs/io.md).
    pub fn read_direct(&self, piece: u64) -> bool {
        match self.get("toucan_cb_read_direct") {
            Some("disable") => false,
            Some("enable") => true,
            v => piece >= v.and_then(|v| v.trim().parse().ok()).unwrap_or(64 << 10),
        }
    }
    fn merge(&mut self, more: Vec<(String, String)>) {
        for (k, v) in more {
            match self.given.iter_mut().find(|e| e.0 == k) {
                Some(e) => e.1 = v,
                None => self.given.push((k, v)),
            }
        }
    }
    /// What `MPI_File_get_info` reports: our hints with their values in effect, then the
    /// other keys given.
    fn report(&self, aggregators: usize) -> Vec<(String, String)> {
        let mut out = vec![
            ("cb_buffer_size".to_string(), self.cb_buffer_size().to_string()),
            (
                "romio_cb_read".to_string(),
                self.get("romio_cb_read").unwrap_or("automatic").to_string(),
            ),
            (
                "romio_cb_write".to_string(),
                self.get("romio_cb_write").unwrap_or("automatic").to_string(),
            ),
            (
                "cb_nodes".to_string(),
                match self.cb_nodes() {
                    0 => aggregators,
                    n => (n as usize).min(aggregators),
                }
                .to_string(),
            ),
            (
                "romio_no_indep_rw".to_string(),
                self.get("romio_no_indep_rw").unwrap_or("false").to_string(),
            ),
            (
                "romio_ds_read".to_string(),
                self.get("romio_ds_read").unwrap_or("automatic").to_string(),
            ),
            (
                "romio_ds_write".to_string(),
                self.get("romio_ds_write").unwrap_or("automatic").to_string(),
            ),
        ];
        if self.striping_unit() > 0 {
            out.push(("striping_unit".to_string(), self.striping_unit().to_string()));
        }
        for (k, v) in &self.given {
            if !out.iter().any(|e| &e.0 == k) {
                out.push((k.clone(), v.clone()));
            }
        }
        out
    }
}

/// What a split collective's begin call did, for its end call.
pub(super) struct Split {
    pub status: Status,
    pub buf: usize,
}

pub(super) struct FState {
    pub view: Arc<View>,
    /// Individual file pointer, in etypes of the view.
    pub fp: u64,
    pub atomic: bool,
    pub hints: Hints,
    pub errh: usize,
    pub split: Option<Split>,
}

pub(super) struct FileObj {
    /// The subrank that opened it (handles are per rank).
    pub owner: usize,
    pub fd: Arc<Fd>,
    pub path: String,
    pub amode: i32,
    /// Duplicate of the communicator given to `MPI_File_open`.
    pub comm: usize,
    pub rank: i32,
    pub size: i32,
    /// Process of each rank of `comm` (for the aggregators of collective accesses).
    pub procs: Vec<u64>,
    pub shared: SharedPtr,
    pub st: Lock<FState>,
}

static FILES: Lock<Vec<Option<Arc<FileObj>>>> = Lock::new(Vec::new());
/// `MPI_FILE_NULL`'s error handler, per subrank (default `MPI_ERRORS_RETURN`).
static NULL_ERRH: Lock<Option<HashMap<usize, usize>>> = Lock::new(None);

fn null_handler(sub: usize) -> usize {
    NULL_ERRH
        .lock()
        .as_ref()
        .and_then(|m| m.get(&sub).copied())
        .unwrap_or(c::MPI_ERRORS_RETURN)
}

/// The file behind handle `h`, which must be one of the running rank's.
pub(super) fn file(h: usize) -> MpiResult<Arc<FileObj>> {
    if h == c::MPI_FILE_NULL {
        return err(c::MPI_ERR_FILE, "MPI_FILE_NULL is not a valid file");
    }
    let sub = me()?;
    let f = h.checked_sub(FILE_BASE).and_then(|i| FILES.lock().get(i).cloned().flatten());
    match f {
        Some(f) if f.owner == sub => Ok(f),
        _ => err(c::MPI_ERR_FILE, format!("invalid file handle {h:#x} (closed, or not a file)")),
    }
}

/// The return code of a file export whose body gave `r` (see `export::outcome`).
pub fn outcome(r: std::thread::Result<MpiResult<()>>, fh: usize, call: &str) -> c_int {
    match r {
        Ok(Ok(())) => 0,
        Ok(Err(e)) => {
            let h = handler_of(fh);
            super::export::apply_handler(h, fh, call, e.class, &e.msg)
        }
        Err(p) => super::export::outcome(Err(p), c::MPI_COMM_WORLD, call),
    }
}

fn handler_of(fh: usize) -> usize {
    let sub = crate::sched::rank();
    if let Some(Some(f)) = fh.checked_sub(FILE_BASE).and_then(|i| FILES.lock().get(i).cloned()) {
        if f.owner == sub {
            return f.st.lock().errh;
        }
    }
    null_handler(sub)
}

/// Where the collective steps' buffers start, for our own exports. The C API reads two
/// addresses as markers: 0 is MPI_BOTTOM and 1 is MPI_IN_PLACE (`headers/mpi.h`), and an empty
/// Rust vector of bytes has the dangling address 1. Handed over as it is, a rank with nothing
/// to send called an in-place collective and sent its receive buffer instead (issue 19: a
/// wrong Alltoallv_c, MPI_ERR_TRUNCATE or wrong data, in two-phase I/O). An empty buffer
/// gets the address of a real (never written) static instead.
fn c_ptr<T>(v: &[T]) -> *const c_void {
    static EMPTY: u64 = 0;
    if v.is_empty() {
        std::ptr::addr_of!(EMPTY).cast()
    } else {
        v.as_ptr().cast()
    }
}

/// `c_ptr` for a buffer the export writes (nothing is written through an empty one).
fn c_mut_ptr<T>(v: &mut [T]) -> *mut c_void {
    c_ptr(v) as *mut c_void
}

/// An error code returned by one of our own exports called for a collective step.
pub(super) fn rc(what: &str, r: c_int) -> MpiResult<()> {
    if r == 0 {
        Ok(())
    } else {
        err(r, format!("{what} failed inside the file operation"))
    }
}

pub(super) fn barrier(comm: usize) -> MpiResult<()> {
    // SAFETY: `comm` is a communicator handle of the running rank.
    rc("MPI_Barrier", unsafe { ffi::PMPI_Barrier(comm) })
}

/// In-place allreduce of `v` (64-bit integers) with `op`.
pub(super) fn allreduce(comm: usize, v: &mut [i64], op: usize) -> MpiResult<()> {
    let src = v.to_vec();
    // SAFETY: both buffers hold v.len() 64-bit integers.
    rc("MPI_Allreduce", unsafe {
        ffi::PMPI_Allreduce(c_ptr(&src), c_mut_ptr(v), v.len() as c_int, c::MPI_INT64_T, op, comm)
    })
}

pub(super) fn bcast(comm: usize, v: &mut [u8], root: i32) -> MpiResult<()> {
    // SAFETY: `v` is a writable buffer of v.len() bytes.
    rc("MPI_Bcast", unsafe {
        ffi::PMPI_Bcast(c_mut_ptr(v), v.len() as c_int, c::MPI_BYTE, root, comm)
    })
}

/// Every rank's `mine` (all the same length), in rank order.
pub(super) fn allgather(comm: usize, size: usize, mine: &[u64]) -> MpiResult<Vec<u64>> {
    let mut out = vec![0u64; mine.len() * size];
    // SAFETY: `out` has room for `size` contributions of mine.len() integers.
    rc("MPI_Allgather", unsafe {
        ffi::PMPI_Allgather(
            c_ptr(mine),
            mine.len() as c_int,
            c::MPI_UINT64_T,
            c_mut_ptr(&mut out),
            mine.len() as c_int,
            c::MPI_UINT64_T,
            comm,
        )
    })?;
    Ok(out)
}

/// Tag of the file layer's own point-to-point messages on a file's duplicate communicator.
const TAG_EXCHANGE: c_int = 0x1f19;

/// Sends `send[r]` to rank r and returns what each rank sent here: the sizes go by one
/// all-to-all, then only the non-empty parts travel, as point-to-point messages (between
/// aggregators and the ranks that have pieces for them, most pairs exchange nothing).
/// Not one MPI_Alltoallv_c (which works since `c_ptr`): between processes it posts a
/// message for every pair, n² of them, and it would need the pieces packed into one buffer
/// and unpacked again, a copy each way.
///
/// The results go into `out` (one vector per rank), whose buffers are reused: a collective
/// access calls this every round, and fresh multi-MiB buffers would be faulted in and
/// cleared by the kernel each time.
pub(super) fn alltoallv(comm: usize, send: &[Vec<u8>], out: &mut Vec<Vec<u8>>) -> MpiResult<()> {
    let n = send.len();
    let sc: Vec<i64> = send.iter().map(|v| v.len() as i64).collect();
    let mut rcount = vec![0i64; n];
    // SAFETY: both arrays hold n 64-bit counts.
    rc("MPI_Alltoall", unsafe {
        ffi::PMPI_Alltoall(c_ptr(&sc), 1, c::MPI_INT64_T, c_mut_ptr(&mut rcount), 1, c::MPI_INT64_T, comm)
    })?;
    out.resize_with(n, Vec::new);
    for (v, &k) in out.iter_mut().zip(&rcount) {
        // Shrinking first keeps the old bytes (the message overwrites them): only growth is
        // cleared, not the whole buffer every round.
        v.truncate(k as usize);
        v.resize(k as usize, 0);
    }
    let mut reqs: Vec<usize> = Vec::new();
    for (r, v) in out.iter_mut().enumerate() {
        if !v.is_empty() {
            let mut q = 0usize;
            // SAFETY: `v` stays alive and untouched until the Waitall below.
            rc("MPI_Irecv_c", unsafe {
                ffi::PMPI_Irecv_c(c_mut_ptr(v), v.len() as i64, c::MPI_BYTE, r as c_int, TAG_EXCHANGE, comm, &mut q)
            })?;
            reqs.push(q);
        }
    }
    for (r, v) in send.iter().enumerate() {
        if !v.is_empty() {
            let mut q = 0usize;
            // SAFETY: `send` outlives the Waitall below.
            rc("MPI_Isend_c", unsafe {
                ffi::PMPI_Isend_c(c_ptr(v), v.len() as i64, c::MPI_BYTE, r as c_int, TAG_EXCHANGE, comm, &mut q)
            })?;
            reqs.push(q);
        }
    }
    if !reqs.is_empty() {
        // SAFETY: `reqs` holds the live requests just started; statuses are ignored (null).
        rc("MPI_Waitall", unsafe {
            ffi::PMPI_Waitall(reqs.len() as c_int, reqs.as_mut_ptr(), std::ptr::null_mut())
        })?;
    }
    Ok(())
}

/// All ranks passed the same value (`MPI_ERR_NOT_SAME` otherwise).
fn same(comm: usize, vals: &[i64], what: &str) -> MpiResult<()> {
    let mut v: Vec<i64> = vals.iter().copied().chain(vals.iter().map(|x| x.wrapping_neg())).collect();
    allreduce(comm, &mut v, c::MPI_MAX)?;
    let k = vals.len();
    if (0..k).all(|i| v[i] == vals[i] && v[k + i] == vals[i].wrapping_neg()) {
        Ok(())
    } else {
        err(c::MPI_ERR_NOT_SAME, format!("{what} differs between the ranks of the file's group"))
    }
}

unsafe fn cstr(p: *const c_char, what: &str) -> MpiResult<String> {
    if p.is_null() {
        return err(c::MPI_ERR_ARG, format!("null {what}"));
    }
    Ok(CStr::from_ptr(p).to_string_lossy().into_owned())
}

/// A file name without ROMIO's file-system prefix (`ufs:`, `nfs:`, ...).
fn plain_path(p: &str) -> &str {
    match p.split_once(':') {
        Some((fs, rest)) if fs.len() >= 2 && fs.chars().all(|ch| ch.is_ascii_alphanumeric()) && !fs.contains('/') => rest,
        _ => p,
    }
}

/// The key/value pairs of info `h` (none for `MPI_INFO_NULL`).
fn read_info(h: usize) -> MpiResult<Vec<(String, String)>> {
    if h == c::MPI_INFO_NULL {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    let mut n: c_int = 0;
    // SAFETY: `n` is writable.
    rc("MPI_Info_get_nkeys", unsafe { ffi::PMPI_Info_get_nkeys(h, &mut n) }).map_err(|e| MpiError::new(c::MPI_ERR_INFO, e.msg))?;
    for i in 0..n {
        let mut k = vec![0 as c_char; c::MPI_MAX_INFO_KEY as usize + 1];
        let (mut len, mut flag) = (0, 0);
        // SAFETY: `k` has room for any key and its NUL; the other pointers are writable.
        unsafe {
            rc("MPI_Info_get_nthkey", ffi::PMPI_Info_get_nthkey(h, i, k.as_mut_ptr()))?;
            rc(
                "MPI_Info_get_valuelen",
                ffi::PMPI_Info_get_valuelen(h, k.as_ptr(), &mut len, &mut flag),
            )?;
        }
        let mut v = vec![0 as c_char; len as usize + 1];
        // SAFETY: `v` has room for the value and its NUL.
        unsafe {
            rc("MPI_Info_get", ffi::PMPI_Info_get(h, k.as_ptr(), len, v.as_mut_ptr(), &mut flag))?;
            out.push((cstr(k.as_ptr(), "key")?, cstr(v.as_ptr(), "value")?));
        }
    }
    Ok(out)
}

fn check_amode(amode: i32) -> MpiResult<()> {
    let access = [c::MPI_MODE_RDONLY, c::MPI_MODE_RDWR, c::MPI_MODE_WRONLY]
        .iter()
        .filter(|&&m| amode & m != 0)
        .count();
    let known = c::MPI_MODE_RDONLY
        | c::MPI_MODE_RDWR
        | c::MPI_MODE_WRONLY
        | c::MPI_MODE_CREATE
        | c::MPI_MODE_EXCL
        | c::MPI_MODE_DELETE_ON_CLOSE
        | c::MPI_MODE_UNIQUE_OPEN
        | c::MPI_MODE_SEQUENTIAL
        | c::MPI_MODE_APPEND;
    let bad = if access != 1 {
        Some("exactly one of MPI_MODE_RDONLY, MPI_MODE_RDWR and MPI_MODE_WRONLY is required")
    } else if amode & !known != 0 {
        Some("unknown mode bits")
    } else if amode & c::MPI_MODE_RDONLY != 0 && amode & (c::MPI_MODE_CREATE | c::MPI_MODE_EXCL) != 0 {
        Some("MPI_MODE_CREATE and MPI_MODE_EXCL are not allowed with MPI_MODE_RDONLY")
    } else if amode & c::MPI_MODE_RDWR != 0 && amode & c::MPI_MODE_SEQUENTIAL != 0 {
        Some("MPI_MODE_SEQUENTIAL is not allowed with MPI_MODE_RDWR")
    } else {
        None
    };
    match bad {
        Some(m) => err(c::MPI_ERR_AMODE, format!("access mode {amode:#x}: {m}")),
        None => Ok(()),
    }
}

/// Creates the shared-pointer sidecar at rank 0 (beside the file, ROMIO's way, else in the
/// temporary directory) and opens it everywhere.
fn open_shared(comm: usize, rank: i32, size: i32, path: &str) -> MpiResult<SharedPtr> {
    if size == 1 {
        return Ok(SharedPtr::Mem(Lock::new(0)));
    }
    let mut name = [0u8; 4096];
    if rank == 0 {
        static SEQ: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let p = std::path::Path::new(path);
        let base = p.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let leaf = format!(
            ".{base}.toucan-shfp.{}.{}",
            std::process::id(),
            SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let dir = p
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(std::path::Path::new("."));
        for d in [dir.to_path_buf(), std::env::temp_dir()] {
            let cand = d.join(&leaf).to_string_lossy().into_owned();
            if let Ok(fd) = posix::open(&cand, libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC, 0o600) {
                drop(fd);
                if cand.len() < name.len() {
                    name[..cand.len()].copy_from_slice(cand.as_bytes());
                }
                break;
            }
        }
    }
    bcast(comm, &mut name, 0)?;
    let n = name.iter().position(|&b| b == 0).unwrap_or(0);
    if n == 0 {
        return Ok(SharedPtr::None("the sidecar file could not be created".into()));
    }
    let p = String::from_utf8_lossy(&name[..n]).into_owned();
    match posix::open(&p, libc::O_RDWR, 0) {
        Ok(fd) => Ok(SharedPtr::Side { fd, path: p }),
        Err(e) => Ok(SharedPtr::None(format!("the sidecar {p} cannot be opened: {e}"))),
    }
}

file_fn!(
    MPI_File_open,
    PMPI_File_open,
    |comm: usize, filename: *const c_char, amode: c_int, info: usize, fh: *mut usize| file = c::MPI_FILE_NULL,
    {
        let sub = me()?;
        if fh.is_null() {
            return err(c::MPI_ERR_ARG, "null file handle pointer");
        }
        *fh = c::MPI_FILE_NULL;
        let (_, cm) = hd::comm(comm)?;
        if cm.is_inter() {
            return err(c::MPI_ERR_COMM, "MPI_File_open needs an intra-communicator");
        }
        let name = cstr(filename, "file name")?;
        let path = plain_path(&name).to_string();
        check_amode(amode)?;
        let given = read_info(info)?;
        let mut dup = 0usize;
        rc("MPI_Comm_dup", ffi::PMPI_Comm_dup(comm, &mut dup))?;
        ffi::PMPI_Comm_set_errhandler(dup, c::MPI_ERRORS_RETURN);
        let (mut rank, mut size) = (0, 0);
        ffi::PMPI_Comm_rank(dup, &mut rank);
        ffi::PMPI_Comm_size(dup, &mut size);
        let fail = |mut d: usize, e: MpiError| -> MpiResult<()> {
            ffi::PMPI_Comm_free(&mut d);
            Err(e)
        };
        if let Err(e) = same(dup, &[amode as i64], "the access mode") {
            return fail(dup, e);
        }
        let access = if amode & c::MPI_MODE_RDONLY != 0 {
            libc::O_RDONLY
        } else if amode & c::MPI_MODE_WRONLY != 0 {
            libc::O_WRONLY
        } else {
            libc::O_RDWR
        };
        let perm = given
            .iter()
            .find(|e| e.0 == "file_perm")
            .and_then(|e| u32::from_str_radix(e.1.trim_start_matches("0o"), 8).ok())
            .unwrap_or(0o666);
        // Rank 0 creates; the others open what it created.
        let mut first: Option<Result<Fd, std::io::Error>> = None;
        let mut class = [0u8; 4];
        if rank == 0 {
            let mut fl = access;
            if amode & c::MPI_MODE_CREATE != 0 {
                fl |= libc::O_CREAT;
            }
            if amode & c::MPI_MODE_EXCL != 0 {
                fl |= libc::O_EXCL;
            }
            let r = posix::open(&path, fl, perm);
            if let Err(e) = &r {
                class = e.raw_os_error().map_or(c::MPI_ERR_IO, posix::class_of).to_le_bytes();
            }
            first = Some(r);
        }
        if let Err(e) = bcast(dup, &mut class, 0) {
            return fail(dup, e);
        }
        let k = i32::from_le_bytes(class);
        if k != 0 {
            let msg = match &first {
                Some(Err(e)) => format!("cannot open {path}: {e}"),
                _ => format!("cannot open {path} (rank 0 of the file's group could not)"),
            };
            return fail(dup, MpiError::new(k, msg));
        }
        let r = match first {
            Some(r) => r,
            None => posix::open(&path, access, 0),
        };
        let mut worst = [match &r {
            Ok(_) => 0i64,
            Err(e) => e.raw_os_error().map_or(c::MPI_ERR_IO, posix::class_of) as i64,
        }];
        if let Err(e) = allreduce(dup, &mut worst, c::MPI_MAX) {
            return fail(dup, e);
        }
        let fd = match r {
            Ok(fd) if worst[0] == 0 => fd,
            Ok(_) => return fail(dup, MpiError::new(worst[0] as i32, format!("another rank could not open {path}"))),
            Err(e) => return fail(dup, posix::error(&format!("cannot open {path}"), &e)),
        };
        let myproc = crate::core::state::with(|s| s.myproc as u64)?;
        let procs = match allgather(dup, size as usize, &[myproc]) {
            Ok(p) => p,
            Err(e) => return fail(dup, e),
        };
        let shared = match open_shared(dup, rank, size, &path) {
            Ok(s) => s,
            Err(e) => return fail(dup, e),
        };
        let mut fp = 0;
        if amode & c::MPI_MODE_APPEND != 0 {
            fp = posix::size(&fd).map_err(|e| posix::error("fstat", &e))?;
            if rank == 0 {
                shared.set(fp)?;
            }
            barrier(dup)?;
        }
        let errh = null_handler(sub);
        crate::core::errh::retain(errh);
        let obj = FileObj {
            owner: sub,
            fd: Arc::new(fd),
            path,
            amode,
            comm: dup,
            rank,
            size,
            procs,
            shared,
            st: Lock::new(FState {
                view: Arc::new(View::bytes()),
                fp,
                atomic: false,
                hints: Hints { given },
                errh,
                split: None,
            }),
        };
        let mut t = FILES.lock();
        let i = match t.iter().position(|x| x.is_none()) {
            Some(i) => i,
            None => {
                t.push(None);
                t.len() - 1
            }
        };
        t[i] = Some(Arc::new(obj));
        *fh = FILE_BASE + i;
        Ok(())
    }
);

file_fn!(
    MPI_File_close,
    PMPI_File_close,
    |fh: *mut usize| file = if fh.is_null() { c::MPI_FILE_NULL } else { *fh },
    {
        if fh.is_null() {
            return err(c::MPI_ERR_ARG, "null file handle pointer");
        }
        let f = file(*fh)?;
        barrier(f.comm)?;
        FILES.lock()[*fh - FILE_BASE] = None;
        let f = match Arc::try_unwrap(f) {
            Ok(f) => f,
            Err(f) => f.as_ref().clone_for_close(),
        };
        let mut res = Ok(());
        if f.rank == 0 {
            if let SharedPtr::Side { path, .. } = &f.shared {
                let _ = posix::unlink(path);
            }
            if f.amode & c::MPI_MODE_DELETE_ON_CLOSE != 0 {
                if let Err(e) = posix::unlink(&f.path) {
                    res = Err(posix::error(&format!("cannot delete {}", f.path), &e));
                }
            }
        }
        let mut comm = f.comm;
        drop(f);
        barrier(comm)?;
        ffi::PMPI_Comm_free(&mut comm);
        *fh = c::MPI_FILE_NULL;
        res
    }
);

impl FileObj {
    /// What `MPI_File_close` needs of a file still referenced elsewhere (a pending
    /// nonblocking access: erroneous, but the data stay valid through its own `Arc`s).
    fn clone_for_close(&self) -> FileObj {
        FileObj {
            owner: self.owner,
            fd: self.fd.clone(),
            path: self.path.clone(),
            amode: self.amode,
            comm: self.comm,
            rank: self.rank,
            size: self.size,
            procs: Vec::new(),
            shared: match &self.shared {
                SharedPtr::Side { path, .. } => SharedPtr::None(path.clone()),
                _ => SharedPtr::None(String::new()),
            },
            st: Lock::new(FState {
                view: Arc::new(View::bytes()),
                fp: 0,
                atomic: false,
                hints: Hints { given: Vec::new() },
                errh: c::MPI_ERRORS_RETURN,
                split: None,
            }),
        }
    }
}

file_fn!(
    MPI_File_delete,
    PMPI_File_delete,
    |filename: *const c_char, info: usize| file = c::MPI_FILE_NULL,
    {
        me()?;
        let name = cstr(filename, "file name")?;
        if info != c::MPI_INFO_NULL {
            super::info::check(info)?;
        }
        posix::unlink(plain_path(&name)).map_err(|e| posix::error(&format!("cannot delete {name}"), &e))
    }
);

fn writable(f: &FileObj) -> MpiResult<()> {
    if f.amode & c::MPI_MODE_RDONLY != 0 {
        return err(c::MPI_ERR_READ_ONLY, "the file was opened read-only");
    }
    Ok(())
}

/// Runs `op` at rank 0 of the file's group; everyone returns its outcome.
fn at_root(f: &FileObj, op: impl FnOnce() -> MpiResult<()>) -> MpiResult<()> {
    let mut res = Ok(());
    let mut class = [0u8; 4];
    if f.rank == 0 {
        res = op();
        if let Err(e) = &res {
            class = e.class.to_le_bytes();
        }
    }
    bcast(f.comm, &mut class, 0)?;
    let k = i32::from_le_bytes(class);
    match (res, k) {
        (Err(e), _) => Err(e),
        (Ok(()), 0) => Ok(()),
        (Ok(()), k) => err(k, "the operation failed at rank 0 of the file's group"),
    }
}

file_fn!(MPI_File_set_size, PMPI_File_set_size, |fh: usize, size: i64| file = fh, {
    let f = file(fh)?;
    if size < 0 {
        return err(c::MPI_ERR_ARG, format!("negative file size {size}"));
    }
    writable(&f)?;
    same(f.comm, &[size], "the size")?;
    let fd = f.fd.clone();
    at_root(&f, || {
        crate::core::io::ioq::run(move || posix::truncate(&fd, size as u64))?.map_err(|e| posix::error("ftruncate", &e))
    })
});

file_fn!(MPI_File_preallocate, PMPI_File_preallocate, |fh: usize, size: i64| file = fh, {
    let f = file(fh)?;
    if size < 0 {
        return err(c::MPI_ERR_ARG, format!("negative file size {size}"));
    }
    writable(&f)?;
    same(f.comm, &[size], "the size")?;
    let fd = f.fd.clone();
    at_root(&f, || {
        crate::core::io::ioq::run(move || posix::preallocate(&fd, size as u64))?.map_err(|e| posix::error("posix_fallocate", &e))
    })
});

file_fn!(MPI_File_get_group, PMPI_File_get_group, |fh: usize, group: *mut usize| file = fh, {
    let f = file(fh)?;
    hd::out(group, "group")?;
    rc("MPI_Comm_group", ffi::PMPI_Comm_group(f.comm, group))
});

fn aggregators(f: &FileObj) -> usize {
    let mut p = f.procs.clone();
    p.sort_unstable();
    p.dedup();
    p.len().max(1)
}

file_fn!(MPI_File_set_info, PMPI_File_set_info, |fh: usize, info: usize| file = fh, {
    let f = file(fh)?;
    let more = read_info(info)?;
    f.st.lock().hints.merge(more);
    Ok(())
});

file_fn!(MPI_File_get_info, PMPI_File_get_info, |fh: usize, info: *mut usize| file = fh, {
    let f = file(fh)?;
    hd::out(info, "info")?;
    let pairs = f.st.lock().hints.report(aggregators(&f));
    let mut h = 0usize;
    rc("MPI_Info_create", ffi::PMPI_Info_create(&mut h))?;
    for (k, v) in pairs {
        let (k, v) = (
            std::ffi::CString::new(k).unwrap_or_default(),
            std::ffi::CString::new(v).unwrap_or_default(),
        );
        rc("MPI_Info_set", ffi::PMPI_Info_set(h, k.as_ptr(), v.as_ptr()))?;
    }
    *info = h;
    Ok(())
});

file_fn!(
    MPI_File_set_view,
    PMPI_File_set_view,
    |fh: usize, disp: i64, etype: usize, filetype: usize, datarep: *const c_char, info: usize| file = fh,
    {
        let f = file(fh)?;
        let rep = Rep::parse(&cstr(datarep, "data representation")?)?;
        let et = hd::dtype(etype)?;
        let ft = hd::dtype(filetype)?;
        let disp = if disp == c::MPI_DISPLACEMENT_CURRENT as i64 {
            if f.amode & c::MPI_MODE_SEQUENTIAL == 0 {
                return err(
                    c::MPI_ERR_ARG,
                    "MPI_DISPLACEMENT_CURRENT is only for files opened with MPI_MODE_SEQUENTIAL",
                );
            }
            let v = f.st.lock().view.clone();
            v.byte_offset(f.shared.get()? * v.esize)?
        } else if disp < 0 {
            return err(c::MPI_ERR_ARG, format!("negative displacement {disp}"));
        } else {
            disp as u64
        };
        let v = View::checked(disp, et, ft, rep, f.amode & c::MPI_MODE_RDONLY != 0)?;
        let more = read_info(info)?;
        {
            let mut s = f.st.lock();
            s.view = Arc::new(v);
            s.fp = 0;
            s.hints.merge(more);
        }
        barrier(f.comm)?;
        if f.rank == 0 {
            f.shared
                .set(0)
                .or_else(|e| if matches!(f.shared, SharedPtr::None(_)) { Ok(()) } else { Err(e) })?;
        }
        barrier(f.comm)
    }
);

/// A handle for `d` to give back to the program (`MPI_File_get_view`): predefined types as
/// they are, derived ones as a new handle the program frees.
fn give_type(d: &crate::core::datatype::DtRef) -> MpiResult<usize> {
    match d.predefined_handle() {
        Some(h) => Ok(h),
        None => crate::core::datatype::register(d.clone()),
    }
}

file_fn!(
    MPI_File_get_view,
    PMPI_File_get_view,
    |fh: usize, disp: *mut i64, etype: *mut usize, filetype: *mut usize, datarep: *mut c_char| file = fh,
    {
        let f = file(fh)?;
        hd::out(disp, "disp")?;
        hd::out(etype, "etype")?;
        hd::out(filetype, "filetype")?;
        if datarep.is_null() {
            return err(c::MPI_ERR_ARG, "null datarep");
        }
        let v = f.st.lock().view.clone();
        *disp = v.disp as i64;
        *etype = give_type(&v.etype)?;
        *filetype = give_type(&v.filetype)?;
        let name = v.rep.name();
        let name = &name.as_bytes()[..name.len().min(c::MPI_MAX_DATAREP_STRING as usize - 1)];
        std::ptr::copy_nonoverlapping(name.as_ptr(), datarep as *mut u8, name.len());
        *datarep.add(name.len()) = 0;
        Ok(())
    }
);

file_fn!(
    MPI_File_get_type_extent,
    PMPI_File_get_type_extent,
    |fh: usize, dt: usize, extent: *mut isize| file = fh,
    {
        *extent = type_extent(fh, dt, extent as *mut c_void)? as isize;
        Ok(())
    }
);

file_fn!(
    MPI_File_get_type_extent_c,
    PMPI_File_get_type_extent_c,
    |fh: usize, dt: usize, extent: *mut i64| file = fh,
    {
        *extent = type_extent(fh, dt, extent as *mut c_void)?;
        Ok(())
    }
);

unsafe fn type_extent(fh: usize, dt: usize, out: *mut c_void) -> MpiResult<i64> {
    let f = file(fh)?;
    hd::out(out, "extent")?;
    let d = crate::core::datatype::lookup(dt)?;
    let rep = f.st.lock().view.rep;
    Ok(view::file_extent(&d, rep)? as i64)
}

file_fn!(
    MPI_File_set_atomicity,
    PMPI_File_set_atomicity,
    |fh: usize, flag: c_int| file = fh,
    {
        let f = file(fh)?;
        same(f.comm, &[(flag != 0) as i64], "the atomicity flag")?;
        f.st.lock().atomic = flag != 0;
        Ok(())
    }
);

file_fn!(MPI_File_sync, PMPI_File_sync, |fh: usize| file = fh, {
    let f = file(fh)?;
    let fd = f.fd.clone();
    let r = crate::core::io::ioq::run(move || posix::sync(&fd))?;
    barrier(f.comm)?;
    r.map_err(|e| posix::error("fsync", &e))
});

/// The queries that store one value of the file: the `before` check if any (its error comes
/// before the output pointer is looked at), then the value into `*$out`.
macro_rules! file_get {
    ($(($name:ident, $pname:ident, $out:ident: $t:ty, |$f:ident| $val:expr $(, before $check:expr)?)),* $(,)?) => {
        $(file_fn!($name, $pname, |fh: usize, $out: *mut $t| file = fh, {
            let $f = file(fh)?;
            $($check?;)?
            let o = hd::out($out, stringify!($out))?;
            *o = $val;
            Ok(())
        });)*
    };
}
file_get!(
    (MPI_File_get_size, PMPI_File_get_size, size: i64, |f| posix::size(&f.fd).map_err(|e| posix::error("fstat", &e))? as i64),
    (MPI_File_get_amode, PMPI_File_get_amode, amode: c_int, |f| f.amode),
    (MPI_File_get_atomicity, PMPI_File_get_atomicity, flag: c_int, |f| f.st.lock().atomic as c_int),
    (MPI_File_get_position, PMPI_File_get_position, offset: i64, |f| f.st.lock().fp as i64, before not_sequential(&f)),
    (MPI_File_get_position_shared, PMPI_File_get_position_shared, offset: i64, |f| f.shared.get()? as i64),
);

/// Seek positions (`MPI_SEEK_*`) to an etype offset from `cur` and the view's end of file.
fn seek_to(f: &FileObj, cur: u64, offset: i64, whence: c_int) -> MpiResult<u64> {
    let base = match whence {
        w if w == c::MPI_SEEK_SET => 0,
        w if w == c::MPI_SEEK_CUR => cur as i64,
        w if w == c::MPI_SEEK_END => {
            let v = f.st.lock().view.clone();
            let size = posix::size(&f.fd).map_err(|e| posix::error("fstat", &e))?;
            v.data_before(size).div_ceil(v.esize) as i64
        }
        _ => return err(c::MPI_ERR_ARG, format!("invalid whence {whence}")),
    };
    match base.checked_add(offset) {
        Some(p) if p >= 0 => Ok(p as u64),
        _ => err(c::MPI_ERR_ARG, format!("seek to a negative position ({base} + {offset})")),
    }
}

fn not_sequential(f: &FileObj) -> MpiResult<()> {
    if f.amode & c::MPI_MODE_SEQUENTIAL != 0 {
        return err(
            c::MPI_ERR_UNSUPPORTED_OPERATION,
            "individual file pointers and explicit offsets are not allowed on a file opened with MPI_MODE_SEQUENTIAL",
        );
    }
    Ok(())
}

file_fn!(MPI_File_seek, PMPI_File_seek, |fh: usize, offset: i64, whence: c_int| file = fh, {
    let f = file(fh)?;
    not_sequential(&f)?;
    let cur = f.st.lock().fp;
    let p = seek_to(&f, cur, offset, whence)?;
    f.st.lock().fp = p;
    Ok(())
});

file_fn!(
    MPI_File_seek_shared,
    PMPI_File_seek_shared,
    |fh: usize, offset: i64, whence: c_int| file = fh,
    {
        let f = file(fh)?;
        same(f.comm, &[offset, whence as i64], "the offset or whence")?;
        barrier(f.comm)?;
        let r = if f.rank == 0 {
            f.shared
                .get()
                .and_then(|cur| seek_to(&f, cur, offset, whence))
                .and_then(|p| f.shared.set(p))
        } else {
            Ok(())
        };
        let mut class = [r.as_ref().err().map_or(0, |e| e.class as i64)];
        allreduce(f.comm, &mut class, c::MPI_MAX)?;
        r?;
        if class[0] != 0 {
            return err(class[0] as i32, "MPI_File_seek_shared failed at rank 0 of the file's group");
        }
        Ok(())
    }
);

file_fn!(
    MPI_File_get_byte_offset,
    PMPI_File_get_byte_offset,
    |fh: usize, offset: i64, disp: *mut i64| file = fh,
    {
        let f = file(fh)?;
        not_sequential(&f)?;
        hd::out(disp, "disp")?;
        if offset < 0 {
            return err(c::MPI_ERR_ARG, format!("negative offset {offset}"));
        }
        let v = f.st.lock().view.clone();
        *disp = v.byte_offset(offset as u64 * v.esize)? as i64;
        Ok(())
    }
);

// ---- error handlers on files ----

file_fn!(
    MPI_File_create_errhandler,
    PMPI_File_create_errhandler,
    |func: Option<crate::core::errh::ErrFn>, eh: *mut usize| file = c::MPI_FILE_NULL,
    {
        hd::out(eh, "errhandler")?;
        match func {
            Some(f) => {
                *eh = crate::core::errh::create(f);
                Ok(())
            }
            None => err(c::MPI_ERR_ARG, "null error handler function"),
        }
    }
);

file_fn!(
    MPI_File_set_errhandler,
    PMPI_File_set_errhandler,
    |fh: usize, eh: usize| file = fh,
    {
        let sub = me()?;
        if !crate::core::errh::is_valid(eh) {
            return err(
                c::MPI_ERR_ARG,
                format!("invalid error handler {eh:#x} (freed, or not an error handler)"),
            );
        }
        crate::core::errh::retain(eh);
        if fh == c::MPI_FILE_NULL {
            NULL_ERRH.lock().get_or_insert_with(HashMap::new).insert(sub, eh);
            return Ok(());
        }
        let f = file(fh)?;
        f.st.lock().errh = eh;
        Ok(())
    }
);

file_fn!(
    MPI_File_get_errhandler,
    PMPI_File_get_errhandler,
    |fh: usize, eh: *mut usize| file = fh,
    {
        let sub = me()?;
        hd::out(eh, "errhandler")?;
        let h = if fh == c::MPI_FILE_NULL {
            null_handler(sub)
        } else {
            file(fh)?.st.lock().errh
        };
        crate::core::errh::retain(h);
        *eh = h;
        Ok(())
    }
);

#[no_mangle]
pub unsafe extern "C" fn PMPI_File_call_errhandler(fh: usize, code: c_int) -> c_int {
    crate::core::deadlock::enter("MPI_File_call_errhandler");
    if fh != c::MPI_FILE_NULL && file(fh).is_err() {
        let e = MpiError::new(c::MPI_ERR_FILE, format!("invalid file handle {fh:#x}"));
        return super::export::apply_handler(
            handler_of(c::MPI_FILE_NULL),
            c::MPI_FILE_NULL,
            "MPI_File_call_errhandler",
            e.class,
            &e.msg,
        );
    }
    let text = crate::core::error::class_text(code);
    super::export::apply_handler(handler_of(fh), fh, "MPI_File_call_errhandler", code, text);
    c::MPI_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn MPI_File_call_errhandler(fh: usize, code: c_int) -> c_int {
    PMPI_File_call_errhandler(fh, code)
}

#[cfg(test)]
mod tests {
    use super::{c, c_mut_ptr, c_ptr};
    use rstest::rstest;

    /// An empty buffer never reaches our exports as MPI_BOTTOM or MPI_IN_PLACE (issue 19).
    #[rstest]
    #[case(0)]
    #[case(1)]
    #[case(24)]
    fn buffers_are_never_markers(#[case] n: usize) {
        let mut v = vec![7u8; n];
        for p in [c_ptr(&v) as usize, c_mut_ptr(&mut v) as usize] {
            assert_ne!(p, 0);
            assert_ne!(p, c::MPI_IN_PLACE_ADDR);
        }
        if n > 0 {
            assert_eq!(c_ptr(&v), v.as_ptr().cast());
        }
        let empty: Vec<i64> = Vec::new();
        assert_ne!(c_ptr(&empty) as usize, c::MPI_IN_PLACE_ADDR);
    }
}
