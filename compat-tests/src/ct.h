/* ct.h - tiny helpers shared by the compatibility tests.
 *
 * Rules for every test program (see ../README.md):
 *   - no writable global or static variables: all state lives in main's locals
 *     (or malloc'd memory) and is passed down explicitly;
 *   - every output line starts with "rank R: " and contains only values the MPI
 *     standard defines, so the sorted output is identical under any MPI;
 *   - each rank ends with "rank R: OK" or a FAILED line; exit status 0 or 1.
 *
 * CHECK() needs two locals in scope: `int rank` and `int errs`.  Helper
 * functions that check things take `int rank, int *errp` and use CHECKP().
 */
#ifndef COMPAT_CT_H
#define COMPAT_CT_H

#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef CT_MAX_REPORT
#define CT_MAX_REPORT 10
#endif

static inline void ct_fail(int rank, int *errp, int line, const char *fmt, ...)
{
    char buf[600];
    va_list ap;
    (*errp)++;
    if (*errp > CT_MAX_REPORT)
        return;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    printf("rank %d: FAIL line %d: %s\n", rank, line, buf);
    fflush(stdout);
}

/* Print one line prefixed with the rank, flushed at once. */
static inline void ct_say(int rank, const char *fmt, ...)
{
    char buf[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    printf("rank %d: %s\n", rank, buf);
    fflush(stdout);
}

#define CHECK(cond, ...)                                        \
    do {                                                        \
        if (!(cond))                                            \
            ct_fail(rank, &errs, __LINE__, __VA_ARGS__);        \
    } while (0)

#define CHECKP(cond, ...)                                       \
    do {                                                        \
        if (!(cond))                                            \
            ct_fail(rank, errp, __LINE__, __VA_ARGS__);         \
    } while (0)

/* Class of an error code, as a plain int. */
static inline int ct_class(int code)
{
    int cls = -1;
    MPI_Error_class(code, &cls);
    return cls;
}

/* Completes the `n` requests at `r` in the way round `k` picks (k % 6): MPI_Waitall, MPI_Wait
 * in reverse, MPI_Test loops over the ones left, MPI_Waitany, MPI_Testall loops, MPI_Testsome
 * loops. Returns MPI_SUCCESS, or the last error code a call returned. */
static inline int ct_complete(MPI_Request *r, int n, int k)
{
    int rc = MPI_SUCCESS;
    if (n <= 0)
        return rc;
    switch (k % 6) {
    case 0:
        rc = MPI_Waitall(n, r, MPI_STATUSES_IGNORE);
        break;
    case 1:
        for (int i = n - 1; i >= 0; i--) {
            int e = MPI_Wait(&r[i], MPI_STATUS_IGNORE);
            if (e != MPI_SUCCESS)
                rc = e;
        }
        break;
    case 2: {
        int left = n;
        while (left > 0) {
            left = 0;
            for (int i = 0; i < n; i++) {
                if (r[i] == MPI_REQUEST_NULL)
                    continue;
                int flag = 0, e = MPI_Test(&r[i], &flag, MPI_STATUS_IGNORE);
                if (e != MPI_SUCCESS)
                    rc = e;
                if (!flag)
                    left++;
            }
        }
        break;
    }
    case 3:
        for (int j = 0; j < n; j++) {
            int idx, e = MPI_Waitany(n, r, &idx, MPI_STATUS_IGNORE);
            if (e != MPI_SUCCESS)
                rc = e;
        }
        break;
    case 4: {
        int flag = 0;
        while (!flag && rc == MPI_SUCCESS)
            rc = MPI_Testall(n, r, &flag, MPI_STATUSES_IGNORE);
        break;
    }
    default: {
        int done = 0, *idx = (int *) malloc((size_t) n * sizeof *idx);
        while (idx && done < n) {
            int out = 0, e = MPI_Testsome(n, r, &out, idx, MPI_STATUSES_IGNORE);
            if (e != MPI_SUCCESS)
                rc = e;
            if (out == MPI_UNDEFINED)
                break;
            done += out;
        }
        free(idx);
    }
    }
    return rc;
}

/* Cuts the world into pairs of neighbouring ranks (0-1, 2-3, ...; a last odd rank alone) in
 * `*pair`, with MPI_ERRORS_RETURN, and gives a duplicate of each pair in `*dup` (made first,
 * so it keeps the default MPI_ERRORS_ARE_FATAL). Free both with MPI_Comm_free. */
static inline void ct_pairs(MPI_Comm *pair, MPI_Comm *dup)
{
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, pair);
    MPI_Comm_dup(*pair, dup);
    MPI_Comm_set_errhandler(*pair, MPI_ERRORS_RETURN);
}

/* The world in reverse rank order in `*rev`, and its odd and even ranks, each in reverse
 * order, in `*half`. Free both with MPI_Comm_free. */
static inline void ct_rev_half(MPI_Comm *rev, MPI_Comm *half)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, rev);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, half);
}

/* A test written for at most `maxp` ranks: above that, rank 0 says it skips, every rank
 * finalizes, and 1 is returned (main then returns 0); otherwise 0. */
static inline int ct_skip_above(int maxp, int rank, int size)
{
    if (size <= maxp)
        return 0;
    if (rank == 0)
        ct_say(rank, "more than %d ranks: skipped", maxp);
    MPI_Finalize();
    return 1;
}

/* MPI_Init, this rank and the world's size into `*rank` and `*size`, and ct_skip_above(maxp):
 * 1 when the test skips (MPI is finalized then: main returns 0), else 0. */
static inline int ct_init_upto(int *argc, char ***argv, int maxp, int *rank, int *size)
{
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    return ct_skip_above(maxp, *rank, *size);
}

/* Print the final verdict of this rank, finalize, and give main's exit code. */
static inline int ct_finish(int rank, int errs)
{
    if (errs == 0)
        printf("rank %d: OK\n", rank);
    else
        printf("rank %d: FAILED with %d errors\n", rank, errs);
    fflush(stdout);
    MPI_Finalize();
    return errs ? 1 : 0;
}

static inline void *ct_malloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "out of memory (%zu bytes)\n", n);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

#endif
