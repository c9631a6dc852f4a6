//! Subranks as coroutines, the worker that runs them, and park/wake. Knows nothing of MPI.
pub mod balance;
pub mod bind;
pub mod coroutine;
pub mod foreign;
pub mod guard;
pub mod lock;
pub mod metrics;
pub mod park;
pub mod queue;
pub mod sentinel;
pub mod swap;
pub mod task;
pub mod timer;
pub mod worker;

pub use park::{others_ready, wake};
pub use worker::{current, defer, in_coroutine, park, rank, yield_now};
