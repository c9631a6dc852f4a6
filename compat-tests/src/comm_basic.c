/* Communicator management: rank/size, dup, split (parity, reversed key,
 * MPI_UNDEFINED colour), create from a group, compare, names, free, and
 * message isolation between communicators. */
#include "ct.h"

int main(int argc, char **argv)
{
    int rank, size, errs = 0, res, r2, s2, sum = 0;
    MPI_Comm dup, half, rev, some, evens, dup2;
    MPI_Group wg, eg;
    char name[MPI_MAX_OBJECT_NAME];
    int len;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size >= 1 && rank >= 0 && rank < size, "rank %d size %d", rank, size);

    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(sum == size * (size - 1) / 2, "sum of ranks %d", sum);

    MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_WORLD, &res);
    CHECK(res == MPI_IDENT, "compare(world, world) = %d", res);
    MPI_Comm_size(MPI_COMM_SELF, &s2);
    MPI_Comm_rank(MPI_COMM_SELF, &r2);
    CHECK(s2 == 1 && r2 == 0, "COMM_SELF rank %d size %d", r2, s2);
    MPI_Comm_compare(MPI_COMM_SELF, MPI_COMM_WORLD, &res);
    CHECK(res == (size == 1 ? MPI_CONGRUENT : MPI_UNEQUAL), "compare(self, world) = %d", res);

    name[0] = 0;
    MPI_Comm_get_name(MPI_COMM_WORLD, name, &len);
    CHECK(strcmp(name, "MPI_COMM_WORLD") == 0 && len == 14, "world name '%s'", name);

    /* dup */
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_compare(MPI_COMM_WORLD, dup, &res);
    CHECK(res == MPI_CONGRUENT, "compare(world, dup) = %d", res);
    MPI_Comm_rank(dup, &r2);
    MPI_Comm_size(dup, &s2);
    CHECK(r2 == rank && s2 == size, "dup rank %d size %d", r2, s2);
    MPI_Comm_set_name(dup, "my dup");
    MPI_Comm_get_name(dup, name, &len);
    CHECK(strcmp(name, "my dup") == 0 && len == 6, "dup name '%s'", name);

    /* isolation: same (source, tag) on two communicators, received in the
       opposite order from the send order */
    {
        int to = (rank + 1) % size, from = (rank + size - 1) % size;
        int a = 100 + rank, b = 200 + rank, ra = -1, rb = -1;
        MPI_Request rq[2];
        MPI_Isend(&a, 1, MPI_INT, to, 5, MPI_COMM_WORLD, &rq[0]);
        MPI_Isend(&b, 1, MPI_INT, to, 5, dup, &rq[1]);
        MPI_Recv(&rb, 1, MPI_INT, from, 5, dup, MPI_STATUS_IGNORE);
        MPI_Recv(&ra, 1, MPI_INT, from, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
        CHECK(ra == 100 + from && rb == 200 + from, "isolation: got %d %d", ra, rb);
    }

    /* split by parity */
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    MPI_Comm_rank(half, &r2);
    MPI_Comm_size(half, &s2);
    CHECK(r2 == rank / 2, "parity split rank %d", r2);
    CHECK(s2 == (rank % 2 == 0 ? (size + 1) / 2 : size / 2), "parity split size %d", s2);
    MPI_Comm_compare(MPI_COMM_WORLD, half, &res);
    CHECK(res == (size == 1 ? MPI_CONGRUENT : MPI_UNEQUAL), "compare(world, half) = %d", res);
    sum = -1;
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, half);
    {
        int expect = 0, i;
        for (i = rank % 2; i < size; i += 2)
            expect += i;
        CHECK(sum == expect, "sum over parity comm %d, expected %d", sum, expect);
    }
    MPI_Comm_dup(half, &dup2);
    MPI_Comm_compare(half, dup2, &res);
    CHECK(res == MPI_CONGRUENT, "compare(half, dup(half)) = %d", res);

    /* reversed key */
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &rev);
    MPI_Comm_rank(rev, &r2);
    MPI_Comm_size(rev, &s2);
    CHECK(r2 == size - 1 - rank && s2 == size, "reversed split rank %d size %d", r2, s2);
    MPI_Comm_compare(MPI_COMM_WORLD, rev, &res);
    CHECK(res == (size == 1 ? MPI_CONGRUENT : MPI_SIMILAR), "compare(world, rev) = %d", res);
    {
        /* neighbour in rev is the reversed world neighbour */
        int v = rank, got = -1;
        int to = (r2 + 1) % size, from = (r2 + size - 1) % size;
        MPI_Sendrecv(&v, 1, MPI_INT, to, 0, &got, 1, MPI_INT, from, 0, rev, MPI_STATUS_IGNORE);
        CHECK(got == size - 1 - from, "rev shift got %d expected %d", got, size - 1 - from);
    }

    /* equal keys keep world order; MPI_UNDEFINED gives MPI_COMM_NULL */
    MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? MPI_UNDEFINED : 7, 0, &some);
    if (rank == 0) {
        CHECK(some == MPI_COMM_NULL, "MPI_UNDEFINED colour did not give MPI_COMM_NULL");
    } else {
        CHECK(some != MPI_COMM_NULL, "colour 7 gave MPI_COMM_NULL");
        if (some != MPI_COMM_NULL) {
            MPI_Comm_rank(some, &r2);
            MPI_Comm_size(some, &s2);
            CHECK(r2 == rank - 1 && s2 == size - 1, "undefined split rank %d size %d", r2, s2);
            MPI_Barrier(some);
            MPI_Comm_free(&some);
            CHECK(some == MPI_COMM_NULL, "Comm_free did not null the handle");
        }
    }

    /* Comm_create from the group of even ranks */
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    {
        int ne = (size + 1) / 2, i;
        int *ev = ct_malloc(sizeof(int) * ne);
        for (i = 0; i < ne; i++)
            ev[i] = 2 * i;
        MPI_Group_incl(wg, ne, ev, &eg);
        free(ev);
    }
    MPI_Comm_create(MPI_COMM_WORLD, eg, &evens);
    if (rank % 2) {
        CHECK(evens == MPI_COMM_NULL, "odd rank got a communicator from Comm_create");
    } else {
        CHECK(evens != MPI_COMM_NULL, "even rank got MPI_COMM_NULL from Comm_create");
        if (evens != MPI_COMM_NULL) {
            MPI_Comm_rank(evens, &r2);
            MPI_Comm_size(evens, &s2);
            CHECK(r2 == rank / 2 && s2 == (size + 1) / 2, "evens rank %d size %d", r2, s2);
            MPI_Comm_compare(half, evens, &res);
            CHECK(res == MPI_CONGRUENT, "compare(half, evens) = %d", res);
            MPI_Comm_free(&evens);
        }
    }
    MPI_Group_free(&eg);
    MPI_Group_free(&wg);

    MPI_Comm_free(&rev);
    MPI_Comm_free(&dup2);
    MPI_Comm_free(&half);
    MPI_Comm_free(&dup);
    CHECK(dup == MPI_COMM_NULL && half == MPI_COMM_NULL && rev == MPI_COMM_NULL,
          "Comm_free did not null handles");

    MPI_Barrier(MPI_COMM_WORLD);
    return ct_finish(rank, errs);
}
