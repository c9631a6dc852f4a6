/* MPI_IN_PLACE for Allreduce, Reduce (root), Gather/Gatherv (root),
 * Scatter/Scatterv (root), Allgather, Allgatherv, Alltoall,
 * Reduce_scatter_block, Scan and Exscan. */
#include "ct.h"

#define K 3

static void run(MPI_Comm c, int rank, const char *cname, int *errp)
{
    int me, n, i, j, root;
    int *b, *cnt, *dsp;
    MPI_Comm_rank(c, &me);
    MPI_Comm_size(c, &n);
    b = ct_malloc(sizeof(int) * K * n * n + 16);
    cnt = ct_malloc(sizeof(int) * n);
    dsp = ct_malloc(sizeof(int) * n);

    /* Allreduce */
    for (i = 0; i < K; i++)
        b[i] = me + i;
    MPI_Allreduce(MPI_IN_PLACE, b, K, MPI_INT, MPI_SUM, c);
    for (i = 0; i < K; i++)
        CHECKP(b[i] == n * (n - 1) / 2 + n * i, "%s Allreduce in place [%d] = %d", cname, i, b[i]);

    for (root = 0; root < n; root++) {
        /* Reduce: in place at the root only */
        for (i = 0; i < K; i++)
            b[i] = me * 2 + i;
        if (me == root)
            MPI_Reduce(MPI_IN_PLACE, b, K, MPI_INT, MPI_MAX, root, c);
        else
            MPI_Reduce(b, NULL, K, MPI_INT, MPI_MAX, root, c);
        if (me == root)
            for (i = 0; i < K; i++)
                CHECKP(b[i] == (n - 1) * 2 + i, "%s Reduce in place root %d [%d] = %d", cname,
                       root, i, b[i]);

        /* Gather: the root's own block is already in place */
        if (me == root) {
            for (i = 0; i < K * n; i++)
                b[i] = -1;
            for (i = 0; i < K; i++)
                b[me * K + i] = me * 100 + i;
            MPI_Gather(MPI_IN_PLACE, K, MPI_INT, b, K, MPI_INT, root, c);
            for (j = 0; j < n; j++)
                for (i = 0; i < K; i++)
                    CHECKP(b[j * K + i] == j * 100 + i, "%s Gather in place root %d [%d][%d] = %d",
                           cname, root, j, i, b[j * K + i]);
        } else {
            int s[K];
            for (i = 0; i < K; i++)
                s[i] = me * 100 + i;
            MPI_Gather(s, K, MPI_INT, NULL, 0, MPI_INT, root, c);
        }

        /* Gatherv: j sends j%2+1 ints at displacement 3j */
        for (j = 0; j < n; j++) {
            cnt[j] = j % 2 + 1;
            dsp[j] = 3 * j;
        }
        if (me == root) {
            for (i = 0; i < 3 * n; i++)
                b[i] = -1;
            for (i = 0; i < cnt[me]; i++)
                b[dsp[me] + i] = me * 10 + i;
            MPI_Gatherv(MPI_IN_PLACE, 0, MPI_INT, b, cnt, dsp, MPI_INT, root, c);
            for (j = 0; j < n; j++)
                for (i = 0; i < 3; i++)
                    CHECKP(b[3 * j + i] == (i < cnt[j] ? j * 10 + i : -1),
                           "%s Gatherv in place root %d [%d][%d] = %d", cname, root, j, i,
                           b[3 * j + i]);
        } else {
            int s[2] = {me * 10, me * 10 + 1};
            MPI_Gatherv(s, cnt[me], MPI_INT, NULL, NULL, NULL, MPI_INT, root, c);
        }

        /* Scatter: the root keeps its block in the send buffer */
        if (me == root) {
            for (j = 0; j < n; j++)
                for (i = 0; i < K; i++)
                    b[j * K + i] = j * 1000 + root + i;
            MPI_Scatter(b, K, MPI_INT, MPI_IN_PLACE, K, MPI_INT, root, c);
            for (i = 0; i < K; i++)
                CHECKP(b[me * K + i] == me * 1000 + root + i, "%s Scatter in place changed root data",
                       cname);
        } else {
            int r[K] = {-1, -1, -1};
            MPI_Scatter(NULL, 0, MPI_INT, r, K, MPI_INT, root, c);
            for (i = 0; i < K; i++)
                CHECKP(r[i] == me * 1000 + root + i, "%s Scatter in place root %d [%d] = %d", cname,
                       root, i, r[i]);
        }

        /* Scatterv */
        if (me == root) {
            for (j = 0; j < n; j++)
                for (i = 0; i < cnt[j]; i++)
                    b[dsp[j] + i] = j * 7 + i + root;
            MPI_Scatterv(b, cnt, dsp, MPI_INT, MPI_IN_PLACE, 0, MPI_INT, root, c);
        } else {
            int r[2] = {-1, -1};
            MPI_Scatterv(NULL, NULL, NULL, MPI_INT, r, cnt[me], MPI_INT, root, c);
            for (i = 0; i < cnt[me]; i++)
                CHECKP(r[i] == me * 7 + i + root, "%s Scatterv in place root %d [%d] = %d", cname,
                       root, i, r[i]);
        }
    }

    /* Allgather */
    for (i = 0; i < K * n; i++)
        b[i] = -1;
    for (i = 0; i < K; i++)
        b[me * K + i] = me * 3 + i;
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b, K, MPI_INT, c);
    for (i = 0; i < K * n; i++)
        CHECKP(b[i] == (i / K) * 3 + i % K, "%s Allgather in place [%d] = %d", cname, i, b[i]);

    /* Allgatherv */
    for (j = 0; j < n; j++) {
        cnt[j] = (j + 1) % 3;
        dsp[j] = 2 * (n - 1 - j);
    }
    for (i = 0; i < 2 * n; i++)
        b[i] = -1;
    for (i = 0; i < cnt[me]; i++)
        b[dsp[me] + i] = me * 5 + i;
    MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b, cnt, dsp, MPI_INT, c);
    for (j = 0; j < n; j++)
        for (i = 0; i < 2; i++)
            CHECKP(b[dsp[j] + i] == (i < cnt[j] ? j * 5 + i : -1),
                   "%s Allgatherv in place [%d][%d] = %d", cname, j, i, b[dsp[j] + i]);

    /* Alltoall: block j is sent to j and replaced by the block from j */
    for (j = 0; j < n; j++)
        for (i = 0; i < K; i++)
            b[j * K + i] = me * 10000 + j * 10 + i;
    MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b, K, MPI_INT, c);
    for (j = 0; j < n; j++)
        for (i = 0; i < K; i++)
            CHECKP(b[j * K + i] == j * 10000 + me * 10 + i, "%s Alltoall in place [%d][%d] = %d",
                   cname, j, i, b[j * K + i]);

    /* Reduce_scatter_block */
    for (j = 0; j < n; j++)
        for (i = 0; i < K; i++)
            b[j * K + i] = me + j + i;
    MPI_Reduce_scatter_block(MPI_IN_PLACE, b, K, MPI_INT, MPI_SUM, c);
    for (i = 0; i < K; i++)
        CHECKP(b[i] == n * (n - 1) / 2 + n * (me + i), "%s Reduce_scatter_block in place [%d] = %d",
               cname, i, b[i]);

    /* Scan and Exscan */
    b[0] = me + 1;
    MPI_Scan(MPI_IN_PLACE, b, 1, MPI_INT, MPI_SUM, c);
    CHECKP(b[0] == (me + 1) * (me + 2) / 2, "%s Scan in place = %d", cname, b[0]);
    b[0] = me + 1;
    MPI_Exscan(MPI_IN_PLACE, b, 1, MPI_INT, MPI_SUM, c);
    if (me > 0)
        CHECKP(b[0] == me * (me + 1) / 2, "%s Exscan in place = %d", cname, b[0]);

    free(b);
    free(cnt);
    free(dsp);
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0;
    MPI_Comm rev;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    run(MPI_COMM_WORLD, rank, "world", &errs);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 3, -rank, &rev);
    run(rev, rank, "thirds-reversed", &errs);
    MPI_Comm_free(&rev);
    return ct_finish(rank, errs);
}
