#!/usr/bin/env bash
# compat-tests/external-suite.sh DIR [options]
#
# Builds and runs an external suite of MPI C tests laid out like MPICH's
# test/mpi (DIR = a checkout of MPICH's test/mpi at tag v4.0.2, not kept in
# this repository) under plain MPICH and under Toucan side by side, and
# reports "N passed, N failed" for each.
#
#   DIR/util/mtest.c (+ mtest_common.c, mtest_single.c, dtypes.c and the
#   DTPools sources) is built into a helper library twice, with mpicc and
#   with wrappers/toucancc, against a small generated mpitestconf.h. Each
#   directory's testlist (or testlist.in) gives the programs, their process
#   counts and keys (arg=, env=, timeLimit=, xfail=, strict=, resultTest=,
#   mem=); Makefile.am gives a program's sources and -D flags when they differ
#   from NAME.c. A test passes by MPICH's own rule (runtests): exit status 0,
#   one " No Errors" line and no other output (stdout and stderr together);
#   resultTest=TestStatus/TestErrFatal tests pass on a non-zero exit status.
#
# Fortran: --dirs f77, f90 or f08 (or a subdirectory such as f77/pt2pt)
# runs MPICH's Fortran tests the same way. A Fortran directory's testlist
# names subdirectories, which are read in turn (as runtests does); programs
# are built with MPIFC (mpif90) and TOUCANFC (wrappers/toucanfort) against
# util/mtest_f77.f, mtest_f90.f90 or mtest_f08.f90; C sources of mixed
# programs with the C compilers; the *.h.in includes get configure's values
# for an LP64 gfortran (@F77_MPI_ADDRESS@, @F77_MPI_OFFSET@: integer*8).
# MPICH's f90 tests are mostly made from the f77 ones by its autogen.sh
# (maint/f77tof90); when DIR has not been through it, the script makes them
# in --out (DIR itself is never written). Testlist lines that configure
# fills in (@ALLOCMEMF@, @iodir@, ...) are skipped as configure-only, except
# @iodir@ with --io: the io subdirectory, whose ioharness tests are generated
# with maint/testmerge in --out/fiosrc (issue 17).
#
# Each test runs under plain MPICH (mpirun -np N) and under Toucan in two
# layouts of the same world size N:
#   V=1   TOUCAN_V=1 mpirun -np N
#   V>1   n=P, V=N/P when P divides N and N/P >= 2, else n=1, V=N (P = --n,
#         default 2); a 1-process test runs at n=1, V=1 in both layouts.
#   With --v V the second layout is n=P, V=V for every test instead (world
#   P*V, whatever N the testlist gives).
#   With --w W the second layout runs W workers per process (SMP mode,
#   TOUCAN_WORKERS=W; world P*W*V): at world size N, n=P, V=N/(P*W) when
#   P*W divides N, else n=1, V=N/W when W divides N, else as without --w;
#   with --v V, n=P, W, V for every test. Cells then read nxWxV.
#
# Options:
#   --dirs "pt2pt coll ..."  directories of DIR to run (default: pt2pt coll
#                      comm group datatype topo attr errhan init info)
#   --toucan-only      do not run MPICH; reuse MPICH results of an earlier run
#                      in the same --out directory when there are some
#   --mpich-only       run only MPICH
#   --skip-v1          do not run Toucan's V=1 layout where an earlier run in the
#                      same --out left its result (e.g. a second layout, --v 4)
#   --v V, --n P, --w W  Toucan layouts, see above
#   --jobs N           tests run at the same time (default 1: plain MPICH
#                      busy-polls); builds use max(N, nproc) jobs
#   --max-np N         cap on process counts (default 4)
#   --np N             run every test at N processes instead of its testlist
#                      count (e.g. --np 8 --v 4 --n 2: MPICH -np 8 against
#                      Toucan n=2, V=4 at the same world size)
#   --filter ERE       only tests whose "dir/program" matches
#   --out DIR          scratch directory (default ${TMPDIR:-/tmp}/toucan-external-suite)
#   --toucan-timeout S cap on a Toucan run's time limit (default 60)
#   --mpich-timeout S  cap on an MPICH run's time limit (default: the
#                      testlist's timeLimit, else 180 s, as runtests)
#   --mpi4             also run tests that need MPI-4 functions
#   --nonstrict        also run strict=false tests (non-standard extensions)
#   --xfail            also run tests that MPICH marks xfail=
#   --no-stubs         do not stub the functions that Toucan lacks and only the
#                      helper library calls (see below): then every test
#                      fails to link until Toucan has them all
#
# Left out (printed as SKIP, not counted): tests that need MPI-4 functions
# (MPI_Session_*, persistent collectives, partitioned, large-count _c,
# MPI_Isendrecv, ...), MPI-IO or dynamic processes (found in the
# preprocessed source), xfail= and strict=false entries (as MPICH's runtests
# does by default / in strict mode), mem= above this machine's memory,
# sources that are not C, and configure-only (@largetest@) entries. Process
# counts are capped at --max-np; entries that become identical are run once.
#
# Functions that Toucan lacks are link failures (LINK, with the missing
# names) when the test's own code calls them. When only the helper library
# calls them (mtest.c's inter-communicator code is in every test), they are
# stubbed by default: a stub prints "external-suite stub: NAME is not
# implemented by Toucan" and aborts, so only tests that reach it fail.
#
# Environment: MPICC (mpicc), MPIRUN (mpirun), TOUCANCC (wrappers/toucancc),
# MPIFC (mpif90), TOUCANFC (wrappers/toucanfort), EXTERNAL_SUITE_CFLAGS
# (-O2 -g), EXTERNAL_SUITE_FFLAGS (-O2 -g).
#
# Output: one line per test with the three results, per-directory counts, then
#   mpich: N passed, N failed
#   toucan (n=N,V=1): N passed, N failed
#   toucan (...): N passed, N failed
# Files in --out: report.txt (tests that pass under MPICH and fail under
# Toucan, with the first error lines; functions missing from Toucan, by the
# number of tests that need them), results.tsv, runs/*.out, build/*/*.log.
# Exit status 1 if a test that passes under MPICH fails under Toucan.

set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(cd "$HERE/.." && pwd)
MPICC=${MPICC:-mpicc}
MPIRUN=${MPIRUN:-mpirun}
TOUCANCC=${TOUCANCC:-$REPO_DIR/wrappers/toucancc}
MPIFC=${MPIFC:-$(command -v mpif90.mpich 2>/dev/null || echo mpif90)}
TOUCANFC=${TOUCANFC:-$REPO_DIR/wrappers/toucanfort}
read -r -a CFLAGS <<<"${EXTERNAL_SUITE_CFLAGS:--O2 -g}"
read -r -a FFLAGS <<<"${EXTERNAL_SUITE_FFLAGS:--O2 -g}"

DIRS="pt2pt coll comm group datatype topo attr errhan init info"
RUN_MPICH=1
RUN_TOUCAN=1
RUN_V1=1
FIXED_V=""
NPROC_P=2
WORKERS=1
JOBS=1
MAX_NP=4
FORCE_NP=""
FILTER=""
OUT=${TMPDIR:-/tmp}/toucan-external-suite
TOUCAN_TMAX=60
MPICH_TMAX=""
WITH_MPI4=0
WITH_NONSTRICT=0
WITH_XFAIL=0
WITH_STUBS=1
SRC=""

die() {
    echo "external-suite.sh: $*" >&2
    exit 2
}
usage() { sed -n '2,/^$/{s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; }
is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }

while (($#)); do
    case $1 in
    --dirs) DIRS=${2-}; shift ;;
    --toucan-only) RUN_MPICH=0 ;;
    --mpich-only) RUN_TOUCAN=0 ;;
    --skip-v1) RUN_V1=0 ;;
    --v) FIXED_V=${2-}; shift ;;
    --n) NPROC_P=${2-}; shift ;;
    --w) WORKERS=${2-}; shift ;;
    --jobs) JOBS=${2-}; shift ;;
    --max-np) MAX_NP=${2-}; shift ;;
    --np) FORCE_NP=${2-}; shift ;;
    --filter) FILTER=${2-}; shift ;;
    --out) OUT=${2-}; shift ;;
    --toucan-timeout) TOUCAN_TMAX=${2-}; shift ;;
    --mpich-timeout) MPICH_TMAX=${2-}; shift ;;
    --mpi4) WITH_MPI4=1 ;;
    --nonstrict) WITH_NONSTRICT=1 ;;
    --io) WITH_IO=1 ;; # MPI-IO (issue 19): run tests that call MPI_File_* too
    --xfail) WITH_XFAIL=1 ;;
    --no-stubs) WITH_STUBS=0 ;;
    -h | --help) usage; exit 0 ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) [[ -z $SRC ]] || die "only one DIR, got '$SRC' and '$1'"; SRC=$1 ;;
    esac
    shift
done
[[ -n $SRC ]] || { usage >&2; exit 2; }
[[ -f $SRC/util/mtest.c ]] || die "$SRC/util/mtest.c not found: DIR must be MPICH's test/mpi"
SRC=$(cd "$SRC" && pwd)
for v in "$NPROC_P" "$WORKERS" "$JOBS" "$MAX_NP" "$TOUCAN_TMAX" ${FIXED_V:+"$FIXED_V"} ${MPICH_TMAX:+"$MPICH_TMAX"} ${FORCE_NP:+"$FORCE_NP"}; do
    if ! is_uint "$v" || ((v == 0)); then die "expected a positive integer, got '$v'"; fi
done
((RUN_MPICH || RUN_TOUCAN)) || die "--toucan-only and --mpich-only exclude each other"
case $OUT in "$REPO_DIR" | "$REPO_DIR"/*) die "--out must be outside the repository" ;; esac

mkdir -p "$OUT" || die "cannot create $OUT"
OUT=$(cd "$OUT" && pwd)
BUILD=$OUT/build
RUNS=$OUT/runs
mkdir -p "$BUILD" "$RUNS"
BUILD_JOBS=$(nproc 2>/dev/null || echo 2)
((BUILD_JOBS < JOBS)) && BUILD_JOBS=$JOBS
MEM_GB=$(awk '/^MemTotal:/ { printf "%.1f", $2 / 1048576 }' /proc/meminfo 2>/dev/null || echo 1000)

# Toucan is built whenever it runs; MPICH is always built (its preprocessor
# finds the MPI-4/RMA/IO/spawn calls that decide what is skipped).
BUILD_KINDS=(mpich)
((RUN_TOUCAN)) && BUILD_KINDS+=(toucan)

if ((RUN_TOUCAN)); then
    if [[ ! -e $REPO_DIR/target/release/libtoucanmpi.so ]]; then
        echo "external-suite: building libtoucanmpi (make)"
        make -C "$REPO_DIR" >"$OUT/make.log" 2>&1 || die "make failed, see $OUT/make.log"
    fi
    # Build and run against a snapshot of the library and headers, so that a
    # rebuild in the tree during the run cannot mix two versions.
    rm -rf "$OUT/toucan-lib" "$OUT/toucan-include"
    mkdir -p "$OUT/toucan-lib"
    if ! cp "$REPO_DIR/target/release/libtoucanmpi.so" "$OUT/toucan-lib/" ||
        ! cp -r "$REPO_DIR/headers" "$OUT/toucan-include"; then
        die "cannot copy the library to $OUT"
    fi
    export TOUCAN_LIBDIR=$OUT/toucan-lib TOUCAN_INCDIR=$OUT/toucan-include
    # The Fortran bindings (libtoucanfort.a, mpif.h and the modules), when built.
    rm -rf "$OUT/toucan-finclude"
    if [[ -f $REPO_DIR/target/release/libtoucanfort.a ]]; then
        cp "$REPO_DIR/target/release/libtoucanfort.a" "$OUT/toucan-lib/" &&
            cp -r "$REPO_DIR/target/release/fortran/include" "$OUT/toucan-finclude" ||
            die "cannot copy the Fortran bindings to $OUT"
        export TOUCAN_FINCDIR=$OUT/toucan-finclude
    fi
fi

cc_of() { if [[ $1 == mpich ]]; then echo "$MPICC"; else echo "$TOUCANCC"; fi; }
fc_of() { if [[ $1 == mpich ]]; then echo "$MPIFC"; else echo "$TOUCANFC"; fi; }
is_fortran_src() { [[ $1 == *.f || $1 == *.f90 || $1 == *.F || $1 == *.F90 ]]; }

# ------------------------------------------------------------------ Fortran sources
# MPICH's f90 directories are made from the f77 ones by autogen.sh
# (maint/f77tof90). A DIR that has not been through it gets them in
# $OUT/f90src: a copy of DIR/f90 with the converted f77 directories beside.
F90SRC=""
prepare_f90() {
    local d leaf
    if [[ -f $SRC/f90/pt2pt/testlist ]]; then
        F90SRC=$SRC/f90
        return
    fi
    command -v perl >/dev/null || die "perl is needed to make the f90 tests (maint/f77tof90)"
    F90SRC=$OUT/f90src
    rm -rf "$F90SRC"
    cp -r "$SRC/f90" "$F90SRC" || die "cannot copy $SRC/f90"
    for d in "$SRC"/f77/*/; do
        leaf=$(basename "$d")
        mkdir -p "$F90SRC/$leaf"
        (cd "$SRC" && perl maint/f77tof90 "f77/$leaf" "$F90SRC/$leaf" Makefile.am Makefile.ap) \
            >"$OUT/f77tof90-$leaf.log" 2>&1 || die "maint/f77tof90 f77/$leaf failed, see $OUT/f77tof90-$leaf.log"
    done
}
# issue 17 (Fortran MPI-IO): with --io, the Fortran directories' @iodir@ line names their io
# subdirectory, whose ioharness tests (iwriteatf, writeallf, ...) MPICH's make generates with
# maint/testmerge from ioharness.defn and ioharness.tlt (for f90, both made from f77's by the
# sed lines of f90/io/Makefile.am). $OUT/fiosrc/BINDING is a copy of the io directory with
# them generated (DIR is not written).
FIOSRC=""
prepare_fio() {
    local b sd gen
    command -v perl >/dev/null || die "perl is needed to make the Fortran io tests (maint/testmerge)"
    [[ -z $F90SRC ]] && prepare_f90
    FIOSRC=""
    rm -rf "$OUT/fiosrc"
    mkdir -p "$OUT/fiosrc"
    sed 's|@PERL@|/usr/bin/env perl|' "$SRC/maint/testmerge.in" >"$OUT/testmerge"
    for b in f77 f90 f08; do
        sd=$(srcdir_of "$b/io")
        gen=$OUT/fiosrc/$b
        [[ -d $sd ]] || continue
        cp -r "$sd" "$gen" || die "cannot copy $sd"
        if [[ $b == f90 ]]; then
            sed -e 's/filename="\(.*\)f.f\"/filename="\1f90.f90"/g' \
                -e 's/include.*iooffset.*/integer (kind=MPI_OFFSET_KIND)offset/g' \
                "$SRC/f77/io/ioharness.defn" >"$gen/ioharness.defn"
            sed -e 's/include.*mpif.*/use mpi/g' -e 's/fheader/f90header/g' -e 's/^C/!/g' \
                -e '/implicit *none/d' "$SRC/f77/io/ioharness.tlt" >"$gen/ioharness.tlt"
        fi
        [[ -f $gen/ioharness.defn && -f $gen/ioharness.tlt ]] || continue
        (cd "$gen" && perl "$OUT/testmerge" -defn="$SRC/maint/common.defn" ioharness.defn ioharness.tlt) \
            >"$OUT/testmerge-$b.log" 2>&1 || die "maint/testmerge in $gen failed, see $OUT/testmerge-$b.log"
    done
    FIOSRC=$OUT/fiosrc
}
srcdir_of() { # DIR -> where its sources are
    case $1 in
    f77/io | f90/io | f08/io) if [[ -n $FIOSRC ]]; then echo "$FIOSRC/${1%/io}"; else
        case $1 in f90/*) echo "$F90SRC${1#f90}" ;; *) echo "$SRC/$1" ;; esac
    fi ;;
    f90 | f90/*) echo "$F90SRC${1#f90}" ;;
    *) echo "$SRC/$1" ;;
    esac
}
# The Fortran binding a directory's programs use: f77 | f90 | f08 (empty for C).
binding_of() { case $1 in f77 | f77/* | f90 | f90/* | f08 | f08/*) echo "${1%%/*}" ;; esac; }

# Throttle background jobs to at most $1 running.
throttle() {
    while (($(jobs -rp | wc -l) >= $1)); do wait -n; done
}

# ------------------------------------------------------------------ helper library
# mpitestconf.h and mtest_mpix.h are what the suite's configure would write
# (one pair per MPI, in build/KIND/include: some lines come from probing its
# mpi.h). DTPools includes "../dtpoolsconf.h" relative to its headers, so
# they are copied next to a generated dtpoolsconf.h.
write_config() { # KIND
    local kind=$1 cc inc=$BUILD/$1/include probe=$BUILD/$1/probe
    cc=$(cc_of "$kind")
    mkdir -p "$inc"
    {
        echo "/* Written by toucan compat-tests/external-suite.sh in place of configure's. */"
        echo "#ifndef MPITESTCONF_H_INCLUDED"
        echo "#define MPITESTCONF_H_INCLUDED"
        # (Not HAVE_MPI2_COMBINERS or HAVE_MPI_TYPE_CREATE_STRUCT: MPICH's configure never
        # defines them, so its own runs of datatype/contents leave out those parts, among them
        # the combiners that MPI-3.0 removed and the MPI 5.0 ABI does not have.)
        printf '#define %s 1\n' HAVE_STDARG_H HAVE_STDINT_H HAVE_STRING_H HAVE_UNISTD_H HAVE_SYS_TIME_H \
            HAVE_SYS_RESOURCE_H HAVE_GETRUSAGE HAVE_LONG_DOUBLE HAVE_LONG_LONG HAVE_LONG_LONG_INT HAVE__BOOL \
            HAVE_FLOAT__COMPLEX HAVE_DOUBLE__COMPLEX HAVE_LONG_DOUBLE__COMPLEX HAVE_MPI_INIT_THREAD
        echo "#define POINTERINT_t intptr_t"
        # gfortran's external names (the C parts of the Fortran tests pick theirs by it)
        echo "#define F77_NAME_LOWER_USCORE 1"
        echo "#define THREAD_PACKAGE_NAME THREAD_PACKAGE_NONE"
        # configure's probe: is MPI_INTEGER16 in this mpi.h?
        printf '#include <mpi.h>\nMPI_Datatype t(void) { return MPI_INTEGER16; }\n' >"$probe.c"
        if $cc -c -o "$probe.o" "$probe.c" >/dev/null 2>&1; then echo "#define HAVE_MPI_INTEGER16 1"; fi
        echo "#endif"
    } >"$inc/mpitestconf.h"
    # MPICH generates mtest_mpix.h: MPI_X -> MPIX_X for names its mpi.h has
    # only as MPIX_ (e.g. MPI_Delete_error_string in MPICH 4.0.2).
    printf '#include <mpi.h>\n' >"$probe.c"
    {
        echo "#ifndef MTEST_MPIX_H_INCLUDED"
        echo "#define MTEST_MPIX_H_INCLUDED"
        { $cc -E "$probe.c" 2>/dev/null; $cc -E -dM "$probe.c" 2>/dev/null; } |
            grep -oE '\<P?MPIX?_[A-Za-z0-9_]+' | sort -u | awk '
                { have[$0] = 1; if ($0 ~ /^MPIX_/) x[$0] = 1 }
                END { for (n in x) { m = n; sub(/^MPIX_/, "MPI_", m); if (!(m in have)) print "#define " m " " n } }' |
            sort
        echo "#endif"
    } >"$inc/mtest_mpix.h"
    mkdir -p "$OUT/dtpools/include"
    if [[ -d $SRC/dtpools/include ]]; then
        cp "$SRC"/dtpools/include/*.h "$OUT/dtpools/include/"
    fi
    printf '#define HAVE_STDLIB_H 1\n#define HAVE_STRING_H 1\n#define HAVE_STDINT_H 1\n#define HAVE_STRDUP 1\n#define HAVE_MEMSET 1\n' \
        >"$OUT/dtpools/dtpoolsconf.h"
}

incflags() { # KIND -> sets INCFLAGS
    INCFLAGS=("-I$BUILD/$1/include" "-I$SRC/include" "-I$OUT/dtpools/include")
}

INCFLAGS=()
# Does KIND's mpi.h still declare the MPI-1 names (removed in MPI-3.0)? If
# not, map them to the create_ forms for the helper library only.
helper_defines() {
    local cc probe=$BUILD/$1/probe_hvector
    cc=$(cc_of "$1")
    printf '#include <mpi.h>\nint f(MPI_Datatype t, MPI_Datatype *n) { return MPI_Type_hvector(1, 1, 0, t, n); }\n' >"$probe.c"
    if ! $cc -Werror=implicit-function-declaration -c -o "$probe.o" "$probe.c" >/dev/null 2>&1; then
        echo "-DMPI_Type_hvector=MPI_Type_create_hvector -DMPI_Type_hindexed=MPI_Type_create_hindexed"
    fi
}

build_helper() { # KIND
    local kind=$1 cc dir=$BUILD/$1 f o objs=() defs
    cc=$(cc_of "$kind")
    incflags "$kind"
    mkdir -p "$dir/helper"
    read -r -a defs <<<"$(helper_defines "$kind")"
    local srcs=("$SRC/util/mtest.c")
    for f in util/mtest_common.c util/mtest_single.c util/dtypes.c; do
        [[ -f $SRC/$f ]] && srcs+=("$SRC/$f")
    done
    for f in "$SRC"/dtpools/src/*.c; do [[ -f $f ]] && srcs+=("$f"); done
    : >"$dir/helper.log"
    for f in "${srcs[@]}"; do
        o=$dir/helper/$(basename "$(dirname "$f")")_$(basename "$f" .c).o
        if ! $cc "${CFLAGS[@]}" "${INCFLAGS[@]}" "${defs[@]}" -c -o "$o" "$f" >>"$dir/helper.log" 2>&1; then
            echo "external-suite: helper library ($kind): $f does not compile, see $dir/helper.log" >&2
            return 1
        fi
        objs+=("$o")
    done
    rm -f "$dir/libmtest.a"
    ar rcs "$dir/libmtest.a" "${objs[@]}" >>"$dir/helper.log" 2>&1
}

# The Fortran helper library of a binding: util/mtest_f77.f, mtest_f90.f90
# or mtest_f08.f90 in build/KIND/libmtest_BINDING.a.
build_fhelper() { # KIND BINDING
    local kind=$1 b=$2 fc dir=$BUILD/$1 f
    fc=$(fc_of "$kind")
    f=$SRC/util/mtest_$b.f
    [[ $b == f77 ]] || f=$f"90"
    mkdir -p "$dir/fmod-$b"
    if ! $fc "${FFLAGS[@]}" -J "$dir/fmod-$b" -c -o "$dir/helper/mtest_$b.o" "$f" >"$dir/helper-$b.log" 2>&1; then
        echo "external-suite: helper library ($kind): $f does not compile, see $dir/helper-$b.log" >&2
        return 1
    fi
    rm -f "$dir/libmtest_$b.a"
    ar rcs "$dir/libmtest_$b.a" "$dir/helper/mtest_$b.o" >>"$dir/helper-$b.log" 2>&1
}

# ------------------------------------------------------------------ testlists
# am_var DIR VAR: value of VAR in DIR/Makefile.am (continuation lines joined).
am_var() {
    [[ -f $1/Makefile.am ]] || return 0
    awk -v var="$2" '
        { line = line $0 }
        /\\$/ { sub(/\\$/, " ", line); next }
        { if (match(line, "^[ \t]*" var "[ \t]*=")) { print substr(line, RLENGTH + 1) } line = "" }
    ' "$1/Makefile.am"
}

# Sources and flags of one program: sets PSRCS (array) and PFLAGS (array).
prog_sources() { # DIR PROG
    local d canon v w
    d=$(srcdir_of "$1")
    canon=${2//[^A-Za-z0-9_]/_}
    PSRCS=()
    PFLAGS=()
    v=$(am_var "$d" "${canon}_SOURCES")
    if [[ -n ${v//[[:space:]]/} ]]; then
        for w in $v; do
            # A BUILT_SOURCES file that the Makefile copies from a sibling directory.
            if [[ ! -f $d/$w && -n $(binding_of "$1") ]]; then
                local alt
                for alt in "$d"/../*/"$w" "$F90SRC"/*/"$w" "$SRC"/f77/*/"$w"; do
                    [[ -f $alt ]] && { w=$(readlink -f "$alt"); break; }
                done
            fi
            [[ $w == /* ]] && PSRCS+=("$w") || PSRCS+=("$d/$w")
        done
    else
        PSRCS=("$d/$2.c")
        [[ -f $d/$2.c ]] || for w in "$d/$2".{cxx,cpp,cc,f,f90,F90}; do [[ -f $w ]] && PSRCS=("$w") && break; done
    fi
    v=$(am_var "$d" "${canon}_CPPFLAGS")
    for w in $v; do
        case $w in \$\(* | *@*) ;; *) PFLAGS+=("$w") ;; esac
    done
}

# Plan: one entry per test (program at a process count with its arguments).
T_DIR=() T_TOP=() T_PROG=() T_NP=() T_ARGS=() T_ENVS=() T_TL=() T_RT=() T_SKIP=() T_KEY=() T_SLUG=()
declare -A SEEN=()
NDUP=0

add_test() { # dir prog np args envs timelimit resulttest skip top
    local key="$1/$2 $3${4:+ $4}${5:+ [$5]}"
    if [[ -n ${SEEN[$key]:-} ]]; then
        NDUP=$((NDUP + 1))
        return
    fi
    SEEN[$key]=1
    T_DIR+=("$1") T_TOP+=("${9:-$1}") T_PROG+=("$2") T_NP+=("$3") T_ARGS+=("$4") T_ENVS+=("$5")
    T_TL+=("$6") T_RT+=("$7") T_SKIP+=("$8") T_KEY+=("$key")
    T_SLUG+=("$(printf '%s' "$key" | tr -c 'A-Za-z0-9.=_-' '_')")
}

read_testlist() { # DIR [TOP]
    local d=$1 top=${2:-$1} f line prog np fields kv k val args envs tl rt skip xfail strict mem mpix entries=() subdirs=()
    local -A small=()
    local sd
    sd=$(srcdir_of "$d")
    f=$sd/testlist
    [[ -f $f ]] || f=$sd/testlist.in
    if [[ ! -f $f ]]; then
        echo "external-suite: no testlist in $sd" >&2
        return
    fi
    while IFS= read -r line || [[ -n $line ]]; do
        line=${line%$'\r'}
        read -r -a fields <<<"$line"
        ((${#fields[@]})) || continue
        prog=${fields[0]}
        [[ $prog == \#* || $prog == \!* ]] && continue
        np=${fields[1]:-2}
        args="" envs="" tl="" rt="" skip="" xfail="" strict="" mem="" mpix=""
        for kv in "${fields[@]:2}"; do
            [[ $kv == *=* ]] || continue
            k=${kv%%=*} val=${kv#*=}
            case $k in
            arg) args+="${args:+ }$val" ;;
            env) envs+="${envs:+ }$val" ;;
            timeLimit) tl=$val ;;
            resultTest) rt=$val ;;
            xfail) xfail=$val ;;
            strict) strict=$val ;;
            mem) mem=$val ;;
            mpix) mpix=$val ;;
            mpiexecarg | lock | init) ;;
            *) echo "external-suite: $f: unknown key $k" >&2 ;;
            esac
        done
        if [[ $prog == @iodir@ && ${WITH_IO:-0} == 1 && -n $(binding_of "$d") ]]; then
            subdirs+=("$d/io") # issue 17 (Fortran MPI-IO): --io runs the io subdirectory
            continue
        elif [[ $prog == *@*@* ]]; then
            skip="configure-only entry"
            prog=${prog##*@}
            # (An @iodir@-like line names a whole directory: nothing to list.)
            [[ -z $prog && -n $(binding_of "$d") ]] && continue
        elif [[ -d $sd/$prog && -n $(binding_of "$d") ]]; then
            # Fortran directories list their subdirectories (runtests reads them in turn).
            subdirs+=("$d/$prog")
            continue
        elif [[ -d $sd/$prog ]]; then
            skip="subdirectory"
        elif [[ -n $xfail ]] && ((!WITH_XFAIL)); then
            skip="xfail=$xfail"
        elif [[ ${strict,,} == false ]] && ((!WITH_NONSTRICT)); then
            skip="strict=false"
        elif [[ ${mpix,,} == true ]]; then
            skip="mpix=true"
        elif [[ -n $mem ]] && awk -v a="$mem" -v b="$MEM_GB" 'BEGIN { exit !(a > b) }'; then
            skip="mem=$mem GB > ${MEM_GB} GB"
        fi
        is_uint "$np" || np=2
        [[ -n $FORCE_NP ]] && np=$FORCE_NP
        if [[ -n $FILTER ]] && ! [[ "$d/$prog" =~ $FILTER ]]; then
            continue
        fi
        # Fields joined by the ASCII unit separator (a tab would merge empty fields).
        entries+=("$np"$'\x1f'"$prog"$'\x1f'"$args"$'\x1f'"$envs"$'\x1f'"$tl"$'\x1f'"$rt"$'\x1f'"$skip")
        ((np <= MAX_NP)) && small["$prog $args [$envs]"]=1
    done <"$f"
    # An entry above the cap is dropped when the same program with the same
    # arguments also runs at or below it; otherwise it runs at the cap.
    local e
    for e in "${entries[@]}"; do
        IFS=$'\x1f' read -r np prog args envs tl rt skip <<<"$e"
        if [[ -z $FORCE_NP ]] && ((np > MAX_NP)); then
            if [[ -n ${small["$prog $args [$envs]"]:-} ]]; then
                NDUP=$((NDUP + 1))
                continue
            fi
            np=$MAX_NP
        fi
        add_test "$d" "$prog" "$np" "$args" "$envs" "$tl" "$rt" "$skip" "$top"
    done
    for e in "${subdirs[@]}"; do read_testlist "$e" "$top"; done
}

# ------------------------------------------------------------------ building tests
# Regexes for what is left out, matched on the program's own preprocessed lines.
RE_MPI4='\<MPI_(Session_[A-Za-z_]+|Comm_create_from_group|Group_from_session_pset|Intercomm_create_from_groups|Info_create_env|Info_get_string|Comm_idup_with_info|Psend_init|Precv_init|Pready[a-z_]*|Parrived|Isendrecv(_replace)?|(Allgatherv?|Allreduce|Alltoall[vw]?|Barrier|Bcast|Exscan|Gatherv?|Reduce(_scatter(_block)?)?|Scan|Scatterv?|Neighbor_[a-z]+)_init|[A-Za-z_]+_c|ERRORS_ABORT|COMM_TYPE_HW_[A-Z]+)\>'
# issue 18: RMA (MPI_Win_*, MPI_Put, ...) is no longer left out; the name stays.
RE_RMA_IO='\<MPI_(File_[A-Za-z_]+|Register_datarep|Comm_spawn(_multiple)?|Open_port|Close_port|Comm_accept|Comm_connect|Comm_join|Publish_name|Lookup_name|Unpublish_name|Comm_get_parent)\>'
# MPI-IO (issue 19): with --io, MPI_File_* calls (and their large-count forms) no longer skip a test.
if [[ ${WITH_IO:-0} == 1 ]]; then
    RE_RMA_IO=${RE_RMA_IO/File_\[A-Za-z_\]+|/}
    RE_MPI4=${RE_MPI4/\[A-Za-z_\]+_c|/(Type_[A-Za-z_]+|Get_[a-z]+|[A-Z][a-z]*send|[A-Z][a-z]*recv|Bcast|Reduce|Allreduce|Gatherv?|Scatterv?|Pack[a-z_]*|Unpack[a-z_]*)_c|}
fi

# build_prog KIND DIR PROG: writes build/KIND/DIR/PROG, PROG.log, PROG.status
# (ok | compile | link | missing-source) and, for MPICH, PROG.uses (MPI-4 /
# RMA-IO-spawn names the program calls).
build_prog() {
    local kind=$1 d=$2 p=$3 cc fc dir=$BUILD/$1/$2 f own=() sd b
    cc=$(cc_of "$kind")
    fc=$(fc_of "$kind")
    sd=$(srcdir_of "$d")
    b=$(binding_of "$d")
    incflags "$kind"
    prog_sources "$d" "$p"
    mkdir -p "$dir"
    local log=$dir/$p.log st=$dir/$p.status fortran=0
    rm -f "$dir/$p" "$st"
    for f in "${PSRCS[@]}"; do
        if [[ ! -f $f ]]; then
            echo "missing-source ${f#"$SRC"/}" >"$st"
            return
        fi
        if [[ -n $b ]] && is_fortran_src "$f"; then
            fortran=1
        elif [[ $f != *.c ]]; then
            echo "not-c ${f#"$SRC"/}" >"$st"
            return
        fi
        own+=("$(basename "$f")")
    done
    if [[ $kind == mpich ]]; then
        # Only the test's own lines of the preprocessed source, not mpi.h's;
        # Fortran sources as they are, without comment lines (names in any case).
        for f in "${PSRCS[@]}"; do
            if is_fortran_src "$f"; then
                if [[ $f == *.f || $f == *.F ]]; then grep -v '^[Cc*!]' "$f"; else sed 's/!.*//' "$f"; fi
            else
                $cc "${INCFLAGS[@]}" "${PFLAGS[@]}" -E "$f" 2>/dev/null |
                    awk -v own="$(basename "$f")" '/^# [0-9]+ "/ { n = split($3, a, "/"); keep = (a[n] == own "\"") ; next } keep'
            fi
        done >"$dir/$p.i"
        {
            grep -oiE "$RE_MPI4" "$dir/$p.i" | sed 's/^mpi_/MPI_/I' | sort -u | sed 's/^/mpi4 /'
            grep -oiE "$RE_RMA_IO" "$dir/$p.i" | sed 's/^mpi_/MPI_/I' | sort -u | sed 's/^/rmaio /'
        } >"$dir/$p.uses"
        rm -f "$dir/$p.i"
    fi
    local objs=() o fflags=()
    if ((fortran)); then
        # configure's includes (*.h.in) with its values for an LP64 gfortran, and a
        # module directory of the program's own (programs build in parallel).
        for f in "$sd"/*.h.in; do
            [[ -f $f ]] || continue
            sed -e 's/@F77_MPI_ADDRESS@/integer*8/g' -e 's/@F77_MPI_OFFSET@/integer*8/g' "$f" >"$dir/$(basename "$f" .in)"
        done
        mkdir -p "$dir/$p.mod"
        fflags=("${FFLAGS[@]}" "-I$dir" "-I$sd" "-I$BUILD/$kind/fmod-$b" -J "$dir/$p.mod")
    fi
    : >"$log"
    for f in "${PSRCS[@]}"; do
        o=$dir/$p.$(basename "${f%.*}").o
        if is_fortran_src "$f"; then
            $fc "${fflags[@]}" -c -o "$o" "$f" >>"$log" 2>&1
        else
            # (-I$dir: the C sources of Fortran directories include "../../include/mpitestconf.h",
            # which from build/KIND/f77/ext is the generated build/KIND/include.)
            $cc "${CFLAGS[@]}" "${INCFLAGS[@]}" "-I$sd" "-I$dir" "${PFLAGS[@]}" -c -o "$o" "$f" >>"$log" 2>&1
        fi || {
            echo compile >"$st"
            return
        }
        objs+=("$o")
    done
    if [[ $kind == toucan ]]; then
        # The program's own references that libtoucanmpi (and libtoucanfort) do not define.
        nm -u "${objs[@]}" | awk '{ n = tolower($NF) } n ~ /^p?mpi_/ { print $NF }' | sort -u |
            comm -23 - "$BUILD/toucan/defined.txt" >"$dir/$p.missing"
    fi
    local link=("$cc" "${CFLAGS[@]}") helpers=("$BUILD/$kind/libmtest.a")
    if ((fortran)); then
        link=("$fc" "${FFLAGS[@]}")
        helpers=("$BUILD/$kind/libmtest_$b.a" "$BUILD/$kind/libmtest.a")
    fi
    if ! "${link[@]}" -o "$dir/$p" "${objs[@]}" "${helpers[@]}" -lm >>"$log" 2>&1; then
        # Only the helper library lacks something: link its stubs (they abort if called).
        if [[ $kind == toucan && ! -s $dir/$p.missing && -f $BUILD/toucan/libstubs.a ]] &&
            "${link[@]}" -o "$dir/$p" "${objs[@]}" "${helpers[@]}" "$BUILD/toucan/libstubs.a" \
                -lm >>"$log.stubs" 2>&1; then
            rm -f "${objs[@]}"
            echo ok >"$st"
            return
        fi
        echo link >"$st"
        return
    fi
    rm -f "${objs[@]}"
    echo ok >"$st"
}

# Toucan's helper library may call functions libtoucanmpi lacks (mtest.c makes
# inter-communicators): unless --no-stubs, such functions get stubs that print
# their name and abort, so that tests which never reach them can still run. A
# test whose own code calls a missing function still fails to link.
make_stubs() {
    local dir=$BUILD/toucan sym
    {
        nm -D --defined-only "$TOUCAN_LIBDIR/libtoucanmpi.so" | awk '{ print $NF }'
        [[ -f $TOUCAN_LIBDIR/libtoucanfort.a ]] &&
            nm --defined-only "$TOUCAN_LIBDIR/libtoucanfort.a" 2>/dev/null | awk 'NF == 3 && $2 ~ /[TW]/ { print $3 }'
    } | sort -u >"$dir/defined.txt"
    nm -u "$dir/libmtest.a" 2>/dev/null | awk '$NF ~ /^P?MPI_/ { print $NF }' | sort -u |
        comm -23 - "$dir/defined.txt" >"$dir/helper-missing.txt"
    rm -f "$dir/libstubs.a"
    [[ -s $dir/helper-missing.txt ]] && ((WITH_STUBS)) || return 0
    {
        printf '#include <stdio.h>\n#include <stdlib.h>\n'
        printf 'static void stub(const char *f)\n{\n'
        printf '    fprintf(stderr, "external-suite stub: %%s is not implemented by Toucan\\n", f);\n    abort();\n}\n'
        while IFS= read -r sym; do
            printf 'int %s(void) { stub("%s"); return 0; }\n' "$sym" "$sym"
        done <"$dir/helper-missing.txt"
    } >"$dir/stubs.c"
    cc -c -o "$dir/stubs.o" "$dir/stubs.c" && ar rcs "$dir/libstubs.a" "$dir/stubs.o"
}

# ------------------------------------------------------------------ running tests
# judge OUTFILE RC RESULTTEST -> prints "PASS" or "FAIL reason" (MPICH's runtests rule)
judge() {
    local out=$1 rc=$2 rt=$3
    if [[ $rc == 124 || $rc == 137 ]]; then
        echo "TIMEOUT"
        return
    fi
    case $rt in
    TestStatus | TestErrFatal)
        if [[ $rc != 0 ]]; then echo PASS; else echo "FAIL exit status 0, expected non-zero"; fi
        return
        ;;
    esac
    if [[ $rc != 0 ]] && grep -q 'APPLICATION TIMED OUT' "$out"; then
        echo "TIMEOUT"
        return
    fi
    awk -v rc="$rc" -v rt="$rt" '
        /FORTRAN STOP/ { next }
        /^[ \t]*No [Ee]rrors[ \t\r]*$/ && !found { found = 1; next }
        /^[ \t]*Test Passed[ \t\r]*$/ || /requesting checkpoint[ \t\r]*$/ || /checkpoint completed[ \t\r]*$/ { next }
        { if (!bad) first = $0; bad++ }
        END {
            why = ""
            if (rt == "TestStatusNoErrors") { if (rc == 0) why = "exit status 0, expected non-zero" }
            else if (rc != 0) why = "exit status " rc
            if (bad) why = why (why ? "; " : "") "unexpected output: " substr(first, 1, 100)
            if (!found) why = why (why ? "; " : "") "no \"No Errors\""
            print (why == "" ? "PASS" : "FAIL " why)
        }' "$out"
}

# layout KIND NP -> "n V W" for kind mpich | v1 | vx
layout() {
    local np=$2 w=$WORKERS
    case $1 in
    mpich | v1) echo "$np 1 1" ;;
    vx)
        if [[ -n $FIXED_V ]]; then
            echo "$NPROC_P $FIXED_V $w"
        elif ((w > 1 && np % (NPROC_P * w) == 0)); then
            echo "$NPROC_P $((np / (NPROC_P * w))) $w"
        elif ((w > 1 && np % w == 0)); then
            echo "1 $((np / w)) $w"
        elif ((np % NPROC_P == 0 && np / NPROC_P >= 2)); then
            echo "$NPROC_P $((np / NPROC_P)) 1"
        else
            echo "1 $np 1"
        fi
        ;;
    esac
}

# run_one I KIND: runs test I as KIND (mpich|v1|vx), writes runs/SLUG.KIND.{out,res}.
# .res holds: status<TAB>seconds<TAB>n<TAB>V<TAB>detail
run_one() {
    local i=$1 kind=$2 d=${T_DIR[$1]} p=${T_PROG[$1]} np=${T_NP[$1]} bkind=toucan
    local base=$RUNS/${T_SLUG[$1]}.$2 n V lim st detail t0 t1 rc args envs
    [[ $kind == mpich ]] && bkind=mpich
    read -r n V W <<<"$(layout "$kind" "$np")"
    # (The n field of .res reads nxW in SMP mode, so cells print nxWxV.)
    local nw=$n
    ((W > 1)) && nw=${n}x$W
    st=$(cat "$BUILD/$bkind/$d/$p.status" 2>/dev/null || echo "compile")
    if [[ $st != ok ]]; then
        if [[ $st == link ]]; then
            detail="missing: $(tr '\n' ' ' <"$BUILD/$bkind/$d/$p.missing" 2>/dev/null)"
            [[ $detail == "missing: " ]] && detail="missing: $(missing_syms "$BUILD/$bkind/$d/$p.log" | tr '\n' ' ')"
            printf 'LINK\t0\t%s\t%s\t%s\n' "$nw" "$V" "$detail" >"$base.res"
        else
            detail=$(grep -m1 -E 'error' "$BUILD/$bkind/$d/$p.log" 2>/dev/null | sed 's/^[^:]*:[0-9]*:[0-9]*: //')
            printf 'NOBUILD\t0\t%s\t%s\t%s\n' "$nw" "$V" "$detail" >"$base.res"
        fi
        return
    fi
    lim=${T_TL[$i]:-180}
    if [[ $kind != mpich ]]; then
        ((lim > TOUCAN_TMAX)) && lim=$TOUCAN_TMAX
    elif [[ -n $MPICH_TMAX ]] && ((lim > MPICH_TMAX)); then
        lim=$MPICH_TMAX
    fi
    read -r -a args <<<"${T_ARGS[$i]}"
    read -r -a envs <<<"${T_ENVS[$i]}"
    local tv=()
    [[ $kind != mpich ]] && tv=("TOUCAN_V=$V")
    ((W > 1)) && tv+=("TOUCAN_WORKERS=$W")
    t0=$(date +%s.%N)
    # timeout runs in its own process group: its pid is kept in .pid so that
    # an interrupted run can stop it (see the trap below).
    # As runtests: mpiexec itself enforces the limit (MPIEXEC_TIMEOUT, which
    # init/timeout relies on); timeout(1) is only a backstop.
    (cd "$BUILD/$bkind/$d" && exec env "${envs[@]}" "${tv[@]}" MPIEXEC_TIMEOUT="$lim" \
        timeout -k 10 $((lim + 20)) "$MPIRUN" -np "$n" "./$p" "${args[@]}") >"$base.out" 2>&1 </dev/null &
    echo $! >"$base.pid"
    wait $!
    rc=$?
    rm -f "$base.pid"
    t1=$(date +%s.%N)
    st=$(judge "$base.out" "$rc" "${T_RT[$i]}")
    detail=""
    [[ $st == FAIL* ]] && detail=${st#FAIL }
    [[ $st == TIMEOUT ]] && detail="no result after ${lim}s"
    printf '%s\t%s\t%s\t%s\t%s\n' "${st%% *}" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')" \
        "$nw" "$V" "$detail" >"$base.res"
}

# Writable globals and statics of a binary or archive (what subranks share
# until Toucan privatizes them), without the C runtime's own.
CRT_DATA_SYMS='^(_DYNAMIC|_GLOBAL_OFFSET_TABLE_|__TMC_END__|__bss_start|__data_start|__do_global_dtors_aux_fini_array_entry|__dso_handle|__frame_dummy_init_array_entry|_edata|_end|completed\.[0-9]+|stdout|stderr|stdin)$'
writable_globals() { # FILE
    nm "$1" 2>/dev/null | awk '$2 ~ /^[bBdDcCsSgG]$/ { sub(/@.*/, "", $3); print $3 }' |
        grep -Ev "$CRT_DATA_SYMS" | sort -u
}

# The first 15 distinct lines of an output, each with its number of
# occurrences when repeated (every rank tends to print the same error).
excerpt() { # FILE
    cut -c1-200 "$1" | awk '{ if (!($0 in n)) order[++k] = $0; n[$0]++ }
        END { for (i = 1; i <= k && i <= 15; i++) printf "    | %s%s\n", order[i], (n[order[i]] > 1 ? "  [x" n[order[i]] "]" : "") }'
}

missing_syms() { # LOG -> undefined symbols, one a line
    sed -n "s/.*undefined reference to \`\([A-Za-z0-9_]*\)'.*/\1/p" "$1" | sort -u
}

cell() { # SLUG KIND -> "2x2 PASS 0.4s" (or "-" if not run)
    local f=$RUNS/$1.$2.res st secs n V
    [[ -f $f ]] || { printf '%-20s' "-"; return; }
    IFS=$'\t' read -r st secs n V _ <"$f"
    if [[ $st == LINK || $st == NOBUILD ]]; then
        printf '%-20s' "${n}x$V $st"
    else
        printf '%-20s' "${n}x$V $st ${secs}s"
    fi
}

run_test() { # I: runs every kind of test I and prints its line
    local i=$1
    if ((RUN_MPICH)); then run_one "$i" mpich; fi
    if ((RUN_TOUCAN)); then
        if ((RUN_V1)) || [[ ! -f $RUNS/${T_SLUG[$i]}.v1.res ]]; then run_one "$i" v1; fi
        if [[ "$(layout vx "${T_NP[$i]}")" == "$(layout v1 "${T_NP[$i]}")" ]]; then
            cp "$RUNS/${T_SLUG[$i]}.v1.res" "$RUNS/${T_SLUG[$i]}.vx.res"
            cp "$RUNS/${T_SLUG[$i]}.v1.out" "$RUNS/${T_SLUG[$i]}.vx.out" 2>/dev/null
        else
            run_one "$i" vx
        fi
    fi
    printf '%-44s mpich %s| toucan %s| toucan %s\n' "${T_KEY[$i]}" \
        "$(cell "${T_SLUG[$i]}" mpich)" "$(cell "${T_SLUG[$i]}" v1)" "$(cell "${T_SLUG[$i]}" vx)" |
        sed 's/ *$//'
}

# ================================================================== main

FBINDINGS=()
for d in $DIRS; do
    b=$(binding_of "$d")
    [[ $b == f90 && -z $F90SRC ]] && prepare_f90
    [[ -n $b && ${WITH_IO:-0} == 1 && -z $FIOSRC ]] && prepare_fio # issue 17 (Fortran MPI-IO)
    [[ -n $b && " ${FBINDINGS[*]} " != *" $b "* ]] && FBINDINGS+=("$b")
    [[ -d $(srcdir_of "$d") ]] || die "no directory $(srcdir_of "$d")"
    read_testlist "$d"
done
NT=${#T_KEY[@]}
((NT)) || die "no tests selected"

echo "external-suite: $SRC, dirs: $DIRS"
echo "external-suite: $NT tests (process counts capped at $MAX_NP; $NDUP entries left out as duplicates), scratch $OUT"
for kind in "${BUILD_KINDS[@]}"; do
    mkdir -p "$BUILD/$kind"
    write_config "$kind"
    build_helper "$kind" || exit 2
    for b in "${FBINDINGS[@]}"; do build_fhelper "$kind" "$b" || exit 2; done
done
if ((RUN_TOUCAN)); then
    make_stubs || die "cannot build the stubs in $BUILD/toucan"
    if [[ -s $BUILD/toucan/helper-missing.txt ]]; then
        echo "external-suite: the helper library calls $(wc -l <"$BUILD/toucan/helper-missing.txt") functions Toucan lacks:" \
            "$(tr '\n' ' ' <"$BUILD/toucan/helper-missing.txt")$( ((WITH_STUBS)) && echo "(stubbed: they abort if called)")"
    fi
fi

# Build each program once per kind.
declare -A PROGS=()
for ((i = 0; i < NT; i++)); do
    [[ -z ${T_SKIP[$i]} ]] && PROGS["${T_DIR[$i]}/${T_PROG[$i]}"]=1
done
echo "external-suite: building ${#PROGS[@]} programs with ${BUILD_KINDS[*]} ($BUILD_JOBS jobs)"
for kind in "${BUILD_KINDS[@]}"; do
    for dp in "${!PROGS[@]}"; do
        throttle "$BUILD_JOBS"
        build_prog "$kind" "${dp%/*}" "${dp##*/}" &
    done
done
wait

# Skips found by building: sources that are not C, MPI-4, RMA/IO/spawn.
for ((i = 0; i < NT; i++)); do
    [[ -n ${T_SKIP[$i]} ]] && continue
    b=$BUILD/mpich/${T_DIR[$i]}/${T_PROG[$i]}
    st=$(cat "$b.status" 2>/dev/null)
    case $st in
    not-c* | missing-source*) T_SKIP[i]="${st/not-c/not C:}"; continue ;;
    esac
    if ((!WITH_MPI4)) && grep -q '^mpi4 ' "$b.uses" 2>/dev/null; then
        T_SKIP[i]="MPI-4: $(sed -n 's/^mpi4 //p' "$b.uses" | head -3 | tr '\n' ' ')"
    elif grep -q '^rmaio ' "$b.uses" 2>/dev/null; then
        T_SKIP[i]="RMA/IO/spawn: $(sed -n 's/^rmaio //p' "$b.uses" | head -3 | tr '\n' ' ')"
    fi
done

if [[ -n $FIXED_V ]]; then
    VX_LABEL="n=$NPROC_P,V=$FIXED_V"
    ((WORKERS > 1)) && VX_LABEL="n=$NPROC_P,W=$WORKERS,V=$FIXED_V"
elif ((WORKERS > 1)); then
    VX_LABEL="W=$WORKERS: n=$NPROC_P,V=N/($NPROC_P*$WORKERS), else n=1,V=N/$WORKERS, else n=1,W=1,V=N"
else
    VX_LABEL="n=$NPROC_P,V=N/$NPROC_P if that is >= 2, else n=1,V=N"
fi
echo "external-suite: columns: mpich (mpirun -np N) | toucan V=1 (n=N) | toucan V>1 ($VX_LABEL); cells are nxV (nxWxV in SMP mode)"

# Stale results of a previous run must not be mistaken for this one's.
for ((i = 0; i < NT; i++)); do
    for kind in v1 vx; do rm -f "$RUNS/${T_SLUG[$i]}.$kind.res"; done
    ((RUN_MPICH)) && rm -f "$RUNS/${T_SLUG[$i]}.mpich.res"
done

for ((i = 0; i < NT; i++)); do
    [[ -n ${T_SKIP[$i]} ]] && printf '%-44s SKIP (%s)\n' "${T_KEY[$i]}" "${T_SKIP[$i]% }"
done
stop_runs() {
    local f
    for f in "$RUNS"/*.pid; do
        [[ -f $f ]] && kill "$(cat "$f")" 2>/dev/null
    done
    echo "external-suite: interrupted" >&2
    exit 130
}
trap stop_runs INT TERM
for ((i = 0; i < NT; i++)); do
    [[ -n ${T_SKIP[$i]} ]] && continue
    throttle "$JOBS"
    run_test "$i" &
done
wait

# ------------------------------------------------------------------ summary and report
REPORT=$OUT/report.txt
RESULTS=$OUT/results.tsv
declare -A PASS=() FAIL=()
declare -A MISS=() MISS_TESTS=()
nreg=0
{
    echo "# Toucan vs MPICH on $SRC ($(date -u +%Y-%m-%dT%H:%MZ))"
    echo "# dirs: $DIRS; V>1 layout: $VX_LABEL"
    echo "# Tests that pass under MPICH and fail under Toucan, with the first lines of output."
    if ((RUN_TOUCAN)); then
        writable_globals "$BUILD/toucan/libmtest.a" >"$BUILD/toucan/helper-globals.txt"
        echo "# Writable globals of the helper library (subranks of a process share them unless Toucan"
        echo "# privatizes globals): $(tr '\n' ' ' <"$BUILD/toucan/helper-globals.txt")"
    fi
    echo
} >"$REPORT"
printf 'test\tdir\tmpich\tv1\tvx\n' >"$RESULTS"
for ((i = 0; i < NT; i++)); do
    [[ -n ${T_SKIP[$i]} ]] && continue
    d=${T_DIR[$i]} s=${T_SLUG[$i]} top=${T_TOP[$i]}
    row=("${T_KEY[$i]}" "$d")
    mst="" v1layout=""
    for kind in mpich v1 vx; do
        st="-"
        if [[ -f $RUNS/$s.$kind.res ]]; then
            IFS=$'\t' read -r st _ n V detail <"$RUNS/$s.$kind.res"
            if [[ $st == PASS ]]; then
                PASS[$kind]=$((${PASS[$kind]:-0} + 1)) PASS[$kind/$top]=$((${PASS[$kind/$top]:-0} + 1))
            else
                FAIL[$kind]=$((${FAIL[$kind]:-0} + 1)) FAIL[$kind/$top]=$((${FAIL[$kind/$top]:-0} + 1))
            fi
            [[ $kind == mpich ]] && mst=$st
            [[ $kind == v1 ]] && v1layout="$n $V"
            # (A 1-process test runs the same layout twice: report it once.)
            if [[ $kind != mpich && $st != PASS && $mst == PASS ]]; then
                nreg=$((nreg + 1))
            fi
            if [[ $kind != mpich && $st != PASS && $mst == PASS &&
                ! ($kind == vx && "$n $V" == "$v1layout") ]]; then
                {
                    echo "== ${T_KEY[$i]}: toucan ${n}x$V $st${detail:+: $detail}"
                    if [[ $kind == vx && $V -gt 1 && -x $BUILD/toucan/$d/${T_PROG[$i]} ]]; then
                        g=$(writable_globals "$BUILD/toucan/$d/${T_PROG[$i]}" | comm -23 - "$BUILD/toucan/helper-globals.txt" | tr '\n' ' ')
                        echo "    (writable globals: those of the helper library${g:+ and of the test: $g})"
                    fi
                    if [[ $st == LINK || $st == NOBUILD ]]; then
                        grep -E 'error|undefined reference' "$BUILD/toucan/$d/${T_PROG[$i]}.log" | head -8 | sed 's/^/    /'
                    else
                        excerpt "$RUNS/$s.$kind.out"
                    fi
                    echo
                } >>"$REPORT"
            fi
        fi
        row+=("$st")
    done
    (IFS=$'\t'; echo "${row[*]}") >>"$RESULTS"
done

# Missing functions, counted once per test program.
if ((RUN_TOUCAN)); then
    declare -A RUNPROGS=()
    for ((i = 0; i < NT; i++)); do
        [[ -z ${T_SKIP[$i]} ]] && RUNPROGS["${T_DIR[$i]}/${T_PROG[$i]}"]=1
    done
    for dp in "${!RUNPROGS[@]}"; do
        [[ -f $BUILD/toucan/$dp.missing ]] || continue
        while IFS= read -r sym; do
            MISS[$sym]=$((${MISS[$sym]:-0} + 1))
            MISS_TESTS[$sym]+=" ${dp}"
        done <"$BUILD/toucan/$dp.missing"
    done
    {
        echo "# Functions missing from libtoucanmpi that the helper library calls (every test links them):"
        if [[ -s $BUILD/toucan/helper-missing.txt ]]; then
            sed 's/^/  /' "$BUILD/toucan/helper-missing.txt"
        else
            echo "  (none)"
        fi
        echo
        echo "# Functions missing from libtoucanmpi that the tests call, by the number of test programs"
        echo "# (of those not skipped) that call them"
        for sym in "${!MISS[@]}"; do
            printf '%4d  %s  (%s)\n' "${MISS[$sym]}" "$sym" "$(echo "${MISS_TESTS[$sym]}" | tr ' ' '\n' | sort | head -6 | tr '\n' ' ' | sed 's/^ *//;s/ *$//')"
        done | sort -k1,1nr -k2,2
        echo
        echo "# Programs that do not compile against Toucan's mpi.h"
        for dp in "${!RUNPROGS[@]}"; do
            [[ $(cat "$BUILD/toucan/$dp.status" 2>/dev/null) == compile ]] || continue
            echo "$dp: $(grep -m2 'error' "$BUILD/toucan/$dp.log" | sed 's/^[^ ]* //' | tr '\n' ' ')"
        done | sort
    } >>"$REPORT"
fi

echo
printf '%-10s %14s %14s %14s\n' "dir" "mpich" "toucan V=1" "toucan V>1"
for d in $DIRS; do
    printf '%-10s' "$d"
    for kind in mpich v1 vx; do
        p=${PASS[$kind/$d]:-0} f=${FAIL[$kind/$d]:-0}
        if ((p + f)); then printf ' %14s' "$p/$((p + f))"; else printf ' %14s' "-"; fi
    done
    echo
done
echo
echo "report: $REPORT ($nreg Toucan failures of tests that pass under MPICH)"
if ((RUN_MPICH)); then
    echo "mpich: ${PASS[mpich]:-0} passed, ${FAIL[mpich]:-0} failed"
else
    echo "mpich: not run (--toucan-only; ${PASS[mpich]:-0} passed, ${FAIL[mpich]:-0} failed in an earlier run)"
fi
if ((RUN_TOUCAN)); then
    echo "toucan (n=N,V=1): ${PASS[v1]:-0} passed, ${FAIL[v1]:-0} failed"
    echo "toucan ($VX_LABEL): ${PASS[vx]:-0} passed, ${FAIL[vx]:-0} failed"
fi
((nreg == 0))
