//! MPI semantics: communicators, groups, requests, matching, datatypes, ops, collectives.
pub mod basic;
pub mod blocking;
pub mod coll;
pub mod comm;
pub mod datatype;
pub mod deadlock;
pub mod errh;
pub mod error;
pub mod hooks;
pub mod matching;
pub mod op;
pub mod p2p;
pub mod reduce;
pub mod request;
pub mod runtime;
pub mod state;
pub mod typemap;
