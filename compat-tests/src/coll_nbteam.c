/* Nonblocking collectives of every kind, many outstanding at once (Toucan's shared-memory
 * teams match them by call order, core/coll/teamcall.rs): in each round every rank starts,
 * on each of four communicators (world, odd/even, reversed, thirds), Ibarrier, Ibcast,
 * Ireduce of a non-commutative user operation, Iallreduce (in place on odd rounds),
 * Igather(v), Iscatter(v), Iallgather(v), Ialltoall(v, w), Ireduce_scatter(_block), Iscan and
 * Iexscan, then completes them all in one of three ways chosen by round and rank: Waitall,
 * Test loops over the requests from last to first, or Waitany. Ranks with a higher rank
 * compute a little before completing, so the members reach each call at different times.
 * Every result is checked against a local computation; each rank prints a checksum. */
#include "coll_comms.h"

#define ROUNDS 4
#define P 1000003L
#define NOPS 17

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

/* Busy work, so that ranks reach their completion calls at different times. */
static double spin(int n)
{
    volatile double x = 0;
    int i;
    for (i = 0; i < n * 2000; i++)
        x += i * 0.5;
    return x;
}

/* One communicator's buffers for one round. */
typedef struct {
    int n, me, root, cnt, c;
    int *bc, *ar_s, *ar_r, *g, *gs, *gv, *counts, *displs, *sc, *scv;
    int *ag, *agv, *a2a_s, *a2a_r, *a2av_r, *a2aw_r, *rsb, *rs, *rs_in, *rc;
    int *ones, *zeros, *bytedispl, *a2av_d;
    MPI_Datatype *types;
    mat *m, *mred, *mscan, *mex;
} bufs;

static void *z(size_t n)
{
    void *p = ct_malloc(n + 16);
    memset(p, 0xff, n + 16);
    return p;
}

static void start_all(bufs *b, MPI_Comm cm, MPI_Datatype tmat, MPI_Op noncomm, int round, MPI_Request *rq)
{
    int n = b->n, me = b->me, root = b->root, cnt = b->cnt, c = b->c, k, p, tot = 0;
    b->bc = z(sizeof(int) * (cnt + 1));
    for (k = 0; k < cnt; k++)
        b->bc[k] = me == root ? round * 100000 + k : -1;
    b->ar_s = z(sizeof(int) * (cnt + 1));
    b->ar_r = z(sizeof(int) * (cnt + 1));
    for (k = 0; k < cnt; k++)
        b->ar_s[k] = b->ar_r[k] = me + k;
    b->m = z(sizeof(mat) * (cnt + 1));
    b->mred = z(sizeof(mat) * (cnt + 1));
    b->mscan = z(sizeof(mat) * (cnt + 1));
    b->mex = z(sizeof(mat) * (cnt + 1));
    for (k = 0; k < cnt; k++)
        b->m[k] = b->mex[k] = mat_of(me, k, round);
    b->g = z(sizeof(int) * c * n);
    b->gs = z(sizeof(int) * c);
    for (k = 0; k < c; k++)
        b->gs[k] = me * 1000 + k;
    b->counts = z(sizeof(int) * n);
    b->displs = z(sizeof(int) * n);
    for (p = 0; p < n; p++) {
        b->counts[p] = (p + round) % 3 * c / 2;
        b->displs[p] = tot;
        tot += b->counts[p];
    }
    b->gv = z(sizeof(int) * (tot + 1));
    b->sc = z(sizeof(int) * c * n);
    for (k = 0; k < c * n; k++)
        b->sc[k] = me == root ? 7 * k + round : -1;
    b->scv = z(sizeof(int) * c);
    b->ag = z(sizeof(int) * c * n);
    b->agv = z(sizeof(int) * (tot + 1));
    if (round % 2)
        memcpy(b->ag + me * c, b->gs, sizeof(int) * c);
    b->a2a_s = z(sizeof(int) * c * n);
    b->a2a_r = z(sizeof(int) * c * n);
    b->a2av_r = z(sizeof(int) * c * n);
    b->a2aw_r = z(sizeof(int) * c * n);
    for (p = 0; p < n; p++)
        for (k = 0; k < c; k++)
            b->a2a_s[p * c + k] = me * 100000 + p * 100 + k;
    if (round % 2 == 0)
        memcpy(b->a2a_r, b->a2a_s, sizeof(int) * c * n);
    b->ones = z(sizeof(int) * n);
    b->zeros = z(sizeof(int) * n);
    b->bytedispl = z(sizeof(int) * n);
    b->a2av_d = z(sizeof(int) * n);
    b->types = z(sizeof(MPI_Datatype) * n);
    for (p = 0; p < n; p++) {
        b->ones[p] = c;
        b->a2av_d[p] = (n - 1 - p) * c; /* blocks in reverse order */
        b->bytedispl[p] = (int) sizeof(int) * p * c;
        b->types[p] = MPI_INT;
    }
    b->rsb = z(sizeof(int) * c * (n + 1));
    for (p = 0; p < n * c; p++)
        b->rsb[p] = p + me;
    b->rc = z(sizeof(int) * n);
    b->rs_in = z(sizeof(int) * n * 3);
    b->rs = z(sizeof(int) * 3);
    for (p = 0; p < n; p++)
        b->rc[p] = (p + round) % 2 + 1;
    for (p = 0; p < n * 3; p++)
        b->rs_in[p] = p * 2 + me;

    MPI_Ibarrier(cm, &rq[0]);
    MPI_Ibcast(b->bc, cnt, MPI_INT, root, cm, &rq[1]);
    if (round % 2)
        MPI_Iallreduce(MPI_IN_PLACE, b->ar_r, cnt, MPI_INT, MPI_SUM, cm, &rq[2]);
    else
        MPI_Iallreduce(b->ar_s, b->ar_r, cnt, MPI_INT, MPI_SUM, cm, &rq[2]);
    MPI_Ireduce(b->m, b->mred, cnt, tmat, noncomm, root, cm, &rq[3]);
    MPI_Igather(b->gs, c, MPI_INT, b->g, c, MPI_INT, root, cm, &rq[4]);
    MPI_Igatherv(b->gs, b->counts[me], MPI_INT, b->gv, b->counts, b->displs, MPI_INT, root, cm, &rq[5]);
    MPI_Iscatter(b->sc, c, MPI_INT, b->scv, c, MPI_INT, root, cm, &rq[6]);
    if (round % 2)
        MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b->ag, c, MPI_INT, cm, &rq[7]);
    else
        MPI_Iallgather(b->gs, c, MPI_INT, b->ag, c, MPI_INT, cm, &rq[7]);
    MPI_Iallgatherv(b->gs, b->counts[me], MPI_INT, b->agv, b->counts, b->displs, MPI_INT, cm, &rq[8]);
    if (round % 2 == 0)
        MPI_Ialltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b->a2a_r, c, MPI_INT, cm, &rq[9]);
    else
        MPI_Ialltoall(b->a2a_s, c, MPI_INT, b->a2a_r, c, MPI_INT, cm, &rq[9]);
    MPI_Ialltoallv(b->a2a_s, b->ones, b->a2av_d, MPI_INT, b->a2av_r, b->ones, b->a2av_d, MPI_INT, cm, &rq[10]);
    MPI_Ialltoallw(b->a2a_s, b->ones, b->bytedispl, b->types, b->a2aw_r, b->ones, b->bytedispl, b->types, cm, &rq[11]);
    MPI_Ireduce_scatter_block(b->rsb, b->rsb + n * c, c, MPI_INT, MPI_SUM, cm, &rq[12]);
    MPI_Ireduce_scatter(b->rs_in, b->rs, b->rc, MPI_INT, MPI_MAX, cm, &rq[13]);
    MPI_Iscan(b->m, b->mscan, cnt, tmat, noncomm, cm, &rq[14]);
    MPI_Iexscan(MPI_IN_PLACE, b->mex, cnt, tmat, noncomm, cm, &rq[15]);
    MPI_Iallreduce(MPI_IN_PLACE, &b->n, 0, MPI_INT, MPI_SUM, cm, &rq[16]);
}

static unsigned long check_all(bufs *b, const char *name, int round, int rank, int *errp)
{
    int n = b->n, me = b->me, root = b->root, cnt = b->cnt, c = b->c, k, p, errs = 0;
    unsigned long chk = 0;
    for (k = 0; k < cnt; k++)
        CHECK(b->bc[k] == round * 100000 + k, "%s ibcast[%d]=%d", name, k, b->bc[k]);
    for (k = 0; k < cnt; k++) {
        int want = n * (n - 1) / 2 + n * k;
        CHECK(b->ar_r[k] == want, "%s iallreduce[%d]=%d want %d", name, k, b->ar_r[k], want);
    }
    if (me == root)
        for (k = 0; k < cnt && k < 40; k++) {
            mat w = mat_of(0, k, round);
            for (p = 1; p < n; p++) {
                mat q = mat_of(p, k, round);
                matmul(&w, &q, &w);
            }
            CHECK(!memcmp(&w, &b->mred[k], sizeof w), "%s ireduce matrix %d", name, k);
        }
    for (k = 0; k < cnt && k < 40; k++) {
        mat w = mat_of(0, k, round);
        for (p = 1; p < me; p++) {
            mat q = mat_of(p, k, round);
            matmul(&w, &q, &w);
        }
        if (me > 0)
            CHECK(!memcmp(&w, &b->mex[k], sizeof w), "%s iexscan matrix %d", name, k);
        if (me > 0) {
            mat q = mat_of(me, k, round);
            matmul(&w, &q, &w);
        }
        CHECK(!memcmp(&w, &b->mscan[k], sizeof w), "%s iscan matrix %d", name, k);
    }
    if (me == root) {
        for (p = 0; p < n; p++) {
            for (k = 0; k < c; k++)
                CHECK(b->g[p * c + k] == p * 1000 + k, "%s igather[%d][%d]=%d", name, p, k, b->g[p * c + k]);
            for (k = 0; k < b->counts[p]; k++)
                CHECK(b->gv[b->displs[p] + k] == p * 1000 + k, "%s igatherv[%d][%d]", name, p, k);
        }
    }
    for (k = 0; k < c; k++)
        CHECK(b->scv[k] == 7 * (me * c + k) + round, "%s iscatter[%d]=%d", name, k, b->scv[k]);
    for (p = 0; p < n; p++) {
        for (k = 0; k < c; k++) {
            CHECK(b->ag[p * c + k] == p * 1000 + k, "%s iallgather[%d][%d]=%d", name, p, k, b->ag[p * c + k]);
            CHECK(b->a2a_r[p * c + k] == p * 100000 + me * 100 + k, "%s ialltoall[%d][%d]=%d", name, p, k,
                  b->a2a_r[p * c + k]);
            CHECK(b->a2av_r[(n - 1 - p) * c + k] == p * 100000 + (n - 1 - me) * 100 + k, "%s ialltoallv[%d][%d]=%d",
                  name, p, k, b->a2av_r[(n - 1 - p) * c + k]);
            CHECK(b->a2aw_r[p * c + k] == p * 100000 + me * 100 + k, "%s ialltoallw[%d][%d]", name, p, k);
        }
        for (k = 0; k < b->counts[p]; k++)
            CHECK(b->agv[b->displs[p] + k] == p * 1000 + k, "%s iallgatherv[%d][%d]", name, p, k);
    }
    for (k = 0; k < c; k++) {
        int got = b->rsb[n * c + k];
        CHECK(got == n * (me * c + k) + n * (n - 1) / 2, "%s ireduce_scatter_block[%d]=%d", name, k, got);
    }
    {
        int off = 0;
        for (p = 0; p < me; p++)
            off += b->rc[p];
        for (k = 0; k < b->rc[me]; k++)
            CHECK(b->rs[k] == (off + k) * 2 + n - 1, "%s ireduce_scatter[%d]=%d", name, k, b->rs[k]);
    }
    chk += sum_bytes(b->ag, sizeof(int) * c * n) + sum_bytes(b->a2a_r, sizeof(int) * c * n);
    chk += sum_bytes(b->mscan, sizeof(mat) * (cnt < 3 ? cnt : 3)) + sum_bytes(b->rs, sizeof(int) * b->rc[me]);
    free(b->bc), free(b->ar_s), free(b->ar_r), free(b->m), free(b->mred), free(b->mscan), free(b->mex);
    free(b->g), free(b->gs), free(b->counts), free(b->displs), free(b->gv), free(b->sc), free(b->scv);
    free(b->ag), free(b->agv), free(b->a2a_s), free(b->a2a_r), free(b->a2av_r), free(b->a2aw_r);
    free(b->ones), free(b->zeros), free(b->bytedispl), free(b->a2av_d), free(b->types);
    free(b->rsb), free(b->rc), free(b->rs_in), free(b->rs);
    *errp += errs;
    return chk;
}

static const int sizes[] = {0, 1, 7, 300, 5000};
#define NSIZES 5

int main(int argc, char **argv)
{
    MPI_Comm comms[NCOMMS];
    const char *names[NCOMMS];
    MPI_Datatype tmat;
    MPI_Op noncomm;
    MPI_Request rq[NCOMMS * NOPS];
    bufs b[NCOMMS];
    int rank, errs = 0, round, j, i;
    unsigned long chk = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    make_comms(comms, names);
    MPI_Type_contiguous(4, MPI_INT, &tmat);
    MPI_Type_commit(&tmat);
    MPI_Op_create(matop, 0, &noncomm);

    for (round = 0; round < ROUNDS; round++) {
        int how = (round + rank) % 3;
        for (j = 0; j < NCOMMS; j++) {
            MPI_Comm_rank(comms[j], &b[j].me);
            MPI_Comm_size(comms[j], &b[j].n);
            b[j].cnt = sizes[(round + j) % NSIZES];
            b[j].c = b[j].cnt % 100 + 1;
            b[j].root = (round + j) % b[j].n;
            start_all(&b[j], comms[j], tmat, noncomm, round, &rq[j * NOPS]);
        }
        spin(rank % 4);
        if (how == 0) {
            MPI_Waitall(NCOMMS * NOPS, rq, MPI_STATUSES_IGNORE);
        } else if (how == 1) {
            int left = NCOMMS * NOPS;
            while (left > 0)
                for (i = NCOMMS * NOPS - 1; i >= 0; i--) {
                    int flag = 0;
                    if (rq[i] == MPI_REQUEST_NULL)
                        continue;
                    MPI_Test(&rq[i], &flag, MPI_STATUS_IGNORE);
                    if (flag)
                        left--;
                }
        } else {
            for (i = 0; i < NCOMMS * NOPS; i++) {
                int idx;
                MPI_Waitany(NCOMMS * NOPS, rq, &idx, MPI_STATUS_IGNORE);
                CHECK(idx != MPI_UNDEFINED, "waitany round %d step %d: undefined", round, i);
            }
        }
        for (i = 0; i < NCOMMS * NOPS; i++)
            CHECK(rq[i] == MPI_REQUEST_NULL, "request %d not freed", i);
        for (j = 0; j < NCOMMS; j++)
            chk += check_all(&b[j], names[j], round, rank, &errs);
    }
    /* Nonblocking and blocking calls mixed on one communicator, in the same order everywhere. */
    {
        int x = rank, y = -1, bb = rank == 0 ? 77 : -1, x2 = rank;
        MPI_Request r2[2];
        MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r2[0]);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Ibcast(&bb, 1, MPI_INT, 0, MPI_COMM_WORLD, &r2[1]);
        MPI_Bcast(&x2, 1, MPI_INT, 0, MPI_COMM_WORLD);
        MPI_Waitall(2, r2, MPI_STATUSES_IGNORE);
        CHECK(x2 == 0 && bb == 77, "mixed: bcast %d ibcast %d", x2, bb);
        {
            int size;
            MPI_Comm_size(MPI_COMM_WORLD, &size);
            CHECK(y == size * (size - 1) / 2, "mixed: iallreduce %d", y);
        }
    }
    ct_say(rank, "checksum %lu", chk);
    MPI_Op_free(&noncomm);
    MPI_Type_free(&tmat);
    free_comms(comms);
    return ct_finish(rank, errs);
}
