/* Blocking collectives among ranks that share a process (Toucan's shared-memory teams,
 * core/coll/team.rs) stressed: mixed sizes from 0 to 40000 elements, MPI_IN_PLACE wherever
 * MPI allows it, a user operation that does not commute (2x2 matrix products mod a prime, on a
 * contiguous datatype of 4 ints: the result depends on the rank order), a strided receive
 * datatype, moving roots, and four communicators (world, odd/even, reversed, thirds) used in
 * turn within each round, so that consecutive collectives of one communicator interleave
 * with those of the others. Every result is checked against a local computation, and each
 * rank prints a checksum of everything it received. */
#include "coll_comms.h"

#define ROUNDS 6
#define P 1000003L

typedef struct {
    int a[4];
} mat;

static void matmul(const mat *x, const mat *y, mat *out)
{
    mat r;
    r.a[0] = (int) (((long) x->a[0] * y->a[0] + (long) x->a[1] * y->a[2]) % P);
    r.a[1] = (int) (((long) x->a[0] * y->a[1] + (long) x->a[1] * y->a[3]) % P);
    r.a[2] = (int) (((long) x->a[2] * y->a[0] + (long) x->a[3] * y->a[2]) % P);
    r.a[3] = (int) (((long) x->a[2] * y->a[1] + (long) x->a[3] * y->a[3]) % P);
    *out = r;
}

/* inout = in * inout: `in` holds the lower ranks' product. */
static void matop(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    int i;
    (void) dt;
    for (i = 0; i < *len; i++)
        matmul(&((mat *) in)[i], &((mat *) inout)[i], &((mat *) inout)[i]);
}

static mat mat_of(int rank, int k, int round)
{
    mat m;
    m.a[0] = 1 + rank;
    m.a[1] = (k + round) % 7;
    m.a[2] = (rank * 3 + k) % 5;
    m.a[3] = 1 + (k % 3);
    return m;
}

static unsigned long sum_bytes(const void *p, size_t n)
{
    const unsigned char *b = p;
    unsigned long s = 0;
    size_t i;
    for (i = 0; i < n; i++)
        s = s * 131 + b[i];
    return s;
}

static const int sizes[] = {0, 1, 7, 1000, 40000};
#define NSIZES 5

int main(int argc, char **argv)
{
    MPI_Comm comms[NCOMMS];
    const char *names[NCOMMS];
    MPI_Datatype tmat, strided;
    MPI_Op noncomm;
    int rank, errs = 0, round, j, k, p;
    unsigned long chk = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    make_comms(comms, names);
    MPI_Type_contiguous(4, MPI_INT, &tmat);
    MPI_Type_commit(&tmat);
    MPI_Type_vector(2, 1, 2, MPI_INT, &strided); /* ints 0 and 2 of 3 */
    MPI_Type_commit(&strided);
    MPI_Op_create(matop, 0, &noncomm);

    for (round = 0; round < ROUNDS; round++) {
        for (j = 0; j < NCOMMS; j++) {
            MPI_Comm cm = comms[j];
            int me, n, cnt = sizes[(round + j) % NSIZES], root;
            MPI_Comm_rank(cm, &me);
            MPI_Comm_size(cm, &n);
            root = (round + j) % n;
            {
                /* Bcast of cnt ints, then of a strided type into a contiguous one. */
                int *b = ct_malloc(sizeof(int) * (cnt + 1) * 3);
                for (k = 0; k < 3 * (cnt + 1); k++)
                    b[k] = me == root ? round * 100000 + k : -1;
                MPI_Bcast(b, cnt, MPI_INT, root, cm);
                for (k = 0; k < cnt; k++)
                    CHECK(b[k] == round * 100000 + k, "%s bcast[%d]=%d", names[j], k, b[k]);
                MPI_Bcast(b, me == root ? cnt : 2 * cnt, me == root ? MPI_2INT : MPI_INT, root, cm);
                MPI_Bcast(b, 1, me == root ? strided : MPI_2INT, root, cm);
                chk += sum_bytes(b, sizeof(int) * 2);
                free(b);
            }
            {
                /* Allreduce SUM in place and not; Reduce of the non-commutative op to root. */
                long *x = ct_malloc(sizeof(long) * (cnt + 1)), *y = ct_malloc(sizeof(long) * (cnt + 1));
                mat *m = ct_malloc(sizeof(mat) * (cnt + 1)), *mr = ct_malloc(sizeof(mat) * (cnt + 1));
                for (k = 0; k < cnt; k++) {
                    x[k] = me + k;
                    m[k] = mat_of(me, k, round);
                }
                MPI_Allreduce(x, y, cnt, MPI_LONG, MPI_SUM, cm);
                MPI_Allreduce(MPI_IN_PLACE, x, cnt, MPI_LONG, MPI_SUM, cm);
                for (k = 0; k < cnt; k++) {
                    long want = (long) n * (n - 1) / 2 + (long) n * k;
                    CHECK(x[k] == want && y[k] == want, "%s allreduce[%d]=%ld,%ld want %ld", names[j], k, x[k], y[k], want);
                }
                MPI_Reduce(me == root ? MPI_IN_PLACE : m, m, cnt, tmat, noncomm, root, cm);
                if (me == root)
                    for (k = 0; k < cnt && k < 50; k++) {
                        mat w = mat_of(0, k, round);
                        for (p = 1; p < n; p++) {
                            mat q = mat_of(p, k, round);
                            matmul(&w, &q, &w);
                        }
                        CHECK(!memcmp(&w, &m[k], sizeof w), "%s reduce matrix %d", names[j], k);
                    }
                /* Scan and Exscan of the matrices: prefix products in rank order. */
                for (k = 0; k < cnt; k++)
                    m[k] = mat_of(me, k, round);
                MPI_Scan(m, mr, cnt, tmat, noncomm, cm);
                MPI_Exscan(MPI_IN_PLACE, m, cnt, tmat, noncomm, cm);
                for (k = 0; k < cnt && k < 50; k++) {
                    mat w = mat_of(0, k, round);
                    for (p = 1; p < me; p++) {
                        mat q = mat_of(p, k, round);
                        matmul(&w, &q, &w);
                    }
                    if (me > 0)
                        CHECK(!memcmp(&w, &m[k], sizeof w), "%s exscan matrix %d", names[j], k);
                    if (me > 0) {
                        mat q = mat_of(me, k, round);
                        matmul(&w, &q, &w);
                    }
                    CHECK(!memcmp(&w, &mr[k], sizeof w), "%s scan matrix %d", names[j], k);
                }
                if (cnt)
                    chk += sum_bytes(mr, sizeof(mat)) + sum_bytes(y, sizeof(long));
                free(x), free(y), free(m), free(mr);
            }
            {
                /* Allgather (in place on odd rounds), Allgatherv, Gather, Scatterv. */
                int c = cnt % 1000 + 1;
                int *g = ct_malloc(sizeof(int) * c * n), *s = ct_malloc(sizeof(int) * c);
                int *counts = ct_malloc(sizeof(int) * n), *displs = ct_malloc(sizeof(int) * n), tot = 0;
                for (k = 0; k < c; k++)
                    s[k] = me * 1000 + k;
                if (round % 2) {
                    memcpy(g + me * c, s, sizeof(int) * c);
                    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, g, c, MPI_INT, cm);
                } else {
                    MPI_Allgather(s, c, MPI_INT, g, c, MPI_INT, cm);
                }
                for (p = 0; p < n; p++)
                    for (k = 0; k < c; k++)
                        CHECK(g[p * c + k] == p * 1000 + k, "%s allgather[%d][%d]=%d", names[j], p, k, g[p * c + k]);
                for (p = 0; p < n; p++) {
                    counts[p] = (p + round) % 3 * c / 2;
                    displs[p] = tot;
                    tot += counts[p];
                }
                {
                    int *v = ct_malloc(sizeof(int) * (tot + 1));
                    MPI_Allgatherv(s, counts[me], MPI_INT, v, counts, displs, MPI_INT, cm);
                    for (p = 0; p < n; p++)
                        for (k = 0; k < counts[p]; k++)
                            CHECK(v[displs[p] + k] == p * 1000 + k, "%s allgatherv[%d][%d]", names[j], p, k);
                    for (k = 0; k < tot; k++)
                        v[k] = me == root ? 7 * k + round : -1;
                    MPI_Scatterv(v, counts, displs, MPI_INT, me == root ? MPI_IN_PLACE : s, counts[me], MPI_INT, root, cm);
                    if (me != root)
                        for (k = 0; k < counts[me]; k++)
                            CHECK(s[k] == 7 * (displs[me] + k) + round, "%s scatterv[%d]=%d", names[j], k, s[k]);
                    chk += sum_bytes(v, sizeof(int) * tot);
                    free(v);
                }
                for (k = 0; k < c; k++)
                    s[k] = me * 1000 + k;
                MPI_Gather(me == root ? MPI_IN_PLACE : s, c, MPI_INT, g, c, MPI_INT, root, cm);
                if (me == root)
                    for (p = 0; p < n; p++)
                        CHECK(g[p * c + c - 1] == (p == root ? me * 1000 + c - 1 : p * 1000 + c - 1), "%s gather[%d]", names[j], p);
                free(g), free(s), free(counts), free(displs);
            }
            {
                /* Alltoall (in place on even rounds) and Reduce_scatter_block, Reduce_scatter. */
                int c = cnt % 100 + 1;
                int *a = ct_malloc(sizeof(int) * (c + 2) * n), *b = ct_malloc(sizeof(int) * (c + 2) * n);
                int *rc = ct_malloc(sizeof(int) * n);
                for (p = 0; p < n; p++)
                    for (k = 0; k < c; k++)
                        a[p * c + k] = me * 100000 + p * 100 + k;
                if (round % 2 == 0) {
                    MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, a, c, MPI_INT, cm);
                    memcpy(b, a, sizeof(int) * c * n);
                } else {
                    MPI_Alltoall(a, c, MPI_INT, b, c, MPI_INT, cm);
                }
                for (p = 0; p < n; p++)
                    for (k = 0; k < c; k++)
                        CHECK(b[p * c + k] == p * 100000 + me * 100 + k, "%s alltoall[%d][%d]=%d", names[j], p, k, b[p * c + k]);
                for (p = 0; p < n * c; p++)
                    a[p] = p + me;
                MPI_Reduce_scatter_block(round % 2 ? MPI_IN_PLACE : a, round % 2 ? a : b, c, MPI_INT, MPI_SUM, cm);
                for (k = 0; k < c; k++) {
                    int got = round % 2 ? a[k] : b[k];
                    CHECK(got == n * (me * c + k) + n * (n - 1) / 2, "%s reduce_scatter_block[%d]=%d", names[j], k, got);
                }
                for (p = 0; p < n; p++)
                    rc[p] = (p + round) % 2 + 1;
                for (p = 0; p < n * (c + 2); p++)
                    a[p] = p * 2 + me;
                MPI_Reduce_scatter(a, b, rc, MPI_INT, MPI_MAX, cm);
                {
                    int off = 0;
                    for (p = 0; p < me; p++)
                        off += rc[p];
                    for (k = 0; k < rc[me]; k++)
                        CHECK(b[k] == (off + k) * 2 + n - 1, "%s reduce_scatter[%d]=%d", names[j], k, b[k]);
                }
                chk += sum_bytes(b, sizeof(int) * rc[me]);
                free(a), free(b), free(rc);
            }
            MPI_Barrier(cm);
        }
    }
    ct_say(rank, "checksum %lu", chk);
    MPI_Op_free(&noncomm);
    MPI_Type_free(&tmat);
    MPI_Type_free(&strided);
    free_comms(comms);
    return ct_finish(rank, errs);
}
