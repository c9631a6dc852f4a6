/* Nonblocking broadcasts whose members start them in every order relative to the
 * root (issue 16, coll7: at several ranks per process the inter-process part starts
 * at the root's call, or at the first call away from the root's process, and ranks
 * that call once the data is there complete at once). On MPI_COMM_WORLD, a
 * duplicate and a split with the ranks reversed, each round starts six broadcasts
 * at once (1, 8, 300, 2048, 4096 and 65536 bytes, from roots that change with the
 * call and the round) plus one of a strided vector type, an Iallreduce and an
 * Ibarrier; every rank computes a rank- and call-dependent time before each start,
 * so roots start before, between and after the others. A root overwrites its buffer
 * as soon as its own request completes (the others must still get the data), and
 * the ranks complete by Waitall, Test loops or Waitany in turn. */
#include "ct.h"

#define NB 6
#define ROUNDS 12
#define VLEN 40 /* vector type: VLEN ints with stride 2 */

static unsigned char val(int round, int call, int root, long i)
{
    return (unsigned char)(round * 31 + call * 17 + root * 5 + i * 3 + 1);
}

/* A few microseconds of work, depending on (rank, k, round). */
static double spin(int rank, int k, int round)
{
    double x = 1.0;
    long n = ((rank * 7 + k * 3 + round) % 5) * 2000;
    for (long i = 0; i < n; i++)
        x = x * 1.0000001 + 1e-9;
    return x;
}

static void round_on(MPI_Comm comm, int round, int wrank, int *errp, double *sink)
{
    const long sizes[NB] = {1, 8, 300, 2048, 4096, 65536};
    int rank = wrank, me, size, k;
    unsigned char *b[NB];
    int roots[NB + 1];
    MPI_Request rq[NB + 3];
    int *vec;
    long long ared, aredin;
    MPI_Datatype vt;

    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    MPI_Type_vector(VLEN, 1, 2, MPI_INT, &vt);
    MPI_Type_commit(&vt);
    vec = malloc(sizeof(int) * 2 * VLEN);
    for (k = 0; k < NB; k++) {
        b[k] = malloc(sizes[k]);
        roots[k] = (round * 3 + k * 5 + 1) % size;
        for (long i = 0; i < sizes[k]; i++)
            b[k][i] = me == roots[k] ? val(round, k, roots[k], i) : 0;
    }
    roots[NB] = (round + size - 1) % size;
    for (int i = 0; i < 2 * VLEN; i++)
        vec[i] = me == roots[NB] ? (i % 2 == 0 ? round * 1000 + i : -7) : -1;

    for (k = 0; k < NB; k++) {
        *sink += spin(me, k, round);
        MPI_Ibcast(b[k], (int)sizes[k], MPI_BYTE, roots[k], comm, &rq[k]);
        if (k == 2) {
            aredin = (long long)me * 3 + round;
            MPI_Iallreduce(&aredin, &ared, 1, MPI_LONG_LONG, MPI_SUM, comm, &rq[NB]);
        }
    }
    MPI_Ibcast(vec, 1, vt, roots[NB], comm, &rq[NB + 1]);
    MPI_Ibarrier(comm, &rq[NB + 2]);

    /* A root may reuse its buffer once its own request completed. */
    for (k = 0; k < NB; k++) {
        if (me == roots[k]) {
            MPI_Wait(&rq[k], MPI_STATUS_IGNORE);
            memset(b[k], 0xEE, sizes[k]);
        }
    }
    switch ((round + me) % 3) {
    case 0:
        MPI_Waitall(NB + 3, rq, MPI_STATUSES_IGNORE);
        break;
    case 1:
        for (k = NB + 2; k >= 0; k--) {
            int flag = 0;
            while (!flag)
                MPI_Test(&rq[k], &flag, MPI_STATUS_IGNORE);
        }
        break;
    default:
        for (k = 0; k < NB + 3; k++) {
            int idx;
            MPI_Waitany(NB + 3, rq, &idx, MPI_STATUS_IGNORE);
        }
        break;
    }

    for (k = 0; k < NB; k++) {
        if (me == roots[k])
            continue;
        long bad = -1;
        for (long i = 0; i < sizes[k] && bad < 0; i++)
            if (b[k][i] != val(round, k, roots[k], i))
                bad = i;
        CHECKP(bad < 0, "round %d bcast %d (%ld bytes from %d): byte %ld is %d, want %d", round, k, sizes[k], roots[k],
               bad, bad < 0 ? 0 : b[k][bad], bad < 0 ? 0 : val(round, k, roots[k], bad));
    }
    CHECKP(ared == 3LL * size * (size - 1) / 2 + (long long)round * size, "round %d allreduce %lld", round, ared);
    for (int i = 0; i < 2 * VLEN; i++) {
        int want = i % 2 == 0 ? round * 1000 + i : (me == roots[NB] ? -7 : -1);
        CHECKP(vec[i] == want, "round %d vector bcast: element %d is %d, want %d", round, i, vec[i], want);
    }
    for (k = 0; k < NB; k++)
        free(b[k]);
    free(vec);
    MPI_Type_free(&vt);
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
    return ct_finish(rank, errs);
}
