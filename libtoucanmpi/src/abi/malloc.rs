//! The `malloc` family interposed (`malloc`, `free`, `calloc`, `realloc`, `reallocarray`,
//! `posix_memalign`, `aligned_alloc`, `memalign`, `valloc`, `pvalloc`, `malloc_usable_size`;
//! C++ `new`/`delete` reach them): a subrank allocates from its own heap, everything else
//! from the C library's (see `crate::heap`). A block is freed by whoever holds it: ours by
//! mimalloc, any other by the C library.

use crate::heap::{self, stats};
use libmimalloc_sys as mi;
use std::ffi::c_void;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicUsize, Ordering};

extern "C" {
    fn __libc_malloc(n: usize) -> *mut c_void;
    fn __libc_free(p: *mut c_void);
    fn __libc_calloc(n: usize, size: usize) -> *mut c_void;
    fn __libc_realloc(p: *mut c_void, n: usize) -> *mut c_void;
    fn __libc_memalign(align: usize, n: usize) -> *mut c_void;
    fn __libc_valloc(n: usize) -> *mut c_void;
    fn __libc_pvalloc(n: usize) -> *mut c_void;
}

fn page() -> usize {
    // SAFETY: sysconf has no preconditions.
    (unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize).max(4096)
}

fn set_errno(e: c_int) {
    // SAFETY: the calling thread's errno.
    unsafe { *libc::__errno_location() = e };
}

/// Counts a block just allocated from heap `h` (when the report wants it).
#[inline]
fn counted(h: *mut mi::mi_heap_t, p: *mut c_void) -> *mut c_void {
    if !p.is_null() && stats::on() {
        // SAFETY: `p` is a live block of ours.
        stats::alloc(h, unsafe { mi::mi_usable_size(p) });
    }
    p
}

/// Allocates `n` bytes aligned to `align` (a power of two) for the caller.
fn aligned(align: usize, n: usize) -> *mut c_void {
    match heap::own() {
        // SAFETY: `h` is the running subrank's heap.
        Some(h) => counted(h, unsafe { mi::mi_heap_malloc_aligned(h, n, align) }),
        // SAFETY: the C library's allocator, as the caller asked.
        None => unsafe { __libc_memalign(align, n) },
    }
}

/// # Safety
/// As the C library's `malloc`.
#[no_mangle]
pub unsafe extern "C" fn malloc(n: usize) -> *mut c_void {
    match heap::own() {
        // SAFETY: `h` is the running subrank's heap.
        Some(h) => counted(h, unsafe { mi::mi_heap_malloc(h, n) }),
        // SAFETY: as the caller asked.
        None => unsafe { __libc_malloc(n) },
    }
}

/// # Safety
/// As the C library's `free`.
#[no_mangle]
pub unsafe extern "C" fn free(p: *mut c_void) {
    if p.is_null() {
        return;
    }
    if heap::ours(p as usize) {
        if stats::on() {
            // SAFETY: `p` is a live block of ours.
            stats::free(p as usize, unsafe { mi::mi_usable_size(p) });
        }
        // SAFETY: a block of ours; mimalloc takes frees from any thread.
        unsafe { mi::mi_free(p) }
    } else {
        // SAFETY: the C library's block.
        unsafe { __libc_free(p) }
    }
}

/// # Safety
/// As the C library's `calloc`.
#[no_mangle]
pub unsafe extern "C" fn calloc(n: usize, size: usize) -> *mut c_void {
    match heap::own() {
        // SAFETY: `h` is the running subrank's heap (mimalloc checks the overflow).
        Some(h) => counted(h, unsafe { mi::mi_heap_calloc(h, n, size) }),
        // SAFETY: as the caller asked.
        None => unsafe { __libc_calloc(n, size) },
    }
}

/// # Safety
/// As the C library's `realloc`.
#[no_mangle]
pub unsafe extern "C" fn realloc(p: *mut c_void, n: usize) -> *mut c_void {
    if p.is_null() {
        // SAFETY: as the caller asked.
        return unsafe { malloc(n) };
    }
    if !heap::ours(p as usize) {
        // A block of the C library's stays there.
        // SAFETY: the C library's block.
        return unsafe { __libc_realloc(p, n) };
    }
    if n == 0 {
        // As the C library: frees the block, returns NULL.
        // SAFETY: a block of ours.
        unsafe { free(p) };
        return std::ptr::null_mut();
    }
    let old = if stats::on() {
        // SAFETY: a live block of ours.
        unsafe { mi::mi_usable_size(p) }
    } else {
        0
    };
    let h = heap::own();
    // SAFETY: `p` is a live block of ours; the new block comes from the subrank's heap, or,
    // outside a subrank, from the calling thread's mimalloc heap.
    let q = unsafe {
        match h {
            Some(h) => mi::mi_heap_realloc(h, p, n),
            None => mi::mi_realloc(p, n),
        }
    };
    if !q.is_null() && stats::on() {
        stats::free(p as usize, old);
        if let Some(h) = h {
            // SAFETY: `q` is a live block of ours.
            stats::alloc(h, unsafe { mi::mi_usable_size(q) });
        }
    }
    q
}

/// # Safety
/// As the C library's `reallocarray`.
#[no_mangle]
pub unsafe extern "C" fn reallocarray(p: *mut c_void, n: usize, size: usize) -> *mut c_void {
    match n.checked_mul(size) {
        // SAFETY: as the caller asked.
        Some(total) => unsafe { realloc(p, total) },
        None => {
            set_errno(libc::ENOMEM);
            std::ptr::null_mut()
        }
    }
}

/// # Safety
/// As the C library's `posix_memalign`.
#[no_mangle]
pub unsafe extern "C" fn posix_memalign(out: *mut *mut c_void, align: usize, n: usize) -> c_int {
    if !align.is_power_of_two() || !align.is_multiple_of(std::mem::size_of::<usize>()) {
        return libc::EINVAL;
    }
    let p = aligned(align, n);
    if p.is_null() {
        return libc::ENOMEM;
    }
    // SAFETY: the caller passes where to store the block.
    unsafe { *out = p };
    0
}

/// # Safety
/// As the C library's `aligned_alloc`.
#[no_mangle]
pub unsafe extern "C" fn aligned_alloc(align: usize, n: usize) -> *mut c_void {
    if !align.is_power_of_two() {
        set_errno(libc::EINVAL);
        return std::ptr::null_mut();
    }
    aligned(align, n)
}

/// # Safety
/// As the C library's `memalign` (an alignment that is not a power of two is rounded up).
#[no_mangle]
pub unsafe extern "C" fn memalign(align: usize, n: usize) -> *mut c_void {
    let Some(a) = align.max(1).checked_next_power_of_two() else {
        set_errno(libc::EINVAL);
        return std::ptr::null_mut();
    };
    aligned(a, n)
}

/// # Safety
/// As the C library's `valloc`.
#[no_mangle]
pub unsafe extern "C" fn valloc(n: usize) -> *mut c_void {
    if heap::own().is_none() {
        // SAFETY: as the caller asked.
        return unsafe { __libc_valloc(n) };
    }
    aligned(page(), n)
}

/// # Safety
/// As the C library's `pvalloc`.
#[no_mangle]
pub unsafe extern "C" fn pvalloc(n: usize) -> *mut c_void {
    if heap::own().is_none() {
        // SAFETY: as the caller asked.
        return unsafe { __libc_pvalloc(n) };
    }
    let pg = page();
    let Some(rounded) = n.max(1).checked_next_multiple_of(pg) else {
        set_errno(libc::ENOMEM);
        return std::ptr::null_mut();
    };
    aligned(pg, rounded)
}

/// # Safety
/// As the C library's `malloc_usable_size`.
#[no_mangle]
pub unsafe extern "C" fn malloc_usable_size(p: *mut c_void) -> usize {
    if p.is_null() {
        return 0;
    }
    if heap::ours(p as usize) {
        // SAFETY: a live block of ours.
        return unsafe { mi::mi_usable_size(p) };
    }
    static REAL: AtomicUsize = AtomicUsize::new(0);
    let mut f = REAL.load(Ordering::Relaxed);
    if f == 0 {
        // SAFETY: looks the C library's function up (after ours).
        f = unsafe { libc::dlsym(libc::RTLD_NEXT, c"malloc_usable_size".as_ptr()) } as usize;
        if f == 0 {
            return 0;
        }
        REAL.store(f, Ordering::Relaxed);
    }
    // SAFETY: the C library's malloc_usable_size has this type; `p` is its block.
    unsafe {
        let f: unsafe extern "C" fn(*mut c_void) -> usize = std::mem::transmute(f);
        f(p)
    }
}
