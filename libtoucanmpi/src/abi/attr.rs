//! Communicator attributes: keyvals with copy/delete callbacks, set/get/delete, and their
//! behaviour on MPI_Comm_dup and MPI_Comm_free. Callbacks run outside the state lock (they
//! may call MPI).

use super::consts as c;
use super::handles::{self as hd, comm, me};
use crate::core::error::{err, MpiError, MpiResult};
use crate::core::state::{self, Keyval};
use std::os::raw::{c_int, c_void};

/// User keyvals are numbered from here (predefined keys are below 1000).
pub const KEYVAL_BASE: c_int = 0x10000;

type CopyFn = unsafe extern "C" fn(usize, c_int, *mut c_void, *mut c_void, *mut c_void, *mut c_int) -> c_int;
type DeleteFn = unsafe extern "C" fn(usize, c_int, *mut c_void, *mut c_void) -> c_int;

fn keyval(sub: usize, k: c_int) -> MpiResult<Keyval> {
    let kv = state::with(|s| {
        k.checked_sub(KEYVAL_BASE)
            .and_then(|i| s.locals[sub].keyvals.get(i as usize).copied())
    })?;
    kv.ok_or_else(|| MpiError::new(c::MPI_ERR_KEYVAL, format!("invalid keyval {k}")))
}

fn create(copy: usize, delete: usize, out: *mut c_int, extra: *mut c_void) -> MpiResult<()> {
    let sub = me()?;
    if out.is_null() {
        return err(c::MPI_ERR_ARG, "null keyval pointer");
    }
    let k = state::with(|s| {
        let t = &mut s.locals[sub].keyvals;
        t.push(Keyval {
            copy,
            delete,
            extra: extra as usize,
            freed: false,
        });
        KEYVAL_BASE + t.len() as c_int - 1
    })?;
    // SAFETY: checked non-null; the caller passes a writable int.
    unsafe { *out = k };
    Ok(())
}

fn free_keyval(k: *mut c_int) -> MpiResult<()> {
    let sub = me()?;
    if k.is_null() {
        return err(c::MPI_ERR_ARG, "null keyval pointer");
    }
    // SAFETY: checked non-null.
    let key = unsafe { *k };
    live_keyval(sub, key)?;
    // Attributes already set keep their callbacks; the key can no longer be set.
    state::with(|s| s.locals[sub].keyvals[(key - KEYVAL_BASE) as usize].freed = true)?;
    // SAFETY: as above.
    unsafe { *k = c::MPI_KEYVAL_INVALID };
    Ok(())
}

/// A keyval the application may still name: created and not freed (attributes set with a
/// freed keyval keep their callbacks, but the handle itself is no longer valid).
fn live_keyval(sub: usize, k: c_int) -> MpiResult<Keyval> {
    let kv = keyval(sub, k)?;
    if kv.freed {
        return err(c::MPI_ERR_KEYVAL, format!("keyval {k} was freed"));
    }
    Ok(kv)
}

/// Runs the delete callback of attribute (key, val) on communicator `h`.
fn run_delete(sub: usize, h: usize, key: c_int, val: usize) -> MpiResult<()> {
    let kv = keyval(sub, key)?;
    if kv.delete > 1 {
        // SAFETY: the application registered this pointer as a delete callback.
        let f: DeleteFn = unsafe { std::mem::transmute(kv.delete) };
        let rc = unsafe { f(h, key, val as *mut c_void, kv.extra as *mut c_void) };
        if rc != c::MPI_SUCCESS {
            return err(rc, format!("the delete callback of keyval {key} returned {rc}"));
        }
    }
    Ok(())
}

fn set(h: usize, key: c_int, val: usize) -> MpiResult<()> {
    let (sub, _) = comm(h)?;
    live_keyval(sub, key)?;
    let idx = hd::comm_index(h).expect("valid communicator");
    let old = state::with(|s| {
        s.locals[sub]
            .attrs
            .get(&idx)
            .and_then(|v| v.iter().find(|a| a.0 == key).map(|a| a.1))
    })?;
    if let Some(o) = old {
        run_delete(sub, h, key, o)?;
    }
    state::with(|s| {
        let v = s.locals[sub].attrs.entry(idx).or_default();
        v.retain(|a| a.0 != key);
        v.push((key, val));
    })?;
    Ok(())
}

/// A user attribute's value, if set.
pub fn get_user(sub: usize, h: usize, key: c_int) -> MpiResult<Option<usize>> {
    live_keyval(sub, key)?;
    let idx = hd::comm_index(h).expect("valid communicator");
    state::with(|s| {
        s.locals[sub]
            .attrs
            .get(&idx)
            .and_then(|v| v.iter().find(|a| a.0 == key).map(|a| a.1))
    })
}

fn delete(h: usize, key: c_int) -> MpiResult<()> {
    let (sub, _) = comm(h)?;
    let Some(v) = get_user(sub, h, key)? else {
        return err(c::MPI_ERR_KEYVAL, format!("attribute {key} is not set on this communicator"));
    };
    run_delete(sub, h, key, v)?;
    let idx = hd::comm_index(h).expect("valid communicator");
    state::with(|s| {
        if let Some(a) = s.locals[sub].attrs.get_mut(&idx) {
            a.retain(|x| x.0 != key)
        }
    })?;
    Ok(())
}

/// Copies the attributes of `old` to the new communicator `new` (MPI_Comm_dup).
pub fn copy_all(sub: usize, old: usize, new: usize) -> MpiResult<()> {
    let (oi, ni) = (hd::comm_index(old).expect("valid"), hd::comm_index(new).expect("valid"));
    let attrs = state::with(|s| s.locals[sub].attrs.get(&oi).cloned().unwrap_or_default())?;
    for (key, val) in attrs {
        let kv = keyval(sub, key)?;
        let copied = match kv.copy {
            0 => None,
            1 => Some(val),
            f => {
                // SAFETY: the application registered this pointer as a copy callback.
                let f: CopyFn = unsafe { std::mem::transmute(f) };
                let (mut out, mut flag): (usize, c_int) = (0, 0);
                let rc = unsafe {
                    f(
                        old,
                        key,
                        kv.extra as *mut c_void,
                        val as *mut c_void,
                        &mut out as *mut usize as *mut c_void,
                        &mut flag,
                    )
                };
                if rc != c::MPI_SUCCESS {
                    return err(rc, format!("the copy callback of keyval {key} returned {rc}"));
                }
                (flag != 0).then_some(out)
            }
        };
        if let Some(v) = copied {
            state::with(|s| s.locals[sub].attrs.entry(ni).or_default().push((key, v)))?;
        }
    }
    Ok(())
}

/// Runs the delete callbacks of every attribute of `h` (MPI_Comm_free).
pub fn delete_all(sub: usize, h: usize) -> MpiResult<()> {
    let idx = hd::comm_index(h).expect("valid");
    let attrs = state::with(|s| s.locals[sub].attrs.remove(&idx).unwrap_or_default())?;
    for (key, val) in attrs.into_iter().rev() {
        run_delete(sub, h, key, val)?;
    }
    Ok(())
}

mpi_fn!(
    MPI_Comm_create_keyval,
    PMPI_Comm_create_keyval,
    |copy: usize, del: usize, k: *mut c_int, extra: *mut c_void| errcomm = c::MPI_COMM_WORLD,
    { create(copy, del, k, extra) }
);
mpi_fn!(
    MPI_Keyval_create,
    PMPI_Keyval_create,
    |copy: usize, del: usize, k: *mut c_int, extra: *mut c_void| errcomm = c::MPI_COMM_WORLD,
    { create(copy, del, k, extra) }
);
mpi_fn!(
    MPI_Comm_free_keyval,
    PMPI_Comm_free_keyval,
    |k: *mut c_int| errcomm = c::MPI_COMM_WORLD,
    { free_keyval(k) }
);
mpi_fn!(MPI_Keyval_free, PMPI_Keyval_free, |k: *mut c_int| errcomm = c::MPI_COMM_WORLD, {
    free_keyval(k)
});
mpi_fn!(
    MPI_Comm_set_attr,
    PMPI_Comm_set_attr,
    |h: usize, key: c_int, val: *mut c_void| errcomm = h,
    { set(h, key, val as usize) }
);
mpi_fn!(MPI_Attr_put, PMPI_Attr_put, |h: usize, key: c_int, val: *mut c_void| errcomm = h, {
    set(h, key, val as usize)
});
mpi_fn!(MPI_Comm_delete_attr, PMPI_Comm_delete_attr, |h: usize, key: c_int| errcomm = h, {
    delete(h, key)
});
mpi_fn!(MPI_Attr_delete, PMPI_Attr_delete, |h: usize, key: c_int| errcomm = h, {
    delete(h, key)
});
mpi_fn!(
    MPI_Attr_get,
    PMPI_Attr_get,
    |h: usize, key: c_int, val: *mut c_void, flag: *mut c_int| errcomm = h,
    { super::comm::get_attr(h, key, val, flag) }
);
