/* MPI_Request_free on active send requests: the sends still complete and
 * deliver; the receiver's reply tells the sender its buffers are reusable.
 * Also freeing inactive persistent requests and completed requests. */
#include "ct.h"

#define NS 10
#define BIGN (1 << 18)

int main(int argc, char **argv)
{
    int rank, size, errs = 0, i, j, to, from;
    int small[NS], *big, *rbig, ack = 0, ack2 = 0;
    MPI_Request rq;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    to = (rank + 1) % size;
    from = (rank + size - 1) % size;
    big = ct_malloc(sizeof(int) * BIGN);
    rbig = ct_malloc(sizeof(int) * BIGN);
    if (size < 2) {
        /* MPICH 4.0.2 loses the second freed Isend to oneself (the Recv
           hangs), so the reference cannot run this at one rank. */
        ct_say(rank, "freed sends skipped (needs >= 2 ranks)");
        free(big);
        free(rbig);
        return ct_finish(rank, errs);
    }

    for (i = 0; i < NS; i++) {
        small[i] = rank * 100 + i;
        MPI_Isend(&small[i], 1, MPI_INT, to, 1, MPI_COMM_WORLD, &rq);
        MPI_Request_free(&rq);
        CHECK(rq == MPI_REQUEST_NULL, "Request_free did not null the handle");
    }
    for (i = 0; i < BIGN; i++)
        big[i] = rank + i;
    MPI_Isend(big, BIGN, MPI_INT, to, 2, MPI_COMM_WORLD, &rq);
    MPI_Request_free(&rq);
    /* a synchronous send may be freed too */
    MPI_Issend(&small[0], 1, MPI_INT, to, 3, MPI_COMM_WORLD, &rq);
    MPI_Request_free(&rq);

    for (i = 0; i < NS; i++) {
        int v = -1;
        MPI_Recv(&v, 1, MPI_INT, from, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(v == from * 100 + i, "small message %d = %d", i, v);
    }
    MPI_Recv(rbig, BIGN, MPI_INT, from, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (j = 0; j < BIGN; j++)
        if (rbig[j] != from + j) {
            CHECK(0, "big message element %d = %d", j, rbig[j]);
            break;
        }
    {
        int v = -1;
        MPI_Recv(&v, 1, MPI_INT, from, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(v == from * 100, "Issend message = %d", v);
    }
    /* tell the sender everything arrived; only then may it reuse buffers */
    MPI_Sendrecv(&ack, 0, MPI_INT, from, 4, &ack2, 0, MPI_INT, to, 4, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    memset(big, 0, sizeof(int) * BIGN);

    /* inactive persistent request and a completed one */
    {
        int v = 1, w = -1;
        MPI_Send_init(&v, 1, MPI_INT, to, 5, MPI_COMM_WORLD, &rq);
        MPI_Request_free(&rq);
        CHECK(rq == MPI_REQUEST_NULL, "freeing an inactive persistent request");
        MPI_Send_init(&v, 1, MPI_INT, to, 6, MPI_COMM_WORLD, &rq);
        MPI_Start(&rq);
        MPI_Recv(&w, 1, MPI_INT, from, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        CHECK(rq != MPI_REQUEST_NULL, "Wait freed a persistent request");
        MPI_Request_free(&rq);
        CHECK(w == 1, "persistent message = %d", w);
    }

    /* freed sends in flight at finalize must still be delivered */
    {
        int v = 7, w = -1;
        MPI_Isend(&v, 1, MPI_INT, to, 8, MPI_COMM_WORLD, &rq);
        MPI_Request_free(&rq);
        MPI_Recv(&w, 1, MPI_INT, from, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(w == 7, "last message = %d", w);
    }

    free(big);
    free(rbig);
    return ct_finish(rank, errs);
}
