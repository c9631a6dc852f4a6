/* Matched probes: MPI_Mprobe / MPI_Improbe take a message out of matching;
 * MPI_Mrecv / MPI_Imrecv receive it. A later receive with the same envelope
 * must get the next message, not the probed one. */
#include "ct.h"

int main(int argc, char **argv)
{
    int rank, size, errs = 0, i, c, flag, to, from;
    int sv[6][4];
    MPI_Request rq[6];
    MPI_Status st;
    MPI_Message m1, m2;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    to = (rank + 1) % size;
    from = (rank + size - 1) % size;

    flag = -1;
    m1 = MPI_MESSAGE_NULL;
    MPI_Improbe(MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &flag, &m1, &st);
    CHECK(flag == 0, "Improbe found a message that was never sent");

    /* six messages, same tag: values 0..5 in order */
    for (i = 0; i < 6; i++) {
        int j;
        for (j = 0; j < 4; j++)
            sv[i][j] = rank * 100 + i * 10 + j;
        MPI_Isend(sv[i], i == 5 ? 4 : 2 + (i % 3), MPI_INT, to, 7, MPI_COMM_WORLD, &rq[i]);
    }

    /* 1. Mprobe takes message 0; a plain Recv then gets message 1 */
    MPI_Mprobe(from, 7, MPI_COMM_WORLD, &m1, &st);
    CHECK(m1 != MPI_MESSAGE_NULL, "Mprobe gave MPI_MESSAGE_NULL");
    MPI_Get_count(&st, MPI_INT, &c);
    CHECK(st.MPI_SOURCE == from && st.MPI_TAG == 7 && c == 2, "Mprobe: source %d tag %d count %d",
          st.MPI_SOURCE, st.MPI_TAG, c);
    {
        int v[4] = {-1, -1, -1, -1};
        MPI_Recv(v, 4, MPI_INT, from, 7, MPI_COMM_WORLD, &st);
        CHECK(v[0] == from * 100 + 10, "Recv after Mprobe got %d, expected message 1", v[0]);
        for (i = 0; i < 4; i++)
            v[i] = -1;
        MPI_Mrecv(v, 4, MPI_INT, &m1, &st);
        CHECK(m1 == MPI_MESSAGE_NULL, "Mrecv did not reset the message handle");
        MPI_Get_count(&st, MPI_INT, &c);
        CHECK(v[0] == from * 100 && v[1] == from * 100 + 1 && c == 2,
              "Mrecv got %d %d count %d, expected message 0", v[0], v[1], c);
    }

    /* 2. Improbe (polling) and Imrecv for message 2; two probes in a row
       take two different messages (2 then 3) */
    flag = 0;
    while (!flag)
        MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &m1, &st);
    MPI_Get_count(&st, MPI_INT, &c);
    CHECK(st.MPI_SOURCE == from && c == 4, "Improbe: source %d count %d", st.MPI_SOURCE, c);
    MPI_Mprobe(from, MPI_ANY_TAG, MPI_COMM_WORLD, &m2, &st);
    MPI_Get_count(&st, MPI_INT, &c);
    CHECK(c == 2, "second Mprobe count %d (expected message 3)", c);
    {
        int a[4] = {-1, -1, -1, -1}, b[4] = {-1, -1, -1, -1};
        MPI_Request r2[2];
        MPI_Status s2[2];
        /* receive them in the opposite order */
        MPI_Imrecv(b, 4, MPI_INT, &m2, &r2[0]);
        MPI_Imrecv(a, 4, MPI_INT, &m1, &r2[1]);
        CHECK(m1 == MPI_MESSAGE_NULL && m2 == MPI_MESSAGE_NULL, "Imrecv did not reset handles");
        MPI_Waitall(2, r2, s2);
        CHECK(a[0] == from * 100 + 20 && a[3] == from * 100 + 23, "message 2 got %d..%d", a[0], a[3]);
        CHECK(b[0] == from * 100 + 30 && b[2] == -1, "message 3 got %d, %d", b[0], b[2]);
        CHECK(s2[0].MPI_SOURCE == from && s2[0].MPI_TAG == 7, "Imrecv status source %d tag %d",
              s2[0].MPI_SOURCE, s2[0].MPI_TAG);
    }

    /* 3. messages 4 and 5: Mprobe with a large enough buffer, Mrecv of 4 */
    for (i = 4; i < 6; i++) {
        int v[4] = {-1, -1, -1, -1};
        MPI_Mprobe(MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &m1, &st);
        MPI_Get_count(&st, MPI_INT, &c);
        MPI_Mrecv(v, c, MPI_INT, &m1, &st);
        CHECK(v[0] == from * 100 + i * 10 && c == (i == 5 ? 4 : 3), "message %d got %d count %d", i,
              v[0], c);
    }
    MPI_Waitall(6, rq, MPI_STATUSES_IGNORE);

    flag = -1;
    MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &m1, &st);
    CHECK(flag == 0, "a message is left over");

    return ct_finish(rank, errs);
}
