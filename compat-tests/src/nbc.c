/* Nonblocking collectives: Ibarrier, Ibcast, Ireduce, Iallreduce,
 * Igather, Iallgather, Ialltoall, Iscan, several outstanding at once and
 * overlapped with point-to-point traffic, completed by Wait/Waitall/Test. */
#include "ct.h"

int main(int argc, char **argv)
{
    int rank, size, errs = 0, i, flag;
    MPI_Request rq[8];
    int b = 0, s = 0, r = 0, sc = 0, *g, *ag, *a2a_s, *a2a_r;
    double red = 0.0, dv;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    g = ct_malloc(sizeof(int) * size);
    ag = ct_malloc(sizeof(int) * size);
    a2a_s = ct_malloc(sizeof(int) * size);
    a2a_r = ct_malloc(sizeof(int) * size);

    /* Ibarrier completed by a Test loop */
    MPI_Ibarrier(MPI_COMM_WORLD, &rq[0]);
    flag = 0;
    while (!flag)
        MPI_Test(&rq[0], &flag, MPI_STATUS_IGNORE);

    /* several at once, in the same order on every rank */
    b = rank == size - 1 ? 1234 : -1;
    s = rank + 1;
    dv = rank * 0.5;
    for (i = 0; i < size; i++)
        a2a_s[i] = rank * 100 + i;
    MPI_Ibcast(&b, 1, MPI_INT, size - 1, MPI_COMM_WORLD, &rq[0]);
    MPI_Iallreduce(&s, &r, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq[1]);
    MPI_Ireduce(&dv, &red, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD, &rq[2]);
    MPI_Igather(&rank, 1, MPI_INT, g, 1, MPI_INT, 0, MPI_COMM_WORLD, &rq[3]);
    MPI_Iallgather(&s, 1, MPI_INT, ag, 1, MPI_INT, MPI_COMM_WORLD, &rq[4]);
    MPI_Ialltoall(a2a_s, 1, MPI_INT, a2a_r, 1, MPI_INT, MPI_COMM_WORLD, &rq[5]);
    MPI_Iscan(&s, &sc, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq[6]);

    /* point-to-point while they are in flight */
    {
        int v = rank, got = -1;
        MPI_Sendrecv(&v, 1, MPI_INT, (rank + 1) % size, 5, &got, 1, MPI_INT,
                     (rank + size - 1) % size, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(got == (rank + size - 1) % size, "p2p during collectives got %d", got);
    }
    MPI_Waitall(7, rq, MPI_STATUSES_IGNORE);

    CHECK(b == 1234, "Ibcast gave %d", b);
    CHECK(r == size * (size + 1) / 2, "Iallreduce gave %d", r);
    if (rank == 0) {
        CHECK(red == (size - 1) * 0.5, "Ireduce gave %g", red);
        for (i = 0; i < size; i++)
            CHECK(g[i] == i, "Igather [%d] = %d", i, g[i]);
    }
    for (i = 0; i < size; i++) {
        CHECK(ag[i] == i + 1, "Iallgather [%d] = %d", i, ag[i]);
        CHECK(a2a_r[i] == i * 100 + rank, "Ialltoall [%d] = %d", i, a2a_r[i]);
    }
    CHECK(sc == (rank + 1) * (rank + 2) / 2, "Iscan gave %d", sc);

    /* a rank that computes before waiting must not hold up the others */
    for (i = 0; i < 5; i++) {
        int x = rank * i, y = -1;
        MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &rq[0]);
        MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
        CHECK(y == (size - 1) * i, "round %d Iallreduce MAX gave %d", i, y);
    }

    free(g);
    free(ag);
    free(a2a_s);
    free(a2a_r);
    return ct_finish(rank, errs);
}
