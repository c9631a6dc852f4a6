/* rma_lockq: passive-target locks under contention (issue 18, rma6: the lock queue at the
 * target). On a window made by MPI_Win_allocate and on one made by MPI_Win_create:
 *  1. counters: every rank adds 1 to a counter at every target ITERS times, each time as
 *     a read (MPI_Get + flush), +1, write (MPI_Put) under MPI_LOCK_EXCLUSIVE: only mutual
 *     exclusion keeps every update; each counter must end at size * ITERS.
 *  2. readers and writers: every rank in turn writes a pair of equal words at every target
 *     (two puts with a flush between, under an exclusive lock) and reads the pairs of the
 *     others under MPI_LOCK_SHARED: a reader never sees two different words.
 *  3. lock_all against exclusive locks: even ranks read every pair under MPI_Win_lock_all,
 *     odd ones write under exclusive locks.
 *  4. a target that computes: rank 0 computes (no MPI call) for a while as the others lock
 *     its memory exclusively and add to its counter: passive target needs no call of it.
 * Output: one line per window from rank 0, "rank R: OK" from every rank. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define ITERS 40

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int run(const char *what, MPI_Win win, long *mem, int rank, int size)
{
    int bad = 0, allbad;
    /* 1: counters at mem[0] of every rank. */
    for (int i = 0; i < ITERS; i++)
        for (int k = 0; k < size; k++) {
            int t = (rank + k + i) % size;
            long v;
            MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, win);
            MPI_Get(&v, 1, MPI_LONG, t, 0, 1, MPI_LONG, win);
            MPI_Win_flush(t, win);
            v++;
            MPI_Put(&v, 1, MPI_LONG, t, 0, 1, MPI_LONG, win);
            MPI_Win_unlock(t, win);
        }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
    long mine = mem[0];
    MPI_Win_unlock(rank, win);
    if (mine != (long)size * ITERS) {
        printf("rank %d: %s counter %ld, want %ld\n", rank, what, mine, (long)size * ITERS);
        bad++;
    }
    /* 2: pairs at mem[1], mem[2]. */
    for (int i = 0; i < ITERS; i++) {
        for (int k = 0; k < size; k++) {
            int t = (rank + k) % size;
            if ((i + rank) % size == 0) {
                long v = rank * 1000 + i;
                MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, win);
                MPI_Put(&v, 1, MPI_LONG, t, 1, 1, MPI_LONG, win);
                MPI_Win_flush(t, win);
                MPI_Put(&v, 1, MPI_LONG, t, 2, 1, MPI_LONG, win);
                MPI_Win_unlock(t, win);
            } else {
                long p[2];
                MPI_Win_lock(MPI_LOCK_SHARED, t, 0, win);
                MPI_Get(&p[0], 1, MPI_LONG, t, 1, 1, MPI_LONG, win);
                MPI_Win_flush(t, win);
                MPI_Get(&p[1], 1, MPI_LONG, t, 2, 1, MPI_LONG, win);
                MPI_Win_unlock(t, win);
                if (p[0] != p[1]) {
                    printf("rank %d: %s shared read of rank %d saw %ld and %ld\n", rank, what, t, p[0], p[1]);
                    bad++;
                }
            }
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    /* 3: lock_all readers against exclusive writers. */
    for (int i = 0; i < ITERS / 2; i++) {
        if (rank % 2 == 0) {
            MPI_Win_lock_all(0, win);
            for (int t = 0; t < size; t++) {
                long p[2];
                MPI_Get(&p[0], 1, MPI_LONG, t, 1, 1, MPI_LONG, win);
                MPI_Win_flush(t, win);
                MPI_Get(&p[1], 1, MPI_LONG, t, 2, 1, MPI_LONG, win);
                MPI_Win_flush(t, win);
                if (p[0] != p[1]) {
                    printf("rank %d: %s lock_all read of rank %d saw %ld and %ld\n", rank, what, t, p[0], p[1]);
                    bad++;
                }
            }
            MPI_Win_unlock_all(win);
        } else {
            for (int k = 0; k < size; k++) {
                int t = (rank + k) % size;
                long v = rank * 1000 + 500 + i;
                MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, win);
                MPI_Put(&v, 1, MPI_LONG, t, 1, 1, MPI_LONG, win);
                MPI_Win_flush(t, win);
                MPI_Put(&v, 1, MPI_LONG, t, 2, 1, MPI_LONG, win);
                MPI_Win_unlock(t, win);
            }
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    /* 4: rank 0 computes while the others update its counter at mem[3]. */
    if (rank == 0) {
        volatile double x = 0;
        double t0 = now();
        while (now() - t0 < 0.1)
            x += 1.0;
    } else {
        for (int i = 0; i < ITERS; i++) {
            long v;
            MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
            MPI_Get(&v, 1, MPI_LONG, 0, 3, 1, MPI_LONG, win);
            MPI_Win_flush(0, win);
            v++;
            MPI_Put(&v, 1, MPI_LONG, 0, 3, 1, MPI_LONG, win);
            MPI_Win_unlock(0, win);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        long c = mem[3];
        MPI_Win_unlock(0, win);
        if (c != (long)(size - 1) * ITERS) {
            printf("rank 0: %s counter of a computing target %ld, want %ld\n", what, c, (long)(size - 1) * ITERS);
            bad++;
        }
    }
    MPI_Allreduce(&bad, &allbad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s: counters, shared readers, lock_all, computing target: %s\n", what, allbad ? "FAILED" : "ok");
    return allbad;
}

int main(int argc, char **argv)
{
    int rank, size, bad = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Win win;
    long *mem;
    /* The allocated window first: shared memory between the processes of a node, whose locks
     * are served by the target's process like any other window's (part 4 needs its progress
     * without a window made before). */
    MPI_Win_allocate(4 * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
    for (int i = 0; i < 4; i++)
        mem[i] = 0;
    MPI_Win_unlock(rank, win);
    MPI_Barrier(MPI_COMM_WORLD);
    bad += run("allocated window", win, mem, rank, size);
    MPI_Win_free(&win);
    mem = calloc(4, sizeof(long));
    MPI_Win_create(mem, 4 * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    bad += run("created window", win, mem, rank, size);
    MPI_Win_free(&win);
    free(mem);
    if (!bad)
        printf("rank %d: OK\n", rank);
    MPI_Finalize();
    return 0;
}
