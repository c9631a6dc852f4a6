/* MPI_MAXLOC and MPI_MINLOC with every pair type: MPI_FLOAT_INT,
 * MPI_DOUBLE_INT, MPI_LONG_INT, MPI_2INT, MPI_SHORT_INT,
 * MPI_LONG_DOUBLE_INT; ties resolve to the lowest index. Reduce to every
 * root in turn and Allreduce, on COMM_WORLD and on a parity split. */
#include "ct.h"

#define N 6

/* value of rank r, element i: many ties on purpose */
static int v_of(int r, int i) { return (r * 5 + i * 3) % 7 - (i == 5 ? r : 0); }

#define PAIR_TEST(VT, MT)                                                                   \
    do {                                                                                    \
        struct { VT v; int i; } s_[N], r_[N], a_[N];                                        \
        int k_, o_;                                                                         \
        for (o_ = 0; o_ < 2; o_++) {                                                        \
            MPI_Op op_ = o_ ? MPI_MINLOC : MPI_MAXLOC;                                      \
            for (k_ = 0; k_ < N; k_++) {                                                    \
                s_[k_].v = (VT) v_of(me, k_);                                               \
                s_[k_].i = me * 10;    /* index: a multiple of the rank */                  \
                r_[k_].v = (VT) - 99;                                                       \
                r_[k_].i = -99;                                                             \
            }                                                                               \
            MPI_Reduce(s_, r_, N, MT, op_, root % n, c);                                    \
            MPI_Allreduce(s_, a_, N, MT, op_, c);                                           \
            for (k_ = 0; k_ < N; k_++) {                                                    \
                int best = v_of(0, k_), bi = 0, q;                                          \
                for (q = 1; q < n; q++) {                                                   \
                    int v = v_of(q, k_);                                                    \
                    if (o_ ? v < best : v > best) {                                         \
                        best = v;                                                           \
                        bi = q * 10;                                                        \
                    }                                                                       \
                }                                                                           \
                CHECKP(a_[k_].v == (VT) best && a_[k_].i == bi,                             \
                       "%s Allreduce %s %s element %d: (%g,%d) expected (%d,%d)", cname,    \
                       o_ ? "MINLOC" : "MAXLOC", #MT, k_, (double) a_[k_].v, a_[k_].i,      \
                       best, bi);                                                           \
                if (me == root % n)                                                         \
                    CHECKP(r_[k_].v == (VT) best && r_[k_].i == bi,                         \
                           "%s Reduce %s %s element %d: (%g,%d) expected (%d,%d)", cname,   \
                           o_ ? "MINLOC" : "MAXLOC", #MT, k_, (double) r_[k_].v, r_[k_].i,  \
                           best, bi);                                                       \
            }                                                                               \
            root++;                                                                         \
        }                                                                                   \
    } while (0)

static void run(MPI_Comm c, int rank, const char *cname, int *errp)
{
    int me, n, root = 0;
    MPI_Comm_rank(c, &me);
    MPI_Comm_size(c, &n);
    PAIR_TEST(float, MPI_FLOAT_INT);
    PAIR_TEST(double, MPI_DOUBLE_INT);
    PAIR_TEST(long, MPI_LONG_INT);
    PAIR_TEST(int, MPI_2INT);
    PAIR_TEST(short, MPI_SHORT_INT);
    PAIR_TEST(long double, MPI_LONG_DOUBLE_INT);
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0;
    MPI_Comm half;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* the pair types have the layout of the matching C structs */
    {
        int sz;
        struct { long double v; int i; } ldi;
        struct { short v; int i; } si;
        MPI_Type_size(MPI_2INT, &sz);
        CHECK(sz == 2 * (int) sizeof(int), "MPI_2INT size %d", sz);
        {
            MPI_Aint lb, ext;
            MPI_Type_get_extent(MPI_LONG_DOUBLE_INT, &lb, &ext);
            CHECK(ext == (MPI_Aint) sizeof ldi, "MPI_LONG_DOUBLE_INT extent %ld, struct %d",
                  (long) ext, (int) sizeof ldi);
            MPI_Type_get_extent(MPI_SHORT_INT, &lb, &ext);
            CHECK(ext == (MPI_Aint) sizeof si, "MPI_SHORT_INT extent %ld, struct %d", (long) ext,
                  (int) sizeof si);
        }
    }

    run(MPI_COMM_WORLD, rank, "world", &errs);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    run(half, rank, "parity", &errs);
    MPI_Comm_free(&half);
    return ct_finish(rank, errs);
}
