# shellcheck shell=bash disable=SC2154 # configs, cfg_*, bench_kinds: set by the script that sources this
# bench/lib.sh: what the benchmark scripts (run-pingpong.sh, run-collectives.sh) share. Sourced,
# not executed; see bench/README.md.
#
# A script sets `set -euo pipefail`, sources this file, calls `bench_init NAME "$@"`, then:
#
#   bench_wait_quiet                      optional wait for a quiet machine (--wait-quiet)
#   bench_build                           library snapshot, NAME.c built with mpicc and toucancc
#   configs=(...); cfg_v, cfg_np, cfg_exe (and cfg_env) describe the configurations
#   bench_preflight ARGS...               one short run of each (program arguments ARGS)
#   bench_runs                            the interleaved runs, values into $raw
#   bench_medians                         medians per (configuration, measurement) from $raw
#   bench_report TABLE                    prints the table and a summary; RESULTS.md when asked
#
# A script whose program is another one's sets `bench_source=PROG` (bench/PROG.c) before
# bench_build; NAME then only names its outputs and its section of RESULTS.md.
#
# Every run's output is checked by bench_check_output: lines "KIND SIZE VALUE" with KIND
# matching $bench_kinds (an ERE the script sets), closed by "# end: N measurements".
#
# Variables set for the script: here (bench/), root (the repository), out (bench/out/NAME),
# results (bench/RESULTS.md), tag (run-NAME, prefix of messages), MPICC, MPIRUN, TOUCANCC,
# runs, quick, run_timeout, retries, update, prog_args, lib_mtime, lib_sum, raw, failed,
# run_configs, elapsed, others_pct, load_before, load_after, busy_note; with --baseline DIR
# (only in scripts that set bench_baseline_ok=yes before bench_init) baseline, base_commit,
# base_mtime, base_sum, and bench_build also builds NAME.base.

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
results="$here/RESULTS.md"

die() {
    printf '%s: error: %s\n' "$tag" "$*" >&2
    exit 2
}

# The comment block at the top of the script that runs (up to its `set -euo` line).
usage() {
    sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"
}

join_by() { # join_by SEP WORDS...
    local sep=$1 s=$2
    shift 2
    for w in "$@"; do s+="$sep$w"; done
    printf '%s\n' "$s"
}

# need_int OPTION MIN VALUE: VALUE (the argument of OPTION) is an integer >= MIN.
need_int() {
    if [[ ! "$3" =~ ^[0-9]+$ ]] || (($3 < $2)); then
        die "$1 needs an integer >= $2"
    fi
}

first_of() {
    local c
    for c in "$@"; do
        if command -v "$c" >/dev/null 2>&1; then
            echo "$c"
            return 0
        fi
    done
    return 1
}

# ---------------------------------------------------------------------------- options, tools
# bench_init NAME ARGS...: the options every benchmark script takes (see the scripts' -h),
# then the tools and the library.
bench_init() {
    bench=$1
    shift
    tag="run-$bench"
    out="$here/out/$bench"
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
        --baseline)
            [[ "${bench_baseline_ok-}" == yes ]] || die "--baseline: not supported by this script"
            [[ -d "${2-}" ]] || die "--baseline needs a directory (a built checkout of Toucan-MPI)"
            baseline="$(cd "$2" && pwd)"
            shift 2
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

    MPICC="${MPICC:-$(first_of mpicc.mpich mpicc || true)}"
    MPIRUN="${MPIRUN:-$(first_of mpirun.mpich mpirun || true)}"
    TOUCANCC="${TOUCANCC:-$root/wrappers/toucancc}"
    [[ -n "$MPICC" ]] || die "no mpicc found (install MPICH, or set MPICC)"
    [[ -n "$MPIRUN" ]] || die "no mpirun found (install MPICH, or set MPIRUN)"
    [[ -x "$TOUCANCC" ]] || die "$TOUCANCC is missing or not executable"
    command -v timeout >/dev/null || die "timeout (coreutils) is missing"

    if [[ -n "${baseline-}" ]]; then
        [[ -x "$baseline/wrappers/toucancc" && -e "$baseline/target/release/libtoucanmpi.so" ]] ||
            die "--baseline $baseline: needs wrappers/toucancc and target/release/libtoucanmpi.so (build it)"
        base_commit="$(git -C "$baseline" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    fi

    libdir="$("$TOUCANCC" -showme:libdirs)"
    if [[ ! -e "$libdir/libtoucanmpi.so" ]]; then
        die "Toucan-MPI is not built: $libdir/libtoucanmpi.so does not exist (run 'make' or 'cargo build --release' in $root)"
    fi
}

# ---------------------------------------------------------------------------- quiet machine
# Busy CPU time of the whole machine, in clock ticks (user nice system irq softirq steal).
cpu_busy_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9; exit }' /proc/stat; }

bench_wait_quiet() { wait_quiet "$wait_quiet"; }

# ---------------------------------------------------------------------------- build
build() { # build OUTPUT COMPILER...
    local exe=$1 src="$here/${bench_source:-$bench}.c"
    shift
    if ! "$@" -O2 -Wall -o "$exe" "$src" >"$exe.log" 2>&1; then
        cat "$exe.log" >&2
        die "build failed: $* -O2 -Wall -o $exe $src"
    fi
}

# The library may be rebuilt while the benchmark runs (cargo replaces the file). Every Toucan
# run uses one snapshot of it, in $out/lib, to which the Toucan build is linked (rpath), so the
# medians never mix two builds. Copy until the copy equals the original (not caught mid-write).
snapshot_lib() { # snapshot_lib [SRC_DIR DEST_DIR]: default $libdir and $out/lib
    local src="${1:-$libdir}/libtoucanmpi.so" dst="${2:-$out/lib}/libtoucanmpi.so" _
    mkdir -p "$(dirname "$dst")"
    for _ in 1 2 3 4 5; do
        lib_mtime="$(date -r "$src" '+%Y-%m-%d %H:%M:%S')"
        if cp "$src" "$dst.tmp" 2>/dev/null && cmp -s "$src" "$dst.tmp"; then
            mv -f "$dst.tmp" "$dst"
            lib_sum="$(sha256sum "$dst" | cut -c1-12)"
            return 0
        fi
        sleep 2
    done
    rm -f "$dst.tmp"
    die "could not take a stable copy of $src (is it being rebuilt?)"
}

build_toucan() { TOUCAN_LIBDIR="$out/lib" build "$out/$bench.toucan" "$TOUCANCC"; }

# Fresh run directory, library snapshot, $out/NAME.mpich and $out/NAME.toucan; with
# --baseline also $out/NAME.base, built with the baseline's own wrapper (and headers) against a
# snapshot of its library in $out/base-lib.
bench_build() {
    rm -rf "$out/runs"
    mkdir -p "$out/runs"
    if [[ -n "${baseline-}" ]]; then
        snapshot_lib "$baseline/target/release" "$out/base-lib"
        base_mtime=$lib_mtime base_sum=$lib_sum
        TOUCAN_LIBDIR="$out/base-lib" build "$out/$bench.base" "$baseline/wrappers/toucancc"
    fi
    snapshot_lib
    build "$out/$bench.mpich" "$MPICC"
    build_toucan
}

# ---------------------------------------------------------------------------- configurations
# A configuration CFG runs `env TOUCAN_V=${cfg_v[CFG]} ${cfg_env[CFG]} $MPIRUN -np
# ${cfg_np[CFG]} ${cfg_exe[CFG]}`; cfg_v "" leaves TOUCAN_V unset, cfg_env (optional) holds
# further VAR=VALUE words. TOUCAN_V and TOUCAN_WORKERS of the caller's environment never reach
# a run: a configuration sets what it uses (e.g. cfg_env "TOUCAN_WORKERS=2").
declare -A cfg_env=()

# The command line of a configuration, for the report (paths relative to the repository).
show_cmd() {
    local cfg=$1 s="" a
    [[ -n "${cfg_v[$cfg]}" ]] && s="TOUCAN_V=${cfg_v[$cfg]} "
    [[ -n "${cfg_env[$cfg]-}" ]] && s+="${cfg_env[$cfg]} "
    s+="$(basename "$MPIRUN") -np ${cfg_np[$cfg]} ${cfg_exe[$cfg]#"$root"/}"
    for a in "${prog_args[@]+"${prog_args[@]}"}"; do s+=" $(printf '%q' "$a")"; done
    printf '%s\n' "$s"
}

# run_config CONFIG STDOUT STDERR [ARGS...]: one run, under the timeout, with the program
# arguments ARGS (default: those of the command line); returns its exit status.
run_config() {
    local cfg=$1 o=$2 e=$3 env_v=() args=("${prog_args[@]+"${prog_args[@]}"}") extra=()
    shift 3
    (($#)) && args=("$@")
    [[ -n "${cfg_v[$cfg]}" ]] && env_v=("TOUCAN_V=${cfg_v[$cfg]}")
    [[ -n "${cfg_env[$cfg]-}" ]] && read -ra extra <<<"${cfg_env[$cfg]}"
    # env's options (-u) before its assignments: after the first VAR=VALUE it reads a command.
    timeout -k 10 "$run_timeout" env -u TOUCAN_V -u TOUCAN_WORKERS "${env_v[@]+"${env_v[@]}"}" \
        "${extra[@]+"${extra[@]}"}" "$MPIRUN" -np "${cfg_np[$cfg]}" \
        "${cfg_exe[$cfg]}" "${args[@]+"${args[@]}"}" >"$o" 2>"$e"
}

# bench_check_output FILE: the run printed its closing "# end: N measurements" line and N
# well-formed measurement lines before it.
bench_check_output() {
    awk -v kinds="^($bench_kinds)\$" '
        /^# end: [0-9]+ measurements$/ { end = $3; next }
        /^#/ || NF == 0 { next }
        $1 ~ kinds && $2 ~ /^[0-9]+$/ && $3 ~ /^[0-9.]+([eE][-+]?[0-9]+)?$/ && NF == 3 { c++; next }
        { bad = 1 }
        END { exit !(end != "" && c == end + 0 && c > 0 && !bad) }' "$1"
}

# ---------------------------------------------------------------------------- preflight
# bench_preflight ARGS...: one short run per configuration with the program arguments ARGS,
# so that a broken build fails in seconds rather than after every timeout. If a Toucan
# configuration fails and the library has been rebuilt since the snapshot, take a new
# snapshot and try again, once. Sets run_configs (those that passed) and preflight_failed.
preflight_once() {
    local cfg
    preflight_failed=()
    for cfg in "${configs[@]}"; do
        if ! run_config "$cfg" "$out/runs/$cfg.preflight.out" "$out/runs/$cfg.preflight.err" "$@" ||
            ! bench_check_output "$out/runs/$cfg.preflight.out"; then
            preflight_failed+=("$cfg")
        fi
    done
}

bench_preflight() {
    local cfg
    preflight_once "$@"
    if [[ " ${preflight_failed[*]} " == *" toucan-"* ]] && ! cmp -s "$libdir/libtoucanmpi.so" "$out/lib/libtoucanmpi.so"; then
        echo "$tag: ${preflight_failed[*]} failed a short run, and the library was rebuilt since; taking a new copy" >&2
        snapshot_lib
        build_toucan
        preflight_once "$@"
    fi
    run_configs=()
    for cfg in "${configs[@]}"; do
        if [[ " ${preflight_failed[*]} " == *" $cfg "* ]]; then
            echo "$tag: error: $cfg fails even a short run, left out; output:" >&2
            tail -n 5 "$out/runs/$cfg.preflight.out" "$out/runs/$cfg.preflight.err" | sed 's/^/    /' >&2
        else
            run_configs+=("$cfg")
        fi
    done
}

# ---------------------------------------------------------------------------- runs
# Other work on the machine (builds, tests; MPICH busy-polls) makes these numbers noisy.
# Measured: the CPU time that other processes used during the runs, i.e. all busy time in
# /proc/stat minus the CPU time of this script's children (the runs), as a share of all CPUs
# over the elapsed time.
children_ticks() { sed 's/.*) //' "/proc/$$/stat" | awk '{ print $14 + $15 }'; } # cutime + cstime

# Runs every configuration $runs times, interleaved (run 1 of each, then run 2, ...), retrying
# failed runs; the values go to $raw (config, run, line, kind, size, value).
bench_runs() {
    local start start_ns busy0 child0 i cfg o e ok attempt t0 rc why
    start=$SECONDS
    start_ns=$(date +%s%N)
    busy0=$(cpu_busy_ticks)
    child0=$(children_ticks)
    load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
    raw="$out/raw.tsv"
    : >"$raw"
    failed=()
    for cfg in "${preflight_failed[@]+"${preflight_failed[@]}"}"; do failed+=("$cfg (every run: fails a short run)"); done
    echo "$tag: libtoucanmpi.so of $lib_mtime (sha256 $lib_sum), copied to ${out#"$root"/}/lib" >&2
    echo "$tag: $runs run(s) per configuration, timeout ${run_timeout}s, outputs in ${out#"$root"/}/runs" >&2
    for ((i = 1; i <= runs; i++)); do
        for cfg in "${run_configs[@]+"${run_configs[@]}"}"; do
            o="$out/runs/$cfg.$i.out"
            e="$out/runs/$cfg.$i.err"
            ok=no
            for ((attempt = 0; attempt <= retries; attempt++)); do
                t0=$SECONDS
                rc=0
                run_config "$cfg" "$o" "$e" || rc=$?
                if ((rc == 0)) && bench_check_output "$o"; then
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
                printf '%s: %s run %d (attempt %d) failed: %s; output:\n' "$tag" "$cfg" "$i" $((attempt + 1)) "$why" >&2
                tail -n 5 "$o" "$e" 2>/dev/null | sed 's/^/    /' >&2
                cp "$o" "$o.attempt$((attempt + 1))" 2>/dev/null || true
                cp "$e" "$e.attempt$((attempt + 1))" 2>/dev/null || true
            done
            if [[ "$ok" == yes ]]; then
                printf '%s: %-15s run %d/%d ok (%ds)\n' "$tag" "$cfg" "$i" "$runs" $((SECONDS - t0)) >&2
                awk -v cfg="$cfg" -v run="$i" '!/^#/ && NF == 3 { print cfg "\t" run "\t" ++k "\t" $1 "\t" $2 "\t" $3 }' "$o" >>"$raw"
            else
                failed+=("$cfg run $i")
            fi
        done
    done
    load_after="$(cut -d' ' -f1-3 /proc/loadavg)"
    elapsed=$((SECONDS - start))
    others_pct=$(awk -v b="$(($(cpu_busy_ticks) - busy0))" -v c="$(($(children_ticks) - child0))" \
        -v ns="$(($(date +%s%N) - start_ns))" -v hz="$(getconf CLK_TCK)" -v n="$(nproc)" \
        'BEGIN { p = 100 * (b - c) / hz / (ns / 1e9) / n; printf "%.0f", p < 0 ? 0 : p }')
    busy_note=""
    if ((others_pct >= 10)); then
        busy_note="other processes used ${others_pct}% of the CPU time during the runs: results are disturbed, rerun on a quiet machine"
        echo "$tag: warning: $busy_note" >&2
    fi
}

# ---------------------------------------------------------------------------- tables
# Medians per (config, measurement): sort the values, then take the middle one (the mean of
# the two middle ones for an even count). Output: config line kind size median n min max.
bench_medians() {
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

# awk functions for the scripts' table programs (prepend to the program text):
#   lpad(s, w)     s padded to w columns (UTF-8 aware: run awk with LC_ALL=C)
#   human(bytes)   "8 B", "4 KiB", "1 MiB"
#   ratio(a, b)    a/b with two decimals, "-" when either is missing
bench_awk_lib='
    function lpad(s, w,   t, n) { t = s; n = w - (length(s) - gsub(/[\200-\277]/, "", t)); return s sprintf("%*s", n > 0 ? n : 0, "") }
    function human(s) {
        if (s >= 1048576 && s % 1048576 == 0) return (s / 1048576) " MiB"
        if (s >= 1024 && s % 1024 == 0) return (s / 1024) " KiB"
        return s " B"
    }
    function ratio(a, b) { return (a == "" || b == "" || b == 0) ? "-" : sprintf("%.2f", a / b) }
'

# bench_spread CONFIGS...: from bench_medians on stdin, the line on the run-to-run spread,
# (max - min)/median, largest per configuration (nothing for a single run).
bench_spread() {
    if ((runs < 2)); then
        cat >/dev/null # read it all: the writer must not die of SIGPIPE (pipefail)
        return 0
    fi
    LC_ALL=C awk -F'\t' -v cfgs="$*" "$bench_awk_lib"'
        {
            spread = ($5 > 0) ? ($8 - $7) / $5 : 0
            if (!($1 in worst) || spread > worst[$1]) { worst[$1] = spread; worst_at[$1] = $3 " " human($4) }
        }
        END {
            printf "\nRun-to-run spread, (max - min)/median, largest per configuration:"
            n = split(cfgs, c, " ")
            for (i = 1; i <= n; i++) {
                if (c[i] in worst) printf " %s %.0f%% (%s)%s", c[i], 100 * worst[c[i]], worst_at[c[i]], (i < n) ? ";" : "."
                else printf " %s -%s", c[i], (i < n) ? ";" : "."
            }
            printf "\n"
        }'
}

# ---------------------------------------------------------------------------- report
# bench_report TABLE INTRO: prints TABLE (or a note when no run succeeded) and a summary; with
# --update-results, rewrites the section between <!-- NAME:begin --> and <!-- NAME:end --> in
# bench/RESULTS.md. A missing file is created with a general header; a missing section is
# appended after the text INTRO (a heading and what the benchmark measures, Markdown).
bench_report() {
    local table=$1 intro=$2
    [[ -s "$raw" ]] || table="No successful run: no table (see the run outputs in ${out#"$root"/}/runs)."
    printf '\n%s\n\n' "$table"
    if ((${#failed[@]})); then
        printf '%s: FAILED runs (not in the medians): %s\n' "$tag" "$(join_by ', ' "${failed[@]}")" >&2
    fi
    printf '%s: %d runs in %d s; other processes used %d%% of the CPU time; load average before %s, after %s\n' \
        "$tag" $((runs * ${#run_configs[@]})) "$elapsed" "$others_pct" "$load_before" "$load_after" >&2
    [[ "$update" == yes ]] || return 0

    if [[ ! -f "$results" ]]; then
        cat >"$results" <<'EOF'
# Benchmark results

Results of the benchmarks in `bench/` (how to run them: `bench/README.md`). Each section
between `<!-- NAME:begin -->` and `<!-- NAME:end -->` is rewritten by its script when run with
`--update-results`; edit only outside those markers.

EOF
    fi
    local cmdline="bench/$tag.sh" a section tmp cfg
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
    tmp="$(mktemp "$results.XXXXXX")"
    INTRO="$intro" awk -v section="$section" -v begin="<!-- $bench:begin -->" -v end="<!-- $bench:end -->" '
        function emit() { while ((getline line < section) > 0) print line; close(section) }
        $0 == begin { print; emit(); skip = 1; found = 1; next }
        $0 == end { skip = 0 }
        !skip { print; last = $0 }
        END {
            if (found) exit
            if (last != "") print ""
            printf "%s", ENVIRON["INTRO"]
            print begin; emit(); print end
        }' "$results" >"$tmp"
    cat "$tmp" >"$results" # keeps the file's permissions
    rm -f "$tmp"
    echo "$tag: updated ${results#"$root"/}" >&2
}

# ---------------------------------------------------------------------------- for scripts without bench_init
# (run-privatize.sh measures its own way; it uses these and the helpers above)

# wait_quiet SECONDS: wait up to SECONDS for the machine to be quiet (other processes using
# under 10% of the CPUs for 10 s in a row); then go on anyway.
wait_quiet() {
    local limit=$1 hz quiet=0 waited=0 b0
    ((limit > 0)) || return 0
    echo "$tag: waiting up to ${limit}s for a quiet machine" >&2
    hz=$(getconf CLK_TCK)
    while ((quiet < 10 && waited < limit)); do
        b0=$(cpu_busy_ticks)
        sleep 1
        waited=$((waited + 1))
        if (($(cpu_busy_ticks) - b0 < hz * $(nproc) / 10)); then quiet=$((quiet + 1)); else quiet=0; fi
    done
    if ((quiet >= 10)); then
        echo "$tag: quiet after ${waited}s" >&2
    else
        echo "$tag: still busy after ${waited}s; running anyway" >&2
    fi
}

# cutime + cstime
load_start() {
    load_t0=$SECONDS
    load_ns0=$(date +%s%N)
    load_busy0=$(cpu_busy_ticks)
    load_child0=$(children_ticks)
    load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
}

load_end() {
    load_after="$(cut -d' ' -f1-3 /proc/loadavg)"
    elapsed=$((SECONDS - load_t0))
    others_pct=$(awk -v b="$(($(cpu_busy_ticks) - load_busy0))" -v c="$(($(children_ticks) - load_child0))" \
        -v ns="$(($(date +%s%N) - load_ns0))" -v hz="$(getconf CLK_TCK)" -v n="$(nproc)" \
        'BEGIN { p = 100 * (b - c) / hz / (ns / 1e9) / n; printf "%.0f", p < 0 ? 0 : p }')
}

# The machine, MPICH and the library, as one line each for a results section.
describe_setup() {
    local commit
    commit="$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    if [[ -n "$(git -C "$root" status --porcelain --untracked-files=no -- libtoucanmpi 2>/dev/null)" ]]; then
        commit+=" + uncommitted changes in libtoucanmpi/"
    fi
    echo "- Machine: $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1);" \
        "$(mpichversion 2>/dev/null | sed -n 's/^MPICH Version:[[:space:]]*/MPICH /p')" \
        "($(mpichversion 2>/dev/null | sed -n 's/^MPICH Device:[[:space:]]*//p'))."
    echo "- Toucan-MPI: commit $commit; libtoucanmpi.so built $lib_mtime (sha256 $lib_sum; all runs used this one copy)."
    if [[ -n "${baseline-}" ]]; then
        echo "- Baseline (\`--baseline\`): $baseline, commit $base_commit; libtoucanmpi.so built $base_mtime" \
            "(sha256 $base_sum; copied)."
    fi
    echo "- Other processes used ${others_pct}% of the CPU time during the runs; load average" \
        "(1, 5, 15 min) before: $load_before, after: $load_after. Total time: ${elapsed} s."
}

# update_section RESULTS NAME FILE: replaces the lines between <!-- NAME:begin --> and
# <!-- NAME:end --> of RESULTS with FILE's (appends the section, markers included, when
# missing), keeping the file's permissions.
update_section() {
    local results=$1 name=$2 section=$3 tmp
    tmp="$(mktemp "$results.XXXXXX")"
    awk -v section="$section" -v begin="<!-- $name:begin -->" -v end="<!-- $name:end -->" '
        function emit() { while ((getline line < section) > 0) print line; close(section) }
        $0 == begin { print; emit(); skip = 1; found = 1; next }
        $0 == end { skip = 0 }
        !skip { print }
        END {
            if (!found) { print ""; print begin; emit(); print end }
        }' "$results" >"$tmp"
    cat "$tmp" >"$results"
    rm -f "$tmp"
}

# median VALUES...: the middle value (mean of the two middle ones for an even count); empty
# when there is none.
median() {
    (($#)) || return 0
    printf '%s\n' "$@" | sort -g | awk '{ v[++n] = $1 } END { if (n) print (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }'
}

