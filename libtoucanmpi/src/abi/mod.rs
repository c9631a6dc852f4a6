//! The C boundary: `MPI_*`/`PMPI_*` exports, argument checks, handles <-> objects, and error
//! handlers. Every export goes through `mpi_fn!`, which catches panics (none crosses into C)
//! and routes errors through the communicator's error handler.

/// The standard-ABI constants (`mpi.h`'s values), generated at build time; they live at the
/// crate's root (`crate::consts`) because every layer uses them.
pub use crate::consts;

#[macro_use]
mod export;
mod attr;
#[macro_use]
mod coll;
// Session 15: blocking collectives at V=1 as the real MPI's (`core::coll::solo`).
// Session 23 (v1coll16): blocking Bcast/Scatter/Allgather between two processes at V=1.
mod collpair;
mod collsolo;
mod nbcpair;
// Session 25: the v-forms on the two pair paths.
mod pairv;
// smp7 (issue 14/16): the blocking collectives on a team, from the read side.
mod collteam;
mod comm;
mod convert;
mod datatype;
// `dlopen` with RTLD_DEEPBIND keeps the malloc family ours (`crate::heap`); not in unit tests.
#[cfg(all(not(any(test, fuzzing)), target_arch = "x86_64"))]
mod dlopen;
mod env;
mod f90types;
// MPI-IO (issue 19): file exports, views, two-phase collective I/O.
#[macro_use]
mod file;
// `exit` and `__libc_start_main` interpose the C library's own entry points: not in unit
// tests or fuzz targets (fuzz/, built with --cfg fuzzing), which are ordinary programs.
#[cfg(not(any(test, fuzzing)))]
pub(crate) mod exit;
mod external;
#[cfg(not(any(test, fuzzing)))]
mod getopt;
pub(crate) mod greq;
mod group;
pub mod handles;
mod info;
// The C library's per-process state of rand, random, drand48 and strtok, per subrank.
mod inter;
#[cfg(not(any(test, fuzzing)))]
mod libc_state;
// The malloc family, per subrank heap (`crate::heap`); not in unit tests.
#[cfg(not(any(test, fuzzing)))]
pub(crate) mod malloc;
mod p2p;
mod region;
// issue 18: one-sided communication (MPI_Win_*, MPI_Put, ...)
mod rma;
mod sendrecv;
// The C library's sleeps and `sched_yield`, interposed like `exit` (not in unit tests).
#[cfg(not(any(test, fuzzing)))]
mod sleep;
#[cfg(not(any(test, fuzzing)))]
mod start;
mod status;
// `pthread_create`/`pthread_join`: the program's threads act as their rank (not in unit tests).
#[cfg(not(any(test, fuzzing)))]
mod threads;
mod topo;

pub use export::{abort_job, fatal, raise, say};
pub use status::MpiStatus;

use std::os::raw::c_int;
pub type Handle = usize;
pub type CInt = c_int;
