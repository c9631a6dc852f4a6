/* MPI_THREAD_MULTIPLE with threads the program starts (pthreads): every rank
 * starts NT threads that call MPI concurrently, as their rank, while the main
 * thread communicates too. Each thread exchanges messages around the ring on
 * tags of its own (Isend/Recv/Wait, Irecv/Send/Wait, wildcard-source receives,
 * small and large messages, every element checked) and runs collectives on a
 * communicator of its own (dup'ed by the main thread before the threads
 * start). Query_thread and Is_thread_main are checked in every thread. The
 * main thread joins the threads (under Toucan this parks the subrank, so its
 * siblings run meanwhile) and prints each thread's checksum. */
#define _GNU_SOURCE
#include "ct.h"

#include <pthread.h>
#include <stdint.h>

#define NT 4
#define ITER 40
#define BIG 20000

struct job {
    int rank, size, t;
    MPI_Comm comm;
    uint64_t sum;
    int errs;
};

static int value(int src, int t, int it, int i)
{
    return src * 1000003 + t * 10007 + it * 101 + i;
}

static void *work(void *p)
{
    struct job *j = p;
    int rank = j->rank, size = j->size, t = j->t, it, i, flag = -1, prov = -1;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int *out = malloc(BIG * sizeof(int)), *in = malloc(BIG * sizeof(int));
    int *errp = &j->errs;
    MPI_Request rq;
    MPI_Status st;

    MPI_Is_thread_main(&flag);
    CHECKP(flag == 0, "thread %d: MPI_Is_thread_main gave %d", t, flag);
    MPI_Query_thread(&prov);
    CHECKP(prov == MPI_THREAD_MULTIPLE, "thread %d: MPI_Query_thread gave %d", t, prov);

    for (it = 0; it < ITER; it++) {
        int n = it % 4 == 3 ? BIG : 1 + it % 7, tag = t * 100 + 1;
        for (i = 0; i < n; i++)
            out[i] = value(rank, t, it, i);
        /* Isend, then a blocking receive. */
        MPI_Isend(out, n, MPI_INT, right, tag, MPI_COMM_WORLD, &rq);
        MPI_Recv(in, BIG, MPI_INT, left, tag, MPI_COMM_WORLD, &st);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        {
            int got = -1;
            MPI_Get_count(&st, MPI_INT, &got);
            CHECKP(got == n, "thread %d iter %d: %d ints from the left", t, it, got);
        }
        for (i = 0; i < n; i++) {
            if (in[i] != value(left, t, it, i)) {
                CHECKP(0, "thread %d iter %d: element %d is %d", t, it, i, in[i]);
                break;
            }
            j->sum = j->sum * 31 + (uint64_t)in[i];
        }
        /* Irecv, then a blocking send, the other way round. */
        tag = t * 100 + 2;
        MPI_Irecv(in, BIG, MPI_INT, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &rq);
        MPI_Send(out, n, MPI_INT, left, tag, MPI_COMM_WORLD);
        MPI_Wait(&rq, &st);
        CHECKP(st.MPI_SOURCE == right && st.MPI_TAG == tag, "thread %d iter %d: source %d tag %d",
               t, it, st.MPI_SOURCE, st.MPI_TAG);
        for (i = 0; i < n; i++) {
            if (in[i] != value(right, t, it, i)) {
                CHECKP(0, "thread %d iter %d: element %d from the right is %d", t, it, i, in[i]);
                break;
            }
        }
        j->sum = j->sum * 31 + (uint64_t)in[n - 1];
        /* Collectives on the thread's own communicator. */
        if (it % 8 == 0) {
            long mine = rank * NT + t + it, all = 0, root = -1;
            MPI_Allreduce(&mine, &all, 1, MPI_LONG, MPI_SUM, j->comm);
            CHECKP(all == (long)size * (size - 1) / 2 * NT + (long)size * (t + it),
                   "thread %d iter %d: allreduce %ld", t, it, all);
            if (rank == it % size)
                root = 7 * t + it;
            MPI_Bcast(&root, 1, MPI_LONG, it % size, j->comm);
            CHECKP(root == 7 * t + it, "thread %d iter %d: bcast %ld", t, it, root);
            MPI_Barrier(j->comm);
            j->sum = j->sum * 31 + (uint64_t)all;
        }
    }
    free(out);
    free(in);
    return NULL;
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, provided = -1, flag = -1, t, it;
    struct job jobs[NT];
    pthread_t th[NT];

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
    MPI_Query_thread(&flag);
    CHECK(flag == MPI_THREAD_MULTIPLE, "MPI_Query_thread gave %d", flag);
    flag = -1;
    MPI_Is_thread_main(&flag);
    CHECK(flag == 1, "MPI_Is_thread_main gave %d in the main thread", flag);

    for (t = 0; t < NT; t++) {
        jobs[t] = (struct job){rank, size, t, MPI_COMM_NULL, 0, 0};
        MPI_Comm_dup(MPI_COMM_WORLD, &jobs[t].comm);
    }
    for (t = 0; t < NT; t++)
        CHECK(pthread_create(&th[t], NULL, work, &jobs[t]) == 0, "pthread_create %d", t);

    /* The main thread communicates meanwhile, on a tag of its own. */
    for (it = 0; it < ITER; it++) {
        int out = value(rank, NT, it, 0), in = -1;
        MPI_Sendrecv(&out, 1, MPI_INT, (rank + 1) % size, 999, &in, 1, MPI_INT,
                     (rank + size - 1) % size, 999, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(in == value((rank + size - 1) % size, NT, it, 0), "main iter %d: got %d", it, in);
    }

    for (t = 0; t < NT; t++) {
        CHECK(pthread_join(th[t], NULL) == 0, "pthread_join %d", t);
        errs += jobs[t].errs;
        ct_say(rank, "thread %d checksum %016llx", t, (unsigned long long)jobs[t].sum);
        MPI_Comm_free(&jobs[t].comm);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    ct_say(rank, "provided MPI_THREAD_MULTIPLE: %s", provided == MPI_THREAD_MULTIPLE ? "yes" : "no");
    return ct_finish(rank, errs);
}
