/* Inter-communicators: even and odd ranks form two groups joined by MPI_Intercomm_create
 * over MPI_COMM_WORLD; point-to-point across them, remote size/group, MPI_Comm_test_inter,
 * MPI_Comm_dup of the inter-communicator, and MPI_Intercomm_merge (both orders). */
#include <mpi.h>
#include <stdio.h>
#include "ct.h"

int main(int argc, char **argv)
{
    int rank, size, errs = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        printf("rank %d: needs 2 ranks, skipped\n", rank);
        return ct_finish(rank, errs);
    }
    int color = rank % 2, lrank, lsize, rsize, flag, i;
    MPI_Comm local, inter, inter2, merged;
    MPI_Comm_split(MPI_COMM_WORLD, color, rank, &local);
    MPI_Comm_rank(local, &lrank);
    MPI_Comm_size(local, &lsize);
    /* leaders: world rank 0 (evens) and 1 (odds) */
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, color == 0 ? 1 : 0, 42, &inter);
    MPI_Comm_test_inter(inter, &flag);
    CHECK(flag, "not an inter-communicator");
    MPI_Comm_remote_size(inter, &rsize);
    CHECK(rsize == (color == 0 ? size - (size + 1) / 2 : (size + 1) / 2), "remote size %d", rsize);
    {
        MPI_Group rg, wg;
        int r0 = 0, w0 = -1;
        MPI_Comm_remote_group(inter, &rg);
        MPI_Comm_group(MPI_COMM_WORLD, &wg);
        MPI_Group_translate_ranks(rg, 1, &r0, wg, &w0);
        CHECK(w0 == (color == 0 ? 1 : 0), "remote rank 0 is world rank %d", w0);
        MPI_Group_free(&rg);
        MPI_Group_free(&wg);
    }
    /* every local rank i exchanges with remote rank i (when it exists) */
    if (lrank < rsize) {
        int out = 1000 * color + lrank, in = -1;
        MPI_Status st;
        MPI_Sendrecv(&out, 1, MPI_INT, lrank, 5, &in, 1, MPI_INT, lrank, 5, inter, &st);
        CHECK(in == 1000 * (1 - color) + lrank && st.MPI_SOURCE == lrank, "got %d from %d", in, st.MPI_SOURCE);
    }
    /* rank 0 of each group hears from every remote rank, with wildcards */
    MPI_Request sreq;
    MPI_Isend(&lrank, 1, MPI_INT, 0, 6, inter, &sreq);
    if (lrank == 0) {
        int sum = 0, v;
        for (i = 0; i < rsize; i++) {
            MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 6, inter, MPI_STATUS_IGNORE);
            sum += v;
        }
        CHECK(sum == rsize * (rsize - 1) / 2, "sum from remote group %d", sum);
    }
    MPI_Wait(&sreq, MPI_STATUS_IGNORE);
    MPI_Comm_dup(inter, &inter2);
    MPI_Comm_test_inter(inter2, &flag);
    CHECK(flag, "dup of an inter-communicator is not inter");
    if (lrank == 0) {
        int v = color, w = -1;
        MPI_Sendrecv(&v, 1, MPI_INT, 0, 7, &w, 1, MPI_INT, 0, 7, inter2, MPI_STATUS_IGNORE);
        CHECK(w == 1 - color, "dup exchange got %d", w);
    }
    /* merge with the odd group first (high = even), then the other way round */
    for (i = 0; i < 2; i++) {
        int high = i == 0 ? (color == 0) : (color == 1), mrank, msize, sum = 0, one = 1;
        MPI_Intercomm_merge(inter, high, &merged);
        MPI_Comm_rank(merged, &mrank);
        MPI_Comm_size(merged, &msize);
        int want = high ? (size - lsize) + lrank : lrank;
        CHECK(msize == size && mrank == want, "merge %d: rank %d of %d, want %d", i, mrank, msize, want);
        MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, merged);
        CHECK(sum == size, "allreduce on merged %d", sum);
        MPI_Comm_free(&merged);
    }
    printf("rank %d: group %d local rank %d of %d, remote size %d\n", rank, color, lrank, lsize, rsize);
    MPI_Comm_free(&inter2);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&local);
    return ct_finish(rank, errs);
}
