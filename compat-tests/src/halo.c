/* An application-like kernel: explicit 1-D heat diffusion on a global grid
 * of 96 cells per rank, block-distributed, fixed boundaries. Each step
 * exchanges one ghost cell with each neighbour (Irecv/Isend/Waitall), then
 * updates; every 10 steps an Allreduce gives the global residual. Rank 0
 * prints the residual history and the final checksum with %.6e; every rank
 * prints its local checksum. */
#include "ct.h"
#include <math.h>

#define NLOC 96
#define STEPS 60

int main(int argc, char **argv)
{
    int rank, size, errs = 0, i, step;
    int left, right;
    double *u, *un, local, global, res;
    MPI_Request rq[4];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    left = rank > 0 ? rank - 1 : MPI_PROC_NULL;
    right = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;

    u = ct_malloc(sizeof(double) * (NLOC + 2));
    un = ct_malloc(sizeof(double) * (NLOC + 2));
    for (i = 0; i < NLOC + 2; i++) {
        long g = (long) rank * NLOC + i - 1;  /* global index of cell i */
        u[i] = (double) ((g * 37) % 101) / 101.0;
    }
    /* fixed boundary values at both ends of the global domain */
    if (left == MPI_PROC_NULL)
        u[0] = 1.0;
    if (right == MPI_PROC_NULL)
        u[NLOC + 1] = 0.0;
    un[0] = u[0];
    un[NLOC + 1] = u[NLOC + 1];

    for (step = 1; step <= STEPS; step++) {
        MPI_Irecv(&u[0], 1, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &rq[0]);
        MPI_Irecv(&u[NLOC + 1], 1, MPI_DOUBLE, right, 0, MPI_COMM_WORLD, &rq[1]);
        MPI_Isend(&u[1], 1, MPI_DOUBLE, left, 0, MPI_COMM_WORLD, &rq[2]);
        MPI_Isend(&u[NLOC], 1, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &rq[3]);
        MPI_Waitall(4, rq, MPI_STATUSES_IGNORE);
        local = 0.0;
        for (i = 1; i <= NLOC; i++) {
            un[i] = u[i] + 0.25 * (u[i - 1] - 2.0 * u[i] + u[i + 1]);
            local += (un[i] - u[i]) * (un[i] - u[i]);
        }
        for (i = 1; i <= NLOC; i++)
            u[i] = un[i];
        if (step % 10 == 0) {
            MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            res = sqrt(global);
            CHECK(res >= 0.0 && res < 10.0, "step %d: residual out of range", step);
            if (rank == 0)
                ct_say(rank, "step %d residual %.6e", step, res);
        }
    }

    local = 0.0;
    for (i = 1; i <= NLOC; i++)
        local += u[i] * (double) (i + rank * NLOC);
    ct_say(rank, "local checksum %.6e", local);
    MPI_Reduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        ct_say(rank, "global checksum %.6e", global);

    free(u);
    free(un);
    return ct_finish(rank, errs);
}
