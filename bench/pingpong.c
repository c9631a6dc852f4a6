/*
 * pingpong: point-to-point latency, bandwidth and message rate between ranks 0 and 1.
 *
 * Built with any MPI (mpicc, wrappers/toucancc); needs at least 2 ranks. Ranks other than
 * 0 and 1 do nothing but wait in a final MPI_Barrier.
 *
 *   lat  SIZE US      ping-pong (MPI_Send / MPI_Recv) between ranks 0 and 1; half the mean
 *                     round-trip time in microseconds. Sizes 0 B .. 4 MiB.
 *   bw   SIZE MBS     rank 1 pre-posts WINDOW MPI_Irecv's, rank 0 sends WINDOW MPI_Isend's of
 *                     SIZE bytes and waits for them, rank 1 answers with a zero-byte ack once
 *                     all have arrived. MB/s with 1 MB = 10^6 bytes, counted from rank 0's
 *                     first send of the timed windows to its receipt of the last ack.
 *   rate SIZE MSGS    the same window exchange with 8-byte messages, in messages per second.
 *
 * The receives of a window go to WINDOW distinct buffers (overlapping receive buffers are
 * erroneous in MPI); the sends of a window share one buffer. Rank 1 posts the receives of
 * the next window before it acks the current one, so the receives are always pre-posted.
 * Each measurement starts with warm-up iterations that are not timed; before them, one
 * exchange checks that the payload arrives intact (the program aborts if not).
 *
 * Output (rank 0, stdout): comment lines start with '#'; every other line is
 *   KIND SIZE VALUE
 * e.g. "lat 8 0.512", "bw 1048576 10596.3", "rate 8 1234567.0". The last line,
 * "# end: N measurements", tells a reader that the output is complete.
 *
 * Options:
 *   -q          quick mode: about a tenth of the iterations (whole program in ~1 s)
 *   -f FACTOR   multiply the iteration counts by FACTOR (after -q if both are given)
 *   -t LIST     measurements to run, comma-separated from lat,bw,rate (default all)
 *   -v          also print the iteration counts as comments
 *   -h          this help
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

/* MPICH's mpi.h declares MPI_Waitall's statuses as an array, and GCC (>= 11) then warns that
 * MPI_STATUSES_IGNORE (the pointer constant 1) points to too little memory. False positive. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif

#define WINDOW 64

#define TAG_CHECK 1
#define TAG_LAT 2
#define TAG_WIN 3
#define TAG_ACK 4

#define KiB 1024L
#define MiB (1024L * 1024L)

static const long lat_sizes[] = {0, 1, 8, 64, 512, 4 * KiB, 16 * KiB, 64 * KiB, 256 * KiB, MiB, 4 * MiB};
static const long bw_sizes[] = {4 * KiB, 64 * KiB, MiB, 4 * MiB};
static const long rate_size = 8;

#define NELEMS(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Iteration counts (before the -q/-f factor): about TARGET_BYTES moved per measurement,
 * clamped to [MIN, MAX]. A latency iteration is one round trip, a window iteration is one
 * window of WINDOW messages plus the ack. */
#define LAT_TARGET_BYTES (256.0 * MiB)
#define LAT_MIN 64
#define LAT_MAX 10000
#define BW_TARGET_BYTES (2048.0 * MiB)
#define BW_MIN 8
#define BW_MAX 1000
#define RATE_WINDOWS 2000
/* Floors after scaling, so that quick mode still times something meaningful. */
#define LAT_FLOOR 10
#define WIN_FLOOR 2

struct options {
    double factor;
    int do_lat, do_bw, do_rate;
    int verbose;
};

/* Rank and communicator are passed around explicitly: the program keeps no mutable global
 * state, so it is also correct where ranks share one address space (Toucan subranks). */
struct ctx {
    int rank;
    MPI_Comm comm;
};

static void usage(FILE *f)
{
    fprintf(f, "usage: pingpong [-q] [-f FACTOR] [-t lat,bw,rate] [-v] [-h]\n"
               "  -q         quick mode (about a tenth of the iterations)\n"
               "  -f FACTOR  multiply the iteration counts by FACTOR\n"
               "  -t LIST    measurements to run, from lat,bw,rate (default all)\n"
               "  -v         print the iteration counts as comments\n"
               "Output lines: 'lat SIZE usec', 'bw SIZE MB/s', 'rate SIZE msgs/s'.\n");
}

/* Returns 0 on success, 1 to exit quietly (help), -1 on a usage error. */
static int parse_args(int argc, char **argv, struct options *o)
{
    static const char *const kinds[] = {"lat", "bw", "rate"};
    int run[3];
    int rc = bench_parse_args(argc, argv, kinds, 3, run, &o->factor, &o->verbose);
    o->do_lat = run[0];
    o->do_bw = run[1];
    o->do_rate = run[2];
    return rc;
}

static long clamp(double x, long lo, long hi)
{
    return x < lo ? lo : x > hi ? hi : (long)x;
}

/* Scale a base iteration count by the -q/-f factor, with a floor. */
static long scaled(long base, double factor, long floor)
{
    double n = (double)base * factor + 0.5;
    return n < floor ? floor : (long)n;
}

static long warmup_of(long iters)
{
    long w = iters / 10;
    return w < 2 ? 2 : w;
}

/* ------------------------------------------------------------------ payload check */

static unsigned char pattern(long size, long i)
{
    return (unsigned char)(i * 131 + size * 7 + 11);
}

static void fill(unsigned char *buf, long size)
{
    for (long i = 0; i < size; i++)
        buf[i] = pattern(size, i);
}

static void verify(const struct ctx *c, const unsigned char *buf, long size, const char *what)
{
    for (long i = 0; i < size; i++) {
        if (buf[i] != pattern(size, i)) {
            fprintf(stderr, "pingpong: rank %d: %s of %ld bytes: byte %ld is %u, expected %u\n", c->rank,
                    what, size, i, buf[i], pattern(size, i));
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
    }
}

/* One checked round trip: rank 0 sends the pattern, rank 1 checks it and sends what it
 * received back, rank 0 checks that. sbuf holds the pattern on both ranks afterwards. */
static void check_round_trip(const struct ctx *c, long size, unsigned char *sbuf,
                             unsigned char *rbuf)
{
    int peer = 1 - c->rank;
    fill(sbuf, size);
    memset(rbuf, 0, (size_t)size);
    if (c->rank == 0) {
        MPI_Send(sbuf, (int)size, MPI_BYTE, peer, TAG_CHECK, c->comm);
        MPI_Recv(rbuf, (int)size, MPI_BYTE, peer, TAG_CHECK, c->comm, MPI_STATUS_IGNORE);
        verify(c, rbuf, size, "echoed message");
    } else {
        MPI_Recv(rbuf, (int)size, MPI_BYTE, peer, TAG_CHECK, c->comm, MPI_STATUS_IGNORE);
        verify(c, rbuf, size, "ping-pong message");
        MPI_Send(rbuf, (int)size, MPI_BYTE, peer, TAG_CHECK, c->comm);
    }
}

/* ------------------------------------------------------------------ measurements */

/* Ping-pong: returns half the mean round-trip time in seconds (meaningful on rank 0). */
static double ping_pong(const struct ctx *c, long size, long iters, long warmup,
                        unsigned char *sbuf, unsigned char *rbuf)
{
    int peer = 1 - c->rank, n = (int)size;
    double t0 = 0.0;
    for (long i = 0; i < warmup + iters; i++) {
        if (i == warmup)
            t0 = MPI_Wtime();
        if (c->rank == 0) {
            MPI_Send(sbuf, n, MPI_BYTE, peer, TAG_LAT, c->comm);
            MPI_Recv(rbuf, n, MPI_BYTE, peer, TAG_LAT, c->comm, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(rbuf, n, MPI_BYTE, peer, TAG_LAT, c->comm, MPI_STATUS_IGNORE);
            MPI_Send(sbuf, n, MPI_BYTE, peer, TAG_LAT, c->comm);
        }
    }
    return (MPI_Wtime() - t0) / (2.0 * (double)iters);
}

static void post_window(const struct ctx *c, long size, unsigned char **rbufs, MPI_Request *reqs)
{
    for (int k = 0; k < WINDOW; k++)
        MPI_Irecv(rbufs[k], (int)size, MPI_BYTE, 0, TAG_WIN, c->comm, &reqs[k]);
}

/* Window exchange: returns the mean time of one window (WINDOW messages + ack) in seconds,
 * measured on rank 0. Rank 1 checks the payload of the first window. */
static double window_exchange(const struct ctx *c, long size, long windows, long warmup,
                              unsigned char *sbuf, unsigned char **rbufs)
{
    MPI_Request reqs[WINDOW];
    long total = warmup + windows;
    double t0 = 0.0;

    if (c->rank == 0) {
        fill(sbuf, size);
        for (long w = 0; w < total; w++) {
            if (w == warmup)
                t0 = MPI_Wtime();
            for (int k = 0; k < WINDOW; k++)
                MPI_Isend(sbuf, (int)size, MPI_BYTE, 1, TAG_WIN, c->comm, &reqs[k]);
            MPI_Waitall(WINDOW, reqs, MPI_STATUSES_IGNORE);
            MPI_Recv(NULL, 0, MPI_BYTE, 1, TAG_ACK, c->comm, MPI_STATUS_IGNORE);
        }
        return (MPI_Wtime() - t0) / (double)windows;
    }

    for (int k = 0; k < WINDOW; k++)
        memset(rbufs[k], 0, (size_t)size);
    post_window(c, size, rbufs, reqs);
    for (long w = 0; w < total; w++) {
        MPI_Waitall(WINDOW, reqs, MPI_STATUSES_IGNORE);
        if (w == 0)
            for (int k = 0; k < WINDOW; k++)
                verify(c, rbufs[k], size, "window message");
        if (w + 1 < total)
            post_window(c, size, rbufs, reqs);
        MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_ACK, c->comm);
    }
    return 0.0;
}

/* ------------------------------------------------------------------ driver */

static void *xalloc(const struct ctx *c, size_t size)
{
    return bench_alloc("pingpong", c->rank, size);
}

static void run_latency(const struct ctx *c, const struct options *o, unsigned char *sbuf, unsigned char *rbuf)
{
    for (int i = 0; i < NELEMS(lat_sizes); i++) {
        long size = lat_sizes[i];
        long base = clamp(LAT_TARGET_BYTES / (double)(size ? size : 1), LAT_MIN, LAT_MAX);
        long iters = scaled(base, o->factor, LAT_FLOOR), warmup = warmup_of(iters);
        check_round_trip(c, size, sbuf, rbuf);
        double t = ping_pong(c, size, iters, warmup, sbuf, rbuf);
        if (c->rank == 0) {
            if (o->verbose)
                printf("# lat %ld: %ld iterations + %ld warm-up\n", size, iters, warmup);
            printf("lat %ld %.3f\n", size, t * 1e6);
            fflush(stdout);
        }
    }
}

static void run_bandwidth(const struct ctx *c, const struct options *o, unsigned char *sbuf, unsigned char **rbufs)
{
    for (int i = 0; i < NELEMS(bw_sizes); i++) {
        long size = bw_sizes[i];
        long base = clamp(BW_TARGET_BYTES / ((double)size * WINDOW), BW_MIN, BW_MAX);
        long windows = scaled(base, o->factor, WIN_FLOOR), warmup = warmup_of(windows);
        double t = window_exchange(c, size, windows, warmup, sbuf, rbufs);
        if (c->rank == 0) {
            if (o->verbose)
                printf("# bw %ld: %ld windows + %ld warm-up\n", size, windows, warmup);
            printf("bw %ld %.1f\n", size, (double)size * WINDOW / t / 1e6);
            fflush(stdout);
        }
    }
}

static void run_rate(const struct ctx *c, const struct options *o, unsigned char *sbuf, unsigned char **rbufs)
{
    long windows = scaled(RATE_WINDOWS, o->factor, WIN_FLOOR), warmup = warmup_of(windows);
    double t = window_exchange(c, rate_size, windows, warmup, sbuf, rbufs);
    if (c->rank == 0) {
        if (o->verbose)
            printf("# rate %ld: %ld windows + %ld warm-up\n", rate_size, windows, warmup);
        printf("rate %ld %.1f\n", rate_size, WINDOW / t);
        fflush(stdout);
    }
}

int main(int argc, char **argv)
{
    struct options o;
    struct ctx ctx, *c = &ctx;
    int nranks, rc = parse_args(argc, argv, &o);

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &ctx.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    ctx.comm = MPI_COMM_WORLD;

    if (rc != 0 || nranks < 2) {
        if (c->rank == 0) {
            if (rc > 0)
                usage(stdout);
            else if (rc < 0)
                usage(stderr);
            else
                fprintf(stderr, "pingpong: needs at least 2 ranks (have %d)\n", nranks);
        }
        MPI_Finalize();
        return rc > 0 ? 0 : 2;
    }

    if (c->rank == 0) {
        printf("# pingpong: ranks 0 and 1 of %d, window %d, iteration factor %g\n"
               "# lat SIZE usec (half round trip) | bw SIZE MB/s (1 MB = 1e6 B) | rate SIZE msgs/s\n",
               nranks, WINDOW, o.factor);
        fflush(stdout);
    }

    if (c->rank < 2) {
        long max_size = 0;
        for (int i = 0; i < NELEMS(lat_sizes); i++)
            max_size = lat_sizes[i] > max_size ? lat_sizes[i] : max_size;
        for (int i = 0; i < NELEMS(bw_sizes); i++)
            max_size = bw_sizes[i] > max_size ? bw_sizes[i] : max_size;

        unsigned char *sbuf = xalloc(c, (size_t)max_size);
        unsigned char *rbuf = NULL;
        unsigned char *rbufs[WINDOW] = {0};
        if (o.do_lat)
            rbuf = xalloc(c, (size_t)max_size);
        /* Only the receiver needs the window's distinct buffers (64 x 4 MiB). */
        if ((o.do_bw || o.do_rate) && c->rank == 1)
            for (int k = 0; k < WINDOW; k++)
                rbufs[k] = xalloc(c, (size_t)(o.do_bw ? max_size : rate_size));

        if (o.do_lat)
            run_latency(c, &o, sbuf, rbuf);
        if (o.do_bw)
            run_bandwidth(c, &o, sbuf, rbufs);
        if (o.do_rate)
            run_rate(c, &o, sbuf, rbufs);

        if (c->rank == 0) {
            int n = o.do_lat * NELEMS(lat_sizes) + o.do_bw * NELEMS(bw_sizes) + o.do_rate;
            printf("# end: %d measurements\n", n);
            fflush(stdout);
        }

        for (int k = 0; k < WINDOW; k++)
            free(rbufs[k]);
        free(rbuf);
        free(sbuf);
    }

    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
