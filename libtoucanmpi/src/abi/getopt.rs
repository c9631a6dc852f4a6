//! `getopt`, `getopt_long`, `getopt_long_only` (and glibc's `__posix_getopt`) interposed, so
//! that each subrank parses its own arguments, as each rank would in its own process.
//!
//! The C library keeps the parsing state in `optind`, `opterr`, `optopt` and `optarg` (the
//! program's own storage of them when it names them: copy relocations) and scans from
//! `optind`. Shared by the subranks, the first subrank to parse would consume the options and
//! the others would see none. So each subrank has its own values of the four variables, put in
//! place around each call of the C library's function:
//! - privatized, subrank k >= 1 runs its own copy of the program, which reads its own storage
//!   of these variables (where the program names them): its values are there (else kept
//!   here); the C library's are subrank 0's and are put back after the call;
//! - otherwise the program reads the C library's variables directly: they hold the values of
//!   the subrank that called last, and are exchanged when another subrank calls.
//!
//! In SMP mode (several workers) with privatized globals, subrank 0 could read its `optarg`
//! while a subrank of another worker parses, with that subrank's values in place. So there the
//! C library's parser gets variables of its own (`PARSER`: its GOT slots for the four are
//! redirected there, see `got`), and subrank 0's storage (the program's, which the global
//! scope names) is treated like a copy's: nobody's values but its own are ever in it.
//!
//! The C library's internal scan state is rebuilt when another subrank parsed in between (see
//! `as_subrank`), so a subrank may even call MPI between two `getopt` calls.

use crate::got;
use crate::sched;
use crate::sched::lock::Lock;
use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicI32, AtomicUsize};

const NAMES: [&CStr; 4] = [c"optind", c"opterr", c"optopt", c"optarg"];
const OPTIND: usize = 0;
const OPTARG: usize = 3;

/// The four variables' values (`optarg` as an address).
type Vals = [usize; 4];
const FRESH: Vals = [1, 1, b'?' as usize, 0];

/// One subrank's parsing.
#[derive(Clone, Copy)]
struct Parse {
    /// Its values while they are not in place.
    vals: Vals,
    /// `optind` as our last call left it (the program changing it starts a new parse).
    after: usize,
    /// Calls of the C library's parser since the parse started.
    calls: usize,
}

const NEW: Parse = Parse {
    vals: FRESH,
    after: 1,
    calls: 0,
};

struct State {
    /// The C library's variables (as the global scope resolves them: the program's storage
    /// when it names them, subrank 0's), once found.
    lib: Option<[usize; 4]>,
    /// Where the C library's parser keeps them: `lib`, or `PARSER`'s once redirected.
    parser: Option<[usize; 4]>,
    /// Whether redirecting was considered (once, at the first call in SMP mode).
    redirect_tried: bool,
    subs: Vec<Parse>,
    /// Whose values the C library's variables hold (unprivatized case).
    owner: usize,
    /// The subrank whose parse the C library's internal state follows.
    last: usize,
}

/// Held through a whole interposed call.
static TURN: Lock<()> = Lock::new(());

static STATE: Lock<State> = Lock::new(State {
    lib: None,
    parser: None,
    redirect_tried: false,
    subs: Vec::new(),
    owner: 0,
    last: 0,
});

/// # Safety
/// `a` is the address of variable `i` of the set (an int, or `optarg`'s pointer).
unsafe fn read(i: usize, a: usize) -> usize {
    // SAFETY: forwarded from the caller.
    unsafe {
        if i == OPTARG {
            *(a as *const usize)
        } else {
            *(a as *const c_int) as usize
        }
    }
}

/// # Safety
/// As for `read`.
unsafe fn write(i: usize, a: usize, v: usize) {
    // SAFETY: forwarded from the caller.
    unsafe {
        if i == OPTARG {
            *(a as *mut usize) = v
        } else {
            *(a as *mut c_int) = v as c_int
        }
    }
}

/// The parser's own `optind`, `opterr`, `optopt` (as C ints) and `optarg` in SMP mode.
static PARSER_INTS: [AtomicI32; 3] = [const { AtomicI32::new(0) }; 3];
static PARSER_ARG: AtomicUsize = AtomicUsize::new(0);

/// The C library's four variables as the global scope names them, and where its parser
/// keeps them (the same, unless redirected).
fn lib_vars(st: &mut State) -> Option<([usize; 4], [usize; 4])> {
    if st.lib.is_none() {
        let mut a = [0usize; 4];
        for (i, n) in NAMES.iter().enumerate() {
            // SAFETY: looks a data symbol up in the global scope.
            a[i] = unsafe { libc::dlsym(libc::RTLD_DEFAULT, n.as_ptr()) } as usize;
            if a[i] == 0 {
                return None;
            }
        }
        st.lib = Some(a);
        st.parser = Some(a);
    }
    let lib = st.lib?;
    if !st.redirect_tried && crate::privatize::privatized() && sched::queue::workers() > 1 {
        st.redirect_tried = true;
        if let Some(p) = redirect(lib) {
            st.parser = Some(p);
        }
    }
    Some((lib, st.parser?))
}

/// Points the C library's GOT slots of the four variables at `PARSER`'s, with their current
/// values; None (nothing changed) when the C library does not reach them through its GOT.
fn redirect(lib: [usize; 4]) -> Option<[usize; 4]> {
    let obj = got::object_of(real(c"getopt") as usize)?;
    let names: [&[u8]; 4] = std::array::from_fn(|i| NAMES[i].to_bytes());
    // SAFETY: `obj` is the loaded C library (found by its getopt).
    let slots = unsafe { got::slots(&obj, &names) };
    let ours: [usize; 4] = [
        PARSER_INTS[0].as_ptr() as usize,
        PARSER_INTS[1].as_ptr() as usize,
        PARSER_INTS[2].as_ptr() as usize,
        PARSER_ARG.as_ptr() as usize,
    ];
    let mut found = [std::ptr::null_mut::<usize>(); 4];
    for i in 0..4 {
        let slot = slots[i]?;
        // SAFETY: a bound GOT slot of the C library.
        if unsafe { *slot } != lib[i] {
            return None;
        }
        found[i] = slot;
    }
    // SAFETY: `lib` and `ours` hold the four variables with their types; the slots are the C
    // library's GOT entries for them. Every use of the parser goes through our interposed
    // functions, which hold TURN (our caller holds it), so no thread parses meanwhile.
    unsafe {
        for i in 0..4 {
            write(i, ours[i], read(i, lib[i]));
        }
        for i in 0..4 {
            if !got::patch(found[i], ours[i]) {
                for j in 0..i {
                    got::patch(found[j], lib[j]);
                }
                return None;
            }
        }
    }
    Some(ours)
}

/// Runs `call` (the C library's parser; its argument says whether this is a replay, whose
/// results are thrown away) with the calling subrank's values in place.
///
/// The C library's internal state (the scan position inside a group of short options and the
/// non-options it skipped, to move them after the options) cannot be saved. When another
/// subrank used the parser since this one's last call, that state is rebuilt by replaying this
/// subrank's calls from the start of its parse, silently (getopt is deterministic, and
/// replaying over the arguments it already permuted yields the same options).
///
/// # Safety
/// Called by the program's code, with the arguments of one of the interposed functions.
unsafe fn as_subrank(call: impl Fn(bool) -> c_int) -> c_int {
    // The C library's parser has one state per process: subranks running on several workers
    // (SMP mode) take turns through the whole call (which never blocks or yields).
    let _turn = TURN.lock();
    let k = sched::rank();
    let mut st = STATE.lock();
    let Some((prog, lib)) = lib_vars(&mut st) else {
        drop(st);
        return call(false);
    };
    // The parser has variables of its own (SMP mode): subrank 0's are the program's.
    let redirected = prog != lib;
    if k == usize::MAX {
        // Not a subrank (a constructor, a thread of the program): it reads the program's.
        drop(st);
        if !redirected {
            return call(false);
        }
        // SAFETY: both sets hold the four variables with their types; TURN is held.
        unsafe {
            for i in 0..4 {
                write(i, lib[i], read(i, prog[i]));
            }
            let r = call(false);
            for i in 0..4 {
                write(i, prog[i], read(i, lib[i]));
            }
            return r;
        }
    }
    let n = k.max(st.owner) + 1;
    if st.subs.len() < n {
        st.subs.resize(n, NEW);
    }
    let copy = redirected || (crate::privatize::privatized() && k > 0);
    let own: [Option<usize>; 4] = if redirected && k == 0 {
        prog.map(Some)
    } else if copy {
        std::array::from_fn(|i| crate::privatize::copied_var(k, NAMES[i].to_bytes()))
    } else {
        [None; 4]
    };
    // SAFETY: `lib` holds the C library's variables, and the program's storage of them from
    // `privatize::copied_var` (copy relocations) has the same types; the parser runs on this
    // thread only, and nothing else touches these variables meanwhile.
    unsafe {
        let theirs: Vals = std::array::from_fn(|i| read(i, lib[i]));
        // The values as subrank k's program sees them now.
        let mut mine = if copy {
            let mut m = st.subs[k].vals;
            for (i, a) in own.iter().enumerate() {
                if let Some(a) = *a {
                    m[i] = read(i, a);
                }
            }
            m
        } else if st.owner != k {
            let o = st.owner;
            st.subs[o].vals = theirs;
            st.owner = k;
            st.subs[k].vals
        } else {
            theirs
        };
        let p = &mut st.subs[k];
        if mine[OPTIND] != p.after || p.calls == 0 {
            // A new parse (the program reset optind, or never parsed): optind 0 makes the C
            // library reset its internal state too.
            p.calls = 0;
            if mine[OPTIND] == 1 {
                mine[OPTIND] = 0;
            }
        }
        let replay = if std::mem::replace(&mut st.last, k) != k {
            st.subs[k].calls
        } else {
            0
        };
        drop(st);
        if replay > 0 {
            write(OPTIND, lib[OPTIND], 0);
            write(1, lib[1], 0); // opterr: no messages
            for _ in 0..replay {
                call(true);
            }
        }
        for (i, v) in mine.into_iter().enumerate() {
            write(i, lib[i], v);
        }
        let r = call(false);
        let now: Vals = std::array::from_fn(|i| read(i, lib[i]));
        if copy {
            for (i, a) in own.iter().enumerate() {
                if let Some(a) = *a {
                    write(i, a, now[i]);
                }
                // Subrank 0 reads the C library's variables directly: give them back.
                write(i, lib[i], theirs[i]);
            }
        }
        let mut st = STATE.lock();
        let p = &mut st.subs[k];
        if copy {
            p.vals = now;
        }
        p.after = now[OPTIND];
        p.calls += 1;
        r
    }
}

/// The C library's function `name`, or exits with a message.
fn real(name: &CStr) -> *mut c_void {
    // SAFETY: looks a function up in the objects after ours.
    let f = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) };
    if f.is_null() {
        crate::abi::fatal(&format!("cannot find the C library's {}", name.to_string_lossy()));
    }
    f
}

type Short = unsafe extern "C" fn(c_int, *const *mut c_char, *const c_char) -> c_int;
type Long = unsafe extern "C" fn(c_int, *const *mut c_char, *const c_char, *const c_void, *mut c_int) -> c_int;

/// Calls the C library's short-options parser `name` as the calling subrank.
///
/// # Safety
/// As the C library's `getopt`; `name` is `getopt` or `__posix_getopt`.
unsafe fn short(name: &CStr, argc: c_int, argv: *const *mut c_char, opts: *const c_char) -> c_int {
    // SAFETY: the C library's function of that name has this type; called as the program asked.
    unsafe {
        let f: Short = std::mem::transmute(real(name));
        as_subrank(|_| f(argc, argv, opts))
    }
}

/// Calls the C library's long-options parser `name` as the calling subrank (a replay does not
/// touch the program's `index`).
///
/// # Safety
/// As the C library's `getopt_long`; `name` is `getopt_long` or `getopt_long_only`.
unsafe fn long(
    name: &CStr,
    argc: c_int,
    argv: *const *mut c_char,
    opts: *const c_char,
    longopts: *const c_void,
    index: *mut c_int,
) -> c_int {
    // SAFETY: as for `short`.
    unsafe {
        let f: Long = std::mem::transmute(real(name));
        as_subrank(|replay| f(argc, argv, opts, longopts, if replay { &mut 0 } else { index }))
    }
}

/// # Safety
/// As the C library's `getopt`.
#[no_mangle]
pub unsafe extern "C" fn getopt(argc: c_int, argv: *const *mut c_char, opts: *const c_char) -> c_int {
    // SAFETY: forwarded from the caller.
    unsafe { short(c"getopt", argc, argv, opts) }
}

/// glibc's POSIX-conforming `getopt` (what `getopt` names under strict POSIX macros).
///
/// # Safety
/// As the C library's `__posix_getopt`.
#[no_mangle]
pub unsafe extern "C" fn __posix_getopt(argc: c_int, argv: *const *mut c_char, opts: *const c_char) -> c_int {
    // SAFETY: forwarded from the caller.
    unsafe { short(c"__posix_getopt", argc, argv, opts) }
}

/// # Safety
/// As the C library's `getopt_long`.
#[no_mangle]
pub unsafe extern "C" fn getopt_long(
    argc: c_int,
    argv: *const *mut c_char,
    opts: *const c_char,
    lo: *const c_void,
    index: *mut c_int,
) -> c_int {
    // SAFETY: forwarded from the caller.
    unsafe { long(c"getopt_long", argc, argv, opts, lo, index) }
}

/// # Safety
/// As the C library's `getopt_long_only`.
#[no_mangle]
pub unsafe extern "C" fn getopt_long_only(
    argc: c_int,
    argv: *const *mut c_char,
    opts: *const c_char,
    lo: *const c_void,
    index: *mut c_int,
) -> c_int {
    // SAFETY: forwarded from the caller.
    unsafe { long(c"getopt_long_only", argc, argv, opts, lo, index) }
}
