/* Persistent requests: MPI_Send_init / MPI_Recv_init / MPI_Ssend_init /
 * MPI_Rsend_init reused over many iterations with MPI_Start and
 * MPI_Startall, new data each iteration, inactive requests after Wait. */
#include "ct.h"

#define N 2048
#define ITERS 12

int main(int argc, char **argv)
{
    int rank, size, errs = 0, i, it, to, from, flag;
    int *sr, *sl, *rr, *rl;
    MPI_Request rq[4];
    MPI_Status st[4];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    to = (rank + 1) % size;
    from = (rank + size - 1) % size;
    sr = ct_malloc(sizeof(int) * N);
    sl = ct_malloc(sizeof(int) * N);
    rr = ct_malloc(sizeof(int) * N);
    rl = ct_malloc(sizeof(int) * N);

    /* both directions around the ring */
    MPI_Recv_init(rl, N, MPI_INT, from, 1, MPI_COMM_WORLD, &rq[0]);
    MPI_Recv_init(rr, N, MPI_INT, to, 2, MPI_COMM_WORLD, &rq[1]);
    MPI_Send_init(sr, N, MPI_INT, to, 1, MPI_COMM_WORLD, &rq[2]);
    MPI_Ssend_init(sl, N, MPI_INT, from, 2, MPI_COMM_WORLD, &rq[3]);

    /* waiting on an inactive persistent request returns at once, empty status */
    {
        int c = -1;
        MPI_Wait(&rq[0], &st[0]);
        MPI_Get_count(&st[0], MPI_INT, &c);
        CHECK(rq[0] != MPI_REQUEST_NULL, "Wait freed an inactive persistent request");
        CHECK(st[0].MPI_SOURCE == MPI_ANY_SOURCE && st[0].MPI_TAG == MPI_ANY_TAG && c == 0,
              "inactive Wait status: source %d tag %d count %d", st[0].MPI_SOURCE, st[0].MPI_TAG, c);
        flag = 0;
        MPI_Test(&rq[1], &flag, MPI_STATUS_IGNORE);
        CHECK(flag == 1, "Test of an inactive request gave flag 0");
    }

    for (it = 0; it < ITERS; it++) {
        int nn = (it % 3 == 2) ? 1 : N;  /* count is fixed; data changes */
        (void) nn;
        for (i = 0; i < N; i++) {
            sr[i] = rank * 100000 + it * 1000 + i % 1000;
            sl[i] = -(rank * 100000 + it * 1000 + i % 1000);
        }
        if (it % 2 == 0) {
            MPI_Startall(4, rq);
        } else {
            MPI_Start(&rq[1]);
            MPI_Start(&rq[0]);
            MPI_Start(&rq[3]);
            MPI_Start(&rq[2]);
        }
        if (it % 3 == 0) {
            MPI_Waitall(4, rq, st);
        } else {
            int done = 0, idx;
            while (done < 4) {
                MPI_Waitany(4, rq, &idx, &st[0]);
                CHECK(idx != MPI_UNDEFINED, "Waitany found no active request");
                if (idx == MPI_UNDEFINED)
                    break;
                done++;
            }
            MPI_Waitany(4, rq, &idx, MPI_STATUS_IGNORE);
            CHECK(idx == MPI_UNDEFINED, "inactive persistent requests counted as active");
        }
        for (i = 0; i < 4; i++)
            CHECK(rq[i] != MPI_REQUEST_NULL, "iteration %d: request %d freed by wait", it, i);
        for (i = 0; i < N; i++) {
            if (rl[i] != from * 100000 + it * 1000 + i % 1000 ||
                rr[i] != -(to * 100000 + it * 1000 + i % 1000)) {
                CHECK(0, "iteration %d element %d: %d %d", it, i, rl[i], rr[i]);
                break;
            }
        }
    }

    /* Rsend_init: receiver posts, then the ring barrier says ready */
    {
        int v = 0, w = -1, dummy = 0, dummy2;
        MPI_Request rs, rr2;
        MPI_Rsend_init(&v, 1, MPI_INT, to, 3, MPI_COMM_WORLD, &rs);
        MPI_Recv_init(&w, 1, MPI_INT, from, 3, MPI_COMM_WORLD, &rr2);
        for (it = 0; it < 5; it++) {
            MPI_Start(&rr2);
            MPI_Sendrecv(&dummy, 1, MPI_INT, from, 4, &dummy2, 1, MPI_INT, to, 4, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
            v = rank * 10 + it;
            MPI_Start(&rs);
            MPI_Wait(&rs, MPI_STATUS_IGNORE);
            MPI_Wait(&rr2, MPI_STATUS_IGNORE);
            CHECK(w == from * 10 + it, "Rsend_init iteration %d got %d", it, w);
        }
        MPI_Request_free(&rs);
        MPI_Request_free(&rr2);
    }

    for (i = 0; i < 4; i++) {
        MPI_Request_free(&rq[i]);
        CHECK(rq[i] == MPI_REQUEST_NULL, "Request_free did not null request %d", i);
    }
    free(sr);
    free(sl);
    free(rr);
    free(rl);
    return ct_finish(rank, errs);
}
