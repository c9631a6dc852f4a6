/* bench/libc_calls.c: the cost of a C library call that Toucan-MPI interposes, per call, as
 * the program sees it: rand() (per-subrank state, issue 15), malloc+free of 64 bytes and of
 * sizes from 16 B to 4 KiB (the heap per subrank), each freeing the block allocated 64 calls
 * before. Every rank times N calls of each (best of 5 rounds, ns per call); rank 0 prints
 * its own.
 *
 *   libc_calls [N [WHICH]]      (default 2000000, all; WHICH: rand, malloc64 or mallocmix, only
 *                               that loop: for instruction counts under valgrind)
 *
 * Lines: "rand NS", "malloc64 NS", "mallocmix NS". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double best(double a, double b)
{
    return a < b ? a : b;
}

int main(int argc, char **argv)
{
    int rank;
    long n = 2000000, i, sum = 0;
    double t, r = 1e9, m = 1e9, x = 1e9;
    char *ring[64] = {0};
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc > 1)
        n = atol(argv[1]);
    const char *which = argc > 2 ? argv[2] : "all";
    int all = !strcmp(which, "all"), do_rand = all || !strcmp(which, "rand"),
        do_m64 = all || !strcmp(which, "malloc64"), do_mix = all || !strcmp(which, "mallocmix");
    srand(1 + rank);
    for (int round = 0; round < 5; round++) {
        t = MPI_Wtime();
        for (i = 0; i < n && do_rand; i++)
            sum += rand();
        r = best(r, MPI_Wtime() - t);
        t = MPI_Wtime();
        for (i = 0; i < n && do_m64; i++) {
            free(ring[i & 63]);
            ring[i & 63] = malloc(64);
            ring[i & 63][0] = (char)i;
        }
        m = best(m, MPI_Wtime() - t);
        t = MPI_Wtime();
        for (i = 0; i < n && do_mix; i++) {
            free(ring[i & 63]);
            ring[i & 63] = malloc(16 + (size_t)(i * 2654435761u % 4080));
            ring[i & 63][0] = (char)i;
        }
        x = best(x, MPI_Wtime() - t);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    for (i = 0; i < 64; i++) {
        sum += ring[i] ? ring[i][0] : 0;
        free(ring[i]);
    }
    if (rank == 0)
        printf("rand %.2f\nmalloc64 %.2f\nmallocmix %.2f\ncheck %ld\n", 1e9 * r / n, 1e9 * m / n, 1e9 * x / n,
               sum & 1);
    MPI_Finalize();
    return 0;
}
