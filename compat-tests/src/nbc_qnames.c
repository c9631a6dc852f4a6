/* Small nonblocking collectives on many communicators at once, while communicators are made
 * and freed between rounds (issue 16, session 29: between processes of one node the
 * collectives' messages go through the node's shared-memory queue, named by a job-wide name
 * of their real communicator that every process derives from the order of the idups; a
 * freed communicator's handle comes back for a new one). Each round makes a duplicate of the
 * world, a split by parity, a duplicate of that split and a reversed split, starts on them
 * and on the world (in an order that depends on the rank) an Ibcast, an Iallreduce, an
 * Iscatter, an Iallgather and an Ibarrier each, with the same call numbers on every
 * communicator, plus a persistent Bcast_init started twice on the split, and completes them
 * in the order the round picks; the data of every call is checked. Every other round frees
 * its communicators at once, the others free them a round later (handles reused in
 * another order). */
#include "ct.h"

#define ROUNDS 10
#define NCOMM 5 /* world, dup, split, dup of split, reversed */
#define NCALL 5 /* Ibcast, Iallreduce, Iscatter, Iallgather, Ibarrier */
#define BLK 24  /* ints per block: 96 bytes */

static int val(int round, int c, int call, int from, int i)
{
    return round * 100000 + c * 10000 + call * 1000 + from * 37 + i;
}

struct slot {
    MPI_Comm comm;
    int me, size, root;
    int *bc, *sum, *scs, *scr, *agi, *ago;
    int one[BLK];
};

static void start(struct slot *s, int round, int c, MPI_Request *rq)
{
    int n = s->size, me = s->me;
    s->root = (round + c) % n;
    s->bc = ct_malloc(BLK * sizeof(int));
    s->sum = ct_malloc(BLK * sizeof(int));
    s->scs = ct_malloc((size_t) n * BLK * sizeof(int));
    s->scr = ct_malloc(BLK * sizeof(int));
    s->agi = ct_malloc(BLK * sizeof(int));
    s->ago = ct_malloc((size_t) n * BLK * sizeof(int));
    for (int i = 0; i < BLK; i++) {
        s->bc[i] = me == s->root ? val(round, c, 0, s->root, i) : -1;
        s->agi[i] = val(round, c, 3, me, i);
    }
    for (int r = 0; r < n; r++)
        for (int i = 0; i < BLK; i++)
            s->scs[r * BLK + i] = val(round, c, 2, r, i);
    for (int i = 0; i < BLK; i++)
        s->one[i] = me + i;
    MPI_Ibcast(s->bc, BLK, MPI_INT, s->root, s->comm, &rq[0]);
    MPI_Iallreduce(s->one, s->sum, BLK, MPI_INT, MPI_SUM, s->comm, &rq[1]);
    MPI_Iscatter(s->scs, BLK, MPI_INT, s->scr, BLK, MPI_INT, s->root, s->comm, &rq[2]);
    MPI_Iallgather(s->agi, BLK, MPI_INT, s->ago, BLK, MPI_INT, s->comm, &rq[3]);
    MPI_Ibarrier(s->comm, &rq[4]);
}

static void check(struct slot *s, int round, int c, int rank, int *errp)
{
    int n = s->size;
    for (int i = 0; i < BLK; i++) {
        CHECKP(s->bc[i] == val(round, c, 0, s->root, i), "round %d comm %d: Ibcast[%d] %d", round, c, i, s->bc[i]);
        CHECKP(s->sum[i] == n * (n - 1) / 2 + n * i, "round %d comm %d: Iallreduce[%d] %d", round, c, i, s->sum[i]);
        CHECKP(s->scr[i] == val(round, c, 2, s->me, i), "round %d comm %d: Iscatter[%d] %d", round, c, i, s->scr[i]);
        for (int r = 0; r < n; r++)
            CHECKP(s->ago[r * BLK + i] == val(round, c, 3, r, i), "round %d comm %d: Iallgather[%d][%d] %d", round, c, r, i,
                  s->ago[r * BLK + i]);
    }
    free(s->bc);
    free(s->sum);
    free(s->scs);
    free(s->scr);
    free(s->agi);
    free(s->ago);
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm late[NCOMM] = {MPI_COMM_NULL, MPI_COMM_NULL, MPI_COMM_NULL, MPI_COMM_NULL, MPI_COMM_NULL};
    long checks = 0;
    for (int round = 0; round < ROUNDS; round++) {
        struct slot s[NCOMM];
        s[0].comm = MPI_COMM_WORLD;
        MPI_Comm_dup(MPI_COMM_WORLD, &s[1].comm);
        MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &s[2].comm);
        MPI_Comm_dup(s[2].comm, &s[3].comm);
        MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &s[4].comm);
        /* The previous round's communicators go now: their handles come back later. */
        for (int c = 1; c < NCOMM; c++)
            if (late[c] != MPI_COMM_NULL)
                MPI_Comm_free(&late[c]);
        for (int c = 0; c < NCOMM; c++) {
            MPI_Comm_rank(s[c].comm, &s[c].me);
            MPI_Comm_size(s[c].comm, &s[c].size);
        }
        MPI_Request rq[NCOMM * NCALL];
        /* Communicators started in an order that depends on the rank and round (the calls
         * on each one keep MPI's order). */
        for (int k = 0; k < NCOMM; k++) {
            int c = (k + rank + round) % NCOMM;
            start(&s[c], round, c, &rq[c * NCALL]);
        }
        int pb[BLK];
        for (int i = 0; i < BLK; i++)
            pb[i] = s[2].me == 0 ? val(round, 9, 0, 0, i) : -1;
        MPI_Request p;
        MPI_Bcast_init(pb, BLK, MPI_INT, 0, s[2].comm, MPI_INFO_NULL, &p);
        MPI_Start(&p);
        int rc = ct_complete(rq, NCOMM * NCALL, round + rank);
        CHECK(rc == MPI_SUCCESS, "round %d: completion returned %d", round, rc);
        MPI_Wait(&p, MPI_STATUS_IGNORE);
        for (int i = 0; i < BLK; i++)
            CHECK(pb[i] == val(round, 9, 0, 0, i), "round %d: Bcast_init[%d] %d", round, i, pb[i]);
        /* The persistent one again, from another value. */
        for (int i = 0; i < BLK; i++)
            pb[i] = s[2].me == 0 ? val(round, 8, 0, 0, i) : -1;
        MPI_Start(&p);
        MPI_Wait(&p, MPI_STATUS_IGNORE);
        for (int i = 0; i < BLK; i++)
            CHECK(pb[i] == val(round, 8, 0, 0, i), "round %d: second Bcast_init[%d] %d", round, i, pb[i]);
        MPI_Request_free(&p);
        for (int c = 0; c < NCOMM; c++) {
            check(&s[c], round, c, rank, &errs);
            checks++;
        }
        for (int c = 1; c < NCOMM; c++) {
            if (round % 2)
                late[c] = s[c].comm;
            else
                MPI_Comm_free(&s[c].comm);
        }
    }
    for (int c = 1; c < NCOMM; c++)
        if (late[c] != MPI_COMM_NULL)
            MPI_Comm_free(&late[c]);
    if (rank == 0)
        printf("rank 0: %ld communicator rounds checked\n", checks);
    return ct_finish(rank, errs);
}
