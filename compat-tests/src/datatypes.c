/* Every predefined C datatype: MPI_Type_size and extent match the C type,
 * and an array of values makes a round trip around the ring unchanged. */
#include "ct.h"
#include <complex.h>
#include <stdbool.h>
#include <stdint.h>
#include <wchar.h>

#define N 7

/* value i of sender s, as a small integer valid for every type */
#define GEN(s, i) (((s) * 13 + (i) * 7 + 1) % 100)
#define SGEN(s, i) (GEN(s, i) - 50)

#define ROUNDTRIP(CT, MT, EXPR)                                                           \
    do {                                                                                  \
        CT sb_[N], rb_[N];                                                                \
        int i_, c_ = -1, sz_ = -1, bad_ = -1;                                             \
        MPI_Aint lb_ = -1, ext_ = -1;                                                     \
        MPI_Status st_;                                                                   \
        MPI_Type_size(MT, &sz_);                                                          \
        MPI_Type_get_extent(MT, &lb_, &ext_);                                             \
        CHECK(sz_ == (int) sizeof(CT), "%s: MPI_Type_size %d, sizeof %d", #MT, sz_,       \
              (int) sizeof(CT));                                                          \
        CHECK(lb_ == 0 && ext_ == (MPI_Aint) sizeof(CT), "%s: lb %ld extent %ld", #MT,    \
              (long) lb_, (long) ext_);                                                   \
        for (i_ = 0; i_ < N; i_++) {                                                      \
            int s_ = rank, i = i_;                                                        \
            (void) i;                                                                     \
            (void) s_;                                                                    \
            sb_[i_] = (CT) (EXPR);                                                        \
        }                                                                                 \
        memset(rb_, 0, sizeof rb_);                                                       \
        MPI_Sendrecv(sb_, N, MT, to, tag, rb_, N, MT, from, tag, MPI_COMM_WORLD, &st_);   \
        MPI_Get_count(&st_, MT, &c_);                                                     \
        CHECK(c_ == N, "%s: count %d", #MT, c_);                                          \
        for (i_ = 0; i_ < N; i_++) {                                                      \
            int s_ = from, i = i_;                                                        \
            (void) i;                                                                     \
            (void) s_;                                                                    \
            if (!(rb_[i_] == (CT) (EXPR)) && bad_ < 0)                                    \
                bad_ = i_;                                                                \
        }                                                                                 \
        CHECK(bad_ < 0, "%s: element %d differs after the round trip", #MT, bad_);        \
        tag++;                                                                            \
    } while (0)

int main(int argc, char **argv)
{
    int rank, size, errs = 0, to, from, tag = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    to = (rank + 1) % size;
    from = (rank + size - 1) % size;

    ROUNDTRIP(char, MPI_CHAR, 'a' + GEN(s_, i) % 26);
    ROUNDTRIP(signed char, MPI_SIGNED_CHAR, SGEN(s_, i));
    ROUNDTRIP(unsigned char, MPI_UNSIGNED_CHAR, 150 + GEN(s_, i));
    ROUNDTRIP(short, MPI_SHORT, SGEN(s_, i) * 300);
    ROUNDTRIP(unsigned short, MPI_UNSIGNED_SHORT, 60000 + GEN(s_, i));
    ROUNDTRIP(int, MPI_INT, SGEN(s_, i) * 20000000);
    ROUNDTRIP(unsigned, MPI_UNSIGNED, 4000000000u + GEN(s_, i));
    ROUNDTRIP(long, MPI_LONG, SGEN(s_, i) * 3000000000L);
    ROUNDTRIP(unsigned long, MPI_UNSIGNED_LONG, 18000000000000000000UL + GEN(s_, i));
    ROUNDTRIP(long long, MPI_LONG_LONG, SGEN(s_, i) * 90000000000000000LL);
    ROUNDTRIP(long long, MPI_LONG_LONG_INT, SGEN(s_, i) * 90000000000000001LL);
    ROUNDTRIP(unsigned long long, MPI_UNSIGNED_LONG_LONG, 18000000000000000000ULL + GEN(s_, i));
    ROUNDTRIP(float, MPI_FLOAT, SGEN(s_, i) / 8.0f + 1e20f * (i == 3));
    ROUNDTRIP(double, MPI_DOUBLE, SGEN(s_, i) / 3.0 + 1e300 * (i == 4));
    ROUNDTRIP(long double, MPI_LONG_DOUBLE, SGEN(s_, i) / 3.0L + 1e4000L * (i == 5));
    ROUNDTRIP(int8_t, MPI_INT8_T, SGEN(s_, i) * 2);
    ROUNDTRIP(uint8_t, MPI_UINT8_T, 155 + GEN(s_, i));
    ROUNDTRIP(int16_t, MPI_INT16_T, SGEN(s_, i) * 600);
    ROUNDTRIP(uint16_t, MPI_UINT16_T, 65000 + GEN(s_, i));
    ROUNDTRIP(int32_t, MPI_INT32_T, SGEN(s_, i) * 40000000);
    ROUNDTRIP(uint32_t, MPI_UINT32_T, 4100000000u + GEN(s_, i));
    ROUNDTRIP(int64_t, MPI_INT64_T, SGEN(s_, i) * 170000000000000000LL);
    ROUNDTRIP(uint64_t, MPI_UINT64_T, 18400000000000000000ULL + GEN(s_, i));
    ROUNDTRIP(_Bool, MPI_C_BOOL, GEN(s_, i) % 3 == 0);
    ROUNDTRIP(wchar_t, MPI_WCHAR, L'\x4e00' + GEN(s_, i));
    ROUNDTRIP(float _Complex, MPI_C_FLOAT_COMPLEX, SGEN(s_, i) / 4.0f + (GEN(s_, i) / 2.0f) * I);
    ROUNDTRIP(float _Complex, MPI_C_COMPLEX, SGEN(s_, i) / 2.0f - (GEN(s_, i) / 8.0f) * I);
    ROUNDTRIP(double _Complex, MPI_C_DOUBLE_COMPLEX, SGEN(s_, i) / 3.0 + (GEN(s_, i) / 7.0) * I);
    ROUNDTRIP(long double _Complex, MPI_C_LONG_DOUBLE_COMPLEX,
              SGEN(s_, i) / 3.0L + (GEN(s_, i) / 7.0L) * I);
    ROUNDTRIP(MPI_Aint, MPI_AINT, SGEN(s_, i) * 100000000000LL);
    ROUNDTRIP(MPI_Offset, MPI_OFFSET, SGEN(s_, i) * 100000000001LL);
    ROUNDTRIP(MPI_Count, MPI_COUNT, SGEN(s_, i) * 100000000002LL);
    ROUNDTRIP(unsigned char, MPI_BYTE, 200 + GEN(s_, i) % 56);

    /* packed data made with MPI_Pack travels as MPI_PACKED */
    {
        char pb[256], rbuf[256];
        int pos = 0, ival = 1000 + rank, rival = -1, c = -1;
        double dval = rank / 4.0, rdval = -1;
        MPI_Status st;
        MPI_Pack(&ival, 1, MPI_INT, pb, sizeof pb, &pos, MPI_COMM_WORLD);
        MPI_Pack(&dval, 1, MPI_DOUBLE, pb, sizeof pb, &pos, MPI_COMM_WORLD);
        MPI_Sendrecv(pb, pos, MPI_PACKED, to, tag, rbuf, sizeof rbuf, MPI_PACKED, from, tag,
                     MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_PACKED, &c);
        CHECK(c == pos, "MPI_PACKED: count %d, packed %d", c, pos);
        pos = 0;
        MPI_Unpack(rbuf, c, &pos, &rival, 1, MPI_INT, MPI_COMM_WORLD);
        MPI_Unpack(rbuf, c, &pos, &rdval, 1, MPI_DOUBLE, MPI_COMM_WORLD);
        CHECK(rival == 1000 + from && rdval == from / 4.0, "MPI_PACKED: unpacked %d %g", rival,
              rdval);
    }

    return ct_finish(rank, errs);
}
