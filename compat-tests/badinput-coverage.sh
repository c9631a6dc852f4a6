#!/usr/bin/env bash
# compat-tests/badinput-coverage.sh [LIB]
# Lists the MPI_* functions that LIB (default target/release/libtoucanmpi.so) exports and
# src/badinput.c never names (a call, or a function passed to a table helper), so that a function added to the library gets its table lines.
# Prints "badinput coverage: N of M exported functions called" last; exits 1 if some are
# missing. MPI_Abort, MPI_Wtime and MPI_Wtick take no argument that can be wrong (MPI_Abort
# ends the job): they count as covered.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
lib=${1:-$here/../target/release/libtoucanmpi.so}
[[ -f $lib ]] || { echo "badinput-coverage: no library $lib (build it first)" >&2; exit 2; }
src=$here/src/badinput.c
mapfile -t syms < <(nm -D --defined-only "$lib" | awk '$3 ~ /^MPI_/ {print $3}' | sort -u)
missing=()
for f in "${syms[@]}"; do
    case $f in MPI_Abort | MPI_Wtime | MPI_Wtick) continue ;; esac
    grep -qw -- "$f" "$src" || missing+=("$f")
done
if [[ ${#missing[@]} -gt 0 ]]; then
    echo "not in the table: ${missing[*]}"
fi
echo "badinput coverage: $((${#syms[@]} - ${#missing[@]})) of ${#syms[@]} exported functions called"
[[ ${#missing[@]} -eq 0 ]]
