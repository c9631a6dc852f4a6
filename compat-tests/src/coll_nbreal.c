/* Nonblocking collectives of every kind that goes to the real MPI's nonblocking
 * collectives at one rank per process (Ibarrier, Ibcast, Ireduce, Iallreduce,
 * Igather, Iscatter, Iallgather, Ialltoall), small (8 B) and large (64 KiB),
 * in place and not, with contiguous and strided (vector) datatypes, several
 * outstanding at once on three communicators (MPI_COMM_WORLD, a duplicate, a
 * split with the ranks reversed), overlapped with point-to-point traffic and
 * completed out of order by Test loops, Waitany and Waitall. */
#include "ct.h"

#define BIG (64 * 1024 / sizeof(int)) /* ints per rank: 64 KiB */

static int val(int rank, int i, int salt)
{
    return rank * 1000003 + i * 7 + salt;
}

/* One round of all eight kinds on `comm` with `n` ints per rank; `strided`:
 * the send side of Bcast/Allgather/Gather uses a vector type of stride 2. */
static void round_on(MPI_Comm comm, int n, int salt, int strided, int wrank, int *errp)
{
    int rank = wrank;
    int me, size, i, k, root;
    MPI_Request rq[10];
    MPI_Datatype vec;
    int *bc, *sbuf, *rbuf, *red, *ag, *a2s, *a2r, *g, *sc_s, *sc_r, *bcv, *agv;
    long long *ared, *aredin;

    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    root = size - 1;
    MPI_Type_vector(n, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);

    bc = ct_malloc(sizeof(int) * n);
    bcv = ct_malloc(sizeof(int) * 2 * n);
    sbuf = ct_malloc(sizeof(int) * n);
    rbuf = ct_malloc(sizeof(int) * n);
    red = ct_malloc(sizeof(int) * n);
    aredin = ct_malloc(sizeof(long long) * n);
    ared = ct_malloc(sizeof(long long) * n);
    ag = ct_malloc(sizeof(int) * n * size);
    agv = ct_malloc(sizeof(int) * 2 * n);
    a2s = ct_malloc(sizeof(int) * n * size);
    a2r = ct_malloc(sizeof(int) * n * size);
    g = ct_malloc(sizeof(int) * n * size);
    sc_s = ct_malloc(sizeof(int) * n * size);
    sc_r = ct_malloc(sizeof(int) * n);

    for (i = 0; i < n; i++) {
        bc[i] = me == root ? val(root, i, salt) : -1;
        bcv[2 * i] = me == root ? val(root, i, salt + 1) : -1;
        bcv[2 * i + 1] = -7;
        sbuf[i] = val(me, i, salt);
        aredin[i] = (long long)val(me, i, salt) * 3;
        agv[2 * i] = val(me, i, salt + 2);
        agv[2 * i + 1] = -7;
    }
    for (k = 0; k < size; k++)
        for (i = 0; i < n; i++) {
            a2s[k * n + i] = val(me, i, salt + k);
            sc_s[k * n + i] = me == 0 ? val(k, i, salt + 5) : -1;
            ag[k * n + i] = k == me ? val(me, i, salt + 3) : -1; /* in place */
        }

    MPI_Ibcast(bc, n, MPI_INT, root, comm, &rq[0]);
    MPI_Iallreduce(sbuf, rbuf, n, MPI_INT, MPI_SUM, comm, &rq[1]);
    MPI_Ireduce(aredin, me == 0 ? ared : NULL, n, MPI_LONG_LONG, MPI_MAX, 0, comm, &rq[2]);
    MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ag, n, MPI_INT, comm, &rq[3]);
    MPI_Ialltoall(a2s, n, MPI_INT, a2r, n, MPI_INT, comm, &rq[4]);
    if (strided)
        MPI_Igather(agv, 1, vec, g, n, MPI_INT, root, comm, &rq[5]);
    else
        MPI_Igather(sbuf, n, MPI_INT, g, n, MPI_INT, root, comm, &rq[5]);
    if (me == 0)
        MPI_Iscatter(sc_s, n, MPI_INT, MPI_IN_PLACE, n, MPI_INT, 0, comm, &rq[6]);
    else
        MPI_Iscatter(NULL, n, MPI_INT, sc_r, n, MPI_INT, 0, comm, &rq[6]);
    MPI_Ibarrier(comm, &rq[7]);
    if (strided)
        MPI_Ibcast(bcv, 1, vec, root, comm, &rq[8]);
    else
        MPI_Ibcast(bcv, 2 * n, MPI_INT, root, comm, &rq[8]);
    MPI_Iallreduce(MPI_IN_PLACE, red, 0, MPI_INT, MPI_SUM, comm, &rq[9]);

    /* point-to-point while they are in flight */
    {
        int v = val(me, 0, salt), got = -1, from = (me + size - 1) % size;
        MPI_Sendrecv(&v, 1, MPI_INT, (me + 1) % size, 11, &got, 1, MPI_INT, from, 11, comm,
                     MPI_STATUS_IGNORE);
        CHECKP(got == val(from, 0, salt), "p2p during collectives got %d", got);
    }
    /* out of order: Test the last ones, Waitany the middle, Waitall the rest */
    {
        int flag = 0, idx, left = 3;
        while (!flag)
            MPI_Test(&rq[7], &flag, MPI_STATUS_IGNORE);
        while (left-- > 0)
            MPI_Waitany(3, &rq[4], &idx, MPI_STATUS_IGNORE);
        MPI_Waitall(10, rq, MPI_STATUSES_IGNORE);
    }

    for (i = 0; i < n; i++) {
        long long mx = 0;
        int sum = 0;
        CHECKP(bc[i] == val(root, i, salt), "Ibcast n=%d [%d] = %d", n, i, bc[i]);
        if (strided)
            CHECKP(bcv[2 * i] == val(root, i, salt + 1) && bcv[2 * i + 1] == -7,
                   "strided Ibcast n=%d [%d] = %d %d", n, i, bcv[2 * i], bcv[2 * i + 1]);
        for (k = 0; k < size; k++) {
            sum += val(k, i, salt);
            if ((long long)val(k, i, salt) * 3 > mx)
                mx = (long long)val(k, i, salt) * 3;
        }
        CHECKP(rbuf[i] == sum, "Iallreduce n=%d [%d] = %d, want %d", n, i, rbuf[i], sum);
        if (me == 0)
            CHECKP(ared[i] == mx, "Ireduce n=%d [%d] = %lld", n, i, ared[i]);
        CHECKP(me == 0 || sc_r[i] == val(me, i, salt + 5), "Iscatter n=%d [%d] = %d", n, i,
               sc_r[i]);
        CHECKP(me != 0 || sc_s[i] == val(0, i, salt + 5), "in-place Iscatter root [%d]", i);
    }
    for (k = 0; k < size; k++)
        for (i = 0; i < n; i++) {
            int want_g = strided ? val(k, i, salt + 2) : val(k, i, salt);
            CHECKP(ag[k * n + i] == val(k, i, salt + 3), "Iallgather n=%d [%d][%d] = %d", n,
                   k, i, ag[k * n + i]);
            CHECKP(a2r[k * n + i] == val(k, i, salt + me), "Ialltoall n=%d [%d][%d] = %d", n,
                   k, i, a2r[k * n + i]);
            if (me == root)
                CHECKP(g[k * n + i] == want_g, "Igather n=%d [%d][%d] = %d", n, k, i,
                       g[k * n + i]);
        }

    MPI_Type_free(&vec);
    free(bc); free(bcv); free(sbuf); free(rbuf); free(red); free(aredin); free(ared);
    free(ag); free(agv); free(a2s); free(a2r); free(g); free(sc_s); free(sc_r);
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, r;
    MPI_Comm dup, rev;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &rev);

    for (r = 0; r < 2; r++) {
        int n = r == 0 ? 2 : (int)BIG, strided = r;
        /* an Iallreduce on `dup` stays outstanding across the rounds on
         * world and rev (calls outstanding on three communicators at once) */
        MPI_Request span;
        int *in = ct_malloc(sizeof(int) * n), *out = ct_malloc(sizeof(int) * n), i;
        for (i = 0; i < n; i++)
            in[i] = rank + i;
        MPI_Iallreduce(in, out, n, MPI_INT, MPI_MAX, dup, &span);
        round_on(MPI_COMM_WORLD, n, 10 + r, strided, rank, &errs);
        round_on(rev, n, 20 + r, !strided, rank, &errs);
        MPI_Wait(&span, MPI_STATUS_IGNORE);
        for (i = 0; i < n; i++)
            CHECK(out[i] == size - 1 + i, "spanning Iallreduce [%d] = %d", i, out[i]);
        round_on(dup, n, 30 + r, strided, rank, &errs);
        free(in);
        free(out);
    }

    MPI_Comm_free(&dup);
    MPI_Comm_free(&rev);
    return ct_finish(rank, errs);
}
