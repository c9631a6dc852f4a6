/* MPI_Alltoallw and MPI_Ialltoallw on world and an odd/even split: a different datatype per
 * peer on each side (a strided vector goes out, contiguous ints come in), byte
 * displacements in reverse peer order, zero counts with a type of any size, MPI_IN_PLACE
 * with a derived type per block. */
#include "coll_comms.h"

/* Ints rank r sends to rank p. */
static int nints(int r, int p)
{
    return (r + 2 * p) % 4;
}

static void run(MPI_Comm comm, const char *name, int nb, int rank, int *errp)
{
    int me, n, i, j;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &n);
    int *sc = ct_malloc(sizeof(int) * n), *sd = ct_malloc(sizeof(int) * n);
    int *rc = ct_malloc(sizeof(int) * n), *rd = ct_malloc(sizeof(int) * n);
    MPI_Datatype *st = ct_malloc(sizeof(MPI_Datatype) * n), *rt = ct_malloc(sizeof(MPI_Datatype) * n);
    MPI_Datatype vec[4];
    /* vec[k]: k ints, every other int of the send buffer (extent 2k-1 ints) */
    for (i = 0; i < 4; i++) {
        MPI_Type_vector(i, 1, 2, MPI_INT, &vec[i]);
        MPI_Type_commit(&vec[i]);
    }
    int *sbuf = ct_malloc(sizeof(int) * 8 * n), *rbuf = ct_malloc(sizeof(int) * 4 * n + sizeof(int));
    int off = 0;
    for (j = 0; j < n; j++) {
        int k = nints(me, j);
        sc[j] = 1;
        st[j] = vec[k];
        sd[j] = (int)(sizeof(int) * 8 * j);
        for (i = 0; i < 8; i++)
            sbuf[8 * j + i] = i % 2 ? -7 : 1000 * me + 10 * j + i / 2;
    }
    /* receive blocks in reverse peer order, as plain ints (a zero count comes as MPI_DOUBLE) */
    for (j = n - 1; j >= 0; j--) {
        rc[j] = nints(j, me);
        rt[j] = rc[j] ? MPI_INT : MPI_DOUBLE;
        rd[j] = (int)(sizeof(int) * off);
        off += rc[j];
    }
    for (i = 0; i <= off; i++)
        rbuf[i] = -1;
    if (nb) {
        MPI_Request rq;
        MPI_Ialltoallw(sbuf, sc, sd, st, rbuf, rc, rd, rt, comm, &rq);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
    } else {
        MPI_Alltoallw(sbuf, sc, sd, st, rbuf, rc, rd, rt, comm);
    }
    for (j = 0; j < n; j++)
        for (i = 0; i < rc[j]; i++) {
            int got = rbuf[rd[j] / (int)sizeof(int) + i];
            CHECKP(got == 1000 * j + 10 * me + i, "%s nb %d: from %d [%d] = %d", name, nb, j, i, got);
        }
    CHECKP(rbuf[off] == -1, "%s nb %d: wrote past the last block", name, nb);

    /* in place: block j (2 ints at 3*j ints) is described by a vector type, stride 2 */
    {
        MPI_Datatype two;
        MPI_Type_vector(2, 1, 2, MPI_INT, &two);
        MPI_Type_commit(&two);
        int *buf = ct_malloc(sizeof(int) * 3 * n);
        for (j = 0; j < n; j++) {
            rc[j] = 1;
            rt[j] = two;
            rd[j] = (int)(sizeof(int) * 3 * j);
            buf[3 * j] = 100 * me + j;
            buf[3 * j + 1] = -5;
            buf[3 * j + 2] = -100 * me - j;
        }
        MPI_Alltoallw(MPI_IN_PLACE, NULL, NULL, NULL, buf, rc, rd, rt, comm);
        for (j = 0; j < n; j++)
            CHECKP(buf[3 * j] == 100 * j + me && buf[3 * j + 1] == -5 && buf[3 * j + 2] == -100 * j - me,
                   "%s in place: block %d = %d %d %d", name, j, buf[3 * j], buf[3 * j + 1], buf[3 * j + 2]);
        MPI_Type_free(&two);
        free(buf);
    }
    for (i = 0; i < 4; i++)
        MPI_Type_free(&vec[i]);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
    free(st);
    free(rt);
    free(sbuf);
    free(rbuf);
}

int main(int argc, char **argv)
{
    int rank, errs = 0, i, nb;
    MPI_Comm comms[NCOMMS];
    const char *names[NCOMMS];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    make_comms(comms, names);
    for (nb = 0; nb < 2; nb++)
        for (i = 0; i < 2; i++)
            run(comms[i], names[i], nb, rank, &errs);
    free_comms(comms);
    return ct_finish(rank, errs);
}
