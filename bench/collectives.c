/*
 * collectives: time per call of MPI_Barrier, MPI_Bcast, MPI_Allreduce and MPI_Alltoall on
 * MPI_COMM_WORLD.
 *
 * Built with any MPI (mpicc, wrappers/toucancc); runs at any number of ranks (1 included).
 *
 *   barrier   0    US   MPI_Barrier
 *   bcast     SIZE US   MPI_Bcast of SIZE bytes (MPI_BYTE) from rank 0
 *   allreduce SIZE US   MPI_Allreduce, MPI_SUM of SIZE/8 MPI_DOUBLEs
 *   alltoall  SIZE US   MPI_Alltoall, SIZE bytes (MPI_BYTE) from every rank to every rank
 *
 * SIZE is 8 B, 4 KiB and 1 MiB. US is the time of one call in microseconds: every rank times
 * its own calls (from a barrier before the first timed call to the return of the last one),
 * divides by the number of calls, and the line gives the maximum of that average over the
 * ranks.
 *
 * Iteration counts: each measurement has a time budget (BUDGET_S, scaled by -q/-f). Warm-up
 * rounds of 1, 2, 4, ... calls run until they have taken a tenth of the budget (and at least
 * WARMUP_MIN calls). Then timed rounds run until the timed calls have taken the budget on the
 * slowest rank (and at least ITERS_MIN calls, at most ITERS_MAX); the length of each round is
 * estimated from the time per call so far (and at most the number of calls before it), so one
 * call slowed down by accident (a preempted process) does not leave a measurement of a handful
 * of calls, nor one fast call a round that runs for minutes. All ranks agree on the counts
 * (they come from MPI_Allreduce's of the times, outside the timed calls), so a whole run
 * takes about 11 budgets whatever the speed of the MPI, oversubscribed or not.
 *
 * Correctness: before a measurement, one call is checked in full (every byte or element of
 * the result); during the warm-up and timed calls, the inputs carry the call's number and
 * every rank checks that number in its result after each call (one to NRANKS compares), and
 * the result of the last call is checked in full again. The barrier is checked once: rank 0
 * polls with MPI_Iprobe for a while before it enters the barrier, and the others send it a
 * message as soon as they leave it; a message that arrives before rank 0 entered means a
 * barrier that does not synchronise. Any wrong result aborts the program (MPI_Abort), so a
 * broken runtime cannot look fast.
 *
 * Output (rank 0, stdout): comment lines start with '#'; every other line is
 *   KIND SIZE VALUE
 * e.g. "allreduce 8 1.234". The last line, "# end: N measurements", tells a reader that the
 * output is complete.
 *
 * Options:
 *   -q          quick mode: a tenth of the time budget (whole program well under a second
 *               when the MPI is fast)
 *   -f FACTOR   multiply the time budget by FACTOR (after -q if both are given)
 *   -t LIST     collectives to run, comma-separated from barrier,bcast,allreduce,alltoall
 *               (default all)
 *   -v          also print the iteration counts as comments
 *   -h          this help
 */
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define KiB 1024L
#define MiB (1024L * 1024L)

static const long sizes[] = {8, 4 * KiB, MiB};
#define NSIZES ((int)(sizeof(sizes) / sizeof(sizes[0])))
#define MAX_SIZE MiB

/* Time budget of one measurement (before the -q/-f factor), seconds. */
#define BUDGET_S 0.25
#define WARMUP_MIN 2
#define ITERS_MIN 5
#define ITERS_MAX 200000
/* How long rank 0 polls before it enters the checked barrier, seconds. */
#define BARRIER_CHECK_S 0.02

#define TAG_BARRIER_CHECK 7

enum op { OP_BARRIER, OP_BCAST, OP_ALLREDUCE, OP_ALLTOALL, NOPS };
static const char *const op_names[NOPS] = {"barrier", "bcast", "allreduce", "alltoall"};

struct options {
    double factor;
    int run[NOPS];
    int verbose;
};

/* Rank, size and buffers are passed around explicitly: the program keeps no mutable global
 * state, so it is also correct where ranks share one address space (Toucan subranks). */
struct ctx {
    int rank, nranks;
    MPI_Comm comm;
    unsigned char *sbuf, *rbuf; /* nranks * MAX_SIZE bytes each (alltoall) */
};

static void usage(FILE *f)
{
    fprintf(f, "usage: collectives [-q] [-f FACTOR] [-t barrier,bcast,allreduce,alltoall] [-v] [-h]\n"
               "  -q         quick mode (a tenth of the time budget)\n"
               "  -f FACTOR  multiply the time budget by FACTOR\n"
               "  -t LIST    collectives to run (default all)\n"
               "  -v         print the iteration counts as comments\n"
               "Output lines: 'KIND SIZE usec' (time per call, max over ranks of the per-rank mean).\n");
}

/* Report a wrong result and abort. */
__attribute__((format(printf, 4, 5))) static void fail(const struct ctx *c, const char *op, long size,
                                                      const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "collectives: rank %d: %s of %ld bytes: ", c->rank, op, size);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
}

/* ------------------------------------------------------------------ payloads
 *
 * Every message starts with an 8-byte stamp that changes with each call; the rest is a fixed
 * pattern. The per-call check compares only the stamp; the full check every byte. */

static unsigned char pattern(long i)
{
    return (unsigned char)(i * 131 + 11);
}

static void put_stamp(unsigned char *p, int64_t v)
{
    memcpy(p, &v, sizeof v);
}

static int64_t get_stamp(const unsigned char *p)
{
    int64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static void fill_block(unsigned char *p, long size, int64_t stamp)
{
    put_stamp(p, stamp);
    for (long i = 8; i < size; i++)
        p[i] = pattern(i);
}

static void verify_block(const struct ctx *c, const char *op, const unsigned char *p, long size, int64_t stamp)
{
    if (get_stamp(p) != stamp)
        fail(c, op, size, "stamp is %ld, expected %ld", (long)get_stamp(p), (long)stamp);
    for (long i = 8; i < size; i++)
        if (p[i] != pattern(i))
            fail(c, op, size, "byte %ld is %u, expected %u", i, p[i], pattern(i));
}

/* Bcast: the stamp is the call's number. */
static void bcast_prepare(const struct ctx *c, long size, long call, int full)
{
    if (c->rank == 0) {
        if (full)
            fill_block(c->sbuf, size, call);
        else
            put_stamp(c->sbuf, call);
    } else if (full) {
        memset(c->sbuf, 0, (size_t)size);
    }
}

static void bcast_check(const struct ctx *c, long size, long call, int full)
{
    if (full)
        verify_block(c, "bcast", c->sbuf, size, call);
    else if (get_stamp(c->sbuf) != call)
        fail(c, "bcast", size, "call %ld: stamp is %ld", call, (long)get_stamp(c->sbuf));
}

/* Allreduce: element k of rank r is (r + 1) * (k % 13 + 1), except element 0, which is
 * r + call. All values and sums are small integers, exact in double. */
static void allreduce_prepare(const struct ctx *c, long size, long call, int full)
{
    double *s = (double *)c->sbuf;
    long n = size / (long)sizeof(double);
    if (full) {
        for (long k = 1; k < n; k++)
            s[k] = (double)(c->rank + 1) * (double)(k % 13 + 1);
        memset(c->rbuf, 0, (size_t)size);
    }
    s[0] = (double)(c->rank + call);
}

static void allreduce_check(const struct ctx *c, long size, long call, int full)
{
    const double *r = (const double *)c->rbuf;
    long n = size / (long)sizeof(double), p = c->nranks;
    double want0 = (double)(p * (p - 1) / 2 + p * call);
    if (r[0] != want0)
        fail(c, "allreduce", size, "call %ld: element 0 is %g, expected %g", call, r[0], want0);
    if (!full)
        return;
    for (long k = 1; k < n; k++) {
        double want = (double)(p * (p + 1) / 2) * (double)(k % 13 + 1);
        if (r[k] != want)
            fail(c, "allreduce", size, "element %ld is %g, expected %g", k, r[k], want);
    }
}

/* Alltoall: the block from rank s to rank d in call i has the stamp (i * P + s) * P + d. */
static int64_t a2a_stamp(const struct ctx *c, long call, int from, int to)
{
    return ((int64_t)call * c->nranks + from) * c->nranks + to;
}

static void alltoall_prepare(const struct ctx *c, long size, long call, int full)
{
    for (int d = 0; d < c->nranks; d++) {
        unsigned char *blk = c->sbuf + (size_t)d * (size_t)size;
        if (full)
            fill_block(blk, size, a2a_stamp(c, call, c->rank, d));
        else
            put_stamp(blk, a2a_stamp(c, call, c->rank, d));
    }
    if (full)
        memset(c->rbuf, 0, (size_t)c->nranks * (size_t)size);
}

static void alltoall_check(const struct ctx *c, long size, long call, int full)
{
    for (int s = 0; s < c->nranks; s++) {
        const unsigned char *blk = c->rbuf + (size_t)s * (size_t)size;
        int64_t want = a2a_stamp(c, call, s, c->rank);
        if (full)
            verify_block(c, "alltoall", blk, size, want);
        else if (get_stamp(blk) != want)
            fail(c, "alltoall", size, "call %ld: block from rank %d has stamp %ld, expected %ld", call, s,
                 (long)get_stamp(blk), (long)want);
    }
}

/* ------------------------------------------------------------------ the calls */

static void call_op(const struct ctx *c, enum op op, long size)
{
    switch (op) {
    case OP_BARRIER:
        MPI_Barrier(c->comm);
        break;
    case OP_BCAST:
        MPI_Bcast(c->sbuf, (int)size, MPI_BYTE, 0, c->comm);
        break;
    case OP_ALLREDUCE:
        MPI_Allreduce(c->sbuf, c->rbuf, (int)(size / (long)sizeof(double)), MPI_DOUBLE, MPI_SUM, c->comm);
        break;
    case OP_ALLTOALL:
        MPI_Alltoall(c->sbuf, (int)size, MPI_BYTE, c->rbuf, (int)size, MPI_BYTE, c->comm);
        break;
    case NOPS:
        break;
    }
}

/* Per collective: how to set up the inputs of call number `call`, and how to check its
 * result (full: every byte or element; else only the call's stamp). The barrier has neither. */
typedef void (*hook)(const struct ctx *c, long size, long call, int full);
static const struct {
    hook prepare, check;
} hooks[NOPS] = {
    [OP_BARRIER] = {NULL, NULL},
    [OP_BCAST] = {bcast_prepare, bcast_check},
    [OP_ALLREDUCE] = {allreduce_prepare, allreduce_check},
    [OP_ALLTOALL] = {alltoall_prepare, alltoall_check},
};

static void prepare(const struct ctx *c, enum op op, long size, long call, int full)
{
    if (hooks[op].prepare)
        hooks[op].prepare(c, size, call, full);
}

static void check(const struct ctx *c, enum op op, long size, long call, int full)
{
    if (hooks[op].check)
        hooks[op].check(c, size, call, full);
}

/* Calls number first .. first+count-1, each prepared and checked (stamp only); returns the
 * seconds they took on this rank, from a barrier before them. */
static double timed_calls(const struct ctx *c, enum op op, long size, long first, long count)
{
    MPI_Barrier(c->comm);
    double t0 = MPI_Wtime();
    for (long i = first; i < first + count; i++) {
        prepare(c, op, size, i, 0);
        call_op(c, op, size);
        check(c, op, size, i, 0);
    }
    return MPI_Wtime() - t0;
}

static double max_over_ranks(const struct ctx *c, double x)
{
    double m;
    MPI_Allreduce(&x, &m, 1, MPI_DOUBLE, MPI_MAX, c->comm);
    return m;
}

/* A barrier that lets a rank through before rank 0 has entered it is caught here (see the
 * comment at the top). A correct barrier can never fail this check; a broken one almost
 * always does. */
static void check_barrier(const struct ctx *c)
{
    if (c->rank == 0) {
        double t0 = MPI_Wtime();
        int early = 0;
        while (!early && MPI_Wtime() - t0 < BARRIER_CHECK_S)
            MPI_Iprobe(MPI_ANY_SOURCE, TAG_BARRIER_CHECK, c->comm, &early, MPI_STATUS_IGNORE);
        if (early)
            fail(c, "barrier", 0, "a rank left the barrier before rank 0 entered it");
        MPI_Barrier(c->comm);
        for (int r = 1; r < c->nranks; r++)
            MPI_Recv(NULL, 0, MPI_BYTE, MPI_ANY_SOURCE, TAG_BARRIER_CHECK, c->comm, MPI_STATUS_IGNORE);
    } else {
        MPI_Barrier(c->comm);
        MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_BARRIER_CHECK, c->comm);
    }
}

/* One measurement; returns the time per call in seconds (max over ranks of the mean). */
static double measure(const struct ctx *c, const struct options *o, enum op op, long size)
{
    double budget = BUDGET_S * o->factor;
    long call = 0;

    /* One fully checked call. */
    if (op == OP_BARRIER) {
        check_barrier(c);
    } else {
        prepare(c, op, size, call, 1);
        call_op(c, op, size);
        check(c, op, size, call, 1);
    }
    call++;

    /* Warm-up rounds of 1, 2, 4, ... calls, until a tenth of the budget has passed. */
    long warm = 0, round = 1;
    double warm_s = 0.0, round_s = 0.0;
    while (warm < WARMUP_MIN || warm_s < budget / 10) {
        round_s = max_over_ranks(c, timed_calls(c, op, size, call, round));
        warm_s += round_s;
        call += round;
        warm += round;
        round *= 2;
    }

    /* Timed rounds until the budget has passed (on the slowest rank) and at least ITERS_MIN
     * calls were made. Each round's length is estimated from the time per call so far, so a
     * call that was slow by accident (the process was preempted) costs one more round, not a
     * measurement of a handful of calls; and a round makes at most as many calls as all
     * before it, so a call that is fast at first and slow later (the sends of a bcast root
     * run ahead until flow control stops them) does not make a round run for minutes. */
    double per_call = round_s / (double)(round / 2), mine = 0.0, elapsed = 0.0;
    long iters = 0;
    for (;;) {
        double want = (budget - elapsed) / (per_call > 0 ? per_call : 1e-9);
        long n = want < 1 ? 1 : want > ITERS_MAX ? ITERS_MAX : (long)want;
        if (n > warm + iters)
            n = warm + iters; /* at most double the calls made so far: the estimate may be off */
        if (n < ITERS_MIN - iters)
            n = ITERS_MIN - iters;
        if (n > ITERS_MAX - iters)
            n = ITERS_MAX - iters;
        mine += timed_calls(c, op, size, call, n);
        call += n;
        iters += n;
        elapsed = max_over_ranks(c, mine);
        per_call = elapsed / (double)iters;
        if ((elapsed >= budget && iters >= ITERS_MIN) || iters >= ITERS_MAX)
            break;
    }
    double t = max_over_ranks(c, mine / (double)iters);

    /* The last result in full. */
    if (op != OP_BARRIER)
        check(c, op, size, call - 1, 1);
    if (o->verbose && c->rank == 0)
        printf("# %s %ld: %ld calls + %ld warm-up\n", op_names[op], op == OP_BARRIER ? 0 : size, iters, warm);
    return t;
}

/* ------------------------------------------------------------------ driver */

int main(int argc, char **argv)
{
    struct options o;
    struct ctx ctx, *c = &ctx;
    int rc = bench_parse_args(argc, argv, op_names, NOPS, o.run, &o.factor, &o.verbose);

    MPI_Init(&argc, &argv);
    ctx.comm = MPI_COMM_WORLD;
    MPI_Comm_rank(ctx.comm, &ctx.rank);
    MPI_Comm_size(ctx.comm, &ctx.nranks);

    if (rc != 0) {
        if (c->rank == 0)
            usage(rc > 0 ? stdout : stderr);
        MPI_Finalize();
        return rc > 0 ? 0 : 2;
    }

    size_t bytes = (size_t)ctx.nranks * (size_t)MAX_SIZE;
    ctx.sbuf = bench_alloc("collectives", c->rank, bytes);
    ctx.rbuf = bench_alloc("collectives", c->rank, bytes);

    if (c->rank == 0) {
        printf("# collectives: %d ranks, MPI_COMM_WORLD, time budget %g s per measurement\n"
               "# KIND SIZE usec per call (max over ranks of the per-rank mean); SIZE: bytes per rank"
               " (alltoall: per pair)\n",
               ctx.nranks, BUDGET_S * o.factor);
        fflush(stdout);
    }

    int n = 0;
    for (int k = 0; k < NOPS; k++) {
        if (!o.run[k])
            continue;
        for (int i = 0; i < (k == OP_BARRIER ? 1 : NSIZES); i++) {
            long size = k == OP_BARRIER ? 0 : sizes[i];
            double t = measure(c, &o, (enum op)k, size);
            if (c->rank == 0) {
                printf("%s %ld %.3f\n", op_names[k], size, t * 1e6);
                fflush(stdout);
            }
            n++;
        }
    }
    if (c->rank == 0) {
        printf("# end: %d measurements\n", n);
        fflush(stdout);
    }

    free(ctx.rbuf);
    free(ctx.sbuf);
    MPI_Finalize();
    return 0;
}
