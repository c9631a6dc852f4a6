/* Nonblocking collectives on several communicators at once, started in a different order
 * on every rank (MPI only orders the collectives of one communicator): MPI_COMM_WORLD,
 * duplicates of it and of a duplicate, a split into even and odd ranks, a reversed split,
 * and communicators freed and made again between rounds. Each round every rank starts an
 * Iallreduce (SUM on long and double, MAXLOC on MPI_DOUBLE_INT), an Ibcast with a strided
 * datatype, an Ireduce to a moving root and an Ibarrier, spread over the communicators in a
 * rank-dependent rotation, with a blocking Allreduce in between, and completes them in
 * reverse order. Buffers of about 8-16 KiB (Toucan sends reductions from 8 KiB to the real MPI
 * by default; broadcasts and barriers stay on its own point-to-point). */
#include "ct.h"

#define NCOMM 5
#define ROUNDS 12
#define N 1100

struct dint {
    double v;
    int i;
};

struct slot {
    MPI_Comm comm;
    int me, n;
    long sum[N];
    double dsum[N];
    struct dint loc[N];
    int b[2 * N];
    long red[N];
    int bcast_root, reduce_root;
};

static void start(struct slot *s, int round, MPI_Datatype strided, MPI_Request *r)
{
    int k;
    for (k = 0; k < N; k++) {
        s->sum[k] = s->me + 10L * k + round;
        s->dsum[k] = 0.5 * s->me + k;
        s->loc[k].v = (double) ((s->me * 7 + k + round) % 5);
        s->loc[k].i = s->me;
        s->red[k] = -1;
    }
    s->bcast_root = round % s->n;
    s->reduce_root = (round * 3 + 1) % s->n;
    for (k = 0; k < 2 * N; k++)
        s->b[k] = s->me == s->bcast_root ? 1000 * round + k : -7;
    MPI_Iallreduce(MPI_IN_PLACE, s->sum, N, MPI_LONG, MPI_SUM, s->comm, &r[0]);
    MPI_Iallreduce(MPI_IN_PLACE, s->dsum, N, MPI_DOUBLE, MPI_SUM, s->comm, &r[1]);
    MPI_Iallreduce(MPI_IN_PLACE, s->loc, N, MPI_DOUBLE_INT, MPI_MAXLOC, s->comm, &r[2]);
    MPI_Ibcast(s->b, 1, strided, s->bcast_root, s->comm, &r[3]);
    MPI_Ibarrier(s->comm, &r[4]);
}

static void check(struct slot *s, int round, const char *name, int rank, int *errp)
{
    int k, p, n = s->n;
    for (k = 0; k < N; k++) {
        long want = (long) n * (n - 1) / 2 + (long) n * (10L * k + round);
        double dwant = 0.25 * n * (n - 1) + (double) n * k;
        double best = -1;
        int at = -1;
        CHECKP(s->sum[k] == want, "%s round %d: sum[%d]=%ld want %ld", name, round, k, s->sum[k], want);
        CHECKP(s->dsum[k] == dwant, "%s round %d: dsum[%d]=%g want %g", name, round, k, s->dsum[k], dwant);
        for (p = 0; p < n; p++) {
            double v = (double) ((p * 7 + k + round) % 5);
            if (v > best) {
                best = v;
                at = p;
            }
        }
        CHECKP(s->loc[k].v == best && s->loc[k].i == at, "%s round %d: maxloc[%d]=(%g,%d) want (%g,%d)", name, round, k,
               s->loc[k].v, s->loc[k].i, best, at);
    }
    for (k = 0; k < 2 * N; k++) {
        int want = (k % 2 == 0 || s->me == s->bcast_root) ? 1000 * round + k : -7;
        CHECKP(s->b[k] == want, "%s round %d: b[%d]=%d want %d", name, round, k, s->b[k], want);
    }
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, round, j, k;
    struct slot sl[NCOMM];
    MPI_Datatype strided;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Type_vector(N, 1, 2, MPI_INT, &strided);
    MPI_Type_commit(&strided);

    sl[0].comm = MPI_COMM_WORLD;
    MPI_Comm_dup(MPI_COMM_WORLD, &sl[1].comm);
    MPI_Comm_dup(sl[1].comm, &sl[2].comm);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &sl[3].comm);
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &sl[4].comm);

    for (round = 0; round < ROUNDS; round++) {
        MPI_Request r[NCOMM][5];
        long shadow[NCOMM][N], red[NCOMM][N];
        const char *names[NCOMM] = {"world", "dup", "dupdup", "parity", "reversed"};
        for (j = 0; j < NCOMM; j++) {
            MPI_Comm_rank(sl[j].comm, &sl[j].me);
            MPI_Comm_size(sl[j].comm, &sl[j].n);
        }
        /* start on the communicators in an order that differs between ranks */
        for (j = 0; j < NCOMM; j++) {
            int c = (j + rank + round) % NCOMM;
            struct slot *s = &sl[c];
            start(s, round, strided, r[c]);
            for (k = 0; k < N; k++) {
                shadow[c][k] = (long) s->me * s->me + k;
                red[c][k] = -1;
            }
        }
        /* reductions after all the others, again in a rank-dependent order */
        {
            MPI_Request rr[NCOMM];
            for (j = 0; j < NCOMM; j++) {
                int c = (NCOMM - 1 - j + rank) % NCOMM;
                MPI_Ireduce(shadow[c], red[c], N, MPI_LONG, MPI_SUM, sl[c].reduce_root, sl[c].comm, &rr[c]);
            }
            /* a blocking collective while all of those are in flight */
            {
                int one = 1, total = 0;
                MPI_Allreduce(&one, &total, 1, MPI_INT, MPI_SUM, sl[2].comm);
                CHECK(total == size, "round %d: blocking allreduce %d", round, total);
            }
            for (j = NCOMM - 1; j >= 0; j--) {
                MPI_Waitall(5, r[j], MPI_STATUSES_IGNORE);
                MPI_Wait(&rr[j], MPI_STATUS_IGNORE);
            }
        }
        for (j = 0; j < NCOMM; j++) {
            struct slot *s = &sl[j];
            check(s, round, names[j], rank, &errs);
            if (s->me == s->reduce_root) {
                for (k = 0; k < N; k++) {
                    long want = (long) (s->n - 1) * s->n * (2 * s->n - 1) / 6 + (long) s->n * k;
                    CHECK(red[j][k] == want, "%s round %d: reduce[%d]=%ld want %ld", names[j], round, k, red[j][k], want);
                }
            }
        }
        /* every third round, make the duplicates again (freeing the old ones) */
        if (round % 3 == 2) {
            MPI_Comm_free(&sl[2].comm);
            MPI_Comm_free(&sl[1].comm);
            MPI_Comm_dup(sl[4].comm, &sl[1].comm);
            MPI_Comm_dup(MPI_COMM_WORLD, &sl[2].comm);
        }
    }

    for (j = 1; j < NCOMM; j++)
        MPI_Comm_free(&sl[j].comm);
    MPI_Type_free(&strided);
    if (errs == 0)
        ct_say(rank, "OK");
    MPI_Finalize();
    return errs != 0;
}
