/* Generalized requests: MPI_Grequest_start/complete with query, free and cancel
 * callbacks, completed through MPI_Test, MPI_Wait, MPI_Waitall (mixed with
 * point-to-point requests), MPI_Waitany, MPI_Testsome and MPI_Request_get_status;
 * MPI_Cancel before and after completion, MPI_Request_free before completion,
 * and error codes returned by the query and free callbacks. */
#include "ct.h"

/* Per-request state: what the query reports, and counters of callback calls. */
struct gstate {
    int source, tag, nbytes, cancelled;
    int query_rc, free_rc;
    int queries, frees, cancels, cancel_complete;
};

static int query_fn(void *extra, MPI_Status *status)
{
    struct gstate *g = extra;
    g->queries++;
    status->MPI_SOURCE = g->source;
    status->MPI_TAG = g->tag;
    MPI_Status_set_elements(status, MPI_BYTE, g->nbytes);
    MPI_Status_set_cancelled(status, g->cancelled);
    return g->query_rc;
}

static int free_fn(void *extra)
{
    struct gstate *g = extra;
    g->frees++;
    return g->free_rc;
}

static int cancel_fn(void *extra, int complete)
{
    struct gstate *g = extra;
    g->cancels++;
    g->cancel_complete = complete;
    if (!complete)
        g->cancelled = 1;
    return MPI_SUCCESS;
}

static MPI_Request start(struct gstate *g, int source, int tag, int nbytes)
{
    MPI_Request r;
    memset(g, 0, sizeof *g);
    g->source = source;
    g->tag = tag;
    g->nbytes = nbytes;
    MPI_Grequest_start(query_fn, free_fn, cancel_fn, g, &r);
    return r;
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, flag, count, idx, rc;
    struct gstate g[4];
    MPI_Request r[4];
    MPI_Status st[4];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    /* Test before completion, then Wait after it: one query, one free */
    r[0] = start(&g[0], rank, 11, 24);
    MPI_Test(&r[0], &flag, &st[0]);
    CHECK(!flag && r[0] != MPI_REQUEST_NULL, "incomplete grequest tested complete");
    MPI_Grequest_complete(r[0]);
    MPI_Wait(&r[0], &st[0]);
    MPI_Get_count(&st[0], MPI_INT, &count);
    CHECK(r[0] == MPI_REQUEST_NULL, "request not freed by MPI_Wait");
    CHECK(st[0].MPI_SOURCE == rank && st[0].MPI_TAG == 11 && count == 6,
          "status source %d tag %d count %d", st[0].MPI_SOURCE, st[0].MPI_TAG, count);
    CHECK(g[0].queries == 1 && g[0].frees == 1, "queries %d frees %d", g[0].queries, g[0].frees);

    /* Waitall over two grequests and a ring exchange */
    {
        int out = rank, in = -1;
        r[0] = start(&g[0], 1, 1, 4);
        r[1] = start(&g[1], 2, 2, 8);
        MPI_Irecv(&in, 1, MPI_INT, (rank + size - 1) % size, 5, MPI_COMM_WORLD, &r[2]);
        MPI_Isend(&out, 1, MPI_INT, (rank + 1) % size, 5, MPI_COMM_WORLD, &r[3]);
        MPI_Grequest_complete(r[1]);
        MPI_Grequest_complete(r[0]);
        MPI_Waitall(4, r, st);
        CHECK(in == (rank + size - 1) % size, "ring value %d", in);
        CHECK(st[0].MPI_TAG == 1 && st[1].MPI_TAG == 2 && st[2].MPI_TAG == 5,
              "waitall tags %d %d %d", st[0].MPI_TAG, st[1].MPI_TAG, st[2].MPI_TAG);
        CHECK(g[0].frees == 1 && g[1].frees == 1 && g[0].queries == 1 && g[1].queries == 1,
              "waitall callbacks: %d %d %d %d", g[0].queries, g[0].frees, g[1].queries, g[1].frees);
    }

    /* Waitany picks the completed one; Testsome the rest */
    r[0] = start(&g[0], 0, 20, 0);
    r[1] = start(&g[1], 0, 21, 0);
    MPI_Grequest_complete(r[1]);
    MPI_Waitany(2, r, &idx, &st[0]);
    CHECK(idx == 1 && st[0].MPI_TAG == 21 && g[1].frees == 1 && g[0].queries == 0,
          "waitany index %d tag %d", idx, st[0].MPI_TAG);
    {
        int outcount = -1, indices[2];
        MPI_Testsome(2, r, &outcount, indices, st);
        CHECK(outcount == 0, "testsome before completion: %d", outcount);
        MPI_Grequest_complete(r[0]);
        MPI_Testsome(2, r, &outcount, indices, st);
        CHECK(outcount == 1 && indices[0] == 0 && st[0].MPI_TAG == 20, "testsome: %d", outcount);
        CHECK(g[0].frees == 1, "testsome free %d", g[0].frees);
    }

    /* MPI_Request_get_status queries without freeing */
    r[0] = start(&g[0], 3, 30, 0);
    MPI_Request_get_status(r[0], &flag, &st[0]);
    CHECK(!flag, "get_status of an incomplete grequest");
    MPI_Grequest_complete(r[0]);
    MPI_Request_get_status(r[0], &flag, &st[0]);
    CHECK(flag && st[0].MPI_TAG == 30 && g[0].frees == 0 && r[0] != MPI_REQUEST_NULL,
          "get_status: flag %d tag %d frees %d", flag, st[0].MPI_TAG, g[0].frees);
    MPI_Wait(&r[0], MPI_STATUS_IGNORE);
    CHECK(g[0].frees == 1, "free after get_status and wait: %d", g[0].frees);

    /* cancel before completion: the callback says not complete; the query reports it */
    r[0] = start(&g[0], 0, 40, 0);
    MPI_Cancel(&r[0]);
    CHECK(g[0].cancels == 1 && g[0].cancel_complete == 0, "cancel before complete: %d %d",
          g[0].cancels, g[0].cancel_complete);
    MPI_Grequest_complete(r[0]);
    MPI_Wait(&r[0], &st[0]);
    MPI_Test_cancelled(&st[0], &flag);
    CHECK(flag, "cancelled grequest not reported cancelled");
    /* cancel after completion: told complete */
    r[0] = start(&g[0], 0, 41, 0);
    MPI_Grequest_complete(r[0]);
    MPI_Cancel(&r[0]);
    CHECK(g[0].cancels == 1 && g[0].cancel_complete == 1, "cancel after complete: %d",
          g[0].cancel_complete);
    MPI_Wait(&r[0], &st[0]);
    MPI_Test_cancelled(&st[0], &flag);
    CHECK(!flag, "completed grequest reported cancelled");

    /* freed before completion: the free callback runs once both MPI_Request_free and
     * MPI_Grequest_complete (through a copy of the handle) were called, without a query.
     * (MPICH 4.0.2 runs it already in MPI_Request_free, so only the end state is checked.) */
    {
        MPI_Request copy;
        r[0] = start(&g[0], 0, 50, 0);
        copy = r[0];
        MPI_Request_free(&r[0]);
        CHECK(r[0] == MPI_REQUEST_NULL, "request_free did not null the handle");
        MPI_Grequest_complete(copy);
        CHECK(g[0].frees == 1 && g[0].queries == 0, "free at completion: frees %d queries %d",
              g[0].frees, g[0].queries);
    }

    /* error codes of the callbacks become the call's */
    r[0] = start(&g[0], 0, 60, 0);
    g[0].query_rc = MPI_ERR_OTHER;
    MPI_Grequest_complete(r[0]);
    rc = MPI_Wait(&r[0], &st[0]);
    CHECK(ct_class(rc) == MPI_ERR_OTHER, "query error: wait returned class %d", ct_class(rc));
    CHECK(g[0].frees == 1, "free after a failed query: %d", g[0].frees);
    r[0] = start(&g[0], 0, 61, 0);
    g[0].free_rc = MPI_ERR_INTERN;
    MPI_Grequest_complete(r[0]);
    rc = MPI_Wait(&r[0], MPI_STATUS_IGNORE);
    CHECK(ct_class(rc) == MPI_ERR_INTERN, "free error: wait returned class %d", ct_class(rc));

    return ct_finish(rank, errs);
}
