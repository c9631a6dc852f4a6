/* Alltoall and Alltoallv (with zero counts, shuffled displacements and
 * different send/receive layouts), small and 32 KiB blocks, on COMM_WORLD
 * and split communicators. */
#include "coll_comms.h"

static int cnt_of(int s, int d) { return (s + 2 * d) % 4; } /* ints from s to d */
static int val(int s, int d, int i) { return s * 1000000 + d * 1000 + i; }

static void run(MPI_Comm c, int rank, const char *cname, int *errp)
{
    int me, n, i, j, b;
    MPI_Comm_rank(c, &me);
    MPI_Comm_size(c, &n);

    for (b = 0; b < 2; b++) {
        int m = b ? 8192 : 3;
        int *sb = ct_malloc(sizeof(int) * m * n), *rb = ct_malloc(sizeof(int) * m * n);
        for (j = 0; j < n; j++)
            for (i = 0; i < m; i++)
                sb[j * m + i] = val(me, j, i);
        for (i = 0; i < m * n; i++)
            rb[i] = -1;
        MPI_Alltoall(sb, m, MPI_INT, rb, m, MPI_INT, c);
        for (j = 0; j < n; j++)
            for (i = 0; i < m; i++)
                if (rb[j * m + i] != val(j, me, i)) {
                    CHECKP(0, "%s Alltoall(%d) from %d element %d = %d", cname, m, j, i,
                           rb[j * m + i]);
                    j = n;
                    break;
                }
        free(sb);
        free(rb);
    }

    /* Alltoallv: send blocks in reverse order of destination, receive
       blocks in natural order with a gap of one int after each */
    {
        int *scnt = ct_malloc(sizeof(int) * n), *sdsp = ct_malloc(sizeof(int) * n);
        int *rcnt = ct_malloc(sizeof(int) * n), *rdsp = ct_malloc(sizeof(int) * n);
        int stot = 0, rtot = 0, *sb, *rb;
        for (j = n - 1; j >= 0; j--) {
            scnt[j] = cnt_of(me, j);
            sdsp[j] = stot;
            stot += scnt[j];
        }
        for (j = 0; j < n; j++) {
            rcnt[j] = cnt_of(j, me);
            rdsp[j] = rtot;
            rtot += rcnt[j] + 1;
        }
        sb = ct_malloc(sizeof(int) * (stot + 1));
        rb = ct_malloc(sizeof(int) * (rtot + 1));
        for (j = 0; j < n; j++)
            for (i = 0; i < scnt[j]; i++)
                sb[sdsp[j] + i] = val(me, j, i);
        for (i = 0; i < rtot; i++)
            rb[i] = -1;
        MPI_Alltoallv(sb, scnt, sdsp, MPI_INT, rb, rcnt, rdsp, MPI_INT, c);
        for (j = 0; j < n; j++) {
            for (i = 0; i < rcnt[j]; i++)
                CHECKP(rb[rdsp[j] + i] == val(j, me, i), "%s Alltoallv from %d [%d] = %d", cname, j,
                       i, rb[rdsp[j] + i]);
            CHECKP(rb[rdsp[j] + rcnt[j]] == -1, "%s Alltoallv wrote into the gap after %d", cname,
                   j);
        }
        free(sb);
        free(rb);
        free(scnt);
        free(sdsp);
        free(rcnt);
        free(rdsp);
    }
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
