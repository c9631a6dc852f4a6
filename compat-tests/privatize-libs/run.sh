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
# exit 0. Also checks what wrappers/toucan-globals lists for the program. Prints PASS/FAIL per
# layout and, last,
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
# toucan-globals on the program: its own global, the libraries' globals and thread-local, and
# the copy relocation of a library variable the program reads directly.
globals=$out/globals.txt
"$REPO_DIR/wrappers/toucan-globals" "$out/app" >"$globals" 2>&1
grc=$?
bad=""
[[ $grc == 0 ]] || bad="exit status $grc"
for want in '^ +4 +\.bss +global +app_global$' '^ +4 +\.bss +copy relocation +phys_counter$' \
    '^ +4000 +\.bss +global +phys_bss$' '^ +4 +\.tdata +thread-local +util_tls$' \
    '^ +4 +\.bss +static +phys_step::calls$' 'libphysics\.so:$' 'libputil\.so:$'; do
    grep -Eq -- "$want" "$globals" || bad+="${bad:+; }no line /$want/"
done
if [[ -z $bad ]]; then
    echo "PASS toucan-globals on the program"
    npass=$((npass + 1))
else
    echo "FAIL toucan-globals on the program: $bad"
    head -30 "$globals" | sed 's/^/    /'
    nfail=$((nfail + 1))
fi
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
