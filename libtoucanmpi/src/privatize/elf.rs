//! Just enough ELF64 (little-endian) to load a copy of an executable or shared library:
//! program headers, the dynamic section, dynamic symbols and RELA relocations, read from the
//! file's bytes with every offset checked.

pub const ET_EXEC: u16 = 2;
pub const ET_DYN: u16 = 3;
pub const EM_X86_64: u16 = 62;
pub const EM_AARCH64: u16 = 183;

pub const PT_LOAD: u32 = 1;
pub const PT_DYNAMIC: u32 = 2;
pub const PT_INTERP: u32 = 3;
pub const PT_TLS: u32 = 7;
pub const PT_GNU_RELRO: u32 = 0x6474_e552;
pub const PF_X: u32 = 1;
pub const PF_W: u32 = 2;
pub const PF_R: u32 = 4;

pub const DT_NULL: i64 = 0;
pub const DT_NEEDED: i64 = 1;
pub const DT_PLTRELSZ: i64 = 2;
pub const DT_STRTAB: i64 = 5;
pub const DT_SYMTAB: i64 = 6;
pub const DT_RELA: i64 = 7;
pub const DT_RELASZ: i64 = 8;
pub const DT_STRSZ: i64 = 10;
pub const DT_INIT: i64 = 12;
pub const DT_FINI: i64 = 13;
pub const DT_SONAME: i64 = 14;
pub const DT_DEBUG: i64 = 21;
pub const DT_TEXTREL: i64 = 22;
pub const DT_JMPREL: i64 = 23;
pub const DT_INIT_ARRAY: i64 = 25;
pub const DT_FINI_ARRAY: i64 = 26;
pub const DT_INIT_ARRAYSZ: i64 = 27;
pub const DT_FINI_ARRAYSZ: i64 = 28;
pub const DT_FLAGS: i64 = 30;
pub const DT_FLAGS_1: i64 = 0x6fff_fffb;
pub const DF_TEXTREL: u64 = 0x4;

/// Dynamic tags whose value is an address the dynamic loader reads while loading an object
/// (hash tables, symbols, strings, relocations, versions, the GOT).
pub const LOADER_ADDRESS_TAGS: [i64; 15] = [
    3,           // DT_PLTGOT
    4,           // DT_HASH
    DT_STRTAB,   //
    DT_SYMTAB,   //
    DT_RELA,     //
    17,          // DT_REL
    DT_JMPREL,   //
    32,          // DT_PREINIT_ARRAY
    34,          // DT_SYMTAB_SHNDX
    36,          // DT_RELR
    0x6fff_fef5, // DT_GNU_HASH
    0x6fff_fef7, // DT_TLSDESC_GOT
    0x6fff_fff0, // DT_VERSYM
    0x6fff_fffc, // DT_VERDEF
    0x6fff_fffe, // DT_VERNEED
];
pub const DF_1_PIE: u64 = 0x0800_0000;

const PHDR_SIZE: usize = 56;
const DYN_SIZE: usize = 16;
const SYM_SIZE: usize = 24;
const RELA_SIZE: usize = 24;

/// Relocation types that matter to us, per machine.
pub struct RelocKinds {
    pub copy: u32,
    /// IFUNC results computed by the object's own code while it is relocated.
    pub irelative: u32,
    /// Types whose target slot holds a symbol's address (GOT entries, PLT slots, absolute
    /// pointers): GLOB_DAT, JUMP_SLOT, the 64-bit absolute type.
    pub slot: [u32; 3],
}

pub fn reloc_kinds(machine: u16) -> Option<RelocKinds> {
    match machine {
        EM_X86_64 => Some(RelocKinds {
            copy: 5,
            irelative: 37,
            slot: [6, 7, 1],
        }),
        EM_AARCH64 => Some(RelocKinds {
            copy: 1024,
            irelative: 1032,
            slot: [1025, 1026, 257],
        }),
        _ => None,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Phdr {
    pub p_type: u32,
    pub flags: u32,
    pub offset: u64,
    pub vaddr: u64,
    pub filesz: u64,
    pub memsz: u64,
}

/// One entry of the dynamic section, with the file offset of the entry itself.
#[derive(Clone, Copy, Debug)]
pub struct Dyn {
    pub at: usize,
    pub tag: i64,
    pub val: u64,
}

#[derive(Clone, Copy, Debug)]
pub struct Rela {
    pub offset: u64,
    pub kind: u32,
    pub sym: u32,
}

fn u16_at(b: &[u8], o: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(o..o.checked_add(2)?)?.try_into().ok()?))
}
fn u32_at(b: &[u8], o: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(o..o.checked_add(4)?)?.try_into().ok()?))
}
pub fn u64_at(b: &[u8], o: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(o..o.checked_add(8)?)?.try_into().ok()?))
}

/// The ELF header fields we use and the program headers.
#[derive(Clone, Debug)]
pub struct Header {
    pub e_type: u16,
    pub machine: u16,
    pub phoff: usize,
    pub phnum: usize,
    pub phdrs: Vec<Phdr>,
}

/// Bytes of the ELF header we need to read before the program headers.
pub const EHDR_SIZE: usize = 64;

/// Parses the ELF header from `b` (at least `EHDR_SIZE` bytes) and the program headers, which
/// must lie within `b`.
pub fn header(b: &[u8]) -> Result<Header, String> {
    if b.len() < EHDR_SIZE || &b[..4] != b"\x7fELF" {
        return Err("not an ELF file".into());
    }
    if b[4] != 2 || b[5] != 1 {
        return Err("not a 64-bit little-endian ELF file".into());
    }
    let bad = || "truncated ELF header".to_string();
    let e_type = u16_at(b, 16).ok_or_else(bad)?;
    let machine = u16_at(b, 18).ok_or_else(bad)?;
    let phoff = u64_at(b, 32).ok_or_else(bad)? as usize;
    let phentsize = u16_at(b, 54).ok_or_else(bad)? as usize;
    let phnum = u16_at(b, 56).ok_or_else(bad)? as usize;
    if phentsize != PHDR_SIZE {
        return Err("unexpected program header size".into());
    }
    let mut phdrs = Vec::with_capacity(phnum);
    for i in 0..phnum {
        let o = phoff + i * PHDR_SIZE;
        let bad = || "program headers lie outside the file".to_string();
        phdrs.push(Phdr {
            p_type: u32_at(b, o).ok_or_else(bad)?,
            flags: u32_at(b, o + 4).ok_or_else(bad)?,
            offset: u64_at(b, o + 8).ok_or_else(bad)?,
            vaddr: u64_at(b, o + 16).ok_or_else(bad)?,
            filesz: u64_at(b, o + 32).ok_or_else(bad)?,
            memsz: u64_at(b, o + 40).ok_or_else(bad)?,
        });
    }
    Ok(Header {
        e_type,
        machine,
        phoff,
        phnum,
        phdrs,
    })
}

/// Bytes of the file needed by its loadable segments (and the program headers).
pub fn load_extent(h: &Header) -> usize {
    let mut end = h.phoff + h.phnum * PHDR_SIZE;
    for p in h.phdrs.iter().filter(|p| p.p_type == PT_LOAD) {
        end = end.max((p.offset + p.filesz) as usize);
    }
    end
}

/// A parsed image: the file's loadable bytes and what we read from them.
pub struct Image {
    pub bytes: Vec<u8>,
    pub hdr: Header,
    pub dynamic: Vec<Dyn>,
}

impl Image {
    pub fn new(bytes: Vec<u8>) -> Result<Image, String> {
        let hdr = header(&bytes)?;
        if load_extent(&hdr) > bytes.len() {
            return Err("file shorter than its loadable segments".into());
        }
        let mut dynamic = Vec::new();
        if let Some(d) = hdr.phdrs.iter().find(|p| p.p_type == PT_DYNAMIC) {
            let start = d.offset as usize;
            let n = d.filesz as usize / DYN_SIZE;
            for i in 0..n {
                let at = start + i * DYN_SIZE;
                let tag = u64_at(&bytes, at).ok_or("dynamic section outside the file")? as i64;
                let val = u64_at(&bytes, at + 8).ok_or("dynamic section outside the file")?;
                if tag == DT_NULL {
                    break;
                }
                dynamic.push(Dyn { at, tag, val });
            }
        }
        Ok(Image { bytes, hdr, dynamic })
    }

    pub fn has(&self, p_type: u32) -> bool {
        self.hdr.phdrs.iter().any(|p| p.p_type == p_type)
    }

    pub fn dyn_val(&self, tag: i64) -> Option<u64> {
        self.dynamic.iter().find(|d| d.tag == tag).map(|d| d.val)
    }

    pub fn loads(&self) -> impl Iterator<Item = &Phdr> {
        self.hdr.phdrs.iter().filter(|p| p.p_type == PT_LOAD)
    }

    /// File offset of a virtual address inside a loadable segment's file bytes.
    pub fn offset_of(&self, vaddr: u64) -> Option<usize> {
        self.loads()
            .find(|p| vaddr >= p.vaddr && vaddr < p.vaddr + p.filesz)
            .map(|p| (vaddr - p.vaddr + p.offset) as usize)
    }

    /// File offset and bytes (without the NUL) of the string at `off` in the dynamic string table.
    pub fn dynstr(&self, off: u64) -> Option<(usize, &[u8])> {
        let tab = self.offset_of(self.dyn_val(DT_STRTAB)?)?;
        let size = self.dyn_val(DT_STRSZ)? as usize;
        if off as usize >= size {
            return None;
        }
        let at = tab + off as usize;
        let rest = self.bytes.get(at..tab + size)?;
        let len = rest.iter().position(|&c| c == 0)?;
        Some((at, &rest[..len]))
    }

    /// The DT_NEEDED names, each with its file offset.
    pub fn needed(&self) -> Vec<(usize, Vec<u8>)> {
        self.dynamic
            .iter()
            .filter(|d| d.tag == DT_NEEDED)
            .filter_map(|d| self.dynstr(d.val).map(|(at, s)| (at, s.to_vec())))
            .collect()
    }

    pub fn soname(&self) -> Option<(usize, Vec<u8>)> {
        self.dynstr(self.dyn_val(DT_SONAME)?).map(|(at, s)| (at, s.to_vec()))
    }

    /// All RELA relocations (DT_RELA and DT_JMPREL tables).
    pub fn relas(&self) -> Vec<Rela> {
        let mut out = Vec::new();
        for (addr, size) in [(DT_RELA, DT_RELASZ), (DT_JMPREL, DT_PLTRELSZ)] {
            let (Some(a), Some(sz)) = (self.dyn_val(addr), self.dyn_val(size)) else {
                continue;
            };
            let Some(start) = self.offset_of(a) else { continue };
            for i in 0..sz as usize / RELA_SIZE {
                let o = start + i * RELA_SIZE;
                let (Some(offset), Some(info)) = (u64_at(&self.bytes, o), u64_at(&self.bytes, o + 8)) else {
                    break;
                };
                out.push(Rela {
                    offset,
                    kind: info as u32,
                    sym: (info >> 32) as u32,
                });
            }
        }
        out
    }

    /// Name and size of dynamic symbol `index`.
    pub fn symbol(&self, index: u32) -> Option<(Vec<u8>, u64)> {
        let tab = self.offset_of(self.dyn_val(DT_SYMTAB)?)?;
        let o = tab + index as usize * SYM_SIZE;
        let name = u32_at(&self.bytes, o)?;
        let size = u64_at(&self.bytes, o + 16)?;
        Some((self.dynstr(name as u64)?.1.to_vec(), size))
    }

    /// Whether the image asks for relocations in its read-only segments.
    pub fn textrel(&self) -> bool {
        self.dyn_val(DT_TEXTREL).is_some() || self.dyn_val(DT_FLAGS).is_some_and(|f| f & DF_TEXTREL != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Serialises program headers as they sit in a file.
    fn phdr_bytes(phdrs: &[Phdr], align_of: impl Fn(usize) -> u64) -> Vec<u8> {
        let mut v = Vec::with_capacity(phdrs.len() * PHDR_SIZE);
        for (i, p) in phdrs.iter().enumerate() {
            v.extend_from_slice(&p.p_type.to_le_bytes());
            v.extend_from_slice(&p.flags.to_le_bytes());
            v.extend_from_slice(&p.offset.to_le_bytes());
            v.extend_from_slice(&p.vaddr.to_le_bytes());
            v.extend_from_slice(&p.vaddr.to_le_bytes());
            v.extend_from_slice(&p.filesz.to_le_bytes());
            v.extend_from_slice(&p.memsz.to_le_bytes());
            v.extend_from_slice(&align_of(i).to_le_bytes());
        }
        v
    }

    fn ehdr(e_type: u16, phnum: u16) -> Vec<u8> {
        let mut b = vec![0u8; EHDR_SIZE];
        b[..4].copy_from_slice(b"\x7fELF");
        b[4] = 2;
        b[5] = 1;
        b[16..18].copy_from_slice(&e_type.to_le_bytes());
        b[18..20].copy_from_slice(&EM_X86_64.to_le_bytes());
        b[32..40].copy_from_slice(&64u64.to_le_bytes());
        b[54..56].copy_from_slice(&(PHDR_SIZE as u16).to_le_bytes());
        b[56..58].copy_from_slice(&phnum.to_le_bytes());
        b
    }

    #[test]
    fn rejects_non_elf_and_truncated() {
        assert!(header(b"hello").is_err());
        assert!(header(&[0u8; 64]).is_err());
        let b = ehdr(ET_DYN, 3);
        assert!(header(&b).unwrap_err().contains("outside"));
    }

    #[test]
    fn reads_dynamic_and_strings() {
        // One PT_LOAD covering the whole file, one PT_DYNAMIC, a string table.
        let mut b = ehdr(ET_DYN, 2);
        let dyn_off = 64 + 2 * PHDR_SIZE;
        let str_off = dyn_off + 4 * DYN_SIZE;
        let strs = b"\0libfoo.so\0libbar.so.1\0";
        let total = str_off + strs.len();
        let phdrs = [
            Phdr {
                p_type: PT_LOAD,
                flags: PF_R,
                offset: 0,
                vaddr: 0,
                filesz: total as u64,
                memsz: total as u64,
            },
            Phdr {
                p_type: PT_DYNAMIC,
                flags: PF_R,
                offset: dyn_off as u64,
                vaddr: dyn_off as u64,
                filesz: 4 * DYN_SIZE as u64,
                memsz: 4 * DYN_SIZE as u64,
            },
        ];
        b.extend_from_slice(&phdr_bytes(&phdrs, |_| 8));
        for (t, v) in [
            (DT_STRTAB, str_off as u64),
            (DT_STRSZ, strs.len() as u64),
            (DT_NEEDED, 1),
            (DT_SONAME, 11),
        ] {
            b.extend_from_slice(&t.to_le_bytes());
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(strs);
        let img = Image::new(b).unwrap();
        assert_eq!(img.hdr.phdrs, phdrs);
        assert_eq!(img.needed(), vec![(str_off + 1, b"libfoo.so".to_vec())]);
        assert_eq!(img.soname(), Some((str_off + 11, b"libbar.so.1".to_vec())));
        assert_eq!(load_extent(&img.hdr), total);
        assert!(img.dynstr(1000).is_none());
        assert!(!img.textrel());
    }
}
