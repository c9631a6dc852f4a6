#!/usr/bin/env bash
# coll-callgrind.sh: instructions per blocking collective call between two processes at V=1
# (issue 16, docs/collectives.md "Session 19 (coll11)"): bench/collcalls.c under valgrind
# --tool=callgrind on both ranks of `mpirun -np 2`, built with mpicc (plain MPICH) and with
# wrappers/toucancc (Toucan, this tree's library; with --baseline also another library through
# LD_LIBRARY_PATH). collcalls zeroes callgrind's counts after its warm-up calls, so the
# inclusive count of the MPI function over the counted calls, divided by their number, is one
# call. A rank that waits polls (MPICH busy-polls) and what it counts then depends on timing,
# so every kind runs twice, with rank 0 and then rank 1 arriving late (collcalls' LATE: it
# sleeps before each call), and each rank's figure is taken from the run where it was late:
# what it receives has arrived, and its count is the call's own work.
#
#   bench/coll-callgrind.sh [--baseline LIBDIR] [-k KINDS] [-s SIZES] [-n N] [-r R] [-c COLUMNS]
#     -k   comma-separated kinds of bench/collcalls.c (default barrier,bcast,scatter,gather,
#          allgather,alltoall,allreduce,reduce,reduce_scatter,sendrecv)
#     -s   comma-separated byte sizes (default 8,1024)
#     -n   calls counted (default 1000)
#     -r   runs of each (default 2): the smallest count of a rank over its runs is reported
#     -c   columns: toucan (this tree), base (--baseline), mpich (default "toucan", plus base
#          with --baseline). MPICH's counts are not comparable: its late rank still finds
#          itself polling for long stretches on a loaded machine (its busy-poll), so its
#          column shows only how far off it is.
#     -x   (session 20) leave out what the call spends in Toucan's in-place polls of the ring
#          (`State::progress_recv`, inclusive): on a loaded machine the late rank's peer is
#          often descheduled and the late rank still polls, so the whole count moves by
#          thousands between runs; without the polls it is the call's own work (set-up,
#          checks, sends, copies) and repeats within a few instructions. It also leaves out
#          the one poll that finds the message (its dispatch and the ring's repost).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
base= own= reps=2 kinds=barrier,bcast,scatter,gather,allgather,alltoall,allreduce,reduce,reduce_scatter,sendrecv sizes=8,1024 n=1000 cols=
while (($#)); do
    case $1 in
    --baseline) base=${2:?}; shift 2 ;;
    -k) kinds=${2:?}; shift 2 ;;
    -s) sizes=${2:?}; shift 2 ;;
    -n) n=${2:?}; shift 2 ;;
    -r) reps=${2:?}; shift 2 ;;
    -c) cols=${2:?}; shift 2 ;;
    -x) own=1; shift ;;
    -h | --help) sed -n '2,29p' "$0"; exit 0 ;;
    *) echo "coll-callgrind: unknown option $1" >&2; exit 2 ;;
    esac
done
[[ -n $cols ]] || cols="toucan${base:+ base}"
out="${TMPDIR:-/tmp}/toucan-coll-callgrind"
mkdir -p "$out"
mpirun=$(command -v mpirun.mpich || command -v mpirun)
mpicc=$(command -v mpicc.mpich || command -v mpicc)
"$mpicc" -O2 -g -w "$here/collcalls.c" -o "$out/collcalls-mpich"
"$root/wrappers/toucancc" -O2 -g -w "$here/collcalls.c" -o "$out/collcalls-toucan"
# Snapshots of the libraries, so that a rebuild during the runs changes nothing.
mkdir -p "$out/lib-toucan" "$out/lib-base"
cp "$root/target/release/libtoucanmpi.so" "$out/lib-toucan/"
[[ -z $base ]] || cp "$base/libtoucanmpi.so" "$out/lib-base/"

# count COL KIND BYTES ITERS LATE REP: runs one column with rank LATE late; leaves
# $out/COL.KIND.BYTES.ITERS.LATE.REP.rRANK.PID files.
count() {
    local col=$1 k=$2 b=$3 it=$4 late=$5 rep=$6 exe=collcalls-toucan pre=(env)
    case $col in
    mpich) exe=collcalls-mpich ;;
    toucan) pre=(env "LD_LIBRARY_PATH=$out/lib-toucan") ;;
    base) pre=(env "LD_LIBRARY_PATH=$out/lib-base") ;;
    *) echo "coll-callgrind: unknown column $col" >&2; exit 2 ;;
    esac
    local f="$out/$col.$k.$b.$it.$late.$rep"
    rm -f "$f".*
    local vg=(valgrind --tool=callgrind --trace-children=yes)
    "${pre[@]}" env TOUCAN_SENTINEL=off TOUCAN_V=1 timeout 900 "$mpirun" \
        -np 1 "${vg[@]}" --callgrind-out-file="$f.r0.%p" "$out/$exe" "$k" "$b" "$it" "$late" : \
        -np 1 "${vg[@]}" --callgrind-out-file="$f.r1.%p" "$out/$exe" "$k" "$b" "$it" "$late" 2>/dev/null |
        grep -q "bad 0" || { echo "coll-callgrind: $col $k $b: wrong data or failed run" >&2; exit 1; }
}

# fn KIND: the MPI function a kind calls.
fn() {
    case $1 in
    barrier) echo Barrier ;; bcast) echo Bcast ;; scatter) echo Scatter ;; gather) echo Gather ;;
    allgather) echo Allgather ;; alltoall) echo Alltoall ;; allreduce) echo Allreduce ;;
    reduce) echo Reduce ;; reduce_scatter) echo Reduce_scatter ;; sendrecv) echo Sendrecv ;;
    esac
}

# incl FILE FUNC: the inclusive count of MPI_FUNC in FILE (Toucan's export), else of
# PMPI_FUNC (MPICH's MPI_ names are aliases of its PMPI_ ones).
# With -x, minus the inclusive count of State::progress_recv (the ring's in-place polls).
# Session 20: callgrind_annotate runs from / and without source annotation: from the tree
# that built the library it splits a function between its absolute and relative file names
# (progress_recv counted 17 392 there, 297 414 from /), and source annotation adds lines
# that name the function too.
incl() {
    local a v p
    a=$(cd / && callgrind_annotate --inclusive=yes --auto=no --threshold=100 "$1" 2>/dev/null)
    if grep -qE ":MPI_$2 \[" <<<"$a"; then
        v=$(grep -E ":MPI_$2 \[" <<<"$a" | head -1 | awk '{gsub(",","",$1); print $1}')
    else
        v=$(grep -E ":PMPI_$2 \[" <<<"$a" | head -1 | awk '{gsub(",","",$1); print $1}')
    fi
    if [[ -n $own ]]; then
        p=$(grep -E "State>::progress_recv \[" <<<"$a" | head -1 | awk '{gsub(",","",$1); print $1}')
        v=$((v - ${p:-0}))
    fi
    echo "$v"
}

# file COL KIND BYTES ITERS RANK REP: that rank's profile from run REP where it was late
# (the largest file, after the re-exec).
file() {
    ls -S "$out/$1.$2.$3.$4.$5.$6.r$5".* | head -1
}

# per_rank COL KIND BYTES: each rank's instructions per call, the least over the runs.
per_rank() {
    local f m v
    f=$(fn "$2")
    for r in 0 1; do
        m=
        for ((i = 0; i < reps; i++)); do
            v=$(( $(incl "$(file "$1" "$2" "$3" "$n" $r $i)" "$f") / n ))
            [[ -z $m || $v -lt $m ]] && m=$v
        done
        printf '%9d' "$m"
    done
}

printf '%-22s' "instructions per call"
for c in $cols; do printf '%18s' "$c (p0 p1)"; done
echo
IFS=, read -ra ks <<<"$kinds"
IFS=, read -ra ss <<<"$sizes"
for k in "${ks[@]}"; do
    for b in "${ss[@]}"; do
        printf '%-22s' "$k $b"
        for c in $cols; do
            for ((i = 0; i < reps; i++)); do
                count "$c" "$k" "$b" "$n" 0 $i
                count "$c" "$k" "$b" "$n" 1 $i
            done
            printf ' %s' "$(per_rank "$c" "$k" "$b")"
        done
        echo
    done
done
