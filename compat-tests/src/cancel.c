/* MPI_Cancel of receives: an unmatched Irecv is cancelled (Test_cancelled
 * true, no message consumed); a receive already matched cannot be
 * cancelled (Test_cancelled false, data delivered). */
#include "ct.h"

int main(int argc, char **argv)
{
    int rank, size, errs = 0, flag, to, from, v, got;
    MPI_Request rq, r2;
    MPI_Status st;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    to = (rank + 1) % size;
    from = (rank + size - 1) % size;

    /* 1. nobody sends tag 77 yet: cancel must succeed */
    got = -1;
    MPI_Irecv(&got, 1, MPI_INT, from, 77, MPI_COMM_WORLD, &rq);
    MPI_Cancel(&rq);
    MPI_Wait(&rq, &st);
    flag = 0;
    MPI_Test_cancelled(&st, &flag);
    CHECK(flag == 1, "specific-source Irecv was not cancelled");
    CHECK(got == -1, "cancelled receive wrote %d", got);

    /* ANY_SOURCE and ANY_TAG receives too, cancelled before anything is sent */
    MPI_Irecv(&got, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &rq);
    MPI_Cancel(&rq);
    flag = 0;
    while (!flag)
        MPI_Test(&rq, &flag, &st);
    flag = 0;
    MPI_Test_cancelled(&st, &flag);
    CHECK(flag == 1, "wildcard Irecv was not cancelled");

    /* now a tag-77 message arrives: the cancelled receives must not have
       consumed or reserved it */
    MPI_Barrier(MPI_COMM_WORLD);
    v = 1000 + rank;
    MPI_Isend(&v, 1, MPI_INT, to, 77, MPI_COMM_WORLD, &r2);
    got = -1;
    MPI_Recv(&got, 1, MPI_INT, from, 77, MPI_COMM_WORLD, &st);
    CHECK(got == 1000 + from, "message after cancel: got %d", got);
    flag = -1;
    MPI_Test_cancelled(&st, &flag);
    CHECK(flag == 0, "normal receive reported cancelled");
    MPI_Wait(&r2, MPI_STATUS_IGNORE);

    /* 2. a matched receive cannot be cancelled: the sender's Ssend
       completes only once our receive matched it, and it then tells us */
    if (size >= 2 && (rank ^ 1) < size) {
        int peer = rank ^ 1, go = 1;
        if (rank % 2 == 1) {
            got = -1;
            MPI_Irecv(&got, 1, MPI_INT, peer, 78, MPI_COMM_WORLD, &rq);
            MPI_Recv(&go, 1, MPI_INT, peer, 79, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Cancel(&rq);
            MPI_Wait(&rq, &st);
            flag = -1;
            MPI_Test_cancelled(&st, &flag);
            CHECK(flag == 0, "a matched receive was cancelled");
            CHECK(got == 2000 + peer, "matched receive got %d", got);
        } else {
            v = 2000 + rank;
            MPI_Ssend(&v, 1, MPI_INT, peer, 78, MPI_COMM_WORLD);
            MPI_Send(&go, 1, MPI_INT, peer, 79, MPI_COMM_WORLD);
        }
    }

    /* 3. a persistent receive can be cancelled too, and restarted */
    {
        int pv = -1;
        MPI_Recv_init(&pv, 1, MPI_INT, from, 80, MPI_COMM_WORLD, &rq);
        MPI_Start(&rq);
        MPI_Cancel(&rq);
        MPI_Wait(&rq, &st);
        flag = 0;
        MPI_Test_cancelled(&st, &flag);
        CHECK(flag == 1, "persistent receive was not cancelled");
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Start(&rq);
        v = 3000 + rank;
        MPI_Send(&v, 1, MPI_INT, to, 80, MPI_COMM_WORLD);
        MPI_Wait(&rq, &st);
        CHECK(pv == 3000 + from, "restarted persistent receive got %d", pv);
        MPI_Request_free(&rq);
    }

    return ct_finish(rank, errs);
}
