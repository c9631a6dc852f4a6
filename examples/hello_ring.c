/*
 * hello_ring: a small MPI program whose output does not depend on the MPI library, the
 * number of processes per node or the timing, so runs under plain MPICH and under Toucan-MPI
 * can be compared byte for byte (`make demo`).
 *
 *   1. every rank learns its rank and the world size;
 *   2. a token travels once around a ring (MPI_Send/MPI_Recv), each rank adding its rank;
 *   3. MPI_Allreduce sums rank+1 over all ranks;
 *   4. rank 0 gathers one record from every other rank with MPI_Recv(MPI_ANY_SOURCE) and
 *      prints everything in rank order.
 *
 * Only rank 0 prints, and only after MPI_Init. Exit status 0 when every check passed.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define TAG_RING 17
#define TAG_GATHER 42

struct record {
    int rank;      /* sender's rank, as it sees it */
    int size;      /* world size, as the sender sees it */
    int token;     /* token value the sender received in the ring */
    int from;      /* source rank reported by the sender's ring MPI_Recv status */
    long long sum; /* the sender's MPI_Allreduce result */
};

int main(int argc, char **argv)
{
    int rank, size, failures = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* 2. ring: rank 0 starts with 0; each rank adds its own rank and passes it on. */
    struct record me = {rank, size, 0, -1, 0};
    if (size > 1) {
        int next = (rank + 1) % size, prev = (rank + size - 1) % size;
        MPI_Status st;
        if (rank == 0) {
            int token = 0;
            MPI_Send(&token, 1, MPI_INT, next, TAG_RING, MPI_COMM_WORLD);
            MPI_Recv(&me.token, 1, MPI_INT, prev, TAG_RING, MPI_COMM_WORLD, &st);
        } else {
            MPI_Recv(&me.token, 1, MPI_INT, prev, TAG_RING, MPI_COMM_WORLD, &st);
            int token = me.token + rank;
            MPI_Send(&token, 1, MPI_INT, next, TAG_RING, MPI_COMM_WORLD);
        }
        me.from = st.MPI_SOURCE;
    }

    /* 3. allreduce of rank+1: n(n+1)/2 everywhere. */
    long long mine = rank + 1;
    MPI_Allreduce(&mine, &me.sum, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);

    /* 4. gather at rank 0 with MPI_ANY_SOURCE, in whatever order the messages arrive. */
    if (rank != 0) {
        MPI_Send(&me, (int)sizeof me, MPI_BYTE, 0, TAG_GATHER, MPI_COMM_WORLD);
    } else {
        struct record *all = calloc((size_t)size, sizeof *all);
        int *seen = calloc((size_t)size, sizeof *seen);
        if (!all || !seen) {
            fprintf(stderr, "hello_ring: out of memory\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        all[0] = me;
        seen[0] = 1;
        int received = 0;
        for (int i = 1; i < size; i++) {
            struct record r;
            MPI_Status st;
            int count;
            MPI_Recv(&r, (int)sizeof r, MPI_BYTE, MPI_ANY_SOURCE, TAG_GATHER, MPI_COMM_WORLD,
                     &st);
            MPI_Get_count(&st, MPI_BYTE, &count);
            int src = st.MPI_SOURCE;
            if (count != (int)sizeof r || src < 1 || src >= size || seen[src] ||
                st.MPI_TAG != TAG_GATHER || r.rank != src) {
                printf("gather: bad message %d: source %d tag %d count %d record.rank %d\n", i,
                       src, st.MPI_TAG, count, r.rank);
                failures++;
                continue;
            }
            seen[src] = 1;
            all[src] = r;
            received++;
        }

        long long want_sum = (long long)size * (size + 1) / 2;
        printf("hello_ring: %d ranks\n", size);
        for (int r = 0; r < size; r++) {
            /* rank r received the sum of ranks 0..r-1 (rank 0 receives the full sum) */
            int want_token = size == 1 ? 0 : (r == 0 ? size * (size - 1) / 2 : r * (r - 1) / 2);
            int want_from = size == 1 ? -1 : (r + size - 1) % size;
            int ok = seen[r] && all[r].rank == r && all[r].size == size &&
                     all[r].token == want_token && all[r].from == want_from &&
                     all[r].sum == want_sum;
            if (!seen[r]) {
                printf("rank %d of %d: no message\n", r, size);
            } else {
                printf("rank %d of %d: ring token %d from rank %d, allreduce sum %lld %s\n",
                       all[r].rank, all[r].size, all[r].token, all[r].from, all[r].sum,
                       ok ? "ok" : "WRONG");
            }
            failures += !ok;
        }
        printf("ring: token went around %d ranks and came back as %d (expected %d)\n", size,
               me.token, size * (size - 1) / 2);
        printf("allreduce: sum of rank+1 = %lld (expected %lld)\n", me.sum, want_sum);
        printf("gather: %d of %d records received with MPI_ANY_SOURCE\n", received, size - 1);
        printf("hello_ring: %s\n", failures ? "FAILED" : "PASSED");
        fflush(stdout);
        free(all);
        free(seen);
    }

    /* everyone learns the verdict so the exit status is the same on every rank */
    MPI_Bcast(&failures, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return failures ? 1 : 0;
}
