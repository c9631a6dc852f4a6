//! `MPI_Pack_external`, `MPI_Unpack_external`, `MPI_Pack_external_size` and their large-count
//! forms: packing in the portable "external32" representation (`core::external32`). These
//! calls take no communicator: errors go to `MPI_COMM_WORLD`'s handler, as for the other
//! datatype calls.

use super::consts as c;
use super::handles as hd;
use crate::core::datatype::external32 as x32;
use crate::core::error::{err, MpiError, MpiResult};
use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_void};

const WORLD: usize = c::MPI_COMM_WORLD;

/// The data representation must be "external32", the only one MPI defines for these calls.
///
/// # Safety
/// `datarep` must be null or a NUL-terminated string.
unsafe fn check_datarep(datarep: *const c_char) -> MpiResult<()> {
    if datarep.is_null() {
        return err(c::MPI_ERR_ARG, "null datarep");
    }
    let s = CStr::from_ptr(datarep).to_string_lossy();
    if s != "external32" {
        return err(
            c::MPI_ERR_ARG,
            format!("unsupported data representation \"{s}\" (only \"external32\")"),
        );
    }
    Ok(())
}

fn too_large() -> MpiError {
    MpiError::new(c::MPI_ERR_ARG, "packed size overflows MPI_Aint")
}

fn ext_size(incount: i64, datatype: usize) -> MpiResult<i64> {
    let n = hd::count(incount)?;
    let d = hd::dtype(datatype)?;
    x32::size(&d, n).and_then(|s| i64::try_from(s).ok()).ok_or_else(too_large)
}

/// Packs `incount` elements at `inbuf` into `outbuf` at byte `position`; the new position.
///
/// # Safety
/// Buffers as MPI_Pack_external requires.
unsafe fn pack(
    datarep: *const c_char,
    inbuf: *const c_void,
    incount: i64,
    datatype: usize,
    outbuf: *mut c_void,
    outsize: i64,
    position: *mut i64,
) -> MpiResult<()> {
    check_datarep(datarep)?;
    if position.is_null() {
        return err(c::MPI_ERR_ARG, "null position");
    }
    let need = ext_size(incount, datatype)?;
    let (n, d, pos) = (incount as usize, hd::dtype(datatype)?, *position);
    if outsize < 0 || pos < 0 || pos > outsize {
        return err(c::MPI_ERR_ARG, format!("invalid position {pos} or outsize {outsize}"));
    }
    if need > outsize - pos {
        return err(
            c::MPI_ERR_TRUNCATE,
            format!("pack buffer too small: {need} bytes at position {pos}, outsize {outsize}"),
        );
    }
    hd::buffer(inbuf as *const u8, n, &d)?;
    if need > 0 {
        if outbuf.is_null() {
            return err(c::MPI_ERR_BUFFER, "null pack buffer");
        }
        let out = std::slice::from_raw_parts_mut((outbuf as *mut u8).add(pos as usize), need as usize);
        x32::pack(&d, inbuf as *const u8, n, out);
    }
    *position = pos + need;
    Ok(())
}

/// Unpacks `outcount` elements from `inbuf` at byte `position` into `outbuf`.
///
/// # Safety
/// Buffers as MPI_Unpack_external requires.
unsafe fn unpack(
    datarep: *const c_char,
    inbuf: *const c_void,
    insize: i64,
    position: *mut i64,
    outbuf: *mut c_void,
    outcount: i64,
    datatype: usize,
) -> MpiResult<()> {
    check_datarep(datarep)?;
    if position.is_null() {
        return err(c::MPI_ERR_ARG, "null position");
    }
    let need = ext_size(outcount, datatype)?;
    let (n, d, pos) = (outcount as usize, hd::dtype(datatype)?, *position);
    if insize < 0 || pos < 0 || pos > insize {
        return err(c::MPI_ERR_ARG, format!("invalid position {pos} or insize {insize}"));
    }
    if need > insize - pos {
        return err(
            c::MPI_ERR_TRUNCATE,
            format!("unpack of {need} bytes at position {pos} runs past insize {insize}"),
        );
    }
    hd::buffer(outbuf as *const u8, n, &d)?;
    if need > 0 {
        if inbuf.is_null() {
            return err(c::MPI_ERR_BUFFER, "null unpack buffer");
        }
        let data = std::slice::from_raw_parts((inbuf as *const u8).add(pos as usize), need as usize);
        x32::unpack(&d, data, outbuf as *mut u8, n);
    }
    *position = pos + need;
    Ok(())
}

/// Runs `f` on an `MPI_Aint` position through an `i64` one (the same width here).
///
/// # Safety
/// `p` must be null or valid for reads and writes.
unsafe fn via_i64(p: *mut isize, f: impl FnOnce(*mut i64) -> MpiResult<()>) -> MpiResult<()> {
    if p.is_null() {
        return f(std::ptr::null_mut());
    }
    let mut v = *p as i64;
    f(&mut v)?;
    *p = v as isize;
    Ok(())
}

mpi_fn!(
    MPI_Pack_external,
    PMPI_Pack_external,
    |datarep: *const c_char,
     inbuf: *const c_void,
     incount: c_int,
     datatype: usize,
     outbuf: *mut c_void,
     outsize: isize,
     position: *mut isize| errcomm = WORLD,
    {
        via_i64(position, |p| {
            pack(datarep, inbuf, incount as i64, datatype, outbuf, outsize as i64, p)
        })
    }
);

mpi_fn!(
    MPI_Pack_external_c,
    PMPI_Pack_external_c,
    |rep: *const c_char, inbuf: *const c_void, incount: i64, dt: usize, outbuf: *mut c_void, outsize: i64, pos: *mut i64| errcomm = WORLD,
    { pack(rep, inbuf, incount, dt, outbuf, outsize, pos) }
);

mpi_fn!(
    MPI_Unpack_external,
    PMPI_Unpack_external,
    |datarep: *const c_char,
     inbuf: *const c_void,
     insize: isize,
     position: *mut isize,
     outbuf: *mut c_void,
     outcount: c_int,
     datatype: usize| errcomm = WORLD,
    {
        via_i64(position, |p| {
            unpack(datarep, inbuf, insize as i64, p, outbuf, outcount as i64, datatype)
        })
    }
);

mpi_fn!(
    MPI_Unpack_external_c,
    PMPI_Unpack_external_c,
    |rep: *const c_char, inbuf: *const c_void, insize: i64, pos: *mut i64, outbuf: *mut c_void, outcount: i64, dt: usize| errcomm = WORLD,
    { unpack(rep, inbuf, insize, pos, outbuf, outcount, dt) }
);

mpi_fn!(
    MPI_Pack_external_size,
    PMPI_Pack_external_size,
    |datarep: *const c_char, incount: c_int, datatype: usize, size: *mut isize| errcomm = WORLD,
    {
        check_datarep(datarep)?;
        if size.is_null() {
            return err(c::MPI_ERR_ARG, "null size");
        }
        *size = ext_size(incount as i64, datatype)? as isize;
        Ok(())
    }
);

mpi_fn!(
    MPI_Pack_external_size_c,
    PMPI_Pack_external_size_c,
    |datarep: *const c_char, incount: i64, datatype: usize, size: *mut i64| errcomm = WORLD,
    {
        check_datarep(datarep)?;
        if size.is_null() {
            return err(c::MPI_ERR_ARG, "null size");
        }
        *size = ext_size(incount, datatype)?;
        Ok(())
    }
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_unpack_external_round_trip() {
        let rep = c"external32".as_ptr();
        let src: [i64; 3] = [1, -2, 0x7fff_ffff];
        let mut size = 0isize;
        unsafe {
            assert_eq!(PMPI_Pack_external_size(rep, 3, c::MPI_LONG, &mut size), 0);
            assert_eq!(size, 12);
            let mut buf = [0u8; 16];
            let mut pos = 2isize;
            let rc = PMPI_Pack_external(rep, src.as_ptr().cast(), 3, c::MPI_LONG, buf.as_mut_ptr().cast(), 16, &mut pos);
            assert_eq!((rc, pos), (0, 14));
            assert_eq!(buf[2..6], [0, 0, 0, 1]);
            assert_eq!(buf[6..10], [0xff, 0xff, 0xff, 0xfe]);
            let mut back = [0i64; 3];
            let mut pos = 2isize;
            let rc = PMPI_Unpack_external(rep, buf.as_ptr().cast(), 16, &mut pos, back.as_mut_ptr().cast(), 3, c::MPI_LONG);
            assert_eq!((rc, pos, back), (0, 14, src));
        }
    }

    #[test]
    fn checks_representation_and_room() {
        let mut buf = [0u8; 4];
        let x = 5i32;
        unsafe {
            let mut pos = 0i64;
            let e = pack(
                c"native".as_ptr(),
                (&x as *const i32).cast(),
                1,
                c::MPI_INT,
                buf.as_mut_ptr().cast(),
                4,
                &mut pos,
            );
            assert_eq!(e.unwrap_err().class, c::MPI_ERR_ARG);
            let mut pos = 1i64;
            let e = pack(
                c"external32".as_ptr(),
                (&x as *const i32).cast(),
                1,
                c::MPI_INT,
                buf.as_mut_ptr().cast(),
                4,
                &mut pos,
            );
            assert_eq!(e.unwrap_err().class, c::MPI_ERR_TRUNCATE);
        }
    }
}
