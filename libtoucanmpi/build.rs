//! Build script: binds the real MPI (MPICH) with bindgen as a dlopen-able function table,
//! records the real MPI's constants, and turns our own `headers/mpi.h` into Rust constants so
//! the header stays the single source of truth for the ABI we export.

use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The real-MPI entry points we call. Only `PMPI_*` names: the `MPI_*` ones are ours.
const REAL_FUNCS: &[&str] = &[
    "Init_thread",
    "Initialized",
    "Finalized",
    "Finalize",
    "Abort",
    "Query_thread",
    "Comm_dup",
    "Comm_rank",
    "Comm_size",
    "Comm_free",
    "Comm_get_attr",
    "Comm_split_type",
    "Send",
    "Isend",
    "Irecv",
    "Isend_c",
    "Irecv_c",
    "Improbe",
    "Mrecv",
    "Iprobe",
    "Test",
    "Testsome",
    "Wait",
    "Waitall",
    "Cancel",
    "Request_free",
    "Request_get_status",
    // V=1 point-to-point pass-through (core::p2p::direct)
    "Issend_c",
    "Imrecv_c",
    "Test_cancelled",
    "Get_count_c",
    "Error_class",
    // issue 16 (p2p8): the status layout check (`transport::direct::status_layout_ok`)
    "Status_set_elements_x",
    "Status_set_cancelled",
    // end pass-through
    "Get_count",
    "Get_processor_name",
    "Get_library_version",
    "Wtime",
    "Wtick",
    "Barrier",
    "Ibarrier",
    "Ibcast_c",
    "Ireduce_c",
    "Iallreduce_c",
    "Iallgather_c",
    "Ialltoall_c",
    // issue 16 (collectives, coll2): real Igather/Iscatter for core/coll/nbc.rs.
    "Igather_c",
    "Iscatter_c",
    // nbrecv27: the v-forms and Ireduce_scatter of the two-level records (transport/vcoll.rs).
    "Igatherv_c",
    "Iscatterv_c",
    "Iallgatherv_c",
    "Ireduce_scatter_c",
    "Comm_idup",
    // V=1 blocking collectives as the real MPI's own (`core::coll::solo`)
    "Bcast_c",
    "Reduce_c",
    "Allreduce_c",
    "Allgather_c",
    "Alltoall_c",
    "Gather_c",
    "Scatter_c",
    "Allreduce",
    "Bcast",
    "Allgather",
    "Error_string",
    "Comm_set_errhandler",
    // issue 18 (RMA): the process-wide real dynamic window (transport/rma.rs).
    "Win_create_dynamic",
    "Win_attach",
    "Win_detach",
    "Win_lock_all",
    "Win_unlock_all",
    "Win_free",
    "Win_flush",
    "Win_flush_all",
    "Win_flush_local",
    "Win_flush_local_all",
    "Win_sync",
    "Put",
    "Get",
    "Accumulate",
    "Get_accumulate",
    "Fetch_and_op",
    "Compare_and_swap",
    "Type_create_hindexed",
    "Type_commit",
    "Type_free",
    "Win_set_errhandler",
    // rma4: a real MPI_Win_create per created window spanning processes.
    "Win_create",
    "Comm_group",
    "Group_incl",
    "Group_free",
    "Comm_create_group",
    // rma6: request-based operations completing at MPI_Wait/MPI_Test.
    "Rput",
    "Rget",
    "Raccumulate",
    "Rget_accumulate",
    // end issue 18
];

/// hwloc entry points (sched/bind.rs). libhwloc is loaded with dlopen only when workers are
/// bound (`TOUCAN_WORKERS` > 1 or `auto`), so a program at W=1 never loads it and neither the
/// shared nor the static library gains a link dependency.
const HWLOC_FUNCS: &[&str] = &[
    "get_api_version",
    "topology_init",
    "topology_load",
    "topology_destroy",
    "topology_get_allowed_cpuset",
    "get_type_depth",
    "get_nbobjs_by_depth",
    "get_obj_by_depth",
    "get_cpubind",
    "bitmap_alloc",
    "bitmap_free",
    "bitmap_first",
    "bitmap_next",
];

/// Real-MPI constants we need, printed by a small C probe compiled against its header.
const REAL_CONSTS: &[(&str, &str)] = &[
    ("MPI_COMM_WORLD", "long"),
    ("MPI_COMM_NULL", "long"),
    ("MPI_BYTE", "long"),
    ("MPI_INT", "long"),
    ("MPI_LONG_LONG", "long"),
    ("MPI_DOUBLE", "long"),
    ("MPI_SUM", "long"),
    ("MPI_PROD", "long"),
    ("MPI_MAX", "long"),
    ("MPI_MIN", "long"),
    ("MPI_LAND", "long"),
    ("MPI_LOR", "long"),
    ("MPI_LXOR", "long"),
    ("MPI_BAND", "long"),
    ("MPI_BOR", "long"),
    ("MPI_BXOR", "long"),
    ("MPI_MINLOC", "long"),
    ("MPI_MAXLOC", "long"),
    ("MPI_CHAR", "long"),
    ("MPI_SIGNED_CHAR", "long"),
    ("MPI_UNSIGNED_CHAR", "long"),
    ("MPI_SHORT", "long"),
    ("MPI_UNSIGNED_SHORT", "long"),
    ("MPI_UNSIGNED", "long"),
    ("MPI_LONG", "long"),
    ("MPI_UNSIGNED_LONG", "long"),
    ("MPI_UNSIGNED_LONG_LONG", "long"),
    ("MPI_FLOAT", "long"),
    ("MPI_LONG_DOUBLE", "long"),
    ("MPI_C_BOOL", "long"),
    ("MPI_C_FLOAT_COMPLEX", "long"),
    ("MPI_C_DOUBLE_COMPLEX", "long"),
    ("MPI_C_LONG_DOUBLE_COMPLEX", "long"),
    ("MPI_INT8_T", "long"),
    ("MPI_INT16_T", "long"),
    ("MPI_INT32_T", "long"),
    ("MPI_INT64_T", "long"),
    ("MPI_UINT8_T", "long"),
    ("MPI_UINT16_T", "long"),
    ("MPI_UINT32_T", "long"),
    ("MPI_UINT64_T", "long"),
    ("MPI_AINT", "long"),
    ("MPI_OFFSET", "long"),
    ("MPI_COUNT", "long"),
    ("MPI_FLOAT_INT", "long"),
    ("MPI_DOUBLE_INT", "long"),
    ("MPI_LONG_INT", "long"),
    ("MPI_2INT", "long"),
    ("MPI_SHORT_INT", "long"),
    ("MPI_LONG_DOUBLE_INT", "long"),
    ("MPI_IN_PLACE", "ptr"),
    // vrec28: a Gatherv sent from the members' buffers (transport/vcoll.rs).
    ("MPI_BOTTOM", "ptr"),
    ("MPI_REQUEST_NULL", "long"),
    ("MPI_MESSAGE_NULL", "long"),
    ("MPI_MESSAGE_NO_PROC", "long"),
    ("MPI_ANY_SOURCE", "long"),
    ("MPI_ANY_TAG", "long"),
    ("MPI_PROC_NULL", "long"),
    ("MPI_UNDEFINED", "long"),
    ("MPI_SUCCESS", "long"),
    ("MPI_TAG_UB", "long"),
    ("MPI_THREAD_SINGLE", "long"),
    ("MPI_THREAD_FUNNELED", "long"),
    ("MPI_THREAD_SERIALIZED", "long"),
    ("MPI_THREAD_MULTIPLE", "long"),
    ("MPI_STATUS_IGNORE", "ptr"),
    ("MPI_STATUSES_IGNORE", "ptr"),
    ("MPI_ERRORS_RETURN", "long"),
    // V=1 point-to-point pass-through
    ("MPI_ERR_IN_STATUS", "long"),
    ("MPI_ERR_TRUNCATE", "long"),
    // end pass-through
    ("MPI_COMM_TYPE_SHARED", "long"),
    ("MPI_INFO_NULL", "long"),
    ("MPI_MAX_PROCESSOR_NAME", "long"),
    ("MPI_MAX_LIBRARY_VERSION_STRING", "long"),
    // issue 18 (RMA)
    ("MPI_REPLACE", "long"),
    ("MPI_NO_OP", "long"),
    ("MPI_WIN_NULL", "long"),
    ("MPI_DATATYPE_NULL", "long"),
    ("MPI_MODE_NOCHECK", "long"),
    // end issue 18
];

fn main() {
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    let root = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap()).join("..");
    let header = root.join("headers/mpi.h");
    println!("cargo:rerun-if-changed={}", header.display());
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=TOUCAN_MPICC");

    let (incdirs, libpath) = probe_real_mpi();
    println!("cargo:rustc-env=TOUCAN_REAL_MPI_DEFAULT={libpath}");

    // 1. Function table of the real MPI, loaded with dlopen at run time (see transport/real.rs).
    let mut b = bindgen::Builder::default()
        .header_contents("real.h", "#include <mpi.h>\n")
        .dynamic_library_name("RealMpi")
        .dynamic_link_require_all(true)
        .layout_tests(false)
        .generate_comments(false);
    for d in &incdirs {
        b = b.clang_arg(format!("-I{d}"));
    }
    for f in REAL_FUNCS {
        b = b.allowlist_function(format!("PMPI_{f}"));
    }
    b = b.allowlist_type("MPI_Status");
    b.generate()
        .expect("bindgen could not parse the real MPI's mpi.h (is libclang installed?)")
        .write_to_file(out.join("real_mpi.rs"))
        .unwrap();

    // 1b. Function table of libhwloc, loaded with dlopen when needed (see sched/bind.rs).
    bind_hwloc(&out);

    // 2. The real MPI's constants.
    write_real_consts(&out, &incdirs);

    // 3. Our ABI constants from our own header.
    let text = fs::read_to_string(&header).unwrap_or_default();
    fs::write(out.join("abi_consts.rs"), abi_consts(&text)).unwrap();
}

/// Binds the few hwloc 2.x functions, types and constants `sched::bind` uses, as a dlopen-able
/// function table, and records the path of the shared library to load.
fn bind_hwloc(out: &Path) {
    println!("cargo:rerun-if-env-changed=TOUCAN_HWLOC_LIBDIR");
    let libdir = env::var("TOUCAN_HWLOC_LIBDIR").ok().or_else(|| {
        let o = Command::new("pkg-config").args(["--variable=libdir", "hwloc"]).output().ok()?;
        let d = String::from_utf8_lossy(&o.stdout).trim().to_string();
        (o.status.success() && !d.is_empty()).then_some(d)
    });
    let mut lib = "libhwloc.so.15".to_string();
    for d in libdir.iter().map(String::as_str).chain(["/usr/lib/x86_64-linux-gnu", "/usr/lib"]) {
        if let Ok(rd) = fs::read_dir(d) {
            let mut names: Vec<String> = rd
                .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().to_string()))
                .filter(|n| n.starts_with("libhwloc.so."))
                .collect();
            names.sort_by_key(|n| n.len());
            if let Some(n) = names.first() {
                lib = Path::new(d).join(n).display().to_string();
                break;
            }
        }
    }
    println!("cargo:rustc-env=TOUCAN_HWLOC_DEFAULT={lib}");
    let mut b = bindgen::Builder::default()
        .header_contents("hw.h", "#include <hwloc.h>\n")
        .dynamic_library_name("HwlocLib")
        .dynamic_link_require_all(true)
        .layout_tests(false)
        .generate_comments(false)
        .allowlist_type("hwloc_obj_type_t")
        .allowlist_type("hwloc_cpubind_flags_t")
        .allowlist_type("hwloc_get_type_depth_e")
        .allowlist_var("HWLOC_API_VERSION");
    for f in HWLOC_FUNCS {
        b = b.allowlist_function(format!("hwloc_{f}"));
    }
    b.generate()
        .expect("bindgen could not parse hwloc.h (install libhwloc-dev: make does)")
        .write_to_file(out.join("hwloc.rs"))
        .unwrap();
}

/// Finds the real MPI's include directories and shared library, from `mpicc -show`.
fn probe_real_mpi() -> (Vec<String>, String) {
    let mpicc = env::var("TOUCAN_MPICC").unwrap_or_else(|_| "mpicc".into());
    let show = Command::new(&mpicc)
        .arg("-show")
        .output()
        .unwrap_or_else(|e| panic!("cannot run `{mpicc} -show` ({e}): install MPICH (make does)"));
    let show = String::from_utf8_lossy(&show.stdout).to_string();
    let mut inc = Vec::new();
    let mut libdirs = vec!["/usr/lib/x86_64-linux-gnu".to_string(), "/usr/lib".to_string()];
    let mut libname = "mpich".to_string();
    for w in show.split_whitespace() {
        if let Some(d) = w.strip_prefix("-I") {
            inc.push(d.to_string());
        } else if let Some(d) = w.strip_prefix("-L") {
            libdirs.insert(0, d.to_string());
        } else if let Some(l) = w.strip_prefix("-l") {
            if l.starts_with("mpi") && !l.contains("cxx") && !l.contains("fort") {
                libname = l.to_string();
            }
        }
    }
    // Prefer the versioned soname (what a program linked to the real MPI would load).
    for d in &libdirs {
        let dir = Path::new(d);
        if let Ok(rd) = fs::read_dir(dir) {
            let mut names: Vec<String> = rd
                .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().to_string()))
                .filter(|n| n.starts_with(&format!("lib{libname}.so.")))
                .collect();
            names.sort_by_key(|n| n.len());
            if let Some(n) = names.first() {
                return (inc, dir.join(n).display().to_string());
            }
        }
    }
    (inc, format!("lib{libname}.so"))
}

fn write_real_consts(out: &Path, incdirs: &[String]) {
    let mut c = String::from("#include <mpi.h>\n#include <stdio.h>\nint main(void){\n");
    for (name, kind) in REAL_CONSTS {
        if *kind == "ptr" {
            writeln!(
                c,
                "printf(\"pub const REAL_{name}: usize = %lu;\\n\", (unsigned long)(size_t){name});"
            )
            .unwrap();
        } else {
            writeln!(c, "printf(\"pub const REAL_{name}: i64 = %ld;\\n\", (long){name});").unwrap();
        }
    }
    c.push_str("printf(\"pub const REAL_STATUS_SIZE: usize = %lu;\\n\", (unsigned long)sizeof(MPI_Status));\n");
    c.push_str("printf(\"pub const REAL_HANDLE_SIZE: usize = %lu;\\n\", (unsigned long)sizeof(MPI_Comm));\n");
    c.push_str("return 0;}\n");
    let src = out.join("probe.c");
    let exe = out.join("probe");
    fs::write(&src, c).unwrap();
    let cc = env::var("CC").unwrap_or_else(|_| "cc".into());
    let mut cmd = Command::new(cc);
    for d in incdirs {
        cmd.arg(format!("-I{d}"));
    }
    let st = cmd.arg(&src).arg("-o").arg(&exe).status().expect("cannot run the C compiler");
    assert!(st.success(), "compiling the real-MPI constant probe failed");
    let o = Command::new(&exe).output().expect("cannot run the probe");
    fs::write(out.join("real_consts.rs"), o.stdout).unwrap();
}

/// Turns our header's constant lines into Rust constants (see headers/mpi.h for the format):
/// `#define NAME ((MPI_Type)0xHEX)` -> usize handle constants; `NAME = VALUE,` enum lines ->
/// i32; `#define NAME 123` -> i32.
fn abi_consts(text: &str) -> String {
    let mut s = String::from("// Generated by build.rs from headers/mpi.h. Do not edit.\n");
    let mut seen = std::collections::HashSet::new();
    let mut handles = Vec::new();
    for line in text.lines() {
        let l = line.trim();
        if let Some(rest) = l.strip_prefix("#define ") {
            let mut it = rest.splitn(2, char::is_whitespace);
            let (Some(name), Some(val)) = (it.next(), it.next()) else {
                continue;
            };
            let val = val.split("/*").next().unwrap().split("//").next().unwrap().trim();
            if !(name.starts_with("MPI_") || name.starts_with("TOUCAN_")) || name.contains('(') {
                continue;
            }
            if let Some(h) = val.strip_prefix("((MPI_").and_then(|v| v.split_once(")0x")) {
                let hex = h.1.trim_end_matches(')');
                if let Ok(v) = usize::from_str_radix(hex, 16) {
                    if seen.insert(name.to_string()) {
                        writeln!(s, "pub const {name}: usize = {v:#x};").unwrap();
                        handles.push(format!("(\"{name}\", {v:#x})"));
                    }
                }
            } else if let Some(n) = val
                .strip_prefix("((")
                .and_then(|v| v.split_once("*)"))
                .map(|x| x.1.trim_end_matches(')'))
            {
                // Pointer sentinels such as MPI_IN_PLACE ((void*)1): their address value.
                if let Ok(v) = n.trim().parse::<usize>() {
                    if seen.insert(format!("{name}_ADDR")) {
                        writeln!(s, "pub const {name}_ADDR: usize = {v};").unwrap();
                    }
                }
            } else if let Ok(v) = val.trim_matches(|c| c == '(' || c == ')').parse::<i64>() {
                if seen.insert(name.to_string()) {
                    writeln!(s, "pub const {name}: i32 = {v};").unwrap();
                }
            }
        } else if l.starts_with("MPI_") && l.contains('=') && !l.contains('(') {
            let (name, val) = l.split_once('=').unwrap();
            let name = name.trim();
            let val = val.split("//").next().unwrap().split("/*").next().unwrap();
            let val = val.trim().trim_end_matches(',').trim();
            let v = if let Some(h) = val.strip_prefix("0x") {
                i64::from_str_radix(h, 16).ok()
            } else {
                val.parse::<i64>().ok()
            };
            if let Some(v) = v {
                if name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && seen.insert(name.to_string()) {
                    writeln!(s, "pub const {name}: i32 = {v};").unwrap();
                }
            }
        }
    }
    writeln!(s, "/// Every predefined handle of the header, by name.").unwrap();
    writeln!(s, "pub const HANDLES: &[(&str, usize)] = &[{}];", handles.join(", ")).unwrap();
    s
}
