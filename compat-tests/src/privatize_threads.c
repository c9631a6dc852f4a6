/* What a thread that a rank starts sees of the program's globals and
 * thread-locals: the rank's own globals (under Toucan, its subrank's copy of
 * the program), fresh thread-locals with their initial values (not the
 * values the rank's main thread set), and a thread-local initialised with the
 * address of a global pointing at the rank's own global. The thread also
 * calls MPI as its rank. Writable globals on purpose (privatize_ prefix). */
#include "ct.h"

#include <pthread.h>

int counter = 7;
__thread int tl_value = 11;
__thread int *tl_ptr = &counter;

struct arg {
    int rank, size, errs;
    int seen_counter, seen_tl, same_ptr, peer;
};

static void *body(void *p)
{
    struct arg *a = p;
    int rank = a->rank, *errp = &a->errs, token = rank * 10 + 1, got = -1;
    a->seen_counter = counter;
    a->seen_tl = tl_value;
    a->same_ptr = tl_ptr == &counter;
    tl_value = 1000 + rank; /* the thread's own: the main thread's stays */
    MPI_Sendrecv(&token, 1, MPI_INT, (rank + 1) % a->size, 5, &got, 1, MPI_INT,
                 (rank + a->size - 1) % a->size, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECKP(got == ((rank + a->size - 1) % a->size) * 10 + 1, "thread got %d", got);
    a->peer = got;
    return NULL;
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, provided;
    pthread_t th;
    struct arg a;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    counter = 100 + rank;
    tl_value = 200 + rank;
    MPI_Barrier(MPI_COMM_WORLD);
    a = (struct arg){rank, size, 0, -1, -1, -1, -1};
    CHECK(pthread_create(&th, NULL, body, &a) == 0, "pthread_create");
    CHECK(pthread_join(th, NULL) == 0, "pthread_join");
    errs += a.errs;
    ct_say(rank, "thread saw counter %d, thread-local %d, pointer to own global %d, peer token %d",
           a.seen_counter, a.seen_tl, a.same_ptr, a.peer);
    CHECK(tl_value == 200 + rank, "main thread's thread-local became %d", tl_value);
    CHECK(tl_ptr == &counter, "main thread's pointer does not reach its global");
    return ct_finish(rank, errs);
}
