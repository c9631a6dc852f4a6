#!/usr/bin/env bash
# fortran/build.sh LIBDIR: builds the Fortran bindings beside libtoucanmpi (run by `make`).
#
#   LIBDIR/libtoucanfort.a             the Fortran symbols (thin C shims, fortran/gen.py)
#   LIBDIR/fortran/include/mpif.h      mpif.h (fixed and free form)
#   LIBDIR/fortran/include/mpi.mod     the mpi module (gfortran's module format)
#   LIBDIR/fortran/include/mpi_f08.mod the mpi_f08 module (its procedures are in the archive)
#
# The bindings are generated for the MPI_* functions LIBDIR/libtoucanmpi.so exports.
# Environment: CC (default cc), FC (default gfortran), PYTHON (default python3).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
libdir=$(cd "${1:?usage: fortran/build.sh LIBDIR}" && pwd)
CC=${CC:-cc}
FC=${FC:-gfortran}
PYTHON=${PYTHON:-python3}
out=$libdir/fortran
gen=$out/gen
mkdir -p "$gen" "$out/include"
nm -D --defined-only "$libdir/libtoucanmpi.so" | awk '$3 ~ /^MPI_/ {print $3}' >"$gen/exports"
"$PYTHON" "$here/gen.py" --header "$root/headers/mpi.h" --table "$here/bindings.txt" \
    --exports "$gen/exports" --out "$gen"
# -fPIC: the archive may go into a program's shared library too. The sentinels are hidden
# symbols, so the shims address the COMMON blocks of the module (program or library) they
# are linked into, PC-relative: each privatized copy of a program sees its own.
"$CC" -O2 -fPIC -Wall -Werror -Wno-unused-variable -I"$root/headers" -c "$gen/toucanfort.c" -o "$gen/toucanfort.o"
cp "$gen/mpif.h" "$out/include/mpif.h"
# mpi_f08's procedures are the module's toucan_MPI_X_f08ts; each gets the standard's linker
# name (mpi_x_f08ts_) as a second symbol, weak for the MPI_ ones (gfortran has no attribute for
# it), so that a program defining its own MPI_X_f08ts (mpi_f08's profiling interface) gets its
# own, which calls PMPI_X. (-ffunction-sections: each procedure's code starts its section.)
(cd "$gen" && "$FC" -fPIC -c -I"$out/include" -J"$out/include" mpi.f90 -o mpi.o &&
    "$FC" -O2 -fPIC -ffunction-sections -c -J"$out/include" mpi_f08.f90 -o mpi_f08.o &&
    awk '{ printf "--add-symbol\n%s=.text.%s:0,%s,function\n", $1, $2, $3 }' mpi_f08_links.txt >links.args &&
    objcopy @links.args mpi_f08.o)
rm -f "$libdir/libtoucanfort.a.tmp"
ar rcs "$libdir/libtoucanfort.a.tmp" "$gen/toucanfort.o" "$gen/mpi.o" "$gen/mpi_f08.o"
mv "$libdir/libtoucanfort.a.tmp" "$libdir/libtoucanfort.a"
echo "fortran/build.sh: $libdir/libtoucanfort.a, $out/include/{mpif.h,mpi.mod,mpi_f08.mod}"
