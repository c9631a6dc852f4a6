/* The receive/send/compute pipeline of Toucan_Region: when a rank enters its
 * compute region, every runnable rank of its own process has posted its
 * receives and sends of that superblock. Checked on a ring: each rank
 * receives from both neighbours and sends to both; when the whole job runs in
 * one process (every rank has the same pid: Toucan with n = 1; never under
 * an MPI with one rank per process), the receives must already be complete
 * at the start of the compute region. (With several processes a sibling may
 * still be blocked on a remote message of an earlier superblock; a hint
 * never makes a rank wait for it, so nothing is checked then.) A ring of
 * sums then checks the data in every case.
 */
#include "ct.h"
#include "../../headers/toucan.h"
#include <unistd.h>

#define ITERS 20

int main(int argc, char **argv)
{
    int rank, size, errs = 0, it, k, flag;
    int left, right, one_process, i;
    long *pids, me, in[2], out, total = 0;
    MPI_Request rq[4];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    left = (rank + size - 1) % size;
    right = (rank + 1) % size;
    pids = ct_malloc(sizeof(long) * size);
    me = (long) getpid();
    MPI_Allgather(&me, 1, MPI_LONG, pids, 1, MPI_LONG, MPI_COMM_WORLD);
    one_process = 1;
    for (i = 0; i < size; i++)
        one_process &= pids[i] == me;

    for (it = 0; it < ITERS; it++) {
        Toucan_Region(TOUCAN_RECEIVE);
        MPI_Irecv(&in[0], 1, MPI_LONG, left, it, MPI_COMM_WORLD, &rq[0]);
        MPI_Irecv(&in[1], 1, MPI_LONG, right, it, MPI_COMM_WORLD, &rq[1]);
        Toucan_Region(TOUCAN_SEND);
        out = (long) rank * 1000 + it;
        MPI_Isend(&out, 1, MPI_LONG, left, it, MPI_COMM_WORLD, &rq[2]);
        MPI_Isend(&out, 1, MPI_LONG, right, it, MPI_COMM_WORLD, &rq[3]);
        Toucan_Region(TOUCAN_COMPUTE);
        for (k = 0; k < 2; k++) {
            if (!one_process)
                continue;
            flag = 0;
            MPI_Test(&rq[k], &flag, MPI_STATUS_IGNORE);
            CHECK(flag, "iteration %d: the %s neighbour had not sent when the compute region began", it,
                  k ? "right" : "left");
        }
        MPI_Waitall(4, rq, MPI_STATUSES_IGNORE);
        CHECK(in[0] == (long) left * 1000 + it && in[1] == (long) right * 1000 + it, "iteration %d: got %ld %ld", it, in[0],
              in[1]);
        total += in[0] + in[1];
        Toucan_Region(TOUCAN_END);
    }
    ct_say(rank, "received total %ld", total);
    free(pids);
    return ct_finish(rank, errs);
}
