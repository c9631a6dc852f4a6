/* Privatized thread-locals (C): each rank owns the program's __thread
 * variables, as the main thread of its own process would. Deliberately uses
 * writable globals (allowed in tests named privatize_*): an initialised
 * thread-local, a zero-initialised thread-local array, a file-static one, a
 * function-local static one, a thread-local pointing at a global (it must
 * point at this rank's global) and one pointing at heap memory. Every rank
 * first checks they hold the image's initial values, writes its own, lets the
 * other ranks run, and checks them again.
 *
 * Then thread-locals serve as MPI buffers, which a rank's siblings must not
 * reach in its place: send and receive buffers of blocking, nonblocking,
 * persistent and synchronous point-to-point (small messages and 32 KiB ones,
 * contiguous and strided), completed by Wait, Waitall and Request_get_status,
 * and buffers of blocking and nonblocking collectives. */
#include "ct.h"

#define TBSS_N 1024
#define BIG_N 8192 /* ints: 32 KiB, above any eager limit */

int gcounter = 7;
__thread int tcounter = 42;
__thread int tbss[TBSS_N];
static __thread double tstatic = 1.5;
__thread int *tptr = &gcounter;
__thread int *theap;

__thread int tsmall[4];
__thread int tin[4];
__thread int tbig[BIG_N];
__thread int tbig_in[BIG_N];
__thread int tsum[2];

static int *local_tls(void)
{
    static __thread int calls = 100;
    calls++;
    return &calls;
}

static void write_values(int rank, int round)
{
    int i, v = rank * 10 + round;
    tcounter = 1000 + v;
    for (i = 0; i < TBSS_N; i++)
        tbss[i] = v + i;
    tstatic = v + 0.25;
    local_tls();
    gcounter = 2000 + v;
    if (!theap)
        theap = ct_malloc(2 * sizeof(int));
    theap[0] = v;
    theap[1] = -v;
}

static void check_values(int rank, int *errp, int round)
{
    int i, bad = 0, v = rank * 10 + round;
    CHECKP(tcounter == 1000 + v, "round %d: thread-local counter %d, expected %d", round, tcounter, 1000 + v);
    for (i = 0; i < TBSS_N; i++)
        if (tbss[i] != v + i)
            bad++;
    CHECKP(bad == 0, "round %d: %d of %d thread-local array elements hold another rank's values", round, bad, TBSS_N);
    CHECKP(tstatic == v + 0.25, "round %d: file-static thread-local %g", round, tstatic);
    CHECKP(*local_tls() == 103 + 2 * round, "round %d: function-local thread-local counts other ranks' calls", round);
    CHECKP(tptr == &gcounter && *tptr == 2000 + v, "round %d: thread-local pointer to a global: %d", round, *tptr);
    CHECKP(theap && theap[0] == v && theap[1] == -v, "round %d: thread-local pointer to heap replaced", round);
}

/* Point-to-point with thread-local buffers, in a ring. */
static void ring_buffers(int rank, int size, int *errp)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size, i, bad, flag;
    MPI_Request rq[2];
    MPI_Datatype every_other;

    /* Blocking Sendrecv, small. */
    for (i = 0; i < 4; i++)
        tsmall[i] = rank * 4 + i;
    MPI_Sendrecv(tsmall, 4, MPI_INT, right, 1, tin, 4, MPI_INT, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECKP(tin[0] == left * 4 && tin[3] == left * 4 + 3, "Sendrecv into a thread-local: %d %d", tin[0], tin[3]);

    /* Receive posted long before the message comes; large messages. */
    for (i = 0; i < BIG_N; i++)
        tbig[i] = rank * BIG_N + i;
    MPI_Irecv(tbig_in, BIG_N, MPI_INT, left, 2, MPI_COMM_WORLD, &rq[0]);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Isend(tbig, BIG_N, MPI_INT, right, 2, MPI_COMM_WORLD, &rq[1]);
    MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    for (i = 0, bad = 0; i < BIG_N; i++)
        bad += tbig_in[i] != left * BIG_N + i;
    CHECKP(bad == 0, "Irecv of 32 KiB into a thread-local: %d wrong elements", bad);

    /* Blocking synchronous send and blocking receive, large. */
    for (i = 0; i < BIG_N; i++)
        tbig[i] = -(rank * BIG_N + i);
    if (size == 1) {
        MPI_Sendrecv(tbig, BIG_N, MPI_INT, right, 3, tbig_in, BIG_N, MPI_INT, left, 3, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
    } else if (rank % 2 == 0) {
        MPI_Ssend(tbig, BIG_N, MPI_INT, right, 3, MPI_COMM_WORLD);
        MPI_Recv(tbig_in, BIG_N, MPI_INT, left, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(tbig_in, BIG_N, MPI_INT, left, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Ssend(tbig, BIG_N, MPI_INT, right, 3, MPI_COMM_WORLD);
    }
    for (i = 0, bad = 0; i < BIG_N; i++)
        bad += tbig_in[i] != -(left * BIG_N + i);
    CHECKP(bad == 0, "Ssend/Recv of 32 KiB between thread-locals: %d wrong elements", bad);

    /* Persistent requests, two rounds. */
    MPI_Recv_init(tin, 4, MPI_INT, left, 4, MPI_COMM_WORLD, &rq[0]);
    MPI_Send_init(tsmall, 4, MPI_INT, right, 4, MPI_COMM_WORLD, &rq[1]);
    for (int round = 0; round < 2; round++) {
        for (i = 0; i < 4; i++)
            tsmall[i] = 100 * round + rank;
        tin[0] = -1;
        MPI_Startall(2, rq);
        MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
        CHECKP(tin[0] == 100 * round + left && tin[3] == 100 * round + left, "persistent round %d: %d", round, tin[0]);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Request_free(&rq[0]);
    MPI_Request_free(&rq[1]);

    /* Completion seen through Request_get_status; a strided receive. */
    MPI_Type_vector(4, 1, 2, MPI_INT, &every_other);
    MPI_Type_commit(&every_other);
    for (i = 0; i < 8; i++)
        tbig_in[i] = -5;
    MPI_Irecv(tbig_in, 1, every_other, left, 5, MPI_COMM_WORLD, &rq[0]);
    MPI_Barrier(MPI_COMM_WORLD);
    for (i = 0; i < 4; i++)
        tsmall[i] = rank + i;
    MPI_Send(tsmall, 4, MPI_INT, right, 5, MPI_COMM_WORLD);
    do
        MPI_Request_get_status(rq[0], &flag, MPI_STATUS_IGNORE);
    while (!flag);
    CHECKP(tbig_in[0] == left && tbig_in[2] == left + 1 && tbig_in[6] == left + 3 && tbig_in[1] == -5 &&
               tbig_in[7] == -5,
           "strided receive into a thread-local, seen by Request_get_status: %d %d %d %d", tbig_in[0], tbig_in[1],
           tbig_in[2], tbig_in[6]);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    MPI_Type_free(&every_other);
}

/* Collectives with thread-local buffers. */
static void coll_buffers(int rank, int size, int *errp)
{
    int i, bad;
    MPI_Request rq;
    tsmall[0] = rank;
    tsmall[1] = 1;
    MPI_Allreduce(tsmall, tsum, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECKP(tsum[0] == size * (size - 1) / 2 && tsum[1] == size, "Allreduce into a thread-local: %d %d", tsum[0],
           tsum[1]);

    for (i = 0; i < BIG_N; i++)
        tbig[i] = rank == 0 ? 3 * i : -1;
    MPI_Bcast(tbig, BIG_N, MPI_INT, 0, MPI_COMM_WORLD);
    for (i = 0, bad = 0; i < BIG_N; i++)
        bad += tbig[i] != 3 * i;
    CHECKP(bad == 0, "Bcast of 32 KiB into a thread-local: %d wrong elements", bad);

    tsmall[0] = rank + 1;
    tsum[0] = -1;
    MPI_Iallreduce(tsmall, tsum, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &rq);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    CHECKP(tsum[0] == size, "Iallreduce into a thread-local: %d", tsum[0]);

    MPI_Allgather(&rank, 1, MPI_INT, tbig_in, 1, MPI_INT, MPI_COMM_WORLD);
    for (i = 0, bad = 0; i < size; i++)
        bad += tbig_in[i] != i;
    CHECKP(bad == 0, "Allgather into a thread-local: %d wrong elements", bad);
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, round, i, token;

    /* Before MPI_Init and before any write: the image's initial values. */
    int init_ok = tcounter == 42 && tstatic == 1.5 && tptr == &gcounter && *tptr == 7 && theap == NULL;
    for (i = 0; i < TBSS_N; i++)
        if (tbss[i] != 0)
            init_ok = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(init_ok, "thread-locals did not hold their initial values at start-up");
    CHECK(*local_tls() == 101, "function-local thread-local was already incremented by another rank");

    for (round = 0; round < 3; round++) {
        write_values(rank, round);
        MPI_Barrier(MPI_COMM_WORLD);
        token = rank;
        MPI_Sendrecv_replace(&token, 1, MPI_INT, (rank + 1) % size, 0, (rank + size - 1) % size, 0, MPI_COMM_WORLD,
                             MPI_STATUS_IGNORE);
        CHECK(token == (rank + size - 1) % size, "ring token %d", token);
        MPI_Barrier(MPI_COMM_WORLD);
        check_values(rank, &errs, round);
    }
    ring_buffers(rank, size, &errs);
    coll_buffers(rank, size, &errs);
    /* The thread-locals of the first part are still this rank's own. */
    write_values(rank, 3);
    MPI_Barrier(MPI_COMM_WORLD);
    check_values(rank, &errs, 3);
    free(theap);
    return ct_finish(rank, errs);
}
