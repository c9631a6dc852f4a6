/* Communicators made from an inter-communicator (the first third of the ranks against the
 * rest): MPI_Comm_split (same-colour members of both groups, ordered by key; MPI_COMM_NULL
 * for MPI_UNDEFINED and when the other group has no member of the colour), MPI_Comm_create
 * (each side names a subset of its own group), MPI_Comm_dup and MPI_Comm_idup, and
 * MPI_Comm_compare; each result is used for point-to-point and a collective across. */
#include "ct.h"

/* Checks that `ic` is an inter-communicator with local size ls and remote size rs whose
 * groups can talk: every rank sends its world rank to remote rank 0, which checks the sum,
 * and an Allreduce across gives the other group's sum. */
static void check_inter(MPI_Comm ic, int ls, int rs, int rsum, const char *what, int rank, int *errp)
{
    int flag = 0, n = -1, lr, i, sum = 0, v;
    MPI_Request rq;
    MPI_Comm_test_inter(ic, &flag);
    CHECKP(flag, "%s: not an inter-communicator", what);
    MPI_Comm_size(ic, &n);
    CHECKP(n == ls, "%s: local size %d, want %d", what, n, ls);
    MPI_Comm_remote_size(ic, &n);
    CHECKP(n == rs, "%s: remote size %d, want %d", what, n, rs);
    MPI_Comm_rank(ic, &lr);
    MPI_Isend(&rank, 1, MPI_INT, 0, 3, ic, &rq);
    if (lr == 0) {
        for (i = 0; i < rs; i++) {
            MPI_Recv(&v, 1, MPI_INT, i, 3, ic, MPI_STATUS_IGNORE);
            sum += v;
        }
        CHECKP(sum == rsum, "%s: world ranks of the remote group sum to %d, want %d", what, sum, rsum);
    }
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    v = -1;
    MPI_Allreduce(&rank, &v, 1, MPI_INT, MPI_SUM, ic);
    CHECKP(v == rsum, "%s: allreduce across gave %d, want %d", what, v, rsum);
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, i, res;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        printf("rank %d: needs 2 ranks, skipped\n", rank);
        return ct_finish(rank, errs);
    }
    int n0 = (size + 2) / 3, g = rank < n0 ? 0 : 1, lr, ls, rs;
    MPI_Comm local, ic, nc, dup, idup;
    MPI_Comm_split(MPI_COMM_WORLD, g, rank, &local);
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, g == 0 ? n0 : 0, 9, &ic);
    MPI_Comm_rank(ic, &lr);
    MPI_Comm_size(ic, &ls);
    MPI_Comm_remote_size(ic, &rs);

    /* Split by parity of the local rank, reversed key: colour c has the ranks of that parity
     * on both sides (group 0 has fewer; with one rank it has no odd colour, so the odd ranks
     * of group 1 get MPI_COMM_NULL) */
    {
        int c = lr % 2, want_ls = 0, want_rs = 0, rsum = 0, first = g == 0 ? n0 : 0, nr, want_r = 0;
        for (i = 0; i < ls; i++)
            if (i % 2 == c) {
                want_ls++;
                if (i > lr)
                    want_r++;
            }
        for (i = 0; i < rs; i++)
            if (i % 2 == c) {
                want_rs++;
                rsum += first + i;
            }
        MPI_Comm_split(ic, c, -lr, &nc);
        if (want_rs == 0) {
            CHECK(nc == MPI_COMM_NULL, "split: colour %d has no remote member but a communicator came back", c);
        } else {
            CHECK(nc != MPI_COMM_NULL, "split: no communicator");
            MPI_Comm_rank(nc, &nr);
            CHECK(nr == want_r, "split: rank %d, want %d (reversed keys)", nr, want_r);
            check_inter(nc, want_ls, want_rs, rsum, "split", rank, &errs);
            MPI_Comm_free(&nc);
        }
    }
    /* MPI_UNDEFINED on the last local rank of each side (MPICH 4.0.2 hangs when a leader,
     * local rank 0, passes it) */
    MPI_Comm_split(ic, lr == ls - 1 ? MPI_UNDEFINED : 5, lr, &nc);
    if (lr == ls - 1 || rs == 1) {
        CHECK(nc == MPI_COMM_NULL, "split with MPI_UNDEFINED gave a communicator");
    } else {
        int rsum = 0, first = g == 0 ? n0 : 0;
        for (i = 0; i < rs - 1; i++)
            rsum += first + i;
        check_inter(nc, ls - 1, rs - 1, rsum, "split undefined", rank, &errs);
        MPI_Comm_free(&nc);
    }
    /* Comm_create: each side keeps all but its local rank 0 (when it has more than one) */
    {
        MPI_Group lg, sub;
        int zero = 0, dropped_l = ls > 1, dropped_r = rs > 1, rsum = 0, first = g == 0 ? n0 : 0;
        MPI_Comm_group(ic, &lg);
        if (dropped_l)
            MPI_Group_excl(lg, 1, &zero, &sub);
        else
            MPI_Group_incl(lg, 1, &zero, &sub);
        MPI_Comm_create(ic, sub, &nc);
        for (i = dropped_r; i < rs; i++)
            rsum += first + i;
        if (dropped_l && lr == 0) {
            CHECK(nc == MPI_COMM_NULL, "create: rank outside the group got a communicator");
        } else {
            CHECK(nc != MPI_COMM_NULL, "create: no communicator");
            if (nc != MPI_COMM_NULL) {
                check_inter(nc, ls - dropped_l, rs - dropped_r, rsum, "create", rank, &errs);
                MPI_Comm_free(&nc);
            }
        }
        MPI_Group_free(&sub);
        /* an empty group on one side: MPI_COMM_NULL everywhere */
        MPI_Comm_create(ic, g == 0 ? MPI_GROUP_EMPTY : lg, &nc);
        CHECK(nc == MPI_COMM_NULL, "create with an empty side gave a communicator");
        MPI_Group_free(&lg);
    }
    /* dup and idup keep both groups; compare sees them congruent */
    {
        int rsum = 0, first = g == 0 ? n0 : 0;
        MPI_Request rq;
        for (i = 0; i < rs; i++)
            rsum += first + i;
        MPI_Comm_dup(ic, &dup);
        MPI_Comm_idup(ic, &idup, &rq);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        check_inter(dup, ls, rs, rsum, "dup", rank, &errs);
        check_inter(idup, ls, rs, rsum, "idup", rank, &errs);
        MPI_Comm_compare(ic, dup, &res);
        CHECK(res == MPI_CONGRUENT, "compare(inter, dup) = %d", res);
        MPI_Comm_compare(ic, ic, &res);
        CHECK(res == MPI_IDENT, "compare(inter, inter) = %d", res);
        MPI_Comm_compare(ic, local, &res);
        CHECK(res == MPI_UNEQUAL, "compare(inter, its local intra) = %d", res);
        MPI_Comm_free(&dup);
        MPI_Comm_free(&idup);
    }
    printf("rank %d: group %d, local rank %d of %d, remote size %d\n", rank, g, lr, ls, rs);
    MPI_Comm_free(&ic);
    MPI_Comm_free(&local);
    return ct_finish(rank, errs);
}
