/* Truncation: a receive buffer too small for the message gives an error of
 * class MPI_ERR_TRUNCATE under MPI_ERRORS_RETURN (Recv, Wait, Waitall with
 * MPI_ERR_IN_STATUS), never writes past the buffer, and communication works
 * normally afterwards. Small (eager) and large messages. */
#include "ct.h"

#define BIG 300000
#define GUARD 16

int main(int argc, char **argv)
{
    int rank, size, errs = 0, i, rc, to, from, round;
    int *sb, *rb;
    MPI_Request rq[3];
    MPI_Status st[3];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    to = (rank + 1) % size;
    from = (rank + size - 1) % size;

    sb = ct_malloc(sizeof(int) * BIG);
    rb = ct_malloc(sizeof(int) * (BIG + GUARD));
    for (i = 0; i < BIG; i++)
        sb[i] = i;

    for (round = 0; round < 2; round++) {
        int n = round == 0 ? 8 : BIG;   /* message length */
        int cap = round == 0 ? 4 : 1000; /* receive capacity */

        /* blocking receive */
        for (i = 0; i < cap + GUARD; i++)
            rb[i] = -1;
        MPI_Isend(sb, n, MPI_INT, to, 1, MPI_COMM_WORLD, &rq[0]);
        rc = MPI_Recv(rb, cap, MPI_INT, from, 1, MPI_COMM_WORLD, &st[0]);
        CHECK(rc != MPI_SUCCESS && ct_class(rc) == MPI_ERR_TRUNCATE,
              "round %d Recv: rc class %d, expected MPI_ERR_TRUNCATE", round, ct_class(rc));
        for (i = cap; i < cap + GUARD; i++)
            CHECK(rb[i] == -1, "round %d: wrote past the receive buffer at %d", round, i);
        rc = MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
        CHECK(rc == MPI_SUCCESS, "round %d: send side rc class %d", round, ct_class(rc));

        /* nonblocking receive, error reported by MPI_Wait */
        for (i = 0; i < cap + GUARD; i++)
            rb[i] = -1;
        MPI_Irecv(rb, cap, MPI_INT, from, 2, MPI_COMM_WORLD, &rq[1]);
        MPI_Isend(sb, n, MPI_INT, to, 2, MPI_COMM_WORLD, &rq[0]);
        rc = MPI_Wait(&rq[1], &st[1]);
        CHECK(rc != MPI_SUCCESS && ct_class(rc) == MPI_ERR_TRUNCATE,
              "round %d Wait: rc class %d, expected MPI_ERR_TRUNCATE", round, ct_class(rc));
        CHECK(rq[1] == MPI_REQUEST_NULL, "round %d: failed request not freed", round);
        for (i = cap; i < cap + GUARD; i++)
            CHECK(rb[i] == -1, "round %d: Irecv wrote past the buffer at %d", round, i);
        MPI_Wait(&rq[0], MPI_STATUS_IGNORE);

        /* Waitall: one truncated receive and one good one */
        {
            int good[8] = {0};
            MPI_Irecv(rb, cap, MPI_INT, from, 3, MPI_COMM_WORLD, &rq[0]);
            MPI_Irecv(good, 8, MPI_INT, from, 4, MPI_COMM_WORLD, &rq[1]);
            MPI_Isend(sb, n, MPI_INT, to, 3, MPI_COMM_WORLD, &rq[2]);
            MPI_Send(sb, 8, MPI_INT, to, 4, MPI_COMM_WORLD);
            st[0].MPI_ERROR = st[1].MPI_ERROR = -12345;
            rc = MPI_Waitall(2, rq, st);
            CHECK(rc == MPI_ERR_IN_STATUS, "round %d Waitall rc class %d, expected ERR_IN_STATUS",
                  round, ct_class(rc));
            CHECK(ct_class(st[0].MPI_ERROR) == MPI_ERR_TRUNCATE,
                  "round %d Waitall status[0] error class %d", round, ct_class(st[0].MPI_ERROR));
            CHECK(st[1].MPI_ERROR == MPI_SUCCESS || st[1].MPI_ERROR == MPI_ERR_PENDING,
                  "round %d Waitall status[1] error %d", round, st[1].MPI_ERROR);
            if (st[1].MPI_ERROR == MPI_ERR_PENDING)
                MPI_Wait(&rq[1], MPI_STATUS_IGNORE);
            CHECK(good[7] == 7, "round %d: good message got %d", round, good[7]);
            MPI_Wait(&rq[2], MPI_STATUS_IGNORE);
        }
    }

    /* communication still works, and a fitting receive is no error */
    {
        int v = rank, got = -1, sum = -1;
        rc = MPI_Sendrecv(&v, 1, MPI_INT, to, 9, &got, 1, MPI_INT, from, 9, MPI_COMM_WORLD,
                          MPI_STATUS_IGNORE);
        CHECK(rc == MPI_SUCCESS && got == from, "after truncation: rc %d got %d", rc, got);
        rc = MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        CHECK(rc == MPI_SUCCESS && sum == size * (size - 1) / 2, "after truncation: sum %d", sum);
    }

    free(sb);
    free(rb);
    return ct_finish(rank, errs);
}
