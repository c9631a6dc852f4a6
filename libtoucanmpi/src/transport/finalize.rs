//! Keeps UCX progressing while the real `MPI_Finalize` waits in the launcher's barrier.
//!
//! MPICH 4.0.2's ch4:ucx finalize closes every endpoint in flush mode, polls its UCX worker
//! until those closes complete, then waits in the launcher's (PMI) barrier, a blocking `read`
//! on the PMI socket, and only after it destroys the worker. Over TCP a close can need the
//! peer's progress: a process whose closes completed first sits in the barrier without
//! polling, and its peers spin in their flush forever (measured here: 1 in 10 jobs of plain
//! MPICH `MPI_Init; MPI_Barrier; MPI_Finalize` at `-np 3` with `UCX_TLS=tcp`; most Toucan jobs
//! at n=3). Stacks of a hung job: one process in `read` under `PMPI_Finalize`, the others in
//! `ucp_worker_progress` under it.
//!
//! So just before calling the real `MPI_Finalize` we redirect three of the real MPI library's
//! own imports (its PLT slots; it is loaded `RTLD_DEEPBIND`, so nothing can interpose them by
//! name): `ucp_worker_progress` (to learn its worker), `ucp_worker_destroy` (to forget it) and
//! `read`. While a worker is known, a `read` first waits for its descriptor to become
//! readable, polling the worker every millisecond meanwhile. The only reads the real MPI makes
//! inside `MPI_Finalize` are on the launcher's socket, and all of this happens on the thread
//! that called `MPI_Finalize` (the background progress thread has stopped), so the worker is
//! used as serially as the real MPI itself uses it. A library without those three imports
//! (another MPI, another transport) is left untouched. `TOUCAN_FINALIZE_PROGRESS=off` turns
//! it off.

use std::os::raw::{c_int, c_uint, c_void};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

type ProgressFn = unsafe extern "C" fn(*mut c_void) -> c_uint;
type DestroyFn = unsafe extern "C" fn(*mut c_void);
type ReadFn = unsafe extern "C" fn(c_int, *mut c_void, usize) -> isize;

/// The UCX worker the real MPI last polled, until it destroys it.
static WORKER: AtomicPtr<c_void> = AtomicPtr::new(null_mut());
/// What the redirected slots held before (the real functions).
static REAL_PROGRESS: AtomicUsize = AtomicUsize::new(0);
static REAL_DESTROY: AtomicUsize = AtomicUsize::new(0);
static REAL_READ: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn progress_hook(worker: *mut c_void) -> c_uint {
    WORKER.store(worker, Ordering::SeqCst);
    // SAFETY: REAL_PROGRESS holds the slot's former value, UCX's ucp_worker_progress, set
    // before the slot was redirected here.
    let real: ProgressFn = unsafe { std::mem::transmute::<usize, ProgressFn>(REAL_PROGRESS.load(Ordering::SeqCst)) };
    // SAFETY: forwarding the real MPI's own call unchanged.
    unsafe { real(worker) }
}

unsafe extern "C" fn destroy_hook(worker: *mut c_void) {
    let _ = WORKER.compare_exchange(worker, null_mut(), Ordering::SeqCst, Ordering::SeqCst);
    // SAFETY: REAL_DESTROY holds UCX's ucp_worker_destroy (the slot's former value).
    let real: DestroyFn = unsafe { std::mem::transmute::<usize, DestroyFn>(REAL_DESTROY.load(Ordering::SeqCst)) };
    // SAFETY: forwarding the real MPI's own call unchanged.
    unsafe { real(worker) }
}

unsafe extern "C" fn read_hook(fd: c_int, buf: *mut c_void, count: usize) -> isize {
    let worker = WORKER.load(Ordering::SeqCst);
    if !worker.is_null() {
        // SAFETY: REAL_PROGRESS holds UCX's ucp_worker_progress (see progress_hook).
        let progress: ProgressFn = unsafe { std::mem::transmute::<usize, ProgressFn>(REAL_PROGRESS.load(Ordering::SeqCst)) };
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        loop {
            // SAFETY: poll on one valid pollfd structure.
            let r = unsafe { libc::poll(&mut p, 1, 1) };
            if r > 0 || (r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR)) {
                break; // readable, hung up, or an error the read itself will report
            }
            // SAFETY: the worker is alive (destroy_hook clears WORKER first) and only this
            // thread, now inside the real MPI_Finalize, uses it.
            unsafe { progress(worker) };
        }
    }
    // SAFETY: REAL_READ holds the C library's read (the slot's former value); the arguments
    // are the real MPI's own.
    let real: ReadFn = unsafe { std::mem::transmute::<usize, ReadFn>(REAL_READ.load(Ordering::SeqCst)) };
    unsafe { real(fd, buf, count) }
}

/// A loaded object: its load bias and its dynamic section (in memory).
pub(crate) struct Object {
    pub bias: usize,
    pub dynamic: usize,
}

unsafe extern "C" fn find_object(info: *mut libc::dl_phdr_info, _size: usize, data: *mut c_void) -> c_int {
    // SAFETY: the loader passes a valid dl_phdr_info; `data` is the (address, result) pair
    // that `object_of` passed in.
    let (info, want) = unsafe { (&*info, &mut *(data as *mut (usize, Option<Object>))) };
    let bias = info.dlpi_addr as usize;
    // SAFETY: dlpi_phdr points at dlpi_phnum program headers of this object.
    let phdrs = unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) };
    let inside = phdrs.iter().any(|p| {
        let start = bias.wrapping_add(p.p_vaddr as usize);
        p.p_type == libc::PT_LOAD && want.0 >= start && want.0 < start + p.p_memsz as usize
    });
    if !inside {
        return 0;
    }
    want.1 = object_from(info);
    1
}

/// The object a dl_phdr_info describes, when it has a dynamic section.
pub(crate) fn object_from(info: &libc::dl_phdr_info) -> Option<Object> {
    let bias = info.dlpi_addr as usize;
    // SAFETY: dlpi_phdr points at dlpi_phnum program headers of this object.
    let phdrs = unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) };
    phdrs.iter().find(|p| p.p_type == libc::PT_DYNAMIC).map(|d| Object {
        bias,
        dynamic: bias.wrapping_add(d.p_vaddr as usize),
    })
}

/// The loaded object that contains `addr`.
pub(crate) fn object_of(addr: usize) -> Option<Object> {
    let mut data: (usize, Option<Object>) = (addr, None);
    // SAFETY: the callback only reads the loader's structures and writes `data`, which
    // outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(find_object), &mut data as *mut _ as *mut c_void) };
    data.1
}

const DT_NULL: u64 = 0;
const DT_PLTRELSZ: u64 = 2;
const DT_STRTAB: u64 = 5;
const DT_SYMTAB: u64 = 6;
const DT_RELA: u64 = 7;
const DT_RELASZ: u64 = 8;
const DT_PLTREL: u64 = 20;
const DT_JMPREL: u64 = 23;
const R_X86_64_GLOB_DAT: u64 = 6;
const R_X86_64_JUMP_SLOT: u64 = 7;
const R_AARCH64_GLOB_DAT: u64 = 1025;
const R_AARCH64_JUMP_SLOT: u64 = 1026;

/// Calls `f(name, slot)` for each of `obj`'s imports bound through a slot: its PLT slots
/// (DT_JMPREL) and, with `data`, its GOT entries of GLOB_DAT relocations (DT_RELA).
///
/// # Safety
/// `obj` must describe a loaded 64-bit ELF object (RELA relocations).
pub(crate) unsafe fn for_each_import(obj: &Object, data: bool, mut f: impl FnMut(&[u8], *mut usize)) {
    let (mut jmprel, mut pltrelsz, mut symtab, mut strtab, mut pltrel) = (0usize, 0usize, 0usize, 0usize, DT_RELA);
    let (mut rela, mut relasz) = (0usize, 0usize);
    let mut d = obj.dynamic as *const u64;
    // The loader rebases these pointers in place on most targets; where it does not, they
    // are still relative to the load bias.
    let abs = |v: u64| {
        if (v as usize) < obj.bias {
            obj.bias + v as usize
        } else {
            v as usize
        }
    };
    loop {
        // SAFETY: the dynamic section is an array of (tag, value) pairs ending in DT_NULL.
        let (tag, val) = unsafe { (*d, *d.add(1)) };
        match tag {
            DT_NULL => break,
            DT_JMPREL => jmprel = abs(val),
            DT_PLTRELSZ => pltrelsz = val as usize,
            DT_SYMTAB => symtab = abs(val),
            DT_STRTAB => strtab = abs(val),
            DT_PLTREL => pltrel = val,
            DT_RELA => rela = abs(val),
            DT_RELASZ => relasz = val as usize,
            _ => {}
        }
        // SAFETY: not past DT_NULL yet.
        d = unsafe { d.add(2) };
    }
    if symtab == 0 || strtab == 0 || pltrel != DT_RELA {
        return;
    }
    let mut tables = vec![(jmprel, pltrelsz)];
    if data {
        tables.push((rela, relasz));
    }
    for (table, size) in tables {
        if table == 0 {
            continue;
        }
        for i in 0..size / 24 {
            // SAFETY: Elf64_Rela entries (offset, info, addend) within the table's bytes;
            // Elf64_Sym entries (name offset first) in the symbol table; names are
            // NUL-terminated in the string table.
            let (offset, info) = unsafe {
                let r = (table + i * 24) as *const u64;
                (*r, *r.add(1))
            };
            let kind = info & 0xffff_ffff;
            if !matches!(
                kind,
                R_X86_64_GLOB_DAT | R_X86_64_JUMP_SLOT | R_AARCH64_GLOB_DAT | R_AARCH64_JUMP_SLOT
            ) {
                continue;
            }
            let sym = (info >> 32) as usize;
            if sym == 0 {
                continue;
            }
            // SAFETY: as above.
            let name = unsafe {
                let st_name = *((symtab + sym * 24) as *const u32) as usize;
                std::ffi::CStr::from_ptr((strtab + st_name) as *const std::os::raw::c_char)
            };
            f(name.to_bytes(), obj.bias.wrapping_add(offset as usize) as *mut usize);
        }
    }
}

/// Addresses of `obj`'s PLT slots (GOT entries) for the imports named in `names`, in that
/// order; None for a name it does not import through its PLT.
///
/// # Safety
/// `obj` must describe a loaded 64-bit ELF object (RELA relocations).
unsafe fn plt_slots(obj: &Object, names: &[&[u8]]) -> Vec<Option<*mut usize>> {
    let mut out = vec![None; names.len()];
    // SAFETY: forwarded from the caller.
    unsafe {
        for_each_import(obj, false, |name, slot| {
            if let Some(k) = names.iter().position(|n| *n == name) {
                out[k].get_or_insert(slot);
            }
        })
    };
    out
}

/// Writes `value` into the slot at `slot`, making its page writable first.
///
/// # Safety
/// `slot` must be a PLT slot of a loaded object that no other thread is calling through.
pub(crate) unsafe fn patch(slot: *mut usize, value: usize) -> bool {
    let page = 4096usize.max(
        // SAFETY: sysconf has no preconditions.
        unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize,
    );
    let start = (slot as usize) & !(page - 1);
    // SAFETY: the page holds the object's GOT; making it writable changes no content.
    if unsafe { libc::mprotect(start as *mut c_void, page, libc::PROT_READ | libc::PROT_WRITE) } != 0 {
        return false;
    }
    // SAFETY: a pointer-sized, aligned slot in a now writable page.
    unsafe { std::ptr::write_volatile(slot, value) };
    true
}

/// Redirects the real MPI's imports as the module comment says; `inside` is the address of
/// any function of the real MPI library. Returns whether it did. Call on the thread that is
/// about to call the real `MPI_Finalize`, with no other thread in the real MPI.
pub fn install(inside: usize) -> bool {
    if std::env::var("TOUCAN_FINALIZE_PROGRESS").is_ok_and(|v| matches!(v.trim(), "off" | "0")) {
        return false;
    }
    let Some(obj) = object_of(inside) else { return false };
    // SAFETY: `obj` is the loaded real MPI library (found by an address inside it).
    let slots = unsafe { plt_slots(&obj, &[b"ucp_worker_progress", b"ucp_worker_destroy", b"read"]) };
    let [Some(progress), Some(destroy), Some(read)] = slots[..] else {
        return false;
    };
    // SAFETY: the slots are the library's GOT entries, already bound (it was loaded with
    // RTLD_NOW); the saved values are the functions they call. No other thread is in the
    // real MPI (the caller's promise), so nobody calls through a slot while it changes.
    unsafe {
        REAL_PROGRESS.store(*progress, Ordering::SeqCst);
        REAL_DESTROY.store(*destroy, Ordering::SeqCst);
        REAL_READ.store(*read, Ordering::SeqCst);
        patch(progress, progress_hook as *const () as usize)
            && patch(destroy, destroy_hook as *const () as usize)
            && patch(read, read_hook as *const () as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_real_mpis_ucx_and_read_imports() {
        let path = env!("TOUCAN_REAL_MPI_DEFAULT");
        // SAFETY: loading the real MPI library as the runtime does.
        let lib =
            unsafe { libloading::os::unix::Library::open(Some(path), libc::RTLD_NOW | libc::RTLD_LOCAL | libc::RTLD_DEEPBIND) }.unwrap();
        // SAFETY: looking up an exported function's address.
        let f: libloading::os::unix::Symbol<unsafe extern "C" fn() -> c_int> = unsafe { lib.get(b"PMPI_Finalize\0") }.unwrap();
        let obj = object_of(*f as usize).expect("the library is loaded");
        // SAFETY: a loaded 64-bit object.
        let slots = unsafe { plt_slots(&obj, &[b"read", b"no_such_import_xyz"]) };
        assert!(slots[0].is_some());
        assert!(slots[1].is_none());
        // The slot holds the C library's read, as the loader bound it.
        // SAFETY: reading a bound GOT entry; dlsym with a valid name.
        let (bound, read) = unsafe { (*slots[0].unwrap(), libc::dlsym(libc::RTLD_DEFAULT, c"read".as_ptr()) as usize) };
        assert_eq!(bound, read);
    }
}
