/* deadlock_coll_small: rank 0 enters a small MPI_Bcast from rank 1 that rank 1
 * never makes; every other rank waits for a message from rank 0. At one rank
 * per process the broadcast's receive waits without a request (session 19,
 * core/coll/step.rs): Toucan must still see the deadlock and name each rank's
 * call (see .expect) instead of hanging. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, x = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        MPI_Bcast(&x, 1, MPI_INT, 1, MPI_COMM_WORLD);
    else
        MPI_Recv(&x, 1, MPI_INT, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    printf("rank %d: OK\n", rank);
    MPI_Finalize();
    return 0;
}
