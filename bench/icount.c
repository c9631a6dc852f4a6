/* icount: one MPI operation repeated, for counting the instructions it costs under
 * valgrind (bench/run-icount.sh). Instruction counts do not depend on the load of the machine,
 * so two builds of the library can be compared on a busy host, where times cannot.
 *
 *   icount KERNEL ITERS
 *
 *   lat        MPI_Send / MPI_Recv ping-pong of 8 bytes between ranks 0 and 1 (one iteration
 *              is a round trip); other ranks wait in the final barrier
 *   rate       rank 0 sends a window of 64 8-byte MPI_Isend, rank 1 pre-posts 64 MPI_Irecv,
 *              both MPI_Waitall; one iteration is a window
 *   sendrecv   ranks 0 and 1 exchange 8 bytes with MPI_Sendrecv (one iteration: one call each)
 *   barrier    MPI_Barrier on MPI_COMM_WORLD
 *   allreduce  MPI_Allreduce of one double (MPI_SUM) on MPI_COMM_WORLD
 *   reduce     MPI_Reduce of one double (MPI_SUM) to rank 0, then MPI_Barrier, as IMB's
 *              Reduce loop does (coll4)
 *   reduce1k   the same with 256 floats (1 KiB, IMB's Reduce at 1024 bytes)
 *   gather     MPI_Gather of 8 bytes per rank to rank 0, then MPI_Barrier, as IMB's Gather
 *              loop does (coll12)
 *
 * Meant for ranks that are subranks of one process (TOUCAN_V=V, no mpirun): between
 * processes a waiting rank polls, and what it counts then depends on timing. Rank 0 prints
 * "icount KERNEL ITERS CHECK" with a checksum of the data, so that a wrong answer shows.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW 64

int main(int argc, char **argv)
{
    int rank, size;
    long iters;
    double check = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 3 || (iters = atol(argv[2])) < 0) {
        if (rank == 0)
            fprintf(stderr, "usage: icount lat|rate|sendrecv|barrier|allreduce|reduce ITERS\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *k = argv[1];
    if ((strcmp(k, "lat") == 0 || strcmp(k, "rate") == 0 || strcmp(k, "sendrecv") == 0) && size < 2) {
        if (rank == 0)
            fprintf(stderr, "icount: %s needs at least 2 ranks\n", k);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (strcmp(k, "lat") == 0) {
        double buf = 1.0;
        for (long i = 0; i < iters && rank < 2; i++) {
            if (rank == 0) {
                MPI_Send(&buf, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD);
                MPI_Recv(&buf, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(&buf, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                buf += 1.0;
                MPI_Send(&buf, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD);
            }
        }
        check = buf;
    } else if (strcmp(k, "rate") == 0) {
        double bufs[WINDOW];
        MPI_Request reqs[WINDOW];
        for (int j = 0; j < WINDOW; j++)
            bufs[j] = j;
        for (long i = 0; i < iters && rank < 2; i++) {
            for (int j = 0; j < WINDOW; j++) {
                if (rank == 0)
                    MPI_Isend(&bufs[j], 1, MPI_DOUBLE, 1, j, MPI_COMM_WORLD, &reqs[j]);
                else
                    MPI_Irecv(&bufs[j], 1, MPI_DOUBLE, 0, j, MPI_COMM_WORLD, &reqs[j]);
            }
            MPI_Waitall(WINDOW, reqs, MPI_STATUSES_IGNORE);
        }
        for (int j = 0; j < WINDOW; j++)
            check += bufs[j];
    } else if (strcmp(k, "sendrecv") == 0) {
        double out = rank + 1.0, in = 0;
        for (long i = 0; i < iters && rank < 2; i++) {
            MPI_Sendrecv(&out, 1, MPI_DOUBLE, 1 - rank, 0, &in, 1, MPI_DOUBLE, 1 - rank, 0, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
            out = in + 1.0;
        }
        check = out;
    } else if (strcmp(k, "barrier") == 0) {
        for (long i = 0; i < iters; i++)
            MPI_Barrier(MPI_COMM_WORLD);
        check = size;
    } else if (strcmp(k, "allreduce") == 0) {
        double in = rank + 1, out = 0;
        for (long i = 0; i < iters; i++)
            MPI_Allreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        check = out;
    } else if (strcmp(k, "reduce") == 0) { /* coll4 */
        double in = rank + 1, out = 0;
        for (long i = 0; i < iters; i++) {
            MPI_Reduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
            MPI_Barrier(MPI_COMM_WORLD);
        }
        check = rank == 0 ? out : 0;
    } else if (strcmp(k, "reduce1k") == 0) { /* coll12 */
        float in[256], out[256] = {0};
        for (int j = 0; j < 256; j++)
            in[j] = (float)(rank + j % 3);
        for (long i = 0; i < iters; i++) {
            MPI_Reduce(in, out, 256, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
            MPI_Barrier(MPI_COMM_WORLD);
        }
        check = rank == 0 ? out[255] : 0;
    } else if (strcmp(k, "gather") == 0) { /* coll12 */
        unsigned char in[8], *out = malloc(8 * (size_t)size);
        memset(in, rank + 1, sizeof in);
        memset(out, 0, 8 * (size_t)size);
        for (long i = 0; i < iters; i++) {
            MPI_Gather(in, 8, MPI_BYTE, out, 8, MPI_BYTE, 0, MPI_COMM_WORLD);
            MPI_Barrier(MPI_COMM_WORLD);
        }
        for (int p = 0; rank == 0 && p < size; p++)
            check += out[8 * p + 7];
        free(out);
    } else {
        if (rank == 0)
            fprintf(stderr, "icount: unknown kernel %s\n", k);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        printf("icount %s %ld %.1f\n", k, iters, check);
    MPI_Finalize();
    return 0;
}
