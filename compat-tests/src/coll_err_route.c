/* Bad arguments to the blocking collectives on communicators already used by a collective
 * (session 20: a blocking call's communicator look-up numbers the call once the
 * communicator's route is known, and a call whose arguments fail gives its number back).
 * Under MPI_ERRORS_RETURN every rank makes the same bad call and gets the class the
 * standard names (only bad arguments that plain MPICH 4.0.2 checks too: it does not check a
 * negative count of the reductions, and crashes on one); after each, a correct collective on the same communicator must match
 * the other ranks' (same data on every rank). Then a communicator is freed and another made
 * (handles may be reused), and used at once. */
#include "ct.h"

#define EXPECT(call, cls)                                                                   \
    do {                                                                                    \
        int rc_ = (call);                                                                   \
        CHECK(rc_ != MPI_SUCCESS && ct_class(rc_) == (cls),                                 \
              "%s: got class %d, expected %s (%d)", #call, rc_ == MPI_SUCCESS ? 0 : ct_class(rc_), \
              #cls, (cls));                                                                 \
        n_checked++;                                                                        \
        errs += after(comm, rank, size, n_checked);                                        \
    } while (0)

/* A correct Allreduce and Bcast after an erroneous call: 0 when both gave the right data. */
static int after(MPI_Comm comm, int rank, int size, int k)
{
    int v = rank + k, sum = -1, b = rank == 0 ? 1000 + k : -1, errs = 0;
    if (MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, comm) != MPI_SUCCESS ||
        sum != size * (size - 1) / 2 + size * k) {
        printf("rank %d: Allreduce after error %d gave %d\n", rank, k, sum);
        errs++;
    }
    if (MPI_Bcast(&b, 1, MPI_INT, 0, comm) != MPI_SUCCESS || b != 1000 + k) {
        printf("rank %d: Bcast after error %d gave %d\n", rank, k, b);
        errs++;
    }
    return errs;
}

/* Every kind of blocking collective with bad arguments on `comm`. */
static int bad_calls(MPI_Comm comm, int *checked)
{
    int rank, size, errs = 0, n_checked = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int *s = calloc((size_t)size * 4, sizeof(int)), *r = calloc((size_t)size * 4, sizeof(int));
    /* The route is known after a first collective. */
    errs += after(comm, rank, size, 0);

    EXPECT(MPI_Barrier(MPI_COMM_NULL), MPI_ERR_COMM);
    EXPECT(MPI_Bcast(s, -1, MPI_INT, 0, comm), MPI_ERR_COUNT);
    EXPECT(MPI_Bcast(s, 1, MPI_DATATYPE_NULL, 0, comm), MPI_ERR_TYPE);
    EXPECT(MPI_Bcast(s, 1, MPI_INT, size, comm), MPI_ERR_ROOT);
    EXPECT(MPI_Bcast(NULL, 1, MPI_INT, 0, comm), MPI_ERR_BUFFER);
    EXPECT(MPI_Reduce(s, r, 1, MPI_INT, MPI_OP_NULL, 0, comm), MPI_ERR_OP);
    EXPECT(MPI_Reduce(s, r, 1, MPI_INT, MPI_SUM, -1, comm), MPI_ERR_ROOT);
    EXPECT(MPI_Allreduce(s, r, 1, MPI_INT, MPI_OP_NULL, comm), MPI_ERR_OP);
    EXPECT(MPI_Gather(s, -1, MPI_INT, r, 1, MPI_INT, 0, comm), MPI_ERR_COUNT);
    EXPECT(MPI_Gather(s, 1, MPI_INT, r, 1, MPI_INT, size + 2, comm), MPI_ERR_ROOT);
    EXPECT(MPI_Scatter(s, 1, MPI_INT, r, -1, MPI_INT, 0, comm), MPI_ERR_COUNT);
    EXPECT(MPI_Scatter(s, 1, MPI_INT, r, 1, MPI_INT, -3, comm), MPI_ERR_ROOT);
    EXPECT(MPI_Allgather(s, 1, MPI_DATATYPE_NULL, r, 1, MPI_INT, comm), MPI_ERR_TYPE);
    EXPECT(MPI_Allgather(s, 1, MPI_INT, r, -1, MPI_INT, comm), MPI_ERR_COUNT);
    EXPECT(MPI_Alltoall(s, -1, MPI_INT, r, 1, MPI_INT, comm), MPI_ERR_COUNT);
    EXPECT(MPI_Alltoall(s, 1, MPI_INT, r, 1, MPI_DATATYPE_NULL, comm), MPI_ERR_TYPE);
    EXPECT(MPI_Reduce_scatter_block(s, r, 1, MPI_INT, MPI_OP_NULL, comm), MPI_ERR_OP);
    EXPECT(MPI_Scan(s, r, 1, MPI_INT, MPI_OP_NULL, comm), MPI_ERR_OP);
    EXPECT(MPI_Exscan(s, r, 1, MPI_INT, MPI_OP_NULL, comm), MPI_ERR_OP);

    free(s);
    free(r);
    *checked += n_checked;
    return errs;
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, checked = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);

    errs += bad_calls(MPI_COMM_WORLD, &checked);

    /* A duplicate, freed after use, and communicators made after it (the handle may come
     * back): each starts with its route unknown, then known. */
    for (int round = 0; round < 3; round++) {
        MPI_Comm c;
        if (round == 1)
            MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &c);
        else
            MPI_Comm_dup(MPI_COMM_WORLD, &c);
        MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
        errs += bad_calls(c, &checked);
        MPI_Comm_free(&c);
    }

    /* The world is still in step. */
    errs += after(MPI_COMM_WORLD, rank, size, 99);
    if (rank == 0)
        ct_say(rank, "%d erroneous calls checked", checked);
    return ct_finish(rank, errs);
}
