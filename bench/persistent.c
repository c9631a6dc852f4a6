/*
 * persistent: a persistent collective's MPI_Start + MPI_Wait against the blocking call and
 * the nonblocking call + MPI_Wait (issue 16: persistent collectives planned once), on a
 * duplicate of MPI_COMM_WORLD.
 *
 * Built with any MPI (mpicc, wrappers/toucancc); runs at any number of ranks (1 included).
 * For each collective and size, three forms, each timed over the same number of calls:
 *
 *   KIND-blk SIZE US   the blocking call (MPI_Bcast, ...)
 *   KIND-nb  SIZE US   MPI_I<kind> + MPI_Wait
 *   KIND-ps  SIZE US   MPI_Start + MPI_Wait of one request made by MPI_<Kind>_init before the
 *                      loop (MPI 4.0) and freed after it
 *
 * KIND is barrier (SIZE 0), bcast (from rank 0, MPI_BYTE), allreduce (MPI_SUM of SIZE/8
 * doubles), allgather and alltoall (SIZE bytes of MPI_BYTE per block); SIZE is 8 B, 1 KiB and
 * 64 KiB. US is the time of one call in microseconds: each rank times its calls from a
 * barrier to the return of the last one, and the line gives the maximum of the ranks' means.
 * The forms of one (kind, size) run one after the other, each after a warm-up of a tenth of
 * its calls; the number of calls comes from a time budget (-q, -f) and the blocking form's
 * speed, agreed by all ranks.
 *
 * Correctness: the inputs carry the call's number; after every call each rank checks its
 * result (bcast: the first and last byte; allreduce: the first element; allgather/alltoall:
 * the first byte of every block). A wrong result aborts the program (MPI_Abort), except under
 * MPICH for the persistent forms, whose 4.0.2 implementation is known to restart some of them
 * wrongly (a restarted MPI_Allgather_init keeps the previous round's blocks, compat-tests
 * coll_persistent.c): there the line gets a "# wrong results" comment and is still printed.
 *
 * Output (rank 0, stdout): "KIND-FORM SIZE VALUE" lines, comments starting with '#', and
 * "# end: N measurements" last. Options as bench/common.h (-q, -f, -t LIST of kinds, -v).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

enum kind { K_BARRIER, K_BCAST, K_ALLREDUCE, K_ALLGATHER, K_ALLTOALL, NKINDS };
static const char *const kind_names[NKINDS] = {"barrier", "bcast", "allreduce", "allgather", "alltoall"};
static const long sizes[] = {8, 1024, 65536};
#define NSIZES 3
#define BUDGET_S 0.1
#define ITERS_MIN 20
#define ITERS_MAX 100000

enum form { F_BLK, F_NB, F_PS, NFORMS };
static const char *const form_names[NFORMS] = {"blk", "nb", "ps"};

struct bufs {
    unsigned char *s, *r;
    double *ds, *dr;
};

/* The inputs of call `it`. */
static void fill(enum kind k, long size, int rank, int size_w, long it, struct bufs *b)
{
    unsigned char v = (unsigned char)(it * 7 + rank);
    switch (k) {
    case K_BCAST:
        if (rank == 0) {
            b->r[0] = v;
            b->r[size - 1] = (unsigned char)(v + 1);
        }
        break;
    case K_ALLREDUCE:
        b->ds[0] = (double)(it + rank);
        break;
    case K_ALLGATHER:
        b->s[0] = v;
        break;
    case K_ALLTOALL:
        for (int p = 0; p < size_w; p++)
            b->s[p * size] = (unsigned char)(v + p);
        break;
    default:
        break;
    }
}

/* Whether the result of call `it` is right. */
static int check(enum kind k, long size, int rank, int size_w, long it, const struct bufs *b)
{
    switch (k) {
    case K_BCAST: {
        unsigned char v = (unsigned char)(it * 7);
        return b->r[0] == v && b->r[size - 1] == (unsigned char)(v + 1);
    }
    case K_ALLREDUCE:
        return b->dr[0] == (double)(it * size_w) + (double)size_w * (size_w - 1) / 2;
    case K_ALLGATHER:
        for (int p = 0; p < size_w; p++)
            if (b->r[p * size] != (unsigned char)(it * 7 + p))
                return 0;
        return 1;
    case K_ALLTOALL:
        for (int p = 0; p < size_w; p++)
            if (b->r[p * size] != (unsigned char)(it * 7 + p + rank))
                return 0;
        return 1;
    default:
        return 1;
    }
}

/* Starts (nonblocking, persistent init) or runs (blocking) the collective. */
static void call(enum kind k, enum form f, long size, MPI_Comm c, struct bufs *b, MPI_Request *rq)
{
    long n = size / 8;
    switch (k) {
    case K_BARRIER:
        if (f == F_BLK) MPI_Barrier(c);
        else if (f == F_NB) MPI_Ibarrier(c, rq);
        else MPI_Barrier_init(c, MPI_INFO_NULL, rq);
        break;
    case K_BCAST:
        if (f == F_BLK) MPI_Bcast(b->r, (int)size, MPI_BYTE, 0, c);
        else if (f == F_NB) MPI_Ibcast(b->r, (int)size, MPI_BYTE, 0, c, rq);
        else MPI_Bcast_init(b->r, (int)size, MPI_BYTE, 0, c, MPI_INFO_NULL, rq);
        break;
    case K_ALLREDUCE:
        if (f == F_BLK) MPI_Allreduce(b->ds, b->dr, (int)n, MPI_DOUBLE, MPI_SUM, c);
        else if (f == F_NB) MPI_Iallreduce(b->ds, b->dr, (int)n, MPI_DOUBLE, MPI_SUM, c, rq);
        else MPI_Allreduce_init(b->ds, b->dr, (int)n, MPI_DOUBLE, MPI_SUM, c, MPI_INFO_NULL, rq);
        break;
    case K_ALLGATHER:
        if (f == F_BLK) MPI_Allgather(b->s, (int)size, MPI_BYTE, b->r, (int)size, MPI_BYTE, c);
        else if (f == F_NB) MPI_Iallgather(b->s, (int)size, MPI_BYTE, b->r, (int)size, MPI_BYTE, c, rq);
        else MPI_Allgather_init(b->s, (int)size, MPI_BYTE, b->r, (int)size, MPI_BYTE, c, MPI_INFO_NULL, rq);
        break;
    case K_ALLTOALL:
        if (f == F_BLK) MPI_Alltoall(b->s, (int)size, MPI_BYTE, b->r, (int)size, MPI_BYTE, c);
        else if (f == F_NB) MPI_Ialltoall(b->s, (int)size, MPI_BYTE, b->r, (int)size, MPI_BYTE, c, rq);
        else MPI_Alltoall_init(b->s, (int)size, MPI_BYTE, b->r, (int)size, MPI_BYTE, c, MPI_INFO_NULL, rq);
        break;
    default:
        break;
    }
}

/* Runs `iters` calls of form f from call number `first`; returns this rank's seconds and
 * counts wrong results in *wrong. */
static double run(enum kind k, enum form f, long size, MPI_Comm c, struct bufs *b, long first, long iters, long *wrong)
{
    int rank, n;
    MPI_Comm_rank(c, &rank);
    MPI_Comm_size(c, &n);
    MPI_Request rq = MPI_REQUEST_NULL;
    if (f == F_PS)
        call(k, f, size, c, b, &rq);
    MPI_Barrier(c);
    double t0 = MPI_Wtime();
    for (long it = first; it < first + iters; it++) {
        fill(k, size, rank, n, it, b);
        if (f == F_BLK) {
            call(k, f, size, c, b, NULL);
        } else if (f == F_NB) {
            call(k, f, size, c, b, &rq);
            MPI_Wait(&rq, MPI_STATUS_IGNORE);
        } else {
            MPI_Start(&rq);
            MPI_Wait(&rq, MPI_STATUS_IGNORE);
        }
        if (!check(k, size, rank, n, it, b))
            (*wrong)++;
    }
    double t = MPI_Wtime() - t0;
    if (f == F_PS)
        MPI_Request_free(&rq);
    return t;
}

int main(int argc, char **argv)
{
    int rank, n, verbose, want[NKINDS];
    double factor;
    MPI_Init(&argc, &argv);
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_rank(c, &rank);
    MPI_Comm_size(c, &n);
    int a = bench_parse_args(argc, argv, kind_names, NKINDS, want, &factor, &verbose);
    if (a != 0) {
        if (rank == 0)
            fprintf(a < 0 ? stderr : stdout, "usage: persistent [-q] [-f FACTOR] [-t LIST] [-v]\n");
        MPI_Finalize();
        return a < 0;
    }
    long maxsz = sizes[NSIZES - 1];
    struct bufs b;
    b.s = bench_alloc("persistent", rank, (size_t)maxsz * n);
    b.r = bench_alloc("persistent", rank, (size_t)maxsz * n);
    b.ds = (double *)bench_alloc("persistent", rank, (size_t)maxsz);
    b.dr = (double *)bench_alloc("persistent", rank, (size_t)maxsz);
    memset(b.s, 0, (size_t)maxsz * n);
    memset(b.ds, 0, (size_t)maxsz);
    int lines = 0;
#ifdef TOUCAN_MPI
    int strict_ps = 1;
#else
    int strict_ps = 0;
#endif
    for (int k = 0; k < NKINDS; k++) {
        if (!want[k])
            continue;
        for (int si = 0; si < NSIZES; si++) {
            long size = k == K_BARRIER ? 0 : sizes[si];
            if (k == K_BARRIER && si > 0)
                break;
            long call_no = 0, wrong = 0;
            /* Calls per form: from the blocking form's time of ITERS_MIN calls. */
            double t = run(k, F_BLK, size, c, &b, call_no, ITERS_MIN, &wrong), tmax;
            call_no += ITERS_MIN;
            MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, c);
            long iters = (long)(BUDGET_S * factor / (tmax / ITERS_MIN + 1e-9));
            iters = iters < ITERS_MIN ? ITERS_MIN : iters > ITERS_MAX ? ITERS_MAX : iters;
            for (int f = 0; f < NFORMS; f++) {
                long w = 0;
                run(k, f, size, c, &b, call_no, iters / 10 + 1, &w);
                call_no += iters / 10 + 1;
                t = run(k, f, size, c, &b, call_no, iters, &w);
                call_no += iters;
                long wall;
                MPI_Allreduce(&w, &wall, 1, MPI_LONG, MPI_SUM, c);
                MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, c);
                if (wall && (f != F_PS || strict_ps)) {
                    if (rank == 0)
                        fprintf(stderr, "persistent: %s-%s %ld: %ld wrong results\n", kind_names[k], form_names[f], size, wall);
                    MPI_Abort(MPI_COMM_WORLD, 3);
                }
                if (rank == 0) {
                    if (wall)
                        printf("# wrong results: %s-%s %ld (%ld)\n", kind_names[k], form_names[f], size, wall);
                    if (verbose)
                        printf("# %s-%s %ld: %ld calls\n", kind_names[k], form_names[f], size, iters);
                    printf("%s-%s %ld %.3f\n", kind_names[k], form_names[f], size, tmax / iters * 1e6);
                    fflush(stdout);
                }
                lines++;
            }
            (void)wrong;
        }
    }
    if (rank == 0)
        printf("# end: %d measurements\n", lines);
    MPI_Comm_free(&c);
    MPI_Finalize();
    return 0;
}
