/*
 * nbc_pure: IMB-NBC's t_pure beside IMB-MPI1's t_avg, with the slowest rank shown (issue 16,
 * coll7). IMB-NBC reports the pure time (MPI_I<kind> + MPI_Wait) of the rank whose overlap
 * run took longest, in practice the slowest rank, and IMB-MPI1 the mean over the ranks of
 * the blocking call; at V > 1 the two differ most (the first caller of a process waits
 * through its siblings' calls). This program times both forms the way IMB does (each call
 * timed alone, a barrier between calls, on a split of MPI_COMM_WORLD) and prints, per kind
 * and size:
 *
 *   KIND SIZE  blk avg A min B max C | nb avg D min E max F | nbmax/blkavg R1 nbavg/blkavg R2
 *
 * R1 is the ratio issue 16's acceptance line reads from IMB (t_pure within 1.5x of t_avg).
 * KIND is bcast (MPI_BYTE from rank 0; the data checked on every call), allreduce
 * (MPI_SUM of SIZE/8 doubles), allgather or alltoall (nbc9: SIZE bytes per block, as IMB's
 * message length; every block checked on every call); SIZE 8 B, 1 KiB, 64 KiB unless SIZES.
 *
 *   nbc_pure [ITERS [KINDS [SIZES]]]  ITERS calls per form (default 1000, plus a tenth to
 *                                warm up); KINDS a comma-separated subset of
 *                                bcast,allreduce,allgather,alltoall; SIZES comma-separated
 *                                byte counts
 *   NBC_PURE_RANKS=1             also print every rank's mean (rank order)
 *
 * Built with any MPI (mpicc, wrappers/toucancc): e.g.
 *   TOUCAN_V=4 mpirun -np 2 ./nbc_pure 1000        (Toucan 2x4)
 *   mpirun -np 8 ./nbc_pure 1000                   (MPICH beside)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void stats(MPI_Comm comm, double t, double *avg, double *mn, double *mx)
{
    int n;
    MPI_Comm_size(comm, &n);
    MPI_Allreduce(&t, avg, 1, MPI_DOUBLE, MPI_SUM, comm);
    *avg /= n;
    MPI_Allreduce(&t, mn, 1, MPI_DOUBLE, MPI_MIN, comm);
    MPI_Allreduce(&t, mx, 1, MPI_DOUBLE, MPI_MAX, comm);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int iters = argc > 1 ? atoi(argv[1]) : 1000;
    const char *kinds = argc > 2 ? argv[2] : "bcast,allreduce";
    long sizes[16] = {8, 1024, 65536};
    int nsizes = 3;
    if (argc > 3) {
        nsizes = 0;
        for (char *p = argv[3]; *p && nsizes < 16; p++) {
            sizes[nsizes++] = strtol(p, &p, 10);
            if (!*p)
                break;
        }
    }
    long maxsz = 8;
    for (int si = 0; si < nsizes; si++)
        if (sizes[si] > maxsz)
            maxsz = sizes[si];
    int rank, n;
    MPI_Comm comm;
    MPI_Comm_split(MPI_COMM_WORLD, 0, 0, &comm);
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &n);
    if (iters < 1)
        iters = 1;
    char *buf = malloc(maxsz * n), *rbuf = malloc(maxsz * n);
    double *all = malloc(sizeof(double) * n);
    memset(rbuf, 0, maxsz * n);
    static const char *names[] = {"bcast", "allreduce", "allgather", "alltoall"};
    for (int k = 0; k < 4; k++) {
        const char *kn = names[k];
        if (!strstr(kinds, kn))
            continue;
        for (int si = 0; si < nsizes; si++) {
            long sz = sizes[si];
            double res[2][3];
            for (int form = 0; form < 2; form++) {
                double t = 0;
                for (int i = -iters / 10; i < iters; i++) {
                    if (k >= 2)
                        /* block j of rank r: byte (r + 7 j + i) */
                        for (int j = 0; j < (k == 3 ? n : 1); j++)
                            memset(buf + j * sz, (rank + 7 * j + i) & 0xff, sz);
                    else
                        memset(buf, rank == 0 ? i & 0xff : 0, sz);
                    MPI_Request r;
                    double t0 = MPI_Wtime();
                    if (k == 0) {
                        if (form == 0)
                            MPI_Bcast(buf, (int)sz, MPI_BYTE, 0, comm);
                        else {
                            MPI_Ibcast(buf, (int)sz, MPI_BYTE, 0, comm, &r);
                            MPI_Wait(&r, MPI_STATUS_IGNORE);
                        }
                    } else if (k == 1) {
                        if (form == 0)
                            MPI_Allreduce(buf, rbuf, (int)(sz / 8), MPI_DOUBLE, MPI_SUM, comm);
                        else {
                            MPI_Iallreduce(buf, rbuf, (int)(sz / 8), MPI_DOUBLE, MPI_SUM, comm, &r);
                            MPI_Wait(&r, MPI_STATUS_IGNORE);
                        }
                    } else if (k == 2) {
                        if (form == 0)
                            MPI_Allgather(buf, (int)sz, MPI_BYTE, rbuf, (int)sz, MPI_BYTE, comm);
                        else {
                            MPI_Iallgather(buf, (int)sz, MPI_BYTE, rbuf, (int)sz, MPI_BYTE, comm, &r);
                            MPI_Wait(&r, MPI_STATUS_IGNORE);
                        }
                    } else if (form == 0) {
                        MPI_Alltoall(buf, (int)sz, MPI_BYTE, rbuf, (int)sz, MPI_BYTE, comm);
                    } else {
                        MPI_Ialltoall(buf, (int)sz, MPI_BYTE, rbuf, (int)sz, MPI_BYTE, comm, &r);
                        MPI_Wait(&r, MPI_STATUS_IGNORE);
                    }
                    double t1 = MPI_Wtime();
                    if (i >= 0)
                        t += t1 - t0;
                    if (k == 0 && ((unsigned char)buf[0] != (unsigned char)(i & 0xff) ||
                                   (unsigned char)buf[sz - 1] != (unsigned char)(i & 0xff))) {
                        fprintf(stderr, "nbc_pure: rank %d: wrong broadcast data\n", rank);
                        MPI_Abort(MPI_COMM_WORLD, 1);
                    }
                    if (k >= 2)
                        for (int q = 0; q < n; q++) {
                            /* from rank q: its block 0 (allgather) or its block for me */
                            unsigned char want = (unsigned char)((q + 7 * (k == 3 ? rank : 0) + i) & 0xff);
                            if ((unsigned char)rbuf[q * sz] != want || (unsigned char)rbuf[q * sz + sz - 1] != want) {
                                fprintf(stderr, "nbc_pure: rank %d: wrong %s data from %d\n", rank, kn, q);
                                MPI_Abort(MPI_COMM_WORLD, 1);
                            }
                        }
                    MPI_Barrier(comm);
                }
                t = t / iters * 1e6;
                stats(comm, t, &res[form][0], &res[form][1], &res[form][2]);
                if (getenv("NBC_PURE_RANKS")) {
                    MPI_Gather(&t, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, comm);
                    if (rank == 0) {
                        printf("# %s %ld %s per rank:", kn, sz, form ? "nb" : "blk");
                        for (int q = 0; q < n; q++)
                            printf(" %.2f", all[q]);
                        printf("\n");
                    }
                }
            }
            if (rank == 0)
                printf("%-9s %6ld  blk avg %7.2f min %7.2f max %7.2f | nb avg %7.2f min %7.2f max %7.2f | "
                       "nbmax/blkavg %.2f nbavg/blkavg %.2f\n",
                       kn, sz, res[0][0], res[0][1], res[0][2], res[1][0], res[1][1], res[1][2],
                       res[1][2] / res[0][0], res[1][0] / res[0][0]);
        }
    }
    free(buf);
    free(rbuf);
    free(all);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return 0;
}
