/* deadlock_coll: rank 0 enters a large MPI_Allreduce that nobody else calls; every other
 * rank waits for a message from rank 0. Between processes the reduction runs as a real
 * collective of the MPI underneath, which can never complete: Toucan must still see the
 * deadlock and report each rank's call (see .expect) instead of hanging. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define N (1 << 17)

int main(int argc, char **argv)
{
    int rank, x = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double *a = calloc(N, sizeof(double)), *b = calloc(N, sizeof(double));
    if (rank == 0)
        MPI_Allreduce(a, b, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    else
        MPI_Recv(&x, 1, MPI_INT, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    printf("rank %d: OK\n", rank);
    free(a);
    free(b);
    MPI_Finalize();
    return 0;
}
