//! Privatized globals: every subrank runs `main` of its own copy of the program's executable
//! image, so it owns the program's writable globals and statics with nothing to do per switch.
//!
//! How (DESIGN.md, "Privatized globals"): the executable (a PIE) is written into V-1
//! memory-backed files with `DF_1_PIE` cleared, and each is `dlopen`ed (`RTLD_LOCAL`) as
//! `/proc/<pid>/fd/N`. Subrank 0 runs the original program; subrank k runs copy k's `main`, at the
//! copy's load bias plus `main`'s offset in the original. A copy's references to `MPI_*` and to
//! the C library bind through the global scope, like the original's. See `object` for how a
//! copy is made independent of its file and how its constructors and destructors run.

mod elf;
pub mod interposed;
mod libs;
mod object;
pub mod tls;

use object::{Copy, Failure, Loaded, Object};
use std::io::Write;
use std::os::raw::{c_char, c_int};
use std::time::Instant;

/// The program's `main`, as the C library calls it.
pub type MainFn = unsafe extern "C" fn(c_int, *mut *mut c_char, *mut *mut c_char) -> c_int;

/// `TOUCAN_PRIVATIZE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Privatize when V > 1; fall back to shared globals, with a warning, when impossible.
    Auto,
    /// Privatize, or stop with an error.
    On,
    /// Subranks share the program's globals.
    Off,
}

impl Mode {
    pub fn parse(s: Option<&str>) -> Result<Mode, String> {
        match s.map(|s| s.trim().to_ascii_lowercase()).as_deref() {
            None | Some("") | Some("auto") => Ok(Mode::Auto),
            Some("on") | Some("1") | Some("yes") => Ok(Mode::On),
            Some("off") | Some("0") | Some("no") => Ok(Mode::Off),
            Some(_) => Err(format!(
                "TOUCAN_PRIVATIZE={} is not valid: expected auto, on or off",
                s.unwrap_or_default()
            )),
        }
    }
}

/// `TOUCAN_VERBOSE` set to anything but empty or 0.
pub fn verbose() -> bool {
    std::env::var("TOUCAN_VERBOSE").is_ok_and(|v| !v.trim().is_empty() && v.trim() != "0")
}

/// Whether this process is the job's first (the launcher's rank variables say so, or there
/// are none), so that messages meant once per job are printed once.
fn first_process() -> bool {
    for var in ["PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_RANK"] {
        if let Ok(r) = std::env::var(var) {
            return r.trim() == "0";
        }
    }
    true
}

fn say(msg: &str) {
    let _ = writeln!(std::io::stderr(), "toucan: {msg}");
}

/// The copies made for this process (kept for the process's lifetime).
struct Copies {
    exe: Object,
    /// The executable's path, for messages.
    name: String,
    /// The program's own libraries, copied along with it.
    libs: Vec<libs::Lib>,
    /// Per subrank k >= 1: the copies of `libs` (same order), then of `exe`.
    sets: Vec<Vec<Copy>>,
    /// Bytes of the program's thread-local block, swapped per subrank (0: none).
    tls_bytes: usize,
    millis: f64,
}

impl Copies {
    fn exe_copy(&self, k: usize) -> &Copy {
        self.sets[k - 1].last().expect("a set ends with the executable")
    }
}

/// Where the copies of the executable keep their copy-relocated variables (the program's
/// own storage of a shared library's variable, such as `optind`).
struct CopiedVars {
    /// Name and offset from the load bias of each copy-relocated variable.
    vars: Vec<(Vec<u8>, usize)>,
    /// Load bias of subrank k's copy of the executable, at index k - 1.
    bases: Vec<usize>,
}

static COPIED_VARS: std::sync::OnceLock<CopiedVars> = std::sync::OnceLock::new();

/// Whether the subranks run their own copies of the executable.
pub fn privatized() -> bool {
    COPIED_VARS.get().is_some_and(|c| !c.bases.is_empty())
}

/// The address of subrank `k`'s storage of the copy-relocated variable `name` (its copy of
/// the executable's), when the program is privatized, `k` >= 1 and the program holds such a
/// variable.
pub fn copied_var(k: usize, name: &[u8]) -> Option<usize> {
    let c = COPIED_VARS.get()?;
    let base = *c.bases.get(k.checked_sub(1)?)?;
    c.vars.iter().find(|(n, _)| n == name).map(|(_, o)| base + o)
}

/// Decides how the `v` subranks run `main` and prepares what that needs; returns each
/// subrank's `main`. Reads `TOUCAN_PRIVATIZE`. An error is a message for the user; the caller
/// stops the program with it.
///
/// # Safety
/// Called once, at start-up, before any subrank runs and while the process has one thread;
/// `main` is the program's `main` and `argc`/`argv`/`envp` its arguments.
pub unsafe fn prepare(v: usize, main: MainFn, argc: c_int, argv: *mut *mut c_char, envp: *mut *mut c_char) -> Result<Vec<MainFn>, String> {
    let mode = Mode::parse(std::env::var("TOUCAN_PRIVATIZE").ok().as_deref())?;
    let talk = verbose() && first_process();
    let wanted = match mode {
        Mode::Off => false,
        Mode::On => true,
        Mode::Auto => v > 1,
    };
    if !wanted {
        if talk {
            let why = if mode == Mode::Off {
                "TOUCAN_PRIVATIZE=off"
            } else {
                "one subrank per process"
            };
            say(&format!("globals: shared, not privatized ({why})"));
        }
        return Ok(vec![main; v]);
    }
    // SAFETY: forwarded from our caller.
    match unsafe { load_copies(v, main, argc, argv, envp) } {
        Ok(c) => {
            if talk {
                say(&describe(v, &c));
            }
            let mut mains = vec![main];
            let off = main as usize - c.exe.base;
            let _ = COPIED_VARS.set(CopiedVars {
                vars: c.exe.copy_relocs.iter().map(|(o, _, n)| (n.clone(), *o)).collect(),
                bases: (1..v).map(|k| c.exe_copy(k).base).collect(),
            });
            for k in 1..v {
                // SAFETY: `main` lies at the same offset in every copy of the executable.
                mains.push(unsafe { std::mem::transmute::<usize, MainFn>(c.exe_copy(k).base + off) });
            }
            // The copies stay loaded until the process ends.
            std::mem::forget(c);
            Ok(mains)
        }
        Err(f) => {
            const RELINK: &str = "relink the program as a dynamically linked position-independent executable (-pie, \
                                  the default of Debian's gcc)";
            if mode == Mode::On {
                let way_out = if f.relink { format!("{RELINK}, or set") } else { "set".to_string() };
                return Err(format!(
                    "TOUCAN_PRIVATIZE=on, but the program's globals cannot be privatized: {}. Way out: {way_out} \
                     TOUCAN_PRIVATIZE=off to let the subranks of a process share them",
                    f.reason
                ));
            }
            if first_process() {
                let fix = if f.relink {
                    format!("{RELINK} to privatize them, or set TOUCAN_PRIVATIZE=off to silence this warning")
                } else {
                    "set TOUCAN_PRIVATIZE=off to silence this warning".to_string()
                };
                say(&format!(
                    "warning: the program's globals are not privatized: {}; the {v} subranks of each process share them \
                     ({fix})",
                    f.reason
                ));
            }
            Ok(vec![main; v])
        }
    }
}

fn describe(v: usize, c: &Copies) -> String {
    let name = c.name.rsplit('/').next().unwrap_or(&c.name);
    let held: usize = c.sets.iter().flatten().map(|k| k.file_bytes).sum();
    let data: usize = c.exe.data_bytes() + c.libs.iter().map(|l| l.obj.data_bytes()).sum::<usize>();
    let libs = if c.libs.is_empty() {
        String::new()
    } else {
        let names: Vec<String> = c.libs.iter().map(|l| String::from_utf8_lossy(&l.soname.1).into_owned()).collect();
        format!(" with its libraries {}", names.join(", "))
    };
    let held = if held > 0 {
        format!(", {} KiB still in memory files", held.div_ceil(1024))
    } else {
        String::new()
    };
    if v == 1 {
        return format!("globals: privatization on, but one subrank per process needs no copy of {name}{libs}");
    }
    let tls = if c.tls_bytes > 0 {
        format!(
            "its thread-locals ({} bytes) are per subrank, swapped in at each switch between subranks",
            c.tls_bytes
        )
    } else {
        "it has no thread-locals of its own".to_string()
    };
    format!(
        "globals: privatized: subrank 0 runs {name}, subranks 1..{} each their own copy of it{libs}, loaded from memory \
         ({} KiB of writable data per copy; {} copies in {:.1} ms{held}); {tls}",
        v - 1,
        data.div_ceil(1024),
        c.sets.len(),
        c.millis,
    )
}

/// Finds the executable's file and loads `v - 1` copies of it.
///
/// # Safety
/// As for `prepare`.
unsafe fn load_copies(v: usize, main: MainFn, argc: c_int, argv: *mut *mut c_char, envp: *mut *mut c_char) -> Result<Copies, Failure> {
    let t0 = Instant::now();
    let objs = object::loaded_objects();
    let exe: &Loaded = objs
        .first()
        .filter(|o| o.name.is_empty())
        .ok_or_else(|| Failure::new("cannot find the executable among the loaded objects"))?;
    let path = "/proc/self/exe";
    // Classify the executable before anything else, for a precise reason.
    {
        let mut head = [0u8; elf::EHDR_SIZE];
        let f = std::fs::File::open(path).map_err(|e| Failure::new(format!("cannot open {path}: {e}")))?;
        std::os::unix::fs::FileExt::read_exact_at(&f, &mut head, 0).map_err(|e| Failure::new(format!("cannot read {path}: {e}")))?;
        let e_type = u16::from_le_bytes([head[16], head[17]]);
        if e_type == elf::ET_EXEC {
            return Err(Failure::relink(
                "the program is not a position-independent executable (it was linked with -no-pie)",
            ));
        }
        if e_type != elf::ET_DYN {
            return Err(Failure::new("the program's file is not an ELF executable"));
        }
    }
    if !exe.phdrs.iter().any(|p| p.p_type == elf::PT_INTERP) || !exe.phdrs.iter().any(|p| p.p_type == elf::PT_DYNAMIC) {
        return Err(Failure::relink("the program is statically linked"));
    }
    let (lo, hi) = exe.range();
    if !(lo..hi).contains(&(main as usize)) {
        return Err(Failure::new("the program's main is not in the executable"));
    }
    if (lo..hi).contains(&(load_copies as *const () as usize)) {
        // Each copy would carry its own Toucan runtime, with its own MPI state.
        return Err(Failure::new(
            "libtoucanmpi is linked statically into the program (link it as a shared library, as toucancc does)",
        ));
    }
    let mut obj = Object::open(path, exe)?;
    let real_path = std::fs::read_link(path)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| path.into());
    obj.shown = real_path.clone();
    let label = format!("toucan:{}", real_path.rsplit('/').next().unwrap_or("program"));

    let libs = libs::program_libs(&obj, &objs)?;
    // Copies of the program's libraries see themselves and their dependencies first (their
    // own symbols, thread-locals included, bind to the copy, not to the original library).
    // The executable's copy binds through the global scope, like the original (so functions
    // that a preloaded library interposes stay interposed); whatever it binds in an original
    // object of the set is pointed at the subrank's copy by `redirect_slots`.
    // Alone, the executable's copy may bind lazily, like the original: a function it never
    // calls need not exist (a program relinked without recompiling may name MPI functions
    // that Toucan lacks). With library copies every slot must be bound now, to be redirected.
    let lib_flags = libc::RTLD_NOW | libc::RTLD_LOCAL | libc::RTLD_DEEPBIND;
    let exe_flags = libc::RTLD_LOCAL | if libs.is_empty() { libc::RTLD_LAZY } else { libc::RTLD_NOW };
    let mut sets: Vec<Vec<Copy>> = Vec::with_capacity(v.saturating_sub(1));
    let fail = |sets: Vec<Vec<Copy>>, msg: String| {
        for c in sets.into_iter().flatten() {
            c.unload();
        }
        Failure::new(msg)
    };
    for k in 1..v {
        let mut set = Vec::with_capacity(libs.len() + 1);
        let members = libs.iter().enumerate().map(|(i, l)| (&l.obj, Some(i))).chain([(&obj, None)]);
        for (o, me) in members {
            let extra = libs::renames(o, me, &libs, k);
            let short = o.shown.rsplit('/').next().unwrap_or("lib");
            let label = if me.is_some() {
                format!("toucan:{short}#{k}")
            } else {
                format!("{label}#{k}")
            };
            let flags = if me.is_some() { lib_flags } else { exe_flags };
            let mut c = match o.load(&label, &extra, flags) {
                Ok(c) => c,
                Err(e) => {
                    sets.push(set);
                    return Err(fail(sets, e));
                }
            };
            // SAFETY: the copy's constructors have not run; nothing executes in it.
            let r = unsafe { o.detach(&mut c, &extra) };
            set.push(c);
            if let Err(e) = r {
                sets.push(set);
                return Err(fail(sets, format!("cannot complete a copy of {}: {e}", o.shown)));
            }
        }
        sets.push(set);
    }
    // The names /proc/<pid>/fd/N are no longer needed to be unique.
    for c in sets.iter_mut().flatten() {
        c.close_file();
    }
    // Where each copy-relocated variable comes from: one of the program's libraries (the
    // copy's own library then holds the initial value), or a system library.
    let providers: Vec<Option<(usize, usize)>> = obj.copy_relocs.iter().map(|(_, _, n)| libs::provider(&libs, n)).collect();
    for k in 0..sets.len() {
        let set = &sets[k];
        let pairs: Vec<(&Object, &Copy)> = libs.iter().map(|l| &l.obj).chain([&obj]).zip(set.iter()).collect();
        let exe_copy = &set[libs.len()];
        // SAFETY: loaded copies in which nothing has run; sources are variables of the set's
        // library copies.
        let mut r = unsafe { obj.fix_copy_relocs(exe_copy, |i| providers[i].map(|(l, off)| set[l].base + off)) };
        for (o, c) in &pairs {
            // SAFETY: as above.
            r = r.and_then(|_| unsafe { o.redirect_slots(c, &pairs) });
        }
        if let Err(e) = r {
            return Err(fail(sets, format!("cannot complete a copy of the program: {e}")));
        }
    }
    // The program's thread-locals: one block's contents per subrank, from each copy's image.
    let tls = tls::Block::of(exe).filter(|_| !sets.is_empty());
    if let Some(b) = &tls {
        // SAFETY: loaded copies of the executable, the last of each set.
        let images = sets.iter().map(|set| unsafe { b.image(set[libs.len()].base) }).collect();
        // SAFETY: we run on the thread that will run the subranks, before any of them.
        unsafe { b.install(images) };
    }
    for (i, set) in sets.iter().enumerate() {
        // Subrank k's constructors run with its thread-locals in place.
        let k = i + 1;
        crate::sched::swap::with(|s| s.switch_to(k));
        for (o, c) in libs.iter().map(|l| &l.obj).chain([&obj]).zip(set) {
            // SAFETY: complete copies whose constructors have not run, dependencies first;
            // arguments from the caller. They stay loaded from now on.
            unsafe {
                o.rename_copy(c);
                o.start(c, k, argc, argv, envp);
            }
        }
    }
    crate::sched::swap::with(|s| s.switch_to(0));
    Ok(Copies {
        exe: obj,
        name: real_path,
        libs,
        sets,
        tls_bytes: tls.map_or(0, |b| b.bytes()),
        millis: t0.elapsed().as_secs_f64() * 1e3,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_modes() {
        assert_eq!(Mode::parse(None), Ok(Mode::Auto));
        assert_eq!(Mode::parse(Some("")), Ok(Mode::Auto));
        assert_eq!(Mode::parse(Some("AUTO")), Ok(Mode::Auto));
        assert_eq!(Mode::parse(Some("on")), Ok(Mode::On));
        assert_eq!(Mode::parse(Some(" off ")), Ok(Mode::Off));
        let e = Mode::parse(Some("maybe")).unwrap_err();
        assert!(e.contains("TOUCAN_PRIVATIZE=maybe") && e.contains("auto, on or off"), "{e}");
    }
}
