/* Collectives on communicators whose members share processes in uneven ways (the shapes
 * Toucan's two-level collectives meet): MPI_COMM_WORLD, a communicator whose rank order
 * alternates between halves of the world, one of odd ranks, and a reversed one. On each:
 * Barrier, Bcast from every root (contiguous and strided datatypes), Reduce to every root and
 * Allreduce with a commutative builtin op, a non-commutative user op (2x2 matrix product,
 * whose result depends on rank order) and MPI_IN_PLACE, plus overlapping nonblocking
 * Iallreduce/Ibcast/Ibarrier on two communicators at once. */
#include "ct.h"
#include "matrix_op.h"

/* m(0) * m(1) * ... * m(n-1) for element k */
static void product(int n, int k, int *out)
{
    int r, cur[4], len = 1;
    mat_of(0, k, out);
    for (r = 1; r < n; r++) {
        mat_of(r, k, cur);
        matmul(out, cur, &len, NULL);
        memcpy(out, cur, sizeof cur);
    }
}

#define N 5

static void check_comm(MPI_Comm comm, const char *name, int rank, int *errp)
{
    int me, n, root, k, i;
    MPI_Op op;
    MPI_Datatype mat, strided;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &n);
    MPI_Op_create(matmul, 0, &op);
    MPI_Type_contiguous(4, MPI_INT, &mat);
    MPI_Type_commit(&mat);
    MPI_Type_vector(N, 1, 2, MPI_INT, &strided);
    MPI_Type_commit(&strided);

    MPI_Barrier(comm);
    for (root = 0; root < n; root++) {
        int b[N], s[2 * N];
        for (k = 0; k < N; k++)
            b[k] = me == root ? 100 * root + k : -1;
        MPI_Bcast(b, N, MPI_INT, root, comm);
        for (k = 0; k < N; k++)
            CHECKP(b[k] == 100 * root + k, "%s bcast root %d: b[%d]=%d", name, root, k, b[k]);
        for (k = 0; k < 2 * N; k++)
            s[k] = me == root ? 7 * k + root : -2;
        MPI_Bcast(s, 1, strided, root, comm);
        for (k = 0; k < 2 * N; k++) {
            int want = (k % 2 == 0 || me == root) ? 7 * k + root : -2;
            CHECKP(s[k] == want, "%s strided bcast root %d: s[%d]=%d want %d", name, root, k, s[k], want);
        }
    }
    for (root = 0; root < n; root++) {
        long v[N], sum[N];
        int m[4 * N], p[4 * N], want[4];
        for (k = 0; k < N; k++) {
            v[k] = me * 1000 + k;
            sum[k] = -1;
            mat_of(me, k, m + 4 * k);
        }
        MPI_Reduce(v, sum, N, MPI_LONG, MPI_SUM, root, comm);
        MPI_Reduce(m, p, N, mat, op, root, comm);
        if (me == root) {
            for (k = 0; k < N; k++) {
                long w = 1000L * n * (n - 1) / 2 + (long) k * n;
                CHECKP(sum[k] == w, "%s reduce root %d: sum[%d]=%ld want %ld", name, root, k, sum[k], w);
                product(n, k, want);
                for (i = 0; i < 4; i++)
                    CHECKP(p[4 * k + i] == want[i], "%s matrix reduce root %d: [%d][%d]=%d want %d", name, root,
                           k, i, p[4 * k + i], want[i]);
            }
        }
    }
    {
        double d[N];
        int m[4 * N], want[4];
        for (k = 0; k < N; k++) {
            d[k] = me + 0.5 * k;
            mat_of(me, k, m + 4 * k);
        }
        MPI_Allreduce(MPI_IN_PLACE, d, N, MPI_DOUBLE, MPI_MAX, comm);
        MPI_Allreduce(MPI_IN_PLACE, m, N, mat, op, comm);
        for (k = 0; k < N; k++) {
            CHECKP(d[k] == n - 1 + 0.5 * k, "%s allreduce max: d[%d]=%g", name, k, d[k]);
            product(n, k, want);
            for (i = 0; i < 4; i++)
                CHECKP(m[4 * k + i] == want[i], "%s matrix allreduce: [%d][%d]=%d want %d", name, k, i,
                       m[4 * k + i], want[i]);
        }
    }
    MPI_Type_free(&strided);
    MPI_Type_free(&mat);
    MPI_Op_free(&op);
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, k;
    MPI_Comm alt, odd, rev;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* alternate between the lower and the upper half of the world: 0, h, 1, h+1, ... */
    {
        int h = (size + 1) / 2;
        int key = rank < h ? 2 * rank : 2 * (rank - h) + 1;
        MPI_Comm_split(MPI_COMM_WORLD, 0, key, &alt);
    }
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &odd);
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &rev);

    check_comm(MPI_COMM_WORLD, "world", rank, &errs);
    check_comm(alt, "alternating", rank, &errs);
    if (rank % 2 == 1)
        check_comm(odd, "odd", rank, &errs);
    check_comm(rev, "reversed", rank, &errs);

    /* overlapping nonblocking collectives on two communicators */
    for (k = 0; k < 3; k++) {
        MPI_Request r[4];
        int a = rank + k, b = rank, c = 0;
        int v = rank == size - 1 ? 42 + k : 0; /* rank 0 of rev */
        MPI_Iallreduce(&a, &c, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[0]);
        MPI_Ibcast(&v, 1, MPI_INT, 0, rev, &r[1]);
        MPI_Ibarrier(alt, &r[2]);
        MPI_Iallreduce(MPI_IN_PLACE, &b, 1, MPI_INT, MPI_MAX, alt, &r[3]);
        MPI_Waitall(4, r, MPI_STATUSES_IGNORE);
        CHECK(c == size * (size - 1) / 2 + size * k, "iallreduce %d: %d", k, c);
        CHECK(b == size - 1, "iallreduce max %d: %d", k, b);
        CHECK(v == 42 + k, "ibcast %d: %d", k, v);
    }
    {
        int v = 0, root = size - 1;
        /* rank size-1 is rank 0 of rev */
        if (rank == root)
            v = 99;
        MPI_Bcast(&v, 1, MPI_INT, 0, rev);
        CHECK(v == 99, "bcast on reversed from its rank 0: %d", v);
    }

    MPI_Comm_free(&alt);
    MPI_Comm_free(&odd);
    MPI_Comm_free(&rev);
    if (errs == 0)
        ct_say(rank, "OK");
    MPI_Finalize();
    return errs != 0;
}
