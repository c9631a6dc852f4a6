#!/usr/bin/env bash
# compat-tests/twonodes.sh: an mpirun that puts the job on two emulated nodes of this machine.
#
#   TOUCAN_COMPAT_LAUNCHER=compat-tests/twonodes.sh compat-tests/run-all.sh
#
# Hydra's fork launcher with two made-up host names (a, b) starts every process here but
# tells MPICH they live on two hosts: MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) splits the
# job in two, so Toucan-MPI's node-local queue joins the processes of each half and the real
# MPI joins the halves (transport/shmq.rs beside the ring). -np N puts ceil(N/2) processes on
# the first host. MPIRUN as for the other scripts (default mpirun).
# Not for jobs where a process dies: hydra then fails to signal the other host's proxy ("unable
# to write data to proxy"), exits 255 or hangs, plain MPICH alike (a rank calling _exit: 2 hangs
# in 4 runs). Every other compat test passed this way at 4x1 and 4x2 (session 25).
n=2
args=("$@")
for ((i = 0; i + 1 < $#; i++)); do
    [ "${args[$i]}" = -np ] && n=${args[$((i + 1))]}
done
exec "${MPIRUN:-mpirun}" -launcher fork -hosts a,b -ppn $(((n + 1) / 2)) "$@"
