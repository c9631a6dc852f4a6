#!/usr/bin/env bash
# bench/run-pairs.sh: independent ping-pong pairs (bench/pairs.c) on one and on two workers of
# a process: do workers that exchange among their own subranks slow each other down? (issue 14,
# deliverable 5: no process-wide lock on the hot path). Plain MPICH beside, one pair.
#
#   bench/run-pairs.sh [-r N] [-t SECONDS] [--wait-quiet SECONDS] [--update-results]
#                      [--baseline DIR] [-- ARGS]
#
# Configurations (each run prints the median over 3 repetitions of the message rate of all
# pairs together, 8-byte messages, blocking send/recv and Irecv+Isend+Waitall):
#
#   mpich-2p        plain MPICH, mpirun -np 2: one pair, two processes
#   toucan-1w       Toucan-MPI, TOUCAN_V=4 mpirun -np 1: two sibling pairs on one worker
#   toucan-2w       TOUCAN_WORKERS=2 TOUCAN_V=2 mpirun -np 1: a sibling pair on each worker
#   toucan-2w-x     the same, pairs across the workers (rank r with r^2: cousins)
#
# On 2 cores, toucan-2w can reach twice toucan-1w's rate when the two workers never wait for
# each other; the table prints that ratio ("scaling"). With --baseline DIR (a built checkout
# of another Toucan-MPI) its library runs the three Toucan layouts too (base-*), interleaved.
#
# Options: -r N runs per configuration (default 5); -t SECONDS timeout of a run (default 120);
# --wait-quiet, --update-results (the <!-- pairs:begin --> section of bench/RESULTS.md),
# --baseline, -- ARGS (for pairs, e.g. -- -n 50000): as bench/run-pingpong.sh.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_baseline_ok=yes
bench_init pairs "$@"
bench_kinds='send|isend'
bench_wait_quiet
bench_build

configs=(mpich-2p toucan-1w toucan-2w toucan-2w-x)
declare -A cfg_v=([mpich-2p]="" [toucan-1w]=4 [toucan-2w]=2 [toucan-2w-x]=2)
declare -A cfg_np=([mpich-2p]=2 [toucan-1w]=1 [toucan-2w]=1 [toucan-2w-x]=1)
declare -A cfg_exe=([mpich-2p]="$out/pairs.mpich" [toucan-1w]="$out/pairs.toucan"
    [toucan-2w]="$out/pairs.toucan" [toucan-2w-x]="$out/pairs.toucan")
cfg_env[toucan-2w]="TOUCAN_WORKERS=2"
cfg_env[toucan-2w-x]="TOUCAN_WORKERS=2 PAIRS_STRIDE=2"
if [[ -n "${baseline-}" ]]; then
    for c in 1w 2w 2w-x; do
        configs+=("base-$c")
        cfg_v[base-$c]=${cfg_v[toucan-$c]} cfg_np[base-$c]=1 cfg_exe[base-$c]="$out/pairs.base"
        [[ -n "${cfg_env[toucan-$c]-}" ]] && cfg_env[base-$c]=${cfg_env[toucan-$c]}
    done
fi

bench_preflight -n 2000 -r 1
bench_runs

make_table() {
    LC_ALL=C awk -F'\t' -v runs="$runs" -v base="${baseline-}" "$bench_awk_lib"'
        function fmt(x) { return x == "" ? "failed" : sprintf("%.2f", x / 1e6) }
        { med[$1, $3] = $5 }
        END {
            printf "Median of %d run(s) per configuration: million 8-byte messages per second, all pairs " \
                   "together, **higher is better**. Scaling = two workers / one worker (2.0 at best on 2 cores).\n\n", runs
            printf "| %-7s | %11s | %15s | %15s | %9s | %22s |\n", "calls", "MPICH 1 pair", "Toucan 1 worker", \
                   "Toucan 2 workers", "scaling", "Toucan 2 workers, cousins"
            printf "|%s|%s|%s|%s|%s|%s|\n", "---", "---:", "---:", "---:", "---:", "---:"
            n = split("send isend", k, " ")
            for (i = 1; i <= n; i++)
                printf "| %-7s | %11s | %15s | %15s | %9s | %22s |\n", k[i], fmt(med["mpich-2p", k[i]]), \
                       fmt(med["toucan-1w", k[i]]), fmt(med["toucan-2w", k[i]]), \
                       ratio(med["toucan-2w", k[i]], med["toucan-1w", k[i]]), fmt(med["toucan-2w-x", k[i]])
            if (base != "") {
                printf "\nBaseline (`--baseline`), same layouts:\n\n"
                printf "| %-7s | %15s | %15s | %9s | %22s |\n", "calls", "base 1 worker", "base 2 workers", \
                       "scaling", "base 2 workers, cousins"
                printf "|%s|%s|%s|%s|%s|\n", "---", "---:", "---:", "---:", "---:"
                for (i = 1; i <= n; i++)
                    printf "| %-7s | %15s | %15s | %9s | %22s |\n", k[i], fmt(med["base-1w", k[i]]), \
                           fmt(med["base-2w", k[i]]), ratio(med["base-2w", k[i]], med["base-1w", k[i]]), \
                           fmt(med["base-2w-x", k[i]])
            }
        }'
}

table="$(bench_medians | make_table; bench_medians | bench_spread "${configs[@]}")"

IFS= read -r -d '' intro <<'EOF2' || true
## SMP mode: independent pairs on one and two workers

`bench/pairs.c`: ranks exchange 8-byte messages in pairs that share nothing (blocking
`MPI_Send`/`MPI_Recv`, then `MPI_Irecv` + `MPI_Isend` + `MPI_Waitall`). With one worker the
pairs take turns on one core; with two workers each pair has a core of its own, so the rate
doubles when the workers never wait for each other (issue 14, deliverable 5).

EOF2
bench_report "$table" "$intro"
