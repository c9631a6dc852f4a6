/* Every rank starts a receive from its right neighbour and waits for it, so nobody ever
 * sends: a deadlock in MPI_Wait. Toucan must detect it and end the job with a report naming
 * what each rank waits for (see .expect), instead of hanging. issue 16 (p2p8): at one subrank
 * per process with TOUCAN_P2P_DIRECT=on the receive is a lean direct request (docs/p2p.md),
 * which the engine takes over when its rank parks. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, size, x = 0;
    MPI_Request req;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Irecv(&x, 1, MPI_INT, (rank + 1) % size, 9, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_Send(&x, 1, MPI_INT, (rank + size - 1) % size, 9, MPI_COMM_WORLD);
    printf("rank %d: OK\n", rank);
    MPI_Finalize();
    return 0;
}
