/*
 * nbc_overlap: how much of a nonblocking collective happens while the caller computes
 * (issue 16, deliverable 3), measured so that a loaded machine blurs it less than IMB-NBC's
 * single averages.
 *
 * For each collective (Ibcast from rank 0, Iallreduce MPI_SUM of doubles, Ialltoall and
 * Iallgather of MPI_BYTE) and size (bytes per rank): the median over ITERS calls of
 *   t_pure  start + MPI_Wait, nothing between;
 *   t_wait  the MPI_Wait alone after C microseconds of computation without MPI calls
 *           (C = max(3 t_pure, -c MS, default 2 ms), the same on every rank);
 *   t_all   from the barrier before the call to the return of its MPI_Wait;
 * each the maximum over the ranks of their medians. With K ranks sharing a core (-k K: the
 * subranks of one worker, TOUCAN_V, or an oversubscribed MPI) their computations run one after
 * the other, so the call is over at best K*C after the barrier, and
 *   hidden = 1 - (t_all - K*C) / t_pure, clamped to [0, 1]
 * is the share of the collective done during the computation (the paper's measure of overlap,
 * T_nocomm = K*C): 1 when it finished meanwhile, 0 when it all happened in the wait. At K = 1
 * t_all - C is about t_wait, and overlap = 1 - t_wait / t_pure (clamped) says the same with
 * less noise (the barrier's skew and the scheduling delays of a loaded machine stay out of
 * it); at K > 1 a rank's wait includes its siblings' computations and only `hidden` is
 * meaningful. A barrier precedes every call; every result is checked (a wrong one aborts).
 * Rank 0 prints, per line:
 *   KIND SIZE t_pure_us t_wait_us t_all_us overlap hidden
 * e.g. "ialltoall 1048576 812.3 3.1 2004.2 1.00 1.00", and "# end" last.
 *
 *   mpirun -np 2 ./nbc_overlap [-i ITERS] [-c MS] [-k K]   (MPICH: mpicc; Toucan: toucancc)
 *   TOUCAN_V=4 mpirun -np 2 ./nbc_overlap -k 4
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { IBCAST, IALLREDUCE, IALLTOALL, IALLGATHER, NKINDS };
static const char *const kind_names[NKINDS] = {"ibcast", "iallreduce", "ialltoall", "iallgather"};
static const int sizes[] = {65536, 1048576};
#define NSIZES 2

static double spin_until(double t_end)
{
    volatile double x = 0;
    while (MPI_Wtime() < t_end)
        for (int i = 0; i < 1000; i++)
            x += i * 0.5;
    return x;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Fills the inputs for call number `it` and starts the collective. */
static void start(int kind, int size, int rank, int np, int it, char *s, char *r, MPI_Request *rq)
{
    switch (kind) {
    case IBCAST:
        if (rank == 0)
            memset(r, it & 0x7f, size);
        MPI_Ibcast(r, size, MPI_BYTE, 0, MPI_COMM_WORLD, rq);
        break;
    case IALLREDUCE: {
        double *d = (double *) s;
        for (int k = 0; k < size / 8; k += 512)
            d[k] = rank + it;
        MPI_Iallreduce(s, r, size / 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, rq);
        break;
    }
    case IALLTOALL:
        for (int p = 0; p < np; p++)
            memset(s + (size_t) p * size, (rank * 7 + p + it) & 0x7f, size);
        MPI_Ialltoall(s, size, MPI_BYTE, r, size, MPI_BYTE, MPI_COMM_WORLD, rq);
        break;
    default:
        memset(s, (rank + it) & 0x7f, size);
        MPI_Iallgather(s, size, MPI_BYTE, r, size, MPI_BYTE, MPI_COMM_WORLD, rq);
        break;
    }
}

static void check(int kind, int size, int rank, int np, int it, const char *r)
{
    int bad = 0;
    switch (kind) {
    case IBCAST:
        bad = r[0] != (it & 0x7f) || r[size - 1] != (it & 0x7f);
        break;
    case IALLREDUCE: {
        const double *d = (const double *) r;
        double want = (double) np * (np - 1) / 2 + (double) np * it;
        for (int k = 0; k < size / 8; k += 512)
            bad |= d[k] != want;
        break;
    }
    case IALLTOALL:
        for (int p = 0; p < np; p++)
            bad |= r[(size_t) p * size] != ((p * 7 + rank + it) & 0x7f) || r[(size_t) p * size + size - 1] != ((p * 7 + rank + it) & 0x7f);
        break;
    default:
        for (int p = 0; p < np; p++)
            bad |= r[(size_t) p * size] != ((p + it) & 0x7f) || r[(size_t) p * size + size - 1] != ((p + it) & 0x7f);
        break;
    }
    if (bad) {
        fprintf(stderr, "nbc_overlap: rank %d: wrong result of %s %d, call %d\n", rank, kind_names[kind], size, it);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

int main(int argc, char **argv)
{
    int rank, np, iters = 20;
    double min_compute = 2e-3;
    int per_core = 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-i") && i + 1 < argc)
            iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-c") && i + 1 < argc)
            min_compute = atof(argv[++i]) * 1e-3;
        else if (!strcmp(argv[i], "-k") && i + 1 < argc)
            per_core = atoi(argv[++i]) > 0 ? atoi(argv[i]) : 1;
    if (iters < 1)
        iters = 1;
    double *tp = malloc(sizeof(double) * iters), *tw = malloc(sizeof(double) * iters);
    double *ta = malloc(sizeof(double) * iters);
    if (rank == 0)
        printf("# nbc_overlap: %d ranks, %d per core, %d calls per measurement; KIND SIZE t_pure_us t_wait_us t_all_us overlap hidden\n", np,
               per_core, iters);
    for (int kind = 0; kind < NKINDS; kind++)
        for (int z = 0; z < NSIZES; z++) {
            int size = sizes[z];
            char *s = malloc((size_t) size * np), *r = malloc((size_t) size * np);
            MPI_Request rq;
            memset(s, 0, (size_t) size * np);
            memset(r, 0, (size_t) size * np);
            int it = 0;
            for (int k = 0; k < iters + 2; k++, it++) {
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = MPI_Wtime();
                start(kind, size, rank, np, it, s, r, &rq);
                MPI_Wait(&rq, MPI_STATUS_IGNORE);
                if (k >= 2)
                    tp[k - 2] = MPI_Wtime() - t0;
                check(kind, size, rank, np, it, r);
            }
            double pure = median(tp, iters), slowest;
            MPI_Allreduce(&pure, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            double compute = 3 * slowest > min_compute ? 3 * slowest : min_compute;
            for (int k = 0; k < iters; k++, it++) {
                MPI_Barrier(MPI_COMM_WORLD);
                double ts = MPI_Wtime();
                start(kind, size, rank, np, it, s, r, &rq);
                spin_until(MPI_Wtime() + compute);
                double t0 = MPI_Wtime();
                MPI_Wait(&rq, MPI_STATUS_IGNORE);
                double t1 = MPI_Wtime();
                tw[k] = t1 - t0;
                ta[k] = t1 - ts;
                check(kind, size, rank, np, it, r);
            }
            double med[2] = {median(tw, iters), median(ta, iters)}, mx[2];
            MPI_Allreduce(med, mx, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            if (rank == 0) {
                double hid = 1 - (mx[1] - per_core * compute) / slowest, ov = 1 - mx[0] / slowest;
                hid = hid < 0 ? 0 : hid > 1 ? 1 : hid;
                ov = ov < 0 ? 0 : ov > 1 ? 1 : ov;
                printf("%s %d %.1f %.1f %.1f %.2f %.2f\n", kind_names[kind], size, slowest * 1e6, mx[0] * 1e6, mx[1] * 1e6, ov,
                       hid);
                fflush(stdout);
            }
            free(s);
            free(r);
        }
    if (rank == 0)
        printf("# end\n");
    free(tp);
    free(tw);
    free(ta);
    MPI_Finalize();
    return 0;
}
