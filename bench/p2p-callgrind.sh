#!/usr/bin/env bash
# p2p-callgrind.sh: instructions per point-to-point call between two processes at V=1
# (issue 16, docs/p2p.md): bench/p2pcalls.c under valgrind --tool=callgrind on both ranks of
# `mpirun -np 2`, built with mpicc (plain MPICH) and with wrappers/toucancc (Toucan: the general
# path, and the pass-through with TOUCAN_P2P_DIRECT=on). Prints each call's inclusive
# instruction count over its number of calls. Counts do not depend on the machine's load.
# bench/p2pposted.c adds (E): receives posted before their messages arrive (the message
# rate's common case), taken by a MPI_Waitall once the messages wait in the real MPI.
#
#   bench/p2p-callgrind.sh [WINDOWS]        (default 200; about a minute per column)
#   P2P_COLUMNS="mpich general direct"      columns to run (default all three)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
win=${1:-200}
out="${TMPDIR:-/tmp}/toucan-p2p-callgrind"
mkdir -p "$out"
mpicc -O2 -g -w "$here/p2pcalls.c" -o "$out/p2pcalls-mpich"
"$root/wrappers/toucancc" -O2 -g -w "$here/p2pcalls.c" -o "$out/p2pcalls-toucan"
mpicc -O2 -g -w "$here/p2pposted.c" -o "$out/p2pposted-mpich"
"$root/wrappers/toucancc" -O2 -g -w "$here/p2pposted.c" -o "$out/p2pposted-toucan"
run() { # run COLUMN EXE [ENV...]
    local col=$1 exe=$2; shift 2
    for prog in p2pcalls p2pposted; do
        env "$@" TOUCAN_SENTINEL=off TOUCAN_V=1 timeout 600 mpirun -np 2 valgrind --tool=callgrind \
            --callgrind-out-file="$out/$col.$prog.%q{PMI_RANK}.out" "$out/$prog-$exe" "$win" 2>/dev/null | grep -q "bad 0" \
            || { echo "p2p-callgrind: $col $prog: wrong data or failed run" >&2; exit 1; }
    done
}
get() { # get FILE FUNCTION: inclusive instructions of FUNCTION (or of its PMPI_ twin)
    local v
    v=$(callgrind_annotate --inclusive=yes --threshold=100 "$1" 2>/dev/null | grep -E ":$2 \[" | head -1 | awk '{gsub(",","",$1); print $1}')
    [[ -z $v ]] && v=$(callgrind_annotate --inclusive=yes --threshold=100 "$1" 2>/dev/null | grep -E ":P$2 \[" | head -1 | awk '{gsub(",","",$1); print $1}')
    echo "${v:-0}"
}
cols=${P2P_COLUMNS:-"mpich general direct"}
for c in $cols; do
    case $c in
        mpich) run mpich mpich ;;
        general) run general toucan TOUCAN_P2P_DIRECT=off ;;
        direct) run direct toucan TOUCAN_P2P_DIRECT=on ;;
        *) echo "p2p-callgrind: unknown column $c" >&2; exit 2 ;;
    esac
done
w8=$((win * 8))
printf '%-40s' "instructions per call (8 B, arrived)"
for c in $cols; do printf '%10s' "$c"; done
echo
row() { # row LABEL RANK FUNCTION CALLS [PROGRAM]
    printf '%-40s' "$1"
    for c in $cols; do printf '%10.0f' "$(echo "$(get "$out/$c.${5:-p2pcalls}.$2.out" "$3") / $4" | bc -l)"; done
    echo
}
row "MPI_Isend (A)" 0 MPI_Isend "$w8"
row "MPI_Waitall of 8 sends (A)" 0 MPI_Waitall "$win"
row "MPI_Irecv (A)" 1 MPI_Irecv "$w8"
row "MPI_Waitall of 8 receives (A)" 1 MPI_Waitall "$win"
row "MPI_Send (B)" 0 MPI_Send "$w8"
row "MPI_Recv (B, C)" 1 MPI_Recv "$((2 * w8))"
row "MPI_Sendrecv (C)" 0 MPI_Sendrecv "$w8"
row "MPI_Irecv (D)" 0 MPI_Irecv "$w8"
row "MPI_Wait (D)" 0 MPI_Wait "$w8"
row "MPI_Irecv, nothing arrived (E)" 1 MPI_Irecv "$w8" p2pposted
row "MPI_Waitall of 8 posted receives (E)" 1 MPI_Waitall "$win" p2pposted
