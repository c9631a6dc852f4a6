/* bench/sleep.c: a program that samples in a loop and sleeps between samples (issue 15's
 * "blocking calls" case): STEPS times, every rank sleeps MS milliseconds (usleep), then the
 * ranks sum a value (MPI_Allreduce). With one process per rank the sleeps overlap, so the
 * run takes about STEPS x MS whatever the rank count; Toucan's subranks must do the same.
 *
 *   sleep [STEPS [MS]]      (defaults 20 and 50)
 *
 * Rank 0 prints "time SECONDS" (MPI_Wtime from after MPI_Init to the last Allreduce). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int rank, size, i, steps = 20, ms = 50;
    double t0, sum = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 1)
        steps = atoi(argv[1]);
    if (argc > 2)
        ms = atoi(argv[2]);
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (i = 0; i < steps; i++) {
        double v = rank + i, s = 0;
        usleep(ms * 1000);
        MPI_Allreduce(&v, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        sum += s;
    }
    if (rank == 0)
        printf("time %.3f ranks %d check %.0f\n", MPI_Wtime() - t0, size, sum);
    MPI_Finalize();
    return 0;
}
