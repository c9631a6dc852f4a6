/* Under the default MPI_ERRORS_ARE_FATAL, rank 1 (only) sends to an
 * invalid rank. The job must end with a non-zero status; under Toucan the
 * error report must name the virtual rank and the call (see err_fatal.expect).
 * The other ranks wait in a barrier that can never complete. */
#include "ct.h"

int main(int argc, char **argv)
{
    int rank, size, buf = 42;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        ct_say(rank, "skipped (needs >= 2 ranks)");
        return ct_finish(rank, 0);
    }
    if (rank == 1) {
        ct_say(rank, "sending to invalid rank %d", size + 5);
        MPI_Send(&buf, 1, MPI_INT, size + 5, 0, MPI_COMM_WORLD);
        ct_say(rank, "FAIL: MPI_Send to an invalid rank returned");
        MPI_Finalize();
        return 1;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    ct_say(rank, "FAIL: barrier completed without rank 1");
    MPI_Finalize();
    return 1;
}
