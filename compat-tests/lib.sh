# shellcheck shell=bash disable=SC2034
# compat-tests/lib.sh - shared by run.sh, run-all.sh and record-expected.sh.
# Sourced, not executed.

COMPAT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(cd "$COMPAT_DIR/.." && pwd)
SRC_DIR=$COMPAT_DIR/src
OUT_DIR=$COMPAT_DIR/out
EXP_DIR=$COMPAT_DIR/expected

# Layouts: "nxV" (n processes of V subranks, world n*V) or "nxWxV" (n processes of W workers
# of V subranks each, TOUCAN_WORKERS=W, world n*W*V). Every test runs at COMPAT_LAYOUTS unless
# TOUCAN_COMPAT_CONFIGS or its src/NAME.layouts says otherwise.
# COMPAT_SMP_LAYOUTS are the SMP-mode layouts of issue 14 (W=2 on this 2-core machine), on by
# default (COMPAT_SMP=0 in the environment leaves them out for one run). A .layouts line "@smp"
# stands for COMPAT_SMP_LAYOUTS when they are on, and for nothing otherwise.
COMPAT_SMP=${COMPAT_SMP:-1}
COMPAT_SMP_LAYOUTS="1x2x2 2x2x1 1x2x4 3x2x1"
COMPAT_LAYOUTS="2x1 2x4 3x3 1x4"
if [[ $COMPAT_SMP == 1 ]]; then
    COMPAT_LAYOUTS+=" $COMPAT_SMP_LAYOUTS"
fi

# compat_layout CFG: sets n, w, v and world from "nxV" or "nxWxV" (w is "" for "nxV");
# returns 1 (and sets nothing useful) when CFG is neither.
compat_layout() {
    local re2='^([0-9]+)x([0-9]+)$' re3='^([0-9]+)x([0-9]+)x([0-9]+)$'
    if [[ $1 =~ $re3 ]]; then
        n=$((10#${BASH_REMATCH[1]})) w=$((10#${BASH_REMATCH[2]})) v=$((10#${BASH_REMATCH[3]}))
    elif [[ $1 =~ $re2 ]]; then
        n=$((10#${BASH_REMATCH[1]})) w="" v=$((10#${BASH_REMATCH[2]}))
    else
        return 1
    fi
    ((n >= 1 && v >= 1)) && [[ -z $w || $w -ge 1 ]] || return 1
    world=$((n * ${w:-1} * v))
}

# compat_expand_layouts LIST: LIST with "@smp" replaced as described above.
compat_expand_layouts() {
    local c out=()
    for c in $1; do
        if [[ $c == @smp ]]; then
            [[ $COMPAT_SMP == 1 ]] && out+=($COMPAT_SMP_LAYOUTS)
        else
            out+=("$c")
        fi
    done
    echo "${out[*]}"
}

MPICC=${MPICC:-mpicc}
MPICXX=${MPICXX:-mpicxx}
MPIRUN=${MPIRUN:-mpirun}
TOUCANCC=${TOUCANCC:-$REPO_DIR/wrappers/toucancc}
TOUCANCXX=${TOUCANCXX:-$REPO_DIR/wrappers/toucancxx}
# Fortran tests (src/NAME.f90 free form, src/NAME.f fixed form): MPICH's mpif90 and toucanfort.
MPIFC=${MPIFC:-$(command -v mpif90.mpich 2>/dev/null || echo mpif90)}
TOUCANFC=${TOUCANFC:-$REPO_DIR/wrappers/toucanfort}
# -frecursive: local arrays on the stack, never static, so the tests hold with
# TOUCAN_PRIVATIZE=off too (the rule on writable globals below).
FFLAGS_COMPAT=${FFLAGS_COMPAT:--O2 -g -frecursive}
# Toucan jobs are started by the real mpirun with TOUCAN_V set (DESIGN.md).
TOUCAN_LAUNCHER=${TOUCAN_COMPAT_LAUNCHER:-$MPIRUN}
CFLAGS_COMPAT=${CFLAGS_COMPAT:--O2 -g -Wall -Wno-stringop-overflow}
CXXFLAGS_COMPAT=${CXXFLAGS_COMPAT:--O2 -g -Wall}
LIBS_COMPAT=${LIBS_COMPAT:--lm}

# AMPI (Charm++'s MPI), the reference for overdecomposition: `ampicc` on PATH or
# $AMPI_HOME/bin/ampicc. Its jobs run as `charmrun +p<n> ++local ++quiet prog +vp<n*V>`
# (charmrun from the same directory as ampicc, else from PATH): n processes (netlrts; n PEs
# in one process for a multicore build) holding n*V virtual ranks. ++local starts the
# processes on this machine without ssh (a netlrts build otherwise tries `ssh localhost`; a
# multicore build's charmrun ignores it), ++quiet drops charmrun's and the runtime's banner.
# Not `ampirun`: it is mpirun-like (`ampirun -np R prog` runs R ranks on R PEs) and appends
# its own +p, which charmrun rejects ("Option 'p' is used more than once").
# COMPAT_AMPI_RUN overrides the line with a template such as
# "{runner} +p{n} ++nodelist mynodes {exe} +vp{nv}". Empty AMPICC: not found.
AMPICC=${AMPICC:-$(command -v ampicc 2>/dev/null || true)}
if [[ -z $AMPICC && -n ${AMPI_HOME:-} && -x $AMPI_HOME/bin/ampicc ]]; then
    AMPICC=$AMPI_HOME/bin/ampicc
fi
AMPIRUN=
if [[ -n $AMPICC ]]; then
    if [[ -x $(dirname "$AMPICC")/charmrun ]]; then
        AMPIRUN=$(dirname "$AMPICC")/charmrun
    else
        AMPIRUN=$(command -v charmrun 2>/dev/null || echo charmrun)
    fi
fi

# ampicc flags for the tests allowed writable globals (GLOBALS_ALLOWED).
AMPI_PRIVATIZE_FLAGS=${AMPI_PRIVATIZE_FLAGS--pieglobals}

# compat_ampi_cmd N WORLD EXE: the AMPI command line for N processes, WORLD virtual ranks.
compat_ampi_cmd() {
    local t=${COMPAT_AMPI_RUN:-"{runner} +p{n} ++local ++quiet {exe} +vp{nv}"}
    t=${t//\{runner\}/$AMPIRUN}
    t=${t//\{n\}/$1}
    t=${t//\{nv\}/$2}
    t=${t//\{exe\}/$3}
    echo "$t"
}

# Lines Charm++ itself prints on stdout (its banner without ++quiet, and the exit line);
# compat_ampi_filter removes them so that what is left is the program's own output.
AMPI_NOISE='^(Charmrun> |Charm\+\+> |Converse/Charm\+\+ |Isomalloc> |CharmLB> |AMPI> |\[Partition [0-9]+\]\[Node [0-9]+\] End of program)'
compat_ampi_filter() {
    grep -Ev "$AMPI_NOISE" || true
}

# Symbols the C runtime itself puts in .data/.bss; anything else is a
# writable global or static of the test program, which the rules forbid.
# The sentinels' COMMON blocks that mpif.h and the mpi module declare (Toucan's and MPICH's)
# count as the runtime's too.
CRT_DATA_SYMS='^(toucan_f_[a-z_]+_|mpifcmb[0-9]+_|mpipriv[0-9c]+_|_DYNAMIC|_GLOBAL_OFFSET_TABLE_|__TMC_END__|__bss_start|__data_start|__do_global_dtors_aux_fini_array_entry|__dso_handle|__frame_dummy_init_array_entry|_edata|_end|completed\.[0-9]+|stdout|stderr|stdin)$'

# Tests allowed to define writable globals: they check privatization itself.
GLOBALS_ALLOWED='^privatize_'

# All test names (src/*.c, src/*.cc in C++, src/*.f90 and src/*.f in Fortran), filtered by
# TOUCAN_COMPAT_FILTER (an ERE).
compat_all_names() {
    local f n
    for f in "$SRC_DIR"/*.c "$SRC_DIR"/*.cc "$SRC_DIR"/*.f90 "$SRC_DIR"/*.f; do
        [[ -e $f ]] || continue
        n=$(basename "$f")
        n=${n%.*}
        if [[ -n "${TOUCAN_COMPAT_FILTER:-}" ]] && ! [[ "$n" =~ $TOUCAN_COMPAT_FILTER ]]; then
            continue
        fi
        echo "$n"
    done
}

# compat_src NAME: the source file of a test (src/NAME.c, .cc, .f90 or .f).
compat_src() {
    local e
    for e in cc f90 f; do
        if [[ -f $SRC_DIR/$1.$e ]]; then
            echo "$SRC_DIR/$1.$e"
            return
        fi
    done
    echo "$SRC_DIR/$1.c"
}

# compat_has_test NAME: is there a source file for NAME?
compat_has_test() {
    [[ -f $(compat_src "$1") ]]
}

# compat_strip_ext NAME: NAME without a source extension (.c .cc .f90 .f).
compat_strip_ext() {
    local a=${1##*/}
    a=${a%.c}
    a=${a%.cc}
    a=${a%.f90}
    echo "${a%.f}"
}

# compat_check_globals NAME OBJ: fail if the object defines writable data
# (unless NAME matches GLOBALS_ALLOWED).
compat_check_globals() {
    local name=$1 obj=$2 bad
    if [[ "$name" =~ $GLOBALS_ALLOWED ]]; then
        return 0
    fi
    bad=$(nm -P "$obj" | awk '$2 ~ /^[bBdDcCsSgG]$/ {print $1}' | sed 's/@.*//' |
          grep -Ev "$CRT_DATA_SYMS" || true)
    if [[ -n "$bad" ]]; then
        echo "$name: writable global/static variables are not allowed: ${bad//$'\n'/ }"
        return 1
    fi
    return 0
}

# compat_build KIND NAME -> builds out/KIND/NAME; KIND is mpich, toucan or ampi.
# Prints the compiler output on failure. Returns non-zero on failure.
compat_build() {
    local kind=$1 name=$2 cc dir log src flags cdir=.
    dir=$OUT_DIR/$kind
    mkdir -p "$dir"
    log=$dir/$name.build.log
    src=$(compat_src "$name")
    local fortran=no libs=$LIBS_COMPAT
    [[ $src == *.f90 || $src == *.f ]] && fortran=yes
    flags=$CFLAGS_COMPAT
    if [[ $src == *.cc ]]; then
        flags=$CXXFLAGS_COMPAT
    elif [[ $fortran == yes ]]; then
        flags=$FFLAGS_COMPAT
        libs=
    fi
    # src/NAME.cflags: extra compiler and linker flags of one test (e.g. -fopenmp).
    if [[ -f $SRC_DIR/$name.cflags ]]; then
        flags+=" $(grep -v '^#' "$SRC_DIR/$name.cflags" | tr '\n' ' ')"
    fi
    if [[ $kind == mpich ]]; then
        cc=$MPICC
        [[ $src == *.cc ]] && cc=$MPICXX
        [[ $fortran == yes ]] && cc=$MPIFC
    elif [[ $kind == ampi ]]; then
        cc=$AMPICC
        [[ $src == *.cc ]] && cc=${AMPICXX:-$(dirname "$AMPICC")/ampicxx}
        if [[ $fortran == yes ]]; then
            cc=${AMPIFC:-$(dirname "$AMPICC")/ampif90}
            # ampif90 (8.0.1) does not add it, unlike mpif90 and toucanfort: without it, a
            # routine called with a scalar and with an array does not compile.
            flags+=" -fallow-argument-mismatch"
        fi
        # ampicc (charmc) copies charmrun and ampirun into the current directory
        cdir=$dir
        # The privatize_* tests have writable globals: AMPI needs its own privatization for
        # them (-pieglobals: each virtual rank gets its own copy of the program's globals).
        if [[ "$name" =~ $GLOBALS_ALLOWED ]]; then
            flags+=" $AMPI_PRIVATIZE_FLAGS"
        fi
    else
        cc=$TOUCANCC
        [[ $src == *.cc ]] && cc=$TOUCANCXX
        [[ $fortran == yes ]] && cc=$TOUCANFC
        if [[ ! -x $cc ]]; then
            echo "$cc not found or not executable" >"$log"
            cat "$log"
            return 1
        fi
    fi
    rm -f "$dir/$name" "$dir/$name.o"
    # The build cache (README.md "Builds"): a program built before from the same inputs is
    # taken from out/cache instead of being compiled again.
    local key entry
    key=$(compat_build_key "$kind" "$name" "$src" "$cc" "$flags $libs")
    entry=$CACHE_DIR/$kind/$name.$key
    if [[ ${COMPAT_REBUILD:-0} != 1 && -x $entry ]] && ln -f "$entry" "$dir/$name" 2>/dev/null; then
        echo "(from the build cache: ${entry#"$COMPAT_DIR"/})" >"$log"
        return 0
    fi
    : >"$log"
    # shellcheck disable=SC2086
    # (Fortran: -J keeps the .mod files of a test's own modules out of the source tree.)
    local modflag=
    if [[ $fortran == yes ]]; then
        mkdir -p "$dir/mod.$name"
        modflag="-J$dir/mod.$name"
    fi
    # src/NAME.cside: the C half of a mixed-language Fortran test, compiled by the same
    # library's C compiler and linked in.
    local side=
    if [[ -f $SRC_DIR/$name.cside ]]; then
        side="$dir/$name.side.o"
        local sidecc=$TOUCANCC
        [[ $kind == mpich ]] && sidecc=$MPICC
        [[ $kind == ampi ]] && sidecc=$AMPICC
        if ! (cd "$cdir" && $sidecc $CFLAGS_COMPAT -x c -c -o "$side" "$SRC_DIR/$name.cside") >"$log" 2>&1; then
            echo "build of $name.cside with $sidecc failed:"
            head -40 "$log"
            return 1
        fi
    fi
    if ! (cd "$cdir" && $cc $flags $modflag -I"$SRC_DIR" -c -o "$dir/$name.o" "$src" &&
          $cc $flags -o "$dir/$name" "$dir/$name.o" $side $libs) >>"$log" 2>&1; then
        echo "build of $name with $cc failed:"
        head -40 "$log"
        return 1
    fi
    if ! compat_check_globals "$name" "$dir/$name.o" >>"$log"; then
        tail -1 "$log"
        return 1
    fi
    # Only a build that passed every check is kept; older entries of the program go.
    mkdir -p "$CACHE_DIR/$kind"
    rm -f "$CACHE_DIR/$kind/$name".*
    ln -f "$dir/$name" "$entry" 2>/dev/null || cp -p "$dir/$name" "$entry" || true
    return 0
}

# Built programs are kept in CACHE_DIR/KIND/NAME.KEY (hard links to out/KIND/NAME; one entry
# per program and kind, the newest). COMPAT_REBUILD=1 ignores the entries (and replaces them).
CACHE_DIR=$OUT_DIR/cache

# compat_build_key KIND NAME SRC CC FLAGS: a sha256 of everything a build of NAME reads, but
# libtoucanmpi.so, which a Toucan program links dynamically (the .so is loaded at run time,
# so a rebuilt library needs no relink): the test's source, its .cflags and .cside, every
# header of src/ and headers/, the compiler command, its flags and the files it resolves to
# (Toucan's wrapper scripts; what `mpicc -show` runs; the compiler, mpicc and the C, C++ and
# Fortran drivers by name, size and time), the wrapper's environment, the globals rule and, for Toucan's Fortran,
# libtoucanfort.a and the mpi modules, which it links or reads at build time.
compat_build_key() {
    local kind=$1 name=$2 src=$3 cc=$4 flags=$5 f tools=()
    {
        echo "compat build key 1: $kind $name $src | $cc | $flags | $CFLAGS_COMPAT | $REPO_DIR"
        echo "$CRT_DATA_SYMS $GLOBALS_ALLOWED $AMPI_PRIVATIZE_FLAGS"
        echo "${TOUCAN_CC:-} ${TOUCAN_CXX:-} ${TOUCAN_FC:-} ${TOUCAN_INCDIR:-} ${TOUCAN_LIBDIR:-}"
        [[ $kind == mpich ]] && $cc -show 2>/dev/null
        for f in ${cc%% *} cc c++ gcc g++ gfortran "$MPICC" "$TOUCANCC"; do
            f=$(command -v "$f" 2>/dev/null) && tools+=("$(readlink -f "$f")")
        done
        stat -L -c '%n %s %Y' "${tools[@]}" 2>/dev/null
        sha256sum "$src" "$SRC_DIR/$name.cflags" "$SRC_DIR/$name.cside" "$SRC_DIR"/*.h \
            "$REPO_DIR"/headers/*.h "$REPO_DIR"/wrappers/toucan{cc,cxx,fort} 2>/dev/null
        if [[ $kind == toucan && ($src == *.f90 || $src == *.f) ]]; then
            sha256sum "$REPO_DIR"/target/release/libtoucanfort.a "$REPO_DIR"/target/release/fortran/include/* 2>/dev/null
        fi
    } | sha256sum | cut -c1-16
}

# compat_build_to NAME DIR: builds NAME with mpicc and toucancc (and ampicc when AMPI is
# found, for tests without a .expect file), then writes DIR/NAME.build (why the build failed,
# empty if it did not), DIR/NAME.ampi (the same for AMPI) and last DIR/NAME.done. run.sh runs
# it in a background job, in the order of the tests, while it runs the programs already built.
compat_build_to() {
    local name=$1 dir=$2 msg err="" aerr=""
    if ! msg=$(compat_build mpich "$name"); then
        err="mpicc build failed: $msg"
    elif ! msg=$(compat_build toucan "$name"); then
        err="toucancc build failed: $msg"
    fi
    if [[ -n $AMPICC && ! -f $SRC_DIR/$name.expect ]] && ! msg=$(compat_build ampi "$name"); then
        # the first error (the compiler's, or the linker's first undefined reference)
        aerr="ampicc build failed: $({ grep -E -m1 'error:|undefined reference' <<<"$msg" ||
            echo "$msg" | tail -1; } | sed -E 's/^.*(error:|undefined reference)/\1/')"
    fi
    printf '%s' "$err" >"$dir/$name.build"
    printf '%s' "$aerr" >"$dir/$name.ampi"
    : >"$dir/$name.done"
}

# Every rank must have printed exactly one "rank R: OK" line.
# compat_all_ok FILE WORLD
compat_all_ok() {
    local file=$1 world=$2 r
    for ((r = 0; r < world; r++)); do
        if [[ $(grep -c "^rank $r: OK\$" "$file") != 1 ]]; then
            return 1
        fi
    done
    return 0
}
