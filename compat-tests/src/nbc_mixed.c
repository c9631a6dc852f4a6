/* Mixed nonblocking collectives, many outstanding at once, completed in an
 * order that differs from rank to rank and from round to round, with MPI_Wait,
 * MPI_Test loops, MPI_Waitall and MPI_Testany loops.
 *
 * Per round, on MPI_COMM_WORLD, a duplicate and a split with the ranks
 * reversed: broadcasts of 1, 8, 256, 257, 2048 and 4096 bytes
 * (the sizes on both sides of where an implementation may change algorithm),
 * from roots that change with every call, so several broadcasts with
 * different roots are in flight at once; two Iallreduces (2 doubles, sum;
 * 300 ints, max), an Ibarrier, two Ialltoalls (one in place), an
 * Igather, an Iallgather; a persistent MPI_Bcast_init of 16 bytes started
 * once per round; and a point-to-point ring on the world with MPI_ANY_SOURCE
 * and MPI_ANY_TAG receives posted before the collectives start and completed
 * after them (no collective message may match them). At the end, a broadcast,
 * an allreduce and a barrier still running when their communicator is freed.
 * Every received byte is checked. */
#include "ct.h"

#define ROUNDS 12
#define NB 6 /* broadcasts per communicator and round */
#define NCOMM 3
#define PER (NB + 7) /* requests per communicator and round */
#define NMAX 300 /* ints of the max Iallreduce (1200 bytes) */

static int sizes[NB] = {1, 8, 256, 257, 2048, 4096};

static unsigned char byte_of(int call, int root, int i)
{
    return (unsigned char)(call * 31 + root * 7 + i * 13 + 1);
}

/* Completes requests rq[0..n) in an order picked by `how` (0..3). */
static void complete(MPI_Request *rq, int n, int how, int rank, int *errp)
{
    int i, done = 0, idx, flag;
    switch (how) {
    case 0: /* MPI_Wait, last first */
        for (i = n - 1; i >= 0; i--)
            MPI_Wait(&rq[i], MPI_STATUS_IGNORE);
        break;
    case 1: /* MPI_Test loops, odd ones first */
        for (i = 1; i < n; i += 2) {
            flag = 0;
            while (!flag)
                MPI_Test(&rq[i], &flag, MPI_STATUS_IGNORE);
        }
        for (i = 0; i < n; i += 2) {
            flag = 0;
            while (!flag)
                MPI_Test(&rq[i], &flag, MPI_STATUS_IGNORE);
        }
        break;
    case 2: /* MPI_Waitall */
        MPI_Waitall(n, rq, MPI_STATUSES_IGNORE);
        break;
    default: /* MPI_Testany until every one is done */
        while (done < n) {
            MPI_Testany(n, rq, &idx, &flag, MPI_STATUS_IGNORE);
            if (flag && idx != MPI_UNDEFINED)
                done++;
            CHECKP(!(flag && idx == MPI_UNDEFINED && done < n), "Testany: no active request left after %d of %d", done, n);
            if (flag && idx == MPI_UNDEFINED)
                break;
        }
        break;
    }
    for (i = 0; i < n; i++)
        CHECKP(rq[i] == MPI_REQUEST_NULL, "request %d not freed", i);
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, r, k, i, c, me, csize, call = 0;
    MPI_Comm comms[NCOMM];
    MPI_Request rq[NCOMM * PER], pr, ring[2];
    unsigned char *bc[NCOMM][NB], pbuf[16];
    double red[NCOMM][2], redin[NCOMM][2];
    int imax[NCOMM][NMAX], imaxin[NCOMM][NMAX];
    int *gat[NCOMM], *ag[NCOMM], mine[NCOMM], *a2s[NCOMM], *a2r[NCOMM], *a2i[NCOMM];
    int sendv, recvv;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    comms[0] = MPI_COMM_WORLD;
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]);
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &comms[2]);
    for (c = 0; c < NCOMM; c++) {
        for (k = 0; k < NB; k++)
            bc[c][k] = ct_malloc(sizes[k]);
        gat[c] = ct_malloc(sizeof(int) * size);
        a2s[c] = ct_malloc(sizeof(int) * 2 * size);
        a2r[c] = ct_malloc(sizeof(int) * 2 * size);
        a2i[c] = ct_malloc(sizeof(int) * 2 * size);
        ag[c] = ct_malloc(sizeof(int) * size);
    }
    /* A persistent broadcast on the duplicate, root 0, restarted every round. */
    MPI_Bcast_init(pbuf, 16, MPI_BYTE, 0, comms[1], MPI_INFO_NULL, &pr);

    for (r = 0; r < ROUNDS; r++) {
        int n = 0;
        /* Ring receive with wildcards, posted before the collectives. */
        MPI_Irecv(&recvv, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &ring[0]);
        MPI_Comm_rank(comms[1], &me);
        for (i = 0; i < 16; i++)
            pbuf[i] = me == 0 ? byte_of(1000 + r, 0, i) : 0;
        MPI_Start(&pr);
        for (c = 0; c < NCOMM; c++) {
            MPI_Comm_rank(comms[c], &me);
            MPI_Comm_size(comms[c], &csize);
            for (k = 0; k < NB; k++) {
                int id = call + c * NB + k, root = id % csize;
                for (i = 0; i < sizes[k]; i++)
                    bc[c][k][i] = me == root ? byte_of(id, root, i) : 0;
                MPI_Ibcast(bc[c][k], sizes[k], MPI_BYTE, root, comms[c], &rq[n++]);
            }
            redin[c][0] = me + 0.25 * r;
            redin[c][1] = -me;
            MPI_Iallreduce(redin[c], red[c], 2, MPI_DOUBLE, MPI_SUM, comms[c], &rq[n++]);
            for (i = 0; i < NMAX; i++)
                imaxin[c][i] = (me * 7 + i * 3 + r) % 5 - 2;
            MPI_Iallreduce(imaxin[c], imax[c], NMAX, MPI_INT, MPI_MAX, comms[c], &rq[n++]);
            MPI_Ibarrier(comms[c], &rq[n++]);
            mine[c] = me * 100 + r;
            MPI_Igather(&mine[c], 1, MPI_INT, gat[c], 1, MPI_INT, r % csize, comms[c], &rq[n++]);
            MPI_Iallgather(&mine[c], 1, MPI_INT, ag[c], 1, MPI_INT, comms[c], &rq[n++]);
            for (i = 0; i < 2 * csize; i++) {
                a2s[c][i] = me * 1000 + i * 10 + r; /* block i / 2 goes to rank i / 2 */
                a2i[c][i] = -(me * 1000 + i * 10 + r);
            }
            MPI_Ialltoall(a2s[c], 2, MPI_INT, a2r[c], 2, MPI_INT, comms[c], &rq[n++]);
            MPI_Ialltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, a2i[c], 2, MPI_INT, comms[c], &rq[n++]);
        }
        sendv = rank * 10 + r;
        MPI_Isend(&sendv, 1, MPI_INT, (rank + 1) % size, r, MPI_COMM_WORLD, &ring[1]);
        /* Completion order: by rank and round. */
        {
            int how = (rank + r) % 4;
            int half = n / 2;
            if ((rank + r) % 2) {
                complete(rq + half, n - half, how, rank, &errs);
                complete(rq, half, (how + 1) % 4, rank, &errs);
            } else {
                complete(rq, half, how, rank, &errs);
                complete(rq + half, n - half, (how + 2) % 4, rank, &errs);
            }
        }
        MPI_Wait(&pr, MPI_STATUS_IGNORE);
        MPI_Waitall(2, ring, MPI_STATUSES_IGNORE);
        /* Checks. */
        CHECK(recvv == ((rank + size - 1) % size) * 10 + r, "round %d: ring got %d", r, recvv);
        for (i = 0; i < 16; i++)
            CHECK(pbuf[i] == byte_of(1000 + r, 0, i), "round %d: persistent bcast byte %d is %d", r, i, pbuf[i]);
        for (c = 0; c < NCOMM; c++) {
            double want0 = 0, want1 = 0;
            MPI_Comm_rank(comms[c], &me);
            MPI_Comm_size(comms[c], &csize);
            for (k = 0; k < NB; k++) {
                int id = call + c * NB + k, root = id % csize, bad = -1;
                for (i = 0; i < sizes[k] && bad < 0; i++)
                    if (bc[c][k][i] != byte_of(id, root, i))
                        bad = i;
                CHECK(bad < 0, "round %d comm %d: bcast of %d bytes from %d: byte %d is %d", r, c, sizes[k], root, bad,
                      bad < 0 ? 0 : bc[c][k][bad]);
            }
            for (i = 0; i < csize; i++) {
                want0 += i + 0.25 * r;
                want1 += -i;
            }
            CHECK(red[c][0] == want0 && red[c][1] == want1, "round %d comm %d: allreduce %g %g", r, c, red[c][0], red[c][1]);
            for (k = 0; k < NMAX; k++) {
                int m = -100;
                for (i = 0; i < csize; i++)
                    m = (i * 7 + k * 3 + r) % 5 - 2 > m ? (i * 7 + k * 3 + r) % 5 - 2 : m;
                CHECK(imax[c][k] == m, "round %d comm %d: max[%d] = %d, not %d", r, c, k, imax[c][k], m);
            }
            if (me == r % csize)
                for (i = 0; i < csize; i++)
                    CHECK(gat[c][i] == i * 100 + r, "round %d comm %d: gather[%d] = %d", r, c, i, gat[c][i]);
            for (i = 0; i < csize; i++)
                CHECK(ag[c][i] == i * 100 + r, "round %d comm %d: allgather[%d] = %d", r, c, i, ag[c][i]);
            for (i = 0; i < 2 * csize; i++) {
                /* Element j of block q came from rank q's element 2 * me + j. */
                int q = i / 2, want = q * 1000 + (2 * me + i % 2) * 10 + r;
                CHECK(a2r[c][i] == want, "round %d comm %d: alltoall[%d] = %d, not %d", r, c, i, a2r[c][i], want);
                CHECK(a2i[c][i] == -want, "round %d comm %d: in-place alltoall[%d] = %d, not %d", r, c, i, a2i[c][i], -want);
            }
        }
        call += NCOMM * NB + 1;
    }
    MPI_Request_free(&pr);
    /* Collectives still running when their communicator is freed complete (MPI 4.0 7.4.3). */
    {
        MPI_Comm d;
        MPI_Request q[3];
        unsigned char b8[8];
        double x[2], y[2];
        int j;
        MPI_Comm_dup(MPI_COMM_WORLD, &d);
        for (j = 0; j < 8; j++)
            b8[j] = rank == 0 ? byte_of(7777, 0, j) : 0;
        x[0] = rank;
        x[1] = 1;
        MPI_Ibcast(b8, 8, MPI_BYTE, 0, d, &q[0]);
        MPI_Iallreduce(x, y, 2, MPI_DOUBLE, MPI_SUM, d, &q[1]);
        MPI_Ibarrier(d, &q[2]);
        MPI_Comm_free(&d);
        MPI_Waitall(3, q, MPI_STATUSES_IGNORE);
        for (j = 0; j < 8; j++)
            CHECK(b8[j] == byte_of(7777, 0, j), "bcast on a freed communicator: byte %d is %d", j, b8[j]);
        CHECK(y[0] == size * (size - 1) / 2.0 && y[1] == size, "allreduce on a freed communicator: %g %g", y[0], y[1]);
    }
    for (c = 0; c < NCOMM; c++) {
        for (k = 0; k < NB; k++)
            free(bc[c][k]);
        free(gat[c]);
        free(a2s[c]);
        free(a2r[c]);
        free(a2i[c]);
        free(ag[c]);
    }
    MPI_Comm_free(&comms[1]);
    MPI_Comm_free(&comms[2]);
    if (rank == 0)
        ct_say(rank, "%d rounds of %d nonblocking collectives on %d communicators", ROUNDS, NCOMM * PER, NCOMM);
    return ct_finish(rank, errs);
}
