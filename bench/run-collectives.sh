#!/usr/bin/env bash
# bench/run-collectives.sh: MPI_Barrier, MPI_Bcast, MPI_Allreduce and MPI_Alltoall on
# MPI_COMM_WORLD, plain MPICH and Toucan-MPI side by side (bench/collectives.c; see
# bench/README.md).
#
#   bench/run-collectives.sh [-r N] [-q] [-t SECONDS] [--retries N] [--wait-quiet SECONDS]
#                            [--update-results] [-- ARGS]
#
# Builds bench/collectives.c with mpicc -O2 and with wrappers/toucancc -O2 (into
# bench/out/collectives/), then runs each configuration N times, interleaved (run 1 of every
# configuration, then run 2, ...):
#
#   mpich-2p     plain MPICH,  mpirun -np 2                 2 ranks in 2 processes
#   toucan-2x1   Toucan-MPI,   TOUCAN_V=1 mpirun -np 2      2 ranks, 1 per process
#   mpich-4p     plain MPICH,  mpirun -np 4                 4 ranks in 4 processes
#   toucan-2x2   Toucan-MPI,   TOUCAN_V=2 mpirun -np 2      4 ranks, 2 subranks per process
#   mpich-8p     plain MPICH,  mpirun -np 8                 8 ranks in 8 processes
#   toucan-2x4   Toucan-MPI,   TOUCAN_V=4 mpirun -np 2      8 ranks, 4 subranks per process
#
# and prints a Markdown table of the median time per call of each measurement per
# configuration, with the ratios Toucan/MPICH at the same number of ranks (lower is better).
# MPICH runs with its defaults (on a machine with fewer cores than processes it busy-polls).
#
# Options:
#   -r N              runs per configuration (default 5)
#   -q                quick mode: pass -q to collectives (a tenth of the time budget)
#   -t SECONDS        timeout of one run (default 120); a run that times out counts as failed
#   --retries N       run a failed run again up to N times (default 1), e.g. when the library
#                     is being rebuilt at that moment; every failure is reported on stderr
#   --wait-quiet S    before the runs, wait up to S seconds for the machine to be quiet (other
#                     processes using under 10% of the CPUs for 10 s in a row); then run anyway
#   --update-results  also rewrite the section between <!-- collectives:begin --> and
#                     <!-- collectives:end --> in bench/RESULTS.md (created if missing)
#   -- ARGS           further arguments for collectives itself (e.g. -- -f 4 for a longer
#                     time budget, -- -t allreduce for one collective)
#   -h, --help        this text
#
# Environment: MPICC (default mpicc.mpich, else mpicc), MPIRUN (default mpirun.mpich, else
# mpirun), TOUCANCC (default <repo>/wrappers/toucancc).
#
# The Toucan build is linked against a copy of libtoucanmpi.so taken at the start
# (bench/out/collectives/lib), so a rebuild of the library during the runs does not affect them.
#
# Output files: bench/out/collectives/runs/CONFIG.RUN.{out,err} (every run's output) and
# bench/out/collectives/raw.tsv (config, run, line, kind, size, value). Exit status 0 when
# every run succeeded (after retries), 1 when some failed (the table is still printed), 2 on
# usage or build errors.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_init collectives "$@"
bench_kinds='barrier|bcast|allreduce|alltoall'
bench_wait_quiet
bench_build

# ---------------------------------------------------------------------------- configurations
# Toucan at n = 2 processes with V = 1, 2, 4 subranks each, next to MPICH with n*V processes.
configs=(mpich-2p toucan-2x1 mpich-4p toucan-2x2 mpich-8p toucan-2x4)
declare -A cfg_v=() cfg_np=() cfg_exe=()
for v in 1 2 4; do
    cfg_v[mpich-$((2 * v))p]=""
    cfg_np[mpich-$((2 * v))p]=$((2 * v))
    cfg_exe[mpich-$((2 * v))p]="$out/collectives.mpich"
    cfg_v[toucan-2x$v]=$v
    cfg_np[toucan-2x$v]=2
    cfg_exe[toucan-2x$v]="$out/collectives.toucan"
done

# One short run per configuration (the barrier alone, quick) first.
bench_preflight -q -t barrier
bench_runs

# ---------------------------------------------------------------------------- table
# Markdown table of the medians (from bench_medians on stdin): one row per measurement, for
# each rank count the MPICH time, the Toucan time and their ratio.
make_table() {
    LC_ALL=C awk -F'\t' -v runs="$runs" "$bench_awk_lib"'
        # Toucan/MPICH; three decimals below 0.1, where two would round to 0.00.
        function rat(a, b,   r) {
            if (a == "" || b == "" || b == 0) return "-"
            r = a / b
            return r < 0.095 ? sprintf("%.3f", r) : sprintf("%.2f", r)
        }
        function fmt(x) {
            if (x == "") return "failed"
            return x < 10 ? sprintf("%.2f", x) : x < 1000 ? sprintf("%.1f", x) : sprintf("%.0f", x)
        }
        {
            key = $3 " " $4
            if (!(key in order)) { order[key] = $2; keys[$2] = key; kind[key] = $3; size[key] = $4 }
            med[$1, key] = $5
            if ($2 > nlines) nlines = $2
        }
        END {
            printf "Median of %d run(s) per configuration: time per call in µs (the slowest rank'"'"'s mean), " \
                   "SIZE bytes per rank (alltoall: to each rank). Toucan `n×V` = `TOUCAN_V=V mpirun -np n`; " \
                   "ratio = Toucan/MPICH at the same number of ranks, **lower is better**.\n\n", runs
            printf "| %-16s |", "measurement"
            for (v = 1; v <= 4; v *= 2)
                printf " %11s | %10s | %6s |", "MPICH -np " 2 * v, "Toucan 2×" v, "ratio"
            printf "\n|---|"
            for (v = 1; v <= 4; v *= 2) printf "---:|---:|---:|"
            printf "\n"
            for (l = 1; l <= nlines; l++) {
                if (!(l in keys)) continue
                k = keys[l]
                name = kind[k] (kind[k] == "barrier" ? "" : " " human(size[k]))
                printf "| %s |", lpad(name, 16)
                for (v = 1; v <= 4; v *= 2) {
                    m = med["mpich-" 2 * v "p", k]; t = med["toucan-2x" v, k]
                    printf " %11s | %10s | %6s |", fmt(m), fmt(t), rat(t, m)
                }
                printf "\n"
            }
        }'
}

table="$(bench_medians | make_table; bench_medians | bench_spread "${configs[@]}")"

# ---------------------------------------------------------------------------- report
# What the benchmark measures, above its section when RESULTS.md has none yet.
IFS= read -r -d '' intro <<'EOF' || true
## Collectives

`bench/collectives.c`, the same source built with `mpicc` and with `wrappers/toucancc`, times
`MPI_Barrier`, `MPI_Bcast` (from rank 0), `MPI_Allreduce` (`MPI_SUM` of doubles) and
`MPI_Alltoall` on `MPI_COMM_WORLD` at 8 B, 4 KiB and 1 MiB per rank (alltoall: to each rank):
the time per call is each rank's mean over a time budget, after a warm-up, and the table
shows the slowest rank's. Every call's result is checked. Configurations: Toucan-MPI with
n = 2 processes of V = 1, 2, 4 subranks (`TOUCAN_V=V mpirun -np 2`, n·V ranks), next to plain
MPICH with the same number of ranks as processes (`mpirun -np 2`, `4`, `8`), with its default
settings. On a machine with fewer cores than MPICH processes, MPICH busy-polls on shared cores
(`MPIR_CVAR_POLLS_BEFORE_YIELD` belongs to MPICH's ch3 device; it made no difference here).

EOF
bench_report "$table" "$intro"

((${#failed[@]} == 0))
