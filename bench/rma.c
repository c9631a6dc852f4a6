/* bench/rma.c: one-sided communication (issue 18's benchmark lines), run by run-rma.sh.
 *
 *   rma [-q] [-c]   (-q: a tenth of the iterations; -c: the window is made by MPI_Win_create
 *                   over malloc'ed memory instead of MPI_Win_allocate)
 *
 * Ranks 0 and 1 (window on every rank, passive target, MPI_Win_lock_all):
 *   lat  put8    MPI_Put of 8 bytes from rank 0 to rank 1 + MPI_Win_flush, microseconds
 *   bw   put     MPI_Put of 1 MiB + flush, MB/s;   bw get: MPI_Get of 1 MiB + flush
 *   bw   memcpy  memcpy of the same 1 MiB in rank 0 (the intra-process reference)
 * Every rank:
 *   rate fop     MPI_Fetch_and_op(SUM) on one counter at rank 0 from every rank, each followed
 *                by a flush: total operations per second of the job (checked: the counter
 *                ends at the number of operations)
 * Output: "KIND NAME VALUE" lines from rank 0, then "# end: N measurements". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1 << 20)

int main(int argc, char **argv)
{
    int rank, size, quick = 0, create = 0;
    for (int i = 1; i < argc; i++) {
        quick |= strcmp(argv[i], "-q") == 0;
        create |= strcmp(argv[i], "-c") == 0;
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        if (rank == 0)
            fprintf(stderr, "rma: needs at least 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int lat_iters = quick ? 2000 : 20000, bw_iters = quick ? 20 : 200, fop_iters = quick ? 200 : 2000;
    char *mem;
    MPI_Win win;
    if (create) {
        mem = malloc(MIB + 64);
        MPI_Win_create(mem, MIB + 64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    } else {
        MPI_Win_allocate(MIB + 64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
    }
    memset(mem, 0, MIB + 64);
    char *src = malloc(MIB), *dst = malloc(MIB);
    memset(src, 1, MIB);
    memset(dst, 0, MIB);
    int n = 0;
    MPI_Win_lock_all(0, win);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        double t = MPI_Wtime();
        for (int i = 0; i < lat_iters; i++) {
            MPI_Put(src, 8, MPI_BYTE, 1, 64, 8, MPI_BYTE, win);
            MPI_Win_flush(1, win);
        }
        t = MPI_Wtime() - t;
        printf("lat put8 %.3f\n", t / lat_iters * 1e6);
        t = MPI_Wtime();
        for (int i = 0; i < bw_iters; i++) {
            MPI_Put(src, MIB, MPI_BYTE, 1, 64, MIB, MPI_BYTE, win);
            MPI_Win_flush(1, win);
        }
        t = MPI_Wtime() - t;
        printf("bw put %.1f\n", (double)MIB * bw_iters / t / 1e6);
        t = MPI_Wtime();
        for (int i = 0; i < bw_iters; i++) {
            MPI_Get(dst, MIB, MPI_BYTE, 1, 64, MIB, MPI_BYTE, win);
            MPI_Win_flush(1, win);
        }
        t = MPI_Wtime() - t;
        printf("bw get %.1f\n", (double)MIB * bw_iters / t / 1e6);
        t = MPI_Wtime();
        for (int i = 0; i < bw_iters; i++) {
            src[i % MIB] = (char)i;
            memcpy(dst, src, MIB);
            __asm__ volatile("" ::"r"(dst) : "memory");
        }
        t = MPI_Wtime() - t;
        printf("bw memcpy %.1f\n", (double)MIB * bw_iters / t / 1e6);
        n += 4;
    }
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);

    /* Fetch_and_op rate on rank 0's counter. */
    long *counter = (long *)mem;
    MPI_Win_lock_all(0, win);
    if (rank == 0) {
        *counter = 0;
        MPI_Win_sync(win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    long one = 1, old;
    double t = MPI_Wtime();
    for (int i = 0; i < fop_iters; i++) {
        MPI_Fetch_and_op(&one, &old, MPI_LONG, 0, 0, MPI_SUM, win);
        MPI_Win_flush(0, win);
    }
    t = MPI_Wtime() - t;
    MPI_Win_unlock_all(win);
    double tmax;
    MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        long total = *counter;
        MPI_Win_unlock(0, win);
        if (total != (long)fop_iters * size) {
            fprintf(stderr, "rma: counter %ld, want %ld\n", total, (long)fop_iters * size);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        printf("rate fop %.0f\n", (double)fop_iters * size / tmax);
        n++;
        printf("# end: %d measurements\n", n);
    }
    MPI_Win_free(&win);
    if (create)
        free(mem);
    free(src);
    free(dst);
    MPI_Finalize();
    return 0;
}
