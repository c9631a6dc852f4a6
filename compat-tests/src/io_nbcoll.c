/* io_nbcoll.c - nonblocking collective file accesses (issue 19, session io5), which Toucan
 * runs as nonblocking independent ones (docs/io.md "Why the independent form stays"), in
 * the uses the standard allows: several iwrite_at_all/iwrite_all outstanding on one file,
 * completed in reverse order; a blocking write_at_all while they are pending; the individual
 * pointer moved at the call; interleaved pieces through a view, with 48-byte collective
 * buffering rounds for the blocking accesses; two reads outstanding at once, completed by
 * Test loops and Waitany; two files whose nonblocking collectives the ranks start in
 * different orders (even ranks f1 first, odd ranks f2 first). Counts from the statuses; rank 0
 * prints both files' checksums. (.expect: MPICH 4.0.2's ROMIO fails it: with two nonblocking
 * collective reads outstanding on one file, iread_all returns wrong data at np 2, 4 and 6, and at
 * np 8 the job aborts in MPI_Testall; its files' checksums at np 2 and 4 are the same as
 * Toucan's.) */
#include "ct.h"
#include "io_common.h"

#define N 24

int main(int argc, char **argv)
{
    int rank, size, errs = 0, n, i, flag, idx, a[N], b[N], c[N], r1[N], r2[N];
    char dir[256], p1[300], p2[300];
    MPI_File fh, g;
    MPI_Status st, sts[4];
    MPI_Request rq[4];
    MPI_Offset pos;
    MPI_Datatype vt, ft;
    MPI_Info info;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    io_tmpdir(dir, sizeof dir);
    snprintf(p1, sizeof p1, "%s/nbc1.dat", dir);
    snprintf(p2, sizeof p2, "%s/nbc2.dat", dir);
    for (i = 0; i < N; i++) {
        a[i] = rank * 1000 + i;
        b[i] = -(rank * 1000 + i);
        c[i] = rank + i * 7;
    }
    MPI_Info_create(&info);
    MPI_Info_set(info, "cb_buffer_size", "48");
    MPI_File_open(MPI_COMM_WORLD, p1, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
    MPI_File_open(MPI_COMM_WORLD, p2, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &g);

    /* interleaved ints: rank r's i-th int at int i * size + r of each tile of N * size ints */
    MPI_Type_vector(N, 1, size, MPI_INT, &vt);
    MPI_Type_create_resized(vt, 0, (MPI_Aint)N * size * sizeof(int), &ft);
    MPI_Type_commit(&ft);
    MPI_Type_free(&vt);
    MPI_File_set_view(fh, (MPI_Offset)rank * sizeof(int), MPI_INT, ft, "native", MPI_INFO_NULL);

    /* three outstanding on one file: tile 0 (explicit offset), tile 1 (individual pointer),
     * then a blocking write of tile 3 while they are pending, then tile 2; completed in
     * reverse order */
    MPI_File_iwrite_at_all(fh, 0, a, N, MPI_INT, &rq[0]);
    MPI_File_seek(fh, N, MPI_SEEK_SET);
    MPI_File_iwrite_all(fh, b, N, MPI_INT, &rq[1]);
    MPI_File_get_position(fh, &pos);
    CHECK(pos == 2 * N, "iwrite_all moved the pointer to %lld", (long long)pos);
    MPI_File_write_at_all(fh, 3 * N, c, N, MPI_INT, &st);
    MPI_Get_count(&st, MPI_INT, &n);
    CHECK(n == N, "write_at_all behind pending ones: count %d", n);
    MPI_File_iwrite_at_all(fh, 2 * N, c, N / 2, MPI_INT, &rq[2]);
    MPI_Wait(&rq[2], &sts[2]);
    MPI_Wait(&rq[1], &sts[1]);
    MPI_Wait(&rq[0], &sts[0]);
    for (i = 0; i < 3; i++) {
        MPI_Get_count(&sts[i], MPI_INT, &n);
        CHECK(n == (i == 2 ? N / 2 : N), "request %d count %d", i, n);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* read the neighbour's ints back: a view shifted to the next rank */
    MPI_File_set_view(fh, (MPI_Offset)((rank + 1) % size) * sizeof(int), MPI_INT, ft, "native", MPI_INFO_NULL);
    MPI_File_iread_at_all(fh, 0, r1, N, MPI_INT, &rq[0]);
    do
        MPI_Test(&rq[0], &flag, &st);
    while (!flag);
    MPI_Get_count(&st, MPI_INT, &n);
    CHECK(n == N && r1[5] == ((rank + 1) % size) * 1000 + 5, "iread_at_all %d %d", n, r1[5]);
    MPI_File_seek(fh, N, MPI_SEEK_SET);
    MPI_File_iread_all(fh, r2, N, MPI_INT, &rq[1]);
    MPI_File_iread_at_all(fh, 2 * N, r1, N, MPI_INT, &rq[2]);
    for (i = 0; i < 2; i++) {
        MPI_Waitany(2, &rq[1], &idx, &st);
        MPI_Get_count(&st, MPI_INT, &n);
        CHECK(n == N, "waitany %d count %d", idx, n);
    }
    CHECK(r2[N - 1] == -(((rank + 1) % size) * 1000 + N - 1), "iread_all [N-1] %d", r2[N - 1]);
    CHECK(r1[3] == (rank + 1) % size + 21 && r1[N / 2] == 0, "iread_at_all tile 2: %d %d", r1[3], r1[N / 2]);
    MPI_File_read_at_all(fh, 3 * N, r1, N, MPI_INT, &st);
    CHECK(r1[N - 1] == (rank + 1) % size + (N - 1) * 7, "read_at_all tile 3 [N-1] %d", r1[N - 1]);

    /* two files, started in different orders by even and odd ranks */
    MPI_File_set_view(g, (MPI_Offset)rank * N * sizeof(int), MPI_INT, MPI_INT, "native", MPI_INFO_NULL);
    MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL);
    if (rank % 2 == 0) {
        MPI_File_iwrite_at_all(fh, (MPI_Offset)(4 * size + rank) * N, a, N, MPI_INT, &rq[0]);
        MPI_File_iwrite_at_all(g, 0, b, N, MPI_INT, &rq[1]);
    } else {
        MPI_File_iwrite_at_all(g, 0, b, N, MPI_INT, &rq[1]);
        MPI_File_iwrite_at_all(fh, (MPI_Offset)(4 * size + rank) * N, a, N, MPI_INT, &rq[0]);
    }
    MPI_Waitall(2, rq, sts);
    for (i = 0; i < 2; i++) {
        MPI_Get_count(&sts[i], MPI_INT, &n);
        CHECK(n == N, "two files: request %d count %d", i, n);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_iread_at_all(g, 0, r2, N, MPI_INT, &rq[0]);
    MPI_Wait(&rq[0], &st);
    CHECK(memcmp(r2, b, sizeof b) == 0, "second file read back");

    MPI_File_close(&fh);
    MPI_File_close(&g);
    MPI_Type_free(&ft);
    MPI_Info_free(&info);
    io_print_file(rank, "nbc1.dat", p1);
    io_print_file(rank, "nbc2.dat", p2);
    if (rank == 0) {
        MPI_File_delete(p1, MPI_INFO_NULL);
        MPI_File_delete(p2, MPI_INFO_NULL);
    }
    CHECK(io_rmdir(rank, dir) == 0, "the directory was not empty at the end");
    return ct_finish(rank, errs);
}
