#!/usr/bin/env bash
# bench/run-pingpong.sh: point-to-point latency, bandwidth and message rate, plain MPICH and
# Toucan-MPI side by side (bench/pingpong.c; see bench/README.md).
#
#   bench/run-pingpong.sh [-r N] [-q] [-t SECONDS] [--retries N] [--wait-quiet SECONDS]
#                         [--update-results] [-- ARGS]
#
# Builds bench/pingpong.c with mpicc -O2 and with wrappers/toucancc -O2 (into
# bench/out/pingpong/), then runs each configuration N times, interleaved
# (run 1 of every configuration, then run 2, ...):
#
#   mpich-2p        plain MPICH,  mpirun -np 2                (two processes, MPICH shared memory)
#   toucan-inter    Toucan-MPI,   TOUCAN_V=1 mpirun -np 2     (ranks 0 and 1 in two processes)
#   toucan-sibling  Toucan-MPI,   TOUCAN_V=2 mpirun -np 1     (ranks 0 and 1 sibling subranks)
#
# and prints a Markdown table of the median of each measurement per configuration, with the
# ratios Toucan/MPICH.
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

me=run-pingpong
# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
here=$bench_here
root=$bench_root
out="$here/out/pingpong"
results="$here/RESULTS.md"
invoked=("$@")

runs=5
quick=no
run_timeout=120
retries=1
update=no
wait_quiet=0
prog_args=()

while (($#)); do
    case "$1" in
    -r)
        need_int "$1" 1 "${2-}"
        runs=$2
        shift 2
        ;;
    -q)
        quick=yes
        shift
        ;;
    -t)
        need_int "$1" 1 "${2-}"
        run_timeout=$2
        shift 2
        ;;
    --retries)
        need_int "$1" 0 "${2-}"
        retries=$2
        shift 2
        ;;
    --wait-quiet)
        need_int "$1" 0 "${2-}"
        wait_quiet=$2
        shift 2
        ;;
    --update-results)
        update=yes
        shift
        ;;
    -h | --help)
        usage
        exit 0
        ;;
    --)
        shift
        prog_args=("$@")
        break
        ;;
    *)
        usage >&2
        die "unknown argument '$1'"
        ;;
    esac
done
[[ "$quick" == yes ]] && prog_args=(-q "${prog_args[@]+"${prog_args[@]}"}")

# ---------------------------------------------------------------------------- tools, library
MPICC="${MPICC:-$(first_of mpicc.mpich mpicc || true)}"
MPIRUN="${MPIRUN:-$(first_of mpirun.mpich mpirun || true)}"
TOUCANCC="${TOUCANCC:-$root/wrappers/toucancc}"
[[ -n "$MPICC" ]] || die "no mpicc found (install MPICH, or set MPICC)"
[[ -n "$MPIRUN" ]] || die "no mpirun found (install MPICH, or set MPIRUN)"
[[ -x "$TOUCANCC" ]] || die "$TOUCANCC is missing or not executable"
command -v timeout >/dev/null || die "timeout (coreutils) is missing"

libdir="$("$TOUCANCC" -showme:libdirs)"
if [[ ! -e "$libdir/libtoucanmpi.so" ]]; then
    die "Toucan-MPI is not built: $libdir/libtoucanmpi.so does not exist (run 'make' or 'cargo build --release' in $root)"
fi

# ---------------------------------------------------------------------------- quiet machine
wait_quiet "$wait_quiet"

# ---------------------------------------------------------------------------- build
rm -rf "$out/runs"
mkdir -p "$out/runs"
build() { # build OUTPUT COMPILER...
    local exe=$1
    shift
    if ! "$@" -O2 -Wall -o "$exe" "$here/pingpong.c" >"$exe.log" 2>&1; then
        cat "$exe.log" >&2
        die "build failed: $* -O2 -Wall -o $exe $here/pingpong.c"
    fi
}
# Every Toucan run uses one snapshot of the library, to which the Toucan build is linked (rpath).
snapshot_lib "$libdir" "$out/lib"

build "$out/pingpong.mpich" "$MPICC"
TOUCAN_LIBDIR="$out/lib" build "$out/pingpong.toucan" "$TOUCANCC"

# ---------------------------------------------------------------------------- configurations
configs=(mpich-2p toucan-inter toucan-sibling)
# TOUCAN_V ("" = unset), process count and executable of each configuration.
declare -A cfg_v=([mpich-2p]="" [toucan-inter]=1 [toucan-sibling]=2)
declare -A cfg_np=([mpich-2p]=2 [toucan-inter]=2 [toucan-sibling]=1)
declare -A cfg_exe=([mpich-2p]="$out/pingpong.mpich" [toucan-inter]="$out/pingpong.toucan"
    [toucan-sibling]="$out/pingpong.toucan")

# The command line of a configuration, for the report (paths relative to the repository).
show_cmd() {
    local cfg=$1 s="" a
    [[ -n "${cfg_v[$cfg]}" ]] && s="TOUCAN_V=${cfg_v[$cfg]} "
    s+="$(basename "$MPIRUN") -np ${cfg_np[$cfg]} ${cfg_exe[$cfg]#"$root"/}"
    for a in "${prog_args[@]+"${prog_args[@]}"}"; do s+=" $(printf '%q' "$a")"; done
    printf '%s\n' "$s"
}

# run_config CONFIG STDOUT STDERR [ARGS...]: one run, under the timeout, with the pingpong
# arguments ARGS (default: those of the command line); returns its exit status.
run_config() {
    local cfg=$1 o=$2 e=$3 env_v=(-u TOUCAN_V) args=("${prog_args[@]+"${prog_args[@]}"}")
    shift 3
    (($#)) && args=("$@")
    [[ -n "${cfg_v[$cfg]}" ]] && env_v=("TOUCAN_V=${cfg_v[$cfg]}")
    timeout -k 10 "$run_timeout" env "${env_v[@]}" "$MPIRUN" -np "${cfg_np[$cfg]}" "${cfg_exe[$cfg]}" \
        "${args[@]+"${args[@]}"}" >"$o" 2>"$e"
}

# check_output FILE: the run printed its closing "# end: N measurements" line and N
# well-formed measurement lines before it.
check_output() {
    awk '
        /^# end: [0-9]+ measurements$/ { end = $3; next }
        /^#/ || NF == 0 { next }
        $1 ~ /^(lat|bw|rate)$/ && $2 ~ /^[0-9]+$/ && $3 ~ /^[0-9.]+([eE][-+]?[0-9]+)?$/ && NF == 3 { c++; next }
        { bad = 1 }
        END { exit !(end != "" && c == end + 0 && c > 0 && !bad) }' "$1"
}

# ---------------------------------------------------------------------------- preflight
# One short run per configuration (pingpong -q -t rate, well under a second), so that a broken
# build fails in seconds rather than after every timeout. If a Toucan configuration fails and
# the library has been rebuilt since the snapshot, take a new snapshot and try again, once.
preflight_failed=()
preflight() {
    local cfg
    preflight_failed=()
    for cfg in "${configs[@]}"; do
        if ! run_config "$cfg" "$out/runs/$cfg.preflight.out" "$out/runs/$cfg.preflight.err" -q -t rate ||
            ! check_output "$out/runs/$cfg.preflight.out"; then
            preflight_failed+=("$cfg")
        fi
    done
}
preflight
if [[ " ${preflight_failed[*]} " == *" toucan-"* ]] && ! cmp -s "$libdir/libtoucanmpi.so" "$out/lib/libtoucanmpi.so"; then
    echo "run-pingpong: ${preflight_failed[*]} failed a short run, and the library was rebuilt since; taking a new copy" >&2
    snapshot_lib "$libdir" "$out/lib"
    TOUCAN_LIBDIR="$out/lib" build "$out/pingpong.toucan" "$TOUCANCC"
    preflight
fi
run_configs=()
for cfg in "${configs[@]}"; do
    if [[ " ${preflight_failed[*]} " == *" $cfg "* ]]; then
        echo "run-pingpong: error: $cfg fails even a short run, left out; output:" >&2
        tail -n 5 "$out/runs/$cfg.preflight.out" "$out/runs/$cfg.preflight.err" | sed 's/^/    /' >&2
    else
        run_configs+=("$cfg")
    fi
done

# ---------------------------------------------------------------------------- runs
# Other work on the machine (builds, tests; MPICH busy-polls) makes these numbers noisy, and
# more so for the two-process configurations than for the one-process one (lib.sh: load_start).
load_start
raw="$out/raw.tsv"
: >"$raw"
failed=()
for cfg in "${preflight_failed[@]+"${preflight_failed[@]}"}"; do failed+=("$cfg (every run: fails a short run)"); done
echo "run-pingpong: libtoucanmpi.so of $lib_mtime (sha256 $lib_sum), copied to ${out#"$root"/}/lib" >&2
echo "run-pingpong: $runs run(s) per configuration, timeout ${run_timeout}s, outputs in ${out#"$root"/}/runs" >&2
for ((i = 1; i <= runs; i++)); do
    for cfg in "${run_configs[@]+"${run_configs[@]}"}"; do
        o="$out/runs/$cfg.$i.out"
        e="$out/runs/$cfg.$i.err"
        ok=no
        for ((attempt = 0; attempt <= retries; attempt++)); do
            t0=$SECONDS
            rc=0
            run_config "$cfg" "$o" "$e" || rc=$?
            if ((rc == 0)) && check_output "$o"; then
                ok=yes
                break
            fi
            if ((rc == 124 || rc == 137)); then
                why="timed out after ${run_timeout}s"
            elif ((rc != 0)); then
                why="exit status $rc"
            else
                why="incomplete or malformed output"
            fi
            printf 'run-pingpong: %s run %d (attempt %d) failed: %s; output:\n' "$cfg" "$i" $((attempt + 1)) "$why" >&2
            tail -n 5 "$o" "$e" 2>/dev/null | sed 's/^/    /' >&2
            cp "$o" "$o.attempt$((attempt + 1))" 2>/dev/null || true
            cp "$e" "$e.attempt$((attempt + 1))" 2>/dev/null || true
        done
        if [[ "$ok" == yes ]]; then
            printf 'run-pingpong: %-15s run %d/%d ok (%ds)\n' "$cfg" "$i" "$runs" $((SECONDS - t0)) >&2
            awk -v cfg="$cfg" -v run="$i" '!/^#/ && NF == 3 { print cfg "\t" run "\t" ++k "\t" $1 "\t" $2 "\t" $3 }' "$o" >>"$raw"
        else
            failed+=("$cfg run $i")
        fi
    done
done
load_end
busy_note=""
if ((others_pct >= 10)); then
    busy_note="other processes used ${others_pct}% of the CPU time during the runs: results are disturbed, rerun on a quiet machine"
    echo "run-pingpong: warning: $busy_note" >&2
fi

# ---------------------------------------------------------------------------- table
# Medians per (config, measurement): sort the values, then take the middle one (the mean of
# the two middle ones for an even count). Output: config line kind size median n min max.
medians() {
    sort -t$'\t' -k1,1 -k3,3n -k6,6g "$raw" | awk -F'\t' -v OFS='\t' '
        function flush() {
            if (n == 0) return
            m = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
            print key_cfg, key_line, key_kind, key_size, m, n, v[1], v[n]
            n = 0
        }
        { k = $1 SUBSEP $3 }
        k != prev { flush(); prev = k; key_cfg = $1; key_line = $3; key_kind = $4; key_size = $5 }
        { v[++n] = $6 }
        END { flush() }'
}

# Markdown table of the medians; then one line on the run-to-run spread.
make_table() {
    medians | LC_ALL=C awk -F'\t' -v runs="$runs" '
        # Pad to w characters (UTF-8: continuation bytes take no column).
        function lpad(s, w,   t, n) { t = s; n = w - (length(s) - gsub(/[\200-\277]/, "", t)); return s sprintf("%*s", n > 0 ? n : 0, "") }
        function human(s) {
            if (s >= 1048576 && s % 1048576 == 0) return (s / 1048576) " MiB"
            if (s >= 1024 && s % 1024 == 0) return (s / 1024) " KiB"
            return s " B"
        }
        function fmt(kind, x) {
            if (x == "") return "failed"
            return kind == "lat" ? sprintf("%.2f", x) : sprintf("%.0f", x)
        }
        function ratio(a, b) { return (a == "" || b == "" || b == 0) ? "-" : sprintf("%.2f", a / b) }
        {
            key = $3 " " $4
            if (!(key in order)) { order[key] = $2; keys[$2] = key; kind[key] = $3; size[key] = $4 }
            med[$1, key] = $5
            spread = ($5 > 0) ? ($8 - $7) / $5 : 0
            if (!($1 in worst) || spread > worst[$1]) { worst[$1] = spread; worst_at[$1] = key }
            if ($2 > nlines) nlines = $2
        }
        END {
            unit["lat"] = "µs"; unit["bw"] = "MB/s"; unit["rate"] = "msg/s"
            printf "Median of %d run(s) per configuration. Latency (µs, half round trip): ratio = Toucan/MPICH, " \
                   "**lower is better**. Bandwidth (MB/s, 1 MB = 10^6 B, window of 64) and message rate " \
                   "(8-byte messages/s, window of 64): ratio = Toucan/MPICH, **higher is better**.\n\n", runs
            printf "| %-20s | %10s | %12s | %11s | %14s | %13s |\n", "measurement", "MPICH", "Toucan inter", \
                   "inter/MPICH", "Toucan sibling", "sibling/MPICH"
            printf "|%s|%s|%s|%s|%s|%s|\n", "---", "---:", "---:", "---:", "---:", "---:"
            for (l = 1; l <= nlines; l++) {
                if (!(l in keys)) continue
                k = keys[l]; kd = kind[k]
                m = med["mpich-2p", k]; ti = med["toucan-inter", k]; ts = med["toucan-sibling", k]
                name = kd " " human(size[k]) " (" unit[kd] ")"
                printf "| %s | %10s | %12s | %11s | %14s | %13s |\n", lpad(name, 20), fmt(kd, m), fmt(kd, ti), \
                       ratio(ti, m), fmt(kd, ts), ratio(ts, m)
            }
            if (runs < 2) exit
            printf "\nRun-to-run spread, (max - min)/median, largest per configuration:"
            n = split("mpich-2p toucan-inter toucan-sibling", cfgs, " ")
            for (i = 1; i <= n; i++) {
                c = cfgs[i]
                if (c in worst) {
                    split(worst_at[c], p, " ")
                    printf " %s %.0f%% (%s %s)%s", c, 100 * worst[c], p[1], human(p[2]), (i < n) ? ";" : "."
                } else {
                    printf " %s -%s", c, (i < n) ? ";" : "."
                }
            }
            printf "\n"
        }'
}

if [[ -s "$raw" ]]; then
    table="$(make_table)"
else
    table="No successful run: no table (see the run outputs in ${out#"$root"/}/runs)."
fi
printf '\n%s\n\n' "$table"
if ((${#failed[@]})); then
    printf 'run-pingpong: FAILED runs (not in the medians): %s\n' "$(join_by ', ' "${failed[@]}")" >&2
fi
printf 'run-pingpong: %d runs in %d s; other processes used %d%% of the CPU time; load average before %s, after %s\n' \
    $((runs * ${#run_configs[@]})) "$elapsed" "$others_pct" "$load_before" "$load_after" >&2

# ---------------------------------------------------------------------------- RESULTS.md
if [[ "$update" == yes ]]; then
    if [[ ! -f "$results" ]]; then
        cat >"$results" <<'EOF'
# Benchmark results

Results of the benchmarks in `bench/` (how to run them: `bench/README.md`). Each section
between `<!-- NAME:begin -->` and `<!-- NAME:end -->` is rewritten by its script when run with
`--update-results`; edit only outside those markers.

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

EOF
    fi
    cmdline="bench/run-pingpong.sh"
    for a in "${invoked[@]+"${invoked[@]}"}"; do cmdline+=" $(printf '%q' "$a")"; done
    section="$out/section.md"
    {
        echo "Produced by \`$cmdline\` (from the repository root) on $(date '+%Y-%m-%d %H:%M %Z')."
        echo
        describe_setup
        echo "- Runs (interleaved, $runs of each, timeout ${run_timeout} s):"
        for cfg in "${configs[@]}"; do echo "  - \`$(show_cmd "$cfg")\` ($cfg)"; done
        [[ -n "$busy_note" ]] && echo "- **Warning:** $busy_note."
        if ((${#failed[@]})); then
            echo "- **Failed runs, left out of the medians:** $(join_by ', ' "${failed[@]}")."
        fi
        echo
        echo "$table"
    } >"$section"
    update_section "$results" pingpong "$section"
    echo "run-pingpong: updated ${results#"$root"/}" >&2
fi

((${#failed[@]} == 0))
