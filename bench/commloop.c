/*
 * commloop: communicators made and freed per step, as a library that duplicates its caller's
 * communicator for each call does (a solver per time step): per iteration
 *
 *   dupsplit     MPI_Comm_dup(MPI_COMM_WORLD) -> d, MPI_Comm_split(d, 0, size - rank) -> s,
 *                an 8-byte MPI_Allreduce on s and on d, MPI_Comm_free(s), MPI_Comm_free(d)
 *   dup          MPI_Comm_dup(MPI_COMM_WORLD) -> d, an 8-byte MPI_Allreduce on d, free(d)
 *
 * (the Allreduces make an implementation finish whatever it does for a new communicator). The
 * line gives the time of one iteration in µs: each rank times ITERS iterations from a barrier,
 * the maximum of the ranks' means. Every Allreduce's result is checked (MPI_Abort if wrong).
 *
 * Output (rank 0): "KIND 8 VALUE" lines and "# end: N measurements". Options as
 * bench/common.h (-q, -f FACTOR: iterations x FACTOR, -t LIST, -v).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "common.h"

enum kind { K_DUPSPLIT, K_DUP, NKINDS };
static const char *const kind_names[NKINDS] = {"dupsplit", "dup"};

static void check_sum(MPI_Comm c, long v, int it)
{
    long x = v, y = 0;
    int n;
    MPI_Comm_size(c, &n);
    MPI_Allreduce(&x, &y, 1, MPI_LONG, MPI_SUM, c);
    if (y != (long)n * v) {
        fprintf(stderr, "commloop: iteration %d: allreduce %ld, expected %ld\n", it, y, (long)n * v);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
}

static double run(enum kind k, int iters, int rank, int size)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int it = 0; it < iters; it++) {
        MPI_Comm d, s;
        MPI_Comm_dup(MPI_COMM_WORLD, &d);
        if (k == K_DUPSPLIT) {
            MPI_Comm_split(d, 0, size - rank, &s);
            check_sum(s, it + 1, it);
        }
        check_sum(d, it + 2, it);
        if (k == K_DUPSPLIT)
            MPI_Comm_free(&s);
        MPI_Comm_free(&d);
    }
    double mean = (MPI_Wtime() - t0) / iters * 1e6, worst;
    MPI_Allreduce(&mean, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return worst;
}

int main(int argc, char **argv)
{
    int rank, size, run_k[NKINDS], verbose, n = 0;
    double factor;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int r = bench_parse_args(argc, argv, kind_names, NKINDS, run_k, &factor, &verbose);
    if (r) {
        if (rank == 0)
            fprintf(stderr, "usage: commloop [-q] [-f FACTOR] [-t dupsplit,dup] [-v]\n");
        MPI_Finalize();
        return r < 0 ? 2 : 0;
    }
    int iters = (int)(400 * factor);
    if (iters < 10)
        iters = 10;
    for (int k = 0; k < NKINDS; k++) {
        if (!run_k[k])
            continue;
        run(k, iters / 10, rank, size); /* warm-up */
        double us = run(k, iters, rank, size);
        if (rank == 0)
            printf("%s 8 %.3f\n", kind_names[k], us);
        n++;
    }
    if (rank == 0)
        printf("# end: %d measurements\n", n);
    MPI_Finalize();
    return 0;
}
