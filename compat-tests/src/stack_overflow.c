/* A rank that recurses without bound must not die with a bare SIGSEGV: the job ends with a
 * message naming the virtual rank and its stack size (Toucan only; see .expect). */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int deep(int n)
{
    volatile char frame[2048];
    memset((char *) frame, n & 0xff, sizeof frame);
    return n == 0 ? frame[1] : deep(n - 1) + frame[7];
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == size - 1)
        printf("rank %d: %d\n", rank, deep(1 << 30));
    MPI_Barrier(MPI_COMM_WORLD);
    printf("rank %d: OK\n", rank);
    MPI_Finalize();
    return 0;
}
