//! Real nonblocking collectives among processes, on real communicators that mirror virtual
//! communicators spanning every process (`core::coll::real` decides when and in which order).
//!
//! Every real communicator used here spans all processes, in process order (the twin of
//! MPI_COMM_WORLD and duplicates of it), so a process's real rank is its process number.

use super::engine::{check, Action, Pending, Transport};
use super::real::{self, h, RComm, RDatatype, ROp, RRequest};
use std::os::raw::c_int;
use std::os::raw::c_void;

/// `start_coll`'s refusal of the collectives made of point-to-point messages, which start
/// elsewhere.
const P2P_STARTS: &str =
    "a tree broadcast or scatter, or a flat scatter or gather, starts with start_tree_bcast, start_tree_scatter or chunk_send";

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
    /// Session 27: `bytes` bytes per process from process `root` as a binomial tree of real
    /// point-to-point messages with `tag` (`start_tree_scatter`): at the root `CollMem::recv`
    /// holds every process's block by rank relative to the root; elsewhere it receives this
    /// process's subtree's (`tree_span` blocks), its own first.
    TreeScatter {
        root: usize,
        bytes: usize,
        tag: i32,
    },
    /// Session 29 (vscat29): a v-form scatter from process `root` as one real point-to-point
    /// message per other process (in pieces of at most `collp2p::P2P_MAX`, in order, with
    /// `tag`: `Transport::chunk_send`, `chunk_recv`): at the root `CollMem::recv` holds every
    /// process's chunk back to back in process order, their lengths (`usize`, native order)
    /// in `CollMem::keep`; elsewhere it receives this process's chunk (`CollMem::bytes`).
    FlatScatterv {
        root: usize,
        tag: i32,
    },
    /// Session 30 (gath30): a v-form gather into process `root` as flat real point-to-point
    /// messages (pieces as `FlatScatterv`'s): every other process sends its members' blocks,
    /// the root's process receives them; the messages' (process, address, bytes) are in
    /// `CollMem::keep` (`core::coll::flatv::put_messages`).
    FlatGatherv {
        root: usize,
        tag: i32,
    },
    /// nbrecv27: the v-forms among processes (`vcoll`), in bytes, every block from and into
    /// `CollMem::recv` (`CollMem::bytes` long: this process's blocks away from the root, every
    /// process's at the root), in place; the per-process counts (and their displacements)
    /// are at byte `arrays` of `CollMem::keep` (`vcoll::put_counts`). Gatherv into process
    /// `root`. vrec28: away from the root, `blocks` > 0 sends this process's chunk from
    /// `blocks` places in memory instead (each member's own buffer, no packed copy): their
    /// (address, bytes) pairs follow the arrays in `keep` (`vcoll::put_blocks`).
    Gatherv {
        root: usize,
        arrays: usize,
        blocks: usize,
    },
    /// nbrecv27: Scatterv from process `root`, as `Gatherv`.
    Scatterv {
        root: usize,
        arrays: usize,
    },
    /// nbrecv27: Allgatherv, as `Gatherv`.
    Allgatherv {
        arrays: usize,
    },
    /// nbrecv27: Reduce_scatter of the `ty` elements at `CollMem::recv` with `op`, in place
    /// (this process's block lands at the start), per-process element counts at byte
    /// `arrays` of `CollMem::keep`.
    ReduceScatter {
        op: i64,
        ty: i64,
        arrays: usize,
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
        let (s, r, len) = operands(self.myproc, what, &mem);
        let byte: RDatatype = h(real::REAL_MPI_BYTE);
        if what == RealColl::Dup {
            // Session 29: the communicator it makes gets its job-wide name (`collq`).
            self.dup_started(comm, token);
        }
        // SAFETY: the memory stays valid until completion (the caller's contract, or `keep`,
        // kept in the pending entry below); the newly made communicator is written into a box
        // that also lives in the pending entry. `comm` is a live real communicator of ours.
        let (rc, name) = unsafe {
            let m = &self.real;
            match what {
                RealColl::Barrier => (m.PMPI_Ibarrier(comm, &mut req), "MPI_Ibarrier"),
                RealColl::Bcast { root } => (m.PMPI_Ibcast_c(r, len, byte, root as _, comm, &mut req), "MPI_Ibcast_c"),
                RealColl::Reduce { root, op, ty, count } => (
                    m.PMPI_Ireduce_c(s, r, count as _, h(ty), h(op), root as _, comm, &mut req),
                    "MPI_Ireduce_c",
                ),
                RealColl::Allreduce { op, ty, count } => (
                    m.PMPI_Iallreduce_c(s, r, count as _, h(ty), h(op), comm, &mut req),
                    "MPI_Iallreduce_c",
                ),
                RealColl::Allgather { .. } => (m.PMPI_Iallgather_c(s, len, byte, r, len, byte, comm, &mut req), "MPI_Iallgather_c"),
                RealColl::Alltoall { .. } => (m.PMPI_Ialltoall_c(s, len, byte, r, len, byte, comm, &mut req), "MPI_Ialltoall_c"),
                RealColl::Gather { root, .. } => (
                    m.PMPI_Igather_c(s, len, byte, r, len, byte, root as _, comm, &mut req),
                    "MPI_Igather_c",
                ),
                RealColl::Scatter { root, .. } => (
                    m.PMPI_Iscatter_c(s, len, byte, r, len, byte, root as _, comm, &mut req),
                    "MPI_Iscatter_c",
                ),
                RealColl::TreeBcast { .. }
                | RealColl::TreeScatter { .. }
                | RealColl::FlatScatterv { .. }
                | RealColl::FlatGatherv { .. } => return Err(P2P_STARTS.into()),
                RealColl::Gatherv { .. } | RealColl::Scatterv { .. } | RealColl::Allgatherv { .. } | RealColl::ReduceScatter { .. } => {
                    super::vcoll::start(m, self.myproc, what, &mem, comm, &mut req)
                }
                RealColl::Dup => {
                    let mut b = Box::new(h::<RComm>(real::REAL_MPI_COMM_NULL));
                    let rc = m.PMPI_Comm_idup(comm, &mut *b, &mut req);
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

    /// The real MPI's blocking collectives, for a call made without the state lock
    /// (`Blocking::run`).
    pub fn blocking(&self) -> Blocking {
        let m = &self.real;
        Blocking {
            me: self.myproc,
            error_class: m.PMPI_Error_class,
            barrier: m.PMPI_Barrier,
            bcast: m.PMPI_Bcast_c,
            reduce: m.PMPI_Reduce_c,
            allreduce: m.PMPI_Allreduce_c,
            allgather: m.PMPI_Allgather_c,
            alltoall: m.PMPI_Alltoall_c,
            gather: m.PMPI_Gather_c,
            scatter: m.PMPI_Scatter_c,
        }
    }

    /// A blocking `MPI_Comm_dup` of real communicator `comm` (start-up only, before any
    /// subrank runs: every process makes the same calls in the same order there).
    pub fn dup_comm(&mut self, comm: RComm) -> Result<RComm, String> {
        let mut out: RComm = h(real::REAL_MPI_COMM_NULL);
        // SAFETY: `comm` is a live real communicator of ours; `out` a valid out-pointer.
        check(unsafe { self.real.PMPI_Comm_dup(comm, &mut out) }, "MPI_Comm_dup")?;
        Ok(out)
    }

    /// Frees a real communicator made by `RealColl::Dup` (collectives still running on it
    /// finish: the real MPI frees it after them).
    pub fn free_comm(&mut self, mut comm: RComm) -> Result<(), String> {
        self.unname(comm);
        // SAFETY: `comm` is a live real communicator of ours, freed once.
        check(unsafe { self.real.PMPI_Comm_free(&mut comm) }, "MPI_Comm_free")
    }
}

/// The real operands of `what` over `mem` at process `me`: (send, receive, count), as both
/// the nonblocking (`Transport::start_coll`) and the blocking (`Blocking::run`) forms take
/// them. The count is in bytes (`MPI_BYTE`) where the collective moves bytes, else unused.
fn operands(me: usize, what: RealColl, mem: &CollMem) -> (*const c_void, *mut c_void, MpiCount) {
    let recv = mem.recv as *mut c_void;
    let send = if mem.send.is_null() {
        real::REAL_MPI_IN_PLACE as *const c_void
    } else {
        mem.send as *const c_void
    };
    let none = std::ptr::null_mut();
    match what {
        RealColl::Barrier | RealColl::Dup => (std::ptr::null(), none, 0),
        // nbrecv27: their operands are `vcoll::start`'s.
        RealColl::Gatherv { .. } | RealColl::Scatterv { .. } | RealColl::Allgatherv { .. } | RealColl::ReduceScatter { .. } => {
            (std::ptr::null(), none, 0)
        }
        RealColl::Bcast { .. } | RealColl::TreeBcast { .. } => (std::ptr::null(), recv, mem.bytes as _),
        RealColl::TreeScatter { .. } | RealColl::FlatScatterv { .. } | RealColl::FlatGatherv { .. } => {
            (recv as *const c_void, recv, mem.bytes as _)
        }
        // Away from the root the operand is read from wherever it is.
        RealColl::Reduce { root, .. } => match (root == me, mem.send.is_null()) {
            (true, _) => (send, recv, 0),
            (false, true) => (recv as *const c_void, none, 0),
            (false, false) => (send, none, 0),
        },
        RealColl::Allreduce { .. } => (send, recv, 0),
        RealColl::Allgather { bytes } | RealColl::Alltoall { bytes } => (send, recv, bytes as _),
        // Away from the root only the operand matters; the root's may be in place.
        RealColl::Gather { root, bytes } => {
            let s = if root != me && mem.send.is_null() {
                recv as *const c_void
            } else {
                send
            };
            (s, if root == me { recv } else { none }, bytes as _)
        }
        // At the root `send` holds every block; `recv` null there: in place.
        RealColl::Scatter { root, bytes } => {
            if root == me {
                let r = if mem.recv.is_null() {
                    real::REAL_MPI_IN_PLACE as *mut c_void
                } else {
                    recv
                };
                (mem.send as *const c_void, r, bytes as _)
            } else {
                (std::ptr::null(), recv, bytes as _)
            }
        }
    }
}

/// The real MPI's count type of the large-count (`_c`) functions.
type MpiCount = real::RCount;

type Fn0 = unsafe extern "C" fn(RComm) -> c_int;
type FnErrorClass = unsafe extern "C" fn(c_int, *mut c_int) -> c_int;
type FnBcast = unsafe extern "C" fn(*mut c_void, MpiCount, RDatatype, c_int, RComm) -> c_int;
type FnReduce = unsafe extern "C" fn(*const c_void, *mut c_void, MpiCount, RDatatype, ROp, c_int, RComm) -> c_int;
type FnAllreduce = unsafe extern "C" fn(*const c_void, *mut c_void, MpiCount, RDatatype, ROp, RComm) -> c_int;
type FnAll = unsafe extern "C" fn(*const c_void, MpiCount, RDatatype, *mut c_void, MpiCount, RDatatype, RComm) -> c_int;
type FnRooted = unsafe extern "C" fn(*const c_void, MpiCount, RDatatype, *mut c_void, MpiCount, RDatatype, c_int, RComm) -> c_int;

/// The real MPI's blocking collectives, copied out of the function table under the state lock
/// (`Transport::blocking`) so that a caller can block in one without holding it: the real MPI
/// must then run at `MPI_THREAD_MULTIPLE` when anybody else may call it meanwhile (see
/// `core::coll::solo`). The library stays loaded until the process exits.
#[derive(Clone, Copy)]
pub struct Blocking {
    me: usize,
    error_class: FnErrorClass,
    barrier: Fn0,
    bcast: FnBcast,
    reduce: FnReduce,
    allreduce: FnAllreduce,
    allgather: FnAll,
    alltoall: FnAll,
    gather: FnRooted,
    scatter: FnRooted,
}

impl Blocking {
    /// Runs `what` over `mem` on real communicator `comm` as the real MPI's blocking
    /// collective; returns when it completed locally.
    ///
    /// # Safety
    /// As `Transport::start_coll`, for the duration of the call; `comm` is a live real
    /// communicator on which every process makes the same collective calls in the same order.
    pub unsafe fn run(&self, comm: RComm, what: RealColl, mem: &CollMem) -> Result<(), Failed> {
        let (s, r, len) = operands(self.me, what, mem);
        let byte: RDatatype = h(real::REAL_MPI_BYTE);
        // SAFETY: the caller's contract: the memory is valid for the call and `comm` is live.
        let (rc, name) = unsafe {
            match what {
                RealColl::Barrier => ((self.barrier)(comm), "MPI_Barrier"),
                RealColl::Bcast { root } => ((self.bcast)(r, len, byte, root as _, comm), "MPI_Bcast_c"),
                RealColl::Reduce { root, op, ty, count } => {
                    ((self.reduce)(s, r, count as _, h(ty), h(op), root as _, comm), "MPI_Reduce_c")
                }
                RealColl::Allreduce { op, ty, count } => ((self.allreduce)(s, r, count as _, h(ty), h(op), comm), "MPI_Allreduce_c"),
                RealColl::Allgather { .. } => ((self.allgather)(s, len, byte, r, len, byte, comm), "MPI_Allgather_c"),
                RealColl::Alltoall { .. } => ((self.alltoall)(s, len, byte, r, len, byte, comm), "MPI_Alltoall_c"),
                RealColl::Gather { root, .. } => ((self.gather)(s, len, byte, r, len, byte, root as _, comm), "MPI_Gather_c"),
                RealColl::Scatter { root, .. } => ((self.scatter)(s, len, byte, r, len, byte, root as _, comm), "MPI_Scatter_c"),
                RealColl::Dup
                | RealColl::TreeBcast { .. }
                | RealColl::TreeScatter { .. }
                | RealColl::FlatScatterv { .. }
                | RealColl::FlatGatherv { .. }
                | RealColl::Gatherv { .. }
                | RealColl::Scatterv { .. }
                | RealColl::Allgatherv { .. }
                | RealColl::ReduceScatter { .. } => {
                    return Err("a communicator duplication, tree broadcast or scatter, or v-form has no blocking form here".into());
                }
            }
        };
        if rc == real::REAL_MPI_SUCCESS as c_int {
            return Ok(());
        }
        // Session 23 (v1coll16): a receive buffer too short is the standard's truncation
        // error, not an internal one (compat coll_pair with TOUCAN_REAL_THREAD=multiple).
        let mut class: c_int = 0;
        // SAFETY: a plain query of the code the real MPI just returned.
        let known = unsafe { (self.error_class)(rc, &mut class) } == real::REAL_MPI_SUCCESS as c_int;
        Err(Failed {
            truncated: known && class == real::REAL_MPI_ERR_TRUNCATE as c_int,
            msg: format!("the real MPI failed in {name} (error {rc})"),
        })
    }
}

/// Why a real blocking collective failed (`Blocking::run`): whether the real MPI's error class
/// was truncation (the caller reports the standard's MPI_ERR_TRUNCATE), and what to say.
#[derive(Debug)]
pub struct Failed {
    pub truncated: bool,
    pub msg: String,
}

impl From<&str> for Failed {
    fn from(msg: &str) -> Failed {
        Failed {
            truncated: false,
            msg: msg.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const S: usize = 0x1000;
    const R: usize = 0x2000;
    const NUL: usize = 0;
    const IN_PLACE: usize = usize::MAX;

    fn addr(p: usize) -> usize {
        if p == IN_PLACE {
            real::REAL_MPI_IN_PLACE
        } else {
            p
        }
    }

    /// Operands at process 0 (send, receive, count) for a call with buffers `send`/`recv`
    /// (`send == recv`: in place).
    #[rstest]
    #[case::bcast(RealColl::Bcast { root: 1 }, S, R, (NUL, R, 16))]
    #[case::reduce_root(RealColl::Reduce { root: 0, op: 0, ty: 0, count: 2 }, S, R, (S, R, 0))]
    #[case::reduce_root_in_place(RealColl::Reduce { root: 0, op: 0, ty: 0, count: 2 }, R, R, (IN_PLACE, R, 0))]
    #[case::reduce_leaf(RealColl::Reduce { root: 1, op: 0, ty: 0, count: 2 }, S, NUL, (S, NUL, 0))]
    #[case::reduce_leaf_own_buffer(RealColl::Reduce { root: 1, op: 0, ty: 0, count: 2 }, R, R, (R, NUL, 0))]
    #[case::allreduce_in_place(RealColl::Allreduce { op: 0, ty: 0, count: 2 }, R, R, (IN_PLACE, R, 0))]
    #[case::allgather(RealColl::Allgather { bytes: 8 }, S, R, (S, R, 8))]
    #[case::alltoall_in_place(RealColl::Alltoall { bytes: 8 }, R, R, (IN_PLACE, R, 8))]
    #[case::gather_root_in_place(RealColl::Gather { root: 0, bytes: 4 }, R, R, (IN_PLACE, R, 4))]
    #[case::gather_leaf(RealColl::Gather { root: 1, bytes: 4 }, S, R, (S, NUL, 4))]
    #[case::scatter_root(RealColl::Scatter { root: 0, bytes: 4 }, S, R, (S, R, 4))]
    #[case::scatter_leaf(RealColl::Scatter { root: 1, bytes: 4 }, S, R, (NUL, R, 4))]
    fn operands_at_process_0(#[case] what: RealColl, #[case] send: usize, #[case] recv: usize, #[case] want: (usize, usize, usize)) {
        let mem = CollMem::at(send as *const u8, recv as *mut u8, 16);
        let (s, r, n) = operands(0, what, &mem);
        assert_eq!((s as usize, r as usize, n as usize), (addr(want.0), addr(want.1), want.2));
    }
}
