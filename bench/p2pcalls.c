/* p2pcalls.c: instructions per point-to-point call between two processes, for callgrind
 * (bench/p2p-callgrind.sh; issue 16, docs/p2p.md). Windows of 8 messages of 8 bytes whose sends
 * are finished and whose messages arrived before the receiver posts, so a receive-side call
 * counts the layer, not the wait. Run at -np 2; rank 1 prints "bad 0" when every value arrived.
 *   (A) rank 0: 8 MPI_Isend + MPI_Waitall; barrier; rank 1: 8 MPI_Irecv + MPI_Waitall
 *   (B) rank 0: 8 MPI_Send; barrier; rank 1: 8 MPI_Recv
 *   (C) rank 1: 8 MPI_Send; barrier; rank 0: 8 MPI_Sendrecv (receiving those); rank 1: 8 MPI_Recv
 *   (D) rank 1: 8 MPI_Send; barrier; rank 0: 8 x (MPI_Irecv + MPI_Wait)
 * usage: p2pcalls WINDOWS */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#define WIN 8
int main(int argc, char **argv)
{
    int rank, n = argc > 1 ? atoi(argv[1]) : 100;
    MPI_Request req[WIN];
    double sbuf[WIN], rbuf[WIN];
    MPI_Status st;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int peer = rank ^ 1;
    for (int j = 0; j < WIN; j++) sbuf[j] = j;
    long bad = 0;
    for (int i = 0; i < n; i++) {
        /* A: Isend + Waitall(sends) ; Irecv + Waitall(recvs) */
        if (rank == 0) {
            for (int j = 0; j < WIN; j++) MPI_Isend(&sbuf[j], 1, MPI_DOUBLE, peer, j + 1, MPI_COMM_WORLD, &req[j]);
            MPI_Waitall(WIN, req, MPI_STATUSES_IGNORE);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 1) {
            for (int j = 0; j < WIN; j++) MPI_Irecv(&rbuf[j], 1, MPI_DOUBLE, peer, j + 1, MPI_COMM_WORLD, &req[j]);
            MPI_Waitall(WIN, req, MPI_STATUSES_IGNORE);
            for (int j = 0; j < WIN; j++) bad += rbuf[j] != j;
        }
        /* B: Send ; Recv */
        if (rank == 0)
            for (int j = 0; j < WIN; j++) MPI_Send(&sbuf[j], 1, MPI_DOUBLE, peer, j + 1, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 1)
            for (int j = 0; j < WIN; j++) MPI_Recv(&rbuf[j], 1, MPI_DOUBLE, peer, j + 1, MPI_COMM_WORLD, &st);
        /* C: rank 1 pre-sends; rank 0 Sendrecv (receiving what is there); rank 1 Recv after */
        if (rank == 1)
            for (int j = 0; j < WIN; j++) MPI_Send(&sbuf[j], 1, MPI_DOUBLE, peer, j + 1, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0)
            for (int j = 0; j < WIN; j++)
                MPI_Sendrecv(&sbuf[j], 1, MPI_DOUBLE, peer, 100 + j, &rbuf[j], 1, MPI_DOUBLE, peer, j + 1, MPI_COMM_WORLD, &st);
        if (rank == 1)
            for (int j = 0; j < WIN; j++) MPI_Recv(&rbuf[j], 1, MPI_DOUBLE, peer, 100 + j, MPI_COMM_WORLD, &st);
        /* D: Irecv + Wait one at a time, message already there (rank 0 receives) */
        if (rank == 1)
            for (int j = 0; j < WIN; j++) MPI_Send(&sbuf[j], 1, MPI_DOUBLE, peer, j + 1, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0)
            for (int j = 0; j < WIN; j++) {
                MPI_Irecv(&rbuf[j], 1, MPI_DOUBLE, peer, j + 1, MPI_COMM_WORLD, &req[0]);
                MPI_Wait(&req[0], &st);
            }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (rank == 1) printf("bad %ld\n", bad);
    MPI_Finalize();
    return 0;
}
