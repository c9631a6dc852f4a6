/* MPI_Igatherv with send and receive types that differ, blocks of every size and root
 * layouts in rank order, reverse rank order and with gaps (session 30, gath30: at several
 * subranks per process every process away from the root's sends its members' blocks to the
 * root's process as one message, or from 16 KiB one per block, in pieces of at most 1 MiB;
 * the root's process receives them at the root's call, into the root's buffer where it can;
 * core/coll/vgather.rs). Each round starts two Igathervs at once on two communicators (the
 * world, the world split with a reversed key, the even or odd ranks also reversed, the world
 * without rank 1: uneven members per process), with a few ints (some ranks none), 4 KiB to
 * 8 KiB of ints per rank (above the eager limit), or (two rounds) more than 1 MiB per rank.
 * The types: MPI_INT at both ends, a vector of two ints with a hole sent and MPI_INT received,
 * MPI_INT sent and the vector received, the vector at both ends. MPI_IN_PLACE at the root on
 * some rounds; roots change every round; completed in ct_complete's six orders. The root
 * checks every int and that the holes and gaps of its receive buffer stay untouched; every
 * rank checks that its send buffer did not change; every rank prints a checksum. */
#include "ct.h"

#define ROUNDS 18
#define MAXP 64
#define HOLE (-7)

static int val(int r, int i, int k)
{
    return 100000 * (k + 1) + 1000 * r + i % 997;
}

/* Pairs of ints of rank r in round k (salt: which of the two calls): a few, none for some
 * ranks; 2 KiB to 4 KiB pairs every third round; 150000 pairs (1.2 MB) in rounds 7 and 14. */
static int pairs(int r, int k, int salt)
{
    if ((r * 7 + k + salt) % 6 == 5)
        return 0;
    if (k == 7 || k == 14)
        return 150000 + r;
    return k % 3 == 1 ? 512 + 128 * ((r + salt) % 5) : (r + k + salt) % 4 + 1;
}

/* Displacements (in pairs) of the root's receive blocks: mode 0 back to back in rank order,
 * 1 in reverse rank order, 2 a gap of one pair after every block, 3 after every third block.
 * Returns the pairs spanned. */
static int layout(int size, const int *p, int mode, int *displs)
{
    int at = 0;
    for (int q = 0; q < size; q++) {
        int i = mode == 1 ? size - 1 - q : q;
        displs[i] = at;
        at += p[i] + (mode == 2 || (mode == 3 && q % 3 == 2));
    }
    return at;
}

/* A side of the call: MPI_INT (two elements per pair, extent 2 ints per pair) or the vector
 * (one element per pair, extent 3 ints per pair, the second int of each pair 2 ints on). */
struct side {
    MPI_Datatype dt;
    int per, ext; /* elements per pair; ints a pair spans */
};

static struct side side_of(int vec_side, MPI_Datatype vec)
{
    struct side s = {MPI_INT, 2, 2};
    if (vec_side) {
        s.dt = vec;
        s.per = 1;
        s.ext = 3;
    }
    return s;
}

/* Where int j (0 or 1) of pair e lies in a buffer of that side. */
static size_t at_of(struct side s, size_t e, int j)
{
    return e * s.ext + (s.per == 2 ? j : 2 * j);
}

struct call {
    MPI_Comm comm;
    int size, rank, root, in;
    struct side snd, rcv;
    int pairs[MAXP], counts[MAXP], displs[MAXP];
    int *send, *recv;
    size_t sints, rints;
};

static void fill(int *buf, struct side s, int n, int rank, int k)
{
    for (int e = 0; e < n; e++)
        for (int j = 0; j < 2; j++)
            buf[at_of(s, e, j)] = val(rank, 2 * e + j, k);
}

static void setup(struct call *c, MPI_Comm comm, int k, int salt, MPI_Datatype vec)
{
    c->comm = comm;
    MPI_Comm_size(comm, &c->size);
    MPI_Comm_rank(comm, &c->rank);
    int t = (k + 2 * salt) % 4;
    c->snd = side_of(t == 1 || t == 3, vec);
    c->rcv = side_of(t == 2 || t == 3, vec);
    for (int i = 0; i < c->size; i++) {
        c->pairs[i] = pairs(i, k, salt);
        c->counts[i] = c->pairs[i] * c->rcv.per;
    }
    int n = layout(c->size, c->pairs, (k / 2 + salt) % 4, c->displs);
    /* Displacements in receive elements. */
    for (int i = 0; i < c->size; i++)
        c->displs[i] *= c->rcv.per;
    c->root = (k * 5 + salt) % c->size;
    c->in = (k + salt) % 3 == 2;
    int root = c->rank == c->root, mine = c->pairs[c->rank];
    c->sints = (size_t)(mine + 1) * c->snd.ext;
    c->send = ct_malloc(c->sints * sizeof(int));
    for (size_t i = 0; i < c->sints; i++)
        c->send[i] = HOLE;
    fill(c->send, c->snd, mine, c->rank, k);
    c->rints = root ? (size_t)(n + 1) * c->rcv.ext : 1;
    c->recv = ct_malloc(c->rints * sizeof(int));
    for (size_t i = 0; i < c->rints; i++)
        c->recv[i] = HOLE;
    if (root && c->in)
        fill(c->recv + (size_t)c->displs[c->rank] / c->rcv.per * c->rcv.ext, c->rcv, mine, c->rank, k);
}

static void start(struct call *c, MPI_Request *r)
{
    int root = c->rank == c->root;
    MPI_Igatherv(c->in && root ? MPI_IN_PLACE : c->send, c->pairs[c->rank] * c->snd.per, c->snd.dt, c->recv, c->counts,
                 c->displs, c->rcv.dt, c->root, c->comm, r);
}

static long check(struct call *c, int k, int rank, int *errp)
{
    long sum = 0;
    char *mark = ct_malloc(c->sints);
    memset(mark, 0, c->sints);
    for (int e = 0; e < c->pairs[c->rank]; e++)
        for (int j = 0; j < 2; j++) {
            size_t at = at_of(c->snd, e, j);
            CHECKP(c->send[at] == val(c->rank, 2 * e + j, k), "round %d: send int %zu changed", k, at);
            mark[at] = 1;
        }
    for (size_t i = 0; i < c->sints; i++)
        if (!mark[i])
            CHECKP(c->send[i] == HOLE, "round %d: send hole %zu written (%d)", k, i, c->send[i]);
    free(mark);
    if (c->rank == c->root) {
        mark = ct_malloc(c->rints);
        memset(mark, 0, c->rints);
        for (int i = 0; i < c->size; i++) {
            size_t base = (size_t)c->displs[i] / c->rcv.per;
            for (int e = 0; e < c->pairs[i]; e++)
                for (int j = 0; j < 2; j++) {
                    size_t at = at_of(c->rcv, base + e, j);
                    int got = c->recv[at], want = val(i, 2 * e + j, k);
                    CHECKP(got == want, "round %d: block of %d, int %d: %d, want %d", k, i, 2 * e + j, got, want);
                    mark[at] = 1;
                    sum += got % 1000;
                }
        }
        for (size_t i = 0; i < c->rints; i++)
            if (!mark[i])
                CHECKP(c->recv[i] == HOLE, "round %d: receive int %zu written (%d)", k, i, c->recv[i]);
        free(mark);
    }
    free(c->send);
    free(c->recv);
    return sum;
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0;
    if (ct_init_upto(&argc, &argv, MAXP, &rank, &size))
        return 0;
    MPI_Comm rev, half, most;
    ct_rev_half(&rev, &half);
    /* The world without rank 1 (rank 1 alone in the other part). */
    MPI_Comm_split(MPI_COMM_WORLD, rank == 1 && size > 1, rank, &most);
    MPI_Datatype vec; /* two ints with a hole: extent 3 ints */
    MPI_Type_vector(2, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    MPI_Comm comms[4] = {MPI_COMM_WORLD, rev, half, most};
    long sum = 0;
    for (int k = 0; k < ROUNDS; k++) {
        struct call a, b;
        setup(&a, comms[k % 4], k, 0, vec);
        setup(&b, comms[(k + 1) % 4], k, 1, vec);
        MPI_Request r[2];
        start(&a, &r[0]);
        start(&b, &r[1]);
        ct_complete(r, 2, k);
        sum += check(&a, k, rank, &errs);
        sum += check(&b, k, rank, &errs);
    }
    ct_say(rank, "checksum %ld over %d rounds", sum, ROUNDS);
    MPI_Type_free(&vec);
    MPI_Comm_free(&rev);
    MPI_Comm_free(&half);
    MPI_Comm_free(&most);
    return ct_finish(rank, errs);
}
