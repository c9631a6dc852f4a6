/* The malloc family, as a rank uses it: malloc, calloc (zeroed), realloc (grow,
 * shrink, NULL, to 0), reallocarray (overflow), posix_memalign / aligned_alloc /
 * memalign / valloc / pvalloc (alignment, EINVAL), malloc_usable_size; blocks
 * allocated before MPI_Init and freed after, allocated by the C library
 * (strdup, getline, open_memstream) and freed by the program, allocated by a
 * thread of the program's own and freed by the rank and the other way round,
 * and blocks kept across MPI calls (so that under Toucan the subranks of a
 * process interleave their allocations) whose contents are checked. Large
 * temporaries of 0.2-2 MB are allocated and freed every step with a halo
 * exchange between. Under Toucan each subrank has its own heap. */
#define _GNU_SOURCE
#include "ct.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NKEEP 64

struct handoff {
    void *from_rank;   /* the rank's block, freed by the thread */
    void *from_thread; /* the thread's block, freed by the rank */
    int rank;
};

static void *thread_body(void *arg)
{
    struct handoff *h = arg;
    free(h->from_rank);
    h->from_thread = malloc(5000);
    if (h->from_thread)
        memset(h->from_thread, h->rank & 0xff, 5000);
    return NULL;
}

static int aligned_to(void *p, size_t a)
{
    return ((uintptr_t)p % a) == 0;
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, i, k, step;
    char *early = malloc(100), *s, *line = NULL, *ms = NULL;
    unsigned char *keep[NKEEP];
    size_t n = 0, msn = 0;
    long page = sysconf(_SC_PAGESIZE);
    void *p;
    FILE *f;

    strcpy(early, "allocated before MPI_Init");
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(strcmp(early, "allocated before MPI_Init") == 0, "early block changed");
    free(early);

    /* calloc zeroes; realloc keeps the contents. */
    {
        int *a = calloc(1000, sizeof(int));
        CHECK(a != NULL, "calloc");
        for (i = 0; i < 1000; i++)
            CHECK(a[i] == 0, "calloc not zeroed at %d", i);
        for (i = 0; i < 1000; i++)
            a[i] = i + rank;
        a = realloc(a, 300000 * sizeof(int));
        CHECK(a != NULL, "realloc grow");
        for (i = 0; i < 1000; i++)
            CHECK(a[i] == i + rank, "realloc lost %d", i);
        a = realloc(a, 10 * sizeof(int));
        CHECK(a != NULL && a[9] == 9 + rank, "realloc shrink");
        CHECK(malloc_usable_size(a) >= 10 * sizeof(int), "usable size");
        CHECK(realloc(a, 0) == NULL, "realloc to 0 gives NULL");
        p = realloc(NULL, 77);
        CHECK(p != NULL, "realloc(NULL)");
        free(p);
        free(NULL);
        errno = 0;
        CHECK(reallocarray(NULL, SIZE_MAX / 2, 4) == NULL && errno == ENOMEM, "reallocarray overflow");
        p = reallocarray(NULL, 10, 10);
        CHECK(p != NULL, "reallocarray");
        free(p);
        CHECK(calloc(SIZE_MAX / 2, 4) == NULL, "calloc overflow");
    }

    /* Aligned allocations. */
    {
        size_t al[] = {8, 16, 64, 256, 4096, 65536};
        for (i = 0; i < (int)(sizeof al / sizeof al[0]); i++) {
            p = NULL;
            CHECK(posix_memalign(&p, al[i], 1000 + i) == 0 && p && aligned_to(p, al[i]), "posix_memalign %zu",
                  al[i]);
            free(p);
            p = aligned_alloc(al[i], 4 * al[i]);
            CHECK(p && aligned_to(p, al[i]), "aligned_alloc %zu", al[i]);
            free(p);
            p = memalign(al[i], 333);
            CHECK(p && aligned_to(p, al[i]), "memalign %zu", al[i]);
            free(p);
        }
        p = (void *)1;
        CHECK(posix_memalign(&p, 24, 100) == EINVAL && p == (void *)1, "posix_memalign(24) is EINVAL");
        CHECK(posix_memalign(&p, 4, 100) == EINVAL, "posix_memalign(4) is EINVAL");
        p = valloc(10);
        CHECK(p && aligned_to(p, page), "valloc");
        free(p);
        p = pvalloc(10);
        CHECK(p && aligned_to(p, page) && malloc_usable_size(p) >= (size_t)page, "pvalloc");
        free(p);
    }

    /* Blocks the C library allocates, freed by the program. */
    s = strdup("a string from strdup");
    CHECK(s && strcmp(s, "a string from strdup") == 0, "strdup");
    free(s);
    f = open_memstream(&ms, &msn);
    CHECK(f != NULL, "open_memstream");
    for (i = 0; i < 2000; i++)
        fprintf(f, "rank %d line %d\n", rank, i);
    fclose(f);
    CHECK(ms && msn > 20000 && strncmp(ms, "rank ", 5) == 0, "open_memstream contents");
    f = fmemopen(ms, msn, "r");
    CHECK(f != NULL, "fmemopen");
    k = 0;
    while (getline(&line, &n, f) > 0)
        k++;
    fclose(f);
    CHECK(k == 2000, "getline read %d lines", k);
    free(line);
    free(ms);

    /* A thread of the program's own: frees the rank's block, allocates one the rank frees. */
    {
        struct handoff h = {malloc(3000), NULL, rank};
        pthread_t t;
        memset(h.from_rank, 1, 3000);
        CHECK(pthread_create(&t, NULL, thread_body, &h) == 0, "pthread_create");
        pthread_join(t, NULL);
        CHECK(h.from_thread && ((unsigned char *)h.from_thread)[4999] == (rank & 0xff), "thread's block");
        free(h.from_thread);
    }

    /* Blocks kept across MPI calls, and large temporaries every step. */
    for (i = 0; i < NKEEP; i++) {
        size_t len = 16 + (size_t)i * 37 * (1 + rank % 3);
        keep[i] = malloc(len);
        memset(keep[i], (rank * 7 + i) & 0xff, len);
    }
    for (step = 0; step < 20; step++) {
        double *t[4], sum = 0, all = 0, halo = 0;
        size_t len[4] = {200000, 500000, 1000000, 2000000};
        for (k = 0; k < 4; k++) {
            t[k] = malloc(len[k]);
            CHECK(t[k] != NULL, "temporary %d", k);
            for (i = 0; i < (int)(len[k] / sizeof(double)); i += 512)
                t[k][i] = rank + step + k;
        }
        MPI_Sendrecv(&t[0][0], 1, MPI_DOUBLE, (rank + 1) % size, 0, &halo, 1, MPI_DOUBLE, (rank + size - 1) % size,
                     0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(halo == (rank + size - 1) % size + step, "halo %g at step %d", halo, step);
        for (k = 0; k < 4; k++)
            sum += t[k][512];
        MPI_Allreduce(&sum, &all, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        CHECK(all == 4.0 * (size * (size - 1) / 2.0) + size * (4.0 * step + 6.0), "sum %g at step %d", all, step);
        for (k = 0; k < 4; k++)
            free(t[k]);
        /* Replace a kept block. */
        i = step % NKEEP;
        free(keep[i]);
        keep[i] = malloc(16 + (size_t)i * 37 * (1 + rank % 3));
        memset(keep[i], (rank * 7 + i) & 0xff, 16 + (size_t)i * 37 * (1 + rank % 3));
    }
    for (i = 0; i < NKEEP; i++) {
        size_t len = 16 + (size_t)i * 37 * (1 + rank % 3), j;
        for (j = 0; j < len; j++)
            if (keep[i][j] != ((rank * 7 + i) & 0xff)) {
                CHECK(0, "kept block %d changed at %zu", i, j);
                break;
            }
        free(keep[i]);
    }
    ct_say(rank, "heap checks done");
    return ct_finish(rank, errs);
}
