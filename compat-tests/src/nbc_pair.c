/* Nonblocking Barrier, Bcast, Allgather, Alltoall, Gather and Scatter between the two members of a
 * communicator (session 24: at one subrank per process on two processes each is one eager
 * message each way and a receive request, abi/nbcpair.rs). The world is cut into pairs (a
 * last odd rank alone) and a duplicate of each pair; every round starts several calls on
 * both communicators, with a blocking broadcast and point-to-point on the same
 * communicator in between, and completes them in an order that changes with the round
 * (ct_complete: MPI_Waitall, MPI_Wait in reverse, MPI_Test loops, MPI_Waitany, MPI_Testall
 * loops, MPI_Testsome loops). A strided derived type on one rank
 * against plain ints on the other (both directions), MPI_IN_PLACE (Allgather, Alltoall),
 * zero counts with NULL buffers. At the end, under MPI_ERRORS_RETURN, an Ibcast whose
 * receiver's buffer is too short (MPI_ERR_TRUNCATE at its wait; MPICH says MPI_ERR_OTHER), then a call that must
 * still match. The same on MPI_COMM_WORLD (the path is not taken beyond two ranks). */
#include "ct.h"

#define N 4
#define ROUNDS 30
#define CALLS 10

static int round_at(MPI_Comm comm, MPI_Comm dup, int k, MPI_Datatype strided, int rank_w)
{
    int rank = rank_w, errs = 0, me, size;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    int root = k % size;
    MPI_Request r[CALLS];
    int nr = 0;

    /* Ibcast of N ints, root moving; the strided type (N ints as one item, every other int)
     * on one side every other round. */
    int b[2 * N], b2[N];
    int strided_here = strided != MPI_DATATYPE_NULL && (me == root) == (k % 2 == 0);
    for (int i = 0; i < 2 * N; i++)
        b[i] = -1;
    for (int i = 0; i < N; i++) {
        if (me == root)
            b[strided_here ? 2 * i : i] = 100 * k + i;
        b2[i] = me == (root + 1) % size ? 300 * k + i : -1;
    }
    CHECK(MPI_Ibcast(b, strided_here ? 1 : N, strided_here ? strided : MPI_INT, root, comm, &r[nr++]) == MPI_SUCCESS,
          "Ibcast failed");
    CHECK(MPI_Ibcast(b2, N, MPI_INT, (root + 1) % size, dup, &r[nr++]) == MPI_SUCCESS, "Ibcast on dup failed");
    CHECK(MPI_Ibarrier(comm, &r[nr++]) == MPI_SUCCESS, "Ibarrier failed");

    /* Iallgather of N ints per rank (in place every third round; the strided type receiving
     * the first block at one rank otherwise: blocks of the strided type lie 2N-1 ints apart
     * by its extent, so that rank uses a receive buffer laid out that way). */
    int ag[64], sendv[N];
    int inplace = k % 3 == 0;
    int strided_recv = !inplace && me == k % size && size == 2;
    for (int i = 0; i < 64; i++)
        ag[i] = -1;
    for (int i = 0; i < N; i++)
        sendv[i] = 1000 * k + 10 * me + i;
    int ext_ints = 2 * N - 1;
    if (inplace)
        for (int i = 0; i < N; i++)
            ag[me * N + i] = sendv[i];
    CHECK(MPI_Iallgather(inplace ? MPI_IN_PLACE : sendv, N, MPI_INT, ag, strided_recv ? 1 : N,
                         strided_recv ? strided : MPI_INT, comm, &r[nr++]) == MPI_SUCCESS,
          "Iallgather failed");

    /* Ialltoall of 2 ints per pair of ranks (in place on odd rounds). */
    int at_s[2 * 16], at_r[2 * 16];
    for (int p = 0; p < size; p++)
        for (int j = 0; j < 2; j++) {
            at_s[2 * p + j] = 10000 * k + 100 * me + 10 * p + j;
            at_r[2 * p + j] = k % 2 ? at_s[2 * p + j] : -1;
        }
    CHECK(MPI_Ialltoall(k % 2 ? MPI_IN_PLACE : at_s, 2, MPI_INT, at_r, 2, MPI_INT, dup, &r[nr++]) == MPI_SUCCESS,
          "Ialltoall failed");
    /* Igather and Iscatter of N ints per rank to and from the root (in place at the root
     * every third round; the strided type for the non-root's one block on even rounds). */
    int g_s[N], g_r[16 * N], sc_s[16 * N], sc_r[2 * N];
    int rooted_inplace = k % 3 == 1 && me == root;
    int strided_one = strided != MPI_DATATYPE_NULL && me != root && k % 2 == 0;
    for (int i = 0; i < N; i++)
        g_s[i] = 2000 * k + 10 * me + i;
    for (int i = 0; i < 16 * N; i++) {
        g_r[i] = -1;
        sc_s[i] = me == root ? 3000 * k + i : -1;
    }
    for (int i = 0; i < 2 * N; i++)
        sc_r[i] = -1;
    if (rooted_inplace)
        for (int i = 0; i < N; i++)
            g_r[me * N + i] = g_s[i];
    int g_one[2 * N];
    for (int i = 0; i < 2 * N; i++)
        g_one[i] = -1;
    for (int i = 0; i < N; i++)
        g_one[2 * i] = g_s[i];
    CHECK(MPI_Igather(rooted_inplace ? MPI_IN_PLACE : (strided_one ? (void *)g_one : (void *)g_s), strided_one ? 1 : N,
                      strided_one ? strided : MPI_INT, g_r, N, MPI_INT, root, comm, &r[nr++]) == MPI_SUCCESS,
          "Igather failed");
    CHECK(MPI_Iscatter(sc_s, N, MPI_INT, rooted_inplace ? MPI_IN_PLACE : (void *)sc_r, strided_one ? 1 : N,
                       strided_one ? strided : MPI_INT, root, comm, &r[nr++]) == MPI_SUCCESS,
          "Iscatter failed");
    /* Empty calls with NULL buffers. */
    CHECK(MPI_Ibcast(NULL, 0, MPI_INT, root, comm, &r[nr++]) == MPI_SUCCESS, "empty Ibcast failed");

    /* A blocking broadcast and point-to-point on the same communicator while those run. */
    int c = me == root ? 7 * k : -1;
    CHECK(MPI_Bcast(&c, 1, MPI_INT, root, comm) == MPI_SUCCESS && c == 7 * k, "Bcast between: %d", c);
    if (size == 2) {
        int got = -1, mine = 50 * k + me;
        MPI_Sendrecv(&mine, 1, MPI_INT, 1 - me, k, &got, 1, MPI_INT, 1 - me, k, comm, MPI_STATUS_IGNORE);
        CHECK(got == 50 * k + 1 - me, "Sendrecv between: %d", got);
    }

    CHECK(ct_complete(r, nr, k) == MPI_SUCCESS, "completion failed");
    for (int i = 0; i < nr; i++)
        CHECK(r[i] == MPI_REQUEST_NULL, "request %d not freed", i);

    for (int i = 0; i < N; i++) {
        int v = b[strided_here ? 2 * i : i];
        CHECK(v == 100 * k + i, "Ibcast k %d: [%d] = %d", k, i, v);
        CHECK(b2[i] == 300 * k + i, "Ibcast dup k %d: [%d] = %d", k, i, b2[i]);
    }
    for (int p = 0; p < size; p++)
        for (int i = 0; i < N; i++) {
            int v = strided_recv ? ag[p * ext_ints + 2 * i] : ag[p * N + i];
            CHECK(v == 1000 * k + 10 * p + i, "Iallgather k %d: block %d [%d] = %d", k, p, i, v);
        }
    if (me == root)
        for (int p = 0; p < size; p++)
            for (int i = 0; i < N; i++)
                CHECK(g_r[p * N + i] == 2000 * k + 10 * p + i, "Igather k %d: block %d [%d] = %d", k, p, i,
                      g_r[p * N + i]);
    if (!rooted_inplace)
        for (int i = 0; i < N; i++) {
            int v = strided_one ? sc_r[2 * i] : sc_r[i];
            CHECK(v == 3000 * k + me * N + i, "Iscatter k %d: [%d] = %d", k, i, v);
        }
    for (int p = 0; p < size; p++)
        for (int j = 0; j < 2; j++)
            CHECK(at_r[2 * p + j] == 10000 * k + 100 * p + 10 * me + j, "Ialltoall k %d: [%d][%d] = %d", k, p, j,
                  at_r[2 * p + j]);
    return errs;
}

static int errors_at(MPI_Comm comm, int rank_w)
{
    int rank = rank_w, errs = 0, me, size;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    if (size == 2) {
        /* The receiver's buffer holds one int of the N sent: truncation at its wait. */
        int x[N] = {1, 2, 3, 4};
        MPI_Request q;
        int rc = MPI_Ibcast(x, me == 0 ? N : 1, MPI_INT, 0, comm, &q);
        CHECK(rc == MPI_SUCCESS, "truncated Ibcast start: class %d", rc ? ct_class(rc) : 0);
        rc = MPI_Wait(&q, MPI_STATUS_IGNORE);
        if (me == 0)
            CHECK(rc == MPI_SUCCESS, "root of a truncated Ibcast: class %d", rc ? ct_class(rc) : 0);
        else
            /* MPICH reports the schedule's truncation as MPI_ERR_OTHER. */
            CHECK(rc != MPI_SUCCESS && (ct_class(rc) == MPI_ERR_TRUNCATE || ct_class(rc) == MPI_ERR_OTHER),
                  "truncated Ibcast: class %d", rc ? ct_class(rc) : 0);
    }
    int b = me == size - 1 ? 88 : -1;
    MPI_Request q;
    CHECK(MPI_Ibcast(&b, 1, MPI_INT, size - 1, comm, &q) == MPI_SUCCESS, "Ibcast after truncation");
    CHECK(MPI_Wait(&q, MPI_STATUS_IGNORE) == MPI_SUCCESS && b == 88, "Ibcast after truncation: %d", b);
    return errs;
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm pair, dup;
    ct_pairs(&pair, &dup);
    MPI_Datatype strided;
    MPI_Type_vector(N, 1, 2, MPI_INT, &strided);
    MPI_Type_commit(&strided);

    /* A nonblocking broadcast on the pair started before every round, completed after. */
    int me;
    MPI_Comm_rank(pair, &me);
    int nb[N];
    for (int i = 0; i < N; i++)
        nb[i] = me == 0 ? 555 + i : -1;
    MPI_Request ib;
    MPI_Ibcast(nb, N, MPI_INT, 0, pair, &ib);
    for (int k = 0; k < ROUNDS; k++)
        errs += round_at(pair, dup, k, strided, rank);
    MPI_Wait(&ib, MPI_STATUS_IGNORE);
    for (int i = 0; i < N; i++)
        CHECK(nb[i] == 555 + i, "early Ibcast: [%d] = %d", i, nb[i]);
    /* On the world too the strided type at one rank (session 24 found a V=1 Ibcast with a
     * derived type at one rank hang beyond two ranks when another nonblocking call followed;
     * fixed in session 25, docs/collectives.md "Session 25 (faults16)"). */
    for (int k = 0; k < 4; k++)
        errs += round_at(MPI_COMM_WORLD, MPI_COMM_WORLD, k, strided, rank);
    errs += errors_at(pair, rank);

    if (rank == 0)
        ct_say(rank, "%d rounds on pairs done at %d ranks", ROUNDS, size);
    MPI_Type_free(&strided);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&pair);
    return ct_finish(rank, errs);
}
