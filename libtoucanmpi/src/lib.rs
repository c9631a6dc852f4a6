//! Toucan-MPI: an MPI library that runs V subranks (coroutines) per process, each a full MPI
//! rank, over a real MPI underneath. See DESIGN.md for the layers:
//! `abi` (C boundary) -> `core` (MPI semantics) -> `transport` (real MPI); `sched` runs subranks.

#![allow(clippy::too_many_arguments)]

pub mod abi;
pub mod core;
pub mod got;
pub mod heap;
pub mod privatize;
pub mod ranges;
pub mod sched;
pub mod transport;

/// The runtime's own memory stays on the C library's heap (see `heap::Runtime`).
#[cfg(not(any(test, fuzzing)))]
#[global_allocator]
static RUNTIME_HEAP: heap::Runtime = heap::Runtime;
