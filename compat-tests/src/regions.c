/* Toucan_Region hints (toucan.h) must never change results, and must not
 * deadlock a correct program however they are placed. Under any other MPI
 * they are no-ops, so the output is the same as plain MPICH's.
 *
 * 1. A 1-D diffusion with a two-sided halo exchange, run twice: with the
 *    receive/send/compute/end regions and without; the two fields must be
 *    bitwise equal, and each rank prints its checksum.
 * 2. A region user whose compute region depends on a message that its peer
 *    sends only after polling (MPI_Test) for a message the region user sends
 *    from inside that compute region: the hint must not hold the compute
 *    region back until its dependencies complete.
 * 3. A large blocking MPI_Send inside a send region to a rank that posts the
 *    receive only in its compute region.
 * 4. Odd placements: compute without receive/send, END twice, regions around
 *    collectives, an unknown kind (an error under Toucan, a no-op elsewhere;
 *    either way the program goes on with MPI_ERRORS_RETURN).
 */
#include "ct.h"
#include "../../headers/toucan.h"

#define NLOC 64
#define STEPS 40
#define BIG (256 * 1024)

static void diffuse(double *u, double *un, int rank, int size, int regions)
{
    int left = rank > 0 ? rank - 1 : MPI_PROC_NULL;
    int right = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
    MPI_Request rq[4];
    int i, step;

    for (i = 0; i < NLOC + 2; i++) {
        long g = (long) rank * NLOC + i - 1;
        u[i] = (double) ((g * 37) % 101) / 101.0;
    }
    if (left == MPI_PROC_NULL)
        u[0] = 1.0;
    if (right == MPI_PROC_NULL)
        u[NLOC + 1] = 0.0;
    un[0] = u[0];
    un[NLOC + 1] = u[NLOC + 1];
    for (step = 0; step < STEPS; step++) {
        if (regions)
            Toucan_Region(TOUCAN_RECEIVE);
        MPI_Irecv(&u[0], 1, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &rq[0]);
        MPI_Irecv(&u[NLOC + 1], 1, MPI_DOUBLE, right, 0, MPI_COMM_WORLD, &rq[1]);
        if (regions)
            Toucan_Region(TOUCAN_SEND);
        MPI_Isend(&u[1], 1, MPI_DOUBLE, left, 0, MPI_COMM_WORLD, &rq[2]);
        MPI_Isend(&u[NLOC], 1, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &rq[3]);
        if (regions)
            Toucan_Region(TOUCAN_COMPUTE);
        MPI_Waitall(4, rq, MPI_STATUSES_IGNORE);
        for (i = 1; i <= NLOC; i++)
            un[i] = u[i] + 0.25 * (u[i - 1] - 2.0 * u[i] + u[i + 1]);
        for (i = 1; i <= NLOC; i++)
            u[i] = un[i];
        if (regions)
            Toucan_Region(TOUCAN_END);
    }
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, i, rc;
    double *a, *b, *tmp, sum;
    char *big;
    MPI_Request rq;
    int flag, token = 0, reply = 0;

    /* Before MPI_Init a hint does nothing. */
    Toucan_Region(TOUCAN_COMPUTE);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    /* 1. Same field with and without hints. */
    a = ct_malloc(sizeof(double) * (NLOC + 2));
    b = ct_malloc(sizeof(double) * (NLOC + 2));
    tmp = ct_malloc(sizeof(double) * (NLOC + 2));
    diffuse(a, tmp, rank, size, 0);
    diffuse(b, tmp, rank, size, 1);
    CHECK(memcmp(a + 1, b + 1, sizeof(double) * NLOC) == 0, "hints changed the field");
    sum = 0.0;
    for (i = 1; i <= NLOC; i++)
        sum += a[i] * (double) (i + rank * NLOC);
    ct_say(rank, "diffusion checksum %.10e", sum);

    /* 2. Even rank r: its compute region needs the reply of r+1, which r+1
     * sends only after r's token, sent from inside that compute region. */
    if (rank % 2 == 0 && rank + 1 < size) {
        Toucan_Region(TOUCAN_RECEIVE);
        MPI_Irecv(&reply, 1, MPI_INT, rank + 1, 6, MPI_COMM_WORLD, &rq);
        Toucan_Region(TOUCAN_SEND);
        Toucan_Region(TOUCAN_COMPUTE);
        token = 1000 + rank;
        MPI_Send(&token, 1, MPI_INT, rank + 1, 5, MPI_COMM_WORLD);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        Toucan_Region(TOUCAN_END);
        CHECK(reply == 2000 + rank, "reply %d", reply);
    } else if (rank % 2 == 1) {
        MPI_Irecv(&token, 1, MPI_INT, rank - 1, 5, MPI_COMM_WORLD, &rq);
        flag = 0;
        while (!flag)
            MPI_Test(&rq, &flag, MPI_STATUS_IGNORE);
        CHECK(token == 1000 + rank - 1, "token %d", token);
        reply = 2000 + rank - 1;
        MPI_Send(&reply, 1, MPI_INT, rank - 1, 6, MPI_COMM_WORLD);
    }

    /* 3. A rendezvous-sized blocking send inside a send region; the peer
     * receives only in its compute region. Ring: rank -> rank+1. */
    big = ct_malloc(2 * BIG);
    for (i = 0; i < BIG; i++)
        big[i] = (char) ((rank * 7 + i) % 127);
    memset(big + BIG, 0, BIG);
    if (size > 1) {
        int to = (rank + 1) % size, from = (rank + size - 1) % size;
        Toucan_Region(TOUCAN_RECEIVE);
        Toucan_Region(TOUCAN_SEND);
        if (rank % 2 == 0)
            MPI_Send(big, BIG, MPI_CHAR, to, 7, MPI_COMM_WORLD);
        Toucan_Region(TOUCAN_COMPUTE);
        MPI_Recv(big + BIG, BIG, MPI_CHAR, from, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (rank % 2 == 1)
            MPI_Send(big, BIG, MPI_CHAR, to, 7, MPI_COMM_WORLD);
        Toucan_Region(TOUCAN_END);
        for (i = 0; i < BIG; i++)
            if (big[BIG + i] != (char) ((from * 7 + i) % 127))
                break;
        CHECK(i == BIG, "big message from %d wrong at byte %d", from, i);
    }
    /* (odd sizes: the last even rank sends to rank 0, which sends first too,
     * but rank 0's receive is posted by then: its own send needs only rank 1,
     * which receives first.) */

    /* 4. Odd placements. */
    Toucan_Region(TOUCAN_COMPUTE);
    Toucan_Region(TOUCAN_END);
    Toucan_Region(TOUCAN_END);
    Toucan_Region(TOUCAN_SEND);
    Toucan_Region(TOUCAN_RECEIVE);
    sum = rank + 1.0;
    MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    Toucan_Region(TOUCAN_COMPUTE);
    CHECK(sum == size * (size + 1) / 2.0, "allreduce %g", sum);
    rc = Toucan_Region(99);
    CHECK(rc == MPI_SUCCESS || ct_class(rc) == MPI_ERR_ARG, "unknown kind gave %d", rc);
    Toucan_Region(TOUCAN_RECEIVE); /* left open at MPI_Finalize */

    free(a);
    free(b);
    free(tmp);
    free(big);
    return ct_finish(rank, errs);
}
