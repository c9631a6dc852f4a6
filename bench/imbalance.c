/* imbalance: a bulk-synchronous code whose ranks carry different amounts of
 * work, for SMP mode's load balance (issue 14, benchmark 3).
 *
 *   imbalance [-n ROWS] [-x COLS] [-s STEPS] [-w WARMUP] [-c ROUNDS] [-r RATIO] [-m EVERY]
 *
 *   -n ROWS    total rows of the global grid (default 1024): the total work, the same
 *              at every number of ranks
 *   -x COLS    columns (default 256); a halo is one row, COLS * 8 bytes
 *   -s STEPS   timed steps (default 100); -w untimed warm-up steps (default 10)
 *   -c ROUNDS  integer mixing rounds per cell and step (default 64): the cost of a cell
 *   -r RATIO   work of a rank of the first half / work of a rank of the second half
 *              (default 3)
 *   -m EVERY   under AMPI: AMPI_Migrate(AMPI_INFO_LB_SYNC) after the warm-up and then
 *              every EVERY timed steps (default 10; 0: never), so that a load balancer
 *              (+balancer GreedyLB) can move ranks. Ignored under other MPIs.
 *
 * The global grid, ROWS x COLS cells of uint64_t, periodic in both directions, is cut
 * into blocks of whole rows: rank r gets a share of the rows proportional to its weight,
 * RATIO for r < P/2 and 1 for the others (P = 1: all rows; P = 2: 3/4 and 1/4 at
 * RATIO 3). So the job's total work does not depend on P, and at P = 8 ranks 0-3 carry
 * three times the work of ranks 4-7. Every step:
 *
 *   1. halo exchange with the two neighbouring ranks (ring): MPI_Irecv x2, MPI_Isend x2,
 *      MPI_Waitall (first and last rows, COLS * 8 bytes each);
 *   2. every cell: a 5-point stencil of the old values plus the previous step's global
 *      sum, then ROUNDS rounds of an integer mix (multiply, xor-shift): compute-bound;
 *   3. MPI_Allreduce (MPI_SUM, one MPI_UINT64_T) of the new values: the next step needs
 *      it, so every step ends in a global synchronisation and the slowest rank sets
 *      the pace.
 *
 * All arithmetic is on uint64_t modulo 2^64, so the field, the sums and the checksum are
 * exact and do not depend on the number of ranks, the layout or the MPI: every run of
 * the same -n -x -s -w -c must print the same checksum (-r and -m only move work).
 * The time is that of the timed steps, from a barrier before them to a barrier after
 * them (overlap.h). Rank 0 prints
 *
 *   RESULT app=imbalance ranks=P grid=ROWSxCOLS steps=S rounds=C ratio=R rows=HEAVY/LIGHT
 *          migrate=M time=T checksum=X:Y
 *
 * (one line) where HEAVY and LIGHT are the rows of rank 0 and of rank P-1.
 */
#include "overlap.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wstringop-overflow" /* MPICH's MPI_Waitall prototype, see pingpong.c */
#endif

#define UP 0   /* tag of a row sent to the rank above (r - 1) */
#define DOWN 1 /* tag of a row sent to the rank below (r + 1) */

static inline uint64_t rotl(uint64_t v, int k)
{
    return (v << k) | (v >> (64 - k));
}

/* First row of rank r: rows are split in proportion to the weights. */
static long first_row(long rows, int size, int r, long ratio)
{
    long half = size / 2, w_before, w_total;
    w_before = (r < half ? r : half) * ratio + (r < half ? 0 : r - half);
    w_total = half * ratio + (size - half);
    return (long) ((__int128) rows * w_before / w_total);
}

/* One step of the rows [1, n] of u (rows 0 and n + 1 are the halos) into un; returns
 * the sum of the new values (modulo 2^64). */
static uint64_t step(const uint64_t *u, uint64_t *un, long n, int cols, int rounds, uint64_t gsum)
{
    uint64_t sum = 0;
    long i;
    int j, k;
    for (i = 1; i <= n; i++) {
        const uint64_t *up = u + (i - 1) * cols, *mid = u + i * cols, *dn = u + (i + 1) * cols;
        uint64_t *out = un + i * cols;
        for (j = 0; j < cols; j++) {
            int jl = j ? j - 1 : cols - 1, jr = j + 1 < cols ? j + 1 : 0;
            uint64_t v = mid[j] + rotl(up[j], 7) + rotl(dn[j], 19) + (mid[jl] ^ rotl(mid[jr], 31)) + gsum;
            for (k = 0; k < rounds; k++) {
                v ^= v >> 29;
                v *= 0xbf58476d1ce4e5b9ULL;
            }
            out[j] = v;
            sum += v;
        }
    }
    return sum;
}

int main(int argc, char **argv)
{
    int rank, size, a, cols = 256, rounds = 64, migrate = 10, above, below, migrations = 0;
    long rows = 1024, steps = 100, warm = 10, ratio = 3, lo, n, s, i, j, heavy, light;
    uint64_t *u, *un, *t, gsum = 0, lsum, sums[2] = {0, 0}, tot[2];
    double t0 = 0, time;
    MPI_Request rq[4];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (a = 1; a < argc; a++) {
        const char *o = argv[a], *v = a + 1 < argc ? argv[a + 1] : NULL;
        if (!v)
            die(rank, "imbalance: an option lacks its value");
        if (!strcmp(o, "-n"))
            rows = atol(v);
        else if (!strcmp(o, "-x"))
            cols = atoi(v);
        else if (!strcmp(o, "-s"))
            steps = atol(v);
        else if (!strcmp(o, "-w"))
            warm = atol(v);
        else if (!strcmp(o, "-c"))
            rounds = atoi(v);
        else if (!strcmp(o, "-r"))
            ratio = atol(v);
        else if (!strcmp(o, "-m"))
            migrate = atoi(v);
        else
            die(rank, "imbalance: unknown option (see the comment at the top of imbalance.c)");
        a++;
    }
    if (rows < 1 || cols < 1 || steps < 1 || warm < 0 || rounds < 0 || ratio < 1 || migrate < 0)
        die(rank, "imbalance: bad -n, -x, -s, -w, -c, -r or -m");
    lo = first_row(rows, size, rank, ratio);
    n = first_row(rows, size, rank + 1, ratio) - lo;
    heavy = first_row(rows, size, 1, ratio);
    light = rows - first_row(rows, size, size - 1, ratio);
    MPI_Allreduce(&n, &i, 1, MPI_LONG, MPI_MIN, MPI_COMM_WORLD);
    if (i < 1)
        die(rank, "imbalance: a rank would get no row (-n too small for this many ranks)");
    above = (rank + size - 1) % size;
    below = (rank + 1) % size;

    /* rows 0 and n + 1: halos */
    u = xmalloc((size_t) (n + 2) * cols * sizeof *u);
    un = xmalloc((size_t) (n + 2) * cols * sizeof *un);
    for (i = 0; i < n; i++)
        for (j = 0; j < cols; j++) {
            uint64_t g = (uint64_t) (lo + i) * (uint64_t) cols + (uint64_t) j + 1;
            g *= 0x9e3779b97f4a7c15ULL;
            u[(i + 1) * cols + j] = g ^ (g >> 31);
        }

    for (s = 0; s < warm + steps; s++) {
        if (s == warm) {
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
        }
        MPI_Irecv(u, cols, MPI_UINT64_T, above, DOWN, MPI_COMM_WORLD, &rq[0]);
        MPI_Irecv(u + (n + 1) * cols, cols, MPI_UINT64_T, below, UP, MPI_COMM_WORLD, &rq[1]);
        MPI_Isend(u + cols, cols, MPI_UINT64_T, above, UP, MPI_COMM_WORLD, &rq[2]);
        MPI_Isend(u + n * cols, cols, MPI_UINT64_T, below, DOWN, MPI_COMM_WORLD, &rq[3]);
        MPI_Waitall(4, rq, MPI_STATUSES_IGNORE);
        lsum = step(u, un, n, cols, rounds, gsum);
        MPI_Allreduce(&lsum, &gsum, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
        t = u, u = un, un = t;
#ifdef AMPI
        /* no send pending here (MPI_Waitall above), as AMPI_Migrate requires */
        if (migrate && s + 1 >= warm && (s + 1 - warm) % migrate == 0 && s + 1 < warm + steps) {
            AMPI_Migrate(AMPI_INFO_LB_SYNC);
            migrations++;
        }
#endif
    }
    time = elapsed_since(t0);

    /* Checksum: the cells weighted by their global position, and the last global sum. */
    for (i = 0; i < n; i++)
        for (j = 0; j < cols; j++)
            sums[0] += u[(i + 1) * cols + j] * ((uint64_t) (lo + i) * (uint64_t) cols + (uint64_t) j + 1);
    MPI_Reduce(sums, tot, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    tot[1] = gsum;
    if (rank == 0) {
        printf("RESULT app=imbalance ranks=%d grid=%ldx%d steps=%ld rounds=%d ratio=%ld rows=%ld/%ld migrate=%d "
               "time=%.6f checksum=%016llx:%016llx\n",
               size, rows, cols, steps, rounds, ratio, heavy, light, migrations, time, (unsigned long long) tot[0],
               (unsigned long long) tot[1]);
        fflush(stdout); /* before MPI_Finalize: see FINALIZE_GRACE in run-overlap.py */
    }
    free(u);
    free(un);
    MPI_Finalize();
    return 0;
}
