/* MPI-IO basics (issue 19): open/close, get_amode/get_group, explicit offsets (independent and
 * collective), individual file pointers (seek/get_position, read/write, read_all/write_all),
 * sync, get_size/set_size/preallocate, set_info/get_info hints, MPI_MODE_DELETE_ON_CLOSE and
 * MPI_File_delete. Rank 0 prints the size and checksum of what was written. */
#include "ct.h"
#include "io_common.h"

int main(int argc, char **argv)
{
    int rank, size, errs = 0, n, i, amode, res, flag;
    int buf[100], rbuf[100];
    char dir[256], path[300], val[64];
    MPI_File fh;
    MPI_Status st;
    MPI_Offset pos, fsize, total;
    MPI_Group g, wg;
    MPI_Info info, used;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    io_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/basic.dat", dir);

    CHECK(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh) == MPI_SUCCESS, "open");
    MPI_File_get_amode(fh, &amode);
    CHECK(amode == (MPI_MODE_CREATE | MPI_MODE_RDWR), "amode %d", amode);
    MPI_File_get_group(fh, &g);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Group_compare(g, wg, &res);
    CHECK(res == MPI_IDENT, "group compare %d", res);
    MPI_Group_free(&g);
    MPI_Group_free(&wg);

    /* explicit offsets, independent: 100 ints per rank */
    for (i = 0; i < 100; i++)
        buf[i] = rank * 1000 + i;
    MPI_File_write_at(fh, (MPI_Offset)rank * 400, buf, 100, MPI_INT, &st);
    MPI_Get_count(&st, MPI_INT, &n);
    CHECK(n == 100, "write_at count %d", n);
    MPI_File_sync(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_sync(fh);
    MPI_File_read_at(fh, (MPI_Offset)((rank + 1) % size) * 400, rbuf, 100, MPI_INT, &st);
    MPI_Get_count(&st, MPI_INT, &n);
    CHECK(n == 100, "read_at count %d", n);
    for (i = 0; i < 100; i++)
        CHECK(rbuf[i] == ((rank + 1) % size) * 1000 + i, "read_at [%d] = %d", i, rbuf[i]);
    MPI_File_get_size(fh, &fsize);
    CHECK(fsize == (MPI_Offset)size * 400, "size %lld", (long long)fsize);

    /* explicit offsets, collective */
    for (i = 0; i < 100; i++)
        buf[i] = rank * 1000 + 500 + i;
    MPI_File_write_at_all(fh, (MPI_Offset)(size + rank) * 400, buf, 100, MPI_INT, &st);
    MPI_Get_count(&st, MPI_INT, &n);
    CHECK(n == 100, "write_at_all count %d", n);
    MPI_File_read_at_all(fh, (MPI_Offset)(size + (rank + size - 1) % size) * 400, rbuf, 100, MPI_INT, &st);
    for (i = 0; i < 100; i++)
        CHECK(rbuf[i] == ((rank + size - 1) % size) * 1000 + 500 + i, "read_at_all [%d] = %d", i, rbuf[i]);

    /* individual file pointers */
    total = (MPI_Offset)2 * size * 400;
    MPI_File_seek(fh, total + rank * 40, MPI_SEEK_SET);
    for (i = 0; i < 10; i++)
        buf[i] = -rank * 100 - i;
    MPI_File_write(fh, buf, 10, MPI_INT, &st);
    MPI_File_get_position(fh, &pos);
    CHECK(pos == total + rank * 40 + 40, "position %lld", (long long)pos);
    MPI_File_seek(fh, -40, MPI_SEEK_CUR);
    MPI_File_read(fh, rbuf, 10, MPI_INT, &st);
    MPI_Get_count(&st, MPI_INT, &n);
    CHECK(n == 10 && rbuf[9] == -rank * 100 - 9, "read back %d %d", n, rbuf[9]);
    MPI_Barrier(MPI_COMM_WORLD);
    total += (MPI_Offset)size * 40;
    MPI_File_seek(fh, 0, MPI_SEEK_END);
    MPI_File_get_position(fh, &pos);
    CHECK(pos == total, "end position %lld, want %lld", (long long)pos, (long long)total);
    MPI_File_read(fh, rbuf, 10, MPI_INT, &st);
    MPI_Get_count(&st, MPI_INT, &n);
    CHECK(n == 0, "read at the end of file got %d", n);

    /* individual pointers, collective: 4 ints per rank after the end */
    MPI_File_seek(fh, total + rank * 16, MPI_SEEK_SET);
    for (i = 0; i < 4; i++)
        buf[i] = 7000 + rank * 4 + i;
    MPI_File_write_all(fh, buf, 4, MPI_INT, &st);
    MPI_File_seek(fh, total + ((rank + 1) % size) * 16, MPI_SEEK_SET);
    MPI_File_read_all(fh, rbuf, 4, MPI_INT, &st);
    MPI_Get_count(&st, MPI_INT, &n);
    CHECK(n == 4 && rbuf[3] == 7000 + ((rank + 1) % size) * 4 + 3, "read_all %d %d", n, rbuf[3]);
    total += (MPI_Offset)size * 16;

    /* sizes */
    MPI_File_set_size(fh, total + 100);
    MPI_File_get_size(fh, &fsize);
    CHECK(fsize == total + 100, "set_size grew to %lld", (long long)fsize);
    MPI_File_set_size(fh, total);
    MPI_File_preallocate(fh, total + 8);
    MPI_File_get_size(fh, &fsize);
    CHECK(fsize >= total + 8, "preallocate gave %lld", (long long)fsize);
    MPI_File_set_size(fh, total);
    MPI_File_get_size(fh, &fsize);
    CHECK(fsize == total, "set_size shrank to %lld", (long long)fsize);

    /* hints */
    MPI_Info_create(&info);
    MPI_Info_set(info, "cb_buffer_size", "1048576");
    MPI_Info_set(info, "romio_cb_write", "enable");
    MPI_File_set_info(fh, info);
    MPI_Info_free(&info);
    MPI_File_get_info(fh, &used);
    MPI_Info_get(used, "cb_buffer_size", sizeof val - 1, val, &flag);
    CHECK(flag && strcmp(val, "1048576") == 0, "cb_buffer_size hint '%s' (flag %d)", flag ? val : "", flag);
    MPI_Info_get(used, "romio_cb_write", sizeof val - 1, val, &flag);
    CHECK(flag && strcmp(val, "enable") == 0, "romio_cb_write hint '%s' (flag %d)", flag ? val : "", flag);
    MPI_Info_free(&used);

    CHECK(MPI_File_close(&fh) == MPI_SUCCESS && fh == MPI_FILE_NULL, "close");
    io_print_file(rank, "basic.dat", path);

    /* delete on close */
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh);
    MPI_File_read_at(fh, 0, rbuf, 100, MPI_INT, &st);
    CHECK(rbuf[99] == 99, "reopened file [99] = %d", rbuf[99]);
    MPI_File_close(&fh);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(access(path, F_OK) != 0, "MPI_MODE_DELETE_ON_CLOSE left the file");

    /* MPI_File_delete */
    snprintf(path, sizeof path, "%s/gone.dat", dir);
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
    MPI_File_close(&fh);
    if (rank == 0)
        CHECK(MPI_File_delete(path, MPI_INFO_NULL) == MPI_SUCCESS, "delete");
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(access(path, F_OK) != 0, "MPI_File_delete left the file");

    CHECK(io_rmdir(rank, dir) == 0, "the directory was not empty at the end");
    return ct_finish(rank, errs);
}
