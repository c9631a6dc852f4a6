/* MPI_THREAD_MULTIPLE with OpenMP threads: in a parallel region of NT
 * threads, every thread of every rank exchanges messages around the ring on
 * a tag of its own (Isend/Recv/Wait, data checked) and runs an Allreduce on a
 * communicator of its own (dup'ed before the region). Each thread's checksum
 * is printed by the main thread after the region. Built with -fopenmp
 * (threads_openmp.cflags). */
#include "ct.h"

#include <omp.h>
#include <stdint.h>

#define NT 3
#define ITER 30
#define LEN 1000

int main(int argc, char **argv)
{
    int rank, size, errs = 0, provided = -1, t;
    MPI_Comm comms[NT];
    uint64_t sums[NT];
    int terrs[NT];

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
    for (t = 0; t < NT; t++) {
        MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);
        sums[t] = 0;
        terrs[t] = 0;
    }

#pragma omp parallel num_threads(NT)
    {
        int me = omp_get_thread_num(), it, i, flag = -1;
        int right = (rank + 1) % size, left = (rank + size - 1) % size;
        int out[LEN], in[LEN], *errp = &terrs[me];
        MPI_Request rq;
        MPI_Is_thread_main(&flag);
        CHECKP(flag == (me == 0), "thread %d: MPI_Is_thread_main gave %d", me, flag);
        for (it = 0; it < ITER; it++) {
            int n = 1 + (it * 37) % LEN;
            long mine = rank + me + it, all = -1;
            for (i = 0; i < n; i++)
                out[i] = rank * 100003 + me * 1009 + it * 13 + i;
            MPI_Isend(out, n, MPI_INT, right, me, MPI_COMM_WORLD, &rq);
            MPI_Recv(in, LEN, MPI_INT, left, me, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Wait(&rq, MPI_STATUS_IGNORE);
            for (i = 0; i < n; i++) {
                if (in[i] != left * 100003 + me * 1009 + it * 13 + i) {
                    CHECKP(0, "thread %d iter %d: element %d is %d", me, it, i, in[i]);
                    break;
                }
            }
            sums[me] = sums[me] * 31 + (uint64_t)in[n - 1];
            MPI_Allreduce(&mine, &all, 1, MPI_LONG, MPI_SUM, comms[me]);
            CHECKP(all == (long)size * (size - 1) / 2 + (long)size * (me + it),
                   "thread %d iter %d: allreduce %ld", me, it, all);
            sums[me] = sums[me] * 31 + (uint64_t)all;
        }
    }

    for (t = 0; t < NT; t++) {
        errs += terrs[t];
        ct_say(rank, "thread %d checksum %016llx", t, (unsigned long long)sums[t]);
        MPI_Comm_free(&comms[t]);
    }
    return ct_finish(rank, errs);
}
