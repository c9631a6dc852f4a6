/* Nonblocking Reduce_scatter and Reduce_scatter_block between the two members of a
 * communicator (session 26: at one subrank per process on two processes, the peer's block
 * sent at the start and the combine in rank order when the request completes,
 * abi/nbcpair.rs `ireduce_scatter`). The world is cut into pairs (a last odd rank alone) and
 * a duplicate of each pair; every round starts several calls on both communicators and
 * completes them in an order that changes with the round (ct_complete: MPI_Waitall, MPI_Wait in reverse,
 * Test, Waitany, Testall, Testsome), then checks each result bit for bit against the blocking
 * MPI_Reduce_scatter's / MPI_Reduce_scatter_block's on the same data: doubles whose sums lose
 * bits (1e16 beside 1), the 2x2 integer matrix product mod 1009 (non-commutative, on a
 * contiguous type of 4 ints), MPI_MAX on ints, MPI_IN_PLACE, unequal counts with a zero. The
 * same rounds on MPI_COMM_WORLD (the path is not taken beyond two ranks). At the end, under
 * MPI_ERRORS_RETURN, MPI_SUM on MPI_BYTE (MPI_ERR_OP), then a call that must still match. */
#include "ct.h"
#include "matrix_op.h"

#define B 5
#define ROUNDS 16
#define CALLS 4
#define MAXP 16

static int counts_of(int k, int size, int *c)
{
    int tot = 0;
    for (int i = 0; i < size; i++) {
        c[i] = (k + 2 * i) % 4 == 3 ? 0 : (k + i) % B + 1; /* some zero */
        tot += c[i];
    }
    return tot;
}

static double dval(int r, int k, int j)
{
    /* sums of these lose bits: 1e16 at one rank, small values at the others */
    return (j + r + k) % 3 == 0 ? (r % 2 ? -1e16 : 1e16) : 1.0 / (1 + r + j + k);
}

static int round_at(MPI_Comm comm, MPI_Comm dup, int k, int rank_w, MPI_Op matop, MPI_Datatype mat)
{
    int rank = rank_w, errs = 0, me, size, c[MAXP];
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    int tot = counts_of(k, size, c), blk = (k % B) + 1;
    /* operands (the whole vector) and results, nonblocking and blocking */
    double dv[MAXP * B], dres[B], dref[B], dplace[MAXP * B];
    int iv[MAXP * B], ires[B], iref[B];
    int mv[4 * MAXP * B], mres[4 * B], mref[4 * B];
    for (int j = 0; j < tot || j < size * blk; j++) {
        dv[j] = dplace[j] = dval(me, k, j);
        iv[j] = (me * 37 + j * 11 + k) % 101 - 50;
    }
    for (int j = 0; j < tot; j++)
        mat_of(me + j, k, &mv[4 * j]);
    MPI_Request q[CALLS];
    int nq = 0, rc;
    /* 1. doubles, MPI_SUM, unequal counts (on comm) */
    rc = MPI_Ireduce_scatter(dv, dres, c, MPI_DOUBLE, MPI_SUM, comm, &q[nq++]);
    CHECK(rc == MPI_SUCCESS, "round %d Ireduce_scatter double: class %d", k, rc ? ct_class(rc) : 0);
    /* 2. the matrix product (non-commutative), unequal counts (on dup) */
    rc = MPI_Ireduce_scatter(mv, mres, c, mat, matop, dup, &q[nq++]);
    CHECK(rc == MPI_SUCCESS, "round %d Ireduce_scatter matrix: class %d", k, rc ? ct_class(rc) : 0);
    /* 3. ints, MPI_MAX, blocks of blk (on comm) */
    rc = MPI_Ireduce_scatter_block(iv, ires, blk, MPI_INT, MPI_MAX, comm, &q[nq++]);
    CHECK(rc == MPI_SUCCESS, "round %d Ireduce_scatter_block int: class %d", k, rc ? ct_class(rc) : 0);
    /* 4. doubles in place, blocks of blk (on dup) */
    rc = MPI_Ireduce_scatter_block(MPI_IN_PLACE, dplace, blk, MPI_DOUBLE, MPI_SUM, dup, &q[nq++]);
    CHECK(rc == MPI_SUCCESS, "round %d Ireduce_scatter_block in place: class %d", k, rc ? ct_class(rc) : 0);
    rc = ct_complete(q, nq, k);
    CHECK(rc == MPI_SUCCESS, "round %d completion: class %d", k, rc ? ct_class(rc) : 0);
    /* the blocking forms on the same data */
    MPI_Reduce_scatter(dv, dref, c, MPI_DOUBLE, MPI_SUM, comm);
    MPI_Reduce_scatter(mv, mref, c, mat, matop, dup);
    MPI_Reduce_scatter_block(iv, iref, blk, MPI_INT, MPI_MAX, comm);
    for (int j = 0; j < c[me]; j++) {
        CHECK(memcmp(&dres[j], &dref[j], sizeof(double)) == 0, "round %d double [%d]: %.17g, blocking %.17g", k, j,
              dres[j], dref[j]);
        CHECK(memcmp(&mres[4 * j], &mref[4 * j], 4 * sizeof(int)) == 0, "round %d matrix [%d]", k, j);
    }
    double dblk[B];
    MPI_Reduce_scatter_block(dv, dblk, blk, MPI_DOUBLE, MPI_SUM, dup);
    for (int j = 0; j < blk; j++) {
        CHECK(ires[j] == iref[j], "round %d int [%d]: %d, blocking %d", k, j, ires[j], iref[j]);
        CHECK(memcmp(&dplace[j], &dblk[j], sizeof(double)) == 0, "round %d in place [%d]: %.17g, blocking %.17g", k,
              j, dplace[j], dblk[j]);
    }
    return errs;
}

static int errors_at(MPI_Comm comm, int rank_w)
{
    int rank = rank_w, errs = 0, size;
    MPI_Comm_size(comm, &size);
    char in[MAXP] = {0}, out[1];
    MPI_Request q;
    int rc = MPI_Ireduce_scatter_block(in, out, 1, MPI_BYTE, MPI_SUM, comm, &q);
    if (rc == MPI_SUCCESS)
        rc = MPI_Wait(&q, MPI_STATUS_IGNORE);
    CHECK(rc != MPI_SUCCESS && ct_class(rc) == MPI_ERR_OP, "MPI_SUM on MPI_BYTE: class %d", rc ? ct_class(rc) : 0);
    int v[MAXP], w = -1;
    for (int i = 0; i < size; i++)
        v[i] = i + 1;
    CHECK(MPI_Ireduce_scatter_block(v, &w, 1, MPI_INT, MPI_SUM, comm, &q) == MPI_SUCCESS, "after the error: start");
    int me;
    MPI_Comm_rank(comm, &me);
    CHECK(MPI_Wait(&q, MPI_STATUS_IGNORE) == MPI_SUCCESS && w == size * (me + 1), "after the error: %d", w);
    return errs;
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0;
    if (ct_init_upto(&argc, &argv, MAXP, &rank, &size))
        return 0;
    MPI_Comm pair, dup;
    ct_pairs(&pair, &dup);
    MPI_Op matop;
    MPI_Op_create(matmul, 0, &matop);
    MPI_Datatype mat;
    MPI_Type_contiguous(4, MPI_INT, &mat);
    MPI_Type_commit(&mat);
    for (int k = 0; k < ROUNDS; k++)
        errs += round_at(pair, dup, k, rank, matop, mat);
    for (int k = 0; k < 4; k++)
        errs += round_at(MPI_COMM_WORLD, MPI_COMM_WORLD, k, rank, matop, mat);
    errs += errors_at(pair, rank);
    if (rank == 0)
        ct_say(rank, "%d rounds of nonblocking reduce-scatters on pairs done at %d ranks", ROUNDS, size);
    MPI_Type_free(&mat);
    MPI_Op_free(&matop);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&pair);
    return ct_finish(rank, errs);
}
