#!/usr/bin/env bash
# run-p2pab.sh: timed point-to-point loops at V=1, A/B between two Toucan builds and plain
# MPICH, interleaved (issue 16, docs/p2p.md "Session 18"). bench/p2ploop.c (ping-pong,
# Sendrecv, a 2+2 exchange, the 8-message window rate) under `chrt -f 10 mpirun -np 2` when
# allowed; each run prints one line per configuration; medians at the end.
#
#   bench/run-p2pab.sh BASE_LIBDIR [RUNS [ITERS [BYTES]]]
#       BASE_LIBDIR   a release directory holding the other build's libtoucanmpi.so
#                     (e.g. /work/base-s18/target/release); "new" is this tree's build
#   env: P2PAB_ENV="TOUCAN_P2P_DIRECT=on ..." extra environment for both Toucan columns
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
base=${1:?usage: run-p2pab.sh BASE_LIBDIR [RUNS [ITERS [BYTES]]]}
runs=${2:-3}
iters=${3:-30000}
bytes=${4:-8}
out="${TMPDIR:-/tmp}/toucan-p2pab.$$"
mkdir -p "$out/new" "$out/base"
trap 'rm -rf "$out"' EXIT
# Snapshots: the libraries may be rebuilt while this runs.
cp "$root/target/release/libtoucanmpi.so" "$out/new/"
cp "$base/libtoucanmpi.so" "$out/base/"
mpicc -O2 -w "$here/p2ploop.c" -o "$out/p2ploop-mpich"
"$root/wrappers/toucancc" -O2 -w "$here/p2ploop.c" -o "$out/p2ploop-toucan"
fifo=()
if chrt -f 10 true 2>/dev/null; then fifo=(chrt -f 10); fi
# shellcheck disable=SC2086 # P2PAB_ENV is a list of assignments
run() { # run LABEL: one line "LABEL pingpong sendrecv exchange rate"
    local line
    case $1 in
        mpich) line=$("${fifo[@]}" timeout 300 mpirun -np 2 "$out/p2ploop-mpich" "$iters" "$bytes") ;;
        *) line=$(env ${P2PAB_ENV:-} TOUCAN_V=1 LD_LIBRARY_PATH="$out/$1" "${fifo[@]}" timeout 300 mpirun -np 2 "$out/p2ploop-toucan" "$iters" "$bytes") ;;
    esac
    echo "$line" | awk -v l="$1" '{print l, $4, $7, $10, $13}'
}
for ((r = 0; r < runs; r++)); do
    for c in mpich base new; do run $c; done
done | tee "$out/raw"
echo "medians ($runs runs, $bytes B, ${fifo[*]:-no chrt}; load $(cut -d' ' -f1-3 /proc/loadavg)):"
echo "config pingpong_us sendrecv_us exchange_us rate_Mps | vs mpich: pingpong sendrecv exchange rate"
awk '{ n[$1]++; for (i = 2; i <= 5; i++) v[$1, i, n[$1]] = $i }
function med(c, i,   k, m, a, j, t) { m = n[c]; for (k = 1; k <= m; k++) a[k] = v[c, i, k];
    for (k = 1; k <= m; k++) for (j = k + 1; j <= m; j++) if (a[j] < a[k]) { t = a[k]; a[k] = a[j]; a[j] = t }
    return (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2 }
END { for (i = 2; i <= 5; i++) M[i] = med("mpich", i)
    split("mpich base new", cs, " ")
    for (k = 1; k <= 3; k++) { c = cs[k]; printf "%-6s", c; for (i = 2; i <= 5; i++) printf " %8.3f", med(c, i);
        printf "  |"; for (i = 2; i <= 5; i++) printf " %6.2f", med(c, i) / M[i]; printf "\n" } }' "$out/raw"
