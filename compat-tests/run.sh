#!/usr/bin/env bash
# compat-tests/run.sh [--quick] NAME...
#
# Builds each test program twice (mpicc -> out/mpich/NAME, wrappers/toucancc
# -> out/toucan/NAME) and runs the Toucan build under TOUCAN_V=V mpirun -np n
# for (n,V) in (2,1) (2,4) (3,3) (1,4) -- world sizes 2, 8, 9, 4 -- or only
# (2,4) with --quick (a test's own src/NAME.layouts replaces them). A layout nxWxV also sets
# TOUCAN_WORKERS=W (world n*W*V); lib.sh's COMPAT_SMP_LAYOUTS (1x2x2 2x2x1 1x2x4 3x2x1) join
# the defaults when COMPAT_SMP=1. Each run's stdout, sorted with LC_ALL=C, must equal
# expected/NAME.np<world>.out (recorded from plain MPICH by
# record-expected.sh) and the exit status must be 0; a src/NAME.expect file
# replaces that comparison (see README.md).
#
# Environment:
#   TOUCAN_COMPAT_FILTER=regex   only names matching the ERE
#   TOUCAN_COMPAT_CONFIGS="2x1 2x4 1x2x2"  override the list of layouts, nxV or nxWxV
#   COMPAT_SMP=1                 also run the SMP layouts (lib.sh: COMPAT_SMP_LAYOUTS)
#   COMPAT_LIVE_MPICH=1          also run plain MPICH now at the same world
#                                size and compare with it (slow when
#                                oversubscribed)
#   COMPAT_TIMEOUT=60            seconds per Toucan run
#   COMPAT_MPICH_TIMEOUT=600     seconds per live MPICH run
#   COMPAT_VERBOSE=1             show output of passing runs too
#   AMPI_HOME, COMPAT_AMPI_RUN   AMPI beside (see lib.sh): when ampicc is found, each test
#                                is also built with it and run with the same (n,V) as
#                                `charmrun +p<n> ++local ++quiet prog +vp<n*V>`; its results are listed as
#                                "AMPI PASS/FAIL" and counted on an "ampi:" line of their
#                                own (not in the final count)
#   COMPAT_AMPI_TIMEOUT=20       seconds per AMPI run
#   COMPAT_JOBS=2                tests run at a time (1 with COMPAT_LIVE_MPICH=1 or AMPI:
#                                their runs busy-poll); lines still come test by test, in order
#   COMPAT_BUILD_JOBS=1          builds at a time, in a background job beside the runs
#   COMPAT_REBUILD=1             ignore lib.sh's build cache (out/cache), rebuild every program
#
# Prints one line per test and, last, exactly one line
#   compat: N passed, N failed
# and exits 1 if anything failed. One test = one program at one (n,V).

set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CONFIGS=${TOUCAN_COMPAT_CONFIGS:-$COMPAT_LAYOUTS}
QUICK=0
names=()
for a in "$@"; do
    case $a in
    --quick)
        CONFIGS=${TOUCAN_COMPAT_CONFIGS:-"2x4"}
        QUICK=1
        ;;
    -h | --help)
        sed -n '2,/^$/p' "$0" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    -*)
        echo "run.sh: unknown option $a" >&2
        exit 2
        ;;
    *)
        a=$(compat_strip_ext "$a")
        if ! compat_has_test "$a"; then
            echo "run.sh: no test $SRC_DIR/$a.c, .cc, .f90 or .f" >&2
            exit 2
        fi
        if [[ -n "${TOUCAN_COMPAT_FILTER:-}" ]] && ! [[ "$a" =~ $TOUCAN_COMPAT_FILTER ]]; then
            continue
        fi
        names+=("$a")
        ;;
    esac
done
if [[ ${#names[@]} -eq 0 ]]; then
    echo "run.sh: no tests selected (give NAME..., or use run-all.sh)" >&2
    echo "compat: 0 passed, 0 failed"
    exit 1
fi

TIMEOUT=${COMPAT_TIMEOUT:-60}
MPICH_TIMEOUT=${COMPAT_MPICH_TIMEOUT:-600}
# AMPI hangs in some tests (compat-tests/README.md), spinning; its passing runs take < 1 s.
AMPI_TIMEOUT=${COMPAT_AMPI_TIMEOUT:-20}
RUN_DIR=$OUT_DIR/runs
mkdir -p "$RUN_DIR"
# Let binaries find the library even if the wrapper sets no rpath.
export LD_LIBRARY_PATH=$REPO_DIR/target/release${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

npass=0
nfail=0
apass=0
afail=0
if [[ -n $AMPICC ]]; then
    echo "compat: AMPI: $AMPICC, jobs run with $(compat_ampi_cmd N N*V PROG)"
else
    echo "compat: AMPI not found (no ampicc on PATH, AMPI_HOME unset): AMPI runs skipped"
fi

# run_ampi NAME N V BASE: runs the AMPI build and compares its output, without Charm++'s own
# lines (compat_ampi_filter), sorted, with the expected output.
run_ampi() {
    local name=$1 n=$2 v=$3 base=$4.ampi world=$(($2 * $3)) exp arc msg="" t0 t1 secs
    local label="$name (AMPI +p$n +vp$world)"
    if [[ -n $ampi_build_err ]]; then
        echo "AMPI FAIL $label: $ampi_build_err" | head -3
        afail=$((afail + 1))
        return
    fi
    t0=$(date +%s.%N)
    # shellcheck disable=SC2046 # the command is a template split into words
    timeout -k 5 "$AMPI_TIMEOUT" $(compat_ampi_cmd "$n" "$world" "$OUT_DIR/ampi/$name") >"$base.out" 2>"$base.err" </dev/null
    arc=$?
    t1=$(date +%s.%N)
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
    compat_ampi_filter <"$base.out" | LC_ALL=C sort >"$base.sorted"
    exp=$EXP_DIR/$name.np$world.out
    if [[ $arc == 124 || $arc == 137 ]]; then
        msg="timed out after ${AMPI_TIMEOUT}s"
    elif [[ $arc != 0 ]]; then
        msg="exit status $arc"
    fi
    if [[ ! -f $exp ]]; then
        msg+="${msg:+; }no expected output"
    elif ! cmp -s "$exp" "$base.sorted"; then
        msg+="${msg:+; }sorted output differs from MPICH"
    fi
    if [[ -z $msg ]]; then
        echo "AMPI PASS $label ${secs}s"
        apass=$((apass + 1))
    else
        echo "AMPI FAIL $label ${secs}s: $msg (output in ${base#"$COMPAT_DIR"/}.*)"
        afail=$((afail + 1))
    fi
}

show_output() { # FILE LABEL
    local lines
    lines=$(wc -l <"$1")
    echo "    --- $2 ($lines lines, first 40) ---"
    head -40 "$1" | sed 's/^/    | /'
}

# check_expect NAME OUT ERR RC -> prints failed expectations, returns 1 if any
check_expect() {
    local name=$1 out=$2 err=$3 rc=$4 line ok=0 what pat
    while IFS= read -r line || [[ -n $line ]]; do
        line=${line%$'\r'}
        [[ -z ${line//[[:space:]]/} || $line == \#* ]] && continue
        case $line in
        'exit!=0') [[ $rc != 0 ]] || { echo "    expected a non-zero exit status, got 0"; ok=1; } ;;
        'exit==0') [[ $rc == 0 ]] || { echo "    expected exit status 0, got $rc"; ok=1; } ;;
        exit==*) [[ $rc == "${line#exit==}" ]] || { echo "    expected exit status ${line#exit==}, got $rc"; ok=1; } ;;
        exit~*) [[ $rc =~ ${line#exit~} ]] || { echo "    exit status $rc does not match /${line#exit~}/"; ok=1; } ;;
        stdout~* | stderr~* | stdout!~* | stderr!~*)
            what=${line:0:6}
            if [[ ${line:6:2} == '!~' ]]; then
                pat=${line:8}
                if grep -Eq -- "$pat" "$([[ $what == stdout ]] && echo "$out" || echo "$err")"; then
                    echo "    $what must not match /$pat/"
                    ok=1
                fi
            else
                pat=${line:7}
                if ! grep -Eq -- "$pat" "$([[ $what == stdout ]] && echo "$out" || echo "$err")"; then
                    echo "    $what does not match /$pat/"
                    ok=1
                fi
            fi
            ;;
        *) echo "    $name.expect: unknown line '$line'"; ok=1 ;;
        esac
    done <"$SRC_DIR/$name.expect"
    return $ok
}

# Builds (README.md "Builds"): a background job builds the programs in the order of the tests,
# COMPAT_BUILD_JOBS at a time (default 1; AMPI: 1, ampicc writes into its output directory),
# each once (lib.sh's build cache skips a program built before from the same inputs), while
# the loop below runs the programs already built.
STATUS_DIR=$(mktemp -d "$OUT_DIR/.builds.XXXXXX")
BUILD_JOBS=${COMPAT_BUILD_JOBS:-1}
[[ -n $AMPICC ]] && BUILD_JOBS=1
printf '%s\0' "${names[@]}" |
    xargs -0 -n 1 -P "$BUILD_JOBS" bash -c '. "$1" && compat_build_to "$3" "$2"' _ "$COMPAT_DIR/lib.sh" "$STATUS_DIR" &
builder=$!
trap 'kill "$builder" 2>/dev/null; wait "$builder" 2>/dev/null; rm -rf "$STATUS_DIR"' EXIT

# wait_built NAME: waits for NAME's builds; sets build_err and ampi_build_err.
wait_built() {
    while [[ ! -e $STATUS_DIR/$1.done ]]; do
        if ! kill -0 "$builder" 2>/dev/null && [[ ! -e $STATUS_DIR/$1.done ]]; then
            build_err="the build job ended without building $1"
            ampi_build_err=$build_err
            return
        fi
        sleep 0.05
    done
    build_err=$(<"$STATUS_DIR/$1.build")
    ampi_build_err=$(<"$STATUS_DIR/$1.ampi")
}

# run_test NAME: builds are waited for, then every layout of NAME is run and judged; prints the
# test's lines and adds to npass, nfail, apass and afail.
run_test() {
    local name=$1
    wait_built "$name"
    # src/NAME.layouts (lines of "nxV" or "nxWxV", "@smp", # comments) replaces the default
    # layouts for that test (--quick: its first layout); TOUCAN_COMPAT_CONFIGS still
    # overrides it.
    cfgs=$CONFIGS
    if [[ -z ${TOUCAN_COMPAT_CONFIGS:-} && -f $SRC_DIR/$name.layouts ]]; then
        cfgs=$(compat_expand_layouts "$(sed 's/#.*//' "$SRC_DIR/$name.layouts" | xargs)")
        if [[ $QUICK == 1 ]]; then
            cfgs=${cfgs%% *}
        fi
    fi
    for cfg in $cfgs; do
        if ! compat_layout "$cfg"; then
            echo "FAIL $name: layout '$cfg' is neither nxV nor nxWxV (positive integers)"
            nfail=$((nfail + 1))
            continue
        fi
        if [[ -n $w ]]; then
            label="$name (n=$n,W=$w,V=$v, world $world)"
            base=$RUN_DIR/$name.n${n}w${w}v$v
            wenv=(TOUCAN_WORKERS="$w")
        else
            label="$name (n=$n,V=$v, world $world)"
            base=$RUN_DIR/$name.n${n}v$v
            # An nxV layout is W=1 whatever the caller's environment says.
            wenv=(-u TOUCAN_WORKERS)
        fi
        if [[ -n $build_err ]]; then
            echo "FAIL $label"
            echo "$build_err" | head -20 | sed 's/^/    /'
            nfail=$((nfail + 1))
            continue
        fi
        # Session 28: with COMPAT_JOBS > 1, a layout of several workers per process or of more
        # than two processes runs alone (an exclusive lock: with another test beside it, the
        # 3x2x1 and 1x2x4 runs of slow_rank and threads_multiple overran their timeout in the
        # clean-clone CI); two-process nxV layouts share the machine (a shared lock).
        lockmode=-s
        if [[ -n $w ]] || ((n > 2)); then
            lockmode=-x
        fi
        exec {lk}>"$OUT_DIR/.runlock"
        flock "$lockmode" "$lk"
        t0=$(date +%s.%N)
        # shellcheck disable=SC2086 # the launcher may carry its own options
        env "${wenv[@]}" TOUCAN_V="$v" timeout -k 5 "$TIMEOUT" $TOUCAN_LAUNCHER -np "$n" "$OUT_DIR/toucan/$name" \
            >"$base.out" 2>"$base.err" </dev/null {lk}>&-
        rc=$?
        t1=$(date +%s.%N)
        exec {lk}>&-
        secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
        LC_ALL=C sort "$base.out" >"$base.sorted"
        problems=""
        if [[ $rc == 124 || $rc == 137 ]]; then
            problems="timed out after ${TIMEOUT}s"
        elif [[ -f $SRC_DIR/$name.expect ]]; then
            problems=$(check_expect "$name" "$base.out" "$base.err" "$rc")
        else
            exp=$EXP_DIR/$name.np$world.out
            if [[ $rc != 0 ]]; then
                problems="exit status $rc"
            fi
            if [[ ! -f $exp ]]; then
                problems+="${problems:+; }no expected output $exp (run record-expected.sh)"
            elif ! cmp -s "$exp" "$base.sorted"; then
                problems+="${problems:+; }sorted output differs from MPICH (expected/${exp##*/})"
                diff -u "$exp" "$base.sorted" | head -20 >"$base.diff"
            fi
            if [[ ${COMPAT_LIVE_MPICH:-0} == 1 ]]; then
                timeout -k 5 "$MPICH_TIMEOUT" "$MPIRUN" -np "$world" "$OUT_DIR/mpich/$name" \
                    >"$base.mpich.out" 2>"$base.mpich.err" </dev/null
                mrc=$?
                LC_ALL=C sort "$base.mpich.out" >"$base.mpich.sorted"
                if [[ $mrc != 0 ]]; then
                    problems+="${problems:+; }live MPICH run failed (exit $mrc)"
                elif ! cmp -s "$base.mpich.sorted" "$base.sorted"; then
                    problems+="${problems:+; }sorted output differs from live MPICH"
                    diff -u "$base.mpich.sorted" "$base.sorted" | head -20 >"$base.livediff"
                fi
                if [[ -f $exp ]] && ! cmp -s "$exp" "$base.mpich.sorted"; then
                    echo "WARN $name: live MPICH output differs from expected/${exp##*/}"
                fi
            fi
        fi
        if [[ -z $problems ]]; then
            echo "PASS $label ${secs}s"
            npass=$((npass + 1))
            if [[ ${COMPAT_VERBOSE:-0} == 1 ]]; then
                show_output "$base.out" stdout
            fi
        else
            echo "FAIL $label ${secs}s: $(echo "$problems" | head -1 | sed 's/^ *//')"
            echo "$problems" | tail -n +2
            if [[ -s $base.diff ]]; then
                echo "    --- diff expected vs toucan (sorted, first 20 lines) ---"
                sed 's/^/    /' "$base.diff"
            fi
            if [[ -s $base.livediff ]]; then
                echo "    --- diff live MPICH vs toucan (sorted, first 20 lines) ---"
                sed 's/^/    /' "$base.livediff"
            fi
            if [[ $rc != 0 || ! -s $base.diff ]]; then
                show_output "$base.out" stdout
                show_output "$base.err" stderr
            fi
            nfail=$((nfail + 1))
        fi
        rm -f "$base.diff" "$base.livediff"
        if [[ -n $AMPICC && ! -f $SRC_DIR/$name.expect ]]; then
            # AMPI: one PE per worker, the same world.
            run_ampi "$name" "$((n * ${w:-1}))" "$v" "$base"
        fi
    done
}

# Tests run COMPAT_JOBS at a time (default 2: most runs are two processes that spend much of
# their time waiting, e.g. the deadlock tests' 3 s before the detector reports; 1 when plain
# MPICH runs live or AMPI beside, which busy-poll), each in a
# subshell writing its lines to RES/I.log and its counts to RES/I.count; the lines are printed
# in the order of the tests, each test's together, as soon as the tests before it are done.
JOBS=${COMPAT_JOBS:-2}
if [[ -z ${COMPAT_JOBS:-} && (${COMPAT_LIVE_MPICH:-0} == 1 || -n $AMPICC) ]]; then
    JOBS=1 # plain MPICH oversubscribed and AMPI busy-poll
fi
((JOBS >= 1)) || JOBS=1
declare -A live=()
printed=0
flush_done() {
    local c
    while [[ -e $STATUS_DIR/$printed.count ]]; do
        cat "$STATUS_DIR/$printed.log"
        read -r -a c <"$STATUS_DIR/$printed.count"
        npass=$((npass + c[0])) nfail=$((nfail + c[1])) apass=$((apass + c[2])) afail=$((afail + c[3]))
        printed=$((printed + 1))
    done
}
reap() {
    local j
    for j in "${!live[@]}"; do
        if [[ -e $STATUS_DIR/$j.count ]] || ! kill -0 "${live[$j]}" 2>/dev/null; then
            wait "${live[$j]}" 2>/dev/null
            if [[ ! -e $STATUS_DIR/$j.count ]]; then
                # the subshell died before it counted: its test fails once
                echo "FAIL ${names[$j]}: the runner's job for this test ended early" >>"$STATUS_DIR/$j.log"
                echo "0 1 0 0" >"$STATUS_DIR/$j.count"
            fi
            unset "live[$j]"
        fi
    done
}
for i in "${!names[@]}"; do
    while reap && ((${#live[@]} >= JOBS)); do
        flush_done
        sleep 0.05
    done
    (
        npass=0 nfail=0 apass=0 afail=0
        run_test "${names[$i]}" >"$STATUS_DIR/$i.log" 2>&1
        echo "$npass $nfail $apass $afail" >"$STATUS_DIR/$i.count.tmp"
        mv "$STATUS_DIR/$i.count.tmp" "$STATUS_DIR/$i.count"
    ) &
    live[$i]=$!
    flush_done
done
while reap && ((${#live[@]} > 0)); do
    flush_done
    sleep 0.05
done
flush_done

if [[ -n $AMPICC ]]; then
    echo "ampi: $apass passed, $afail failed (AMPI beside; not counted below)"
fi

echo "compat: $npass passed, $nfail failed"
[[ $nfail == 0 ]]
