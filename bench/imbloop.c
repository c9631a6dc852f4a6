/* imbloop.c: one blocking collective timed per call as IMB-MPI1 times it (MPI_Wtime around
 * the call, then MPI_Barrier between calls with SYNC 1, back to back with SYNC 0), printing
 * each rank's mean time per call and per barrier in ns, so the root's and the other ranks'
 * shares of IMB's t_avg can be told apart (session 23, docs/collectives.md "Session 23
 * (v1coll16)"). Two passes of ITERS calls; the second is reported. SYNC 2 (session 25,
 * bcastq16) separates the calls with a gather-release barrier made of empty point-to-point
 * messages (every rank to rank 0, then rank 0 to every rank: rank 0 leaves it first) in place
 * of MPI_Barrier, to show how much of a rooted call's time is the barrier's exit order.
 *
 *   imbloop KIND BYTES ITERS [SYNC]      KIND: bcast scatter allgather gather barrier
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    const char *k = argv[1]; int n = atoi(argv[2]); int it = atoi(argv[3]); int sync = argc > 4 ? atoi(argv[4]) : 1;
    int r, p; MPI_Comm_rank(MPI_COMM_WORLD, &r); MPI_Comm_size(MPI_COMM_WORLD, &p);
    char *s = calloc(n * p + 64, 1), *d = calloc(n * p + 64, 1);
    double tot = 0, tb = 0;
    for (int rep = 0; rep < 2; rep++) {
        tot = 0; tb = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = 0; i < it; i++) {
            double t1 = MPI_Wtime();
            if (!strcmp(k, "bcast")) MPI_Bcast(r ? d : s, n, MPI_BYTE, 0, MPI_COMM_WORLD);
            else if (!strcmp(k, "scatter")) MPI_Scatter(s, n, MPI_BYTE, d, n, MPI_BYTE, 0, MPI_COMM_WORLD);
            else if (!strcmp(k, "allgather")) MPI_Allgather(s, n, MPI_BYTE, d, n, MPI_BYTE, MPI_COMM_WORLD);
            else if (!strcmp(k, "gather")) MPI_Gather(s, n, MPI_BYTE, d, n, MPI_BYTE, 0, MPI_COMM_WORLD);
            else if (!strcmp(k, "barrier")) MPI_Barrier(MPI_COMM_WORLD);
            double t2 = MPI_Wtime();
            tot += t2 - t1;
            if (sync == 2) {
                if (r == 0) {
                    for (int q = 1; q < p; q++) MPI_Recv(NULL, 0, MPI_BYTE, q, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    for (int q = 1; q < p; q++) MPI_Send(NULL, 0, MPI_BYTE, q, 99, MPI_COMM_WORLD);
                } else {
                    MPI_Send(NULL, 0, MPI_BYTE, 0, 99, MPI_COMM_WORLD);
                    MPI_Recv(NULL, 0, MPI_BYTE, 0, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                }
            } else if (sync) MPI_Barrier(MPI_COMM_WORLD);
            tb += MPI_Wtime() - t2;
        }
    }
    double all[64];
    double mine[2] = {tot / it * 1e9, tb / it * 1e9};
    MPI_Gather(mine, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (r == 0) {
        printf("%s %d sync%d:", k, n, sync);
        double a = 0;
        for (int i = 0; i < p; i++) { printf(" r%d %.0f (bar %.0f)", i, all[2*i], all[2*i+1]); a += all[2*i]; }
        printf(" avg %.0f\n", a / p);
    }
    MPI_Finalize();
    return 0;
}
