#!/usr/bin/env bash
# bench/run-commloop.sh: communicators made and freed per step (bench/commloop.c: dup of the
# world + split of the dup + an 8-byte Allreduce on each + two frees per iteration, and dup +
# Allreduce + free), plain MPICH and Toucan-MPI side by side (issue 16: spare real
# communicators, docs/collectives.md "Session 18 (tidy9)").
#
#   bench/run-commloop.sh [-r N] [-q] [-t SECONDS] [--wait-quiet SECONDS] [--update-results]
#                         [--baseline DIR] [-- ARGS]
#
# Configurations (interleaved runs):
#
#   mpich-2p     plain MPICH, mpirun -np 2
#   toucan-2x1   Toucan-MPI, TOUCAN_V=1 mpirun -np 2
#   toucan-2x4   Toucan-MPI, TOUCAN_V=4 mpirun -np 2
#   base-2x1, base-2x4   the same with --baseline DIR's library (a built checkout)
#
# The table gives the median time of one iteration in µs (the slowest rank's mean), lower is
# better. Options as bench/run-pairs.sh (-- ARGS for commloop, e.g. -- -f 0.5 or -- -t dup).
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_baseline_ok=yes
bench_init commloop "$@"
bench_kinds='dupsplit|dup'
bench_wait_quiet
bench_build

configs=(mpich-2p toucan-2x1 toucan-2x4)
declare -A cfg_v=([mpich-2p]="" [toucan-2x1]=1 [toucan-2x4]=4)
declare -A cfg_np=([mpich-2p]=2 [toucan-2x1]=2 [toucan-2x4]=2)
declare -A cfg_exe=([mpich-2p]="$out/commloop.mpich" [toucan-2x1]="$out/commloop.toucan"
    [toucan-2x4]="$out/commloop.toucan")
if [[ -n "${baseline-}" ]]; then
    for c in 2x1 2x4; do
        configs+=("base-$c")
        cfg_v[base-$c]=${cfg_v[toucan-$c]} cfg_np[base-$c]=2 cfg_exe[base-$c]="$out/commloop.base"
    done
fi

bench_preflight -q
bench_runs

make_table() {
    LC_ALL=C awk -F'\t' -v runs="$runs" -v base="${baseline-}" "$bench_awk_lib"'
        function fmt(x) { return x == "" ? "-" : x < 100 ? sprintf("%.2f", x) : sprintf("%.0f", x) }
        { med[$1, $3] = $5 }
        END {
            printf "Median of %d run(s) per configuration: µs per iteration (the slowest rank'"'"'s mean), " \
                   "**lower is better**.\n\n", runs
            printf "| loop | MPICH -np 2 | Toucan 2×1 | Toucan 2×4 |%s\n", base != "" ? " base 2×1 | base 2×4 | 2×1 new/base | 2×4 new/base |" : ""
            printf "|---|---:|---:|---:|%s\n", base != "" ? "---:|---:|---:|---:|" : ""
            n = split("dupsplit dup", k, " ")
            for (i = 1; i <= n; i++) {
                printf "| %s | %s | %s | %s |", k[i], fmt(med["mpich-2p", k[i]]), fmt(med["toucan-2x1", k[i]]), \
                       fmt(med["toucan-2x4", k[i]])
                if (base != "")
                    printf " %s | %s | %s | %s |", fmt(med["base-2x1", k[i]]), fmt(med["base-2x4", k[i]]), \
                           ratio(med["toucan-2x1", k[i]], med["base-2x1", k[i]]), \
                           ratio(med["toucan-2x4", k[i]], med["base-2x4", k[i]])
                printf "\n"
            }
        }'
}

table="$(bench_medians | make_table; bench_medians | bench_spread "${configs[@]}")"

IFS= read -r -d '' intro <<'EOF2' || true
## Communicators made and freed per step

`bench/commloop.c`: per iteration `MPI_Comm_dup(MPI_COMM_WORLD)`, `MPI_Comm_split` of the dup,
an 8-byte `MPI_Allreduce` on each, both freed (`dupsplit`); and dup + Allreduce + free (`dup`).

EOF2
bench_report "$table" "$intro"
