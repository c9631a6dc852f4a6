//! The real MPI underneath, loaded in isolation.
//!
//! libmpich calls its own `MPI_*`/`PMPI_*` names through the PLT, so if it were a plain link
//! dependency our exported `PMPI_*` would capture those internal calls. We `dlopen` it with
//! `RTLD_LOCAL | RTLD_DEEPBIND` (its references bind inside itself first) and call only its
//! `PMPI_*` entry points through a function table that bindgen generates from its header.

#![allow(non_upper_case_globals, non_camel_case_types, non_snake_case, dead_code)]
#![allow(clippy::all)]

mod ffi {
    #![allow(non_upper_case_globals, non_camel_case_types, non_snake_case, dead_code)]
    #![allow(clippy::all, unsafe_op_in_unsafe_fn)]
    include!(concat!(env!("OUT_DIR"), "/real_mpi.rs"));
}
mod consts {
    include!(concat!(env!("OUT_DIR"), "/real_consts.rs"));
}

pub use consts::*;
pub use ffi::{MPI_Status as RealStatus, RealMpi};

/// Handle type of the real MPI (MPICH uses `int` handles).
pub type RComm = ffi::MPI_Comm;
pub type RRequest = ffi::MPI_Request;
pub type RMessage = ffi::MPI_Message;
pub type RDatatype = ffi::MPI_Datatype;
pub type ROp = ffi::MPI_Op;
pub type RCount = ffi::MPI_Count;

/// Casts a real-MPI constant recorded by the build probe to the real handle type.
pub fn h<T: TryFrom<i64>>(v: i64) -> T {
    match T::try_from(v) {
        Ok(x) => x,
        Err(_) => panic!("real MPI constant {v} does not fit its handle type"),
    }
}

/// Loads the real MPI: `TOUCAN_MPI_LIB` or the library found at build time.
pub fn load() -> Result<RealMpi, String> {
    let path = std::env::var("TOUCAN_MPI_LIB")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| env!("TOUCAN_REAL_MPI_DEFAULT").to_string());
    share_environ();
    let flags = libc::RTLD_NOW | libc::RTLD_LOCAL | libc::RTLD_DEEPBIND;
    // SAFETY: loading a shared library runs its initialisers; the real MPI's are ordinary
    // constructors that do not call back into us (DEEPBIND keeps its symbol lookups inside it).
    let lib = unsafe { libloading::os::unix::Library::open(Some(&path), flags) }
        .map_err(|e| format!("cannot load the real MPI library {path}: {e} (set TOUCAN_MPI_LIB)"))?;
    // SAFETY: the table's function types come from the same header the library was built with.
    unsafe { RealMpi::from_library(libloading::Library::from(lib)) }
        .map_err(|e| format!("the real MPI library {path} lacks an entry point we need: {e}"))
}

/// A program that references `environ` gets its own copy of it (a copy relocation) and
/// libc's original is left NULL; with RTLD_DEEPBIND the real MPI's libraries read libc's
/// original, so copy the live environment pointer into it before loading them.
fn share_environ() {
    extern "C" {
        static mut environ: *mut *mut std::os::raw::c_char;
    }
    // SAFETY: RTLD_NOLOAD only looks up the already loaded C library; dlsym on its handle
    // finds libc's own `environ` storage. Writing a pointer-sized value there is what libc
    // itself does at start-up; we are single-threaded at this point (first MPI_Init).
    unsafe {
        let h = libc::dlopen(c"libc.so.6".as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD);
        if h.is_null() {
            return;
        }
        let libc_env = libc::dlsym(h, c"environ".as_ptr()) as *mut *mut *mut std::os::raw::c_char;
        let live = std::ptr::addr_of!(environ).read();
        if !libc_env.is_null() && !live.is_null() && (*libc_env).is_null() {
            *libc_env = live;
        }
        libc::dlclose(h);
    }
}

/// Name the real MPI reports for itself, for `MPI_Get_library_version`.
pub fn library_version(real: &RealMpi) -> String {
    let mut buf = vec![0 as std::os::raw::c_char; REAL_MPI_MAX_LIBRARY_VERSION_STRING as usize + 1];
    let mut len: std::os::raw::c_int = 0;
    // SAFETY: the buffer has MPI_MAX_LIBRARY_VERSION_STRING bytes as the call requires.
    unsafe { real.PMPI_Get_library_version(buf.as_mut_ptr(), &mut len) };
    let bytes: Vec<u8> = buf[..len.max(0) as usize].iter().map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).lines().next().unwrap_or("").trim().to_string()
}
