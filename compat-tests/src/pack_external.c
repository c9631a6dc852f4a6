/* MPI_Pack_external / MPI_Unpack_external / MPI_Pack_external_size with
 * "external32": big-endian bytes and the standard's sizes (MPI_LONG in 4 bytes,
 * long double as IEEE binary128), derived types packed in typemap order, the
 * position argument, and external32 data sent between ranks as MPI_BYTE.
 * (MPICH 4.0.2 fails on the pair types, MPI_WCHAR and structs of mixed
 * types here, and does not check outsize, so these are left out.) */
#include "ct.h"

/* Packs `n` elements of `t` at `p` and compares the bytes with `want`. */
static void expect_bytes(int rank, int *errp, const char *what, const void *p, int n,
                         MPI_Datatype t, const unsigned char *want, int wlen)
{
    unsigned char buf[128];
    MPI_Aint pos = 0, size = -1;
    int i, rc;
    MPI_Pack_external_size("external32", n, t, &size);
    CHECKP(size == wlen, "%s: external size %ld, want %d", what, (long) size, wlen);
    rc = MPI_Pack_external("external32", p, n, t, buf, sizeof buf, &pos);
    CHECKP(rc == MPI_SUCCESS && pos == wlen, "%s: rc %d position %ld", what, rc, (long) pos);
    for (i = 0; i < wlen && i < pos; i++)
        if (buf[i] != want[i]) {
            CHECKP(0, "%s: byte %d is %02x, want %02x", what, i, buf[i], want[i]);
            break;
        }
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, i;
    MPI_Datatype vec, st;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    {
        int x = 0x01020304;
        short s = -2;
        long l = -3;
        unsigned long ul = 258;
        float f = 1.0f;
        double d = -2.0;
        long double ld[2] = {1.0L, -1.5L};
        const unsigned char wx[] = {1, 2, 3, 4};
        const unsigned char ws[] = {0xff, 0xfe};
        const unsigned char wl[] = {0xff, 0xff, 0xff, 0xfd};
        const unsigned char wul[] = {0, 0, 1, 2};
        const unsigned char wf[] = {0x3f, 0x80, 0, 0};
        const unsigned char wd[] = {0xc0, 0, 0, 0, 0, 0, 0, 0};
        unsigned char wld[32] = {0x3f, 0xff};
        wld[16] = 0xbf;
        wld[17] = 0xff;
        wld[18] = 0x80;
        expect_bytes(rank, &errs, "int", &x, 1, MPI_INT, wx, 4);
        expect_bytes(rank, &errs, "short", &s, 1, MPI_SHORT, ws, 2);
        expect_bytes(rank, &errs, "long", &l, 1, MPI_LONG, wl, 4);
        expect_bytes(rank, &errs, "unsigned long", &ul, 1, MPI_UNSIGNED_LONG, wul, 4);
        expect_bytes(rank, &errs, "float", &f, 1, MPI_FLOAT, wf, 4);
        expect_bytes(rank, &errs, "double", &d, 1, MPI_DOUBLE, wd, 8);
        expect_bytes(rank, &errs, "long double", ld, 2, MPI_LONG_DOUBLE, wld, 32);
    }

    /* unpacking sign-extends a 4-byte MPI_LONG and converts binary128 back */
    {
        const unsigned char in[] = {0xff, 0xff, 0xff, 0xfd, 0x3f, 0xff, 0x80, 0, 0, 0, 0, 0,
                                    0, 0, 0, 0, 0, 0, 0, 0};
        long l = 0;
        long double ld = 0;
        MPI_Aint pos = 0;
        MPI_Unpack_external("external32", in, sizeof in, &pos, &l, 1, MPI_LONG);
        MPI_Unpack_external("external32", in, sizeof in, &pos, &ld, 1, MPI_LONG_DOUBLE);
        CHECK(l == -3 && ld == 1.5L && pos == 20, "unpack: long %ld, long double %g, pos %ld", l,
              (double) ld, (long) pos);
    }

    /* a vector and a struct, packed in typemap order, several elements, then sent */
    MPI_Type_vector(3, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    {
        struct rec {
            int a, skip, b[2];
        } recs[2] = {{-1, 0, {5, 6}}, {70000 + rank, 0, {-7, 8}}}, got[2];
        int blens[2] = {1, 2};
        MPI_Aint disps[2];
        MPI_Datatype types[2] = {MPI_INT, MPI_INT};
        int ints[10], back[10], prev = (rank + size - 1) % size;
        unsigned char buf[200], in[200];
        MPI_Aint pos = 3, psize = 0, vsz = 0, ssz = 0;
        disps[0] = (char *) &recs[0].a - (char *) &recs[0];
        disps[1] = (char *) &recs[0].b - (char *) &recs[0];
        MPI_Type_create_struct(2, blens, disps, types, &st);
        MPI_Type_commit(&st);
        MPI_Pack_external_size("external32", 2, vec, &vsz);
        MPI_Pack_external_size("external32", 2, st, &ssz);
        CHECK(vsz == 24 && ssz == 24, "sizes: vector %ld struct %ld", (long) vsz, (long) ssz);
        for (i = 0; i < 10; i++)
            ints[i] = rank * 1000 + i;
        memset(buf, 0, sizeof buf);
        MPI_Pack_external("external32", ints, 1, vec, buf, sizeof buf, &pos);
        CHECK(pos == 15, "position after vector %ld", (long) pos);
        CHECK(buf[3 + 7] == ((rank * 1000 + 2) & 0xff) && buf[3 + 6] == ((rank * 1000 + 2) >> 8),
              "second vector element bytes %02x %02x", buf[9], buf[10]);
        MPI_Pack_external("external32", recs, 2, st, buf, sizeof buf, &pos);
        CHECK(pos == 39, "position after structs %ld", (long) pos);
        CHECK(buf[15] == 0xff && buf[18] == 0xff && buf[22] == 5 && buf[26] == 6,
              "struct bytes %02x %02x %02x %02x", buf[15], buf[18], buf[22], buf[26]);
        psize = pos;
        MPI_Sendrecv(buf, (int) psize, MPI_BYTE, (rank + 1) % size, 0, in, (int) psize, MPI_BYTE,
                     prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (i = 0; i < 10; i++)
            back[i] = -1;
        memset(got, 0, sizeof got);
        pos = 3;
        MPI_Unpack_external("external32", in, psize, &pos, back, 1, vec);
        MPI_Unpack_external("external32", in, psize, &pos, got, 2, st);
        CHECK(pos == psize, "unpack position %ld", (long) pos);
        for (i = 0; i < 10; i++) {
            int want = (i % 2 == 0 && i < 6) ? prev * 1000 + i : -1;
            CHECK(back[i] == want, "vector element %d = %d, want %d", i, back[i], want);
        }
        CHECK(got[0].a == -1 && got[0].skip == 0 && got[0].b[0] == 5 && got[0].b[1] == 6, "struct 0");
        CHECK(got[1].a == 70000 + prev && got[1].b[0] == -7 && got[1].b[1] == 8, "struct 1: %d",
              got[1].a);

        MPI_Type_free(&st);
    }
    MPI_Type_free(&vec);
    return ct_finish(rank, errs);
}
