#!/usr/bin/env python3
"""Generates Toucan-MPI's Fortran bindings (issue 17) from one table.

    gen.py --header headers/mpi.h --table fortran/bindings.txt --exports EXPORTS --out DIR
    gen.py ... --unbound          only list the routines left out, and why

Reads the C prototypes and constants of headers/mpi.h, the list of MPI_* functions the built
library exports (EXPORTS: one name a line, from `nm -D`), and fortran/bindings.txt (rules and
overrides, described at its top). Writes into DIR:

    toucanfort.c    the Fortran-callable symbols, thin C shims over the C API
    mpif.h          constants, sentinels (COMMON blocks) and function types; fixed and free form
    mpi.f90         the `mpi` module (mpif.h's declarations in a module)
    bound.txt       the routines bound, one a line
"""

import argparse
import re
import sys

HANDLE_KINDS = {
    "MPI_Comm": "Comm",
    "MPI_Datatype": "Type",
    "MPI_Group": "Group",
    "MPI_Request": "Request",
    "MPI_Op": "Op",
    "MPI_Info": "Info",
    "MPI_Errhandler": "Errhandler",
    "MPI_Message": "Message",
    "MPI_Win": "Win",
    "MPI_File": "File",
    "MPI_Session": "Session",
}
WIDE_INTS = {"MPI_Aint", "MPI_Count", "MPI_Offset"}
# Constants that are INTEGER(KIND=MPI_OFFSET_KIND) in Fortran (MPI 4.1, A.1.1): passed where an
# MPI_Offset argument is read by reference (MPI_File_set_view's disp), so a default INTEGER
# would give the shim 4 stray bytes (MPICH's setviewcurf test). MPI_OFFSET_KIND is 8 (gfortran).
OFFSET_CONSTS = {"MPI_DISPLACEMENT_CURRENT"}
KIND_OF = {"MPI_Aint": "MPI_ADDRESS_KIND", "MPI_Count": "MPI_COUNT_KIND", "MPI_Offset": "MPI_OFFSET_KIND"}
# The C type of each predefined handle (filled by parse_header), for mpi_f08's typed constants.
HANDLE_OF = {}
# Deprecated names bound as another routine (table lines "=Old New"): Fortran name -> C routine.
RENAMES = {}
# Handle parameters whose requests or messages the routine frees (table line "@release
# Routine:param ..."): the shims drop a freed handle's integer from the library's table.
RELEASING = set()
# Large-count forms MPI_X_c bound under their own name in all three bindings ("+X_c" lines of
# the table), because their only difference from MPI_X is a procedure argument's interface,
# which a Fortran generic cannot tell apart (MPI_Register_datarep_c; issue 19, session io5).
OWN_NAME = set()
# int parameters that are LOGICAL in Fortran.
LOGICAL_NAMES = {"flag", "commute", "reorder", "periods", "remain_dims", "weighted"}

# Sentinels: Fortran name, COMMON block (its C symbol is the lower-case name + "_"),
# Fortran declaration, C type and size of the block.
SENTINELS = [
    ("MPI_BOTTOM", "toucan_f_bottom", "INTEGER MPI_BOTTOM", 4),
    ("MPI_IN_PLACE", "toucan_f_in_place", "INTEGER MPI_IN_PLACE", 4),
    ("MPI_BUFFER_AUTOMATIC", "toucan_f_buffer_auto", "INTEGER MPI_BUFFER_AUTOMATIC", 4),
    ("MPI_STATUS_IGNORE", "toucan_f_status_ignore", "INTEGER MPI_STATUS_IGNORE(MPI_STATUS_SIZE)", 32),
    ("MPI_STATUSES_IGNORE", "toucan_f_statuses_ignore",
     "INTEGER MPI_STATUSES_IGNORE(MPI_STATUS_SIZE,1)", 32),
    ("MPI_ERRCODES_IGNORE", "toucan_f_errcodes_ignore", "INTEGER MPI_ERRCODES_IGNORE(1)", 4),
    ("MPI_UNWEIGHTED", "toucan_f_unweighted", "INTEGER MPI_UNWEIGHTED(1)", 4),
    ("MPI_WEIGHTS_EMPTY", "toucan_f_weights_empty", "INTEGER MPI_WEIGHTS_EMPTY(1)", 4),
    ("MPI_ARGV_NULL", "toucan_f_argv_null", "CHARACTER*1 MPI_ARGV_NULL(1)", 1),
    ("MPI_ARGVS_NULL", "toucan_f_argvs_null", "CHARACTER*1 MPI_ARGVS_NULL(1,1)", 1),
]

FORTRAN_ONLY = [
    ("MPI_STATUS_SIZE", 8),
    ("MPI_SOURCE", 1),
    ("MPI_TAG", 2),
    ("MPI_ERROR", 3),
    ("MPI_ADDRESS_KIND", 8),
    ("MPI_OFFSET_KIND", 8),
    ("MPI_COUNT_KIND", 8),
    ("MPI_INTEGER_KIND", 4),
    # Combiners of MPI-1's Fortran MPI_TYPE_HVECTOR/HINDEXED/STRUCT, which MPI-3 removed and
    # the ABI's mpi.h does not have: distinct values for programs that still compare with them
    # (our MPI-1 routines are built on the MPI-2 ones and report MPI_COMBINER_HVECTOR, ...).
    ("MPI_COMBINER_HVECTOR_INTEGER", 1105),
    ("MPI_COMBINER_HINDEXED_INTEGER", 1107),
    ("MPI_COMBINER_STRUCT_INTEGER", 1110),
]


class Param:
    def __init__(self, text):
        self.text = text.strip()
        self.kind = None  # filled in by classify
        self.arg = None
        if self.text == "...":
            self.const, self.base, self.stars, self.name, self.dims = False, "...", 0, "", ""
            return
        m = re.match(r"^(const\s+)?([A-Za-z_][\w ]*?)\s*(\*+)?\s*(\w+)?\s*((?:\[\w*\])*)$", self.text)
        if not m:
            raise ValueError(f"cannot parse parameter '{text}'")
        self.const = bool(m.group(1))
        self.base = m.group(2).strip()
        self.stars = len(m.group(3) or "")
        self.name = m.group(4) or ""
        self.dims = m.group(5) or ""
        self.kind = None  # filled in by classify
        self.arg = None


def parse_header(path):
    protos = {}
    handles = {}  # name -> int value
    consts = []  # (name, value) in order
    sizes = {}
    aliases = []
    in_enum = False
    for line in open(path):
        line = line.rstrip("\n")
        m = re.match(r"^(int|double) (MPI_\w+)\((.*)\);$", line)
        if m:
            ret, name, args = m.groups()
            params = [] if args.strip() in ("", "void") else [Param(a) for a in split_args(args)]
            protos[name] = (ret, params)
            continue
        m = re.match(r"^#define (MPI_\w+) \((MPI_\w+)\)0x([0-9a-fA-F]+)\)$", line.replace("((", "("))
        if m:
            HANDLE_OF[m.group(1)] = m.group(2)
            consts.append((m.group(1), int(m.group(3), 16)))
            continue
        m = re.match(r"^#define (MPI_\w+) (MPI_\w+)$", line)
        if m:
            aliases.append((m.group(1), m.group(2)))
            continue
        m = re.match(r"^#define (MPI_\w+) (-?\d+)$", line)
        if m:
            sizes[m.group(1)] = int(m.group(2))
            continue
        if line.startswith("enum {"):
            in_enum = True
            continue
        if in_enum:
            if line.startswith("}"):
                in_enum = False
                continue
            m = re.match(r"^\s+(MPI_\w+) = (-?\d+),$", line)
            if m:
                consts.append((m.group(1), int(m.group(2))))
    known = dict(consts)
    for a, b in aliases:
        if b in known:
            consts.append((a, known[b]))
            known[a] = known[b]
            if b in HANDLE_OF:
                HANDLE_OF[a] = HANDLE_OF[b]
    return protos, consts, sizes


def split_args(s):
    return [a for a in (x.strip() for x in s.split(",")) if a]


def parse_table(path):
    over, skip = {}, {}
    for line in open(path):
        if line.startswith("@release "):
            RELEASING.update(tuple(("MPI_" + w).split(":")) for w in line.split()[1:])
            continue
        if line.startswith("="):
            old, new = line[1:].split()[:2]
            RENAMES["MPI_" + old] = "MPI_" + new
            continue
        line = line.split("#", 1)[0].rstrip() if not line.startswith("-") else line.rstrip()
        if not line.strip():
            continue
        if line.startswith("-"):
            name, _, reason = line[1:].partition(" ")
            skip["MPI_" + name] = reason.strip()
            continue
        if line.startswith("+"):
            line = line[1:]
            OWN_NAME.add("MPI_" + line.split()[0])
        words = line.split()
        d = {}
        for w in words[1:]:
            k, _, v = w.partition("=")
            d[k] = v
        over["MPI_" + words[0]] = d
    return over, skip


def classify(name, params, overrides):
    """Sets p.kind for every parameter; returns None or the reason the routine is unbound."""
    prev_count = None
    for p in params:
        o = overrides.get(p.name)
        t = p.base
        if o is not None:
            p.kind = o
        elif p.text == "...":
            p.kind = "drop"
        elif t in ("int",) and p.stars == 0 and not p.dims:
            p.kind = "int_in"
            if p.name in ("count", "incount"):
                prev_count = p.name
        elif t in WIDE_INTS and p.stars == 0 and not p.dims:
            p.kind = "wide_in"
        elif t in ("int", "MPI_Aint", "MPI_Count", "MPI_Offset", "MPI_Fint") and (p.stars == 1 or p.dims):
            if t == "int" and not p.const and p.name in ("flag", "commute", "weighted"):
                p.kind = "logical_out"
            elif t == "int" and not p.const and p.name == "periods":
                p.kind = "logical_array_out"
            else:
                p.kind = "pass"
        elif t in HANDLE_KINDS and p.stars == 0 and not p.dims:
            p.kind = "handle_in"
        elif t in HANDLE_KINDS and p.stars == 1 and not p.dims:
            p.kind = "handle_inout"
        elif t in HANDLE_KINDS and p.dims == "[]" and p.stars == 0:
            if prev_count is None:
                return f"handle array {p.name} of unknown length"
            p.kind = f"handles({prev_count})"
        elif t == "MPI_Status" and (p.stars == 1 or p.dims == "[]"):
            if p.const:
                p.kind = "pass"
            else:
                p.kind = "statuses" if p.dims else "status"
        elif t == "char" and p.stars == 1 and not p.dims and p.const:
            p.kind = "str_in"
        elif t == "char" and p.const and p.dims == "[]" and p.stars == 0:
            p.kind = "str_in"
        elif t == "char" and p.stars == 1 and not p.const:
            return f"character output {p.name} without a strout() length in the table"
        elif t == "void" and p.stars == 1:
            p.kind = "choice"
        else:
            return f"parameter '{p.text}' has no Fortran rule"
    return None


class Gen:
    def __init__(self, cname, ret, params):
        self.cname = cname
        self.ret = ret
        self.params = params

    def fortran_params(self):
        """(C declaration, name) of the Fortran-visible arguments, in order, before ierror."""
        out = []
        for i, p in enumerate(self.params):
            k = p.kind
            a = f"a{i}"
            p.arg = a
            if k in ("null", "drop"):
                continue
            if k == "int_in" or k.startswith("index") or k.startswith("indices"):
                decl = f"MPI_Fint *{a}"
            elif k == "wide_in":
                decl = f"{p.base} *{a}"
            elif k in ("pass", "logical_out", "logical_array_out"):
                decl = f"void *{a}"
            elif k in ("handle_in", "handle_inout") or k.startswith("handles"):
                decl = f"MPI_Fint *{a}"
            elif k in ("status", "statuses"):
                decl = f"MPI_Fint *{a}"
            elif k in ("str_in",) or k.startswith("strout"):
                decl = f"char *{a}"
            elif k in ("choice", "cptr_out", "ignore_ptr", "fn", "copyfn", "deletefn", "kvextra", "copyfn1", "deletefn1",
                       "kvextra1", "gquery", "gfree", "gcancel", "gextra", "dread", "dwrite", "dextent",
                       "dextra", "dread_c", "dwrite_c") or k.startswith("attr"):
                decl = f"void *{a}"
            else:
                raise ValueError(f"{self.cname}: unknown kind {k}")
            out.append((decl, a))
        return out

    def body(self, cfn):
        pre, post, args = [], [], []
        lens = []
        for p in self.params:
            k, a = p.kind, p.arg
            if k == "null":
                args.append("NULL")
            elif k == "drop":
                continue
            elif k == "int_in":
                args.append(f"(int)*{a}")
                pre.append(f"int c_{p.name} = (int)*{a};")
            elif k == "wide_in":
                args.append(f"*{a}")
            elif k == "pass" and "weights" in p.name:
                args.append(f"({ctype(p)})tf_weights({a})")
            elif k == "pass":
                args.append(f"({ctype(p)}){a}")
            elif k == "logical_out":
                args.append(f"(int *){a}")
                post.append(f"tf_logical((int *){a}, 1);")
            elif k == "logical_array_out":
                args.append(f"(int *){a}")
                post.append(f"tf_logical((int *){a}, c_maxdims);")
            elif k == "index":
                args.append(f"(int *){a}")
                post.append(f"tf_index((int *){a}, 1);")
            elif k.startswith("indices"):
                n = k[len("indices("):-1]
                args.append(f"(int *){a}")
                post.append(f"if (rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS) tf_index((int *){a}, *(int *){self.param(n).arg});")
            elif k == "handle_in":
                args.append(f"MPI_{HANDLE_KINDS[p.base]}_f2c(*{a})")
            elif k == "handle_inout":
                kind = HANDLE_KINDS[p.base]
                pre.append(f"{p.base} h_{p.name} = MPI_{kind}_f2c(*{a});")
                args.append(f"&h_{p.name}")
                if self.releases(p):
                    pre.append(f"MPI_Fint o_{p.name} = *{a};")
                    post.append(f"*{a} = MPI_{kind}_c2f(h_{p.name});")
                    post.append(f"if (*{a} != o_{p.name}) toucan_fint_release(o_{p.name});")
                else:
                    post.append(f"*{a} = MPI_{kind}_c2f(h_{p.name});")
            elif k.startswith("handles"):
                kind = HANDLE_KINDS[p.base]
                n = k[len("handles("):-1]
                m = re.match(r"commsize\((\w+)\)$", n)
                d = re.match(r"(in|out)degree\((\w+)\)$", n)
                if m:
                    n = f"tf_commsize(MPI_Comm_f2c(*{self.param(m.group(1)).arg}))"
                elif d:
                    n = f"tf_degree(MPI_Comm_f2c(*{self.param(d.group(2)).arg}), {int(d.group(1) == 'out')})"
                else:
                    n = re.sub(r"\b([a-z_]+)\b", lambda mm: self.cval(mm.group(1)), n)
                pre.append(f"int n_{p.name} = {n};")
                pre.append(f"{p.base} s_{p.name}[TF_SMALL], *h_{p.name} = n_{p.name} <= TF_SMALL ? s_{p.name} : tf_alloc(n_{p.name}, sizeof({p.base}));")
                pre.append(f"for (int i = 0; i < n_{p.name}; i++) h_{p.name}[i] = MPI_{kind}_f2c({a}[i]);")
                args.append(f"h_{p.name}")
                if not p.const and self.releases(p):
                    post.append(f"for (int i = 0; i < n_{p.name}; i++) {{ MPI_Fint o = {a}[i]; {a}[i] = MPI_{kind}_c2f(h_{p.name}[i]); if ({a}[i] != o) toucan_fint_release(o); }}")
                elif not p.const:
                    post.append(f"for (int i = 0; i < n_{p.name}; i++) {a}[i] = MPI_{kind}_c2f(h_{p.name}[i]);")
                post.append(f"if (h_{p.name} != s_{p.name}) free(h_{p.name});")
            elif k == "status":
                args.append(f"tf_status({a})")
            elif k == "statuses":
                args.append(f"tf_statuses({a})")
            elif k == "str_in":
                # Info keys and values lose leading blanks too (MPI 4.1, 10.1).
                trim = "tf_str_in_info" if self.cname.startswith("MPI_Info_") else "tf_str_in"
                pre.append(f"char *s_{p.name} = {trim}({a}, l_{p.name});")
                args.append(f"s_{p.name}")
                post.append(f"free(s_{p.name});")
                lens.append(p)
            elif k.startswith("strout"):
                n = k[len("strout("):-1]
                n = re.sub(r"\b([a-z_]+)\b", lambda mm: self.cval(mm.group(1)), n)
                pre.append(f"size_t n_{p.name} = (size_t)({n}) + 1;")
                pre.append(f"char *s_{p.name} = calloc(n_{p.name} + 1, 1);")
                args.append(f"s_{p.name}")
                # (With a flag, as MPI_Info_get: the variable is left alone when nothing was found.)
                found = "".join(f" && *(int *){q.arg}" for q in self.params if q.name == "flag")
                post.append(f"if (rc == MPI_SUCCESS{found}) tf_str_out({a}, l_{p.name}, s_{p.name});")
                post.append(f"free(s_{p.name});")
                lens.append(p)
            elif k == "choice":
                args.append(f"tf_buf({a})")
            elif k == "cptr_out":
                args.append(f"(void *){a}")
            elif k == "ignore_ptr":
                pre.append(f"void *x_{p.name} = NULL;")
                args.append(f"&x_{p.name}")
            elif k == "fn":
                args.append(f"({p.base} *){a}")
            elif k in ("copyfn", "deletefn"):
                ok = self.cname.split("_")[1]
                lk, fk = ok.lower(), ok
                args.append(f"({p.base} *)TF_{k[:-2].upper()}FN({lk}, {fk}, {a})")
            elif k == "kvextra":
                cp = [q for q in self.params if q.kind == "copyfn"][0].arg
                dl = [q for q in self.params if q.kind == "deletefn"][0].arg
                args.append(f"tf_kv_new({cp}, {dl}, *(MPI_Aint *){a})")
                post.append(self.keyval_made())
            elif k in ("copyfn1", "deletefn1"):
                args.append(f"({p.base} *)TF_{k[:-3].upper()}FN1({a})")
            elif k == "kvextra1":
                cp = [q for q in self.params if q.kind == "copyfn1"][0].arg
                dl = [q for q in self.params if q.kind == "deletefn1"][0].arg
                args.append(f"tf_kv_new({cp}, {dl}, (MPI_Aint)*(MPI_Fint *){a})")
                post.append(self.keyval_made())
            elif k in ("gquery", "gfree", "gcancel"):
                args.append(f"tf_greq_{k[1:]}")
            elif k == "gextra":
                fns = {q.kind: q.arg for q in self.params}
                args.append(f"tf_greq_new({fns['gquery']}, {fns['gfree']}, {fns['gcancel']}, (MPI_Aint *){a})")
            elif k in ("dread", "dwrite"):
                args.append(f"({p.base} *)TF_DCONV({a}, {k[1:]})")
            elif k in ("dread_c", "dwrite_c"):
                args.append(f"({p.base} *)TF_DCONV_C({a}, {k[1:]})")
            elif k == "dextent":
                args.append("tf_dr_extent")
            elif k == "dextra":
                fns = {q.kind.removesuffix("_c"): q.arg for q in self.params}
                args.append(f"tf_dr_new({fns['dread']}, {fns['dwrite']}, {fns['dextent']}, *(MPI_Aint *){a})")
            elif k == "attr_in":
                args.append(f"(void *)*(MPI_Aint *){a}")
                post.append(f"if (rc == MPI_SUCCESS) toucan_f_attr_made((MPI_Aint)({args[0]}), {args[1]});")
            elif k == "attr_in_int":
                args.append(f"(void *)(MPI_Aint)*(MPI_Fint *){a}")
                post.append(f"if (rc == MPI_SUCCESS) toucan_f_attr_made((MPI_Aint)({args[0]}), {args[1]});")
            elif k.startswith("attr_out"):
                key = k[k.index("(") + 1:-1]
                flag = self.param("flag").arg
                pre.append(f"void *v_{p.name} = NULL;")
                args.append(f"&v_{p.name}")
                wide = "MPI_Aint" if k.startswith("attr_out(") else "MPI_Fint"
                view = f"(void *)toucan_f_attr_view((MPI_Aint)({args[0]}), c_{key}, (MPI_Aint)v_{p.name})"
                post.append(f"if (rc == MPI_SUCCESS && *(int *){flag}) *({wide} *){a} = ({wide})tf_attr_value(c_{key}, {view});")
            else:
                raise ValueError(f"{self.cname}: unknown kind {k}")
        return pre, args, post, lens

    def releases(self, p):
        """Whether this routine frees the request or message handle(s) p it is given."""
        # (A large-count form MPI_X_c frees what MPI_X frees.)
        base = self.cname[:-2] if self.cname.endswith("_c") else self.cname
        return (self.cname, p.name) in RELEASING or (base, p.name) in RELEASING

    def keyval_made(self):
        """The post-step of a keyval created from Fortran (its callbacks see Fortran values)."""
        kv = [q for q in self.params if q.name.endswith("keyval")][0].arg
        return f"if (rc == MPI_SUCCESS) toucan_f_keyval_made(*(int *){kv});"

    def param(self, name):
        for p in self.params:
            if p.name == name:
                return p
        raise ValueError(f"{self.cname}: no parameter {name}")

    def cval(self, name):
        if name.startswith("MPI_") or name == "tf_commsize":
            return name
        p = self.param(name)
        return f"(*{p.arg})"

    def emit(self, out, fname, cfn, attrs=""):
        fps = self.fortran_params()
        pre, args, post, lens = self.body(cfn)
        sig = [d for d, _ in fps]
        if self.ret == "double":
            out.append(f"double {fname}(void)\n{{\n    return {cfn}();\n}}\n")
            return
        sig.append("MPI_Fint *ierr")
        sig += [f"size_t l_{p.name}" for p in lens]
        out.append(f"{attrs}void {fname}({', '.join(sig)})\n{{")
        for s in pre:
            out.append("    " + s)
        out.append(f"    int rc = {cfn}({', '.join(args)});")
        for s in post:
            out.append("    " + s)
        out.append("    *ierr = rc;\n}\n")


def ctype(p):
    t = ("const " if p.const else "") + p.base
    inner = re.findall(r"\[(\d+)\]", p.dims)
    if inner:
        return t + " (*)" + "".join(f"[{d}]" for d in inner)
    return t + " *"


C_PRELUDE = r"""/* Generated by fortran/gen.py from headers/mpi.h and fortran/bindings.txt: do not edit. */
/*
 * The Fortran bindings of Toucan-MPI (mpif.h and the mpi module): for each C routine MPI_X,
 * pmpi_x_ calls PMPI_X and mpi_x_ calls MPI_X (so tools that interpose the C MPI_ names see
 * Fortran calls too); mpi_x__, mpi_x and MPI_X (and their pmpi twins) are aliases, the
 * forms Fortran compilers emit. This file is compiled into libtoucanfort.a, which toucanfort
 * links into the program itself: the sentinels below are then the program's own COMMON
 * blocks, so each privatized copy of the program recognises its own copy's addresses.
 */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>

#define TF_SMALL 64
/* libtoucanmpi: forget a Fortran integer whose request or message was freed (abi/convert.rs). */
void toucan_fint_release(MPI_Fint i);
#define TF_HIDDEN __attribute__((visibility("hidden")))

"""

C_HELPERS = r"""
static void *tf_alloc(int n, size_t size)
{
    void *p = malloc((n > 0 ? (size_t)n : 1) * size);
    if (!p)
        MPI_Abort(MPI_COMM_WORLD, MPI_ERR_NO_MEM);
    return p;
}

static inline void *tf_buf(void *p)
{
    if (p == (void *)&toucan_f_bottom_)
        return MPI_BOTTOM;
    if (p == (void *)&toucan_f_in_place_)
        return MPI_IN_PLACE;
    if (p == (void *)&toucan_f_buffer_auto_)
        return MPI_BUFFER_AUTOMATIC;
    return p;
}

/* The weights arguments of the distributed graph routines: MPI_UNWEIGHTED, MPI_WEIGHTS_EMPTY. */
static inline void *tf_weights(void *p)
{
    if (p == (void *)&toucan_f_unweighted_)
        return (void *)MPI_UNWEIGHTED;
    if (p == (void *)&toucan_f_weights_empty_)
        return (void *)MPI_WEIGHTS_EMPTY;
    return p;
}

static inline MPI_Status *tf_status(MPI_Fint *s)
{
    return (void *)s == (void *)&toucan_f_status_ignore_ ? MPI_STATUS_IGNORE : (MPI_Status *)s;
}

static inline MPI_Status *tf_statuses(MPI_Fint *s)
{
    return (void *)s == (void *)&toucan_f_statuses_ignore_ ? MPI_STATUSES_IGNORE : (MPI_Status *)s;
}

static void tf_logical(int *v, int n)
{
    for (int i = 0; i < n; i++)
        v[i] = v[i] != 0;
}

static void tf_index(int *v, int n)
{
    for (int i = 0; i < n; i++)
        if (v[i] >= 0)
            v[i] += 1;
}

/* A Fortran string: trailing blanks removed, NUL-terminated, in new memory. */
static char *tf_str_in(const char *s, size_t len)
{
    while (len > 0 && s[len - 1] == ' ')
        len--;
    char *c = malloc(len + 1);
    if (!c)
        MPI_Abort(MPI_COMM_WORLD, MPI_ERR_NO_MEM);
    memcpy(c, s, len);
    c[len] = 0;
    return c;
}

/* An info key or value: leading blanks removed as well (MPI 4.1, 10.1: "In Fortran, leading
   and trailing spaces are stripped from both"). */
static char *tf_str_in_info(const char *s, size_t len)
{
    while (len > 0 && *s == ' ') {
        s++;
        len--;
    }
    return tf_str_in(s, len);
}

/* A C string into a Fortran one of length len: cut, or padded with blanks. */
static void tf_str_out(char *f, size_t len, const char *c)
{
    size_t n = strlen(c);
    if (n > len)
        n = len;
    memcpy(f, c, n);
    memset(f + n, ' ', len - n);
}

/* The number of neighbours of a process topology: sources (out = 0) or destinations (out = 1),
   the lengths of MPI_Neighbor_alltoallw's receive and send type arrays. */
static int tf_degree(MPI_Comm comm, int out)
{
    int kind = MPI_UNDEFINED, n = 0, indeg = 0, outdeg = 0, weighted = 0;
    if (MPI_Topo_test(comm, &kind) != MPI_SUCCESS)
        return 0;
    switch (kind) {
    case MPI_CART:
        MPI_Cartdim_get(comm, &n);
        return 2 * n;
    case MPI_GRAPH: {
        int rank = 0;
        MPI_Comm_rank(comm, &rank);
        MPI_Graph_neighbors_count(comm, rank, &n);
        return n;
    }
    case MPI_DIST_GRAPH:
        MPI_Dist_graph_neighbors_count(comm, &indeg, &outdeg, &weighted);
        return out ? outdeg : indeg;
    default:
        return 0;
    }
}

static int tf_commsize(MPI_Comm comm)
{
    int inter = 0, n = 0;
    if (MPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS)
        return 0;
    if (inter)
        MPI_Comm_remote_size(comm, &n);
    else
        MPI_Comm_size(comm, &n);
    return n;
}

/* Attribute copy/delete callbacks written in Fortran (MPI_Comm/Type_create_keyval): the C
   keyval gets trampolines, and as its extra_state a record of the Fortran procedures and the
   program's own extra_state (never freed: one small record per keyval created). The
   predefined MPI_<KIND>_NULL_COPY_FN, _DUP_FN and _NULL_DELETE_FN are procedures here too,
   recognised by address and passed on as the C ones. */
typedef void (*tf_copy_f)(MPI_Fint *, MPI_Fint *, MPI_Aint *, MPI_Aint *, MPI_Aint *, MPI_Fint *, MPI_Fint *);
typedef void (*tf_delete_f)(MPI_Fint *, MPI_Fint *, MPI_Aint *, MPI_Aint *, MPI_Fint *);
struct tf_kv {
    tf_copy_f copy;
    tf_delete_f del;
    MPI_Aint extra;
};

/* Markers only: never called (the C side gets its own predefined callbacks instead). */
TF_HIDDEN void mpi_comm_null_copy_fn_(void) {}
TF_HIDDEN void mpi_comm_dup_fn_(void) {}
TF_HIDDEN void mpi_comm_null_delete_fn_(void) {}
TF_HIDDEN void mpi_type_null_copy_fn_(void) {}
TF_HIDDEN void mpi_type_dup_fn_(void) {}
TF_HIDDEN void mpi_type_null_delete_fn_(void) {}
TF_HIDDEN void mpi_win_null_copy_fn_(void) {}
TF_HIDDEN void mpi_win_dup_fn_(void) {}
TF_HIDDEN void mpi_win_null_delete_fn_(void) {}
TF_HIDDEN void mpi_null_copy_fn_(void) {}
TF_HIDDEN void mpi_dup_fn_(void) {}
TF_HIDDEN void mpi_null_delete_fn_(void) {}

static void *tf_kv_new(void *copy, void *del, MPI_Aint extra)
{
    struct tf_kv *kv = malloc(sizeof *kv);
    if (!kv)
        MPI_Abort(MPI_COMM_WORLD, MPI_ERR_NO_MEM);
    kv->copy = (tf_copy_f)copy;
    kv->del = (tf_delete_f)del;
    kv->extra = extra;
    return kv;
}

#define TF_KEYVAL_TRAMPOLINES(K, T)                                                            \
    static int tf_copy_##K(T old, int key, void *extra, void *in, void *out, int *flag)       \
    {                                                                                          \
        struct tf_kv *kv = extra;                                                              \
        MPI_Fint fold = MPI_##K##_c2f(old), fkey = key, fflag = 0, ierr = 0;                   \
        MPI_Aint fin = (MPI_Aint)in, fout = 0, fx = kv->extra;                                 \
        kv->copy(&fold, &fkey, &fx, &fin, &fout, &fflag, &ierr);                               \
        *(void **)out = (void *)fout;                                                          \
        *flag = fflag != 0;                                                                    \
        return ierr;                                                                           \
    }                                                                                          \
    static int tf_delete_##K(T h, int key, void *val, void *extra)                             \
    {                                                                                          \
        struct tf_kv *kv = extra;                                                              \
        MPI_Fint fh = MPI_##K##_c2f(h), fkey = key, ierr = 0;                                  \
        MPI_Aint fv = (MPI_Aint)val, fx = kv->extra;                                           \
        kv->del(&fh, &fkey, &fv, &fx, &ierr);                                                  \
        return ierr;                                                                           \
    }
TF_KEYVAL_TRAMPOLINES(Comm, MPI_Comm)
TF_KEYVAL_TRAMPOLINES(Type, MPI_Datatype)
TF_KEYVAL_TRAMPOLINES(Win, MPI_Win)

/* MPI-1's MPI_NULL_COPY_FN, MPI_DUP_FN and MPI_NULL_DELETE_FN (above) are accepted here too,
   as MPICH does (programs pass them to MPI_Comm_create_keyval), and so are mpi_f08's
   MPI_COMM_NULL_COPY_FN, ... (module procedures, weak references: a program without mpi_f08
   does not link the module for them; they are then null and match nothing). */
#define TF_F08_FN(k, what) __mpi_f08_MOD_mpi_##k##_##what
#define TF_F08_DECL(k)                                                                         \
    extern void TF_F08_FN(k, null_copy_fn)(void) __attribute__((weak));                        \
    extern void TF_F08_FN(k, dup_fn)(void) __attribute__((weak));                              \
    extern void TF_F08_FN(k, null_delete_fn)(void) __attribute__((weak));
TF_F08_DECL(comm)
TF_F08_DECL(type)
TF_F08_DECL(win)
static inline int tf_is(void *f, void (*a)(void), void (*b)(void), void (*c)(void))
{
    return f == (void *)a || f == (void *)b || (c && f == (void *)c);
}
#define TF_COPYFN(k, K, f)                                                                     \
    (tf_is((void *)(f), mpi_##k##_null_copy_fn_, mpi_null_copy_fn_, TF_F08_FN(k, null_copy_fn)) \
         ? NULL                                                                                \
     : tf_is((void *)(f), mpi_##k##_dup_fn_, mpi_dup_fn_, TF_F08_FN(k, dup_fn))                \
         ? (void *)1                                                                           \
         : (void *)tf_copy_##K)
#define TF_DELETEFN(k, K, f)                                                                   \
    (tf_is((void *)(f), mpi_##k##_null_delete_fn_, mpi_null_delete_fn_, TF_F08_FN(k, null_delete_fn)) \
         ? NULL                                                                                \
         : (void *)tf_delete_##K)

/* MPI-1 attribute callbacks (MPI_Keyval_create): every argument an INTEGER, the attribute
   values included (MPI_Attr_put stores the INTEGER as the pointer's value). The same record
   as above; MPI_NULL_COPY_FN, MPI_DUP_FN and MPI_NULL_DELETE_FN are markers as above. */
typedef void (*tf_copy1_f)(MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *);
typedef void (*tf_delete1_f)(MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *);

static int tf_copy1(MPI_Comm old, int key, void *extra, void *in, void *out, int *flag)
{
    struct tf_kv *kv = extra;
    MPI_Fint fold = MPI_Comm_c2f(old), fkey = key, fflag = 0, ierr = 0;
    MPI_Fint fin = (MPI_Fint)(MPI_Aint)in, fout = 0, fx = (MPI_Fint)kv->extra;
    ((tf_copy1_f)(void *)kv->copy)(&fold, &fkey, &fx, &fin, &fout, &fflag, &ierr);
    *(void **)out = (void *)(MPI_Aint)fout;
    *flag = fflag != 0;
    return ierr;
}

static int tf_delete1(MPI_Comm h, int key, void *val, void *extra)
{
    struct tf_kv *kv = extra;
    MPI_Fint fh = MPI_Comm_c2f(h), fkey = key, ierr = 0;
    MPI_Fint fv = (MPI_Fint)(MPI_Aint)val, fx = (MPI_Fint)kv->extra;
    ((tf_delete1_f)(void *)kv->del)(&fh, &fkey, &fv, &fx, &ierr);
    return ierr;
}

#define TF_COPYFN1(f)                                                                          \
    ((void *)(f) == (void *)mpi_null_copy_fn_ ? NULL                                           \
     : (void *)(f) == (void *)mpi_dup_fn_     ? (void *)1                                      \
                                              : (void *)tf_copy1)
#define TF_DELETEFN1(f) ((void *)(f) == (void *)mpi_null_delete_fn_ ? NULL : (void *)tf_delete1)

/* Generalized requests with callbacks written in Fortran (MPI_Grequest_start): the C request
   gets trampolines and, as its extra_state, a record of the three procedures and the address
   of the program's extra_state variable, freed after the free callback ran. The callbacks
   get that variable itself, INTEGER(KIND=MPI_ADDRESS_KIND), by reference, as under MPICH
   (its greqf test checks that a free callback's change to it is seen by the program); the
   status as INTEGER(MPI_STATUS_SIZE) (the same memory) and `complete` as a LOGICAL. */
typedef void (*tf_gquery_f)(MPI_Aint *, MPI_Fint *, MPI_Fint *);
typedef void (*tf_gfree_f)(MPI_Aint *, MPI_Fint *);
typedef void (*tf_gcancel_f)(MPI_Aint *, MPI_Fint *, MPI_Fint *);
struct tf_greq {
    tf_gquery_f query;
    tf_gfree_f free;
    tf_gcancel_f cancel;
    MPI_Aint *extra;
};

static void *tf_greq_new(void *query, void *freefn, void *cancel, MPI_Aint *extra)
{
    struct tf_greq *g = malloc(sizeof *g);
    if (!g)
        MPI_Abort(MPI_COMM_WORLD, MPI_ERR_NO_MEM);
    g->query = (tf_gquery_f)query;
    g->free = (tf_gfree_f)freefn;
    g->cancel = (tf_gcancel_f)cancel;
    g->extra = extra;
    return g;
}

static int tf_greq_query(void *extra, MPI_Status *status)
{
    struct tf_greq *g = extra;
    MPI_Fint ierr = 0;
    g->query(g->extra, (MPI_Fint *)status, &ierr);
    return ierr;
}

static int tf_greq_free(void *extra)
{
    struct tf_greq *g = extra;
    MPI_Fint ierr = 0;
    g->free(g->extra, &ierr);
    free(g);
    return ierr;
}

static int tf_greq_cancel(void *extra, int complete)
{
    struct tf_greq *g = extra;
    MPI_Fint ierr = 0, fc = complete != 0;
    g->cancel(g->extra, &fc, &ierr);
    return ierr;
}

/* User data representations with functions written in Fortran (MPI_Register_datarep; issue
   19): the C registration gets trampolines and, as its extra_state, a record of the three
   procedures and the program's extra_state (never freed: registrations last as long as the
   program). The procedures get the buffers' addresses (an array argument in mpif.h and `use
   mpi`, TYPE(C_PTR), VALUE in mpi_f08: the same address either way), the datatype as its
   INTEGER handle, count, position (INTEGER(KIND=MPI_OFFSET_KIND)) and extra_state by
   reference. MPI_CONVERSION_FN_NULL is a marker (mpif.h) or a module procedure (mpi_f08,
   weak reference), passed on as C's null. */
typedef void (*tf_dconv_f)(void *, MPI_Fint *, MPI_Fint *, void *, MPI_Offset *, MPI_Aint *, MPI_Fint *);
typedef void (*tf_dconv_c_f)(void *, MPI_Fint *, MPI_Count *, void *, MPI_Offset *, MPI_Aint *, MPI_Fint *);
typedef void (*tf_dextent_f)(MPI_Fint *, MPI_Aint *, MPI_Aint *, MPI_Fint *);
struct tf_dr {
    tf_dconv_f read, write;
    tf_dextent_f extent;
    MPI_Aint extra;
};
TF_HIDDEN void mpi_conversion_fn_null_(void) {}
extern void __mpi_f08_MOD_mpi_conversion_fn_null(void) __attribute__((weak));
#define TF_DCONV(f, which)                                                                     \
    (tf_is((void *)(f), mpi_conversion_fn_null_, mpi_conversion_fn_null_,                      \
           __mpi_f08_MOD_mpi_conversion_fn_null)                                               \
         ? NULL                                                                                \
         : (void *)tf_dr_##which)

static void *tf_dr_new(void *r, void *w, void *e, MPI_Aint extra)
{
    struct tf_dr *d = malloc(sizeof *d);
    if (!d)
        MPI_Abort(MPI_COMM_WORLD, MPI_ERR_NO_MEM);
    d->read = (tf_dconv_f)r;
    d->write = (tf_dconv_f)w;
    d->extent = (tf_dextent_f)e;
    d->extra = extra;
    return d;
}

static int tf_dr_call(tf_dconv_f f, void *userbuf, MPI_Datatype dt, int count, void *filebuf, MPI_Offset pos,
                      struct tf_dr *d)
{
    MPI_Fint fdt = MPI_Type_c2f(dt), fcount = count, ierr = 0;
    MPI_Offset fpos = pos;
    MPI_Aint fx = d->extra;
    f(userbuf, &fdt, &fcount, filebuf, &fpos, &fx, &ierr);
    return ierr;
}

static int tf_dr_read(void *userbuf, MPI_Datatype dt, int count, void *filebuf, MPI_Offset pos, void *extra)
{
    return tf_dr_call(((struct tf_dr *)extra)->read, userbuf, dt, count, filebuf, pos, extra);
}

static int tf_dr_write(void *userbuf, MPI_Datatype dt, int count, void *filebuf, MPI_Offset pos, void *extra)
{
    return tf_dr_call(((struct tf_dr *)extra)->write, userbuf, dt, count, filebuf, pos, extra);
}

/* MPI_Register_datarep_c (session io5): the same record, the procedures having the large-count
   interface (MPI_Datarep_conversion_function_c: count is INTEGER(KIND=MPI_COUNT_KIND));
   MPI_CONVERSION_FN_NULL_C is a marker (mpif.h) or a module procedure (mpi_f08). */
TF_HIDDEN void mpi_conversion_fn_null_c_(void) {}
extern void __mpi_f08_MOD_mpi_conversion_fn_null_c(void) __attribute__((weak));
#define TF_DCONV_C(f, which)                                                                   \
    (tf_is((void *)(f), mpi_conversion_fn_null_c_, mpi_conversion_fn_null_,                    \
           __mpi_f08_MOD_mpi_conversion_fn_null_c)                                             \
         ? NULL                                                                                \
         : (void *)tf_dr_##which)

static int tf_dr_call_c(tf_dconv_f f, void *userbuf, MPI_Datatype dt, MPI_Count count, void *filebuf,
                        MPI_Offset pos, struct tf_dr *d)
{
    MPI_Fint fdt = MPI_Type_c2f(dt), ierr = 0;
    MPI_Count fcount = count;
    MPI_Offset fpos = pos;
    MPI_Aint fx = d->extra;
    ((tf_dconv_c_f)f)(userbuf, &fdt, &fcount, filebuf, &fpos, &fx, &ierr);
    return ierr;
}

static int tf_dr_read_c(void *userbuf, MPI_Datatype dt, MPI_Count count, void *filebuf, MPI_Offset pos, void *extra)
{
    return tf_dr_call_c(((struct tf_dr *)extra)->read, userbuf, dt, count, filebuf, pos, extra);
}

static int tf_dr_write_c(void *userbuf, MPI_Datatype dt, MPI_Count count, void *filebuf, MPI_Offset pos, void *extra)
{
    return tf_dr_call_c(((struct tf_dr *)extra)->write, userbuf, dt, count, filebuf, pos, extra);
}

static int tf_dr_extent(MPI_Datatype dt, MPI_Aint *extent, void *extra)
{
    struct tf_dr *d = extra;
    MPI_Fint fdt = MPI_Type_c2f(dt), ierr = 0;
    MPI_Aint e = 0, fx = d->extra;
    d->extent(&fdt, &e, &fx, &ierr);
    *extent = e;
    return ierr;
}

/* The library's side of attributes set from Fortran (libtoucanmpi/src/abi/attr.rs): an
   attribute set from Fortran holds an integer, which C sees through a pointer to it; callbacks
   of keyvals created from Fortran see values as Fortran does. */
void toucan_f_keyval_made(int key);
void toucan_f_attr_made(MPI_Aint h, int key);
MPI_Aint toucan_f_attr_view(MPI_Aint h, int key, MPI_Aint v);

/* An attribute value read back: predefined keys hold a pointer to an int (C); Fortran sees
   the int. User values come through toucan_f_attr_view first (Fortran's own integers, or
   the pointer C stored). */
static MPI_Aint tf_attr_value(int key, void *v)
{
    switch (key) {
    case MPI_TAG_UB:
    case MPI_IO:
    case MPI_HOST:
    case MPI_WTIME_IS_GLOBAL:
    case MPI_APPNUM:
    case MPI_LASTUSEDCODE:
    case MPI_UNIVERSE_SIZE:
    /* issue 18: window attributes (MPI_WIN_BASE is the address itself: default) */
    case MPI_WIN_DISP_UNIT:
    case MPI_WIN_CREATE_FLAVOR:
    case MPI_WIN_MODEL:
        return v ? *(int *)v : 0;
    case MPI_WIN_SIZE:
        return v ? *(MPI_Aint *)v : 0;
    default:
        return (MPI_Aint)v;
    }
}

"""


# The MPI-1 routines that Fortran calls with INTEGER addresses (MPI-3 removed them from C;
# mpif.h and `use mpi` still have them). Each is built on its MPI-2 successor, once with the
# MPI_ names and once (P = P) with the PMPI_ ones, as MPICH's mpif.h binding does: an
# address or extent that does not fit an INTEGER gives MPI_ERR_OTHER in ierror (MPICH's
# choice; there is no handle to raise it on); INTEGER displacements are widened.
MPI1_ROUTINES = ["address", "type_extent", "type_lb", "type_ub", "type_hvector", "type_hindexed",
                 "type_struct"]
C_MPI1 = r"""
static int tf_fint_out(MPI_Aint v, MPI_Fint *out)
{
    *out = (MPI_Fint)v;
    return (MPI_Aint)*out == v ? MPI_SUCCESS : MPI_ERR_OTHER;
}

static MPI_Aint *tf_aints(const MPI_Fint *v, int n, MPI_Aint *small)
{
    MPI_Aint *a = n <= TF_SMALL ? small : tf_alloc(n, sizeof(MPI_Aint));
    for (int i = 0; i < n; i++)
        a[i] = v[i];
    return a;
}

#define TF_MPI1(p, P)                                                                          \
    void p##mpi_address_(void *location, MPI_Fint *address, MPI_Fint *ierr)                   \
    {                                                                                          \
        MPI_Aint a = 0;                                                                        \
        int rc = P##MPI_Get_address(tf_buf(location), &a);                                     \
        if (rc == MPI_SUCCESS)                                                                 \
            rc = tf_fint_out(a, address);                                                      \
        *ierr = rc;                                                                            \
    }                                                                                          \
    void p##mpi_type_extent_(MPI_Fint *type, MPI_Fint *extent, MPI_Fint *ierr)                \
    {                                                                                          \
        MPI_Aint lb = 0, ext = 0;                                                              \
        int rc = P##MPI_Type_get_extent(MPI_Type_f2c(*type), &lb, &ext);                       \
        *ierr = rc == MPI_SUCCESS ? tf_fint_out(ext, extent) : rc;                             \
    }                                                                                          \
    void p##mpi_type_lb_(MPI_Fint *type, MPI_Fint *displacement, MPI_Fint *ierr)              \
    {                                                                                          \
        MPI_Aint lb = 0, ext = 0;                                                              \
        int rc = P##MPI_Type_get_extent(MPI_Type_f2c(*type), &lb, &ext);                       \
        *ierr = rc == MPI_SUCCESS ? tf_fint_out(lb, displacement) : rc;                        \
    }                                                                                          \
    void p##mpi_type_ub_(MPI_Fint *type, MPI_Fint *displacement, MPI_Fint *ierr)              \
    {                                                                                          \
        MPI_Aint lb = 0, ext = 0;                                                              \
        int rc = P##MPI_Type_get_extent(MPI_Type_f2c(*type), &lb, &ext);                       \
        *ierr = rc == MPI_SUCCESS ? tf_fint_out(lb + ext, displacement) : rc;                  \
    }                                                                                          \
    void p##mpi_type_hvector_(MPI_Fint *count, MPI_Fint *blocklength, MPI_Fint *stride,       \
                              MPI_Fint *oldtype, MPI_Fint *newtype, MPI_Fint *ierr)            \
    {                                                                                          \
        MPI_Datatype t = MPI_DATATYPE_NULL;                                                    \
        *ierr = P##MPI_Type_create_hvector(*count, *blocklength, (MPI_Aint)*stride,            \
                                           MPI_Type_f2c(*oldtype), &t);                        \
        *newtype = MPI_Type_c2f(t);                                                            \
    }                                                                                          \
    void p##mpi_type_hindexed_(MPI_Fint *count, MPI_Fint *blocklengths, MPI_Fint *displs,     \
                               MPI_Fint *oldtype, MPI_Fint *newtype, MPI_Fint *ierr)           \
    {                                                                                          \
        MPI_Datatype t = MPI_DATATYPE_NULL;                                                    \
        MPI_Aint small[TF_SMALL] = {0}, *d = tf_aints(displs, *count, small);                        \
        *ierr = P##MPI_Type_create_hindexed(*count, (int *)blocklengths, d,                    \
                                            MPI_Type_f2c(*oldtype), &t);                       \
        *newtype = MPI_Type_c2f(t);                                                            \
        if (d != small)                                                                        \
            free(d);                                                                           \
    }                                                                                          \
    void p##mpi_type_struct_(MPI_Fint *count, MPI_Fint *blocklengths, MPI_Fint *displs,       \
                             MPI_Fint *types, MPI_Fint *newtype, MPI_Fint *ierr)               \
    {                                                                                          \
        int n = *count > 0 ? *count : 0;                                                       \
        MPI_Datatype t = MPI_DATATYPE_NULL, st[TF_SMALL] = {0};                                    \
        MPI_Datatype *h = n <= TF_SMALL ? st : tf_alloc(n, sizeof(MPI_Datatype));              \
        for (int i = 0; i < n; i++)                                                            \
            h[i] = MPI_Type_f2c(types[i]);                                                     \
        MPI_Aint small[TF_SMALL] = {0}, *d = tf_aints(displs, n, small);                        \
        *ierr = P##MPI_Type_create_struct(*count, (int *)blocklengths, d, h, &t);              \
        *newtype = MPI_Type_c2f(t);                                                            \
        if (d != small)                                                                        \
            free(d);                                                                           \
        if (h != st)                                                                           \
            free(h);                                                                           \
    }
TF_MPI1(, )
TF_MPI1(p, P)
"""


# mpi_f08 buffers that are not contiguous (array sections, strided pointers): the module
# passes the TS 29113 descriptor here. Blocking routines get a contiguous copy of the section
# (copied back for outputs); routines that keep the buffer get MPI_ERR_BUFFER through the
# communicator's error handler, with a message saying why.
C_F08 = r"""
#include <ISO_Fortran_binding.h>
#include <stdio.h>

/* Visits the elements of a descriptor in Fortran order: copies each to or from `flat`. */
static void tf_section(const CFI_cdesc_t *d, char *flat, int in)
{
    size_t n = 1, len = d->elem_len;
    for (int k = 0; k < d->rank; k++)
        n *= (size_t)d->dim[k].extent;
    CFI_index_t idx[CFI_MAX_RANK] = {0};
    for (size_t e = 0; e < n; e++) {
        char *p = d->base_addr;
        for (int k = 0; k < d->rank; k++)
            p += idx[k] * d->dim[k].sm;
        if (in)
            memcpy(flat + e * len, p, len);
        else
            memcpy(p, flat + e * len, len);
        for (int k = 0; k < d->rank && ++idx[k] == d->dim[k].extent; k++)
            idx[k] = 0;
    }
}

/* MPI_SIZEOF: the byte size of the variable's elements. */
int toucan_f_elem_len(CFI_cdesc_t *d)
{
    return (int)d->elem_len;
}

void toucan_f08_copy_in(CFI_cdesc_t *d, void **tmp)
{
    size_t n = 1;
    for (int k = 0; k < d->rank; k++)
        n *= (size_t)d->dim[k].extent;
    *tmp = malloc(n * d->elem_len + 1);
    if (!*tmp)
        MPI_Abort(MPI_COMM_WORLD, MPI_ERR_NO_MEM);
    tf_section(d, *tmp, 1);
}

void toucan_f08_copy_out(CFI_cdesc_t *d, void **tmp, int back)
{
    if (back)
        tf_section(d, *tmp, 0);
    free(*tmp);
    *tmp = NULL;
}

/* A datatype over a section for a routine that keeps its buffer: `count` elements of `dtype`,
   one per element of the section (dtype as wide as an element, without holes), described by
   nested hvectors of the descriptor's byte strides; the call then gets the section's base
   address and count 1. MPI_ERR_BUFFER when the section is not laid out that way. */
int toucan_f08_section(CFI_cdesc_t *d, MPI_Count *count, MPI_Fint *dtype, MPI_Fint *newtype, void **base)
{
    MPI_Datatype dt = MPI_Type_f2c(*dtype), t = dt, t2;
    MPI_Aint lb = 0, ext = 0, n = 1;
    int size = 0;
    for (int k = 0; k < d->rank; k++)
        n *= d->dim[k].extent;
    if (n != *count || MPI_Type_size(dt, &size) != MPI_SUCCESS ||
        MPI_Type_get_extent(dt, &lb, &ext) != MPI_SUCCESS || lb != 0 || ext != size ||
        (size_t)size != d->elem_len)
        return MPI_ERR_BUFFER;
    for (int k = 0; k < d->rank; k++) {
        if (MPI_Type_create_hvector((int)d->dim[k].extent, 1, d->dim[k].sm, t, &t2) != MPI_SUCCESS)
            return MPI_ERR_BUFFER;
        if (t != dt)
            MPI_Type_free(&t);
        t = t2;
    }
    MPI_Type_commit(&t);
    *newtype = MPI_Type_c2f(t);
    *base = d->base_addr;
    return MPI_SUCCESS;
}

void toucan_f08_type_free(MPI_Fint *dtype)
{
    MPI_Datatype t = MPI_Type_f2c(*dtype);
    MPI_Type_free(&t);
}

int toucan_f08_noncontig(MPI_Fint comm, const char *name)
{
    fprintf(stderr, "toucan: %s (mpi_f08): the buffer is not contiguous, and a routine that keeps "
                    "its buffer after it returns cannot work on a copy (MPI_SUBARRAYS_SUPPORTED is "
                    ".false.): pass a contiguous array\n", name);
    MPI_Comm_call_errhandler(MPI_Comm_f2c(comm), MPI_ERR_BUFFER);
    return MPI_ERR_BUFFER;
}
"""


def fixed_lines(decl):
    """Fortran lines valid in fixed form (columns 7..72) and free form."""
    assert len(decl) <= 66, decl
    return "      " + decl


def gen_mpif(consts, sizes, funcs_double):
    out = [
        "! mpif.h -- Fortran (mpif.h) interface of Toucan-MPI.",
        "! Generated by fortran/gen.py from headers/mpi.h: do not edit.",
        "! Valid in fixed and free source form; handles are INTEGERs, the values of",
        "! the C interface's handles (MPI 5.0 standard ABI).",
    ]
    seen = set()

    def param(name, value, typ="INTEGER"):
        key = name.upper()
        if key in seen:
            return
        seen.add(key)
        if name in OFFSET_CONSTS:
            typ = "INTEGER*8"
        out.append(fixed_lines(f"{typ} {name}"))
        out.append(fixed_lines(f"PARAMETER ({name}={value})"))

    for n, v in FORTRAN_ONLY:
        param(n, v)
    for n, v in consts:
        param(n, v)
    for n, v in sizes.items():
        if n.startswith("MPI_MAX_"):
            v -= 1  # the C value counts the terminating NUL
        param(n, v)
    # Fortran-only LOGICAL constants (MPI 4.1, 19.1.1): non-contiguous subarrays are not
    # supported as buffers (mpi_f08 refuses them), and ASYNCHRONOUS does not protect them.
    for n in ("MPI_SUBARRAYS_SUPPORTED", "MPI_ASYNC_PROTECTS_NONBLOCKING"):
        param(n, ".FALSE.", "LOGICAL")
    for fname, block, decl, _size in SENTINELS:
        seen.add(fname)
        out.append(fixed_lines(decl))
        out.append(fixed_lines(f"COMMON /{block}/ {fname}"))
    for f in ("COMM_NULL_COPY_FN", "COMM_DUP_FN", "COMM_NULL_DELETE_FN", "TYPE_NULL_COPY_FN",
              "TYPE_DUP_FN", "TYPE_NULL_DELETE_FN", "WIN_NULL_COPY_FN", "WIN_DUP_FN",
              "WIN_NULL_DELETE_FN", "NULL_COPY_FN", "DUP_FN", "NULL_DELETE_FN", "CONVERSION_FN_NULL",
              "CONVERSION_FN_NULL_C"):
        out.append(fixed_lines(f"EXTERNAL MPI_{f}"))
    for f in funcs_double:
        for pre in ("MPI", "PMPI"):
            out.append(fixed_lines(f"DOUBLE PRECISION {pre}_{f}"))
            out.append(fixed_lines(f"EXTERNAL {pre}_{f}"))
    return "\n".join(out) + "\n"


F08_ABSTRACT = """  abstract interface
    subroutine MPI_User_function(invec, inoutvec, len, datatype)
      import
      type(c_ptr), value :: invec, inoutvec
      integer :: len
      type(MPI_Datatype) :: datatype
    end subroutine
    subroutine MPI_Comm_errhandler_function(comm, error_code)
      import
      type(MPI_Comm) :: comm
      integer :: error_code
    end subroutine
    subroutine MPI_Win_errhandler_function(win, error_code)
      import
      type(MPI_Win) :: win
      integer :: error_code
    end subroutine
    subroutine MPI_File_errhandler_function(file, error_code)
      import
      type(MPI_File) :: file
      integer :: error_code
    end subroutine
""" + "".join(f"""    subroutine MPI_{K}_copy_attr_function(old{k}, {k}_keyval, extra_state, attribute_val_in, &
        attribute_val_out, flag, ierror)
      import
      type(MPI_{T}) :: old{k}
      integer :: {k}_keyval, ierror
      integer(kind=MPI_ADDRESS_KIND) :: extra_state, attribute_val_in, attribute_val_out
      logical :: flag
    end subroutine
    subroutine MPI_{K}_delete_attr_function({k}, {k}_keyval, attribute_val, extra_state, ierror)
      import
      type(MPI_{T}) :: {k}
      integer :: {k}_keyval, ierror
      integer(kind=MPI_ADDRESS_KIND) :: attribute_val, extra_state
    end subroutine
""" for K, k, T in (("Comm", "comm", "Comm"), ("Type", "type", "Datatype"), ("Win", "win", "Win"))) + """    subroutine MPI_Grequest_query_function(extra_state, status, ierror)
      import
      integer(kind=MPI_ADDRESS_KIND) :: extra_state
      type(MPI_Status) :: status
      integer :: ierror
    end subroutine
    subroutine MPI_Grequest_free_function(extra_state, ierror)
      import
      integer(kind=MPI_ADDRESS_KIND) :: extra_state
      integer :: ierror
    end subroutine
    subroutine MPI_Grequest_cancel_function(extra_state, complete, ierror)
      import
      integer(kind=MPI_ADDRESS_KIND) :: extra_state
      logical :: complete
      integer :: ierror
    end subroutine
    subroutine MPI_Datarep_conversion_function(userbuf, datatype, count, filebuf, position, &
        extra_state, ierror)
      import
      type(c_ptr), value :: userbuf, filebuf
      type(MPI_Datatype) :: datatype
      integer :: count, ierror
      integer(kind=MPI_OFFSET_KIND) :: position
      integer(kind=MPI_ADDRESS_KIND) :: extra_state
    end subroutine
    subroutine MPI_Datarep_conversion_function_c(userbuf, datatype, count, filebuf, position, &
        extra_state, ierror)
      import
      type(c_ptr), value :: userbuf, filebuf
      type(MPI_Datatype) :: datatype
      integer(kind=MPI_COUNT_KIND) :: count
      integer(kind=MPI_OFFSET_KIND) :: position
      integer(kind=MPI_ADDRESS_KIND) :: extra_state
      integer :: ierror
    end subroutine
    subroutine MPI_Datarep_extent_function(datatype, extent, extra_state, ierror)
      import
      type(MPI_Datatype) :: datatype
      integer(kind=MPI_ADDRESS_KIND) :: extent, extra_state
      integer :: ierror
    end subroutine
  end interface
"""

# The predefined attribute callbacks of mpi_f08: real procedures (they do what their names
# say when called), which the C side also recognises by address (TF_COPYFN in toucanfort.c,
# through weak references to these module procedures).
F08_PREDEF_FNS = "".join(f"""  subroutine MPI_{K}_NULL_COPY_FN(old{k}, {k}_keyval, extra_state, attribute_val_in, &
      attribute_val_out, flag, ierror)
    type(MPI_{T}) :: old{k}
    integer :: {k}_keyval, ierror
    integer(kind=MPI_ADDRESS_KIND) :: extra_state, attribute_val_in, attribute_val_out
    logical :: flag
    flag = .false.
    ierror = MPI_SUCCESS
  end subroutine
  subroutine MPI_{K}_DUP_FN(old{k}, {k}_keyval, extra_state, attribute_val_in, &
      attribute_val_out, flag, ierror)
    type(MPI_{T}) :: old{k}
    integer :: {k}_keyval, ierror
    integer(kind=MPI_ADDRESS_KIND) :: extra_state, attribute_val_in, attribute_val_out
    logical :: flag
    attribute_val_out = attribute_val_in
    flag = .true.
    ierror = MPI_SUCCESS
  end subroutine
  subroutine MPI_{K}_NULL_DELETE_FN({k}, {k}_keyval, attribute_val, extra_state, ierror)
    type(MPI_{T}) :: {k}
    integer :: {k}_keyval, ierror
    integer(kind=MPI_ADDRESS_KIND) :: attribute_val, extra_state
    ierror = MPI_SUCCESS
  end subroutine
""" for K, k, T in (("COMM", "comm", "Comm"), ("TYPE", "type", "Datatype"), ("WIN", "win", "Win"))) + """  subroutine MPI_CONVERSION_FN_NULL(userbuf, datatype, count, filebuf, position, extra_state, &
      ierror)
    type(c_ptr), value :: userbuf, filebuf
    type(MPI_Datatype) :: datatype
    integer :: count, ierror
    integer(kind=MPI_OFFSET_KIND) :: position
    integer(kind=MPI_ADDRESS_KIND) :: extra_state
    ierror = MPI_SUCCESS
  end subroutine
  subroutine MPI_CONVERSION_FN_NULL_C(userbuf, datatype, count, filebuf, position, extra_state, &
      ierror)
    type(c_ptr), value :: userbuf, filebuf
    type(MPI_Datatype) :: datatype
    integer(kind=MPI_COUNT_KIND) :: count
    integer :: ierror
    integer(kind=MPI_OFFSET_KIND) :: position
    integer(kind=MPI_ADDRESS_KIND) :: extra_state
    ierror = MPI_SUCCESS
  end subroutine
"""
# MPI_SIZEOF (mpi and mpi_f08 only): the element size of any variable, from its descriptor.
F08_SIZEOF = """  subroutine NAME(x, size, ierror)
    type(*), dimension(..) :: x
    integer, intent(out) :: size
    integer, intent(out)OPT :: ierror
    interface
      function toucan_f_elem_len(x) bind(C, name='toucan_f_elem_len') result(n)
        import :: c_int
        type(*), dimension(..) :: x
        integer(c_int) :: n
      end function
    end interface
    size = toucan_f_elem_len(x)
    SETERR
  end subroutine
"""

# mpi_f08's non-contiguous buffers (TS 29113 descriptors, C_F08 in toucanfort.c).
F08_COPY_IFACE = """  interface
    subroutine toucan_f08_copy_in(buf, tmp) bind(C, name='toucan_f08_copy_in')
      import
      type(*), dimension(..) :: buf
      type(c_ptr) :: tmp
    end subroutine
    subroutine toucan_f08_copy_out(buf, tmp, back) bind(C, name='toucan_f08_copy_out')
      import
      type(*), dimension(..) :: buf
      type(c_ptr) :: tmp
      integer(c_int), value :: back
    end subroutine
    function toucan_f08_section(buf, count, dtype, newtype, base) bind(C, name='toucan_f08_section') &
        result(rc)
      import
      type(*), dimension(..) :: buf
      integer(kind=MPI_COUNT_KIND) :: count
      integer :: dtype, newtype
      type(c_ptr) :: base
      integer(c_int) :: rc
    end function
    subroutine toucan_f08_type_free(dtype) bind(C, name='toucan_f08_type_free')
      import
      integer :: dtype
    end subroutine
    function toucan_f08_noncontig(comm, name) bind(C, name='toucan_f08_noncontig') result(rc)
      import
      integer(c_int), value :: comm
      character(kind=c_char) :: name(*)
      integer(c_int) :: rc
    end function
  end interface
"""
F08_FN_IFACE = {"MPI_Op_create": "MPI_User_function",
                "MPI_Comm_create_errhandler": "MPI_Comm_errhandler_function",
                "MPI_Win_create_errhandler": "MPI_Win_errhandler_function",  # issue 18
                "MPI_File_create_errhandler": "MPI_File_errhandler_function"}  # issue 17 (I/O)


def f08_decls(name, p):
    """(module procedure dummy declaration, bind(C) interface dummy declaration, actual
    argument text, extra trailing hidden-length actual or None) of parameter p; None when
    the parameter does not exist in Fortran."""
    k, n = p.kind, p.name
    intent_in = ", intent(in)" if p.const else ""
    if k in ("null", "drop"):
        return None
    if k == "int_in":
        t = "logical" if n in LOGICAL_NAMES else "integer"
        return (f"{t}, intent(in) :: {n}", f"{t} :: {n}", n, None)
    if k == "wide_in":
        t = f"integer(kind={KIND_OF[p.base]})"
        return (f"{t}, intent(in) :: {n}", f"{t} :: {n}", n, None)
    if k in ("pass", "logical_out", "logical_array_out", "index") or k.startswith("indices"):
        if p.base == "MPI_Status":
            return (f"type(MPI_Status), intent(in) :: {n}", f"type(MPI_Status) :: {n}", n, None)
        if n in LOGICAL_NAMES:
            t = "logical"
        elif p.base in KIND_OF:
            t = f"integer(kind={KIND_OF[p.base]})"
        else:
            t = "integer"
        inner = re.findall(r"\[(\d+)\]", p.dims)
        dim = ""
        if p.dims:
            dim = "(" + "".join(d + "," for d in inner) + "*)"
        return (f"{t}{intent_in} :: {n}{dim}", f"{t} :: {n}{dim}", n, None)
    if k in ("handle_in", "handle_inout"):
        t = f"type({p.base})"
        it = ", intent(in)" if k == "handle_in" else ", intent(inout)"
        return (f"{t}{it} :: {n}", f"{t} :: {n}", n, None)
    if k.startswith("handles"):
        t = f"type({p.base})"
        return (f"{t}{intent_in} :: {n}(*)", f"{t} :: {n}(*)", n, None)
    if k == "status":
        return (f"type(MPI_Status) :: {n}", f"type(MPI_Status) :: {n}", n, None)
    if k == "statuses":
        return (f"type(MPI_Status) :: {n}(*)", f"type(MPI_Status) :: {n}(*)", n, None)
    if k == "str_in" or k.startswith("strout"):
        it = ", intent(in)" if k == "str_in" else ""
        return (f"character(len=*){it} :: {n}", f"character(kind=c_char) :: {n}(*)", n,
                f"len({n}, kind=c_size_t)")
    if k == "choice":
        asy = ", asynchronous" if keeps_buffer(name) else ""
        return (f"type(*), dimension(..){intent_in}, target{asy} :: {n}",
                f"type(c_ptr), value :: {n}", f"c_loc({n})", None)
    if k == "ignore_ptr":
        return (f"type(c_ptr) :: {n}", f"type(c_ptr) :: {n}", n, None)
    if k == "cptr_out":
        return (f"type(c_ptr), intent(out) :: {n}", f"type(c_ptr) :: {n}", n, None)
    if k == "fn":
        return (f"procedure({F08_FN_IFACE[name]}) :: {n}", f"type(c_funptr), value :: {n}",
                f"c_funloc({n})", None)
    if k in ("copyfn", "deletefn", "gquery", "gfree", "gcancel"):
        if k.startswith("g"):
            iface = {"gquery": "MPI_Grequest_query_function", "gfree": "MPI_Grequest_free_function",
                     "gcancel": "MPI_Grequest_cancel_function"}[k]
        else:
            iface = f"MPI_{name.split('_')[1]}_{'copy' if k == 'copyfn' else 'delete'}_attr_function"
        return (f"procedure({iface}) :: {n}", f"type(c_funptr), value :: {n}", f"c_funloc({n})", None)
    if k in ("dread", "dwrite", "dextent", "dread_c", "dwrite_c"):
        iface = "MPI_Datarep_extent_function" if k == "dextent" else "MPI_Datarep_conversion_function"
        iface += "_c" if k.endswith("_c") else ""
        return (f"procedure({iface}) :: {n}", f"type(c_funptr), value :: {n}", f"c_funloc({n})", None)
    if k in ("kvextra", "gextra", "dextra"):
        t = "integer(kind=MPI_ADDRESS_KIND)"
        return (f"{t}, intent(in) :: {n}", f"{t} :: {n}", n, None)
    if k in ("attr_in",) or k.startswith("attr_out("):
        t = "integer(kind=MPI_ADDRESS_KIND)"
        return (f"{t} :: {n}", f"{t} :: {n}", n, None)
    raise ValueError(f"{name}: no mpi_f08 rule for kind {k}")


def f08_key(name, p):
    """What tells a dummy argument apart in a generic (type, kind and rank), with the kinds as
    gfortran has them: MPI_ADDRESS_KIND, MPI_COUNT_KIND and MPI_OFFSET_KIND are all 8."""
    d = f08_decls(name, p)
    if d is None:
        return None
    typ, _, var = d[0].partition(" :: ")
    typ = typ.split(",")[0]
    typ = re.sub(r"kind=MPI_(ADDRESS|COUNT|OFFSET)_KIND", "kind=8", typ)
    rank = "..." if "dimension(..)" in d[0] else str(var.count(",") + 1) if "(" in var else "0"
    return typ, rank


def indistinguishable(base, bparams, params):
    """None when mpi_f08's generic MPI_X can hold both MPI_X and its large-count form MPI_X_c
    (some argument differs in type, kind or rank, e.g. an INTEGER count that becomes
    INTEGER(KIND=MPI_COUNT_KIND)); else the reason it cannot."""
    if any(p.kind == "fn" for p in params):
        return ("its user function has the large-count interface (MPI_User_function_c): a "
                "Fortran generic cannot choose a specific by a procedure argument's interface")
    a = [k for k in (f08_key(base, p) for p in bparams) if k]
    b = [k for k in (f08_key(base, p) for p in params) if k]
    if a == b:
        return ("indistinguishable from " + base + " in mpi_f08's generic: its MPI_Aint "
                "arguments become MPI_Count ones, and MPI_ADDRESS_KIND = MPI_COUNT_KIND here")
    return None


def section_args(decls):
    """(buffer, count, datatype, whether the count is an MPI_Count) names when the routine has
    one choice buffer, followed by its count and its datatype handle; else None."""
    names = [p for p, _ in decls]
    bufs = [i for i, p in enumerate(names) if p.kind == "choice"]
    if len(bufs) != 1 or bufs[0] + 2 >= len(names):
        return None
    b, c, t = names[bufs[0]:bufs[0] + 3]
    if c.kind not in ("int_in", "wide_in") or t.kind != "handle_in" or t.base != "MPI_Datatype":
        return None
    return b.name, c.name, t.name, c.kind == "wide_in"


def keeps_buffer(name):
    """Whether the routine keeps using its buffers after it returns (nonblocking, persistent,
    MPI_Buffer_attach): a non-contiguous section cannot be copied in and out around it."""
    return bool(re.match(r"MPI_I[a-z]", name)) or name.endswith("_init") or name == "MPI_Buffer_attach"


def wrap(line, indent):
    """A free-form line cut at commas with & continuations (lines of at most 100 columns)."""
    if len(line) <= 100:
        return [line]
    out, cur = [], ""
    for part in re.split(r"(?<=,) ", line):
        if cur and len(cur) + len(part) > 96:
            out.append(cur + " &")
            cur = " " * (indent + 4) + part
        else:
            cur = cur + (" " if cur and not cur.endswith(" ") else "") + part if cur else part
    out.append(cur)
    return out


def gen_f08(entries, consts, sizes):
    """entries: (generic name MPI_X, C routine MPI_X or its large-count form MPI_X_c, return
    type, parameters); a large-count form becomes the specific MPI_X_c_f08(ts) of generic
    MPI_X (MPI 4.1, 19.1.5: the name, then _c, then the token), calling the hidden shim
    toucan_f08c_mpi_x_c (mpif.h and `use mpi` have no large-count forms)."""
    kinds = sorted(set(HANDLE_KINDS))
    o = ["! mpi_f08 -- the Fortran 2008 interface of Toucan-MPI (TS 29113 buffers).",
         "! Generated by fortran/gen.py from headers/mpi.h and fortran/bindings.txt: do not edit.",
         "module mpi_f08",
         "  use, intrinsic :: iso_c_binding, only: c_ptr, c_loc, c_funptr, c_funloc, c_char, &",
         "      c_size_t, c_double, c_int, c_null_char",
         "  implicit none",
         "  private :: c_ptr, c_loc, c_funptr, c_funloc, c_char, c_size_t, c_double, c_int, c_null_char",
         ""]
    for t in kinds:
        o += [f"  type, bind(C) :: {t}", "    integer :: MPI_VAL", "  end type"]
    o += ["  type, bind(C) :: MPI_Status",
          "    integer :: MPI_SOURCE, MPI_TAG, MPI_ERROR",
          "    integer :: internal(5)",
          "  end type", ""]
    seen = {"MPI_SOURCE", "MPI_TAG", "MPI_ERROR"}
    for n, v in FORTRAN_ONLY + consts + [(k, v - 1 if k.startswith("MPI_MAX_") else v)
                                         for k, v in sizes.items()]:
        if n.upper() in seen:
            continue
        seen.add(n.upper())
        if n in HANDLE_OF:
            o.append(f"  type({HANDLE_OF[n]}), parameter :: {n} = {HANDLE_OF[n]}({v})")
        elif n in OFFSET_CONSTS:
            o.append(f"  integer(kind=8), parameter :: {n} = {v}")
        else:
            o.append(f"  integer, parameter :: {n} = {v}")
    o.append("  logical, parameter :: MPI_SUBARRAYS_SUPPORTED = .false.")
    o.append("  logical, parameter :: MPI_ASYNC_PROTECTS_NONBLOCKING = .false.")
    o.append("")
    for fname, block, decl, _size in SENTINELS:
        if fname in ("MPI_STATUS_IGNORE", "MPI_STATUSES_IGNORE"):
            decl = decl.replace("INTEGER", "type(MPI_Status)").replace("(MPI_STATUS_SIZE)", "") \
                .replace("(MPI_STATUS_SIZE,1)", "(1)")
        t, rest = decl.split(" ", 1) if not decl.startswith("type(") else decl.split(" ", 1)
        o.append(f"  {t}, target :: {rest}")
        o.append(f"  common /{block}/ {fname}")
    o.append("")
    o.append(F08_ABSTRACT)
    for op in ("==", "/="):
        o.append(f"  interface operator({op})")
        for t in kinds:
            o.append(f"    module procedure toucan_{'eq' if op == '==' else 'ne'}_{t[4:].lower()}")
        o.append("  end interface")
    o += F08_COPY_IFACE.splitlines()
    o.append("  interface")
    for f in ("MPI_Wtime", "MPI_Wtick", "PMPI_Wtime", "PMPI_Wtick"):
        o.append(f"    function {f}() bind(C, name='{f}') result(t)")
        o.append("      import")
        o.append("      real(c_double) :: t")
        o.append("    end function")
    o.append("  end interface")
    procs, ifaces, privates, generic = [], [], [], []
    done = []
    for name, cname, ret, params in entries:
        large = cname != name
        # (MPI-1's INTEGER attribute routines are not in mpi_f08.)
        if ret == "double" or any(p.kind and (p.kind.startswith(("attr_in_int", "attr_out_int"))
                                              or p.kind in ("copyfn1", "deletefn1", "kvextra1"))
                                  for p in params):
            continue
        decls = [(p, f08_decls(name, p)) for p in params]
        decls = [(p, d) for p, d in decls if d is not None]
        dummies = [p.name for p, _ in decls]
        lens = [d[3] for _, d in decls if d[3]]
        largs = [f"l{i}" for i in range(len(lens))]
        # MPI_X_f08 calls the mpif.h shim mpi_x_, PMPI_X_f08 calls pmpi_x_ (the profiling
        # interface: a tool's MPI_X_f08 in front of ours can call PMPI_X).
        for pre in ("", "P"):
            pname = pre + name
            shim = f"toucan_f77{pre.lower()}_" + cname[4:].lower()
            cshim = f"toucan_f08c_{pre.lower()}{cname.lower()}" if large else f"{pname.lower()}_"
            privates.append(shim)
            # the bind(C) interface to the mpif.h shim
            ifaces += wrap(f"    subroutine {shim}({', '.join(dummies + ['ierr'] + largs)}) &", 4)[:]
            ifaces.append(f"        bind(C, name='{cshim}')")
            ifaces.append("      import")
            for _, d in decls:
                ifaces.append(f"      {d[1]}")
            ifaces.append("      integer :: ierr")
            for l in largs:
                ifaces.append(f"      integer(c_size_t), value :: {l}")
            ifaces.append("    end subroutine")
            # the module procedure: the standard's specific name (_f08ts with choice buffers)
            token = "_f08ts" if any(p.kind == "choice" for p, _ in decls) else "_f08"
            spec = pname + ("_c" if large else "") + token
            # The generic's specific is an external procedure with the standard's linker name
            # (mpi_send_f08ts_), declared by an interface; its body is the module procedure
            # toucan_<spec>, and fortran/build.sh gives that code the linker name (weak for
            # the MPI_ ones: a program's own MPI_Send_f08ts, the profiling interface, wins).
            specdecls = [f"    {d[0]}" for _, d in decls] + ["    integer, optional, intent(out) :: ierror"]
            generic.append((pname, spec, wrap(f"  subroutine {spec}({', '.join(dummies + ['ierror'])})", 2)
                            + ["    import"] + specdecls + [f"  end subroutine {spec}"]))
            procs += wrap(f"  subroutine toucan_{spec}({', '.join(dummies + ['ierror'])})", 2)
            procs += specdecls
            procs.append("    integer :: ierr0")
            bufs = [p for p, d in decls if p.kind == "choice"]
            call = f"call {shim}({', '.join([d[2] for _, d in decls] + ['ierr0'] + lens)})"
            if bufs:
                copying = not keeps_buffer(name)
                if copying:
                    procs.append("    type(c_ptr) :: " + ", ".join(f"t_{b.name}" for b in bufs))
                cond = " .and. ".join(f"is_contiguous({b.name})" for b in bufs)
                procs.append(f"    if ({cond}) then")
                procs += ["  " + x for x in wrap("    " + call, 6)]
                procs.append("    else")
                if copying:
                    # A section: copied into a contiguous temporary (and back for outputs)
                    # around the call, as the compiler does for mpif.h's routines.
                    for b in bufs:
                        procs.append(f"      call toucan_f08_copy_in({b.name}, t_{b.name})")
                    tcall = f"call {shim}(" + ", ".join(
                        [f"t_{p.name}" if p.kind == "choice" else d[2] for p, d in decls]
                        + ["ierr0"] + lens) + ")"
                    procs += ["  " + x for x in wrap("    " + tcall, 6)]
                    for b in bufs:
                        procs.append(f"      call toucan_f08_copy_out({b.name}, t_{b.name}, {0 if b.const else 1})")
                else:
                    comm = next((p.name + "%MPI_VAL" for p, _ in decls if p.base == "MPI_Comm"
                                 and p.kind == "handle_in"), "MPI_COMM_WORLD%MPI_VAL")
                    sec = section_args(decls)
                    if sec:
                        # One buffer followed by its count and datatype: the call gets the
                        # section's base address, count 1 and a datatype over the section
                        # (freed at once: the operation holds it), when the section is count
                        # elements of a datatype as wide as an element (C_F08).
                        b, cnt, dt, wide = sec
                        cntarg = cnt if wide else f"int({cnt}, MPI_COUNT_KIND)"
                        one = "1_MPI_COUNT_KIND" if wide else "1"
                        procs.insert(len(procs) - 3 - len(wrap("    " + call, 6)),
                                     f"    type(c_ptr) :: s_{b}\n    type(MPI_Datatype) :: t_{dt}")
                        procs.append(f"      ierr0 = toucan_f08_section({b}, {cntarg}, {dt}%MPI_VAL, t_{dt}%MPI_VAL, s_{b})")
                        procs.append("      if (ierr0 == MPI_SUCCESS) then")
                        scall = f"call {shim}(" + ", ".join(
                            [f"s_{b}" if p.name == b else one if p.name == cnt else f"t_{dt}" if p.name == dt
                             else d[2] for p, d in decls] + ["ierr0"] + lens) + ")"
                        procs += ["    " + x for x in wrap("    " + scall, 8)]
                        procs.append(f"        call toucan_f08_type_free(t_{dt}%MPI_VAL)")
                        procs.append("      else")
                        procs.append(f"        ierr0 = toucan_f08_noncontig({comm}, '{pname}' // c_null_char)")
                        procs.append("      end if")
                    else:
                        # Two buffers, or a layout no datatype over the section describes.
                        procs.append(f"      ierr0 = toucan_f08_noncontig({comm}, '{pname}' // c_null_char)")
                procs.append("    end if")
            else:
                procs += wrap("    " + call, 4)
            procs.append("    if (present(ierror)) ierror = ierr0")
            procs.append(f"  end subroutine toucan_{spec}")
            procs.append("")
            done.append((pname, spec))
    # One generic per routine, its specifics together (MPI_X_f08ts and MPI_X_c_f08ts).
    byname = {}
    for name, spec, iface in generic:
        byname.setdefault(name, []).append(iface)
    for name, ifs in byname.items():
        o.append(f"  interface {name}")
        for iface in ifs:
            o += ["  " + x for x in iface]
        o.append("  end interface")
    # MPI_Sizeof: the size in bytes of a variable's element (TS 29113 descriptor, C_F08)
    o.append("  interface MPI_Sizeof")
    o.append("    module procedure MPI_Sizeof_f08ts")
    o.append("  end interface")
    o.append("  interface")
    o += ifaces
    o.append("  end interface")
    o.append("contains")
    for t in kinds:
        k = t[4:].lower()
        for nm, op in (("eq", "=="), ("ne", "/=")):
            o.append(f"  elemental logical function toucan_{nm}_{k}(a, b)")
            o.append(f"    type({t}), intent(in) :: a, b")
            o.append(f"    toucan_{nm}_{k} = a%MPI_VAL {op} b%MPI_VAL")
            o.append("  end function")
    o += procs
    o.append(F08_PREDEF_FNS)
    o.append(F08_SIZEOF.replace("NAME", "MPI_Sizeof_f08ts").replace("OPT", ", optional")
             .replace("SETERR", "if (present(ierror)) ierror = MPI_SUCCESS"))
    o.append("end module mpi_f08")
    # For fortran/build.sh: linker name, the module procedure's symbol, weak or global.
    links = [f"{spec.lower()}_ __mpi_f08_MOD_toucan_{spec.lower()} {'global' if pname.startswith('PMPI_') else 'weak'}"
             for pname, spec in done]
    return "\n".join(o) + "\n", "\n".join(links) + "\n", len(done) // 2


def aliases(c, low, up):
    """The other symbol forms of pmpi_x_ and mpi_x_ (pmpi_x__, pmpi_x, PMPI_X, ...). The mpi_
    forms are weak, as in MPICH's Fortran library: a program (or a tool) that defines its own
    mpi_send_ to profile, calling pmpi_send_, gets its own (MPICH's profile1f test)."""
    c.append(f"#pragma weak {low}_")
    for pre, target in (("p", f"p{low}_"), ("", f"{low}_")):
        weak = "weak, " if pre == "" else ""
        for alias in (f"{pre}{low}__", f"{pre}{low}", f"{pre.upper()}{up}"):
            c.append(f'extern __typeof__({target}) {alias} __attribute__(({weak}alias("{target}")));')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--header", required=True)
    ap.add_argument("--table", required=True)
    ap.add_argument("--exports", required=True)
    ap.add_argument("--out")
    ap.add_argument("--unbound", action="store_true")
    a = ap.parse_args()

    protos, consts, sizes = parse_header(a.header)
    over, skip = parse_table(a.table)
    exports = {l.strip() for l in open(a.exports) if l.strip()}
    for n in over:
        if n not in protos:
            sys.exit(f"gen.py: {a.table}: {n} is not declared in {a.header}")

    conv = re.compile(r"_(c2f|f2c|toint|fromint|c2f08|f082c|f082f|f2f08)$")
    bound, unbound = [], []
    for name in sorted(protos):
        ret, params = protos[name]
        if (name.endswith("_c") and name not in OWN_NAME) or conv.search(name):
            continue  # large-count forms are mpi_f08 only (but OWN_NAME's); conversions are C-only
        if name not in exports:
            unbound.append((name, "not implemented by the C side"))
            continue
        if name in skip:
            unbound.append((name, skip[name]))
            continue
        why = classify(name, params, over.get(name, {}))
        if why:
            unbound.append((name, why))
            continue
        bound.append((name, ret, params))

    # The large-count forms MPI_X_c (mpi_f08 only, MPI 4.1, 20.2): with MPI_X's table lines,
    # when MPI_X is bound and the two can share the generic MPI_X.
    names = {b[0] for b in bound}
    large = []
    for name in sorted(protos):
        if not name.endswith("_c"):
            continue
        base = name[:-2]
        if base not in names or name in names:
            continue  # (MPI_X itself is unbound, listed with its reason; or bound by own name)
        if name not in exports:
            unbound.append((name, "not implemented by the C side"))
            continue
        if name in skip:
            unbound.append((name, skip[name]))
            continue
        ret, params = protos[name]
        ov = dict(over.get(base, {}))
        ov.update(over.get(name, {}))
        why = classify(name, params, ov)
        if not why:
            why = indistinguishable(base, protos[base][1], params)
        if why:
            unbound.append((name, why))
            continue
        large.append((name, ret, params))

    if a.unbound:
        for n, why in unbound:
            print(f"{n}: {why}")
        return

    c = [C_PRELUDE]
    for fname, block, _decl, size in SENTINELS:
        c.append(f"TF_HIDDEN char {block}_[{size}] __attribute__((aligned(64)));")
    c.append(C_HELPERS)
    c.append(C_MPI1)
    c.append(C_F08)
    for low in MPI1_ROUTINES:
        aliases(c, f"mpi_{low}", f"MPI_{low.upper()}")
    doubles = []
    for name, ret, params in bound:
        g = Gen(name, ret, params)
        low = name.lower()
        g.emit(c, f"p{low}_", f"P{name}")
        g.emit(c, f"{low}_", name)
        aliases(c, low, name.upper())
        c.append("")
        if ret == "double":
            doubles.append(name[4:].upper())
    for old, new in sorted(RENAMES.items()):
        match = [b for b in bound if b[0] == new]
        if not match:
            sys.exit(f"gen.py: {a.table}: ={old[4:]} names {new}, which is not bound")
        _, ret, params = match[0]
        g = Gen(new, ret, params)
        low = old.lower()
        g.emit(c, f"p{low}_", f"P{new}")
        g.emit(c, f"{low}_", new)
        aliases(c, low, old.upper())
        c.append("")
    with open(f"{a.out}/mpif.h", "w") as f:
        f.write(gen_mpif(consts, sizes, doubles))
    with open(f"{a.out}/mpi.f90", "w") as f:
        f.write("! The `mpi` module of Toucan-MPI. Generated by fortran/gen.py: do not edit.\n"
                "! mpif.h's declarations, and MPI_SIZEOF (which needs an explicit interface).\n"
                "module mpi\n  use, intrinsic :: iso_c_binding, only: c_int\n  implicit none\n"
                "  include 'mpif.h'\n  private :: c_int\ncontains\n"
                + F08_SIZEOF.replace("NAME", "MPI_Sizeof").replace("OPT", "")
                .replace("SETERR", "ierror = MPI_SUCCESS") + "end module mpi\n")
    # The large-count shims: hidden (mpi_f08's MPI_X_c_f08ts calls them; no mpif.h names).
    for name, ret, params in large:
        g = Gen(name, ret, params)
        g.emit(c, f"toucan_f08c_p{name.lower()}", f"P{name}", "TF_HIDDEN ")
        g.emit(c, f"toucan_f08c_{name.lower()}", name, "TF_HIDDEN ")
        c.append("")
    with open(f"{a.out}/toucanfort.c", "w") as f:
        f.write("\n".join(c))
    entries = sorted([(n, n, r, ps) for n, r, ps in bound] + [(n[:-2], n, r, ps) for n, r, ps in large])
    f08, f08impl, n08 = gen_f08(entries, consts, sizes)
    with open(f"{a.out}/mpi_f08.f90", "w") as f:
        f.write(f08)
    with open(f"{a.out}/mpi_f08_links.txt", "w") as f:
        f.write(f08impl)
    with open(f"{a.out}/bound.txt", "w") as f:
        f.write("".join(n + "\n" for n, _, _ in bound))
        f.write("".join(f"{o} (as {n})\n" for o, n in sorted(RENAMES.items())))
        f.write("".join(f"MPI_{r.capitalize()} (INTEGER addresses, MPI-1)\n" for r in MPI1_ROUTINES))
        f.write("".join(f"{n} (mpi_f08 only, as the specific {n[:-2]}_c_f08(ts) of {n[:-2]})\n"
                        for n, _, _ in large))
    print(f"gen.py: {len(bound)} routines bound ({n08 - len(large)} in mpi_f08, and {len(large)} "
          f"large-count forms there), {len(unbound)} left out (gen.py --unbound lists them)")


if __name__ == "__main__":
    main()
