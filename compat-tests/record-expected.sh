#!/usr/bin/env bash
# compat-tests/record-expected.sh [NAME...]
#
# Records the reference outputs: builds each test with mpicc and runs it
# under plain MPICH (`mpirun -np N`) for N in 2 3 4 6 8 9 (override with
# COMPAT_RECORD_SIZES="2 4"), writing the LC_ALL=C-sorted stdout to
# expected/NAME.npN.out. A run must exit 0 within COMPAT_RECORD_TIMEOUT
# seconds (default 600: MPICH busy-polls and is slow when oversubscribed)
# and every rank must print "rank R: OK"; otherwise the old file is kept and
# the script exits non-zero. Tests with a src/NAME.expect file have no
# reference output and are skipped. Prints the wall time of every run.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SIZES=${COMPAT_RECORD_SIZES:-"2 3 4 6 8 9"}
TMO=${COMPAT_RECORD_TIMEOUT:-600}
if [[ $# -gt 0 ]]; then
    names=()
    for a in "$@"; do
        names+=("$(compat_strip_ext "$a")")
    done
else
    mapfile -t names < <(compat_all_names)
fi
mkdir -p "$EXP_DIR" "$OUT_DIR/record"
bad=0
printf '%-16s' "test"
for n in $SIZES; do printf '%9s' "np$n"; done
echo
for name in "${names[@]}"; do
    if [[ -f $SRC_DIR/$name.expect ]]; then
        printf '%-16s (has %s.expect: no reference output)\n' "$name" "$name"
        continue
    fi
    if ! msg=$(compat_build mpich "$name"); then
        printf '%-16s BUILD FAILED\n%s\n' "$name" "$msg"
        bad=1
        continue
    fi
    printf '%-16s' "$name"
    fails=""
    for n in $SIZES; do
        tmp=$OUT_DIR/record/$name.np$n
        t0=$(date +%s.%N)
        timeout -k 5 "$TMO" "$MPIRUN" -np "$n" "$OUT_DIR/mpich/$name" >"$tmp.out" 2>"$tmp.err" </dev/null
        rc=$?
        t1=$(date +%s.%N)
        printf '%8.1fs' "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')"
        LC_ALL=C sort "$tmp.out" >"$tmp.sorted"
        if [[ $rc != 0 ]] || ! compat_all_ok "$tmp.sorted" "$n"; then
            fails+="  np$n: exit $rc$([[ $rc == 124 ]] && echo ' (timeout)')"$'\n'
            fails+=$(head -20 "$tmp.sorted" "$tmp.err" | sed 's/^/    /')$'\n'
            bad=1
            continue
        fi
        mv "$tmp.sorted" "$EXP_DIR/$name.np$n.out"
    done
    echo
    [[ -n $fails ]] && printf 'FAILED under MPICH:\n%s' "$fails"
done
exit $bad
