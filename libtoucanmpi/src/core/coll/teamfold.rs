//! The blocking Reduce among the subranks of one process, folded as its members arrive
//! (session 18).
//!
//! A Reduce's non-roots leave as soon as their operand was read (MPI lets them return once
//! their send buffer may be reused), which is what a program's other work gains from; the
//! root waits for the result. Before this, each non-root copied its operand into its slot's
//! stage and left, and the team's last arrival reduced the stages: every operand was copied
//! once and reduced once. Here the operands are folded into one accumulator, in rank order, by
//! whoever arrives when it is their turn (every lower rank's operand folded), straight from
//! their own buffer; only a member that comes out of turn, or while another one holds the
//! accumulator, copies its operand into its stage, and whoever holds the accumulator folds the
//! stages next in rank order on before it puts it back. When the members arrive in rank order
//! (a loop of Reduce calls on one worker) no operand is copied at all. The root never copies
//! its operand: it waits, so its buffer is read in place whenever its turn comes.
//!
//! The accumulator is the root's receive buffer when the root has arrived before the first
//! operand is folded (rank 0 arrives first, or is the root) and its layout is the work
//! buffer's (contiguous); otherwise a work buffer the team keeps, copied into the root's
//! receive buffer by the team's last arrival. An in-place root other than rank 0 holds its
//! operand in its receive buffer, which must be read in its turn: then the work buffer.
//!
//! The fold is in rank order whatever order the members arrive in, so the result does not
//! depend on timing (MPI's advice for reductions), and it is the same as `team::reduce_direct`
//! computes: acc = operand op acc, predefined operations commuting exactly.
//!
//! Only a predefined operation whose work buffer is the packed elements, on operands of at
//! least `FOLD_MIN` bytes (`eligible`), folds this way; every member of a call takes the same
//! decision (same operation and type signature, MPI's rule). A member with another count, or one that called another reduction
//! (an Allreduce, a user operation) stops the fold: the team's last arrival finds it
//! unfinished and fails the call everywhere.

use super::op;
use super::reduce::Reducer;
use super::team::{Members, Part};
use crate::consts as c;
use crate::core::datatype::DtRef;
use crate::core::error::{MpiError, MpiResult};
use crate::sched::lock::Lock;

/// Whether a blocking call with arguments `part` folds as its members arrive.
pub(super) fn eligible(part: &Part) -> bool {
    matches!(part, Part::Reduce { root: Some(_), red: Reducer::Builtin { work_dt, .. }, count, dt, .. }
        if work_dt.is_contiguous() && count * dt.size >= FOLD_MIN)
}

/// Smaller operands are staged and reduced by the last arrival, as before: taking turns costs
/// about 90 instructions per member more than staging a few bytes (callgrind of IMB-MPI1's
/// 1x8 Reduce at 8 B), and the copies it saves are small (1 KiB: the same time either way).
const FOLD_MIN: usize = 1024;

/// Where member `j`'s operand is, once it arrived out of turn.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ready {
    /// Not arrived yet (or folded already).
    No,
    /// In the member's stage.
    Staged,
    /// In place at this address (the root's buffer: the root waits).
    At(usize),
}

/// The accumulator while nobody folds.
enum Acc {
    /// Nothing folded yet.
    Empty,
    /// The root's receive buffer.
    Dst(usize),
    /// The team's work buffer.
    Work(Vec<u8>),
}

/// One operand handed to the holder of the accumulator: its address, in the work layout.
#[derive(Clone, Copy)]
struct Src(usize);

struct FoldState {
    /// The member whose operand is folded next.
    next: usize,
    /// A member holds the accumulator (outside the lock) and folds.
    busy: bool,
    acc: Acc,
    /// The root's receive buffer, when the root arrived and the result may be built in it.
    dst: usize,
    /// The operands that wait for their turn.
    ready: Vec<Ready>,
    /// Work elements of every operand (set by the first arrival of a call; None: nobody
    /// arrived yet).
    nw: Option<usize>,
    /// A member's count disagreed with `nw`: the fold stopped at it.
    bad: bool,
    /// The work buffer kept between calls.
    spare: Vec<u8>,
}

/// What the member that takes the accumulator holds while it folds outside the lock.
struct Turn {
    acc: Acc,
    nw: usize,
    dst: usize,
    /// The team's work buffer, when the first operand goes into it.
    spare: Vec<u8>,
}

impl FoldState {
    /// The calling member takes the accumulator (it folds operand `next`).
    fn take_turn(&mut self) -> Turn {
        self.busy = true;
        let acc = std::mem::replace(&mut self.acc, Acc::Empty);
        let spare = match acc {
            Acc::Empty if self.dst == 0 => std::mem::take(&mut self.spare),
            _ => Vec::new(),
        };
        Turn {
            acc,
            nw: self.nw.unwrap_or(0),
            dst: self.dst,
            spare,
        }
    }
}

/// The fold of a team's current blocking Reduce.
pub(super) struct Folder {
    st: Lock<FoldState>,
}

/// Work buffers larger than this are not kept between calls.
const KEEP_MAX: usize = 16 << 20;

impl Folder {
    pub(super) fn new(n: usize) -> Folder {
        Folder {
            st: Lock::new(FoldState {
                next: 0,
                busy: false,
                acc: Acc::Empty,
                dst: 0,
                ready: vec![Ready::No; n],
                nw: None,
                bad: false,
                spare: Vec::new(),
            }),
        }
    }

    /// Member `i` of `m` arrives with `part` (`eligible`); `stage` is its slot's stage, its
    /// own until it marks it ready. Returns once its operand was folded or staged.
    ///
    /// # Safety
    /// `part`'s buffers are valid; members that leave early stay out of their slots until the
    /// team's generation moves; every member of the call passes the same `m`.
    pub(super) unsafe fn arrive<M: Members + ?Sized>(&self, m: &M, i: usize, part: &Part, stage: &mut Vec<u8>) {
        let Part::Reduce {
            send,
            recv,
            count,
            dt,
            red,
            root: Some(root),
        } = part
        else {
            return;
        };
        let is_root = *root as usize == i;
        let own = super::in_place(*send, *recv);
        // Its buffer is in the work layout (else it is converted into the stage).
        let straight = dt.is_contiguous();
        let nw = elements(red, *count, dt);
        let first = {
            let mut g = self.st.lock();
            if *g.nw.get_or_insert(nw) != nw {
                g.bad = true;
                return;
            }
            // The root's receive buffer may hold the result as it is built: laid out like the
            // work buffer, and not holding an operand to be read after others (an in-place
            // root other than rank 0).
            if is_root && straight && (i == 0 || !std::ptr::eq(own, *recv)) {
                g.dst = *recv as usize;
            }
            if straight && !g.busy && g.next == i {
                Some(g.take_turn())
            } else if straight && is_root {
                // Waits for the result: its operand is read in place in its turn.
                g.ready[i] = Ready::At(own as usize);
                return;
            } else {
                None
            }
        };
        if let Some(turn) = first {
            // SAFETY: this member holds the accumulator (busy); its own buffer is valid.
            unsafe { self.hold(m, turn, Src(own as usize), red) };
            return;
        }
        // Out of turn, or a layout to convert: a copy in the work layout into the stage.
        // SAFETY: `own` holds `count` elements of `dt` (the caller's contract).
        unsafe { red.load_into(own, *count, dt, stage) };
        let turn = {
            let mut g = self.st.lock();
            g.ready[i] = Ready::Staged;
            if g.busy || g.next != i {
                return;
            }
            // The holder put the accumulator back meanwhile, with this operand next.
            g.ready[i] = Ready::No;
            g.take_turn()
        };
        // SAFETY: as above; the stage is this member's and holds the operand.
        unsafe { self.hold(m, turn, Src(stage.as_ptr() as usize), red) };
    }

    /// The holder of the accumulator folds `src` (the operand of member `next`), then the
    /// operands that wait next in rank order, and puts the accumulator back.
    ///
    /// # Safety
    /// The caller holds the accumulator (`busy`); `src` is a live operand in the work layout.
    unsafe fn hold<M: Members + ?Sized>(&self, m: &M, turn: Turn, mut src: Src, red: &Reducer) {
        let Reducer::Builtin { op, ty, .. } = red else {
            return;
        };
        let Turn {
            mut acc,
            nw,
            dst,
            mut spare,
        } = turn;
        let bytes = nw * ty_size(red);
        loop {
            // SAFETY: `src` holds `nw` work elements (the members agreed on `nw`, checked at
            // arrival); the accumulator is this member's while it is busy and as long.
            unsafe {
                acc = match acc {
                    Acc::Empty if dst != 0 => {
                        if src.0 != dst {
                            std::ptr::copy_nonoverlapping(src.0 as *const u8, dst as *mut u8, bytes);
                        }
                        Acc::Dst(dst)
                    }
                    Acc::Empty => {
                        spare.clear();
                        spare.extend_from_slice(std::slice::from_raw_parts(src.0 as *const u8, bytes));
                        Acc::Work(std::mem::take(&mut spare))
                    }
                    Acc::Dst(p) => {
                        op::apply(*op, *ty, src.0 as *const u8, p as *mut u8, nw);
                        Acc::Dst(p)
                    }
                    Acc::Work(mut v) => {
                        op::apply(*op, *ty, src.0 as *const u8, v.as_mut_ptr(), nw);
                        Acc::Work(v)
                    }
                };
            }
            let mut g = self.st.lock();
            g.next += 1;
            let k = g.next;
            src = match g.ready.get(k).copied() {
                // SAFETY: a staged member stays out of its stage until the generation moves.
                Some(Ready::Staged) => Src(unsafe { m.stage(k) }.as_ptr() as usize),
                Some(Ready::At(p)) => Src(p),
                _ => {
                    g.acc = acc;
                    g.busy = false;
                    return;
                }
            };
            g.ready[k] = Ready::No;
        }
    }

    /// The team's last arrival, in a call that folds: every member arrived and folded or
    /// staged. Writes the result into the root's buffer if it was built elsewhere, fails the
    /// call everywhere when the fold stopped, and readies the folder for the next call.
    ///
    /// # Safety
    /// Called by the last arrival only, before the generation moves; the root waits.
    pub(super) unsafe fn finish<M: Members + ?Sized>(&self, m: &M, me: usize) -> MpiResult<()> {
        let n = m.count();
        let mut g = self.st.lock();
        let done = g.next == n && !g.bad;
        let acc = std::mem::replace(&mut g.acc, Acc::Empty);
        g.next = 0;
        g.dst = 0;
        g.nw = None;
        g.bad = false;
        g.ready.iter_mut().for_each(|r| *r = Ready::No);
        let err = |e: MpiError| {
            for j in 0..n {
                // SAFETY: the caller's contract.
                unsafe { m.fail(j, e.clone()) };
            }
            Err(e)
        };
        // SAFETY (whole body): the caller's contract; the kinds are read first.
        unsafe {
            super::team::agree(m, me)?;
            if !done {
                drop(g);
                return err(MpiError::new(
                    c::MPI_ERR_ARG,
                    "members of a Reduce passed different counts, operations or roots",
                ));
            }
            if let Acc::Work(v) = acc {
                // The root waits (its part is valid) unless members disagreed on it.
                let root = match m.part(me) {
                    Part::Reduce { root: Some(rt), .. } => Some(*rt as usize).filter(|&rt| rt < n && !m.staged(rt)),
                    _ => None,
                };
                if let Some(Part::Reduce {
                    recv,
                    count,
                    dt,
                    red,
                    root: Some(_),
                    ..
                }) = root.map(|j| m.part(j))
                {
                    red.store(&v, *recv, *count, dt);
                }
                if v.capacity() <= KEEP_MAX {
                    g.spare = v;
                }
            }
            drop(g);
            m.take_error(me).map_or(Ok(()), Err)
        }
    }

    /// Whether no member arrived at the fold in the current call (a reduction that does not
    /// fold must find it so, or members disagreed on the kind of reduction).
    pub(super) fn untouched(&self) -> bool {
        self.st.lock().nw.is_none()
    }
}

/// Work elements of `count` elements of `dt` (as `Reducer::work`, without its datatype).
fn elements(red: &Reducer, count: usize, dt: &DtRef) -> usize {
    match red {
        Reducer::Builtin { ty, .. } => count * dt.elements / if ty.is_pair() { 2 } else { 1 },
        Reducer::User { .. } => count,
    }
}

/// Bytes per work element of a predefined operation's work buffer (contiguous: `eligible`).
fn ty_size(red: &Reducer) -> usize {
    match red {
        Reducer::Builtin { work_dt, .. } => work_dt.size,
        Reducer::User { dt, .. } => dt.size,
    }
}

#[cfg(test)]
mod tests {
    use super::super::team::tests::Held;
    use super::*;
    use rstest::rstest;

    /// A Reduce of 3 doubles over 4 members arriving in `order`, with `root`, in place at the
    /// root or not: the root's buffer holds the rank-order fold, bit for bit, whatever the
    /// order (the operands are chosen so that another grouping rounds differently), and the
    /// folder is ready for the next call.
    #[rstest]
    #[case::in_order(&[0, 1, 2, 3], 0, false)]
    #[case::reversed(&[3, 2, 1, 0], 0, false)]
    #[case::root_last(&[1, 2, 3, 0], 0, false)]
    #[case::imb_like(&[3, 0, 1, 2], 0, false)]
    #[case::root2(&[0, 1, 2, 3], 2, false)]
    #[case::root2_first(&[2, 3, 1, 0], 2, false)]
    #[case::root0_in_place(&[2, 0, 3, 1], 0, true)]
    #[case::root2_in_place(&[2, 0, 1, 3], 2, true)]
    #[case::root3_in_place_first(&[3, 0, 1, 2], 3, true)]
    fn folds_in_rank_order_whatever_the_arrivals(#[case] order: &[usize], #[case] root: usize, #[case] in_place: bool) {
        let dbl = crate::core::datatype::lookup(c::MPI_DOUBLE).expect("MPI_DOUBLE");
        let red = Reducer::new(c::MPI_SUM, &dbl, c::MPI_DOUBLE).expect("sum of doubles");
        let n = 4;
        let vals = [[1e16, 1.0, 3.0], [1.0, 1e-16, -3.0], [-1e16, 1.0, 0.25], [1.0, -1.0, 1e300]];
        let mut sends = vals;
        let mut recvs = [[-7.0f64; 3]; 4];
        if in_place {
            recvs[root] = vals[root];
        }
        let folder = Folder::new(n);
        for round in 0..2 {
            let parts = (0..n)
                .map(|i| Part::Reduce {
                    send: if in_place && i == root {
                        c::MPI_IN_PLACE_ADDR as *const u8
                    } else {
                        sends[i].as_mut_ptr() as *const u8
                    },
                    recv: recvs[i].as_mut_ptr() as *mut u8,
                    count: 3,
                    dt: dbl.clone(),
                    red: red.clone(),
                    root: Some(root as i32),
                })
                .collect::<Vec<_>>();
            let held = Held::new(parts, (0..n).map(|i| (i != root).then(Vec::new)).collect());
            for &i in order {
                // SAFETY: the buffers are live locals; each stage is written by its member only.
                unsafe { folder.arrive(&held, i, &held.parts[i], &mut *held.stages[i].get()) };
            }
            // SAFETY: every member arrived; the root's part is valid.
            unsafe { folder.finish(&held, *order.last().unwrap()) }.expect("folds");
            let mut want = vals[0];
            for v in &vals[1..] {
                for k in 0..3 {
                    want[k] += v[k];
                }
            }
            assert_eq!(recvs[root].map(f64::to_bits), want.map(f64::to_bits), "round {round}");
            assert!(folder.untouched());
            for (i, r) in recvs.iter().enumerate() {
                if i != root {
                    assert_eq!(*r, [-7.0; 3], "a non-root's buffer is not written");
                }
            }
            if in_place {
                recvs[root] = vals[root];
            }
        }
    }

    /// Which blocking calls fold: a rooted Reduce with a predefined operation from `FOLD_MIN`
    /// bytes; not an Allreduce, a user operation or a small operand.
    #[rstest]
    #[case::small(1, Some(0), true, false)]
    #[case::one_kib(128, Some(3), true, true)]
    #[case::allreduce(128, None, true, false)]
    #[case::user_op(128, Some(0), false, false)]
    fn what_folds(#[case] count: usize, #[case] root: Option<i32>, #[case] builtin: bool, #[case] folds: bool) {
        let dbl = crate::core::datatype::lookup(c::MPI_DOUBLE).expect("MPI_DOUBLE");
        let red = if builtin {
            Reducer::new(c::MPI_SUM, &dbl, c::MPI_DOUBLE).expect("sum of doubles")
        } else {
            unsafe extern "C" fn keep(_: *mut std::ffi::c_void, _: *mut std::ffi::c_void, _: *mut i32, _: *mut usize) {}
            Reducer::User {
                op: crate::core::coll::reduce::UserOp {
                    f: crate::core::coll::reduce::UserCall::Int(keep),
                    commute: true,
                },
                dt: dbl.clone(),
                handle: 0,
            }
        };
        let part = Part::Reduce {
            send: std::ptr::null(),
            recv: std::ptr::null_mut(),
            count,
            dt: dbl.clone(),
            red,
            root,
        };
        assert_eq!(eligible(&part), folds);
    }

    /// A Reduce of no elements writes nothing, in any arrival order.
    #[rstest]
    #[case::in_order(&[0, 1, 2])]
    #[case::root_last(&[1, 2, 0])]
    fn an_empty_reduce_writes_nothing(#[case] order: &[usize]) {
        let int = crate::core::datatype::lookup(c::MPI_INT).expect("MPI_INT");
        let red = Reducer::new(c::MPI_SUM, &int, c::MPI_INT).expect("sum of ints");
        let mut sends = [[5i32; 2]; 3];
        let mut out = [-1i32; 2];
        let recv = out.as_mut_ptr() as *mut u8;
        let parts = (0..3)
            .map(|i| Part::Reduce {
                send: sends[i].as_mut_ptr() as *const u8,
                recv,
                count: 0,
                dt: int.clone(),
                red: red.clone(),
                root: Some(0),
            })
            .collect();
        let held = Held::new(parts, vec![None, Some(Vec::new()), Some(Vec::new())]);
        let folder = Folder::new(3);
        // SAFETY: live locals, as above.
        unsafe {
            for &i in order {
                folder.arrive(&held, i, &held.parts[i], &mut *held.stages[i].get());
            }
            folder.finish(&held, *order.last().unwrap()).expect("folds");
        }
        assert_eq!(out, [-1, -1]);
        assert!(folder.untouched());
    }

    /// A member whose count disagrees stops the fold: the call fails everywhere.
    #[test]
    fn a_count_that_disagrees_fails_the_call() {
        let int = crate::core::datatype::lookup(c::MPI_INT).expect("MPI_INT");
        let red = Reducer::new(c::MPI_SUM, &int, c::MPI_INT).expect("sum of ints");
        let (mut a, mut b) = ([1i32; 4], [2i32; 4]);
        let mut out = [0i32; 4];
        let recv = out.as_mut_ptr() as *mut u8;
        let part = |send: *const u8, count| Part::Reduce {
            send,
            recv,
            count,
            dt: int.clone(),
            red: red.clone(),
            root: Some(0),
        };
        let parts = vec![part(a.as_mut_ptr() as *const u8, 4), part(b.as_mut_ptr() as *const u8, 3)];
        let held = Held::new(parts, vec![None, Some(Vec::new())]);
        let folder = Folder::new(2);
        // SAFETY: live locals, as above.
        unsafe {
            folder.arrive(&held, 0, &held.parts[0], &mut *held.stages[0].get());
            folder.arrive(&held, 1, &held.parts[1], &mut *held.stages[1].get());
            assert!(folder.finish(&held, 1).is_err());
        }
        assert!(folder.untouched());
    }
}
