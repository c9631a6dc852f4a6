/* Nonblocking reductions on the two-level records (issue 16, nbc10: at several ranks
 * per process the call's record folds a member's operand straight from its buffer when
 * its type is contiguous, through a work-buffer copy otherwise, e.g. MPI_DOUBLE_INT,
 * whose elements have padding). Per round, on MPI_COMM_WORLD and on a split with the
 * ranks reversed, six calls at once: Iallreduce of 2N MPI_INT (MPI_SUM), of N MPI_INT
 * (MPI_MAX), of MPI_2INT (MPI_MINLOC) and of MPI_DOUBLE_INT (MPI_MAXLOC); an Ireduce of
 * MPI_LONG products to a root that changes with the round; an in-place Iallreduce
 * (MPI_BXOR). (MPICH rejects predefined operations on derived types, so members cannot
 * pass different types of one signature here.) Every rank computes every expected value
 * itself; completion by Waitall or a Test loop in turn. */
#include "ct.h"

#define N 5
#define ROUNDS 16

struct dint {
    double v;
    int i;
};

static int a_in(int r, int i, int round) { return r * 7 + i * 3 + round; }
static int b_in(int r, int i, int round) { return (r * 11 + i * 5 + round * 3) % 17; }
static int c_val(int r, int i, int round) { return (r * 5 + i * 3 + round) % 7; }
static int d_val(int r, int i, int round) { return (r * 3 + i + round) % 5; }
static long e_in(int r, int i, int round) { return 1 + (r + i + round) % 2; }
static int f_in(int r, int i, int round) { return (r + 1) * 37 + i * 101 + round; }

static void round_on(MPI_Comm comm, int round, int *errp)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int a[2 * N], ao[2 * N], bs[2 * N], bo[2 * N], c[2 * N], co[2 * N], f[N];
    struct dint d[N], dout[N];
    long e[N], eo[N];
    for (int i = 0; i < 2 * N; i++) {
        a[i] = a_in(rank, i, round);
        ao[i] = -1;
        bs[i] = -777;
        bo[i] = -555;
    }
    for (int i = 0; i < N; i++) {
        bs[i] = b_in(rank, i, round);
        c[2 * i] = c_val(rank, i, round);
        c[2 * i + 1] = rank;
        d[i].v = d_val(rank, i, round);
        d[i].i = rank;
        e[i] = e_in(rank, i, round);
        eo[i] = -1;
        f[i] = f_in(rank, i, round);
    }
    int root = round % size;
    MPI_Request rq[6];
    MPI_Iallreduce(a, ao, 2 * N, MPI_INT, MPI_SUM, comm, &rq[0]);
    MPI_Iallreduce(bs, bo, N, MPI_INT, MPI_MAX, comm, &rq[1]);
    MPI_Iallreduce(c, co, N, MPI_2INT, MPI_MINLOC, comm, &rq[2]);
    MPI_Iallreduce(d, dout, N, MPI_DOUBLE_INT, MPI_MAXLOC, comm, &rq[3]);
    MPI_Ireduce(e, rank == root ? eo : NULL, N, MPI_LONG, MPI_PROD, root, comm, &rq[4]);
    MPI_Iallreduce(MPI_IN_PLACE, f, N, MPI_INT, MPI_BXOR, comm, &rq[5]);
    if (round % 2) {
        MPI_Waitall(6, rq, MPI_STATUSES_IGNORE);
    } else {
        int done = 0;
        while (!done)
            MPI_Testall(6, rq, &done, MPI_STATUSES_IGNORE);
    }
    for (int i = 0; i < 2 * N; i++) {
        int want = 0;
        for (int r = 0; r < size; r++)
            want += a_in(r, i, round);
        CHECKP(ao[i] == want, "round %d sum[%d] = %d, want %d", round, i, ao[i], want);
    }
    for (int i = 0; i < N; i++) {
        int want = -1, wc = 99, wcl = -1, wdl = -1, wx = 0;
        double wd = -1;
        long we = 1;
        for (int r = 0; r < size; r++) {
            if (b_in(r, i, round) > want)
                want = b_in(r, i, round);
            if (c_val(r, i, round) < wc)
                wc = c_val(r, i, round), wcl = r;
            if (d_val(r, i, round) > wd)
                wd = d_val(r, i, round), wdl = r;
            we *= e_in(r, i, round);
            wx ^= f_in(r, i, round);
        }
        CHECKP(bo[i] == want, "round %d max[%d] = %d, want %d", round, i, bo[i], want);
        CHECKP(bo[N + i] == -555, "round %d max wrote past the result: %d", round, bo[N + i]);
        CHECKP(co[2 * i] == wc && co[2 * i + 1] == wcl, "round %d minloc[%d] = (%d, %d), want (%d, %d)", round, i,
               co[2 * i], co[2 * i + 1], wc, wcl);
        CHECKP(dout[i].v == wd && dout[i].i == wdl, "round %d maxloc[%d] = (%g, %d), want (%g, %d)", round, i,
               dout[i].v, dout[i].i, wd, wdl);
        if (rank == root)
            CHECKP(eo[i] == we, "round %d prod[%d] = %ld, want %ld", round, i, eo[i], we);
        CHECKP(f[i] == wx, "round %d bxor[%d] = %d, want %d", round, i, f[i], wx);
    }
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0;
    MPI_Comm rev;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &rev);
    for (int round = 0; round < ROUNDS; round++) {
        round_on(MPI_COMM_WORLD, round, &errs);
        round_on(rev, round, &errs);
    }
    MPI_Comm_free(&rev);
    return ct_finish(rank, errs);
}
