/* io_datarep_types.c - views of non-portable filetypes in representations whose basic types
 * change size in the file (issue 19, session io5). MPI 4.1 section 14.5.1: displacements a
 * constructor takes in bytes (struct, hindexed, hvector, create_resized's bounds) are file
 * bytes, taken as they are; the ones counted in elements (contiguous, vector, indexed,
 * subarray) count elements whose extent is now their file extent. Every byte of each file is
 * checked with POSIX reads against that layout, holes included (zeros). Self-checking, with a
 * .expect: ROMIO (MPICH 4.0.2) writes native sizes through the memory layout of such
 * filetypes, and refuses user representations.
 *
 * A: external32, filetype resized(struct {long at 0, int at 8, double at 16}, 0, 24 * size)
 *    from rank * 24: in the file the long takes 4 bytes at 0, the int 4 at 8, the double 8 at
 *    16 (holes 4..8 and 12..16); written collectively from an array of C structs (the same
 *    struct type as memory type) in small two-phase rounds, read back collectively, at an
 *    explicit offset in etypes (MPI_BYTE: file bytes of data) and independently.
 * B: external32, etype MPI_LONG, filetype resized(hindexed {2, 1, 3} longs at bytes {0, 12,
 *    24}, 0, 40 * size) from rank * 40: the longs overlap in memory (8 bytes each) but not
 *    in the file (4 each); get_byte_offset, get_type_extent; individual file pointers,
 *    nonblocking collective write, independent read.
 * D: external32, etype MPI_LONG_INT (12 bytes, extent 16 in memory; 4 + 4 bytes in the file),
 *    filetype vector(N, 1, size) of it from rank * 8: the pairs interleave 8 bytes apart;
 *    get_type_extent of a subarray of MPI_LONG (scaled: 4-byte elements).
 * C: a user representation "wide8" storing MPI_INT as 8 big-endian bytes: filetype
 *    resized(struct {2 ints at 0, 1 int at 24}, 0, 32 * size) from rank * 32; get_type_extent
 *    of a vector (scaled) and of an hvector (as is); a view whose 8-byte items overlap in the
 *    file is refused on a writable file. */
#include "io_common.h"
#include <stddef.h>

#define N 6

struct rec {
    long l;
    int i;
    double d;
};

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

/* Big-endian integer of n bytes at b, sign-extended. */
static int64_t be(const unsigned char *b, int n)
{
    uint64_t v = (b[0] & 0x80) ? ~(uint64_t)0 : 0;
    for (int k = 0; k < n; k++)
        v = v << 8 | b[k];
    return (int64_t)v;
}

static double be_double(const unsigned char *b)
{
    uint64_t u = (uint64_t)be(b, 8);
    double d;
    memcpy(&d, &u, 8);
    return d;
}

static int all_zero(const unsigned char *b, int n)
{
    for (int k = 0; k < n; k++)
        if (b[k])
            return 0;
    return 1;
}

/* The whole file, read with POSIX calls (rank 0). */
static unsigned char *slurp(const char *path, long *len)
{
    FILE *f = fopen(path, "rb");
    unsigned char *b;
    *len = 0;
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    *len = ftell(f);
    fseek(f, 0, SEEK_SET);
    b = malloc((size_t)*len + 1);
    if (fread(b, 1, (size_t)*len, f) != (size_t)*len)
        *len = -1;
    fclose(f);
    return b;
}

static long lval(int r, int i)
{
    return (i % 2 ? -1L : 1L) * (r * 1000 + i);
}

/* "wide8": MPI_INT as 8 bytes big-endian; the user buffers are contiguous MPI_INTs. */
static int wide_read(void *u, MPI_Datatype t, int count, void *f, MPI_Offset p, void *x)
{
    (void)t;
    (void)x;
    for (int i = 0; i < count; i++)
        ((int *)u)[p + i] = (int)be((unsigned char *)f + 8 * i, 8);
    return MPI_SUCCESS;
}

static int wide_write(void *u, MPI_Datatype t, int count, void *f, MPI_Offset p, void *x)
{
    unsigned char *b = f;
    (void)t;
    (void)x;
    for (int i = 0; i < count; i++) {
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

int main(int argc, char **argv)
{
    char dir[4096], path[4200];
    int rank, size, errs = 0, rc, cnt;
    MPI_File fh;
    MPI_Status st;
    MPI_Request rq;
    MPI_Info info;
    MPI_Aint ext;
    MPI_Offset off;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    io_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/types", dir);

    /* A: struct of long, int, double under external32 */
    {
        struct rec out[N], in[N];
        int bl[3] = {1, 1, 1};
        MPI_Aint ds[3] = {offsetof(struct rec, l), offsetof(struct rec, i), offsetof(struct rec, d)};
        MPI_Datatype ts[3] = {MPI_LONG, MPI_INT, MPI_DOUBLE}, st3, ft;
        MPI_Type_create_struct(3, bl, ds, ts, &st3);
        MPI_Type_commit(&st3);
        MPI_Type_create_resized(st3, 0, (MPI_Aint)24 * size, &ft);
        MPI_Type_commit(&ft);
        for (int i = 0; i < N; i++) {
            out[i].l = lval(rank, i);
            out[i].i = rank * 100 - i;
            out[i].d = rank + i / 8.0;
        }
        MPI_Info_create(&info);
        MPI_Info_set(info, "cb_buffer_size", "40");
        MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, info, &fh);
        MPI_Info_free(&info);
        rc = MPI_File_set_view(fh, (MPI_Offset)rank * 24, MPI_BYTE, ft, "external32", MPI_INFO_NULL);
        check(rc == MPI_SUCCESS, "A: set_view external32 struct");
        MPI_File_get_type_extent(fh, st3, &ext);
        check(ext == 24, "A: get_type_extent struct");
        MPI_File_get_type_extent(fh, MPI_LONG, &ext);
        check(ext == 4, "A: get_type_extent MPI_LONG");
        MPI_File_get_byte_offset(fh, 16 + 4, &off); /* the second record's int */
        check(off == (MPI_Offset)rank * 24 + 24 * size + 8, "A: get_byte_offset");
        rc = MPI_File_write_at_all(fh, 0, out, N, st3, &st);
        MPI_Get_count(&st, st3, &cnt);
        check(rc == MPI_SUCCESS && cnt == N, "A: write_at_all");
        MPI_File_sync(fh);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            long len;
            unsigned char *b = slurp(path, &len);
            int bad = 0;
            check(len == (long)24 * size * N, "A: file size");
            for (int t = 0; b && len == (long)24 * size * N && t < N; t++)
                for (int r = 0; r < size; r++) {
                    unsigned char *p = b + 24 * (t * size + r);
                    bad += be(p, 4) != lval(r, t) || !all_zero(p + 4, 4);
                    bad += be(p + 8, 4) != r * 100 - t || !all_zero(p + 12, 4);
                    bad += be_double(p + 16) != r + t / 8.0;
                }
            check(bad == 0, "A: file bytes");
            free(b);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        memset(in, 0, sizeof in);
        rc = MPI_File_read_at_all(fh, 0, in, N, st3, &st);
        MPI_Get_count(&st, st3, &cnt);
        check(rc == MPI_SUCCESS && cnt == N, "A: read_at_all");
        for (int i = 0; i < N; i++)
            check(in[i].l == out[i].l && in[i].i == out[i].i && in[i].d == out[i].d, "A: read_at_all values");
        memset(in, 0, sizeof in);
        rc = MPI_File_read_at(fh, 16 * 2, in, 2, st3, &st); /* from the third record */
        MPI_Get_count(&st, st3, &cnt);
        check(rc == MPI_SUCCESS && cnt == 2 && in[0].l == out[2].l && in[1].d == out[3].d, "A: read_at");
        /* reading past the end (every rank's record N is past it): one record, counted */
        rc = MPI_File_read_at(fh, 16 * (N - 1), in, 2, st3, &st);
        MPI_Get_count(&st, st3, &cnt);
        check(rc == MPI_SUCCESS && cnt == 1 && in[0].i == out[N - 1].i, "A: read_at past the end");
        MPI_File_close(&fh);
        MPI_Type_free(&ft);
        MPI_Type_free(&st3);
    }

    /* B: hindexed of MPI_LONG under external32 */
    {
        long out[6 * N], in[6 * N];
        int bl[3] = {2, 1, 3};
        MPI_Aint ds[3] = {0, 12, 24};
        const int at[6] = {0, 4, 12, 24, 28, 32}; /* file bytes of a tile's six longs */
        MPI_Datatype hx, ft;
        MPI_Type_create_hindexed(3, bl, ds, MPI_LONG, &hx);
        MPI_Type_create_resized(hx, 0, (MPI_Aint)40 * size, &ft);
        MPI_Type_commit(&hx);
        MPI_Type_commit(&ft);
        for (int i = 0; i < 6 * N; i++)
            out[i] = lval(rank, i);
        MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh);
        rc = MPI_File_set_view(fh, (MPI_Offset)rank * 40, MPI_LONG, ft, "external32", MPI_INFO_NULL);
        check(rc == MPI_SUCCESS, "B: set_view external32 hindexed");
        MPI_File_get_type_extent(fh, hx, &ext);
        check(ext == 36, "B: get_type_extent hindexed");
        MPI_File_get_byte_offset(fh, 3, &off);
        check(off == (MPI_Offset)rank * 40 + 24, "B: get_byte_offset");
        MPI_File_get_byte_offset(fh, 7, &off);
        check(off == (MPI_Offset)rank * 40 + 40 * size + 4, "B: get_byte_offset second tile");
        rc = MPI_File_write(fh, out, 4, MPI_LONG, &st); /* individual pointer */
        check(rc == MPI_SUCCESS, "B: write");
        MPI_File_get_position(fh, &off);
        check(off == 4, "B: position");
        rc = MPI_File_iwrite_all(fh, out + 4, 6 * N - 4, MPI_LONG, &rq);
        check(rc == MPI_SUCCESS, "B: iwrite_all");
        MPI_Wait(&rq, &st);
        MPI_Get_count(&st, MPI_LONG, &cnt);
        check(cnt == 6 * N - 4, "B: iwrite_all count");
        MPI_File_sync(fh);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            long len;
            unsigned char *b = slurp(path, &len);
            int bad = 0;
            long want = 40L * size * (N - 1) + 40L * (size - 1) + 36;
            check(len == want, "B: file size");
            for (int t = 0; b && len == want && t < N; t++)
                for (int r = 0; r < size; r++) {
                    unsigned char *p = b + 40 * (t * size + r);
                    for (int k = 0; k < 6; k++)
                        bad += be(p + at[k], 4) != lval(r, 6 * t + k);
                    bad += !all_zero(p + 8, 4) + !all_zero(p + 16, 8);
                    if (t < N - 1 || r < size - 1)
                        bad += !all_zero(p + 36, 4);
                }
            check(bad == 0, "B: file bytes");
            free(b);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        memset(in, 0, sizeof in);
        rc = MPI_File_read_at(fh, 0, in, 6 * N, MPI_LONG, &st);
        MPI_Get_count(&st, MPI_LONG, &cnt);
        check(rc == MPI_SUCCESS && cnt == 6 * N && memcmp(in, out, sizeof out) == 0, "B: read_at");
        memset(in, 0, sizeof in);
        rc = MPI_File_read_at_all(fh, 5, in, 3, MPI_LONG, &st);
        check(rc == MPI_SUCCESS && in[0] == out[5] && in[1] == out[6] && in[2] == out[7], "B: read_at_all across tiles");
        MPI_File_close(&fh);
        MPI_Type_free(&ft);
        MPI_Type_free(&hx);
    }

    /* D: a pair type under external32 */
    {
        struct li {
            long v;
            int k;
        } out[N], in[N];
        int sizes[2] = {4, 6}, subs[2] = {2, 3}, starts[2] = {1, 2};
        MPI_Datatype vt, sa;
        MPI_Type_vector(N, 1, size, MPI_LONG_INT, &vt);
        MPI_Type_commit(&vt);
        MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_C, MPI_LONG, &sa);
        MPI_Type_commit(&sa);
        for (int i = 0; i < N; i++) {
            out[i].v = lval(rank, i);
            out[i].k = -rank - 10 * i;
        }
        MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh);
        rc = MPI_File_set_view(fh, (MPI_Offset)rank * 8, MPI_LONG_INT, vt, "external32", MPI_INFO_NULL);
        check(rc == MPI_SUCCESS, "D: set_view external32 vector of MPI_LONG_INT");
        MPI_File_get_type_extent(fh, MPI_LONG_INT, &ext);
        check(ext == 8, "D: get_type_extent MPI_LONG_INT");
        MPI_File_get_type_extent(fh, sa, &ext);
        check(ext == 24 * 4, "D: get_type_extent subarray of MPI_LONG");
        rc = MPI_File_write_all(fh, out, N, MPI_LONG_INT, &st);
        MPI_Get_count(&st, MPI_LONG_INT, &cnt);
        check(rc == MPI_SUCCESS && cnt == N, "D: write_all");
        MPI_File_sync(fh);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            long len;
            unsigned char *b = slurp(path, &len);
            int bad = 0;
            check(len == 8L * size * N, "D: file size");
            for (int t = 0; b && len == 8L * size * N && t < N; t++)
                for (int r = 0; r < size; r++) {
                    unsigned char *p = b + 8 * (t * size + r);
                    bad += be(p, 4) != lval(r, t) || be(p + 4, 4) != -r - 10 * t;
                }
            check(bad == 0, "D: file bytes");
            free(b);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        memset(in, 0, sizeof in);
        rc = MPI_File_read_at_all(fh, 0, in, N, MPI_LONG_INT, &st);
        MPI_Get_count(&st, MPI_LONG_INT, &cnt);
        check(rc == MPI_SUCCESS && cnt == N, "D: read_at_all");
        for (int i = 0; i < N; i++)
            check(in[i].v == out[i].v && in[i].k == out[i].k, "D: read_at_all values");
        MPI_File_close(&fh);
        MPI_Type_free(&vt);
        MPI_Type_free(&sa);
    }

    /* C: a user representation with 8-byte ints */
    {
        int out[3 * N], in[3 * N];
        int bl[2] = {2, 1};
        MPI_Aint ds[2] = {0, 24};
        MPI_Datatype ts[2] = {MPI_INT, MPI_INT}, s2, ft, v, hv;
        rc = MPI_Register_datarep("wide8", wide_read, wide_write, wide_extent, NULL);
        check(rc == MPI_SUCCESS, "C: register wide8");
        MPI_Type_create_struct(2, bl, ds, ts, &s2);
        MPI_Type_create_resized(s2, 0, (MPI_Aint)32 * size, &ft);
        MPI_Type_commit(&s2);
        MPI_Type_commit(&ft);
        MPI_Type_vector(2, 1, 3, MPI_INT, &v);
        MPI_Type_create_hvector(2, 1, 12, MPI_INT, &hv);
        MPI_Type_commit(&v);
        MPI_Type_commit(&hv);
        for (int i = 0; i < 3 * N; i++)
            out[i] = (i % 2 ? -1 : 1) * (rank * 100 + i);
        MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh);
        rc = MPI_File_set_view(fh, (MPI_Offset)rank * 32, MPI_INT, ft, "wide8", MPI_INFO_NULL);
        check(rc == MPI_SUCCESS, "C: set_view wide8 struct");
        MPI_File_get_type_extent(fh, s2, &ext);
        check(ext == 32, "C: get_type_extent struct");
        MPI_File_get_type_extent(fh, v, &ext);
        check(ext == 32, "C: get_type_extent vector (scaled)");
        MPI_File_get_type_extent(fh, hv, &ext);
        check(ext == 20, "C: get_type_extent hvector (as is)");
        rc = MPI_File_write_at_all(fh, 0, out, 3 * N, MPI_INT, &st);
        MPI_Get_count(&st, MPI_INT, &cnt);
        check(rc == MPI_SUCCESS && cnt == 3 * N, "C: write_at_all");
        MPI_File_sync(fh);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            long len;
            unsigned char *b = slurp(path, &len);
            int bad = 0;
            check(len == 32L * size * N, "C: file size");
            for (int t = 0; b && len == 32L * size * N && t < N; t++)
                for (int r = 0; r < size; r++) {
                    unsigned char *p = b + 32 * (t * size + r);
                    for (int k = 0; k < 3; k++) {
                        int i = 3 * t + k;
                        bad += be(p + (k < 2 ? 8 * k : 24), 8) != (i % 2 ? -1 : 1) * (r * 100 + i);
                    }
                    bad += !all_zero(p + 16, 8);
                }
            check(bad == 0, "C: file bytes");
            free(b);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        memset(in, 0, sizeof in);
        rc = MPI_File_read_at_all(fh, 0, in, 3 * N, MPI_INT, &st);
        MPI_Get_count(&st, MPI_INT, &cnt);
        check(rc == MPI_SUCCESS && cnt == 3 * N && memcmp(in, out, sizeof out) == 0, "C: read_at_all");
        memset(in, 0, sizeof in);
        rc = MPI_File_read_at(fh, 2, in, 2, MPI_INT, &st);
        check(rc == MPI_SUCCESS && in[0] == out[2] && in[1] == out[3], "C: read_at");
        /* 8-byte items 4 bytes apart overlap in the file: not a view of a writable file */
        {
            MPI_Datatype ov;
            MPI_Type_create_hvector(2, 1, 4, MPI_INT, &ov);
            MPI_Type_commit(&ov);
            rc = MPI_File_set_view(fh, 0, MPI_INT, ov, "wide8", MPI_INFO_NULL);
            check(rc != MPI_SUCCESS && cls(rc) == MPI_ERR_IO, "C: overlapping file items refused");
            MPI_Type_free(&ov);
        }
        MPI_File_close(&fh);
        MPI_Type_free(&ft);
        MPI_Type_free(&s2);
        MPI_Type_free(&v);
        MPI_Type_free(&hv);
    }

    check(io_rmdir(rank, dir) == 0, "the directory was not empty at the end");
    printf("rank %d: %s\n", rank, errs ? "FAILED" : "OK");
    MPI_Finalize();
    return 0;
}
