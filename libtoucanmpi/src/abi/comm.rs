//! Communicators, groups, attributes and error handlers.

use super::consts as c;
use super::env::put_string;
use super::group::group;
use super::handles::{self as hd, comm, comm_handle, comm_in, group_index, me, put};
use crate::core::coll::real;
use crate::core::coll::{Buf, Coll};
use crate::core::comm::{derive_ctx, CommRef, Group};
use crate::core::datatype;
use crate::core::errh;
use crate::core::error::{class_text, err, is_valid_class, MpiError, MpiResult};
use crate::core::state::{self, AttrKind};
use std::os::raw::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

mpi_fn!(MPI_Comm_rank, PMPI_Comm_rank, |comm_h: usize, rank: *mut c_int| errcomm = comm_h, {
    let (_, cm) = comm(comm_h)?;
    if rank.is_null() {
        return err(c::MPI_ERR_ARG, "null rank pointer");
    }
    *rank = cm.rank;
    Ok(())
});

mpi_fn!(MPI_Comm_size, PMPI_Comm_size, |comm_h: usize, size: *mut c_int| errcomm = comm_h, {
    let (_, cm) = comm(comm_h)?;
    if size.is_null() {
        return err(c::MPI_ERR_ARG, "null size pointer");
    }
    *size = cm.size();
    Ok(())
});

/// Adds a communicator to subrank `sub`'s table; returns its handle.
fn add_comm(sub: usize, cm: CommRef) -> MpiResult<usize> {
    state::with(|s| {
        let t = &mut s.locals[sub].comms;
        t.push(Some(cm));
        comm_handle(t.len() - 1)
    })
}

/// Takes the next creation sequence number of the parent handle (members agree on it).
pub fn next_seq(sub: usize, h: usize) -> MpiResult<u64> {
    state::with(|s| -> MpiResult<u64> {
        let i = hd::comm_index(h).ok_or_else(|| MpiError::new(c::MPI_ERR_COMM, "invalid communicator"))?;
        let cr = s.locals[sub].comms[i]
            .as_mut()
            .ok_or_else(|| MpiError::new(c::MPI_ERR_COMM, "invalid communicator"))?;
        cr.seq += 1;
        Ok(cr.seq)
    })?
}

/// MPI_Comm_dup: same group, a new context, the error handler and copied attributes.
pub fn dup(comm_h: usize, newcomm: *mut usize) -> MpiResult<()> {
    let (sub, cm) = comm(comm_h)?;
    if newcomm.is_null() {
        return err(c::MPI_ERR_ARG, "null newcomm pointer");
    }
    let seq = next_seq(sub, comm_h)?;
    let ctx = derive_ctx(cm.ctx, seq, -1);
    twin(sub, &cm, comm_h, ctx, &cm.group.ranks)?;
    let mut n = CommRef::new(ctx, cm.group.clone(), cm.rank, "");
    n.errhandler = cm.errhandler;
    n.remote = cm.remote.clone();
    let h = add_comm(sub, n)?;
    if let Err(e) = super::attr::copy_all(sub, AttrKind::Comm, comm_h, h) {
        // A copy callback failed: no new communicator (MPI_COMM_NULL comes back).
        let _ = super::attr::delete_all(sub, AttrKind::Comm, h);
        state::with(|s| {
            if let Some(i) = hd::comm_index(h) {
                s.locals[sub].comms[i] = None;
            }
        })?;
        // SAFETY: checked non-null above.
        unsafe { *newcomm = c::MPI_COMM_NULL };
        return Err(e);
    }
    crate::core::topo::copy(sub, comm_h, h);
    // SAFETY: checked non-null; the caller passes a writable MPI_Comm.
    unsafe { *newcomm = h };
    Ok(())
}

mpi_fn!(
    MPI_Comm_dup,
    PMPI_Comm_dup,
    |comm_h: usize, newcomm: *mut usize| errcomm = comm_h,
    { dup(comm_h, newcomm) }
);

/// The (colour, key) pairs of the `n` ranks that `c` reaches (its group, or the remote group
/// of an inter-communicator), indexed by rank.
unsafe fn colour_table(c: &Coll, n: usize, mine: [i32; 2]) -> MpiResult<Vec<i32>> {
    let mut mine = mine;
    let mut all = vec![0i32; 2 * n];
    let int = datatype::lookup(c::MPI_INT)?;
    let parts: Vec<Buf> = (0..n)
        .map(|i| Buf::new(all.as_mut_ptr().wrapping_add(2 * i) as *mut u8, 2, int.clone()))
        .collect();
    c.allgatherv(Some(&Buf::new(mine.as_mut_ptr() as *mut u8, 2, int)), &parts)?;
    Ok(all)
}

/// Ranks of a colour table with colour `color`, ordered by (key, rank).
fn members(table: &[i32], color: c_int) -> Vec<usize> {
    let mut m: Vec<(i32, usize)> = (0..table.len() / 2)
        .filter(|&i| table[2 * i] == color)
        .map(|i| (table[2 * i + 1], i))
        .collect();
    m.sort();
    m.into_iter().map(|(_, i)| i).collect()
}

/// A communicator (context `ctx`, members `ranks`) made from `cm` (handle `h`) by a collective
/// call that every member of `cm` makes, also those left out of the new one: it takes a call
/// number on the parent, which orders the creation of the real twin among the parent's real
/// collectives (`real::derive`).
pub(super) fn twin(sub: usize, cm: &CommRef, h: usize, ctx: u64, ranks: &[u32]) -> MpiResult<()> {
    let call = Coll::new(sub, cm, h)?.seq;
    real::derive(cm, call, &[(ctx, ranks)])
}

/// Starts the twins of the colours of a split of `cm` (colour table `table`, creation number
/// `seq`) that still span every process (`real::derive`).
fn twins(cm: &CommRef, coll: &Coll, seq: u64, table: &[i32]) -> MpiResult<()> {
    let mut colours: Vec<i32> = table.iter().step_by(2).copied().filter(|&x| x != c::MPI_UNDEFINED).collect();
    colours.sort_unstable();
    colours.dedup();
    let groups: Vec<(u64, Vec<u32>)> = colours
        .iter()
        .map(|&col| {
            let ranks = members(table, col).iter().map(|&i| cm.group.ranks[i]).collect();
            (derive_ctx(cm.ctx, seq, col as i64), ranks)
        })
        .collect();
    let children: Vec<(u64, &[u32])> = groups.iter().map(|(x, r)| (*x, r.as_slice())).collect();
    real::derive(cm, coll.seq, &children)
}

/// MPI_Comm_split: members of one color, ordered by (key, old rank). On an
/// inter-communicator, the result joins the members of one colour in the local group with
/// those of the same colour in the remote group (MPI_COMM_NULL when either side has none).
pub fn split(comm_h: usize, color: c_int, key: c_int, newcomm: *mut usize) -> MpiResult<()> {
    let (sub, cm) = comm(comm_h)?;
    if newcomm.is_null() {
        return err(c::MPI_ERR_ARG, "null newcomm pointer");
    }
    if color < 0 && color != c::MPI_UNDEFINED {
        return err(c::MPI_ERR_ARG, format!("invalid color {color} (must be >= 0 or MPI_UNDEFINED)"));
    }
    let seq = next_seq(sub, comm_h)?;
    let coll = Coll::new(sub, &cm, comm_h)?;
    // SAFETY: blocking collectives on buffers they own.
    let (local, remote) = unsafe {
        match cm.is_inter() {
            false => (colour_table(&coll, cm.size() as usize, [color, key])?, None),
            true => (
                colour_table(&coll.local(), cm.size() as usize, [color, key])?,
                Some(colour_table(&coll, cm.peer_size() as usize, [color, key])?),
            ),
        }
    };
    if remote.is_none() && real::has_twin(&cm) {
        twins(&cm, &coll, seq, &local)?;
    }
    let remote = remote.map(|t| members(&t, color));
    let out = if color == c::MPI_UNDEFINED || remote.as_ref().is_some_and(|r| r.is_empty()) {
        c::MPI_COMM_NULL
    } else {
        let mine = members(&local, color);
        let ranks: Vec<u32> = mine.iter().map(|&i| cm.group.ranks[i]).collect();
        let my = mine
            .iter()
            .position(|&i| i as i32 == cm.rank)
            .expect("the caller is a member of its color") as i32;
        let mut nc = CommRef::new(derive_ctx(cm.ctx, seq, color as i64), Arc::new(Group::new(ranks)), my, "");
        nc.errhandler = cm.errhandler;
        nc.remote = remote.map(|r| Arc::new(Group::new(r.iter().map(|&i| cm.peers().ranks[i]).collect())));
        add_comm(sub, nc)?
    };
    // SAFETY: checked non-null.
    unsafe { *newcomm = out };
    Ok(())
}

mpi_fn!(
    MPI_Comm_split,
    PMPI_Comm_split,
    |comm_h: usize, color: c_int, key: c_int, newcomm: *mut usize| errcomm = comm_h,
    { split(comm_h, color, key, newcomm) }
);

mpi_fn!(MPI_Comm_free, PMPI_Comm_free, |p: *mut usize| errcomm = c::MPI_COMM_WORLD, {
    let sub = me()?;
    if p.is_null() {
        return err(c::MPI_ERR_ARG, "null communicator pointer");
    }
    let h = *p;
    if h == c::MPI_COMM_WORLD || h == c::MPI_COMM_SELF {
        return err(c::MPI_ERR_COMM, "predefined communicators cannot be freed");
    }
    let cm = state::with(|s| comm_in(s, sub, h).cloned())??;
    super::attr::delete_all(sub, AttrKind::Comm, h)?;
    real::forget(&cm);
    crate::core::topo::forget(sub, h);
    state::with(|s| -> MpiResult<()> {
        let i = hd::comm_index(h).expect("checked by comm_in");
        s.locals[sub].comms[i] = None;
        Ok(())
    })??;
    *p = c::MPI_COMM_NULL;
    Ok(())
});

fn same_members(a: &Group, b: &Group) -> bool {
    let (mut x, mut y) = (a.ranks.clone(), b.ranks.clone());
    x.sort_unstable();
    y.sort_unstable();
    x == y
}

mpi_fn!(
    MPI_Comm_compare,
    PMPI_Comm_compare,
    |c1: usize, c2: usize, result: *mut c_int| errcomm = c1,
    {
        let (_, a) = comm(c1)?;
        let (_, b) = comm(c2)?;
        // Inter-communicators compare both groups (and never equal an intra-communicator).
        let relation = |x: &Group, y: &Group| {
            if x.ranks == y.ranks {
                c::MPI_CONGRUENT
            } else if same_members(x, y) {
                c::MPI_SIMILAR
            } else {
                c::MPI_UNEQUAL
            }
        };
        let remote = match (&a.remote, &b.remote) {
            (None, None) => c::MPI_CONGRUENT,
            (Some(x), Some(y)) => relation(x, y),
            _ => c::MPI_UNEQUAL,
        };
        // MPI_CONGRUENT < MPI_SIMILAR < MPI_UNEQUAL in the ABI: the weaker relation wins.
        let r = if c1 == c2 {
            c::MPI_IDENT
        } else {
            relation(&a.group, &b.group).max(remote)
        };
        put(result, r, "result")
    }
);

mpi_fn!(
    MPI_Comm_set_name,
    PMPI_Comm_set_name,
    |comm_h: usize, name: *const c_char| errcomm = comm_h,
    {
        let (sub, _) = comm(comm_h)?;
        if name.is_null() {
            return err(c::MPI_ERR_ARG, "null name");
        }
        let n = std::ffi::CStr::from_ptr(name).to_string_lossy().to_string();
        let n: String = n.chars().take(c::MPI_MAX_OBJECT_NAME as usize - 1).collect();
        state::with(|s| {
            if let Some(Some(cr)) = hd::comm_index(comm_h).map(|i| s.locals[sub].comms[i].as_mut()) {
                cr.name = n.as_str().into();
            }
        })?;
        Ok(())
    }
);

mpi_fn!(
    MPI_Comm_get_name,
    PMPI_Comm_get_name,
    |comm_h: usize, name: *mut c_char, len: *mut c_int| errcomm = comm_h,
    {
        let (_, cm) = comm(comm_h)?;
        put_string(&cm.name, name, len, c::MPI_MAX_OBJECT_NAME as usize)
    }
);

// ---- groups ----

mpi_fn!(MPI_Comm_group, PMPI_Comm_group, |comm_h: usize, g: *mut usize| errcomm = comm_h, {
    let (sub, cm) = comm(comm_h)?;
    hd::out(g, "group")?;
    put(g, super::group::add_group(sub, cm.group.ranks.clone())?, "group")
});

mpi_fn!(
    MPI_Group_size,
    PMPI_Group_size,
    |h: usize, size: *mut c_int| errcomm = c::MPI_COMM_WORLD,
    {
        let (_, g) = group(h)?;
        put(size, g.size() as c_int, "size")
    }
);

mpi_fn!(
    MPI_Group_rank,
    PMPI_Group_rank,
    |h: usize, rank: *mut c_int| errcomm = c::MPI_COMM_WORLD,
    {
        let (sub, g) = group(h)?;
        let w = state::with(|s| s.locals[sub].world_rank)?;
        put(rank, g.rank_of(w).map(|r| r as c_int).unwrap_or(c::MPI_UNDEFINED), "rank")
    }
);

mpi_fn!(
    MPI_Group_translate_ranks,
    PMPI_Group_translate_ranks,
    |g1: usize, n: c_int, r1: *const c_int, g2: usize, r2: *mut c_int| errcomm = c::MPI_COMM_WORLD,
    {
        let (_, a) = group(g1)?;
        let (_, b) = group(g2)?;
        let n = hd::count(n as i64)?;
        let src = hd::ints(r1, n)?;
        if n > 0 && r2.is_null() {
            return err(c::MPI_ERR_ARG, "null ranks2 array");
        }
        for (i, &r) in src.iter().enumerate() {
            let out = if r == c::MPI_PROC_NULL {
                c::MPI_PROC_NULL
            } else if r < 0 || r as usize >= a.size() {
                return err(c::MPI_ERR_RANK, format!("rank {r} is not in the first group (size {})", a.size()));
            } else {
                b.rank_of(a.ranks[r as usize]).map(|x| x as c_int).unwrap_or(c::MPI_UNDEFINED)
            };
            *r2.add(i) = out;
        }
        Ok(())
    }
);

mpi_fn!(MPI_Group_free, PMPI_Group_free, |p: *mut usize| errcomm = c::MPI_COMM_WORLD, {
    if p.is_null() {
        return err(c::MPI_ERR_ARG, "null group pointer");
    }
    let h = *p;
    let (sub, _) = group(h)?;
    if h != c::MPI_GROUP_EMPTY {
        state::with(|s| {
            if let Some(i) = group_index(h) {
                s.locals[sub].groups[i] = None;
            }
        })?;
    }
    *p = c::MPI_GROUP_NULL;
    Ok(())
});

// ---- attributes ----

static TAG_UB_VAL: AtomicI32 = AtomicI32::new(hd::TAG_UB);
static HOST_VAL: AtomicI32 = AtomicI32::new(c::MPI_PROC_NULL);
static IO_VAL: AtomicI32 = AtomicI32::new(c::MPI_ANY_SOURCE);
static WTIME_GLOBAL_VAL: AtomicI32 = AtomicI32::new(0);
static APPNUM_VAL: AtomicI32 = AtomicI32::new(0);
static UNIVERSE_VAL: AtomicI32 = AtomicI32::new(0);
static LASTCODE_VAL: AtomicI32 = AtomicI32::new(c::MPI_ERR_LASTCODE);

/// MPI_Comm_get_attr: predefined keys, then the user's.
pub unsafe fn get_attr(comm_h: usize, key: c_int, val: *mut c_void, flag: *mut c_int) -> MpiResult<()> {
    let (sub, _) = comm(comm_h)?;
    if val.is_null() || flag.is_null() {
        return err(c::MPI_ERR_ARG, "null argument");
    }
    let world = state::with(|s| s.world_size())? as i32;
    UNIVERSE_VAL.store(world, Ordering::Relaxed);
    TAG_UB_VAL.store(hd::tag_ub(), Ordering::Relaxed);
    let p: Option<&AtomicI32> = match key {
        c::MPI_TAG_UB => Some(&TAG_UB_VAL),
        c::MPI_HOST => Some(&HOST_VAL),
        c::MPI_IO => Some(&IO_VAL),
        c::MPI_WTIME_IS_GLOBAL => Some(&WTIME_GLOBAL_VAL),
        c::MPI_APPNUM => Some(&APPNUM_VAL),
        c::MPI_UNIVERSE_SIZE => Some(&UNIVERSE_VAL),
        c::MPI_LASTUSEDCODE => Some(&LASTCODE_VAL),
        _ => None,
    };
    if let Some(p) = p {
        *flag = 1;
        // C sees the attribute as `int *`; AtomicI32 has the layout of an int.
        *(val as *mut *const AtomicI32) = p as *const AtomicI32;
        return Ok(());
    }
    match super::attr::get_user(sub, AttrKind::Comm, comm_h, key)? {
        Some(v) => {
            *flag = 1;
            *(val as *mut usize) = v;
        }
        None => *flag = 0,
    }
    Ok(())
}

mpi_fn!(
    MPI_Comm_get_attr,
    PMPI_Comm_get_attr,
    |comm_h: usize, key: c_int, val: *mut c_void, flag: *mut c_int| errcomm = comm_h,
    { get_attr(comm_h, key, val, flag) }
);

// ---- error handlers and error codes ----

mpi_fn!(
    MPI_Comm_set_errhandler,
    PMPI_Comm_set_errhandler,
    |comm_h: usize, eh: usize| errcomm = comm_h,
    {
        let (sub, _) = comm(comm_h)?;
        if !errh::is_valid(eh) {
            return err(
                c::MPI_ERR_ERRHANDLER,
                format!("invalid error handler {eh:#x} (freed, or not an error handler)"),
            );
        }
        state::with(|s| {
            if let Some(Some(cr)) = hd::comm_index(comm_h).map(|i| s.locals[sub].comms[i].as_mut()) {
                cr.errhandler = eh;
            }
        })?;
        Ok(())
    }
);

mpi_fn!(
    MPI_Comm_get_errhandler,
    PMPI_Comm_get_errhandler,
    |comm_h: usize, eh: *mut usize| errcomm = comm_h,
    {
        let (_, cm) = comm(comm_h)?;
        if eh.is_null() {
            return err(c::MPI_ERR_ARG, "null errhandler pointer");
        }
        errh::retain(cm.errhandler);
        *eh = cm.errhandler;
        Ok(())
    }
);

mpi_fn!(
    MPI_Comm_create_errhandler,
    PMPI_Comm_create_errhandler,
    |f: Option<errh::ErrFn>, eh: *mut usize| errcomm = c::MPI_COMM_WORLD,
    {
        let Some(f) = f else {
            return err(c::MPI_ERR_ARG, "null error handler function");
        };
        if eh.is_null() {
            return err(c::MPI_ERR_ARG, "null errhandler pointer");
        }
        *eh = errh::create(f);
        Ok(())
    }
);

mpi_fn!(
    MPI_Errhandler_free,
    PMPI_Errhandler_free,
    |eh: *mut usize| errcomm = c::MPI_COMM_WORLD,
    {
        if eh.is_null() {
            return err(c::MPI_ERR_ARG, "null errhandler pointer");
        }
        let h = *eh;
        let predefined = h == c::MPI_ERRORS_ARE_FATAL || h == c::MPI_ERRORS_RETURN || h == c::MPI_ERRORS_ABORT;
        // A user handler stays usable by communicators that still hold it, as MPI requires;
        // its handle becomes invalid.
        if !predefined && !errh::free(h) {
            return err(
                c::MPI_ERR_ERRHANDLER,
                format!("invalid error handler {h:#x} (freed, or not an error handler)"),
            );
        }
        *eh = c::MPI_ERRHANDLER_NULL;
        Ok(())
    }
);

mpi_fn!(
    MPI_Comm_call_errhandler,
    PMPI_Comm_call_errhandler,
    |comm_h: usize, code: c_int| errcomm = comm_h,
    {
        let (_, cm) = comm(comm_h)?;
        crate::abi::export::apply_handler(
            cm.errhandler,
            comm_h,
            "MPI_Comm_call_errhandler",
            code,
            &format!("error code {code} raised by the application"),
        );
        Ok(())
    }
);

/// The class of an error code: predefined classes are their own codes; added codes map to
/// the class they were added to.
fn class_of(sub: usize, code: c_int) -> Option<c_int> {
    if is_valid_class(code) {
        return Some(code);
    }
    state::with(|s| s.locals[sub].errors.iter().find(|e| e.0 == code).map(|e| e.1))
        .ok()
        .flatten()
}

mpi_fn!(
    MPI_Error_class,
    PMPI_Error_class,
    |code: c_int, class: *mut c_int| errcomm = c::MPI_COMM_WORLD,
    {
        let sub = me()?;
        let Some(k) = class_of(sub, code) else {
            return err(c::MPI_ERR_ARG, format!("invalid error code {code}"));
        };
        put(class, k, "class")
    }
);

mpi_fn!(
    MPI_Error_string,
    PMPI_Error_string,
    |code: c_int, s: *mut c_char, len: *mut c_int| errcomm = c::MPI_COMM_WORLD,
    {
        let sub = me()?;
        if is_valid_class(code) {
            return put_string(class_text(code), s, len, c::MPI_MAX_ERROR_STRING as usize);
        }
        let text = state::with(|st| {
            st.locals[sub]
                .errors
                .iter()
                .find(|e| e.0 == code)
                .map(|e| e.2.clone().unwrap_or_default())
        })?;
        match text {
            Some(t) => put_string(&t, s, len, c::MPI_MAX_ERROR_STRING as usize),
            None => err(c::MPI_ERR_ARG, format!("invalid error code {code}")),
        }
    }
);

/// First code handed out by MPI_Add_error_class/code (above every predefined class).
const FIRST_USER_CODE: c_int = c::MPI_ERR_LASTCODE + 1;

fn add_code(sub: usize, class: Option<c_int>) -> MpiResult<c_int> {
    state::with(|s| {
        let l = &mut s.locals[sub];
        let code = l.errors.last().map(|e| e.0 + 1).unwrap_or(FIRST_USER_CODE);
        l.errors.push((code, class.unwrap_or(code), None));
        LASTCODE_VAL.store(code, Ordering::Relaxed);
        code
    })
}

mpi_fn!(
    MPI_Add_error_class,
    PMPI_Add_error_class,
    |class: *mut c_int| errcomm = c::MPI_COMM_WORLD,
    {
        let sub = me()?;
        hd::out(class, "errorclass")?;
        put(class, add_code(sub, None)?, "errorclass")
    }
);

mpi_fn!(
    MPI_Add_error_code,
    PMPI_Add_error_code,
    |class: c_int, code: *mut c_int| errcomm = c::MPI_COMM_WORLD,
    {
        let sub = me()?;
        let user_class = state::with(|s| s.locals[sub].errors.iter().any(|e| e.0 == class && e.1 == class))?;
        if !is_valid_class(class) && !user_class {
            return err(c::MPI_ERR_ARG, format!("invalid error class {class}"));
        }
        hd::out(code, "errorcode")?;
        put(code, add_code(sub, Some(class))?, "errorcode")
    }
);

mpi_fn!(
    MPI_Add_error_string,
    PMPI_Add_error_string,
    |code: c_int, text: *const c_char| errcomm = c::MPI_COMM_WORLD,
    {
        let sub = me()?;
        if text.is_null() {
            return err(c::MPI_ERR_ARG, "null string");
        }
        let t = std::ffi::CStr::from_ptr(text).to_string_lossy().to_string();
        let ok = state::with(|s| {
            s.locals[sub]
                .errors
                .iter_mut()
                .find(|e| e.0 == code)
                .map(|e| e.2 = Some(t.chars().take(c::MPI_MAX_ERROR_STRING as usize - 1).collect()))
                .is_some()
        })?;
        if !ok {
            return err(
                c::MPI_ERR_ARG,
                format!("error code {code} was not added with MPI_Add_error_code/class"),
            );
        }
        Ok(())
    }
);

/// Removes what MPI_Add_error_class/code/string added (MPI 4.1): `what` picks the entry
/// (class, code or string of `code`); an entry that still has dependents (a class with codes,
/// a code with a string) cannot go.
fn remove_error(code: c_int, what: ErrorPart) -> MpiResult<()> {
    let sub = me()?;
    state::with(|s| {
        let errors = &mut s.locals[sub].errors;
        let Some(i) = errors.iter().position(|e| e.0 == code) else {
            return err(
                c::MPI_ERR_ARG,
                format!("error code {code} was not added with MPI_Add_error_class/code"),
            );
        };
        let (is_class, has_string) = (errors[i].1 == code, errors[i].2.is_some());
        match what {
            ErrorPart::String if !has_string => err(c::MPI_ERR_ARG, format!("error code {code} has no string added")),
            ErrorPart::String => {
                errors[i].2 = None;
                Ok(())
            }
            ErrorPart::Class if !is_class => err(c::MPI_ERR_ARG, format!("{code} is an error code, not a class")),
            ErrorPart::Code if is_class => err(c::MPI_ERR_ARG, format!("{code} is an error class, not a code")),
            ErrorPart::Class if errors.iter().any(|e| e.1 == code && e.0 != code) => err(
                c::MPI_ERR_ARG,
                format!("error class {code} still has error codes (remove them first)"),
            ),
            ErrorPart::Code if has_string => err(c::MPI_ERR_ARG, format!("error code {code} still has a string (remove it first)")),
            ErrorPart::Class | ErrorPart::Code => {
                errors.remove(i);
                Ok(())
            }
        }
    })?
}

#[derive(Clone, Copy)]
enum ErrorPart {
    Class,
    Code,
    String,
}

mpi_fn!(
    MPI_Remove_error_class,
    PMPI_Remove_error_class,
    |class: c_int| errcomm = c::MPI_COMM_WORLD,
    { remove_error(class, ErrorPart::Class) }
);
mpi_fn!(
    MPI_Remove_error_code,
    PMPI_Remove_error_code,
    |code: c_int| errcomm = c::MPI_COMM_WORLD,
    { remove_error(code, ErrorPart::Code) }
);
mpi_fn!(
    MPI_Remove_error_string,
    PMPI_Remove_error_string,
    |code: c_int| errcomm = c::MPI_COMM_WORLD,
    { remove_error(code, ErrorPart::String) }
);
// MPICH 4.0's extension names for the same functions (before MPI 4.1 named them Remove).
mpi_fn!(
    MPIX_Delete_error_class,
    PMPIX_Delete_error_class,
    |class: c_int| errcomm = c::MPI_COMM_WORLD,
    { remove_error(class, ErrorPart::Class) }
);
mpi_fn!(
    MPIX_Delete_error_code,
    PMPIX_Delete_error_code,
    |code: c_int| errcomm = c::MPI_COMM_WORLD,
    { remove_error(code, ErrorPart::Code) }
);
mpi_fn!(
    MPIX_Delete_error_string,
    PMPIX_Delete_error_string,
    |code: c_int| errcomm = c::MPI_COMM_WORLD,
    { remove_error(code, ErrorPart::String) }
);
#[cfg(test)]
mod tests {
    use super::members;
    use rstest::rstest;

    // (colour, key) pairs by rank.
    #[rstest]
    #[case(&[0, 5, 1, 0, 0, 2], 0, &[2, 0])]
    #[case(&[0, 5, 1, 0, 0, 2], 1, &[1])]
    #[case(&[0, 5, 1, 0, 0, 2], 3, &[])]
    #[case(&[4, 1, 4, 1, 4, 0], 4, &[2, 0, 1])]
    fn members_are_ordered_by_key_then_rank(#[case] table: &[i32], #[case] colour: i32, #[case] want: &[usize]) {
        assert_eq!(members(table, colour), want);
    }
}
