/* msgrate.c: ranks in pairs (0-1, 2-3, ...) exchange windows of 8 eight-byte messages (8 Irecv +
 * 8 Isend + Waitall of 16); prints "rate MSGS_PER_S" on rank 0. The C twin of msgrate_f.f90
 * (bench/run-msgrate-fortran.sh). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#define WIN 8
int main(int argc, char **argv)
{
    int rank, size, n = argc > 1 ? atoi(argv[1]) : 20000;
    MPI_Request req[2 * WIN];
    double sbuf[WIN], rbuf[WIN];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int peer = rank ^ 1;
    for (int j = 0; j < WIN; j++) sbuf[j] = 1;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < WIN; j++)
            MPI_Irecv(&rbuf[j], 1, MPI_DOUBLE, peer, j + 1, MPI_COMM_WORLD, &req[j]);
        for (int j = 0; j < WIN; j++)
            MPI_Isend(&sbuf[j], 1, MPI_DOUBLE, peer, j + 1, MPI_COMM_WORLD, &req[WIN + j]);
        MPI_Waitall(2 * WIN, req, MPI_STATUSES_IGNORE);
    }
    double t1 = MPI_Wtime();
    if (rank == 0) printf("rate %.0f\n", (double)n * WIN * size / (t1 - t0));
    MPI_Finalize();
    return 0;
}
