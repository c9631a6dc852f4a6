/* p2p_queue_batch.c - a window of small messages that reach their receiver all at once
 * (session 27, msgrate27: a progress step takes every message already waiting in the node's
 * shared-memory queue, not one per step).
 *
 * Ranks form a ring: each sends to rank+1 and receives from rank-1. Per window, the receiver
 * posts its receives first, a barrier follows, and only then does the sender send, so that
 * the window's messages arrive together and one step handles them in a row:
 *   - posted, in this order: tag 1 from the source, MPI_ANY_TAG from the source, tag 3 from
 *     MPI_ANY_SOURCE, tag 1 again (two posted receives with one tag: non-overtaking), and a
 *     receive of one int with tag 4 whose message has two (truncation);
 *   - sent, in this order: tag 1 (A), tag 2, tag 3, tag 5 three times (no receive posted:
 *     they wait as unexpected messages among the matched ones), tag 1 (B), a synchronous
 *     send with tag 6 (no receive posted yet either), tag 4 (two ints).
 * The receiver then waits for the first four with MPI_Waitall (A must land in the first tag-1
 * receive, B in the fourth), receives the three tag-5 messages in their order and the tag-6
 * synchronous one, and waits for the truncated one with MPI_Wait on a communicator whose
 * error handler returns (MPI_COMM_WORLD's too): MPI_ERR_TRUNCATE, its source and tag in the status. Values, sources,
 * tags and counts are checked. Windows repeat, so the queue's cells wrap around.
 * No writable globals (see ct.h).
 */
#include "ct.h"

#define WINDOWS 40

static int val(int w, int src, int k)
{
    return w * 1000 + src * 10 + k;
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    /* MPICH 4.0.2's MPI_Wait reports a receive's error through MPI_COMM_WORLD's handler. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int to = (rank + 1) % size, from = (rank - 1 + size) % size;
    int truncated = 0, in_order = 0;

    for (int w = 0; w < WINDOWS; w++) {
        int r1 = -1, rany = -1, r3 = -1, r1b = -1, rtr[2] = {-1, -1};
        MPI_Request rq[5];
        MPI_Status st[4];
        MPI_Irecv(&r1, 1, MPI_INT, from, 1, comm, &rq[0]);
        MPI_Irecv(&rany, 1, MPI_INT, from, MPI_ANY_TAG, comm, &rq[1]);
        MPI_Irecv(&r3, 1, MPI_INT, MPI_ANY_SOURCE, 3, comm, &rq[2]);
        MPI_Irecv(&r1b, 1, MPI_INT, from, 1, comm, &rq[3]);
        MPI_Irecv(rtr, 1, MPI_INT, from, 4, comm, &rq[4]);
        MPI_Barrier(comm);

        int s[9];
        for (int k = 0; k < 9; k++)
            s[k] = val(w, rank, k);
        MPI_Request sq[8];
        MPI_Isend(&s[0], 1, MPI_INT, to, 1, comm, &sq[0]);
        MPI_Isend(&s[1], 1, MPI_INT, to, 2, comm, &sq[1]);
        MPI_Isend(&s[2], 1, MPI_INT, to, 3, comm, &sq[2]);
        for (int k = 0; k < 3; k++)
            MPI_Isend(&s[3 + k], 1, MPI_INT, to, 5, comm, &sq[3 + k]);
        MPI_Isend(&s[6], 1, MPI_INT, to, 1, comm, &sq[6]);
        MPI_Issend(&s[7], 1, MPI_INT, to, 6, comm, &sq[7]);
        MPI_Send(&s[7], 2, MPI_INT, to, 4, comm);

        CHECK(MPI_Waitall(4, rq, st) == MPI_SUCCESS, "window %d: Waitall failed", w);
        CHECK(r1 == val(w, from, 0), "window %d: first tag-1 receive got %d", w, r1);
        CHECK(rany == val(w, from, 1) && st[1].MPI_TAG == 2, "window %d: any-tag got %d tag %d", w, rany,
              st[1].MPI_TAG);
        CHECK(r3 == val(w, from, 2) && st[2].MPI_SOURCE == from && st[2].MPI_TAG == 3,
              "window %d: any-source got %d from %d", w, r3, st[2].MPI_SOURCE);
        CHECK(r1b == val(w, from, 6), "window %d: second tag-1 receive got %d", w, r1b);
        for (int k = 0; k < 4; k++) {
            int n = -1;
            MPI_Get_count(&st[k], MPI_INT, &n);
            CHECK(n == 1, "window %d: receive %d counted %d", w, k, n);
        }
        int ok = r1 == val(w, from, 0) && r1b == val(w, from, 6);
        for (int k = 0; k < 3; k++) {
            int v = -1;
            MPI_Recv(&v, 1, MPI_INT, from, 5, comm, MPI_STATUS_IGNORE);
            CHECK(v == val(w, from, 3 + k), "window %d: tag-5 message %d is %d", w, k, v);
            ok &= v == val(w, from, 3 + k);
        }
        in_order += ok;
        int v6 = -1;
        MPI_Recv(&v6, 1, MPI_INT, from, 6, comm, MPI_STATUS_IGNORE);
        CHECK(v6 == val(w, from, 7), "window %d: synchronous message is %d", w, v6);

        MPI_Status ts;
        int rc = MPI_Wait(&rq[4], &ts);
        int cls = -1;
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_TRUNCATE, "window %d: truncated receive gave class %d", w, cls);
        CHECK(rq[4] == MPI_REQUEST_NULL, "window %d: truncated request not freed", w);
        CHECK(ts.MPI_SOURCE == from && ts.MPI_TAG == 4, "window %d: truncated status %d/%d", w,
              ts.MPI_SOURCE, ts.MPI_TAG);
        CHECK(rtr[1] == -1, "window %d: the truncated receive wrote past its buffer", w);
        truncated += cls == MPI_ERR_TRUNCATE;
        MPI_Waitall(8, sq, MPI_STATUSES_IGNORE);
    }
    ct_say(rank, "windows in order: %d of %d", in_order, WINDOWS);
    ct_say(rank, "truncations reported: %d of %d", truncated, WINDOWS);
    MPI_Comm_free(&comm);
    MPI_Barrier(MPI_COMM_WORLD);
    ct_say(rank, errs ? "FAILED" : "OK");
    MPI_Finalize();
    return errs != 0;
}
