#!/usr/bin/env bash
# bench/run-msgrate-fortran.sh [-r N] [-n ITERS]: the message rate of a Fortran Isend/Irecv/
# Waitall loop (bench/msgrate_f.f90, `use mpi`) beside its C twin (bench/msgrate.c), under
# Toucan with both ranks in one process (TOUCAN_V=2 mpirun -np 1: the binding's cost is not
# hidden behind the network), in SMP mode (TOUCAN_WORKERS=2 TOUCAN_V=1 mpirun -np 1: the two
# ranks on two workers of one process, where a process-wide lock in the binding would be
# contended) and under MPICH (-np 2), interleaved, medians of N runs (default 5), with each
# run's peak RSS (the Fortran request table once grew with every request: issue 17). Prints
# a Markdown table.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
runs=5
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
out=$here/out/msgrate-fortran
mkdir -p "$out"
"$MPICC" -O2 -Wno-stringop-overflow -o "$out/c.mpich" "$here/msgrate.c"
"$root/wrappers/toucancc" -O2 -o "$out/c.toucan" "$here/msgrate.c"
(cd "$out" && "$MPIFC" -O2 -o f.mpich "$here/msgrate_f.f90")
(cd "$out" && "$root/wrappers/toucanfort" -O2 -o f.toucan "$here/msgrate_f.f90")
configs="c.mpich f.mpich c.toucan f.toucan c.toucan.w2 f.toucan.w2"
: >"$out/raw.tsv"
for ((r = 1; r <= runs; r++)); do
    for c in $configs; do
        np=2 env=()
        [[ $c == *.toucan ]] && np=1 env=(TOUCAN_V=2)
        [[ $c == *.toucan.w2 ]] && np=1 env=(TOUCAN_WORKERS=2 TOUCAN_V=1)
        line=$(env "${env[@]}" /usr/bin/time -f 'maxrss %M' timeout 120 "$MPIRUN" -np $np "$out/${c%.w2}" "$iters" 2>&1 |
            awk '$1 == "rate" {r = $2} $1 == "maxrss" {m = $2} END {if (r) print r "\t" m}') || line=
        [[ -n $line ]] || { echo "run $r of $c failed" >&2; line=$'NA\tNA'; }
        printf '%s\t%s\t%s\n' "$c" "$r" "$line" >>"$out/raw.tsv"
    done
done
med() { awk -v c="$1" -v k="$2" '$1 == c && $k != "NA" {print $k}' "$out/raw.tsv" | sort -g |
    awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
echo "Messages per second, $iters windows of 16 requests per pair (median of $runs interleaved runs;" \
    "$(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1 /proc/loadavg))"
echo
echo "| program | run | messages/s | peak RSS (KiB, mpirun's largest child) |"
echo "|---|---|---|---|"
for c in $configs; do
    how="MPICH -np 2"
    [[ $c == *.toucan ]] && how="Toucan V=2, one process"
    [[ $c == *.toucan.w2 ]] && how="Toucan W=2 V=1, one process"
    name="C (msgrate.c)"
    [[ $c == f.* ]] && name="Fortran (msgrate_f.f90)"
    printf '| %s | %s | %.0f | %s |\n' "$name" "$how" "$(med "$c" 3)" "$(med "$c" 4)"
done
