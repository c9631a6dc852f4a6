//! The real MPI underneath: loading it, the wire format, and the progress engine.
pub mod collective;
pub mod collp2p; // coll6: small collectives as real point-to-point
pub mod collq; // session 29: their messages within a node through the node queue
pub mod copy;
pub mod direct; // V=1 point-to-point pass-through
pub mod engine;
pub mod finalize;
pub mod node;
pub mod real;
pub mod rma; // issue 18
pub mod shm; // issue 18
pub mod shmq; // issue 16 (shmq16)
pub mod ucx;
pub mod vcoll; // nbrecv27
pub mod wire;

pub use collective::{CollMem, RealColl};
pub use engine::{Event, Payload, RingBytes, Transport};
