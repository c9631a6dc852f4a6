//! Real nonblocking collectives among processes, on real communicators that mirror virtual
//! communicators spanning every process (`core::realcoll` decides when and in which order).
//!
//! Every real communicator used here spans all processes, in process order (the twin of
//! MPI_COMM_WORLD and duplicates of it), so a process's real rank is its process number.

use super::engine::{check, Action, Pending, Transport};
use super::real::{self, h, RComm, RRequest};
use std::os::raw::c_void;

/// A real collective, with real datatype and operation handles where it reduces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RealColl {
    Barrier,
    /// The buffer's bytes from process `root`.
    Bcast {
        root: usize,
    },
    /// `count` elements of `ty` reduced with `op` into process `root`'s buffer.
    Reduce {
        root: usize,
        op: i64,
        ty: i64,
        count: usize,
    },
    /// `count` elements of `ty` reduced with `op` into every process's buffer.
    Allreduce {
        op: i64,
        ty: i64,
        count: usize,
    },
    /// A new real communicator with the same processes (`MPI_Comm_idup`).
    Dup,
}

impl Transport {
    /// The real twin of MPI_COMM_WORLD.
    pub fn coll_world(&self) -> RComm {
        self.coll
    }

    /// Starts `what` on real communicator `comm`, in place on `buf` (its bytes are the
    /// operand and, where the call has one here, the result). Completion comes back as
    /// `Event::CollDone { token, buf, comm }` (`comm`: the communicator a `Dup` made).
    ///
    /// Every process of `comm` must start the same collectives on it in the same order.
    pub fn start_coll(&mut self, comm: RComm, what: RealColl, mut buf: Vec<u8>, token: u64) -> Result<(), String> {
        let mut req: RRequest = h(real::REAL_MPI_REQUEST_NULL);
        let mut newcomm: Option<Box<RComm>> = None;
        let p = buf.as_mut_ptr() as *mut c_void;
        let in_place = real::REAL_MPI_IN_PLACE as *const c_void;
        let me = self.myproc;
        // SAFETY: `buf` moves into the pending list below with its heap block (the pointer `p`
        // stays valid) and stays there until the real MPI reports the request complete; the
        // real MPI reads or writes at most its length: `count` elements of `ty` for a
        // reduction (the caller sized the buffer so), its length in bytes for a broadcast.
        // The newly made communicator is written into a box that also lives in the pending
        // entry. `comm` is a live real communicator of ours.
        let (rc, name) = unsafe {
            match what {
                RealColl::Barrier => (self.real.PMPI_Ibarrier(comm, &mut req), "MPI_Ibarrier"),
                RealColl::Bcast { root } => (
                    self.real
                        .PMPI_Ibcast_c(p, buf.len() as _, h(real::REAL_MPI_BYTE), root as _, comm, &mut req),
                    "MPI_Ibcast_c",
                ),
                RealColl::Reduce { root, op, ty, count } => {
                    let (s, r) = if root == me {
                        (in_place, p)
                    } else {
                        (p as *const c_void, std::ptr::null_mut())
                    };
                    (
                        self.real.PMPI_Ireduce_c(s, r, count as _, h(ty), h(op), root as _, comm, &mut req),
                        "MPI_Ireduce_c",
                    )
                }
                RealColl::Allreduce { op, ty, count } => (
                    self.real.PMPI_Iallreduce_c(in_place, p, count as _, h(ty), h(op), comm, &mut req),
                    "MPI_Iallreduce_c",
                ),
                RealColl::Dup => {
                    let mut b = Box::new(h::<RComm>(real::REAL_MPI_COMM_NULL));
                    let rc = self.real.PMPI_Comm_idup(comm, &mut *b, &mut req);
                    newcomm = Some(b);
                    (rc, "MPI_Comm_idup")
                }
            }
        };
        check(rc, name)?;
        self.pending.push(Pending {
            req,
            action: Action::Coll(token),
            buf: Some(buf),
            comm: newcomm,
        });
        Ok(())
    }

    /// Frees a real communicator made by `RealColl::Dup` (collectives still running on it
    /// finish: the real MPI frees it after them).
    pub fn free_comm(&mut self, mut comm: RComm) -> Result<(), String> {
        // SAFETY: `comm` is a live real communicator of ours, freed once.
        check(unsafe { self.real.PMPI_Comm_free(&mut comm) }, "MPI_Comm_free")
    }
}
