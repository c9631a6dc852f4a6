/* Nonblocking Ialltoall at several ranks per process (issue 16, nbc9: the two-level record
 * packs the blocks between processes into one real exchange and copies those between local
 * ranks at the start, up to 512 KiB packed per process; larger calls keep the helper task).
 * On MPI_COMM_WORLD, a duplicate, a split with the ranks reversed (not in process order), a
 * split of the even world ranks and one without the last rank (uneven: the helper task),
 * each round starts five Ialltoalls at once: 1 int, 100
 * ints, 2048 ints (8 KiB blocks), 100 ints in place, and 100 ints sent from a strided vector
 * type (every other int) into plain ints; every second round also one of 20000 ints (80 KiB
 * blocks, above the record's bound at 8 ranks). Every rank computes a rank- and
 * call-dependent time before each start, overwrites its send buffer as soon as the request
 * completes, and the ranks complete by Waitall, Test loops or Waitany in turn. Every block
 * is checked. */
#include "ct.h"

#define ROUNDS 6
#define NC 6

static int aval(int round, int call, int from, int to, int i)
{
    return round * 1000000 + call * 100000 + from * 1000 + to * 37 + i;
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

static void round_on(MPI_Comm comm, MPI_Datatype every_other, int round, int rank, int *errp, double *sink)
{
    const int counts[NC] = {1, 100, 2048, 100, 100, 20000};
    int me, size;
    MPI_Request rq[NC];
    int *sb[NC], *rb[NC];
    int calls[NC];
    int nq = 0;

    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    for (int c = 0; c < NC; c++) {
        if (c == 5 && round % 2)
            continue;
        int n = counts[c];
        /* Call 4 sends from every other int of a buffer twice as long. */
        long slen = (long)n * size * (c == 4 ? 2 : 1);
        sb[c] = malloc(sizeof(int) * slen);
        rb[c] = malloc(sizeof(int) * (long)n * size);
        for (long i = 0; i < slen; i++)
            sb[c][i] = -7;
        for (int to = 0; to < size; to++)
            for (int i = 0; i < n; i++) {
                long at = (long)to * n + i;
                int v = aval(round, c, me, to, i);
                if (c == 3)
                    rb[c][at] = v; /* in place: the data goes in the receive buffer */
                else if (c == 4)
                    sb[c][2 * at] = v;
                else
                    sb[c][at] = v;
            }
        if (c != 3)
            for (long i = 0; i < (long)n * size; i++)
                rb[c][i] = -1;
        *sink += spin(rank, c, round);
        if (c == 3)
            MPI_Ialltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rb[c], n, MPI_INT, comm, &rq[nq]);
        else if (c == 4)
            MPI_Ialltoall(sb[c], n, every_other, rb[c], n, MPI_INT, comm, &rq[nq]);
        else
            MPI_Ialltoall(sb[c], n, MPI_INT, rb[c], n, MPI_INT, comm, &rq[nq]);
        calls[nq++] = c;
    }

    /* Completion, in a way that depends on the round and the rank. */
    int how = (round + rank) % 3;
    if (how == 0) {
        MPI_Waitall(nq, rq, MPI_STATUSES_IGNORE);
    } else if (how == 1) {
        for (int k = nq - 1; k >= 0; k--) {
            int flag = 0;
            while (!flag)
                MPI_Test(&rq[k], &flag, MPI_STATUS_IGNORE);
            /* The send buffer is the program's again. */
            if (calls[k] != 3)
                memset(sb[calls[k]], 0x5a, sizeof(int) * (long)counts[calls[k]] * size * (calls[k] == 4 ? 2 : 1));
        }
    } else {
        for (int k = 0; k < nq; k++) {
            int idx;
            MPI_Waitany(nq, rq, &idx, MPI_STATUS_IGNORE);
            if (idx != MPI_UNDEFINED && calls[idx] != 3)
                memset(sb[calls[idx]], 0x5a, sizeof(int) * (long)counts[calls[idx]] * size * (calls[idx] == 4 ? 2 : 1));
        }
    }

    for (int k = 0; k < nq; k++) {
        int c = calls[k], n = counts[c];
        long bad = -1;
        for (int from = 0; from < size && bad < 0; from++)
            for (int i = 0; i < n; i++)
                if (rb[c][(long)from * n + i] != aval(round, c, from, me, i)) {
                    bad = (long)from * n + i;
                    break;
                }
        CHECKP(bad < 0, "round %d call %d (%d ints) on a communicator of %d: element %ld is %d", round, c, n, size, bad,
               bad < 0 ? 0 : rb[c][bad]);
        free(sb[c]);
        free(rb[c]);
    }
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0;
    double sink = 0;
    MPI_Comm comms[5];
    MPI_Datatype every_other;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Type_vector(1, 1, 2, MPI_INT, &every_other);
    {
        /* Extent of two ints, so that consecutive elements are every other int. */
        MPI_Datatype t;
        MPI_Type_create_resized(every_other, 0, 2 * sizeof(int), &t);
        MPI_Type_free(&every_other);
        every_other = t;
    }
    MPI_Type_commit(&every_other);
    comms[0] = MPI_COMM_WORLD;
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]);
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &comms[2]);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &comms[3]);
    /* Uneven: the last rank apart (its process holds fewer ranks of the rest). */
    MPI_Comm_split(MPI_COMM_WORLD, rank == size - 1, rank, &comms[4]);
    for (int round = 0; round < ROUNDS; round++)
        for (int c = 0; c < 5; c++)
            round_on(comms[c], every_other, round, rank, &errs, &sink);
    for (int c = 1; c < 5; c++)
        MPI_Comm_free(&comms[c]);
    MPI_Type_free(&every_other);
    if (sink < 0)
        ct_say(rank, "unreachable");
    return ct_finish(rank, errs);
}
