#!/usr/bin/env bash
# bench/run-pingpong-fortran.sh [-r N] [-n ITERS]: 8-byte latency between two processes
# through the Fortran bindings (issue 17's benchmark), interleaved, medians of N runs
# (default 7): the C binding (bench/pingpong.c -t lat, its 8 B line), mpif.h
# (bench/pingpong_f77.f) and mpi_f08 (bench/pingpong_f08.f90), each built with MPICH's
# mpicc/mpif90 and with Toucan's toucancc/toucanfort, run as `mpirun -np 2` (Toucan at
# TOUCAN_V=1: ranks 0 and 1 in two processes). Prints a Markdown table with the ratios the
# issue asks for (Toucan Fortran / Toucan C, Toucan Fortran / MPICH Fortran).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
runs=7
iters=20000
while (($#)); do
    case $1 in
    -r) runs=$2; shift 2 ;;
    -n) iters=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
MPICC=${MPICC:-$(command -v mpicc.mpich || echo mpicc)}
MPIFC=${MPIFC:-$(command -v mpif90.mpich || echo mpif90)}
MPIRUN=${MPIRUN:-$(command -v mpirun.mpich || echo mpirun)}
out=$here/out/pingpong-fortran
mkdir -p "$out"
"$MPICC" -O2 -I"$here" -o "$out/c.mpich" "$here/pingpong.c"
"$root/wrappers/toucancc" -O2 -I"$here" -o "$out/c.toucan" "$here/pingpong.c"
"$MPIFC" -O2 -o "$out/f77.mpich" "$here/pingpong_f77.f"
"$root/wrappers/toucanfort" -O2 -o "$out/f77.toucan" "$here/pingpong_f77.f"
(cd "$out" && "$MPIFC" -O2 -o f08.mpich "$here/pingpong_f08.f90")
(cd "$out" && "$root/wrappers/toucanfort" -O2 -o f08.toucan "$here/pingpong_f08.f90")
configs="c.mpich f77.mpich f08.mpich c.toucan f77.toucan f08.toucan"
: >"$out/raw.tsv"
for ((r = 1; r <= runs; r++)); do
    for c in $configs; do
        if [[ $c == c.* ]]; then
            v=$(TOUCAN_V=1 timeout 120 "$MPIRUN" -np 2 "$out/$c" -t lat | awk '$1 == "lat" && $2 == 8 {print $3}') || v=
        else
            v=$(TOUCAN_V=1 timeout 120 "$MPIRUN" -np 2 "$out/$c" "$iters" | awk '$1 == "lat" {print $3}') || v=
        fi
        # a failed or timed-out run is recorded as NA and left out of the medians
        [[ -n $v ]] || { echo "run $r of $c failed" >&2; v=NA; }
        printf '%s\t%s\t%s\n' "$c" "$r" "$v" >>"$out/raw.tsv"
    done
done
med() { awk -v c="$1" '$1 == c && $3 != "NA" {print $3}' "$out/raw.tsv" | sort -g | awk '{a[NR] = $1} END {printf "%.3f\n", (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
declare -A m
for c in $configs; do m[$c]=$(med "$c"); done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
echo "8 B latency between two processes, µs (median of $runs interleaved runs; $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1 /proc/loadavg))"
echo
echo "| binding | MPICH | Toucan V=1 | Toucan / MPICH (same binding) | Toucan / Toucan C |"
echo "|---|---|---|---|---|"
for b in c f77 f08; do
    name=$b
    [[ $b == c ]] && name="C (pingpong.c)"
    [[ $b == f77 ]] && name="mpif.h"
    [[ $b == f08 ]] && name="mpi_f08"
    echo "| $name | ${m[$b.mpich]} | ${m[$b.toucan]} | $(ratio "${m[$b.toucan]}" "${m[$b.mpich]}") | $(ratio "${m[$b.toucan]}" "${m[c.toucan]}") |"
done
