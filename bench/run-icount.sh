#!/usr/bin/env bash
# run-icount.sh: instructions per MPI operation between subranks of one process, counted by
# valgrind (callgrind), for this library and optionally a baseline build beside it.
#
#   bench/run-icount.sh [--baseline DIR] [--kernels LIST] [-V V] [--update-results]
#
# bench/icount.c repeats one operation (lat: an 8-byte Send/Recv round trip; rate: a window of
# 64 Isend/Irecv + Waitall; sendrecv: an 8-byte MPI_Sendrecv exchange; barrier; allreduce of
# one double) between the V subranks of one
# process (TOUCAN_V=V, no mpirun). Each kernel runs twice under callgrind, with N and 6N
# iterations; the difference of the two totals over 5N is the cost of one iteration, start-up
# and finalization cancelled out. Counts do not depend on the load of the machine, so this
# A/B holds on a busy host where timed benchmarks (run-pingpong.sh) do not; they do not say
# how long an instruction takes (cache misses, a contended line cost more), so a timed set on a
# quiet machine still decides a close call. Between processes a waiting rank polls, and its
# count then depends on timing: those paths are not counted here.
#
#   --baseline DIR    another checkout of Toucan-MPI with its library built (cargo build
#                     --release): built with its own wrappers/toucancc, counted beside
#   --kernels LIST    comma-separated from lat,rate,sendrecv,barrier,allreduce,reduce,reduce1k,
#                     gather (default
#                     all but reduce)
#   -V V              subranks (default 2 for lat, rate and sendrecv, 8 for the collectives)
#   --update-results  rewrite the icount section of bench/RESULTS.md
#   -h                this help
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
tag=run-icount
source "$here/lib.sh"

baseline= kernels=lat,rate,sendrecv,barrier,allreduce vset= update=no
while (($#)); do
    case $1 in
    --baseline) baseline=${2:?--baseline needs a directory}; shift 2 ;;
    --kernels) kernels=${2:?--kernels needs a list}; shift 2 ;;
    -V) need_int -V 1 "${2:-}"; vset=$2; shift 2 ;;
    --update-results) update=yes; shift ;;
    -h | --help) usage; exit 0 ;;
    *) die "unknown option $1 (-h for help)" ;;
    esac
done
command -v valgrind >/dev/null || die "valgrind is not installed (apt-get install valgrind)"
out="$here/out/icount"
mkdir -p "$out"

# build LABEL TREE: bench/icount.c with TREE's toucancc, into $out/icount.LABEL.
build() {
    local label=$1 tree=$2
    [[ -x "$tree/wrappers/toucancc" && -f "$tree/target/release/libtoucanmpi.so" ]] ||
        die "$tree: no built library (cargo build --release there first)"
    "$tree/wrappers/toucancc" -O2 "$here/icount.c" -o "$out/icount.$label" >"$out/build.$label.log" 2>&1 ||
        die "building icount.$label failed: $out/build.$label.log"
}

# instructions LABEL KERNEL V N: callgrind's total for N iterations.
instructions() {
    local label=$1 k=$2 v=$3 n=$4 log="$out/cg.$1.$2.v$3.n$4"
    TOUCAN_V=$v timeout 600 valgrind --tool=callgrind --callgrind-out-file=/dev/null \
        "$out/icount.$label" "$k" "$n" >"$log.out" 2>"$log.err" || die "icount.$label $k $n failed: $log.err"
    grep -q "^icount $k $n " "$log.out" || die "icount.$label $k $n printed no result: $log.out"
    sed -n 's/^==[0-9]*== Collected : \([0-9]*\)$/\1/p' "$log.err" | tail -n1
}

# per_iter LABEL KERNEL V: instructions of one iteration.
per_iter() {
    local n
    case $2 in lat | sendrecv) n=2000 ;; rate) n=100 ;; *) n=1000 ;; esac
    local a b
    a=$(instructions "$1" "$2" "$3" "$n")
    b=$(instructions "$1" "$2" "$3" $((6 * n)))
    echo $(((b - a) / (5 * n)))
}

labels=(this)
build this "$root"
if [[ -n "$baseline" ]]; then
    build base "$baseline"
    labels+=(base)
    base_commit=$(git -C "$baseline" rev-parse --short HEAD 2>/dev/null || echo unknown)
fi
this_commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
[[ -z "$(git -C "$root" status --porcelain -- libtoucanmpi 2>/dev/null)" ]] || this_commit+=" + uncommitted changes"

if [[ -n "$baseline" ]]; then
    table="| kernel | V | this: instructions / iteration | baseline | this / baseline |
|---|---:|---:|---:|---:|"
else
    table="| kernel | V | instructions / iteration |
|---|---:|---:|"
fi
IFS=, read -r -a ks <<<"$kernels"
for k in "${ks[@]}"; do
    case $k in
    lat | rate | sendrecv) v=${vset:-2} ;;
    barrier | allreduce | reduce | reduce1k | gather) v=${vset:-8} ;;
    *) die "unknown kernel $k" ;;
    esac
    t=$(per_iter this "$k" "$v")
    if [[ -n "$baseline" ]]; then
        b=$(per_iter base "$k" "$v")
        r=$(awk -v t="$t" -v b="$b" 'BEGIN { printf "%.3f", b ? t / b : 0 }')
        table+=$'\n'"| $k | $v | $t | $b | $r |"
    else
        table+=$'\n'"| $k | $v | $t |"
    fi
    echo "$tag: $k V=$v done" >&2
done
printf '\n%s\n\n' "$table"

[[ "$update" == yes ]] || exit 0
cmdline="bench/run-icount.sh"
for a in ${baseline:+--baseline "$baseline"} ${vset:+-V "$vset"}; do cmdline+=" $a"; done
[[ "$kernels" == lat,rate,sendrecv,barrier,allreduce ]] || cmdline+=" --kernels $kernels"
cmdline+=" --update-results"
section="$out/section.md"
{
    echo "Produced by \`$cmdline\` (from the repository root) on $(date '+%Y-%m-%d %H:%M %Z')."
    echo
    echo "- Toucan-MPI: commit $this_commit${baseline:+; baseline: \`$baseline\` at commit $base_commit}."
    echo "- $(valgrind --version), callgrind; one process, no mpirun; instructions of one iteration = (total at 6N − total at N) / 5N."
    echo
    echo "$table"
} >"$section"
update_section "$here/RESULTS.md" icount "$section"
echo "$tag: updated bench/RESULTS.md" >&2
