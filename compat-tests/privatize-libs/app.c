/* The program: links libphysics.so (which links libputil.so), both built
 * beside it. Each rank writes its rank into the libraries' globals, lets the
 * other ranks run, and checks it still sees its own values. */
#include <mpi.h>
#include <stdio.h>

extern int phys_counter;
extern int (*phys_callback)(int);
int phys_step(int rank);
int phys_check(int rank);
int *phys_counter_addr(void);
int phys_rank_sum(void);

int app_global;
static int callback(int r) { return app_global + 1 + (r - app_global); }

int main(int argc, char **argv)
{
    int rank, size, token;
    int init_ok = phys_counter == 110; /* the library's constructor ran once, for this rank */
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    app_global = rank;
    phys_callback = callback;
    phys_counter = 1000 * rank;
    int calls = phys_step(rank);
    MPI_Barrier(MPI_COMM_WORLD);
    token = rank;
    MPI_Sendrecv_replace(&token, 1, MPI_INT, (rank + 1) % size, 0, (rank + size - 1) % size, 0, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
    int sum = phys_rank_sum();
    int ok = init_ok && calls == 101 && phys_check(rank) && phys_counter == 1000 * rank + 1 &&
             phys_counter_addr() == &phys_counter && sum == size * (size - 1) / 2;
    if (ok)
        printf("rank %d: OK\n", rank);
    else
        printf("rank %d: FAILED (initial %d, calls %d, check %d, counter %d, same address %d, rank sum %d)\n", rank,
               init_ok, calls, phys_check(rank), phys_counter, phys_counter_addr() == &phys_counter, sum);
    fflush(stdout);
    MPI_Finalize();
    return !ok;
}
