#!/usr/bin/env bash
# bench/run-rma.sh: one-sided communication (issue 18), plain MPICH and Toucan-MPI side by
# side in one run (bench/rma.c).
#
#   bench/run-rma.sh [-r RUNS] [-q] [-c] [--no-rt] [--pairs]
#
# -c: windows made by MPI_Win_create over malloc'ed memory (both libraries) instead of
# MPI_Win_allocate. Between the processes of a node MPICH and Toucan put MPI_Win_allocate's
# memory in shared memory (puts and gets are copies); a created window's memory is the
# program's: MPICH registers it with UCX, and so does Toucan, which gives each virtual created
# window real MPI_Win_create windows of its own (rma4): -c measures that path (docs/rma.md).
#
# The two-process configurations (mpich-2p, toucan-inter, toucan-sib) run under `chrt -f 10`
# (real-time FIFO) when the caller may use it: on a 2-core VM shared with other work their
# latency was bimodal without it (one busy-polling process per core must keep its core).
# --no-rt runs them as ordinary processes. --pairs skips the 8-rank configurations (the
# Fetch_and_op rate: MPICH -np 8 busy-polls 8 processes on the cores and takes minutes).
#
# Configurations (each run RUNS times, interleaved; medians reported):
#   mpich-2p      mpirun -np 2                       put/get between two processes
#   toucan-inter  TOUCAN_V=1 mpirun -np 2            the same between Toucan's processes
#   toucan-sib    TOUCAN_V=2 mpirun -np 1            ranks 0 and 1 are sibling subranks
#   mpich-8p      mpirun -np 8                       Fetch_and_op rate, 8 ranks
#   toucan-2x4    TOUCAN_V=4 mpirun -np 2            Fetch_and_op rate, 8 ranks in 2 processes
# and prints the issue's lines: put 8 B + flush latency and 1 MiB put/get bandwidth of
# toucan-inter against mpich-2p (goal within 1.3x), toucan-sib against a memcpy of the same
# bytes (goal within 1.2x), and the Fetch_and_op rate of toucan-2x4 against mpich-8p (goal
# at least 1x). On a loaded or small machine the numbers are noise: label them so.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
runs=3
quick=
create=
rt=1
pairs=0
while [[ $# -gt 0 ]]; do
    case $1 in
    -r) runs=$2; shift 2 ;;
    -q) quick=-q; shift ;;
    -c) create=-c; shift ;;
    --no-rt) rt=0; shift ;;
    --pairs) pairs=1; shift ;;
    -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    *) echo "run-rma: unknown option $1" >&2; exit 2 ;;
    esac
done
MPICC=${MPICC:-mpicc}
MPIRUN=${MPIRUN:-mpirun}
out="$here/out/rma"
mkdir -p "$out"
$MPICC -O2 "$here/rma.c" -o "$out/rma.mpich"
"$root/wrappers/toucancc" -O2 "$here/rma.c" -o "$out/rma.toucan"
configs=(mpich-2p toucan-inter toucan-sib)
[[ $pairs == 1 ]] || configs+=(mpich-8p toucan-2x4)
fifo=()
if [[ $rt == 1 ]] && chrt -f 10 true 2>/dev/null; then fifo=(chrt -f 10); fi
run_one() { # CONFIG -> output lines
    case $1 in
    mpich-2p) timeout 300 "${fifo[@]}" $MPIRUN -np 2 "$out/rma.mpich" $quick $create ;;
    toucan-inter) TOUCAN_V=1 timeout 300 "${fifo[@]}" $MPIRUN -np 2 "$out/rma.toucan" $quick $create ;;
    toucan-sib) TOUCAN_V=2 timeout 300 "${fifo[@]}" $MPIRUN -np 1 "$out/rma.toucan" $quick $create ;;
    mpich-8p) timeout 600 $MPIRUN -np 8 "$out/rma.mpich" -q $create ;;
    toucan-2x4) TOUCAN_V=4 timeout 300 $MPIRUN -np 2 "$out/rma.toucan" -q $create ;;
    esac
}
raw="$out/raw.tsv"
: >"$raw"
for ((r = 1; r <= runs; r++)); do
    for c in "${configs[@]}"; do
        if ! run_one "$c" >"$out/$c.$r.out" 2>"$out/$c.$r.err"; then
            echo "run-rma: $c run $r failed (see $out/$c.$r.err)" >&2
            continue
        fi
        awk -v c="$c" '$1 ~ /^(lat|bw|rate)$/ {print c "\t" $1 " " $2 "\t" $3}' "$out/$c.$r.out" >>"$raw"
    done
done
med() { # CONFIG MEASURE -> median or "-"
    awk -F'\t' -v c="$1" -v m="$2" '$1 == c && $2 == m {print $3}' "$raw" | sort -g |
        awk '{v[NR] = $1} END {if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a == "-" || b == "-" || b == 0) print "-"; else printf "%.2f\n", a / b}'; }
if [[ -n $create ]]; then echo "Windows: MPI_Win_create (-c)"; else echo "Windows: MPI_Win_allocate"; fi
echo
echo "| measurement | mpich-2p | toucan-inter | toucan-sib | inter/mpich | sib vs memcpy |"
echo "|---|---|---|---|---|---|"
mc=$(med toucan-sib "bw memcpy")
for m in "lat put8" "bw put" "bw get"; do
    a=$(med mpich-2p "$m") b=$(med toucan-inter "$m") s=$(med toucan-sib "$m")
    case $m in
    lat*) r1=$(ratio "$b" "$a"); r2="-" ;;
    *) r1=$(ratio "$a" "$b"); r2=$(ratio "$mc" "$s") ;;
    esac
    echo "| $m | $a | $b | $s | $r1 | $r2 |"
done
echo "| bw memcpy (rank 0) | $(med mpich-2p "bw memcpy") | $(med toucan-inter "bw memcpy") | $mc | | |"
f8=$(med mpich-8p "rate fop") f24=$(med toucan-2x4 "rate fop")
echo
echo "Fetch_and_op on one counter, 8 ranks: mpich -np 8 $f8/s, toucan n=2 V=4 $f24/s, toucan/mpich $(ratio "$f24" "$f8")"
echo "(ratios: inter/mpich is time or inverse bandwidth, goal <= 1.3; sib vs memcpy is memcpy bandwidth / put or get bandwidth, goal <= 1.2)"
echo "($runs runs per configuration, medians; two-process runs ${fifo[*]:-without chrt}; raw values in $raw)"
