/* reduce_local.c: the local combine's speed, which every reduction's combine step shares:
 * 7 x MPI_Reduce_local of N floats (MPI_SUM) into one accumulator, and 7 x N/2 doubles
 * (MPI_MAX); best of REPS, one process. Prints "float_sum_us X double_max_us Y".
 *   mpirun -np 1 ./reduce_local [N [REPS]]     (default 16384 3000: 64 KiB operands) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 16384, reps = argc > 2 ? atoi(argv[2]) : 3000;
    MPI_Init(&argc, &argv);
    float *a = malloc(sizeof(float) * 8 * (size_t)n);
    double *d = malloc(sizeof(double) * (size_t)n);
    for (int k = 0; k < 8; k++)
        for (int i = 0; i < n; i++)
            a[(size_t)k * n + i] = (float)(k + i % 1000);
    for (int i = 0; i < n; i++)
        d[i] = i % 77;
    double bf = 1e9, bd = 1e9;
    for (int r = 0; r < reps; r++) {
        double t0 = MPI_Wtime();
        for (int k = 1; k < 8; k++)
            MPI_Reduce_local(a + (size_t)k * n, a, n, MPI_FLOAT, MPI_SUM);
        double t1 = MPI_Wtime();
        for (int k = 1; k < 8; k++)
            MPI_Reduce_local(d + n / 2, d, n / 2, MPI_DOUBLE, MPI_MAX);
        double t2 = MPI_Wtime();
        if (t1 - t0 < bf) bf = t1 - t0;
        if (t2 - t1 < bd) bd = t2 - t1;
    }
    printf("float_sum_us %.2f double_max_us %.2f (check %g)\n", bf * 1e6, bd * 1e6, (double)a[n - 1] + d[1]);
    MPI_Finalize();
    return 0;
}
