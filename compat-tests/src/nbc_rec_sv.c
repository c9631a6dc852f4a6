/* MPI_Iscatterv with send layouts at the root in rank order, in reverse rank order and with
 * gaps (session 29, vscat29: at several subranks per process the root's process packs every
 * block at the root's call and sends each other process its members' blocks as one message,
 * in pieces of at most 1 MiB; each other process receives its members' total at its last
 * member's call; core/coll/vscatter.rs). Each round starts two Iscattervs at once on two
 * communicators (the world, the world split with a reversed key, the even or odd ranks also
 * reversed, the world without rank 1: uneven members per process), with a few ints (some
 * ranks none), blocks above the eager limit, or (two rounds) more than 1 MiB per rank; MPI_INT
 * or a vector type with holes as the receive type; MPI_IN_PLACE at the root on some rounds;
 * roots change every round; completed in ct_complete's six orders. Every rank checks every
 * int it receives and that the holes of its receive buffer stay untouched, and the root that
 * its own block in place is left alone; every rank prints a checksum. */
#include "ct.h"

#define ROUNDS 18
#define MAXP 64
#define HOLE (-7)

static int val(int r, int i, int k)
{
    return 100000 * (k + 1) + 1000 * r + i % 997;
}

/* Elements of rank r in round k (salt: which of the two calls): a few ints, none for some
 * ranks; 4 KiB to 8 KiB of ints every third round; 300000 ints (1.2 MB) in rounds 7 and 14. */
static int cnt(int r, int k, int salt)
{
    if ((r * 7 + k + salt) % 6 == 5)
        return 0;
    if (k == 7 || k == 14)
        return 300000 + r;
    return k % 3 == 1 ? 1024 + 256 * ((r + salt) % 5) : (r + k + salt) % 4 + 1;
}

/* Displacements (in ints) of the root's send blocks: mode 0 back to back in rank order, 1 in
 * reverse rank order, 2 a gap of one int after every block, 3 after every third block.
 * Returns the ints spanned. */
static int layout(int size, const int *counts, int mode, int *displs)
{
    int at = 0;
    for (int q = 0; q < size; q++) {
        int i = mode == 1 ? size - 1 - q : q;
        displs[i] = at;
        at += counts[i] + (mode == 2 || (mode == 3 && q % 3 == 2));
    }
    return at;
}

struct call {
    MPI_Comm comm;
    int size, rank, root, in, unit, ext; /* receive type: unit ints per element, extent ext ints */
    MPI_Datatype dt;
    int counts[MAXP], displs[MAXP];
    int *send, *recv;
    size_t rints;
};

static void setup(struct call *c, MPI_Comm comm, int k, int salt, MPI_Datatype vec)
{
    c->comm = comm;
    MPI_Comm_size(comm, &c->size);
    MPI_Comm_rank(comm, &c->rank);
    for (int i = 0; i < c->size; i++)
        c->counts[i] = cnt(i, k, salt);
    int n = layout(c->size, c->counts, (k / 2 + salt) % 4, c->displs);
    c->root = (k * 5 + salt) % c->size;
    c->in = (k + salt) % 3 == 2;
    int root = c->rank == c->root;
    c->send = ct_malloc((size_t)(root ? n + 1 : 1) * sizeof(int));
    if (root)
        for (int i = 0; i < c->size; i++)
            for (int e = 0; e < c->counts[i]; e++)
                c->send[c->displs[i] + e] = val(i, e, k);
    /* The vector type (two ints with a hole, extent 3) on rounds where counts are even. */
    int mine = c->counts[c->rank];
    int vecs = k % 4 == 3 && mine % 2 == 0;
    c->dt = vecs ? vec : MPI_INT;
    c->unit = vecs ? 2 : 1;
    c->ext = vecs ? 3 : 1;
    c->rints = (size_t)(mine / c->unit + 1) * c->ext;
    c->recv = ct_malloc(c->rints * sizeof(int));
    for (size_t i = 0; i < c->rints; i++)
        c->recv[i] = HOLE;
}

static void start(struct call *c, MPI_Request *r)
{
    int root = c->rank == c->root;
    MPI_Iscatterv(c->send, c->counts, c->displs, MPI_INT, c->in && root ? MPI_IN_PLACE : c->recv,
                  c->counts[c->rank] / c->unit, c->dt, c->root, c->comm, r);
}

static long check(struct call *c, int k, int rank, int *errp)
{
    long sum = 0;
    int mine = c->counts[c->rank];
    int root = c->rank == c->root;
    if (c->in && root) {
        for (size_t i = 0; i < c->rints; i++)
            CHECKP(c->recv[i] == HOLE, "round %d: in place, receive buffer int %zu written (%d)", k, i, c->recv[i]);
        for (int e = 0; e < mine; e++)
            CHECKP(c->send[c->displs[c->rank] + e] == val(c->rank, e, k), "round %d: in place, own block changed", k);
    } else {
        char *mark = ct_malloc(c->rints);
        memset(mark, 0, c->rints);
        for (int e = 0; e < mine / c->unit; e++)
            for (int j = 0; j < c->unit; j++) {
                size_t at = (size_t)e * c->ext + j * 2;
                int got = c->recv[at], want = val(c->rank, e * c->unit + j, k);
                CHECKP(got == want, "round %d: int %d: %d, want %d", k, e * c->unit + j, got, want);
                mark[at] = 1;
                sum += got % 1000;
            }
        for (size_t i = 0; i < c->rints; i++)
            if (!mark[i])
                CHECKP(c->recv[i] == HOLE, "round %d: hole %zu written (%d)", k, i, c->recv[i]);
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
