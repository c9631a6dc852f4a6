#!/usr/bin/env bash
# bench/run-imb.sh: the Intel MPI Benchmarks (IMB-MPI1, IMB-NBC) under plain MPICH, Toucan-MPI
# and AMPI, side by side (issue 16; see bench/README.md, "IMB").
#
#   bench/run-imb.sh [-r N] [-c CONFIGS] [-b BENCHMARKS] [-n NBC_BENCHMARKS] [-m SIZES]
#                    [--ampi HOME] [--baseline LIBDIR] [-t SECONDS] [--iter N] [--wait-quiet SECONDS]
#                    [--update-results [NAME]] IMB_DIR
#
# IMB_DIR is a checkout of github.com/intel/mpi-benchmarks, fetched by the user (this script
# fetches nothing and writes nothing into it). Its sources are copied (git archive, else cp)
# into bench/out/imb/src-IMPL and built there with `make IMB-MPI1 IMB-NBC`: with MPICH's
# mpicc/mpicxx, with wrappers/toucancc/toucancxx (against a snapshot of libtoucanmpi.so in
# bench/out/imb/lib), and with AMPI's ampicc/ampicxx when --ampi is given. A build is reused
# while the checkout's commit and (for Toucan) the library snapshot stay the same.
#
# Configurations (-c, comma-separated; default mpich-2p,toucan-2x1,toucan-1x8, plus ampi-p1-vp8
# with --ampi):
#   mpich-Np        mpirun -np N IMB (MPICH build)                           N ranks
#   toucan-NxV      TOUCAN_V=V mpirun -np N IMB (Toucan build)                N*V ranks
#   toucan-NxWxV    TOUCAN_WORKERS=W TOUCAN_V=V mpirun -np N IMB              N*W*V ranks
#   ampi-pP-vpV     charmrun +pP ++local ++quiet IMB +vpV (AMPI build)        V ranks
#   base-NxV, base-NxWxV   as toucan-..., against the --baseline library (LD_LIBRARY_PATH
#                   overrides the Toucan build's RUNPATH): before/after a change, one run set
#   toucan-...-mt, base-...-mt   the same with TOUCAN_REAL_THREAD=multiple (the real MPI at
#                   MPI_THREAD_MULTIPLE), e.g. -c toucan-2x1,toucan-2x1-mt -b PingPong,Sendrecv
#   toucan-...-pt, base-...-pt   the same with TOUCAN_P2P_DIRECT=on (point-to-point passed
#                   through); the suffixes combine: toucan-2x1-pt-mt
# Each configuration runs every benchmark of -b (IMB-MPI1) and of -n (IMB-NBC; "none" for
# none) on all its ranks (-npmin = ranks), message sizes -m, N times, interleaved (run 1 of
# every configuration, then run 2, ...). IMB's own arguments: -msglen (the sizes), -npmin,
# -iter (default 1000), -time 2, -mem 0.5.
#
# The table: median IMB-MPI1 t_avg (PingPong/PingPing: t) in µs per benchmark and size, and for
# IMB-NBC t_pure and overlap[%]; then the ratio of every Toucan configuration against the
# MPICH and AMPI configurations with the same number of ranks (lower is better). With IMB-NBC
# benchmarks, a second table: each one's t_pure over its blocking form's IMB-MPI1 t_avg and
# t_max in the same configuration (IMB-NBC's t_pure is one rank's, the rank with the largest
# overlapped time; t_avg is the mean over the ranks), when -b ran the blocking form; and a
# third, the same ratios taken run by run (each IMB-NBC run over the IMB-MPI1 run of the same
# configuration just before it) and their median, which the machine's slow swings between two
# states disturb less than a ratio of medians over different runs.
#
# Options:
#   -r N                runs per configuration (default 3)
#   -c LIST             configurations (above)
#   -b LIST             IMB-MPI1 benchmarks (default PingPong,Sendrecv,Exchange,Bcast,Reduce,
#                       Allreduce,Allgather,Alltoall,Gather,Scatter,Reduce_scatter,Barrier)
#   -n LIST             IMB-NBC benchmarks (default none; e.g. Ibcast,Iallreduce,Iallgather,Ialltoall)
#   -m LIST             message sizes in bytes (default 8,1024,65536)
#   --ampi HOME         an AMPI build (a Charm++ build directory with bin/ampicxx, bin/charmrun)
#   --baseline LIBDIR   a directory holding another libtoucanmpi.so (copied at the start)
#   --iter N            IMB's -iter (default 1000)
#   -t SECONDS          timeout of one run (default 300)
#   --wait-quiet S      first wait up to S seconds for a quiet machine (bench/lib.sh)
#   --update-results [NAME]  also rewrite the section <!-- NAME:begin --> .. <!-- NAME:end -->
#                       (default imb) in bench/RESULTS.md
#   -h, --help          this text
#
# Environment: MPICC, MPICXX (default mpicc.mpich / mpicxx.mpich, else mpicc / mpicxx), MPIRUN
# (default mpirun.mpich, else mpirun), TOUCANCC (default <repo>/wrappers/toucancc).
#
# Outputs: bench/out/imb/runs/CONFIG.SUITE.RUN.{out,err}, bench/out/imb/raw.tsv (config, run,
# benchmark, size, column, value), bench/out/imb/table.md. Exit status 0 when every run
# succeeded, 1 when some failed (the table is still printed), 2 on usage or build errors.
set -euo pipefail

tag=run-imb
# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
out="$here/out/imb"
invoked=("$@")

runs=3
configs_arg=""
mpi1="PingPong,Sendrecv,Exchange,Bcast,Reduce,Allreduce,Allgather,Alltoall,Gather,Scatter,Reduce_scatter,Barrier"
nbc=none
sizes="8,1024,65536"
ampi_home=""
base_dir=""
iter=1000
run_timeout=300
wait_limit=0
update=no
section=imb
imb_dir=""

while (($#)); do
    case "$1" in
    -r)
        need_int "$1" 1 "${2-}"
        runs=$2
        shift 2
        ;;
    -c | -b | -n | -m | --ampi | --baseline)
        [[ -n "${2-}" ]] || die "$1 needs an argument"
        case "$1" in
        -c) configs_arg=$2 ;;
        -b) mpi1=$2 ;;
        -n) nbc=$2 ;;
        -m) sizes=$2 ;;
        --ampi) ampi_home=$2 ;;
        --baseline) base_dir=$2 ;;
        esac
        shift 2
        ;;
    --iter)
        need_int "$1" 1 "${2-}"
        iter=$2
        shift 2
        ;;
    -t)
        need_int "$1" 1 "${2-}"
        run_timeout=$2
        shift 2
        ;;
    --wait-quiet)
        need_int "$1" 0 "${2-}"
        wait_limit=$2
        shift 2
        ;;
    --update-results)
        update=yes
        if [[ -n "${2-}" && "$2" =~ ^[a-z][a-z0-9-]*$ && ! -d "$2" ]]; then
            section=$2
            shift
        fi
        shift
        ;;
    -h | --help)
        usage
        exit 0
        ;;
    -*)
        usage >&2
        die "unknown option '$1'"
        ;;
    *)
        [[ -z "$imb_dir" ]] || die "one IMB checkout only ('$imb_dir', then '$1')"
        imb_dir=$1
        shift
        ;;
    esac
done
[[ -n "$imb_dir" ]] || {
    usage >&2
    die "give the path of an IMB checkout (git clone https://github.com/intel/mpi-benchmarks)"
}
[[ -f "$imb_dir/src_cpp/Makefile" ]] || die "$imb_dir does not look like an IMB checkout (no src_cpp/Makefile)"
imb_dir="$(cd "$imb_dir" && pwd)"
[[ "$sizes" =~ ^[0-9]+(,[0-9]+)*$ ]] || die "-m needs a comma-separated list of sizes"
[[ -z "$configs_arg" ]] && configs_arg="mpich-2p,toucan-2x1,toucan-1x8${ampi_home:+,ampi-p1-vp8}"
IFS=, read -ra configs <<<"$configs_arg"

MPICC="${MPICC:-$(first_of mpicc.mpich mpicc || true)}"
MPICXX="${MPICXX:-$(first_of mpicxx.mpich mpicxx || true)}"
MPIRUN="${MPIRUN:-$(first_of mpirun.mpich mpirun || true)}"
TOUCANCC="${TOUCANCC:-$root/wrappers/toucancc}"
[[ -n "$MPICC" && -n "$MPICXX" ]] || die "no mpicc/mpicxx found (install MPICH, or set MPICC and MPICXX)"
[[ -n "$MPIRUN" ]] || die "no mpirun found (install MPICH, or set MPIRUN)"
libdir="$("$TOUCANCC" -showme:libdirs)"

# ---------------------------------------------------------------------------- configurations
declare -A cfg_impl=() cfg_ranks=() cfg_cmd=()
need_impl=()
for cfg in "${configs[@]}"; do
    # coll5: a -mt suffix on a toucan-/base- configuration asks the real MPI underneath for
    # MPI_THREAD_MULTIPLE (TOUCAN_REAL_THREAD=multiple), to measure what it costs.
    # Session 20: a -pt suffix passes point-to-point through (TOUCAN_P2P_DIRECT=on); the two
    # suffixes combine in either order (toucan-2x1-pt-mt).
    mt="" core=$cfg
    if [[ "$cfg" == toucan-* || "$cfg" == base-* ]]; then
        while [[ "$core" == *-mt || "$core" == *-pt ]]; do
            [[ "$core" == *-mt ]] && mt+="TOUCAN_REAL_THREAD=multiple "
            [[ "$core" == *-pt ]] && mt+="TOUCAN_P2P_DIRECT=on "
            core=${core%-*}
        done
    fi
    case "$core" in
    mpich-[0-9]*p)
        n=${cfg#mpich-}
        n=${n%p}
        cfg_impl[$cfg]=mpich cfg_ranks[$cfg]=$n cfg_cmd[$cfg]="$MPIRUN -np $n"
        ;;
    toucan-[0-9]*x[0-9]*x[0-9]* | base-[0-9]*x[0-9]*x[0-9]*)
        IFS=x read -r n w v <<<"${core#*-}"
        cfg_impl[$cfg]=toucan cfg_ranks[$cfg]=$((n * w * v))
        cfg_cmd[$cfg]="${mt}TOUCAN_WORKERS=$w TOUCAN_V=$v $MPIRUN -np $n"
        ;;
    toucan-[0-9]*x[0-9]* | base-[0-9]*x[0-9]*)
        IFS=x read -r n v <<<"${core#*-}"
        cfg_impl[$cfg]=toucan cfg_ranks[$cfg]=$((n * v)) cfg_cmd[$cfg]="${mt}TOUCAN_V=$v $MPIRUN -np $n"
        ;;
    ampi-p[0-9]*-vp[0-9]*)
        [[ -n "$ampi_home" ]] || die "$cfg needs --ampi HOME"
        p=${cfg#ampi-p}
        p=${p%%-*}
        v=${cfg##*-vp}
        cfg_impl[$cfg]=ampi cfg_ranks[$cfg]=$v cfg_cmd[$cfg]="$ampi_home/bin/charmrun +p$p ++local ++quiet @EXE@ +vp$v"
        ;;
    *) die "unknown configuration '$cfg' (mpich-Np, toucan-NxV, toucan-NxWxV, ampi-pP-vpV, base-NxV)" ;;
    esac
    if [[ "$cfg" == base-* ]]; then
        [[ -n "$base_dir" ]] || die "$cfg needs --baseline LIBDIR"
        cfg_cmd[$cfg]="LD_LIBRARY_PATH=$out/base-lib ${cfg_cmd[$cfg]}"
    fi
    [[ " ${need_impl[*]-} " == *" ${cfg_impl[$cfg]} "* ]] || need_impl+=("${cfg_impl[$cfg]}")
done
if [[ -n "$ampi_home" ]]; then
    [[ -x "$ampi_home/bin/ampicxx" && -x "$ampi_home/bin/charmrun" ]] || die "--ampi $ampi_home: no bin/ampicxx or bin/charmrun"
    ampi_home="$(cd "$ampi_home" && pwd)"
fi

# ---------------------------------------------------------------------------- build
# build_imb IMPL CC CXX [ENV...]: IMB-MPI1 and IMB-NBC in $out/src-IMPL, from a copy of the
# checkout; skipped when the stamp (checkout commit, compilers, library checksum) is unchanged.
build_imb() {
    local impl=$1 cc=$2 cxx=$3 d="$out/src-$1" stamp
    shift 3
    stamp="$(git -C "$imb_dir" rev-parse HEAD 2>/dev/null || echo nogit) $cc $cxx $*"
    [[ "$impl" == toucan ]] && stamp+=" $lib_sum"
    if [[ -x "$d/IMB-MPI1" && -x "$d/IMB-NBC" && "$(cat "$d/.stamp" 2>/dev/null)" == "$stamp" ]]; then
        return 0
    fi
    rm -rf "$d"
    mkdir -p "$d"
    if git -C "$imb_dir" rev-parse HEAD >/dev/null 2>&1 && [[ -z "$(git -C "$imb_dir" status --porcelain 2>/dev/null)" ]]; then
        git -C "$imb_dir" archive HEAD | tar -x -C "$d"
    else
        (cd "$imb_dir" && tar -c --exclude=.git .) | tar -x -C "$d"
    fi
    echo "$tag: building IMB-MPI1 and IMB-NBC for $impl in ${d#"$root"/}" >&2
    # IMB's makefiles honour CC and CXX; -j2: the machine has few cores.
    if ! (cd "$d" && env "$@" make -j2 IMB-MPI1 IMB-NBC CC="$cc" CXX="$cxx") >"$d/build.log" 2>&1; then
        tail -n 20 "$d/build.log" >&2
        die "building IMB for $impl failed (log: ${d#"$root"/}/build.log)"
    fi
    echo "$stamp" >"$d/.stamp"
}

mkdir -p "$out/runs"
rm -f "$out"/runs/*
if [[ " ${need_impl[*]} " == *" toucan "* ]]; then
    [[ -e "$libdir/libtoucanmpi.so" ]] || die "Toucan-MPI is not built: no $libdir/libtoucanmpi.so (cargo build --release)"
    snapshot_lib "$libdir" "$out/lib"
fi
lib_mtime=${lib_mtime-none} lib_sum=${lib_sum-none}
if [[ -n "$base_dir" ]]; then
    [[ -e "$base_dir/libtoucanmpi.so" ]] || die "--baseline $base_dir: no libtoucanmpi.so there"
    mkdir -p "$out/base-lib"
    cp "$base_dir/libtoucanmpi.so" "$out/base-lib/libtoucanmpi.so"
    base_sum="$(sha256sum "$out/base-lib/libtoucanmpi.so" | cut -c1-12)"
fi
for impl in "${need_impl[@]}"; do
    case "$impl" in
    mpich) build_imb mpich "$MPICC" "$MPICXX" ;;
    toucan) build_imb toucan "$TOUCANCC" "$(dirname "$TOUCANCC")/toucancxx" TOUCAN_LIBDIR="$out/lib" ;;
    ampi) build_imb ampi "$ampi_home/bin/ampicc" "$ampi_home/bin/ampicxx" ;;
    esac
done

# ---------------------------------------------------------------------------- runs
tr , '\n' <<<"$sizes" >"$out/msglen"
IFS=, read -ra mpi1_list <<<"$mpi1"
nbc_list=()
[[ "$nbc" != none ]] && IFS=, read -ra nbc_list <<<"$nbc"
[[ "$mpi1" == none ]] && mpi1_list=()

# run_one CFG SUITE RUN: one run of IMB-SUITE; 0 when it ran to the end.
run_one() {
    local cfg=$1 suite=$2 i=$3 exe cmd o e list
    exe="$out/src-${cfg_impl[$cfg]}/IMB-$suite"
    if [[ "$suite" == MPI1 ]]; then list=("${mpi1_list[@]}"); else list=("${nbc_list[@]}"); fi
    o="$out/runs/$cfg.$suite.$i.out"
    e="$out/runs/$cfg.$suite.$i.err"
    cmd="${cfg_cmd[$cfg]}"
    local args=(-msglen "$out/msglen" -npmin "${cfg_ranks[$cfg]}" -iter "$iter" -time 2 -mem 0.5 "${list[@]}")
    if [[ "$cmd" == *@EXE@* ]]; then
        read -ra words <<<"${cmd/@EXE@/$exe}"
        # charmrun copies nothing; it runs from the build directory (ampicc put charmrun there)
        timeout -k 10 "$run_timeout" env -u TOUCAN_V -u TOUCAN_WORKERS "${words[@]}" "${args[@]}" >"$o" 2>"$e"
    else
        read -ra words <<<"$cmd"
        timeout -k 10 "$run_timeout" env -u TOUCAN_V -u TOUCAN_WORKERS "${words[@]}" "$exe" "${args[@]}" >"$o" 2>"$e"
    fi || return 1
    grep -q '^# All processes entering MPI_Finalize' "$o"
}

# parse FILE CFG RUN: IMB's tables as raw rows (config, run, benchmark, size, column, value).
parse() {
    awk -v cfg="$2" -v run="$3" '
        /^# Benchmarking / { bench = $3; hdr = 0; next }
        /^ *#(bytes|repetitions)/ { nh = split($0, h, " "); hdr = 1; next }
        /^#/ || NF == 0 { if (NF == 0) hdr = 0; next }
        hdr && NF == nh {
            size = (h[1] == "#bytes") ? $1 : 0
            for (k = 1; k <= nh; k++) {
                col = h[k]; sub(/\[.*\]/, "", col)
                if (col ~ /^#/) continue
                print cfg "\t" run "\t" bench "\t" size "\t" col "\t" $k
            }
        }' "$1"
}

wait_quiet "$wait_limit"
load_start
failed=()
raw="$out/raw.tsv"
: >"$raw"
suites=()
((${#mpi1_list[@]})) && suites+=(MPI1)
((${#nbc_list[@]})) && suites+=(NBC)
for ((i = 1; i <= runs; i++)); do
    for cfg in "${configs[@]}"; do
        for suite in "${suites[@]}"; do
            t0=$SECONDS
            if run_one "$cfg" "$suite" "$i" || { echo "$tag: $cfg $suite run $i failed, retrying once" >&2 && run_one "$cfg" "$suite" "$i"; }; then
                parse "$out/runs/$cfg.$suite.$i.out" "$cfg" "$i" >>"$raw"
                printf '%s: %-14s %s run %d/%d ok (%ds)\n' "$tag" "$cfg" "$suite" "$i" "$runs" $((SECONDS - t0)) >&2
            else
                failed+=("$cfg $suite run $i")
                tail -n 5 "$out/runs/$cfg.$suite.$i.out" "$out/runs/$cfg.$suite.$i.err" 2>/dev/null | sed 's/^/    /' >&2
            fi
        done
    done
done
load_end

# ---------------------------------------------------------------------------- table
# Medians per (config, benchmark, size, column), then one row per benchmark and size.
table="$(
    sort -t$'\t' -k1,1 -k3,3 -k4,4n -k5,5 -k6,6g "$raw" | awk -F'\t' -v OFS='\t' '
        function flush() { if (n) print kc, kb, ks, kcol, (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2; n = 0 }
        { k = $1 SUBSEP $3 SUBSEP $4 SUBSEP $5 }
        k != prev { flush(); prev = k; kc = $1; kb = $3; ks = $4; kcol = $5 }
        { v[++n] = $6 }
        END { flush() }' |
        LC_ALL=C awk -F'\t' -v cfgs="${configs[*]}" -v ranks="$(for c in "${configs[@]}"; do printf '%s ' "${cfg_ranks[$c]}"; done)" \
            -v order="${mpi1_list[*]-} ${nbc_list[*]-}" -v runs="$runs" "$bench_awk_lib"'
        function fmt(x) {
            if (x == "") return "-"
            return x < 10 ? sprintf("%.2f", x) : x < 1000 ? sprintf("%.1f", x) : sprintf("%.0f", x)
        }
        BEGIN {
            nc = split(cfgs, c, " "); split(ranks, r, " "); nb = split(order, bo, " ")
            for (i = 1; i <= nb; i++) pos[bo[i]] = i
            # Ratios: each Toucan configuration against MPICH and AMPI with as many ranks.
            nr = 0
            for (i = 1; i <= nc; i++) if (c[i] ~ /^toucan-/)
                for (j = 1; j <= nc; j++) if (c[j] !~ /^toucan-/ && r[j] == r[i]) { ra[++nr] = i; rb[nr] = j }
        }
        {
            key = $2 SUBSEP $3
            if (!(key in seen)) { seen[key] = 1; nk++; kb[nk] = $2; ks[nk] = $3 }
            val[$1, $2, $3, $4] = $5
        }
        function metric(b) { return b ~ /^I/ ? "t_pure" : (b ~ /^Ping/ ? "t" : "t_avg") }
        function getv(cf, b, s,   m) { m = metric(b); return ((cf, b, s, m) in val) ? val[cf, b, s, m] : "" }
        END {
            # rows in the order of the benchmark lists, then by size
            for (i = 1; i <= nk; i++) idx[i] = i
            for (i = 2; i <= nk; i++) for (j = i; j > 1; j--) {
                a = idx[j - 1]; b = idx[j]
                if (pos[kb[a]] > pos[kb[b]] || (pos[kb[a]] == pos[kb[b]] && ks[a] + 0 > ks[b] + 0)) { idx[j - 1] = b; idx[j] = a } else break
            }
            printf "Median of %d run(s) per configuration: IMB t_avg in µs (PingPong/PingPing: t; IMB-NBC: t_pure, " \
                   "and the overlap %% in brackets); ratio = Toucan / other at the same number of ranks, **lower is better**.\n\n", runs
            printf "| benchmark |"
            for (i = 1; i <= nc; i++) printf " %s (%d) |", c[i], r[i]
            for (i = 1; i <= nr; i++) printf " %s / %s |", c[ra[i]], c[rb[i]]
            printf "\n|---|"
            for (i = 1; i <= nc + nr; i++) printf "---:|"
            printf "\n"
            for (q = 1; q <= nk; q++) {
                k = idx[q]; b = kb[k]; s = ks[k]
                printf "| %s |", b (b ~ /[Bb]arrier/ ? "" : " " human(s))
                for (i = 1; i <= nc; i++) {
                    x = getv(c[i], b, s)
                    printf " %s", fmt(x)
                    if (b ~ /^I/ && ((c[i], b, s, "overlap") in val)) printf " (%.0f%%)", val[c[i], b, s, "overlap"]
                    printf " |"
                }
                for (i = 1; i <= nr; i++) {
                    x = getv(c[ra[i]], b, s); y = getv(c[rb[i]], b, s)
                    printf " %s |", (x == "" || y == "" || y == 0) ? "-" : sprintf("%.2f", x / y)
                }
                printf "\n"
            }
            # IMB-NBC prints one rank'"'"'s t_pure, that of the rank with the largest overlapped
            # time (IMB_output.c), where IMB-MPI1'"'"'s t_avg is the mean over the ranks: issue 16'"'"'s
            # "t_pure within 1.5x of the blocking collective'"'"'s time" is read against both.
            nn = 0
            for (q = 1; q <= nk; q++) if (kb[idx[q]] ~ /^I/) nn++
            if (!nn) exit
            printf "\nIMB-NBC t_pure / the blocking collective'"'"'s IMB-MPI1 t_avg and t_max, same configuration:\n\n| benchmark |"
            for (i = 1; i <= nc; i++) printf " %s t_avg | %s t_max |", c[i], c[i]
            printf "\n|---|"
            for (i = 1; i <= 2 * nc; i++) printf "---:|"
            printf "\n"
            for (q = 1; q <= nk; q++) {
                k = idx[q]; b = kb[k]; s = ks[k]
                if (b !~ /^I/) continue
                bl = toupper(substr(b, 2, 1)) substr(b, 3)
                printf "| %s |", b (b ~ /[Bb]arrier/ ? "" : " " human(s))
                for (i = 1; i <= nc; i++) {
                    x = getv(c[i], b, s)
                    for (m = 1; m <= 2; m++) {
                        col = m == 1 ? "t_avg" : "t_max"
                        y = ((c[i], bl, s, col) in val) ? val[c[i], bl, s, col] : ""
                        printf " %s |", (x == "" || y == "" || y == 0) ? "-" : sprintf("%.2f", x / y)
                    }
                }
                printf "\n"
            }
        }'
)"
# Session 30: the same ratios run by run (IMB-NBC run i over IMB-MPI1 run i of the same
# configuration, which ran just before it), then their median: the machine swings between two
# states about 2.5x apart for minutes at a time, and a ratio of medians taken over different
# runs reads that swing (a 64 KiB Ireduce_scatter read 2.18 where every run's own ratio was
# 0.95-1.07).
paired="$(
    awk -F'\t' -v cfgs="${configs[*]}" -v order="${nbc_list[*]-}" '
        function median(s,   n, a, i, j, t) {
            n = split(s, a, " ")
            for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
            return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
        }
        { v[$1, $2, $3, $4, $5] = $6; if ($2 + 0 > maxrun) maxrun = $2 + 0; if ($3 ~ /^I/ && $5 == "t_pure") { key = $1 SUBSEP $3 SUBSEP $4; if (!(key in seen)) { seen[key] = 1; keys[++nk] = key } } }
        END {
            nc = split(cfgs, c, " "); nb = split(order, bo, " ")
            for (i = 1; i <= nb; i++) pos[bo[i]] = i
            rows = ""
            for (q = 1; q <= nb; q++) {
                b = bo[q]; bl = toupper(substr(b, 2, 1)) substr(b, 3)
                nsz = 0; delete szs
                for (k = 1; k <= nk; k++) { split(keys[k], f, SUBSEP); if (f[2] == b && !(f[3] in szs)) { szs[f[3]] = 1; sz[++nsz] = f[3] + 0 } }
                for (i = 2; i <= nsz; i++) for (j = i; j > 1 && sz[j - 1] > sz[j]; j--) { t = sz[j]; sz[j] = sz[j - 1]; sz[j - 1] = t }
                for (z = 1; z <= nsz; z++) {
                    s = sz[z]; line = "| " b (b ~ /[Bb]arrier/ ? "" : " " human(s)) " |"; any = 0
                    for (i = 1; i <= nc; i++) for (m = 1; m <= 2; m++) {
                        col = m == 1 ? "t_avg" : "t_max"; r = ""
                        for (run = 1; run <= maxrun; run++) {
                            if (!((c[i], run, b, s, "t_pure") in v)) continue
                            x = v[c[i], run, b, s, "t_pure"]; y = ((c[i], run, bl, s, col) in v) ? v[c[i], run, bl, s, col] : ""
                            if (y != "" && y > 0) r = r " " (x / y)
                        }
                        if (r == "") line = line " - |"; else { line = line sprintf(" %.2f |", median(r)); any = 1 }
                    }
                    if (any) rows = rows line "\n"
                }
            }
            if (rows == "") exit
            printf "\nThe same, run by run (each IMB-NBC run over the IMB-MPI1 run of the same configuration just before it; median of those ratios):\n\n| benchmark |"
            for (i = 1; i <= nc; i++) printf " %s t_avg | %s t_max |", c[i], c[i]
            printf "\n|---|"
            for (i = 1; i <= 2 * nc; i++) printf "---:|"
            printf "\n%s", rows
        }
        '"$bench_awk_lib" "$raw"
)"
[[ -n "$paired" ]] && table+=$'\n'"$paired"
# The same for the configurations' ratios (Toucan run i over the other configuration's run i;
# interleaved, they ran minutes apart at most).
paired_cfg="$(
    awk -F'\t' -v cfgs="${configs[*]}" -v ranks="$(for c in "${configs[@]}"; do printf '%s ' "${cfg_ranks[$c]}"; done)" \
        -v order="${mpi1_list[*]-} ${nbc_list[*]-}" '
        function median(s,   n, a, i, j, t) {
            n = split(s, a, " ")
            for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
            return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
        }
        function metric(b) { return b ~ /^I/ ? "t_pure" : (b ~ /^Ping/ ? "t" : "t_avg") }
        { v[$1, $2, $3, $4, $5] = $6; if ($2 + 0 > maxrun) maxrun = $2 + 0; if (!(($3, $4) in seen)) { seen[$3, $4] = 1; sizes[$3] = sizes[$3] " " $4 } }
        END {
            nc = split(cfgs, c, " "); split(ranks, r, " "); nb = split(order, bo, " ")
            nr = 0
            for (i = 1; i <= nc; i++) if (c[i] ~ /^toucan-/)
                for (j = 1; j <= nc; j++) if (c[j] !~ /^toucan-/ && r[j] == r[i]) { ra[++nr] = i; rb[nr] = j }
            if (!nr || maxrun < 2) exit
            printf "\nToucan / other, run by run (run i of one over run i of the other; median of those ratios):\n\n| benchmark |"
            for (i = 1; i <= nr; i++) printf " %s / %s |", c[ra[i]], c[rb[i]]
            printf "\n|---|"
            for (i = 1; i <= nr; i++) printf "---:|"
            printf "\n"
            for (q = 1; q <= nb; q++) {
                b = bo[q]; m = metric(b); nsz = split(sizes[b], sz, " ")
                for (i = 2; i <= nsz; i++) for (j = i; j > 1 && sz[j - 1] + 0 > sz[j] + 0; j--) { t = sz[j]; sz[j] = sz[j - 1]; sz[j - 1] = t }
                for (z = 1; z <= nsz; z++) {
                    s = sz[z]; printf "| %s |", b (b ~ /[Bb]arrier/ ? "" : " " human(s))
                    for (i = 1; i <= nr; i++) {
                        rr = ""
                        for (run = 1; run <= maxrun; run++) {
                            x = ((c[ra[i]], run, b, s, m) in v) ? v[c[ra[i]], run, b, s, m] : ""
                            y = ((c[rb[i]], run, b, s, m) in v) ? v[c[rb[i]], run, b, s, m] : ""
                            if (x != "" && y != "" && y > 0) rr = rr " " (x / y)
                        }
                        printf " %s |", rr == "" ? "-" : sprintf("%.2f", median(rr))
                    }
                    printf "\n"
                }
            }
        }
        '"$bench_awk_lib" "$raw"
)"
[[ -n "$paired_cfg" ]] && table+=$'\n'"$paired_cfg"
printf '%s\n' "$table" >"$out/table.md"
printf '\n%s\n\n' "$table"
if ((${#failed[@]})); then
    echo "$tag: FAILED runs (not in the medians): $(join_by ', ' "${failed[@]}")" >&2
fi
echo "$tag: $((runs * ${#configs[@]})) run sets in ${elapsed}s; other processes used ${others_pct}% of the CPU time; load average before $load_before, after $load_after" >&2

if [[ "$update" == yes ]]; then
    cmdline="bench/run-imb.sh"
    for a in "${invoked[@]}"; do cmdline+=" $(printf '%q' "$a")"; done
    sec="$out/section.md"
    {
        echo "Produced by \`$cmdline\` (from the repository root) on $(date '+%Y-%m-%d %H:%M %Z')."
        echo
        describe_setup
        echo "- IMB: commit $(git -C "$imb_dir" rev-parse --short HEAD 2>/dev/null || echo unknown) of intel/mpi-benchmarks," \
            "built with -O0 (IMB's default) by each compiler; arguments \`-msglen (${sizes}) -npmin RANKS -iter $iter -time 2 -mem 0.5\`."
        [[ -n "$base_dir" ]] && echo "- Baseline library (base-* rows): $base_dir/libtoucanmpi.so (sha256 $base_sum)."
        echo "- Runs (interleaved, $runs of each, timeout ${run_timeout} s):"
        for cfg in "${configs[@]}"; do echo "  - \`${cfg_cmd[$cfg]/@EXE@/IMB-SUITE}\` ($cfg)"; done
        ((others_pct >= 10)) && echo "- **Warning:** other processes used ${others_pct}% of the CPU time during the runs: results are disturbed."
        ((${#failed[@]})) && echo "- **Failed runs, left out of the medians:** $(join_by ', ' "${failed[@]}")."
        echo
        echo "$table"
    } >"$sec"
    [[ -f "$results" ]] || echo "# Benchmark results" >"$results"
    update_section "$results" "$section" "$sec"
    echo "$tag: updated ${results#"$root"/} (section $section)" >&2
fi
((${#failed[@]} == 0))
