/* nbc_rootstart.c - MPI_Iscatterv, MPI_Igatherv, MPI_Iscatter and MPI_Igather on the paths
 * they take at several subranks per process (the two-level records, the point-to-point path
 * in helper tasks; session 28 tried starting the latter in place), with small and large
 * blocks (eager and rendezvous), roots that change every round, MPI_IN_PLACE at the root, a
 * strided receive type, and requests completed in different orders beside an Ibarrier.
 *
 * On MPI_COMM_WORLD and a split with the ranks reversed: for each block size (1, 3000 and
 * 40000 ints) and round, every rank starts an Iscatterv (counts differ per rank), an Igatherv,
 * an Ibarrier, an Iscatter and an Igather, then completes them in each of ct_complete's six
 * ways in turn; a root overwrites its send buffer as soon as all of its
 * requests completed. Printed: per communicator one checksum of everything received (rank 0
 * of each), OK/FAIL per rank.
 */
#include "ct.h"

static int val(int round, int from, int to, int i)
{
    return round * 1000003 + from * 7919 + to * 104729 + i;
}

static long run(MPI_Comm c, int rank, int *errp)
{
    int me, n;
    MPI_Comm_rank(c, &me);
    MPI_Comm_size(c, &n);
    const int sizes[] = {1, 3000, 40000};
    long sum = 0;
    int *cnt = malloc(sizeof(int) * (size_t)n), *dsp = malloc(sizeof(int) * (size_t)n);
    MPI_Datatype every2; /* every other int */
    MPI_Type_vector(1, 1, 2, MPI_INT, &every2);
    MPI_Datatype e2;
    MPI_Type_create_resized(every2, 0, 2 * sizeof(int), &e2);
    MPI_Type_commit(&e2);
    for (int z = 0; z < 3; z++) {
        int m = sizes[z];
        size_t all = (size_t)m * (size_t)n + (size_t)n;
        int *sv = malloc(sizeof(int) * all), *gv = malloc(sizeof(int) * all);
        int *s1 = malloc(sizeof(int) * all), *g1 = malloc(sizeof(int) * all);
        int *rv = malloc(sizeof(int) * 2 * ((size_t)m + 1)), *r1 = malloc(sizeof(int) * (size_t)m);
        int *mine = malloc(sizeof(int) * ((size_t)m + 1)), *mine1 = malloc(sizeof(int) * (size_t)m);
        for (int round = 0; round < 4; round++) {
            int root = (round * 3 + z) % n;
            int inplace = round == 2 && me == root;
            int at = 0;
            for (int p = 0; p < n; p++) {
                cnt[p] = m - (p + round) % 2; /* m or m - 1 ints */
                dsp[p] = at + (p % 2);        /* a gap of one int at odd ranks */
                at += cnt[p] + 1;
            }
            if (me == root)
                for (int p = 0; p < n; p++) {
                    for (int i = 0; i < cnt[p]; i++)
                        sv[dsp[p] + i] = val(round, root, p, i);
                    for (int i = 0; i < m; i++)
                        s1[p * m + i] = -val(round, root, p, i);
                }
            for (int i = 0; i < cnt[me]; i++)
                mine[i] = val(round, me, root, i);
            for (int i = 0; i < m; i++)
                mine1[i] = -val(round, me, root, i);
            if (inplace) /* the root's own block already in place in the receive buffer */
                for (int i = 0; i < cnt[me]; i++)
                    gv[dsp[me] + i] = mine[i];
            MPI_Request r[5];
            /* Iscatterv into every other int of rv (a strided receive type). */
            MPI_Iscatterv(sv, cnt, dsp, MPI_INT, inplace ? MPI_IN_PLACE : rv, cnt[me], e2, root, c, &r[0]);
            MPI_Igatherv(inplace ? MPI_IN_PLACE : mine, cnt[me], MPI_INT, gv, cnt, dsp, MPI_INT, root, c, &r[1]);
            MPI_Ibarrier(c, &r[2]);
            MPI_Iscatter(s1, m, MPI_INT, r1, m, MPI_INT, root, c, &r[3]);
            MPI_Igather(mine1, m, MPI_INT, g1, m, MPI_INT, root, c, &r[4]);
            ct_complete(r, 5, round * 3 + z);
            if (me == root) { /* free to reuse the send buffers */
                memset(sv, 0x5a, sizeof(int) * all);
                memset(s1, 0x5a, sizeof(int) * all);
            }
            if (!inplace)
                for (int i = 0; i < cnt[me]; i++) {
                    CHECKP(rv[2 * i] == val(round, root, me, i), "iscatterv %d ints round %d [%d] = %d", m, round, i, rv[2 * i]);
                    sum += rv[2 * i] % 1000;
                }
            for (int i = 0; i < m; i++) {
                CHECKP(r1[i] == -val(round, root, me, i), "iscatter %d ints round %d [%d] = %d", m, round, i, r1[i]);
                sum += r1[i] % 1000;
            }
            if (me == root)
                for (int p = 0; p < n; p++) {
                    for (int i = 0; i < cnt[p]; i++) {
                        CHECKP(gv[dsp[p] + i] == val(round, p, root, i), "igatherv %d ints round %d from %d [%d] = %d", m, round, p, i,
                               gv[dsp[p] + i]);
                        sum += gv[dsp[p] + i] % 1000;
                    }
                    for (int i = 0; i < m; i++) {
                        CHECKP(g1[p * m + i] == -val(round, p, root, i), "igather %d ints round %d from %d [%d] = %d", m, round, p, i,
                               g1[p * m + i]);
                        sum += g1[p * m + i] % 1000;
                    }
                }
            memset(mine, 0, sizeof(int) * (size_t)m); /* free to reuse after completion */
            memset(mine1, 0, sizeof(int) * (size_t)m);
        }
        free(sv);
        free(gv);
        free(s1);
        free(g1);
        free(rv);
        free(r1);
        free(mine);
        free(mine1);
    }
    MPI_Type_free(&every2);
    MPI_Type_free(&e2);
    free(cnt);
    free(dsp);
    long total = 0;
    MPI_Reduce(&sum, &total, 1, MPI_LONG, MPI_SUM, 0, c);
    return total;
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm rev;
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &rev);
    long a = run(MPI_COMM_WORLD, rank, &errs);
    long b = run(rev, rank, &errs);
    int rr;
    MPI_Comm_rank(rev, &rr);
    if (rank == 0)
        ct_say(rank, "world checksum %ld", a);
    if (rr == 0)
        ct_say(rank, "reversed checksum %ld", b);
    MPI_Comm_free(&rev);
    return ct_finish(rank, errs);
}
