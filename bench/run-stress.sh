#!/usr/bin/env bash
# bench/run-stress.sh: the point-to-point stress program (compat-tests/src/stress.c) at full
# size, under Toucan-MPI at several layouts and under plain MPICH, every payload and the
# non-overtaking order checked (see the program's header).
#
#   bench/run-stress.sh [-m MESSAGES] [-s SEED] [-l "nxV ..."] [--mpich "NP ..."] [-t SECONDS]
#                       [--update-results]
#
#   -m MESSAGES       messages job-wide per run (default 1000000)
#   -s SEED           seed of the plan (default 1)
#   -l LAYOUTS        Toucan layouts, processes x subranks (default "2x1 1x4 2x4 1x16 2x16"),
#                     or processes x workers x subranks (SMP mode, e.g. "1x2x4 2x2x2")
#   --mpich NPS       plain MPICH process counts (default "2"; "" for none: oversubscribed MPICH
#                     busy-polls, 4 processes on 2 cores take minutes)
#   -t SECONDS        timeout of one run (default 900)
#   --update-results  rewrite the section between <!-- stress:begin --> and <!-- stress:end -->
#                     of bench/RESULTS.md
#
# Prints one Markdown table row per run (messages and bytes checked, errors, seconds). Exit
# status 1 if a run failed, timed out or reported an error. Outputs: bench/out/stress/.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
out="$here/out/stress"
results="$here/RESULTS.md"
# shellcheck source=bench/lib.sh
. "$here/lib.sh" # update_section
msgs=1000000
seed=1
layouts="2x1 1x4 2x4 1x16 2x16"
mpich_nps="2"
tmo=900
update=no
invoked="$*"

while [[ $# -gt 0 ]]; do
    case $1 in
    -m) msgs=$2; shift 2 ;;
    -s) seed=$2; shift 2 ;;
    -l) layouts=$2; shift 2 ;;
    --mpich) mpich_nps=$2; shift 2 ;;
    -t) tmo=$2; shift 2 ;;
    --update-results) update=yes; shift ;;
    -h | --help) sed -n '2,/^set -/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "run-stress: unknown argument $1" >&2; exit 2 ;;
    esac
done

MPICC=${MPICC:-$(command -v mpicc.mpich || echo mpicc)}
MPIRUN=${MPIRUN:-$(command -v mpirun.mpich || echo mpirun)}
TOUCANCC=${TOUCANCC:-$root/wrappers/toucancc}
mkdir -p "$out/runs"
src=$root/compat-tests/src/stress.c
flags=(-O2 -g -I"$root/compat-tests/src")
"$MPICC" "${flags[@]}" -o "$out/stress.mpich" "$src" || exit 2
"$TOUCANCC" "${flags[@]}" -o "$out/stress.toucan" "$src" || exit 2

failed=0
rows=()
# run LABEL WORLD CMD...: one run, one table row
run() {
    local label=$1 world=$2 base=$out/runs/$1
    shift 2
    local t0 t1 rc secs line
    t0=$(date +%s.%N)
    timeout -k 10 "$tmo" "$@" >"$base.out" 2>"$base.err" </dev/null
    rc=$?
    t1=$(date +%s.%N)
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
    line=$(grep -m1 '^rank 0: stress:' "$base.out")
    local ph m b e
    read -r ph m b e < <(echo "$line" | sed -E 's/.*stress: ([0-9]+) phases, ([0-9]+) messages \(([0-9]+) bytes\) checked, ([0-9]+) errors.*/\1 \2 \3 \4/')
    if [[ $rc != 0 || -z $line || $e != 0 ]]; then
        failed=1
        echo "run-stress: $label failed (exit $rc; see $base.out, $base.err)" >&2
        rows+=("| $label | $world | FAILED (exit $rc) | | | | $secs |")
        return
    fi
    rows+=("| $label | $world | $m | $(awk -v b="$b" 'BEGIN { printf "%.2f", b / 1e9 }') | $ph | $e | $secs |")
    echo "${rows[-1]}"
}

for l in $layouts; do
    # nxV, or nxWxV (SMP mode: W workers per process)
    IFS=x read -r n w v <<<"$l"
    if [[ -z $v ]]; then v=$w w=1; fi
    run "toucan-$l" $((n * w * v)) env TOUCAN_WORKERS="$w" TOUCAN_V="$v" "$MPIRUN" -np "$n" "$out/stress.toucan" "$msgs" "$seed"
done
for np in $mpich_nps; do
    run "mpich-$np" "$np" "$MPIRUN" -np "$np" "$out/stress.mpich" "$msgs" "$seed"
done

table=$(
    echo "Produced by \`bench/run-stress.sh${invoked:+ $invoked}\` on $(date -u '+%Y-%m-%d %H:%M') UTC, commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null), load average after the runs: $(cut -d' ' -f1-3 /proc/loadavg) (wall times are only comparable on a quiet machine)."
    echo
    echo "| run | world | messages checked | GB checked | phases | errors | seconds |"
    echo "|---|---:|---:|---:|---:|---:|---:|"
    printf '%s\n' "${rows[@]}"
)
echo
echo "$table"
if [[ $update == yes ]]; then
    section=$(mktemp)
    printf '%s\n' "$table" >"$section"
    tag=run-stress update_section "$results" stress "$section"
    rm -f "$section"
fi
exit $failed
