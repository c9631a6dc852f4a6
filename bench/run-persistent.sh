#!/usr/bin/env bash
# bench/run-persistent.sh: persistent collectives (MPI_*_init + MPI_Start + MPI_Wait) against
# the blocking and the nonblocking (MPI_I* + MPI_Wait) forms of the same call (issue 16:
# persistent collectives planned once; bench/persistent.c), plain MPICH and Toucan-MPI side by
# side.
#
#   bench/run-persistent.sh [-r N] [-q] [-t SECONDS] [--retries N] [--wait-quiet SECONDS]
#                           [--update-results] [-- ARGS]
#
# Configurations (interleaved runs):
#
#   mpich-2p     plain MPICH, mpirun -np 2 (its 4.0.2 persistent Allgather restarts wrongly:
#                those lines carry a "# wrong results" comment in the run's output)
#   toucan-2x1   Toucan-MPI, TOUCAN_V=1 mpirun -np 2: one rank per process (private real
#                communicators, the real operation bound at init)
#   toucan-1x8   Toucan-MPI, TOUCAN_V=8 mpirun -np 1: 8 subranks of one process (the team's
#                records)
#
# The table gives each form's median time per call in µs and the ratios persistent/blocking
# and persistent/nonblocking (lower is better). Options as bench/run-collectives.sh (-- ARGS
# for persistent itself, e.g. -- -t bcast,allreduce or -- -f 4).
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_init persistent "$@"
bench_kinds='(barrier|bcast|allreduce|allgather|alltoall)-(blk|nb|ps)'
bench_wait_quiet
bench_build

configs=(mpich-2p toucan-2x1 toucan-1x8)
declare -A cfg_v=([mpich-2p]="" [toucan-2x1]=1 [toucan-1x8]=8)
declare -A cfg_np=([mpich-2p]=2 [toucan-2x1]=2 [toucan-1x8]=1)
declare -A cfg_exe=([mpich-2p]="$out/persistent.mpich" [toucan-2x1]="$out/persistent.toucan"
    [toucan-1x8]="$out/persistent.toucan")

bench_preflight -q -t barrier
bench_runs

make_table() {
    LC_ALL=C awk -F'\t' -v runs="$runs" "$bench_awk_lib"'
        function fmt(x) {
            if (x == "") return "-"
            return x < 10 ? sprintf("%.2f", x) : x < 1000 ? sprintf("%.1f", x) : sprintf("%.0f", x)
        }
        function rat(a, b) { return (a == "" || b == "" || b == 0) ? "-" : sprintf("%.2f", a / b) }
        {
            split($3, kf, "-")
            key = kf[1] " " $4
            if (!(key in seen)) { seen[key] = 1; order[++nk] = key; kind[key] = kf[1]; size[key] = $4 }
            med[$1, key, kf[2]] = $5
        }
        END {
            printf "Median of %d run(s) per configuration: time per call in µs (the slowest rank'"'"'s mean); " \
                   "blk = the blocking call, nb = MPI_I* + MPI_Wait, ps = MPI_Start + MPI_Wait of a request made " \
                   "once by MPI_*_init; ps/blk, ps/nb: ratios, **lower is better**.\n\n", runs
            printf "| measurement | MPICH -np 2 blk | nb | ps | Toucan 2×1 blk | nb | ps | ps/blk | ps/nb | Toucan 1×8 blk | nb | ps | ps/blk | ps/nb |\n"
            printf "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
            for (i = 1; i <= nk; i++) {
                k = order[i]
                name = kind[k] (kind[k] == "barrier" ? "" : " " human(size[k]))
                printf "| %s | %s | %s | %s |", name, fmt(med["mpich-2p", k, "blk"]), fmt(med["mpich-2p", k, "nb"]), \
                       fmt(med["mpich-2p", k, "ps"])
                n = split("toucan-2x1 toucan-1x8", cs, " ")
                for (j = 1; j <= n; j++) {
                    c = cs[j]
                    printf " %s | %s | %s | %s | %s |", fmt(med[c, k, "blk"]), fmt(med[c, k, "nb"]), fmt(med[c, k, "ps"]), \
                           rat(med[c, k, "ps"], med[c, k, "blk"]), rat(med[c, k, "ps"], med[c, k, "nb"])
                }
                printf "\n"
            }
        }'
}

table="$(bench_medians | make_table; bench_medians | bench_spread "${configs[@]}")"

IFS= read -r -d '' intro <<'EOF' || true
## Persistent collectives

`bench/persistent.c` times, on a duplicate of `MPI_COMM_WORLD`, Barrier, Bcast (from rank 0),
Allreduce (`MPI_SUM` of doubles), Allgather and Alltoall at 8 B, 1 KiB and 64 KiB per rank in
three forms over the same number of calls: the blocking call, `MPI_I*` + `MPI_Wait`, and
`MPI_Start` + `MPI_Wait` of one request made by `MPI_*_init` before the loop (issue 16:
persistent collectives planned once, docs/collectives.md). Every call's result is checked.

EOF
bench_report "$table" "$intro"

((${#failed[@]} == 0))
