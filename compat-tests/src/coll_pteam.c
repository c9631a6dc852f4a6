/* Persistent collectives started in different orders on different ranks (MPI 4.0 lets the
 * starts of different persistent collective requests come in any order; only the *_init
 * calls are ordered): eight persistent requests on two communicators (world and odd/even):
 * Bcast_init, Allreduce_init, Reduce_init (non-commutative user operation), Allgather_init,
 * Alltoall_init, Gather_init, Scan_init and Barrier_init. Each of five rounds refills the
 * send buffers, starts the requests in an order that depends on the rank and the round
 * (MPI_Start one by one, or MPI_Startall over a permuted array), computes a little, and
 * completes them by Waitany, Test loops or Waitall; an ordinary Allreduce runs between
 * rounds. Every result is checked against a local computation.
 *
 * MPICH 4.0.2's persistent collectives are broken (see coll_persistent.c), so the program's
 * own verdict is the reference (coll_pteam.expect). */
#include "ct.h"

#define ROUNDS 5
#define NREQ 16
#define CNT 33
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
    m.a[0] = 1 + rank + round;
    m.a[1] = (k + round) % 7;
    m.a[2] = (rank * 3 + k) % 5;
    m.a[3] = 1 + (k % 3);
    return m;
}

static double spin(int n)
{
    volatile double x = 0;
    int i;
    for (i = 0; i < n * 3000; i++)
        x += i * 0.5;
    return x;
}

/* One communicator's persistent requests and buffers. */
typedef struct {
    MPI_Comm cm;
    int n, me, root;
    int bc[CNT], ar_s[CNT], ar_r[CNT], ag_s[CNT], *ag_r, *a2a_s, *a2a_r, *g_r;
    mat m[CNT], mred[CNT], mscan[CNT];
} pset;

static void init_set(pset *s, MPI_Comm cm, MPI_Datatype tmat, MPI_Op op, MPI_Info info, MPI_Request *rq)
{
    s->cm = cm;
    MPI_Comm_rank(cm, &s->me);
    MPI_Comm_size(cm, &s->n);
    s->root = s->n - 1;
    s->ag_r = ct_malloc(sizeof(int) * CNT * s->n);
    s->a2a_s = ct_malloc(sizeof(int) * CNT * s->n);
    s->a2a_r = ct_malloc(sizeof(int) * CNT * s->n);
    s->g_r = ct_malloc(sizeof(int) * CNT * s->n);
    MPI_Bcast_init(s->bc, CNT, MPI_INT, s->root, cm, info, &rq[0]);
    MPI_Allreduce_init(s->ar_s, s->ar_r, CNT, MPI_INT, MPI_SUM, cm, info, &rq[1]);
    MPI_Reduce_init(s->m, s->mred, CNT, tmat, op, s->root, cm, info, &rq[2]);
    MPI_Allgather_init(s->ag_s, CNT, MPI_INT, s->ag_r, CNT, MPI_INT, cm, info, &rq[3]);
    MPI_Alltoall_init(s->a2a_s, CNT, MPI_INT, s->a2a_r, CNT, MPI_INT, cm, info, &rq[4]);
    MPI_Gather_init(s->ag_s, CNT, MPI_INT, s->g_r, CNT, MPI_INT, 0, cm, info, &rq[5]);
    MPI_Scan_init(s->m, s->mscan, CNT, tmat, op, cm, info, &rq[6]);
    MPI_Barrier_init(cm, info, &rq[7]);
}

static void fill(pset *s, int round)
{
    int k, p;
    for (k = 0; k < CNT; k++) {
        s->bc[k] = s->me == s->root ? round * 1000 + k : -1;
        s->ar_s[k] = s->me * round + k;
        s->ag_s[k] = s->me * 100 + k + round;
        s->m[k] = mat_of(s->me, k, round);
    }
    for (p = 0; p < s->n; p++)
        for (k = 0; k < CNT; k++)
            s->a2a_s[p * CNT + k] = s->me * 10000 + p * 100 + k + round;
}

static void check_set(pset *s, const char *name, int round, int rank, int *errp)
{
    int k, p, n = s->n, me = s->me, errs = 0;
    for (k = 0; k < CNT; k++) {
        CHECK(s->bc[k] == round * 1000 + k, "%s round %d bcast[%d]=%d", name, round, k, s->bc[k]);
        CHECK(s->ar_r[k] == round * n * (n - 1) / 2 + n * k, "%s round %d allreduce[%d]=%d", name, round, k, s->ar_r[k]);
    }
    for (p = 0; p < n; p++)
        for (k = 0; k < CNT; k++) {
            CHECK(s->ag_r[p * CNT + k] == p * 100 + k + round, "%s round %d allgather[%d][%d]", name, round, p, k);
            CHECK(s->a2a_r[p * CNT + k] == p * 10000 + me * 100 + k + round, "%s round %d alltoall[%d][%d]", name,
                  round, p, k);
            if (me == 0)
                CHECK(s->g_r[p * CNT + k] == p * 100 + k + round, "%s round %d gather[%d][%d]", name, round, p, k);
        }
    for (k = 0; k < CNT; k++) {
        mat w = mat_of(0, k, round);
        for (p = 1; p <= me; p++) {
            mat q = mat_of(p, k, round);
            matmul(&w, &q, &w);
        }
        CHECK(!memcmp(&w, &s->mscan[k], sizeof w), "%s round %d scan matrix %d", name, round, k);
        if (me == s->root)
            CHECK(!memcmp(&w, &s->mred[k], sizeof w), "%s round %d reduce matrix %d", name, round, k);
    }
    *errp += errs;
}

int main(int argc, char **argv)
{
    MPI_Comm split;
    MPI_Datatype tmat;
    MPI_Op noncomm;
    MPI_Info info;
    MPI_Request rq[NREQ];
    pset s[2];
    int rank, size, errs = 0, round, i;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &split);
    MPI_Type_contiguous(4, MPI_INT, &tmat);
    MPI_Type_commit(&tmat);
    MPI_Op_create(matop, 0, &noncomm);
    MPI_Info_create(&info);
    init_set(&s[0], MPI_COMM_WORLD, tmat, noncomm, info, &rq[0]);
    init_set(&s[1], split, tmat, noncomm, info, &rq[8]);

    for (round = 0; round < ROUNDS; round++) {
        int order[NREQ], how = (rank + round) % 3, left = NREQ;
        fill(&s[0], round);
        fill(&s[1], round);
        /* A permutation that differs between ranks and rounds. */
        for (i = 0; i < NREQ; i++)
            order[i] = (i * 5 + rank * 3 + round) % NREQ;
        if ((rank + round) % 2) {
            for (i = 0; i < NREQ; i++)
                MPI_Start(&rq[order[i]]);
        } else {
            MPI_Request perm[NREQ];
            for (i = 0; i < NREQ; i++)
                perm[i] = rq[order[i]];
            MPI_Startall(NREQ, perm);
        }
        spin(rank % 3);
        if (how == 0) {
            while (left > 0) {
                int idx;
                MPI_Waitany(NREQ, rq, &idx, MPI_STATUS_IGNORE);
                CHECK(idx != MPI_UNDEFINED, "round %d: waitany undefined with %d left", round, left);
                left--;
            }
        } else if (how == 1) {
            while (left > 0) {
                left = 0;
                for (i = NREQ - 1; i >= 0; i--) {
                    int flag;
                    MPI_Test(&rq[i], &flag, MPI_STATUS_IGNORE);
                    left += !flag;
                }
            }
        } else {
            MPI_Waitall(NREQ, rq, MPI_STATUSES_IGNORE);
        }
        for (i = 0; i < NREQ; i++)
            CHECK(rq[i] != MPI_REQUEST_NULL, "round %d: persistent request %d became null", round, i);
        check_set(&s[0], "world", round, rank, &errs);
        check_set(&s[1], "odd/even", round, rank, &errs);
        {
            int x = round, y = -1;
            MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
            CHECK(y == round, "between rounds: allreduce %d", y);
        }
    }
    for (i = 0; i < NREQ; i++)
        MPI_Request_free(&rq[i]);
    for (i = 0; i < 2; i++) {
        free(s[i].ag_r), free(s[i].a2a_s), free(s[i].a2a_r), free(s[i].g_r);
    }
    MPI_Info_free(&info);
    MPI_Op_free(&noncomm);
    MPI_Type_free(&tmat);
    MPI_Comm_free(&split);
    return ct_finish(rank, errs);
}
