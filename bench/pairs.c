/* bench/pairs.c: independent ping-pong pairs, to see whether pairs that share nothing slow
 * each other down (issue 14, deliverable 5: no process-wide lock on the hot path).
 *
 *   pairs [-n ITERATIONS] [-s STRIDE] [-r REPEATS]
 *
 * Rank r exchanges 8-byte messages with rank r ^ STRIDE (default 1, or $PAIRS_STRIDE),
 * ITERATIONS round trips (default 100000) per repetition, first with blocking
 * MPI_Send/MPI_Recv, then with MPI_Irecv + MPI_Isend + MPI_Waitall on both sides. Prints the
 * median over REPEATS repetitions (default 3) of the messages per second of all pairs
 * together (2 messages per round trip), as bench/lib.sh reads them:
 *   send 8 RATE
 *   isend 8 RATE
 *   # end: 2 measurements
 * Every payload (the round-trip counter) is checked; an error makes the exit status 1. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    long n = 100000;
    int stride = getenv("PAIRS_STRIDE") ? atoi(getenv("PAIRS_STRIDE")) : 1, reps = 3, opt;
    MPI_Init(&argc, &argv);
    while ((opt = getopt(argc, argv, "n:s:r:")) != -1) {
        switch (opt) {
        case 'n': n = atol(optarg); break;
        case 's': stride = atoi(optarg); break;
        case 'r': reps = atoi(optarg); break;
        default: MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int peer = rank ^ stride;
    if (stride <= 0 || size % (2 * stride) != 0 || peer >= size) {
        if (rank == 0)
            fprintf(stderr, "pairs: %d ranks cannot be paired with stride %d\n", size, stride);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (reps < 1 || reps > 99)
        reps = 3;
    long errors = 0;
    for (int nb = 0; nb < 2; nb++) {
        double rate[99];
        for (int rep = 0; rep < reps; rep++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (long i = 0; i < n; i++) {
                long out = i, in = -1;
                if (nb) {
                    MPI_Request r[2];
                    MPI_Status st[2];
                    MPI_Irecv(&in, 1, MPI_LONG, peer, 1, MPI_COMM_WORLD, &r[0]);
                    MPI_Isend(&out, 1, MPI_LONG, peer, 1, MPI_COMM_WORLD, &r[1]);
                    MPI_Waitall(2, r, st);
                } else if (rank < peer) {
                    MPI_Send(&out, 1, MPI_LONG, peer, 1, MPI_COMM_WORLD);
                    MPI_Recv(&in, 1, MPI_LONG, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else {
                    MPI_Recv(&in, 1, MPI_LONG, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(&out, 1, MPI_LONG, peer, 1, MPI_COMM_WORLD);
                }
                errors += in != i;
            }
            double t = MPI_Wtime() - t0, tmax;
            MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            rate[rep] = (double)size * n / tmax;
        }
        /* median: insertion sort of a few values */
        for (int i = 1; i < reps; i++)
            for (int j = i; j > 0 && rate[j - 1] > rate[j]; j--) {
                double x = rate[j];
                rate[j] = rate[j - 1];
                rate[j - 1] = x;
            }
        if (rank == 0)
            printf("%s 8 %.0f\n", nb ? "isend" : "send", rate[reps / 2]);
    }
    long all = 0;
    MPI_Reduce(&errors, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        if (all)
            printf("# errors %ld\n", all);
        printf("# end: 2 measurements\n");
    }
    MPI_Finalize();
    return all != 0;
}
