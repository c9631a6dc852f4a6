/* deadlock_rma: rank 1 waits in MPI_Win_wait for an origin that never starts an access
 * epoch, while rank 0 waits in MPI_Win_fence (issue 18): the deadlock detector must name
 * both calls and end the job. */
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    int rank, mem[4];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Win win;
    MPI_Win_create(mem, sizeof mem, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Group wg, g0;
    MPI_Win_get_group(win, &wg);
    int zero = 0;
    MPI_Group_incl(wg, 1, &zero, &g0);
    if (rank == 1) {
        MPI_Win_post(g0, 0, win);
        MPI_Win_wait(win); /* rank 0 never starts/completes */
    } else {
        MPI_Win_fence(0, win); /* mismatched: rank 0 in fence */
    }
    printf("rank %d: OK\n", rank);
    MPI_Finalize();
    return 0;
}
