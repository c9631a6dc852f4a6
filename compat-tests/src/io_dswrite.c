/* MPI-IO data sieving of independent non-contiguous writes (issue 19; romio_ds_write,
 * ind_wr_buffer_size). Every rank writes small strided pieces of one region at the same time
 * as the others, with one MPI_File_write_at through a view: a sieving writer reads the span
 * of its pieces, copies them in and writes the span back, so the holes (the other ranks'
 * pieces) must be rewritten under a lock or they lose data. Regions: sieved writers only,
 * three times over; a 64-byte sieving window (spans cut short, a piece wider than the
 * window); pieces past the end of file; atomic mode; sieving disabled; a write-only file.
 * Every rank checks the whole file; rank 0 prints its checksum. Sieving writers against
 * contiguous writers of the holes, which MPICH's ROMIO gets wrong, are in io_dswrite_race. */
#include "ct.h"
#include "io_common.h"

#define NP 300 /* pieces per rank and region */

/* value of int i of piece p written by rank r in round k */
static int val(int k, int r, int p, int i)
{
    return k * 1000000 + r * 10000 + p * 4 + i + 1;
}

/* Rank `rank` writes NP pieces of `blk` ints each, piece p at file int
 * base + (p * size + rank) * blk, with one MPI_File_write_at through a view (pieces of other
 * ranks' are the holes), when `writes`; the view is set and reset by every rank (collective). */
static void strided_write(MPI_File fh, MPI_Offset base, int blk, int k, int rank, int size, int writes)
{
    MPI_Datatype b, ft;
    int *v = malloc(sizeof(int) * NP * blk);
    for (int p = 0; p < NP; p++)
        for (int i = 0; i < blk; i++)
            v[p * blk + i] = val(k, rank, p, i);
    MPI_Type_contiguous(blk, MPI_INT, &b);
    MPI_Type_create_resized(b, 0, (MPI_Aint)blk * size * sizeof(int), &ft);
    MPI_Type_commit(&ft);
    MPI_File_set_view(fh, (base + (MPI_Offset)rank * blk) * sizeof(int), MPI_INT, ft, "native", MPI_INFO_NULL);
    if (writes)
        MPI_File_write_at(fh, 0, v, NP * blk, MPI_INT, MPI_STATUS_IGNORE);
    MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
    MPI_Type_free(&ft);
    MPI_Type_free(&b);
    free(v);
}

/* Every rank reads the region back and checks every piece (round k of every rank). */
static int check_region(MPI_File fh, MPI_Offset base, int blk, int k, int rank, int size, const char *what)
{
    int n = NP * size * blk, bad = -1, errs = 0;
    int *v = malloc(sizeof(int) * n);
    MPI_File_read_at(fh, base * sizeof(int), v, n, MPI_INT, MPI_STATUS_IGNORE);
    for (int j = 0; j < n && bad < 0; j++) {
        int piece = j / blk, r = piece % size, p = piece / size;
        if (v[j] != val(k, r, p, j % blk))
            bad = j;
    }
    CHECK(bad < 0, "%s: int %d is %d, not %d", what, bad, bad < 0 ? 0 : v[bad],
          bad < 0 ? 0 : val(k, (bad / blk) % size, bad / blk / size, bad % blk));
    free(v);
    return errs;
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, k, flag;
    char dir[256], path[300];
    MPI_File fh;
    MPI_Info info;
    MPI_Offset base = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    io_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/dswrite.dat", dir);

    /* 1: sieved writers only, three rounds without a barrier between them */
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    for (k = 0; k < 3; k++)
        strided_write(fh, base, 1, k, rank, size, 1);
    MPI_Barrier(MPI_COMM_WORLD);
    errs += check_region(fh, base, 1, 2, rank, size, "sieved writers");
    base += (MPI_Offset)NP * size;

    MPI_File_close(&fh);

    /* 3: a 64-byte sieving window: spans of at most 64 bytes; 3-int pieces, and then 20-int
     * pieces (wider than the window, written alone) */
    MPI_Info_create(&info);
    MPI_Info_set(info, "ind_wr_buffer_size", "64");
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR, info, &fh);
    MPI_Info_free(&info);
    strided_write(fh, base, 3, 4, rank, size, 1);
    MPI_Barrier(MPI_COMM_WORLD);
    errs += check_region(fh, base, 3, 4, rank, size, "64-byte window");
    base += (MPI_Offset)NP * size * 3;
    strided_write(fh, base, 20, 5, rank, size, 1);
    MPI_Barrier(MPI_COMM_WORLD);
    errs += check_region(fh, base, 20, 5, rank, size, "pieces wider than the window");
    base += (MPI_Offset)NP * size * 20;
    MPI_File_close(&fh);

    /* 4: past the end of file: the even ranks' pieces first (each one's span reaches past
     * the end of file, the odd ranks' pieces are holes), then the odd ranks' (what a sieving
     * writer puts in holes past the end is not defined: ROMIO leaves its buffer's bytes) */
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    strided_write(fh, base, 2, 6, rank, size, rank % 2 == 0);
    MPI_Barrier(MPI_COMM_WORLD);
    {
        int n = NP * size * 2, bad = -1, *v = malloc(sizeof(int) * n);
        MPI_File_read_at(fh, base * sizeof(int), v, n, MPI_INT, MPI_STATUS_IGNORE);
        for (int j = 0; j < n && bad < 0; j++) {
            int piece = j / 2, r = piece % size, p = piece / size;
            if (r % 2 == 0 && v[j] != val(6, r, p, j % 2))
                bad = j;
        }
        CHECK(bad < 0, "past the end: int %d is %d", bad, bad < 0 ? 0 : v[bad]);
        free(v);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    strided_write(fh, base, 2, 6, rank, size, rank % 2 == 1);
    MPI_Barrier(MPI_COMM_WORLD);
    errs += check_region(fh, base, 2, 6, rank, size, "past the end, holes filled");
    base += (MPI_Offset)NP * size * 2;

    /* 5: atomic mode */
    MPI_File_set_atomicity(fh, 1);
    MPI_File_get_atomicity(fh, &flag);
    CHECK(flag == 1, "atomicity %d", flag);
    strided_write(fh, base, 1, 7, rank, size, 1);
    MPI_Barrier(MPI_COMM_WORLD);
    errs += check_region(fh, base, 1, 7, rank, size, "atomic mode");
    base += (MPI_Offset)NP * size;
    MPI_File_set_atomicity(fh, 0);
    MPI_File_close(&fh);

    /* 6: sieving disabled */
    MPI_Info_create(&info);
    MPI_Info_set(info, "romio_ds_write", "disable");
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR, info, &fh);
    MPI_Info_free(&info);
    strided_write(fh, base, 1, 8, rank, size, 1);
    MPI_Barrier(MPI_COMM_WORLD);
    errs += check_region(fh, base, 1, 8, rank, size, "sieving disabled");
    base += (MPI_Offset)NP * size;
    MPI_File_close(&fh);

    /* 7: a write-only file (no span can be read back for a read-modify-write) */
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
    strided_write(fh, base, 1, 9, rank, size, 1);
    MPI_File_close(&fh);
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    errs += check_region(fh, base, 1, 9, rank, size, "write-only file");
    MPI_File_close(&fh);

    io_print_file(rank, "dswrite.dat", path);
    if (rank == 0)
        MPI_File_delete(path, MPI_INFO_NULL);
    CHECK(io_rmdir(rank, dir) == 0, "the directory was not empty at the end");
    return ct_finish(rank, errs);
}
