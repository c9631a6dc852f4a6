/* bench/heapsteps.c: a time-stepping code that allocates its temporaries every step and
 * frees them at its end (issue 15's hydrodynamics proxy): each step every rank allocates
 * eight arrays of 0.2 to 2 MB (8.6 MB in all), fills and combines them, exchanges a halo of
 * 64 KiB with both neighbours on a ring (MPI_Sendrecv), sums a value over all ranks
 * (MPI_Allreduce), and frees the arrays. With glibc's defaults the large blocks go back to
 * the kernel at every free (mmap, heap trimming) and every step faults their pages in again.
 *
 *   heapsteps [STEPS [WARMUP]]      (defaults 100 and 10)
 *
 * Rank 0 prints "time SECONDS" for the steps after WARMUP, and "faults N": minor page faults
 * of all the job's processes over those steps (each rank reads its process's count; one
 * reading per process is kept); then "steps p10 P p25 Q median M" (ms): rank 0's step times,
 * whose lower quantiles are steps the machine's load did not interrupt. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define NARR 8

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
#define HALO (64 * 1024 / sizeof(double))

static long minflt(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

int main(int argc, char **argv)
{
    static const size_t kb[NARR] = {200, 400, 600, 800, 1000, 1300, 1600, 2000};
    int rank, size, steps = 100, warm = 10, s, k, left, right;
    double t0 = 0, total = 0;
    long f0 = 0, f1, pid, *all = NULL;
    double *st;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 1)
        steps = atoi(argv[1]);
    if (argc > 2)
        warm = atoi(argv[2]);
    left = (rank + size - 1) % size;
    right = (rank + 1) % size;
    st = calloc((size_t)steps + 1, sizeof(double));
    for (s = 0; s < warm + steps; s++) {
        double *a[NARR], sum = 0, gsum = 0, ts = MPI_Wtime();
        size_t n[NARR], i;
        if (s == warm) {
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
            f0 = minflt();
        }
        for (k = 0; k < NARR; k++) {
            n[k] = kb[k] * 1000 / sizeof(double);
            a[k] = malloc(n[k] * sizeof(double));
            if (!a[k]) {
                fprintf(stderr, "rank %d: out of memory\n", rank);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            for (i = 0; i < n[k]; i++)
                a[k][i] = (double)(i % 97) * 0.5 + s + rank;
        }
        /* Combine: each array with the next one's start. */
        for (k = 0; k + 1 < NARR; k++)
            for (i = 0; i < n[k]; i++)
                a[k][i] += 0.25 * a[k + 1][i];
        /* Halo: the ends of the first array to both neighbours, into the last one. */
        MPI_Sendrecv(a[0], HALO, MPI_DOUBLE, right, 1, a[NARR - 1], HALO, MPI_DOUBLE, left, 1,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Sendrecv(a[0] + n[0] - HALO, HALO, MPI_DOUBLE, left, 2, a[NARR - 1] + HALO, HALO,
                     MPI_DOUBLE, right, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (k = 0; k < NARR; k++)
            sum += a[k][n[k] / 2] + a[k][HALO / 2];
        MPI_Allreduce(&sum, &gsum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        total += gsum;
        for (k = 0; k < NARR; k++)
            free(a[k]);
        if (s >= warm)
            st[s - warm] = MPI_Wtime() - ts;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime() - t0;
    f1 = minflt() - f0;
    pid = getpid();
    {
        long mine[2] = {pid, f1};
        if (rank == 0)
            all = malloc(2 * sizeof(long) * size);
        MPI_Gather(mine, 2, MPI_LONG, all, 2, MPI_LONG, 0, MPI_COMM_WORLD);
    }
    if (rank == 0) {
        long faults = 0;
        int r, q, seen;
        for (r = 0; r < size; r++) {
            seen = 0;
            for (q = 0; q < r; q++)
                if (all[2 * q] == all[2 * r])
                    seen = 1;
            if (!seen)
                faults += all[2 * r + 1];
        }
        printf("time %.4f faults %ld ranks %d check %.6g\n", t0, faults, size, total);
        qsort(st, (size_t)steps, sizeof(double), cmp_double);
        if (steps > 0)
            printf("steps p10 %.4f p25 %.4f median %.4f\n", 1e3 * st[steps / 10], 1e3 * st[steps / 4],
                   1e3 * st[steps / 2]);
        free(all);
    }
    free(st);
    MPI_Finalize();
    return 0;
}
