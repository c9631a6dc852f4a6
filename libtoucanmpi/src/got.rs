//! A loaded object's imports, as its GOT slots: found by name in its relocations (function
//! slots of the PLT and data slots, `R_*_JUMP_SLOT` and `R_*_GLOB_DAT`) and redirected in
//! memory. Used to keep UCX progressing in the real MPI's finalize (`transport::finalize`) and
//! to give the C library's `getopt` variables of its own (`abi::getopt`).

use std::os::raw::{c_int, c_void};

/// A loaded object: its load bias and its dynamic section (in memory).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Object {
    bias: usize,
    dynamic: usize,
}

unsafe extern "C" fn find_object(info: *mut libc::dl_phdr_info, _size: usize, data: *mut c_void) -> c_int {
    // SAFETY: the loader passes a valid dl_phdr_info; `data` is the (address, result) pair
    // that `object_of` passed in.
    let (info, want) = unsafe { (&*info, &mut *(data as *mut (usize, Option<Object>))) };
    let bias = info.dlpi_addr as usize;
    // SAFETY: dlpi_phdr points at dlpi_phnum program headers of this object.
    let phdrs = unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) };
    let inside = phdrs.iter().any(|p| {
        let start = bias.wrapping_add(p.p_vaddr as usize);
        p.p_type == libc::PT_LOAD && want.0 >= start && want.0 < start + p.p_memsz as usize
    });
    if !inside {
        return 0;
    }
    want.1 = object_from(info);
    1
}

/// The object a dl_phdr_info describes, when it has a dynamic section.
pub fn object_from(info: &libc::dl_phdr_info) -> Option<Object> {
    let bias = info.dlpi_addr as usize;
    // SAFETY: dlpi_phdr points at dlpi_phnum program headers of this object.
    let phdrs = unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) };
    phdrs.iter().find(|p| p.p_type == libc::PT_DYNAMIC).map(|d| Object {
        bias,
        dynamic: bias.wrapping_add(d.p_vaddr as usize),
    })
}

/// The loaded object that contains `addr`.
pub fn object_of(addr: usize) -> Option<Object> {
    let mut data: (usize, Option<Object>) = (addr, None);
    // SAFETY: the callback only reads the loader's structures and writes `data`, which
    // outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(find_object), &mut data as *mut _ as *mut c_void) };
    data.1
}

const DT_NULL: u64 = 0;
const DT_PLTRELSZ: u64 = 2;
const DT_STRTAB: u64 = 5;
const DT_SYMTAB: u64 = 6;
const DT_RELA: u64 = 7;
const DT_RELASZ: u64 = 8;
const DT_PLTREL: u64 = 20;
const DT_JMPREL: u64 = 23;

const R_X86_64_GLOB_DAT: u64 = 6;
const R_X86_64_JUMP_SLOT: u64 = 7;
const R_AARCH64_GLOB_DAT: u64 = 1025;
const R_AARCH64_JUMP_SLOT: u64 = 1026;

/// Calls `f(name, slot)` for each of `obj`'s imports bound through a GOT slot: with `data`,
/// the variables (and function addresses) it reaches through its GOT (`R_*_GLOB_DAT` in
/// DT_RELA), then the functions it calls through its PLT (`R_*_JUMP_SLOT` in DT_JMPREL).
///
/// # Safety
/// `obj` must describe a loaded 64-bit ELF object (RELA relocations).
pub unsafe fn for_each_import(obj: &Object, data: bool, mut f: impl FnMut(&[u8], *mut usize)) {
    // SAFETY: forwarded from the caller.
    unsafe { for_each_slot(obj, data, |name, slot, _| f(name, slot)) }
}

/// As `for_each_import`, only for the symbols `obj` does not define itself (a slot of a lazily
/// bound function may still point at the object's own PLT).
///
/// # Safety
/// `obj` must describe a loaded 64-bit ELF object (RELA relocations).
pub unsafe fn for_each_undefined_import(obj: &Object, data: bool, mut f: impl FnMut(&[u8], *mut usize)) {
    // SAFETY: forwarded from the caller.
    unsafe {
        for_each_slot(obj, data, |name, slot, defined| {
            if !defined {
                f(name, slot)
            }
        })
    }
}

/// `f(name, slot, whether obj defines the symbol)` for each GOT slot of `obj`'s imports.
///
/// # Safety
/// `obj` must describe a loaded 64-bit ELF object (RELA relocations).
unsafe fn for_each_slot(obj: &Object, data: bool, mut f: impl FnMut(&[u8], *mut usize, bool)) {
    let (mut jmprel, mut pltrelsz, mut rela, mut relasz) = (0usize, 0usize, 0usize, 0usize);
    let (mut symtab, mut strtab, mut pltrel) = (0usize, 0usize, DT_RELA);
    let mut d = obj.dynamic as *const u64;
    // The loader rebases these pointers in place on most targets; where it does not, they
    // are still relative to the load bias.
    let abs = |v: u64| {
        if (v as usize) < obj.bias {
            obj.bias + v as usize
        } else {
            v as usize
        }
    };
    loop {
        // SAFETY: the dynamic section is an array of (tag, value) pairs ending in DT_NULL.
        let (tag, val) = unsafe { (*d, *d.add(1)) };
        match tag {
            DT_NULL => break,
            DT_JMPREL => jmprel = abs(val),
            DT_PLTRELSZ => pltrelsz = val as usize,
            DT_RELA => rela = abs(val),
            DT_RELASZ => relasz = val as usize,
            DT_SYMTAB => symtab = abs(val),
            DT_STRTAB => strtab = abs(val),
            DT_PLTREL => pltrel = val,
            _ => {}
        }
        // SAFETY: not past DT_NULL yet.
        d = unsafe { d.add(2) };
    }
    if symtab == 0 || strtab == 0 {
        return;
    }
    let mut tables = Vec::new();
    if data {
        tables.push((rela, relasz));
    }
    if pltrel == DT_RELA {
        tables.push((jmprel, pltrelsz));
    }
    for (table, bytes) in tables {
        if table == 0 {
            continue;
        }
        for i in 0..bytes / 24 {
            // SAFETY: Elf64_Rela entries (offset, info, addend) within the table's bytes;
            // Elf64_Sym entries (name offset first) in the symbol table; names are
            // NUL-terminated in the string table.
            let (offset, info) = unsafe {
                let r = (table + i * 24) as *const u64;
                (*r, *r.add(1))
            };
            let (kind, sym) = (info & 0xffff_ffff, (info >> 32) as usize);
            if sym == 0
                || !matches!(
                    kind,
                    R_X86_64_GLOB_DAT | R_X86_64_JUMP_SLOT | R_AARCH64_GLOB_DAT | R_AARCH64_JUMP_SLOT
                )
            {
                continue;
            }
            // SAFETY: as above; an Elf64_Sym's st_shndx (u16) is at byte 6, 0 (SHN_UNDEF) for a
            // symbol the object does not define.
            let (name, defined) = unsafe {
                let entry = symtab + sym * 24;
                let st_name = *(entry as *const u32) as usize;
                let shndx = *((entry + 6) as *const u16);
                (
                    std::ffi::CStr::from_ptr((strtab + st_name) as *const std::os::raw::c_char),
                    shndx != 0,
                )
            };
            f(name.to_bytes(), obj.bias.wrapping_add(offset as usize) as *mut usize, defined);
        }
    }
}

/// Addresses of `obj`'s GOT slots for the imports named in `names`, in that order: functions
/// called through its PLT and variables it reaches through its GOT; None for a name it does
/// not import so.
///
/// # Safety
/// `obj` must describe a loaded 64-bit ELF object (RELA relocations).
pub unsafe fn slots(obj: &Object, names: &[&[u8]]) -> Vec<Option<*mut usize>> {
    let mut out = vec![None; names.len()];
    // SAFETY: forwarded from the caller.
    unsafe {
        for_each_import(obj, true, |name, slot| {
            if let Some(k) = names.iter().position(|n| *n == name) {
                out[k].get_or_insert(slot);
            }
        })
    };
    out
}

/// Writes `value` into the slot at `slot`, making its page writable first.
///
/// # Safety
/// `slot` must be a GOT slot of a loaded object that no other thread uses while it changes
/// (a pointer-sized store: a concurrent reader sees the old or the new value).
pub unsafe fn patch(slot: *mut usize, value: usize) -> bool {
    let page = 4096usize.max(
        // SAFETY: sysconf has no preconditions.
        unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize,
    );
    let start = (slot as usize) & !(page - 1);
    // SAFETY: the page holds the object's GOT; making it writable changes no content.
    if unsafe { libc::mprotect(start as *mut c_void, page, libc::PROT_READ | libc::PROT_WRITE) } != 0 {
        return false;
    }
    // SAFETY: a pointer-sized, aligned slot in a now writable page.
    unsafe { std::ptr::write_volatile(slot, value) };
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_c_librarys_data_and_function_imports() {
        // SAFETY: looking up exported symbols of the C library.
        let (getopt, optind) = unsafe {
            (
                libc::dlsym(libc::RTLD_DEFAULT, c"getopt".as_ptr()) as usize,
                libc::dlsym(libc::RTLD_DEFAULT, c"optind".as_ptr()) as usize,
            )
        };
        // This test binary links libtoucanmpi, whose getopt interposes the C library's: take
        // the C library through one of its own functions.
        let libc_fn = libc::strlen as *const () as usize;
        assert_ne!(getopt, 0);
        let obj = object_of(libc_fn).expect("the C library is loaded");
        // SAFETY: a loaded 64-bit object.
        let s = unsafe { slots(&obj, &[b"optind", b"no_such_import_xyz"]) };
        assert!(s[0].is_some(), "the C library reaches optind through its GOT");
        assert!(s[1].is_none());
        // SAFETY: reading a bound GOT entry.
        assert_eq!(unsafe { *s[0].unwrap() }, optind);
    }
}
