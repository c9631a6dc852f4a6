/* io_common.h - helpers of the MPI-IO tests (issue 19): a per-run temporary directory shared
 * by all ranks, and a checksum of a file as plain POSIX reads see it. */
#ifndef COMPAT_IO_COMMON_H
#define COMPAT_IO_COMMON_H
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Rank 0 creates a fresh directory under $TMPDIR (or /tmp); every rank gets its name. */
static inline void io_tmpdir(char *dir, int len)
{
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    memset(dir, 0, len);
    if (rank == 0) {
        const char *t = getenv("TMPDIR");
        snprintf(dir, len, "%s/ct-io-XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(dir)) {
            perror("mkdtemp");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    MPI_Bcast(dir, len, MPI_CHAR, 0, MPI_COMM_WORLD);
}

/* FNV-1a of the whole file and its size, read with POSIX calls. */
static inline uint64_t io_checksum(const char *path, long *size)
{
    uint64_t h = 1469598103934665603ULL;
    unsigned char b[4096];
    size_t n;
    FILE *f = fopen(path, "rb");
    *size = -1;
    if (!f)
        return 0;
    *size = 0;
    while ((n = fread(b, 1, sizeof b, f)) > 0) {
        for (size_t i = 0; i < n; i++) {
            h ^= b[i];
            h *= 1099511628211ULL;
        }
        *size += (long)n;
    }
    fclose(f);
    return h;
}

/* Rank 0 prints the file's size and checksum (the byte-for-byte comparison with MPICH). */
static inline void io_print_file(int rank, const char *what, const char *path)
{
    if (rank == 0) {
        long size;
        uint64_t h = io_checksum(path, &size);
        printf("rank 0: %s: %ld bytes, fnv %016llx\n", what, size, (unsigned long long)h);
        fflush(stdout);
    }
}

/* Rank 0 removes the directory, which must be empty by now (no file, no sidecar left). */
static inline int io_rmdir(int rank, const char *dir)
{
    int rc = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        rc = rmdir(dir);
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return rc;
}
#endif
