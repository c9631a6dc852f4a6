//! Shared memory between the processes of a node (issue 18: `MPI_Win_allocate_shared` across
//! processes): a POSIX shared-memory object, created by one process, mapped by the others,
//! and unlinked once all have mapped it (nothing stays in /dev/shm, even after a crash of a
//! later phase). Between the subranks of one process the same mapping is plain memory.

use std::ffi::CString;

/// A mapped segment; unmapped when dropped.
#[derive(Debug)]
pub struct Segment {
    pub ptr: usize,
    pub len: usize,
}

// SAFETY: the segment is plain memory; synchronisation of its contents is the program's
// (MPI's rules on window memory) and the lock words' (atomics).
unsafe impl Send for Segment {}
// SAFETY: as above.
unsafe impl Sync for Segment {}

fn name_of(name: &str) -> Result<CString, String> {
    CString::new(name).map_err(|_| format!("bad shared-memory name {name}"))
}

impl Segment {
    /// Creates (`create`) or opens the object `name` of `len` bytes and maps it.
    pub fn map(name: &str, len: usize, create: bool) -> Result<Segment, String> {
        let n = name_of(name)?;
        let len = len.max(1);
        let flags = if create {
            libc::O_CREAT | libc::O_EXCL | libc::O_RDWR
        } else {
            libc::O_RDWR
        };
        // SAFETY: a NUL-terminated name; the descriptor is closed below.
        let fd = unsafe { libc::shm_open(n.as_ptr(), flags, 0o600) };
        if fd < 0 {
            return Err(format!("shm_open({name}): {}", std::io::Error::last_os_error()));
        }
        // SAFETY: our descriptor.
        if create && unsafe { libc::ftruncate(fd, len as libc::off_t) } != 0 {
            let e = std::io::Error::last_os_error();
            // SAFETY: as above.
            unsafe {
                libc::close(fd);
                libc::shm_unlink(n.as_ptr());
            }
            return Err(format!("ftruncate({name}, {len}): {e}"));
        }
        // SAFETY: a fresh shared mapping of our descriptor; the kernel picks the address.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        // SAFETY: our descriptor; the mapping keeps the object.
        unsafe { libc::close(fd) };
        if p == libc::MAP_FAILED {
            return Err(format!("mmap of {len} bytes of {name}: {}", std::io::Error::last_os_error()));
        }
        Ok(Segment { ptr: p as usize, len })
    }

    /// Removes the name (mappings stay).
    pub fn unlink(name: &str) {
        if let Ok(n) = name_of(name) {
            // SAFETY: a NUL-terminated name.
            unsafe { libc::shm_unlink(n.as_ptr()) };
        }
    }

    /// Private anonymous memory of `len` bytes (a shared window within one process).
    pub fn private(len: usize) -> Result<Segment, String> {
        let len = len.max(1);
        // SAFETY: an anonymous mapping; the kernel picks the address.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(format!("mmap of {len} bytes: {}", std::io::Error::last_os_error()));
        }
        Ok(Segment { ptr: p as usize, len })
    }
}

impl Drop for Segment {
    fn drop(&mut self) {
        // SAFETY: our mapping, unmapped once.
        unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.len) };
    }
}
