/* p2parrived.c: MPI_Sendrecv and MPI_Recv of messages that wait in the real MPI (rank 0 computes
 * 20 ms without MPI while rank 1 sends 8), for callgrind with --toggle-collect=MPI_Sendrecv
 * (issue 16, session 23, docs/p2p.md "Session 23 (sr16)"). usage: p2parrived WINDOWS [BYTES] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#define WIN 8
static void spin_ms(double ms) { double t = MPI_Wtime(); volatile double x = 0; while ((MPI_Wtime() - t) * 1e3 < ms) x += 1; }
int main(int argc, char **argv)
{
    int rank, n = argc > 1 ? atoi(argv[1]) : 100, len = argc > 2 ? atoi(argv[2]) : 8;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int peer = rank ^ 1, bad = 0;
    char *s = calloc(len, 1), *r = calloc(len, 1);
    MPI_Status st;
    for (int w = 0; w < n; w++) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 1) {
            for (int j = 0; j < WIN; j++) { s[0] = j; MPI_Send(s, len, MPI_BYTE, peer, j + 1, MPI_COMM_WORLD); }
            for (int j = 0; j < WIN; j++) MPI_Recv(r, len, MPI_BYTE, peer, 100 + j, MPI_COMM_WORLD, &st);
        } else {
            spin_ms(20);
            for (int j = 0; j < WIN; j++) {
                MPI_Sendrecv(s, len, MPI_BYTE, peer, 100 + j, r, len, MPI_BYTE, peer, j + 1, MPI_COMM_WORLD, &st);
                bad += r[0] != j;
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 1) {
            for (int j = 0; j < WIN; j++) { s[0] = j; MPI_Send(s, len, MPI_BYTE, peer, j + 1, MPI_COMM_WORLD); }
        } else {
            spin_ms(20);
            for (int j = 0; j < WIN; j++) { MPI_Recv(r, len, MPI_BYTE, peer, j + 1, MPI_COMM_WORLD, &st); bad += r[0] != j; }
        }
    }
    if (rank == 0) printf("bad %d\n", bad);
    MPI_Finalize();
    return 0;
}
