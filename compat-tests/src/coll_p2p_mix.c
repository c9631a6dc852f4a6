/* coll_p2p_mix: small blocking collectives interleaved with the program's own
 * point-to-point on the same communicators, with MPI_ANY_SOURCE/MPI_ANY_TAG
 * receives posted across the collectives (session 19: at one rank per
 * process the collectives' rounds go without requests; their messages must
 * never match the program's receives, nor overtake or swallow its messages).
 *
 * Each round, on every communicator of coll_comms.h, a rank posts two
 * wildcard receives and a large receive from its left neighbour, sends its
 * right neighbour two small messages with tags that equal small internal
 * numbers and a large one (rendezvous size), runs a series of small collectives
 * (root changing with the round), sends a third small message, runs more
 * collectives, then receives the third message with a named source and
 * MPI_ANY_TAG. The wildcard receives must get the first two messages in
 * order, the named receive the third, and every collective its own result. */
#include "coll_comms.h"

#define ROUNDS 12
#define BIG 20000 /* doubles: above every eager limit */

static void round_on(MPI_Comm c, int rank, const char *cname, int rd, double *big_out, double *big_in, int *errp)
{
    int me, n, i, j;
    MPI_Comm_rank(c, &me);
    MPI_Comm_size(c, &n);
    int left = (me + n - 1) % n, right = (me + 1) % n, root = rd % n;
    int w1[2] = {-1, -1}, w2[2] = {-1, -1}, m[3][2], got[2] = {-1, -1};
    MPI_Request rq[6], r3;
    MPI_Status st[6], s3;

    MPI_Irecv(w1, 2, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, c, &rq[0]);
    MPI_Irecv(w2, 2, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, c, &rq[1]);
    MPI_Irecv(big_in, BIG, MPI_DOUBLE, left, MPI_ANY_TAG, c, &rq[2]);
    for (i = 0; i < 3; i++) {
        m[i][0] = me;
        m[i][1] = rd * 10 + i;
    }
    MPI_Isend(m[0], 2, MPI_INT, right, 3, c, &rq[4]);
    MPI_Isend(m[1], 2, MPI_INT, right, 5, c, &rq[5]);
    for (i = 0; i < BIG; i++)
        big_out[i] = me * 1000.0 + rd + i;
    MPI_Isend(big_out, BIG, MPI_DOUBLE, right, 7, c, &rq[3]);

    /* Collectives while the receives above are posted. */
    int b[3] = {0, 0, 0};
    if (me == root)
        for (i = 0; i < 3; i++)
            b[i] = rd * 100 + i;
    MPI_Bcast(b, 3, MPI_INT, root, c);
    for (i = 0; i < 3; i++)
        CHECKP(b[i] == rd * 100 + i, "%s round %d Bcast[%d] = %d", cname, rd, i, b[i]);

    int x = me + rd, sum = -1;
    MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, c);
    CHECKP(sum == n * (n - 1) / 2 + n * rd, "%s round %d Allreduce = %d", cname, rd, sum);

    int *all = ct_malloc(sizeof(int) * 2 * n), *outv = ct_malloc(sizeof(int) * 2 * n);
    int mine[2] = {me, rd};
    MPI_Allgather(mine, 2, MPI_INT, all, 2, MPI_INT, c);
    for (j = 0; j < n; j++)
        CHECKP(all[2 * j] == j && all[2 * j + 1] == rd, "%s round %d Allgather[%d] = %d,%d", cname, rd, j,
               all[2 * j], all[2 * j + 1]);

    for (j = 0; j < n; j++) {
        outv[2 * j] = me;
        outv[2 * j + 1] = j + rd;
    }
    MPI_Alltoall(outv, 2, MPI_INT, all, 2, MPI_INT, c);
    for (j = 0; j < n; j++)
        CHECKP(all[2 * j] == j && all[2 * j + 1] == me + rd, "%s round %d Alltoall[%d] = %d,%d", cname, rd,
               j, all[2 * j], all[2 * j + 1]);

    MPI_Barrier(c);

    int red = -1;
    MPI_Reduce(&x, &red, 1, MPI_INT, MPI_MAX, root, c);
    if (me == root)
        CHECKP(red == n - 1 + rd, "%s round %d Reduce = %d", cname, rd, red);

    /* The third message, between collectives. */
    MPI_Isend(m[2], 2, MPI_INT, right, 16 * rd + 2, c, &r3);

    for (j = 0; j < 2 * n; j++)
        all[j] = -1;
    MPI_Gather(mine, 2, MPI_INT, all, 2, MPI_INT, root, c);
    if (me == root)
        for (j = 0; j < n; j++)
            CHECKP(all[2 * j] == j && all[2 * j + 1] == rd, "%s round %d Gather[%d] = %d,%d", cname, rd, j,
                   all[2 * j], all[2 * j + 1]);

    for (j = 0; j < n; j++) {
        outv[2 * j] = j;
        outv[2 * j + 1] = rd * 3;
    }
    int sc[2] = {-1, -1};
    MPI_Scatter(outv, 2, MPI_INT, sc, 2, MPI_INT, root, c);
    CHECKP(sc[0] == me && sc[1] == rd * 3, "%s round %d Scatter = %d,%d", cname, rd, sc[0], sc[1]);

    int pre = -1;
    MPI_Scan(&x, &pre, 1, MPI_INT, MPI_SUM, c);
    CHECKP(pre == me * (me + 1) / 2 + (me + 1) * rd, "%s round %d Scan = %d", cname, rd, pre);

    for (j = 0; j < n; j++)
        outv[j] = me + j;
    int rs = -1;
    MPI_Reduce_scatter_block(outv, &rs, 1, MPI_INT, MPI_SUM, c);
    CHECKP(rs == n * (n - 1) / 2 + n * me, "%s round %d Reduce_scatter_block = %d", cname, rd, rs);

    /* The third message by name (source given, any tag). */
    MPI_Recv(got, 2, MPI_INT, left, MPI_ANY_TAG, c, &s3);
    MPI_Wait(&r3, MPI_STATUS_IGNORE);
    MPI_Waitall(6, rq, st);

    CHECKP(w1[0] == left && w1[1] == rd * 10 && st[0].MPI_SOURCE == left && st[0].MPI_TAG == 3,
           "%s round %d first wildcard got %d,%d from %d tag %d", cname, rd, w1[0], w1[1], st[0].MPI_SOURCE,
           st[0].MPI_TAG);
    CHECKP(w2[0] == left && w2[1] == rd * 10 + 1 && st[1].MPI_SOURCE == left && st[1].MPI_TAG == 5,
           "%s round %d second wildcard got %d,%d from %d tag %d", cname, rd, w2[0], w2[1], st[1].MPI_SOURCE,
           st[1].MPI_TAG);
    CHECKP(got[0] == left && got[1] == rd * 10 + 2 && s3.MPI_TAG == 16 * rd + 2,
           "%s round %d named receive got %d,%d tag %d", cname, rd, got[0], got[1], s3.MPI_TAG);
    CHECKP(st[2].MPI_TAG == 7 && big_in[0] == left * 1000.0 + rd && big_in[BIG - 1] == left * 1000.0 + rd + BIG - 1,
           "%s round %d large message %g..%g tag %d", cname, rd, big_in[0], big_in[BIG - 1], st[2].MPI_TAG);
    free(all);
    free(outv);
}

int main(int argc, char **argv)
{
    int rank, errs = 0, k, rd;
    MPI_Comm comms[NCOMMS];
    const char *names[NCOMMS];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    make_comms(comms, names);
    double *bo = ct_malloc(sizeof(double) * BIG), *bi = ct_malloc(sizeof(double) * BIG);
    for (rd = 0; rd < ROUNDS; rd++)
        for (k = 0; k < NCOMMS; k++)
            round_on(comms[k], rank, names[k], rd, bo, bi, &errs);
    free(bo);
    free(bi);
    free_comms(comms);
    return ct_finish(rank, errs);
}
