/* getopt state per rank: each rank parses its own argument vector with getopt
 * and getopt_long, with a barrier between any two calls so that, under
 * Toucan, the subranks of a process interleave their parsing. The C library
 * keeps the parsing state (optind, optarg, optopt, opterr) in globals; under
 * separate processes each rank has its own, and so must each subrank. Checks
 * the options and their arguments, an unknown option with opterr = 0, the
 * permutation of non-options to the end, a restart with optind = 1, and that
 * the values the program reads (optind, optarg) are its own. */
#include "ct.h"

#include <getopt.h>
#include <unistd.h>

#define MAXARGS 12

struct args {
    int argc;
    char *argv[MAXARGS + 1];
    char text[MAXARGS][32];
};

static void make_args(struct args *a, int rank, int n, const char *const *words)
{
    int i;
    a->argc = n;
    for (i = 0; i < n; i++) {
        snprintf(a->text[i], sizeof a->text[i], words[i], rank);
        a->argv[i] = a->text[i];
    }
    a->argv[n] = NULL;
}

/* Short options: -n NUM (required argument), -v, -q; with non-options among them. */
static void short_options(int rank, int *errp, struct args *a)
{
    static const char *const words[] = {"prog", "file%d", "-n", "%d", "-v", "-x", "--", "-q"};
    int c, n = -1, v = 0, unknown = 0, other = 0, calls = 0;
    make_args(a, rank, 8, words);
    opterr = 0; /* the unknown -x is reported through '?' and optopt only */
    optind = 1;
    while ((c = getopt(a->argc, a->argv, "n:vq")) != -1) {
        calls++;
        if (c == 'n')
            n = atoi(optarg);
        else if (c == 'v')
            v++;
        else if (c == '?' && optopt == 'x')
            unknown++;
        else
            other++;
        MPI_Barrier(MPI_COMM_WORLD);
    }
    CHECKP(calls == 3 && n == rank && v == 1 && unknown == 1 && other == 0,
           "getopt: %d options, -n %d, -v %d times, %d unknown, %d others", calls, n, v, unknown, other);
    /* GNU getopt moved the non-option "file<rank>" after the options; "--" ends them. */
    CHECKP(optind == 6, "after getopt, optind %d (expected 6)", optind);
    if (optind == 6) {
        char want[32];
        snprintf(want, sizeof want, "file%d", rank);
        CHECKP(strcmp(a->argv[optind], want) == 0 && strcmp(a->argv[optind + 1], "-q") == 0,
               "operands after getopt: %s %s", a->argv[optind], a->argv[optind + 1]);
    }
    opterr = 1;
}

/* Long options, each with and without an argument, after a restart. */
static void long_options(int rank, int *errp, struct args *a)
{
    static const char *const words[] = {"prog", "--size=%d", "--verbose", "-l", "%d", "--name", "r%d", "tail"};
    static const struct option longopts[] = {
        {"size", required_argument, NULL, 's'},
        {"verbose", no_argument, NULL, 'v'},
        {"name", required_argument, NULL, 'm'},
        {NULL, 0, NULL, 0},
    };
    int c, size = -1, verbose = 0, level = -1, idx, calls = 0;
    char name[32] = "";
    make_args(a, rank, 8, words);
    optind = 1;
    while ((c = getopt_long(a->argc, a->argv, "l:", longopts, &idx)) != -1) {
        calls++;
        if (c == 's')
            size = atoi(optarg);
        else if (c == 'v')
            verbose++;
        else if (c == 'l')
            level = atoi(optarg);
        else if (c == 'm')
            snprintf(name, sizeof name, "%s", optarg);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    char want[32];
    snprintf(want, sizeof want, "r%d", rank);
    CHECKP(calls == 4 && size == rank && verbose == 1 && level == rank && strcmp(name, want) == 0,
           "getopt_long: %d options, size %d, verbose %d, level %d, name '%s'", calls, size, verbose, level, name);
    CHECKP(optind == 7 && strcmp(a->argv[optind], "tail") == 0, "after getopt_long, optind %d", optind);
}

int main(int argc, char **argv)
{
    int rank, errs = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    /* Each parse has its own vector, alive until the end: the C library may keep a pointer
     * into the last one it scanned. */
    struct args *a = ct_malloc(3 * sizeof *a);
    short_options(rank, &errs, &a[0]);
    long_options(rank, &errs, &a[1]);
    short_options(rank, &errs, &a[2]); /* a second parse, restarted with optind = 1 */
    free(a);
    return ct_finish(rank, errs);
}
