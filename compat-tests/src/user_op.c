/* User-defined reduction operations (MPI_Op_create): a commutative one and
 * a non-commutative one (2x2 integer matrix product mod 1009) whose result
 * depends on rank order, with Reduce to every root, Allreduce, Scan and
 * Exscan; MPI_Op_commutative; MPI_Op_free. Also a user op on a derived
 * datatype (a struct of two ints). */
#include "ct.h"
#include "matrix_op.h"

/* commutative: elementwise max of absolute values, on ints */
static void absmax(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    int *a = in, *b = inout, k;
    (void) dt;
    for (k = 0; k < *len; k++) {
        int x = a[k] < 0 ? -a[k] : a[k], y = b[k] < 0 ? -b[k] : b[k];
        b[k] = x > y ? x : y;
    }
}

/* product m(lo) * m(lo+1) * ... * m(hi) for element k */
static void expected(int lo, int hi, int k, int *out)
{
    int r, cur[4], len = 1;
    mat_of(lo, k, out);
    for (r = lo + 1; r <= hi; r++) {
        /* out = out * m(r): apply matmul with in = out, inout = m(r) */
        mat_of(r, k, cur);
        matmul(out, cur, &len, NULL);
        memcpy(out, cur, sizeof cur);
    }
}

#define NE 3

int main(int argc, char **argv)
{
    int rank, size, errs = 0, root, k, i, flag;
    MPI_Op mop, aop;
    MPI_Datatype mat;
    int s[4 * NE], r[4 * NE], want[4];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    MPI_Type_contiguous(4, MPI_INT, &mat);
    MPI_Type_commit(&mat);
    MPI_Op_create(matmul, 0, &mop);
    MPI_Op_create(absmax, 1, &aop);
    MPI_Op_commutative(mop, &flag);
    CHECK(flag == 0, "matmul op reported commutative");
    MPI_Op_commutative(aop, &flag);
    CHECK(flag == 1, "absmax op reported non-commutative");
    MPI_Op_commutative(MPI_SUM, &flag);
    CHECK(flag == 1, "MPI_SUM reported non-commutative");

    for (k = 0; k < NE; k++)
        mat_of(rank, k, s + 4 * k);

    for (root = 0; root < size; root++) {
        for (i = 0; i < 4 * NE; i++)
            r[i] = -1;
        MPI_Reduce(s, r, NE, mat, mop, root, MPI_COMM_WORLD);
        if (rank == root)
            for (k = 0; k < NE; k++) {
                expected(0, size - 1, k, want);
                CHECK(memcmp(want, r + 4 * k, sizeof want) == 0,
                      "Reduce matmul root %d element %d: [%d %d %d %d] expected [%d %d %d %d]", root,
                      k, r[4 * k], r[4 * k + 1], r[4 * k + 2], r[4 * k + 3], want[0], want[1],
                      want[2], want[3]);
            }
    }
    MPI_Allreduce(s, r, NE, mat, mop, MPI_COMM_WORLD);
    for (k = 0; k < NE; k++) {
        expected(0, size - 1, k, want);
        CHECK(memcmp(want, r + 4 * k, sizeof want) == 0, "Allreduce matmul element %d", k);
    }
    MPI_Scan(s, r, NE, mat, mop, MPI_COMM_WORLD);
    for (k = 0; k < NE; k++) {
        expected(0, rank, k, want);
        CHECK(memcmp(want, r + 4 * k, sizeof want) == 0, "Scan matmul element %d", k);
    }
    MPI_Exscan(s, r, NE, mat, mop, MPI_COMM_WORLD);
    if (rank > 0)
        for (k = 0; k < NE; k++) {
            expected(0, rank - 1, k, want);
            CHECK(memcmp(want, r + 4 * k, sizeof want) == 0, "Exscan matmul element %d", k);
        }
    if (rank == 0) {
        expected(0, size - 1, 0, want);
        ct_say(rank, "matmul product of all ranks, element 0: [%d %d %d %d]", want[0], want[1],
               want[2], want[3]);
    }

    /* non-commutative op on a reversed communicator: order follows the new ranks */
    {
        MPI_Comm rev;
        int me;
        MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &rev);
        MPI_Comm_rank(rev, &me);
        for (k = 0; k < NE; k++)
            mat_of(me, k, s + 4 * k);
        MPI_Allreduce(s, r, NE, mat, mop, rev);
        for (k = 0; k < NE; k++) {
            expected(0, size - 1, k, want);
            CHECK(memcmp(want, r + 4 * k, sizeof want) == 0, "reversed Allreduce element %d", k);
        }
        MPI_Comm_free(&rev);
    }

    /* commutative user op on plain ints */
    {
        int v[4], out[4];
        for (i = 0; i < 4; i++)
            v[i] = (rank % 2 ? -1 : 1) * ((rank * 7 + i * 5) % 13);
        MPI_Allreduce(v, out, 4, MPI_INT, aop, MPI_COMM_WORLD);
        for (i = 0; i < 4; i++) {
            int w = 0, q;
            for (q = 0; q < size; q++)
                w = (q * 7 + i * 5) % 13 > w ? (q * 7 + i * 5) % 13 : w;
            CHECK(out[i] == w, "absmax element %d = %d, expected %d", i, out[i], w);
        }
    }

    MPI_Op_free(&mop);
    MPI_Op_free(&aop);
    CHECK(mop == MPI_OP_NULL && aop == MPI_OP_NULL, "Op_free did not null the handles");
    MPI_Type_free(&mat);
    return ct_finish(rank, errs);
}
