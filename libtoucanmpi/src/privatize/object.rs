//! One ELF object of the program (the executable, or a library it links) and the copies of it
//! we load. Each copy comes from its own memory-backed file and is `dlopen`ed; then it stops
//! depending on that file: read-only pages are remapped from the original file (all copies
//! share them, as they share the original's), writable ones are made private, and the file's
//! pages are freed. The copy's constructors and destructors are taken away from the dynamic loader
//! (their dynamic tags are renamed) and run by us: constructors once the copy is complete,
//! destructors from an `atexit` handler registered just before the constructors run, so a
//! copy's C++ static objects are destroyed first, then its destructor functions run.

use super::elf::{self, Image, Phdr};
use std::ffi::{CStr, CString};
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::raw::{c_char, c_int, c_void};
use std::os::unix::fs::FileExt;

type InitFn = unsafe extern "C" fn(c_int, *mut *mut c_char, *mut *mut c_char);
type FiniFn = unsafe extern "C" fn();

extern "C" {
    fn __cxa_atexit(f: unsafe extern "C" fn(*mut c_void), arg: *mut c_void, dso: *mut c_void) -> c_int;
}

pub fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
}

fn down(x: usize, p: usize) -> usize {
    x & !(p - 1)
}
fn up(x: usize, p: usize) -> usize {
    (x + p - 1) & !(p - 1)
}

/// An object of this process as the dynamic loader reports it.
pub struct Loaded {
    /// Path as the loader knows it ("" for the executable).
    pub name: String,
    /// Load bias.
    pub base: usize,
    pub phdrs: Vec<Phdr>,
    /// Its thread-local block for the calling thread (0 if none, or not allocated yet).
    pub tls_data: usize,
}

impl Loaded {
    /// Address range [start, end) of its segments.
    pub fn range(&self) -> (usize, usize) {
        let loads = self.phdrs.iter().filter(|p| p.p_type == elf::PT_LOAD);
        let start = loads.clone().map(|p| p.vaddr as usize).min().unwrap_or(0);
        let end = loads.map(|p| (p.vaddr + p.memsz) as usize).max().unwrap_or(0);
        (self.base + start, self.base + end)
    }
}

/// Every object loaded in the process, the executable first.
pub fn loaded_objects() -> Vec<Loaded> {
    unsafe extern "C" fn cb(info: *mut libc::dl_phdr_info, _size: libc::size_t, data: *mut c_void) -> c_int {
        // SAFETY: the loader passes a valid info record for the duration of the call, and
        // `data` is the vector below.
        unsafe {
            let out = &mut *(data as *mut Vec<Loaded>);
            let i = &*info;
            let name = if i.dlpi_name.is_null() {
                String::new()
            } else {
                CStr::from_ptr(i.dlpi_name).to_string_lossy().into_owned()
            };
            let phdrs = (0..i.dlpi_phnum as usize)
                .map(|k| {
                    let p = &*i.dlpi_phdr.add(k);
                    Phdr {
                        p_type: p.p_type,
                        flags: p.p_flags,
                        offset: p.p_offset,
                        vaddr: p.p_vaddr,
                        filesz: p.p_filesz,
                        memsz: p.p_memsz,
                    }
                })
                .collect();
            out.push(Loaded {
                name,
                base: i.dlpi_addr as usize,
                phdrs,
                tls_data: i.dlpi_tls_data as usize,
            });
        }
        0
    }
    let mut out: Vec<Loaded> = Vec::new();
    // SAFETY: the callback only reads the records it is given and pushes onto `out`.
    unsafe { libc::dl_iterate_phdr(Some(cb), &mut out as *mut Vec<Loaded> as *mut c_void) };
    out
}

/// Why an object cannot be copied.
pub struct Failure {
    pub reason: String,
    /// Relinking the program (as a PIE, dynamically) would fix it.
    pub relink: bool,
}

impl Failure {
    pub fn new(reason: impl Into<String>) -> Failure {
        Failure {
            reason: reason.into(),
            relink: false,
        }
    }
    pub fn relink(reason: impl Into<String>) -> Failure {
        Failure {
            reason: reason.into(),
            relink: true,
        }
    }
}

/// Destructors of one copy, run at exit.
struct Fini {
    /// The subrank it belongs to (its thread-locals are put in place while they run).
    sub: usize,
    base: usize,
    fini: Option<usize>,
    array: Option<(usize, usize)>,
}

unsafe extern "C" fn run_fini(arg: *mut c_void) {
    // SAFETY: `arg` is the leaked `Fini` registered with this handler; the copy it describes
    // is never unloaded, and its destructors run in the order the dynamic loader would use.
    unsafe {
        let f = &*(arg as *const Fini);
        crate::sched::swap::with(|s| s.switch_to(f.sub));
        if let Some((at, n)) = f.array {
            for i in (0..n).rev() {
                let p = *((f.base + at) as *const usize).add(i);
                if p != 0 && p != usize::MAX {
                    let g: FiniFn = std::mem::transmute(p);
                    g();
                }
            }
        }
        if let Some(at) = f.fini {
            let g: FiniFn = std::mem::transmute(f.base + at);
            g();
        }
        crate::sched::swap::with(|s| s.switch_to(0));
    }
}

/// A loaded copy.
pub struct Copy {
    pub handle: *mut c_void,
    pub base: usize,
    /// The loader's `struct link_map` of the copy.
    link_map: *mut c_void,
    /// The memory-backed file it was loaded from; kept open until every copy is loaded, so
    /// its `/proc/<pid>/fd/N` name stays unique among loaded objects.
    fd: Option<OwnedFd>,
    /// Bytes the copy still holds in that file (0 once it no longer depends on it).
    pub file_bytes: usize,
}

impl Copy {
    /// Closes the memory-backed file.
    pub fn close_file(&mut self) {
        self.fd = None;
    }

    /// Unloads a copy whose constructors have not run (destructors were taken away from the
    /// loader, so nothing of the program runs).
    pub fn unload(mut self) {
        // SAFETY: the handle came from dlopen; no code of the copy has run or is referenced.
        unsafe { libc::dlclose(self.handle) };
        self.close_file();
    }
}

/// The original object and the bytes every copy starts from.
pub struct Object {
    /// The file it was loaded from.
    pub path: String,
    /// Its name in messages.
    pub shown: String,
    pub img: Image,
    file: File,
    /// Load bias and address range of the original in this process.
    pub base: usize,
    pub range: (usize, usize),
    /// File ranges changed in every copy (the dynamic section).
    patched: Vec<(usize, usize)>,
    /// The object's copy relocations: target offset, size, symbol name.
    pub copy_relocs: Vec<(usize, usize, Vec<u8>)>,
    /// Offsets of the slots that relocations fill with a symbol's address (GOT entries, PLT
    /// slots, absolute pointers).
    slots: Vec<usize>,
    /// File ranges not written into a copy's file: code that the loader does not read and
    /// that `detach` maps from the original file before anything runs in the copy.
    unwritten: Vec<(usize, usize)>,
    init: Option<usize>,
    init_array: Option<(usize, usize)>,
    fini: Option<usize>,
    fini_array: Option<(usize, usize)>,
}

fn memfd(label: &str) -> Result<OwnedFd, String> {
    let name = CString::new(label).unwrap_or_else(|_| c"toucan-copy".into());
    // SAFETY: valid NUL-terminated name.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if fd >= 0 {
        // SAFETY: a fresh descriptor we own.
        return Ok(unsafe { OwnedFd::from_raw_fd(fd) });
    }
    let e = std::io::Error::last_os_error();
    // An unnamed file in /dev/shm is memory-backed too and leaves no name behind.
    // SAFETY: valid path; O_TMPFILE needs a mode.
    let fd = unsafe { libc::open(c"/dev/shm".as_ptr(), libc::O_TMPFILE | libc::O_RDWR | libc::O_CLOEXEC, 0o600) };
    if fd >= 0 {
        // SAFETY: a fresh descriptor we own.
        return Ok(unsafe { OwnedFd::from_raw_fd(fd) });
    }
    Err(format!(
        "no memory-backed file: memfd_create failed ({e}) and /dev/shm offers no unnamed files"
    ))
}

fn prot_of(flags: u32) -> c_int {
    let mut p = 0;
    if flags & elf::PF_R != 0 {
        p |= libc::PROT_READ;
    }
    if flags & elf::PF_W != 0 {
        p |= libc::PROT_WRITE;
    }
    if flags & elf::PF_X != 0 {
        p |= libc::PROT_EXEC;
    }
    p
}

/// Gives the pages [a, a+len) private copies of their contents (breaking copy-on-write), then
/// sets their protection to `after`.
///
/// # Safety
/// The range must be mapped, and nothing may run in it meanwhile.
unsafe fn make_private(a: usize, len: usize, after: c_int) -> Result<(), String> {
    if len == 0 {
        return Ok(());
    }
    let p = a as *mut c_void;
    // SAFETY: the caller guarantees the range is mapped, ours, and unused meanwhile; the
    // calls below only change its protection and fault its pages in.
    unsafe {
        if libc::mprotect(p, len, libc::PROT_READ | libc::PROT_WRITE) != 0 {
            return Err(format!("mprotect: {}", std::io::Error::last_os_error()));
        }
        if libc::madvise(p, len, libc::MADV_POPULATE_WRITE) != 0 {
            // Older kernels: touch every page.
            let page = page_size();
            for q in (a..a + len).step_by(page) {
                let x = std::ptr::read_volatile(q as *const u8);
                std::ptr::write_volatile(q as *mut u8, x);
            }
        }
        if libc::mprotect(p, len, after) != 0 {
            return Err(format!("mprotect: {}", std::io::Error::last_os_error()));
        }
    }
    Ok(())
}

impl Object {
    /// Reads the object's file and checks it is the one loaded at `loaded`.
    pub fn open(path: &str, loaded: &Loaded) -> Result<Object, Failure> {
        let file = File::open(path).map_err(|e| Failure::new(format!("cannot open {path}: {e}")))?;
        let len = file.metadata().map(|m| m.len() as usize).unwrap_or(0);
        let mut head = vec![0u8; len.min(64 << 10)];
        file.read_exact_at(&mut head, 0)
            .map_err(|e| Failure::new(format!("cannot read {path}: {e}")))?;
        let hdr = elf::header(&head).map_err(|e| Failure::new(format!("{path}: {e}")))?;
        if hdr.e_type == elf::ET_EXEC {
            return Err(Failure::relink(format!(
                "{path} is not position-independent (it was linked with -no-pie)"
            )));
        }
        if hdr.e_type != elf::ET_DYN {
            return Err(Failure::new(format!("{path} is not a dynamically loadable ELF object")));
        }
        let extent = elf::load_extent(&hdr);
        if extent > len {
            return Err(Failure::new(format!("{path}: file shorter than its segments")));
        }
        let same = hdr.phdrs.len() == loaded.phdrs.len() && hdr.phdrs.iter().zip(&loaded.phdrs).all(|(a, b)| a == b);
        if !same {
            return Err(Failure::new(format!("{path} is not the file the running program was loaded from")));
        }
        let mut bytes = vec![0u8; extent];
        file.read_exact_at(&mut bytes, 0)
            .map_err(|e| Failure::new(format!("cannot read {path}: {e}")))?;
        let mut img = Image::new(bytes).map_err(|e| Failure::new(format!("{path}: {e}")))?;
        if !img.has(elf::PT_DYNAMIC) {
            return Err(Failure::relink(format!("{path} is statically linked")));
        }
        let kinds = elf::reloc_kinds(img.hdr.machine)
            .ok_or_else(|| Failure::new(format!("{path}: machine type {} is not supported", img.hdr.machine)))?;
        let mut copy_relocs = Vec::new();
        for r in img.relas().into_iter().filter(|r| r.kind == kinds.copy) {
            let (name, size) = img
                .symbol(r.sym)
                .ok_or_else(|| Failure::new(format!("{path}: bad symbol in a copy relocation")))?;
            copy_relocs.push((r.offset as usize, size as usize, name));
        }
        let slots = img
            .relas()
            .into_iter()
            .filter(|r| r.sym != 0 && kinds.slot.contains(&r.kind))
            .map(|r| r.offset as usize)
            .collect();

        // Changes every copy needs, all inside the dynamic section: a PIE flag would make
        // dlopen refuse the object; constructors and destructors become ours to run (the
        // renamed entries become DT_DEBUG, which the loader ignores in dlopen'ed objects).
        let (mut init, mut init_array, mut init_n, mut fini, mut fini_array, mut fini_n) = (None, None, 0, None, None, 0);
        let mut changed = false;
        for d in img.dynamic.clone() {
            let v = d.val as usize;
            match d.tag {
                elf::DT_FLAGS_1 if d.val & elf::DF_1_PIE != 0 => {
                    img.bytes[d.at + 8..d.at + 16].copy_from_slice(&(d.val & !elf::DF_1_PIE).to_le_bytes());
                    changed = true;
                    continue;
                }
                elf::DT_INIT => init = Some(v),
                elf::DT_INIT_ARRAY => init_array = Some(v),
                elf::DT_INIT_ARRAYSZ => init_n = v / 8,
                elf::DT_FINI => fini = Some(v),
                elf::DT_FINI_ARRAY => fini_array = Some(v),
                elf::DT_FINI_ARRAYSZ => fini_n = v / 8,
                _ => continue,
            }
            img.bytes[d.at..d.at + 8].copy_from_slice(&elf::DT_DEBUG.to_le_bytes());
            changed = true;
        }
        let mut patched = Vec::new();
        if changed {
            if let Some(d) = img.hdr.phdrs.iter().find(|p| p.p_type == elf::PT_DYNAMIC) {
                patched.push((d.offset as usize, (d.offset + d.filesz) as usize));
            }
        }
        // Code segments need not be written into a copy's file: during dlopen the loader reads
        // only headers, the dynamic section and what it points to, and runs nothing of the
        // object (its constructors are ours now) unless it has IFUNC resolvers.
        let irelative = img.relas().iter().any(|r| r.kind == kinds.irelative);
        let pointed: Vec<usize> = img
            .dynamic
            .iter()
            .filter(|d| elf::LOADER_ADDRESS_TAGS.contains(&d.tag))
            .filter_map(|d| img.offset_of(d.val))
            .collect();
        let mut unwritten = Vec::new();
        if !irelative && !img.textrel() {
            for p in img.loads().filter(|p| Self::remappable(p, &patched, &[])) {
                let (lo, hi) = (p.offset as usize, (p.offset + p.filesz) as usize);
                let others = img
                    .hdr
                    .phdrs
                    .iter()
                    .filter(|q| q.p_type != elf::PT_LOAD)
                    .any(|q| (q.offset as usize) < hi && lo < (q.offset + q.filesz) as usize);
                if p.flags & elf::PF_X != 0 && lo >= elf::EHDR_SIZE && !others && !pointed.iter().any(|&o| (lo..hi).contains(&o)) {
                    unwritten.push((lo, hi));
                }
            }
        }
        Ok(Object {
            path: path.to_string(),
            shown: path.to_string(),
            img,
            file,
            base: loaded.base,
            range: loaded.range(),
            patched,
            copy_relocs,
            slots,
            unwritten,
            init,
            init_array: init_array.map(|a| (a, init_n)),
            fini,
            fini_array: fini_array.map(|a| (a, fini_n)),
        })
    }

    /// Whether a segment can be mapped from the original file in a copy: read-only, with no
    /// bytes changed for copies and no zero-filled tail.
    fn remappable(p: &Phdr, patched: &[(usize, usize)], extra: &[(usize, Vec<u8>)]) -> bool {
        let (lo, hi) = (p.offset as usize, (p.offset + p.filesz) as usize);
        let touched = patched.iter().any(|&(a, b)| a < hi && lo < b) || extra.iter().any(|(a, v)| *a < hi && lo < *a + v.len());
        p.flags & elf::PF_W == 0 && p.memsz == p.filesz && p.filesz > 0 && !touched
    }

    /// Bytes of file-backed writable data per copy (what becomes private).
    pub fn data_bytes(&self) -> usize {
        self.img
            .loads()
            .filter(|p| p.flags & elf::PF_W != 0)
            .map(|p| p.filesz as usize)
            .sum()
    }

    /// Loads one copy from a fresh memory-backed file, with `extra` (file offset, bytes)
    /// changes on top of the common ones.
    pub fn load(&self, label: &str, extra: &[(usize, Vec<u8>)], flags: c_int) -> Result<Copy, String> {
        let fd = memfd(label)?;
        {
            // SAFETY: borrows our descriptor for the writes; ManuallyDrop keeps it open.
            let f = std::mem::ManuallyDrop::new(unsafe { File::from_raw_fd(fd.as_raw_fd()) });
            let fill = |e: std::io::Error| format!("cannot fill a memory-backed file: {e}");
            f.set_len(self.img.bytes.len() as u64).map_err(fill)?;
            let mut at = 0;
            for &(lo, hi) in self.unwritten.iter().chain([(self.img.bytes.len(), self.img.bytes.len())].iter()) {
                f.write_all_at(&self.img.bytes[at..lo], at as u64).map_err(fill)?;
                at = hi;
            }
            for (at, b) in extra {
                f.write_all_at(b, *at as u64).map_err(fill)?;
            }
        }
        // /proc/<pid>, not /proc/self: a debugger resolves the name in its own process.
        let path = CString::new(format!("/proc/{}/fd/{}", std::process::id(), fd.as_raw_fd())).expect("no NUL in a path we format");
        // SAFETY: valid path; the loader reads the file we just wrote.
        let handle = unsafe { libc::dlopen(path.as_ptr(), flags) };
        if handle.is_null() {
            // SAFETY: dlerror returns null or a valid C string.
            let e = unsafe { libc::dlerror() };
            let msg = if e.is_null() {
                "unknown error".into()
            } else {
                // SAFETY: non-null C string from dlerror.
                unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned()
            };
            return Err(format!("dlopen of a copy of {} failed: {msg}", self.shown));
        }
        let mut lm: *mut c_void = std::ptr::null_mut();
        // SAFETY: RTLD_DI_LINKMAP stores a `struct link_map *`, whose first member is the load
        // bias (l_addr).
        let base = unsafe {
            if libc::dlinfo(handle, libc::RTLD_DI_LINKMAP, &mut lm as *mut *mut c_void as *mut c_void) != 0 || lm.is_null() {
                libc::dlclose(handle);
                return Err("dlinfo failed on a loaded copy".into());
            }
            *(lm as *const usize)
        };
        Ok(Copy {
            handle,
            base,
            link_map: lm,
            fd: Some(fd),
            file_bytes: self.img.bytes.len(),
        })
    }

    /// Makes a loaded copy independent of its memory-backed file: unchanged read-only segments
    /// are remapped from the original file (shared with the original and every other copy),
    /// the rest gets private pages; then the file's pages are freed. An error leaves the copy
    /// unusable (its code may not be in its file).
    ///
    /// # Safety
    /// No code of the copy may run meanwhile (its constructors have not run yet).
    pub unsafe fn detach(&self, c: &mut Copy, extra: &[(usize, Vec<u8>)]) -> Result<(), String> {
        let page = page_size();
        let textrel = self.img.textrel();
        let relro = self.img.hdr.phdrs.iter().find(|p| p.p_type == elf::PT_GNU_RELRO).copied();
        for p in self.img.loads().copied().collect::<Vec<Phdr>>() {
            if p.filesz == 0 {
                continue;
            }
            let off = p.offset as usize;
            let a = down(c.base + p.vaddr as usize, page);
            let writable = p.flags & elf::PF_W != 0;
            if !textrel && Self::remappable(&p, &self.patched, extra) {
                let len = up(c.base + (p.vaddr + p.memsz) as usize, page) - a;
                // SAFETY: replaces the copy's own pages with the same bytes of the original
                // file, at the same addresses and protection.
                let r = unsafe {
                    libc::mmap(
                        a as *mut c_void,
                        len,
                        prot_of(p.flags),
                        libc::MAP_PRIVATE | libc::MAP_FIXED,
                        self.file.as_raw_fd(),
                        down(off, page) as libc::off_t,
                    )
                };
                if r as usize != a {
                    return Err(format!("mmap of {}: {}", self.shown, std::io::Error::last_os_error()));
                }
            } else {
                // The file-backed pages of the segment (the loader zero-filled the rest).
                let len = up(c.base + (p.vaddr + p.filesz) as usize, page) - a;
                // SAFETY: the range is the copy's mapping of this segment; nothing runs in it.
                unsafe { make_private(a, len, prot_of(p.flags))? };
                if let Some(r) = relro.filter(|_| writable) {
                    // Restore the loader's read-only protection of the relocated data.
                    let s = down(c.base + r.vaddr as usize, page);
                    let e = down(c.base + (r.vaddr + r.memsz) as usize, page);
                    // SAFETY: the same range the loader protected after relocating.
                    if e > s && unsafe { libc::mprotect(s as *mut c_void, e - s, libc::PROT_READ) } != 0 {
                        return Err(format!("mprotect: {}", std::io::Error::last_os_error()));
                    }
                }
            }
        }
        if let Some(fd) = &c.fd {
            // Punch the file's pages out rather than truncating: truncation would also drop the
            // private copies of them (POSIX wants SIGBUS past the end even for private maps).
            let len = self.img.bytes.len() as libc::off_t;
            // SAFETY: our descriptor; every page mapped from it has a private copy by now.
            if unsafe { libc::fallocate(fd.as_raw_fd(), libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE, 0, len) } == 0 {
                c.file_bytes = 0;
            }
        }
        Ok(())
    }

    /// Names a complete copy after the original's file in the loader's list of objects
    /// (`l_name`, which debuggers and `dladdr` read), so that `gdb` finds the copy's symbols
    /// and shows its frames like the original's, and no name points at a closed memory file.
    /// The memory file's name stays among the copy's alternative names.
    ///
    /// # Safety
    /// `c` must be a loaded copy of this object that is never unloaded.
    pub unsafe fn rename_copy(&self, c: &Copy) {
        let Ok(name) = CString::new(self.shown.as_str()) else { return };
        // SAFETY: `struct link_map` begins with l_addr then l_name (a char *), as <link.h>
        // declares; the loader only reads l_name after loading (in messages, dladdr and
        // dl_iterate_phdr, and for debuggers). The string is allocated with malloc (strdup),
        // like the loader's own, and the old one is left alone (never freed: the copy stays).
        unsafe {
            let slot = (c.link_map as *mut *mut c_char).add(1);
            let new = libc::strdup(name.as_ptr());
            if !new.is_null() {
                *slot = new;
            }
        }
    }

    /// Runs `f` with the copy's relocated read-only data (RELRO) writable, then protects it
    /// again as the loader left it.
    ///
    /// # Safety
    /// `c` must be a loaded copy of this object in which no code runs.
    unsafe fn with_relro_writable(&self, c: &Copy, f: impl FnOnce()) -> Result<(), String> {
        let page = page_size();
        let relro = self
            .img
            .hdr
            .phdrs
            .iter()
            .find(|p| p.p_type == elf::PT_GNU_RELRO)
            .map(|r| {
                (
                    down(c.base + r.vaddr as usize, page),
                    down(c.base + (r.vaddr + r.memsz) as usize, page),
                )
            })
            .filter(|(s, e)| e > s);
        if let Some((s, e)) = relro {
            // SAFETY: the copy's own relocated data; protection restored below.
            if unsafe { libc::mprotect(s as *mut c_void, e - s, libc::PROT_READ | libc::PROT_WRITE) } != 0 {
                return Err(format!("mprotect: {}", std::io::Error::last_os_error()));
            }
        }
        f();
        if let Some((s, e)) = relro {
            // SAFETY: as above.
            if unsafe { libc::mprotect(s as *mut c_void, e - s, libc::PROT_READ) } != 0 {
                return Err(format!("mprotect: {}", std::io::Error::last_os_error()));
            }
        }
        Ok(())
    }

    /// Gives the copy's copy-relocated variables (the program's own storage for `stdout`,
    /// `environ`, `std::cout`, ... of the libraries it links) their values. The loader would
    /// fill them from the defining library's own, unused storage, or from the copy itself (a
    /// copy relocation only skips the main executable), so `std::cout` would be an
    /// unconstructed object and `environ` null. `source(i)` gives the address to copy
    /// relocation `i`'s variable from, or `None` for the original's variable as it is now.
    ///
    /// # Safety
    /// `c` must be a loaded copy of this object in which no code runs; sources must be valid.
    pub unsafe fn fix_copy_relocs(&self, c: &Copy, source: impl Fn(usize) -> Option<usize>) -> Result<(), String> {
        if self.copy_relocs.is_empty() {
            return Ok(());
        }
        // SAFETY: forwarded from the caller.
        unsafe {
            self.with_relro_writable(c, || {
                for (i, (o, n, _)) in self.copy_relocs.iter().enumerate() {
                    let from = source(i).unwrap_or(self.base + o);
                    // SAFETY: the source is the variable's storage (in the original, or in the
                    // defining library's copy), the target its storage in the copy (same offset
                    // from the load bias as in the original), writable now.
                    std::ptr::copy_nonoverlapping(from as *const u8, (c.base + o) as *mut u8, *n);
                }
            })
        }
    }

    /// Makes the copy's symbol bindings mirror the original's, within a set of copies (the
    /// program and its own libraries, `set[i]` pairing each original object with its copy).
    /// For each slot (GOT entry, PLT slot, pointer):
    /// - if the copy's value points into an original object `Y` of the set (bound through the
    ///   global scope), it gets the same offset in `Y`'s copy;
    /// - else if the original's value points into another object `Y` of the set, likewise: a
    ///   library's reference to the executable's storage of its variable (copy relocation), or
    ///   to a function of the executable, follows the executable's copy;
    /// - else if the original's value points outside the set (the C library, libtoucanmpi, a
    ///   preloaded library), the copy takes it: `RTLD_DEEPBIND` would otherwise bind a
    ///   library's copy to its own dependencies first (for example to the C library's `exit`
    ///   rather than libtoucanmpi's, or past a preloaded profiler).
    ///
    /// Slots still pointing into their own object in the original (lazy PLT slots not yet
    /// resolved, references to the object's own symbols) keep the copy's binding.
    ///
    /// # Safety
    /// `c` must be a loaded copy of this object, and every copy in `set` a loaded copy of its
    /// object, with no code running in them.
    pub unsafe fn redirect_slots(&self, c: &Copy, set: &[(&Object, &Copy)]) -> Result<(), String> {
        let find = |v: usize| set.iter().position(|(o, _)| (o.range.0..o.range.1).contains(&v));
        let interposed = super::interposed::table();
        let mut writes = Vec::new();
        for &off in &self.slots {
            // SAFETY: slots are inside the objects' mapped writable or RELRO data.
            let (v0, vk) = unsafe { (*((self.base + off) as *const usize), *((c.base + off) as *const usize)) };
            let new = match (find(vk), find(v0)) {
                (Some(y), _) => set[y].1.base + (vk - set[y].0.base),
                (None, Some(y)) if !std::ptr::eq(set[y].0, self) => set[y].1.base + (v0 - set[y].0.base),
                (None, None) if v0 != 0 => v0,
                _ => vk,
            };
            let new = interposed.get(&new).copied().unwrap_or(new);
            if new != vk {
                writes.push((c.base + off, new));
            }
        }
        if writes.is_empty() {
            return Ok(());
        }
        // SAFETY: forwarded from the caller; every address is one of the copy's slots.
        unsafe {
            self.with_relro_writable(c, || {
                for (at, v) in writes {
                    *(at as *mut usize) = v;
                }
            })
        }
    }

    /// Registers the copy's destructors to run at exit, then runs its constructors with the
    /// arguments the C library gives constructors. The copy belongs to subrank `sub`.
    ///
    /// # Safety
    /// `c` must be a complete copy of this object (relocated, detached) whose constructors have
    /// not run; `argc`/`argv`/`envp` as for `main`.
    pub unsafe fn start(&self, c: &Copy, sub: usize, argc: c_int, argv: *mut *mut c_char, envp: *mut *mut c_char) {
        if self.fini.is_some() || self.fini_array.is_some() {
            let f = Box::into_raw(Box::new(Fini {
                sub,
                base: c.base,
                fini: self.fini,
                array: self.fini_array,
            }));
            // SAFETY: the handler and its (leaked, never freed) argument stay valid until exit.
            unsafe { __cxa_atexit(run_fini, f as *mut c_void, std::ptr::null_mut()) };
        }
        // SAFETY: the caller guarantees the copy is complete; these are its constructors, in
        // the order the dynamic loader would run them (DT_INIT, then DT_INIT_ARRAY).
        unsafe {
            if let Some(at) = self.init {
                let f: InitFn = std::mem::transmute(c.base + at);
                f(argc, argv, envp);
            }
            if let Some((at, n)) = self.init_array {
                for i in 0..n {
                    let p = *((c.base + at) as *const usize).add(i);
                    if p != 0 && p != usize::MAX {
                        let f: InitFn = std::mem::transmute(p);
                        f(argc, argv, envp);
                    }
                }
            }
        }
    }
}
