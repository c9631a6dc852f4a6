//! nbrecv27 (issue 16): the real MPI's nonblocking v-form collectives among processes
//! (`MPI_Igatherv_c`, `MPI_Iscatterv_c`, `MPI_Iallgatherv_c`) and `MPI_Ireduce_scatter_c`,
//! for the two-level records of `core::coll::nbrecv`.
//!
//! The real MPI reads the counts and displacements arrays of a nonblocking v-form until the
//! operation completes, so they live in the operation's own memory (`CollMem::keep`, which
//! moves into the pending entry with its heap block): after the data, aligned for
//! `MPI_Count`, one count per process, then (v-forms) one displacement per process, the
//! blocks back to back in process order (`put_counts`). Every block is in bytes (`MPI_BYTE`)
//! except a reduction's, in elements of its real type.

use super::collective::{CollMem, RealColl};
use super::real::{h, RComm, RCount, RDatatype, RRequest, RealMpi};
use std::os::raw::{c_int, c_void};

/// Bytes of one count or displacement (`MPI_Count` and `MPI_Aint` are both 64 bits here).
const WORD: usize = std::mem::size_of::<RCount>();

/// Appends to `keep` (its first `keep.len()` bytes: the data) the counts `counts` (one per
/// process) and, with `displs`, their displacements (the prefix sums: the blocks back to back
/// in process order), aligned for `MPI_Count`; returns the arrays' byte offset in `keep`.
/// `keep`'s heap block does not move afterwards as long as nothing is added to it.
pub fn put_counts(keep: &mut Vec<u8>, counts: &[usize], displs: bool) -> usize {
    if !displs {
        return put_arrays(keep, counts, None);
    }
    let mut d = Vec::with_capacity(counts.len());
    let mut at = 0;
    for &c in counts {
        d.push(at);
        at += c;
    }
    put_arrays(keep, counts, Some(&d))
}

/// `put_counts` with the displacements given (vrec28: a Gatherv landing in the root's
/// buffer, each process's chunk where the root's counts put it, `nbrecv::gather_landing`).
pub fn put_arrays(keep: &mut Vec<u8>, counts: &[usize], displs: Option<&[usize]>) -> usize {
    let words = counts.len() + displs.map_or(0, |d| d.len());
    // Room for the padding too, so that the block (and the padding found below) stays.
    keep.reserve_exact(WORD + words * WORD);
    let end = keep.as_ptr() as usize + keep.len();
    let pad = (WORD - end % WORD) % WORD;
    keep.resize(keep.len() + pad, 0);
    let at = keep.len();
    for &c in counts {
        keep.extend_from_slice(&(c as RCount).to_ne_bytes());
    }
    for &d in displs.unwrap_or(&[]) {
        keep.extend_from_slice(&(d as RCount).to_ne_bytes());
    }
    at
}

/// vrec28: appends to `keep` (after `put_counts`'s arrays) the (address, bytes) pairs of the
/// blocks a Gatherv sends from where they are (`RealColl::Gatherv::blocks`).
pub fn put_blocks(keep: &mut Vec<u8>, blocks: &[(usize, usize)]) {
    for &(a, n) in blocks {
        keep.extend_from_slice(&(a as RCount).to_ne_bytes());
        keep.extend_from_slice(&(n as RCount).to_ne_bytes());
    }
}

/// vrec28: the real datatype of `blocks` (address, bytes) pairs of memory, to send from
/// `MPI_BOTTOM` (an hindexed type of bytes at their absolute addresses), committed; the
/// caller frees it (the real MPI keeps it alive for a pending operation).
///
/// # Safety
/// `blocks` points at `n` pairs of words.
unsafe fn blocks_type(m: &RealMpi, blocks: *const RCount, n: usize) -> Result<RDatatype, c_int> {
    let mut lens = Vec::with_capacity(n);
    let mut disps = Vec::with_capacity(n);
    for i in 0..n {
        // SAFETY: `n` pairs (the caller's contract).
        let (a, b) = unsafe { (*blocks.add(2 * i), *blocks.add(2 * i + 1)) };
        lens.push(c_int::try_from(b).map_err(|_| -1)?);
        disps.push(a);
    }
    let mut dt: RDatatype = h(super::real::REAL_MPI_DATATYPE_NULL);
    // SAFETY: arrays of `n` entries each, a valid base type.
    unsafe {
        let rc = m.PMPI_Type_create_hindexed(
            n as c_int,
            lens.as_ptr(),
            disps.as_ptr() as _,
            h(super::real::REAL_MPI_BYTE),
            &mut dt,
        );
        if rc != super::real::REAL_MPI_SUCCESS as c_int {
            return Err(rc);
        }
        let rc = m.PMPI_Type_commit(&mut dt);
        if rc != super::real::REAL_MPI_SUCCESS as c_int {
            m.PMPI_Type_free(&mut dt);
            return Err(rc);
        }
    }
    Ok(dt)
}

/// Starts v-form or reduce-scatter `what` over `mem` on real communicator `comm` at process
/// `me` (`Transport::start_coll`'s arm for them): (return code, name).
///
/// # Safety
/// As `Transport::start_coll`; `mem.keep` holds the arrays `put_counts` laid out at the
/// offset `what` names, for every process of `comm`.
pub(super) unsafe fn start(
    m: &RealMpi,
    me: usize,
    what: RealColl,
    mem: &CollMem,
    comm: RComm,
    req: &mut RRequest,
) -> (c_int, &'static str) {
    let byte: RDatatype = h(super::real::REAL_MPI_BYTE);
    let in_place = super::real::REAL_MPI_IN_PLACE as *const c_void;
    let data = mem.recv as *mut c_void;
    let len = mem.bytes as RCount;
    // SAFETY: `put_counts` aligned the arrays and wrote one count (and displacement) per
    // process of `comm` at this offset of `keep`, whose heap block stays (in the pending
    // entry) until the operation completes; `data` is `bytes` long (the caller's contract).
    unsafe {
        // The counts, the displacements, then (a Gatherv's `blocks`) pairs of words.
        let arrays_with = |at: usize, pairs: usize| {
            let p = mem.keep.as_ptr().add(at) as *const RCount;
            let n = (mem.keep.len() - at) / WORD - 2 * pairs;
            (p, p.add(n / 2) as *const _, p.add(n))
        };
        let arrays = |at: usize| {
            let (c, d, _) = arrays_with(at, 0);
            (c, d)
        };
        match what {
            RealColl::Gatherv { root, arrays: at, blocks } => {
                let (counts, displs, pairs) = arrays_with(at, blocks);
                let rc = if root == me {
                    m.PMPI_Igatherv_c(in_place, 0, byte, data, counts, displs, byte, root as _, comm, req)
                } else if blocks > 0 {
                    // vrec28: from the members' buffers (absolute addresses, `MPI_BOTTOM`).
                    match blocks_type(m, pairs, blocks) {
                        Ok(mut dt) => {
                            let bottom = super::real::REAL_MPI_BOTTOM as *const c_void;
                            let rc = m.PMPI_Igatherv_c(bottom, 1, dt, std::ptr::null_mut(), counts, displs, byte, root as _, comm, req);
                            m.PMPI_Type_free(&mut dt);
                            rc
                        }
                        Err(rc) => rc,
                    }
                } else {
                    m.PMPI_Igatherv_c(data, len, byte, std::ptr::null_mut(), counts, displs, byte, root as _, comm, req)
                };
                (rc, "MPI_Igatherv_c")
            }
            RealColl::Scatterv { root, arrays: at } => {
                let (counts, displs) = arrays(at);
                let rc = if root == me {
                    m.PMPI_Iscatterv_c(data, counts, displs, byte, in_place as *mut c_void, 0, byte, root as _, comm, req)
                } else {
                    m.PMPI_Iscatterv_c(std::ptr::null(), counts, displs, byte, data, len, byte, root as _, comm, req)
                };
                (rc, "MPI_Iscatterv_c")
            }
            RealColl::Allgatherv { arrays: at } => {
                let (counts, displs) = arrays(at);
                (
                    m.PMPI_Iallgatherv_c(in_place, 0, byte, data, counts, displs, byte, comm, req),
                    "MPI_Iallgatherv_c",
                )
            }
            RealColl::ReduceScatter { op, ty, arrays: at } => {
                let counts = mem.keep.as_ptr().add(at) as *const RCount;
                (
                    m.PMPI_Ireduce_scatter_c(in_place, data, counts, h(ty), h(op), comm, req),
                    "MPI_Ireduce_scatter_c",
                )
            }
            // Not ours: an error code (`check` reports it).
            _ => (-1, "vcoll::start (not a v-form)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn words(keep: &[u8], at: usize) -> Vec<RCount> {
        keep[at..]
            .chunks(WORD)
            .map(|c| RCount::from_ne_bytes(c.try_into().expect("a word")))
            .collect()
    }

    /// The arrays follow the data, aligned, the displacements the prefix sums of the counts.
    #[rstest]
    #[case::gatherv(3, vec![4, 0, 12], true, vec![4, 0, 12, 0, 4, 4])]
    #[case::aligned(8, vec![8, 8], true, vec![8, 8, 0, 8])]
    #[case::reduce_scatter(5, vec![2, 3], false, vec![2, 3])]
    #[case::empty(0, vec![0, 0], true, vec![0, 0, 0, 0])]
    fn counts_after_the_data(#[case] data: usize, #[case] counts: Vec<usize>, #[case] displs: bool, #[case] want: Vec<RCount>) {
        let mut keep: Vec<u8> = (0..data as u8).collect();
        let at = put_counts(&mut keep, &counts, displs);
        assert!(at >= data);
        assert_eq!((keep.as_ptr() as usize + at) % WORD, 0);
        assert_eq!(&keep[..data], &(0..data as u8).collect::<Vec<u8>>()[..]);
        assert_eq!(words(&keep, at), want);
    }
}
