//! `MPI_Register_datarep` and `MPI_Register_datarep_c` (MPI 4.1 section 14.5.3), and the
//! calls into the program's conversion and extent functions. The registry itself is
//! `core::io::datarep` (per subrank).
//!
//! Conversions always run in the calling subrank, never on the I/O thread: the program's
//! functions may call MPI (`MPI_Type_get_envelope` on the datatype they are given is common)
//! and may use the subrank's privatized state. A write converts before its job is queued; a
//! read converts after its job is done (and a nonblocking read in a user representation
//! completes in its start call, which the standard allows).
//!
//! Each conversion call gets the datatype the program passed to the access, the number of
//! basic data items, and `position` counted in data items into the buffer tiled by that
//! datatype; calls are cut so that `count` fits the function's integer type.

use crate::abi::consts as c;
use crate::abi::handles::me;
use crate::core::datatype::basic::BasicType;
use crate::core::datatype::DtRef;
use crate::core::error::{err, MpiError, MpiResult};
use crate::core::io::datarep::{self, UserRep};
use std::os::raw::{c_char, c_int, c_void};

type ConvFn = unsafe extern "C-unwind" fn(*mut c_void, usize, c_int, *mut c_void, i64, *mut c_void) -> c_int;
type ConvFnC = unsafe extern "C-unwind" fn(*mut c_void, usize, i64, *mut c_void, i64, *mut c_void) -> c_int;
type ExtentFn = unsafe extern "C-unwind" fn(usize, *mut isize, *mut c_void) -> c_int;

unsafe fn register(name: *const c_char, read: usize, write: usize, extent: usize, extra: usize, large: bool) -> MpiResult<()> {
    let sub = me()?;
    let name = super::cstr(name, "data representation name")?;
    if extent == 0 {
        return err(
            c::MPI_ERR_ARG,
            format!("data representation \"{name}\": the extent function is null"),
        );
    }
    let rep = name.clone();
    let extent_of = Box::new(move |b: BasicType| -> MpiResult<usize> {
        // SAFETY: `extent` is the program's MPI_Datarep_extent_function (non-null, checked
        // above), called with a predefined datatype and a valid output, as the standard says.
        let f: ExtentFn = unsafe { std::mem::transmute::<usize, ExtentFn>(extent) };
        let mut e: isize = 0;
        // SAFETY: as above; `extra` is the program's own pointer, passed back untouched.
        let r = unsafe { f(b.handle(), &mut e, extra as *mut c_void) };
        if r != 0 {
            return err(
                r,
                format!(
                    "the extent function of data representation \"{rep}\" returned error {r} for {}",
                    b.name()
                ),
            );
        }
        if e < 0 {
            return err(
                c::MPI_ERR_CONVERSION,
                format!("the extent function of \"{rep}\" gave {e} bytes for {}", b.name()),
            );
        }
        Ok(e as usize)
    });
    datarep::register(sub, &name, read, write, extra, large, extent_of).map(|_| ())
}

// Errors go through MPI_FILE_NULL's handler (there is no file), as ROMIO does.
file_fn!(
    MPI_Register_datarep,
    PMPI_Register_datarep,
    |name: *const c_char, read: usize, write: usize, extent: usize, extra: *mut c_void| file = c::MPI_FILE_NULL,
    { register(name, read, write, extent, extra as usize, false) }
);

file_fn!(
    MPI_Register_datarep_c,
    PMPI_Register_datarep_c,
    |name: *const c_char, read: usize, write: usize, extent: usize, extra: *mut c_void| file = c::MPI_FILE_NULL,
    { register(name, read, write, extent, extra as usize, true) }
);

/// Calls `rep`'s conversion function `f` over `elems` elements of `dt` (handle `dth`) at
/// `user`, with the file-side bytes at `file` (`fsize` bytes an element): in pieces whose
/// item counts fit the function's count type.
unsafe fn convert(
    rep: &UserRep,
    f: usize,
    user: usize,
    dth: usize,
    dt: &DtRef,
    elems: usize,
    file: *mut u8,
    fsize: usize,
    what: &str,
) -> MpiResult<()> {
    let per = datarep::items(dt).max(1);
    let limit = if rep.large { i64::MAX as usize } else { c_int::MAX as usize };
    if per > limit {
        return err(
            c::MPI_ERR_CONVERSION,
            "one element of the datatype has more items than a conversion call can count",
        );
    }
    let step = (limit / per).max(1);
    let mut done = 0usize;
    while done < elems {
        let n = step.min(elems - done);
        let (items, pos) = (n * per, (done * per) as i64);
        let fb = file.add(done * fsize) as *mut c_void;
        let r = if rep.large {
            // SAFETY: registered by MPI_Register_datarep_c: a conversion_function_c.
            let g: ConvFnC = std::mem::transmute::<usize, ConvFnC>(f);
            g(user as *mut c_void, dth, items as i64, fb, pos, rep.extra as *mut c_void)
        } else {
            // SAFETY: registered by MPI_Register_datarep: a conversion_function.
            let g: ConvFn = std::mem::transmute::<usize, ConvFn>(f);
            g(user as *mut c_void, dth, items as c_int, fb, pos, rep.extra as *mut c_void)
        };
        if r != 0 {
            return Err(MpiError::new(
                c::MPI_ERR_CONVERSION,
                format!(
                    "the {what} conversion function of data representation \"{}\" returned error {r}",
                    rep.name
                ),
            ));
        }
        done += n;
    }
    Ok(())
}

/// The stream of a write of `count` elements of `dt` at `buf` in user representation `id`.
///
/// # Safety
/// `buf` holds `count` elements of `dt`.
pub(super) unsafe fn to_file(id: u32, buf: usize, dth: usize, dt: &DtRef, count: usize, len: usize) -> MpiResult<Vec<u8>> {
    let rep = datarep::get(id);
    let fsize = rep.size(dt)?;
    let mut out = vec![0u8; len];
    if rep.write == 0 {
        // MPI_CONVERSION_FN_NULL: the file holds the data as they are in memory.
        if fsize != dt.size {
            return err(
                c::MPI_ERR_CONVERSION,
                format!("\"{}\" has no write conversion but its sizes differ from native", rep.name),
            );
        }
        dt.pack_to(buf as *const u8, count, out.as_mut_ptr());
        return Ok(out);
    }
    convert(&rep, rep.write, buf, dth, dt, count, out.as_mut_ptr(), fsize, "write")?;
    Ok(out)
}

/// Converts the stream bytes `data` read in user representation `id` into the program's
/// buffer (the whole elements only).
///
/// # Safety
/// `buf` has room for `count` elements of `dt`.
pub(super) unsafe fn from_file(id: u32, data: &mut [u8], buf: usize, dth: usize, dt: &DtRef, count: usize) -> MpiResult<()> {
    let rep = datarep::get(id);
    let fsize = rep.size(dt)?.max(1);
    let whole = (data.len() / fsize).min(count);
    if rep.read == 0 {
        if fsize != dt.size {
            return err(
                c::MPI_ERR_CONVERSION,
                format!("\"{}\" has no read conversion but its sizes differ from native", rep.name),
            );
        }
        dt.unpack(&data[..whole * fsize], buf as *mut u8, whole);
        return Ok(());
    }
    convert(&rep, rep.read, buf, dth, dt, whole, data.as_mut_ptr(), fsize, "read")
}
