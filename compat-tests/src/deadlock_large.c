/* deadlock_large: the classic unsafe exchange. Each rank first sends a large message (far
 * above any eager limit, so the send cannot complete before its receive is posted) to its
 * partner, then receives from it: nobody ever reaches the receive. Toucan must detect it
 * (the large sends' headers arrived and were never matched) and end the job with a report
 * naming each rank's send, instead of hanging. An odd last rank has no partner and waits in
 * MPI_Finalize. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define LEN (4 << 20)

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char *out = calloc(LEN, 1), *in = calloc(LEN, 1);
    int peer = rank ^ 1;
    if (peer < size) {
        MPI_Send(out, LEN, MPI_BYTE, peer, 7, MPI_COMM_WORLD);
        MPI_Recv(in, LEN, MPI_BYTE, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        printf("rank %d: OK\n", rank);
    }
    free(out);
    free(in);
    MPI_Finalize();
    return 0;
}
