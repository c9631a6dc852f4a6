/* MPI-IO views (issue 19): set_view/get_view with a derived etype and filetypes (a vector
 * interleaving the ranks' blocks, a subarray of a global matrix, a resized type), collective
 * and independent access through them, a non-contiguous memory type, get_byte_offset,
 * get_type_extent, seek with a view, and the external32 representation. Rank 0 prints the
 * checksum of each file. */
#include "ct.h"
#include "io_common.h"

#define B 3   /* ints per block */
#define NB 5  /* blocks per rank */

int main(int argc, char **argv)
{
    int rank, size, errs = 0, n, i, j, got;
    int buf[2 * B * NB], rbuf[2 * B * NB];
    char dir[256], path[300], rep[MPI_MAX_DATAREP_STRING];
    MPI_File fh;
    MPI_Status st;
    MPI_Datatype etype, ftype, memtype, sub, t1, t2;
    MPI_Offset disp, off;
    MPI_Aint ext;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    io_tmpdir(dir, sizeof dir);

    /* 1. etype = block of B ints; filetype = one etype every `size` etypes, shifted by rank */
    snprintf(path, sizeof path, "%s/vector.dat", dir);
    MPI_Type_contiguous(B, MPI_INT, &etype);
    MPI_Type_commit(&etype);
    MPI_Type_vector(1, 1, size, etype, &t1);
    MPI_Type_create_resized(t1, 0, (MPI_Aint)size * B * sizeof(int), &ftype);
    MPI_Type_commit(&ftype);
    MPI_Type_free(&t1);
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    MPI_File_set_view(fh, 16 + (MPI_Offset)rank * B * sizeof(int), etype, ftype, "native", MPI_INFO_NULL);
    MPI_File_get_view(fh, &disp, &t1, &t2, rep);
    CHECK(disp == 16 + (MPI_Offset)rank * B * (MPI_Offset)sizeof(int) && strcmp(rep, "native") == 0, "get_view %lld %s",
          (long long)disp, rep);
    {
        int sz;
        MPI_Aint lb, ex;
        MPI_Type_size(t1, &sz);
        CHECK(sz == B * (int)sizeof(int), "etype size %d", sz);
        MPI_Type_get_extent(t2, &lb, &ex);
        CHECK(lb == 0 && ex == (MPI_Aint)size * B * (MPI_Aint)sizeof(int), "filetype extent %ld", (long)ex);
        MPI_Type_free(&t1);
        MPI_Type_free(&t2);
    }
    for (i = 0; i < B * NB; i++)
        buf[i] = rank * 100 + i;
    MPI_File_write_all(fh, buf, B * NB, MPI_INT, &st);
    MPI_Get_count(&st, MPI_INT, &n);
    CHECK(n == B * NB, "write_all count %d", n);
    MPI_File_get_position(fh, &off);
    CHECK(off == NB, "position after write %lld etypes", (long long)off);
    MPI_File_get_byte_offset(fh, 2, &off);
    CHECK(off == 16 + ((MPI_Offset)2 * size + rank) * B * (MPI_Offset)sizeof(int), "byte offset %lld", (long long)off);
    MPI_File_seek(fh, 1, MPI_SEEK_SET);
    MPI_File_read(fh, rbuf, B * 2, MPI_INT, &st);
    MPI_Get_count(&st, MPI_INT, &n);
    CHECK(n == 2 * B && rbuf[0] == rank * 100 + B && rbuf[2 * B - 1] == rank * 100 + 3 * B - 1, "read through the view %d %d",
          n, rbuf[0]);
    MPI_File_seek(fh, 0, MPI_SEEK_END);
    MPI_File_get_position(fh, &off);
    CHECK(off == NB, "end position %lld", (long long)off);
    /* read everyone's data back with the byte view */
    MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL);
    MPI_File_read_at_all(fh, 4, rbuf, B * NB, MPI_INT, &st);
    CHECK(rbuf[0] == 0 && rbuf[B] == (size > 1 ? 100 : B), "interleaved [0] %d [B] %d", rbuf[0], rbuf[B]);
    MPI_File_close(&fh);
    io_print_file(rank, "vector.dat", path);

    /* 2. a subarray view: each rank owns a column strip of a 4 x (2*size) matrix of doubles,
     * written from a non-contiguous memory type (every other int of a doubled buffer) */
    snprintf(path, sizeof path, "%s/subarray.dat", dir);
    {
        int sizes[2] = {4, 2 * size}, subs[2] = {4, 2}, starts[2] = {0, 2 * rank};
        MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_C, MPI_INT, &sub);
        MPI_Type_commit(&sub);
    }
    MPI_Type_vector(8, 1, 2, MPI_INT, &memtype);
    MPI_Type_commit(&memtype);
    for (i = 0; i < 16; i++)
        buf[i] = i % 2 ? -1 : rank * 10 + i / 2;
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
    MPI_File_set_view(fh, 0, MPI_INT, sub, "native", MPI_INFO_NULL);
    MPI_File_write_all(fh, buf, 1, memtype, &st);
    MPI_Get_count(&st, memtype, &n);
    CHECK(n == 1, "write_all of the memory type counted %d", n);
    MPI_File_close(&fh);
    MPI_Barrier(MPI_COMM_WORLD);
    io_print_file(rank, "subarray.dat", path);
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    MPI_File_set_view(fh, 0, MPI_INT, sub, "native", MPI_INFO_NULL);
    for (i = 0; i < 16; i++)
        rbuf[i] = -7;
    MPI_File_read_all(fh, rbuf, 1, memtype, &st);
    for (i = 0, got = 1; i < 16; i++)
        if (rbuf[i] != (i % 2 ? -7 : rank * 10 + i / 2))
            got = 0;
    CHECK(got, "subarray read back [0] %d [1] %d [2] %d", rbuf[0], rbuf[1], rbuf[2]);
    MPI_File_get_type_extent(fh, memtype, &ext);
    CHECK(ext == 15 * (MPI_Aint)sizeof(int), "type extent %ld", (long)ext);
    MPI_File_close(&fh);

    /* 3. external32: big-endian on disk */
    snprintf(path, sizeof path, "%s/ext32.dat", dir);
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "external32", MPI_INFO_NULL);
    for (i = 0; i < 4; i++)
        buf[i] = 0x01020304 + rank * 16 + i;
    MPI_File_write_at_all(fh, (MPI_Offset)rank * 4, buf, 4, MPI_INT, &st);
    MPI_File_get_type_extent(fh, MPI_INT, &ext);
    CHECK(ext == 4, "external32 extent of MPI_INT %ld", (long)ext);
    MPI_File_read_at_all(fh, (MPI_Offset)((rank + 1) % size) * 4, rbuf, 4, MPI_INT, &st);
    for (i = 0; i < 4; i++)
        CHECK(rbuf[i] == 0x01020304 + ((rank + 1) % size) * 16 + i, "external32 read [%d] %x", i, rbuf[i]);
    MPI_File_get_view(fh, &disp, &t1, &t2, rep);
    CHECK(strcmp(rep, "external32") == 0 && t1 == MPI_INT, "external32 view %s", rep);
    MPI_File_close(&fh);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        unsigned char b[4];
        FILE *f = fopen(path, "rb");
        j = f && fread(b, 1, 4, f) == 4;
        if (f)
            fclose(f);
        CHECK(j && b[0] == 1 && b[1] == 2 && b[2] == 3 && b[3] == 4, "external32 is not big-endian");
    }
    io_print_file(rank, "ext32.dat", path);

    MPI_Type_free(&etype);
    MPI_Type_free(&ftype);
    MPI_Type_free(&sub);
    MPI_Type_free(&memtype);
    if (rank == 0) {
        snprintf(path, sizeof path, "%s/vector.dat", dir);
        MPI_File_delete(path, MPI_INFO_NULL);
        snprintf(path, sizeof path, "%s/subarray.dat", dir);
        MPI_File_delete(path, MPI_INFO_NULL);
        snprintf(path, sizeof path, "%s/ext32.dat", dir);
        MPI_File_delete(path, MPI_INFO_NULL);
    }
    CHECK(io_rmdir(rank, dir) == 0, "the directory was not empty at the end");
    return ct_finish(rank, errs);
}
