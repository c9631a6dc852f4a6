#!/usr/bin/env bash
# compat-tests/privatize-libs/run.sh: privatized globals of the program's own
# shared libraries (not run by run-all.sh: the compat runner builds one source
# file per test, this test needs two libraries built beside the program).
#
# Builds libputil.so (C) and libphysics.so (C++, needs libputil.so, calls MPI) into
# compat-tests/out/privatize-libs/, and app.c linked with toucancc against
# libphysics.so; runs it with TOUCAN_V=V mpirun -np n for the layouts of the
# compat runner ((2,1) (2,4) (3,3) (1,4), or TOUCAN_COMPAT_CONFIGS). Every
# rank must print "rank R: OK" and "rank R: library destroyed with R+1
# elements" (the library's C++ destructor, once per rank), and the job must
# exit 0. Prints PASS/FAIL per layout and, last,
#   privatize-libs: N passed, N failed
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../lib.sh"
out=$OUT_DIR/privatize-libs
mkdir -p "$out"
CONFIGS=${TOUCAN_COMPAT_CONFIGS:-"2x1 2x4 3x3 1x4"}
TIMEOUT=${COMPAT_TIMEOUT:-60}
if ! { cc -O2 -g -fPIC -shared -Wl,-soname,libputil.so -o "$out/libputil.so" "$here/util.c" &&
       "$TOUCANCXX" -O2 -g -fPIC -shared -Wl,-soname,libphysics.so -o "$out/libphysics.so" "$here/physics.cc" \
           -L"$out" -lputil -Wl,-rpath,'$ORIGIN' &&
       "$TOUCANCC" -O2 -g -o "$out/app" "$here/app.c" -L"$out" -lphysics -Wl,-rpath,'$ORIGIN'; } >"$out/build.log" 2>&1; then
    echo "FAIL privatize-libs: build failed"
    head -20 "$out/build.log" | sed 's/^/    /'
    echo "privatize-libs: 0 passed, 1 failed"
    exit 1
fi
npass=0
nfail=0
for cfg in $CONFIGS; do
    n=${cfg%x*}
    v=${cfg#*x}
    world=$((n * v))
    base=$out/run.n${n}v$v
    TOUCAN_V=$v timeout -k 5 "$TIMEOUT" "$TOUCAN_LAUNCHER" -np "$n" "$out/app" >"$base.out" 2>"$base.err" </dev/null
    rc=$?
    bad=""
    [[ $rc == 0 ]] || bad="exit status $rc"
    for ((r = 0; r < world; r++)); do
        grep -qx "rank $r: OK" "$base.out" || bad+="${bad:+; }rank $r not OK"
        grep -qx "rank $r: library destroyed with $((r + 1)) elements" "$base.out" ||
            bad+="${bad:+; }rank $r: no destructor line"
    done
    if [[ -z $bad ]]; then
        echo "PASS privatize-libs (n=$n,V=$v, world $world)"
        npass=$((npass + 1))
    else
        echo "FAIL privatize-libs (n=$n,V=$v, world $world): $(echo "$bad" | cut -c1-200)"
        head -20 "$base.out" "$base.err" | sed 's/^/    /'
        nfail=$((nfail + 1))
    fi
done
echo "privatize-libs: $npass passed, $nfail failed"
[[ $nfail == 0 ]]
