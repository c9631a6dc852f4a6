/*
 * smpcoll: time per call of the small blocking collectives on MPI_COMM_WORLD, made for the
 * ranks of one process (issue 14/16, session 16: one worker against two, bench/run-smpcoll.sh).
 *
 *   barrier        MPI_Barrier
 *   bcast          MPI_Bcast from rank 0
 *   reduce         MPI_Reduce (MPI_SUM of longs) to rank 0, then MPI_Barrier (IMB's loop)
 *   allreduce      MPI_Allreduce, MPI_SUM of longs
 *   allgather      MPI_Allgather
 *   alltoall       MPI_Alltoall
 *
 * at 8 B and 1 KiB per rank (-m to choose). A measurement runs B blocks of K calls (-b, -k)
 * after one warm-up block; per block every rank times its K calls, and the block's time per
 * call is the mean over the ranks (IMB's t_avg). Printed: the best block and the median
 * block. On a loaded machine (workers descheduled at random) the best block is the cost of
 * the collective itself, the median what a program saw.
 *
 * Correctness: each call's data carries the call's number; the result of the last call of
 * every block is checked on every rank (every element), and a wrong one aborts.
 *
 * Output (rank 0): lines "KIND SIZE BEST MEDIAN" (microseconds), comments start with '#'.
 *
 * Options: -b BLOCKS (default 41), -k CALLS (default 200), -t LIST (kinds, comma-separated),
 * -m LIST (sizes in bytes, multiples of 8; default 8,1024), -h.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum kind { BARRIER, BCAST, REDUCE, ALLREDUCE, ALLGATHER, ALLTOALL, NKINDS };
static const char *const names[NKINDS] = {"barrier", "bcast", "reduce", "allreduce", "allgather", "alltoall"};

#define MAX_SIZES 8

struct opts {
    int blocks, calls, run[NKINDS], nsizes;
    long sizes[MAX_SIZES];
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void die(int rank, const char *what, const char *kind, long size, long at, long got, long want)
{
    fprintf(stderr, "smpcoll: rank %d: %s %s of %ld B: element %ld is %ld, want %ld\n", rank, what, kind, size, at,
            got, want);
    MPI_Abort(MPI_COMM_WORLD, 3);
}

/* One call of `k` with `n` longs per rank; `stamp` is the call's number. */
static void call(enum kind k, long *s, long *r, long n, long stamp, int rank, int nranks)
{
    switch (k) {
    case BARRIER:
        MPI_Barrier(MPI_COMM_WORLD);
        break;
    case BCAST:
        if (rank == 0)
            for (long i = 0; i < n; i++)
                r[i] = stamp + i;
        MPI_Bcast(r, (int)n, MPI_LONG, 0, MPI_COMM_WORLD);
        break;
    case REDUCE:
        s[0] = stamp + rank;
        MPI_Reduce(s, r, (int)n, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        break;
    case ALLREDUCE:
        s[0] = stamp + rank;
        MPI_Allreduce(s, r, (int)n, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        break;
    case ALLGATHER:
        s[0] = stamp + rank;
        MPI_Allgather(s, (int)n, MPI_LONG, r, (int)n, MPI_LONG, MPI_COMM_WORLD);
        break;
    case ALLTOALL:
        for (int p = 0; p < nranks; p++)
            s[p * n] = stamp * 1000 + rank * 10 + p;
        MPI_Alltoall(s, (int)n, MPI_LONG, r, (int)n, MPI_LONG, MPI_COMM_WORLD);
        break;
    default:
        break;
    }
}

/* Checks the result of the call numbered `stamp`. */
static void check(enum kind k, const long *r, long n, long stamp, int rank, int nranks, long size)
{
    long sum = (long)nranks * stamp + (long)nranks * (nranks - 1) / 2;
    switch (k) {
    case BCAST:
        for (long i = 0; i < n; i++)
            if (r[i] != stamp + i)
                die(rank, "wrong", names[k], size, i, r[i], stamp + i);
        break;
    case REDUCE:
    case ALLREDUCE:
        if (k == REDUCE && rank != 0)
            break;
        if (r[0] != sum)
            die(rank, "wrong", names[k], size, 0, r[0], sum);
        for (long i = 1; i < n; i++)
            if (r[i] != (long)nranks * i)
                die(rank, "wrong", names[k], size, i, r[i], (long)nranks * i);
        break;
    case ALLGATHER:
        for (int p = 0; p < nranks; p++) {
            if (r[p * n] != stamp + p)
                die(rank, "wrong", names[k], size, p * n, r[p * n], stamp + p);
            for (long i = 1; i < n; i++)
                if (r[p * n + i] != i)
                    die(rank, "wrong", names[k], size, p * n + i, r[p * n + i], i);
        }
        break;
    case ALLTOALL:
        for (int p = 0; p < nranks; p++) {
            long want = stamp * 1000 + p * 10 + rank;
            if (r[p * n] != want)
                die(rank, "wrong", names[k], size, p * n, r[p * n], want);
        }
        break;
    default:
        break;
    }
}

static int parse(int argc, char **argv, struct opts *o)
{
    o->blocks = 41;
    o->calls = 200;
    o->nsizes = 2;
    o->sizes[0] = 8;
    o->sizes[1] = 1024;
    for (int k = 0; k < NKINDS; k++)
        o->run[k] = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-b") && i + 1 < argc) {
            o->blocks = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "-k") && i + 1 < argc) {
            o->calls = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "-t") && i + 1 < argc) {
            char list[256], *save = NULL;
            snprintf(list, sizeof list, "%s", argv[++i]);
            for (int k = 0; k < NKINDS; k++)
                o->run[k] = 0;
            for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                int k = 0;
                while (k < NKINDS && strcmp(t, names[k]))
                    k++;
                if (k == NKINDS)
                    return -1;
                o->run[k] = 1;
            }
        } else if (!strcmp(argv[i], "-m") && i + 1 < argc) {
            char list[256], *save = NULL;
            snprintf(list, sizeof list, "%s", argv[++i]);
            o->nsizes = 0;
            for (char *t = strtok_r(list, ",", &save); t && o->nsizes < MAX_SIZES; t = strtok_r(NULL, ",", &save)) {
                long v = atol(t);
                if (v < 8 || v % 8)
                    return -1;
                o->sizes[o->nsizes++] = v;
            }
        } else {
            return -1;
        }
    }
    return o->blocks > 0 && o->calls > 0 && o->nsizes > 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    int rank, nranks;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    struct opts o;
    if (parse(argc, argv, &o)) {
        if (rank == 0)
            fprintf(stderr, "usage: smpcoll [-b BLOCKS] [-k CALLS] [-t %s,%s,...] [-m 8,1024]\n", names[0], names[1]);
        MPI_Finalize();
        return 2;
    }
    long maxn = 0;
    for (int i = 0; i < o.nsizes; i++)
        maxn = o.sizes[i] / 8 > maxn ? o.sizes[i] / 8 : maxn;
    long *s = malloc(sizeof(long) * maxn * nranks), *r = malloc(sizeof(long) * maxn * nranks);
    double *t = malloc(sizeof(double) * o.blocks);
    if (!s || !r || !t)
        MPI_Abort(MPI_COMM_WORLD, 2);
    if (rank == 0)
        printf("# smpcoll: %d ranks, %d blocks of %d calls; kind size best_us median_us\n", nranks, o.blocks, o.calls);
    for (int k = 0; k < NKINDS; k++) {
        if (!o.run[k])
            continue;
        for (int z = 0; z < (k == BARRIER ? 1 : o.nsizes); z++) {
            long size = k == BARRIER ? 0 : o.sizes[z], n = k == BARRIER ? 0 : size / 8;
            for (long i = 0; i < n * nranks; i++) {
                s[i] = i % (n ? n : 1);
                r[i] = -1;
            }
            long stamp = 0;
            for (int b = -1; b < o.blocks; b++) {
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = MPI_Wtime();
                for (int c = 0; c < o.calls; c++)
                    call((enum kind)k, s, r, n, ++stamp, rank, nranks);
                double mine = (MPI_Wtime() - t0) / o.calls, sum = 0;
                check((enum kind)k, r, n, stamp, rank, nranks, size);
                MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
                if (b >= 0)
                    t[b] = sum / nranks;
            }
            if (rank == 0) {
                qsort(t, o.blocks, sizeof(double), cmp_double);
                printf("%s %ld %.3f %.3f\n", names[k], size, t[0] * 1e6, t[o.blocks / 2] * 1e6);
                fflush(stdout);
            }
        }
    }
    free(s);
    free(r);
    free(t);
    MPI_Finalize();
    return 0;
}
