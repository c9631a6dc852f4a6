/* Nonblocking Igather, Iscatter and Iallgather with roots on every process, and large
 * broadcasts beside them (issue 16, nbc8: at several ranks per process the rooted calls and
 * Iallgather take the two-level records in one pass, a gather's non-roots and a scatter's
 * root complete once their blocks are packed, and 64 KiB broadcasts run in helper tasks
 * among them). On MPI_COMM_WORLD, a duplicate and a split with the ranks reversed,
 * each round starts at once, from roots that change with the call and the round:
 * Igather of 1 and 100 ints (and in place at the root), Iscatter of 1 and 100 ints (and in
 * place), Iallgather of 3 ints (and in place), two broadcasts of 64 KiB with different
 * roots, and an Igatherv (a v form, which keeps the general path) between them; every rank
 * computes a rank- and call-dependent time before each start. A broadcast's root, a
 * gather's non-root and a scatter's root overwrite their send buffer as soon as that
 * request completes, and the ranks complete by Waitall,
 * Test loops or Waitany in turn. The program ends with a 64 KiB broadcast whose root calls
 * MPI_Finalize right after its wait, while the others may still be receiving. */
#include "ct.h"

#define ROUNDS 8
#define BIG 65536
#define NR 12

static int gval(int round, int call, int from, int i)
{
    return round * 100000 + call * 10000 + from * 100 + i;
}

static unsigned char bval(int round, int call, int root, long i)
{
    return (unsigned char)(round * 29 + call * 13 + root * 7 + i * 5 + 3);
}

/* A few microseconds of work, depending on (rank, k, round). */
static double spin(int rank, int k, int round)
{
    double x = 1.0;
    long n = ((rank * 5 + k * 3 + round) % 4) * 1500;
    for (long i = 0; i < n; i++)
        x = x * 1.0000001 + 1e-9;
    return x;
}

static void round_on(MPI_Comm comm, int round, int wrank, int *errp, double *sink)
{
    const int gn[2] = {1, 100};
    int rank = wrank, me, size, k, c;
    int root[NR];
    MPI_Request rq[NR];
    int nq = 0;

    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    for (k = 0; k < NR; k++)
        root[k] = (round * 5 + k * 3 + 2) % size;

    /* Igather: calls 0, 1 (from a send buffer), 2 (in place at the root, 100 ints). */
    int *gs[3], *gr[3];
    for (c = 0; c < 3; c++) {
        int n = c == 0 ? gn[0] : gn[1];
        gs[c] = malloc(sizeof(int) * n);
        gr[c] = malloc(sizeof(int) * n * size);
        for (int i = 0; i < n; i++)
            gs[c][i] = gval(round, c, me, i);
        for (int i = 0; i < n * size; i++)
            gr[c][i] = -1;
        if (c == 2 && me == root[c])
            for (int i = 0; i < n; i++)
                gr[c][me * n + i] = gval(round, c, me, i);
    }
    /* Iscatter: calls 3, 4 (to a receive buffer), 5 (in place at the root). */
    int *ss[3], *sr[3];
    for (c = 0; c < 3; c++) {
        int n = c == 0 ? gn[0] : gn[1];
        ss[c] = malloc(sizeof(int) * n * size);
        sr[c] = malloc(sizeof(int) * n);
        for (int i = 0; i < n * size; i++)
            ss[c][i] = me == root[3 + c] ? gval(round, 3 + c, i / n, i % n) : -2;
        for (int i = 0; i < n; i++)
            sr[c][i] = -1;
    }
    /* Iallgather: calls 6 (3 ints), 7 (in place). */
    int *ag[2], agsend[3];
    for (c = 0; c < 2; c++) {
        ag[c] = malloc(sizeof(int) * 3 * size);
        for (int i = 0; i < 3 * size; i++)
            ag[c][i] = i / 3 == me && c == 1 ? gval(round, 6 + c, me, i % 3) : -1;
    }
    for (int i = 0; i < 3; i++)
        agsend[i] = gval(round, 6, me, i);
    /* Broadcasts: calls 8 and 9 (64 KiB); call 10 an Igatherv of 2 ints. */
    unsigned char *bb[2];
    for (c = 0; c < 2; c++) {
        bb[c] = malloc(BIG);
        for (long i = 0; i < BIG; i++)
            bb[c][i] = me == root[8 + c] ? bval(round, 8 + c, root[8 + c], i) : 0;
    }
    int gvs[2] = {gval(round, 10, me, 0), gval(round, 10, me, 1)};
    int *gvr = malloc(sizeof(int) * 2 * size), *cnt = malloc(sizeof(int) * size), *dsp = malloc(sizeof(int) * size);
    for (int i = 0; i < size; i++) {
        cnt[i] = 2;
        dsp[i] = 2 * (size - 1 - i);
        gvr[2 * i] = gvr[2 * i + 1] = -1;
    }

    for (k = 0; k < NR - 1; k++) {
        *sink += spin(me, k, round);
        switch (k) {
        case 0:
        case 1:
            MPI_Igather(gs[k], gn[k], MPI_INT, gr[k], gn[k], MPI_INT, root[k], comm, &rq[nq++]);
            break;
        case 2:
            MPI_Igather(me == root[k] ? MPI_IN_PLACE : gs[k], gn[1], MPI_INT, gr[k], gn[1], MPI_INT, root[k], comm,
                        &rq[nq++]);
            break;
        case 3:
        case 4:
            MPI_Iscatter(ss[k - 3], gn[k - 3], MPI_INT, sr[k - 3], gn[k - 3], MPI_INT, root[k], comm, &rq[nq++]);
            break;
        case 5:
            MPI_Iscatter(ss[2], gn[1], MPI_INT, me == root[k] ? MPI_IN_PLACE : sr[2], gn[1], MPI_INT, root[k], comm,
                         &rq[nq++]);
            break;
        case 6:
            MPI_Iallgather(agsend, 3, MPI_INT, ag[0], 3, MPI_INT, comm, &rq[nq++]);
            break;
        case 7:
            MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ag[1], 3, MPI_INT, comm, &rq[nq++]);
            break;
        case 8:
        case 9:
            MPI_Ibcast(bb[k - 8], BIG, MPI_BYTE, root[k], comm, &rq[nq++]);
            if (me == root[k]) {
                /* The root's request may complete at once; its buffer is then free. */
                int flag = 0;
                MPI_Test(&rq[nq - 1], &flag, MPI_STATUS_IGNORE);
                if (flag)
                    memset(bb[k - 8], 0xEE, BIG);
            }
            break;
        case 10:
            MPI_Igatherv(gvs, 2, MPI_INT, gvr, cnt, dsp, MPI_INT, root[k], comm, &rq[nq++]);
            break;
        }
        /* A rank that only sends (a gather's non-root, a scatter's root not in place) may
         * find its request complete at once: its send buffer is then free to reuse. */
        if ((k <= 2 && me != root[k]) || ((k == 3 || k == 4) && me == root[k])) {
            int flag = 0, n = (k == 0 || k == 3) ? gn[0] : gn[1];
            MPI_Test(&rq[nq - 1], &flag, MPI_STATUS_IGNORE);
            if (flag && k <= 2)
                for (int i = 0; i < n; i++)
                    gs[k][i] = -9;
            if (flag && k > 2)
                for (int i = 0; i < n * size; i++)
                    ss[k - 3][i] = -9;
        }
    }

    switch ((round + me) % 3) {
    case 0:
        MPI_Waitall(nq, rq, MPI_STATUSES_IGNORE);
        break;
    case 1:
        for (k = nq - 1; k >= 0; k--) {
            int flag = 0;
            while (!flag)
                MPI_Test(&rq[k], &flag, MPI_STATUS_IGNORE);
        }
        break;
    default:
        for (k = 0; k < nq; k++) {
            int idx;
            MPI_Waitany(nq, rq, &idx, MPI_STATUS_IGNORE);
        }
        break;
    }

    for (c = 0; c < 3; c++) {
        int n = c == 0 ? gn[0] : gn[1];
        if (me != root[c])
            continue;
        for (int i = 0; i < n * size; i++)
            CHECKP(gr[c][i] == gval(round, c, i / n, i % n), "round %d igather %d [%d] = %d", round, c, i, gr[c][i]);
    }
    for (c = 0; c < 3; c++) {
        int n = c == 0 ? gn[0] : gn[1];
        if (c == 2 && me == root[3 + c]) {
            for (int i = 0; i < n * size; i++)
                CHECKP(ss[c][i] == gval(round, 3 + c, i / n, i % n), "round %d in-place iscatter root [%d]", round, i);
            continue;
        }
        for (int i = 0; i < n; i++)
            CHECKP(sr[c][i] == gval(round, 3 + c, me, i), "round %d iscatter %d [%d] = %d", round, c, i, sr[c][i]);
    }
    for (c = 0; c < 2; c++)
        for (int i = 0; i < 3 * size; i++)
            CHECKP(ag[c][i] == gval(round, 6 + c, i / 3, i % 3), "round %d iallgather %d [%d] = %d", round, c, i,
                   ag[c][i]);
    for (c = 0; c < 2; c++) {
        if (me == root[8 + c]) {
            /* Overwritten once complete: the others' copies must not follow it. */
            memset(bb[c], 0xDD, BIG);
            continue;
        }
        long bad = -1;
        for (long i = 0; i < BIG && bad < 0; i++)
            if (bb[c][i] != bval(round, 8 + c, root[8 + c], i))
                bad = i;
        CHECKP(bad < 0, "round %d ibcast %d from %d: byte %ld", round, c, root[8 + c], bad);
    }
    if (me == root[10])
        for (int i = 0; i < size; i++)
            for (int j = 0; j < 2; j++)
                CHECKP(gvr[2 * (size - 1 - i) + j] == gval(round, 10, i, j), "round %d igatherv [%d][%d]", round, i,
                       j);

    for (c = 0; c < 3; c++) {
        free(gs[c]);
        free(gr[c]);
        free(ss[c]);
        free(sr[c]);
    }
    free(ag[0]);
    free(ag[1]);
    free(bb[0]);
    free(bb[1]);
    free(gvr);
    free(cnt);
    free(dsp);
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0;
    double sink = 0;
    MPI_Comm comms[3];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    comms[0] = MPI_COMM_WORLD;
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]);
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &comms[2]);
    for (int round = 0; round < ROUNDS; round++)
        for (int c = 0; c < 3; c++)
            round_on(comms[c], round, rank, &errs, &sink);
    MPI_Comm_free(&comms[1]);
    MPI_Comm_free(&comms[2]);
    if (sink < 0)
        ct_say(rank, "unreachable");

    /* Last: a broadcast whose root goes on to MPI_Finalize (in ct_finish) at once. */
    unsigned char *last = malloc(BIG);
    int lroot = size - 1;
    for (long i = 0; i < BIG; i++)
        last[i] = rank == lroot ? bval(99, 0, lroot, i) : 0;
    MPI_Request r;
    MPI_Ibcast(last, BIG, MPI_BYTE, lroot, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    if (rank != lroot) {
        long bad = -1;
        for (long i = 0; i < BIG && bad < 0; i++)
            if (last[i] != bval(99, 0, lroot, i))
                bad = i;
        CHECK(bad < 0, "last ibcast: byte %ld", bad);
    }
    free(last);
    return ct_finish(rank, errs);
}
