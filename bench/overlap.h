/* overlap.h - what jacobi3d.c and cannon2d.c share: the four variants, the
 * command line, and the one RESULT line each run prints (rank 0).
 *
 * Variants (the paper's):
 *   original  communicate, then compute (blocking waits before the compute)
 *   toucan    original + Toucan_Region hints (no-ops under other MPIs)
 *   nocomm    original with its MPI communication removed: the bound
 *   overlap   hand-written split-phase overlap (post, compute what needs no
 *             message, wait, compute the rest)
 */
#ifndef BENCH_OVERLAP_H
#define BENCH_OVERLAP_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../headers/toucan.h" /* after mpi.h; no-ops under other MPIs */

enum variant { ORIGINAL, TOUCAN, NOCOMM, OVERLAP };

static const char *const variant_names[] = {"original", "toucan", "nocomm", "overlap"};

static inline int parse_variant(const char *s)
{
    int v;
    for (v = 0; v < 4; v++)
        if (strcmp(s, variant_names[v]) == 0)
            return v;
    return -1;
}

/* Region hints only in the toucan variant. */
static inline void region(int variant, int kind)
{
    if (variant == TOUCAN)
        Toucan_Region(kind);
}

static inline void die(int rank, const char *msg)
{
    if (rank == 0)
        fprintf(stderr, "%s\n", msg);
    MPI_Finalize();
    exit(2);
}

static inline void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "out of memory (%zu bytes)\n", n);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

/* Time of the timed section that started at t0 (right after a barrier), as the
 * job sees it: until the last rank has finished it. A barrier first, then the
 * slowest rank's clock: under Toucan the subranks of one process take turns, so
 * a rank's own elapsed time would leave out the time its siblings ran (nocomm
 * never yields, and each subrank would seem to take 1/V of the real time). */
static inline double elapsed_since(double t0)
{
    double t, m;
    MPI_Barrier(MPI_COMM_WORLD);
    t = MPI_Wtime() - t0;
    MPI_Reduce(&t, &m, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    return m;
}

#endif
