//! Reductions: predefined operations on basic elements and user operations
//! (MPI_Op_create) on the user's datatype, over a work buffer.
//!
//! Predefined ops run on a work buffer of basic elements laid out at their C extent (pair
//! types keep their padding), whatever the user's datatype; user ops run on the datatype's
//! own layout, as the user function expects.

use crate::consts as c;
use crate::core::coll::op::{self, OpKind};
use crate::core::datatype::basic::BasicType;
use crate::core::datatype::{self, DtRef};
use crate::core::error::{err, MpiResult};
use crate::sched::lock::Lock;
use std::os::raw::{c_int, c_void};

/// `MPI_User_function`: (invec, inoutvec, len, datatype).
pub type UserFn = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_int, *mut usize);
/// `MPI_User_function_c` (MPI_Op_create_c): the same with an `MPI_Count` length.
pub type UserFnC = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut i64, *mut usize);

/// A user function of either binding.
#[derive(Clone, Copy)]
pub enum UserCall {
    Int(UserFn),
    Count(UserFnC),
}

/// Handles of user operations start here (predefined ones are below 0x100).
pub const USER_OP_BASE: usize = 0x5000_0000;

#[derive(Clone, Copy)]
pub struct UserOp {
    pub f: UserCall,
    pub commute: bool,
}

static USER_OPS: Lock<Vec<Option<UserOp>>> = Lock::new(Vec::new());

pub fn create(f: UserCall, commute: bool) -> usize {
    let mut t = USER_OPS.lock();
    t.push(Some(UserOp { f, commute }));
    USER_OP_BASE + t.len() - 1
}

pub fn user(h: usize) -> Option<UserOp> {
    h.checked_sub(USER_OP_BASE).and_then(|i| USER_OPS.lock().get(i).copied().flatten())
}

pub fn free(h: usize) -> bool {
    match h.checked_sub(USER_OP_BASE) {
        Some(i) => USER_OPS.lock().get_mut(i).map(|x| x.take().is_some()).unwrap_or(false),
        None => false,
    }
}

/// Whether an op handle is commutative (MPI_Op_commutative).
pub fn commutative(h: usize) -> Option<bool> {
    if OpKind::from_handle(h).is_some() {
        return Some(true);
    }
    user(h).map(|u| u.commute)
}

/// An operation bound to the datatype it reduces.
#[derive(Clone)]
pub enum Reducer {
    Builtin { op: OpKind, ty: BasicType, work_dt: DtRef },
    User { op: UserOp, dt: DtRef, handle: usize },
}

impl Reducer {
    /// Binds op handle `op_h` to datatype `dt` (handle `dt_h`), checking they fit.
    pub fn new(op_h: usize, dt: &DtRef, dt_h: usize) -> MpiResult<Reducer> {
        if let Some(u) = user(op_h) {
            return Ok(Reducer::User {
                op: u,
                dt: dt.clone(),
                handle: dt_h,
            });
        }
        let Some(o) = OpKind::from_handle(op_h) else {
            return err(c::MPI_ERR_OP, format!("invalid operation handle {op_h:#x}"));
        };
        match dt.basic {
            // REPLACE and NO_OP are for one-sided accumulates, not reductions.
            Some(b) if op::valid(o, b) && !matches!(o, OpKind::Replace | OpKind::NoOp) => Ok(Reducer::Builtin {
                op: o,
                ty: b,
                work_dt: datatype::lookup(b.handle())?,
            }),
            _ => err(c::MPI_ERR_OP, format!("{} is not defined for datatype {}", o.name(), dt.name)),
        }
    }

    /// `new` for predefined operation `op` on datatype `dt` (None when it is not defined on
    /// it), with the work datatype made by `work` from the basic type (smp7: the team's fast
    /// path lends the predefined one without touching its count).
    pub fn builtin(op: OpKind, dt: &DtRef, work: impl FnOnce(BasicType) -> Option<DtRef>) -> Option<Reducer> {
        let b = dt.basic?;
        (op::valid(op, b) && !matches!(op, OpKind::Replace | OpKind::NoOp)).then_some(())?;
        Some(Reducer::Builtin {
            op,
            ty: b,
            work_dt: work(b)?,
        })
    }

    pub fn commutative(&self) -> bool {
        match self {
            Reducer::Builtin { .. } => true,
            Reducer::User { op, .. } => op.commute,
        }
    }

    /// `work` without a clone of the work datatype (its `Arc` count is two atomic writes on a
    /// line every member of a call shares; session 20).
    #[inline]
    fn work_ref<'a>(&'a self, count: usize, dt: &DtRef) -> (usize, &'a DtRef) {
        match self {
            Reducer::Builtin { ty, work_dt, .. } => (count * dt.elements / if ty.is_pair() { 2 } else { 1 }, work_dt),
            Reducer::User { dt, .. } => (count, dt),
        }
    }

    /// Work-buffer elements (and their datatype) for `count` elements of the user's type.
    pub fn work(&self, count: usize, dt: &DtRef) -> (usize, DtRef) {
        let (n, w) = self.work_ref(count, dt);
        (n, w.clone())
    }

    /// Bytes of a work buffer for `count` user elements.
    pub fn work_len(&self, count: usize, dt: &DtRef) -> usize {
        let (n, w) = self.work_ref(count, dt);
        (n * w.extent.max(0) as usize + w.lb.max(0) as usize).max(1)
    }

    /// Copies `count` user elements at `src` into a new work buffer.
    ///
    /// # Safety
    /// `src` must hold `count` elements of `dt`.
    pub unsafe fn load(&self, src: *const u8, count: usize, dt: &DtRef) -> Vec<u8> {
        let mut out = Vec::new();
        self.load_into(src, count, dt, &mut out);
        out
    }

    /// Like `load`, into `out` (its old contents dropped, its allocation reused).
    ///
    /// # Safety
    /// `src` must hold `count` elements of `dt`.
    pub unsafe fn load_into(&self, src: *const u8, count: usize, dt: &DtRef, out: &mut Vec<u8>) {
        let (n, w) = self.work_ref(count, dt);
        let len = self.work_len(count, dt);
        out.clear();
        if dt.is_contiguous() && w.is_contiguous() {
            // Both layouts are the packed bytes: one copy instead of pack then unpack.
            // SAFETY: `src` holds count * size bytes (the caller's contract).
            out.extend_from_slice(std::slice::from_raw_parts(src, count * dt.size));
            out.resize(len, 0);
            return;
        }
        out.resize(len, 0);
        let mut packed = Vec::with_capacity(count * dt.size);
        dt.pack(src, count, &mut packed);
        w.unpack(&packed, out.as_mut_ptr(), n);
    }

    /// Copies a work buffer back into `count` user elements at `dst`.
    ///
    /// # Safety
    /// `dst` must have room for `count` elements of `dt`.
    pub unsafe fn store(&self, work: &[u8], dst: *mut u8, count: usize, dt: &DtRef) {
        let (n, w) = self.work_ref(count, dt);
        if dt.is_contiguous() && w.is_contiguous() {
            // As in `load`: the work buffer's first bytes are the packed elements.
            // SAFETY: `dst` has room for count * size bytes (the caller's contract); `work` is a
            // work buffer for `count` elements, at least that long.
            std::ptr::copy_nonoverlapping(work.as_ptr(), dst, count * dt.size);
            return;
        }
        let mut packed = Vec::with_capacity(count * dt.size);
        w.pack(work.as_ptr(), n, &mut packed);
        dt.unpack(&packed, dst, count);
    }

    /// `inout = in op inout` over work buffers of `count` user elements.
    ///
    /// # Safety
    /// Both buffers must be work buffers for `count` elements.
    pub unsafe fn apply(&self, inp: &[u8], inout: &mut [u8], count: usize, dt: &DtRef) {
        self.apply_raw(inp.as_ptr(), inout.as_mut_ptr(), count, dt)
    }

    /// [`Reducer::apply`] on raw work buffers (session 19: `MPI_Reduce_local` between the
    /// caller's buffers when they are laid out as work buffers).
    ///
    /// # Safety
    /// `inp` must be valid for reads and `inout` for reads and writes of a work buffer for
    /// `count` elements; the two do not overlap, or are the same buffer.
    pub unsafe fn apply_raw(&self, inp: *const u8, inout: *mut u8, count: usize, dt: &DtRef) {
        match self {
            Reducer::Builtin { op, ty, .. } => {
                let (n, _) = self.work_ref(count, dt);
                op::apply(*op, *ty, inp, inout, n);
            }
            Reducer::User { op, handle, .. } => {
                let mut h = *handle;
                let (a, b) = (inp as *mut c_void, inout as *mut c_void);
                match op.f {
                    UserCall::Int(f) => f(a, b, &mut (count as c_int), &mut h),
                    UserCall::Count(f) => f(a, b, &mut (count as i64), &mut h),
                }
            }
        }
    }
}
