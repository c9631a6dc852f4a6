#!/usr/bin/env bash
# bench/run-pingpong.sh: point-to-point latency, bandwidth and message rate, plain MPICH and
# Toucan-MPI side by side (bench/pingpong.c; see bench/README.md).
#
#   bench/run-pingpong.sh [-r N] [-q] [-t SECONDS] [--retries N] [--wait-quiet SECONDS]
#                         [--update-results] [--baseline DIR] [-- ARGS]
#
# Builds bench/pingpong.c with mpicc -O2 and with wrappers/toucancc -O2 (into
# bench/out/pingpong/), then runs each configuration N times, interleaved
# (run 1 of every configuration, then run 2, ...):
#
#   mpich-2p        plain MPICH,  mpirun -np 2                (two processes, MPICH shared memory)
#   toucan-inter    Toucan-MPI,   TOUCAN_V=1 mpirun -np 2     (ranks 0 and 1 in two processes)
#   toucan-sibling  Toucan-MPI,   TOUCAN_V=2 mpirun -np 1     (ranks 0 and 1 sibling subranks)
#   toucan-cousin   Toucan-MPI,   TOUCAN_WORKERS=2 TOUCAN_V=1 mpirun -np 1
#                                 (ranks 0 and 1 cousins: one process, home workers 0 and 1)
#
# and prints a Markdown table of the median of each measurement per configuration, with the
# ratios Toucan/MPICH, and the lines of issue 14's benchmark 2 (cousins: 8 B latency <= 0.5 us
# and below MPICH's, 1 MiB bandwidth >= MPICH's). A library without SMP mode ignores
# TOUCAN_WORKERS, so toucan-cousin has one rank and pingpong refuses to run: that row is then
# left out with a note, not counted as a failure.
#
# Options:
#   -r N              runs per configuration (default 5)
#   -q                quick mode: pass -q to pingpong (about a tenth of the iterations)
#   -t SECONDS        timeout of one run (default 120); a run that times out counts as failed
#   --retries N       run a failed run again up to N times (default 1), e.g. when the library
#                     is being rebuilt at that moment; every failure is reported on stderr
#   --wait-quiet S    before the runs, wait up to S seconds for the machine to be quiet (other
#                     processes using under 10% of the CPUs for 10 s in a row); then run anyway
#   --update-results  also rewrite the section between <!-- pingpong:begin --> and
#                     <!-- pingpong:end --> in bench/RESULTS.md (created if missing)
#   --baseline DIR    A/B (issue 14, benchmark 1): also run toucan-inter and toucan-sibling
#                     built with DIR, a built checkout of another Toucan-MPI (its own
#                     wrappers/toucancc and headers, a copy of its target/release library), as
#                     base-inter and base-sibling in the same interleaved set, and print a
#                     second table: this library / the baseline
#   -- ARGS           further arguments for pingpong itself (e.g. -- -f 2 for more iterations)
#   -h, --help        this text
#
# Environment: MPICC (default mpicc.mpich, else mpicc), MPIRUN (default mpirun.mpich, else
# mpirun), TOUCANCC (default <repo>/wrappers/toucancc).
#
# The Toucan build is linked against a copy of libtoucanmpi.so taken at the start
# (bench/out/pingpong/lib), so a rebuild of the library during the runs does not affect them.
#
# Output files: bench/out/pingpong/runs/CONFIG.RUN.{out,err} (every run's output) and
# bench/out/pingpong/raw.tsv (config, run, line, kind, size, value). Exit status 0 when every
# run succeeded (after retries), 1 when some failed (the table is still printed), 2 on
# usage or build errors.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_baseline_ok=yes
bench_init pingpong "$@"
bench_kinds='lat|bw|rate'
bench_wait_quiet
bench_build

# ---------------------------------------------------------------------------- configurations
configs=(mpich-2p toucan-inter toucan-sibling toucan-cousin)
# TOUCAN_V ("" = unset), process count and executable of each configuration.
declare -A cfg_v=([mpich-2p]="" [toucan-inter]=1 [toucan-sibling]=2 [toucan-cousin]=1)
declare -A cfg_np=([mpich-2p]=2 [toucan-inter]=2 [toucan-sibling]=1 [toucan-cousin]=1)
declare -A cfg_exe=([mpich-2p]="$out/pingpong.mpich" [toucan-inter]="$out/pingpong.toucan"
    [toucan-sibling]="$out/pingpong.toucan" [toucan-cousin]="$out/pingpong.toucan")
# SMP mode (issue 14): 2 workers of V=1 in one process, so rank 0 lives on worker 0 and rank 1
# on worker 1.
cfg_env[toucan-cousin]="TOUCAN_WORKERS=2"

# Without SMP mode the cousin layout is a world of one rank, which pingpong refuses: say so and
# go on without it (a library that has SMP mode but fails here fails the preflight below).
if ! run_config toucan-cousin "$out/runs/toucan-cousin.probe.out" "$out/runs/toucan-cousin.probe.err" -q -t lat &&
    grep -q 'needs at least 2 ranks (have 1)' "$out/runs/toucan-cousin.probe.out" \
        "$out/runs/toucan-cousin.probe.err" 2>/dev/null; then
    echo "$tag: note: this library ignores TOUCAN_WORKERS (a world of 1 rank): toucan-cousin skipped" >&2
    no_smp=yes
    configs=(mpich-2p toucan-inter toucan-sibling)
fi
if [[ -n "${baseline-}" ]]; then
    configs+=(base-inter base-sibling)
    cfg_v[base-inter]=1 cfg_np[base-inter]=2 cfg_exe[base-inter]="$out/pingpong.base"
    cfg_v[base-sibling]=2 cfg_np[base-sibling]=1 cfg_exe[base-sibling]="$out/pingpong.base"
fi

# One short run per configuration (pingpong -q -t rate, well under a second) first.
bench_preflight -q -t rate
# Other work on the machine disturbs the two-process configurations more than the
# one-process one; bench_runs measures how much CPU time it took.
bench_runs

# ---------------------------------------------------------------------------- table
# Markdown table of the medians (from bench_medians on stdin).
make_table() {
    LC_ALL=C awk -F'\t' -v runs="$runs" -v nosmp="${no_smp-}" "$bench_awk_lib"'
        function fmt(kind, x) {
            if (x == "") return "failed"
            return kind == "lat" ? sprintf("%.2f", x) : sprintf("%.0f", x)
        }
        {
            key = $3 " " $4
            if (!(key in order)) { order[key] = $2; keys[$2] = key; kind[key] = $3; size[key] = $4 }
            med[$1, key] = $5
            if ($2 > nlines) nlines = $2
        }
        END {
            unit["lat"] = "µs"; unit["bw"] = "MB/s"; unit["rate"] = "msg/s"
            printf "Median of %d run(s) per configuration. Latency (µs, half round trip): ratio = Toucan/MPICH, " \
                   "**lower is better**. Bandwidth (MB/s, 1 MB = 10^6 B, window of 64) and message rate " \
                   "(8-byte messages/s, window of 64): ratio = Toucan/MPICH, **higher is better**.\n\n", runs
            printf "| %-20s | %10s | %12s | %11s | %14s | %13s | %13s | %12s |\n", "measurement", "MPICH", \
                   "Toucan inter", "inter/MPICH", "Toucan sibling", "sibling/MPICH", "Toucan cousin", "cousin/MPICH"
            printf "|%s|%s|%s|%s|%s|%s|%s|%s|\n", "---", "---:", "---:", "---:", "---:", "---:", "---:", "---:"
            for (l = 1; l <= nlines; l++) {
                if (!(l in keys)) continue
                k = keys[l]; kd = kind[k]
                m = med["mpich-2p", k]; ti = med["toucan-inter", k]; ts = med["toucan-sibling", k]
                tc = med["toucan-cousin", k]
                name = kd " " human(size[k]) " (" unit[kd] ")"
                printf "| %s | %10s | %12s | %11s | %14s | %13s | %13s | %12s |\n", lpad(name, 20), fmt(kd, m), \
                       fmt(kd, ti), ratio(ti, m), fmt(kd, ts), ratio(ts, m), (nosmp == "yes" ? "not run" : fmt(kd, tc)), ratio(tc, m)
            }
            # issue 14, benchmark 2: cousins (two workers of one process)
            lm = med["mpich-2p", "lat 8"]; lc = med["toucan-cousin", "lat 8"]
            bm = med["mpich-2p", "bw 1048576"]; bc = med["toucan-cousin", "bw 1048576"]
            if (lc != "" || bc != "") {
                printf "\nCousins (issue 14, benchmark 2): "
                if (lc != "")
                    printf "8 B latency %.2f µs (<= 0.5 µs: %s; below MPICH'"'"'s %s µs: %s)", lc, \
                           (lc <= 0.5 ? "yes" : "no"), (lm == "" ? "-" : sprintf("%.2f", lm)), \
                           (lm == "" ? "-" : (lc < lm ? "yes" : "no"))
                if (lc != "" && bc != "") printf "; "
                if (bc != "")
                    printf "1 MiB bandwidth %.0f MB/s (>= MPICH'"'"'s %s MB/s: %s)", bc, \
                           (bm == "" ? "-" : sprintf("%.0f", bm)), (bm == "" ? "-" : (bc >= bm ? "yes" : "no"))
                printf ".\n"
            }
        }'
}

# A/B against the baseline (from bench_medians on stdin): this library / the baseline, same layout.
make_ab_table() {
    LC_ALL=C awk -F'\t' "$bench_awk_lib"'
        function fmt(kind, x) { return x == "" ? "failed" : (kind == "lat" ? sprintf("%.2f", x) : sprintf("%.0f", x)) }
        {
            key = $3 " " $4
            if (!(key in order)) { order[key] = $2; keys[$2] = key; kind[key] = $3; size[key] = $4 }
            med[$1, key] = $5
            if ($2 > nlines) nlines = $2
        }
        END {
            unit["lat"] = "µs"; unit["bw"] = "MB/s"; unit["rate"] = "msg/s"
            printf "\nA/B against the baseline (issue 14, benchmark 1: no cost at W=1, unchanged within noise): " \
                   "ratio = this library / baseline, same layout.\n\n"
            printf "| %-20s | %10s | %12s | %10s | %12s | %14s | %12s |\n", "measurement", "base inter", \
                   "Toucan inter", "inter/base", "base sibling", "Toucan sibling", "sibling/base"
            printf "|%s|%s|%s|%s|%s|%s|%s|\n", "---", "---:", "---:", "---:", "---:", "---:", "---:"
            for (l = 1; l <= nlines; l++) {
                if (!(l in keys)) continue
                k = keys[l]; kd = kind[k]
                bi = med["base-inter", k]; ti = med["toucan-inter", k]
                bs = med["base-sibling", k]; ts = med["toucan-sibling", k]
                printf "| %s | %10s | %12s | %10s | %12s | %14s | %12s |\n", lpad(kd " " human(size[k]) " (" unit[kd] ")", 20), \
                       fmt(kd, bi), fmt(kd, ti), ratio(ti, bi), fmt(kd, bs), fmt(kd, ts), ratio(ts, bs)
            }
        }'
}

table="$(bench_medians | make_table; bench_medians | bench_spread "${configs[@]}")"
if [[ "${no_smp-}" == yes ]]; then
    table+=$'\n\n'"Toucan cousin: not run (this library ignores TOUCAN_WORKERS: SMP mode, issue 14, is not in it)."
fi
if [[ -n "${baseline-}" ]]; then
    table+=$'\n'"$(bench_medians | make_ab_table)"
fi

# ---------------------------------------------------------------------------- report
# What the benchmark measures, above its section when RESULTS.md has none yet.
IFS= read -r -d '' intro <<'EOF' || true
## Point-to-point: pingpong

`bench/pingpong.c`, the same source built with `mpicc` and with `wrappers/toucancc`, measures
between ranks 0 and 1: ping-pong latency (half round trip), bandwidth (64 `MPI_Isend`s to 64
pre-posted `MPI_Irecv`s, then a zero-byte ack) and the 8-byte message rate (same window).
Configurations:

- **MPICH** (`mpich-2p`): plain MPICH, `mpirun -np 2`; two processes on this node, which MPICH
  connects through shared memory.
- **Toucan inter** (`toucan-inter`): Toucan-MPI, `TOUCAN_V=1 mpirun -np 2`; ranks 0 and 1 are
  in different processes, so every message goes through Toucan-MPI and then the MPICH
  underneath: the cost of our layer.
- **Toucan sibling** (`toucan-sibling`): Toucan-MPI, `TOUCAN_V=2 mpirun -np 1`; ranks 0 and 1
  are sibling subranks (coroutines) of one process, and messages are copied in memory without
  MPICH.
- **Toucan cousin** (`toucan-cousin`): Toucan-MPI in SMP mode, `TOUCAN_WORKERS=2 TOUCAN_V=1
  mpirun -np 1`; ranks 0 and 1 are cousins, on the two worker threads (cores) of one process:
  messages are copied in memory between the threads (issue 14, benchmark 2).

EOF
bench_report "$table" "$intro"

((${#failed[@]} == 0))
