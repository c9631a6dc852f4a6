//! Real nonblocking collectives among processes, on real communicators that mirror virtual
//! communicators spanning every process (`core::coll::real` decides when and in which order).
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
    /// `CollMem::bytes` bytes at `recv` from process `root`.
    Bcast {
        root: usize,
    },
    /// `count` elements of `ty` reduced with `op` into process `root`'s `recv`.
    Reduce {
        root: usize,
        op: i64,
        ty: i64,
        count: usize,
    },
    /// `count` elements of `ty` reduced with `op` into every process's `recv`.
    Allreduce {
        op: i64,
        ty: i64,
        count: usize,
    },
    /// `bytes` bytes from every process into block p (`bytes` each) of every process's
    /// `recv`, the own one from `send` (in place: already in its block).
    Allgather {
        bytes: usize,
    },
    /// Block p (`bytes` each) of every process's `send` into block q of process p's `recv`,
    /// q the sender.
    Alltoall {
        bytes: usize,
    },
    /// `bytes` bytes from every process into block p (`bytes` each) of process `root`'s
    /// `recv` (the root's own from `send`; in place: already in its block).
    Gather {
        root: usize,
        bytes: usize,
    },
    /// Block p (`bytes` each) of process `root`'s `send` into process p's `recv` (the root's
    /// own: in place, left where it is when `recv` is null).
    Scatter {
        root: usize,
        bytes: usize,
    },
    /// A new real communicator with the same processes (`MPI_Comm_idup`).
    Dup,
    /// coll6: `CollMem::bytes` (at most `collp2p::TREE_MAX`) bytes at `recv` from process
    /// `root` as a tree of real point-to-point messages with `tag` (`start_tree_bcast`; the
    /// place's tag is filled in when it starts).
    TreeBcast {
        root: usize,
        tag: i32,
    },
}

/// The memory of a real collective: the operand at `send` (null: in place, at `recv`), the
/// result at `recv`, `bytes` long for a broadcast; `keep` owns it when it is ours (it comes
/// back in `Event::CollDone`).
pub struct CollMem {
    pub send: *const u8,
    pub recv: *mut u8,
    pub bytes: usize,
    pub keep: Vec<u8>,
}

impl CollMem {
    /// The caller's memory (`send` = `recv`: in place).
    pub fn at(send: *const u8, recv: *mut u8, bytes: usize) -> CollMem {
        CollMem {
            send: if std::ptr::eq(send, recv) { std::ptr::null() } else { send },
            recv,
            bytes,
            keep: Vec::new(),
        }
    }

    /// In place on a buffer of ours.
    pub fn owned(mut keep: Vec<u8>) -> CollMem {
        CollMem {
            send: std::ptr::null(),
            recv: keep.as_mut_ptr(),
            bytes: keep.len(),
            keep,
        }
    }
}

impl Transport {
    /// The real twin of MPI_COMM_WORLD.
    pub fn coll_world(&self) -> RComm {
        self.coll
    }

    /// Starts `what` on real communicator `comm` over `mem`. Completion comes back as
    /// `Event::CollDone { token, buf: mem.keep, comm }` (`comm`: the communicator a `Dup`
    /// made). Every process of `comm` must start the same collectives on it in the same order.
    ///
    /// # Safety
    /// `mem.send` and `mem.recv` (when not into `mem.keep`, which moves into the pending list
    /// with its heap block) must stay valid until the completion is reported: `count`
    /// elements of `ty` for a reduction, `bytes` bytes for a broadcast.
    pub unsafe fn start_coll(&mut self, comm: RComm, what: RealColl, mem: CollMem, token: u64) -> Result<(), String> {
        let mut req: RRequest = h(real::REAL_MPI_REQUEST_NULL);
        let mut newcomm: Option<Box<RComm>> = None;
        let recv = mem.recv as *mut c_void;
        let send = if mem.send.is_null() {
            real::REAL_MPI_IN_PLACE as *const c_void
        } else {
            mem.send as *const c_void
        };
        let me = self.myproc;
        // SAFETY: the memory stays valid until completion (the caller's contract, or `keep`,
        // kept in the pending entry below); the newly made communicator is written into a box
        // that also lives in the pending entry. `comm` is a live real communicator of ours.
        let (rc, name) = unsafe {
            match what {
                RealColl::Barrier => (self.real.PMPI_Ibarrier(comm, &mut req), "MPI_Ibarrier"),
                RealColl::Bcast { root } => (
                    self.real
                        .PMPI_Ibcast_c(recv, mem.bytes as _, h(real::REAL_MPI_BYTE), root as _, comm, &mut req),
                    "MPI_Ibcast_c",
                ),
                RealColl::Reduce { root, op, ty, count } => {
                    // Away from the root the operand is read from wherever it is.
                    let (s, r) = match (root == me, mem.send.is_null()) {
                        (true, _) => (send, recv),
                        (false, true) => (recv as *const c_void, std::ptr::null_mut()),
                        (false, false) => (send, std::ptr::null_mut()),
                    };
                    (
                        self.real.PMPI_Ireduce_c(s, r, count as _, h(ty), h(op), root as _, comm, &mut req),
                        "MPI_Ireduce_c",
                    )
                }
                RealColl::Allreduce { op, ty, count } => (
                    self.real.PMPI_Iallreduce_c(send, recv, count as _, h(ty), h(op), comm, &mut req),
                    "MPI_Iallreduce_c",
                ),
                RealColl::Allgather { bytes } => (
                    self.real.PMPI_Iallgather_c(
                        send,
                        bytes as _,
                        h(real::REAL_MPI_BYTE),
                        recv,
                        bytes as _,
                        h(real::REAL_MPI_BYTE),
                        comm,
                        &mut req,
                    ),
                    "MPI_Iallgather_c",
                ),
                RealColl::Alltoall { bytes } => (
                    self.real.PMPI_Ialltoall_c(
                        send,
                        bytes as _,
                        h(real::REAL_MPI_BYTE),
                        recv,
                        bytes as _,
                        h(real::REAL_MPI_BYTE),
                        comm,
                        &mut req,
                    ),
                    "MPI_Ialltoall_c",
                ),
                RealColl::Gather { root, bytes } => {
                    // Away from the root only the operand matters; the root's may be in place.
                    let s = if root != me && mem.send.is_null() {
                        recv as *const c_void
                    } else {
                        send
                    };
                    let r = if root == me { recv } else { std::ptr::null_mut() };
                    (
                        self.real.PMPI_Igather_c(
                            s,
                            bytes as _,
                            h(real::REAL_MPI_BYTE),
                            r,
                            bytes as _,
                            h(real::REAL_MPI_BYTE),
                            root as _,
                            comm,
                            &mut req,
                        ),
                        "MPI_Igather_c",
                    )
                }
                RealColl::Scatter { root, bytes } => {
                    // At the root `send` holds every block; `recv` null there: in place.
                    let (s, r) = if root == me {
                        let r = if mem.recv.is_null() {
                            real::REAL_MPI_IN_PLACE as *mut c_void
                        } else {
                            recv
                        };
                        (mem.send as *const c_void, r)
                    } else {
                        (std::ptr::null(), recv)
                    };
                    (
                        self.real.PMPI_Iscatter_c(
                            s,
                            bytes as _,
                            h(real::REAL_MPI_BYTE),
                            r,
                            bytes as _,
                            h(real::REAL_MPI_BYTE),
                            root as _,
                            comm,
                            &mut req,
                        ),
                        "MPI_Iscatter_c",
                    )
                }
                RealColl::TreeBcast { .. } => return Err("a tree broadcast starts with start_tree_bcast".into()),
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
            buf: Some(mem.keep),
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
