//! Attributes on communicators and datatypes: keyvals with copy/delete callbacks,
//! set/get/delete, and their behaviour when the object is duplicated (MPI_Comm_dup,
//! MPI_Type_dup) or freed. Both kinds share one keyval table (a keyval remembers its kind)
//! and one attribute store keyed by (kind, handle). Callbacks run outside the state lock
//! (they may call MPI).

use super::consts as c;
use super::handles::{comm, me};
use crate::core::datatype as dt;
use crate::core::error::{err, MpiResult};
use crate::core::state::{self, AttrKind, AttrVal, Keyval};
use std::os::raw::{c_int, c_void};

/// User keyvals are numbered from here (predefined keys are below 1000).
pub const KEYVAL_BASE: c_int = 0x10000;

/// `MPI_Comm_copy_attr_function` and `MPI_Type_copy_attr_function`: the object handle is
/// pointer-sized in both.
type CopyFn = unsafe extern "C" fn(usize, c_int, *mut c_void, *mut c_void, *mut c_void, *mut c_int) -> c_int;
type DeleteFn = unsafe extern "C" fn(usize, c_int, *mut c_void, *mut c_void) -> c_int;

/// Keyval `k` of subrank `sub`, whatever its kind.
fn any_keyval(sub: usize, k: c_int) -> MpiResult<Option<Keyval>> {
    state::with(|s| {
        k.checked_sub(KEYVAL_BASE)
            .and_then(|i| usize::try_from(i).ok())
            .and_then(|i| s.locals[sub].keyvals.get(i).copied())
    })
}

fn keyval(sub: usize, kind: AttrKind, k: c_int) -> MpiResult<Keyval> {
    let kv = any_keyval(sub, k)?;
    match kv {
        Some(kv) if kv.kind == kind => Ok(kv),
        Some(kv) => err(
            c::MPI_ERR_KEYVAL,
            format!("keyval {k} was made for {:?} attributes, not {kind:?}", kv.kind),
        ),
        None => err(c::MPI_ERR_KEYVAL, format!("invalid keyval {k}")),
    }
}

pub(super) fn create(kind: AttrKind, copy: usize, delete: usize, out: *mut c_int, extra: *mut c_void) -> MpiResult<()> {
    let sub = me()?;
    if out.is_null() {
        return err(c::MPI_ERR_ARG, "null keyval pointer");
    }
    let k = state::with(|s| {
        let t = &mut s.locals[sub].keyvals;
        t.push(Keyval {
            kind,
            copy,
            delete,
            extra: extra as usize,
            freed: false,
            fortran: false,
        });
        KEYVAL_BASE + t.len() as c_int - 1
    })?;
    // SAFETY: checked non-null; the caller passes a writable int.
    unsafe { *out = k };
    Ok(())
}

pub(super) fn free_keyval(kind: AttrKind, k: *mut c_int) -> MpiResult<()> {
    let sub = me()?;
    if k.is_null() {
        return err(c::MPI_ERR_ARG, "null keyval pointer");
    }
    // SAFETY: checked non-null.
    let key = unsafe { *k };
    // Freeing again a key whose attributes are not all deleted yet is harmless (MPICH's suite
    // frees a key in its own delete callback and then again, attr/keyval_double_free).
    named_keyval(sub, kind, key)?;
    // Attributes already set keep their callbacks; the key can no longer be set.
    state::with(|s| s.locals[sub].keyvals[(key - KEYVAL_BASE) as usize].freed = true)?;
    // SAFETY: as above.
    unsafe { *k = c::MPI_KEYVAL_INVALID };
    Ok(())
}

/// A keyval an attribute may be set with: created and not freed.
fn live_keyval(sub: usize, kind: AttrKind, k: c_int) -> MpiResult<Keyval> {
    let kv = keyval(sub, kind, k)?;
    if kv.freed {
        return err(c::MPI_ERR_KEYVAL, format!("keyval {k} was freed"));
    }
    Ok(kv)
}

/// A keyval the application may still name to get, delete or free: not freed, or freed while
/// some object still has an attribute with it (the standard frees a key only once its last
/// attribute is deleted, so until then the attributes can be read and deleted).
fn named_keyval(sub: usize, kind: AttrKind, k: c_int) -> MpiResult<Keyval> {
    let kv = keyval(sub, kind, k)?;
    if kv.freed && !state::with(|s| s.locals[sub].attrs.values().flatten().any(|a| a.0 == k))? {
        return err(c::MPI_ERR_KEYVAL, format!("keyval {k} was freed"));
    }
    Ok(kv)
}

/// Runs the delete callback of attribute `key` on object `h` (which has it), with the value
/// as the callback's language sees it.
fn run_delete(sub: usize, kind: AttrKind, h: usize, key: c_int) -> MpiResult<()> {
    let kv = keyval(sub, kind, key)?;
    if kv.delete > 1 {
        let Some(val) = find(sub, kind, h, key, kv.fortran)? else {
            return Ok(());
        };
        // SAFETY: the application registered this pointer as a delete callback of this kind.
        let f: DeleteFn = unsafe { std::mem::transmute(kv.delete) };
        let rc = unsafe { f(h, key, val as *mut c_void, kv.extra as *mut c_void) };
        if rc != c::MPI_SUCCESS {
            return err(rc, format!("the delete callback of keyval {key} returned {rc}"));
        }
    }
    Ok(())
}

/// Attribute `key`'s value on object `h`, as C (`fortran` false) or Fortran sees it.
fn find(sub: usize, kind: AttrKind, h: usize, key: c_int, fortran: bool) -> MpiResult<Option<usize>> {
    state::with(|s| {
        s.locals[sub]
            .attrs
            .get(&(kind, h))
            .and_then(|v| v.iter().find(|a| a.0 == key).map(|a| a.1.view(fortran)))
    })
}

pub(super) fn set(sub: usize, kind: AttrKind, h: usize, key: c_int, val: usize) -> MpiResult<()> {
    live_keyval(sub, kind, key)?;
    if find(sub, kind, h, key, false)?.is_some() {
        run_delete(sub, kind, h, key)?;
    }
    state::with(|s| {
        let v = s.locals[sub].attrs.entry((kind, h)).or_default();
        v.retain(|a| a.0 != key);
        v.push((key, AttrVal::C(val)));
    })?;
    Ok(())
}

/// A user attribute's value as C sees it, if set.
pub fn get_user(sub: usize, kind: AttrKind, h: usize, key: c_int) -> MpiResult<Option<usize>> {
    named_keyval(sub, kind, key)?;
    find(sub, kind, h, key, false)
}

pub(super) fn delete(sub: usize, kind: AttrKind, h: usize, key: c_int) -> MpiResult<()> {
    if get_user(sub, kind, h, key)?.is_none() {
        return err(c::MPI_ERR_KEYVAL, format!("attribute {key} is not set on this object"));
    };
    run_delete(sub, kind, h, key)?;
    state::with(|s| {
        if let Some(a) = s.locals[sub].attrs.get_mut(&(kind, h)) {
            a.retain(|x| x.0 != key)
        }
    })?;
    Ok(())
}

/// Copies the attributes of `old` to the new object `new` (MPI_Comm_dup, MPI_Type_dup).
pub fn copy_all(sub: usize, kind: AttrKind, old: usize, new: usize) -> MpiResult<()> {
    let attrs = state::with(|s| s.locals[sub].attrs.get(&(kind, old)).cloned().unwrap_or_default())?;
    for (key, src) in attrs {
        let kv = keyval(sub, kind, key)?;
        let copied = match kv.copy {
            0 => None,
            1 => Some(src),
            f => {
                // SAFETY: the application registered this pointer as a copy callback of this kind.
                let f: CopyFn = unsafe { std::mem::transmute(f) };
                let (mut out, mut flag): (usize, c_int) = (0, 0);
                // SAFETY: the callback gets the value in its own language (for C, a Fortran
                // integer's address: `src` lives until the call returns), and an `out` and a
                // `flag` that outlive the call.
                let rc = unsafe {
                    f(
                        old,
                        key,
                        kv.extra as *mut c_void,
                        src.view(kv.fortran) as *mut c_void,
                        &mut out as *mut usize as *mut c_void,
                        &mut flag,
                    )
                };
                if rc != c::MPI_SUCCESS {
                    return err(rc, format!("the copy callback of keyval {key} returned {rc}"));
                }
                // The copy keeps the language the attribute was set from, as under MPICH.
                (flag != 0).then(|| src.like(out))
            }
        };
        if let Some(v) = copied {
            state::with(|s| s.locals[sub].attrs.entry((kind, new)).or_default().push((key, v)))?;
        }
    }
    Ok(())
}

/// Runs the delete callbacks of every attribute of `h`, last set first (MPI_Comm_free,
/// MPI_Type_free). Each attribute goes after its callback returned (so the callback may
/// still name its key, even a freed one); a failing callback stops there: the attributes not
/// yet deleted stay.
pub fn delete_all(sub: usize, kind: AttrKind, h: usize) -> MpiResult<()> {
    while let Some(key) = state::with(|s| s.locals[sub].attrs.get(&(kind, h)).and_then(|v| v.last().map(|a| a.0)))? {
        run_delete(sub, kind, h, key)?;
        state::with(|s| {
            if let Some(v) = s.locals[sub].attrs.get_mut(&(kind, h)) {
                v.retain(|a| a.0 != key);
                if v.is_empty() {
                    s.locals[sub].attrs.remove(&(kind, h));
                }
            }
        })?;
    }
    Ok(())
}

/// The running subrank, with `h` a valid datatype.
fn type_owner(h: usize) -> MpiResult<usize> {
    let sub = me()?;
    dt::lookup(h)?;
    Ok(sub)
}

/// `MPI_Type_dup`'s attribute step: copies, and on a failing copy callback frees the new
/// type again (deleting what was copied) and returns the callback's error. Outside a rank
/// (the library's unit tests) no attribute can have been set.
pub fn dup_type(old: usize, new: usize) -> MpiResult<()> {
    let Ok(sub) = me() else { return Ok(()) };
    copy_all(sub, AttrKind::Type, old, new).inspect_err(|_| {
        let _ = delete_all(sub, AttrKind::Type, new);
        let _ = dt::free(new);
    })
}

/// `MPI_Type_free`'s attribute step (before the handle goes).
pub fn free_type(h: usize) -> MpiResult<()> {
    dt::freeable(h)?;
    let Ok(sub) = me() else { return Ok(()) };
    delete_all(sub, AttrKind::Type, h)
}

// ---- communicators ----

fn comm_sub(h: usize) -> MpiResult<usize> {
    comm(h).map(|(sub, _)| sub)
}

mpi_fn!(
    MPI_Comm_create_keyval,
    PMPI_Comm_create_keyval,
    |copy: usize, del: usize, k: *mut c_int, extra: *mut c_void| errcomm = c::MPI_COMM_WORLD,
    { create(AttrKind::Comm, copy, del, k, extra) }
);
mpi_fn!(
    MPI_Keyval_create,
    PMPI_Keyval_create,
    |copy: usize, del: usize, k: *mut c_int, extra: *mut c_void| errcomm = c::MPI_COMM_WORLD,
    { create(AttrKind::Comm, copy, del, k, extra) }
);
mpi_fn!(
    MPI_Comm_free_keyval,
    PMPI_Comm_free_keyval,
    |k: *mut c_int| errcomm = c::MPI_COMM_WORLD,
    { free_keyval(AttrKind::Comm, k) }
);
mpi_fn!(MPI_Keyval_free, PMPI_Keyval_free, |k: *mut c_int| errcomm = c::MPI_COMM_WORLD, {
    free_keyval(AttrKind::Comm, k)
});
mpi_fn!(
    MPI_Comm_set_attr,
    PMPI_Comm_set_attr,
    |h: usize, key: c_int, val: *mut c_void| errcomm = h,
    { set(comm_sub(h)?, AttrKind::Comm, h, key, val as usize) }
);
mpi_fn!(MPI_Attr_put, PMPI_Attr_put, |h: usize, key: c_int, val: *mut c_void| errcomm = h, {
    set(comm_sub(h)?, AttrKind::Comm, h, key, val as usize)
});
mpi_fn!(MPI_Comm_delete_attr, PMPI_Comm_delete_attr, |h: usize, key: c_int| errcomm = h, {
    delete(comm_sub(h)?, AttrKind::Comm, h, key)
});
mpi_fn!(MPI_Attr_delete, PMPI_Attr_delete, |h: usize, key: c_int| errcomm = h, {
    delete(comm_sub(h)?, AttrKind::Comm, h, key)
});
mpi_fn!(
    MPI_Attr_get,
    PMPI_Attr_get,
    |h: usize, key: c_int, val: *mut c_void, flag: *mut c_int| errcomm = h,
    { super::comm::get_attr(h, key, val, flag) }
);

// ---- datatypes ----

mpi_fn!(
    MPI_Type_create_keyval,
    PMPI_Type_create_keyval,
    |copy: usize, del: usize, k: *mut c_int, extra: *mut c_void| errcomm = c::MPI_COMM_WORLD,
    { create(AttrKind::Type, copy, del, k, extra) }
);
mpi_fn!(
    MPI_Type_free_keyval,
    PMPI_Type_free_keyval,
    |k: *mut c_int| errcomm = c::MPI_COMM_WORLD,
    { free_keyval(AttrKind::Type, k) }
);
mpi_fn!(
    MPI_Type_set_attr,
    PMPI_Type_set_attr,
    |h: usize, key: c_int, val: *mut c_void| errcomm = c::MPI_COMM_WORLD,
    { set(type_owner(h)?, AttrKind::Type, h, key, val as usize) }
);
mpi_fn!(
    MPI_Type_get_attr,
    PMPI_Type_get_attr,
    |h: usize, key: c_int, val: *mut c_void, flag: *mut c_int| errcomm = c::MPI_COMM_WORLD,
    {
        if val.is_null() || flag.is_null() {
            return err(c::MPI_ERR_ARG, "null argument");
        }
        match get_user(type_owner(h)?, AttrKind::Type, h, key)? {
            Some(v) => {
                *flag = 1;
                *(val as *mut usize) = v;
            }
            None => *flag = 0,
        }
        Ok(())
    }
);
mpi_fn!(
    MPI_Type_delete_attr,
    PMPI_Type_delete_attr,
    |h: usize, key: c_int| errcomm = c::MPI_COMM_WORLD,
    { delete(type_owner(h)?, AttrKind::Type, h, key) }
);

// ---- the Fortran bindings' side (fortran/gen.py) ----
//
// The Fortran bindings call the C entry points above, then these hooks to say which values
// and keyvals are Fortran's: an attribute set from Fortran holds an integer that C code sees
// through a pointer to it (and Fortran code reading it back sees the integer), and callbacks
// of keyvals created from Fortran see values as Fortran does. The hooks have no error of
// their own: the C call before them already checked the handle and the key.

/// A keyval the Fortran bindings just created.
#[no_mangle]
pub extern "C" fn toucan_f_keyval_made(key: c_int) {
    let Ok(sub) = me() else { return };
    let i = key.checked_sub(KEYVAL_BASE).and_then(|i| usize::try_from(i).ok());
    let _ = state::with(|s| {
        if let Some(kv) = i.and_then(|i| s.locals[sub].keyvals.get_mut(i)) {
            kv.fortran = true;
        }
    });
}

/// Attribute `key` of object `h`, which the Fortran bindings just set (as a C value), holds a
/// Fortran integer.
#[no_mangle]
pub extern "C" fn toucan_f_attr_made(h: usize, key: c_int) {
    let Ok(sub) = me() else { return };
    let Ok(Some(kv)) = any_keyval(sub, key) else { return };
    let _ = state::with(|s| {
        if let Some(a) = s.locals[sub]
            .attrs
            .get_mut(&(kv.kind, h))
            .and_then(|v| v.iter_mut().find(|a| a.0 == key))
        {
            if let AttrVal::C(v) = a.1 {
                a.1 = AttrVal::Fortran(Box::new(v as isize));
            }
        }
    });
}

/// The value Fortran sees of attribute `key` of object `h`, which a C getter returned as `v`:
/// a Fortran integer's own value, else `v` (a C value, or a predefined attribute's pointer).
#[no_mangle]
pub extern "C" fn toucan_f_attr_view(h: usize, key: c_int, v: usize) -> usize {
    let Ok(sub) = me() else { return v };
    let Ok(Some(kv)) = any_keyval(sub, key) else { return v };
    match (find(sub, kv.kind, h, key, false), find(sub, kv.kind, h, key, true)) {
        (Ok(Some(c_view)), Ok(Some(f_view))) if c_view == v => f_view,
        _ => v,
    }
}
