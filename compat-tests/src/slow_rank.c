/* One rank computes for a few seconds while the others wait: a slow but healthy job, which
 * deadlock detection must leave alone (see .expect). Three waits, each longer than the
 * detector's first look (2 s): in MPI_Barrier; in a large MPI_Send (a rendezvous whose
 * receiver has not posted its receive yet); in a large MPI_Allreduce (a real collective
 * between processes that the slow rank joins late). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define N (1 << 18) /* doubles: 2 MiB, far above any eager limit */

static void compute(double seconds)
{
    double t0 = MPI_Wtime();
    volatile double x = 0;
    while (MPI_Wtime() - t0 < seconds)
        x += 1.0;
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int slow = size - 1;
    double *a = malloc(N * sizeof(double)), *b = malloc(N * sizeof(double));
    for (int i = 0; i < N; i++)
        a[i] = rank + i % 7;

    if (rank == slow)
        compute(4.0);
    MPI_Barrier(MPI_COMM_WORLD);
    printf("rank %d: barrier OK\n", rank);

    if (rank == 0 && slow != 0)
        MPI_Send(a, N, MPI_DOUBLE, slow, 5, MPI_COMM_WORLD);
    if (rank == slow && slow != 0) {
        compute(3.0);
        MPI_Recv(b, N, MPI_DOUBLE, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        int bad = 0;
        for (int i = 0; i < N; i++)
            bad += b[i] != i % 7;
        printf("rank %d: large receive %s\n", rank, bad ? "WRONG" : "OK");
    }

    if (rank == slow)
        compute(3.0);
    MPI_Allreduce(a, b, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += b[i] != (double)size * (size - 1) / 2 + (double)size * (i % 7);
    printf("rank %d: allreduce %s\n", rank, bad ? "WRONG" : "OK");
    free(a);
    free(b);
    MPI_Finalize();
    return 0;
}
