/* nbccalls.c: one collective repeated, blocking or nonblocking (MPI_I* + MPI_Wait), for
 * counting its instructions per call with callgrind (bench/nbc-callgrind.sh; issue 16,
 * docs/collectives.md "Session 20 (nbc11)"). IMB's datatypes: bytes for the data movers, floats
 * summed for Allreduce and Reduce; Bcast, Gather and Scatter from root 0, Reduce to it.
 *
 *   nbccalls KIND BYTES ITERS [LATE [US]]
 *
 * KIND: barrier bcast allgather gather scatter alltoall allreduce reduce_scatter_block (session
 * 27: also scan, and gatherv scatterv allgatherv reduce_scatter with IMB's equal counts; session
 * 30: reduce), or the same with an `i` in front (ibarrier, ibcast, ...) for the nonblocking call
 * and its MPI_Wait. BYTES: per block for allgather, gather, scatter and alltoall, the whole
 * vector for allreduce, reduce and scan, each rank's block for reduce_scatter_block (floats, summed). With NBCCALLS_BARRIER set in the
 * environment every call is followed by an MPI_Barrier (IMB's loop). Each rank checks what it
 * received; rank 0 prints "nbccalls KIND BYTES ITERS bad N" (N = 0 when every value was
 * right). Under valgrind, callgrind's counts are zeroed after WARMUP calls and a barrier. With
 * LATE, rank LATE sleeps US microseconds (default 2000) before each counted call.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#endif
#endif
#ifndef CALLGRIND_ZERO_STATS
#define CALLGRIND_ZERO_STATS
#endif

#define WARMUP 50

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 4 || argc > 6) {
        if (rank == 0)
            fprintf(stderr, "usage: nbccalls KIND BYTES ITERS [LATE [US]]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *k = argv[1];
    int nb = k[0] == 'i';
    if (nb)
        k++;
    long bytes = atol(argv[2]), iters = atol(argv[3]);
    int late = argc > 4 ? atoi(argv[4]) : -1;
    useconds_t pause = argc > 5 ? (useconds_t)atol(argv[5]) : 2000;
    int sync = getenv("NBCCALLS_BARRIER") != NULL;
    int nf = (int)(bytes / (long)sizeof(float));
    if (nf < 1)
        nf = 1;
    size_t cap = (size_t)(bytes + 64) * (size_t)size;
    unsigned char *s = malloc(cap), *r = malloc(cap);
    float *fs = malloc(cap), *fr = malloc(cap);
    long bad = 0;
    /* The v-forms' counts and displacements (bytes; floats for reduce_scatter), as IMB's. */
    int *cs = malloc(sizeof(int) * (size_t)size), *ds = malloc(sizeof(int) * (size_t)size);
    int *cf = malloc(sizeof(int) * (size_t)size);
    for (int p = 0; p < size; p++) {
        cs[p] = (int)bytes;
        ds[p] = p * (int)bytes;
        cf[p] = nf;
    }
    /* A v-form is checked as its equal-block form. */
    char base[64];
    snprintf(base, sizeof base, "%s", k);
    size_t kl = strlen(base);
    if (kl > 1 && base[kl - 1] == 'v')
        base[kl - 1] = 0;
    if (strcmp(base, "reduce_scatter") == 0)
        snprintf(base, sizeof base, "reduce_scatter_block");
    MPI_Comm comm;
    /* IMB runs on a split of the world. */
    MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &comm);
    for (long i = -WARMUP; i < iters; i++) {
        MPI_Request q = MPI_REQUEST_NULL;
        if (i == 0) {
            MPI_Barrier(MPI_COMM_WORLD);
            CALLGRIND_ZERO_STATS;
        }
        if (i >= 0 && rank == late)
            usleep(pause);
        unsigned char v = (unsigned char)(i * 7 + 1);
        if (strcmp(k, "barrier") == 0) {
            if (nb)
                MPI_Ibarrier(comm, &q);
            else
                MPI_Barrier(comm);
        } else if (strcmp(k, "bcast") == 0) {
            if (rank == 0)
                memset(s, v, (size_t)bytes);
            if (nb)
                MPI_Ibcast(s, (int)bytes, MPI_BYTE, 0, comm, &q);
            else
                MPI_Bcast(s, (int)bytes, MPI_BYTE, 0, comm);
        } else if (strcmp(k, "allgather") == 0) {
            memset(s, v + rank, (size_t)bytes);
            if (nb)
                MPI_Iallgather(s, (int)bytes, MPI_BYTE, r, (int)bytes, MPI_BYTE, comm, &q);
            else
                MPI_Allgather(s, (int)bytes, MPI_BYTE, r, (int)bytes, MPI_BYTE, comm);
        } else if (strcmp(k, "gather") == 0) {
            memset(s, v + rank, (size_t)bytes);
            if (nb)
                MPI_Igather(s, (int)bytes, MPI_BYTE, r, (int)bytes, MPI_BYTE, 0, comm, &q);
            else
                MPI_Gather(s, (int)bytes, MPI_BYTE, r, (int)bytes, MPI_BYTE, 0, comm);
        } else if (strcmp(k, "scatter") == 0) {
            if (rank == 0)
                for (int p = 0; p < size; p++)
                    memset(s + p * bytes, v + p, (size_t)bytes);
            if (nb)
                MPI_Iscatter(s, (int)bytes, MPI_BYTE, r, (int)bytes, MPI_BYTE, 0, comm, &q);
            else
                MPI_Scatter(s, (int)bytes, MPI_BYTE, r, (int)bytes, MPI_BYTE, 0, comm);
        } else if (strcmp(k, "alltoall") == 0) {
            for (int p = 0; p < size; p++)
                memset(s + p * bytes, v + rank * size + p, (size_t)bytes);
            if (nb)
                MPI_Ialltoall(s, (int)bytes, MPI_BYTE, r, (int)bytes, MPI_BYTE, comm, &q);
            else
                MPI_Alltoall(s, (int)bytes, MPI_BYTE, r, (int)bytes, MPI_BYTE, comm);
        } else if (strcmp(k, "allreduce") == 0) {
            for (int j = 0; j < nf; j++)
                fs[j] = (float)(rank + j % 5 + (int)v);
            if (nb)
                MPI_Iallreduce(fs, fr, nf, MPI_FLOAT, MPI_SUM, comm, &q);
            else
                MPI_Allreduce(fs, fr, nf, MPI_FLOAT, MPI_SUM, comm);
        } else if (strcmp(k, "reduce") == 0) {
            for (int j = 0; j < nf; j++)
                fs[j] = (float)(rank + j % 5 + (int)v);
            if (nb)
                MPI_Ireduce(fs, fr, nf, MPI_FLOAT, MPI_SUM, 0, comm, &q);
            else
                MPI_Reduce(fs, fr, nf, MPI_FLOAT, MPI_SUM, 0, comm);
        } else if (strcmp(k, "reduce_scatter_block") == 0) {
            for (int j = 0; j < nf * size; j++)
                fs[j] = (float)(rank + j % 5 + (int)v);
            if (nb)
                MPI_Ireduce_scatter_block(fs, fr, nf, MPI_FLOAT, MPI_SUM, comm, &q);
            else
                MPI_Reduce_scatter_block(fs, fr, nf, MPI_FLOAT, MPI_SUM, comm);
        } else if (strcmp(k, "scan") == 0) {
            for (int j = 0; j < nf; j++)
                fs[j] = (float)(rank + j % 5 + (int)v);
            if (nb)
                MPI_Iscan(fs, fr, nf, MPI_FLOAT, MPI_SUM, comm, &q);
            else
                MPI_Scan(fs, fr, nf, MPI_FLOAT, MPI_SUM, comm);
        } else if (strcmp(k, "gatherv") == 0) {
            memset(s, v + rank, (size_t)bytes);
            if (nb)
                MPI_Igatherv(s, (int)bytes, MPI_BYTE, r, cs, ds, MPI_BYTE, 0, comm, &q);
            else
                MPI_Gatherv(s, (int)bytes, MPI_BYTE, r, cs, ds, MPI_BYTE, 0, comm);
        } else if (strcmp(k, "scatterv") == 0) {
            if (rank == 0)
                for (int p = 0; p < size; p++)
                    memset(s + p * bytes, v + p, (size_t)bytes);
            if (nb)
                MPI_Iscatterv(s, cs, ds, MPI_BYTE, r, (int)bytes, MPI_BYTE, 0, comm, &q);
            else
                MPI_Scatterv(s, cs, ds, MPI_BYTE, r, (int)bytes, MPI_BYTE, 0, comm);
        } else if (strcmp(k, "allgatherv") == 0) {
            memset(s, v + rank, (size_t)bytes);
            if (nb)
                MPI_Iallgatherv(s, (int)bytes, MPI_BYTE, r, cs, ds, MPI_BYTE, comm, &q);
            else
                MPI_Allgatherv(s, (int)bytes, MPI_BYTE, r, cs, ds, MPI_BYTE, comm);
        } else if (strcmp(k, "reduce_scatter") == 0) {
            for (int j = 0; j < nf * size; j++)
                fs[j] = (float)(rank + j % 5 + (int)v);
            if (nb)
                MPI_Ireduce_scatter(fs, fr, cf, MPI_FLOAT, MPI_SUM, comm, &q);
            else
                MPI_Reduce_scatter(fs, fr, cf, MPI_FLOAT, MPI_SUM, comm);
        } else {
            if (rank == 0)
                fprintf(stderr, "nbccalls: unknown kind %s\n", argv[1]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        if (nb)
            MPI_Wait(&q, MPI_STATUS_IGNORE);
        if (strcmp(base, "bcast") == 0) {
            bad += bytes > 0 && s[bytes - 1] != v;
        } else if (strcmp(base, "allgather") == 0) {
            for (int p = 0; p < size; p++)
                bad += bytes > 0 && r[(p + 1) * bytes - 1] != (unsigned char)(v + p);
        } else if (strcmp(base, "gather") == 0) {
            for (int p = 0; rank == 0 && p < size; p++)
                bad += bytes > 0 && r[(p + 1) * bytes - 1] != (unsigned char)(v + p);
        } else if (strcmp(base, "scatter") == 0) {
            bad += bytes > 0 && r[bytes - 1] != (unsigned char)(v + rank);
        } else if (strcmp(base, "alltoall") == 0) {
            for (int p = 0; p < size; p++)
                bad += bytes > 0 && r[(p + 1) * bytes - 1] != (unsigned char)(v + p * size + rank);
        } else if (strcmp(base, "allreduce") == 0) {
            float want = (float)(size * ((nf - 1) % 5 + (int)v) + size * (size - 1) / 2);
            bad += fr[nf - 1] != want;
        } else if (strcmp(base, "reduce") == 0 && rank == 0) {
            float want = (float)(size * ((nf - 1) % 5 + (int)v) + size * (size - 1) / 2);
            bad += fr[nf - 1] != want;
        } else if (strcmp(base, "reduce_scatter_block") == 0) {
            float want = (float)(size * ((rank * nf + nf - 1) % 5 + (int)v) + size * (size - 1) / 2);
            bad += fr[nf - 1] != want;
        } else if (strcmp(base, "scan") == 0) {
            float want = (float)((rank + 1) * ((nf - 1) % 5 + (int)v) + rank * (rank + 1) / 2);
            bad += fr[nf - 1] != want;
        }
        if (sync)
            MPI_Barrier(comm);
    }
    long all = 0;
    MPI_Reduce(&bad, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("nbccalls %s %ld %ld bad %ld\n", argv[1], bytes, iters, all);
    MPI_Comm_free(&comm);
    free(s);
    free(r);
    free(fs);
    free(fr);
    free(cs);
    free(ds);
    free(cf);
    MPI_Finalize();
    return 0;
}
