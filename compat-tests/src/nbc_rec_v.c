/* MPI_Igatherv, MPI_Iscatterv and MPI_Iallgatherv with unequal counts (some zero) and gaps
 * between the blocks (session 27, nbrecv27: at several subranks per process they go as one
 * record per process and one real v-form among processes, core/coll/nbrecv.rs). Each round
 * starts one of each at once, the three on different communicators (the world, the world
 * split with a reversed key, the world's even or odd ranks also reversed: ranks not in
 * process order, uneven members per process), completed in the round's order of ct_complete
 * (MPI_Waitall, MPI_Wait in reverse, MPI_Test, MPI_Waitany, MPI_Testall or MPI_Testsome loops); MPI_IN_PLACE at the root (Gatherv, Scatterv) and everywhere
 * (Allgatherv) on some rounds; the blocks as MPI_INT or as a non-contiguous vector type (two
 * ints with a hole between them) whose holes must stay untouched. Every rank checks every
 * received int and prints a checksum of them. */
#include "ct.h"

#define ROUNDS 12
#define MAXP 64
#define HOLE (-7)

/* Elements of type `vec` (two ints, stride 2: extent 3 ints) or MPI_INT. */
struct ty {
    MPI_Datatype dt;
    int unit;   /* ints per element */
    int ext;    /* extent in ints */
    int stride; /* ints between an element's ints */
};

static int pos(const struct ty *t, int e, int j)
{
    return e * t->ext + j * t->stride;
}

static int val(int r, int i, int k)
{
    return 1000 * r + 10 * i + k + 1;
}

/* Fills `n` elements at `buf` (element 0 at `first`) with rank r's values of round k. */
static void fill(const struct ty *t, int *buf, int first, int n, int r, int k)
{
    for (int e = 0; e < n; e++)
        for (int j = 0; j < t->unit; j++)
            buf[pos(t, first + e, j)] = val(r, e * t->unit + j, k);
}

/* Checks the same; adds the ints to *sum. */
static void check(const struct ty *t, const int *buf, int first, int n, int r, int k, long *sum, int rank, int *errp,
                  const char *what)
{
    for (int e = 0; e < n; e++)
        for (int j = 0; j < t->unit; j++) {
            int got = buf[pos(t, first + e, j)], want = val(r, e * t->unit + j, k);
            CHECKP(got == want, "%s round %d: block of %d, int %d: %d, want %d", what, k, r, e * t->unit + j, got, want);
            *sum += got;
        }
}

static void holes(const int *buf, const char *mark, int n, int k, int rank, int *errp, const char *what)
{
    for (int i = 0; i < n; i++)
        if (!mark[i])
            CHECKP(buf[i] == HOLE, "%s round %d: int %d written (%d)", what, k, i, buf[i]);
}

static int cnt(int r, int k, int salt)
{
    return (r * 3 + k + salt) % 5 == 4 ? 0 : (r + k + salt) % 3 + 1;
}

/* Block displacements with a gap of one element, the blocks in reverse rank order when
 * `rev`; returns the elements spanned. */
static int layout(int size, const int *counts, int rev, int *displs)
{
    int at = 0;
    for (int q = 0; q < size; q++) {
        int i = rev ? size - 1 - q : q;
        displs[i] = at;
        at += counts[i] + 1;
    }
    return at;
}

/* Marks the ints of `n` elements from element `first`. */
static void mark_of(const struct ty *t, char *mark, int first, int n)
{
    for (int e = 0; e < n; e++)
        for (int j = 0; j < t->unit; j++)
            mark[pos(t, first + e, j)] = 1;
}

static long round_at(MPI_Comm cg, MPI_Comm cs, MPI_Comm ca, int k, const struct ty *t, int *errp)
{
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    long sum = 0;
    int gsize, grank, ssize, srank, asize, arank;
    MPI_Comm_size(cg, &gsize);
    MPI_Comm_rank(cg, &grank);
    MPI_Comm_size(cs, &ssize);
    MPI_Comm_rank(cs, &srank);
    MPI_Comm_size(ca, &asize);
    MPI_Comm_rank(ca, &arank);
    int gc[MAXP], gd[MAXP], sc[MAXP], sd[MAXP], ac[MAXP], ad[MAXP];
    for (int i = 0; i < gsize; i++)
        gc[i] = cnt(i, k, 0);
    for (int i = 0; i < ssize; i++)
        sc[i] = cnt(i, k, 1);
    for (int i = 0; i < asize; i++)
        ac[i] = cnt(i, k, 2);
    int gn = layout(gsize, gc, k % 2, gd), sn = layout(ssize, sc, (k + 1) % 2, sd), an = layout(asize, ac, k % 2, ad);
    int groot = k % gsize, sroot = (k * 5 + 1) % ssize;
    int gin = k % 4 == 1, sin = k % 4 == 2, ain = k % 3 == 0;
    size_t ints = (size_t)(gn + sn + an + 8) * t->ext + 8;
    int *gsend = ct_malloc(ints * sizeof(int)), *grecv = ct_malloc(ints * sizeof(int));
    int *ssend = ct_malloc(ints * sizeof(int)), *srecv = ct_malloc(ints * sizeof(int));
    int *asend = ct_malloc(ints * sizeof(int)), *arecv = ct_malloc(ints * sizeof(int));
    char *mark = ct_malloc(ints);
    for (size_t i = 0; i < ints; i++)
        gsend[i] = grecv[i] = ssend[i] = srecv[i] = asend[i] = arecv[i] = HOLE;
    /* Gatherv: rank i sends gc[i] elements to groot. */
    fill(t, gsend, 0, gc[grank], grank, k);
    if (gin && grank == groot)
        fill(t, grecv, gd[grank], gc[grank], grank, k);
    /* Scatterv: sroot sends sc[i] elements at sd[i] to rank i. */
    if (srank == sroot)
        for (int i = 0; i < ssize; i++)
            fill(t, ssend, sd[i], sc[i], i, k);
    /* Allgatherv: rank i gives ac[i] elements, placed at ad[i]. */
    fill(t, asend, 0, ac[arank], arank, k);
    if (ain)
        fill(t, arecv, ad[arank], ac[arank], arank, k);
    MPI_Request r[3];
    MPI_Igatherv(gin && grank == groot ? MPI_IN_PLACE : gsend, gc[grank], t->dt, grecv, gc, gd, t->dt, groot, cg, &r[0]);
    MPI_Iscatterv(ssend, sc, sd, t->dt, sin && srank == sroot ? MPI_IN_PLACE : srecv, sc[srank], t->dt, sroot, cs, &r[1]);
    MPI_Iallgatherv(ain ? MPI_IN_PLACE : asend, ac[arank], t->dt, arecv, ac, ad, t->dt, ca, &r[2]);
    ct_complete(r, 3, k);
    if (grank == groot) {
        memset(mark, 0, ints);
        for (int i = 0; i < gsize; i++) {
            check(t, grecv, gd[i], gc[i], i, k, &sum, rank, errp, "gatherv");
            mark_of(t, mark, gd[i], gc[i]);
        }
        holes(grecv, mark, (int)ints, k, rank, errp, "gatherv");
    }
    if (!(sin && srank == sroot)) {
        memset(mark, 0, ints);
        check(t, srecv, 0, sc[srank], srank, k, &sum, rank, errp, "scatterv");
        mark_of(t, mark, 0, sc[srank]);
        holes(srecv, mark, (int)ints, k, rank, errp, "scatterv");
    }
    memset(mark, 0, ints);
    for (int i = 0; i < asize; i++) {
        check(t, arecv, ad[i], ac[i], i, k, &sum, rank, errp, "allgatherv");
        mark_of(t, mark, ad[i], ac[i]);
    }
    holes(arecv, mark, (int)ints, k, rank, errp, "allgatherv");
    free(gsend);
    free(grecv);
    free(ssend);
    free(srecv);
    free(asend);
    free(arecv);
    free(mark);
    return sum;
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0;
    if (ct_init_upto(&argc, &argv, MAXP, &rank, &size))
        return 0;
    MPI_Comm rev, half;
    ct_rev_half(&rev, &half);
    MPI_Datatype vec; /* extent 3 ints: the second int's end */
    MPI_Type_vector(2, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    struct ty tys[2] = {{MPI_INT, 1, 1, 1}, {vec, 2, 3, 2}};
    MPI_Comm comms[3] = {MPI_COMM_WORLD, rev, half};
    long sum = 0;
    for (int k = 0; k < ROUNDS; k++) {
        const struct ty *t = &tys[k % 2];
        /* The three calls on three communicators, turning. */
        sum += round_at(comms[k % 3], comms[(k + 1) % 3], comms[(k + 2) % 3], k, t, &errs);
    }
    ct_say(rank, "checksum %ld over %d rounds", sum, ROUNDS);
    MPI_Type_free(&vec);
    MPI_Comm_free(&half);
    MPI_Comm_free(&rev);
    return ct_finish(rank, errs);
}
