//! The local level of a two-level Reduce (session 17): the operands of the members that share
//! a process folded into one accumulator in rank order as they arrive, so that a member that
//! only contributes leaves as soon as its operand was read (MPI lets a non-root return once its
//! send buffer may be reused), and only the member that carries the process's partial result
//! on (the root, or its process's representative) waits for the fold to end.
//!
//! Each member reads its own operand only, while it runs: a member whose turn it is (every
//! lower local rank folded) and who finds the accumulator free folds its operand in straight
//! from its buffer; any other copies it into a work buffer of its own (`staged`) and leaves.
//! Whoever holds the accumulator folds on, after its own, the staged operands that are next in
//! rank order, so nothing waits for a member that has gone. The accumulator is held by one
//! member at a time (`busy`), folded outside the state lock; everything else happens under it,
//! so members on other workers (SMP) take turns the same way.
//!
//! A fold belongs to one call (its key holds the call number), so members that leave early and
//! start the next Reduce on the communicator meet in a fold of their own; the carrier removes
//! the fold when it takes the result.

use crate::core::coll::hier::Key;
use crate::core::coll::op;
use crate::core::coll::reduce::Reducer;
use crate::core::datatype::DtRef;
use crate::core::error::MpiResult;
use crate::core::p2p::blocking::block_on;
use crate::core::state::{self, State};
use crate::sched;

/// One call's fold on this process.
pub struct Fold {
    /// The operands of local members 0..next, combined (None before the first one, and while
    /// a member folds outside the lock).
    acc: Option<Vec<u8>>,
    /// The local member (index in rank order) whose operand is folded next.
    next: usize,
    /// A member holds the accumulator and folds.
    busy: bool,
    /// Operands of members that came out of turn, by local index, as work buffers.
    staged: Vec<Option<Vec<u8>>>,
    /// The carrier, parked until the fold is over.
    waiter: Option<usize>,
}

impl Fold {
    fn new(n: usize) -> Fold {
        Fold {
            acc: None,
            next: 0,
            busy: false,
            staged: (0..n).map(|_| None).collect(),
            waiter: None,
        }
    }

    fn done(&self) -> bool {
        self.next == self.staged.len() && !self.busy
    }
}

/// One operand handed to the accumulator: a member's own buffer, or a staged work buffer.
enum Src {
    User(*const u8),
    Work(Vec<u8>),
}

/// Whether the operands of `red` on `dt` fold straight into the accumulator from the user's
/// layout (a predefined operation on buffers laid out like the work buffer).
fn straight(red: &Reducer, dt: &DtRef) -> bool {
    matches!(red, Reducer::Builtin { work_dt, .. } if dt.is_contiguous() && work_dt.is_contiguous())
}

/// Folds `src` (the operand of the next member in rank order) into `acc` (None: it is the
/// first). Returns the accumulator.
///
/// # Safety
/// A `User` operand holds `count` elements of `dt` (its member runs).
unsafe fn fold_in(acc: Option<Vec<u8>>, src: Src, count: usize, dt: &DtRef, red: &Reducer, spare: &mut Vec<Vec<u8>>) -> Vec<u8> {
    let Some(mut acc) = acc else {
        return match src {
            Src::Work(x) => x,
            Src::User(p) => {
                let mut a = spare.pop().unwrap_or_default();
                // SAFETY: as the caller's.
                unsafe { red.load_into(p, count, dt, &mut a) };
                a
            }
        };
    };
    if let (Reducer::Builtin { op, ty, .. }, true) = (red, straight(red, dt)) {
        // acc = operand op acc: predefined operations commute exactly (as `hier::combine`).
        let (nw, _) = red.work(count, dt);
        let p = match &src {
            Src::User(p) => *p,
            Src::Work(x) => x.as_ptr(),
        };
        op::apply(*op, *ty, p, acc.as_mut_ptr(), nw);
        if let Src::Work(x) = src {
            spare.push(x);
        }
        return acc;
    }
    // x = acc op x: the lower ranks' result first, for non-commutative operations.
    let mut x = match src {
        Src::Work(x) => x,
        Src::User(p) => {
            let mut x = spare.pop().unwrap_or_default();
            // SAFETY: as the caller's.
            unsafe { red.load_into(p, count, dt, &mut x) };
            x
        }
    };
    // SAFETY: both are work buffers for `count` elements.
    unsafe { red.apply(&acc, &mut x, count, dt) };
    std::mem::swap(&mut acc, &mut x);
    spare.push(x);
    acc
}

/// Largest operand (bytes) folded under the state lock (`Call::contribute_locked`).
const LOCKED_MAX: usize = 1024;

/// The arguments of one call's fold, the same for every local member.
pub struct Call<'a> {
    /// The call's meeting point (`hier`'s key: communicator, call number, step).
    pub key: Key,
    /// Local members.
    pub n: usize,
    pub count: usize,
    pub dt: &'a DtRef,
    pub red: &'a Reducer,
    /// No carrier waits: the member that folds the last operand takes the result (`contribute`
    /// returns it) and closes the fold.
    pub last_takes: bool,
}

/// The fold of call `key` (made on first use).
fn slot(s: &mut State, key: Key, n: usize) -> &mut Fold {
    s.meets.folds.entry(key).or_insert_with(|| Fold::new(n))
}

impl Call<'_> {
    /// Member `i` (local index in rank order) contributes `operand` (its own buffer: it runs).
    /// Returns once the operand was read; the fold goes on in whichever member holds the
    /// accumulator. With `last_takes`, the member that folded the last operand gets the result.
    ///
    /// # Safety
    /// `operand` holds `count` elements of `dt`.
    pub unsafe fn contribute(&self, i: usize, operand: *const u8) -> MpiResult<Option<Vec<u8>>> {
        if straight(self.red, self.dt) && self.dt.size.saturating_mul(self.count) <= LOCKED_MAX {
            // SAFETY: as the caller's.
            return unsafe { self.contribute_locked(i, operand) };
        }
        let (key, n) = (self.key, self.n);
        let turn = state::with(|s| {
            let f = slot(s, key, n);
            (!f.busy && f.next == i).then(|| {
                f.busy = true;
                f.acc.take()
            })
        })?;
        let mut spare = Vec::new();
        let acc = match turn {
            // SAFETY: as the caller's.
            Some(acc) => unsafe { fold_in(acc, Src::User(operand), self.count, self.dt, self.red, &mut spare) },
            None => {
                // Out of turn, or somebody holds the accumulator: a copy, then maybe the turn
                // (the holder may have put it back meanwhile, with this operand next).
                let mut x = super::hier::spare();
                // SAFETY: as the caller's.
                unsafe { self.red.load_into(operand, self.count, self.dt, &mut x) };
                let turn = state::with(|s| {
                    let f = slot(s, key, n);
                    f.staged[i] = Some(x);
                    if f.busy {
                        return None;
                    }
                    let x = f.staged[f.next].take()?;
                    f.busy = true;
                    Some((f.acc.take(), x))
                })?;
                let Some((acc, x)) = turn else { return Ok(None) };
                // SAFETY: a work buffer.
                unsafe { fold_in(acc, Src::Work(x), self.count, self.dt, self.red, &mut spare) }
            }
        };
        self.drain(acc, spare)
    }

    /// `contribute` for a small operand of a predefined operation: everything in one round
    /// of the state lock, the fold included (a few instructions per element, less than a
    /// second round of the lock and the fold's look-up: 2x16, 8 B, a non-root member's
    /// `contribute` 670 instructions with two rounds). A member that finds the accumulator held
    /// (by a member folding a large-layout operand outside the lock: members may describe the
    /// same signature with other datatypes) stages a copy, as in `contribute`.
    ///
    /// # Safety
    /// As `contribute`.
    unsafe fn contribute_locked(&self, i: usize, operand: *const u8) -> MpiResult<Option<Vec<u8>>> {
        let (key, n) = (self.key, self.n);
        let (out, wake) = state::with(|s| {
            let mut spare = std::mem::take(&mut s.meets.spare);
            let f = slot(s, key, n);
            let mut src = Src::User(operand);
            if f.busy || f.next != i {
                let mut x = spare.pop().unwrap_or_default();
                // SAFETY: as the caller's.
                unsafe { self.red.load_into(operand, self.count, self.dt, &mut x) };
                f.staged[i] = Some(x);
                match (f.busy, f.staged[f.next].take()) {
                    (false, Some(x)) => src = Src::Work(x),
                    _ => {
                        s.meets.spare = spare;
                        return (None, None);
                    }
                }
            }
            let mut acc = f.acc.take();
            loop {
                // SAFETY: `src` is the caller's operand (as the caller's) or a work buffer.
                acc = Some(unsafe { fold_in(acc, src, self.count, self.dt, self.red, &mut spare) });
                f.next += 1;
                match f.staged.get_mut(f.next).and_then(Option::take) {
                    Some(x) => src = Src::Work(x),
                    None => break,
                }
            }
            let (mut out, mut wake) = (None, None);
            if self.last_takes && f.next == n {
                out = acc;
                s.meets.folds.remove(&key);
            } else {
                f.acc = acc;
                wake = f.waiter.filter(|_| f.done());
            }
            spare.truncate(super::hier::SPARES);
            s.meets.spare = spare;
            (out, wake)
        })?;
        if let Some(t) = wake.filter(|&t| t != sched::current()) {
            sched::wake(t);
        }
        Ok(out)
    }

    /// The holder of the accumulator, which has just folded operand `next`: folds on the staged
    /// operands next in rank order, then puts the accumulator back (and wakes the carrier when
    /// the fold is over; with `last_takes`, returns the result instead).
    fn drain(&self, mut acc: Vec<u8>, mut spare: Vec<Vec<u8>>) -> MpiResult<Option<Vec<u8>>> {
        let (key, n) = (self.key, self.n);
        let mut out = None;
        loop {
            let next = state::with(|s| {
                let f = slot(s, key, n);
                f.next += 1;
                if let Some(x) = f.staged.get_mut(f.next).and_then(Option::take) {
                    return Ok(x);
                }
                if self.last_takes && f.next == n {
                    s.meets.folds.remove(&key);
                    out = Some(std::mem::take(&mut acc));
                    return Err(None);
                }
                f.acc = Some(std::mem::take(&mut acc));
                f.busy = false;
                Err(f.waiter.filter(|_| f.done()))
            })?;
            match next {
                // SAFETY: a work buffer.
                Ok(x) => acc = unsafe { fold_in(Some(acc), Src::Work(x), self.count, self.dt, self.red, &mut spare) },
                Err(w) => {
                    if let Some(t) = w.filter(|&t| t != sched::current()) {
                        sched::wake(t);
                    }
                    break;
                }
            }
        }
        for v in spare {
            super::hier::recycle(v);
        }
        Ok(out)
    }

    /// The carrier (which contributed already): waits until every local operand is folded and
    /// takes the result, closing the fold.
    pub fn result(&self) -> MpiResult<Vec<u8>> {
        let (key, n, me) = (self.key, self.n, sched::current());
        block_on(|s| {
            let f = slot(s, key, n);
            if !f.done() {
                f.waiter = Some(me);
                return None;
            }
            let acc = f.acc.take().unwrap_or_default();
            s.meets.folds.remove(&key);
            Some(acc)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::consts as c;
    use crate::core::coll::reduce::{UserCall, UserOp};
    use rstest::rstest;
    use std::os::raw::{c_int, c_void};

    /// inout = in x inout for 2x2 matrices of i64 (not commutative).
    unsafe extern "C" fn matmul(a: *mut c_void, b: *mut c_void, len: *mut c_int, _: *mut usize) {
        // SAFETY: the fold passes work buffers of `len` matrices.
        unsafe {
            for k in 0..*len as usize {
                let (x, y) = ((a as *const i64).add(4 * k), (b as *mut i64).add(4 * k));
                let (x, m) = (std::slice::from_raw_parts(x, 4), std::slice::from_raw_parts_mut(y, 4));
                let r = [
                    x[0] * m[0] + x[1] * m[2],
                    x[0] * m[1] + x[1] * m[3],
                    x[2] * m[0] + x[3] * m[2],
                    x[2] * m[1] + x[3] * m[3],
                ];
                m.copy_from_slice(&r);
            }
        }
    }

    fn mat(k: i64) -> [i64; 4] {
        [k + 2, 1, k, 1]
    }

    /// The operands of 4 members folded in rank order, each from its own buffer or staged
    /// (a work-buffer copy), give the product (or sum) in rank order.
    #[rstest]
    #[case::all_own(&[false, false, false, false])]
    #[case::all_staged(&[true, true, true, true])]
    #[case::mixed(&[true, false, true, false])]
    #[case::first_staged(&[true, false, false, false])]
    fn folds_in_rank_order(#[case] staged: &[bool]) {
        let int = crate::core::datatype::lookup(c::MPI_INT).expect("MPI_INT");
        let i64t = crate::core::datatype::lookup(c::MPI_INT64_T).expect("MPI_INT64_T");
        let m4: DtRef = std::sync::Arc::new(crate::core::datatype::typemap::contiguous(4, &i64t).expect("4 x int64"));
        let user = Reducer::User {
            op: UserOp {
                f: UserCall::Int(matmul),
                commute: false,
            },
            dt: m4.clone(),
            handle: 0,
        };
        let sum = Reducer::new(c::MPI_SUM, &int, c::MPI_INT).expect("sum of ints");
        let mats: Vec<[i64; 4]> = (0..4).map(mat).collect();
        let ints: Vec<[i32; 3]> = (0..4).map(|k| [k, 10 * k, 1]).collect();
        let (mut acc_m, mut acc_i, mut spare) = (None, None, Vec::new());
        for k in 0..4 {
            let (pm, pi) = (mats[k].as_ptr() as *const u8, ints[k].as_ptr() as *const u8);
            // SAFETY: the arrays hold one matrix / three ints.
            unsafe {
                let (sm, si) = if staged[k] {
                    (Src::Work(user.load(pm, 1, &m4)), Src::Work(sum.load(pi, 3, &int)))
                } else {
                    (Src::User(pm), Src::User(pi))
                };
                acc_m = Some(fold_in(acc_m, sm, 1, &m4, &user, &mut spare));
                acc_i = Some(fold_in(acc_i, si, 3, &int, &sum, &mut spare));
            }
        }
        let mut want = mats[3];
        for k in (0..3).rev() {
            let mut one = 1;
            // SAFETY: one matrix each.
            unsafe {
                matmul(
                    mats[k].as_ptr() as *mut c_void,
                    want.as_mut_ptr() as *mut c_void,
                    &mut one,
                    std::ptr::null_mut(),
                )
            };
        }
        let got: Vec<i64> = acc_m
            .expect("folded")
            .chunks(8)
            .take(4)
            .map(|b| i64::from_ne_bytes(b.try_into().expect("8")))
            .collect();
        assert_eq!(got, want);
        let got: Vec<i32> = acc_i
            .expect("folded")
            .chunks(4)
            .take(3)
            .map(|b| i32::from_ne_bytes(b.try_into().expect("4")))
            .collect();
        assert_eq!(got, [6, 60, 4]);
    }
}
