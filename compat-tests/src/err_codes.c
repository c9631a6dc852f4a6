/* Error classes under MPI_ERRORS_RETURN: invalid rank (MPI_ERR_RANK),
 * invalid tag (MPI_ERR_TAG), negative count (MPI_ERR_COUNT),
 * MPI_DATATYPE_NULL (MPI_ERR_TYPE), MPI_COMM_NULL (MPI_ERR_COMM), invalid
 * root (MPI_ERR_ROOT), MPI_OP_NULL (MPI_ERR_OP); communication works
 * normally afterwards. */
#include "ct.h"

#define EXPECT(call, cls)                                                                   \
    do {                                                                                    \
        int rc_ = (call);                                                                   \
        CHECK(rc_ != MPI_SUCCESS && ct_class(rc_) == (cls),                                 \
              "%s: got class %d, expected %s (%d)", #call, rc_ == MPI_SUCCESS ? 0 : ct_class(rc_), \
              #cls, (cls));                                                                 \
        n_checked++;                                                                        \
    } while (0)

int main(int argc, char **argv)
{
    int rank, size, errs = 0, n_checked = 0, tag_ub = 32767, flag;
    int *tub;
    int buf[4] = {0, 0, 0, 0}, rbuf[4];
    MPI_Request rq;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* errors on MPI_COMM_NULL go to COMM_SELF (MPI-4) or COMM_WORLD (MPI-3) */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tub, &flag);
    if (flag)
        tag_ub = *tub;

    /* ranks */
    EXPECT(MPI_Send(buf, 1, MPI_INT, size, 0, MPI_COMM_WORLD), MPI_ERR_RANK);
    EXPECT(MPI_Send(buf, 1, MPI_INT, -5, 0, MPI_COMM_WORLD), MPI_ERR_RANK);
    EXPECT(MPI_Recv(rbuf, 1, MPI_INT, size + 3, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE), MPI_ERR_RANK);
    EXPECT(MPI_Isend(buf, 1, MPI_INT, size, 0, MPI_COMM_WORLD, &rq), MPI_ERR_RANK);
    EXPECT(MPI_Irecv(rbuf, 1, MPI_INT, -7, 0, MPI_COMM_WORLD, &rq), MPI_ERR_RANK);
    EXPECT(MPI_Ssend(buf, 1, MPI_INT, size, 0, MPI_COMM_WORLD), MPI_ERR_RANK);
    EXPECT(MPI_Probe(size, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE), MPI_ERR_RANK);

    /* tags */
    EXPECT(MPI_Send(buf, 1, MPI_INT, rank, -5, MPI_COMM_WORLD), MPI_ERR_TAG);
    EXPECT(MPI_Send(buf, 1, MPI_INT, rank, MPI_ANY_TAG, MPI_COMM_WORLD), MPI_ERR_TAG);
    if (tag_ub < 2147483647)
        EXPECT(MPI_Send(buf, 1, MPI_INT, rank, tag_ub + 1, MPI_COMM_WORLD), MPI_ERR_TAG);
    else
        n_checked++;
    EXPECT(MPI_Recv(rbuf, 1, MPI_INT, rank, -5, MPI_COMM_WORLD, MPI_STATUS_IGNORE), MPI_ERR_TAG);
    EXPECT(MPI_Irecv(rbuf, 1, MPI_INT, rank, -3, MPI_COMM_WORLD, &rq), MPI_ERR_TAG);

    /* counts */
    EXPECT(MPI_Send(buf, -1, MPI_INT, rank, 0, MPI_COMM_WORLD), MPI_ERR_COUNT);
    EXPECT(MPI_Recv(rbuf, -1, MPI_INT, rank, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE), MPI_ERR_COUNT);
    EXPECT(MPI_Bcast(buf, -1, MPI_INT, 0, MPI_COMM_WORLD), MPI_ERR_COUNT);

    /* datatypes */
    EXPECT(MPI_Send(buf, 1, MPI_DATATYPE_NULL, rank, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
    EXPECT(MPI_Recv(rbuf, 1, MPI_DATATYPE_NULL, rank, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
           MPI_ERR_TYPE);
    /* (not a reduction: MPICH 4.0.2 reports MPI_ERR_OP for a null type there) */
    EXPECT(MPI_Bcast(buf, 1, MPI_DATATYPE_NULL, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);

    /* communicators */
    EXPECT(MPI_Send(buf, 1, MPI_INT, 0, 0, MPI_COMM_NULL), MPI_ERR_COMM);
    EXPECT(MPI_Recv(rbuf, 1, MPI_INT, 0, 0, MPI_COMM_NULL, MPI_STATUS_IGNORE), MPI_ERR_COMM);
    EXPECT(MPI_Barrier(MPI_COMM_NULL), MPI_ERR_COMM);
    {
        int r = -1;
        EXPECT(MPI_Comm_rank(MPI_COMM_NULL, &r), MPI_ERR_COMM);
    }

    /* roots (every rank makes the same erroneous call) */
    EXPECT(MPI_Bcast(buf, 1, MPI_INT, size, MPI_COMM_WORLD), MPI_ERR_ROOT);
    EXPECT(MPI_Bcast(buf, 1, MPI_INT, -1, MPI_COMM_WORLD), MPI_ERR_ROOT);
    EXPECT(MPI_Reduce(buf, rbuf, 1, MPI_INT, MPI_SUM, size + 1, MPI_COMM_WORLD), MPI_ERR_ROOT);
    EXPECT(MPI_Gather(buf, 1, MPI_INT, rbuf, 1, MPI_INT, -2, MPI_COMM_WORLD), MPI_ERR_ROOT);

    /* ops */
    EXPECT(MPI_Reduce(buf, rbuf, 1, MPI_INT, MPI_OP_NULL, 0, MPI_COMM_WORLD), MPI_ERR_OP);
    EXPECT(MPI_Allreduce(buf, rbuf, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD), MPI_ERR_OP);

    /* the library still works */
    {
        int to = (rank + 1) % size, from = (rank + size - 1) % size, v = rank * 3, got = -1,
            sum = -1, rc;
        rc = MPI_Sendrecv(&v, 1, MPI_INT, to, 1, &got, 1, MPI_INT, from, 1, MPI_COMM_WORLD,
                          MPI_STATUS_IGNORE);
        CHECK(rc == MPI_SUCCESS && got == from * 3, "Sendrecv after errors: rc %d got %d", rc, got);
        rc = MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        CHECK(rc == MPI_SUCCESS && sum == 3 * size * (size - 1) / 2, "Allreduce after errors: %d",
              sum);
        v = rank == 0 ? 77 : 0;
        rc = MPI_Bcast(&v, 1, MPI_INT, 0, MPI_COMM_WORLD);
        CHECK(rc == MPI_SUCCESS && v == 77, "Bcast after errors: %d", v);
    }

    if (rank == 0)
        ct_say(rank, "%d erroneous calls checked", n_checked);
    return ct_finish(rank, errs);
}
