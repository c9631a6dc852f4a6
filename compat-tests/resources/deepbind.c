/* compat-tests/resources/deepbind.c: every rank opens libtoucan_deep.so (deepbind_lib.c,
 * found by its bare name in the program's RUNPATH) with RTLD_DEEPBIND, RTLD_LAZY or RTLD_NOW
 * (argv[1] "lazy" or "now"), and passes blocks both ways 200 times: the library frees and
 * grows the program's blocks, the program frees the library's, strdup inside the library.
 * Prints "rank R: OK" per rank. */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    int rank, bad = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int mode = (argc > 1 && !strcmp(argv[1], "now")) ? RTLD_NOW : RTLD_LAZY;
    void *h = dlopen("libtoucan_deep.so", mode | RTLD_DEEPBIND);
    if (!h) {
        printf("rank %d: dlopen: %s\n", rank, dlerror());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    void (*dfree)(void *) = (void (*)(void *))dlsym(h, "deep_free");
    void *(*drealloc)(void *, size_t) = (void *(*)(void *, size_t))dlsym(h, "deep_realloc");
    void *(*dalloc)(size_t) = (void *(*)(size_t))dlsym(h, "deep_alloc");
    size_t (*dlen)(const char *) = (size_t(*)(const char *))dlsym(h, "deep_strdup_len");
    for (int i = 0; i < 200; i++) {
        char *p = malloc(100 + 997 * (size_t)i);
        memset(p, 1, 100 + 997 * (size_t)i);
        dfree(p);
        p = malloc(64);
        strcpy(p, "block");
        p = drealloc(p, 1000 + 5000 * (size_t)i);
        bad += p == NULL || strcmp(p, "block") != 0;
        free(p);
        p = dalloc(5000);
        memset(p, 2, 5000);
        free(p);
        bad += dlen("a string of 23 letters.") != 23;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (bad)
        printf("rank %d: %d wrong results\n", rank, bad);
    else
        printf("rank %d: OK\n", rank);
    dlclose(h);
    MPI_Finalize();
    return bad != 0;
}
