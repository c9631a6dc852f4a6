/* Several nonblocking Iallgathers (and Iallgathervs) outstanding on one communicator,
 * completed out of order (issue 16, session 23: at several ranks per process Iallgather runs
 * on the two-level records, whose exchange between processes is a recursive doubling of real
 * messages up to 16 KiB per step and MPICH's MPI_Iallgather above).
 *
 * Each round, on MPI_COMM_WORLD, a duplicate, a split with the ranks reversed (not in process
 * order) and an uneven split (the first ranks and one later rank: some processes hold one
 * member, others several, or none), every rank starts at once, after a rank-dependent
 * computation:
 *   0: Iallgather of 1 int            4: Iallgather of 0 ints (zero counts)
 *   1: Iallgather of 300 ints         5: Iallgather of 2 ints into a strided resized type
 *   2: Iallgather of 5000 ints        6: Iallgather of 3 ints in place
 *   3: Ibcast of 7 ints (between)     7: Iallgatherv, rank j gives j % 3 ints, gaps between
 * then completes them in an order that changes with the round and the rank: MPI_Waitall over
 * the requests in reverse, MPI_Testsome loops, MPI_Test on each from the last, or MPI_Wait
 * from the middle outwards. Every received value is checked, and the gaps of the strided
 * type and the Iallgatherv must keep their sentinel. */
#include "ct.h"

#define ROUNDS 6
#define NCALL 8
#define SENT (-7)

static int val(int round, int call, int from, int i)
{
    return round * 1000000 + call * 100000 + from * 5003 + i;
}

static double spin(int rank, int k, int round)
{
    double x = 1.0;
    long n = ((rank * 7 + k * 3 + round) % 5) * 1200;
    for (long i = 0; i < n; i++)
        x = x * 1.0000001 + 1e-9;
    return x;
}

static const int counts[NCALL] = {1, 300, 5000, 7, 0, 2, 3, 0};

static void complete(MPI_Request *rq, int n, int how, int rank, int *errp)
{
    int i, left = n;
    switch (how) {
    case 0: {
        MPI_Request rev[NCALL];
        for (i = 0; i < n; i++)
            rev[i] = rq[n - 1 - i];
        MPI_Waitall(n, rev, MPI_STATUSES_IGNORE);
        for (i = 0; i < n; i++)
            rq[i] = rev[n - 1 - i];
        break;
    }
    case 1:
        while (left > 0) {
            int outc, idx[NCALL];
            MPI_Testsome(n, rq, &outc, idx, MPI_STATUSES_IGNORE);
            if (outc == MPI_UNDEFINED)
                break;
            left -= outc;
        }
        break;
    case 2:
        while (left > 0)
            for (i = n - 1; i >= 0; i--) {
                int flag = 0;
                if (rq[i] == MPI_REQUEST_NULL)
                    continue;
                MPI_Test(&rq[i], &flag, MPI_STATUS_IGNORE);
                if (flag)
                    left--;
            }
        break;
    default:
        for (i = 0; i < n; i++) {
            int k = (n / 2 + (i % 2 ? -(i + 1) / 2 : i / 2) + n) % n;
            MPI_Wait(&rq[k], MPI_STATUS_IGNORE);
        }
        break;
    }
    for (i = 0; i < n; i++)
        CHECKP(rq[i] == MPI_REQUEST_NULL, "request %d not freed by its completion", i);
}

static void round_on(MPI_Comm c, const char *cname, int round, int rank, int *errp, double *sink)
{
    int me, n, j, i, k;
    MPI_Comm_rank(c, &me);
    MPI_Comm_size(c, &n);
    int *sb[NCALL], *rb[NCALL];
    int vc[64], vd[64];
    MPI_Request rq[NCALL];
    MPI_Datatype vec, rs;
    /* 2 ints, one apart, blocks 5 ints apart */
    MPI_Type_vector(2, 1, 2, MPI_INT, &vec);
    MPI_Type_create_resized(vec, 0, 5 * sizeof(int), &rs);
    MPI_Type_commit(&rs);
    int vtotal = 0;
    for (j = 0; j < n; j++) {
        vc[j] = j % 3;
        vd[j] = vtotal + 1; /* one sentinel before every block */
        vtotal += vc[j] + 1;
    }
    for (k = 0; k < NCALL; k++) {
        size_t rlen = k == 5 ? (size_t)5 * n : k == 7 ? (size_t)vtotal + 1 : (size_t)(counts[k] ? counts[k] : 1) * n;
        sb[k] = ct_malloc(sizeof(int) * (counts[k] + 1));
        rb[k] = ct_malloc(sizeof(int) * rlen);
        for (i = 0; i < (int)rlen; i++)
            rb[k][i] = SENT;
        for (i = 0; i < counts[k]; i++)
            sb[k][i] = val(round, k, me, i);
    }
    for (i = 0; i < me % 3; i++)
        sb[7][i] = val(round, 7, me, i);
    /* in place: the own block already in the receive buffer */
    for (i = 0; i < 3; i++)
        rb[6][3 * me + i] = val(round, 6, me, i);
    int root = round % n;
    for (i = 0; i < 7; i++)
        rb[3][i] = me == root ? val(round, 3, root, i) : SENT;

    for (k = 0; k < NCALL; k++) {
        *sink += spin(rank, k, round);
        switch (k) {
        case 3:
            MPI_Ibcast(rb[3], 7, MPI_INT, root, c, &rq[k]);
            break;
        case 5:
            MPI_Iallgather(sb[5], 2, MPI_INT, rb[5], 1, rs, c, &rq[k]);
            break;
        case 6:
            MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rb[6], 3, MPI_INT, c, &rq[k]);
            break;
        case 7:
            MPI_Iallgatherv(sb[7], me % 3, MPI_INT, rb[7], vc, vd, MPI_INT, c, &rq[k]);
            break;
        default:
            MPI_Iallgather(sb[k], counts[k], MPI_INT, rb[k], counts[k], MPI_INT, c, &rq[k]);
            break;
        }
    }
    complete(rq, NCALL, (round + rank) % 4, rank, errp);

    int bad = 0;
    for (k = 0; k < NCALL && bad < 5; k++) {
        switch (k) {
        case 3:
            for (i = 0; i < 7; i++)
                if (rb[3][i] != val(round, 3, root, i) && bad++ < 5)
                    CHECKP(0, "%s round %d Ibcast [%d] = %d", cname, round, i, rb[3][i]);
            break;
        case 4:
            if (rb[4][0] != SENT && bad++ < 5)
                CHECKP(0, "%s round %d zero-count Iallgather wrote %d", cname, round, rb[4][0]);
            break;
        case 5:
            for (j = 0; j < n; j++)
                for (i = 0; i < 5; i++) {
                    int want = i == 0 ? val(round, 5, j, 0) : i == 2 ? val(round, 5, j, 1) : SENT;
                    if (rb[5][5 * j + i] != want && bad++ < 5)
                        CHECKP(0, "%s round %d strided Iallgather [%d][%d] = %d (want %d)", cname, round, j, i,
                               rb[5][5 * j + i], want);
                }
            break;
        case 7:
            for (j = 0; j < n; j++) {
                if (rb[7][vd[j] - 1] != SENT && bad++ < 5)
                    CHECKP(0, "%s round %d Iallgatherv gap before %d = %d", cname, round, j, rb[7][vd[j] - 1]);
                for (i = 0; i < vc[j]; i++)
                    if (rb[7][vd[j] + i] != val(round, 7, j, i) && bad++ < 5)
                        CHECKP(0, "%s round %d Iallgatherv [%d][%d] = %d", cname, round, j, i, rb[7][vd[j] + i]);
            }
            if (rb[7][vtotal] != SENT && bad++ < 5)
                CHECKP(0, "%s round %d Iallgatherv wrote past its end", cname, round);
            break;
        default:
            for (j = 0; j < n; j++)
                for (i = 0; i < counts[k]; i++)
                    if (rb[k][counts[k] * j + i] != val(round, k, j, i) && bad++ < 5)
                        CHECKP(0, "%s round %d Iallgather %d [%d][%d] = %d", cname, round, k, j, i,
                               rb[k][counts[k] * j + i]);
            break;
        }
    }
    for (k = 0; k < NCALL; k++) {
        free(sb[k]);
        free(rb[k]);
    }
    MPI_Type_free(&rs);
    MPI_Type_free(&vec);
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0;
    double sink = 0;
    MPI_Comm comms[4];
    const char *names[4] = {"world", "dup", "reversed", "uneven"};

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    comms[0] = MPI_COMM_WORLD;
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]);
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &comms[2]);
    /* The first half of the ranks and the last one: with several ranks per process, some
     * processes hold one member or none. */
    int in = rank < (size + 1) / 2 || rank == size - 1;
    MPI_Comm_split(MPI_COMM_WORLD, in ? 0 : MPI_UNDEFINED, rank, &comms[3]);
    for (int round = 0; round < ROUNDS; round++)
        for (int c = 0; c < 4; c++)
            if (comms[c] != MPI_COMM_NULL)
                round_on(comms[c], names[c], round, rank, &errs, &sink);
    MPI_Comm_free(&comms[1]);
    MPI_Comm_free(&comms[2]);
    if (comms[3] != MPI_COMM_NULL)
        MPI_Comm_free(&comms[3]);
    if (sink < 0)
        ct_say(rank, "unreachable");
    return ct_finish(rank, errs);
}
