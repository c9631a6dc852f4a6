/* postmany.c (session 29, lane29): rank 0 posts one MPI_Irecv per other rank (rank order,
 * barrier; every other rank sends 8 B after it; rank 0 waits for all. Prints us per message. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int me, n; MPI_Comm_rank(MPI_COMM_WORLD, &me); MPI_Comm_size(MPI_COMM_WORLD, &n);
    int it = argc > 1 ? atoi(argv[1]) : 50, rev = argc > 2 ? atoi(argv[2]) : 0;
    double *buf = malloc(sizeof(double) * n); MPI_Request *rq = malloc(sizeof(MPI_Request) * n);
    double t = 0, x = me;
    for (int k = 0; k < it + 2; k++) {
        double t0 = MPI_Wtime();
        if (me == 0) {
            for (int i = 1; i < n; i++) { int s = rev ? n - i : i; MPI_Irecv(&buf[s], 1, MPI_DOUBLE, s, 7, MPI_COMM_WORLD, &rq[i - 1]); }
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Waitall(n - 1, rq, MPI_STATUSES_IGNORE);
            for (int i = 1; i < n; i++) if (buf[i] != i) { printf("bad\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
        } else {
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Send(&x, 1, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (k >= 2) t += MPI_Wtime() - t0;
    }
    if (me == 0) printf("n %d rev %d: %.3f us per message\n", n, rev, t / it / (n - 1) * 1e6);
    MPI_Finalize();
    return 0;
}
