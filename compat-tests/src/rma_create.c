/* rma_create: windows made by MPI_Win_create between processes (issue 18, rma4: Toucan gives
 * them real MPI_Win_create windows of their own, one per run of contiguous member memory of
 * a process, or the process-wide dynamic window when the window leaves some of a process's
 * subranks out).
 * - tiny windows (one int, two ints) over malloc'ed blocks, in a loop of creations and frees:
 *   Accumulate (SUM) from every rank with fences, Fetch_and_op, Compare_and_swap, Put/Get;
 * - one window over a block each rank carves from one allocation next to a second window's
 *   block (two windows over adjacent memory, both alive);
 * - a window on the communicator of even ranks only (at V > 1 it leaves subranks of a process
 *   out) and one on a duplicate of MPI_COMM_WORLD, alive at the same time;
 * - 40 windows alive at once, each written by a ring of puts under lock_all, then freed in
 *   reverse order;
 * - (rma5) an MPI_Win_allocate window whose members do not share memory (real windows of its
 *   own, as for MPI_Win_create). */
#include "ct.h"

#define NWIN 40

/* Every rank adds rank+1 (+ i*count) into rank 0's window of `count` ints with fences. */
static void tiny_acc(int rank, int size, int count, int *errp)
{
    int *buf = malloc(count * sizeof(int)), *src = malloc(count * sizeof(int));
    for (int i = 0; i < count; i++) {
        buf[i] = 0;
        src[i] = rank + 1 + i * count;
    }
    MPI_Win win;
    MPI_Win_create(buf, count * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_fence(0, win);
    MPI_Accumulate(src, count, MPI_INT, 0, 0, count, MPI_INT, MPI_SUM, win);
    MPI_Win_fence(0, win);
    if (rank == 0)
        for (int i = 0; i < count; i++) {
            int want = size * (size + 1) / 2 + i * count * size;
            CHECKP(buf[i] == want, "tiny accumulate count %d: buf[%d] = %d, want %d", count, i, buf[i], want);
        }
    /* Fetch_and_op on rank 0's first int, one at a time by rank order (the fetched values
     * are then known), and a compare-and-swap chain. */
    MPI_Win_fence(0, win);
    if (rank == 0)
        buf[0] = 0;
    MPI_Win_fence(0, win);
    for (int r = 0; r < size; r++) {
        if (rank == r) {
            int one = 1, old = -1;
            MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
            MPI_Fetch_and_op(&one, &old, MPI_INT, 0, 0, MPI_SUM, win);
            MPI_Win_unlock(0, win);
            CHECKP(old == r, "fetch_and_op count %d: fetched %d, want %d", count, old, r);
            int cmp = r + 1, nv = 100 + r, res = -1;
            MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
            MPI_Compare_and_swap(&nv, &cmp, &res, MPI_INT, 0, 0, win);
            MPI_Win_unlock(0, win);
            CHECKP(res == r + 1, "compare_and_swap count %d: found %d, want %d", count, res, r + 1);
            /* Put it back for the next rank's fetch. */
            int back = r + 1;
            MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
            MPI_Put(&back, 1, MPI_INT, 0, 0, 1, MPI_INT, win);
            MPI_Win_unlock(0, win);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    int got = -1;
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
    MPI_Get(&got, 1, MPI_INT, 0, 0, 1, MPI_INT, win);
    MPI_Win_unlock(0, win);
    CHECKP(got == size, "get after the chain count %d: %d, want %d", count, got, size);
    MPI_Win_free(&win);
    free(buf);
    free(src);
}

/* Puts into the right neighbour's window and checks what the left one put, under fences. */
static void ring(MPI_Win win, int *mem, int n, int rank, int size, int tag, int *errp)
{
    int *src = malloc(n * sizeof(int));
    for (int i = 0; i < n; i++)
        src[i] = tag * 1000 + rank * 10 + i;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Win_fence(0, win);
    MPI_Put(src, n, MPI_INT, right, 0, n, MPI_INT, win);
    MPI_Win_fence(0, win);
    for (int i = 0; i < n; i++)
        CHECKP(mem[i] == tag * 1000 + left * 10 + i, "ring %d: mem[%d] = %d", tag, i, mem[i]);
    free(src);
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* 1. Tiny windows, created and freed in a loop. */
    for (int count = 1; count <= 8; count *= 2)
        tiny_acc(rank, size, count, &errs);

    /* 2. Two windows over adjacent blocks of one allocation. */
    int *both = malloc(16 * sizeof(int));
    for (int i = 0; i < 16; i++)
        both[i] = -1;
    MPI_Win wa, wb;
    MPI_Win_create(both, 8 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &wa);
    MPI_Win_create(both + 8, 8 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &wb);
    ring(wa, both, 8, rank, size, 1, &errs);
    ring(wb, both + 8, 8, rank, size, 2, &errs);
    CHECK(both[0] != both[8], "adjacent windows wrote the same values");
    MPI_Win_free(&wb);
    MPI_Win_free(&wa);
    free(both);

    /* 3. A window on the even ranks' communicator and one on a duplicate of the world. */
    MPI_Comm even, dup;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2 == 0 ? 0 : MPI_UNDEFINED, rank, &even);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    int *em = calloc(4, sizeof(int)), *dm = calloc(4, sizeof(int));
    MPI_Win ew = MPI_WIN_NULL, dw;
    if (even != MPI_COMM_NULL) {
        int er, es;
        MPI_Comm_rank(even, &er);
        MPI_Comm_size(even, &es);
        MPI_Win_create(em, 4 * sizeof(int), sizeof(int), MPI_INFO_NULL, even, &ew);
        if (es > 1)
            ring(ew, em, 4, er, es, 3, &errs);
        MPI_Win_fence(0, ew);
        int two = 2;
        MPI_Accumulate(&two, 1, MPI_INT, 0, 3, 1, MPI_INT, MPI_SUM, ew);
        MPI_Win_fence(0, ew);
        int base = es > 1 ? 3000 + (es - 1) * 10 + 3 : 0;
        if (er == 0)
            CHECK(em[3] == base + 2 * es, "even accumulate: %d, want %d", em[3], base + 2 * es);
    }
    MPI_Win_create(dm, 4 * sizeof(int), sizeof(int), MPI_INFO_NULL, dup, &dw);
    ring(dw, dm, 4, rank, size, 4, &errs);
    MPI_Win_free(&dw);
    if (ew != MPI_WIN_NULL)
        MPI_Win_free(&ew);
    if (even != MPI_COMM_NULL)
        MPI_Comm_free(&even);
    MPI_Comm_free(&dup);
    free(em);
    free(dm);

    /* 4. Many windows alive at once. */
    MPI_Win ws[NWIN];
    int *ms[NWIN];
    for (int k = 0; k < NWIN; k++) {
        ms[k] = malloc(2 * sizeof(int));
        ms[k][0] = ms[k][1] = -1;
        MPI_Win_create(ms[k], 2 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &ws[k]);
    }
    for (int k = 0; k < NWIN; k++) {
        int v[2] = {k, rank};
        MPI_Win_lock_all(0, ws[k]);
        MPI_Put(v, 2, MPI_INT, (rank + 1) % size, 0, 2, MPI_INT, ws[k]);
        MPI_Win_unlock_all(ws[k]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int k = 0; k < NWIN; k++) {
        MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, ws[k]);
        CHECK(ms[k][0] == k && ms[k][1] == (rank + size - 1) % size, "window %d: %d %d", k, ms[k][0], ms[k][1]);
        MPI_Win_unlock(rank, ws[k]);
    }
    for (int k = NWIN - 1; k >= 0; k--) {
        MPI_Win_free(&ws[k]);
        free(ms[k]);
    }

    /* 5. (rma5) MPI_Win_allocate windows whose members do not share memory: Toucan gives them
     * real windows of their own too (members on several nodes; here TOUCAN_RMA_SHM=0 stands
     * in for that, a Toucan knob other MPIs ignore). Ring of puts, accumulate, fetch-and-op
     * under a lock, and a get. */
    setenv("TOUCAN_RMA_SHM", "0", 1);
    int *am;
    MPI_Win aw;
    MPI_Win_allocate(8 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &am, &aw);
    for (int i = 0; i < 8; i++)
        am[i] = 0;
    ring(aw, am, 6, rank, size, 5, &errs);
    MPI_Win_fence(0, aw);
    int three = 3;
    MPI_Accumulate(&three, 1, MPI_INT, 0, 7, 1, MPI_INT, MPI_SUM, aw);
    MPI_Win_fence(0, aw);
    if (rank == 0)
        CHECK(am[7] == 3 * size, "allocate accumulate: %d, want %d", am[7], 3 * size);
    MPI_Barrier(MPI_COMM_WORLD);
    int one = 1, old = -1, far = size - 1 - rank, seen = -1;
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, far, 0, aw);
    MPI_Fetch_and_op(&one, &old, MPI_INT, far, 6, MPI_SUM, aw);
    MPI_Win_unlock(far, aw);
    CHECK(old == 0, "allocate fetch_and_op: fetched %d, want 0", old);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, aw);
    CHECK(am[6] == 1, "allocate fetch_and_op: own counter %d, want 1", am[6]);
    MPI_Win_unlock(rank, aw);
    MPI_Win_lock(MPI_LOCK_SHARED, far, 0, aw);
    MPI_Get(&seen, 1, MPI_INT, far, 0, 1, MPI_INT, aw);
    MPI_Win_unlock(far, aw);
    int far_left = (far + size - 1) % size;
    CHECK(seen == 5000 + far_left * 10, "allocate get: %d, want %d", seen, 5000 + far_left * 10);
    MPI_Win_free(&aw);
    unsetenv("TOUCAN_RMA_SHM");

    ct_say(rank, errs ? "FAILED" : "OK");
    MPI_Finalize();
    return errs != 0;
}
