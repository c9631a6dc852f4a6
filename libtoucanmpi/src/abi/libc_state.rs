//! The C library's hidden state that a program owns, per subrank: `rand`/`srand`,
//! `random`/`srandom`/`initstate`/`setstate`, the `drand48` family and `strtok` keep one
//! state per process in the C library (privatizing the program's globals does not reach it),
//! so the subranks of a process would draw from one sequence. Interposed here, each subrank
//! has its own state, initialised as a new process's, and the C library's reentrant
//! functions (`random_r`, `erand48_r`, `strtok_r`, ...) do the work on it: the sequences
//! are the C library's own, as each rank would get them in its own process. Any other caller
//! (a thread of the program's own, a helper task, code before the subranks start) uses the C
//! library's functions and their process-wide state, as before. `rand_r` keeps its state in
//! the caller's variable and needs nothing.

use crate::sched;
use crate::sched::lock::Lock;
use std::ffi::CStr;
use std::os::raw::{c_char, c_double, c_int, c_long, c_uint, c_ushort};
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

/// glibc's `struct random_data`.
#[repr(C)]
struct RandomData {
    fptr: *mut i32,
    rptr: *mut i32,
    state: *mut i32,
    rand_type: c_int,
    rand_deg: c_int,
    rand_sep: c_int,
    end_ptr: *mut i32,
}

/// glibc's `struct drand48_data`.
#[repr(C)]
struct Drand48Data {
    x: [c_ushort; 3],
    old_x: [c_ushort; 3],
    c: c_ushort,
    init: c_ushort,
    a: u64,
}

extern "C" {
    fn random_r(buf: *mut RandomData, result: *mut i32) -> c_int;
    fn srandom_r(seed: c_uint, buf: *mut RandomData) -> c_int;
    fn initstate_r(seed: c_uint, state: *mut c_char, n: usize, buf: *mut RandomData) -> c_int;
    fn setstate_r(state: *mut c_char, buf: *mut RandomData) -> c_int;
    fn erand48_r(x: *mut c_ushort, buf: *mut Drand48Data, result: *mut c_double) -> c_int;
    fn nrand48_r(x: *mut c_ushort, buf: *mut Drand48Data, result: *mut c_long) -> c_int;
    fn jrand48_r(x: *mut c_ushort, buf: *mut Drand48Data, result: *mut c_long) -> c_int;
    fn srand48_r(seed: c_long, buf: *mut Drand48Data) -> c_int;
    fn seed48_r(seed: *mut c_ushort, buf: *mut Drand48Data) -> c_int;
    fn lcong48_r(param: *mut c_ushort, buf: *mut Drand48Data) -> c_int;
    fn strtok_r(s: *mut c_char, delim: *const c_char, save: *mut *mut c_char) -> *mut c_char;
}

/// One subrank's state.
struct Own {
    random: RandomData,
    /// The default state of `random` (glibc's: 128 bytes, type 3), as a new process has it.
    table: [i32; 32],
    drand: Drand48Data,
    strtok: *mut c_char,
}

/// Each subrank's state, by scheduler id, for the first `FAST` ids: read without a lock
/// (a subrank creates its own, and runs on one worker at a time). Boxed (addresses stay put),
/// never freed, a few hundred bytes each.
const FAST: usize = 1 << 16;
static OWN_FAST: [AtomicPtr<Own>; FAST] = [const { AtomicPtr::new(std::ptr::null_mut()) }; FAST];
/// The same for ids from `FAST` on, under a lock.
static OWN: Lock<Vec<usize>> = Lock::new(Vec::new());

/// The calling subrank's state; None outside a subrank.
fn own() -> Option<*mut Own> {
    let id = sched::current();
    if id == usize::MAX || sched::task::get(id).is_none_or(|s| s.helper.load(Ordering::Relaxed)) {
        return None;
    }
    if id < FAST {
        let o = OWN_FAST[id].load(Ordering::Acquire);
        if !o.is_null() {
            return Some(o);
        }
        let o = fresh();
        OWN_FAST[id].store(o, Ordering::Release);
        return Some(o);
    }
    let mut v = OWN.lock();
    let k = id - FAST;
    if v.len() <= k {
        v.resize(k + 1, 0);
    }
    if v[k] == 0 {
        v[k] = fresh() as usize;
    }
    Some(v[k] as *mut Own)
}

/// A new subrank's state, as a new process has it.
#[cold]
fn fresh() -> *mut Own {
    let o = Box::into_raw(Box::new(Own {
        random: RandomData {
            fptr: std::ptr::null_mut(),
            rptr: std::ptr::null_mut(),
            state: std::ptr::null_mut(),
            rand_type: 0,
            rand_deg: 0,
            rand_sep: 0,
            end_ptr: std::ptr::null_mut(),
        },
        table: [0; 32],
        drand: Drand48Data {
            x: [0; 3],
            old_x: [0; 3],
            c: 0,
            init: 0,
            a: 0,
        },
        strtok: std::ptr::null_mut(),
    }));
    // SAFETY: `o` is a fresh, exclusively owned allocation; glibc's initial `random` state is
    // that of `initstate(1, table, 128)`, which this reproduces in `table`.
    unsafe { initstate_r(1, (*o).table.as_mut_ptr().cast(), 128, &mut (*o).random) };
    o
}

/// The C library's function `name` (looked up once per name; `slot` caches it): what the
/// interposed functions (here and in `sleep`) call when they are not ours to serve.
pub(super) fn real(slot: &AtomicUsize, name: &CStr) -> usize {
    let f = slot.load(Ordering::Relaxed);
    if f != 0 {
        return f;
    }
    // SAFETY: looks a function up in the objects after ours.
    let f = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) } as usize;
    if f == 0 {
        crate::abi::fatal(&format!("cannot find the C library's {}", name.to_string_lossy()));
    }
    slot.store(f, Ordering::Relaxed);
    f
}

/// Calls the C library's `$name` of type `$ty` with `$args` (for callers outside a subrank).
macro_rules! libc_call {
    ($name:literal, $ty:ty, $($arg:expr),*) => {{
        static REAL: AtomicUsize = AtomicUsize::new(0);
        // SAFETY: the C library's function of that name has this type.
        let f: $ty = unsafe { std::mem::transmute(real(&REAL, $name)) };
        // SAFETY: called with the program's own arguments.
        unsafe { f($($arg),*) }
    }};
}

// Every function below: `o` comes from `own()`, the running subrank's state, touched only by
// that subrank (which runs on one worker at a time), so the exclusive access the reentrant
// functions need holds; the pointers the program passes are as valid as for the C library.

fn random_of(o: *mut Own) -> i32 {
    let mut r = 0i32;
    // SAFETY: see above.
    unsafe { random_r(&mut (*o).random, &mut r) };
    r
}

/// # Safety
/// As the C library's `rand`.
#[no_mangle]
pub unsafe extern "C" fn rand() -> c_int {
    match own() {
        Some(o) => random_of(o),
        None => libc_call!(c"rand", unsafe extern "C" fn() -> c_int,),
    }
}

/// # Safety
/// As the C library's `random`.
#[no_mangle]
pub unsafe extern "C" fn random() -> c_long {
    match own() {
        Some(o) => random_of(o) as c_long,
        None => libc_call!(c"random", unsafe extern "C" fn() -> c_long,),
    }
}

/// # Safety
/// As the C library's `srandom`.
#[no_mangle]
pub unsafe extern "C" fn srandom(seed: c_uint) {
    match own() {
        // SAFETY: see above.
        Some(o) => unsafe {
            srandom_r(seed, &mut (*o).random);
        },
        None => libc_call!(c"srandom", unsafe extern "C" fn(c_uint), seed),
    }
}

/// # Safety
/// As the C library's `srand` (glibc's is `srandom`).
#[no_mangle]
pub unsafe extern "C" fn srand(seed: c_uint) {
    match own() {
        // SAFETY: see above.
        Some(o) => unsafe {
            srandom_r(seed, &mut (*o).random);
        },
        None => libc_call!(c"srand", unsafe extern "C" fn(c_uint), seed),
    }
}

/// # Safety
/// As the C library's `initstate`.
#[no_mangle]
pub unsafe extern "C" fn initstate(seed: c_uint, state: *mut c_char, n: usize) -> *mut c_char {
    match own() {
        // SAFETY: see above; the previous state's buffer starts one word before its table, as
        // the C library returns it.
        Some(o) => unsafe {
            let old = (*o).random.state.wrapping_sub(1).cast::<c_char>();
            if initstate_r(seed, state, n, &mut (*o).random) == -1 {
                std::ptr::null_mut()
            } else {
                old
            }
        },
        None => libc_call!(
            c"initstate",
            unsafe extern "C" fn(c_uint, *mut c_char, usize) -> *mut c_char,
            seed,
            state,
            n
        ),
    }
}

/// # Safety
/// As the C library's `setstate`.
#[no_mangle]
pub unsafe extern "C" fn setstate(state: *mut c_char) -> *mut c_char {
    match own() {
        // SAFETY: as in `initstate`.
        Some(o) => unsafe {
            let old = (*o).random.state.wrapping_sub(1).cast::<c_char>();
            if setstate_r(state, &mut (*o).random) < 0 {
                std::ptr::null_mut()
            } else {
                old
            }
        },
        None => libc_call!(c"setstate", unsafe extern "C" fn(*mut c_char) -> *mut c_char, state),
    }
}

/// # Safety
/// As the C library's `drand48`.
#[no_mangle]
pub unsafe extern "C" fn drand48() -> c_double {
    match own() {
        // SAFETY: see above.
        Some(o) => unsafe {
            let mut r = 0.0;
            erand48_r((*o).drand.x.as_mut_ptr(), &mut (*o).drand, &mut r);
            r
        },
        None => libc_call!(c"drand48", unsafe extern "C" fn() -> c_double,),
    }
}

/// # Safety
/// As the C library's `erand48`.
#[no_mangle]
pub unsafe extern "C" fn erand48(x: *mut c_ushort) -> c_double {
    match own() {
        // SAFETY: see above.
        Some(o) => unsafe {
            let mut r = 0.0;
            erand48_r(x, &mut (*o).drand, &mut r);
            r
        },
        None => libc_call!(c"erand48", unsafe extern "C" fn(*mut c_ushort) -> c_double, x),
    }
}

/// # Safety
/// As the C library's `lrand48`.
#[no_mangle]
pub unsafe extern "C" fn lrand48() -> c_long {
    match own() {
        // SAFETY: see above.
        Some(o) => unsafe {
            let mut r = 0;
            nrand48_r((*o).drand.x.as_mut_ptr(), &mut (*o).drand, &mut r);
            r
        },
        None => libc_call!(c"lrand48", unsafe extern "C" fn() -> c_long,),
    }
}

/// # Safety
/// As the C library's `nrand48`.
#[no_mangle]
pub unsafe extern "C" fn nrand48(x: *mut c_ushort) -> c_long {
    match own() {
        // SAFETY: see above.
        Some(o) => unsafe {
            let mut r = 0;
            nrand48_r(x, &mut (*o).drand, &mut r);
            r
        },
        None => libc_call!(c"nrand48", unsafe extern "C" fn(*mut c_ushort) -> c_long, x),
    }
}

/// # Safety
/// As the C library's `mrand48`.
#[no_mangle]
pub unsafe extern "C" fn mrand48() -> c_long {
    match own() {
        // SAFETY: see above.
        Some(o) => unsafe {
            let mut r = 0;
            jrand48_r((*o).drand.x.as_mut_ptr(), &mut (*o).drand, &mut r);
            r
        },
        None => libc_call!(c"mrand48", unsafe extern "C" fn() -> c_long,),
    }
}

/// # Safety
/// As the C library's `jrand48`.
#[no_mangle]
pub unsafe extern "C" fn jrand48(x: *mut c_ushort) -> c_long {
    match own() {
        // SAFETY: see above.
        Some(o) => unsafe {
            let mut r = 0;
            jrand48_r(x, &mut (*o).drand, &mut r);
            r
        },
        None => libc_call!(c"jrand48", unsafe extern "C" fn(*mut c_ushort) -> c_long, x),
    }
}

/// # Safety
/// As the C library's `srand48`.
#[no_mangle]
pub unsafe extern "C" fn srand48(seed: c_long) {
    match own() {
        // SAFETY: see above.
        Some(o) => unsafe {
            srand48_r(seed, &mut (*o).drand);
        },
        None => libc_call!(c"srand48", unsafe extern "C" fn(c_long), seed),
    }
}

/// # Safety
/// As the C library's `seed48`: returns the subrank's own buffer of the previous seed.
#[no_mangle]
pub unsafe extern "C" fn seed48(seed: *mut c_ushort) -> *mut c_ushort {
    match own() {
        // SAFETY: see above.
        Some(o) => unsafe {
            seed48_r(seed, &mut (*o).drand);
            (*o).drand.old_x.as_mut_ptr()
        },
        None => libc_call!(c"seed48", unsafe extern "C" fn(*mut c_ushort) -> *mut c_ushort, seed),
    }
}

/// # Safety
/// As the C library's `lcong48`.
#[no_mangle]
pub unsafe extern "C" fn lcong48(param: *mut c_ushort) {
    match own() {
        // SAFETY: see above.
        Some(o) => unsafe {
            lcong48_r(param, &mut (*o).drand);
        },
        None => libc_call!(c"lcong48", unsafe extern "C" fn(*mut c_ushort), param),
    }
}

/// # Safety
/// As the C library's `strtok`.
#[no_mangle]
pub unsafe extern "C" fn strtok(s: *mut c_char, delim: *const c_char) -> *mut c_char {
    match own() {
        // SAFETY: see above.
        Some(o) => unsafe { strtok_r(s, delim, &mut (*o).strtok) },
        None => libc_call!(c"strtok", unsafe extern "C" fn(*mut c_char, *const c_char) -> *mut c_char, s, delim),
    }
}
