/* p2pposted.c: instructions of receives posted before their messages arrive, for callgrind
 * (bench/p2p-callgrind.sh; issue 16, docs/p2p.md "Session 19"). Windows of 8 messages of 8
 * bytes: rank 1 posts 8 MPI_Irecv (nothing has arrived), a barrier, rank 0 sends the 8 with
 * MPI_Send while rank 1 computes for SPIN_MS milliseconds without calling MPI (so the messages
 * wait in the real MPI, not yet taken by our layer), then rank 1's MPI_Waitall takes them: the
 * path of a message that arrives for a posted receive (the message rate's common case), with
 * no polls that find nothing. Run at -np 2; rank 1 prints "bad 0" when every value arrived.
 * usage: p2pposted WINDOWS [SPIN_MS] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#define WIN 8
static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}
int main(int argc, char **argv)
{
    int rank, n = argc > 1 ? atoi(argv[1]) : 100;
    double spin = (argc > 2 ? atof(argv[2]) : 10) * 1e-3;
    MPI_Request req[WIN];
    double sbuf[WIN], rbuf[WIN];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int peer = rank ^ 1;
    for (int j = 0; j < WIN; j++) sbuf[j] = j;
    long bad = 0;
    for (int i = 0; i < n; i++) {
        if (rank == 1)
            for (int j = 0; j < WIN; j++) MPI_Irecv(&rbuf[j], 1, MPI_DOUBLE, peer, j + 1, MPI_COMM_WORLD, &req[j]);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0)
            for (int j = 0; j < WIN; j++) MPI_Send(&sbuf[j], 1, MPI_DOUBLE, peer, j + 1, MPI_COMM_WORLD);
        if (rank == 1) {
            double t0 = now();
            while (now() - t0 < spin) {
            }
            MPI_Waitall(WIN, req, MPI_STATUSES_IGNORE);
            for (int j = 0; j < WIN; j++) bad += rbuf[j] != j;
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) printf("bad %ld\n", bad);
    MPI_Finalize();
    return 0;
}
