/* For resources.sh: every rank exchanges a few messages, then the last rank ends the job in
 * the way argv[1] says (abort: MPI_Abort; segv: a null store; nofinalize: it returns from
 * main without MPI_Finalize; hang: it stops while the others wait in a barrier, for the
 * script to kill its process or signal the launcher) and the others wait in a barrier.
 * "clean" finishes normally. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int rank, size, v = 0;
    const char *how = argc > 1 ? argv[1] : "clean";
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Allreduce(&rank, &v, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == size - 1) {
        if (!strcmp(how, "abort"))
            MPI_Abort(MPI_COMM_WORLD, 3);
        if (!strcmp(how, "segv")) {
            volatile long zero = 0;
            *(volatile int *) zero = 1;
        }
        if (!strcmp(how, "nofinalize"))
            return 0;
        if (!strcmp(how, "hang")) {
            printf("ready %d\n", (int) getpid());
            fflush(stdout);
            for (;;)
                sleep(1);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
