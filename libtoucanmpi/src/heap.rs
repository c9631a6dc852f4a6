//! A heap per subrank (issue 15): the `malloc` family the program calls (`abi::malloc`)
//! allocates, in a subrank, from that subrank's own mimalloc heap, which keeps the memory the
//! subrank freed for its next allocations (purged only after `TOUCAN_HEAP_RETAIN`
//! milliseconds unused), instead of glibc's, which returns large blocks to the kernel and
//! takes them again (a page fault per page, every time step). Anything else (before the
//! subranks start, the progress thread, the program's own threads, the real MPI's threads,
//! helper tasks) allocates from the C library's heap, the shared one, as before.
//!
//! Any pointer may be freed or reallocated from anywhere: mimalloc's first-class heaps take
//! frees from any thread, and a pointer that mimalloc does not know (the C library's) goes to
//! the C library. The real MPI is loaded `RTLD_DEEPBIND`, so its libraries call the C
//! library's `malloc` and `free` directly, while the C library's own functions that allocate
//! for them (`strdup`, `fopen`, ...) reach ours: `rebind` points the real MPI's imports of the
//! family at ours too, so a block never reaches a `free` that does not know it.
//!
//! `TOUCAN_HEAP=system` keeps the C library's allocator for everything (the family then only
//! forwards to it).

use crate::sched;
use libmimalloc_sys as mi;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU8, AtomicUsize, Ordering};

extern "C" {
    fn mi_heap_of(p: *const c_void) -> *mut mi::mi_heap_t;
}

/// How the family allocates.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Mode {
    /// The C library's allocator for everything.
    System,
    /// A mimalloc heap per subrank.
    Subrank,
}

const UNKNOWN: u8 = 0;
const SYSTEM: u8 = 1;
const SUBRANK: u8 = 2;

static MODE: AtomicU8 = AtomicU8::new(UNKNOWN);
/// Whether mimalloc has handed out a block (before that, every pointer is the C library's).
static USED: AtomicBool = AtomicBool::new(false);

/// Subranks with a heap of their own (more use the shared heap).
const MAX_SUBS: usize = 1 << 16;
static HEAPS: [AtomicPtr<mi::mi_heap_t>; MAX_SUBS] = [const { AtomicPtr::new(std::ptr::null_mut()) }; MAX_SUBS];

/// Reads the mode from the environment (without allocating: this runs inside `malloc`).
#[cold]
fn init_mode() -> u8 {
    // SAFETY: getenv returns NULL or a NUL-terminated string of the environment; it does not
    // allocate.
    let v = unsafe { libc::getenv(c"TOUCAN_HEAP".as_ptr()) };
    let system = !v.is_null() && {
        // SAFETY: as above.
        let s = unsafe { std::ffi::CStr::from_ptr(v) }.to_bytes();
        s == b"system" || s == b"glibc" || s == b"off"
    };
    let m = if system { SYSTEM } else { SUBRANK };
    if m == SUBRANK {
        // SAFETY: as above.
        let r = unsafe { libc::getenv(c"TOUCAN_HEAP_RETAIN".as_ptr()) };
        let ms = if r.is_null() {
            DEFAULT_RETAIN_MS
        } else {
            // SAFETY: as above.
            let s = unsafe { std::ffi::CStr::from_ptr(r) }.to_bytes();
            parse_ms(s).unwrap_or(DEFAULT_RETAIN_MS)
        };
        // SAFETY: options may be set at any time; purge_delay is option 15 of mimalloc 3.
        unsafe { mi::mi_option_set(MI_OPTION_PURGE_DELAY, ms) };
        // SAFETY: as above.
        if unsafe { libc::getenv(c"MIMALLOC_ARENA_RESERVE".as_ptr()) }.is_null() {
            // SAFETY: as above; arena_reserve is option 23 of mimalloc 3, in KiB.
            unsafe { mi::mi_option_set(MI_OPTION_ARENA_RESERVE, ARENA_RESERVE_KIB) };
        }
    }
    MODE.store(m, Ordering::Release);
    m
}

/// mimalloc's `mi_option_purge_delay`.
const MI_OPTION_PURGE_DELAY: mi::mi_option_t = 15;
/// mimalloc's `mi_option_arena_reserve`.
const MI_OPTION_ARENA_RESERVE: mi::mi_option_t = 23;
/// The first arenas' size (KiB; later ones double every 8). Each heap keeps, for each arena
/// it has used, a page bitmap per size class (75 of them), sized by the arena: 160 KiB per
/// heap for mimalloc's default of 1 GiB, 10 KiB for 64 MiB (measured: 256 idle subranks
/// take 37 MiB less). `MIMALLOC_ARENA_RESERVE` still decides when set.
const ARENA_RESERVE_KIB: libc::c_long = 64 * 1024;
/// Milliseconds a freed page stays with its heap before it goes back to the system.
const DEFAULT_RETAIN_MS: libc::c_long = 10_000;

/// `TOUCAN_HEAP_RETAIN`: milliseconds (`-1`: never purge), or with an `s` suffix seconds.
fn parse_ms(s: &[u8]) -> Option<libc::c_long> {
    let s = std::str::from_utf8(s).ok()?.trim();
    if s == "-1" || s == "forever" {
        return Some(-1);
    }
    if let Some(ms) = s.strip_suffix("ms") {
        return ms.trim().parse().ok();
    }
    if let Some(sec) = s.strip_suffix('s') {
        return sec.trim().parse::<libc::c_long>().ok().map(|v| v.saturating_mul(1000));
    }
    s.parse().ok()
}

#[inline]
pub fn mode() -> Mode {
    let m = match MODE.load(Ordering::Relaxed) {
        UNKNOWN => init_mode(),
        m => m,
    };
    if m == SYSTEM {
        Mode::System
    } else {
        Mode::Subrank
    }
}

/// While nonzero, every allocation goes to the shared heap (see `shared_while`).
static PAUSED: AtomicUsize = AtomicUsize::new(0);

/// Runs `f` with every allocation on the shared heap: for loading and initialising the real
/// MPI, whose libraries' constructors free, with the C library's `free` (they are bound to
/// it until `rebind`), blocks that the C library's functions allocated through ours.
pub fn shared_while<T>(f: impl FnOnce() -> T) -> T {
    PAUSED.fetch_add(1, Ordering::AcqRel);
    let r = f();
    PAUSED.fetch_sub(1, Ordering::AcqRel);
    r
}

/// The running subrank's heap, None outside a subrank (or in system mode).
#[inline]
pub fn own() -> Option<*mut mi::mi_heap_t> {
    if mode() == Mode::System || PAUSED.load(Ordering::Relaxed) != 0 {
        return None;
    }
    let id = sched::current();
    if id >= MAX_SUBS {
        return None;
    }
    let h = HEAPS[id].load(Ordering::Relaxed);
    if !h.is_null() {
        return Some(h);
    }
    make(id)
}

#[cold]
fn make(id: usize) -> Option<*mut mi::mi_heap_t> {
    // Helper tasks (nonblocking collectives) allocate for their subrank's MPI calls: the
    // shared heap.
    if sched::task::get(id).is_none_or(|s| s.helper.load(Ordering::Relaxed)) {
        return None;
    }
    // SAFETY: a new heap; mimalloc 3's heaps may be used from any thread. Only subrank `id`
    // (running on one worker at a time) creates its own.
    let h = unsafe { mi::mi_heap_new() };
    if h.is_null() {
        return None;
    }
    USED.store(true, Ordering::Release);
    HEAPS[id].store(h, Ordering::Release);
    stats::register(h, id);
    Some(h)
}

/// Whether the block at address `p` is ours (mimalloc's), not the C library's.
#[inline]
pub fn ours(p: usize) -> bool {
    // SAFETY: a lookup in mimalloc's page map, which any address may be asked.
    USED.load(Ordering::Acquire) && p != 0 && unsafe { mi::mi_is_in_heap_region(p as *const c_void) }
}

/// The heap that holds the block (of ours) at address `p`.
fn heap_of(p: usize) -> *mut mi::mi_heap_t {
    // SAFETY: a lookup in mimalloc's page map (null for an address it does not know).
    unsafe { mi_heap_of(p as *const c_void) }
}

/// Per-subrank heap bytes for the report: live bytes and their peak, by heap, counted only
/// while `enable` was called (TOUCAN_REPORT).
pub mod stats {
    use super::*;

    static ON: AtomicBool = AtomicBool::new(false);
    /// (heap address, subrank + 1) pairs, open addressing; written under creation only.
    const SLOTS: usize = 2 * MAX_SUBS;
    static KEYS: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
    static VALS: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
    static LIVE: [AtomicUsize; MAX_SUBS] = [const { AtomicUsize::new(0) }; MAX_SUBS];
    static PEAK: [AtomicUsize; MAX_SUBS] = [const { AtomicUsize::new(0) }; MAX_SUBS];

    pub fn enable() {
        ON.store(true, Ordering::Release);
    }

    #[inline]
    pub fn on() -> bool {
        ON.load(Ordering::Relaxed)
    }

    fn slot_of(h: usize) -> usize {
        (h >> 4).wrapping_mul(0x9E37_79B9_7F4A_7C15) % SLOTS
    }

    pub(super) fn register(h: *mut mi::mi_heap_t, id: usize) {
        let h = h as usize;
        let mut i = slot_of(h);
        for _ in 0..SLOTS {
            if KEYS[i].compare_exchange(0, h, Ordering::AcqRel, Ordering::Acquire).is_ok() {
                VALS[i].store(id + 1, Ordering::Release);
                return;
            }
            i = (i + 1) % SLOTS;
        }
    }

    fn subrank_of(h: *mut mi::mi_heap_t) -> Option<usize> {
        let h = h as usize;
        let mut i = slot_of(h);
        for _ in 0..SLOTS {
            match KEYS[i].load(Ordering::Acquire) {
                0 => return None,
                k if k == h => return VALS[i].load(Ordering::Acquire).checked_sub(1),
                _ => i = (i + 1) % SLOTS,
            }
        }
        None
    }

    /// A block of `n` bytes was allocated by subrank `id`.
    #[inline]
    pub fn alloc(id_heap: *mut mi::mi_heap_t, n: usize) {
        if let Some(id) = subrank_of(id_heap) {
            let now = LIVE[id].fetch_add(n, Ordering::Relaxed) + n;
            PEAK[id].fetch_max(now, Ordering::Relaxed);
        }
    }

    /// The block of ours at address `p` (`n` bytes) is about to be freed.
    #[inline]
    pub fn free(p: usize, n: usize) {
        if let Some(id) = subrank_of(heap_of(p)) {
            let _ = LIVE[id].fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| Some(v.saturating_sub(n)));
        }
    }

    /// Subrank `id`'s peak heap bytes (0 without a heap or counting).
    pub fn peak(id: usize) -> usize {
        if id < MAX_SUBS {
            PEAK[id].load(Ordering::Relaxed)
        } else {
            0
        }
    }
}

/// The family's names, as the C library exports them.
const FAMILY: [&[u8]; 11] = [
    b"malloc",
    b"free",
    b"calloc",
    b"realloc",
    b"reallocarray",
    b"posix_memalign",
    b"aligned_alloc",
    b"memalign",
    b"valloc",
    b"pvalloc",
    b"malloc_usable_size",
];

unsafe extern "C" fn collect(info: *mut libc::dl_phdr_info, _size: usize, data: *mut c_void) -> libc::c_int {
    // SAFETY: the loader passes a valid dl_phdr_info; `data` is the vector `rebind` passed.
    let (info, out) = unsafe { (&*info, &mut *(data as *mut Vec<crate::got::Object>)) };
    if let Some(o) = crate::got::object_from(info) {
        out.push(o);
    }
    0
}

/// The family's functions, ours and the C library's, in `FAMILY`'s order; None in system
/// mode, in unit tests, or when the C library cannot be found.
fn functions() -> Option<([usize; 11], [usize; 11])> {
    if mode() == Mode::System {
        return None;
    }
    #[cfg(any(test, fuzzing))]
    let ours: [usize; 11] = [0; 11];
    #[cfg(not(any(test, fuzzing)))]
    let ours: [usize; 11] = {
        use crate::abi::malloc as m;
        [
            m::malloc as *const () as usize,
            m::free as *const () as usize,
            m::calloc as *const () as usize,
            m::realloc as *const () as usize,
            m::reallocarray as *const () as usize,
            m::posix_memalign as *const () as usize,
            m::aligned_alloc as *const () as usize,
            m::memalign as *const () as usize,
            m::valloc as *const () as usize,
            m::pvalloc as *const () as usize,
            m::malloc_usable_size as *const () as usize,
        ]
    };
    if ours[0] == 0 {
        return None;
    }
    // SAFETY: RTLD_NOLOAD only finds the already loaded C library; dlsym on its handle gives
    // its own definitions.
    let theirs: [usize; 11] = unsafe {
        let h = libc::dlopen(c"libc.so.6".as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD);
        if h.is_null() {
            return None;
        }
        let t = std::array::from_fn(|i| {
            let mut name = FAMILY[i].to_vec();
            name.push(0);
            libc::dlsym(h, name.as_ptr().cast()) as usize
        });
        libc::dlclose(h);
        t
    };
    Some((ours, theirs))
}

/// The objects loaded now.
pub fn loaded() -> Vec<crate::got::Object> {
    let mut objects = Vec::new();
    // SAFETY: the callback only reads the loader's structures and pushes into `objects`.
    unsafe { libc::dl_iterate_phdr(Some(collect), &mut objects as *mut _ as *mut c_void) };
    objects
}

/// Points every loaded object's imports of the family that are bound to the C library's
/// functions (the real MPI and its libraries, loaded `RTLD_DEEPBIND`) at ours, so that every
/// block reaches a `free` that knows it. Returns how many slots changed. Call after loading
/// the real MPI and after its initialisation (which loads transport modules), while no
/// other thread allocates through those objects.
pub fn rebind() -> usize {
    let Some((ours, theirs)) = functions() else { return 0 };
    let mut changed = 0;
    for o in &loaded() {
        // SAFETY: `o` is a loaded object; a slot whose value is the C library's function of
        // that name is an import bound to it, and our function has the same type and accepts
        // the C library's blocks. A pointer-sized aligned store: a concurrent caller sees the
        // old or the new function, both of which handle every block.
        unsafe {
            crate::got::for_each_import(o, true, |name, slot| {
                if let Some(k) = FAMILY.iter().position(|n| *n == name) {
                    if theirs[k] != 0 && *slot == theirs[k] && crate::got::patch(slot, ours[k]) {
                        changed += 1;
                    }
                }
            })
        };
    }
    changed
}

/// After the program's `dlopen(..., RTLD_DEEPBIND)` returned `handle`: the objects that call
/// loaded (those not in `before`) look their symbols up in their own scope first, where the
/// C library's malloc family comes before ours, so a block of a subrank's heap would reach
/// the C library's `free`. Their imports of the family (and of `extra`: name, ours, the C
/// library's) that this scope resolves to the C library's are pointed at ours, bound already
/// or still lazy. Returns how many slots changed.
///
/// # Safety
/// `handle` must be what `dlopen` just returned.
pub unsafe fn bind_deep(before: &[crate::got::Object], handle: *mut c_void, extra: &[(&[u8], usize, usize)]) -> usize {
    let Some((ours, theirs)) = functions() else { return 0 };
    let mut names: Vec<(&[u8], usize)> = Vec::new();
    let table = FAMILY.iter().zip(ours.iter().zip(theirs.iter())).map(|(n, (o, t))| (*n, *o, *t));
    for (name, o, t) in table.chain(extra.iter().copied()) {
        let mut z = name.to_vec();
        z.push(0);
        // SAFETY: a lookup in the new object's own scope (itself, then its dependencies),
        // which is where its deep-bound imports resolve.
        let found = unsafe { libc::dlsym(handle, z.as_ptr().cast()) } as usize;
        if o != 0 && t != 0 && found == t {
            names.push((name, o));
        }
    }
    let mut changed = 0;
    for obj in loaded().iter().filter(|o| !before.contains(o)) {
        // SAFETY: `obj` was just loaded; an import of a name it does not define, whose lookup
        // in its scope gives the C library's function, is (or will be, if lazy) bound to it;
        // ours has the same type and handles the C library's blocks too.
        unsafe {
            crate::got::for_each_undefined_import(obj, true, |name, slot| {
                if let Some(&(_, o)) = names.iter().find(|(n, _)| *n == name) {
                    if *slot != o && crate::got::patch(slot, o) {
                        changed += 1;
                    }
                }
            })
        };
    }
    changed
}

/// The library's own allocations (Rust's global allocator) stay off the subranks' heaps,
/// whatever subrank runs: the runtime's objects (message copies, queues, requests) are not
/// the program's, and would otherwise spread over every subrank's heap (each heap takes whole
/// pages per size class: 0.9 MiB more per idle subrank, measured). They go to mimalloc's
/// heap of the calling thread (`mi_malloc`: the worker's, shared by all its subranks), or to
/// the C library's with `TOUCAN_HEAP=system`. mimalloc's fast paths cost a fraction of the C
/// library's: a V=1 `MPI_Bcast` made four allocations of ~150 instructions each (glibc's
/// `malloc` + `_int_free`), about a fifth of the call's own instructions (callgrind).
/// The mode is fixed at the first allocation and never changes, so every block is freed by
/// the allocator that made it.
pub struct Runtime;

extern "C" {
    fn __libc_malloc(n: usize) -> *mut c_void;
    fn __libc_free(p: *mut c_void);
    fn __libc_calloc(n: usize, size: usize) -> *mut c_void;
    fn __libc_realloc(p: *mut c_void, n: usize) -> *mut c_void;
    fn __libc_memalign(align: usize, n: usize) -> *mut c_void;
}

/// What glibc's malloc aligns to by itself.
const MIN_ALIGN: usize = 16;
/// What mimalloc's `mi_malloc` aligns every block to, whatever its size (a word; 16 only
/// from 16 bytes up): larger alignments take the `_aligned` calls.
const MI_WORD: usize = 8;

/// Whether the runtime's blocks are mimalloc's (the heap mode is `Subrank`).
#[inline(always)]
fn runtime_on_mimalloc() -> bool {
    let on = mode() == Mode::Subrank;
    if on && !USED.load(Ordering::Relaxed) {
        // Frees of the program's `free` ask mimalloc's page map from now on (a runtime block
        // never reaches them, but if one did it must go to mimalloc).
        USED.store(true, Ordering::Release);
    }
    on
}

// SAFETY: mimalloc's and the C library's allocators both meet GlobalAlloc's contract: blocks
// of at least the requested size and alignment, freed and reallocated by the same allocator
// (the mode never changes once read, `runtime_on_mimalloc`).
unsafe impl std::alloc::GlobalAlloc for Runtime {
    unsafe fn alloc(&self, l: std::alloc::Layout) -> *mut u8 {
        // SAFETY: as the allocators' functions.
        unsafe {
            if runtime_on_mimalloc() {
                if l.align() <= MI_WORD {
                    mi::mi_malloc(l.size()).cast()
                } else {
                    mi::mi_malloc_aligned(l.size(), l.align()).cast()
                }
            } else if l.align() <= MIN_ALIGN {
                __libc_malloc(l.size()).cast()
            } else {
                __libc_memalign(l.align(), l.size()).cast()
            }
        }
    }
    unsafe fn alloc_zeroed(&self, l: std::alloc::Layout) -> *mut u8 {
        // SAFETY: as the allocators' functions.
        unsafe {
            if runtime_on_mimalloc() {
                if l.align() <= MI_WORD {
                    mi::mi_zalloc(l.size()).cast()
                } else {
                    mi::mi_zalloc_aligned(l.size(), l.align()).cast()
                }
            } else if l.align() <= MIN_ALIGN {
                __libc_calloc(1, l.size()).cast()
            } else {
                let p: *mut u8 = __libc_memalign(l.align(), l.size()).cast();
                if !p.is_null() {
                    std::ptr::write_bytes(p, 0, l.size());
                }
                p
            }
        }
    }
    unsafe fn dealloc(&self, p: *mut u8, _l: std::alloc::Layout) {
        // SAFETY: `p` came from this allocator, in the same mode.
        unsafe {
            if runtime_on_mimalloc() {
                mi::mi_free(p.cast())
            } else {
                __libc_free(p.cast())
            }
        }
    }
    unsafe fn realloc(&self, p: *mut u8, l: std::alloc::Layout, n: usize) -> *mut u8 {
        // SAFETY: `p` came from this allocator with layout `l`, in the same mode.
        unsafe {
            if runtime_on_mimalloc() {
                if l.align() <= MI_WORD {
                    mi::mi_realloc(p.cast(), n).cast()
                } else {
                    mi::mi_realloc_aligned(p.cast(), n, l.align()).cast()
                }
            } else if l.align() <= MIN_ALIGN {
                __libc_realloc(p.cast(), n).cast()
            } else {
                let q: *mut u8 = __libc_memalign(l.align(), n).cast();
                if !q.is_null() {
                    std::ptr::copy_nonoverlapping(p, q, l.size().min(n));
                    __libc_free(p.cast());
                }
                q
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case(b"250", Some(250))]
    #[case(b"250ms", Some(250))]
    #[case(b"3s", Some(3000))]
    #[case(b"-1", Some(-1))]
    #[case(b"forever", Some(-1))]
    #[case(b"x", None)]
    fn retain_values(#[case] s: &[u8], #[case] want: Option<libc::c_long>) {
        assert_eq!(parse_ms(s), want);
    }
}
