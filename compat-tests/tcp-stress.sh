#!/usr/bin/env bash
# compat-tests/tcp-stress.sh [options]
#
# Runs many consecutive jobs over TCP (UCX_TLS=tcp) and counts those that do not end by
# themselves (hangs: killed at the timeout, typically in MPI_Finalize) and those that fail
# (non-zero exit status, or not every rank printed "rank R: OK"). Toucan runs at
# n=3 V=3, n=2 V=4 and n=4 V=1; plain MPICH (the same program built with mpicc) runs at the
# same world sizes (9, 8, 4) for comparison. Not part of `make test` (minutes, not seconds).
#
# Options:
#   --runs N            Toucan jobs per layout (default 100)
#   --mpich-runs N      plain MPICH jobs per world size (default 10; 0 = none): MPICH
#                       busy-polls and crawls with more processes than cores
#   --timeout S         seconds before a Toucan job counts as hung (default 20; a job of the
#                       default program takes well under a second)
#   --mpich-timeout S   the same for MPICH (default 30)
#   --layouts "3x3 .."  Toucan layouts nxV, or nxWxV in SMP mode (default "3x3 2x4 4x1")
#   --prog NAME         compat test program from src/ (default truncate)
#   -h, --help
#
# Environment: MPICC, MPIRUN (default mpicc.mpich / mpirun.mpich when present), TOUCANCC,
# UCX_TLS (default tcp). Last lines: one summary line per layout, then
#   tcp-stress: toucan H hung, F failed of N; mpich H hung, F failed of M
# Exit status 1 if any Toucan job hung or failed.

set -u
MPICC=${MPICC:-$(command -v mpicc.mpich || echo mpicc)}
MPIRUN=${MPIRUN:-$(command -v mpirun.mpich || echo mpirun)}
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

RUNS=100
MPICH_RUNS=10
TMO=20
MPICH_TMO=30
LAYOUTS="3x3 2x4 4x1"
PROG=truncate
while [[ $# -gt 0 ]]; do
    case $1 in
    --runs) RUNS=$2; shift 2 ;;
    --mpich-runs) MPICH_RUNS=$2; shift 2 ;;
    --timeout) TMO=$2; shift 2 ;;
    --mpich-timeout) MPICH_TMO=$2; shift 2 ;;
    --layouts) LAYOUTS=$2; shift 2 ;;
    --prog) PROG=$2; shift 2 ;;
    -h | --help) sed -n '2,/^$/p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "tcp-stress.sh: unknown option $1" >&2; exit 2 ;;
    esac
done

export UCX_TLS=${UCX_TLS:-tcp}
export LD_LIBRARY_PATH=$REPO_DIR/target/release${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
RUN_DIR=$OUT_DIR/tcp-stress
mkdir -p "$RUN_DIR"
compat_build toucan "$PROG" || exit 2
if [[ $MPICH_RUNS -gt 0 ]]; then
    compat_build mpich "$PROG" || exit 2
fi
echo "tcp-stress: $PROG, UCX_TLS=$UCX_TLS, $RUNS Toucan jobs per layout ($LAYOUTS, timeout ${TMO}s)," \
    "$MPICH_RUNS MPICH jobs per world size (timeout ${MPICH_TMO}s)"

# One job; prints nothing, returns 0 ok, 1 failed, 2 hung. run_job KIND N V TIMEOUT BASE
run_job() {
    local kind=$1 n=$2 v=$3 tmo=$4 base=$5 rc
    if [[ $kind == toucan ]]; then
        TOUCAN_WORKERS=$W TOUCAN_V=$v timeout -k 5 "$tmo" "$MPIRUN" -np "$n" "$OUT_DIR/toucan/$PROG" >"$base.out" 2>"$base.err" </dev/null
    else
        timeout -k 5 "$tmo" "$MPIRUN" -np "$n" "$OUT_DIR/mpich/$PROG" >"$base.out" 2>"$base.err" </dev/null
    fi
    rc=$?
    # The launcher and every process of the job must be gone (timeout killed the launcher;
    # hydra takes its processes with it).
    if [[ $rc == 124 || $rc == 137 ]]; then
        return 2
    fi
    if [[ $rc != 0 ]] || ! compat_all_ok "$base.out" $((n * W * v)); then
        return 1
    fi
    return 0
}

# series KIND N V COUNT TIMEOUT -> one summary line; adds to the totals
series() {
    local kind=$1 n=$2 v=$3 count=$4 tmo=$5 i r hung=0 failed=0 orphans=0 t0 t1 label base left
    label="$kind n=$n W=$W V=$v (world $((n * W * v)))"
    [[ $kind == mpich ]] && label="mpich -np $n"
    t0=$(date +%s)
    for ((i = 1; i <= count; i++)); do
        base=$RUN_DIR/$kind.n${n}w${W}v$v.$i
        run_job "$kind" "$n" "$v" "$tmo" "$base"
        r=$?
        if [[ $r == 0 ]]; then
            rm -f "$base.out" "$base.err"
        elif [[ $r == 2 ]]; then
            hung=$((hung + 1))
            echo "  $label job $i: HUNG (killed after ${tmo}s; output in ${base#"$COMPAT_DIR"/}.*)"
        else
            failed=$((failed + 1))
            echo "  $label job $i: FAILED (output in ${base#"$COMPAT_DIR"/}.*)"
        fi
        # No process of the job may outlive it (they would also skew the next jobs).
        left=$(pgrep -f "^$OUT_DIR/$kind/$PROG\$" | tr '\n' ' ')
        if [[ -n $left ]]; then
            orphans=$((orphans + 1))
            echo "  $label job $i: processes left behind: $left(killed)"
            # shellcheck disable=SC2086
            kill -KILL $left 2>/dev/null
        fi
    done
    t1=$(date +%s)
    echo "$label: $((count - hung - failed)) ended cleanly, $hung hung, $failed failed of $count, $orphans left processes behind ($((t1 - t0)) s)"
    if [[ $kind == toucan ]]; then
        T_HUNG=$((T_HUNG + hung)); T_FAIL=$((T_FAIL + failed + orphans)); T_N=$((T_N + count))
    else
        M_HUNG=$((M_HUNG + hung)); M_FAIL=$((M_FAIL + failed)); M_N=$((M_N + count))
    fi
}

T_HUNG=0 T_FAIL=0 T_N=0 M_HUNG=0 M_FAIL=0 M_N=0
for l in $LAYOUTS; do
    # nxV, or nxWxV (W workers per process: SMP mode)
    IFS=x read -r n W v <<<"$l"
    if [[ -z $v ]]; then v=$W W=1; fi
    series toucan "$n" "$v" "$RUNS" "$TMO"
    if [[ $MPICH_RUNS -gt 0 ]]; then
        world=$((n * W * v))
        W=1 series mpich "$world" 1 "$MPICH_RUNS" "$MPICH_TMO"
    fi
done
echo "tcp-stress: toucan $T_HUNG hung, $T_FAIL failed of $T_N; mpich $M_HUNG hung, $M_FAIL failed of $M_N"
[[ $T_HUNG == 0 && $T_FAIL == 0 ]]
