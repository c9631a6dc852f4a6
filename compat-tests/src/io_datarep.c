/* io_datarep.c - user data representations (MPI_Register_datarep, MPI_Register_datarep_c;
 * issue 19, session io3). Self-checking; a .expect file replaces MPICH's output because
 * MPICH 4.0.2 (ROMIO) refuses conversion functions (MPI_ERR_CONVERSION at registration) and
 * any registered name in MPI_File_set_view (MPI_ERR_UNSUPPORTED_DATAREP).
 *
 * "swap": MPI_INT stored byte-swapped, 4 bytes (same size: any filetype); registered with
 *         MPI_Register_datarep. Written collectively through an interleaving filetype from a
 *         contiguous buffer, read back collectively into a strided memory type, independently,
 *         and nonblocking; the file's bytes checked with POSIX reads.
 * "wide": MPI_INT stored as an 8-byte big-endian integer (the size changes: contiguous views);
 *         registered with MPI_Register_datarep_c. Written with individual file pointers,
 *         MPI_File_get_type_extent, file size, bytes checked, read back collectively.
 * Plus: get_view gives the name; registering a name twice, "external32", a null extent
 * function are errors; a conversion function's error fails the access with MPI_ERR_CONVERSION
 * and the file keeps its bytes; set_view with a name this rank did not register fails.
 * The "swap" file has 24-byte collective buffering rounds, pipelined (toucan_cb_pipeline).
 * external32: a vector of MPI_LONG (8 bytes in memory, 4 in the file) as filetype, its
 * displacements scaled to the file's sizes as the standard says for portable types (ROMIO
 * writes native sizes through an unscaled filetype here: another reason for the .expect). */
#include "io_common.h"

#define N 8

/* The conversions' extra_state: calls made (read, write), and whether the next write
 * conversion fails. */
struct counts {
    int calls[2];
    int fail_next;
};

/* Elements of `datatype` (all its basic items are MPI_INT) in `items` items. */
static int per_elem(MPI_Datatype t)
{
    int sz;
    MPI_Type_size(t, &sz);
    return sz / (int)sizeof(int);
}

static uint32_t bswap(uint32_t v)
{
    return (v >> 24) | ((v >> 8) & 0xff00) | ((v << 8) & 0xff0000) | (v << 24);
}

/* Converts `count` items between the tiled datatype at userbuf (from item `position`) and
 * filebuf through a packed copy. */
static int swap_conv(void *userbuf, MPI_Datatype t, int count, void *filebuf, MPI_Offset position, void *extra, int write)
{
    int per = per_elem(t), elems, first, pos = 0;
    MPI_Aint lb, ext;
    int *tmp;
    struct counts *c = extra;
    c->calls[write]++;
    if (write && c->fail_next) {
        c->fail_next = 0;
        return MPI_ERR_OTHER;
    }
    if (per <= 0 || count % per || position % per)
        return MPI_ERR_TYPE;
    elems = count / per;
    first = (int)(position / per);
    MPI_Type_get_extent(t, &lb, &ext);
    tmp = malloc(sizeof(int) * (size_t)count + 1);
    if (write) {
        MPI_Pack((char *)userbuf + first * ext, elems, t, tmp, (int)sizeof(int) * count, &pos, MPI_COMM_SELF);
        for (int i = 0; i < count; i++)
            ((uint32_t *)filebuf)[i] = bswap((uint32_t)tmp[i]);
    } else {
        for (int i = 0; i < count; i++)
            tmp[i] = (int)bswap(((uint32_t *)filebuf)[i]);
        MPI_Unpack(tmp, (int)sizeof(int) * count, &pos, (char *)userbuf + first * ext, elems, t, MPI_COMM_SELF);
    }
    free(tmp);
    return MPI_SUCCESS;
}

static int swap_read(void *u, MPI_Datatype t, int count, void *f, MPI_Offset p, void *x)
{
    return swap_conv(u, t, count, f, p, x, 0);
}

static int swap_write(void *u, MPI_Datatype t, int count, void *f, MPI_Offset p, void *x)
{
    return swap_conv(u, t, count, f, p, x, 1);
}

static int swap_extent(MPI_Datatype t, MPI_Aint *e, void *x)
{
    (void)x;
    return MPI_Type_get_extent(t, &(MPI_Aint){0}, e);
}

/* "wide": each int as 8 bytes big-endian (contiguous user buffers of MPI_INT only). */
static int wide_read(void *u, MPI_Datatype t, MPI_Count count, void *f, MPI_Offset p, void *x)
{
    unsigned char *b = f;
    (void)t;
    ((struct counts *)x)->calls[0]++;
    for (MPI_Count i = 0; i < count; i++) {
        uint64_t v = 0;
        for (int k = 0; k < 8; k++)
            v = v << 8 | b[8 * i + k];
        ((int *)u)[p + i] = (int)(int64_t)v;
    }
    return MPI_SUCCESS;
}

static int wide_write(void *u, MPI_Datatype t, MPI_Count count, void *f, MPI_Offset p, void *x)
{
    unsigned char *b = f;
    (void)t;
    ((struct counts *)x)->calls[1]++;
    for (MPI_Count i = 0; i < count; i++) {
        uint64_t v = (uint64_t)(int64_t)((int *)u)[p + i];
        for (int k = 0; k < 8; k++)
            b[8 * i + k] = (unsigned char)(v >> (56 - 8 * k));
    }
    return MPI_SUCCESS;
}

static int wide_extent(MPI_Datatype t, MPI_Aint *e, void *x)
{
    (void)x;
    if (t != MPI_INT)
        return MPI_ERR_TYPE;
    *e = 8;
    return MPI_SUCCESS;
}

#define check(ok, what)                                 \
    do {                                                \
        if (!(ok)) {                                    \
            printf("rank %d: FAIL %s\n", rank, (what)); \
            errs++;                                     \
        }                                               \
    } while (0)

static int cls(int rc)
{
    int c;
    MPI_Error_class(rc, &c);
    return c;
}

int main(int argc, char **argv)
{
    char dir[4096], path[4200], name[MPI_MAX_DATAREP_STRING];
    int rank, size, errs = 0;
    struct counts counts = {{0, 0}, 0}, *calls = &counts;
    int out[2 * N], in[2 * N], rc, cnt;
    MPI_File fh;
    MPI_Datatype blk, ft, strided, et, ft2;
    MPI_Offset disp, fsize;
    MPI_Aint fext;
    MPI_Status st;
    MPI_Request rq;
    MPI_Info info;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    io_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/datarep", dir);

    /* registration, and its errors (through MPI_FILE_NULL's handler: ERRORS_RETURN) */
    rc = MPI_Register_datarep("swap", swap_read, swap_write, swap_extent, calls);
    check(rc == MPI_SUCCESS, "register swap");
    rc = MPI_Register_datarep_c("wide", wide_read, wide_write, wide_extent, calls);
    check(rc == MPI_SUCCESS, "register wide");
    check(cls(MPI_Register_datarep("swap", swap_read, swap_write, swap_extent, calls)) == MPI_ERR_DUP_DATAREP, "swap twice");
    check(cls(MPI_Register_datarep("external32", swap_read, swap_write, swap_extent, NULL)) == MPI_ERR_DUP_DATAREP, "external32 taken");
    check(cls(MPI_Register_datarep("noext", swap_read, swap_write, NULL, NULL)) == MPI_ERR_ARG, "null extent function");

    /* "swap": interleaved filetype, N ints per rank */
    MPI_Type_contiguous(N, MPI_INT, &blk);
    MPI_Type_create_resized(blk, 0, (MPI_Aint)size * N * sizeof(int), &ft);
    MPI_Type_commit(&ft);
    MPI_Type_vector(N, 1, 2, MPI_INT, &strided);
    MPI_Type_commit(&strided);
    /* small collective-buffering rounds, written pipelined (Toucan's toucan_cb_pipeline hint):
     * the two-phase write of many rounds, each round's file write beside the next exchange */
    MPI_Info_create(&info);
    MPI_Info_set(info, "cb_buffer_size", "24");
    MPI_Info_set(info, "toucan_cb_pipeline", "enable");
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, info, &fh);
    MPI_Info_free(&info);
    rc = MPI_File_set_view(fh, (MPI_Offset)rank * N * sizeof(int), MPI_INT, ft, "swap", MPI_INFO_NULL);
    check(rc == MPI_SUCCESS, "set_view swap");
    MPI_File_get_view(fh, &disp, &et, &ft2, name);
    check(strcmp(name, "swap") == 0 && disp == (MPI_Offset)rank * N * (int)sizeof(int), "get_view swap");
    {
        int ni, na, nt, comb;
        MPI_Type_get_envelope(ft2, &ni, &na, &nt, &comb);
        if (comb != MPI_COMBINER_NAMED)
            MPI_Type_free(&ft2);
    }
    for (int i = 0; i < N; i++)
        out[i] = rank * 1000 + i * 7 - 3;
    counts.calls[0] = counts.calls[1] = 0;
    rc = MPI_File_write_at_all(fh, 0, out, N, MPI_INT, &st);
    MPI_Get_count(&st, MPI_INT, &cnt);
    check(rc == MPI_SUCCESS && cnt == N, "write_at_all swap");
    check(counts.calls[1] > 0, "write conversion called");
    MPI_File_sync(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) { /* every rank's ints, byte-swapped, in rank order */
        FILE *f = fopen(path, "rb");
        uint32_t v;
        int bad = 0;
        for (int r = 0; r < size; r++)
            for (int i = 0; i < N; i++)
                if (fread(&v, 4, 1, f) != 1 || (int)bswap(v) != r * 1000 + i * 7 - 3)
                    bad++;
        fclose(f);
        check(bad == 0, "swap file bytes");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    memset(in, 0x55, sizeof in);
    rc = MPI_File_read_at_all(fh, 0, in, 1, strided, &st);
    MPI_Get_count(&st, strided, &cnt);
    check(rc == MPI_SUCCESS && cnt == 1, "read_at_all strided swap");
    for (int i = 0; i < N; i++)
        check(in[2 * i] == out[i] && in[2 * i + 1] == 0x55555555, "strided values");
    check(counts.calls[0] > 0, "read conversion called");
    memset(in, 0, sizeof in);
    rc = MPI_File_read_at(fh, 2, in, N - 2, MPI_INT, &st);
    MPI_Get_count(&st, MPI_INT, &cnt);
    check(rc == MPI_SUCCESS && cnt == N - 2 && in[0] == out[2] && in[N - 3] == out[N - 1], "read_at swap");
    memset(in, 0, sizeof in);
    MPI_File_iread_at(fh, 0, in, N, MPI_INT, &rq);
    MPI_Wait(&rq, &st);
    MPI_Get_count(&st, MPI_INT, &cnt);
    check(cnt == N && memcmp(in, out, N * sizeof(int)) == 0, "iread_at swap");
    /* a failing conversion: MPI_ERR_CONVERSION, the file's bytes unchanged */
    counts.fail_next = 1;
    rc = MPI_File_write_at(fh, 0, in, N, MPI_INT, &st);
    check(cls(rc) == MPI_ERR_CONVERSION, "conversion error class");
    memset(in, 0, sizeof in);
    MPI_File_read_at(fh, 0, in, N, MPI_INT, &st);
    check(memcmp(in, out, N * sizeof(int)) == 0, "file kept after conversion error");
    /* a name nobody registered */
    check(cls(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "nosuchrep", MPI_INFO_NULL)) == MPI_ERR_UNSUPPORTED_DATAREP, "unknown datarep");
    MPI_File_close(&fh);

    /* "wide": 8 bytes per int in the file, contiguous view from rank*N*8 */
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh);
    rc = MPI_File_set_view(fh, (MPI_Offset)rank * N * 8, MPI_INT, MPI_INT, "wide", MPI_INFO_NULL);
    check(rc == MPI_SUCCESS, "set_view wide");
    MPI_File_get_type_extent(fh, MPI_INT, &fext);
    check(fext == 8, "get_type_extent wide");
    for (int i = 0; i < N; i++)
        out[i] = (i % 2 ? -1 : 1) * (rank * 100 + i);
    rc = MPI_File_write(fh, out, N / 2, MPI_INT, &st);
    MPI_Get_count(&st, MPI_INT, &cnt);
    check(rc == MPI_SUCCESS && cnt == N / 2, "write wide (first half)");
    rc = MPI_File_write_all(fh, out + N / 2, N / 2, MPI_INT, &st);
    check(rc == MPI_SUCCESS, "write_all wide (second half)");
    MPI_File_get_size(fh, &fsize);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_get_size(fh, &fsize);
    check(fsize == (MPI_Offset)size * N * 8, "wide file size");
    if (rank == 0) {
        FILE *f = fopen(path, "rb");
        unsigned char b[8];
        int bad = 0;
        for (int r = 0; r < size; r++)
            for (int i = 0; i < N; i++) {
                int64_t v = 0;
                if (fread(b, 8, 1, f) != 1)
                    bad++;
                for (int k = 0; k < 8; k++)
                    v = (int64_t)((uint64_t)v << 8 | b[k]);
                if (v != (i % 2 ? -1 : 1) * (r * 100 + i))
                    bad++;
            }
        fclose(f);
        check(bad == 0, "wide file bytes");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_seek(fh, 0, MPI_SEEK_SET);
    memset(in, 0, sizeof in);
    rc = MPI_File_read_all(fh, in, N + 1, MPI_INT, &st); /* one past this rank's part */
    MPI_Get_count(&st, MPI_INT, &cnt);
    check(rc == MPI_SUCCESS && memcmp(in, out, N * sizeof(int)) == 0, "read_all wide");
    check(cnt == (rank == size - 1 ? N : N + 1), "read_all wide count");
    MPI_File_get_view(fh, &disp, &et, &ft2, name);
    check(strcmp(name, "wide") == 0, "get_view wide");
    MPI_File_close(&fh);

    /* external32 through a portable non-contiguous filetype whose basic type changes size
     * (MPI_LONG: 8 bytes in memory, 4 in external32): the filetype's displacements are scaled
     * to the file's sizes, so the ranks' longs interleave 4 bytes apart, big-endian */
    {
        long lo[N], li[N];
        MPI_Datatype vt;
        MPI_Type_vector(N, 1, size, MPI_LONG, &vt);
        MPI_Type_commit(&vt);
        MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh);
        rc = MPI_File_set_view(fh, (MPI_Offset)rank * 4, MPI_LONG, vt, "external32", MPI_INFO_NULL);
        check(rc == MPI_SUCCESS, "set_view external32 vector of MPI_LONG");
        MPI_File_get_type_extent(fh, MPI_LONG, &fext);
        check(fext == 4, "get_type_extent external32 MPI_LONG");
        MPI_File_get_type_extent(fh, vt, &fext);
        check(fext == (MPI_Aint)((N - 1) * size + 1) * 4, "get_type_extent external32 vector");
        for (int i = 0; i < N; i++)
            lo[i] = (i % 3 ? 1 : -1) * (rank * 1000 + i);
        rc = MPI_File_write_at_all(fh, 0, lo, N, MPI_LONG, &st);
        MPI_Get_count(&st, MPI_LONG, &cnt);
        check(rc == MPI_SUCCESS && cnt == N, "write_at_all external32 vector");
        MPI_File_sync(fh);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            FILE *f = fopen(path, "rb");
            unsigned char b[4];
            int bad = 0;
            for (int i = 0; i < N; i++)
                for (int r = 0; r < size; r++) {
                    int32_t v;
                    if (fread(b, 4, 1, f) != 1)
                        bad++;
                    v = (int32_t)((uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3]);
                    if (v != (i % 3 ? 1 : -1) * (r * 1000 + i))
                        bad++;
                }
            check(fgetc(f) == EOF, "external32 vector file size");
            fclose(f);
            check(bad == 0, "external32 vector file bytes");
        }
        MPI_Barrier(MPI_COMM_WORLD);
        memset(li, 0, sizeof li);
        rc = MPI_File_read_at_all(fh, 0, li, N, MPI_LONG, &st);
        MPI_Get_count(&st, MPI_LONG, &cnt);
        check(rc == MPI_SUCCESS && cnt == N && memcmp(li, lo, sizeof lo) == 0, "read_at_all external32 vector");
        memset(li, 0, sizeof li);
        rc = MPI_File_read_at(fh, 3, li, 2, MPI_LONG, &st);
        check(rc == MPI_SUCCESS && li[0] == lo[3] && li[1] == lo[4], "read_at external32 vector");
        MPI_File_close(&fh);
        MPI_Type_free(&vt);
    }

    MPI_Type_free(&ft);
    MPI_Type_free(&blk);
    MPI_Type_free(&strided);
    check(io_rmdir(rank, dir) == 0, "the directory was not empty at the end");
    printf("rank %d: %s\n", rank, errs ? "FAILED" : "OK");
    MPI_Finalize();
    return 0;
}
