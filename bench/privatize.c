/* bench/privatize.c: what privatized globals cost. Built and run by bench/run-privatize.sh
 * (see bench/README.md); any MPI can run it.
 *
 * Compile-time sizes: DATA_BYTES of initialised writable globals (default 1 MiB), TLS_BYTES of
 * thread-locals (default 0: none), and the code of a generated file of functions (its
 * bench_code_run() calls them all; linked in by the script, -DNO_CODE leaves it out).
 *
 *   privatize start        every rank writes its globals and runs the generated code, then a
 *                          barrier; rank 0 prints "mem RSS_KIB PSS_KIB" of its own process
 *                          (/proc/self/smaps_rollup)
 *   privatize switch N     N ping-pong round trips of 0-byte messages between ranks 0 and 1
 *                          (after N/10 untimed ones); rank 0 prints "roundtrip NS" (mean)
 *
 * Rank 0 also prints "private K SIZE": K of the SIZE ranks found their globals and
 * thread-locals holding their own values after the others ran (K = SIZE when privatized).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef DATA_BYTES
#define DATA_BYTES (1 << 20)
#endif
#ifndef TLS_BYTES
#define TLS_BYTES 0
#endif

/* Initialised, so it is file-backed data (.data), not .bss. */
unsigned char bench_data[DATA_BYTES] = {1};
#if TLS_BYTES > 0
__thread unsigned char bench_tls[TLS_BYTES] = {1};
#endif

#ifndef NO_CODE
unsigned long bench_code_run(unsigned long x);
#else
static unsigned long bench_code_run(unsigned long x) { return x; }
#endif

/* Writes the rank into the first byte of every page of the globals (and the thread-locals). */
static void mark(int rank)
{
    for (size_t i = 0; i < DATA_BYTES; i += 4096)
        bench_data[i] = (unsigned char)rank;
#if TLS_BYTES > 0
    for (size_t i = 0; i < TLS_BYTES; i += 64)
        bench_tls[i] = (unsigned char)rank;
#endif
}

static int marked(int rank)
{
    int bad = 0;
    for (size_t i = 0; i < DATA_BYTES; i += 4096)
        bad += bench_data[i] != (unsigned char)rank;
#if TLS_BYTES > 0
    for (size_t i = 0; i < TLS_BYTES; i += 64)
        bad += bench_tls[i] != (unsigned char)rank;
#endif
    return bad;
}

/* RSS and PSS of this process, KiB. */
static void memory(long *rss, long *pss)
{
    char line[256];
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    *rss = *pss = -1;
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "Rss:", 4) == 0)
            *rss = atol(line + 4);
        else if (strncmp(line, "Pss:", 4) == 0)
            *pss = atol(line + 4);
    }
    fclose(f);
}

int main(int argc, char **argv)
{
    int rank, size, ok, nok = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 2 || (strcmp(argv[1], "start") != 0 && strcmp(argv[1], "switch") != 0)) {
        if (rank == 0)
            fprintf(stderr, "usage: %s start | switch N\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    mark(rank);
    if (strcmp(argv[1], "start") == 0) {
        unsigned long sum = bench_code_run((unsigned long)rank);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            long rss, pss;
            memory(&rss, &pss);
            printf("mem %ld %ld\n", rss, pss);
            if (sum == 42) /* keeps the call */
                printf("#\n");
        }
    } else {
        long n = argc > 2 ? atol(argv[2]) : 100000;
        if (size < 2) {
            if (rank == 0)
                fprintf(stderr, "switch needs two ranks\n");
            MPI_Finalize();
            return 2;
        }
        double t0 = 0;
        for (long i = -n / 10; i < n; i++) {
            if (i == 0)
                t0 = MPI_Wtime();
            if (rank == 0) {
                MPI_Send(NULL, 0, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
                MPI_Recv(NULL, 0, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                MPI_Recv(NULL, 0, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(NULL, 0, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
            }
        }
        double t = MPI_Wtime() - t0;
        if (rank == 0 && n > 0)
            printf("roundtrip %.1f\n", t / n * 1e9);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    ok = marked(rank) == 0;
    MPI_Reduce(&ok, &nok, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("private %d %d\n", nok, size);
    MPI_Finalize();
    return 0;
}
