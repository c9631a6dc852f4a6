/*
 * bench/common.h: what the benchmark programs (pingpong.c, collectives.c) share: their
 * command line and a checked allocation. Header only (static functions), so that each
 * program stays one source file on the compiler's command line.
 */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The options every benchmark takes:
 *   -q          quick mode: factor 0.1
 *   -f FACTOR   multiply the factor by FACTOR (> 0)
 *   -t LIST     comma-separated subset of names[0..nnames-1] to run (default all)
 *   -v          verbose
 *   -h, --help  help
 * run[k] is set to 1 when names[k] is to run. Returns 0 on success, 1 for help, -1 on a
 * usage error.
 */
static int bench_parse_args(int argc, char **argv, const char *const *names, int nnames, int *run,
                            double *factor_out, int *verbose)
{
    double quick = 1.0, factor = 1.0;
    for (int k = 0; k < nnames; k++)
        run[k] = 1;
    *verbose = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-q")) {
            quick = 0.1;
        } else if (!strcmp(a, "-f") && i + 1 < argc) {
            char *end;
            factor = strtod(argv[++i], &end);
            if (*end || !(factor > 0))
                return -1;
        } else if (!strcmp(a, "-t") && i + 1 < argc) {
            char list[256];
            snprintf(list, sizeof list, "%s", argv[++i]);
            for (int k = 0; k < nnames; k++)
                run[k] = 0;
            char *save = NULL;
            for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                int k = 0;
                while (k < nnames && strcmp(tok, names[k]))
                    k++;
                if (k == nnames)
                    return -1;
                run[k] = 1;
            }
        } else if (!strcmp(a, "-v")) {
            *verbose = 1;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            return 1;
        } else {
            return -1;
        }
    }
    *factor_out = quick * factor;
    return 0;
}

/* size bytes, zeroed and page-aligned, never zero bytes (size-0 messages still pass a valid
 * pointer); aborts the job when there is no memory. */
static void *bench_alloc(const char *prog, int rank, size_t size)
{
    void *p = NULL;
    if (posix_memalign(&p, 4096, size ? size : 1)) {
        fprintf(stderr, "%s: rank %d: cannot allocate %zu bytes\n", prog, rank, size);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    memset(p, 0, size ? size : 1);
    return p;
}

#endif
