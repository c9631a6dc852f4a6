//! The program's own shared libraries (non-system libraries it links, such as a
//! `libphysics.so` built beside it): each subrank gets a copy of them too.
//!
//! A copy of the executable must reach the copies of its libraries, not the originals, which
//! the loader would find first (by soname, and in the global scope). So in subrank k's set of
//! copies, each library's `DT_SONAME` and every `DT_NEEDED` naming it are renamed to the same
//! new name of the same length (`!` + k + library index over the first five bytes), and the
//! libraries are loaded first, dependencies before dependents, with `RTLD_DEEPBIND`: a
//! library's copy binds its own symbols (thread-locals included) and those of its
//! dependencies in the set first. The executable's copy binds through the global scope, like
//! the original. `Object::redirect_slots` then points whatever still reaches an original object
//! of the set (the executable's calls into its libraries, a library's reference to the
//! executable's storage of its variable, a callback into the executable) at the same
//! subrank's copy.

use super::object::{Failure, Loaded, Object};
use std::collections::HashMap;
use std::ffi::CStr;
use std::os::raw::c_void;
use std::path::Path;

/// Directories whose libraries are the system's: they stay shared, like the C library.
const SYSTEM_DIRS: [&str; 8] = [
    "/lib/",
    "/lib64/",
    "/lib32/",
    "/libx32/",
    "/usr/lib/",
    "/usr/lib64/",
    "/usr/lib32/",
    "/usr/libx32/",
];

/// System libraries that are copied per subrank all the same, because they hold state that
/// is the program's own: gfortran's runtime keeps the Fortran I/O units (which file unit 10
/// is connected to, unit 6's buffer and record position) in libgfortran, per process; OpenMP's
/// runtime keeps its thread pool and the team a thread is in (per kernel thread, which the
/// subranks of a worker share) in libgomp.
const PER_SUBRANK_RUNTIMES: [&str; 2] = ["libgfortran.so.", "libgomp.so."];

pub fn is_per_subrank_runtime(path: &str) -> bool {
    let base = Path::new(path)
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    PER_SUBRANK_RUNTIMES.iter().any(|r| base.starts_with(r))
}

pub fn is_system(path: &str) -> bool {
    let canon = std::fs::canonicalize(path)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| path.to_string());
    SYSTEM_DIRS.iter().any(|d| canon.starts_with(d) || path.starts_with(d))
}

/// The file libtoucanmpi was loaded from.
fn our_file() -> Option<String> {
    // SAFETY: Dl_info is plain data (pointers and integers); all-zero is a valid value.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr fills `info` for an address inside a loaded object (this function).
    if unsafe { libc::dladdr(our_file as *const c_void, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: non-null C string owned by the loader.
    let p = unsafe { CStr::from_ptr(info.dli_fname) }.to_string_lossy().into_owned();
    Some(std::fs::canonicalize(&p).map(|c| c.to_string_lossy().into_owned()).unwrap_or(p))
}

/// A library to copy: the object, and the name it is known by (its soname).
pub struct Lib {
    pub obj: Object,
    pub soname: (usize, Vec<u8>),
}

/// The program's non-system libraries, in an order where each comes after the libraries it
/// needs. `exe` is the executable. Libraries loaded but not needed by the program (preloaded,
/// or opened by a constructor) are left alone.
pub fn program_libs(exe: &Object, objs: &[Loaded]) -> Result<Vec<Lib>, Failure> {
    let ours = our_file();
    let mut by_name: HashMap<Vec<u8>, usize> = HashMap::new();
    let mut cands: Vec<&Loaded> = Vec::new();
    for o in objs.iter().skip(1) {
        if o.name.is_empty()
            || o.name.starts_with("linux-vdso")
            || o.name.starts_with("linux-gate")
            || (is_system(&o.name) && !is_per_subrank_runtime(&o.name))
        {
            continue;
        }
        let canon = std::fs::canonicalize(&o.name).map(|c| c.to_string_lossy().into_owned()).ok();
        if canon.is_some() && canon == ours {
            continue;
        }
        // Known by its file name until its soname is read.
        let base = Path::new(&o.name)
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        by_name.insert(base.into_bytes(), cands.len());
        cands.push(o);
    }
    if cands.is_empty() {
        return Ok(Vec::new());
    }
    // Open every candidate to learn its soname and needs; a failure matters only if the
    // program needs the library.
    let mut opened: Vec<Result<Lib, Failure>> = Vec::new();
    for o in &cands {
        let lib = Object::open(&o.name, o).and_then(|obj| match obj.img.soname() {
            Some(soname) => Ok(Lib { obj, soname }),
            None => Err(Failure::new(format!(
                "the program's library {} has no soname (link it with -Wl,-soname,<name>) and cannot be copied",
                o.name
            ))),
        });
        if let Ok(l) = &lib {
            by_name.insert(l.soname.1.clone(), opened.len());
        }
        opened.push(lib);
    }
    // Walk the needs from the executable; order dependencies first.
    let mut order: Vec<usize> = Vec::new();
    let mut state = vec![0u8; opened.len()]; // 0 new, 1 visiting, 2 done
    fn visit(
        i: usize,
        opened: &mut [Result<Lib, Failure>],
        by_name: &HashMap<Vec<u8>, usize>,
        state: &mut [u8],
        order: &mut Vec<usize>,
    ) -> Result<(), Failure> {
        if state[i] != 0 {
            return Ok(());
        }
        state[i] = 1;
        let needs = match &mut opened[i] {
            Ok(lib) => lib.obj.img.needed(),
            Err(f) => return Err(std::mem::replace(f, Failure::new(""))),
        };
        for (_, need) in needs {
            if let Some(&j) = by_name.get(&need) {
                visit(j, opened, by_name, state, order)?;
            }
        }
        state[i] = 2;
        order.push(i);
        Ok(())
    }
    for (_, need) in exe.img.needed() {
        if let Some(&j) = by_name.get(&need) {
            visit(j, &mut opened, &by_name, &mut state, &mut order)?;
        }
    }
    if order.len() > 255 {
        return Err(Failure::new("the program needs more than 255 libraries of its own"));
    }
    let mut out = Vec::with_capacity(order.len());
    let mut slots: Vec<Option<Lib>> = opened.into_iter().map(Result::ok).collect();
    for i in order {
        let lib = slots[i].take().expect("each library is ordered once, after it opened");
        if lib.soname.1.len() < 5 {
            return Err(Failure::new(format!(
                "the program's library {} has a soname too short to rename",
                lib.obj.path
            )));
        }
        out.push(lib);
    }
    Ok(out)
}

/// The name library `lib` (index in the set) carries in subrank `k`'s set of copies.
pub fn renamed(name: &[u8], k: usize, lib: usize) -> Vec<u8> {
    let mut v = name.to_vec();
    let head = format!("!{:02x}{:02x}", k & 0xff, lib & 0xff);
    v[..5].copy_from_slice(head.as_bytes());
    v
}

/// The changes (file offset, bytes) that object `obj` of a set needs in subrank `k`'s copy:
/// its own soname (for a library, index `me`), and the names of the set's libraries it needs.
pub fn renames(obj: &Object, me: Option<usize>, libs: &[Lib], k: usize) -> Vec<(usize, Vec<u8>)> {
    let mut out = Vec::new();
    if let Some(i) = me {
        let (at, name) = &libs[i].soname;
        out.push((*at, renamed(name, k, i)));
    }
    for (at, need) in obj.img.needed() {
        if let Some(j) = libs.iter().position(|l| l.soname.1 == need) {
            out.push((at, renamed(&need, k, j)));
        }
    }
    out
}

/// Which of `libs` defines `name`, and at what offset from its load bias (in the original).
pub fn provider(libs: &[Lib], name: &[u8]) -> Option<(usize, usize)> {
    let cname = std::ffi::CString::new(name).ok()?;
    libs.iter().enumerate().find_map(|(i, l)| {
        let path = std::ffi::CString::new(l.obj.path.as_str()).ok()?;
        // SAFETY: RTLD_NOLOAD only returns a handle to an object already loaded (adding a
        // reference we never drop: it stays loaded anyway); dlsym reads its symbols.
        let a = unsafe {
            let h = libc::dlopen(path.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD);
            if h.is_null() {
                return None;
            }
            libc::dlsym(h, cname.as_ptr()) as usize
        };
        (l.obj.range.0..l.obj.range.1).contains(&a).then(|| (i, a - l.obj.base))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renamed_keeps_length_and_differs() {
        let a = renamed(b"libphysics.so", 1, 0);
        let b = renamed(b"libphysics.so", 2, 0);
        let c = renamed(b"libphysics.so", 1, 1);
        assert_eq!(a, b"!0100ysics.so".to_vec());
        assert_eq!(a.len(), 13);
        assert!(a != b && a != c && b != c);
        assert_eq!(renamed(b"libab", 255, 3), b"!ff03".to_vec());
    }

    #[test]
    fn system_dirs() {
        assert!(is_system("/usr/lib/x86_64-linux-gnu/libc.so.6"));
        assert!(is_system("/lib/x86_64-linux-gnu/libm.so.6"));
        assert!(!is_system("/home/user/app/libphysics.so"));
        assert!(!is_system("/opt/petsc/lib/libpetsc.so"));
        assert!(is_per_subrank_runtime("/usr/lib/x86_64-linux-gnu/libgfortran.so.5"));
        assert!(!is_per_subrank_runtime("/usr/lib/x86_64-linux-gnu/libquadmath.so.0"));
    }
}
