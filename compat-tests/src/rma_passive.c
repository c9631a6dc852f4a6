/* rma_passive: passive-target RMA and post-start-complete-wait (issue 18), on a window of
 * MPI_Win_allocate, then on one of MPI_Win_create (between processes of one node Toucan puts
 * the first in shared memory and the second on the real MPI's window: both paths):
 * - an exclusive-lock read-modify-write (Get, flush, Put) of a counter on rank 0 by every
 *   rank, several times: no update is lost;
 * - lock_all + Fetch_and_op (SUM) on one counter from every rank: the fetched values are a
 *   permutation of 0..n*K-1 (each element update atomic, also between two subranks of one
 *   process);
 * - concurrent Accumulate (SUM) of a long vector by every rank on rank size-1, under shared
 *   locks;
 * - Compare_and_swap election; flush_local, flush_all, flush_local_all, Win_sync;
 * - Rput/Rget/Raccumulate/Rget_accumulate with MPI_Wait;
 * - a PSCW ring (post to left, start right), and MPI_Win_test until the epoch ends. */
#include "ct.h"

#define K 5
#define LEN 256

/* One pass of every check on a window made by MPI_Win_allocate (create == 0) or by
 * MPI_Win_create over malloc'ed memory (create == 1); returns the errors found. */
static int run(int rank, int size, int create)
{
    int errs = 0;
    long *mem;
    MPI_Win win;
    if (create) {
        mem = malloc(sizeof(long) * (LEN + 8));
        MPI_Win_create(mem, sizeof(long) * (LEN + 8), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    } else {
        MPI_Win_allocate(sizeof(long) * (LEN + 8), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
    }
    for (int i = 0; i < LEN + 8; i++)
        mem[i] = 0;
    MPI_Barrier(MPI_COMM_WORLD);

    /* 1. Exclusive lock: read-modify-write of mem[0] at rank 0. */
    for (int k = 0; k < K; k++) {
        long v = -1;
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
        MPI_Get(&v, 1, MPI_LONG, 0, 0, 1, MPI_LONG, win);
        MPI_Win_flush(0, win);
        v += 1;
        MPI_Put(&v, 1, MPI_LONG, 0, 0, 1, MPI_LONG, win);
        MPI_Win_unlock(0, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        long v;
        MPI_Get(&v, 1, MPI_LONG, 0, 0, 1, MPI_LONG, win);
        MPI_Win_unlock(0, win);
        CHECK(v == (long)K * size, "exclusive counter %ld want %d", v, K * size);
    }

    /* 2. lock_all + Fetch_and_op on mem[1] of rank 0. */
    long fetched[K];
    long one = 1;
    MPI_Win_lock_all(0, win);
    for (int k = 0; k < K; k++) {
        MPI_Fetch_and_op(&one, &fetched[k], MPI_LONG, 0, 1, MPI_SUM, win);
        MPI_Win_flush(0, win);
    }
    MPI_Win_unlock_all(win);
    long *all = malloc(sizeof(long) * K * size);
    MPI_Gather(fetched, K, MPI_LONG, all, K, MPI_LONG, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        char *seen = calloc(K * size, 1);
        for (int i = 0; i < K * size; i++) {
            CHECK(all[i] >= 0 && all[i] < K * size && !seen[all[i]], "fetch_and_op value %ld twice or out of range", all[i]);
            if (all[i] >= 0 && all[i] < K * size)
                seen[all[i]] = 1;
        }
        free(seen);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* 3. Concurrent accumulates of a vector under shared locks on rank size-1. */
    long vec[LEN];
    for (int i = 0; i < LEN; i++)
        vec[i] = i + rank;
    int last = size - 1;
    for (int k = 0; k < 2; k++) {
        MPI_Win_lock(MPI_LOCK_SHARED, last, 0, win);
        MPI_Accumulate(vec, LEN, MPI_LONG, last, 8, LEN, MPI_LONG, MPI_SUM, win);
        MPI_Win_flush_local(last, win);
        MPI_Win_unlock(last, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == last) {
        MPI_Win_lock(MPI_LOCK_SHARED, last, 0, win);
        MPI_Win_sync(win);
        long ranksum = (long)size * (size - 1) / 2;
        for (int i = 0; i < LEN; i++)
            CHECK(mem[8 + i] == 2 * ((long)i * size + ranksum), "acc vec[%d] = %ld", i, mem[8 + i]);
        MPI_Win_unlock(last, win);
    }

    /* 4. Compare_and_swap election on mem[2] of rank 0 (0 = nobody). */
    long me = rank + 1, zero = 0, prev = -1;
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
    MPI_Compare_and_swap(&me, &zero, &prev, MPI_LONG, 0, 2, win);
    MPI_Win_flush_all(win);
    MPI_Win_unlock(0, win);
    int won = prev == 0, winners = 0;
    MPI_Allreduce(&won, &winners, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(winners == 1, "CAS winners %d", winners);

    /* 5. Request-based operations on the right neighbour's mem[3..7]. */
    int right = (rank + 1) % size, left = (rank - 1 + size) % size;
    MPI_Request rq[2];
    long pv[2] = {rank * 10L, rank * 10L + 1}, gv[2] = {-1, -1}, acc = 5, racc = -1;
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win);
    MPI_Rput(pv, 2, MPI_LONG, right, 3, 2, MPI_LONG, win, &rq[0]);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    MPI_Rget(gv, 2, MPI_LONG, right, 3, 2, MPI_LONG, win, &rq[1]);
    MPI_Wait(&rq[1], MPI_STATUS_IGNORE);
    CHECK(gv[0] == rank * 10L && gv[1] == rank * 10L + 1, "rput/rget %ld %ld", gv[0], gv[1]);
    MPI_Raccumulate(&acc, 1, MPI_LONG, right, 5, 1, MPI_LONG, MPI_SUM, win, &rq[0]);
    MPI_Rget_accumulate(&acc, 1, MPI_LONG, &racc, 1, MPI_LONG, right, 5, 1, MPI_LONG, MPI_SUM, win, &rq[1]);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    MPI_Wait(&rq[1], MPI_STATUS_IGNORE);
    CHECK(racc == 5, "rget_accumulate fetched %ld", racc);
    MPI_Win_flush_local_all(win);
    MPI_Win_unlock(right, win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
    CHECK(mem[3] == left * 10L && mem[5] == 10, "own mem after requests %ld %ld", mem[3], mem[5]);
    MPI_Win_unlock(rank, win);

    /* 6. PSCW ring: each rank exposes to its left neighbour and accesses its right one. */
    MPI_Group wg, lg, rg;
    MPI_Win_get_group(win, &wg);
    MPI_Group_incl(wg, 1, &left, &lg);
    MPI_Group_incl(wg, 1, &right, &rg);
    for (int round = 0; round < 3; round++) {
        MPI_Win_post(lg, 0, win);
        MPI_Win_start(rg, 0, win);
        long v = 1000L * round + rank;
        MPI_Put(&v, 1, MPI_LONG, right, 6, 1, MPI_LONG, win);
        MPI_Win_complete(win);
        if (round == 1) {
            int flag = 0;
            while (!flag)
                MPI_Win_test(win, &flag);
        } else {
            MPI_Win_wait(win);
        }
        CHECK(mem[6] == 1000L * round + left, "pscw round %d: %ld", round, mem[6]);
    }
    MPI_Group_free(&lg);
    MPI_Group_free(&rg);
    MPI_Group_free(&wg);

    MPI_Win_free(&win);
    if (create)
        free(mem);
    free(all);
    return errs;
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    errs += run(rank, size, 0);
    errs += run(rank, size, 1);
    ct_say(rank, errs ? "FAILED" : "OK");
    MPI_Finalize();
    return errs != 0;
}
