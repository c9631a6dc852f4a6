/* The rooted blocking collectives on communicators whose route is already known (session
 * 22: a blocking call numbered by its communicator look-up runs its work where it lies,
 * without asking for the communicator's team again). Each communicator (the world, a
 * duplicate, a split in two halves) is used by several rounds of Bcast, Scatter, Gather
 * and Reduce so that every call after the first takes that path; every root in turn;
 * MPI_IN_PLACE at the root (Scatter, Gather, Reduce); a derived (strided) datatype on the
 * root's side; zero counts; an erroneous root in the middle (MPI_ERR_ROOT through the
 * communicator's handler, MPI_ERRORS_RETURN), after which the next call still matches. */
#include "ct.h"

#define N 3

/* One round of every kind with root `root` on `comm`; returns the failures. */
static int round_at(MPI_Comm comm, int root, int k)
{
    int rank, size, errs = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int me = rank;
    MPI_Datatype strided; /* N ints, every other one of 2N */
    MPI_Type_vector(N, 1, 2, MPI_INT, &strided);
    MPI_Type_commit(&strided);

    /* Bcast: N ints, then the same through the strided type at every rank, then nothing. */
    int b[2 * N];
    for (int i = 0; i < 2 * N; i++)
        b[i] = rank == root ? 100 * k + root * 10 + i : -1;
    CHECK(MPI_Bcast(b, N, MPI_INT, root, comm) == MPI_SUCCESS, "Bcast failed");
    for (int i = 0; i < N; i++)
        CHECK(b[i] == 100 * k + root * 10 + i, "Bcast root %d: b[%d] = %d", root, i, b[i]);
    for (int i = 0; i < 2 * N; i++)
        b[i] = rank == root ? 7 * i + k : -1;
    CHECK(MPI_Bcast(b, 1, strided, root, comm) == MPI_SUCCESS, "strided Bcast failed");
    for (int i = 0; i < 2 * N; i++)
        CHECK(b[i] == (i % 2 == 0 || rank == root ? 7 * i + k : -1), "strided Bcast root %d: b[%d] = %d", root, i,
              b[i]);
    CHECK(MPI_Bcast(NULL, 0, MPI_INT, root, comm) == MPI_SUCCESS, "empty Bcast failed");

    /* Scatter: the root sends through the strided type (N ints of every 2N), the others
     * receive N contiguous ints; then with MPI_IN_PLACE at the root; then nothing. */
    int *all = malloc(sizeof(int) * 2 * N * (size_t)size);
    for (int i = 0; i < 2 * N * size; i++)
        all[i] = 1000 * k + i;
    MPI_Datatype sblock; /* one strided block per rank, its extent 2N ints */
    MPI_Type_create_resized(strided, 0, (MPI_Aint)(2 * N * sizeof(int)), &sblock);
    MPI_Type_commit(&sblock);
    int r[N];
    for (int i = 0; i < N; i++)
        r[i] = -1;
    CHECK(MPI_Scatter(all, 1, sblock, r, N, MPI_INT, root, comm) == MPI_SUCCESS, "Scatter failed");
    for (int i = 0; i < N; i++)
        CHECK(r[i] == 1000 * k + 2 * N * me + 2 * i, "Scatter root %d: r[%d] = %d", root, i, r[i]);
    int *flat = malloc(sizeof(int) * N * (size_t)size);
    for (int i = 0; i < N * size; i++)
        flat[i] = rank == root ? 50 * k + i : -1;
    int *sr = rank == root ? (int *)MPI_IN_PLACE : r;
    CHECK(MPI_Scatter(flat, N, MPI_INT, sr, N, MPI_INT, root, comm) == MPI_SUCCESS, "in-place Scatter failed");
    if (rank == root) {
        for (int i = 0; i < N * size; i++)
            CHECK(flat[i] == 50 * k + i, "in-place Scatter root %d: its buffer changed at %d", root, i);
    } else {
        for (int i = 0; i < N; i++)
            CHECK(r[i] == 50 * k + N * me + i, "in-place Scatter root %d: r[%d] = %d", root, i, r[i]);
    }
    CHECK(MPI_Scatter(flat, 0, MPI_INT, r, 0, MPI_INT, root, comm) == MPI_SUCCESS, "empty Scatter failed");

    /* Gather: into the strided blocks at the root, then in place at the root. */
    int mine[N];
    for (int i = 0; i < N; i++)
        mine[i] = 10 * me + i + k;
    for (int i = 0; i < 2 * N * size; i++)
        all[i] = -1;
    CHECK(MPI_Gather(mine, N, MPI_INT, all, 1, sblock, root, comm) == MPI_SUCCESS, "Gather failed");
    if (rank == root)
        for (int p = 0; p < size; p++)
            for (int i = 0; i < 2 * N; i++)
                CHECK(all[2 * N * p + i] == (i % 2 == 0 ? 10 * p + i / 2 + k : -1), "Gather root %d: from %d at %d = %d",
                      root, p, i, all[2 * N * p + i]);
    for (int i = 0; i < N * size; i++)
        flat[i] = rank == root ? (i / N == root ? 10 * root + i % N + k : -1) : -2;
    const void *gs = rank == root ? MPI_IN_PLACE : (const void *)mine;
    CHECK(MPI_Gather(gs, N, MPI_INT, flat, N, MPI_INT, root, comm) == MPI_SUCCESS, "in-place Gather failed");
    if (rank == root)
        for (int i = 0; i < N * size; i++)
            CHECK(flat[i] == 10 * (i / N) + i % N + k, "in-place Gather root %d: flat[%d] = %d", root, i, flat[i]);

    /* Reduce: sums, then in place at the root, then nothing. */
    int sum[N], acc[N];
    for (int i = 0; i < N; i++)
        sum[i] = -1;
    CHECK(MPI_Reduce(mine, sum, N, MPI_INT, MPI_SUM, root, comm) == MPI_SUCCESS, "Reduce failed");
    if (rank == root)
        for (int i = 0; i < N; i++)
            CHECK(sum[i] == 10 * size * (size - 1) / 2 + size * (i + k), "Reduce root %d: sum[%d] = %d", root, i, sum[i]);
    for (int i = 0; i < N; i++)
        acc[i] = mine[i];
    const void *rs = rank == root ? MPI_IN_PLACE : (const void *)mine;
    CHECK(MPI_Reduce(rs, acc, N, MPI_INT, MPI_MAX, root, comm) == MPI_SUCCESS, "in-place Reduce failed");
    if (rank == root)
        for (int i = 0; i < N; i++)
            CHECK(acc[i] == 10 * (size - 1) + i + k, "in-place Reduce root %d: acc[%d] = %d", root, i, acc[i]);
    CHECK(MPI_Reduce(mine, sum, 0, MPI_INT, MPI_SUM, root, comm) == MPI_SUCCESS, "empty Reduce failed");

    /* A bad root, then a call that must still match the other ranks'. */
    int rc = MPI_Bcast(b, 1, MPI_INT, size, comm);
    CHECK(rc != MPI_SUCCESS && ct_class(rc) == MPI_ERR_ROOT, "Bcast with root %d: class %d", size,
          rc == MPI_SUCCESS ? 0 : ct_class(rc));
    rc = MPI_Scatter(flat, 1, MPI_INT, r, 1, MPI_INT, -1, comm);
    CHECK(rc != MPI_SUCCESS && ct_class(rc) == MPI_ERR_ROOT, "Scatter with root -1: class %d",
          rc == MPI_SUCCESS ? 0 : ct_class(rc));
    b[0] = rank == root ? 4242 + k : -1;
    CHECK(MPI_Bcast(b, 1, MPI_INT, root, comm) == MPI_SUCCESS && b[0] == 4242 + k, "Bcast after errors: %d", b[0]);

    free(flat);
    free(all);
    MPI_Type_free(&sblock);
    MPI_Type_free(&strided);
    return errs;
}

/* Rounds at every root of `comm`, twice over. */
static int rounds(MPI_Comm comm)
{
    int size, errs = 0;
    MPI_Comm_size(comm, &size);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    for (int k = 0; k < 2; k++)
        for (int root = size - 1; root >= 0; root--)
            errs += round_at(comm, root, k);
    return errs;
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    errs += rounds(MPI_COMM_WORLD);
    MPI_Comm dup, half;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    errs += rounds(dup);
    MPI_Comm_split(MPI_COMM_WORLD, rank < size / 2, size - rank, &half);
    errs += rounds(half);
    MPI_Comm_free(&half);
    MPI_Comm_free(&dup);
    if (rank == 0)
        ct_say(rank, "rounds done at %d ranks", size);
    return ct_finish(rank, errs);
}
