#!/usr/bin/env bash
# compat-tests/fortran-cmake.sh: CMake's FindMPI with MPI_Fortran_COMPILER=toucanfort must find
# mpif.h, the mpi module and the mpi_f08 module (MPI_Fortran_HAVE_F77_HEADER, _F90_MODULE,
# _F08_MODULE), and a program built through MPI::MPI_Fortran must run as n*V ranks. Needs cmake
# (not installed by scripts/ensure-deps.sh; skipped without it). Last line:
#   fortran-cmake: PASS   or   fortran-cmake: FAIL (reason)   or   fortran-cmake: SKIP (no cmake)
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
command -v cmake >/dev/null || { echo "fortran-cmake: SKIP (no cmake)"; exit 0; }
work=$here/out/fortran-cmake
rm -rf "$work" && mkdir -p "$work/build"
cat >"$work/hello.f90" <<'F90'
program hello
  use mpi_f08
  implicit none
  integer :: rank, size
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, size)
  write (*, '(a,i0,a,i0)') 'rank ', rank, ' of ', size
  call MPI_Finalize()
end program
F90
cat >"$work/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.10)
project(toucan_fortran_cmake Fortran)
find_package(MPI REQUIRED COMPONENTS Fortran)
message(STATUS "toucan: F77_HEADER=${MPI_Fortran_HAVE_F77_HEADER} F90_MODULE=${MPI_Fortran_HAVE_F90_MODULE} F08_MODULE=${MPI_Fortran_HAVE_F08_MODULE}")
add_executable(hello hello.f90)
target_link_libraries(hello MPI::MPI_Fortran)
CMAKE
cd "$work/build" || exit 1
if ! cmake -DMPI_Fortran_COMPILER="$root/wrappers/toucanfort" .. >cmake.log 2>&1; then
    tail -20 cmake.log
    echo "fortran-cmake: FAIL (cmake configure, log in $work/build/cmake.log)"
    exit 1
fi
line=$(grep 'toucan: F77_HEADER' cmake.log)
echo "${line#-- }"
if [[ $line != *"F77_HEADER=TRUE F90_MODULE=TRUE F08_MODULE=TRUE"* ]]; then
    echo "fortran-cmake: FAIL (FindMPI did not find all three bindings)"
    exit 1
fi
make >make.log 2>&1 || { tail -20 make.log; echo "fortran-cmake: FAIL (build)"; exit 1; }
out=$(TOUCAN_V=2 timeout 60 "${MPIRUN:-mpirun}" -np 2 ./hello | LC_ALL=C sort)
expected=$(for r in 0 1 2 3; do echo "rank $r of 4"; done)
if [[ $out != "$expected" ]]; then
    echo "$out"
    echo "fortran-cmake: FAIL (the program did not run as 2 x 2 ranks)"
    exit 1
fi
echo "fortran-cmake: PASS"
