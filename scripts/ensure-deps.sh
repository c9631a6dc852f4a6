#!/usr/bin/env bash
# Install the system packages Toucan-MPI needs to build and test, if they are missing.
#
# Idempotent: on a prepared machine it checks, prints nothing and exits 0 in well under a
# second. On a fresh Debian 12 machine it runs `apt-get update` once and installs only the
# missing packages, non-interactively. Exits non-zero with a clear message if it cannot.
#
# Also checks (never installs) the Rust toolchain: cargo, and clippy/rustfmt for `make test`;
# if rustup is present it adds missing components.
#
# Options:
#   --bench   also the packages the overlap benchmarks need (bench/run-overlap.py): a BLAS
#             for cannon2d's dgemm (libopenblas-dev), gnuplot for the plot, python3
#
# Environment:
#   TOUCAN_DEPS_QUIET=1   print nothing even when installing (apt output is kept in a log)
#   TOUCAN_SKIP_DEPS=1    do nothing at all (for machines managed some other way)
set -euo pipefail

# gfortran, python3 and binutils (objcopy): the Fortran bindings (fortran/build.sh generates,
# compiles and renames their symbols).
PACKAGES=(mpich libmpich-dev hwloc libhwloc-dev clang libclang-dev pkg-config gfortran python3 binutils)
BENCH_PACKAGES=(libopenblas-dev gnuplot-nox python3)
for arg in "$@"; do
    case $arg in
    --bench) PACKAGES+=("${BENCH_PACKAGES[@]}") ;;
    *)
        printf 'ensure-deps: unknown option %s (only --bench)\n' "$arg" >&2
        exit 2
        ;;
    esac
done

say() { [[ "${TOUCAN_DEPS_QUIET:-0}" == 1 ]] || printf 'ensure-deps: %s\n' "$*" >&2; }
die() {
    printf 'ensure-deps: ERROR: %s\n' "$*" >&2
    exit 1
}

[[ "${TOUCAN_SKIP_DEPS:-0}" == 1 ]] && exit 0

# ---------------------------------------------------------------- system packages
pkg_installed() {
    # "installed" only when the package is fully configured (not half-installed, not "rc").
    [[ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" == installed ]]
}

if command -v dpkg-query >/dev/null 2>&1; then
    missing=()
    for p in "${PACKAGES[@]}"; do
        pkg_installed "$p" || missing+=("$p")
    done

    if ((${#missing[@]})); then
        command -v apt-get >/dev/null 2>&1 || die "missing packages (${missing[*]}) and no apt-get to install them"
        SUDO=()
        if [[ "$(id -u)" != 0 ]]; then
            if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
                SUDO=(sudo -n)
            else
                die "missing packages: ${missing[*]}; not root and no password-less sudo. Install them with:
    sudo apt-get update && sudo apt-get install -y ${missing[*]}"
            fi
        fi
        say "installing missing packages: ${missing[*]}"
        log="$(mktemp -t toucan-ensure-deps.XXXXXX.log)"
        export DEBIAN_FRONTEND=noninteractive
        apt_opts=(-y -q -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold
            -o DPkg::Lock::Timeout=300 --no-install-recommends)
        if ! "${SUDO[@]}" apt-get update -q >>"$log" 2>&1; then
            tail -n 20 "$log" >&2
            die "apt-get update failed (full log: $log)"
        fi
        if ! "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install "${apt_opts[@]}" "${missing[@]}" >>"$log" 2>&1; then
            tail -n 20 "$log" >&2
            die "apt-get install ${missing[*]} failed (full log: $log)"
        fi
        still=()
        for p in "${missing[@]}"; do
            pkg_installed "$p" || still+=("$p")
        done
        ((${#still[@]} == 0)) || die "still not installed after apt-get: ${still[*]} (log: $log)"
        rm -f "$log"
        say "installed: ${missing[*]}"
    fi
else
    # Not a dpkg-based system: we cannot install, only check for the tools themselves.
    for c in mpicc mpirun pkg-config clang hwloc-info gfortran python3; do
        command -v "$c" >/dev/null 2>&1 ||
            die "'$c' not found and this is not a Debian system; install MPICH, hwloc (with headers), clang/libclang, pkg-config, gfortran and python3"
    done
fi

# MPICH's own wrappers must be usable (the demo and the library's build probe use them).
command -v mpicc >/dev/null 2>&1 || die "mpicc not on PATH although mpich is installed"
command -v mpirun >/dev/null 2>&1 || die "mpirun not on PATH although mpich is installed"

# ---------------------------------------------------------------- Rust toolchain (check only)
if ! command -v cargo >/dev/null 2>&1; then
    if [[ -x "$HOME/.cargo/bin/cargo" ]]; then
        die "cargo is in \$HOME/.cargo/bin but not on PATH: run  . \"\$HOME/.cargo/env\"  first"
    fi
    die "cargo not found: install Rust (https://rustup.rs), e.g.
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal -c clippy,rustfmt"
fi

for comp in clippy rustfmt; do
    sub=clippy
    [[ "$comp" == rustfmt ]] && sub=fmt
    if ! cargo "$sub" --version >/dev/null 2>&1; then
        if command -v rustup >/dev/null 2>&1; then
            say "adding rustup component $comp"
            rustup component add "$comp" >/dev/null 2>&1 || die "rustup component add $comp failed"
        else
            die "cargo $sub not available and no rustup to add component $comp"
        fi
    fi
done

exit 0
