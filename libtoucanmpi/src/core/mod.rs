//! MPI semantics, by chapter of the standard: point-to-point (`p2p`), collectives and
//! reduction operations (`coll`), datatypes (`datatype`), groups and communicators (`comm`),
//! topologies (`topo`). Beside them, what every chapter shares: the process's MPI state and
//! its lock (`state`), requests, errors and error handlers, and the runtime around the
//! subranks (start-up, background progress, the deadlock detector, region hints, the report,
//! and what the library says when it must end the job: `diag`).
pub mod coll;
pub mod comm;
pub mod datatype;
pub mod p2p;
pub mod rma; // issue 18: one-sided communication
pub mod topo;

pub mod background;
pub mod deadlock;
pub mod diag;
pub mod errh;
pub mod error;
pub mod hooks;
pub mod idmap;
/// MPI-IO below the C boundary (issue 19).
pub mod io;
pub mod quiescence;
pub mod region;
pub mod report;
pub mod request;
pub mod runtime;
pub mod state;
