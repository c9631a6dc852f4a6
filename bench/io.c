/* bench/io.c - MPI-IO benchmark (issue 19), run by bench/run-io.sh.
 *
 *   io coll  [-t TOTAL] [-b BLOCK] [-e E] [-r REPS] [-i KEY=VALUE]... FILE
 *       collective write then read of TOTAL bytes (default 64 MiB) in BLOCK-byte blocks
 *       (default 64 KiB) interleaved over size*E "ranks": block i belongs to emulated rank
 *       i % (size*E), and real rank r does the blocks of emulated ranks r*E .. r*E+E-1 (E=1: the
 *       plain interleaved pattern; MPICH -np 2 with E=8 moves the bytes of 16 ranks as 2
 *       processes, the same pattern Toucan at n=2, V=8 runs as 16 ranks).
 *   io indep [-t PER_RANK] [-e E] [-r REPS] FILE
 *       independent MPI_File_write_at of PER_RANK bytes (default 1 MiB) per emulated rank.
 *   io strided [-t TOTAL] [-b PIECE] [-r REPS] [-i KEY=VALUE]... FILE
 *       independent non-contiguous reads (data sieving, romio_ds_read): the file (TOTAL bytes,
 *       default 64 MiB) is PIECE-byte pieces (default 8) dealt round-robin to the ranks; each
 *       rank reads its pieces through a view with one MPI_File_read_at. Prints
 *       "strided_read" (compare -i romio_ds_read=disable).
 *   io posix [-t TOTAL] [-r REPS] [-f] FILE
 *       the lower bound of the collective test without MPI-IO: each rank writes its
 *       contiguous share of TOTAL bytes (default 64 MiB; at -np 1 all of it) from a buffer the
 *       size of its share (touched beforehand, as the ranks' buffers are) with pwrite of
 *       1 MiB, then reads it back into that buffer with pread (-f: into a fresh, untouched
 *       buffer each repetition, page faults included); prints "posix_write" and
 *       "posix_read". Unlike dd (a 1 MiB buffer that stays in cache), the data come from or
 *       land in memory the size of the file, as the ranks' data do; at -np 2 two processes
 *       move their halves at once, as the two aggregators of the 2x8 test do.
 *   io nbcoll [-t TOTAL] [-b BLOCK] [-r REPS] [-i KEY=VALUE]... FILE
 *       the two ways of a nonblocking collective write (session io5): TOTAL bytes (default
 *       8 MiB) in BLOCK-byte blocks (default 1 KiB) interleaved over the ranks, written with
 *       MPI_File_iwrite_all + MPI_Wait (Toucan runs it as a nonblocking independent access:
 *       each rank's pieces on the I/O thread, sieved) and with MPI_File_write_all (the
 *       collective two-phase exchange a collective iwrite_all would run); every byte read
 *       back and checked after each. Prints "nb_iwrite_all", "nb_write_all" and the ratio.
 *   io overlap [-t BYTES] [-r REPS] FILE
 *       deliverable 3 of the issue: even ranks write BYTES (default 16 MiB) to their own file
 *       (MPI_COMM_SELF), 1 MiB at a time, each followed by MPI_File_sync, while odd ranks compute (a fixed loop): with the
 *       I/O thread the job takes about the longer of the two, without it (TOUCAN_IO_THREAD=0,
 *       or one subrank per worker) their sum. Prints "overlap total io compute" seconds.
 *
 * -i gives the collective test's files an info hint (e.g. -i toucan_cb_pipeline=disable,
 * -i cb_buffer_size=67108864).
 * Prints, from rank 0, "OP seconds MiB/s" for the best of REPS repetitions (default 3) of
 * each operation, timed from a barrier to the last rank's end. No fsync: page cache speed,
 * as the dd line of run-io.sh. The file is deleted at the end. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <fcntl.h>
#include <unistd.h>

static double timed(MPI_Comm c, double t0)
{
    double dt = MPI_Wtime() - t0, mx;
    MPI_Allreduce(&dt, &mx, 1, MPI_DOUBLE, MPI_MAX, c);
    return mx;
}

int main(int argc, char **argv)
{
    int rank, size, i, e = 1, reps = 3, coll, bset = 0, fresh_read = 0;
    long long total = -1, block = 65536;
    const char *path = NULL, *mode;
    MPI_File fh;
    MPI_Datatype ft, t1;
    double best_w = 1e30, best_r = 1e30, t;
    MPI_Info info;
    char *buf;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 3) {
        if (rank == 0)
            fprintf(stderr, "usage: io coll|indep [-t BYTES] [-b BLOCK] [-e E] [-r REPS] FILE\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    mode = argv[1];
    coll = strcmp(mode, "coll") == 0;
    MPI_Info_create(&info);
    for (i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "-t") && i + 1 < argc)
            total = atoll(argv[++i]);
        else if (!strcmp(argv[i], "-b") && i + 1 < argc)
            block = atoll(argv[++i]), bset = 1;
        else if (!strcmp(argv[i], "-e") && i + 1 < argc)
            e = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-f"))
            fresh_read = 1;
        else if (!strcmp(argv[i], "-r") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-i") && i + 1 < argc) {
            char kv[512], *eq;
            snprintf(kv, sizeof kv, "%s", argv[++i]);
            eq = strchr(kv, '=');
            if (eq) {
                *eq = 0;
                MPI_Info_set(info, kv, eq + 1);
            }
        }
        else
            path = argv[i];
    }
    if (total < 0)
        total = coll || strcmp(mode, "posix") == 0 ? 64LL << 20
                : strcmp(mode, "overlap") == 0 ? 16LL << 20
                : strcmp(mode, "nbcoll") == 0  ? 8LL << 20
                                               : 1LL << 20;
    if (strcmp(mode, "strided") == 0) {
        long long piece = bset && block > 0 ? block : 8, per;
        per = total / size / piece * piece;
        buf = malloc(per > 0 ? per : 1);
        memset(buf, rank, per);
        MPI_Type_contiguous((int)piece, MPI_BYTE, &t1);
        MPI_Type_create_resized(t1, 0, (MPI_Aint)piece * size, &ft);
        MPI_Type_commit(&ft);
        MPI_Type_free(&t1);
        MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
        MPI_File_set_view(fh, (MPI_Offset)rank * piece, MPI_BYTE, ft, "native", info);
        MPI_File_write_at_all(fh, 0, buf, (int)per, MPI_BYTE, MPI_STATUS_IGNORE);
        for (int k = 0; k < reps; k++) {
            memset(buf, 0xff, per);
            MPI_Barrier(MPI_COMM_WORLD);
            t = MPI_Wtime();
            MPI_File_read_at(fh, 0, buf, (int)per, MPI_BYTE, MPI_STATUS_IGNORE);
            t = timed(MPI_COMM_WORLD, t);
            best_r = t < best_r ? t : best_r;
            for (long long q = 0; q < per; q += 4099)
                if (buf[q] != (char)rank) {
                    fprintf(stderr, "rank %d: strided read wrong at %lld\n", rank, q);
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
        }
        MPI_File_close(&fh);
        MPI_Type_free(&ft);
        if (rank == 0)
            printf("strided_read %.4f %.1f\n", best_r, (double)per * size / (1 << 20) / best_r);
        free(buf);
        MPI_Info_free(&info);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0)
            MPI_File_delete(path, MPI_INFO_NULL);
        MPI_Finalize();
        return 0;
    }
    if (strcmp(mode, "posix") == 0) {
        /* every rank its own contiguous share of the file (-np 1: all of it), pwrite/pread of
         * 1 MiB from/into a buffer the size of its share; with -f the read goes into fresh
         * memory (a new untouched buffer each repetition, first touches included) */
        long long share = total / size, base = (long long)rank * share;
        char *fresh;
        int fd;
        buf = malloc(share);
        memset(buf, 7, share);
        for (int k = 0; k < reps; k++) {
            if (rank == 0) {
                fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0644);
                close(fd);
            }
            MPI_Barrier(MPI_COMM_WORLD);
            fd = open(path, O_RDWR);
            if (fd < 0) {
                perror(path);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            MPI_Barrier(MPI_COMM_WORLD);
            t = MPI_Wtime();
            for (long long o = 0; o < share; o += 1 << 20) {
                long long n = share - o < (1 << 20) ? share - o : (1 << 20);
                if (pwrite(fd, buf + o, n, base + o) != n)
                    MPI_Abort(MPI_COMM_WORLD, 1);
            }
            t = timed(MPI_COMM_WORLD, t);
            best_w = t < best_w ? t : best_w;
            fresh = fresh_read ? malloc(share) : buf;
            MPI_Barrier(MPI_COMM_WORLD);
            t = MPI_Wtime();
            for (long long o = 0; o < share; o += 1 << 20) {
                long long n = share - o < (1 << 20) ? share - o : (1 << 20);
                if (pread(fd, fresh + o, n, base + o) != n)
                    MPI_Abort(MPI_COMM_WORLD, 1);
            }
            t = timed(MPI_COMM_WORLD, t);
            best_r = t < best_r ? t : best_r;
            if (fresh[share - 1] != 7)
                MPI_Abort(MPI_COMM_WORLD, 1);
            if (fresh != buf)
                free(fresh);
            close(fd);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            unlink(path);
            printf("posix_write %.4f %.1f\n", best_w, (double)share * size / (1 << 20) / best_w);
            printf("posix_read %.4f %.1f\n", best_r, (double)share * size / (1 << 20) / best_r);
        }
        free(buf);
        MPI_Finalize();
        return 0;
    }
    if (strcmp(mode, "nbcoll") == 0) {
        long long b = bset ? block : 1024, per = total / size / b * b, q;
        double best[2] = {1e30, 1e30};
        const char *what[2] = {"nb_iwrite_all", "nb_write_all"};
        MPI_Request rq;
        char *chk;
        buf = malloc(per > 0 ? per : 1);
        chk = malloc(per > 0 ? per : 1);
        MPI_Type_contiguous((int)b, MPI_BYTE, &t1);
        MPI_Type_create_resized(t1, 0, (MPI_Aint)b * size, &ft);
        MPI_Type_commit(&ft);
        MPI_Type_free(&t1);
        for (int k = 0; k < reps; k++)
            for (int way = 0; way < 2; way++) {
                for (q = 0; q < per; q++)
                    buf[q] = (char)(rank * 7 + q + k + way);
                if (rank == 0)
                    MPI_File_delete(path, MPI_INFO_NULL);
                MPI_Barrier(MPI_COMM_WORLD);
                MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
                MPI_File_set_view(fh, (MPI_Offset)rank * b, MPI_BYTE, ft, "native", info);
                MPI_Barrier(MPI_COMM_WORLD);
                t = MPI_Wtime();
                if (way == 0) {
                    MPI_File_iwrite_all(fh, buf, (int)per, MPI_BYTE, &rq);
                    MPI_Wait(&rq, MPI_STATUS_IGNORE);
                } else
                    MPI_File_write_all(fh, buf, (int)per, MPI_BYTE, MPI_STATUS_IGNORE);
                t = timed(MPI_COMM_WORLD, t);
                best[way] = t < best[way] ? t : best[way];
                MPI_File_close(&fh);
                MPI_Barrier(MPI_COMM_WORLD);
                MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
                MPI_File_set_view(fh, (MPI_Offset)rank * b, MPI_BYTE, ft, "native", MPI_INFO_NULL);
                memset(chk, 0, per);
                MPI_File_read_all(fh, chk, (int)per, MPI_BYTE, MPI_STATUS_IGNORE);
                MPI_File_close(&fh);
                if (memcmp(chk, buf, per) != 0) {
                    fprintf(stderr, "rank %d: %s wrote wrong data\n", rank, what[way]);
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
            }
        if (rank == 0) {
            double mib = (double)per * size / (1 << 20);
            for (int way = 0; way < 2; way++)
                printf("%s %.4f %.1f\n", what[way], best[way], mib / best[way]);
            printf("nb_ratio_indep_over_coll %.2f\n", best[0] / best[1]);
        }
        MPI_Type_free(&ft);
        free(buf);
        free(chk);
        MPI_Info_free(&info);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0)
            MPI_File_delete(path, MPI_INFO_NULL);
        MPI_Finalize();
        return 0;
    }
    if (strcmp(mode, "overlap") == 0) {
        char mine[4096];
        double io = 0, comp = 0, all, x = 1.0, mx[2], v[2];
        snprintf(mine, sizeof mine, "%s.%d", path, rank);
        buf = malloc(8 << 20);
        memset(buf, rank, 8 << 20);
        if (rank % 2 == 0)
            MPI_File_open(MPI_COMM_SELF, mine, MPI_MODE_CREATE | MPI_MODE_WRONLY | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh);
        MPI_Barrier(MPI_COMM_WORLD);
        all = MPI_Wtime();
        if (rank % 2 == 0) {
            t = MPI_Wtime();
            /* 1 MiB writes, each made durable: the rank mostly waits for the device */
            for (long long o = 0; o < total; o += 1 << 20) {
                MPI_File_write_at(fh, o, buf, 1 << 20, MPI_BYTE, MPI_STATUS_IGNORE);
                MPI_File_sync(fh);
            }
            io = MPI_Wtime() - t;
        } else {
            t = MPI_Wtime();
            /* 50 chunks with a sched_yield between them (under Toucan: a yield to the
             * siblings, as any MPI call that waits would be) */
            for (int c = 0; c < 50; c++) {
                for (long long k = 0; k < 3000000LL; k++)
                    x = x * 1.0000001 + 1e-9;
                sched_yield();
            }
            comp = MPI_Wtime() - t;
        }
        {
            /* from the first rank's start to the last rank's end */
            double se[2] = {-all, MPI_Wtime()}, r2[2];
            MPI_Allreduce(se, r2, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            all = r2[1] + r2[0];
        }
        if (rank % 2 == 0)
            MPI_File_close(&fh);
        v[0] = io;
        v[1] = comp + (x == 0.5 ? 1 : 0);
        MPI_Reduce(v, mx, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (rank == 0)
            printf("overlap %.4f %.4f %.4f\n", all, mx[0], mx[1]);
        free(buf);
        MPI_Finalize();
        return 0;
    }
    if (coll) {
        long long per = total / size, cycle = (long long)size * e * block;
        long long blocks = per / block;
        buf = malloc(per);
        for (i = 0; i < per; i++)
            buf[i] = (char)(rank + i);
        /* E consecutive blocks every size*E blocks, starting at block rank*E */
        MPI_Type_contiguous((int)(e * block), MPI_BYTE, &t1);
        MPI_Type_create_resized(t1, 0, cycle, &ft);
        MPI_Type_commit(&ft);
        MPI_Type_free(&t1);
        for (int k = 0; k < reps; k++) {
            MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
            MPI_File_set_view(fh, (MPI_Offset)rank * e * block, MPI_BYTE, ft, "native", MPI_INFO_NULL);
            MPI_Barrier(MPI_COMM_WORLD);
            t = MPI_Wtime();
            MPI_File_write_all(fh, buf, (int)(blocks * block), MPI_BYTE, MPI_STATUS_IGNORE);
            t = timed(MPI_COMM_WORLD, t);
            best_w = t < best_w ? t : best_w;
            MPI_File_seek(fh, 0, MPI_SEEK_SET);
            /* the read must bring every byte back: clobber the buffer first (it stays
             * touched, as a program's data would be) and check all of it afterwards */
            memset(buf, 0xa5, per);
            MPI_Barrier(MPI_COMM_WORLD);
            t = MPI_Wtime();
            MPI_File_read_all(fh, buf, (int)(blocks * block), MPI_BYTE, MPI_STATUS_IGNORE);
            t = timed(MPI_COMM_WORLD, t);
            best_r = t < best_r ? t : best_r;
            MPI_File_close(&fh);
            for (long long q = 0; q < blocks * block; q++)
                if (buf[q] != (char)(rank + q)) {
                    fprintf(stderr, "rank %d: read back wrong data at %lld\n", rank, q);
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
        }
        MPI_Type_free(&ft);
        if (rank == 0) {
            double mib = (double)(total / size / block * block) * size / (1 << 20);
            printf("coll_write %.4f %.1f\n", best_w, mib / best_w);
            printf("coll_read %.4f %.1f\n", best_r, mib / best_r);
        }
    } else {
        buf = malloc(total);
        memset(buf, rank, total);
        for (int k = 0; k < reps; k++) {
            MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
            MPI_Barrier(MPI_COMM_WORLD);
            t = MPI_Wtime();
            for (i = 0; i < e; i++)
                MPI_File_write_at(fh, ((MPI_Offset)rank * e + i) * total, buf, (int)total, MPI_BYTE, MPI_STATUS_IGNORE);
            t = timed(MPI_COMM_WORLD, t);
            best_w = t < best_w ? t : best_w;
            MPI_File_close(&fh);
        }
        if (rank == 0) {
            double mib = (double)total * e * size / (1 << 20);
            printf("indep_write %.4f %.1f\n", best_w, mib / best_w);
        }
    }
    free(buf);
    MPI_Info_free(&info);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        MPI_File_delete(path, MPI_INFO_NULL);
    MPI_Finalize();
    return 0;
}
