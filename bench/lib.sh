# shellcheck shell=bash
# bench/lib.sh: helpers shared by the benchmark scripts (sourced, not run). The sourcing script
# sets `me` (its name, for messages) before calling them.

: "${me:=bench}"
bench_here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bench_root="$(dirname "$bench_here")"

die() {
    printf '%s: error: %s\n' "$me" "$*" >&2
    exit 2
}

# The text of the script's header comment (from line 2 to the `set -euo` line).
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

# The first of the given commands that is on PATH.
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

# Busy CPU time of the whole machine, in clock ticks (user nice system irq softirq steal).
cpu_busy_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9; exit }' /proc/stat; }

# wait_quiet SECONDS: wait up to SECONDS for the machine to be quiet (other processes using
# under 10% of the CPUs for 10 s in a row); then go on anyway.
wait_quiet() {
    local limit=$1 hz quiet=0 waited=0 b0
    ((limit > 0)) || return 0
    echo "$me: waiting up to ${limit}s for a quiet machine" >&2
    hz=$(getconf CLK_TCK)
    while ((quiet < 10 && waited < limit)); do
        b0=$(cpu_busy_ticks)
        sleep 1
        waited=$((waited + 1))
        if (($(cpu_busy_ticks) - b0 < hz * $(nproc) / 10)); then quiet=$((quiet + 1)); else quiet=0; fi
    done
    if ((quiet >= 10)); then
        echo "$me: quiet after ${waited}s" >&2
    else
        echo "$me: still busy after ${waited}s; running anyway" >&2
    fi
}

# snapshot_lib SRC_DIR DEST_DIR: copies SRC_DIR/libtoucanmpi.so into DEST_DIR, retrying until
# the copy equals the original (the library may be rebuilt while a benchmark runs; every run
# then uses this one copy). Sets lib_mtime and lib_sum.
snapshot_lib() {
    local src="$1/libtoucanmpi.so" dst="$2/libtoucanmpi.so" _
    mkdir -p "$2"
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

# Load measurement: the CPU time that other processes used while the benchmark ran, i.e. all
# busy time in /proc/stat minus the CPU time of this script's children (the runs), as a share
# of all CPUs over the elapsed time. load_start before the runs, load_end after: sets
# others_pct, load_before, load_after and elapsed (seconds).
children_ticks() { sed 's/.*) //' "/proc/$$/stat" | awk '{ print $14 + $15 }'; } # cutime + cstime
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
    commit="$(git -C "$bench_root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    if [[ -n "$(git -C "$bench_root" status --porcelain --untracked-files=no -- libtoucanmpi 2>/dev/null)" ]]; then
        commit+=" + uncommitted changes in libtoucanmpi/"
    fi
    echo "- Machine: $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1);" \
        "$(mpichversion 2>/dev/null | sed -n 's/^MPICH Version:[[:space:]]*/MPICH /p')" \
        "($(mpichversion 2>/dev/null | sed -n 's/^MPICH Device:[[:space:]]*//p'))."
    echo "- Toucan-MPI: commit $commit; libtoucanmpi.so built $lib_mtime (sha256 $lib_sum; all runs used this one copy)."
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
