#!/usr/bin/env bash
# bench/run-heap.sh: bench/heapsteps.c (eight temporaries of 0.2-2 MB allocated and freed
# every step, a halo exchange and an Allreduce) under plain MPICH with glibc's defaults, plain
# MPICH with MALLOC_MMAP_THRESHOLD_/MALLOC_TRIM_THRESHOLD_ set very high, Toucan-MPI with a
# heap per subrank (the default) and with TOUCAN_HEAP=system, at 1 rank and 8 ranks (one
# process of V=8 for Toucan), and AMPI multicore +vp8 when found; interleaved runs, medians of
# the steady-state time, of rank 0's 25th-percentile step time (steps that the machine's load
# did not interrupt: comparable on a busy machine, unlike the total) and of the job's minor
# page faults over those steps.
#
#   bench/run-heap.sh [-r RUNS] [-s STEPS] [-c REGEX]     (defaults 5, 100, every configuration)
#
# -c keeps the configurations whose label matches the extended regular expression REGEX, e.g.
# -c '^(mpich-np1-thresholds|toucan-V1)$' for the V=1 line alone.
#
# AMPI: AMPI_HOME (default /work/charm/multicore-linux-x86_64) with bin/ampicc.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
out="$here/out/heap"
runs=5 steps=100 only=
while [[ $# -gt 0 ]]; do
    case $1 in
    -r) runs=$2; shift 2 ;;
    -s) steps=$2; shift 2 ;;
    -c) only=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "run-heap: unknown argument $1" >&2; exit 2 ;;
    esac
done
MPICC=${MPICC:-$(command -v mpicc.mpich || echo mpicc)}
MPIRUN=${MPIRUN:-$(command -v mpirun.mpich || echo mpirun)}
TOUCANCC=${TOUCANCC:-$root/wrappers/toucancc}
AMPI_HOME=${AMPI_HOME:-/work/charm/multicore-linux-x86_64}
mkdir -p "$out"
"$MPICC" -O2 -o "$out/heapsteps.mpich" "$here/heapsteps.c" || exit 2
"$TOUCANCC" -O2 -o "$out/heapsteps.toucan" "$here/heapsteps.c" || exit 2
ampi=no
if [[ -x $AMPI_HOME/bin/ampicc ]]; then
    (cd "$out" && "$AMPI_HOME/bin/ampicc" -O2 -o heapsteps.ampi "$here/heapsteps.c" >/dev/null 2>&1) && ampi=yes
fi
big=1000000000000
configs=(
    "mpich-np1|$MPIRUN -np 1 $out/heapsteps.mpich"
    "mpich-np1-thresholds|env MALLOC_MMAP_THRESHOLD_=$big MALLOC_TRIM_THRESHOLD_=$big $MPIRUN -np 1 $out/heapsteps.mpich"
    "toucan-V1|env TOUCAN_V=1 $MPIRUN -np 1 $out/heapsteps.toucan"
    "toucan-V1-system|env TOUCAN_V=1 TOUCAN_HEAP=system $MPIRUN -np 1 $out/heapsteps.toucan"
    "mpich-np8|$MPIRUN -np 8 $out/heapsteps.mpich"
    "mpich-np8-thresholds|env MALLOC_MMAP_THRESHOLD_=$big MALLOC_TRIM_THRESHOLD_=$big $MPIRUN -np 8 $out/heapsteps.mpich"
    "toucan-1x8|env TOUCAN_V=8 $MPIRUN -np 1 $out/heapsteps.toucan"
    "toucan-1x8-system|env TOUCAN_V=8 TOUCAN_HEAP=system $MPIRUN -np 1 $out/heapsteps.toucan"
    "toucan-1x2x4|env TOUCAN_V=4 TOUCAN_WORKERS=2 $MPIRUN -np 1 $out/heapsteps.toucan"
)
if [[ $ampi == yes ]]; then
    configs+=("ampi-p1-vp8|$out/charmrun +p1 ++local ++quiet $out/heapsteps.ampi +vp8")
    configs+=("ampi-p2-vp8|$out/charmrun +p2 ++local ++quiet $out/heapsteps.ampi +vp8")
fi
if [[ -n $only ]]; then
    kept=()
    for c in "${configs[@]}"; do [[ ${c%%|*} =~ $only ]] && kept+=("$c"); done
    ((${#kept[@]})) || { echo "run-heap: no configuration matches -c $only" >&2; exit 2; }
    configs=("${kept[@]}")
fi
declare -A tm fl q25
for ((r = 0; r < runs; r++)); do
    for c in "${configs[@]}"; do
        label=${c%%|*} cmd=${c#*|}
        # shellcheck disable=SC2086 # the command is split into words on purpose
        if ! o=$(cd "$out" && timeout -k 5 600 $cmd "$steps" 10 2>&1); then
            echo "run-heap: $label failed: $(tail -3 <<<"$o")" >&2
            continue
        fi
        tm[$label]+="$(sed -n 's/^time \([0-9.]*\) .*/\1/p' <<<"$o") "
        fl[$label]+="$(sed -n 's/.* faults \([0-9]*\) .*/\1/p' <<<"$o") "
        q25[$label]+="$(sed -n 's/^steps .* p25 \([0-9.]*\) .*/\1/p' <<<"$o") "
    done
done
median() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{a[NR]=$1} END {if (NR) print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2); else print "-"}'; }
echo "heapsteps: $steps steps after 10 of warm-up; median of $runs interleaved runs"
echo
echo "| configuration | time (s) | p25 step (ms) | minor page faults (job, steady state) |"
echo "|---|---|---|---|"
for c in "${configs[@]}"; do
    label=${c%%|*}
    printf '| %s | %s | %s | %s |\n' "$label" "$(median <<<"${tm[$label]:-}")" "$(median <<<"${q25[$label]:-}")" \
        "$(median <<<"${fl[$label]:-}")"
done
