/* Waits over mixed kinds of requests, and MPI_Sendrecv of more than 256 bytes, between
 * ring neighbours (issue 16, p2p7: with point-to-point passed through at V=1, a wait over
 * requests that are all real operations on MPI_COMM_WORLD polls them together; anything
 * else in the set, a request on another communicator, a nonblocking collective, a null
 * handle, takes the general path). Checks data, statuses (source, tag, count), null handles
 * and truncation errors (MPI_ERR_IN_STATUS with statuses given and ignored). */
#include "ct.h"

#define N 300 /* doubles: 2400 bytes, more than a tiny message */

static int ecls(int code)
{
    int c = -1;
    MPI_Error_class(code, &c);
    return c;
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, i, k;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    double *sb = malloc(N * sizeof(double)), *rb = malloc(N * sizeof(double));
    int si[4], ri[4] = {0, 0, 0, 0};
    MPI_Request rq[8];
    MPI_Status st[8];
    MPI_Comm dup, created;
    MPI_Group g;

    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_group(MPI_COMM_WORLD, &g);
    MPI_Comm_create(MPI_COMM_WORLD, g, &created); /* no real twin: the general path */
    MPI_Group_free(&g);

    for (k = 0; k < 3; k++) {
        /* 1. Waitall over receives and sends on MPI_COMM_WORLD (small and large), a receive
         * on a Comm_create'd communicator, a null handle; statuses given. */
        for (i = 0; i < N; i++)
            sb[i] = rank * 1000.0 + k + i;
        for (i = 0; i < 4; i++)
            si[i] = rank * 100 + k * 10 + i;
        MPI_Irecv(&ri[0], 1, MPI_INT, left, 10 + k, MPI_COMM_WORLD, &rq[0]);
        MPI_Irecv(rb, N, MPI_DOUBLE, left, 20 + k, MPI_COMM_WORLD, &rq[1]);
        MPI_Irecv(&ri[1], 1, MPI_INT, MPI_ANY_SOURCE, 30 + k, created, &rq[2]);
        rq[3] = MPI_REQUEST_NULL;
        MPI_Isend(&si[0], 1, MPI_INT, right, 10 + k, MPI_COMM_WORLD, &rq[4]);
        MPI_Isend(sb, N, MPI_DOUBLE, right, 20 + k, MPI_COMM_WORLD, &rq[5]);
        MPI_Isend(&si[1], 1, MPI_INT, right, 30 + k, created, &rq[6]);
        MPI_Waitall(7, rq, st);
        for (i = 0; i < 7; i++)
            CHECK(rq[i] == MPI_REQUEST_NULL, "round %d: request %d not null after Waitall", k, i);
        CHECK(ri[0] == left * 100 + k * 10, "round %d: int %d", k, ri[0]);
        CHECK(ri[1] == left * 100 + k * 10 + 1, "round %d: int on created %d", k, ri[1]);
        for (i = 0; i < N; i++)
            if (rb[i] != left * 1000.0 + k + i) {
                CHECK(0, "round %d: element %d = %g", k, i, rb[i]);
                break;
            }
        {
            int c0 = -1, c1 = -1, c2 = -1, c3 = -1;
            MPI_Get_count(&st[0], MPI_INT, &c0);
            MPI_Get_count(&st[1], MPI_DOUBLE, &c1);
            MPI_Get_count(&st[2], MPI_INT, &c2);
            MPI_Get_count(&st[3], MPI_INT, &c3);
            CHECK(st[0].MPI_SOURCE == left && st[0].MPI_TAG == 10 + k && c0 == 1,
                  "round %d: status 0: %d %d %d", k, st[0].MPI_SOURCE, st[0].MPI_TAG, c0);
            CHECK(st[1].MPI_SOURCE == left && st[1].MPI_TAG == 20 + k && c1 == N,
                  "round %d: status 1: %d %d %d", k, st[1].MPI_SOURCE, st[1].MPI_TAG, c1);
            CHECK(st[2].MPI_SOURCE == left && st[2].MPI_TAG == 30 + k && c2 == 1,
                  "round %d: status 2: %d %d %d", k, st[2].MPI_SOURCE, st[2].MPI_TAG, c2);
            CHECK(st[3].MPI_SOURCE == MPI_ANY_SOURCE && st[3].MPI_TAG == MPI_ANY_TAG && c3 == 0,
                  "round %d: null status: %d %d %d", k, st[3].MPI_SOURCE, st[3].MPI_TAG, c3);
        }

        /* 2. Waitall of world requests only, statuses ignored; a wildcard receive; then a
         * Waitall with a nonblocking barrier among them. */
        MPI_Irecv(&ri[2], 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, dup, &rq[0]);
        MPI_Irecv(rb, N, MPI_DOUBLE, left, 40, MPI_COMM_WORLD, &rq[1]);
        MPI_Isend(&si[2], 1, MPI_INT, right, 50 + k, dup, &rq[2]);
        MPI_Isend(sb, N, MPI_DOUBLE, right, 40, MPI_COMM_WORLD, &rq[3]);
        MPI_Waitall(4, rq, MPI_STATUSES_IGNORE);
        CHECK(ri[2] == left * 100 + k * 10 + 2, "round %d: wildcard int %d", k, ri[2]);
        CHECK(rb[N - 1] == left * 1000.0 + k + N - 1, "round %d: last %g", k, rb[N - 1]);
        MPI_Irecv(&ri[3], 1, MPI_INT, left, 60, MPI_COMM_WORLD, &rq[0]);
        MPI_Ibarrier(MPI_COMM_WORLD, &rq[1]);
        MPI_Isend(&si[3], 1, MPI_INT, right, 60, MPI_COMM_WORLD, &rq[2]);
        MPI_Waitall(3, rq, st);
        CHECK(ri[3] == left * 100 + k * 10 + 3 && st[0].MPI_SOURCE == left && st[0].MPI_TAG == 60,
              "round %d: with Ibarrier: %d from %d tag %d", k, ri[3], st[0].MPI_SOURCE, st[0].MPI_TAG);

        /* 3. MPI_Wait on one receive, with a status and without. */
        MPI_Irecv(&ri[0], 1, MPI_INT, MPI_ANY_SOURCE, 70, MPI_COMM_WORLD, &rq[0]);
        MPI_Send(&si[0], 1, MPI_INT, right, 70, MPI_COMM_WORLD);
        MPI_Wait(&rq[0], &st[0]);
        CHECK(rq[0] == MPI_REQUEST_NULL && st[0].MPI_SOURCE == left && st[0].MPI_TAG == 70,
              "round %d: Wait status %d %d", k, st[0].MPI_SOURCE, st[0].MPI_TAG);
        MPI_Irecv(rb, N, MPI_DOUBLE, left, 71, MPI_COMM_WORLD, &rq[0]);
        MPI_Isend(sb, N, MPI_DOUBLE, right, 71, MPI_COMM_WORLD, &rq[1]);
        MPI_Wait(&rq[1], MPI_STATUS_IGNORE);
        MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
        CHECK(rq[0] == MPI_REQUEST_NULL && rq[1] == MPI_REQUEST_NULL, "round %d: Wait nulls", k);

        /* 4. MPI_Sendrecv of N doubles (more than 256 bytes), one wildcard receive. */
        for (i = 0; i < N; i++)
            rb[i] = -1;
        MPI_Sendrecv(sb, N, MPI_DOUBLE, right, 80 + k, rb, N, MPI_DOUBLE,
                     k == 1 ? MPI_ANY_SOURCE : left, k == 2 ? MPI_ANY_TAG : 80 + k,
                     MPI_COMM_WORLD, &st[0]);
        {
            int c = -1;
            MPI_Get_count(&st[0], MPI_DOUBLE, &c);
            CHECK(st[0].MPI_SOURCE == left && st[0].MPI_TAG == 80 + k && c == N,
                  "round %d: Sendrecv status %d %d %d", k, st[0].MPI_SOURCE, st[0].MPI_TAG, c);
        }
        for (i = 0; i < N; i++)
            if (rb[i] != left * 1000.0 + k + i) {
                CHECK(0, "round %d: Sendrecv element %d = %g", k, i, rb[i]);
                break;
            }
    }

    /* 5. A truncated receive in a Waitall: MPI_ERR_IN_STATUS, with statuses and without. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    for (k = 0; k < 2; k++) {
        int big[8] = {1, 2, 3, 4, 5, 6, 7, 8}, small[2] = {0, 0}, rc;
        MPI_Irecv(small, 2, MPI_INT, left, 90, MPI_COMM_WORLD, &rq[0]);
        MPI_Isend(big, 8, MPI_INT, right, 90, MPI_COMM_WORLD, &rq[1]);
        st[0].MPI_ERROR = -1;
        rc = MPI_Waitall(2, rq, k == 0 ? st : MPI_STATUSES_IGNORE);
        ct_say(rank, "truncation in Waitall (%s statuses): %s", k == 0 ? "with" : "without",
               ecls(rc) == MPI_ERR_IN_STATUS ? "MPI_ERR_IN_STATUS" : "another class");
        if (k == 0)
            ct_say(rank, "  receive's status: %s",
                   ecls(st[0].MPI_ERROR) == MPI_ERR_TRUNCATE ? "truncated" : "other");
        /* The standard lets a failed Waitall leave other requests pending. */
        for (i = 0; i < 2; i++)
            if (rq[i] != MPI_REQUEST_NULL)
                MPI_Wait(&rq[i], MPI_STATUS_IGNORE);
        (void)small; /* what a truncated receive leaves in its buffer is not defined */
        MPI_Barrier(MPI_COMM_WORLD);
    }

    MPI_Comm_free(&created);
    MPI_Comm_free(&dup);
    free(sb);
    free(rb);
    return ct_finish(rank, errs);
}
