/* Gather, Gatherv, Scatter, Scatterv, Allgather, Allgatherv from/to every
 * root, with gaps between Gatherv blocks (which must stay untouched), on
 * COMM_WORLD and split communicators. */
#include "coll_comms.h"

static int val(int from, int to, int i) { return from * 100000 + to * 1000 + i; }

static void run(MPI_Comm c, int rank, const char *cname, int *errp)
{
    int me, n, root, i, j, total;
    int *sb, *rb, *cnt, *dsp;
    MPI_Comm_rank(c, &me);
    MPI_Comm_size(c, &n);
    sb = ct_malloc(sizeof(int) * 8 * n);
    rb = ct_malloc(sizeof(int) * 8 * n);
    cnt = ct_malloc(sizeof(int) * n);
    dsp = ct_malloc(sizeof(int) * n);
    /* v-variant layout: rank j has j%4 ints (some zero), blocks 2 apart */
    for (total = 0, j = 0; j < n; j++) {
        cnt[j] = j % 4;
        dsp[j] = total + 1;
        total += cnt[j] + 2;
    }

    for (root = 0; root < n; root++) {
        /* Gather 2 ints each */
        for (i = 0; i < 2; i++)
            sb[i] = val(me, root, i);
        for (i = 0; i < 2 * n; i++)
            rb[i] = -1;
        MPI_Gather(sb, 2, MPI_INT, rb, 2, MPI_INT, root, c);
        if (me == root) {
            for (j = 0; j < n; j++)
                for (i = 0; i < 2; i++)
                    CHECKP(rb[2 * j + i] == val(j, root, i), "%s Gather root %d [%d][%d] = %d",
                           cname, root, j, i, rb[2 * j + i]);
        } else {
            CHECKP(rb[0] == -1, "%s Gather wrote the receive buffer of a non-root", cname);
        }

        /* Gatherv */
        for (i = 0; i < cnt[me]; i++)
            sb[i] = val(me, root, i + 10);
        for (i = 0; i < total; i++)
            rb[i] = -1;
        MPI_Gatherv(sb, cnt[me], MPI_INT, rb, cnt, dsp, MPI_INT, root, c);
        if (me == root) {
            for (j = 0; j < n; j++) {
                CHECKP(rb[dsp[j] - 1] == -1, "%s Gatherv wrote into a gap", cname);
                for (i = 0; i < cnt[j]; i++)
                    CHECKP(rb[dsp[j] + i] == val(j, root, i + 10),
                           "%s Gatherv root %d [%d][%d] = %d", cname, root, j, i, rb[dsp[j] + i]);
                CHECKP(rb[dsp[j] + cnt[j]] == -1, "%s Gatherv wrote past block %d", cname, j);
            }
        }

        /* Scatter 3 ints each */
        if (me == root)
            for (j = 0; j < n; j++)
                for (i = 0; i < 3; i++)
                    sb[3 * j + i] = val(root, j, i + 20);
        for (i = 0; i < 4; i++)
            rb[i] = -1;
        MPI_Scatter(sb, 3, MPI_INT, rb, 3, MPI_INT, root, c);
        for (i = 0; i < 3; i++)
            CHECKP(rb[i] == val(root, me, i + 20), "%s Scatter root %d [%d] = %d", cname, root, i,
                   rb[i]);
        CHECKP(rb[3] == -1, "%s Scatter wrote past the block", cname);

        /* Scatterv */
        if (me == root)
            for (j = 0; j < n; j++)
                for (i = 0; i < cnt[j]; i++)
                    sb[dsp[j] + i] = val(root, j, i + 30);
        for (i = 0; i < 4; i++)
            rb[i] = -1;
        MPI_Scatterv(sb, cnt, dsp, MPI_INT, rb, cnt[me], MPI_INT, root, c);
        for (i = 0; i < 4; i++)
            CHECKP(rb[i] == (i < cnt[me] ? val(root, me, i + 30) : -1),
                   "%s Scatterv root %d [%d] = %d", cname, root, i, rb[i]);
    }

    /* Allgather, doubles */
    {
        double *ds = ct_malloc(sizeof(double) * 2), *dr = ct_malloc(sizeof(double) * 2 * n);
        ds[0] = me + 0.5;
        ds[1] = -me;
        MPI_Allgather(ds, 2, MPI_DOUBLE, dr, 2, MPI_DOUBLE, c);
        for (j = 0; j < n; j++)
            CHECKP(dr[2 * j] == j + 0.5 && dr[2 * j + 1] == -j, "%s Allgather [%d] = %g %g", cname,
                   j, dr[2 * j], dr[2 * j + 1]);
        free(ds);
        free(dr);
    }

    /* Allgatherv */
    for (i = 0; i < cnt[me]; i++)
        sb[i] = val(me, 0, i + 40);
    for (i = 0; i < total; i++)
        rb[i] = -1;
    MPI_Allgatherv(sb, cnt[me], MPI_INT, rb, cnt, dsp, MPI_INT, c);
    for (j = 0; j < n; j++) {
        CHECKP(rb[dsp[j] - 1] == -1, "%s Allgatherv wrote into a gap", cname);
        for (i = 0; i < cnt[j]; i++)
            CHECKP(rb[dsp[j] + i] == val(j, 0, i + 40), "%s Allgatherv [%d][%d] = %d", cname, j, i,
                   rb[dsp[j] + i]);
    }

    /* a larger Allgather: 64 KiB from each */
    {
        int m = 16384, *big = ct_malloc(sizeof(int) * m), *all = ct_malloc(sizeof(int) * m * n);
        for (i = 0; i < m; i++)
            big[i] = me * m + i;
        MPI_Allgather(big, m, MPI_INT, all, m, MPI_INT, c);
        for (i = 0; i < m * n; i++)
            if (all[i] != i) {
                CHECKP(0, "%s large Allgather element %d = %d", cname, i, all[i]);
                break;
            }
        free(big);
        free(all);
    }

    free(sb);
    free(rb);
    free(cnt);
    free(dsp);
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, k;
    MPI_Comm comms[NCOMMS];
    const char *names[NCOMMS];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    make_comms(comms, names);
    for (k = 0; k < NCOMMS; k++)
        run(comms[k], rank, names[k], &errs);
    free_comms(comms);
    return ct_finish(rank, errs);
}
