/* Reduce_scatter (uneven counts, some zero), Reduce_scatter_block, Scan
 * and Exscan (SUM, MAX and PROD; on ints and doubles), on COMM_WORLD and
 * split communicators. */
#include "coll_comms.h"

static void run(MPI_Comm c, int rank, const char *cname, int *errp)
{
    int me, n, i, j, tot = 0;
    int *cnt, *sb, *rb;
    MPI_Comm_rank(c, &me);
    MPI_Comm_size(c, &n);
    cnt = ct_malloc(sizeof(int) * n);
    for (j = 0; j < n; j++) {
        cnt[j] = (j + 1) % 3;
        tot += cnt[j];
    }
    sb = ct_malloc(sizeof(int) * (tot + 3 * n));
    rb = ct_malloc(sizeof(int) * (tot + 3 * n));

    /* Reduce_scatter: element e of the concatenation gets sum over ranks of (rank + e) */
    for (i = 0; i < tot; i++)
        sb[i] = me + i;
    for (i = 0; i < 3; i++)
        rb[i] = -1;
    MPI_Reduce_scatter(sb, rb, cnt, MPI_INT, MPI_SUM, c);
    {
        int off = 0;
        for (j = 0; j < me; j++)
            off += cnt[j];
        for (i = 0; i < cnt[me]; i++)
            CHECKP(rb[i] == n * (n - 1) / 2 + n * (off + i), "%s Reduce_scatter [%d] = %d", cname,
                   i, rb[i]);
        CHECKP(rb[cnt[me]] == -1, "%s Reduce_scatter wrote past its block", cname);
    }

    /* Reduce_scatter_block with MAX, 3 each */
    for (j = 0; j < n; j++)
        for (i = 0; i < 3; i++)
            sb[3 * j + i] = (me * 7 + j * 3 + i) % 10;
    MPI_Reduce_scatter_block(sb, rb, 3, MPI_INT, MPI_MAX, c);
    for (i = 0; i < 3; i++) {
        int want = -1, r;
        for (r = 0; r < n; r++) {
            int v = (r * 7 + me * 3 + i) % 10;
            want = v > want ? v : want;
        }
        CHECKP(rb[i] == want, "%s Reduce_scatter_block MAX [%d] = %d, expected %d", cname, i, rb[i],
               want);
    }

    /* Session 16: blocks above the real-collective threshold (8 KiB), uneven, one empty, with
     * and without MPI_IN_PLACE (at several ranks per process, each member gets only its block
     * of the reduced vector: core::coll::hier::reduce_scatter). */
    {
        int *bc = ct_malloc(sizeof(int) * n), btot = 0, off = 0, pass;
        int *v, *r;
        for (j = 0; j < n; j++) {
            bc[j] = j == 1 ? 0 : 2500 + 7 * j;
            btot += bc[j];
        }
        for (j = 0; j < me; j++)
            off += bc[j];
        v = ct_malloc(sizeof(int) * btot);
        r = ct_malloc(sizeof(int) * (bc[me] + 1));
        for (pass = 0; pass < 2; pass++) {
            int *out = pass ? v : r;
            for (i = 0; i < btot; i++)
                v[i] = me * 3 + i % 1000;
            r[bc[me]] = -1;
            MPI_Reduce_scatter(pass ? MPI_IN_PLACE : v, out, bc, MPI_INT, MPI_SUM, c);
            for (i = 0; i < bc[me]; i++)
                CHECKP(out[i] == 3 * n * (n - 1) / 2 + n * ((off + i) % 1000),
                       "%s large Reduce_scatter%s [%d] = %d", cname, pass ? " in place" : "", i,
                       out[i]);
            if (!pass)
                CHECKP(r[bc[me]] == -1, "%s large Reduce_scatter wrote past its block", cname);
        }
        free(v);
        free(r);
        free(bc);
    }

    /* Scan and Exscan */
    {
        int s[3], r[3] = {-7, -7, -7}, want_sum = 0, want_max = -1, r2;
        double d = 1.0 + (me % 3 == 1), dr = 0, want_prod = 1;
        for (r2 = 0; r2 <= me; r2++) {
            want_sum += r2 + 1;
            want_max = (r2 * 5) % 7 > want_max ? (r2 * 5) % 7 : want_max;
            want_prod *= 1.0 + (r2 % 3 == 1);
        }
        s[0] = me + 1;
        s[1] = (me * 5) % 7;
        MPI_Scan(s, r, 1, MPI_INT, MPI_SUM, c);
        CHECKP(r[0] == want_sum, "%s Scan SUM = %d, expected %d", cname, r[0], want_sum);
        MPI_Scan(&s[1], &r[1], 1, MPI_INT, MPI_MAX, c);
        CHECKP(r[1] == want_max, "%s Scan MAX = %d, expected %d", cname, r[1], want_max);
        MPI_Scan(&d, &dr, 1, MPI_DOUBLE, MPI_PROD, c);
        CHECKP(dr == want_prod, "%s Scan PROD = %g, expected %g", cname, dr, want_prod);

        r[0] = -7;
        MPI_Exscan(s, r, 1, MPI_INT, MPI_SUM, c);
        if (me > 0)
            CHECKP(r[0] == want_sum - (me + 1), "%s Exscan SUM = %d, expected %d", cname, r[0],
                   want_sum - (me + 1));
        /* vector Exscan */
        for (i = 0; i < 3; i++)
            s[i] = me * (i + 1);
        MPI_Exscan(s, r, 3, MPI_INT, MPI_SUM, c);
        if (me > 0)
            for (i = 0; i < 3; i++)
                CHECKP(r[i] == (i + 1) * me * (me - 1) / 2, "%s Exscan vector [%d] = %d", cname, i,
                       r[i]);
    }

    free(cnt);
    free(sb);
    free(rb);
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
