/* MPI-IO bad input (issue 19): error classes and consistent state after them. MPI_FILE_NULL's
 * handler is MPI_ERRORS_RETURN by default and catches open errors (missing file, missing
 * directory, bad amode, MPI_MODE_EXCL on an existing file); a file's own handler catches
 * writes to a read-only file, reads from a write-only one, a view with a decreasing or
 * overlapping filetype, an unknown data representation, a negative offset, a count that is
 * not a whole number of etypes; reading past the end gives a short count, not an error; a
 * user handler set on a file is called with the file; MPI_File_call_errhandler; calls on
 * MPI_FILE_NULL; MPI_File_delete of a missing file. The file is unchanged at the end. */
#include "ct.h"
#include "io_common.h"

static void on_error(MPI_File *fh, int *code, ...)
{
    int r, cls, amode = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Error_class(*code, &cls);
    MPI_File_get_amode(*fh, &amode);
    printf("rank %d: file handler called (%s) on a file opened %s\n", r,
           cls == MPI_ERR_READ_ONLY ? "read-only" : cls == MPI_ERR_IO ? "io" : "other",
           amode == MPI_MODE_RDONLY ? "read-only" : "otherwise");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, rc, n, i, buf[8];
    char dir[256], path[300], bad[320];
    MPI_File fh, fw;
    MPI_Status st;
    MPI_Errhandler eh, mine;
    MPI_Datatype dec, ovl;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    io_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/err.dat", dir);

    MPI_File_get_errhandler(MPI_FILE_NULL, &eh);
    CHECK(eh == MPI_ERRORS_RETURN, "MPI_FILE_NULL's default handler is not MPI_ERRORS_RETURN");
    MPI_Errhandler_free(&eh);

    /* open errors */
    rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    CHECK(ct_class(rc) == MPI_ERR_NO_SUCH_FILE, "missing file: class %d", ct_class(rc));
    CHECK(fh == MPI_FILE_NULL || rc == MPI_SUCCESS, "failed open gave a handle");
    snprintf(bad, sizeof bad, "%s/no/such/dir/x.dat", dir);
    rc = MPI_File_open(MPI_COMM_WORLD, bad, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
    CHECK(ct_class(rc) == MPI_ERR_NO_SUCH_FILE, "missing directory: class %d", ct_class(rc));
    rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    CHECK(ct_class(rc) == MPI_ERR_AMODE, "RDONLY|RDWR: class %d", ct_class(rc));
    rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY | MPI_MODE_CREATE, MPI_INFO_NULL, &fh);
    CHECK(ct_class(rc) == MPI_ERR_AMODE, "RDONLY|CREATE: class %d", ct_class(rc));
    rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_SEQUENTIAL, MPI_INFO_NULL, &fh);
    CHECK(ct_class(rc) == MPI_ERR_AMODE, "RDWR|SEQUENTIAL: class %d", ct_class(rc));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(access(path, F_OK) != 0, "a failed open created the file");

    /* create it with known contents */
    for (i = 0; i < 8; i++)
        buf[i] = 0x01010101 * (i + 1);
    rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_WRONLY, MPI_INFO_NULL, &fw);
    CHECK(rc == MPI_SUCCESS, "CREATE|EXCL of a new file failed");
    MPI_File_write_at_all(fw, (MPI_Offset)rank * 32, buf, 8, MPI_INT, &st);
    /* read from a write-only file */
    rc = MPI_File_read_at(fw, 0, buf, 1, MPI_INT, &st);
    CHECK(ct_class(rc) == MPI_ERR_ACCESS, "read of a write-only file: class %d", ct_class(rc));
    MPI_File_close(&fw);
    rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    CHECK(ct_class(rc) == MPI_ERR_FILE_EXISTS, "EXCL on an existing file: class %d", ct_class(rc));
    io_print_file(rank, "err.dat before", path);

    /* errors on an open file go to its handler (MPI_ERRORS_RETURN, inherited) */
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    MPI_File_get_errhandler(fh, &eh);
    CHECK(eh == MPI_ERRORS_RETURN, "a new file's handler is not MPI_ERRORS_RETURN");
    MPI_Errhandler_free(&eh);
    rc = MPI_File_write_at(fh, 0, buf, 1, MPI_INT, &st);
    CHECK(ct_class(rc) == MPI_ERR_READ_ONLY, "write to a read-only file: class %d", ct_class(rc));
    rc = MPI_File_write_at_all(fh, 0, buf, 1, MPI_INT, &st);
    CHECK(ct_class(rc) == MPI_ERR_READ_ONLY, "write_at_all to a read-only file: class %d", ct_class(rc));
    rc = MPI_File_set_size(fh, 0);
    CHECK(rc != MPI_SUCCESS, "set_size of a read-only file succeeded");
    rc = MPI_File_read_at(fh, -4, buf, 1, MPI_INT, &st);
    CHECK(ct_class(rc) == MPI_ERR_ARG, "negative offset: class %d", ct_class(rc));
    rc = MPI_File_read_at(fh, 0, buf, -1, MPI_INT, &st);
    CHECK(ct_class(rc) == MPI_ERR_COUNT, "negative count: class %d", ct_class(rc));
    rc = MPI_File_seek(fh, -1, MPI_SEEK_SET);
    CHECK(rc != MPI_SUCCESS, "seek to a negative offset succeeded");

    /* reading past the end: a short count */
    rc = MPI_File_read_at(fh, (MPI_Offset)size * 32 - 8, buf, 8, MPI_INT, &st);
    MPI_Get_count(&st, MPI_INT, &n);
    CHECK(rc == MPI_SUCCESS && n == 2 && buf[1] == 0x01010101 * 8, "read across the end: rc %d count %d", rc, n);
    rc = MPI_File_read_at(fh, (MPI_Offset)size * 32 + 100, buf, 8, MPI_INT, &st);
    MPI_Get_count(&st, MPI_INT, &n);
    CHECK(rc == MPI_SUCCESS && n == 0, "read past the end: rc %d count %d", rc, n);

    /* bad views */
    {
        int bl[2] = {1, 1}, dd[2] = {4, 0}, od[2] = {0, 0};
        MPI_Type_indexed(2, bl, dd, MPI_INT, &dec);
        MPI_Type_commit(&dec);
        MPI_Type_indexed(2, bl, od, MPI_INT, &ovl);
        MPI_Type_commit(&ovl);
    }
    rc = MPI_File_set_view(fh, 0, MPI_INT, dec, "native", MPI_INFO_NULL);
    CHECK(ct_class(rc) == MPI_ERR_IO, "decreasing filetype: class %d", ct_class(rc));
    rc = MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "no-such-rep", MPI_INFO_NULL);
    CHECK(ct_class(rc) == MPI_ERR_UNSUPPORTED_DATAREP, "unknown datarep: class %d", ct_class(rc));
    rc = MPI_File_set_view(fh, -5, MPI_INT, MPI_INT, "native", MPI_INFO_NULL);
    CHECK(ct_class(rc) == MPI_ERR_ARG, "negative displacement: class %d", ct_class(rc));
    MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL);
    rc = MPI_File_read_at(fh, 0, buf, 1, MPI_SHORT, &st);
    CHECK(ct_class(rc) == MPI_ERR_IO, "half an etype: class %d", ct_class(rc));
    rc = MPI_File_read_at(fh, 1, buf, 2, MPI_INT, &st);
    CHECK(rc == MPI_SUCCESS && buf[0] == 0x02020202, "the view still works: [0] %x", buf[0]);

    /* a user handler on the file */
    MPI_File_create_errhandler(on_error, &mine);
    MPI_File_set_errhandler(fh, mine);
    rc = MPI_File_write_at(fh, 0, buf, 1, MPI_INT, &st);
    CHECK(ct_class(rc) == MPI_ERR_READ_ONLY, "with a user handler: class %d", ct_class(rc));
    rc = MPI_File_call_errhandler(fh, MPI_ERR_IO);
    CHECK(rc == MPI_SUCCESS, "call_errhandler returned %d", rc);
    MPI_File_get_errhandler(fh, &eh);
    CHECK(eh == mine, "get_errhandler gave another handler");
    MPI_Errhandler_free(&eh);
    MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN);
    MPI_Errhandler_free(&mine);
    MPI_File_close(&fh);

    /* ... and on MPI_FILE_NULL, for open errors */
    rc = MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN);
    CHECK(rc == MPI_SUCCESS, "set_errhandler on MPI_FILE_NULL");
    rc = MPI_File_close(&fh);
    CHECK(rc != MPI_SUCCESS, "close of MPI_FILE_NULL succeeded");
    rc = MPI_File_get_size(MPI_FILE_NULL, NULL);
    CHECK(rc != MPI_SUCCESS, "get_size of MPI_FILE_NULL succeeded");

    io_print_file(rank, "err.dat after", path);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        CHECK(MPI_File_delete(path, MPI_INFO_NULL) == MPI_SUCCESS, "delete");
        rc = MPI_File_delete(path, MPI_INFO_NULL);
        CHECK(ct_class(rc) == MPI_ERR_NO_SUCH_FILE, "delete of a missing file: class %d", ct_class(rc));
    }
    MPI_Type_free(&dec);
    MPI_Type_free(&ovl);
    CHECK(io_rmdir(rank, dir) == 0, "the directory was not empty at the end");
    return ct_finish(rank, errs);
}
