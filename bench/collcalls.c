/* collcalls.c: one blocking collective repeated, for counting its instructions per call with
 * callgrind at -np 2 (bench/coll-callgrind.sh; issue 16, docs/collectives.md "Session 19
 * (coll11)"). The datatypes are IMB-MPI1's: bytes for the data movers, floats summed for the
 * reductions; rooted calls keep root 0, as IMB-MPI1 does at two ranks.
 *
 *   collcalls KIND BYTES ITERS [LATE [US]]
 *
 * KIND: barrier bcast scatter gather allgather alltoall allreduce reduce reduce_scatter
 * sendrecv. BYTES: the message size as IMB counts it (per block for gather, scatter,
 * allgather and alltoall; the whole vector for the reductions and reduce_scatter). Each rank
 * checks what it received; rank 0 prints "collcalls KIND BYTES ITERS bad N" (N = 0 when every
 * value was right). Under valgrind, callgrind's counts are zeroed after WARMUP calls and a
 * barrier, so a profile holds the ITERS counted calls only. With LATE, rank LATE sleeps US
 * microseconds (default 2000) before each counted call, so that what it receives has arrived
 * when it calls: its count is the call's own work, without the polls of a wait (which depend
 * on timing; MPICH busy-polls).
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

/* Calls made before the counted ones (set-up of the first call, the other rank's start). */
#define WARMUP 50

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 4 || argc > 6) {
        if (rank == 0)
            fprintf(stderr, "usage: collcalls KIND BYTES ITERS [LATE [US]]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *k = argv[1];
    long bytes = atol(argv[2]), iters = atol(argv[3]);
    int late = argc > 4 ? atoi(argv[4]) : -1;
    useconds_t pause = argc > 5 ? (useconds_t)atol(argv[5]) : 2000;
    int nf = (int)(bytes / (long)sizeof(float));
    if (nf < 1)
        nf = 1;
    size_t cap = (size_t)(bytes + 64) * (size_t)size;
    unsigned char *s = malloc(cap), *r = malloc(cap);
    float *fs = malloc(cap), *fr = malloc(cap);
    int *counts = malloc(sizeof(int) * (size_t)size);
    long bad = 0;
    MPI_Comm comm;
    /* IMB runs on a split of the world. */
    MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &comm);
    for (long i = -WARMUP; i < iters; i++) {
        if (i == 0) {
            MPI_Barrier(MPI_COMM_WORLD);
            CALLGRIND_ZERO_STATS;
        }
        if (i >= 0 && rank == late)
            usleep(pause);
        unsigned char v = (unsigned char)(i * 7 + 1);
        if (strcmp(k, "barrier") == 0) {
            MPI_Barrier(comm);
        } else if (strcmp(k, "bcast") == 0) {
            if (rank == 0)
                memset(s, v, (size_t)bytes);
            MPI_Bcast(s, (int)bytes, MPI_BYTE, 0, comm);
            bad += bytes > 0 && s[bytes - 1] != v;
        } else if (strcmp(k, "scatter") == 0) {
            if (rank == 0)
                for (int p = 0; p < size; p++)
                    memset(s + p * bytes, v + p, (size_t)bytes);
            MPI_Scatter(s, (int)bytes, MPI_BYTE, r, (int)bytes, MPI_BYTE, 0, comm);
            bad += bytes > 0 && r[bytes - 1] != (unsigned char)(v + rank);
        } else if (strcmp(k, "gather") == 0) {
            memset(s, v + rank, (size_t)bytes);
            MPI_Gather(s, (int)bytes, MPI_BYTE, r, (int)bytes, MPI_BYTE, 0, comm);
            if (rank == 0)
                for (int p = 0; p < size; p++)
                    bad += bytes > 0 && r[(p + 1) * bytes - 1] != (unsigned char)(v + p);
        } else if (strcmp(k, "allgather") == 0) {
            memset(s, v + rank, (size_t)bytes);
            MPI_Allgather(s, (int)bytes, MPI_BYTE, r, (int)bytes, MPI_BYTE, comm);
            for (int p = 0; p < size; p++)
                bad += bytes > 0 && r[(p + 1) * bytes - 1] != (unsigned char)(v + p);
        } else if (strcmp(k, "alltoall") == 0) {
            for (int p = 0; p < size; p++)
                memset(s + p * bytes, v + rank * size + p, (size_t)bytes);
            MPI_Alltoall(s, (int)bytes, MPI_BYTE, r, (int)bytes, MPI_BYTE, comm);
            for (int p = 0; p < size; p++)
                bad += bytes > 0 && r[(p + 1) * bytes - 1] != (unsigned char)(v + p * size + rank);
        } else if (strcmp(k, "allreduce") == 0 || strcmp(k, "reduce") == 0) {
            for (int j = 0; j < nf; j++)
                fs[j] = (float)(rank + j % 5 + (int)v);
            if (k[0] == 'a')
                MPI_Allreduce(fs, fr, nf, MPI_FLOAT, MPI_SUM, comm);
            else
                MPI_Reduce(fs, fr, nf, MPI_FLOAT, MPI_SUM, 0, comm);
            float want = (float)(size * ((nf - 1) % 5 + (int)v) + size * (size - 1) / 2);
            if (k[0] == 'a' || rank == 0)
                bad += fr[nf - 1] != want;
        } else if (strcmp(k, "reduce_scatter") == 0) {
            int per = nf / size > 0 ? nf / size : 1;
            for (int p = 0; p < size; p++)
                counts[p] = per;
            for (int j = 0; j < per * size; j++)
                fs[j] = (float)(rank + (int)v);
            MPI_Reduce_scatter(fs, fr, counts, MPI_FLOAT, MPI_SUM, comm);
            bad += fr[per - 1] != (float)(size * (int)v + size * (size - 1) / 2);
        } else if (strcmp(k, "sendrecv") == 0) {
            int right = (rank + 1) % size, left = (rank + size - 1) % size;
            memset(s, v + rank, (size_t)bytes);
            MPI_Sendrecv(s, (int)bytes, MPI_BYTE, right, 0, r, (int)bytes, MPI_BYTE, left, 0, comm, MPI_STATUS_IGNORE);
            bad += bytes > 0 && r[bytes - 1] != (unsigned char)(v + left);
        } else {
            if (rank == 0)
                fprintf(stderr, "collcalls: unknown kind %s\n", k);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    long all = 0;
    MPI_Reduce(&bad, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("collcalls %s %ld %ld bad %ld\n", k, bytes, iters, all);
    MPI_Comm_free(&comm);
    free(s);
    free(r);
    free(fs);
    free(fr);
    free(counts);
    MPI_Finalize();
    return 0;
}
