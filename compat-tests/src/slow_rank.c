/* One rank computes for a few seconds while the others wait in MPI_Barrier: a slow but
 * healthy job, which deadlock detection must leave alone (see .expect). */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == size - 1) {
        double t0 = MPI_Wtime();
        volatile double x = 0;
        while (MPI_Wtime() - t0 < 4.0)
            x += 1.0;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    printf("rank %d: OK\n", rank);
    MPI_Finalize();
    return 0;
}
