/* Master/worker task farm: rank 0 hands out tasks and collects results
 * with MPI_ANY_SOURCE / MPI_ANY_TAG; workers stop on a STOP tag. Which
 * worker does which task is timing-dependent, so only the results (in
 * task order) and the total count are printed. */
#include "ct.h"

#define TAG_TASK 1
#define TAG_RESULT 2
#define TAG_STOP 3

/* the "work": number of Collatz steps of t + 27 */
static long work(int t)
{
    long x = t + 27, n = 0;
    while (x != 1) {
        x = (x % 2) ? 3 * x + 1 : x / 2;
        n++;
    }
    return n;
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, ntasks, mine = 0, total = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    ntasks = 5 * size + 3;

    if (rank == 0) {
        long *res = ct_malloc(sizeof(long) * ntasks);
        int next = 0, outstanding = 0, w, t;
        long sum = 0;
        for (t = 0; t < ntasks; t++)
            res[t] = -1;
        if (size == 1) {
            for (t = 0; t < ntasks; t++)
                res[t] = work(t);
            mine = ntasks;
        } else {
            for (w = 1; w < size; w++) {
                if (next < ntasks) {
                    MPI_Send(&next, 1, MPI_INT, w, TAG_TASK, MPI_COMM_WORLD);
                    next++;
                    outstanding++;
                } else {
                    MPI_Send(&next, 0, MPI_INT, w, TAG_STOP, MPI_COMM_WORLD);
                }
            }
            while (outstanding > 0) {
                long msg[2];
                MPI_Status st;
                MPI_Recv(msg, 2, MPI_LONG, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
                CHECK(st.MPI_TAG == TAG_RESULT && st.MPI_SOURCE > 0 && st.MPI_SOURCE < size,
                      "unexpected message tag %d from %d", st.MPI_TAG, st.MPI_SOURCE);
                outstanding--;
                if (msg[0] >= 0 && msg[0] < ntasks) {
                    CHECK(res[msg[0]] == -1, "task %ld done twice", msg[0]);
                    res[msg[0]] = msg[1];
                }
                if (next < ntasks) {
                    MPI_Send(&next, 1, MPI_INT, st.MPI_SOURCE, TAG_TASK, MPI_COMM_WORLD);
                    next++;
                    outstanding++;
                } else {
                    MPI_Send(&next, 0, MPI_INT, st.MPI_SOURCE, TAG_STOP, MPI_COMM_WORLD);
                }
            }
        }
        for (t = 0; t < ntasks; t++) {
            CHECK(res[t] == work(t), "task %d result %ld, expected %ld", t, res[t], work(t));
            sum += res[t];
        }
        ct_say(rank, "%d tasks, sum of results %ld, first %ld %ld %ld", ntasks, sum, res[0], res[1],
               res[2]);
        free(res);
    } else {
        for (;;) {
            int t;
            long msg[2];
            MPI_Status st;
            MPI_Recv(&t, 1, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            if (st.MPI_TAG == TAG_STOP)
                break;
            CHECK(st.MPI_TAG == TAG_TASK, "worker got tag %d", st.MPI_TAG);
            msg[0] = t;
            msg[1] = work(t);
            mine++;
            MPI_Send(msg, 2, MPI_LONG, 0, TAG_RESULT, MPI_COMM_WORLD);
        }
    }

    MPI_Reduce(&mine, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        CHECK(total == ntasks, "workers report %d tasks done, expected %d", total, ntasks);
    return ct_finish(rank, errs);
}
