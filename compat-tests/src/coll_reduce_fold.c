/* MPI_Reduce whose members reach the call in changing orders (session 18: among the subranks
 * of one process the operands are folded as they arrive, in rank order). Before each Reduce
 * the ranks pass a token along a permutation of the communicator that changes every round
 * (each rank receives it, sends it on with MPI_Isend, calls MPI_Reduce, then completes the
 * send), so the arrival order follows the permutation as far as the MPI lets it. Checked:
 * exact sums of ints and doubles at the root (8 B to 64 KiB, roots changing, some in place),
 * and that a sum of doubles chosen to round
 * differently under another grouping gives the same bits in every round whatever the order
 * (the same arguments in the same order give the same result, MPI's advice). */
#include "ct.h"

#define ROUNDS 12

static int gcd(int a, int b)
{
    return b ? gcd(b, a % b) : a;
}

/* Position p of round r's permutation of n ranks. */
static int perm(int r, int n, int p)
{
    int step = 1 + 2 * (r % 3);
    while (gcd(step, n) != 1)
        step--;
    return (r * 5 + (r % 2 ? n - 1 - p : p) * step) % n;
}

static void chain(MPI_Comm c, int r, int me, int n, MPI_Request *req)
{
    int p, pos = 0, tok = r;
    for (p = 0; p < n; p++)
        if (perm(r, n, p) == me)
            pos = p;
    *req = MPI_REQUEST_NULL;
    if (pos > 0)
        MPI_Recv(&tok, 1, MPI_INT, perm(r, n, pos - 1), 900 + r, c, MPI_STATUS_IGNORE);
    if (pos < n - 1)
        MPI_Isend(&tok, 1, MPI_INT, perm(r, n, pos + 1), 900 + r, c, req);
}

static void run(MPI_Comm c, int rank, int *errp)
{
    int me, n, s, r, i;
    const int sizes[3] = {1, 128, 8192}; /* doubles: 8 B, 1 KiB, 64 KiB */
    MPI_Comm_rank(c, &me);
    MPI_Comm_size(c, &n);
    for (s = 0; s < 3; s++) {
        int cnt = sizes[s];
        double *sd = ct_malloc(sizeof(double) * cnt), *rd = ct_malloc(sizeof(double) * cnt);
        int *si = ct_malloc(sizeof(int) * cnt), *ri = ct_malloc(sizeof(int) * cnt);
        double bits_first = 0; /* per size: an MPI may group differently by size */
        for (r = 0; r < ROUNDS; r++) {
            MPI_Request req;
            /* In place at 64 KiB only at root 0: MPICH 4.0.2 crashes in an in-place MPI_Reduce
             * of 1024 elements or more at another root. */
            int root = r % 4 == 1 && s == 2 ? 0 : (r * 7 + s) % n, inplace = r % 4 == 1 && me == root;
            /* exact sums of doubles */
            for (i = 0; i < cnt; i++)
                (inplace ? rd : sd)[i] = (double)(me * 3 + i % 17) + 0.25 * r;
            chain(c, r, me, n, &req);
            MPI_Reduce(inplace ? MPI_IN_PLACE : sd, rd, cnt, MPI_DOUBLE, MPI_SUM, root, c);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            for (i = 0; i < cnt; i++)
                sd[i] = -3.0;
            if (me == root)
                for (i = 0; i < cnt; i++) {
                    double want = 3.0 * n * (n - 1) / 2 + n * (double)(i % 17) + n * 0.25 * r;
                    CHECKP(rd[i] == want, "size %d round %d root %d: sum [%d] = %.17g, expected %.17g", cnt, r, root, i,
                           rd[i], want);
                }
            /* ints, another root, the chain reversed */
            root = (root + 1 + r % 2) % n;
            for (i = 0; i < cnt; i++)
                si[i] = me * 11 - i % 5 + r;
            chain(c, r + ROUNDS, me, n, &req);
            MPI_Reduce(si, ri, cnt, MPI_INT, MPI_SUM, root, c);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            for (i = 0; i < cnt; i++)
                si[i] = 0;
            if (me == root)
                for (i = 0; i < cnt; i++)
                    CHECKP(ri[i] == 11 * n * (n - 1) / 2 + n * (r - i % 5), "size %d round %d root %d: int sum [%d] = %d",
                           cnt, r, root, i, ri[i]);
            /* rounding-sensitive doubles at root 0: the same bits every round of one size */
            for (i = 0; i < cnt; i++)
                sd[i] = me % 3 == 0 ? 1e16 : me % 3 == 1 ? 1.0 + 1e-3 * me : -1e16 + 2.0 * me;
            chain(c, 2 * ROUNDS + r, me, n, &req);
            MPI_Reduce(sd, rd, cnt, MPI_DOUBLE, MPI_SUM, 0, c);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            if (me == 0) {
                if (r == 0)
                    bits_first = rd[0];
                for (i = 0; i < cnt; i++)
                    CHECKP(!memcmp(&rd[i], &bits_first, sizeof(double)),
                           "size %d round %d: rounding-sensitive sum [%d] = %.17g, first round gave %.17g", cnt, r, i,
                           rd[i], bits_first);
            }
        }
        free(sd);
        free(rd);
        free(si);
        free(ri);
    }
}

int main(int argc, char **argv)
{
    int rank, errs = 0;
    MPI_Comm half;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    run(MPI_COMM_WORLD, rank, &errs);
    /* the odd and even ranks (a team of its own within a process, or spanning processes) */
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half);
    run(half, rank, &errs);
    MPI_Comm_free(&half);
    return ct_finish(rank, errs);
}
