/* MPI_Ireduce_scatter and MPI_Ireduce_scatter_block (session 27, nbrecv27: at several
 * subranks per process, the members' operands reduced in the process and one real
 * MPI_Ireduce_scatter among processes with per-process counts, core/coll/nbrecv.rs). Each
 * round starts several calls at once on the world, the world split with a reversed key
 * (ranks not in process order) and the world's even or odd ranks also reversed (uneven
 * members per process), and completes them in the round's order of ct_complete (MPI_Waitall,
 * MPI_Wait in reverse, MPI_Test, MPI_Waitany, MPI_Testall or MPI_Testsome loops): MPI_SUM and MPI_MAX on ints with unequal counts (some zero), MPI_MAXLOC on
 * MPI_2INT (a pair type), MPI_IN_PLACE, the block form, and MPI_SUM on long long. (A
 * predefined operation on a derived type is not portable: MPICH's MPI_Ireduce_scatter
 * rejects MPI_SUM on a vector of ints.) Every rank checks each received element against the
 * value computed from every rank's operand and prints a checksum. */
#include "ct.h"

#define ROUNDS 10
#define MAXP 64
#define HOLE (-7)

static int opnd(int r, int i, int k)
{
    return (r * 7 + i * 3 + k) % 11 - 4 + r;
}

static int cnt(int r, int k)
{
    return (r * 5 + k) % 4 == 3 ? 0 : (r + k) % 3 + 1;
}

/* Calls of one round on `comm`, the kind by `kind`:
 * 0 MPI_SUM ints, 1 MPI_MAX ints in place, 2 MPI_MAXLOC on MPI_2INT, 3 block form SUM,
 * 4 block form in place on long long. */
struct call {
    int kind;
    int n, me, total, mine;
    int counts[MAXP];
    void *send, *recv;
};

static void start(struct call *c, MPI_Comm comm, int k, MPI_Request *req)
{
    MPI_Comm_size(comm, &c->n);
    MPI_Comm_rank(comm, &c->me);
    int block = (k % 3) + (c->kind == 4 ? 0 : 1); /* block form: the same count everywhere */
    c->total = 0;
    for (int i = 0; i < c->n; i++) {
        c->counts[i] = c->kind >= 3 ? block : cnt(i, k + c->kind);
        c->total += c->counts[i];
    }
    c->mine = c->counts[c->me];
    int ints = c->kind == 2 ? 2 : 1; /* ints in one element */
    size_t len = (size_t)(c->total + 1) * ints;
    if (c->kind == 4) {
        long long *s = ct_malloc(len * sizeof(long long));
        for (int i = 0; i < c->total; i++)
            s[i] = (long long)opnd(c->me, i, k) * 1000000007LL;
        c->send = NULL;
        c->recv = s;
        MPI_Ireduce_scatter_block(MPI_IN_PLACE, s, block, MPI_LONG_LONG, MPI_SUM, comm, req);
        return;
    }
    int *s = ct_malloc(len * sizeof(int)), *r = ct_malloc(len * sizeof(int));
    for (size_t i = 0; i < len; i++)
        s[i] = r[i] = HOLE;
    for (int e = 0; e < c->total; e++) {
        if (c->kind == 2) {
            s[2 * e] = opnd(c->me, e, k) % 4; /* ties: the lowest index wins */
            s[2 * e + 1] = c->me;
        } else {
            s[e] = opnd(c->me, e, k);
        }
    }
    c->send = s;
    c->recv = r;
    switch (c->kind) {
    case 0:
        MPI_Ireduce_scatter(s, r, c->counts, MPI_INT, MPI_SUM, comm, req);
        break;
    case 1:
        /* In place: the operand in the receive buffer. */
        memcpy(r, s, len * sizeof(int));
        MPI_Ireduce_scatter(MPI_IN_PLACE, r, c->counts, MPI_INT, MPI_MAX, comm, req);
        break;
    case 2:
        MPI_Ireduce_scatter(s, r, c->counts, MPI_2INT, MPI_MAXLOC, comm, req);
        break;
    default:
        MPI_Ireduce_scatter_block(s, r, block, MPI_INT, MPI_SUM, comm, req);
    }
}

/* Checks call `c` of round k; returns the checksum of what it received. */
static long finish(struct call *c, int k, int rank, int *errp)
{
    long sum = 0;
    int from = 0;
    for (int i = 0; i < c->me; i++)
        from += c->counts[i];
    for (int e = 0; e < c->mine; e++) {
        if (c->kind == 4) {
            long long want = 0, got = ((long long *)c->recv)[e];
            for (int q = 0; q < c->n; q++)
                want += (long long)opnd(q, from + e, k) * 1000000007LL;
            CHECKP(got == want, "kind 4 round %d elem %d: %lld, want %lld", k, e, got, want);
            sum += (long)(got % 1000003);
            continue;
        }
        if (c->kind == 2) {
            int v = -1000, at = -1;
            for (int q = 0; q < c->n; q++) {
                int x = opnd(q, from + e, k) % 4;
                if (x > v)
                    v = x, at = q;
            }
            int *got = (int *)c->recv + 2 * e;
            CHECKP(got[0] == v && got[1] == at, "maxloc round %d elem %d: (%d, %d), want (%d, %d)", k, e, got[0], got[1], v, at);
            sum += got[0] + 100 * got[1];
            continue;
        }
        int i = from + e, want = c->kind == 1 ? -1000 : 0;
        for (int q = 0; q < c->n; q++) {
            int x = opnd(q, i, k);
            want = c->kind == 1 ? (x > want ? x : want) : want + x;
        }
        int got = ((int *)c->recv)[e];
        CHECKP(got == want, "kind %d round %d elem %d: %d, want %d", c->kind, k, e, got, want);
        sum += got;
    }
    if (c->kind == 0 || c->kind == 2)
        CHECKP(((int *)c->recv)[c->mine * (c->kind == 2 ? 2 : 1)] == HOLE, "kind %d round %d: past the end written", c->kind, k);
    free(c->send);
    free(c->recv);
    return sum;
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0;
    if (ct_init_upto(&argc, &argv, MAXP, &rank, &size))
        return 0;
    MPI_Comm rev, half;
    ct_rev_half(&rev, &half);
    MPI_Comm comms[3] = {MPI_COMM_WORLD, rev, half};
    long sum = 0;
    for (int k = 0; k < ROUNDS; k++) {
        struct call c[5];
        MPI_Request r[5];
        for (int i = 0; i < 5; i++) {
            c[i].kind = (i + k) % 5;
            start(&c[i], comms[(i + k) % 3], k, &r[i]);
        }
        ct_complete(r, 5, k);
        for (int i = 0; i < 5; i++)
            sum += finish(&c[i], k, rank, &errs);
    }
    ct_say(rank, "checksum %ld over %d rounds", sum, ROUNDS);
    MPI_Comm_free(&half);
    MPI_Comm_free(&rev);
    return ct_finish(rank, errs);
}
