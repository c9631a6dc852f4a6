/* Back-to-back MPI_Alltoallv_c calls on one communicator whose counts change
 * from call to call (issue 19): rounds in which one rank sends nothing at all
 * (every send count 0, a valid send buffer), rounds in which a rank receives
 * nothing, rounds in which only a few "aggregator" ranks get data (the shape of
 * two-phase collective I/O: an Allreduce, then the pieces to the aggregators,
 * then the replies back), an MPI_IN_PLACE round with symmetric counts, and the
 * nonblocking form, on COMM_WORLD, a duplicate and an odd/even split. */
#include "ct.h"

#define ROUNDS 6

/* Bytes rank s sends to rank d in round r (0 in many places on purpose). */
static MPI_Count cnt_of(int s, int d, int r, int n)
{
    switch (r % 4) {
    case 0: /* rank r%n sends nothing, the others 24 bytes to everybody */
        return s == r % n ? 0 : 24;
    case 1: /* only the aggregators (ranks 0 and n/2) receive */
        return (d == 0 || d == n / 2) ? 8 * (s + 1) : 0;
    case 2: /* the replies: aggregators send back what they received */
        return (s == 0 || s == n / 2) ? 8 * (d + 1) : 0;
    default: /* rank (r+1)%n receives nothing, sizes vary with the pair */
        return d == (r + 1) % n ? 0 : (MPI_Count)((s + 2 * d + r) % 5) * 3;
    }
}

static unsigned char val(int s, int d, int r, MPI_Count i)
{
    return (unsigned char)(s * 37 + d * 11 + r * 5 + i);
}

static void one_round(MPI_Comm c, int r, int nonblocking, const char *cname, int rank, int *errp)
{
    int me, n, j;
    MPI_Count i, stot = 0, rtot = 0;
    MPI_Comm_rank(c, &me);
    MPI_Comm_size(c, &n);
    MPI_Count *sc = ct_malloc(sizeof(MPI_Count) * n), *rc = ct_malloc(sizeof(MPI_Count) * n);
    MPI_Aint *sd = ct_malloc(sizeof(MPI_Aint) * n), *rd = ct_malloc(sizeof(MPI_Aint) * n);
    /* Send blocks in reverse order of destination, receive blocks with a gap byte after each. */
    for (j = n - 1; j >= 0; j--) {
        sc[j] = cnt_of(me, j, r, n);
        sd[j] = stot;
        stot += sc[j];
    }
    for (j = 0; j < n; j++) {
        rc[j] = cnt_of(j, me, r, n);
        rd[j] = rtot;
        rtot += rc[j] + 1;
    }
    unsigned char *sb = ct_malloc(stot + 1), *rb = ct_malloc(rtot + 1);
    for (j = 0; j < n; j++)
        for (i = 0; i < sc[j]; i++)
            sb[sd[j] + i] = val(me, j, r, i);
    memset(rb, 0xEE, rtot + 1);
    /* A collective between the exchanges, as the file layer has. */
    {
        long long x = stot, sum = 0;
        MPI_Allreduce(&x, &sum, 1, MPI_LONG_LONG, MPI_SUM, c);
    }
    if (nonblocking) {
        MPI_Request q;
        MPI_Ialltoallv_c(sb, sc, sd, MPI_BYTE, rb, rc, rd, MPI_BYTE, c, &q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
    } else {
        int rcode = MPI_Alltoallv_c(sb, sc, sd, MPI_BYTE, rb, rc, rd, MPI_BYTE, c);
        CHECKP(rcode == MPI_SUCCESS, "%s round %d: Alltoallv_c returned %d", cname, r, rcode);
    }
    for (j = 0; j < n; j++) {
        for (i = 0; i < rc[j]; i++)
            if (rb[rd[j] + i] != val(j, me, r, i)) {
                CHECKP(0, "%s round %d%s from %d byte %lld = %d", cname, r, nonblocking ? " (I)" : "", j,
                       (long long)i, rb[rd[j] + i]);
                break;
            }
        CHECKP(rb[rd[j] + rc[j]] == 0xEE, "%s round %d wrote into the gap after %d", cname, r, j);
    }
    free(sb);
    free(rb);
    free(sc);
    free(rc);
    free(sd);
    free(rd);
}

/* MPI_IN_PLACE with symmetric counts: (s + d) % 3 ints between s and d. */
static void in_place(MPI_Comm c, const char *cname, int rank, int *errp)
{
    int me, n, j, i, tot = 0;
    MPI_Comm_rank(c, &me);
    MPI_Comm_size(c, &n);
    MPI_Count *cnt = ct_malloc(sizeof(MPI_Count) * n);
    MPI_Aint *dsp = ct_malloc(sizeof(MPI_Aint) * n);
    for (j = 0; j < n; j++) {
        cnt[j] = (me + j) % 3;
        dsp[j] = tot;
        tot += (int)cnt[j];
    }
    int *b = ct_malloc(sizeof(int) * (tot + 1));
    for (j = 0; j < n; j++)
        for (i = 0; i < cnt[j]; i++)
            b[dsp[j] + i] = me * 1000 + j * 10 + i;
    MPI_Alltoallv_c(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, b, cnt, dsp, MPI_INT, c);
    for (j = 0; j < n; j++)
        for (i = 0; i < cnt[j]; i++)
            CHECKP(b[dsp[j] + i] == j * 1000 + me * 10 + i, "%s in place from %d [%d] = %d", cname, j, i,
                   b[dsp[j] + i]);
    free(b);
    free(cnt);
    free(dsp);
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, k, r;
    MPI_Comm comms[3];
    const char *names[3] = {"world", "dup", "odd/even"};

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    comms[0] = MPI_COMM_WORLD;
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]);
    MPI_Comm_set_errhandler(comms[1], MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &comms[2]);
    for (k = 0; k < 3; k++) {
        for (r = 0; r < ROUNDS; r++)
            one_round(comms[k], r, 0, names[k], rank, &errs);
        for (r = 0; r < ROUNDS; r++)
            one_round(comms[k], r, 1, names[k], rank, &errs);
        in_place(comms[k], names[k], rank, &errs);
        for (r = ROUNDS - 1; r >= 0; r--)
            one_round(comms[k], r, 0, names[k], rank, &errs);
    }
    MPI_Comm_free(&comms[1]);
    MPI_Comm_free(&comms[2]);
    return ct_finish(rank, errs);
}
