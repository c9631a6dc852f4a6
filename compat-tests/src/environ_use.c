/* A program that reads `environ` directly (which gives the executable its own copy of the
 * variable) must still initialise MPI and see its environment in every rank. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include "ct.h"

extern char **environ;

int main(int argc, char **argv)
{
    int rank, errs = 0, n = 0;
    char **e;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (e = environ; e && *e; e++)
        n++;
    CHECK(n > 0, "environ is empty");
    CHECK(getenv("PATH") != NULL, "getenv(PATH) failed");
    return ct_finish(rank, errs);
}
