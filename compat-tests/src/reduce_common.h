/* reduce_common.h - shared by reduce_arith.c, reduce_minmax.c,
 * reduce_logical.c and reduce_bitwise.c: MPI_Reduce and MPI_Allreduce with
 * predefined operations on every predefined C type each applies to (MPI
 * standard, "Predefined Reduction Operations"): SUM/PROD on integers,
 * floating point, complex and the multi-language types (AINT, OFFSET,
 * COUNT); MAX/MIN on integers, floating point and multi-language types;
 * LAND/LOR/LXOR on integers and C_BOOL; BAND/BOR/BXOR on integers, BYTE
 * and multi-language types. Values are small integers so every result is
 * exact whatever the order of combination. Each program runs its family of
 * operations on COMM_WORLD (every type) and on a reversed-order split (a few
 * representative types). The families are separate programs because every
 * collective costs a scheduler time slice under oversubscribed MPICH. */
#ifndef COMPAT_REDUCE_COMMON_H
#define COMPAT_REDUCE_COMMON_H
#include "ct.h"
#include <complex.h>
#include <stdbool.h>
#include <stdint.h>

#define N 5

enum { OSUM, OPROD, OMAX, OMIN, OLAND, OLOR, OLXOR, OBAND, OBOR, OBXOR, NOPS };

static inline MPI_Op op_of(int o)
{
    switch (o) {
    case OSUM: return MPI_SUM;
    case OPROD: return MPI_PROD;
    case OMAX: return MPI_MAX;
    case OMIN: return MPI_MIN;
    case OLAND: return MPI_LAND;
    case OLOR: return MPI_LOR;
    case OLXOR: return MPI_LXOR;
    case OBAND: return MPI_BAND;
    case OBOR: return MPI_BOR;
    default: return MPI_BXOR;
    }
}

static inline const char *op_name(int o)
{
    const char *names[NOPS] = {"SUM", "PROD", "MAX", "MIN", "LAND", "LOR", "LXOR", "BAND", "BOR", "BXOR"};
    return names[o];
}

/* contribution of rank r, element i, for op o (as a long long, cast to the type) */
static inline long long gen(int o, int r, int i, int is_signed)
{
    switch (o) {
    case OSUM: return (r + i) % 7 + 1;
    case OPROD: return (r + i) % 4 == 0 ? 2 : 1; /* at most 2^3 over 9 ranks */
    case OMAX:
    case OMIN: return (r * 7 + i * 3) % 11 - (is_signed ? 5 : 0);
    case OLAND: return (r + i) % 5 == 4 && i != 0 ? 0 : (r % 3) + 1; /* element 0 all true */
    case OLOR: return i == 1 ? 0 : ((r + i) % 3 == 0 ? 2 : 0);     /* element 1 all false */
    case OLXOR: return (r * 3 + i) % 4 == 1 ? 3 : 0;
    case OBAND: return 0x7f ^ (1 << ((r + i) % 7)) ^ (i == 2 ? 0x7f : 0);
    case OBOR: return (1 << ((r * 2 + i) % 7)) & (i == 3 ? 0 : 0x7f);
    default: return (r * 37 + i * 11) & 0x7f;
    }
}

/* reference result folded in rank order, computed in long long */
static inline long long fold(int o, int n, int i, int is_signed)
{
    long long acc = gen(o, 0, i, is_signed);
    int r;
    for (r = 1; r < n; r++) {
        long long v = gen(o, r, i, is_signed);
        switch (o) {
        case OSUM: acc += v; break;
        case OPROD: acc *= v; break;
        case OMAX: acc = v > acc ? v : acc; break;
        case OMIN: acc = v < acc ? v : acc; break;
        case OLAND: acc = acc && v; break;
        case OLOR: acc = acc || v; break;
        case OLXOR: acc = (!acc) != (!v); break;
        case OBAND: acc &= v; break;
        case OBOR: acc |= v; break;
        default: acc ^= v; break;
        }
    }
    if (o == OLAND || o == OLOR || o == OLXOR)
        acc = acc != 0;
    return acc;
}

/* run op o on type T over communicator c; `root` rotates */
#define RUN_OP(T, MT, IS_SIGNED, o)                                                         \
    do {                                                                                    \
        T s_[N], r_[N], a_[N];                                                              \
        int i_;                                                                             \
        if (!((opmask >> (o)) & 1u))                                                        \
            break;                                                                          \
        for (i_ = 0; i_ < N; i_++) {                                                        \
            s_[i_] = (T) gen(o, me, i_, IS_SIGNED);                                         \
            r_[i_] = (T) 99;                                                                \
            a_[i_] = (T) 99;                                                                \
        }                                                                                   \
        MPI_Reduce(s_, r_, N, MT, op_of(o), root % n, c);                                   \
        MPI_Allreduce(s_, a_, N, MT, op_of(o), c);                                          \
        for (i_ = 0; i_ < N; i_++) {                                                        \
            T want_ = (T) fold(o, n, i_, IS_SIGNED);                                        \
            int logical_ = (o == OLAND || o == OLOR || o == OLXOR);                         \
            int okA_ = logical_ ? ((a_[i_] != (T) 0) == (want_ != (T) 0)) : a_[i_] == want_; \
            int okR_ = logical_ ? ((r_[i_] != (T) 0) == (want_ != (T) 0)) : r_[i_] == want_; \
            CHECK(okA_, "%s Allreduce %s %s element %d wrong", cname, op_name(o), #MT, i_);  \
            if (me == root % n)                                                             \
                CHECK(okR_, "%s Reduce %s %s element %d wrong", cname, op_name(o), #MT, i_); \
            else                                                                            \
                CHECK(r_[i_] == (T) 99, "%s Reduce %s %s touched recvbuf on non-root",      \
                      cname, op_name(o), #MT);                                              \
        }                                                                                   \
        root++;                                                                             \
        count++;                                                                            \
    } while (0)

#define INT_TYPE(T, MT, S)                                                                  \
    do {                                                                                    \
        int o_;                                                                             \
        for (o_ = 0; o_ < NOPS; o_++)                                                       \
            RUN_OP(T, MT, S, o_);                                                           \
    } while (0)

/* multi-language types: SUM PROD MAX MIN BAND BOR BXOR */
#define ML_TYPE(T, MT)                                                                      \
    do {                                                                                    \
        int o_;                                                                             \
        for (o_ = 0; o_ < NOPS; o_++)                                                       \
            if (o_ != OLAND && o_ != OLOR && o_ != OLXOR)                                   \
                RUN_OP(T, MT, 1, o_);                                                       \
    } while (0)

#define FLOAT_TYPE(T, MT)                                                                   \
    do {                                                                                    \
        int o_;                                                                             \
        for (o_ = OSUM; o_ <= OMIN; o_++)                                                   \
            RUN_OP(T, MT, 1, o_);                                                           \
    } while (0)

#define COMPLEX_TYPE(T, MT)                                                                 \
    do {                                                                                    \
        int o_;                                                                             \
        for (o_ = OSUM; o_ <= OPROD; o_++)                                                  \
            RUN_OP(T, MT, 1, o_);                                                           \
    } while (0)

/* full: every type; otherwise a few representative types (keeps the run
   short under oversubscribed MPICH, where each collective costs a time slice) */
static inline int run_all(MPI_Comm c, int rank, const char *cname, int full, unsigned opmask, int *errp)
{
    int me, n, root = 0, count = 0, errs = 0;
    MPI_Comm_rank(c, &me);
    MPI_Comm_size(c, &n);

    INT_TYPE(int, MPI_INT, 1);
    INT_TYPE(unsigned char, MPI_UNSIGNED_CHAR, 0);
    FLOAT_TYPE(double, MPI_DOUBLE);
    COMPLEX_TYPE(double _Complex, MPI_C_DOUBLE_COMPLEX);
    {
        int o_;
        for (o_ = OLAND; o_ <= OLXOR; o_++)
            RUN_OP(_Bool, MPI_C_BOOL, 0, o_);
        for (o_ = OBAND; o_ <= OBXOR; o_++)
            RUN_OP(unsigned char, MPI_BYTE, 0, o_);
    }
    if (!full)
        goto out;

    INT_TYPE(long, MPI_LONG, 1);
    INT_TYPE(short, MPI_SHORT, 1);
    INT_TYPE(unsigned short, MPI_UNSIGNED_SHORT, 0);
    INT_TYPE(unsigned, MPI_UNSIGNED, 0);
    INT_TYPE(unsigned long, MPI_UNSIGNED_LONG, 0);
    INT_TYPE(long long, MPI_LONG_LONG_INT, 1);
    INT_TYPE(long long, MPI_LONG_LONG, 1);
    INT_TYPE(unsigned long long, MPI_UNSIGNED_LONG_LONG, 0);
    INT_TYPE(signed char, MPI_SIGNED_CHAR, 1);
    INT_TYPE(int8_t, MPI_INT8_T, 1);
    INT_TYPE(int16_t, MPI_INT16_T, 1);
    INT_TYPE(int32_t, MPI_INT32_T, 1);
    INT_TYPE(int64_t, MPI_INT64_T, 1);
    INT_TYPE(uint8_t, MPI_UINT8_T, 0);
    INT_TYPE(uint16_t, MPI_UINT16_T, 0);
    INT_TYPE(uint32_t, MPI_UINT32_T, 0);
    INT_TYPE(uint64_t, MPI_UINT64_T, 0);

    ML_TYPE(MPI_Aint, MPI_AINT);
    ML_TYPE(MPI_Offset, MPI_OFFSET);
    ML_TYPE(MPI_Count, MPI_COUNT);

    FLOAT_TYPE(float, MPI_FLOAT);
    FLOAT_TYPE(long double, MPI_LONG_DOUBLE);

    COMPLEX_TYPE(float _Complex, MPI_C_FLOAT_COMPLEX);
    COMPLEX_TYPE(float _Complex, MPI_C_COMPLEX);
    COMPLEX_TYPE(long double _Complex, MPI_C_LONG_DOUBLE_COMPLEX);

out:
    /* complex values that are not real: product of powers of i */
    if (opmask & (1u << OPROD)) {
        double _Complex s = (me % 2) ? I : 1.0, r = 0, want = 1.0;
        int k;
        for (k = 0; k < n; k++)
            want *= (k % 2) ? I : 1.0;
        MPI_Allreduce(&s, &r, 1, MPI_C_DOUBLE_COMPLEX, MPI_PROD, c);
        CHECK(r == want, "%s complex PROD of i's: (%g,%g)", cname, creal(r), cimag(r));
    }
    if (opmask & (1u << OSUM)) {
        double _Complex s = me + 2.0 * me * I, r = 0;
        MPI_Allreduce(&s, &r, 1, MPI_C_DOUBLE_COMPLEX, MPI_SUM, c);
        CHECK(r == n * (n - 1) / 2 * (1.0 + 2.0 * I), "%s complex SUM: (%g,%g)", cname, creal(r),
              cimag(r));
    }
    *errp += errs;
    return count;
}

static inline int reduce_main(int argc, char **argv, unsigned opmask)
{
    int rank, size, errs = 0, count;
    MPI_Comm rev;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &rev);

    count = run_all(MPI_COMM_WORLD, rank, "world", 1, opmask, &errs);
    if (rank == 0)
        ct_say(rank, "%d (op, type) combinations checked on COMM_WORLD", count);
    count = run_all(rev, rank, "reversed", 0, opmask, &errs);
    if (rank == 0)
        ct_say(rank, "%d (op, type) combinations checked on a reversed split", count);

    MPI_Comm_free(&rev);
    return ct_finish(rank, errs);
}
#endif
