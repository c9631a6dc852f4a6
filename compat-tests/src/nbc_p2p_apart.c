/* Program messages and small nonblocking collectives on the same communicators
 * never match each other.
 *
 * Per round, on MPI_COMM_WORLD, on a duplicate of it made and freed in the
 * round, on a duplicate of that duplicate, and on a split of the world with the
 * ranks reversed: a receive from MPI_ANY_SOURCE with MPI_ANY_TAG is posted
 * first; then small nonblocking collectives run on that communicator (a
 * broadcast of 8 bytes and one of 1 KiB from a root that changes every round,
 * an Ibarrier, an Iallreduce of one int, an Iallgather and an Ialltoall of one
 * int each, and a persistent MPI_Bcast_init of 8 bytes started twice) and
 * complete. Nothing has been sent yet, so the posted receive is still pending
 * and MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG) finds nothing; only after a
 * barrier does each rank send its right neighbour one message (a tag that
 * names the round and the communicator), and the posted receive must get
 * exactly that. Every result is checked. */
#include "ct.h"

#define ROUNDS 6
#define NCOMM 4
#define BIG 1024

static int check_round(MPI_Comm c, int k, int round, int wrank, int *errp)
{
    int rank = wrank, n, me, i, flag = -1;
    MPI_Comm_size(c, &n);
    MPI_Comm_rank(c, &me);
    int left = (me + n - 1) % n, right = (me + 1) % n;
    int tag = 1000 * round + k;
    int got[2] = {-1, -1};
    MPI_Request rr, reqs[6], pers;
    MPI_Status st;
    MPI_Irecv(got, 2, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, c, &rr);

    int root = (round + k) % n, bigroot = (root + 1) % n;
    double b8 = me == root ? 1.5 * round + k : -1.0;
    unsigned char big[BIG];
    for (i = 0; i < BIG; i++)
        big[i] = me == bigroot ? (unsigned char)(i * 7 + round + k) : 0;
    int one = me + 1, sum = -1;
    int *all = ct_malloc(sizeof(int) * n);
    int *out = ct_malloc(sizeof(int) * n);
    int *in = ct_malloc(sizeof(int) * n);
    for (i = 0; i < n; i++) {
        out[i] = me * 100 + i;
        in[i] = -1;
        all[i] = -1;
    }
    long p8 = me == 0 ? 77L * round + k : 0;

    MPI_Ibcast(&b8, 1, MPI_DOUBLE, root, c, &reqs[0]);
    MPI_Ibarrier(c, &reqs[1]);
    MPI_Iallreduce(&one, &sum, 1, MPI_INT, MPI_SUM, c, &reqs[2]);
    MPI_Iallgather(&one, 1, MPI_INT, all, 1, MPI_INT, c, &reqs[3]);
    MPI_Ialltoall(out, 1, MPI_INT, in, 1, MPI_INT, c, &reqs[4]);
    MPI_Ibcast(big, BIG, MPI_BYTE, bigroot, c, &reqs[5]);
    MPI_Waitall(6, reqs, MPI_STATUSES_IGNORE);

    MPI_Bcast_init(&p8, 1, MPI_LONG, 0, c, MPI_INFO_NULL, &pers);
    for (i = 0; i < 2; i++) {
        if (me == 0)
            p8 = 77L * round + k + i;
        MPI_Start(&pers);
        MPI_Wait(&pers, MPI_STATUS_IGNORE);
        CHECKP(p8 == 77L * round + k + i, "comm %d round %d: persistent bcast %ld", k, round, p8);
    }
    MPI_Request_free(&pers);

    CHECKP(b8 == 1.5 * round + k, "comm %d round %d: bcast 8 B %g", k, round, b8);
    for (i = 0; i < BIG; i++)
        if (big[i] != (unsigned char)(i * 7 + round + k)) {
            CHECKP(0, "comm %d round %d: bcast 1 KiB byte %d is %d", k, round, i, big[i]);
            break;
        }
    CHECKP(sum == n * (n + 1) / 2, "comm %d round %d: allreduce %d", k, round, sum);
    for (i = 0; i < n; i++) {
        CHECKP(all[i] == i + 1, "comm %d round %d: allgather[%d] %d", k, round, i, all[i]);
        CHECKP(in[i] == i * 100 + me, "comm %d round %d: alltoall[%d] %d", k, round, i, in[i]);
    }

    /* Nothing sent yet: the program's receive still waits, and no probe sees a message. */
    MPI_Test(&rr, &flag, &st);
    int early = flag;
    CHECKP(flag == 0, "comm %d round %d: the ANY receive completed before any send (from %d tag %d)", k, round,
           flag ? st.MPI_SOURCE : -1, flag ? st.MPI_TAG : -1);
    if (flag == 0) {
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, c, &flag, &st);
        CHECKP(flag == 0, "comm %d round %d: a probe saw a message before any send", k, round);
    }
    MPI_Barrier(c);
    int msg[2] = {me, tag};
    MPI_Send(msg, 2, MPI_INT, right, tag, c);
    if (early) /* reported above; take the message it should have been */
        MPI_Recv(got, 2, MPI_INT, left, tag, c, &st);
    else
        MPI_Wait(&rr, &st);
    CHECKP(st.MPI_SOURCE == left && st.MPI_TAG == tag && got[0] == left && got[1] == tag,
           "comm %d round %d: got {%d,%d} from %d tag %d, want {%d,%d} from %d tag %d", k, round, got[0], got[1],
           st.MPI_SOURCE, st.MPI_TAG, left, tag, left, tag);
    free(all);
    free(out);
    free(in);
    return sum;
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, round, k;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm rev;
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &rev);
    int sums = 0;
    for (round = 0; round < ROUNDS; round++) {
        MPI_Comm dup, dupdup;
        MPI_Comm_dup(MPI_COMM_WORLD, &dup);
        MPI_Comm_dup(dup, &dupdup);
        MPI_Comm comms[NCOMM] = {MPI_COMM_WORLD, dup, dupdup, rev};
        for (k = 0; k < NCOMM; k++)
            sums += check_round(comms[k], k, round, rank, &errs);
        MPI_Comm_free(&dupdup);
        MPI_Comm_free(&dup);
    }
    MPI_Comm_free(&rev);
    CHECK(sums == ROUNDS * NCOMM * size * (size + 1) / 2, "sum of allreduces %d", sums);
    if (rank == 0)
        ct_say(rank, "%d rounds on %d communicators, world %d", ROUNDS, NCOMM, size);
    return ct_finish(rank, errs);
}
