/* fault_common.h - the fault_* tests: rank 1 (rank 0 in a world of one) raises a fatal
 * signal after MPI_Init; the job must end with a message naming the virtual rank and the
 * signal, and with the status MPICH gives (the signal number). Toucan only (see .expect). */
#ifndef COMPAT_FAULT_COMMON_H
#define COMPAT_FAULT_COMMON_H

#include <mpi.h>
#include <stdio.h>

static inline int fault_main(int argc, char **argv, void (*fault)(void))
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == (size > 1 ? 1 : 0)) {
        fflush(stdout);
        fault();
    }
    MPI_Barrier(MPI_COMM_WORLD);
    printf("rank %d: OK\n", rank);
    MPI_Finalize();
    return 0;
}

#endif
