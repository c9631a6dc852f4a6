/* Collectives on an inter-communicator, blocking and nonblocking: the first third of the
 * ranks (group 0) and the rest (group 1) are joined by MPI_Intercomm_create. Barrier,
 * Bcast, Reduce, Allreduce, Gather(v), Scatter(v), Allgather(v), Alltoall(v,w),
 * Reduce_scatter(_block) with the root semantics of inter-communicators (MPI_ROOT at the
 * root, MPI_PROC_NULL at the rest of its group), and Scan, which is not defined on
 * inter-communicators (MPI_ERR_COMM). (MPICH 4.0.2 refuses null buffers at MPI_PROC_NULL,
 * so every rank passes real ones.) */
#include "ct.h"

/* The value rank r of group g contributes. */
static int val(int g, int r)
{
    return 1000 * g + r;
}

/* Runs one collective in its blocking (nb = 0) or nonblocking form. */
#define COLL(nb, blocking, nonblocking, ...)               \
    do {                                                   \
        if (nb) {                                          \
            MPI_Request rq_;                               \
            nonblocking(__VA_ARGS__, &rq_);                \
            MPI_Wait(&rq_, MPI_STATUS_IGNORE);             \
        } else {                                           \
            blocking(__VA_ARGS__);                         \
        }                                                  \
    } while (0)

/* Elements rank a of one group exchanges with rank b of the other in Alltoallv. */
static int cnt(int a, int b)
{
    return (a + b) % 3;
}

static void rooted(MPI_Comm ic, int g, int lr, int ls, int rs, int nb, int rank, int *errp)
{
    int i, j, buf[8];
    int *big = ct_malloc(sizeof(int) * 2 * 64 * (rs + 1));
    /* Bcast: root is rank 0 of group 0, then the last rank of group 1 */
    for (i = 0; i < 2; i++) {
        int rootg = i, rootr = i == 0 || nb ? 0 : (g == 1 ? ls : rs) - 1;
        int root = g == rootg ? (lr == rootr ? MPI_ROOT : MPI_PROC_NULL) : rootr;
        for (j = 0; j < 5; j++)
            buf[j] = root == MPI_ROOT ? 7 * j + rootg : -1;
        COLL(nb, MPI_Bcast, MPI_Ibcast, buf, 5, MPI_INT, root, ic);
        if (g != rootg)
            for (j = 0; j < 5; j++)
                CHECKP(buf[j] == 7 * j + rootg, "nb %d bcast %d: buf[%d] = %d", nb, i, j, buf[j]);
    }
    /* Reduce: sum of group 1 at the last rank of group 0; max of group 0 at rank 0 of group 1 */
    for (i = 0; i < 2; i++) {
        int rootg = i == 0 ? 0 : 1, rootr = i == 0 ? (g == 0 ? ls : rs) - 1 : 0;
        int root = g == rootg ? (lr == rootr ? MPI_ROOT : MPI_PROC_NULL) : rootr;
        int in[3], out[3] = {-1, -1, -1}, n = rs;
        for (j = 0; j < 3; j++)
            in[j] = val(g, lr) + j;
        COLL(nb, MPI_Reduce, MPI_Ireduce, in, out, 3, MPI_INT, i == 0 ? MPI_SUM : MPI_MAX, root, ic);
        if (root == MPI_ROOT)
            for (j = 0; j < 3; j++) {
                int other = 1 - g, want = 0, r;
                for (r = 0; r < n; r++)
                    want = i == 0 ? want + val(other, r) + j : val(other, r) + j;
                CHECKP(out[j] == want, "nb %d reduce %d: out[%d] = %d, want %d", nb, i, j, out[j], want);
            }
    }
    /* Gather to rank 0 of group 0 (two ints each); Gatherv to rank 0 of group 1 (r+1 each) */
    {
        int root = g == 0 ? (lr == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
        int mine[2] = {val(g, lr), val(g, lr) + 1};
        for (j = 0; j < 2 * rs; j++)
            big[j] = -1;
        COLL(nb, MPI_Gather, MPI_Igather, mine, 2, MPI_INT, big, 2, MPI_INT, root, ic);
        if (root == MPI_ROOT)
            for (j = 0; j < 2 * rs; j++)
                CHECKP(big[j] == val(1, j / 2) + j % 2, "nb %d gather: [%d] = %d", nb, j, big[j]);
    }
    {
        int root = g == 1 ? (lr == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
        int counts[64], displs[64], mine[64], k = 0;
        for (j = 0; j <= lr && j < 64; j++)
            mine[j] = val(g, lr) * 10 + j;
        for (j = 0; j < rs && j < 64; j++) {
            counts[j] = j + 1;
            displs[j] = k + 1; /* a gap of one element before each block */
            k += j + 2;
        }
        for (j = 0; j < k; j++)
            big[j] = -1;
        COLL(nb, MPI_Gatherv, MPI_Igatherv, mine, lr + 1, MPI_INT, big, counts, displs, MPI_INT, root, ic);
        if (root == MPI_ROOT)
            for (j = 0; j < rs; j++) {
                int e;
                CHECKP(big[displs[j] - 1] == -1, "nb %d gatherv: gap before %d written", nb, j);
                for (e = 0; e <= j; e++)
                    CHECKP(big[displs[j] + e] == val(0, j) * 10 + e, "nb %d gatherv: block %d[%d] = %d", nb, j, e,
                           big[displs[j] + e]);
            }
    }
    /* Scatter from rank 0 of group 0; Scatterv from the last rank of group 1 (r+1 each) */
    {
        int root = g == 0 ? (lr == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0, got[2] = {-1, -1};
        for (j = 0; j < 2 * rs; j++)
            big[j] = 50 * (j / 2) + j % 2;
        COLL(nb, MPI_Scatter, MPI_Iscatter, big, 2, MPI_INT, got, 2, MPI_INT,
             root, ic);
        if (g == 1)
            CHECKP(got[0] == 50 * lr && got[1] == 50 * lr + 1, "nb %d scatter got %d %d", nb, got[0], got[1]);
    }
    {
        int rootr = (g == 1 ? ls : rs) - 1;
        int root = g == 1 ? (lr == rootr ? MPI_ROOT : MPI_PROC_NULL) : rootr;
        int counts[64], displs[64], got[64], k = 0;
        for (j = 0; j < rs && j < 64; j++) {
            counts[j] = j + 1;
            displs[j] = k;
            k += j + 1;
        }
        for (j = 0; j < k; j++)
            big[j] = 3 * j;
        for (j = 0; j < 64; j++)
            got[j] = -1;
        COLL(nb, MPI_Scatterv, MPI_Iscatterv, big, counts, displs, MPI_INT,
             got, lr + 1, MPI_INT, root, ic);
        if (g == 0) {
            int first = lr * (lr + 1) / 2;
            for (j = 0; j <= lr; j++)
                CHECKP(got[j] == 3 * (first + j), "nb %d scatterv got[%d] = %d", nb, j, got[j]);
            CHECKP(got[lr + 1] == -1, "nb %d scatterv wrote past its block", nb);
        }
    }
    free(big);
}

static void all(MPI_Comm ic, int g, int lr, int ls, int rs, int nb, int rank, int *errp)
{
    int i, j, other = 1 - g;
    int *sbuf = ct_malloc(sizeof(int) * 4 * (rs + 1) * (ls + 1));
    int *rbuf = ct_malloc(sizeof(int) * 4 * (rs + 1) * (ls + 1));
    int *sc = ct_malloc(sizeof(int) * (rs + 1)), *sd = ct_malloc(sizeof(int) * (rs + 1));
    int *rc = ct_malloc(sizeof(int) * (rs + ls)), *rd = ct_malloc(sizeof(int) * (rs + 1));
    MPI_Datatype *st = ct_malloc(sizeof(MPI_Datatype) * (rs + 1)), *rt = ct_malloc(sizeof(MPI_Datatype) * (rs + 1));
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);

    /* Allreduce: every rank gets the other group's sum */
    {
        int in[2] = {val(g, lr), 1}, out[2] = {-1, -1}, want = 0;
        COLL(nb, MPI_Allreduce, MPI_Iallreduce, in, out, 2, MPI_INT, MPI_SUM, ic);
        for (i = 0; i < rs; i++)
            want += val(other, i);
        CHECKP(out[0] == want && out[1] == rs, "nb %d allreduce got %d %d, want %d %d", nb, out[0], out[1], want, rs);
    }
    /* Allgather: one int from each remote rank */
    {
        int v = val(g, lr);
        for (i = 0; i < rs; i++)
            rbuf[i] = -1;
        COLL(nb, MPI_Allgather, MPI_Iallgather, &v, 1, MPI_INT, rbuf, 1, MPI_INT, ic);
        for (i = 0; i < rs; i++)
            CHECKP(rbuf[i] == val(other, i), "nb %d allgather [%d] = %d", nb, i, rbuf[i]);
    }
    /* Allgatherv: remote rank i gives i+1 ints, stored in reverse rank order */
    {
        int k = 0;
        for (j = 0; j <= lr; j++)
            sbuf[j] = val(g, lr) + j;
        for (i = rs - 1; i >= 0; i--) {
            rc[i] = i + 1;
            rd[i] = k;
            k += i + 1;
        }
        for (j = 0; j < k; j++)
            rbuf[j] = -1;
        COLL(nb, MPI_Allgatherv, MPI_Iallgatherv, sbuf, lr + 1, MPI_INT, rbuf, rc, rd, MPI_INT, ic);
        for (i = 0; i < rs; i++)
            for (j = 0; j <= i; j++)
                CHECKP(rbuf[rd[i] + j] == val(other, i) + j, "nb %d allgatherv %d[%d] = %d", nb, i, j, rbuf[rd[i] + j]);
    }
    /* Alltoall: to remote rank j goes 100*val+j */
    {
        for (j = 0; j < rs; j++) {
            sbuf[j] = 100 * val(g, lr) + j;
            rbuf[j] = -1;
        }
        COLL(nb, MPI_Alltoall, MPI_Ialltoall, sbuf, 1, MPI_INT, rbuf, 1, MPI_INT, ic);
        for (i = 0; i < rs; i++)
            CHECKP(rbuf[i] == 100 * val(other, i) + lr, "nb %d alltoall [%d] = %d", nb, i, rbuf[i]);
    }
    /* Alltoallv: cnt(a, b) ints between rank a of one group and rank b of the other */
    {
        int ks = 0, kr = 0;
        for (j = 0; j < rs; j++) {
            sc[j] = cnt(lr, j);
            sd[j] = ks;
            for (i = 0; i < sc[j]; i++)
                sbuf[ks + i] = 100 * val(g, lr) + 10 * j + i;
            ks += sc[j];
            rc[j] = cnt(lr, j);
            rd[j] = kr;
            kr += rc[j] + 1;
        }
        for (j = 0; j < kr; j++)
            rbuf[j] = -1;
        COLL(nb, MPI_Alltoallv, MPI_Ialltoallv, sbuf, sc, sd, MPI_INT, rbuf, rc, rd, MPI_INT, ic);
        for (j = 0; j < rs; j++) {
            for (i = 0; i < rc[j]; i++)
                CHECKP(rbuf[rd[j] + i] == 100 * val(other, j) + 10 * lr + i, "nb %d alltoallv %d[%d] = %d", nb, j, i,
                       rbuf[rd[j] + i]);
            CHECKP(rbuf[rd[j] + rc[j]] == -1, "nb %d alltoallv wrote past block %d", nb, j);
        }
    }
    /* Alltoallw: 2 MPI_INTs go out, one `pair` comes in, at byte displacements */
    {
        for (j = 0; j < rs; j++) {
            sc[j] = 2;
            sd[j] = (int)(2 * j * sizeof(int));
            st[j] = MPI_INT;
            sbuf[2 * j] = val(g, lr);
            sbuf[2 * j + 1] = j;
            rc[j] = 1;
            rd[j] = (int)(2 * (rs - 1 - j) * sizeof(int));
            rt[j] = pair;
            rbuf[2 * j] = rbuf[2 * j + 1] = -1;
        }
        COLL(nb, MPI_Alltoallw, MPI_Ialltoallw, sbuf, sc, sd, st, rbuf, rc, rd, rt, ic);
        for (j = 0; j < rs; j++) {
            int *p = rbuf + 2 * (rs - 1 - j);
            CHECKP(p[0] == val(other, j) && p[1] == lr, "nb %d alltoallw from %d: %d %d", nb, j, p[0], p[1]);
        }
    }
    /* Reduce_scatter_block: blocks of rs elements; the other group's sum lands here */
    {
        int total = ls * rs;
        for (j = 0; j < total; j++)
            sbuf[j] = val(g, lr) + j;
        for (j = 0; j < rs; j++)
            rbuf[j] = -1;
        COLL(nb, MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block, sbuf, rbuf, rs, MPI_INT, MPI_SUM, ic);
        for (j = 0; j < rs; j++) {
            int want = 0, e = lr * rs + j;
            for (i = 0; i < rs; i++)
                want += val(other, i) + e;
            CHECKP(rbuf[j] == want, "nb %d reduce_scatter_block [%d] = %d, want %d", nb, j, rbuf[j], want);
        }
    }
    /* Reduce_scatter: uneven blocks, same total ls*rs on both sides */
    {
        int total = ls * rs, k = 0, first = 0;
        for (j = 0; j < ls; j++) {
            rc[j] = j < ls - 1 ? j % (rs + 1) : total - k;
            if (j < lr)
                first += rc[j];
            k += j < ls - 1 ? rc[j] : 0;
        }
        for (j = 0; j < total; j++)
            sbuf[j] = 2 * val(g, lr) - j;
        for (j = 0; j <= rc[lr]; j++)
            rbuf[j] = -1;
        COLL(nb, MPI_Reduce_scatter, MPI_Ireduce_scatter, sbuf, rbuf, rc, MPI_INT, MPI_SUM, ic);
        for (j = 0; j < rc[lr]; j++) {
            int want = 0, e = first + j;
            for (i = 0; i < rs; i++)
                want += 2 * val(other, i) - e;
            CHECKP(rbuf[j] == want, "nb %d reduce_scatter [%d] = %d, want %d", nb, j, rbuf[j], want);
        }
        CHECKP(rbuf[rc[lr]] == -1, "nb %d reduce_scatter wrote past its block", nb);
    }
    MPI_Type_free(&pair);
    free(sbuf);
    free(rbuf);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
    free(st);
    free(rt);
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, nb;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        printf("rank %d: needs 2 ranks, skipped\n", rank);
        return ct_finish(rank, errs);
    }
    int n0 = (size + 2) / 3, g = rank < n0 ? 0 : 1, lr, ls, rs;
    MPI_Comm local, ic;
    MPI_Comm_split(MPI_COMM_WORLD, g, rank, &local);
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, g == 0 ? n0 : 0, 7, &ic);
    MPI_Comm_rank(ic, &lr);
    MPI_Comm_size(ic, &ls);
    MPI_Comm_remote_size(ic, &rs);
    for (nb = 0; nb < 2; nb++) {
        COLL(nb, MPI_Barrier, MPI_Ibarrier, ic);
        rooted(ic, g, lr, ls, rs, nb, rank, &errs);
        all(ic, g, lr, ls, rs, nb, rank, &errs);
    }
    {
        int in = 1, out = 0, rc;
        MPI_Comm_set_errhandler(ic, MPI_ERRORS_RETURN);
        rc = MPI_Scan(&in, &out, 1, MPI_INT, MPI_SUM, ic);
        CHECK(ct_class(rc) == MPI_ERR_COMM, "MPI_Scan on an inter-communicator: class %d", ct_class(rc));
        rc = MPI_Exscan(&in, &out, 1, MPI_INT, MPI_SUM, ic);
        CHECK(ct_class(rc) == MPI_ERR_COMM, "MPI_Exscan on an inter-communicator: class %d", ct_class(rc));
    }
    printf("rank %d: group %d, local rank %d of %d, remote size %d\n", rank, g, lr, ls, rs);
    MPI_Comm_free(&ic);
    MPI_Comm_free(&local);
    return ct_finish(rank, errs);
}
