//! Session 25 (nbcred16): the reduction a two-rank nonblocking reduction (`abi::nbcpair`,
//! MPI_Iallreduce and MPI_Ireduce's root) runs when its request completes. The peer's operand
//! arrives as packed bytes in `peer` (the receive's target); the own operand was loaded into
//! a work buffer at the start (the send buffer may be the receive buffer, MPI_IN_PLACE). The
//! operands combine in rank order, rank 0's first (`inout = rank0 op rank1`), as the general
//! path's `reduce_pair` does, so both ranks get the same bits and a non-commutative operation
//! sees its operands in order.

use super::reduce::Reducer;
use crate::core::datatype::DtRef;

/// A started reduction's operands and where its result goes.
pub struct Fold {
    /// The peer's operand, packed (the receive's buffer).
    pub peer: Vec<u8>,
    /// The own operand in the work layout; empty when it is in `out` already (`straight`).
    pub mine: Vec<u8>,
    pub red: Reducer,
    pub count: usize,
    pub dt: DtRef,
    /// This rank in the pair (0 or 1).
    pub me: i32,
    /// The result's buffer: `count` elements of `dt`.
    pub out: *mut u8,
}

/// Session 27: whether a fold of `red` on `dt` may keep the own operand in the result's
/// buffer (`Fold::mine` empty): a predefined operation on a type whose packed bytes are its
/// work layout (`Reducer::load_into`'s straight case), so the peer's packed operand combines
/// with the result's buffer as it is. It saves the work buffer's allocation and a copy each
/// way.
pub fn straight(red: &Reducer, dt: &DtRef) -> bool {
    matches!(red, Reducer::Builtin { work_dt, .. } if dt.is_contiguous() && work_dt.is_contiguous())
}

impl Fold {
    /// Combines the operands in rank order and stores the result.
    ///
    /// # Safety
    /// The receive into `peer` is complete and without error; `out` is the program's receive
    /// buffer (valid while the request is active, MPI's rules) and the owner's values are in
    /// place (its owner, or a helper task working for it, runs).
    pub unsafe fn run(self) {
        let Fold {
            peer,
            mut mine,
            red,
            count,
            dt,
            me,
            out,
        } = self;
        if mine.is_empty() && count > 0 {
            // `straight`: the own operand is in `out`, the peer's packed bytes are a work
            // buffer. Rank 0's operand stays the `in` side: rank 1 combines into `out`, rank 0
            // into the peer's bytes and copies them out (both get the same bits).
            let mut theirs = peer;
            // SAFETY: `out` holds `count` elements of `dt` laid out as a work buffer
            // (`straight`), and `theirs` as many packed; they do not overlap.
            unsafe {
                if me == 0 {
                    red.apply_raw(out, theirs.as_mut_ptr(), count, &dt);
                    std::ptr::copy_nonoverlapping(theirs.as_ptr(), out, count * dt.size);
                } else {
                    red.apply_raw(theirs.as_ptr(), out, count, &dt);
                }
            }
            return;
        }
        let (n, w) = red.work(count, &dt);
        let len = red.work_len(count, &dt);
        let mut theirs = if w.is_contiguous() {
            // The packed bytes are the work layout already.
            let mut p = peer;
            p.resize(len, 0);
            p
        } else {
            let mut t = vec![0u8; len];
            // SAFETY: `peer` holds the packed `n` elements of `w` (the same signature as
            // `count` of `dt`); `t` is a work buffer for them.
            unsafe { w.unpack(&peer, t.as_mut_ptr(), n) };
            t
        };
        // SAFETY: both are work buffers for `count` elements; `out` per the contract.
        unsafe {
            if me == 0 {
                red.apply(&mine, &mut theirs, count, &dt);
                red.store(&theirs, out, count, &dt);
            } else {
                red.apply(&theirs, &mut mine, count, &dt);
                red.store(&mine, out, count, &dt);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Fold, Reducer};
    use crate::consts as c;
    use crate::core::datatype::predefined_arc;
    use rstest::rstest;

    /// Each side's result from its own operand and the peer's packed bytes.
    fn fold(me: i32, mine: &[f64], peer: &[f64], op: usize) -> Vec<f64> {
        let dt = predefined_arc(c::MPI_DOUBLE).expect("MPI_DOUBLE").clone();
        let red = Reducer::new(op, &dt, c::MPI_DOUBLE).expect("defined");
        let mut out = vec![0f64; mine.len()];
        let bytes = |v: &[f64]| v.iter().flat_map(|x| x.to_ne_bytes()).collect::<Vec<u8>>();
        let f = Fold {
            peer: bytes(peer),
            // SAFETY: `mine` holds `len` doubles.
            mine: unsafe { red.load(mine.as_ptr() as *const u8, mine.len(), &dt) },
            red,
            count: mine.len(),
            dt,
            me,
            out: out.as_mut_ptr() as *mut u8,
        };
        // SAFETY: `out` has room for the result; nothing here is a program's thread-local.
        unsafe { f.run() };
        out
    }

    /// Session 27: the straight fold (own operand in the result's buffer) against the loaded one.
    fn fold_straight(me: i32, mine: &[f64], peer: &[f64], op: usize) -> Vec<f64> {
        let dt = predefined_arc(c::MPI_DOUBLE).expect("MPI_DOUBLE").clone();
        let red = Reducer::new(op, &dt, c::MPI_DOUBLE).expect("defined");
        assert!(super::straight(&red, &dt));
        let mut out = mine.to_vec();
        let f = Fold {
            peer: peer.iter().flat_map(|x| x.to_ne_bytes()).collect(),
            mine: Vec::new(),
            red,
            count: mine.len(),
            dt,
            me,
            out: out.as_mut_ptr() as *mut u8,
        };
        // SAFETY: `out` holds the own operand and has room for the result.
        unsafe { f.run() };
        out
    }

    /// Both ranks get the same bits: rank 0's operand combined with rank 1's.
    #[rstest]
    #[case(c::MPI_SUM, vec![1e16, 1.0, 3e-7], vec![-1e16, 0.5, 1e-9], vec![0.0, 1.5, 3e-7 + 1e-9])]
    #[case(c::MPI_MAX, vec![1.0, -2.0], vec![0.5, 7.0], vec![1.0, 7.0])]
    #[case(c::MPI_PROD, vec![3.0], vec![-0.5], vec![-1.5])]
    fn rank_order(#[case] op: usize, #[case] a: Vec<f64>, #[case] b: Vec<f64>, #[case] want: Vec<f64>) {
        let at0 = fold(0, &a, &b, op);
        let at1 = fold(1, &b, &a, op);
        assert_eq!(
            at0.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            at1.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        );
        assert_eq!(at0, want);
        let bits = |v: Vec<f64>| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(fold_straight(0, &a, &b, op)), bits(at0.clone()));
        assert_eq!(bits(fold_straight(1, &b, &a, op)), bits(at0));
    }
}
