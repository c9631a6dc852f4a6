#!/usr/bin/env bash
# compat-tests/resources.sh: what a run leaves behind (Toucan only).
#
#  1. Files: each job (a clean run with privatized globals at V=4, an MPI_Abort, a fault)
#     runs in a private mount namespace whose /tmp and /dev/shm are fresh memory file systems
#     and whose working directory is empty: after it, all three must still be empty (Toucan
#     keeps its copies of the program in memory-backed files; MPICH's shared-memory segments
#     must be gone too). Needs root for unshare; skipped with a note otherwise.
#  2. Processes: after a job ended by MPI_Abort, by a fault in one rank, by a rank returning
#     from main without MPI_Finalize, by kill -9 of one of its processes (the launcher must
#     end the others instead of leaving them waiting, and the killed process's sentinel must
#     name its virtual ranks and the signal) and by SIGTERM or SIGINT sent to the launcher
#     while ranks wait (parked) in a barrier, the job must end within 10 s and no process of
#     the job's program (sentinels included: they keep its command line) may remain 3 s later.
#
# Layouts 2x4 (two processes of four subranks). Prints PASS/FAIL lines and last
#   resources: N passed, N failed
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
TIMEOUT=${COMPAT_TIMEOUT:-60}
# Outside /tmp: the file checks mount a fresh /tmp over it.
mkdir -p "$OUT_DIR"
work=$(mktemp -d "$OUT_DIR/resources.XXXXXX")
trap 'rm -rf "$work"' EXIT
# A program path of our own, so that the process checks see only our jobs.
prog=$work/abort_mid_$$
if ! $TOUCANCC -O2 -o "$prog" "$COMPAT_DIR/resources/abort_mid.c" >"$work/build.log" 2>&1; then
    cat "$work/build.log"
    echo "resources: 0 passed, 1 failed"
    exit 1
fi
export LD_LIBRARY_PATH=$REPO_DIR/target/release${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
npass=0
nfail=0
pass() { echo "PASS $1"; npass=$((npass + 1)); }
fail() { echo "FAIL $1"; nfail=$((nfail + 1)); }

# Processes still running our program (not this script's own).
strays() { pgrep -f -- "$prog" | grep -vx "$$" || true; }

# no_strays LABEL: waits up to 3 s for the job's processes to be gone.
no_strays() {
    local left
    for _ in 1 2 3 4 5 6; do
        left=$(strays)
        [[ -z $left ]] && { pass "$1: no process left"; return; }
        sleep 0.5
    done
    fail "$1: processes left: $(echo $left)"
    # They are ours: end them, by pid.
    for p in $left; do kill -9 "$p" 2>/dev/null; done
}

# 1. Files.
if [[ $(id -u) == 0 ]] && unshare --mount --propagation private true 2>/dev/null; then
    for how in clean abort segv; do
        out=$(TOUCAN_V=4 TOUCAN_PRIVATIZE=on unshare --mount --propagation private bash -c '
            mount -t tmpfs none /dev/shm && mount -t tmpfs none /tmp || exit 99
            mkdir /tmp/cwd && cd /tmp/cwd || exit 99
            TMPDIR=/tmp timeout -k 5 '"$TIMEOUT"' '"$MPIRUN"' -np 2 '"$prog"' '"$how"' >/dev/null 2>&1
            echo "rc=$?"
            find /dev/shm /tmp -mindepth 1 ! -path /tmp/cwd | sed "s/^/left: /"
            find /tmp/cwd -mindepth 1 | sed "s/^/left: /"' 2>&1)
        rc=$(echo "$out" | sed -n 's/^rc=//p')
        left=$(echo "$out" | grep '^left: ' | head -5)
        if [[ $rc == 124 || $rc == 137 || $rc == 99 || -z $rc ]]; then
            fail "files after a '$how' run: the job did not run or timed out ($out)"
        elif [[ -n $left ]]; then
            fail "files after a '$how' run (exit $rc): ${left//$'\n'/ }"
        else
            pass "files after a '$how' run (exit $rc): /tmp, /dev/shm and the working directory are empty"
        fi
        no_strays "after a '$how' run"
    done
else
    echo "SKIP files: needs root and unshare --mount"
fi

# 2. Processes after an abort, a fault, and a killed process.
for how in abort segv nofinalize; do
    TOUCAN_V=4 timeout -k 5 "$TIMEOUT" "$MPIRUN" -np 2 "$prog" "$how" >/dev/null 2>&1
    rc=$?
    if [[ $rc == 0 || $rc == 124 || $rc == 137 ]]; then
        fail "'$how' job: exit status $rc (expected a failure, not a time-out)"
    else
        pass "'$how' job ended with status $rc"
    fi
    no_strays "after '$how'"
done
TOUCAN_V=4 timeout -k 5 "$TIMEOUT" "$MPIRUN" -np 2 "$prog" hang >"$work/hang.out" 2>"$work/hang.err" &
job=$!
victim=""
for _ in $(seq 100); do
    victim=$(sed -n 's/^ready //p' "$work/hang.out" | head -1)
    [[ -n $victim ]] && break
    sleep 0.2
done
if [[ -z $victim ]]; then
    fail "killed process: the job never got ready"
    kill "$job" 2>/dev/null
    wait "$job" 2>/dev/null
else
    t0=$SECONDS
    kill -9 "$victim"
    wait "$job"
    rc=$?
    # The victim is the last rank's process: process 1 of 2, virtual ranks 4-7.
    said="toucan: process 1 (pid $victim, virtual ranks 4-7) was killed by signal 9 (SIGKILL)"
    if [[ $rc == 124 || $rc == 137 || $((SECONDS - t0)) -ge 10 ]]; then
        fail "killed process: the job took $((SECONDS - t0)) s (status $rc) instead of ending"
    elif ! grep -qxF -- "$said" "$work/hang.err"; then
        fail "killed process: no line '$said' ($(grep -m3 . "$work/hang.err" | tr '\n' ' '))"
    else
        pass "killed process: the job ended in $((SECONDS - t0)) s with status $rc, naming its ranks"
    fi
fi
no_strays "after a killed process"

# SIGTERM and SIGINT to the launcher (a user's Ctrl-C or kill, a batch system's time limit)
# while the ranks wait in a barrier: hydra forwards it; every process must end, naming its
# virtual ranks.
for sig in TERM INT; do
    : >"$work/sig.out"
    TOUCAN_V=4 timeout -k 5 "$TIMEOUT" "$MPIRUN" -np 2 "$prog" hang >"$work/sig.out" 2>"$work/sig.err" &
    job=$!
    ready=""
    for _ in $(seq 100); do
        ready=$(sed -n 's/^ready //p' "$work/sig.out" | head -1)
        [[ -n $ready ]] && break
        sleep 0.2
    done
    if [[ -z $ready ]]; then
        fail "SIG$sig to the launcher: the job never got ready"
        kill "$job" 2>/dev/null
        wait "$job" 2>/dev/null
        no_strays "after SIG$sig"
        continue
    fi
    t0=$SECONDS
    # To the launcher only (the child of timeout(1), which would pass the signal to its
    # whole process group: hydra's proxy then gets it too, and hydra 4.0.2 fails an
    # assertion in its proxy in some of those runs, with or without Toucan).
    launcher=$(pgrep -P "$job" | head -1)
    kill -"$sig" "${launcher:-$job}"
    wait "$job"
    rc=$?
    lines=$(grep -c "ended by SIG$sig" "$work/sig.err")
    if [[ $rc == 124 || $rc == 137 || $((SECONDS - t0)) -ge 10 ]]; then
        fail "SIG$sig to the launcher: the job took $((SECONDS - t0)) s (status $rc)"
    elif [[ $lines -lt 1 ]]; then
        fail "SIG$sig to the launcher: no process said it was ended by SIG$sig ($(head -3 "$work/sig.err"))"
    else
        pass "SIG$sig to the launcher: the job ended in $((SECONDS - t0)) s, $lines process(es) named their ranks"
    fi
    no_strays "after SIG$sig to the launcher"
done

# 3. RTLD_DEEPBIND.
deep=$work/deep
mkdir -p "$deep"
if ! { cc -O2 -fPIC -shared -o "$deep/libtoucan_deep.so" "$COMPAT_DIR/resources/deepbind_lib.c" &&
       $TOUCANCC -O2 -o "$deep/deepbind" "$COMPAT_DIR/resources/deepbind.c" -Wl,-rpath,"$deep"; } >"$work/deep.log" 2>&1; then
    fail "RTLD_DEEPBIND: build failed: $(head -3 "$work/deep.log")"
else
    for layout in "2 1 4" "1 2 2"; do
        read -r n w v <<<"$layout"
        for bind in lazy now; do
            TOUCAN_WORKERS=$w TOUCAN_V=$v timeout -k 5 "$TIMEOUT" "$MPIRUN" -np "$n" "$deep/deepbind" "$bind" \
                >"$deep/out" 2>"$deep/err" </dev/null
            rc=$?
            ok=$(grep -c '^rank [0-9]*: OK$' "$deep/out")
            what="RTLD_DEEPBIND ($bind) at ${n}x${w}x${v}"
            if [[ $rc == 0 && $ok == $((n * w * v)) ]]; then
                pass "$what: $ok ranks OK"
            else
                fail "$what: exit status $rc, $ok ranks OK: $(grep -v ': OK$' "$deep/out" "$deep/err" | head -3 | tr '\n' ' ')"
            fi
        done
    done
fi

echo "resources: $npass passed, $nfail failed"
[[ $nfail == 0 ]]
