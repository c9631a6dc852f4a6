/* Nonblocking Scan and Exscan between the two members of a communicator (session 27: at one
 * subrank per process on two processes, rank 0's operand sent at the start, rank 1's combine
 * in rank order when its request completes, abi/nbcpair.rs `iscan`). The world is cut into
 * pairs (a last odd rank alone) and a duplicate of each pair; every round starts several calls
 * on both communicators and completes them in an order that changes with the round
 * (ct_complete: MPI_Waitall, MPI_Wait in reverse, Test, Waitany, Testall, Testsome), then checks each result
 * bit for bit against the blocking MPI_Scan's / MPI_Exscan's on the same data: doubles whose
 * sums lose bits (1e16 beside 1), the 2x2 integer matrix product mod 1009 (non-commutative,
 * on a contiguous type of 4 ints), a maximum on ints through a vector type (a user operation;
 * a gap between the elements, left alone), MPI_IN_PLACE, a zero count. Exscan's result at rank 0 is undefined:
 * its buffer is neither checked nor printed. The same rounds on MPI_COMM_WORLD (the path is
 * not taken beyond two ranks). At the end, under MPI_ERRORS_RETURN, MPI_SUM on MPI_BYTE
 * (MPI_ERR_OP), then a call that must still match. */
#include "ct.h"
#include "matrix_op.h"

#define B 6
#define ROUNDS 16
#define CALLS 6

/* On a pair, sums that lose bits (1e16 beside 1: the order of the two operands shows); on the
 * world (whose scans may add in any tree order) small integers, exact in any order. */
/* MPI_MAX on the first int of each element of the gap type (the second is a hole): a user
 * operation, since MPICH applies the predefined ones to predefined types only. */
static void gapmax(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    int *x = in, *y = inout;
    (void) dt;
    for (int k = 0; k < *len; k++)
        if (x[2 * k] > y[2 * k])
            y[2 * k] = x[2 * k];
}

static double dval(int r, int k, int j, int lossy)
{
    if (!lossy)
        return (double) ((r * 7 + j * 3 + k) % 11 - 5);
    return (j + r + k) % 3 == 0 ? (r % 2 ? -1e16 : 1e16) : 1.0 / (1 + r + j + k);
}

static int round_at(MPI_Comm comm, MPI_Comm dup, int k, int rank_w, MPI_Op matop, MPI_Datatype mat, MPI_Datatype gap,
                    MPI_Op gmax)
{
    int rank = rank_w, errs = 0, me, world;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_compare(comm, MPI_COMM_WORLD, &world);
    int lossy = world != MPI_IDENT;
    int n = k % B + (k % 5 == 4 ? -(k % B) : 1); /* some rounds count 0 */
    double dv[B], ds[B], dx[B], dsr[B], dxr[B], dplace[B];
    int mv[4 * B], ms[4 * B], mx[4 * B], msr[4 * B], mxr[4 * B];
    int gv[2 * B], gs[2 * B], gsr[2 * B];
    for (int j = 0; j < B; j++) {
        dv[j] = dplace[j] = dval(me, k, j, lossy);
        mat_of(me + j, k, &mv[4 * j]);
        gv[2 * j] = (me * 37 + j * 11 + k) % 101 - 50;
        gv[2 * j + 1] = gs[2 * j + 1] = gsr[2 * j + 1] = -7777; /* the gap */
    }
    MPI_Request q[CALLS];
    int nq = 0, rc;
    rc = MPI_Iscan(dv, ds, n, MPI_DOUBLE, MPI_SUM, comm, &q[nq++]);
    CHECK(rc == MPI_SUCCESS, "round %d Iscan double: class %d", k, rc ? ct_class(rc) : 0);
    rc = MPI_Iexscan(dv, dx, n, MPI_DOUBLE, MPI_SUM, dup, &q[nq++]);
    CHECK(rc == MPI_SUCCESS, "round %d Iexscan double: class %d", k, rc ? ct_class(rc) : 0);
    rc = MPI_Iscan(mv, ms, n, mat, matop, dup, &q[nq++]);
    CHECK(rc == MPI_SUCCESS, "round %d Iscan matrix: class %d", k, rc ? ct_class(rc) : 0);
    rc = MPI_Iexscan(mv, mx, n, mat, matop, comm, &q[nq++]);
    CHECK(rc == MPI_SUCCESS, "round %d Iexscan matrix: class %d", k, rc ? ct_class(rc) : 0);
    rc = MPI_Iscan(gv, gs, n, gap, gmax, comm, &q[nq++]);
    CHECK(rc == MPI_SUCCESS, "round %d Iscan vector type: class %d", k, rc ? ct_class(rc) : 0);
    rc = MPI_Iscan(MPI_IN_PLACE, dplace, n, MPI_DOUBLE, MPI_SUM, dup, &q[nq++]);
    CHECK(rc == MPI_SUCCESS, "round %d Iscan in place: class %d", k, rc ? ct_class(rc) : 0);
    rc = ct_complete(q, nq, k);
    CHECK(rc == MPI_SUCCESS, "round %d completion: class %d", k, rc ? ct_class(rc) : 0);
    MPI_Scan(dv, dsr, n, MPI_DOUBLE, MPI_SUM, comm);
    MPI_Exscan(dv, dxr, n, MPI_DOUBLE, MPI_SUM, dup);
    MPI_Scan(mv, msr, n, mat, matop, dup);
    MPI_Exscan(mv, mxr, n, mat, matop, comm);
    MPI_Scan(gv, gsr, n, gap, gmax, comm);
    for (int j = 0; j < n; j++) {
        CHECK(memcmp(&ds[j], &dsr[j], sizeof(double)) == 0, "round %d scan double [%d]: %.17g, blocking %.17g", k, j,
              ds[j], dsr[j]);
        CHECK(memcmp(&dplace[j], &dsr[j], sizeof(double)) == 0, "round %d scan in place [%d]: %.17g, blocking %.17g",
              k, j, dplace[j], dsr[j]);
        CHECK(memcmp(&ms[4 * j], &msr[4 * j], 4 * sizeof(int)) == 0, "round %d scan matrix [%d]", k, j);
        CHECK(gs[2 * j] == gsr[2 * j], "round %d scan vector [%d]: %d, blocking %d", k, j, gs[2 * j], gsr[2 * j]);
        CHECK(gs[2 * j + 1] == -7777, "round %d scan vector gap [%d] written: %d", k, j, gs[2 * j + 1]);
        if (me > 0) {
            CHECK(memcmp(&dx[j], &dxr[j], sizeof(double)) == 0, "round %d exscan double [%d]: %.17g, blocking %.17g",
                  k, j, dx[j], dxr[j]);
            CHECK(memcmp(&mx[4 * j], &mxr[4 * j], 4 * sizeof(int)) == 0, "round %d exscan matrix [%d]", k, j);
        }
    }
    if (k == 3 && n > 0 && lossy)
        ct_say(rank, "round %d scan %.17g matrix %d %d %d %d exscan %s", k, ds[n - 1], ms[4 * n - 4], ms[4 * n - 3],
               ms[4 * n - 2], ms[4 * n - 1], me > 0 ? "set" : "undefined");
    return errs;
}

static int errors_at(MPI_Comm comm, int rank_w)
{
    int rank = rank_w, errs = 0, me;
    MPI_Comm_rank(comm, &me);
    char in[2] = {1, 2}, out[2];
    MPI_Request q;
    int rc = MPI_Iscan(in, out, 2, MPI_BYTE, MPI_SUM, comm, &q);
    if (rc == MPI_SUCCESS)
        rc = MPI_Wait(&q, MPI_STATUS_IGNORE);
    CHECK(rc != MPI_SUCCESS && ct_class(rc) == MPI_ERR_OP, "MPI_SUM on MPI_BYTE: class %d", rc ? ct_class(rc) : 0);
    int v = me + 1, w = -1;
    CHECK(MPI_Iscan(&v, &w, 1, MPI_INT, MPI_SUM, comm, &q) == MPI_SUCCESS, "after the error: start");
    CHECK(MPI_Wait(&q, MPI_STATUS_IGNORE) == MPI_SUCCESS && w == (me + 1) * (me + 2) / 2, "after the error: %d", w);
    return errs;
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm pair, dup;
    ct_pairs(&pair, &dup);
    MPI_Op matop, gmax;
    MPI_Op_create(matmul, 0, &matop);
    MPI_Op_create(gapmax, 1, &gmax);
    MPI_Datatype mat, one, gap;
    MPI_Type_contiguous(4, MPI_INT, &mat);
    MPI_Type_commit(&mat);
    MPI_Type_vector(1, 1, 2, MPI_INT, &one);
    MPI_Type_create_resized(one, 0, 2 * sizeof(int), &gap);
    MPI_Type_free(&one);
    MPI_Type_commit(&gap);
    for (int k = 0; k < ROUNDS; k++)
        errs += round_at(pair, dup, k, rank, matop, mat, gap, gmax);
    for (int k = 0; k < 4; k++)
        errs += round_at(MPI_COMM_WORLD, MPI_COMM_WORLD, k, rank, matop, mat, gap, gmax);
    errs += errors_at(pair, rank);
    if (rank == 0)
        ct_say(rank, "%d rounds of nonblocking scans on pairs done at %d ranks", ROUNDS, size);
    MPI_Type_free(&gap);
    MPI_Type_free(&mat);
    MPI_Op_free(&gmax);
    MPI_Op_free(&matop);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&pair);
    return ct_finish(rank, errs);
}
