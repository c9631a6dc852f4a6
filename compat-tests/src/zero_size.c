/* Zero-size messages: blocking, nonblocking, synchronous, to self, probe
 * of an empty message, empty Sendrecv, empty collectives. Receive buffers
 * must stay untouched. */
#include "ct.h"

int main(int argc, char **argv)
{
    int rank, size, errs = 0, i, c, flag;
    int to, from;
    int buf[8], sbuf[8];
    MPI_Status st;
    MPI_Request rq[4];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    to = (rank + 1) % size;
    from = (rank + size - 1) % size;
    for (i = 0; i < 8; i++)
        sbuf[i] = 1000 + i;

    /* nonblocking ring */
    for (i = 0; i < 8; i++)
        buf[i] = -1;
    MPI_Irecv(buf, 8, MPI_INT, from, 1, MPI_COMM_WORLD, &rq[0]);
    MPI_Isend(sbuf, 0, MPI_INT, to, 1, MPI_COMM_WORLD, &rq[1]);
    MPI_Wait(&rq[0], &st);
    MPI_Wait(&rq[1], MPI_STATUS_IGNORE);
    MPI_Get_count(&st, MPI_INT, &c);
    CHECK(c == 0 && st.MPI_SOURCE == from && st.MPI_TAG == 1, "Irecv: count %d source %d tag %d",
          c, st.MPI_SOURCE, st.MPI_TAG);
    for (i = 0; i < 8; i++)
        CHECK(buf[i] == -1, "buffer touched by empty message: buf[%d] = %d", i, buf[i]);

    /* Issend of nothing still synchronises */
    MPI_Irecv(buf, 8, MPI_INT, from, 2, MPI_COMM_WORLD, &rq[0]);
    MPI_Issend(sbuf, 0, MPI_INT, to, 2, MPI_COMM_WORLD, &rq[1]);
    MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);

    /* zero-count message followed by a real one, same tag: order holds */
    MPI_Isend(sbuf, 0, MPI_INT, to, 3, MPI_COMM_WORLD, &rq[0]);
    MPI_Isend(sbuf, 8, MPI_INT, to, 3, MPI_COMM_WORLD, &rq[1]);
    MPI_Recv(buf, 8, MPI_INT, from, 3, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, MPI_INT, &c);
    CHECK(c == 0, "first message count %d", c);
    MPI_Recv(buf, 8, MPI_INT, from, 3, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, MPI_INT, &c);
    CHECK(c == 8 && buf[7] == 1007, "second message count %d", c);
    MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);

    /* probe sees an empty message */
    MPI_Isend(sbuf, 0, MPI_BYTE, to, 4, MPI_COMM_WORLD, &rq[0]);
    MPI_Probe(from, 4, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, MPI_BYTE, &c);
    CHECK(c == 0 && st.MPI_SOURCE == from, "probe count %d", c);
    flag = 0;
    MPI_Iprobe(from, 4, MPI_COMM_WORLD, &flag, &st);
    CHECK(flag, "Iprobe did not see the probed empty message");
    MPI_Recv(NULL, 0, MPI_BYTE, from, 4, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, MPI_BYTE, &c);
    CHECK(c == 0, "count %d", c);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);

    /* self and Sendrecv */
    MPI_Sendrecv(sbuf, 0, MPI_INT, rank, 5, buf, 8, MPI_INT, rank, 5, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, MPI_INT, &c);
    CHECK(c == 0 && st.MPI_SOURCE == rank && st.MPI_TAG == 5, "self Sendrecv count %d", c);
    MPI_Sendrecv(sbuf, 0, MPI_INT, to, 6, buf, 0, MPI_INT, from, 6, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, MPI_INT, &c);
    CHECK(c == 0 && st.MPI_SOURCE == from, "ring Sendrecv count %d", c);

    /* blocking Send/Recv of nothing between pairs */
    if (size >= 2) {
        int peer = rank ^ 1;
        if (peer < size) {
            if (rank % 2 == 0) {
                MPI_Send(sbuf, 0, MPI_INT, peer, 7, MPI_COMM_WORLD);
                MPI_Recv(buf, 0, MPI_INT, peer, 7, MPI_COMM_WORLD, &st);
            } else {
                MPI_Recv(buf, 0, MPI_INT, peer, 7, MPI_COMM_WORLD, &st);
                MPI_Send(sbuf, 0, MPI_INT, peer, 7, MPI_COMM_WORLD);
            }
            MPI_Get_count(&st, MPI_INT, &c);
            CHECK(c == 0 && st.MPI_SOURCE == peer, "pair count %d source %d", c, st.MPI_SOURCE);
        }
    }

    /* empty collectives */
    for (i = 0; i < 8; i++)
        buf[i] = -1;
    MPI_Bcast(buf, 0, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Allreduce(sbuf, buf, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Reduce(sbuf, buf, 0, MPI_INT, MPI_SUM, size - 1, MPI_COMM_WORLD);
    MPI_Allgather(sbuf, 0, MPI_INT, buf, 0, MPI_INT, MPI_COMM_WORLD);
    MPI_Alltoall(sbuf, 0, MPI_INT, buf, 0, MPI_INT, MPI_COMM_WORLD);
    for (i = 0; i < 8; i++)
        CHECK(buf[i] == -1, "empty collective touched buf[%d] = %d", i, buf[i]);

    return ct_finish(rank, errs);
}
