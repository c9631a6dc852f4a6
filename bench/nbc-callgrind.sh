#!/usr/bin/env bash
# nbc-callgrind.sh: instructions of a nonblocking collective (MPI_I* + MPI_Wait) beside its
# blocking form between processes, counted with callgrind on bench/nbccalls.c (issue 16,
# docs/collectives.md "Session 20 (nbc11)"). Two modes:
#
#   bench/nbc-callgrind.sh [--lib LIBDIR] v1 KINDS SIZES
#       n=2 V=1, both ranks under callgrind, each rank's figure from the run where it is late
#       (bench/coll-callgrind.sh's method: the late rank finds what it receives arrived; note
#       that a late rank's worker polls during its sleep, which lets a blocking receive find
#       its message already matched, while a nonblocking call posts its real receive only
#       when called). Prints per rank "call+wait=total" instructions per call, 500 calls.
#   bench/nbc-callgrind.sh [--lib LIBDIR] v4 KINDS SIZES
#       n=2 V=4, process 1 (away from Bcast's root) under callgrind, IMB's loop (call, wait,
#       barrier on the communicator; NBC_CALLGRIND_PROC=0: process 0, the roots' process,
#       instead); per iteration (four members) from the difference of
#       100 and 400 iterations: the calls' inclusive count and the whole program's (polls
#       included: timing-dependent, but what the process spent).
#
# KINDS: comma-separated kinds of nbccalls (bcast, ibcast, allreduce, iallreduce, ...);
# SIZES: comma-separated byte sizes. --lib: another libtoucanmpi.so's directory (default this
# tree's target/release), copied first.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
lib="$root/target/release"
if [[ ${1:-} == --lib ]]; then lib=${2:?}; shift 2; fi
mode=${1:?mode v1 or v4} kinds=${2:?kinds} sizes=${3:?sizes}
out="${TMPDIR:-/tmp}/toucan-nbc-callgrind"
mkdir -p "$out/lib"
cp "$lib/libtoucanmpi.so" "$out/lib/"
"$root/wrappers/toucancc" -O2 -g -w "$here/nbccalls.c" -o "$out/nbccalls"
mpirun=$(command -v mpirun.mpich || command -v mpirun)
vg=(valgrind --tool=callgrind --trace-children=yes)
run=(env "LD_LIBRARY_PATH=$out/lib" TOUCAN_SENTINEL=off)

# incl FILE NAME: inclusive count of function NAME (e.g. MPI_Ibcast) in FILE, 0 if absent.
incl() {
    local a v
    a=$(callgrind_annotate --inclusive=yes --threshold=100 "$1" 2>/dev/null)
    v=$(awk -v f=":$2 \\[" '$0 ~ f {gsub(",","",$1); print $1; exit}' <<<"$a")
    echo "${v:-0}"
}
# names KIND: the MPI function of a kind and whether it waits.
fname() {
    local k=${1#i} n
    n="$(tr '[:lower:]' '[:upper:]' <<<"${k:0:1}")${k:1}"
    if [[ $1 == i* ]]; then echo "MPI_I$k"; else echo "MPI_$n"; fi
}

v1() { # KIND BYTES
    local k=$1 b=$2 n=500 f fn res=() late r c w file
    fn=$(fname "$k")
    for late in 0 1; do
        f="$out/v1.$k.$b.$late"
        rm -f "$f".*
        "${run[@]}" TOUCAN_V=1 timeout 900 "$mpirun" -np 1 "${vg[@]}" --callgrind-out-file="$f.r0.%p" "$out/nbccalls" "$k" "$b" $n $late : \
            -np 1 "${vg[@]}" --callgrind-out-file="$f.r1.%p" "$out/nbccalls" "$k" "$b" $n $late 2>/dev/null | grep -q "bad 0" ||
            { echo "nbc-callgrind: $k $b failed" >&2; exit 1; }
        r=$late
        file=$(ls -S "$f.r$r".* | head -1)
        c=$(incl "$file" "$fn")
        w=0
        [[ $k == i* ]] && w=$(incl "$file" MPI_Wait)
        res+=("r$r $((c / n))+$((w / n))=$(((c + w) / n))")
    done
    printf '%-11s %6s  %-22s %-22s\n' "$k" "$b" "${res[0]}" "${res[1]}"
}

v4() { # KIND BYTES
    local k=$1 b=$2 n f fn file c=() t=()
    fn=$(fname "$k")
    for n in 100 400; do
        f="$out/v4.$k.$b.$n"
        rm -f "$f".*
        local p0=() p1=("${vg[@]}" --callgrind-out-file="$f.%p")
        if [[ ${NBC_CALLGRIND_PROC:-1} == 0 ]]; then p0=("${p1[@]}") p1=(); fi
        "${run[@]}" TOUCAN_V=4 NBCCALLS_BARRIER=1 timeout 900 "$mpirun" -np 1 "${p0[@]}" "$out/nbccalls" "$k" "$b" $n : \
            -np 1 "${p1[@]}" "$out/nbccalls" "$k" "$b" $n 2>/dev/null | grep -q "bad 0" ||
            { echo "nbc-callgrind: $k $b failed" >&2; exit 1; }
        file=$(ls -S "$f".* | head -1)
        c+=("$(incl "$file" "$fn")")
        t+=("$(callgrind_annotate --threshold=100 "$file" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",","",$1); print $1}')")
    done
    printf '%-11s %6s  call %8d  program %9d  per iteration\n' "$k" "$b" $(((c[1] - c[0]) / 300)) $(((t[1] - t[0]) / 300))
}

IFS=, read -ra ks <<<"$kinds"
IFS=, read -ra ss <<<"$sizes"
for k in "${ks[@]}"; do
    for b in "${ss[@]}"; do
        "$mode" "$k" "$b"
    done
done
