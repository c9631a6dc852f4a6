#!/usr/bin/env bash
# bench/run-memory.sh: memory of the Toucan runtime in one process at V = 1, 16, 256, idle and
# with messages in flight (bench/memory.c), beside plain MPICH's one process.
#
#   bench/run-memory.sh [-V "1 16 256"] [-k "0 100 1000"] [-s SIZE] [--update-results]
#
#   -V LIST           subranks per process (default "1 16 256"); one process (mpirun -np 1)
#   -k LIST           messages in flight per rank (default "0 100 1000"), each SIZE bytes
#                     (default 1024), sent to the next rank before it receives them, so they
#                     wait in its queue
#   --update-results  rewrite the section between <!-- memory:begin --> and
#                     <!-- memory:end --> of bench/RESULTS.md
#
# Reads Rss and Pss of the process (/proc/self/smaps_rollup) after MPI_Init and a barrier
# (idle), with the messages queued (in flight) and after receiving them (drained, which the
# allocator need not give back). Prints a Markdown table, then the growth per subrank (idle,
# from the smallest to the largest V) and per message in flight (at each V, from the smallest
# to the largest K). Memory numbers do not depend on the load, unlike times.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
out="$here/out/memory"
results="$here/RESULTS.md"
# shellcheck source=bench/lib.sh
. "$here/lib.sh" # update_section
vs="1 16 256"
ks="0 100 1000"
size=1024
update=no
invoked="$*"
while [[ $# -gt 0 ]]; do
    case $1 in
    -V) vs=$2; shift 2 ;;
    -k) ks=$2; shift 2 ;;
    -s) size=$2; shift 2 ;;
    --update-results) update=yes; shift ;;
    -h | --help) sed -n '2,/^set -/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "run-memory: unknown argument $1" >&2; exit 2 ;;
    esac
done
MPICC=${MPICC:-$(command -v mpicc.mpich || echo mpicc)}
MPIRUN=${MPIRUN:-$(command -v mpirun.mpich || echo mpirun)}
TOUCANCC=${TOUCANCC:-$root/wrappers/toucancc}
mkdir -p "$out"
flags=(-O2 -Wno-stringop-overflow)
"$MPICC" "${flags[@]}" -o "$out/memory.mpich" "$here/memory.c" || exit 2
"$TOUCANCC" "${flags[@]}" -o "$out/memory.toucan" "$here/memory.c" || exit 2

failed=0
rows=()
declare -A rss
# one LABEL V K CMD...: a run; its three readings into the table
one() {
    local label=$1 v=$2 k=$3 o
    shift 3
    if ! o=$(timeout -k 5 300 "$@" 2>"$out/$label.k$k.err"); then
        echo "run-memory: $label k=$k failed (see $out/$label.k$k.err)" >&2
        failed=1
        return
    fi
    local i r p s=""
    for ph in idle inflight drained; do
        read -r r p < <(echo "$o" | awk -v ph="$ph" '$1 == "mem" && $2 == ph { print $3, $4; exit }')
        rss[$label,$k,$ph]=$r
        s+=" $(awk -v x="$r" 'BEGIN { printf "%.1f", x / 1024 }') / $(awk -v x="$p" 'BEGIN { printf "%.1f", x / 1024 }') |"
    done
    rows+=("| $label | $v | $k |$s")
    echo "${rows[-1]}"
}
for v in $vs; do
    for k in $ks; do
        one toucan-V$v "$v" "$k" env TOUCAN_V="$v" "$MPIRUN" -np 1 "$out/memory.toucan" "$k" "$size"
    done
done
for k in $ks; do
    one mpich-1p 1 "$k" "$MPIRUN" -np 1 "$out/memory.mpich" "$k" "$size"
done

slopes=""
v1=${vs%% *} vn=${vs##* } k1=${ks%% *} kn=${ks##* }
if [[ $v1 != "$vn" && -n ${rss[toucan-V$v1,$k1,idle]:-} && -n ${rss[toucan-V$vn,$k1,idle]:-} ]]; then
    slopes+="- Per subrank (idle, V=$v1 to V=$vn): $(awk -v a="${rss[toucan-V$v1,$k1,idle]}" -v b="${rss[toucan-V$vn,$k1,idle]}" -v n="$((vn - v1))" 'BEGIN { printf "%.1f", (b - a) / n }') KiB of RSS."$'\n'
fi
if [[ $k1 != "$kn" ]]; then
    for v in $vs; do
        a=${rss[toucan-V$v,$k1,inflight]:-} b=${rss[toucan-V$v,$kn,inflight]:-}
        [[ -n $a && -n $b ]] || continue
        slopes+="- Per message in flight at V=$v ($((v * (kn - k1))) more messages of $size B): $(awk -v a="$a" -v b="$b" -v n="$((v * (kn - k1)))" 'BEGIN { printf "%.2f", (b - a) / n }') KiB of RSS."$'\n'
    done
fi
table=$(
    echo "Produced by \`bench/run-memory.sh${invoked:+ $invoked}\` on $(date -u '+%Y-%m-%d %H:%M') UTC, commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null). One process; RSS / PSS in MiB (PSS shares the library pages with other processes)."
    echo
    echo "| run | V | in flight per rank | idle | in flight | drained |"
    echo "|---|---:|---:|---:|---:|---:|"
    printf '%s\n' "${rows[@]}"
    echo
    printf '%s' "$slopes"
)
echo
echo "$table"
if [[ $update == yes ]]; then
    section=$(mktemp)
    printf '%s\n' "$table" >"$section"
    tag=run-memory update_section "$results" memory "$section"
    rm -f "$section"
fi
exit $failed
