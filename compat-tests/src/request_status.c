/* MPI_Request_get_status: reports completion without freeing the request;
 * false while a receive cannot have matched; on MPI_REQUEST_NULL gives an
 * empty status. Calls that complete one operation (Sendrecv, Mprobe, Mrecv,
 * Wait, Test) leave the status's MPI_ERROR field alone. */
#include "ct.h"

int main(int argc, char **argv)
{
    int rank, size, errs = 0, flag, i, c;
    MPI_Request rq;
    MPI_Status st;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* null request */
    rq = MPI_REQUEST_NULL;
    flag = 0;
    st.MPI_SOURCE = st.MPI_TAG = 55;
    MPI_Request_get_status(rq, &flag, &st);
    MPI_Get_count(&st, MPI_INT, &c);
    CHECK(flag == 1 && st.MPI_SOURCE == MPI_ANY_SOURCE && st.MPI_TAG == MPI_ANY_TAG && c == 0,
          "get_status(REQUEST_NULL): flag %d source %d tag %d count %d", flag, st.MPI_SOURCE,
          st.MPI_TAG, c);

    /* self: a receive that is matched by our own send */
    {
        int v = 42 + rank, w = -1;
        MPI_Request s;
        MPI_Irecv(&w, 1, MPI_INT, rank, 1, MPI_COMM_WORLD, &rq);
        flag = -1;
        MPI_Request_get_status(rq, &flag, MPI_STATUS_IGNORE);
        CHECK(flag == 0, "self receive complete before any send");
        MPI_Isend(&v, 1, MPI_INT, rank, 1, MPI_COMM_WORLD, &s);
        flag = 0;
        while (!flag)
            MPI_Request_get_status(rq, &flag, &st);
        CHECK(rq != MPI_REQUEST_NULL, "get_status freed the request");
        CHECK(st.MPI_SOURCE == rank && st.MPI_TAG == 1 && w == 42 + rank,
              "self: source %d tag %d value %d", st.MPI_SOURCE, st.MPI_TAG, w);
        /* still needs a Wait (or free); Wait gives the same status */
        MPI_Wait(&rq, &st);
        CHECK(rq == MPI_REQUEST_NULL && st.MPI_SOURCE == rank && st.MPI_TAG == 1,
              "Wait after get_status: source %d tag %d", st.MPI_SOURCE, st.MPI_TAG);
        MPI_Wait(&s, MPI_STATUS_IGNORE);
    }

    /* pairs (even, odd):
       A. the even rank's receive cannot complete before the odd rank sends,
          which it does only after the even rank's "go";
       B. the odd rank's Issend cannot complete before the even rank posts
          the receive, which it does only after the odd rank's "go". */
    if (size >= 2 && (rank ^ 1) < size) {
        int peer = rank ^ 1, go = 1, v[3] = {7, 8, 9}, w[3] = {0, 0, 0};
        if (rank % 2 == 0) {
            MPI_Irecv(w, 3, MPI_INT, peer, 2, MPI_COMM_WORLD, &rq);
            for (i = 0; i < 20; i++) {
                flag = -1;
                MPI_Request_get_status(rq, &flag, MPI_STATUS_IGNORE);
                CHECK(flag == 0, "receive complete before the peer sent");
            }
            MPI_Send(&go, 1, MPI_INT, peer, 3, MPI_COMM_WORLD);
            flag = 0;
            while (!flag)
                MPI_Request_get_status(rq, &flag, &st);
            MPI_Get_count(&st, MPI_INT, &c);
            CHECK(c == 3 && st.MPI_SOURCE == peer && w[2] == 9, "pair: count %d source %d", c,
                  st.MPI_SOURCE);
            MPI_Request_free(&rq);  /* a completed request may be freed instead of waited */
            /* B */
            MPI_Recv(&go, 1, MPI_INT, peer, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Recv(w, 3, MPI_INT, peer, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(w[0] == 7, "Issend data %d", w[0]);
        } else {
            MPI_Recv(&go, 1, MPI_INT, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(v, 3, MPI_INT, peer, 2, MPI_COMM_WORLD);
            /* B */
            MPI_Issend(v, 3, MPI_INT, peer, 4, MPI_COMM_WORLD, &rq);
            for (i = 0; i < 20; i++) {
                flag = -1;
                MPI_Request_get_status(rq, &flag, MPI_STATUS_IGNORE);
                CHECK(flag == 0, "Issend complete before the receiver could have matched it");
            }
            MPI_Send(&go, 1, MPI_INT, peer, 5, MPI_COMM_WORLD);
            flag = 0;
            while (!flag)
                MPI_Request_get_status(rq, &flag, MPI_STATUS_IGNORE);
            CHECK(rq != MPI_REQUEST_NULL, "get_status freed the Issend request");
            MPI_Wait(&rq, MPI_STATUS_IGNORE);
        }
    }

    /* MPI_ERROR stays as the caller left it after single completions */
    {
        int x = rank, y = -1, done = 0;
        int next = (rank + 1) % size, prev = (rank + size - 1) % size;
        MPI_Message msg;
        MPI_Request r2;
        st.MPI_ERROR = MPI_ERR_DIMS;
        MPI_Sendrecv(&x, 1, MPI_INT, next, 8, &y, 1, MPI_INT, prev, 8, MPI_COMM_WORLD, &st);
        CHECK(st.MPI_ERROR == MPI_ERR_DIMS && y == prev, "Sendrecv changed MPI_ERROR");
        MPI_Send(&x, 1, MPI_INT, next, 9, MPI_COMM_WORLD);
        MPI_Mprobe(prev, 9, MPI_COMM_WORLD, &msg, &st);
        CHECK(st.MPI_ERROR == MPI_ERR_DIMS, "Mprobe changed MPI_ERROR");
        st.MPI_ERROR = MPI_ERR_TOPOLOGY;
        MPI_Mrecv(&y, 1, MPI_INT, &msg, &st);
        CHECK(st.MPI_ERROR == MPI_ERR_TOPOLOGY, "Mrecv changed MPI_ERROR");
        MPI_Irecv(&y, 1, MPI_INT, prev, 10, MPI_COMM_WORLD, &rq);
        MPI_Isend(&x, 1, MPI_INT, next, 10, MPI_COMM_WORLD, &r2);
        while (!done)
            MPI_Test(&rq, &done, &st);
        CHECK(st.MPI_ERROR == MPI_ERR_TOPOLOGY, "Test changed MPI_ERROR");
        st.MPI_ERROR = MPI_ERR_DIMS;
        MPI_Wait(&r2, &st);
        CHECK(st.MPI_ERROR == MPI_ERR_DIMS, "Wait changed MPI_ERROR");
    }

    return ct_finish(rank, errs);
}
