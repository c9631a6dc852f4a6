/* The large-count (_c) bindings of the collectives (MPI 4.0): MPI_Count counts and MPI_Aint
 * displacements, with ordinary sizes. Bcast, Reduce, Allreduce, Gatherv, Scatterv,
 * Allgatherv, Alltoallv, Alltoallw, Reduce_scatter(_block), Scan, Exscan, nonblocking
 * Ibcast_c/Iallreduce_c/Ialltoall_c, Neighbor_allgather_c on a ring, Reduce_local_c, and a
 * user operation made by MPI_Op_create_c (its length argument is an MPI_Count). */
#include "ct.h"

/* Composition of affine maps x -> m*x + c, stored as (m, c) int pairs: inout = in o inout.
 * Associative but not commutative, so the result shows the rank order. */
static void compose(void *in, void *inout, MPI_Count *len, MPI_Datatype *dt)
{
    MPI_Count i;
    int *a = in, *b = inout;
    (void)dt;
    for (i = 0; i + 1 < *len; i += 2) {
        b[i + 1] = a[i] * b[i + 1] + a[i + 1];
        b[i] = a[i] * b[i];
    }
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, i, j;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm w = MPI_COMM_WORLD;
    MPI_Count *cnt = ct_malloc(sizeof(MPI_Count) * size), *cnt2 = ct_malloc(sizeof(MPI_Count) * size);
    MPI_Aint *dis = ct_malloc(sizeof(MPI_Aint) * size), *dis2 = ct_malloc(sizeof(MPI_Aint) * size);
    MPI_Datatype *ty = ct_malloc(sizeof(MPI_Datatype) * size);
    int *a = ct_malloc(sizeof(int) * 4 * size), *b = ct_malloc(sizeof(int) * 4 * size + sizeof(int));
    long long v = rank + 1, sum = 0;

    /* Bcast_c of 3 ints from the last rank */
    for (i = 0; i < 3; i++)
        a[i] = rank == size - 1 ? 40 + i : -1;
    MPI_Bcast_c(a, 3, MPI_INT, size - 1, w);
    CHECK(a[0] == 40 && a[1] == 41 && a[2] == 42, "bcast_c got %d %d %d", a[0], a[1], a[2]);
    /* Reduce_c / Allreduce_c */
    MPI_Reduce_c(&v, &sum, 1, MPI_LONG_LONG, MPI_SUM, 0, w);
    if (rank == 0)
        CHECK(sum == (long long)size * (size + 1) / 2, "reduce_c = %lld", sum);
    sum = 0;
    MPI_Allreduce_c(&v, &sum, 1, MPI_LONG_LONG, MPI_SUM, w);
    CHECK(sum == (long long)size * (size + 1) / 2, "allreduce_c = %lld", sum);
    /* Gatherv_c to rank 0: rank j gives j%3 ints, stored with a gap of one */
    {
        MPI_Aint off = 0;
        for (j = 0; j < size; j++) {
            cnt[j] = j % 3;
            dis[j] = off + 1;
            off += j % 3 + 1;
        }
        for (i = 0; i < rank % 3; i++)
            a[i] = 10 * rank + i;
        for (i = 0; i < 4 * size; i++)
            b[i] = -1;
        MPI_Gatherv_c(a, rank % 3, MPI_INT, b, cnt, dis, MPI_INT, 0, w);
        if (rank == 0)
            for (j = 0; j < size; j++) {
                CHECK(b[dis[j] - 1] == -1, "gatherv_c wrote into the gap before %d", j);
                for (i = 0; i < cnt[j]; i++)
                    CHECK(b[dis[j] + i] == 10 * j + i, "gatherv_c %d[%d] = %d", j, i, b[dis[j] + i]);
            }
        /* Scatterv_c back the other way: the same blocks go home */
        for (i = 0; i < 3; i++)
            a[i] = -1;
        MPI_Scatterv_c(b, cnt, dis, MPI_INT, a, rank % 3, MPI_INT, 0, w);
        for (i = 0; i < rank % 3; i++)
            CHECK(a[i] == 10 * rank + i, "scatterv_c [%d] = %d", i, a[i]);
        /* Allgatherv_c: the same layout everywhere */
        for (i = 0; i < 4 * size; i++)
            b[i] = -1;
        MPI_Allgatherv_c(a, rank % 3, MPI_INT, b, cnt, dis, MPI_INT, w);
        for (j = 0; j < size; j++)
            for (i = 0; i < cnt[j]; i++)
                CHECK(b[dis[j] + i] == 10 * j + i, "allgatherv_c %d[%d] = %d", j, i, b[dis[j] + i]);
    }
    /* Alltoallv_c: two ints to each peer, received in reverse order */
    for (j = 0; j < size; j++) {
        cnt[j] = 2;
        dis[j] = 2 * j;
        dis2[j] = 2 * (size - 1 - j);
        a[2 * j] = 100 * rank + j;
        a[2 * j + 1] = -(100 * rank + j);
    }
    MPI_Alltoallv_c(a, cnt, dis, MPI_INT, b, cnt, dis2, MPI_INT, w);
    for (j = 0; j < size; j++)
        CHECK(b[dis2[j]] == 100 * j + rank && b[dis2[j] + 1] == -(100 * j + rank), "alltoallv_c from %d: %d %d", j,
              b[dis2[j]], b[dis2[j] + 1]);
    /* Alltoallw_c: byte displacements, one int each */
    for (j = 0; j < size; j++) {
        cnt2[j] = 1;
        dis[j] = (MPI_Aint)sizeof(int) * j;
        ty[j] = MPI_INT;
        a[j] = 1000 + 10 * rank + j;
        b[j] = -1;
    }
    MPI_Alltoallw_c(a, cnt2, dis, ty, b, cnt2, dis, ty, w);
    for (j = 0; j < size; j++)
        CHECK(b[j] == 1000 + 10 * j + rank, "alltoallw_c from %d: %d", j, b[j]);
    /* Reduce_scatter_c (rank j gets j%2+1 elements) and Reduce_scatter_block_c */
    {
        int total = 0, first = 0, got[2] = {-1, -1};
        for (j = 0; j < size; j++) {
            cnt[j] = j % 2 + 1;
            if (j < rank)
                first += j % 2 + 1;
            total += j % 2 + 1;
        }
        for (i = 0; i < total; i++)
            a[i] = rank + i;
        MPI_Reduce_scatter_c(a, got, cnt, MPI_INT, MPI_SUM, w);
        for (i = 0; i < rank % 2 + 1; i++)
            CHECK(got[i] == size * (size - 1) / 2 + size * (first + i), "reduce_scatter_c [%d] = %d", i, got[i]);
        MPI_Reduce_scatter_block_c(a, got, 1, MPI_INT, MPI_MAX, w);
        CHECK(got[0] == size - 1 + rank, "reduce_scatter_block_c = %d", got[0]);
    }
    /* Scan_c / Exscan_c */
    {
        int x = rank + 1, s = -1, e = -1;
        MPI_Scan_c(&x, &s, 1, MPI_INT, MPI_SUM, w);
        MPI_Exscan_c(&x, &e, 1, MPI_INT, MPI_SUM, w);
        CHECK(s == (rank + 1) * (rank + 2) / 2, "scan_c = %d", s);
        if (rank > 0)
            CHECK(e == rank * (rank + 1) / 2, "exscan_c = %d", e);
    }
    /* nonblocking _c forms */
    {
        MPI_Request rq[3];
        int bb = rank == 0 ? 77 : -1, x = rank, mx = -1;
        for (j = 0; j < size; j++)
            a[j] = 10 * rank + j;
        MPI_Ibcast_c(&bb, 1, MPI_INT, 0, w, &rq[0]);
        MPI_Iallreduce_c(&x, &mx, 1, MPI_INT, MPI_MAX, w, &rq[1]);
        MPI_Ialltoall_c(a, 1, MPI_INT, b, 1, MPI_INT, w, &rq[2]);
        MPI_Waitall(3, rq, MPI_STATUSES_IGNORE);
        CHECK(bb == 77 && mx == size - 1, "ibcast_c %d, iallreduce_c %d", bb, mx);
        for (j = 0; j < size; j++)
            CHECK(b[j] == 10 * j + rank, "ialltoall_c from %d: %d", j, b[j]);
    }
    /* Neighbor_allgather_c on a periodic ring */
    {
        MPI_Comm ring;
        int dims = size, periods = 1, got[2] = {-1, -1};
        MPI_Cart_create(w, 1, &dims, &periods, 0, &ring);
        MPI_Neighbor_allgather_c(&rank, 1, MPI_INT, got, 1, MPI_INT, ring);
        CHECK(got[0] == (rank + size - 1) % size && got[1] == (rank + 1) % size, "neighbor_allgather_c %d %d", got[0],
              got[1]);
        MPI_Comm_free(&ring);
    }
    /* Reduce_local_c */
    {
        int in[3] = {1, 2, 3}, io[3] = {10, 20, 30};
        MPI_Reduce_local_c(in, io, 3, MPI_INT, MPI_PROD);
        CHECK(io[0] == 10 && io[1] == 40 && io[2] == 90, "reduce_local_c %d %d %d", io[0], io[1], io[2]);
    }
    /* MPI_Op_create_c: f_0 o f_1 o ... o f_(n-1) with f_r(x) = 2x + r */
    {
        MPI_Op op;
        int x[2] = {2, rank}, r[2] = {-1, -1}, m = 1, c = 0;
        MPI_Op_create_c(compose, 0, &op);
        MPI_Allreduce_c(x, r, 2, MPI_INT, op, w);
        for (j = 0; j < size; j++) {
            c = m * j + c;
            m = 2 * m;
        }
        CHECK(r[0] == m && r[1] == c, "Op_create_c allreduce (%d, %d), want (%d, %d)", r[0], r[1], m, c);
        MPI_Op_free(&op);
    }
    free(cnt);
    free(cnt2);
    free(dis);
    free(dis2);
    free(ty);
    free(a);
    free(b);
    return ct_finish(rank, errs);
}
