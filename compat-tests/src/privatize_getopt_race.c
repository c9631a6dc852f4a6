/* Rank 0 reads optind and optarg in a loop without parsing while every other rank parses its
 * own arguments with getopt over and over: rank 0 must always see its own values (1 and
 * NULL), never another rank's. Under Toucan's SMP mode the other ranks parse on other workers
 * at the same moment (issue 14: the C library's parser has variables of its own there). */
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int rank, bad = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        for (long i = 0; i < 20000000L; i++)
            if (*(volatile int *) &optind != 1 || *(char *volatile *) &optarg != NULL)
                bad++;
    } else {
        char a0[] = "prog", a1[] = "-n", a2[] = "42", a3[] = "-v";
        char *av[] = {a0, a1, a2, a3, NULL};
        for (int j = 0; j < 20000; j++) {
            optind = 1;
            if (getopt(4, av, "n:v") != 'n' || optarg != av[2] || optind != 3)
                bad++;
            if (getopt(4, av, "n:v") != 'v' || getopt(4, av, "n:v") != -1 || optind != 4)
                bad++;
        }
    }
    if (bad)
        printf("rank %d: %d wrong values of optind/optarg\n", rank, bad);
    else
        printf("rank %d: OK\n", rank);
    MPI_Finalize();
    return 0;
}
