/* deadlock_rma_lock: rank 0 holds an exclusive lock on its own window memory and waits for
 * a message from rank 1, which is queued behind that lock in MPI_Win_lock (issue 18: a lock
 * waiter parks, so the deadlock detector must name it and end the job). In one process the
 * waiter parks in the process's lock queue; across processes (layouts 2x1, 2x2) it waits on
 * the lock word in rank 0's process, parked while the worker's hooks try for it. */
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    int rank, mem[4], x = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Win win;
    MPI_Win_create(mem, sizeof mem, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    if (rank == 0)
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Recv(&x, 1, MPI_INT, 1, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Win_unlock(0, win);
    } else {
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win); /* never granted */
        if (rank == 1)
            MPI_Send(&x, 1, MPI_INT, 0, 5, MPI_COMM_WORLD);
        MPI_Win_unlock(0, win);
    }
    printf("rank %d: OK\n", rank);
    MPI_Finalize();
    return 0;
}
