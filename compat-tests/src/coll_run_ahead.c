/* coll_run_ahead: rooted collectives back to back with nothing between them, so that the
 * ranks that only contribute (non-roots of Reduce and Gather, which may return as soon as
 * their data is taken) run ahead of the calls' roots. Reduce and Gather alternate, and so do
 * their roots, operations, datatypes and sizes (a few bytes to over a kilobyte), with
 * MPI_IN_PLACE at the root in some rounds; a stretch of Reduces to one root and a stretch of
 * Gathers to another follow. Every root checks its result exactly; rank 0 prints a checksum of
 * what the roots received, and every rank OK when its results were right.
 */
#include "ct.h"
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROUNDS 240
#define MAXN 400

/* Wrong results and the checksum, per rank. */
struct tally {
    long bad, sum;
};

/* Rank r's value at element j of round k (small, so that products and sums stay exact). */
static int val(int k, int r, int j)
{
    return (k * 7 + r * 3 + j) % 5 + 1;
}

static void reduce_round(struct tally *t, MPI_Comm comm, int k, int root)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    static const int counts[] = {1, 2, 3, 300, 17};
    int n = counts[k % 5];
    MPI_Op ops[] = {MPI_SUM, MPI_MAX, MPI_MIN, MPI_PROD};
    int o = (k / 5) % 4;
    /* Products only of 1s and 2s, so that they stay exact. Plain MPICH 4.0.2 (the reference)
     * crashes in an in-place Reduce of 300 doubles at root 1 of 2 ranks: those rounds in place
     * reduce ints. */
    int use_double = k % 2 && !(n > 100 && k % 4 == 3);
    int in_place = rank == root && k % 4 == 3;
    double ds[MAXN], dr[MAXN];
    int is[MAXN], ir[MAXN];
    for (int j = 0; j < n; j++) {
        int v = o == 3 ? 1 + (val(k, rank, j) == 5) : val(k, rank, j);
        ds[j] = v;
        is[j] = v;
        dr[j] = in_place ? v : -1;
        ir[j] = in_place ? v : -1;
    }
    if (use_double)
        MPI_Reduce(in_place ? MPI_IN_PLACE : ds, dr, n, MPI_DOUBLE, ops[o], root, comm);
    else
        MPI_Reduce(in_place ? MPI_IN_PLACE : is, ir, n, MPI_INT, ops[o], root, comm);
    if (rank != root)
        return;
    for (int j = 0; j < n; j++) {
        long want = o == 0 ? 0 : o == 3 ? 1 : o == 1 ? -1000 : 1000;
        for (int r = 0; r < size; r++) {
            int v = o == 3 ? 1 + (val(k, r, j) == 5) : val(k, r, j);
            want = o == 0 ? want + v : o == 3 ? want * v : o == 1 ? (v > want ? v : want) : (v < want ? v : want);
        }
        long got = use_double ? (long)dr[j] : ir[j];
        t->bad += got != want || (use_double && dr[j] != (double)want);
        t->sum += got % 1000;
    }
}

static void gather_round(struct tally *t, MPI_Comm comm, int k, int root)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    static const int counts[] = {1, 8, 1500, 3};
    int n = counts[k % 4];
    int in_place = rank == root && k % 3 == 2;
    unsigned char *s = malloc((size_t)n), *r = malloc((size_t)n * (size_t)size);
    for (int j = 0; j < n; j++)
        s[j] = (unsigned char)(k + rank * 11 + j);
    memset(r, 0xee, (size_t)n * (size_t)size);
    if (in_place)
        memcpy(r + (size_t)rank * (size_t)n, s, (size_t)n);
    if (k % 2)
        MPI_Gather(in_place ? MPI_IN_PLACE : s, n, MPI_BYTE, r, n, MPI_BYTE, root, comm);
    else {
        /* The same bytes as MPI_CHAR on the send side, a contiguous type of n bytes at the
         * root: mixed type signatures that agree. */
        MPI_Datatype blk;
        MPI_Type_contiguous(n, MPI_BYTE, &blk);
        MPI_Type_commit(&blk);
        MPI_Gather(in_place ? MPI_IN_PLACE : s, n, MPI_CHAR, r, 1, blk, root, comm);
        MPI_Type_free(&blk);
    }
    if (rank == root) {
        for (int p = 0; p < size; p++)
            for (int j = 0; j < n; j++) {
                unsigned char want = (unsigned char)(k + p * 11 + j);
                t->bad += r[(size_t)p * (size_t)n + (size_t)j] != want;
                t->sum += r[(size_t)p * (size_t)n + (size_t)j] % 7;
            }
    }
    free(s);
    free(r);
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    struct tally t = {0, 0};
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    for (int k = 0; k < ROUNDS; k++) {
        MPI_Comm comm = k % 7 == 6 ? dup : MPI_COMM_WORLD;
        reduce_round(&t, comm, k, (k * 3 + 1) % size);
        gather_round(&t, comm, k, (k + 2) % size);
    }
    /* Stretches to one root: every other rank may run through all of them first. */
    for (int k = 0; k < 60; k++)
        reduce_round(&t, MPI_COMM_WORLD, k, size - 1);
    for (int k = 0; k < 60; k++)
        gather_round(&t, MPI_COMM_WORLD, k, 0);
    /* Then a Reduce to rank 0 whose other ranks wait nowhere before a barrier. */
    for (int k = 0; k < 40; k++) {
        reduce_round(&t, MPI_COMM_WORLD, k, 0);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    long all = 0;
    MPI_Reduce(&t.sum, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("coll_run_ahead: %d ranks, checksum %ld\n", size, all);
    MPI_Comm_free(&dup);
    if (t.bad)
        printf("rank %d: %ld wrong results\n", rank, t.bad);
    return ct_finish(rank, t.bad != 0);
}
