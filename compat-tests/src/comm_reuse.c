/* Communicators made and freed over and over, in rank-dependent orders: dups of the world, of
 * a dup, and splits (two colours and one), some kept alive across rounds, one freed while a
 * nonblocking allreduce on it still runs; on each, Allreduce, Reduce and Bcast of 1 and 4096
 * ints and an Iallreduce. Checks that every collective on a new communicator gets the right
 * data whatever the implementation does with the communicators it released. */
#include "ct.h"

#define ROUNDS 40
#define BIG 4096

static void use(MPI_Comm c, int rank, int round, int tag, int *errp)
{
    int me, n, i, k;
    int *x = ct_malloc(sizeof(int) * BIG), *y = ct_malloc(sizeof(int) * BIG);
    MPI_Comm_rank(c, &me);
    MPI_Comm_size(c, &n);
    for (k = 0; k < 2; k++) {
        int cnt = k ? BIG : 1, root = (round + tag + k) % n;
        for (i = 0; i < cnt; i++)
            x[i] = me + i % 7 + round;
        MPI_Allreduce(x, y, cnt, MPI_INT, MPI_SUM, c);
        for (i = 0; i < cnt; i++)
            CHECKP(y[i] == n * (n - 1) / 2 + n * (i % 7 + round), "round %d comm %d Allreduce [%d] = %d", round,
                   tag, i, y[i]);
        for (i = 0; i < cnt; i++)
            y[i] = -1;
        MPI_Reduce(x, y, cnt, MPI_INT, MPI_MAX, root, c);
        if (me == root)
            for (i = 0; i < cnt; i++)
                CHECKP(y[i] == n - 1 + i % 7 + round, "round %d comm %d Reduce [%d] = %d", round, tag, i, y[i]);
        for (i = 0; i < cnt; i++)
            y[i] = me == root ? 3 * i + tag + round : -1;
        MPI_Bcast(y, cnt, MPI_INT, root, c);
        for (i = 0; i < cnt; i++)
            CHECKP(y[i] == 3 * i + tag + round, "round %d comm %d Bcast [%d] = %d", round, tag, i, y[i]);
    }
    free(x);
    free(y);
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, r, i;
    MPI_Comm kept = MPI_COMM_NULL;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (r = 0; r < ROUNDS; r++) {
        MPI_Comm c[4];
        MPI_Request req;
        int v = rank + r, s = -1, n2, order[4] = {0, 1, 2, 3};
        MPI_Comm_dup(MPI_COMM_WORLD, &c[0]);
        MPI_Comm_dup(c[0], &c[1]);
        MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &c[2]);
        MPI_Comm_split(c[1], 0, rank, &c[3]);
        for (i = 0; i < 4; i++)
            use(c[i], rank, r, i, &errs);
        if (kept != MPI_COMM_NULL) {
            use(kept, rank, r, 9, &errs);
            MPI_Comm_free(&kept);
        }
        /* An Iallreduce still running when its communicator is freed. */
        MPI_Iallreduce(&v, &s, 1, MPI_INT, MPI_SUM, c[3], &req);
        /* Rank-dependent free orders; every fifth round one survives into the next. */
        if ((rank + r) % 2) {
            order[0] = 3;
            order[1] = 2;
            order[2] = 1;
            order[3] = 0;
        }
        for (i = 0; i < 4; i++) {
            if (r % 5 == 4 && order[i] == 2)
                kept = c[2];
            else
                MPI_Comm_free(&c[order[i]]);
        }
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        n2 = size * (size - 1) / 2 + size * r;
        CHECK(s == n2, "round %d Iallreduce on a freed communicator = %d, expected %d", r, s, n2);
    }
    if (kept != MPI_COMM_NULL)
        MPI_Comm_free(&kept);
    return ct_finish(rank, errs);
}
