/* MPI-IO nonblocking and split collective access (issue 19): iwrite_at/iread_at, iwrite/iread
 * (individual pointer moved at the call), iwrite_all/iread_all, iwrite_at_all/iread_at_all,
 * iwrite_shared/iread_shared completed with Wait/Waitall/Test loops, the begin/end split
 * collectives of explicit offsets and individual pointers, and atomic mode with overlapping
 * writes. Rank 0 prints the checksum of the file. */
#include "ct.h"
#include "io_common.h"

#define N 64

int main(int argc, char **argv)
{
    int rank, size, errs = 0, n, i, flag, a[N], b[N], c[N], r1[N], r2[N];
    char dir[256], path[300];
    MPI_File fh;
    MPI_Status st, sts[3];
    MPI_Request rq[3];
    MPI_Offset pos, base;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    io_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/nb.dat", dir);
    for (i = 0; i < N; i++) {
        a[i] = rank * 1000 + i;
        b[i] = -(rank * 1000 + i);
        c[i] = rank + i * 7;
    }
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL);

    /* region 0: iwrite_at; region 1: iwrite (individual pointer); region 2: iwrite_at_all */
    MPI_File_iwrite_at(fh, (MPI_Offset)rank * N, a, N, MPI_INT, &rq[0]);
    MPI_File_seek(fh, (MPI_Offset)(size + rank) * N, MPI_SEEK_SET);
    MPI_File_iwrite(fh, b, N, MPI_INT, &rq[1]);
    MPI_File_get_position(fh, &pos);
    CHECK(pos == (MPI_Offset)(size + rank + 1) * N, "iwrite moved the pointer to %lld", (long long)pos);
    MPI_File_iwrite_at_all(fh, (MPI_Offset)(2 * size + rank) * N, c, N, MPI_INT, &rq[2]);
    MPI_Waitall(3, rq, sts);
    for (i = 0; i < 3; i++) {
        MPI_Get_count(&sts[i], MPI_INT, &n);
        CHECK(n == N, "request %d count %d", i, n);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* read them back (neighbour's) nonblocking, completed by Test loops */
    MPI_File_iread_at(fh, (MPI_Offset)((rank + 1) % size) * N, r1, N, MPI_INT, &rq[0]);
    do
        MPI_Test(&rq[0], &flag, &st);
    while (!flag);
    MPI_Get_count(&st, MPI_INT, &n);
    CHECK(n == N && r1[5] == ((rank + 1) % size) * 1000 + 5, "iread_at %d %d", n, r1[5]);
    MPI_File_seek(fh, (MPI_Offset)(size + (rank + 1) % size) * N, MPI_SEEK_SET);
    MPI_File_iread(fh, r2, N, MPI_INT, &rq[1]);
    MPI_Wait(&rq[1], &st);
    CHECK(r2[N - 1] == -(((rank + 1) % size) * 1000 + N - 1), "iread [N-1] %d", r2[N - 1]);
    MPI_File_iread_at_all(fh, (MPI_Offset)(2 * size + (rank + 1) % size) * N, r1, N, MPI_INT, &rq[2]);
    MPI_Wait(&rq[2], &st);
    CHECK(r1[3] == (rank + 1) % size + 21, "iread_at_all [3] %d", r1[3]);

    /* region 3: iwrite_all/iread_all with the individual pointer */
    base = (MPI_Offset)3 * size * N;
    MPI_File_seek(fh, base + (MPI_Offset)rank * N, MPI_SEEK_SET);
    MPI_File_iwrite_all(fh, c, N, MPI_INT, &rq[0]);
    MPI_Wait(&rq[0], &st);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_seek(fh, base + (MPI_Offset)((rank + size - 1) % size) * N, MPI_SEEK_SET);
    MPI_File_iread_all(fh, r1, N, MPI_INT, &rq[0]);
    MPI_Wait(&rq[0], &st);
    CHECK(r1[1] == (rank + size - 1) % size + 7, "iread_all [1] %d", r1[1]);

    /* region 4: split collectives */
    base += (MPI_Offset)size * N;
    MPI_File_write_at_all_begin(fh, base + (MPI_Offset)rank * N, a, N, MPI_INT);
    MPI_File_write_at_all_end(fh, a, &st);
    MPI_Get_count(&st, MPI_INT, &n);
    CHECK(n == N, "write_at_all_end count %d", n);
    MPI_File_read_at_all_begin(fh, base + (MPI_Offset)((rank + 1) % size) * N, r1, N, MPI_INT);
    MPI_File_read_at_all_end(fh, r1, &st);
    CHECK(r1[2] == ((rank + 1) % size) * 1000 + 2, "read_at_all_end [2] %d", r1[2]);
    base += (MPI_Offset)size * N;
    MPI_File_seek(fh, base + (MPI_Offset)rank * N, MPI_SEEK_SET);
    MPI_File_write_all_begin(fh, b, N, MPI_INT);
    MPI_File_write_all_end(fh, b, &st);
    MPI_File_seek(fh, base + (MPI_Offset)rank * N, MPI_SEEK_SET);
    MPI_File_read_all_begin(fh, r2, N, MPI_INT);
    MPI_File_read_all_end(fh, r2, &st);
    CHECK(r2[9] == -(rank * 1000 + 9), "read_all_end [9] %d", r2[9]);

    /* region 5: iwrite_shared / iread_shared (order unknown: check the sum) */
    base += (MPI_Offset)size * N;
    MPI_File_seek_shared(fh, base, MPI_SEEK_SET);
    MPI_File_iwrite_shared(fh, &rank, 1, MPI_INT, &rq[0]);
    MPI_Wait(&rq[0], &st);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_seek_shared(fh, base, MPI_SEEK_SET);
    MPI_File_iread_shared(fh, &n, 1, MPI_INT, &rq[0]);
    MPI_Wait(&rq[0], &st);
    {
        int sum = 0;
        MPI_Allreduce(&n, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        CHECK(sum == size * (size - 1) / 2, "iread_shared values sum to %d", sum);
    }
    /* the shared region is in arbitrary order: overwrite it in rank order for the checksum */
    MPI_File_write_at_all(fh, base + rank, &rank, 1, MPI_INT, &st);

    /* atomic mode: everybody writes the same 64 ints, the result is one rank's whole */
    MPI_File_set_atomicity(fh, 1);
    MPI_File_get_atomicity(fh, &flag);
    CHECK(flag == 1, "atomicity %d", flag);
    base += size;
    for (i = 0; i < N; i++)
        r1[i] = rank;
    MPI_File_write_at(fh, base, r1, N, MPI_INT, &st);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_read_at(fh, base, r2, N, MPI_INT, &st);
    for (i = 1, flag = 1; i < N; i++)
        if (r2[i] != r2[0])
            flag = 0;
    CHECK(flag, "atomic writes mixed: [0] %d ...", r2[0]);
    MPI_Barrier(MPI_COMM_WORLD);
    for (i = 0; i < N; i++)
        r1[i] = 0;
    MPI_File_write_at_all(fh, base, r1, rank == 0 ? N : 0, MPI_INT, &st);
    MPI_File_set_atomicity(fh, 0);
    MPI_File_close(&fh);
    io_print_file(rank, "nb.dat", path);
    if (rank == 0)
        MPI_File_delete(path, MPI_INFO_NULL);
    CHECK(io_rmdir(rank, dir) == 0, "the directory was not empty at the end");
    return ct_finish(rank, errs);
}
