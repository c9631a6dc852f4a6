#!/usr/bin/env bash
# fuzz/run.sh [SECONDS] [TARGET...]: builds the fuzz targets with libFuzzer on the stable
# toolchain (the coverage instrumentation cargo-fuzz would ask for, given as plain rustc
# flags) and runs each for SECONDS (default 30), starting from and adding to its corpus in
# fuzz/corpus/TARGET (scratch; not committed). Targets: datatype args (default: both).
# Exit status 1 if a target found a crash, a panic, a timeout (10 s per input) or an
# out-of-memory (2 GiB); the input is saved as fuzz/artifacts/TARGET/crash-* (or timeout-*,
# oom-*) for `fuzz/run.sh --replay FILE TARGET` to reproduce.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
secs=30
replay=""
targets=()
while [[ $# -gt 0 ]]; do
    case $1 in
    --replay) replay=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    [0-9]*) secs=$1; shift ;;
    *) targets+=("$1"); shift ;;
    esac
done
[[ ${#targets[@]} -gt 0 ]] || targets=(datatype args)
host=$(rustc -vV | sed -n 's/^host: //p')
# --target keeps these flags off build scripts and proc macros, as cargo-fuzz does.
export RUSTFLAGS="--cfg fuzzing -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares -Cdebug-assertions -Coverflow-checks"
(cd "$here" && cargo build --release --target "$host" --bins)
bin=$here/target/$host/release
if [[ -n $replay ]]; then
    exec "$bin/${targets[0]}" "$replay"
fi
# The targets run at the same time (each libFuzzer process is single-threaded; the machine
# of `make test` has 2 cores), then are reported in order.
pids=()
for t in "${targets[@]}"; do
    mkdir -p "$here/corpus/$t" "$here/artifacts/$t"
    echo "== fuzz $t for ${secs}s"
    "$bin/$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$here/artifacts/$t/" "$here/corpus/$t" >"$here/artifacts/$t/last.log" 2>&1 &
    pids+=($!)
done
status=0
for i in "${!targets[@]}"; do
    t=${targets[$i]}
    if ! wait "${pids[$i]}"; then
        status=1
        echo "fuzz $t: FAILED (artifacts in fuzz/artifacts/$t/)"
        grep -E "panicked|ERROR|SUMMARY|Test unit written" "$here/artifacts/$t/last.log" | head -10
    else
        grep -E "^stat::number_of_executed_units|^Done" "$here/artifacts/$t/last.log" | tail -2
        echo "fuzz $t: passed"
    fi
done
exit $status
