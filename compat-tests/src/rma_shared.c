/* rma_shared: shared-memory and dynamic windows (issue 18).
 * - MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) + MPI_Win_allocate_shared: every rank of the
 *   node writes its own segment with plain stores, then reads every other rank's segment
 *   through MPI_Win_shared_query's pointer (after Win_sync + barrier); segments are
 *   contiguous; MPI_PROC_NULL in shared_query; Put and Fetch_and_op on the shared window;
 *   the create-flavor attribute; a rank with size 0;
 * - MPI_Win_create_dynamic: each rank attaches two buffers, exchanges their addresses
 *   (MPI_Get_address + Allgather), a neighbour puts into one and gets from the other under
 *   lock_all, then detaches; a Win_create window over the same memory as another one. */
#include "ct.h"

int main(int argc, char **argv)
{
    int rank, size, errs = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    MPI_Comm node;
    int nr, ns;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &nr);
    MPI_Comm_size(node, &ns);

    /* 1. Shared window: rank i has i+1 ints (the last rank of the node has none). */
    int mine = nr == ns - 1 ? 0 : nr + 1;
    int *seg;
    MPI_Win sw;
    MPI_Win_allocate_shared(sizeof(int) * mine, sizeof(int), MPI_INFO_NULL, node, &seg, &sw);
    int *flavor, flag;
    MPI_Win_get_attr(sw, MPI_WIN_CREATE_FLAVOR, &flavor, &flag);
    CHECK(flag && *flavor == MPI_WIN_FLAVOR_SHARED, "shared flavor");
    MPI_Win_lock_all(0, sw);
    for (int i = 0; i < mine; i++)
        seg[i] = 1000 * nr + i;
    MPI_Win_sync(sw);
    MPI_Barrier(node);
    MPI_Win_sync(sw);
    int *expect_next = NULL;
    for (int r = 0; r < ns; r++) {
        MPI_Aint sz;
        int du;
        int *p;
        MPI_Win_shared_query(sw, r, &sz, &du, &p);
        int want = r == ns - 1 ? 0 : r + 1;
        CHECK(sz == (MPI_Aint)(sizeof(int) * want) && du == (int)sizeof(int), "query %d: size %ld unit %d", r, (long)sz, du);
        if (expect_next && want > 0)
            CHECK(p == expect_next, "segments not contiguous at rank %d", r);
        for (int i = 0; i < want; i++)
            CHECK(p[i] == 1000 * r + i, "shared read rank %d [%d] = %d", r, i, p[i]);
        if (want > 0)
            expect_next = p + want;
    }
    {
        MPI_Aint sz;
        int du;
        int *p;
        int *p0;
        MPI_Win_shared_query(sw, MPI_PROC_NULL, &sz, &du, &p);
        MPI_Win_shared_query(sw, 0, &sz, &du, &p0);
        CHECK(p == p0, "shared_query(MPI_PROC_NULL) gives the first segment");
    }
    MPI_Barrier(node);
    /* Fetch_and_op by every node rank on rank 0's first int, Put into its own last slot
     * through the window. */
    int one = 1, old = -1;
    MPI_Fetch_and_op(&one, &old, MPI_INT, 0, 0, MPI_SUM, sw);
    MPI_Win_flush(0, sw);
    if (mine > 1) {
        int v = -nr;
        MPI_Put(&v, 1, MPI_INT, nr, mine - 1, 1, MPI_INT, sw);
        MPI_Win_flush(nr, sw);
    }
    MPI_Win_sync(sw);
    MPI_Barrier(node);
    MPI_Win_sync(sw);
    if (nr == 0)
        CHECK(seg[0] == ns, "fetch_and_op total %d", seg[0]);
    if (mine > 1)
        CHECK(seg[mine - 1] == -nr, "own put %d", seg[mine - 1]);
    MPI_Win_unlock_all(sw);
    MPI_Win_free(&sw);

    /* 2. Dynamic window. */
    MPI_Win dw;
    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &dw);
    int *in = calloc(4, sizeof(int)), *out = malloc(4 * sizeof(int));
    for (int i = 0; i < 4; i++)
        out[i] = 10 * rank + i;
    MPI_Win_attach(dw, in, 4 * sizeof(int));
    MPI_Win_attach(dw, out, 4 * sizeof(int));
    MPI_Aint addrs[2], *all = malloc(sizeof(MPI_Aint) * 2 * size);
    MPI_Get_address(in, &addrs[0]);
    MPI_Get_address(out, &addrs[1]);
    MPI_Allgather(addrs, 2, MPI_AINT, all, 2, MPI_AINT, MPI_COMM_WORLD);
    int right = (rank + 1) % size, left = (rank - 1 + size) % size;
    int mark[4] = {rank, rank, rank, rank}, got[4] = {-1, -1, -1, -1};
    MPI_Win_get_attr(dw, MPI_WIN_CREATE_FLAVOR, &flavor, &flag);
    CHECK(flag && *flavor == MPI_WIN_FLAVOR_DYNAMIC, "dynamic flavor");
    MPI_Win_lock_all(0, dw);
    MPI_Put(mark, 4, MPI_INT, right, all[2 * right], 4, MPI_INT, dw);
    MPI_Get(got, 4, MPI_INT, right, all[2 * right + 1], 4, MPI_INT, dw);
    MPI_Win_flush_all(dw);
    MPI_Win_unlock_all(dw);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < 4; i++) {
        CHECK(got[i] == 10 * right + i, "dynamic get %d", got[i]);
        CHECK(in[i] == left, "dynamic put %d", in[i]);
    }
    MPI_Win_detach(dw, in);
    MPI_Win_detach(dw, out);
    MPI_Win_free(&dw);

    /* 3. Two windows over the same memory. */
    MPI_Win a, b;
    MPI_Win_create(out, 4 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &a);
    MPI_Win_create(out, 4 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &b);
    MPI_Win_fence(0, a);
    MPI_Put(&rank, 1, MPI_INT, right, 0, 1, MPI_INT, a);
    MPI_Win_fence(0, a);
    MPI_Win_fence(0, b);
    int r0 = -1;
    MPI_Get(&r0, 1, MPI_INT, right, 0, 1, MPI_INT, b);
    MPI_Win_fence(0, b);
    CHECK(out[0] == left && r0 == rank, "two windows: %d %d", out[0], r0);
    MPI_Win_free(&a);
    MPI_Win_free(&b);

    free(in);
    free(out);
    free(all);
    MPI_Comm_free(&node);
    ct_say(rank, errs ? "FAILED" : "OK");
    MPI_Finalize();
    return errs != 0;
}
