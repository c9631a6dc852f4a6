#!/usr/bin/env bash
# bench/run-privatize.sh: what privatized globals cost (bench/privatize.c; see bench/README.md).
#
#   bench/run-privatize.sh [-r N] [-V "1 16 64 256"] [-n N] [-t SECONDS] [--no-callgrind]
#                          [--wait-quiet SECONDS] [--update-results]
#
# Builds bench/privatize.c with wrappers/toucancc -O2 (into bench/out/privatize/) as:
#   big      1 MiB of initialised globals and about 1 MiB of generated code (the issue's program)
#   tls-B    4 KiB of globals, no generated code, B bytes of thread-locals (B = 0, 64, 4096)
# and measures, each configuration N times (median):
#   start-up    `TOUCAN_V=V mpirun -np 1 big start` for each V, privatization off and on
#               (TOUCAN_PRIVATIZE=off / auto): wall time of the whole job, the time Toucan took
#               to load the copies (from TOUCAN_VERBOSE=1), and the process's memory (RSS and
#               PSS, after every subrank passed MPI_Init and read its globals)
#   switch      `TOUCAN_V=2 mpirun -np 1 PROG switch N`: a 0-byte ping-pong between sibling
#               subranks (two context switches per round trip), ns per round trip: big with
#               privatization off and on, and tls-B on
#   callgrind   the same switch configurations under valgrind --tool=callgrind (one process
#               started without mpirun): instructions per round trip, from the difference
#               between runs of 1000 and 11000 round trips; exact and independent of the load
#               (left out with --no-callgrind or when valgrind is missing)
#
# Options:
#   -r N              runs per configuration (default 5)
#   -V "LIST"         values of V for start-up (default "1 16 64 256")
#   -n N              round trips of a timed switch run (default 200000)
#   -t SECONDS        timeout of one run (default 120)
#   --no-callgrind    skip the instruction counts
#   --wait-quiet S    first wait up to S seconds for a quiet machine (bench/lib.sh)
#   --update-results  also rewrite the section between <!-- privatize:begin --> and
#                     <!-- privatize:end --> in bench/RESULTS.md
#   -h, --help        this text
#
# Environment: MPIRUN (default mpirun.mpich, else mpirun), TOUCANCC (default
# <repo>/wrappers/toucancc), VALGRIND (default valgrind).
#
# Outputs: bench/out/privatize/runs/* (every run), raw.tsv (what, config, V, run, value). Exit
# status 0 when every run succeeded, 1 when some failed (the tables are still printed), 2 on
# usage or build errors.
set -euo pipefail

tag=run-privatize
# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
out="$here/out/privatize"
results="$here/RESULTS.md"
invoked=("$@")

runs=5
vs="1 16 64 256"
switch_n=200000
run_timeout=120
callgrind=yes
update=no
wait_limit=0
tls_sizes=(0 64 4096)

while (($#)); do
    case "$1" in
    -r)
        need_int "$1" 1 "${2-}"
        runs=$2
        shift 2
        ;;
    -V)
        [[ "${2-}" =~ ^[0-9\ ]+$ ]] || die "-V needs a list of integers"
        vs=$2
        shift 2
        ;;
    -n)
        need_int "$1" 1 "${2-}"
        switch_n=$2
        shift 2
        ;;
    -t)
        need_int "$1" 1 "${2-}"
        run_timeout=$2
        shift 2
        ;;
    --no-callgrind)
        callgrind=no
        shift
        ;;
    --wait-quiet)
        need_int "$1" 0 "${2-}"
        wait_limit=$2
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
    *)
        usage >&2
        die "unknown argument '$1'"
        ;;
    esac
done

MPIRUN="${MPIRUN:-$(first_of mpirun.mpich mpirun || true)}"
TOUCANCC="${TOUCANCC:-$root/wrappers/toucancc}"
VALGRIND="${VALGRIND:-valgrind}"
[[ -n "$MPIRUN" ]] || die "no mpirun found (install MPICH, or set MPIRUN)"
[[ -x "$TOUCANCC" ]] || die "$TOUCANCC is missing or not executable"
if [[ $callgrind == yes ]] && ! command -v "$VALGRIND" >/dev/null 2>&1; then
    echo "$tag: $VALGRIND not found: no instruction counts" >&2
    callgrind=no
fi
libdir="$("$TOUCANCC" -showme:libdirs)"
[[ -e "$libdir/libtoucanmpi.so" ]] || die "Toucan-MPI is not built: $libdir/libtoucanmpi.so does not exist"

wait_quiet "$wait_limit"

# ---------------------------------------------------------------------------- build
rm -rf "$out/runs"
mkdir -p "$out/runs"
snapshot_lib "$libdir" "$out/lib"
# About 1 MiB of code: functions of 40 multiply-xor-add steps (about 940 bytes each at -O1).
code_c="$out/code.c"
awk -v n=1120 'BEGIN {
    for (i = 0; i < n; i++) {
        printf "unsigned long bench_f%d(unsigned long x)\n{\n", i
        for (j = 0; j < 40; j++)
            printf "    x = (x ^ (x >> %d)) * %.0fu + %d;\n", 7 + j % 23, 2654435761 + 2 * (i * 40 + j), j
        printf "    return x;\n}\n"
    }
    printf "unsigned long bench_code_run(unsigned long x)\n{\n"
    for (i = 0; i < n; i++) printf "    x = bench_f%d(x);\n", i
    printf "    return x;\n}\n"
}' >"$code_c"
build() { # build NAME FLAGS...: bench/privatize.c into $out/NAME
    local name=$1
    shift
    if ! TOUCAN_LIBDIR="$out/lib" "$TOUCANCC" -O2 -Wall "$@" -o "$out/$name" "$here/privatize.c" >"$out/$name.log" 2>&1; then
        cat "$out/$name.log" >&2
        die "build of $name failed: $TOUCANCC -O2 -Wall $* -o $out/$name $here/privatize.c"
    fi
}
if ! cc -O1 -fPIC -c -o "$out/code.o" "$code_c" >"$out/code.log" 2>&1; then
    cat "$out/code.log" >&2
    die "build of the generated code failed"
fi
build big "$out/code.o"
for b in "${tls_sizes[@]}"; do build "tls-$b" -DNO_CODE -DDATA_BYTES=4096 -DTLS_BYTES="$b"; done
sizes="$(size -A "$out/big" | awk '$1 == ".text" { t = $2 } $1 == ".data" { d = $2 } END { printf "%.2f MiB of code (.text), %.2f MiB of initialised globals (.data)", t / 1048576, d / 1048576 }')"

# ---------------------------------------------------------------------------- runs
raw="$out/raw.tsv"
: >"$raw"
failed=()
# run_job OUT ERR ENV... -- ARGS...: one job under the timeout; its wall time (ms) in $wall.
run_job() {
    local o=$1 e=$2 envs=() t0 rc=0
    shift 2
    while [[ $1 != -- ]]; do
        envs+=("$1")
        shift
    done
    shift
    t0=$(date +%s%N)
    timeout -k 10 "$run_timeout" env "${envs[@]}" "$@" >"$o" 2>"$e" </dev/null || rc=$?
    wall=$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e6 }')
    return $rc
}
record() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >>"$raw"; }

load_start
echo "$tag: $runs run(s) per configuration, outputs in ${out#"$root"/}/runs" >&2
for ((i = 1; i <= runs; i++)); do
    for v in $vs; do
        for mode in off auto; do
            cfg="start.$mode.v$v"
            o="$out/runs/$cfg.$i.out"
            e="$out/runs/$cfg.$i.err"
            if run_job "$o" "$e" TOUCAN_V="$v" TOUCAN_PRIVATIZE="$mode" TOUCAN_VERBOSE=1 -- \
                "$MPIRUN" -np 1 "$out/big" start && grep -q '^mem ' "$o"; then
                record start "$mode" "$v" "$i" "$wall"
                record rss "$mode" "$v" "$i" "$(awk '$1 == "mem" { print $2 / 1024 }' "$o")"
                record pss "$mode" "$v" "$i" "$(awk '$1 == "mem" { print $3 / 1024 }' "$o")"
                load_ms=$(sed -n 's/.* copies in \([0-9.]*\) ms.*/\1/p' "$e" | head -n1)
                record load "$mode" "$v" "$i" "${load_ms:-0}"
                record private "$mode" "$v" "$i" "$(awk '$1 == "private" { print ($2 == $3) }' "$o")"
            else
                failed+=("$cfg run $i")
            fi
        done
    done
    for cfg in big.off big.auto tls-0.auto tls-64.auto tls-4096.auto; do
        prog=${cfg%.*}
        mode=${cfg##*.}
        o="$out/runs/switch.$cfg.$i.out"
        e="$out/runs/switch.$cfg.$i.err"
        if run_job "$o" "$e" TOUCAN_V=2 TOUCAN_PRIVATIZE="$mode" -- "$MPIRUN" -np 1 "$out/$prog" switch "$switch_n" &&
            grep -q '^roundtrip ' "$o"; then
            record switch "$cfg" 2 "$i" "$(awk '$1 == "roundtrip" { print $2 }' "$o")"
        else
            failed+=("switch $cfg run $i")
        fi
    done
    echo "$tag: round $i/$runs done" >&2
done
# Instruction counts: deterministic, one run of each length per configuration.
callgrind_ir() { # callgrind_ir PROG MODE N: total instructions of one run (empty on failure)
    local f="$out/runs/callgrind.$1.$2.$3"
    if run_job "$f.out" "$f.err" TOUCAN_V=2 TOUCAN_PRIVATIZE="$2" -- \
        "$VALGRIND" --tool=callgrind --callgrind-out-file="$f.cg" "$out/$1" switch "$3"; then
        awk '/^(summary|totals):/ { print $2; exit }' "$f.cg"
    fi
}
if [[ $callgrind == yes ]]; then
    for cfg in big.off big.auto tls-0.auto tls-64.auto tls-4096.auto; do
        a=$(callgrind_ir "${cfg%.*}" "${cfg##*.}" 1000)
        b=$(callgrind_ir "${cfg%.*}" "${cfg##*.}" 11000)
        if [[ -n "$a" && -n "$b" ]]; then
            record ir "$cfg" 2 1 "$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.1f", (b - a) / 10000 }')"
        else
            failed+=("callgrind $cfg")
        fi
    done
fi
load_end
busy_note=""
if ((others_pct >= 10)); then
    busy_note="other processes used ${others_pct}% of the CPU time during the runs: wall-clock results are disturbed (instruction counts are not), rerun on a quiet machine"
    echo "$tag: warning: $busy_note" >&2
fi

# ---------------------------------------------------------------------------- tables
med() { # med WHAT CONFIG V: median over the runs (empty if none)
    # shellcheck disable=SC2046
    median $(awk -F'\t' -v w="$1" -v c="$2" -v v="$3" '$1 == w && $2 == c && $3 == v { print $5 }' "$raw")
}
fmt() { # fmt PRINTF-FORMAT VALUE: "-" for a missing value
    if [[ -z "$2" ]]; then echo "-"; else printf "$1" "$2"; fi
}
tables() {
    local v so sa la ro ra po pa pv priv
    echo "Start-up and memory of one process running V subranks of \`big\` ($sizes), median of $runs runs:"
    echo "job = wall time of \`TOUCAN_V=V mpirun -np 1 big start\`; load = Toucan's time to load the V−1 copies"
    echo "(TOUCAN_VERBOSE); RSS and PSS of the process once every subrank has written its globals."
    echo
    echo "| V | job, off (ms) | job, on (ms) | load, on (ms) | RSS off → on (MiB) | PSS off → on (MiB) | PSS per extra subrank, on (MiB) | each rank's own globals, on |"
    echo "|---:|---:|---:|---:|---:|---:|---:|---|"
    for v in $vs; do
        so=$(med start off "$v")
        sa=$(med start auto "$v")
        la=$(med load auto "$v")
        ro=$(med rss off "$v")
        ra=$(med rss auto "$v")
        po=$(med pss off "$v")
        pa=$(med pss auto "$v")
        pv="-"
        if [[ -n "$pa" && -n "$po" && $v -gt 1 ]]; then
            pv=$(awk -v a="$pa" -v o="$(med pss auto 1)" -v v="$v" 'BEGIN { if (o != "") printf "%.2f", (a - o) / (v - 1); else print "-" }')
        fi
        priv=$(awk -F'\t' -v v="$v" '$1 == "private" && $2 == "auto" && $3 == v { n++; s += $5 } END { if (n) print (s == n) ? "yes" : "NO (" n - s " of " n " runs)"; else print "-" }' "$raw")
        echo "| $v | $(fmt %.0f "$so") | $(fmt %.0f "$sa") | $(fmt %.1f "$la") | $(fmt %.0f "$ro") → $(fmt %.0f "$ra") | $(fmt %.0f "$po") → $(fmt %.0f "$pa") | $pv | $priv |"
    done
    echo
    echo "Context switch: a 0-byte ping-pong between two sibling subranks (\`TOUCAN_V=2 mpirun -np 1 PROG switch $switch_n\`,"
    echo "two switches per round trip); \`tls-B\`: the program has B bytes of thread-locals, swapped at each switch."
    echo "Instructions: \`valgrind --tool=callgrind\`, (count of 11000 round trips − count of 1000) / 10000."
    echo
    echo "| program, privatization | round trip (ns, median) | instructions per round trip | vs big, off |"
    echo "|---|---:|---:|---:|"
    local base_ns base_ir ns ir
    base_ns=$(med switch big.off 2)
    base_ir=$(med ir big.off 2)
    for cfg in big.off big.auto tls-0.auto tls-64.auto tls-4096.auto; do
        ns=$(med switch "$cfg" 2)
        ir=$(med ir "$cfg" 2)
        local rel="-"
        if [[ -n "$ir" && -n "$base_ir" ]]; then
            rel=$(awk -v a="$ir" -v b="$base_ir" 'BEGIN { printf "%+.1f%% instructions", 100 * (a - b) / b }')
        elif [[ -n "$ns" && -n "$base_ns" ]]; then
            rel=$(awk -v a="$ns" -v b="$base_ns" 'BEGIN { printf "%+.1f%% time", 100 * (a - b) / b }')
        fi
        echo "| ${cfg%.*}, $([[ ${cfg##*.} == off ]] && echo off || echo on) | $(fmt %.0f "$ns") | $(fmt %.0f "$ir") | $rel |"
    done
}
table="$(tables)"
printf '\n%s\n\n' "$table"
if ((${#failed[@]})); then
    printf '%s: FAILED runs (left out): %s\n' "$tag" "$(join_by ', ' "${failed[@]}")" >&2
fi
printf '%s: done in %d s; other processes used %d%% of the CPU time; load average before %s, after %s\n' \
    "$tag" "$elapsed" "$others_pct" "$load_before" "$load_after" >&2

if [[ "$update" == yes ]]; then
    cmdline="bench/run-privatize.sh"
    for a in "${invoked[@]+"${invoked[@]}"}"; do cmdline+=" $(printf '%q' "$a")"; done
    section="$out/section.md"
    {
        echo "Produced by \`$cmdline\` (from the repository root) on $(date '+%Y-%m-%d %H:%M %Z')."
        echo
        describe_setup
        [[ -n "$busy_note" ]] && echo "- **Warning:** $busy_note."
        if ((${#failed[@]})); then
            echo "- **Failed runs, left out:** $(join_by ', ' "${failed[@]}")."
        fi
        echo
        echo "$table"
    } >"$section"
    update_section "$results" privatize "$section"
    echo "$tag: updated ${results#"$root"/}" >&2
fi

((${#failed[@]} == 0))
