#!/usr/bin/env bash
# bench/run-io.sh: MPI-IO benchmarks of issue 19, MPICH side by side in one run.
#
#   bench/run-io.sh [--full] [-t BYTES] [-r REPS] [--dir DIR]
#
# 1. Collective write and read of TOTAL bytes (default 64 MiB; --full: 1 GiB, the issue's
#    size) by 16 ranks in interleaved 64 KiB blocks: Toucan at n=2, V=8 against plain MPICH
#    -np 2 moving the same bytes with the same pattern (each MPICH rank does 8 ranks' blocks,
#    bench/io.c -e 8), dd writing and reading the same amount to the same file system, and
#    "posix" (bench/io.c posix: one process, pwrite/pread of 1 MiB from/into a buffer the size
#    of the file; dd's read goes into one 1 MiB buffer that stays in the CPU cache, which
#    no program whose data live in memory the size of the file can match), "posix2" (the
#    same with two processes, each its contiguous half: the floor for two processes) and
#    "read_fresh" (one process reading into a new, untouched buffer: page faults included).
# 2. Independent MPI_File_write_at of 1 MiB per rank: Toucan n=2, V=1 against MPICH -np 2
#    (1 MiB per rank), and Toucan n=2, V=8 against MPICH -np 2 writing 8 x 1 MiB per rank.
# 3. Nonblocking collective write (nb_coll): Toucan n=2, V=4 iwrite_all+wait against
#    write_all, interleaved 64 B, 1 KiB and 64 KiB blocks (bench/io.c nbcoll).
# Prints each time (best of REPS) and the ratios toucan/mpich, toucan/dd, toucan/posix (time ratios:
# below 1 is faster). Files go to --dir (default $TMPDIR or /tmp) and are removed.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
total=$((64 << 20))
reps=3
dir=${TMPDIR:-/tmp}
while [[ $# -gt 0 ]]; do
    case $1 in
    --full) total=$((1 << 30)) ;;
    -t) total=$2; shift ;;
    -r) reps=$2; shift ;;
    --dir) dir=$2; shift ;;
    *) echo "run-io.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
out=$root/bench/out/io
mkdir -p "$out"
mpicc -O2 "$here/io.c" -o "$out/io.mpich"
"$root/wrappers/toucancc" -O2 "$here/io.c" -o "$out/io.toucan"
f=$(mktemp "$dir/bench-io.XXXXXX")
trap 'rm -f "$f"' EXIT
rm -f "$f"

val() { awk -v k="$1" '$1 == k {print $2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

echo "# bench/run-io.sh: total $((total >> 20)) MiB, best of $reps, files in $dir ($(date -u +%FT%TZ))"
m=$(mpirun -np 2 "$out/io.mpich" coll -t "$total" -e 8 -r "$reps" "$f")
t=$(TOUCAN_V=8 mpirun -np 2 "$out/io.toucan" coll -t "$total" -e 1 -r "$reps" "$f")
t1=$(TOUCAN_V=1 mpirun -np 2 "$out/io.toucan" coll -t "$total" -e 8 -r "$reps" "$f")
# the pipelined collective write (hint toucan_cb_pipeline=enable, off by default), to decide
# its default on a quiet machine
tp=$(TOUCAN_V=8 mpirun -np 2 "$out/io.toucan" coll -t "$total" -e 1 -r "$reps" -i toucan_cb_pipeline=enable "$f")
# posix: one process, pwrite/pread of 1 MiB from/into a buffer the size of the file (the
# bound for data that live in the ranks' memory; dd's 1 MiB buffer stays in cache)
px=$(mpirun -np 1 "$out/io.mpich" posix -t "$total" -r "$reps" "$f")
# posix2: two processes, each its contiguous half (the floor for 2 processes holding the
# data); posixf: one process reading into fresh memory (a new buffer each time, first
# touches included: what a program that allocates its buffer just before reading pays)
px2=$(mpirun -np 2 "$out/io.mpich" posix -t "$total" -r "$reps" "$f")
pxf=$(mpirun -np 1 "$out/io.mpich" posix -f -t "$total" -r "$reps" "$f")
# dd: the same bytes, one sequential stream, page cache (no fsync), best of REPS
ddw=1e30
ddr=1e30
for _ in $(seq "$reps"); do
    s=$(date +%s.%N); dd if=/dev/zero of="$f" bs=1M count=$((total >> 20)) status=none; e=$(date +%s.%N)
    ddw=$(awk -v a="$ddw" -v b="$(awk -v s="$s" -v e="$e" 'BEGIN{print e-s}')" 'BEGIN{print (b<a)?b:a}')
    s=$(date +%s.%N); dd if="$f" of=/dev/null bs=1M status=none; e=$(date +%s.%N)
    ddr=$(awk -v a="$ddr" -v b="$(awk -v s="$s" -v e="$e" 'BEGIN{print e-s}')" 'BEGIN{print (b<a)?b:a}')
done
rm -f "$f"
for op in coll_write coll_read; do
    mv=$(val $op <<<"$m"); tv=$(val $op <<<"$t"); t1v=$(val $op <<<"$t1")
    d=$ddw; [[ $op == coll_read ]] && d=$ddr
    pv=$(val "posix_${op#coll_}" <<<"$px")
    p2v=$(val "posix_${op#coll_}" <<<"$px2")
    printf '%-11s mpich-np2(E=8) %.4fs  toucan-2x8 %.4fs  toucan-2x1(E=8) %.4fs  dd %.4fs  posix %.4fs  posix2 %.4fs  toucan-2x8/mpich %s  toucan-2x8/dd %s  toucan-2x8/posix %s  toucan-2x8/posix2 %s\n' \
        "$op" "$mv" "$tv" "$t1v" "$d" "$pv" "$p2v" "$(ratio "$tv" "$mv")" "$(ratio "$tv" "$d")" "$(ratio "$tv" "$pv")" "$(ratio "$tv" "$p2v")"
done
printf '%-11s posix into fresh memory (1 process) %.4fs\n' read_fresh "$(val posix_read <<<"$pxf")"
printf '%-11s toucan-2x8 pipelined %.4fs  unpipelined %.4fs  pipelined/unpipelined %s\n' write_pipe \
    "$(val coll_write <<<"$tp")" "$(val coll_write <<<"$t")" "$(ratio "$(val coll_write <<<"$tp")" "$(val coll_write <<<"$t")")"
m=$(mpirun -np 2 "$out/io.mpich" indep -r "$reps" "$f")
t=$(TOUCAN_V=1 mpirun -np 2 "$out/io.toucan" indep -r "$reps" "$f")
m8=$(mpirun -np 2 "$out/io.mpich" indep -e 8 -r "$reps" "$f")
t8=$(TOUCAN_V=8 mpirun -np 2 "$out/io.toucan" indep -r "$reps" "$f")
printf '%-11s mpich-np2 %.4fs  toucan-2x1 %.4fs  ratio %s | mpich-np2(8 x 1 MiB) %.4fs  toucan-2x8 %.4fs  ratio %s\n' \
    indep_write "$(val indep_write <<<"$m")" "$(val indep_write <<<"$t")" \
    "$(ratio "$(val indep_write <<<"$t")" "$(val indep_write <<<"$m")")" \
    "$(val indep_write <<<"$m8")" "$(val indep_write <<<"$t8")" \
    "$(ratio "$(val indep_write <<<"$t8")" "$(val indep_write <<<"$m8")")"
# 3. (session io5) The two ways of a nonblocking collective write, Toucan n=2, V=4, 8 MiB in
#    interleaved blocks of 64 B, 1 KiB and 64 KiB: MPI_File_iwrite_all + MPI_Wait (run as a
#    nonblocking independent access) against MPI_File_write_all (the two-phase exchange a
#    collective iwrite_all would run). Below 1: the independent form is faster.
for b in 64 1024 65536; do
    nb=$(TOUCAN_V=4 mpirun -np 2 "$out/io.toucan" nbcoll -t $((8 << 20)) -b "$b" -r "$reps" "$f")
    printf '%-11s toucan-2x4 block %6d B  iwrite_all+wait %.4fs  write_all %.4fs  iwrite_all/write_all %s\n' \
        nb_coll "$b" "$(val nb_iwrite_all <<<"$nb")" "$(val nb_write_all <<<"$nb")" "$(val nb_ratio_indep_over_coll <<<"$nb")"
done
