/* Privatized globals (C): each rank owns the program's writable globals and
 * statics. Deliberately uses writable globals (the runner allows them in
 * tests named privatize_*): an initialised global counter, a .bss array, a
 * file static, a function-local static, a global pointer to heap memory and a
 * global that points at another global. Every rank first checks they hold
 * the values the program's image gives them (no sibling wrote them before),
 * writes values derived from its rank into all of them, lets the other ranks
 * run (barriers, and a ring exchange so siblings interleave), then checks
 * that they still hold its own values. Under separate processes this is
 * trivially true; under Toucan it needs one copy of the globals per subrank. */
#include "ct.h"

#define BSS_N 4096

int counter = 42;
int bss_array[BSS_N];
static double file_static = 1.5;
int *heap_ptr;
int *counter_ptr = &counter;
const char *name_ptr = "initial";

static int *local_static(void)
{
    static int calls = 100;
    calls++;
    return &calls;
}

static void check_values(int rank, int *errp, int round)
{
    int i, bad = 0;
    int v = rank * 10 + round;
    CHECKP(counter == 1000 + v, "round %d: counter %d, expected %d", round, counter, 1000 + v);
    for (i = 0; i < BSS_N; i++)
        if (bss_array[i] != v + i)
            bad++;
    CHECKP(bad == 0, "round %d: %d of %d .bss elements hold another rank's values", round, bad, BSS_N);
    CHECKP(file_static == v + 0.25, "round %d: file static %g, expected %g", round, file_static, v + 0.25);
    CHECKP(*local_static() == 103 + 2 * round, "round %d: function-local static counts calls of other ranks", round);
    CHECKP(heap_ptr != NULL && heap_ptr[0] == v && heap_ptr[1] == -v, "round %d: global heap pointer replaced", round);
    CHECKP(counter_ptr == &counter, "round %d: pointer to a global does not point at this rank's global", round);
    CHECKP(*counter_ptr == 1000 + v, "round %d: *counter_ptr %d", round, *counter_ptr);
    CHECKP(strcmp(name_ptr, "mine") == 0, "round %d: pointer to a string replaced", round);
}

static void write_values(int rank, int round)
{
    int i, v = rank * 10 + round;
    counter = 1000 + v;
    for (i = 0; i < BSS_N; i++)
        bss_array[i] = v + i;
    file_static = v + 0.25;
    local_static();
    if (!heap_ptr)
        heap_ptr = ct_malloc(2 * sizeof(int));
    heap_ptr[0] = v;
    heap_ptr[1] = -v;
    *counter_ptr = 1000 + v; /* through the pointer: the same global */
    name_ptr = "mine";
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, round, i, token;

    /* Before MPI_Init and before any write: the image's initial values. */
    int init_ok = counter == 42 && file_static == 1.5 && heap_ptr == NULL && counter_ptr == &counter &&
                  strcmp(name_ptr, "initial") == 0;
    for (i = 0; i < BSS_N; i++)
        if (bss_array[i] != 0)
            init_ok = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(init_ok, "globals did not hold their initial values at start-up");
    CHECK(*local_static() == 101, "function-local static was already incremented by another rank");

    for (round = 0; round < 3; round++) {
        write_values(rank, round);
        MPI_Barrier(MPI_COMM_WORLD);
        /* A ring step, so that siblings interleave between write and check. */
        token = rank;
        MPI_Sendrecv_replace(&token, 1, MPI_INT, (rank + 1) % size, 0, (rank + size - 1) % size, 0, MPI_COMM_WORLD,
                             MPI_STATUS_IGNORE);
        CHECK(token == (rank + size - 1) % size, "ring token %d", token);
        MPI_Barrier(MPI_COMM_WORLD);
        check_values(rank, &errs, round);
    }
    free(heap_ptr);
    return ct_finish(rank, errs);
}
