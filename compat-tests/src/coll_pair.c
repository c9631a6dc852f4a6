/* Blocking Barrier, Bcast, Gather, Scatter, Allgather and Alltoall between the two members of a communicator (session
 * 23: at one subrank per process on two processes they go from the call straight to their
 * messages, abi/collpair.rs). The world is cut into pairs (a last odd rank alone) and every
 * pair runs many rounds, so every call after a communicator's first takes that path where
 * it applies: roots moving; MPI_IN_PLACE (Scatter's root, Allgather); a derived type on one
 * side only (that side takes the general path, the other may not: their messages must
 * match); zero counts with NULL buffers; a nonblocking broadcast started before blocking
 * calls and completed after them; point-to-point on the same communicator across the
 * calls (a wildcard receive posted before, messages whose tags equal small numbers); a bad
 * root and a null datatype (MPI_ERR_ROOT, MPI_ERR_TYPE under MPI_ERRORS_RETURN); a Scatter
 * whose receiver's buffer is too short (MPI_ERR_TRUNCATE there), each followed by a call that
 * must still match. */
#include "ct.h"

#define N 4
#define ROUNDS 40

static int round_at(MPI_Comm comm, int k, MPI_Datatype quad, int rank_w)
{
    int rank = rank_w, errs = 0, me, size;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    int root = k % size;
    int b[N], x[2 * N], y[2 * N];

    /* Bcast of N ints, root moving; then the root through the derived type (N ints as one
     * item) and the other plain, and the reverse. */
    for (int i = 0; i < N; i++)
        b[i] = me == root ? 100 * k + i : -1;
    CHECK(MPI_Bcast(b, N, MPI_INT, root, comm) == MPI_SUCCESS, "Bcast failed");
    for (int i = 0; i < N; i++)
        CHECK(b[i] == 100 * k + i, "Bcast k %d: b[%d] = %d", k, i, b[i]);
    for (int i = 0; i < N; i++)
        b[i] = me == root ? 7 * k + i : -1;
    int derived_here = (me == root) == (k % 2 == 0);
    CHECK(MPI_Bcast(b, derived_here ? 1 : N, derived_here ? quad : MPI_INT, root, comm) == MPI_SUCCESS,
          "mixed-type Bcast failed");
    for (int i = 0; i < N; i++)
        CHECK(b[i] == 7 * k + i, "mixed-type Bcast k %d: b[%d] = %d", k, i, b[i]);
    CHECK(MPI_Bcast(NULL, 0, MPI_INT, root, comm) == MPI_SUCCESS, "empty Bcast failed");

    /* Scatter: N ints per rank; in place at the root every third round; a derived type on
     * one side every other round. */
    for (int i = 0; i < 2 * N; i++) {
        x[i] = me == root ? 1000 * k + i : -1;
        y[i] = -1;
    }
    int inplace = k % 3 == 0 && me == root;
    void *rb = inplace ? MPI_IN_PLACE : (void *)y;
    if (k % 2 == 0 && me != root)
        CHECK(MPI_Scatter(x, N, MPI_INT, rb, 1, quad, root, comm) == MPI_SUCCESS, "Scatter failed");
    else if (k % 2 == 0)
        CHECK(MPI_Scatter(x, 1, quad, rb, N, MPI_INT, root, comm) == MPI_SUCCESS, "Scatter failed");
    else
        CHECK(MPI_Scatter(x, N, MPI_INT, rb, N, MPI_INT, root, comm) == MPI_SUCCESS, "Scatter failed");
    const int *got = inplace ? x + N * me : y;
    for (int i = 0; i < N; i++)
        CHECK(got[i] == 1000 * k + N * me + i, "Scatter k %d root %d: [%d] = %d", k, root, i, got[i]);
    CHECK(MPI_Scatter(NULL, 0, MPI_INT, NULL, 0, MPI_INT, root, comm) == MPI_SUCCESS, "empty Scatter failed");

    /* Gather: the mirror of the Scatter above (in place at the root every third round, a
     * derived type on one side every other round); then a barrier. */
    for (int i = 0; i < 2 * N; i++)
        x[i] = -1;
    for (int i = 0; i < N; i++)
        y[i] = 2000 * k + 10 * me + i;
    const void *sb = y;
    if (inplace) {
        for (int i = 0; i < N; i++)
            x[N * me + i] = y[i];
        sb = MPI_IN_PLACE;
    }
    if (k % 2 == 0 && me != root)
        CHECK(MPI_Gather(sb, 1, quad, x, N, MPI_INT, root, comm) == MPI_SUCCESS, "Gather failed");
    else if (k % 2 == 0)
        CHECK(MPI_Gather(sb, N, MPI_INT, x, 1, quad, root, comm) == MPI_SUCCESS, "Gather failed");
    else
        CHECK(MPI_Gather(sb, N, MPI_INT, x, N, MPI_INT, root, comm) == MPI_SUCCESS, "Gather failed");
    if (me == root)
        for (int r = 0; r < size; r++)
            for (int i = 0; i < N; i++)
                CHECK(x[N * r + i] == 2000 * k + 10 * r + i, "Gather k %d root %d: x[%d] = %d", k, root, N * r + i,
                      x[N * r + i]);
    CHECK(MPI_Gather(NULL, 0, MPI_INT, NULL, 0, MPI_INT, root, comm) == MPI_SUCCESS, "empty Gather failed");
    CHECK(MPI_Barrier(comm) == MPI_SUCCESS, "Barrier failed");

    /* Allgather: N ints from each; in place every third round (at every rank, as the
     * standard requires); a derived receive type on rank 0 every other round. */
    int z[N];
    for (int i = 0; i < N; i++)
        z[i] = 10 * k + 3 * me + i;
    for (int i = 0; i < 2 * N; i++)
        x[i] = -1;
    if (k % 3 == 0) {
        for (int i = 0; i < N; i++)
            x[N * me + i] = z[i];
        CHECK(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, x, N, MPI_INT, comm) == MPI_SUCCESS,
              "in-place Allgather failed");
    } else if (k % 2 == 0 && me == 0) {
        CHECK(MPI_Allgather(z, N, MPI_INT, x, 1, quad, comm) == MPI_SUCCESS, "Allgather failed");
    } else {
        CHECK(MPI_Allgather(z, N, MPI_INT, x, N, MPI_INT, comm) == MPI_SUCCESS, "Allgather failed");
    }
    for (int r = 0; r < size; r++)
        for (int i = 0; i < N; i++)
            CHECK(x[N * r + i] == 10 * k + 3 * r + i, "Allgather k %d: x[%d] = %d", k, N * r + i, x[N * r + i]);
    CHECK(MPI_Allgather(NULL, 0, MPI_INT, NULL, 0, MPI_INT, comm) == MPI_SUCCESS, "empty Allgather failed");

    /* Alltoall: N ints to each rank; in place every third round; a derived type on one side
     * every other round (rank 0 sends with it, rank 1 receives with it). */
    int w[2 * N];
    for (int r = 0; r < size; r++)
        for (int i = 0; i < N; i++) {
            w[N * r + i] = 10000 * k + 100 * me + 10 * r + i;
            x[N * r + i] = -1;
        }
    if (k % 3 == 0) {
        for (int i = 0; i < 2 * N; i++)
            x[i] = w[i];
        CHECK(MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, x, N, MPI_INT, comm) == MPI_SUCCESS,
              "in-place Alltoall failed");
    } else if (k % 2 == 0 && me == 0) {
        CHECK(MPI_Alltoall(w, 1, quad, x, N, MPI_INT, comm) == MPI_SUCCESS, "Alltoall failed");
    } else if (k % 2 == 0) {
        CHECK(MPI_Alltoall(w, N, MPI_INT, x, 1, quad, comm) == MPI_SUCCESS, "Alltoall failed");
    } else {
        CHECK(MPI_Alltoall(w, N, MPI_INT, x, N, MPI_INT, comm) == MPI_SUCCESS, "Alltoall failed");
    }
    for (int r = 0; r < size; r++)
        for (int i = 0; i < N; i++)
            CHECK(x[N * r + i] == 10000 * k + 100 * r + 10 * me + i, "Alltoall k %d: x[%d] = %d", k, N * r + i,
                  x[N * r + i]);
    CHECK(MPI_Alltoall(NULL, 0, MPI_INT, NULL, 0, MPI_INT, comm) == MPI_SUCCESS, "empty Alltoall failed");
    return errs;
}

/* Errors on a pair: each followed by a call that must match the other rank's. */
static int errors_at(MPI_Comm comm, int rank_w)
{
    int rank = rank_w, errs = 0, me, size, rc;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    int b[N] = {0}, x[2 * N] = {0}, y[N];
    rc = MPI_Bcast(b, 1, MPI_INT, size, comm);
    CHECK(rc != MPI_SUCCESS && ct_class(rc) == MPI_ERR_ROOT, "Bcast root %d: class %d", size, rc ? ct_class(rc) : 0);
    rc = MPI_Scatter(x, 1, MPI_INT, y, 1, MPI_DATATYPE_NULL, 0, comm);
    CHECK(rc != MPI_SUCCESS && ct_class(rc) == MPI_ERR_TYPE, "Scatter null type: class %d", rc ? ct_class(rc) : 0);
    rc = MPI_Allgather(x, 1, MPI_INT, y, -1, MPI_INT, comm);
    CHECK(rc != MPI_SUCCESS && ct_class(rc) == MPI_ERR_COUNT, "Allgather count -1: class %d", rc ? ct_class(rc) : 0);
    b[0] = me == 0 ? 77 : -1;
    CHECK(MPI_Bcast(b, 1, MPI_INT, 0, comm) == MPI_SUCCESS && b[0] == 77, "Bcast after errors: %d", b[0]);
    if (size == 2) {
        /* The receiver's buffer holds one int of the N sent: truncation there. */
        for (int i = 0; i < 2 * N; i++)
            x[i] = 50 + i;
        rc = MPI_Scatter(x, N, MPI_INT, y, me == 0 ? N : 1, MPI_INT, 0, comm);
        if (me == 0)
            CHECK(rc == MPI_SUCCESS, "root of a truncated Scatter: class %d", rc ? ct_class(rc) : 0);
        else
            CHECK(rc != MPI_SUCCESS && ct_class(rc) == MPI_ERR_TRUNCATE, "truncated Scatter: class %d",
                  rc ? ct_class(rc) : 0);
    }
    b[0] = me == size - 1 ? 88 : -1;
    CHECK(MPI_Bcast(b, 1, MPI_INT, size - 1, comm) == MPI_SUCCESS && b[0] == 88, "Bcast after truncation: %d", b[0]);
    return errs;
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm pair;
    MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, &pair);
    MPI_Comm_set_errhandler(pair, MPI_ERRORS_RETURN);
    int me, ps;
    MPI_Comm_rank(pair, &me);
    MPI_Comm_size(pair, &ps);
    MPI_Datatype quad;
    MPI_Type_contiguous(N, MPI_INT, &quad);
    MPI_Type_commit(&quad);

    /* Point-to-point on the pair across the collectives: a wildcard receive posted first,
     * messages with tags 2, 5 and 8 sent after some rounds and received by name after all. */
    int any = -1, t2 = -1, t5 = -1, t8 = -1;
    MPI_Request wild = MPI_REQUEST_NULL, sends[4] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    int nsend = 0, vals[4] = {1000 + rank, 2, 5, 8};
    if (ps == 2)
        MPI_Irecv(&any, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, pair, &wild);
    /* A nonblocking broadcast started before the blocking calls, completed after them. */
    int nb[N];
    for (int i = 0; i < N; i++)
        nb[i] = me == 0 ? 555 + i : -1;
    MPI_Request ib;
    MPI_Ibcast(nb, N, MPI_INT, 0, pair, &ib);
    for (int k = 0; k < ROUNDS; k++) {
        errs += round_at(pair, k, quad, rank);
        if (k == ROUNDS / 2 && ps == 2) {
            MPI_Isend(&vals[0], 1, MPI_INT, 1 - me, 99, pair, &sends[nsend++]);
            for (int t = 1; t < 4; t++)
                MPI_Isend(&vals[t], 1, MPI_INT, 1 - me, vals[t], pair, &sends[nsend++]);
        }
    }
    MPI_Wait(&ib, MPI_STATUS_IGNORE);
    for (int i = 0; i < N; i++)
        CHECK(nb[i] == 555 + i, "Ibcast: nb[%d] = %d", i, nb[i]);
    errs += errors_at(pair, rank);
    if (ps == 2) {
        MPI_Status st;
        MPI_Wait(&wild, &st);
        CHECK(any == 1000 + (rank ^ 1) && st.MPI_TAG == 99, "wildcard receive: %d tag %d", any, st.MPI_TAG);
        MPI_Recv(&t8, 1, MPI_INT, 1 - me, 8, pair, MPI_STATUS_IGNORE);
        MPI_Recv(&t5, 1, MPI_INT, 1 - me, 5, pair, MPI_STATUS_IGNORE);
        MPI_Recv(&t2, 1, MPI_INT, 1 - me, 2, pair, MPI_STATUS_IGNORE);
        CHECK(t2 == 2 && t5 == 5 && t8 == 8, "by tag: %d %d %d", t2, t5, t8);
        MPI_Waitall(4, sends, MPI_STATUSES_IGNORE);
    }
    MPI_Type_free(&quad);
    MPI_Comm_free(&pair);
    if (rank == 0)
        ct_say(rank, "%d rounds on pairs done at %d ranks", ROUNDS, size);
    return ct_finish(rank, errs);
}
