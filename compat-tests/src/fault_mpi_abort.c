/* MPI_Abort from the last rank (the last subrank of the last process) while every other rank
 * waits in a barrier, some parked on a sibling: the job ends promptly with the code, and
 * stderr names the virtual rank and the call. Toucan only (see .expect). */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == size - 1) {
        fflush(stdout);
        MPI_Abort(MPI_COMM_WORLD, 7);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    printf("rank %d: OK\n", rank);
    MPI_Finalize();
    return 0;
}
