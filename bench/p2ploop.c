/* p2ploop.c: timed point-to-point loops between ranks 0 and 1 (issue 16, docs/p2p.md):
 * ping-pong (half a round trip), MPI_Sendrecv, an exchange of 2 MPI_Irecv + 2 MPI_Isend +
 * MPI_Waitall, and the message rate of bench/msgrate.c (windows of 8 + 8 and MPI_Waitall);
 * best of 3 repetitions. Run at -np 2 (chrt -f 10 on a 2-core machine).
 * usage: p2ploop ITERS [BYTES] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#define WIN 8
int main(int argc, char **argv)
{
    int rank, n = argc > 1 ? atoi(argv[1]) : 100000, len = argc > 2 ? atoi(argv[2]) : 8;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int peer = rank ^ 1;
    char *s = calloc(len * WIN, 1), *r = calloc(len * WIN, 1);
    MPI_Request req[2 * WIN];
    double best[4] = {1e9, 1e9, 1e9, 1e9};
    for (int rep = 0; rep < 3; rep++) {
        double t;
        MPI_Barrier(MPI_COMM_WORLD);
        t = MPI_Wtime();
        for (int i = 0; i < n; i++) {
            if (rank == 0) { MPI_Send(s, len, MPI_BYTE, peer, 1, MPI_COMM_WORLD); MPI_Recv(r, len, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE); }
            else { MPI_Recv(r, len, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE); MPI_Send(s, len, MPI_BYTE, peer, 1, MPI_COMM_WORLD); }
        }
        t = (MPI_Wtime() - t) / n / 2 * 1e6; if (t < best[0]) best[0] = t;
        MPI_Barrier(MPI_COMM_WORLD);
        t = MPI_Wtime();
        for (int i = 0; i < n; i++)
            MPI_Sendrecv(s, len, MPI_BYTE, peer, 2, r, len, MPI_BYTE, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        t = (MPI_Wtime() - t) / n * 1e6; if (t < best[1]) best[1] = t;
        MPI_Barrier(MPI_COMM_WORLD);
        t = MPI_Wtime();
        for (int i = 0; i < n; i++) {
            MPI_Irecv(r, len, MPI_BYTE, peer, 3, MPI_COMM_WORLD, &req[0]);
            MPI_Irecv(r + len, len, MPI_BYTE, peer, 4, MPI_COMM_WORLD, &req[1]);
            MPI_Isend(s, len, MPI_BYTE, peer, 3, MPI_COMM_WORLD, &req[2]);
            MPI_Isend(s + len, len, MPI_BYTE, peer, 4, MPI_COMM_WORLD, &req[3]);
            MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
        }
        t = (MPI_Wtime() - t) / n * 1e6; if (t < best[2]) best[2] = t;
        MPI_Barrier(MPI_COMM_WORLD);
        t = MPI_Wtime();
        for (int i = 0; i < n / 4; i++) {
            for (int j = 0; j < WIN; j++) MPI_Irecv(r + j * len, len, MPI_BYTE, peer, j + 1, MPI_COMM_WORLD, &req[j]);
            for (int j = 0; j < WIN; j++) MPI_Isend(s + j * len, len, MPI_BYTE, peer, j + 1, MPI_COMM_WORLD, &req[WIN + j]);
            MPI_Waitall(2 * WIN, req, MPI_STATUSES_IGNORE);
        }
        t = (MPI_Wtime() - t); t = (double)(n / 4) * WIN * 2 / t / 1e6; if (-t < best[3]) best[3] = -t;
    }
    if (rank == 0) printf("len %d pingpong %.3f us  sendrecv %.3f us  exchange(2+2) %.3f us  msgrate %.2f M/s\n", len, best[0], best[1], best[2], -best[3]);
    MPI_Finalize();
    return 0;
}
