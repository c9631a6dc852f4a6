/* A library that duplicates its caller's communicator for each call, as a solver per time
 * step does: per round, a dup of the world, two splits of the dup (one colour; two colours),
 * a dup of the first split, each used and all freed again, in orders that change with the
 * round (a split freed after its parent, used after its parent was freed, or before). On each:
 * point-to-point messages with the same tags on every communicator (a ring, received in the
 * opposite order to the sends, so a message delivered to the wrong communicator would match),
 * Allreduce of 1 and 4096 ints, Bcast of 4096 ints. Messages and a nonblocking allreduce of
 * one round are still pending when its communicators are freed; they complete after the next
 * round's communicators (which an implementation may build on the same resources) did all
 * their traffic with the same tags. Every value is checked. */
#include "ct.h"

#define ROUNDS 30
#define BIG 4096
#define NC 4

/* What a round leaves pending: receives and sends on its communicators, an Iallreduce. */
struct pend {
    MPI_Request req[2 * NC + 1];
    int in[NC], out[NC], v, sum, want_in[NC], want_sum, nreq;
};

static void collectives(MPI_Comm c, int round, int tag, int *errp)
{
    int me, n, i, k, rank = 0;
    int *x = ct_malloc(sizeof(int) * BIG), *y = ct_malloc(sizeof(int) * BIG);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_rank(c, &me);
    MPI_Comm_size(c, &n);
    for (k = 0; k < 2; k++) {
        int cnt = k ? BIG : 1, root = (round + tag) % n;
        for (i = 0; i < cnt; i++)
            x[i] = me * 3 + i % 5 + round + tag;
        MPI_Allreduce(x, y, cnt, MPI_INT, MPI_SUM, c);
        for (i = 0; i < cnt; i++)
            CHECKP(y[i] == 3 * n * (n - 1) / 2 + n * (i % 5 + round + tag), "round %d comm %d Allreduce[%d] = %d",
                   round, tag, i, y[i]);
        for (i = 0; i < cnt; i++)
            y[i] = me == root ? 7 * i + tag + round : -1;
        MPI_Bcast(y, cnt, MPI_INT, root, c);
        for (i = 0; i < cnt; i++)
            CHECKP(y[i] == 7 * i + tag + round, "round %d comm %d Bcast[%d] = %d", round, tag, i, y[i]);
    }
    free(x);
    free(y);
}

/* A ring on each communicator with tag 5 everywhere: sends from the last communicator to the
 * first, receives posted first to last. Completed now (wait) or left pending in p. */
static void ring(MPI_Comm *c, int round, struct pend *p, int wait, int *errp)
{
    int i, rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    p->nreq = 0;
    for (i = 0; i < NC; i++) {
        int me, n;
        MPI_Comm_rank(c[i], &me);
        MPI_Comm_size(c[i], &n);
        p->in[i] = -1;
        p->want_in[i] = 1000 * round + 100 * i + (me + n - 1) % n;
        MPI_Irecv(&p->in[i], 1, MPI_INT, (me + n - 1) % n, 5, c[i], &p->req[p->nreq++]);
    }
    for (i = NC - 1; i >= 0; i--) {
        int me, n;
        MPI_Comm_rank(c[i], &me);
        MPI_Comm_size(c[i], &n);
        p->out[i] = 1000 * round + 100 * i + me;
        MPI_Isend(&p->out[i], 1, MPI_INT, (me + 1) % n, 5, c[i], &p->req[p->nreq++]);
    }
    if (wait) {
        MPI_Waitall(p->nreq, p->req, MPI_STATUSES_IGNORE);
        for (i = 0; i < NC; i++)
            CHECKP(p->in[i] == p->want_in[i], "round %d comm %d ring got %d, expected %d", round, i, p->in[i],
                   p->want_in[i]);
    }
}

static void settle(struct pend *p, int round, int *errp)
{
    int i, rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Waitall(p->nreq, p->req, MPI_STATUSES_IGNORE);
    for (i = 0; i < NC; i++)
        CHECKP(p->in[i] == p->want_in[i], "round %d comm %d pending ring got %d, expected %d", round, i, p->in[i],
               p->want_in[i]);
    CHECKP(p->sum == p->want_sum, "round %d pending Iallreduce = %d, expected %d", round, p->sum, p->want_sum);
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, r, i, last = -1;
    struct pend pend[2];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (r = 0; r < ROUNDS; r++) {
        MPI_Comm c[NC];
        struct pend *p = &pend[r % 2];
        int lag = r % 3 == 2;
        MPI_Comm_dup(MPI_COMM_WORLD, &c[0]);
        MPI_Comm_split(c[0], 0, size - rank, &c[1]);
        MPI_Comm_split(c[0], rank % 2, rank, &c[2]);
        MPI_Comm_dup(c[1], &c[3]);
        for (i = 0; i < NC; i++)
            collectives(c[i], r, i, &errs);
        /* Every third round leaves its messages and an Iallreduce pending over the frees. */
        ring(c, r, p, !lag, &errs);
        if (lag) {
            p->v = rank + r;
            p->sum = -1;
            p->want_sum = size * (size - 1) / 2 + size * r;
            MPI_Iallreduce(&p->v, &p->sum, 1, MPI_INT, MPI_SUM, c[3], &p->req[p->nreq++]);
        }
        if (last >= 0) {
            settle(&pend[last % 2], last, &errs);
            last = -1;
        }
        switch (r % 4) {
        case 0: /* children first */
            for (i = NC - 1; i >= 0; i--)
                MPI_Comm_free(&c[i]);
            break;
        case 1: /* the dup of the world first: the splits outlive it and are used after */
            MPI_Comm_free(&c[0]);
            collectives(c[1], r, 11, &errs);
            collectives(c[3], r, 13, &errs);
            for (i = 1; i < NC; i++)
                MPI_Comm_free(&c[i]);
            break;
        case 2: /* parents first */
            for (i = 0; i < NC; i++)
                MPI_Comm_free(&c[i]);
            break;
        default: /* rank-dependent orders */
            for (i = 0; i < NC; i++)
                MPI_Comm_free(&c[(i + rank) % NC]);
            break;
        }
        if (lag)
            last = r;
    }
    if (last >= 0)
        settle(&pend[last % 2], last, &errs);
    return ct_finish(rank, errs);
}
