/* Small nonblocking reductions to a root (issue 16, red30: up to 2 KiB of a predefined
 * operation on a basic type they go between processes as a binomial tree of real
 * point-to-point messages toward the root's process, not as the real MPI's MPI_Ireduce).
 * Per round and communicator, every Ireduce at once: each of the ten arithmetic, logical and
 * bitwise operations on each C type it applies to (int, unsigned char, short, long long,
 * uint64_t, float, double), roots spread over every rank, MPI_IN_PLACE at the root for some,
 * counts of 1 and 5 elements, exactly 2048 bytes and one element more; three Ireduces of
 * doubles whose sum depends on the order of the additions (two on the communicator, one on
 * a duplicate, same data and root: each result within 1e-12 of the sum and all three the
 * same bits); an MPI_MAXLOC on MPI_DOUBLE_INT (a pair type: stays with the real MPI). On
 * MPI_COMM_WORLD, its duplicate, a split with the ranks reversed and the world without rank
 * 1 (uneven members per process). Every rank computes every expected value itself;
 * completion in ct_complete's six orders. */
#include "ct.h"
#include <math.h>
#include <stdint.h>

#define ROUNDS 2
#define NOPS 10
#define NTYPES 7
#define SMALL 2048
#define NDBL 3
#define MAXREQ (NOPS * NTYPES + NDBL + 1)

enum { I_INT, I_UCHAR, I_SHORT, I_LLONG, I_U64, I_FLOAT, I_DOUBLE };

struct call {
    int op, ty, root, count, inplace;
    void *send, *recv;
};

static MPI_Op op_of(int k)
{
    MPI_Op ops[NOPS] = {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN, MPI_LAND,
                        MPI_LOR, MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR};
    return ops[k];
}

static MPI_Datatype type_of(int t)
{
    MPI_Datatype ts[NTYPES] = {MPI_INT, MPI_UNSIGNED_CHAR, MPI_SHORT, MPI_LONG_LONG, MPI_UINT64_T, MPI_FLOAT, MPI_DOUBLE};
    return ts[t];
}

static int size_of(int t)
{
    int sz[NTYPES] = {sizeof(int), 1, sizeof(short), sizeof(long long), 8, sizeof(float), sizeof(double)};
    return sz[t];
}

/* Logical and bitwise operations only on the integer types. */
static int applies(int op, int t) { return op < 4 || t < I_FLOAT; }
static int is_unsigned(int t) { return t == I_UCHAR || t == I_U64; }

/* Rank r's element i of call (op, t) in round `round`. */
static long long val(int op, int t, int r, int i, int round)
{
    switch (op) {
    case 1: /* at most three 2s in nine ranks: no overflow in any type */
        return (r + i + round) % 4 == 0 ? 2 : 1;
    case 4:
    case 5:
    case 6:
        return (r * 5 + i + round) % 3 == 0 ? 0 : (r + i) % 2 + 1;
    case 7:
    case 8:
    case 9:
        return (r * 37 + i * 11 + round * 3 + t) & 0x7f;
    default: {
        long long v = (r * 7 + i * 3 + round + t) % 11;
        return is_unsigned(t) ? v : v - 5;
    }
    }
}

static long long fold(int op, long long a, long long b)
{
    switch (op) {
    case 0: return a + b;
    case 1: return a * b;
    case 2: return a > b ? a : b;
    case 3: return a < b ? a : b;
    case 4: return (a != 0) && (b != 0);
    case 5: return (a != 0) || (b != 0);
    case 6: return (a != 0) != (b != 0);
    case 7: return a & b;
    case 8: return a | b;
    default: return a ^ b;
    }
}

static void put(int t, void *b, int i, long long v)
{
    switch (t) {
    case I_INT: ((int *)b)[i] = (int)v; break;
    case I_UCHAR: ((unsigned char *)b)[i] = (unsigned char)v; break;
    case I_SHORT: ((short *)b)[i] = (short)v; break;
    case I_LLONG: ((long long *)b)[i] = v; break;
    case I_U64: ((uint64_t *)b)[i] = (uint64_t)v; break;
    case I_FLOAT: ((float *)b)[i] = (float)v; break;
    default: ((double *)b)[i] = (double)v; break;
    }
}

static long long get(int t, const void *b, int i)
{
    switch (t) {
    case I_INT: return ((const int *)b)[i];
    case I_UCHAR: return ((const unsigned char *)b)[i];
    case I_SHORT: return ((const short *)b)[i];
    case I_LLONG: return ((const long long *)b)[i];
    case I_U64: return (long long)((const uint64_t *)b)[i];
    case I_FLOAT: return (long long)((const float *)b)[i];
    default: return (long long)((const double *)b)[i];
    }
}

/* Element i of rank r's doubles: magnitudes 1e8, 1/3 and 1e-8 by rank, so that the sum
 * depends on the order of the additions. */
static double dval(int r, int i, int round)
{
    double scale = r % 3 == 0 ? 1e8 : (r % 3 == 1 ? 1.0 / 3 : 1e-8);
    return (1.0 + (r + 1) * 0.1 + i * 0.001 + round * 0.01) * scale;
}

static void round_on(MPI_Comm comm, MPI_Comm dup, int round, int *errp)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    struct call calls[NOPS * NTYPES];
    MPI_Request rq[MAXREQ];
    int n = 0, nc = 0;
    for (int op = 0; op < NOPS; op++)
        for (int t = 0; t < NTYPES; t++) {
            if (!applies(op, t))
                continue;
            struct call *c = &calls[nc++];
            int counts[4] = {1, 5, SMALL / size_of(t), SMALL / size_of(t) + 1};
            c->op = op;
            c->ty = t;
            c->root = (op * NTYPES + t + round) % size;
            c->count = counts[(op + t + round) % 4];
            c->inplace = (op + t + round) % 3 == 0;
            c->send = ct_malloc((size_t)c->count * size_of(t));
            c->recv = ct_malloc((size_t)c->count * size_of(t));
            memset(c->recv, 0xEE, (size_t)c->count * size_of(t));
            for (int i = 0; i < c->count; i++)
                put(t, c->send, i, val(op, t, rank, i, round));
            const void *sb = c->send;
            if (c->inplace && rank == c->root) {
                memcpy(c->recv, c->send, (size_t)c->count * size_of(t));
                sb = MPI_IN_PLACE;
            }
            MPI_Ireduce(sb, rank == c->root ? c->recv : NULL, c->count, type_of(t), op_of(op), c->root, comm, &rq[n++]);
        }
    /* Doubles, order-dependent: counts 1, 256 (2048 bytes), 257, 9 by round and comm size. */
    int dcounts[4] = {1, SMALL / 8, SMALL / 8 + 1, 9};
    int dn = dcounts[(round + size) % 4], droot = (size - 1 + round) % size;
    double *ds = ct_malloc(sizeof(double) * dn), *dr[NDBL];
    for (int i = 0; i < dn; i++)
        ds[i] = dval(rank, i, round);
    for (int k = 0; k < NDBL; k++) {
        dr[k] = ct_malloc(sizeof(double) * dn);
        memset(dr[k], 0xEE, sizeof(double) * dn);
        MPI_Ireduce(ds, dr[k], dn, MPI_DOUBLE, MPI_SUM, droot, k == 1 ? dup : comm, &rq[n++]);
    }
    /* MAXLOC on a pair type. */
    struct {
        double v;
        int i;
    } ms[3], mr[3];
    int mroot = (round * 3 + 1) % size;
    for (int i = 0; i < 3; i++) {
        ms[i].v = (rank * 13 + i * 7 + round) % 10;
        ms[i].i = rank;
        mr[i].v = -1;
        mr[i].i = -1;
    }
    MPI_Ireduce(ms, mr, 3, MPI_DOUBLE_INT, MPI_MAXLOC, mroot, comm, &rq[n++]);

    int rc = ct_complete(rq, n, round + size);
    CHECKP(rc == MPI_SUCCESS, "round %d: completion returned %d", round, rc);

    for (int k = 0; k < nc; k++) {
        struct call *c = &calls[k];
        if (rank == c->root) {
            int bad = -1;
            long long got = 0, want = 0;
            for (int i = 0; i < c->count && bad < 0; i++) {
                want = val(c->op, c->ty, 0, i, round);
                for (int r = 1; r < size; r++)
                    want = fold(c->op, want, val(c->op, c->ty, r, i, round));
                if (c->ty == I_UCHAR)
                    want &= 0xff;
                got = get(c->ty, c->recv, i);
                if (got != want)
                    bad = i;
            }
            CHECKP(bad < 0, "round %d op %d type %d count %d root %d%s: [%d] %lld, want %lld", round, c->op, c->ty,
                   c->count, c->root, c->inplace ? " in place" : "", bad, got, want);
        }
        free(c->send);
        free(c->recv);
    }
    if (rank == droot) {
        int bad = -1, same = -1;
        for (int i = 0; i < dn; i++) {
            long double exact = 0;
            for (int r = 0; r < size; r++)
                exact += dval(r, i, round);
            if (bad < 0 && fabsl(dr[0][i] - exact) > 1e-12L * fabsl(exact))
                bad = i;
            if (same < 0 && (memcmp(&dr[0][i], &dr[1][i], 8) != 0 || memcmp(&dr[0][i], &dr[2][i], 8) != 0))
                same = i;
        }
        CHECKP(bad < 0, "round %d doubles (%d) at %d: [%d] off the sum", round, dn, droot, bad);
        CHECKP(same < 0, "round %d doubles (%d) at %d: [%d] three reductions of the same data differ", round, dn, droot,
               same);
    }
    for (int k = 0; k < NDBL; k++)
        free(dr[k]);
    free(ds);
    if (rank == mroot)
        for (int i = 0; i < 3; i++) {
            double wv = -1;
            int wi = -1;
            for (int r = 0; r < size; r++) {
                double v = (r * 13 + i * 7 + round) % 10;
                if (v > wv) {
                    wv = v;
                    wi = r;
                }
            }
            CHECKP(mr[i].v == wv && mr[i].i == wi, "round %d maxloc [%d]: (%g, %d), want (%g, %d)", round, i, mr[i].v,
                   mr[i].i, wv, wi);
        }
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm comms[4], dups[4];
    comms[0] = MPI_COMM_WORLD;
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]);
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &comms[2]);
    MPI_Comm_split(MPI_COMM_WORLD, rank == 1 ? MPI_UNDEFINED : 0, rank, &comms[3]);
    for (int c = 0; c < 4; c++)
        if (comms[c] != MPI_COMM_NULL)
            MPI_Comm_dup(comms[c], &dups[c]);
    for (int round = 0; round < ROUNDS; round++)
        for (int c = 0; c < 4; c++)
            if (comms[c] != MPI_COMM_NULL)
                round_on(comms[c], dups[c], round, &errs);
    for (int c = 0; c < 4; c++)
        if (comms[c] != MPI_COMM_NULL) {
            MPI_Comm_free(&dups[c]);
            if (c > 0)
                MPI_Comm_free(&comms[c]);
        }
    return ct_finish(rank, errs);
}
