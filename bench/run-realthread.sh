#!/usr/bin/env bash
# bench/run-realthread.sh: which thread level to ask of the real MPI underneath (issue 14,
# deliverable 5: "driven from one thread at a time or at MPI_THREAD_MULTIPLE, whichever
# measures better"). Toucan calls the real MPI from one thread at a time either way (under the
# state's write side or the transport's lock); TOUCAN_REAL_THREAD=multiple asks it for
# MPI_THREAD_MULTIPLE, so what differs is the real MPI's own locking on every call.
#
#   bench/run-realthread.sh [-r N] [-t SECONDS] [--wait-quiet SECONDS] [--update-results] [-- ARGS]
#
# Configurations (bench/pairs.c, 8-byte messages between processes, median of 3 repetitions
# per run; blocking send/recv and Irecv+Isend+Waitall):
#
#   mpich-2p        plain MPICH, mpirun -np 2: one pair across the processes
#   ser-2p, mul-2p  Toucan, TOUCAN_V=1 mpirun -np 2: one pair; SERIALIZED, MULTIPLE
#   ser-2x2, mul-2x2  TOUCAN_WORKERS=2 mpirun -np 2, pairs across the processes (rank r with
#                   r^2): two workers per process drive the real MPI; SERIALIZED, MULTIPLE
#
# Options as bench/run-pairs.sh (-- ARGS for pairs, e.g. -- -n 50000).
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_init realthread "$@"
bench_source=pairs
bench_kinds='send|isend'
bench_wait_quiet
bench_build

configs=(mpich-2p ser-2p mul-2p ser-2x2 mul-2x2)
declare -A cfg_v=([mpich-2p]="" [ser-2p]=1 [mul-2p]=1 [ser-2x2]=1 [mul-2x2]=1)
declare -A cfg_np=([mpich-2p]=2 [ser-2p]=2 [mul-2p]=2 [ser-2x2]=2 [mul-2x2]=2)
declare -A cfg_exe=([mpich-2p]="$out/realthread.mpich" [ser-2p]="$out/realthread.toucan"
    [mul-2p]="$out/realthread.toucan" [ser-2x2]="$out/realthread.toucan" [mul-2x2]="$out/realthread.toucan")
cfg_env[ser-2p]="TOUCAN_REAL_THREAD=serialized"
cfg_env[mul-2p]="TOUCAN_REAL_THREAD=multiple"
cfg_env[ser-2x2]="TOUCAN_WORKERS=2 PAIRS_STRIDE=2 TOUCAN_REAL_THREAD=serialized"
cfg_env[mul-2x2]="TOUCAN_WORKERS=2 PAIRS_STRIDE=2 TOUCAN_REAL_THREAD=multiple"

bench_preflight -n 2000 -r 1
bench_runs

make_table() {
    LC_ALL=C awk -F'\t' -v runs="$runs" "$bench_awk_lib"'
        function fmt(x) { return x == "" ? "failed" : sprintf("%.2f", x / 1e6) }
        { med[$1, $3] = $5 }
        END {
            printf "Median of %d run(s) per configuration: million 8-byte messages per second between two " \
                   "processes, all pairs together, **higher is better**. multiple/serialized: the ratio.\n\n", runs
            printf "| %-7s | %12s | %16s | %14s | %9s | %22s | %20s | %9s |\n", "calls", "MPICH -np 2", \
                   "1 pair, SERIAL.", "1 pair, MULT.", "mult/ser", "2 workers, SERIAL.", "2 workers, MULT.", "mult/ser"
            printf "|%s|%s|%s|%s|%s|%s|%s|%s|\n", "---", "---:", "---:", "---:", "---:", "---:", "---:", "---:"
            n = split("send isend", k, " ")
            for (i = 1; i <= n; i++)
                printf "| %-7s | %12s | %16s | %14s | %9s | %22s | %20s | %9s |\n", k[i], fmt(med["mpich-2p", k[i]]), \
                       fmt(med["ser-2p", k[i]]), fmt(med["mul-2p", k[i]]), ratio(med["mul-2p", k[i]], med["ser-2p", k[i]]), \
                       fmt(med["ser-2x2", k[i]]), fmt(med["mul-2x2", k[i]]), ratio(med["mul-2x2", k[i]], med["ser-2x2", k[i]])
        }'
}

table="$(bench_medians | make_table; bench_medians | bench_spread "${configs[@]}")"

IFS= read -r -d '' intro <<'EOF2' || true
## The real MPI's thread level: SERIALIZED or MULTIPLE

`bench/pairs.c` between two processes, the real MPI asked for `MPI_THREAD_SERIALIZED` (the
default) or `MPI_THREAD_MULTIPLE` (`TOUCAN_REAL_THREAD=multiple`). Toucan calls it from one
thread at a time either way; the difference is the real MPI's own locking (issue 14,
deliverable 5).

EOF2
bench_report "$table" "$intro"
