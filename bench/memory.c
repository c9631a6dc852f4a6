/* bench/memory.c - memory of the MPI runtime in one process, idle and with messages in
 * flight (bench/run-memory.sh; see bench/README.md).
 *
 *   memory [K [SIZE]]     K messages of SIZE bytes (default 0, 1024) in flight per rank
 *
 * Every rank sends K messages to the next rank, which does not receive them yet, so they wait
 * as unexpected messages (copied into the receiver's queue); a barrier, then the memory of
 * each process is read (the lowest rank of each process prints it, from /proc/self); then
 * every message is received and checked, and the memory is read again.
 *
 * Lines: "mem PHASE rss_kib pss_kib" per process, PHASE = idle, inflight, drained.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void report(const char *phase, int leader)
{
    char line[256];
    long rss = -1, pss = -1;
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    while (f && fgets(line, sizeof line, f)) {
        sscanf(line, "Rss: %ld kB", &rss);
        sscanf(line, "Pss: %ld kB", &pss);
    }
    if (f)
        fclose(f);
    if (leader) {
        printf("mem %s %ld %ld\n", phase, rss, pss);
        fflush(stdout);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int k = argc > 1 ? atoi(argv[1]) : 0, n = argc > 2 ? atoi(argv[2]) : 1024;
    /* The lowest rank of each process reports for it. */
    int pid = (int) getpid(), *pids = malloc(sizeof(int) * (size_t) size), leader = 1;
    MPI_Allgather(&pid, 1, MPI_INT, pids, 1, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < rank; r++)
        leader &= pids[r] != pid;
    MPI_Barrier(MPI_COMM_WORLD);
    report("idle", leader);

    char *sbuf = malloc((size_t) n), *rbuf = malloc((size_t) n);
    MPI_Request *q = malloc(sizeof(MPI_Request) * (size_t) (k > 0 ? k : 1));
    memset(sbuf, rank & 0x7f, (size_t) n);
    for (int i = 0; i < k; i++)
        MPI_Isend(sbuf, n, MPI_BYTE, (rank + 1) % size, 1, MPI_COMM_WORLD, &q[i]);
    /* Let the messages arrive (the barrier's own progress moves them). */
    MPI_Barrier(MPI_COMM_WORLD);
    report("inflight", leader);
    for (int i = 0; i < k; i++) {
        MPI_Recv(rbuf, n, MPI_BYTE, (rank + size - 1) % size, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        errs += n > 0 && rbuf[n - 1] != (char) (((rank + size - 1) % size) & 0x7f);
    }
    MPI_Waitall(k, q, MPI_STATUSES_IGNORE);
    report("drained", leader);
    if (errs)
        printf("rank %d: %d messages corrupted\n", rank, errs);
    free(sbuf), free(rbuf), free(q), free(pids);
    MPI_Finalize();
    return errs != 0;
}
