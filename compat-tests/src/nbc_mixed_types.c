/* Session 25 (faults16): nonblocking collectives where one rank only passes a strided
 * derived type (the others plain ints of the same type signature), started back to back
 * with an Ibarrier and a blocking Bcast/Allreduce on the same communicator, completed by
 * MPI_Waitall or MPI_Wait in reverse. At one subrank per process on three or more processes
 * the rank with the derived type runs its call in a helper task through a packed buffer
 * while the others start the real MPI's operation directly: both must start the same real
 * operation in the same order (a small Ibcast with the derived type at the root hung).
 * Ibcast (small and large), Igather, Iscatter, Iallgather, Ialltoall, and Iallreduce, Ireduce
 * (plain: a reduction's datatype is the same everywhere) among them,
 * on MPI_COMM_WORLD and a duplicate, the odd rank and the root moving with the round.
 * At the end, under MPI_ERRORS_RETURN, an Ibcast (small, then large) whose last rank's
 * buffer is too short: that rank's wait returns MPI_ERR_TRUNCATE (MPICH says MPI_ERR_OTHER)
 * and the job goes on (it ended from the progress engine, TOUCAN_REAL_THREAD=multiple or not). */
#include "ct.h"

#define N 4
#define BIG 2048
#define ROUNDS 12

/* `n` ints at `p`, as plain ints or as one item of `strided` (every other int). */
#define AT(odd, buf, i) (buf)[(odd) ? 2 * (i) : (i)]

static int round_at(MPI_Comm comm, int k, MPI_Datatype st, MPI_Datatype st2, int rank_w)
{
    int rank = rank_w, errs = 0, me, size;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    int root = k % size, odd_rank = (k / 2) % size;
    /* Even rounds: the root is the odd one; odd rounds: another rank (when there is one). */
    if (k % 2 == 0)
        odd_rank = root;
    else if (size > 1 && odd_rank == root)
        odd_rank = (root + 1) % size;
    int odd = me == odd_rank;
    MPI_Request r[12];
    int nr = 0;

    int bc[2 * N], big[BIG];
    for (int i = 0; i < 2 * N; i++)
        bc[i] = me == root ? 100 * k + i : -1;
    for (int i = 0; i < BIG; i++)
        big[i] = me == root ? k + i : -1;
    if (odd)
        MPI_Ibcast(bc, 1, st, root, comm, &r[nr++]);
    else
        MPI_Ibcast(bc, N, MPI_INT, root, comm, &r[nr++]);
    MPI_Ibcast(big, BIG, MPI_INT, root, comm, &r[nr++]);
    MPI_Ibarrier(comm, &r[nr++]);

    int gs[2 * N], *gr = malloc(sizeof(int) * N * size);
    for (int i = 0; i < N; i++)
        AT(odd, gs, i) = 2000 * k + 10 * me + i;
    MPI_Igather(gs, odd ? 1 : N, odd ? st : MPI_INT, gr, N, MPI_INT, root, comm, &r[nr++]);

    int *ss = malloc(sizeof(int) * N * size), sr[2 * N];
    for (int i = 0; i < N * size; i++)
        ss[i] = 3000 * k + i;
    MPI_Iscatter(ss, N, MPI_INT, sr, odd ? 1 : N, odd ? st : MPI_INT, root, comm, &r[nr++]);

    int as[2 * N], *ag = malloc(sizeof(int) * N * size);
    for (int i = 0; i < N; i++)
        AT(odd, as, i) = 4000 * k + 10 * me + i;
    MPI_Iallgather(as, odd ? 1 : N, odd ? st : MPI_INT, ag, N, MPI_INT, comm, &r[nr++]);

    /* Blocks of two ints; the odd rank sends each block as one item of `st2` (every other int). */
    int *ts = malloc(sizeof(int) * 4 * size), *tr = malloc(sizeof(int) * 2 * size);
    for (int p = 0; p < size; p++)
        for (int j = 0; j < 2; j++) {
            int v = 10000 * k + 100 * me + 10 * p + j;
            if (odd)
                ts[4 * p + 2 * j] = v;
            else
                ts[2 * p + j] = v;
        }
    if (odd) {
        MPI_Datatype blk;
        MPI_Type_create_resized(st2, 0, 4 * sizeof(int), &blk);
        MPI_Type_commit(&blk);
        MPI_Ialltoall(ts, 1, blk, tr, 2, MPI_INT, comm, &r[nr++]);
        MPI_Type_free(&blk);
    } else {
        MPI_Ialltoall(ts, 2, MPI_INT, tr, 2, MPI_INT, comm, &r[nr++]);
    }

    /* Reductions take the same datatype everywhere (MPICH refuses MPI_SUM on a vector):
     * plain ints, among the others' mixed calls. */
    int rs[N], ra[N], rr[N];
    for (int i = 0; i < N; i++)
        rs[i] = me + i + k;
    MPI_Iallreduce(rs, ra, N, MPI_INT, MPI_SUM, comm, &r[nr++]);
    MPI_Ireduce(rs, rr, N, MPI_INT, MPI_MAX, root, comm, &r[nr++]);

    /* Blocking calls on the same communicator while they run. */
    int c = me == root ? 7 * k : -1, s = 1;
    MPI_Bcast(&c, 1, MPI_INT, root, comm);
    MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_INT, MPI_SUM, comm);
    CHECK(c == 7 * k && s == size, "blocking calls k %d: %d %d", k, c, s);

    if (k % 2 == 0) {
        CHECK(MPI_Waitall(nr, r, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "Waitall k %d", k);
    } else {
        for (int i = nr - 1; i >= 0; i--)
            CHECK(MPI_Wait(&r[i], MPI_STATUS_IGNORE) == MPI_SUCCESS, "Wait %d k %d", i, k);
    }

    for (int i = 0; i < N; i++)
        CHECK(AT(odd, bc, i) == 100 * k + (odd_rank == root ? 2 * i : i), "Ibcast k %d [%d] = %d", k, i,
              AT(odd, bc, i));
    for (int i = 0; i < BIG; i++)
        if (big[i] != k + i) {
            CHECK(0, "large Ibcast k %d [%d] = %d", k, i, big[i]);
            break;
        }
    if (me == root)
        for (int p = 0; p < size; p++)
            for (int i = 0; i < N; i++)
                CHECK(gr[p * N + i] == 2000 * k + 10 * p + i, "Igather k %d [%d][%d] = %d", k, p, i, gr[p * N + i]);
    for (int i = 0; i < N; i++)
        CHECK(AT(odd, sr, i) == 3000 * k + me * N + i, "Iscatter k %d [%d] = %d", k, i, AT(odd, sr, i));
    for (int p = 0; p < size; p++)
        for (int i = 0; i < N; i++)
            CHECK(ag[p * N + i] == 4000 * k + 10 * p + i, "Iallgather k %d [%d][%d] = %d", k, p, i, ag[p * N + i]);
    for (int p = 0; p < size; p++)
        for (int j = 0; j < 2; j++)
            CHECK(tr[2 * p + j] == 10000 * k + 100 * p + 10 * me + j, "Ialltoall k %d [%d][%d] = %d", k, p, j,
                  tr[2 * p + j]);
    for (int i = 0; i < N; i++) {
        int sum = size * (size - 1) / 2 + size * (i + k);
        CHECK(ra[i] == sum, "Iallreduce k %d [%d] = %d (want %d)", k, i, ra[i], sum);
        if (me == root)
            CHECK(rr[i] == size - 1 + i + k, "Ireduce k %d [%d] = %d", k, i, rr[i]);
    }
    free(gr);
    free(ss);
    free(ag);
    free(ts);
    free(tr);
    return errs;
}

/* Under MPI_ERRORS_RETURN an Ibcast of `n` ints whose last rank (not the root) takes n/2:
 * that rank's wait reports the truncation; then a call that must still match. */
static int truncated(MPI_Comm comm, int n, int rank_w)
{
    int rank = rank_w, errs = 0, me, size;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    int *x = malloc(sizeof(int) * n);
    for (int i = 0; i < n; i++)
        x[i] = me == 0 ? i : -1;
    int short_one = me == size - 1 && me != 0;
    MPI_Request q;
    int rc = MPI_Ibcast(x, short_one ? n / 2 : n, MPI_INT, 0, comm, &q);
    CHECK(rc == MPI_SUCCESS, "truncated Ibcast (%d) start: class %d", n, rc ? ct_class(rc) : 0);
    rc = MPI_Wait(&q, MPI_STATUS_IGNORE);
    if (short_one)
        /* MPICH reports the schedule's truncation as MPI_ERR_OTHER. */
        CHECK(rc != MPI_SUCCESS && (ct_class(rc) == MPI_ERR_TRUNCATE || ct_class(rc) == MPI_ERR_OTHER),
              "truncated Ibcast (%d): class %d", n, rc ? ct_class(rc) : 0);
    else if (me == 0)
        CHECK(rc == MPI_SUCCESS, "root of a truncated Ibcast (%d): class %d", n, rc ? ct_class(rc) : 0);
    int b = me == size - 1 ? 88 : -1, s = 1;
    CHECK(MPI_Ibcast(&b, 1, MPI_INT, size - 1, comm, &q) == MPI_SUCCESS, "Ibcast after truncation");
    CHECK(MPI_Wait(&q, MPI_STATUS_IGNORE) == MPI_SUCCESS && b == 88, "Ibcast after truncation: %d", b);
    CHECK(MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_INT, MPI_SUM, comm) == MPI_SUCCESS && s == size,
          "Allreduce after truncation: %d", s);
    free(x);
    return errs;
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Datatype st, st2;
    MPI_Type_vector(N, 1, 2, MPI_INT, &st);
    MPI_Type_commit(&st);
    MPI_Type_vector(2, 1, 2, MPI_INT, &st2);
    MPI_Type_commit(&st2);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    for (int k = 0; k < ROUNDS; k++)
        errs += round_at(MPI_COMM_WORLD, k, st, st2, rank);
    for (int k = 0; k < ROUNDS; k++)
        errs += round_at(dup, k, st, st2, rank);
    MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
    if (size > 1) {
        errs += truncated(dup, N, rank);
        errs += truncated(dup, BIG, rank);
    }
    if (rank == 0)
        ct_say(rank, "%d rounds done at %d ranks", 2 * ROUNDS, size);
    MPI_Type_free(&st);
    MPI_Type_free(&st2);
    MPI_Comm_free(&dup);
    return ct_finish(rank, errs);
}
