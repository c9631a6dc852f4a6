/* Nonblocking Allreduce and Reduce between the two members of a communicator (session 25: at
 * one subrank per process on two processes, one eager message each way and the combine in
 * rank order when the request completes, abi/nbcpair.rs and core/coll/pairfold.rs). The world
 * is cut into pairs (a last odd rank alone) and a duplicate of each pair; every round starts
 * several calls on both communicators and completes them in an order that changes with the
 * round (MPI_Waitall, MPI_Wait in reverse, MPI_Test loops, MPI_Waitany, MPI_Testall,
 * MPI_Testsome), then checks each result bit for bit against the blocking MPI_Allreduce's / MPI_Reduce's on the
 * same data: doubles whose sums lose bits (1e16 beside 1), a non-commutative user operation
 * (2x2 integer matrix product, on a contiguous type of 4 doubles), a commutative user
 * operation, MPI_IN_PLACE and zero counts (no MPI_Request_free: the standard makes it
 * erroneous on a nonblocking collective's request, and MPICH refuses it). The same rounds
 * on MPI_COMM_WORLD (the path is not taken beyond two ranks). At the end, under MPI_ERRORS_RETURN, MPI_SUM on
 * MPI_BYTE (MPI_ERR_OP), an Ireduce whose root's buffer is too short (MPI_ERR_TRUNCATE at
 * its wait under Toucan; MPICH reports nothing), then a call that must still match. */
#include "ct.h"

#define D 6
#define ROUNDS 24
#define CALLS 7

/* inout = in * inout for 2x2 matrices (row-major, 4 doubles each). */
static void matmul(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    double *a = in, *b = inout;
    for (int m = 0; m < *len; m++, a += 4, b += 4) {
        double c[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3], a[2] * b[0] + a[3] * b[2],
                       a[2] * b[1] + a[3] * b[3]};
        memcpy(b, c, sizeof c);
    }
}

/* inout = (in + inout) mod 1000 over ints: commutative. */
static void addmod(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    int *a = in, *b = inout;
    for (int i = 0; i < *len; i++)
        b[i] = (a[i] + b[i]) % 1000;
}

static double val(int k, int me, int i, int size)
{
    /* Beyond two ranks MPI fixes no order of a floating-point sum (the blocking and
     * nonblocking algorithms may differ): exact values there. */
    if (size > 2)
        return (k + i + me) % 7 - 3 + 0.5;
    /* Sums that depend on the order among more than two operands; exact for two. */
    switch ((k + i + me) % 3) {
    case 0:
        return 1e16 * (me % 2 ? -1 : 1);
    case 1:
        return 1.0 + 0.25 * me + k;
    default:
        return 3.0e-7 * (i + 1) - 0.5 * me;
    }
}

static int round_at(MPI_Comm comm, MPI_Comm dup, int k, MPI_Op mm, MPI_Op am, MPI_Datatype mat, int rank_w)
{
    int rank = rank_w, errs = 0, me, size;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    int root = k % size;
    MPI_Request r[CALLS];
    int nr = 0;

    double s1[D], r1[D], e1[D];
    for (int i = 0; i < D; i++)
        s1[i] = val(k, me, i, size);
    MPI_Iallreduce(s1, r1, D, MPI_DOUBLE, MPI_SUM, comm, &r[nr++]);

    int ip[3], eip[3], sip[3];
    for (int i = 0; i < 3; i++)
        ip[i] = sip[i] = 7 * me + i + k;
    MPI_Iallreduce(MPI_IN_PLACE, ip, 3, MPI_INT, (k % 2) ? MPI_PROD : MPI_BXOR, dup, &r[nr++]);

    double s2[D], r2[D], e2[D];
    for (int i = 0; i < D; i++)
        s2[i] = val(k + 1, me, i, size) * (i % 2 ? 1 : -1);
    MPI_Ireduce(s2, r2, D, MPI_DOUBLE, (k % 2) ? MPI_MAX : MPI_SUM, root, comm, &r[nr++]);

    double m[2][4], rm[2][4], em[2][4];
    for (int j = 0; j < 2; j++) {
        m[j][0] = 1 + me + j;
        m[j][1] = k % 3 + 1;
        m[j][2] = me - j;
        m[j][3] = 2;
    }
    MPI_Iallreduce(m, rm, 2, mat, mm, dup, &r[nr++]);

    int ai[4], rai[4], eai[4];
    for (int i = 0; i < 4; i++)
        ai[i] = 300 * me + 11 * i + k;
    MPI_Ireduce(ai, rai, 4, MPI_INT, am, (root + 1) % size, comm, &r[nr++]);

    double ipr[D], sipr[D];
    for (int i = 0; i < D; i++)
        ipr[i] = sipr[i] = val(k + 3, me, i, size);
    MPI_Ireduce(me == root ? MPI_IN_PLACE : ipr, me == root ? ipr : NULL, D, MPI_DOUBLE, MPI_MIN, root, dup,
                &r[nr++]);

    MPI_Iallreduce(NULL, NULL, 0, MPI_DOUBLE, MPI_SUM, comm, &r[nr++]);

    CHECK(ct_complete(r, nr, k) == MPI_SUCCESS, "completion k %d", k);

    /* The blocking calls on the same data, in the same order on every rank. */
    MPI_Allreduce(s1, e1, D, MPI_DOUBLE, MPI_SUM, comm);
    MPI_Allreduce(sip, eip, 3, MPI_INT, (k % 2) ? MPI_PROD : MPI_BXOR, dup);
    MPI_Reduce(s2, e2, D, MPI_DOUBLE, (k % 2) ? MPI_MAX : MPI_SUM, root, comm);
    MPI_Allreduce(m, em, 2, mat, mm, dup);
    MPI_Reduce(ai, eai, 4, MPI_INT, am, (root + 1) % size, comm);
    double eipr[D];
    MPI_Reduce(sipr, eipr, D, MPI_DOUBLE, MPI_MIN, root, dup);

    CHECK(memcmp(r1, e1, sizeof r1) == 0, "Iallreduce sum k %d: %.17g vs %.17g", k, r1[0], e1[0]);
    CHECK(memcmp(ip, eip, sizeof ip) == 0, "Iallreduce in place k %d: %d vs %d", k, ip[0], eip[0]);
    if (me == root) {
        CHECK(memcmp(r2, e2, sizeof r2) == 0, "Ireduce k %d: %.17g vs %.17g", k, r2[0], e2[0]);
        CHECK(memcmp(ipr, eipr, sizeof ipr) == 0, "Ireduce in place k %d: %.17g vs %.17g", k, ipr[0], eipr[0]);
    }
    CHECK(memcmp(rm, em, sizeof rm) == 0, "Iallreduce matrix k %d: %g %g %g %g vs %g %g %g %g", k, rm[0][0],
          rm[0][1], rm[0][2], rm[0][3], em[0][0], em[0][1], em[0][2], em[0][3]);
    if (size == 2) {
        /* Rank 0's matrix times rank 1's. */
        for (int j = 0; j < 2; j++) {
            double a[4] = {1 + j, k % 3 + 1, -j, 2}, b[4] = {2 + j, k % 3 + 1, 1 - j, 2};
            int one = 1;
            matmul(a, b, &one, NULL);
            CHECK(memcmp(b, rm[j], sizeof b) == 0, "Iallreduce matrix order k %d [%d]: %g %g %g %g", k, j,
                  rm[j][0], rm[j][1], rm[j][2], rm[j][3]);
        }
    }
    if (me == (root + 1) % size)
        CHECK(memcmp(rai, eai, sizeof rai) == 0, "Ireduce user op k %d: %d vs %d", k, rai[0], eai[0]);
    return errs;
}

static int errors_at(MPI_Comm comm, int rank_w)
{
    int rank = rank_w, errs = 0, me, size;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    unsigned char by[2] = {1, 2}, rby[2];
    MPI_Request q = MPI_REQUEST_NULL;
    int rc = MPI_Iallreduce(by, rby, 2, MPI_BYTE, MPI_SUM, comm, &q);
    if (rc == MPI_SUCCESS)
        rc = MPI_Wait(&q, MPI_STATUS_IGNORE);
    CHECK(rc != MPI_SUCCESS && ct_class(rc) == MPI_ERR_OP, "MPI_SUM on MPI_BYTE: class %d", rc ? ct_class(rc) : 0);
    if (size == 2) {
        /* The root's buffer holds one int of the 4 the other sends. */
        int x[4] = {1, 2, 3, 4}, y[4] = {0, 0, 0, 0};
        rc = MPI_Ireduce(x, y, me == 0 ? 1 : 4, MPI_INT, MPI_SUM, 0, comm, &q);
        CHECK(rc == MPI_SUCCESS, "truncated Ireduce start: class %d", rc ? ct_class(rc) : 0);
        rc = MPI_Wait(&q, MPI_STATUS_IGNORE);
        if (me == 1)
            CHECK(rc == MPI_SUCCESS, "non-root of a truncated Ireduce: class %d", rc ? ct_class(rc) : 0);
        else
            /* MPICH reports nothing here; Toucan MPI_ERR_TRUNCATE. */
            CHECK(rc == MPI_SUCCESS || ct_class(rc) == MPI_ERR_TRUNCATE || ct_class(rc) == MPI_ERR_OTHER,
                  "truncated Ireduce: class %d", ct_class(rc));
    }
    double d = me + 0.5, s = 0;
    CHECK(MPI_Iallreduce(&d, &s, 1, MPI_DOUBLE, MPI_SUM, comm, &q) == MPI_SUCCESS, "Iallreduce after errors");
    CHECK(MPI_Wait(&q, MPI_STATUS_IGNORE) == MPI_SUCCESS && s == size * size / 2.0, "Iallreduce after errors: %g", s);
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
    MPI_Datatype mat;
    MPI_Type_contiguous(4, MPI_DOUBLE, &mat);
    MPI_Type_commit(&mat);
    MPI_Op mm, am;
    MPI_Op_create(matmul, 0, &mm);
    MPI_Op_create(addmod, 1, &am);

    for (int k = 0; k < ROUNDS; k++)
        errs += round_at(pair, dup, k, mm, am, mat, rank);
    for (int k = 0; k < 5; k++)
        errs += round_at(MPI_COMM_WORLD, MPI_COMM_WORLD, k, mm, am, mat, rank);
    errs += errors_at(pair, rank);

    if (rank == 0)
        ct_say(rank, "%d rounds on pairs done at %d ranks", ROUNDS, size);
    MPI_Op_free(&mm);
    MPI_Op_free(&am);
    MPI_Type_free(&mat);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&pair);
    return ct_finish(rank, errs);
}
