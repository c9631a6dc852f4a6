/* Rank 1 (rank 0 in a world of one) returns from main without calling MPI_Finalize while
 * the others finalize: the job must end (not hang in MPI_Finalize) with a message naming the
 * virtual rank. Plain MPICH ends such a job too (its launcher kills the others when a process
 * exits without finalizing). Toucan only (see .expect). */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == (size > 1 ? 1 : 0)) {
        printf("rank %d: leaving without MPI_Finalize\n", rank);
        fflush(stdout);
        return 0;
    }
    printf("rank %d: OK\n", rank);
    MPI_Finalize();
    return 0;
}
