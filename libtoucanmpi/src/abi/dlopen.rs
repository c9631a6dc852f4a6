//! `dlopen` interposed for `RTLD_DEEPBIND` (issue 15): a library the program opens with it
//! looks symbols up in its own scope first, where the C library's `malloc` and `free` come
//! before ours, so it would hand a block of a subrank's heap to the C library's `free`
//! (which aborts: "free(): invalid pointer"). After such a `dlopen`, the imports of the
//! malloc family (and of `dlopen`) of the objects it loaded are pointed at ours
//! (`heap::bind_deep`).
//!
//! Every other `dlopen` jumps straight to the C library's (a tail call from a naked
//! function), so the C library still sees the program's own return address: its search of
//! the caller's `RPATH`/`RUNPATH` is unchanged. A deep-bound `dlopen` comes from here
//! instead: a bare library name (no `/`) that is not loaded yet is first looked for in the
//! directories the caller's own search would try before the loader's cache (its
//! `RPATH`/`RUNPATH` and `LD_LIBRARY_PATH`, from `dlinfo(RTLD_DI_SERINFO)` of the caller),
//! then left to the C library (cache, system directories). Toucan's own deep-bound loads
//! (the real MPI) and `TOUCAN_HEAP=system` take the C library's `dlopen` unchanged.

use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The C library's `dlopen` (0 until first needed).
static REAL: AtomicUsize = AtomicUsize::new(0);

/// Finds the C library's `dlopen` (the next definition after ours).
extern "C" fn resolve() -> usize {
    let mut f = REAL.load(Ordering::Acquire);
    if f == 0 {
        // SAFETY: dlsym with RTLD_NEXT from this library finds the C library's definition.
        f = unsafe { libc::dlsym(libc::RTLD_NEXT, c"dlopen".as_ptr()) } as usize;
        REAL.store(f, Ordering::Release);
    }
    f
}

/// Calls the C library's `dlopen`.
fn real(file: *const c_char, flags: c_int) -> *mut c_void {
    let f = resolve();
    if f == 0 {
        return std::ptr::null_mut();
    }
    // SAFETY: `f` is the C library's dlopen, which has this type; the arguments are the
    // program's.
    unsafe {
        let f: unsafe extern "C" fn(*const c_char, c_int) -> *mut c_void = std::mem::transmute(f);
        f(file, flags)
    }
}

/// A `dlopen` with `RTLD_DEEPBIND` from the code at `caller`.
extern "C" fn deep(file: *const c_char, flags: c_int, caller: usize) -> *mut c_void {
    let ours = crate::got::object_of(deep as *const () as usize);
    if crate::heap::mode() == crate::heap::Mode::System || (ours.is_some() && crate::got::object_of(caller) == ours) {
        return real(file, flags);
    }
    let before = crate::heap::loaded();
    let found = in_callers_path(file, caller);
    let h = real(found.as_ref().map_or(file, |p| p.as_ptr()), flags);
    if !h.is_null() {
        let extra: [(&[u8], usize, usize); 1] = [(b"dlopen", dlopen as *const () as usize, resolve())];
        // SAFETY: `h` is the handle dlopen just returned.
        unsafe { crate::heap::bind_deep(&before, h, &extra) };
    }
    h
}

#[repr(C)]
struct SerPath {
    name: *mut c_char,
    flags: libc::c_uint,
}

#[repr(C)]
struct SerInfo {
    size: usize,
    count: libc::c_uint,
    paths: [SerPath; 1],
}

/// The directories, in order, where the loader looks for a bare library name that the code
/// at `addr` opens (`dlinfo(RTLD_DI_SERINFO)` of its object; the cache is not listed).
fn search_dirs(addr: usize) -> Vec<Vec<u8>> {
    // SAFETY: a plain C struct, all zero is valid.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    let mut map: *mut c_void = std::ptr::null_mut();
    // SAFETY: dladdr1 with RTLD_DL_LINKMAP (2) writes the object's link map, which glibc's
    // dlinfo takes as a handle.
    if unsafe { libc::dladdr1(addr as *const c_void, &mut info, &mut map, 2) } == 0 || map.is_null() {
        return Vec::new();
    }
    let mut head = SerInfo {
        size: 0,
        count: 0,
        paths: [SerPath {
            name: std::ptr::null_mut(),
            flags: 0,
        }],
    };
    // SAFETY: SERINFOSIZE fills the size and count fields of a Dl_serinfo.
    if unsafe { libc::dlinfo(map, libc::RTLD_DI_SERINFOSIZE, (&mut head as *mut SerInfo).cast()) } != 0 {
        return Vec::new();
    }
    // A buffer of the size it asked for, 8-aligned, with the header filled in.
    let mut buf = vec![0u64; head.size.div_ceil(8).max(std::mem::size_of::<SerInfo>() / 8)];
    let full = buf.as_mut_ptr() as *mut SerInfo;
    // SAFETY: `buf` is large enough and aligned for a Dl_serinfo of that size; dlinfo
    // writes the directories and their names into it.
    unsafe {
        (*full).size = head.size;
        (*full).count = head.count;
        if libc::dlinfo(map, libc::RTLD_DI_SERINFO, full.cast()) != 0 {
            return Vec::new();
        }
    }
    (0..head.count as usize)
        .map(|i| {
            // SAFETY: `count` entries follow the header; each name is NUL-terminated in `buf`.
            unsafe { std::ffi::CStr::from_ptr((*(*full).paths.as_ptr().add(i)).name) }
                .to_bytes()
                .to_vec()
        })
        .collect()
}

/// Where the loader would find the bare library name `file` for the code at `caller` in a
/// directory of the caller's own (its `RPATH`/`RUNPATH`), which a search from here would
/// not try; None for a name with a `/`, a name loaded already, or one that the caller's
/// search finds first in a directory every object searches (`LD_LIBRARY_PATH`, the system's,
/// after the cache), or not at all.
fn in_callers_path(file: *const c_char, caller: usize) -> Option<std::ffi::CString> {
    if file.is_null() {
        return None;
    }
    // SAFETY: the program passes a NUL-terminated name.
    let name = unsafe { std::ffi::CStr::from_ptr(file) }.to_bytes();
    // SAFETY: as above.
    if name.contains(&b'/') || unsafe { loaded_as(file) } {
        return None;
    }
    // A name found so before: the loader knows the object by that path only (and the
    // copies of the program that other subranks run have an $ORIGIN of their own).
    let mut found = FOUND.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, p)) = found.iter().find(|(n, _)| n == name) {
        return Some(p.clone());
    }
    // The C library has no RPATH/RUNPATH: its list is what every object searches.
    let common = search_dirs(libc::strlen as *const () as usize);
    for dir in search_dirs(caller) {
        let mut path = dir.clone();
        path.push(b'/');
        path.extend_from_slice(name);
        let Ok(path) = std::ffi::CString::new(path) else { continue };
        // SAFETY: a NUL-terminated path.
        if unsafe { libc::access(path.as_ptr(), libc::F_OK) } == 0 {
            if common.contains(&dir) {
                return None;
            }
            found.push((name.to_vec(), path.clone()));
            return Some(path);
        }
    }
    None
}

/// Bare names `in_callers_path` found in a caller's directory, and where.
static FOUND: std::sync::Mutex<Vec<(Vec<u8>, std::ffi::CString)>> = std::sync::Mutex::new(Vec::new());

/// Whether an object is loaded under the name `file`.
///
/// # Safety
/// `file` must be a NUL-terminated name.
unsafe fn loaded_as(file: *const c_char) -> bool {
    let h = real(file, libc::RTLD_LAZY | libc::RTLD_NOLOAD);
    if h.is_null() {
        return false;
    }
    // SAFETY: gives back the reference RTLD_NOLOAD took.
    unsafe { libc::dlclose(h) };
    true
}

/// # Safety
/// As the C library's `dlopen`.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
#[no_mangle]
pub unsafe extern "C" fn dlopen(file: *const c_char, flags: c_int) -> *mut c_void {
    // Without RTLD_DEEPBIND: a tail jump to the C library's dlopen (resolved once, with the
    // argument registers saved around the call and the stack aligned to 16 for it). With it:
    // `deep(file, flags, return address)`, as a tail jump too.
    core::arch::naked_asm!(
        "test esi, {deepbind}",
        "jnz 3f",
        "mov rax, qword ptr [rip + {real}]",
        "test rax, rax",
        "jz 2f",
        "jmp rax",
        "2:",
        "push rdi",
        "push rsi",
        "push rdx",
        "call {resolve}",
        "pop rdx",
        "pop rsi",
        "pop rdi",
        "test rax, rax",
        "jz 4f",
        "jmp rax",
        "3:",
        "mov rdx, qword ptr [rsp]",
        "jmp {deep}",
        "4:",
        "ret",
        deepbind = const libc::RTLD_DEEPBIND,
        real = sym REAL,
        resolve = sym resolve,
        deep = sym deep,
    )
}
