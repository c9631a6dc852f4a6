/* imbp2p.c: the IMB-MPI1 point-to-point loops' shape between ranks 0 and 1 (issue 16, session 23,
 * docs/p2p.md "Session 23 (sr16)"): s = MPI_Sendrecv (receive with MPI_ANY_TAG, as IMB),
 * x = Exchange (2 MPI_Isend + 2 MPI_Recv + MPI_Waitall), p = ping-pong round trip.
 * usage: mpirun -np 2 imbp2p MODE ITERS BYTES (prints µs per iteration) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv)
{
    int rank; char mode = argv[1][0]; int n = atoi(argv[2]), len = atoi(argv[3]);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int peer = rank ^ 1;
    char *s = calloc(2 * len + 8, 1), *r = calloc(2 * len + 8, 1);
    MPI_Request req[2]; MPI_Status st;
    MPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime();
    for (int i = 0; i < n; i++) {
        if (mode == 's')
            MPI_Sendrecv(s, len, MPI_BYTE, peer, 1, r, len, MPI_BYTE, peer, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        else if (mode == 'x') {
            MPI_Isend(s, len, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &req[0]);
            MPI_Isend(s + len, len, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &req[1]);
            MPI_Recv(r, len, MPI_BYTE, peer, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            MPI_Recv(r + len, len, MPI_BYTE, peer, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
        } else if (rank == 0) {
            MPI_Send(s, len, MPI_BYTE, peer, 1, MPI_COMM_WORLD); MPI_Recv(r, len, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &st);
        } else {
            MPI_Recv(r, len, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &st); MPI_Send(s, len, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
        }
    }
    t = (MPI_Wtime() - t) / n * 1e6;
    if (rank == 0) printf("%c %d B %.3f us\n", mode, len, t);
    MPI_Finalize();
    return 0;
}
