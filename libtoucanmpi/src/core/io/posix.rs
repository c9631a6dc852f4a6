//! POSIX access to files: open, positioned reads and writes of extent lists, byte-range locks
//! (atomic mode, the shared file pointer), and the error classes of `errno` values.

use crate::consts as c;
use crate::core::error::MpiError;
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// An open file descriptor, shared (`Arc`) between a file handle and the I/O jobs using it.
#[derive(Debug)]
pub struct Fd(OwnedFd);

impl Fd {
    pub fn raw(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

/// The MPI error class of an `errno` value from an I/O call.
pub fn class_of(errno: i32) -> i32 {
    match errno {
        libc::ENOENT | libc::ENOTDIR => c::MPI_ERR_NO_SUCH_FILE,
        libc::EACCES | libc::EPERM => c::MPI_ERR_ACCESS,
        libc::EEXIST => c::MPI_ERR_FILE_EXISTS,
        libc::EROFS => c::MPI_ERR_READ_ONLY,
        libc::ENOSPC => c::MPI_ERR_NO_SPACE,
        libc::EDQUOT => c::MPI_ERR_QUOTA,
        libc::ETXTBSY | libc::EBUSY => c::MPI_ERR_FILE_IN_USE,
        libc::ENAMETOOLONG | libc::EISDIR | libc::ELOOP => c::MPI_ERR_BAD_FILE,
        _ => c::MPI_ERR_IO,
    }
}

/// An MPI error for a failed system call.
pub fn error(what: &str, e: &std::io::Error) -> MpiError {
    let class = e.raw_os_error().map_or(c::MPI_ERR_IO, class_of);
    MpiError::new(class, format!("{what}: {e}"))
}

/// `open(2)` with `flags` (O_CLOEXEC added) and permissions `mode`.
pub fn open(path: &str, flags: i32, mode: u32) -> std::io::Result<Fd> {
    let p = CString::new(path).map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: `p` is a NUL-terminated path; open has no other memory effects.
    let fd = unsafe { libc::open(p.as_ptr(), flags | libc::O_CLOEXEC, mode as libc::c_uint) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is owned by nobody else.
    Ok(Fd(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// `unlink(2)`.
pub fn unlink(path: &str) -> std::io::Result<()> {
    let p = CString::new(path).map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: `p` is a NUL-terminated path.
    if unsafe { libc::unlink(p.as_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

fn check(r: libc::c_int) -> std::io::Result<()> {
    if r < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// File size (`fstat`).
pub fn size(fd: &Fd) -> std::io::Result<u64> {
    // SAFETY: a zeroed stat is a valid output buffer for fstat.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is open and `st` is writable.
    check(unsafe { libc::fstat(fd.raw(), &mut st) })?;
    Ok(st.st_size as u64)
}

pub fn truncate(fd: &Fd, len: u64) -> std::io::Result<()> {
    // SAFETY: plain system call on an open descriptor.
    check(unsafe { libc::ftruncate(fd.raw(), len as libc::off_t) })
}

/// Makes sure the first `len` bytes have storage (grows the file, never shrinks it).
pub fn preallocate(fd: &Fd, len: u64) -> std::io::Result<()> {
    if len == 0 {
        return Ok(());
    }
    // SAFETY: plain system call on an open descriptor.
    let r = unsafe { libc::posix_fallocate(fd.raw(), 0, len as libc::off_t) };
    if r == libc::EOPNOTSUPP || r == libc::EINVAL {
        // File systems without fallocate: grow by truncation.
        if size(fd)? < len {
            return truncate(fd, len);
        }
        return Ok(());
    }
    if r != 0 {
        return Err(std::io::Error::from_raw_os_error(r));
    }
    Ok(())
}

pub fn sync(fd: &Fd) -> std::io::Result<()> {
    // SAFETY: plain system call on an open descriptor.
    check(unsafe { libc::fsync(fd.raw()) })
}

/// Writes all of `data` at `off`.
pub fn pwrite_all(fd: &Fd, mut data: &[u8], mut off: u64) -> std::io::Result<()> {
    while !data.is_empty() {
        // SAFETY: `data` is a valid readable slice.
        let n = unsafe { libc::pwrite(fd.raw(), data.as_ptr().cast(), data.len(), off as libc::off_t) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        data = &data[n as usize..];
        off += n as u64;
    }
    Ok(())
}

/// Reads into `buf` from `off` until it is full or the file ends; the bytes read.
pub fn pread_upto(fd: &Fd, buf: &mut [u8], off: u64) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        let rest = &mut buf[got..];
        // SAFETY: `rest` is a valid writable slice.
        let n = unsafe { libc::pread(fd.raw(), rest.as_mut_ptr().cast(), rest.len(), (off + got as u64) as libc::off_t) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            break;
        }
        got += n as usize;
    }
    Ok(got)
}

/// One piece of memory for a vectored access: (address, bytes).
pub type Span = (usize, usize);

/// At most this many pieces per `pwritev`/`preadv` call (Linux's IOV_MAX).
const IOV_MAX: usize = 1024;

/// The iovecs of `spans`, skipping the first `skip` bytes (of a call that moved only part).
fn iovecs(spans: &[Span], mut skip: usize) -> Vec<libc::iovec> {
    let mut v = Vec::with_capacity(spans.len().min(IOV_MAX));
    for &(a, l) in spans {
        if v.len() == IOV_MAX {
            break;
        }
        if skip >= l {
            skip -= l;
            continue;
        }
        v.push(libc::iovec {
            iov_base: (a + skip) as *mut libc::c_void,
            iov_len: l - skip,
        });
        skip = 0;
    }
    v
}

/// Moves the bytes of `spans`, one after the other, at the file from `off` with `call`
/// (`pwritev` or `preadv`, at most IOV_MAX pieces a call), until all moved or `call` moves
/// nothing (`Ok(None)`); interrupted calls are retried. The bytes moved.
///
/// # Safety
/// Each span must be memory `call` may use for its length until this returns.
unsafe fn vectored(spans: &[Span], off: u64, call: impl Fn(&[libc::iovec], libc::off_t) -> isize) -> std::io::Result<(usize, bool)> {
    let total: usize = spans.iter().map(|s| s.1).sum();
    let mut done = 0usize;
    while done < total {
        let iov = iovecs(spans, done);
        let n = call(&iov, (off + done as u64) as libc::off_t);
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            return Ok((done, false));
        }
        done += n as usize;
    }
    Ok((done, true))
}

/// Writes the bytes of `spans`, one after the other, to the file from `off` (`pwritev`, at most
/// IOV_MAX pieces a call): a run of the file gathered from many buffers in few system calls.
///
/// # Safety
/// Each span must be readable memory for its length until this returns.
pub unsafe fn pwritev_all(fd: &Fd, spans: &[Span], off: u64) -> std::io::Result<()> {
    // SAFETY: the caller guarantees the spans are readable; each `iov` covers only them.
    let (_, all) = unsafe {
        vectored(spans, off, |iov, at| {
            libc::pwritev(fd.raw(), iov.as_ptr(), iov.len() as libc::c_int, at)
        })
    }?;
    if !all {
        return Err(std::io::Error::from(std::io::ErrorKind::WriteZero));
    }
    Ok(())
}

/// Reads the file from `off` into `spans`, one after the other (`preadv`), until they are
/// full or the file ends; the bytes read.
///
/// # Safety
/// Each span must be writable memory for its length, touched by nobody else, until this
/// returns.
pub unsafe fn preadv_upto(fd: &Fd, spans: &[Span], off: u64) -> std::io::Result<usize> {
    // SAFETY: the caller guarantees the spans are writable and ours; each `iov` covers only them.
    let (n, _) = unsafe {
        vectored(spans, off, |iov, at| {
            libc::preadv(fd.raw(), iov.as_ptr(), iov.len() as libc::c_int, at)
        })
    }?;
    Ok(n)
}

/// A byte-range lock (open file description lock, so it also excludes other descriptors of
/// the same process, i.e. sibling subranks): taken by `lock`, released when dropped.
pub struct RangeLock<'a> {
    fd: &'a Fd,
    start: u64,
    len: u64,
}

fn flock(fd: &Fd, ty: i32, start: u64, len: u64, wait: bool) -> std::io::Result<()> {
    // SAFETY: a zeroed flock is valid; the fields are set below.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = ty as _;
    fl.l_whence = libc::SEEK_SET as _;
    fl.l_start = start as libc::off_t;
    fl.l_len = len as libc::off_t;
    let cmd = if wait { libc::F_OFD_SETLKW } else { libc::F_OFD_SETLK };
    loop {
        // SAFETY: `fl` is a valid flock for F_OFD_SETLK(W) (l_pid zero as OFD locks want).
        let r = unsafe { libc::fcntl(fd.raw(), cmd, &mut fl) };
        if r == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// A write lock of `start..start+len` where the file system has byte-range locks; `None`
/// where it has none (`ENOLCK`, `EOPNOTSUPP`, `ENOSYS`: some NFS mounts and FUSE file
/// systems), for the locks that only protect data sieving, which then writes without it.
pub fn lock_if_supported(fd: &Fd, start: u64, len: u64) -> std::io::Result<Option<RangeLock<'_>>> {
    match lock(fd, true, start, len) {
        Ok(l) => Ok(Some(l)),
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOLCK | libc::EOPNOTSUPP | libc::ENOSYS)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Locks bytes `start..start+len` (len 0: to the end) for writing or reading, waiting.
pub fn lock(fd: &Fd, write: bool, start: u64, len: u64) -> std::io::Result<RangeLock<'_>> {
    let ty = if write { libc::F_WRLCK } else { libc::F_RDLCK };
    flock(fd, ty, start, len, true)?;
    Ok(RangeLock { fd, start, len })
}

impl Drop for RangeLock<'_> {
    fn drop(&mut self) {
        let _ = flock(self.fd, libc::F_UNLCK, self.start, self.len, false);
    }
}

/// Writes `data` to the extents `segs` (their lengths add up to `data.len()`).
pub fn write_segments(fd: &Fd, segs: &[(u64, u64)], data: &[u8]) -> std::io::Result<()> {
    let mut pos = 0usize;
    for &(off, len) in segs {
        pwrite_all(fd, &data[pos..pos + len as usize], off)?;
        pos += len as usize;
    }
    Ok(())
}

/// Reads the extents `segs` into `data`; the bytes read before the first extent the file
/// ends in.
pub fn read_segments(fd: &Fd, segs: &[(u64, u64)], data: &mut [u8]) -> std::io::Result<usize> {
    let mut pos = 0usize;
    for &(off, len) in segs {
        let n = pread_upto(fd, &mut data[pos..pos + len as usize], off)?;
        pos += n;
        if n < len as usize {
            break;
        }
    }
    Ok(pos)
}

/// `read_segments` with data sieving (ROMIO's `romio_ds_read`): runs of extents whose span
/// is at most `window` bytes and that are more than one are read with one `pread` of the
/// whole span (holes included) into a scratch buffer and copied out, so many small pieces
/// cost one system call instead of one each. Same result as `read_segments`.
pub fn read_segments_sieved(fd: &Fd, segs: &[(u64, u64)], data: &mut [u8], window: u64) -> std::io::Result<usize> {
    let mut pos = 0usize;
    let mut scratch: Vec<u8> = Vec::new();
    let mut i = 0;
    while i < segs.len() {
        // The longest run of extents from i whose span fits the window (at least one).
        let start = segs[i].0;
        let mut j = i + 1;
        while j < segs.len() && segs[j].0 >= segs[j - 1].0 + segs[j - 1].1 && segs[j].0 + segs[j].1 - start <= window {
            j += 1;
        }
        if j - i == 1 {
            let (off, len) = segs[i];
            let n = pread_upto(fd, &mut data[pos..pos + len as usize], off)?;
            pos += n;
            if n < len as usize {
                return Ok(pos);
            }
            i += 1;
            continue;
        }
        let span = (segs[j - 1].0 + segs[j - 1].1 - start) as usize;
        scratch.resize(span, 0);
        let got = pread_upto(fd, &mut scratch[..span], start)? as u64;
        for &(off, len) in &segs[i..j] {
            let have = (start + got).saturating_sub(off).min(len) as usize;
            let at = (off - start) as usize;
            data[pos..pos + have].copy_from_slice(&scratch[at..at + have]);
            pos += have;
            if have < len as usize {
                return Ok(pos);
            }
        }
        i = j;
    }
    Ok(pos)
}

/// `write_segments` with data sieving (ROMIO's `romio_ds_write`): runs of more than one
/// extent whose span is at most `window` bytes are written as one read-modify-write of the
/// span: one `pread` of it (holes included; past the end of file the holes are zeros), the
/// pieces copied in, one `pwrite` of it back. So many small pieces cost two system calls
/// instead of one each. With `lock`, each span (and each extent written alone) is written under
/// a write lock of its bytes, so that a writer of another process (or another subrank: the
/// locks are per open file description) writing into the holes at the same time, under the
/// same rule, is not overwritten with the old bytes; without it the caller holds a lock over
/// the whole access (atomic mode). Same file contents as `write_segments`.
pub fn write_segments_sieved(fd: &Fd, segs: &[(u64, u64)], data: &[u8], window: u64, lock_spans: bool) -> std::io::Result<()> {
    let mut pos = 0usize;
    let mut scratch: Vec<u8> = Vec::new();
    let mut i = 0;
    while i < segs.len() {
        let start = segs[i].0;
        let mut j = i + 1;
        while j < segs.len() && segs[j].0 >= segs[j - 1].0 + segs[j - 1].1 && segs[j].0 + segs[j].1 - start <= window {
            j += 1;
        }
        let span = segs[j - 1].0 + segs[j - 1].1 - start;
        let l = if lock_spans && span > 0 {
            lock_if_supported(fd, start, span)?
        } else {
            None
        };
        if lock_spans && l.is_none() && j - i > 1 {
            // No locks on this file system: no read-modify-write either (it would rewrite
            // other writers' bytes unprotected); the pieces one by one.
            write_segments(fd, &segs[i..j], &data[pos..])?;
            pos += segs[i..j].iter().map(|s| s.1 as usize).sum::<usize>();
            i = j;
            continue;
        }
        if j - i == 1 {
            let len = segs[i].1 as usize;
            pwrite_all(fd, &data[pos..pos + len], start)?;
            pos += len;
            i += 1;
            continue;
        }
        let span = span as usize;
        scratch.resize(span, 0);
        let got = pread_upto(fd, &mut scratch[..span], start)?;
        scratch[got..span].fill(0);
        for &(off, len) in &segs[i..j] {
            let at = (off - start) as usize;
            scratch[at..at + len as usize].copy_from_slice(&data[pos..pos + len as usize]);
            pos += len as usize;
        }
        pwrite_all(fd, &scratch[..span], start)?;
        i = j;
    }
    Ok(())
}

/// The shared file pointer kept in an 8-byte sidecar file: adds `n` under an exclusive lock
/// and returns the value before.
pub fn fetch_add(fd: &Fd, n: u64) -> std::io::Result<u64> {
    let _l = lock(fd, true, 0, 0)?;
    let v = get_locked(fd)?;
    pwrite_all(fd, &(v + n).to_le_bytes(), 0)?;
    Ok(v)
}

fn get_locked(fd: &Fd) -> std::io::Result<u64> {
    let mut b = [0u8; 8];
    let n = pread_upto(fd, &mut b, 0)?;
    Ok(if n == 8 { u64::from_le_bytes(b) } else { 0 })
}

/// Reads the sidecar's shared pointer.
pub fn shared_get(fd: &Fd) -> std::io::Result<u64> {
    let _l = lock(fd, false, 0, 0)?;
    get_locked(fd)
}

/// Sets the sidecar's shared pointer.
pub fn shared_set(fd: &Fd, v: u64) -> std::io::Result<()> {
    let _l = lock(fd, true, 0, 0)?;
    pwrite_all(fd, &v.to_le_bytes(), 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_and_shared_pointer() {
        let dir = std::env::temp_dir().join(format!("toucan-io-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("f").to_string_lossy().to_string();
        let fd = open(&p, libc::O_RDWR | libc::O_CREAT, 0o644).unwrap();
        write_segments(&fd, &[(4, 2), (10, 3)], b"abcde").unwrap();
        let mut b = [0u8; 5];
        assert_eq!(read_segments(&fd, &[(4, 2), (10, 3)], &mut b).unwrap(), 5);
        assert_eq!(&b, b"abcde");
        assert_eq!(read_segments(&fd, &[(11, 4)], &mut b[..4]).unwrap(), 2);
        assert_eq!(size(&fd).unwrap(), 13);
        assert_eq!(fetch_add(&fd, 3).unwrap(), u64::from_le_bytes(*b"\0\0\0\0ab\0\0"));
        shared_set(&fd, 7).unwrap();
        assert_eq!(fetch_add(&fd, 3).unwrap(), 7);
        assert_eq!(shared_get(&fd).unwrap(), 10);
        unlink(&p).unwrap();
        assert_eq!(
            class_of(open(&p, libc::O_RDONLY, 0).unwrap_err().raw_os_error().unwrap()),
            c::MPI_ERR_NO_SUCH_FILE
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn sieved_reads_match_plain_ones() {
        let dir = std::env::temp_dir().join(format!("toucan-sieve-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("f").to_string_lossy().to_string();
        let fd = open(&p, libc::O_RDWR | libc::O_CREAT, 0o644).unwrap();
        let bytes: Vec<u8> = (0..1000u32).map(|i| (i * 7) as u8).collect();
        pwrite_all(&fd, &bytes, 0).unwrap();
        // strided pieces, one crossing the end of the file, one past it
        let cases: Vec<Vec<(u64, u64)>> = vec![
            (0..50).map(|k| (k * 16, 4)).collect(),
            vec![(10, 5), (20, 5), (990, 20), (1200, 4)],
            vec![(0, 100), (500, 10)],
            vec![(3, 1)],
        ];
        for segs in cases {
            let total: u64 = segs.iter().map(|s| s.1).sum();
            for window in [1u64, 64, 4096] {
                let (mut a, mut b) = (vec![0u8; total as usize], vec![0u8; total as usize]);
                let na = read_segments(&fd, &segs, &mut a).unwrap();
                let nb = read_segments_sieved(&fd, &segs, &mut b, window).unwrap();
                assert_eq!((na, &a[..na]), (nb, &b[..nb]), "{segs:?} window {window}");
            }
        }
        unlink(&p).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[rstest::rstest]
    #[case::strided(vec![(0, 4), (16, 4), (32, 4), (48, 4)])]
    #[case::past_the_end(vec![(990, 4), (1000, 4), (1010, 20), (1300, 8)])]
    #[case::one_piece(vec![(7, 3)])]
    #[case::large_then_small(vec![(0, 300), (400, 2), (402, 1), (900, 50)])]
    fn sieved_writes_match_plain_ones(#[case] segs: Vec<(u64, u64)>) {
        let dir = std::env::temp_dir().join(format!("toucan-wsieve-unit-{}-{}", std::process::id(), segs[0].0));
        std::fs::create_dir_all(&dir).unwrap();
        let old: Vec<u8> = (0..1000u32).map(|i| (i * 7 + 1) as u8).collect();
        let total: u64 = segs.iter().map(|s| s.1).sum();
        let data: Vec<u8> = (0..total).map(|i| (i * 13 + 5) as u8).collect();
        let mut files = Vec::new();
        for (k, how) in [(0u64, false), (1, false), (64, true), (4096, true), (4096, false)]
            .iter()
            .enumerate()
        {
            let p = dir.join(format!("f{k}")).to_string_lossy().to_string();
            let fd = open(&p, libc::O_RDWR | libc::O_CREAT, 0o644).unwrap();
            pwrite_all(&fd, &old, 0).unwrap();
            if how.0 == 0 {
                write_segments(&fd, &segs, &data).unwrap();
            } else {
                write_segments_sieved(&fd, &segs, &data, how.0, how.1).unwrap();
            }
            files.push(std::fs::read(&p).unwrap());
            unlink(&p).unwrap();
        }
        for f in &files[1..] {
            assert_eq!(f, &files[0], "{segs:?}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn vectored_runs_cross_iov_max() {
        let dir = std::env::temp_dir().join(format!("toucan-iov-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("f").to_string_lossy().to_string();
        let fd = open(&p, libc::O_RDWR | libc::O_CREAT, 0o644).unwrap();
        // 3000 pieces of 3 bytes each, from separate buffers: three pwritev calls at least.
        let bufs: Vec<[u8; 3]> = (0..3000u32).map(|i| [i as u8, (i >> 8) as u8, 7]).collect();
        let spans: Vec<Span> = bufs.iter().map(|b| (b.as_ptr() as usize, 3)).collect();
        // SAFETY: every span points into `bufs`, alive here.
        unsafe { pwritev_all(&fd, &spans, 5) }.unwrap();
        assert_eq!(size(&fd).unwrap(), 5 + 9000);
        let mut back = vec![[0u8; 3]; 3001];
        let out: Vec<Span> = back.iter_mut().map(|b| (b.as_mut_ptr() as usize, 3)).collect();
        // SAFETY: every span points into `back`, alive and unborrowed here.
        assert_eq!(unsafe { preadv_upto(&fd, &out, 5) }.unwrap(), 9000);
        assert_eq!(&back[..3000], &bufs[..]);
        assert_eq!(back[3000], [0, 0, 0]);
        unlink(&p).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
