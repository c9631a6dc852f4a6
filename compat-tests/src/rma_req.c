/* rma_req: request-based one-sided operations (issue 18, rma6: between processes they
 * complete at MPI_Wait/MPI_Test, locally). Inside MPI_Win_lock_all, on a window made by
 * MPI_Win_create and on one made by MPI_Win_allocate:
 *  1. MPI_Rput of NPUT slices (contiguous, and every other element through a vector type)
 *     into the right neighbour, completed by MPI_Waitall, the origin buffers overwritten at
 *     once (local completion lets them be reused); after a flush, the neighbour's memory
 *     holds the slices as put.
 *  2. MPI_Rget of the left neighbour's slices, completed by an MPI_Test loop: the data is
 *     in when the request completes (no flush before looking).
 *  3. MPI_Raccumulate (MPI_SUM) of 1 from every rank on a counter at every rank, and
 *     MPI_Rget_accumulate fetch-and-adds on a second counter: the counters end at the world
 *     size times the rounds, and the values fetched at one target are all different.
 *  4. an MPI_Rput completed by MPI_Win_flush first and MPI_Wait after it (MPICH 4.0.2
 *     refuses MPI_Request_free on these requests, so the test does not free one).
 * Output: one line per window from rank 0, "rank R: OK" from every rank. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NPUT 16
#define SLICE 32
#define ROUNDS 8
/* Window layout, in ints: NPUT slices, the two counters (in 16 ints), one more slice. The
 * size is a multiple of 64 bytes: MPICH 4.0.2 misplaced operations on odd ranks' memory of a
 * MPI_Win_allocate window of 2184 bytes (8 bytes off), which would fail the reference run. */
#define CNT (NPUT * SLICE)
#define MARK (CNT + 16)
#define WIN_INTS (MARK + SLICE)

static int run(const char *what, MPI_Win win, int *mem, int rank, int size)
{
    int bad = 0, allbad;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Datatype every_other;
    MPI_Type_vector(SLICE / 2, 1, 2, MPI_INT, &every_other);
    MPI_Type_commit(&every_other);
    int *src = malloc(sizeof(int) * CNT), *got = malloc(sizeof(int) * CNT);
    MPI_Request rq[NPUT];
    MPI_Win_lock_all(0, win);
    /* 1 */
    for (int i = 0; i < CNT; i++)
        src[i] = rank * 100000 + i;
    for (int s = 0; s < NPUT; s++) {
        if (s % 2 == 0)
            MPI_Rput(src + s * SLICE, SLICE, MPI_INT, right, s * SLICE, SLICE, MPI_INT, win, &rq[s]);
        else
            MPI_Rput(src + s * SLICE, 1, every_other, right, s * SLICE, 1, every_other, win, &rq[s]);
    }
    MPI_Waitall(NPUT, rq, MPI_STATUSES_IGNORE);
    for (int i = 0; i < CNT; i++)
        src[i] = -1;
    MPI_Win_flush_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_sync(win);
    for (int s = 0; s < NPUT; s++)
        for (int i = 0; i < SLICE; i++) {
            int k = s * SLICE + i, want = left * 100000 + k;
            if (s % 2 == 1 && i % 2 == 1)
                want = 0; /* the vector skips these */
            if (mem[k] != want && bad++ < 3)
                printf("rank %d: %s Rput slice %d element %d is %d, want %d\n", rank, what, s, i, mem[k], want);
        }
    /* 2 */
    memset(got, 0, sizeof(int) * CNT);
    for (int s = 0; s < NPUT; s++)
        MPI_Rget(got + s * SLICE, SLICE, MPI_INT, left, s * SLICE, SLICE, MPI_INT, win, &rq[s]);
    int done = 0;
    while (!done)
        MPI_Testall(NPUT, rq, &done, MPI_STATUSES_IGNORE);
    int left2 = (left + size - 1) % size;
    for (int s = 0; s < NPUT; s++)
        for (int i = 0; i < SLICE; i++) {
            int k = s * SLICE + i, want = left2 * 100000 + k;
            if (s % 2 == 1 && i % 2 == 1)
                want = 0;
            if (got[k] != want && bad++ < 3)
                printf("rank %d: %s Rget slice %d element %d is %d, want %d\n", rank, what, s, i, got[k], want);
        }
    MPI_Barrier(MPI_COMM_WORLD);
    /* 3 */
    int one = 1, *fetched = malloc(sizeof(int) * ROUNDS * size);
    for (int r = 0; r < ROUNDS; r++) {
        for (int t = 0; t < size; t++) {
            MPI_Request two[2];
            MPI_Raccumulate(&one, 1, MPI_INT, t, CNT, 1, MPI_INT, MPI_SUM, win, &two[0]);
            MPI_Rget_accumulate(&one, 1, MPI_INT, &fetched[r * size + t], 1, MPI_INT, t, CNT + 1, 1, MPI_INT, MPI_SUM,
                                win, &two[1]);
            MPI_Waitall(2, two, MPI_STATUSES_IGNORE);
        }
    }
    MPI_Win_flush_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_sync(win);
    if (mem[CNT] != size * ROUNDS || mem[CNT + 1] != size * ROUNDS) {
        printf("rank %d: %s counters %d and %d, want %d\n", rank, what, mem[CNT], mem[CNT + 1], size * ROUNDS);
        bad++;
    }
    /* Every value 0..size*ROUNDS-1 fetched at target t exactly once, job-wide. */
    int *all = malloc(sizeof(int) * ROUNDS * size * size);
    MPI_Allgather(fetched, ROUNDS * size, MPI_INT, all, ROUNDS * size, MPI_INT, MPI_COMM_WORLD);
    for (int t = 0; t < size && rank == 0; t++) {
        char *seen = calloc(size * ROUNDS, 1);
        for (int p = 0; p < size; p++)
            for (int r = 0; r < ROUNDS; r++) {
                int v = all[p * ROUNDS * size + r * size + t];
                if (v < 0 || v >= size * ROUNDS || seen[v]++) {
                    printf("rank 0: %s fetch-and-add at rank %d returned %d twice or out of range\n", what, t, v);
                    bad++;
                }
            }
        free(seen);
    }
    /* 4 */
    int mark[SLICE];
    for (int i = 0; i < SLICE; i++)
        mark[i] = 7000 + rank;
    MPI_Request fr;
    MPI_Rput(mark, SLICE, MPI_INT, right, MARK, SLICE, MPI_INT, win, &fr);
    MPI_Win_flush(right, win);
    MPI_Wait(&fr, MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_sync(win);
    for (int i = 0; i < SLICE; i++)
        if (mem[MARK + i] != 7000 + left && bad++ < 3)
            printf("rank %d: %s flushed Rput element %d is %d\n", rank, what, i, mem[MARK + i]);
    MPI_Win_unlock_all(win);
    MPI_Allreduce(&bad, &allbad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s: Rput, Rget, Raccumulate, Rget_accumulate, flushed Rput: %s\n", what, allbad ? "FAILED" : "ok");
    MPI_Type_free(&every_other);
    free(src);
    free(got);
    free(fetched);
    free(all);
    return allbad;
}

int main(int argc, char **argv)
{
    int rank, size, bad = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Win win;
    int *mem = calloc(WIN_INTS, sizeof(int));
    MPI_Win_create(mem, WIN_INTS * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Barrier(MPI_COMM_WORLD);
    bad += run("created window", win, mem, rank, size);
    MPI_Win_free(&win);
    free(mem);
    MPI_Win_allocate(WIN_INTS * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
    memset(mem, 0, WIN_INTS * sizeof(int));
    MPI_Win_unlock(rank, win);
    MPI_Barrier(MPI_COMM_WORLD);
    bad += run("allocated window", win, mem, rank, size);
    MPI_Win_free(&win);
    if (!bad)
        printf("rank %d: OK\n", rank);
    MPI_Finalize();
    return 0;
}
