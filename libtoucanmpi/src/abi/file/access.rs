//! Data access (MPI 4.1 section 14.4): explicit offsets, individual and shared file pointers;
//! blocking, nonblocking and split collective; independent and collective (`twophase`).
//!
//! The program's data become a *stream* of bytes in the file's representation (packed from a
//! derived datatype, or converted to external32); the view maps stream positions to file
//! extents (`core::io::view`). Blocking accesses run on the I/O thread when the process has
//! other subranks (`core::io::ioq::run`); nonblocking ones always do, and complete their
//! request from there. Nonblocking collective accesses (`MPI_File_iwrite_all`, ...) run as
//! nonblocking independent ones: with explicit offsets or individual pointers their outcome is
//! the same, and no rank waits for another. Split collectives run the blocking collective in
//! their begin call, as the standard allows (MPI 4.1 section 14.4.5).

use super::datarep;
use super::{file, not_sequential, twophase, FileObj, Split};
use crate::abi::consts as c;
use crate::abi::handles::{self as hd, me};
use crate::abi::status::{store, MpiStatus};
use crate::core::datatype::{external32, DtRef};
use crate::core::error::{err, MpiError, MpiResult};
use crate::core::io::ioq;
use crate::core::io::posix::{self, Fd};
use crate::core::io::view::{self, Rep, View};
use crate::core::request::Status;
use crate::core::state;
use std::os::raw::c_void;
use std::sync::Arc;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Dir {
    Read,
    Write,
}

/// Where an access starts.
#[derive(Clone, Copy, Debug)]
pub(super) enum Pos {
    At(i64),
    Indiv,
    Shared,
    Ordered,
}

/// A checked access: the file, its view, the program's buffer and the stream length.
pub(super) struct Plan {
    pub f: Arc<FileObj>,
    pub view: Arc<View>,
    pub dir: Dir,
    pub buf: usize,
    pub count: usize,
    pub dt: DtRef,
    /// The program's handle of `dt` (what a user representation's conversion is given).
    pub dth: usize,
    /// Stream bytes (file representation).
    pub len: u64,
}

/// Checks an access's arguments.
pub(super) unsafe fn plan(fh: usize, dir: Dir, buf: *mut c_void, count: i64, dt: usize) -> MpiResult<Plan> {
    let f = file(fh)?;
    match dir {
        Dir::Read if f.amode & c::MPI_MODE_WRONLY != 0 => return err(c::MPI_ERR_ACCESS, "read from a file opened write-only"),
        Dir::Write if f.amode & c::MPI_MODE_RDONLY != 0 => return err(c::MPI_ERR_READ_ONLY, "write to a file opened read-only"),
        _ => {}
    }
    let count = hd::count(count)?;
    let d = hd::dtype(dt)?;
    hd::buffer(buf as *const u8, count, &d)?;
    let view = f.st.lock().view.clone();
    let len = match view.rep {
        Rep::External32 => external32::size(&d, count),
        Rep::User(_) => view::file_size(&d, view.rep)?.checked_mul(count),
        _ => d.size.checked_mul(count),
    }
    .ok_or_else(|| MpiError::new(c::MPI_ERR_ARG, "access too large"))? as u64;
    if !len.is_multiple_of(view.esize) {
        return err(
            c::MPI_ERR_IO,
            format!("{len} bytes of data are not a whole number of etypes of {} bytes", view.esize),
        );
    }
    Ok(Plan {
        f,
        view,
        dir,
        buf: buf as usize,
        count,
        dt: d,
        dth: dt,
        len,
    })
}

impl Plan {
    pub fn direct(&self) -> bool {
        self.view.rep.is_native() && self.dt.is_contiguous()
    }

    /// The stream of a write, when it must be built (packed or converted); None when the
    /// program's buffer is the stream.
    pub unsafe fn gather(&self) -> MpiResult<Option<Vec<u8>>> {
        if self.dir == Dir::Read || self.direct() {
            return Ok(None);
        }
        if let Rep::User(id) = self.view.rep {
            return datarep::to_file(id, self.buf, self.dth, &self.dt, self.count, self.len as usize).map(Some);
        }
        let mut out = vec![0u8; self.len as usize];
        let p = self.buf as *const u8;
        if self.view.rep == Rep::External32 {
            external32::pack(&self.dt, p, self.count, &mut out);
        } else {
            self.dt.pack_to(p, self.count, out.as_mut_ptr());
        }
        Ok(Some(out))
    }

    /// Memory bytes of `n` stream bytes (what the status counts).
    fn mem_bytes(&self, n: u64) -> u64 {
        mem_bytes(&self.dt, self.view.rep, n)
    }
}

/// Memory bytes of `n` stream bytes of `dt` in representation `rep` (whole elements, when
/// their sizes differ).
fn mem_bytes(dt: &DtRef, rep: Rep, n: u64) -> u64 {
    if rep.is_native() {
        return n;
    }
    let one = view::file_size(dt, rep).unwrap_or(dt.size).max(1) as u64;
    n / one * dt.size as u64
}

/// One independent access, owning what it needs: runs on the I/O thread or in place.
pub(super) struct Job {
    fd: Arc<Fd>,
    segs: Vec<(u64, u64)>,
    dir: Dir,
    atomic: bool,
    buf: usize,
    count: usize,
    dt: DtRef,
    rep: Rep,
    len: u64,
    direct: bool,
    data: Option<Vec<u8>>,
    /// Data-sieving window of a read (0: none; `Hints::ds_read_window`), or of a write
    /// (`Hints::ds_write_window`; 0: no sieving and no locks).
    sieve: u64,
}

impl Job {
    pub(super) unsafe fn new(p: &Plan, start: u64) -> MpiResult<Job> {
        let segs = p.view.segments(start, p.len)?;
        let (atomic, sieve) = {
            let s = p.f.st.lock();
            let w = match p.dir {
                Dir::Read => s.hints.ds_read_window(),
                Dir::Write => s.hints.ds_write_window_for(p.f.amode),
            };
            (s.atomic, w)
        };
        Ok(Job {
            fd: p.f.fd.clone(),
            segs,
            dir: p.dir,
            atomic,
            buf: p.buf,
            count: p.count,
            dt: p.dt.clone(),
            rep: p.view.rep,
            len: p.len,
            direct: p.direct(),
            data: p.gather()?,
            sieve,
        })
    }

    /// Reads the job's extents into `out` (sieved when its window allows).
    fn read(&self, out: &mut [u8]) -> MpiResult<usize> {
        if self.sieve > 0 {
            posix::read_segments_sieved(&self.fd, &self.segs, out, self.sieve)
        } else {
            posix::read_segments(&self.fd, &self.segs, out)
        }
        .map_err(|e| posix::error("read", &e))
    }

    /// Does the access: the stream bytes moved, and for a read in a user representation the
    /// bytes read, which the calling rank converts (`converted`).
    ///
    /// # Safety
    /// The program's buffer (`buf`, `count`, `dt`) is valid for the access until it returns
    /// (MPI forbids touching it before the access completes).
    pub(super) unsafe fn run(self) -> MpiResult<(u64, Option<Vec<u8>>)> {
        let span = match (self.segs.first(), self.segs.last()) {
            (Some(a), Some(b)) => Some((a.0, b.0 + b.1 - a.0)),
            _ => None,
        };
        let _lock = match span {
            Some((lo, n)) if self.atomic => {
                Some(posix::lock(&self.fd, self.dir == Dir::Write, lo, n).map_err(|e| posix::error("fcntl lock", &e))?)
            }
            _ => None,
        };
        let len = self.len as usize;
        match self.dir {
            Dir::Write => {
                let data: &[u8] = match &self.data {
                    Some(v) => v,
                    None if len == 0 => &[],
                    // SAFETY: the buffer holds `len` contiguous bytes (direct access).
                    None => std::slice::from_raw_parts(self.buf as *const u8, len),
                };
                if self.sieve > 0 {
                    // In atomic mode the lock above covers the whole access already.
                    posix::write_segments_sieved(&self.fd, &self.segs, data, self.sieve, !self.atomic)
                } else {
                    posix::write_segments(&self.fd, &self.segs, data)
                }
                .map_err(|e| posix::error("write", &e))?;
                Ok((self.len, None))
            }
            Dir::Read => {
                if self.direct {
                    if len == 0 {
                        return Ok((0, None));
                    }
                    // SAFETY: the buffer has room for `len` contiguous bytes (direct access).
                    let out = std::slice::from_raw_parts_mut(self.buf as *mut u8, len);
                    let n = self.read(out)?;
                    return Ok((n as u64, None));
                }
                let mut tmp = vec![0u8; len];
                let n = self.read(&mut tmp)?;
                if let Rep::User(_) = self.rep {
                    // Converted by the calling rank (`converted`), not on the I/O thread.
                    tmp.truncate(n);
                    return Ok((n as u64, Some(tmp)));
                }
                scatter(&self.dt, self.rep, &tmp[..n], self.buf, self.count);
                Ok((n as u64, None))
            }
        }
    }
}

/// Copies stream bytes read into the program's buffer (unpacking or converting).
///
/// # Safety
/// `buf` has room for `count` elements of `dt`.
pub(super) unsafe fn scatter(dt: &DtRef, rep: Rep, data: &[u8], buf: usize, count: usize) {
    if rep == Rep::External32 {
        let one = external32::size(dt, 1).unwrap_or(dt.size).max(1);
        let whole = (data.len() / one).min(count);
        external32::unpack(dt, &data[..whole * one], buf as *mut u8, whole);
    } else {
        dt.unpack(data, buf as *mut u8, count);
    }
}

fn status(bytes: u64) -> Status {
    Status { bytes, ..Status::empty() }
}

/// The stream position where an access at `pos` starts (claiming shared-pointer space and
/// moving the individual pointer by `len` as it goes).
fn start_of(p: &Plan, pos: Pos) -> MpiResult<u64> {
    let es = p.view.esize;
    match pos {
        Pos::At(off) => {
            not_sequential(&p.f)?;
            if off < 0 {
                return err(c::MPI_ERR_ARG, format!("negative offset {off}"));
            }
            (off as u64)
                .checked_mul(es)
                .ok_or_else(|| MpiError::new(c::MPI_ERR_ARG, "offset too large"))
        }
        Pos::Indiv => {
            not_sequential(&p.f)?;
            let mut s = p.f.st.lock();
            let at = s.fp;
            s.fp += p.len / es;
            Ok(at * es)
        }
        Pos::Shared => Ok(p.f.shared.fetch_add(p.len / es)? * es),
        Pos::Ordered => unreachable!("ordered accesses are collective"),
    }
}

/// Independent blocking access.
pub(super) unsafe fn independent(p: &Plan, pos: Pos) -> MpiResult<Status> {
    let start = start_of(p, pos)?;
    let job = Job::new(p, start)?;
    let wrapped = SendJob(job);
    let (n, raw) = ioq::run(move || {
        let j = wrapped;
        // SAFETY: the calling rank waits (parked) until the job is done, so its buffer stays valid.
        unsafe { j.0.run() }
    })??;
    converted(p, raw)?;
    if let Pos::Indiv = pos {
        if n < p.len {
            // A read that met the end of file moves the pointer only past what it read.
            p.f.st.lock().fp = (start + n) / p.view.esize;
        }
    }
    Ok(status(p.mem_bytes(n)))
}

/// Converts what a read in a user representation brought (in the calling rank).
unsafe fn converted(p: &Plan, raw: Option<Vec<u8>>) -> MpiResult<()> {
    match (raw, p.view.rep) {
        (Some(mut v), Rep::User(id)) => datarep::from_file(id, &mut v, p.buf, p.dth, &p.dt, p.count),
        _ => Ok(()),
    }
}

/// A job moved to the I/O thread.
struct SendJob(Job);
// SAFETY: a Job holds the program's buffer as an address only; the program may not touch the
// buffer until the access completes, and the Arcs it holds are Send.
unsafe impl Send for SendJob {}

/// Collective blocking access (every rank of the file's group calls it).
pub(super) unsafe fn collective(fh: usize, pos: Pos, dir: Dir, buf: *mut c_void, count: i64, dt: usize) -> MpiResult<Status> {
    // A rank whose arguments are wrong takes part with no data (so nobody hangs) and returns
    // its error; the others complete.
    let f = file(fh)?;
    let p = plan(fh, dir, buf, count, dt);
    let ok = p.as_ref().is_ok();
    let start = match (&p, pos) {
        (Ok(p), Pos::Ordered) => twophase::ordered_start(p, true)?,
        (Err(_), Pos::Ordered) => {
            twophase::ordered_start_none(&f)?;
            0
        }
        (Ok(p), pos) => match start_of(p, pos) {
            Ok(s) => s,
            Err(e) => {
                twophase::run(&f, None, 0)?;
                return Err(e);
            }
        },
        (Err(_), _) => 0,
    };
    if !ok {
        twophase::run(&f, None, 0)?;
        return Err(p.err().expect("failed plan"));
    }
    let p = p?;
    let n = twophase::run(&f, Some(&p), start)?;
    if let Pos::Indiv = pos {
        if n < p.len {
            p.f.st.lock().fp = (start + n) / p.view.esize;
        }
    }
    Ok(status(p.mem_bytes(n)))
}

/// Starts a nonblocking access; its request completes from the I/O thread.
pub(super) unsafe fn nonblocking(fh: usize, pos: Pos, dir: Dir, buf: *mut c_void, count: i64, dt: usize, req: *mut usize) -> MpiResult<()> {
    let sub = me()?;
    hd::out(req, "request")?;
    let p = plan(fh, dir, buf, count, dt)?;
    let start = start_of(&p, pos)?;
    let job = SendJob(Job::new(&p, start)?);
    let id = state::with(|s| s.new_request(sub, c::MPI_COMM_WORLD))?;
    let (rep, dt) = (p.view.rep, p.dt.clone());
    if let Rep::User(_) = rep {
        // The conversion must run in this rank: the access completes here (the standard lets
        // a nonblocking call complete before it returns); its outcome is the request's.
        let r = ioq::run(move || {
            let j = job;
            // SAFETY: this rank waits for the job, so its buffer stays valid.
            unsafe { j.0.run() }
        })
        .and_then(|r| r)
        .and_then(|(n, raw)| converted(&p, raw).map(|_| n));
        let st = match r {
            Ok(n) => status(mem_bytes(&dt, rep, n)),
            Err(e) => Status {
                error: e.class,
                ..Status::empty()
            },
        };
        state::with(|s| {
            if let Some(r) = s.req_mut(id) {
                r.status = st;
            }
            s.complete(id);
        })?;
        *req = id as usize;
        return Ok(());
    }
    ioq::submit(Box::new(move || {
        let j = job;
        // SAFETY: the program keeps the buffer valid until the request completes.
        let r = unsafe { j.0.run() };
        let st = match r {
            Ok((n, _)) => status(mem_bytes(&dt, rep, n)),
            Err(e) => Status {
                error: e.class,
                ..Status::empty()
            },
        };
        let _ = state::with(|s| {
            if let Some(r) = s.req_mut(id) {
                r.status = st;
            }
            s.complete(id);
        });
    }));
    *req = id as usize;
    Ok(())
}

pub(super) unsafe fn at_blocking(
    fh: usize,
    off: i64,
    buf: *mut c_void,
    count: i64,
    dt: usize,
    st: *mut MpiStatus,
    dir: Dir,
    coll: bool,
) -> MpiResult<()> {
    let s = if coll {
        collective(fh, Pos::At(off), dir, buf, count, dt)?
    } else {
        independent(&plan(fh, dir, buf, count, dt)?, Pos::At(off))?
    };
    store(st, &s);
    Ok(())
}

pub(super) unsafe fn fp_blocking(
    fh: usize,
    buf: *mut c_void,
    count: i64,
    dt: usize,
    st: *mut MpiStatus,
    dir: Dir,
    pos: Pos,
    coll: bool,
) -> MpiResult<()> {
    let s = if coll {
        collective(fh, pos, dir, buf, count, dt)?
    } else {
        independent(&plan(fh, dir, buf, count, dt)?, pos)?
    };
    store(st, &s);
    Ok(())
}

pub(super) unsafe fn at_nonblocking(
    fh: usize,
    off: i64,
    buf: *mut c_void,
    count: i64,
    dt: usize,
    req: *mut usize,
    dir: Dir,
) -> MpiResult<()> {
    nonblocking(fh, Pos::At(off), dir, buf, count, dt, req)
}

pub(super) unsafe fn fp_nonblocking(
    fh: usize,
    buf: *mut c_void,
    count: i64,
    dt: usize,
    req: *mut usize,
    dir: Dir,
    pos: Pos,
) -> MpiResult<()> {
    nonblocking(fh, pos, dir, buf, count, dt, req)
}

fn begin_split(f: &FileObj) -> MpiResult<()> {
    if f.st.lock().split.is_some() {
        return err(c::MPI_ERR_OTHER, "a split collective access is already active on this file");
    }
    Ok(())
}

pub(super) unsafe fn at_begin(fh: usize, off: i64, buf: *mut c_void, count: i64, dt: usize, dir: Dir) -> MpiResult<()> {
    let f = file(fh)?;
    begin_split(&f)?;
    let s = collective(fh, Pos::At(off), dir, buf, count, dt)?;
    f.st.lock().split = Some(Split {
        status: s,
        buf: buf as usize,
    });
    Ok(())
}

pub(super) unsafe fn fp_begin(fh: usize, buf: *mut c_void, count: i64, dt: usize, dir: Dir, pos: Pos) -> MpiResult<()> {
    let f = file(fh)?;
    begin_split(&f)?;
    let s = collective(fh, pos, dir, buf, count, dt)?;
    f.st.lock().split = Some(Split {
        status: s,
        buf: buf as usize,
    });
    Ok(())
}

pub(super) unsafe fn end(fh: usize, buf: *mut c_void, st: *mut MpiStatus) -> MpiResult<()> {
    let f = file(fh)?;
    let s =
        f.st.lock()
            .split
            .take()
            .ok_or_else(|| MpiError::new(c::MPI_ERR_OTHER, "no split collective access was begun on this file"))?;
    if s.buf != buf as usize {
        return err(c::MPI_ERR_BUFFER, "the end call's buffer is not the begin call's");
    }
    store(st, &s.status);
    Ok(())
}

use std::os::raw::c_int;
type St = *mut MpiStatus;
type Buf = *mut c_void;

// Explicit offsets.
file_c!(MPI_File_read_at, PMPI_File_read_at, MPI_File_read_at_c, PMPI_File_read_at_c,
    (fh: usize, off: i64, buf: Buf), count, (dt: usize, st: St), at_blocking, Dir::Read, false);
file_c!(MPI_File_write_at, PMPI_File_write_at, MPI_File_write_at_c, PMPI_File_write_at_c,
    (fh: usize, off: i64, buf: Buf), count, (dt: usize, st: St), at_blocking, Dir::Write, false);
file_c!(MPI_File_read_at_all, PMPI_File_read_at_all, MPI_File_read_at_all_c, PMPI_File_read_at_all_c,
    (fh: usize, off: i64, buf: Buf), count, (dt: usize, st: St), at_blocking, Dir::Read, true);
file_c!(MPI_File_write_at_all, PMPI_File_write_at_all, MPI_File_write_at_all_c, PMPI_File_write_at_all_c,
    (fh: usize, off: i64, buf: Buf), count, (dt: usize, st: St), at_blocking, Dir::Write, true);
file_c!(MPI_File_iread_at, PMPI_File_iread_at, MPI_File_iread_at_c, PMPI_File_iread_at_c,
    (fh: usize, off: i64, buf: Buf), count, (dt: usize, req: *mut usize), at_nonblocking, Dir::Read);
file_c!(MPI_File_iwrite_at, PMPI_File_iwrite_at, MPI_File_iwrite_at_c, PMPI_File_iwrite_at_c,
    (fh: usize, off: i64, buf: Buf), count, (dt: usize, req: *mut usize), at_nonblocking, Dir::Write);
file_c!(MPI_File_iread_at_all, PMPI_File_iread_at_all, MPI_File_iread_at_all_c, PMPI_File_iread_at_all_c,
    (fh: usize, off: i64, buf: Buf), count, (dt: usize, req: *mut usize), at_nonblocking, Dir::Read);
file_c!(MPI_File_iwrite_at_all, PMPI_File_iwrite_at_all, MPI_File_iwrite_at_all_c, PMPI_File_iwrite_at_all_c,
    (fh: usize, off: i64, buf: Buf), count, (dt: usize, req: *mut usize), at_nonblocking, Dir::Write);
file_c!(MPI_File_read_at_all_begin, PMPI_File_read_at_all_begin, MPI_File_read_at_all_begin_c, PMPI_File_read_at_all_begin_c,
    (fh: usize, off: i64, buf: Buf), count, (dt: usize), at_begin, Dir::Read);
file_c!(MPI_File_write_at_all_begin, PMPI_File_write_at_all_begin, MPI_File_write_at_all_begin_c, PMPI_File_write_at_all_begin_c,
    (fh: usize, off: i64, buf: Buf), count, (dt: usize), at_begin, Dir::Write);

// Individual file pointers.
file_c!(MPI_File_read, PMPI_File_read, MPI_File_read_c, PMPI_File_read_c,
    (fh: usize, buf: Buf), count, (dt: usize, st: St), fp_blocking, Dir::Read, Pos::Indiv, false);
file_c!(MPI_File_write, PMPI_File_write, MPI_File_write_c, PMPI_File_write_c,
    (fh: usize, buf: Buf), count, (dt: usize, st: St), fp_blocking, Dir::Write, Pos::Indiv, false);
file_c!(MPI_File_read_all, PMPI_File_read_all, MPI_File_read_all_c, PMPI_File_read_all_c,
    (fh: usize, buf: Buf), count, (dt: usize, st: St), fp_blocking, Dir::Read, Pos::Indiv, true);
file_c!(MPI_File_write_all, PMPI_File_write_all, MPI_File_write_all_c, PMPI_File_write_all_c,
    (fh: usize, buf: Buf), count, (dt: usize, st: St), fp_blocking, Dir::Write, Pos::Indiv, true);
file_c!(MPI_File_iread, PMPI_File_iread, MPI_File_iread_c, PMPI_File_iread_c,
    (fh: usize, buf: Buf), count, (dt: usize, req: *mut usize), fp_nonblocking, Dir::Read, Pos::Indiv);
file_c!(MPI_File_iwrite, PMPI_File_iwrite, MPI_File_iwrite_c, PMPI_File_iwrite_c,
    (fh: usize, buf: Buf), count, (dt: usize, req: *mut usize), fp_nonblocking, Dir::Write, Pos::Indiv);
file_c!(MPI_File_iread_all, PMPI_File_iread_all, MPI_File_iread_all_c, PMPI_File_iread_all_c,
    (fh: usize, buf: Buf), count, (dt: usize, req: *mut usize), fp_nonblocking, Dir::Read, Pos::Indiv);
file_c!(MPI_File_iwrite_all, PMPI_File_iwrite_all, MPI_File_iwrite_all_c, PMPI_File_iwrite_all_c,
    (fh: usize, buf: Buf), count, (dt: usize, req: *mut usize), fp_nonblocking, Dir::Write, Pos::Indiv);
file_c!(MPI_File_read_all_begin, PMPI_File_read_all_begin, MPI_File_read_all_begin_c, PMPI_File_read_all_begin_c,
    (fh: usize, buf: Buf), count, (dt: usize), fp_begin, Dir::Read, Pos::Indiv);
file_c!(MPI_File_write_all_begin, PMPI_File_write_all_begin, MPI_File_write_all_begin_c, PMPI_File_write_all_begin_c,
    (fh: usize, buf: Buf), count, (dt: usize), fp_begin, Dir::Write, Pos::Indiv);

// The shared file pointer.
file_c!(MPI_File_read_shared, PMPI_File_read_shared, MPI_File_read_shared_c, PMPI_File_read_shared_c,
    (fh: usize, buf: Buf), count, (dt: usize, st: St), fp_blocking, Dir::Read, Pos::Shared, false);
file_c!(MPI_File_write_shared, PMPI_File_write_shared, MPI_File_write_shared_c, PMPI_File_write_shared_c,
    (fh: usize, buf: Buf), count, (dt: usize, st: St), fp_blocking, Dir::Write, Pos::Shared, false);
file_c!(MPI_File_iread_shared, PMPI_File_iread_shared, MPI_File_iread_shared_c, PMPI_File_iread_shared_c,
    (fh: usize, buf: Buf), count, (dt: usize, req: *mut usize), fp_nonblocking, Dir::Read, Pos::Shared);
file_c!(MPI_File_iwrite_shared, PMPI_File_iwrite_shared, MPI_File_iwrite_shared_c, PMPI_File_iwrite_shared_c,
    (fh: usize, buf: Buf), count, (dt: usize, req: *mut usize), fp_nonblocking, Dir::Write, Pos::Shared);
file_c!(MPI_File_read_ordered, PMPI_File_read_ordered, MPI_File_read_ordered_c, PMPI_File_read_ordered_c,
    (fh: usize, buf: Buf), count, (dt: usize, st: St), fp_blocking, Dir::Read, Pos::Ordered, true);
file_c!(MPI_File_write_ordered, PMPI_File_write_ordered, MPI_File_write_ordered_c, PMPI_File_write_ordered_c,
    (fh: usize, buf: Buf), count, (dt: usize, st: St), fp_blocking, Dir::Write, Pos::Ordered, true);
file_c!(MPI_File_read_ordered_begin, PMPI_File_read_ordered_begin, MPI_File_read_ordered_begin_c, PMPI_File_read_ordered_begin_c,
    (fh: usize, buf: Buf), count, (dt: usize), fp_begin, Dir::Read, Pos::Ordered);
file_c!(MPI_File_write_ordered_begin, PMPI_File_write_ordered_begin, MPI_File_write_ordered_begin_c, PMPI_File_write_ordered_begin_c,
    (fh: usize, buf: Buf), count, (dt: usize), fp_begin, Dir::Write, Pos::Ordered);

// Ends of split collectives: one body, `end`, whichever access began.
macro_rules! file_ends {
    ($(($name:ident, $pname:ident)),* $(,)?) => {
        $(file_fn!($name, $pname, |fh: usize, buf: Buf, st: St| file = fh, { end(fh, buf, st) });)*
    };
}
file_ends!(
    (MPI_File_read_at_all_end, PMPI_File_read_at_all_end),
    (MPI_File_write_at_all_end, PMPI_File_write_at_all_end),
    (MPI_File_read_all_end, PMPI_File_read_all_end),
    (MPI_File_write_all_end, PMPI_File_write_all_end),
    (MPI_File_read_ordered_end, PMPI_File_read_ordered_end),
    (MPI_File_write_ordered_end, PMPI_File_write_ordered_end),
);

#[allow(dead_code)]
fn _unused(_: c_int) {}
