//! Whether this process shares a core with another process of the job.
//!
//! A worker whose subranks are all blocked polls the real MPI. On a node with at least a core
//! per process it keeps polling (yielding the core between polls, as plain MPICH busy-polls):
//! sleeping there frees nothing anybody needs, delays completions, and each of its thousands
//! of wake-ups a second lands on some core and interrupts whoever computes there (cannon2d at
//! V=1 over 1 Gbit/s: dgemm 3% slower beside a process sleeping 50 us between polls, 8 runs).
//! When processes outnumber the cores they can run on, a long-idle worker must sleep between
//! polls so that the process sharing its core gets it (DESIGN.md, Scheduling).

use super::real::{self as r, h, RComm, RealMpi};
use std::os::raw::c_int;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// The answer of `detect`, once the real MPI is up.
static SHARES: OnceLock<bool> = OnceLock::new();
/// The processes of the job on this node, one bit per world rank (`detect`; none until it ran).
static ON_NODE: OnceLock<Vec<u64>> = OnceLock::new();
/// Worker threads each process runs (SMP mode: more than one), set before `detect`.
static THREADS: AtomicUsize = AtomicUsize::new(1);

/// Records how many worker threads each process of the job runs.
pub fn set_threads(n: usize) {
    THREADS.store(n.max(1), Ordering::Relaxed);
}

/// Whether this process may share a core with another of the job (true until `detect` ran).
pub fn shares_core() -> bool {
    SHARES.get().copied().unwrap_or(true)
}

/// Whether process `proc` (its world rank) runs on this node (false until `detect` ran): the
/// real MPI's messages to it then travel through its shared-memory transport, whose eager
/// limit was measured (`engine::STACK_EAGER`); between nodes it may be lower.
#[inline]
pub fn same_node(proc: usize) -> bool {
    ON_NODE.get().is_some_and(|bits| has(bits, proc))
}

/// Whether bit `i` of the bit set `bits` is set (false past its end).
#[inline]
fn has(bits: &[u64], i: usize) -> bool {
    bits.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 != 0)
}

/// The bit set of `procs` among `everyone` world ranks (ranks out of range are left out).
fn bit_set(everyone: usize, procs: impl IntoIterator<Item = usize>) -> Vec<u64> {
    let mut bits = vec![0u64; everyone.div_ceil(64)];
    for p in procs.into_iter().filter(|&p| p < everyone) {
        bits[p / 64] |= 1 << (p % 64);
    }
    bits
}

/// Bytes each process contributes to `detect`'s exchange: its affinity mask, then its world
/// rank (little-endian `u32`).
const ENTRY: usize = MASK + 4;

/// Bytes of an affinity mask as exchanged (libc's `cpu_set_t`: 1024 CPUs).
const MASK: usize = std::mem::size_of::<libc::cpu_set_t>();

/// The process's affinity before any worker was bound to its core (`remember_mask`).
static PROCESS_MASK: OnceLock<[u8; MASK]> = OnceLock::new();

/// Records the calling thread's affinity as the process's: called before the workers (the
/// main thread among them) are bound to single cores (SMP mode).
pub fn remember_mask() {
    let _ = PROCESS_MASK.set(thread_mask());
}

/// This process's CPU affinity as bytes.
fn my_mask() -> [u8; MASK] {
    PROCESS_MASK.get().copied().unwrap_or_else(thread_mask)
}

/// The calling thread's CPU affinity as bytes (all ones when it cannot be read: any CPU).
fn thread_mask() -> [u8; MASK] {
    // SAFETY: cpu_set_t is plain bytes; all-zero is a valid (empty) set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: pid 0 is this thread; the size is the set's own.
    let rc = unsafe { libc::sched_getaffinity(0, MASK, &mut set) };
    if rc != 0 {
        return [0xff; MASK];
    }
    // SAFETY: cpu_set_t is MASK plain bytes.
    unsafe { std::mem::transmute::<libc::cpu_set_t, [u8; MASK]>(set) }
}

/// Whether `threads` worker threads of processes whose affinity masks are `masks` (MASK bytes
/// each) must share a core: more of them than CPUs in the union of the masks.
pub fn must_share(threads: usize, masks: &[u8]) -> bool {
    let mut union = [0u8; MASK];
    for m in masks.chunks(MASK) {
        for (u, b) in union.iter_mut().zip(m) {
            *u |= b;
        }
    }
    let cpus: u32 = union.iter().map(|b| b.count_ones()).sum();
    threads > cpus as usize
}

/// Asks the processes on this node (a collective over the real `world`) whether they
/// outnumber the CPUs their affinity lets them run on, and records the answer for
/// `shares_core`; the same exchange tells which world ranks share the node (`same_node`):
/// one bit per process of the job, 32 KiB at 256k processes.
pub fn detect(real: &RealMpi, world: RComm) -> Result<bool, String> {
    let mut node: RComm = h(r::REAL_MPI_COMM_NULL);
    let mut procs: c_int = 0;
    let mut everyone: c_int = 0;
    let mut rank: c_int = 0;
    let mut me = [0u8; ENTRY];
    me[..MASK].copy_from_slice(&my_mask());
    // SAFETY: plain calls on live real communicators with valid out-pointers.
    unsafe {
        super::engine::check(
            real.PMPI_Comm_split_type(world, r::REAL_MPI_COMM_TYPE_SHARED as c_int, 0, h(r::REAL_MPI_INFO_NULL), &mut node),
            "MPI_Comm_split_type",
        )?;
        super::engine::check(real.PMPI_Comm_size(node, &mut procs), "MPI_Comm_size")?;
        super::engine::check(real.PMPI_Comm_size(world, &mut everyone), "MPI_Comm_size")?;
        super::engine::check(real.PMPI_Comm_rank(world, &mut rank), "MPI_Comm_rank")?;
    }
    me[MASK..].copy_from_slice(&(rank as u32).to_le_bytes());
    let all = super::engine::allgather_bytes(real, node, procs as usize, &me)?;
    // SAFETY: `node` is the live communicator split above, freed once.
    super::engine::check(unsafe { real.PMPI_Comm_free(&mut node) }, "MPI_Comm_free")?;
    let masks: Vec<u8> = all.chunks(ENTRY).flat_map(|e| e[..MASK].iter().copied()).collect();
    let shares = must_share(procs as usize * THREADS.load(Ordering::Relaxed), &masks);
    let _ = SHARES.set(shares);
    let ranks = all
        .chunks(ENTRY)
        .map(|e| u32::from_le_bytes([e[MASK], e[MASK + 1], e[MASK + 2], e[MASK + 3]]) as usize);
    let _ = ON_NODE.set(bit_set(everyone as usize, ranks));
    Ok(shares)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    /// A mask with the CPUs of bit set `cpus` (CPU i: bit i).
    fn mask(cpus: u64) -> Vec<u8> {
        let mut m = vec![0u8; MASK];
        m[..8].copy_from_slice(&cpus.to_le_bytes());
        m
    }

    #[rstest]
    #[case::all_of_one_word(3, &[0, 1, 2], &[0, 1, 2], &[3, 64])]
    #[case::block_on_a_large_job(200, &[64, 65, 127], &[64, 65, 127], &[0, 63, 128, 199, 200])]
    #[case::round_robin(8, &[1, 3, 5, 7], &[1, 7], &[0, 2, 6])]
    #[case::out_of_range_left_out(4, &[2, 9], &[2], &[9, 3])]
    fn node_members(#[case] everyone: usize, #[case] on: &[usize], #[case] yes: &[usize], #[case] no: &[usize]) {
        let bits = bit_set(everyone, on.iter().copied());
        assert_eq!(bits.len(), everyone.div_ceil(64));
        for &p in yes {
            assert!(has(&bits, p), "{p} should be on the node");
        }
        for &p in no {
            assert!(!has(&bits, p), "{p} should not be on the node");
        }
    }

    #[rstest]
    #[case::one_per_core_unbound(&[0b11, 0b11], false)]
    #[case::bound_to_own_cores(&[0b01, 0b10], false)]
    #[case::four_on_two(&[0b11, 0b11, 0b11, 0b11], true)]
    #[case::bound_to_one_core(&[0b1000, 0b1000], true)]
    #[case::alone(&[0b100000], false)]
    fn sharing(#[case] masks: &[u64], #[case] want: bool) {
        let all: Vec<u8> = masks.iter().flat_map(|&m| mask(m)).collect();
        assert_eq!(must_share(masks.len(), &all), want);
    }
}
