/* Nonblocking collectives between two ranks where one rank starts its call only after the
 * other's message has arrived (session 26: at one subrank per process on two processes the
 * later rank takes the peer's message at the start, abi/nbcpair.rs `post_side`, and returns
 * a request that is already complete). The world is cut into pairs (a last odd rank alone);
 * per round one rank (alternating) starts a call, then tells the other with a point-to-point
 * message on a duplicate; the other receives that first, so the call's message is already
 * here when it starts. Every kind: Ibarrier, Ibcast, Iallgather, Ialltoall, Igather, Iscatter,
 * Iallgatherv, Ialltoallv, Igatherv, Iscatterv; completed in the round's order of
 * ct_complete (MPI_Waitall, MPI_Wait in reverse, MPI_Test loops, MPI_Waitany, MPI_Testall
 * loops, MPI_Testsome loops; each kind meets four of them over the rounds). The late rank
 * receiving through a strided type (taken by the posted receive instead) and, under MPI_ERRORS_RETURN, an Ibcast whose late
 * receiver's buffer is too short (MPI_ERR_TRUNCATE at its wait; MPICH says MPI_ERR_OTHER). */
#include "ct.h"

#define N 3
#define KINDS 10
#define ROUNDS (4 * KINDS)

/* One round of kind `kind` on the pair `comm` (2 ranks); `dup` carries the "go". */
static int round_at(MPI_Comm comm, MPI_Comm dup, int k, int rank_w, MPI_Datatype strided)
{
    int rank = rank_w, errs = 0, me;
    MPI_Comm_rank(comm, &me);
    int early = k % 2, late = 1 - early, kind = (k / 2) % KINDS, root = (k / 4) % 2;
    int strided_late = me == late && k >= ROUNDS / 2;
    int s[2 * N], r[2 * 2 * N], counts[2], displs[2];
    for (int i = 0; i < 2 * N; i++)
        s[i] = 1000 * k + 100 * me + i;
    for (int i = 0; i < 4 * N; i++)
        r[i] = -1;
    MPI_Request q[2];
    int nq = 0, rc = MPI_SUCCESS, go = 0;
    if (me == late)
        MPI_Recv(&go, 1, MPI_INT, early, k, dup, MPI_STATUS_IGNORE);
    switch (kind) {
    case 0:
        rc = MPI_Ibarrier(comm, &q[nq++]);
        break;
    case 1:
        if (me == root)
            rc = MPI_Ibcast(s, N, MPI_INT, root, comm, &q[nq++]);
        else
            rc = MPI_Ibcast(r, strided_late ? 1 : N, strided_late ? strided : MPI_INT, root, comm, &q[nq++]);
        break;
    case 2:
        rc = MPI_Iallgather(s, N, MPI_INT, r, N, MPI_INT, comm, &q[nq++]);
        break;
    case 3:
        rc = MPI_Ialltoall(s, N, MPI_INT, r, N, MPI_INT, comm, &q[nq++]);
        break;
    case 4:
        rc = MPI_Igather(s, N, MPI_INT, r, N, MPI_INT, root, comm, &q[nq++]);
        break;
    case 5:
        rc = MPI_Iscatter(s, N, MPI_INT, r, N, MPI_INT, root, comm, &q[nq++]);
        break;
    case 6:
        counts[0] = counts[1] = N, displs[0] = N + 1, displs[1] = 0;
        rc = MPI_Iallgatherv(s, N, MPI_INT, r, counts, displs, MPI_INT, comm, &q[nq++]);
        break;
    case 7:
        counts[0] = counts[1] = N, displs[0] = N, displs[1] = 0;
        rc = MPI_Ialltoallv(s, counts, displs, MPI_INT, r, counts, displs, MPI_INT, comm, &q[nq++]);
        break;
    case 8:
        counts[0] = counts[1] = N, displs[0] = 2 * N, displs[1] = 0;
        rc = MPI_Igatherv(s, N, MPI_INT, r, counts, displs, MPI_INT, root, comm, &q[nq++]);
        break;
    default:
        counts[0] = counts[1] = N, displs[0] = N, displs[1] = 0;
        rc = MPI_Iscatterv(s, counts, displs, MPI_INT, r, N, MPI_INT, root, comm, &q[nq++]);
        break;
    }
    CHECK(rc == MPI_SUCCESS, "round %d kind %d start: class %d", k, kind, rc ? ct_class(rc) : 0);
    if (me == early)
        MPI_Send(&go, 1, MPI_INT, late, k, dup);
    rc = ct_complete(q, nq, k);
    CHECK(rc == MPI_SUCCESS, "round %d kind %d completion: class %d", k, kind, rc ? ct_class(rc) : 0);
    int other = 1 - me;
#define FROM(p, i) (1000 * k + 100 * (p) + (i))
    for (int i = 0; i < N; i++) {
        switch (kind) {
        case 1:
            if (me != root) {
                int v = r[strided_late ? 2 * i : i];
                CHECK(v == FROM(root, i), "round %d Ibcast [%d] = %d", k, i, v);
            }
            break;
        case 2:
            CHECK(r[me * N + i] == FROM(me, i) && r[other * N + i] == FROM(other, i), "round %d Iallgather [%d]", k, i);
            break;
        case 3:
            CHECK(r[me * N + i] == FROM(me, me * N + i) && r[other * N + i] == FROM(other, me * N + i),
                  "round %d Ialltoall [%d]", k, i);
            break;
        case 4:
            if (me == root)
                CHECK(r[me * N + i] == FROM(me, i) && r[other * N + i] == FROM(other, i), "round %d Igather [%d]", k, i);
            break;
        case 5:
            CHECK(r[i] == FROM(root, me * N + i), "round %d Iscatter [%d] = %d", k, i, r[i]);
            break;
        case 6:
            /* rank 0's block at N + 1, rank 1's at 0 */
            CHECK(r[N + 1 + i] == FROM(0, i) && r[i] == FROM(1, i), "round %d Iallgatherv [%d]", k, i);
            break;
        case 7:
            /* block for rank 0 at displacement N, for rank 1 at 0, on both sides */
            CHECK(r[N + i] == FROM(0, (me == 0 ? N : 0) + i) && r[i] == FROM(1, (me == 0 ? N : 0) + i),
                  "round %d Ialltoallv [%d]", k, i);
            break;
        case 8:
            if (me == root)
                CHECK(r[2 * N + i] == FROM(0, i) && r[i] == FROM(1, i), "round %d Igatherv [%d]", k, i);
            break;
        case 9:
            CHECK(r[i] == FROM(root, (me == 0 ? N : 0) + i), "round %d Iscatterv [%d] = %d", k, i, r[i]);
            break;
        default:
            break;
        }
    }
#undef FROM
    return errs;
}

/* Under MPI_ERRORS_RETURN: the late receiver of an Ibcast holds one int of the N sent. */
static int truncated(MPI_Comm comm, MPI_Comm dup, int rank_w)
{
    int rank = rank_w, errs = 0, me, go = 0, x[N] = {7, 8, 9};
    MPI_Comm_rank(comm, &me);
    MPI_Request q;
    if (me == 1)
        MPI_Recv(&go, 1, MPI_INT, 0, 999, dup, MPI_STATUS_IGNORE);
    int rc = MPI_Ibcast(x, me == 0 ? N : 1, MPI_INT, 0, comm, &q);
    CHECK(rc == MPI_SUCCESS, "truncated Ibcast start: class %d", rc ? ct_class(rc) : 0);
    if (me == 0)
        MPI_Send(&go, 1, MPI_INT, 1, 999, dup);
    rc = MPI_Wait(&q, MPI_STATUS_IGNORE);
    if (me == 0)
        CHECK(rc == MPI_SUCCESS, "root of a truncated Ibcast: class %d", rc ? ct_class(rc) : 0);
    else
        CHECK(rc != MPI_SUCCESS && (ct_class(rc) == MPI_ERR_TRUNCATE || ct_class(rc) == MPI_ERR_OTHER),
              "late truncated Ibcast: class %d", rc ? ct_class(rc) : 0);
    int b = me == 1 ? 77 : -1;
    CHECK(MPI_Ibcast(&b, 1, MPI_INT, 1, comm, &q) == MPI_SUCCESS, "Ibcast after truncation");
    CHECK(MPI_Wait(&q, MPI_STATUS_IGNORE) == MPI_SUCCESS && b == 77, "Ibcast after truncation: %d", b);
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
    MPI_Datatype strided;
    MPI_Type_vector(N, 1, 2, MPI_INT, &strided);
    MPI_Type_commit(&strided);
    int psize;
    MPI_Comm_size(pair, &psize);
    if (psize == 2) {
        for (int k = 0; k < ROUNDS; k++)
            errs += round_at(pair, dup, k, rank, strided);
        errs += truncated(pair, dup, rank);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        ct_say(rank, "%d late rounds on pairs done at %d ranks", ROUNDS, size);
    MPI_Type_free(&strided);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&pair);
    return ct_finish(rank, errs);
}
