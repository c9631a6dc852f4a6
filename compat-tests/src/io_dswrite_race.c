/* MPI-IO data sieving of writes against writers of the holes (issue 19; .expect: MPICH
 * 4.0.2 fails it). Even ranks write small strided pieces with one MPI_File_write_at through
 * a view (sieved: the span of their pieces is read, their pieces copied in, the span written
 * back), while at the same time odd ranks write the pieces in between, each with its own
 * contiguous MPI_File_write_at. A sieving writer that rewrote the holes without a lock that
 * the contiguous writers respect too would put old bytes over theirs. MPICH's ROMIO takes no
 * lock for contiguous writes, and writes its uninitialised buffer into holes past the end of
 * file: its odd ranks' data are lost now and then (seen at -np 2). Rounds alternate between
 * a region past the end of file and one written before; then a region whose holes past the
 * end stay unwritten must read back as zeros (a POSIX file's holes). */
#include "ct.h"
#include "io_common.h"

#define NP 300 /* pieces per rank and region */
#define ROUNDS 6

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

/* The contiguous writer: each of its NP pieces (2 ints) with its own MPI_File_write_at
 * through the default view of `fh2`. */
static void contiguous_write(MPI_File fh2, MPI_Offset base, int k, int rank, int size)
{
    for (int p = 0; p < NP; p++) {
        int two[2] = {val(k, rank, p, 0), val(k, rank, p, 1)};
        MPI_File_write_at(fh2, (base + ((MPI_Offset)p * size + rank) * 2) * sizeof(int), two, 2, MPI_INT,
                          MPI_STATUS_IGNORE);
    }
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, k;
    char dir[256], path[300];
    MPI_File fh, fh2;
    MPI_Offset base = 0;
    MPI_Datatype b, ft;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    io_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/dsrace.dat", dir);
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR, MPI_INFO_NULL, &fh2);
    MPI_Type_contiguous(2, MPI_INT, &b);
    MPI_Type_create_resized(b, 0, (MPI_Aint)2 * size * sizeof(int), &ft);
    MPI_Type_commit(&ft);
    for (k = 0; k < ROUNDS; k++) {
        int n = NP * size * 2;
        if (k % 2) {
            /* this round's region exists already (zeros) */
            int *z = calloc(n, sizeof(int));
            if (rank == 0)
                MPI_File_write_at(fh2, base * sizeof(int), z, n, MPI_INT, MPI_STATUS_IGNORE);
            free(z);
            MPI_Barrier(MPI_COMM_WORLD);
        }
        if (rank % 2) {
            /* fh's view is set by every rank (collective), the odd ranks write through fh2 */
            MPI_File_set_view(fh, (base + (MPI_Offset)rank * 2) * sizeof(int), MPI_INT, ft, "native", MPI_INFO_NULL);
            contiguous_write(fh2, base, k, rank, size);
            MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
        } else {
            strided_write(fh, base, 2, k, rank, size, 1);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        errs += check_region(fh, base, 2, k, rank, size, k % 2 ? "race over written bytes" : "race past the end");
        base += (MPI_Offset)n;
    }
    /* holes past the end of file that nobody writes read back as zeros */
    strided_write(fh, base, 2, ROUNDS, rank, size, rank % 2 == 0);
    MPI_Barrier(MPI_COMM_WORLD);
    {
        int n = NP * size * 2, bad = -1, *v = malloc(sizeof(int) * n), one = 1;
        if (rank == 0) /* one more int after the region, so all of its holes are inside the file */
            MPI_File_write_at(fh2, (base + n) * sizeof(int), &one, 1, MPI_INT, MPI_STATUS_IGNORE);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_File_read_at(fh, base * sizeof(int), v, n, MPI_INT, MPI_STATUS_IGNORE);
        for (int j = 0; j < n && bad < 0; j++) {
            int piece = j / 2, r = piece % size, p = piece / size;
            if (v[j] != (r % 2 ? 0 : val(ROUNDS, r, p, j % 2)))
                bad = j;
        }
        CHECK(bad < 0, "holes past the end: int %d is %d", bad, bad < 0 ? 0 : v[bad]);
        free(v);
    }
    MPI_Type_free(&ft);
    MPI_Type_free(&b);
    MPI_File_close(&fh2);
    MPI_File_close(&fh);
    io_print_file(rank, "dsrace.dat", path);
    if (rank == 0)
        MPI_File_delete(path, MPI_INFO_NULL);
    CHECK(io_rmdir(rank, dir) == 0, "the directory was not empty at the end");
    return ct_finish(rank, errs);
}
