/* MPI-IO collective reads, both of Toucan's ways (issue 19): two-phase through one aggregator
 * per process and the direct way where each process reads its own ranks' pieces (hint
 * toucan_cb_read_direct=enable/disable/a piece size; other MPIs ignore the key). Each way
 * reads the same file: interleaved blocks of the neighbour rank through a view, the whole file
 * by every rank at once (overlapping requests), a read across the end of file (short count),
 * a strided memory type, and a rank with nothing to read. Each rank prints its counts and
 * sums, the same for every way and every MPI. */
#include "ct.h"
#include "io_common.h"

#define B 257  /* ints per block */
#define NB 6   /* blocks per rank */

static long long sum_ints(const int *v, int n)
{
    long long s = 0;
    for (int i = 0; i < n; i++)
        s += (long long)v[i] * (i % 7 + 1);
    return s;
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, n, i, k, nb = NB * B;
    char dir[256], path[300];
    const char *ways[] = {NULL, "enable", "disable", "4"};
    int *mine, *got, *all, *strided;
    MPI_File fh;
    MPI_Status st;
    MPI_Datatype blk, ft, vec;
    MPI_Info info;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    io_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/collread.dat", dir);
    mine = malloc(sizeof(int) * nb);
    got = malloc(sizeof(int) * nb);
    all = malloc(sizeof(int) * nb * size + 64);
    strided = malloc(sizeof(int) * nb * 2);
    for (i = 0; i < nb; i++)
        mine[i] = rank * 100000 + i;
    /* block j of rank r is at file block j * size + r */
    MPI_Type_contiguous(B, MPI_INT, &blk);
    MPI_Type_create_resized(blk, 0, (MPI_Aint)B * size * sizeof(int), &ft);
    MPI_Type_commit(&ft);
    MPI_Type_vector(nb, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);

    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    MPI_File_set_view(fh, (MPI_Offset)rank * B * sizeof(int), MPI_INT, ft, "native", MPI_INFO_NULL);
    MPI_File_write_all(fh, mine, nb, MPI_INT, &st);
    MPI_File_close(&fh);
    io_print_file(rank, "collread.dat", path);

    for (k = 0; k < 4; k++) {
        int nbr = (rank + 1) % size;
        MPI_Info_create(&info);
        if (ways[k])
            MPI_Info_set(info, "toucan_cb_read_direct", ways[k]);
        MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, info, &fh);
        MPI_Info_free(&info);

        /* the neighbour's blocks through a view */
        memset(got, 0xff, sizeof(int) * nb);
        MPI_File_set_view(fh, (MPI_Offset)nbr * B * sizeof(int), MPI_INT, ft, "native", MPI_INFO_NULL);
        MPI_File_read_all(fh, got, nb, MPI_INT, &st);
        MPI_Get_count(&st, MPI_INT, &n);
        for (i = 0; i < nb && got[i] == nbr * 100000 + i; i++)
            ;
        CHECK(n == nb && i == nb, "way %d: neighbour's blocks: count %d, first wrong at %d", k, n, i);

        /* the whole file at every rank (all requests overlap; not past its end: ROMIO's collective
         * reads count what was asked for there, where the standard counts what was read) */
        MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL);
        memset(all, 0xff, sizeof(int) * nb * size + 64);
        MPI_File_read_at_all(fh, 0, all, nb * size, MPI_INT, &st);
        MPI_Get_count(&st, MPI_INT, &n);
        printf("rank %d: way %d whole file: count %d sum %lld\n", rank, k, n, sum_ints(all, nb * size));

        /* a read across the end: half of it there (ranks at odd positions read nothing) */
        memset(got, 0xff, sizeof(int) * nb);
        MPI_File_read_at_all(fh, (MPI_Offset)nb * size - nb / 2 + rank, got, rank % 2 ? 0 : nb, MPI_INT, &st);
        MPI_Get_count(&st, MPI_INT, &n);
        printf("rank %d: way %d across the end: count %d sum %lld\n", rank, k, n, sum_ints(got, n > 0 ? n : 0));

        /* own blocks into every other int of memory */
        memset(strided, 0xff, sizeof(int) * nb * 2);
        MPI_File_set_view(fh, (MPI_Offset)rank * B * sizeof(int), MPI_INT, ft, "native", MPI_INFO_NULL);
        MPI_File_read_at_all(fh, 0, strided, 1, vec, &st);
        MPI_Get_count(&st, vec, &n);
        for (i = 0; i < nb && strided[2 * i] == mine[i] && strided[2 * i + 1] == -1; i++)
            ;
        CHECK(n == 1 && i == nb, "way %d: strided memory: count %d, first wrong at %d", k, n, i);
        MPI_File_close(&fh);
    }
    if (rank == 0)
        MPI_File_delete(path, MPI_INFO_NULL);
    MPI_Type_free(&vec);
    MPI_Type_free(&ft);
    MPI_Type_free(&blk);
    free(mine);
    free(got);
    free(all);
    free(strided);
    CHECK(io_rmdir(rank, dir) == 0, "the directory was not empty at the end");
    return ct_finish(rank, errs);
}
