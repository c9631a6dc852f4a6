/* Small equal-block Igathers (issue 16, red30: up to 16 KiB per process they go between
 * processes as one real point-to-point message from each process to the root's process, not
 * as the real MPI's MPI_Igather). Per round and communicator, for every root: an Igather of
 * 1 int and one of 700 ints per rank (2800 bytes: with 3 or 4 ranks per process a process's
 * blocks exceed a node-queue cell and go as a real message), in place at the root on odd
 * rounds, and the same 700 ints on a duplicate, all in flight at once. On MPI_COMM_WORLD, a
 * split with the ranks reversed and the world without rank 1 (uneven members per process).
 * Every int checked; completion in ct_complete's six orders. */
#include "ct.h"

#define ROUNDS 2
#define BIGN 700

static int gval(int round, int root, int r, int i) { return round * 1000003 + root * 10007 + r * 1009 + i; }

static void round_on(MPI_Comm comm, MPI_Comm dup, int round, int *errp)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int n = 3 * size;
    MPI_Request *rq = ct_malloc(sizeof(MPI_Request) * n);
    int **sb = ct_malloc(sizeof(int *) * n), **rb = ct_malloc(sizeof(int *) * n), *cnt = ct_malloc(sizeof(int) * n);
    int k = 0;
    for (int root = 0; root < size; root++)
        for (int c = 0; c < 3; c++, k++) {
            cnt[k] = c == 0 ? 1 : BIGN;
            sb[k] = ct_malloc(sizeof(int) * cnt[k]);
            rb[k] = ct_malloc(sizeof(int) * cnt[k] * size);
            for (int i = 0; i < cnt[k] * size; i++)
                rb[k][i] = -1;
            for (int i = 0; i < cnt[k]; i++)
                sb[k][i] = gval(round, root, rank, i);
            int inplace = rank == root && round % 2 == 1;
            if (inplace)
                memcpy(rb[k] + rank * cnt[k], sb[k], sizeof(int) * cnt[k]);
            MPI_Igather(inplace ? MPI_IN_PLACE : sb[k], cnt[k], MPI_INT, rank == root ? rb[k] : NULL, cnt[k], MPI_INT,
                        root, c == 2 ? dup : comm, &rq[k]);
        }
    int rc = ct_complete(rq, n, round + size);
    CHECKP(rc == MPI_SUCCESS, "round %d: completion returned %d", round, rc);
    k = 0;
    for (int root = 0; root < size; root++)
        for (int c = 0; c < 3; c++, k++) {
            if (rank == root) {
                int bad = -1;
                for (int r = 0; r < size && bad < 0; r++)
                    for (int i = 0; i < cnt[k] && bad < 0; i++)
                        if (rb[k][r * cnt[k] + i] != gval(round, root, r, i))
                            bad = r * cnt[k] + i;
                CHECKP(bad < 0, "round %d root %d call %d (%d ints): [%d] wrong", round, root, c, cnt[k], bad);
            }
            free(sb[k]);
            free(rb[k]);
        }
    free(rq);
    free(sb);
    free(rb);
    free(cnt);
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm comms[3], dups[3];
    comms[0] = MPI_COMM_WORLD;
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &comms[1]);
    MPI_Comm_split(MPI_COMM_WORLD, rank == 1 ? MPI_UNDEFINED : 0, rank, &comms[2]);
    for (int c = 0; c < 3; c++)
        if (comms[c] != MPI_COMM_NULL)
            MPI_Comm_dup(comms[c], &dups[c]);
    for (int round = 0; round < ROUNDS; round++)
        for (int c = 0; c < 3; c++)
            if (comms[c] != MPI_COMM_NULL)
                round_on(comms[c], dups[c], round, &errs);
    for (int c = 0; c < 3; c++)
        if (comms[c] != MPI_COMM_NULL) {
            MPI_Comm_free(&dups[c]);
            if (c > 0)
                MPI_Comm_free(&comms[c]);
        }
    return ct_finish(rank, errs);
}
