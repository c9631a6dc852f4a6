/* Persistent collectives (MPI 4.0): every *_init collective on world, started several times
 * with new data each time (MPI_Start and MPI_Startall), completed by MPI_Wait, MPI_Waitall
 * and MPI_Test loops, interleaved with ordinary collectives, then freed with
 * MPI_Request_free; a persistent neighbourhood collective on a periodic ring; and a
 * persistent Allreduce on an inter-communicator.
 *
 * MPICH 4.0.2 cannot run this (its MPI_Gather_init delivers garbage, a restarted
 * MPI_Allgather_init keeps the previous round's blocks, a restarted MPI_Scatter_init fails
 * with "Invalid communicator"), so coll_persistent.expect checks the program's own verdict
 * instead of comparing with MPICH. */
#include "ct.h"

#define ROUNDS 3

static void wait_test(MPI_Request *rq)
{
    int flag = 0;
    while (!flag)
        MPI_Test(rq, &flag, MPI_STATUS_IGNORE);
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, i, j, it;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm w = MPI_COMM_WORLD;
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Request rq[13];
    int bc[4], red, ared, sval, sv2[2], *gt0 = ct_malloc(sizeof(int) * 2 * size), *gat = ct_malloc(sizeof(int) * 2 * size), *ag = ct_malloc(sizeof(int) * 2 * size);
    int *agc = ct_malloc(sizeof(int) * size), *agd = ct_malloc(sizeof(int) * size);
    int *a2s = ct_malloc(sizeof(int) * size), *a2r = ct_malloc(sizeof(int) * size);
    int *rss = ct_malloc(sizeof(int) * size), rsr, scn, exs = -1, sct, *scs = ct_malloc(sizeof(int) * size);
    int *wsc = ct_malloc(sizeof(int) * size), *wsd = ct_malloc(sizeof(int) * size);
    MPI_Datatype *wt = ct_malloc(sizeof(MPI_Datatype) * size);
    int *ws = ct_malloc(sizeof(int) * size), *wr = ct_malloc(sizeof(int) * size);
    for (j = 0; j < size; j++) {
        agc[j] = j % 2 + 1;
        agd[j] = 2 * j;
        wsc[j] = 1;
        wsd[j] = (int)(sizeof(int) * j);
        wt[j] = MPI_INT;
    }
    /* The arguments are bound at initialisation; each round rewrites the buffers' contents. */
    MPI_Barrier_init(w, info, &rq[0]);
    MPI_Bcast_init(bc, 4, MPI_INT, size - 1, w, info, &rq[1]);
    MPI_Reduce_init(&sval, &red, 1, MPI_INT, MPI_SUM, 0, w, MPI_INFO_NULL, &rq[2]);
    MPI_Allreduce_init(&sval, &ared, 1, MPI_INT, MPI_MAX, w, MPI_INFO_NULL, &rq[3]);
    MPI_Allgather_init(bc, 2, MPI_INT, gat, 2, MPI_INT, w, MPI_INFO_NULL, &rq[4]);
    MPI_Allgatherv_init(sv2, rank % 2 + 1, MPI_INT, ag, agc, agd, MPI_INT, w, MPI_INFO_NULL, &rq[5]);
    MPI_Alltoall_init(a2s, 1, MPI_INT, a2r, 1, MPI_INT, w, MPI_INFO_NULL, &rq[6]);
    MPI_Reduce_scatter_block_init(rss, &rsr, 1, MPI_INT, MPI_SUM, w, MPI_INFO_NULL, &rq[7]);
    MPI_Scan_init(&sval, &scn, 1, MPI_INT, MPI_SUM, w, MPI_INFO_NULL, &rq[8]);
    MPI_Exscan_init(&sval, &exs, 1, MPI_INT, MPI_SUM, w, MPI_INFO_NULL, &rq[9]);
    MPI_Scatter_init(scs, 1, MPI_INT, &sct, 1, MPI_INT, 0, w, MPI_INFO_NULL, &rq[10]);
    MPI_Alltoallw_init(ws, wsc, wsd, wt, wr, wsc, wsd, wt, w, MPI_INFO_NULL, &rq[11]);
    MPI_Gather_init(sv2, 2, MPI_INT, gt0, 2, MPI_INT, 0, w, MPI_INFO_NULL, &rq[12]);
    for (it = 0; it < ROUNDS; it++) {
        int k = 10 * it;
        for (j = 0; j < 4; j++)
            bc[j] = rank == size - 1 ? k + j : -1;
        sval = rank + k;
        sv2[0] = sv2[1] = sval;
        for (j = 0; j < size; j++) {
            a2s[j] = 100 * rank + j + k;
            rss[j] = rank * j + k;
            scs[j] = rank == 0 ? 7 * j + k : -1;
            ws[j] = -(100 * rank + j + k);
        }
        /* one by one, in the same order everywhere */
        MPI_Start(&rq[0]);
        MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
        MPI_Start(&rq[1]);
        wait_test(&rq[1]);
        for (j = 0; j < 4; j++)
            CHECK(bc[j] == k + j, "round %d: bcast [%d] = %d", it, j, bc[j]);
        /* an ordinary collective between persistent ones */
        {
            int one = 1, n = 0;
            MPI_Allreduce(&one, &n, 1, MPI_INT, MPI_SUM, w);
            CHECK(n == size, "round %d: allreduce between persistent ones = %d", it, n);
        }
        /* the rest at once */
        MPI_Startall(11, &rq[2]);
        MPI_Waitall(11, &rq[2], MPI_STATUSES_IGNORE);
        if (rank == 0) {
            CHECK(red == size * (size - 1) / 2 + size * k, "round %d: reduce = %d", it, red);
            for (j = 0; j < size; j++)
                CHECK(gt0[2 * j] == j + k && gt0[2 * j + 1] == j + k, "round %d: gather from %d = %d %d", it, j, gt0[2 * j],
                      gt0[2 * j + 1]);
        }
        for (j = 0; j < size; j++)
            CHECK(gat[2 * j] == k && gat[2 * j + 1] == k + 1, "round %d: allgather from %d = %d %d", it, j, gat[2 * j],
                  gat[2 * j + 1]);
        CHECK(ared == size - 1 + k, "round %d: allreduce max = %d", it, ared);
        for (j = 0; j < size; j++) {
            CHECK(ag[2 * j] == j + k, "round %d: allgatherv from %d = %d", it, j, ag[2 * j]);
            CHECK(a2r[j] == 100 * j + rank + k, "round %d: alltoall from %d = %d", it, j, a2r[j]);
            CHECK(wr[j] == -(100 * j + rank + k), "round %d: alltoallw from %d = %d", it, j, wr[j]);
        }
        CHECK(rsr == size * (size - 1) / 2 * rank + size * k, "round %d: reduce_scatter_block = %d", it, rsr);
        CHECK(scn == rank * (rank + 1) / 2 + (rank + 1) * k, "round %d: scan = %d", it, scn);
        if (rank > 0)
            CHECK(exs == rank * (rank - 1) / 2 + rank * k, "round %d: exscan = %d", it, exs);
        CHECK(sct == 7 * rank + k, "round %d: scatter = %d", it, sct);
    }
    for (i = 0; i < 13; i++)
        MPI_Request_free(&rq[i]);
    CHECK(rq[0] == MPI_REQUEST_NULL, "Request_free left a handle");

    /* neighbourhood: a periodic ring, left and right neighbours */
    {
        MPI_Comm ring;
        int dims = size, periods = 1, sb[2], rb[2];
        MPI_Request nr;
        MPI_Cart_create(w, 1, &dims, &periods, 0, &ring);
        MPI_Neighbor_alltoall_init(sb, 1, MPI_INT, rb, 1, MPI_INT, ring, MPI_INFO_NULL, &nr);
        for (it = 0; it < ROUNDS; it++) {
            int l = (rank + size - 1) % size, r = (rank + 1) % size;
            sb[0] = 1000 * it + rank;     /* to the left neighbour */
            sb[1] = 1000 * it + rank + 500; /* to the right one */
            rb[0] = rb[1] = -1;
            MPI_Start(&nr);
            MPI_Wait(&nr, MPI_STATUS_IGNORE);
            CHECK(rb[0] == 1000 * it + l + 500 && rb[1] == 1000 * it + r, "round %d: ring got %d %d", it, rb[0], rb[1]);
        }
        MPI_Request_free(&nr);
        MPI_Comm_free(&ring);
    }

    /* inter-communicator: even and odd ranks */
    if (size >= 2) {
        MPI_Comm local, ic;
        MPI_Request ir;
        int g = rank % 2, v, out = -1, rs, want;
        MPI_Comm_split(w, g, rank, &local);
        MPI_Intercomm_create(local, 0, w, 1 - g, 3, &ic);
        MPI_Comm_remote_size(ic, &rs);
        MPI_Allreduce_init(&v, &out, 1, MPI_INT, MPI_SUM, ic, MPI_INFO_NULL, &ir);
        for (it = 0; it < ROUNDS; it++) {
            v = rank + it;
            MPI_Start(&ir);
            MPI_Wait(&ir, MPI_STATUS_IGNORE);
            want = 0;
            for (j = 1 - g; j < size; j += 2)
                want += j + it;
            CHECK(out == want, "round %d: inter allreduce = %d, want %d (remote size %d)", it, out, want, rs);
        }
        MPI_Request_free(&ir);
        MPI_Comm_free(&ic);
        MPI_Comm_free(&local);
    }
    MPI_Info_free(&info);
    free(gat);
    free(gt0);
    free(ag);
    free(agc);
    free(agd);
    free(a2s);
    free(a2r);
    free(rss);
    free(scs);
    free(wsc);
    free(wsd);
    free(wt);
    free(ws);
    free(wr);
    return ct_finish(rank, errs);
}
