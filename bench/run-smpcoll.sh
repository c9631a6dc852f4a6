#!/usr/bin/env bash
# run-smpcoll.sh: the small blocking collectives among the ranks of one process, on one
# worker against two (issue 14/16, session 16), for this library and optionally a baseline.
#
#   bench/run-smpcoll.sh [-r N] [-l LAYOUTS] [--baseline LIBDIR] [-- SMPCOLL_ARGS]
#
# Builds bench/smpcoll.c with wrappers/toucancc into bench/out/smpcoll/, then runs it N times
# (default 7) at each layout (default 1x8,1x2x4: TOUCAN_V=8 on one worker, TOUCAN_WORKERS=2
# TOUCAN_V=4), interleaved (run 1 of every configuration, then run 2, ...), with this tree's
# library and, with --baseline, with LIBDIR/libtoucanmpi.so (LD_LIBRARY_PATH overrides the
# build's RUNPATH; the library is copied first). One process, no mpirun; never chrt (two busy
# workers at real-time priority livelock a small VM).
#
# smpcoll prints, per collective and size, the best and the median block of calls (time per
# call, mean over the ranks). The table gives, per configuration, the median over the runs of
# the best block (on a loaded machine the cost of the collective itself) and, in brackets,
# of the median block; then the ratios of the best-block medians: each layout against the
# first (e.g. 1x2x4 / 1x8) and this library against the baseline at each layout.
#
#   -r N              runs per configuration (default 7)
#   -l LIST           layouts, comma-separated: 1xV (one worker) or 1xWxV (default 1x8,1x2x4)
#   --baseline DIR    a directory holding another libtoucanmpi.so
#   -t SECONDS        timeout of one run (default 120)
#   -- ARGS           passed to smpcoll (e.g. -- -t barrier,allreduce -m 8 -b 81)
#   -h                this help
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
runs=7 layouts=1x8,1x2x4 baseline= timeout_s=120
args=()
usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }
while (($#)); do
    case $1 in
    -r) runs=${2:?}; shift 2 ;;
    -l) layouts=${2:?}; shift 2 ;;
    --baseline) baseline=${2:?}; shift 2 ;;
    -t) timeout_s=${2:?}; shift 2 ;;
    --) shift; args=("$@"); break ;;
    -h | --help) usage; exit 0 ;;
    *) echo "run-smpcoll: unknown option $1 (-h for help)" >&2; exit 2 ;;
    esac
done
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || { echo "run-smpcoll: -r needs a positive number" >&2; exit 2; }
out="$here/out/smpcoll"
mkdir -p "$out/runs"
"$root/wrappers/toucancc" -O2 "$here/smpcoll.c" -o "$out/smpcoll" >"$out/build.log" 2>&1 ||
    { echo "run-smpcoll: building smpcoll failed: $out/build.log" >&2; exit 2; }
libs=(this)
if [[ -n "$baseline" ]]; then
    [[ -f "$baseline/libtoucanmpi.so" ]] || { echo "run-smpcoll: no $baseline/libtoucanmpi.so" >&2; exit 2; }
    mkdir -p "$out/base"
    cp "$baseline/libtoucanmpi.so" "$out/base/libtoucanmpi.so"
    libs+=(base)
fi
IFS=, read -r -a lays <<<"$layouts"
for l in "${lays[@]}"; do
    [[ "$l" =~ ^1x([0-9]+)(x([0-9]+))?$ ]] || { echo "run-smpcoll: bad layout $l (1xV or 1xWxV)" >&2; exit 2; }
done
raw="$out/raw.tsv"
: >"$raw"
failed=0
for ((i = 1; i <= runs; i++)); do
    for lib in "${libs[@]}"; do
        for l in "${lays[@]}"; do
            [[ "$l" =~ ^1x([0-9]+)(x([0-9]+))?$ ]]
            if [[ -n "${BASH_REMATCH[3]}" ]]; then w=${BASH_REMATCH[1]} v=${BASH_REMATCH[3]}; else w=1 v=${BASH_REMATCH[1]}; fi
            f="$out/runs/$lib-$l.$i"
            env=(TOUCAN_WORKERS="$w" TOUCAN_V="$v")
            [[ $lib == base ]] && env+=(LD_LIBRARY_PATH="$out/base")
            if env "${env[@]}" timeout "$timeout_s" "$out/smpcoll" "${args[@]}" >"$f.out" 2>"$f.err"; then
                awk -v c="$lib-$l" -v r="$i" '!/^#/ && NF == 4 { print c "\t" r "\t" $1 ($2 == 0 ? "" : $2 >= 1024 ? " " $2 / 1024 " KiB" : " " $2 " B") "\t" $3 "\t" $4 }' "$f.out" >>"$raw"
            else
                echo "run-smpcoll: $lib $l run $i failed (see $f.err)" >&2
                failed=1
            fi
        done
    done
done
# The table: medians over the runs.
awk -F'\t' -v libs="${libs[*]}" -v lays="${lays[*]}" '
function median(s,   a, n, i, j, t) {
    n = split(s, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n ? (n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2) : ""
}
{
    key = $1 SUBSEP $3
    best[key] = best[key] " " $4; med[key] = med[key] " " $5
    if (!($3 in seen)) { seen[$3] = 1; order[++nk] = $3 }
}
END {
    nl = split(libs, L, " "); ny = split(lays, Y, " ")
    hdr = "| collective |"; sep = "|---|"
    for (a = 1; a <= nl; a++) for (b = 1; b <= ny; b++) { hdr = hdr " " L[a] "-" Y[b] " |"; sep = sep "---:|" }
    for (a = 1; a <= nl; a++) for (b = 2; b <= ny; b++) { hdr = hdr " " L[a] ": " Y[b] " / " Y[1] " |"; sep = sep "---:|" }
    if (nl > 1) for (b = 1; b <= ny; b++) { hdr = hdr " " Y[b] ": this / base |"; sep = sep "---:|" }
    print hdr; print sep
    for (k = 1; k <= nk; k++) {
        row = "| " order[k] " |"
        for (a = 1; a <= nl; a++) for (b = 1; b <= ny; b++) {
            c = L[a] "-" Y[b]; bm = median(best[c, order[k]]); mm = median(med[c, order[k]])
            B[a, b] = bm
            row = row (bm == "" ? " - |" : sprintf(" %.2f (%.2f) |", bm, mm))
        }
        for (a = 1; a <= nl; a++) for (b = 2; b <= ny; b++)
            row = row (B[a, 1] > 0 && B[a, b] != "" ? sprintf(" %.2f |", B[a, b] / B[a, 1]) : " - |")
        if (nl > 1) for (b = 1; b <= ny; b++)
            row = row (B[2, b] > 0 && B[1, b] != "" ? sprintf(" %.2f |", B[1, b] / B[2, b]) : " - |")
        print row
    }
}' "$raw" | tee "$out/table.md"
load=$(cut -d' ' -f1-3 /proc/loadavg)
echo
echo "run-smpcoll: $runs run(s) per configuration, load average after: $load; µs per call, median over runs of the best block (median block in brackets)"
exit $failed
