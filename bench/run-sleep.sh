#!/usr/bin/env bash
# bench/run-sleep.sh: a program sleeping in a loop (bench/sleep.c: STEPS x usleep(MS ms) and
# an Allreduce) under plain MPICH and Toucan-MPI at several layouts, interleaved; prints the
# median wall time (the program's own, rank 0) and the median CPU time of the whole job
# (user + system of mpirun and its children) per configuration.
#
#   bench/run-sleep.sh [-r RUNS] [-s STEPS] [-m MS]     (defaults 5, 20, 50)
#
# Before issue 15 a subrank's usleep stopped its whole process, so V subranks slept one after
# another: V=8 took 8x as long as V=1. Now each sleeping subrank is parked until its time is up.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
out="$here/out/sleep"
runs=5 steps=20 ms=50
while [[ $# -gt 0 ]]; do
    case $1 in
    -r) runs=$2; shift 2 ;;
    -s) steps=$2; shift 2 ;;
    -m) ms=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "run-sleep: unknown argument $1" >&2; exit 2 ;;
    esac
done
MPICC=${MPICC:-$(command -v mpicc.mpich || echo mpicc)}
MPIRUN=${MPIRUN:-$(command -v mpirun.mpich || echo mpirun)}
TOUCANCC=${TOUCANCC:-$root/wrappers/toucancc}
mkdir -p "$out"
"$MPICC" -O2 -o "$out/sleep.mpich" "$here/sleep.c" || exit 2
"$TOUCANCC" -O2 -o "$out/sleep.toucan" "$here/sleep.c" || exit 2

# label: n W V (W=0: plain MPICH with n processes)
configs=("mpich-np1:1:0:1" "mpich-np8:8:0:1" "toucan-1x1:1:1:1" "toucan-1x8:1:1:8" "toucan-2x4:2:1:4" "toucan-1x2x4:1:2:4")
declare -A wall cpu
for ((r = 0; r < runs; r++)); do
    for c in "${configs[@]}"; do
        IFS=: read -r label n w v <<<"$c"
        if ((w == 0)); then
            cmd=("$MPIRUN" -np "$n" "$out/sleep.mpich" "$steps" "$ms")
            envs=()
        else
            cmd=("$MPIRUN" -np "$n" "$out/sleep.toucan" "$steps" "$ms")
            envs=(TOUCAN_V="$v" TOUCAN_WORKERS="$w")
        fi
        if ! o=$(env "${envs[@]}" /usr/bin/time -f "cpu %U %S" timeout -k 5 300 "${cmd[@]}" 2>&1); then
            echo "run-sleep: $label failed: $o" >&2
            exit 1
        fi
        t=$(sed -n 's/^time \([0-9.]*\).*/\1/p' <<<"$o")
        u=$(awk '/^cpu /{print $2 + $3}' <<<"$o")
        wall[$label]+="$t "
        cpu[$label]+="$u "
    done
done
median() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
echo "sleep: $steps steps of usleep(${ms} ms) + Allreduce; median of $runs interleaved runs"
echo
echo "| configuration | ranks | wall (s) | CPU of the job (s) |"
echo "|---|---|---|---|"
for c in "${configs[@]}"; do
    IFS=: read -r label n w v <<<"$c"
    ranks=$((w == 0 ? n : n * w * v))
    printf '| %s | %d | %s | %s |\n' "$label" "$ranks" "$(median <<<"${wall[$label]}")" "$(median <<<"${cpu[$label]}")"
done
