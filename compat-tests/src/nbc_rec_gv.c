/* MPI_Igatherv with receive layouts at the root that do and do not put every rank's block
 * right after the previous rank's (session 28, vrec28: at several subranks per process the
 * root's process may receive straight into the root's buffer when each process's blocks lie
 * back to back there, and a process away from the root may send large blocks from where
 * they are; core/coll/nbrecv.rs). Each round starts two Igathervs at once on two
 * communicators (the world, the world split with a reversed key, the even or odd ranks also
 * reversed), with small or large blocks (some ranks none), back to back in rank order, in
 * reverse rank order, with a gap after every block or after every third one, MPI_INT or a
 * vector type with holes, MPI_IN_PLACE at the root on some rounds, completed by MPI_Waitall
 * or MPI_Test loops. The root checks every int and that the gaps stay untouched; every rank
 * prints a checksum. */
#include "ct.h"

#define ROUNDS 16
#define MAXP 64
#define HOLE (-7)

static int val(int r, int i, int k)
{
    return 100000 * (k + 1) + 1000 * r + i % 997;
}

/* Elements of rank r in round k (salt: which of the two calls): large (4 KiB to 8 KiB of
 * ints) on odd rounds, a few ints on even ones, none for some ranks. */
static int cnt(int r, int k, int salt)
{
    if ((r * 7 + k + salt) % 6 == 5)
        return 0;
    return k % 2 ? 1024 + 256 * ((r + salt) % 5) : (r + k + salt) % 4 + 1;
}

/* Displacements (in elements): mode 0 back to back in rank order, 1 back to back in reverse
 * rank order, 2 a gap of one element after every block, 3 after every third block. Returns
 * the elements spanned. */
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
    int size, rank, root, in, unit, ext; /* unit: ints per element; ext: extent in ints */
    MPI_Datatype dt;
    int counts[MAXP], displs[MAXP];
    int *send, *recv;
    size_t ints;
};

static void setup(struct call *c, MPI_Comm comm, int k, int salt, MPI_Datatype vec)
{
    c->comm = comm;
    MPI_Comm_size(comm, &c->size);
    MPI_Comm_rank(comm, &c->rank);
    int vecs = k % 5 == 3;
    c->dt = vecs ? vec : MPI_INT;
    c->unit = vecs ? 2 : 1;
    c->ext = vecs ? 3 : 1;
    for (int i = 0; i < c->size; i++)
        c->counts[i] = cnt(i, k, salt);
    int n = layout(c->size, c->counts, (k / 2 + salt) % 4, c->displs);
    c->root = (k * 3 + salt) % c->size;
    c->in = (k + salt) % 3 == 1;
    c->ints = (size_t)(n + 2) * c->ext;
    c->send = ct_malloc(c->ints * sizeof(int));
    c->recv = ct_malloc(c->ints * sizeof(int));
    for (size_t i = 0; i < c->ints; i++)
        c->send[i] = c->recv[i] = HOLE;
    int *own = c->in && c->rank == c->root ? c->recv + (size_t)c->displs[c->rank] * c->ext : c->send;
    for (int e = 0; e < c->counts[c->rank]; e++)
        for (int j = 0; j < c->unit; j++)
            own[e * c->ext + j * 2] = val(c->rank, e * c->unit + j, k);
}

static void start(struct call *c, MPI_Request *r)
{
    int root = c->rank == c->root;
    MPI_Igatherv(c->in && root ? MPI_IN_PLACE : c->send, c->counts[c->rank], c->dt, c->recv, c->counts, c->displs,
                 c->dt, c->root, c->comm, r);
}

static long check(struct call *c, int k, int rank, int *errp)
{
    long sum = 0;
    if (c->rank != c->root) {
        free(c->send);
        free(c->recv);
        return 0;
    }
    char *mark = ct_malloc(c->ints);
    memset(mark, 0, c->ints);
    for (int i = 0; i < c->size; i++)
        for (int e = 0; e < c->counts[i]; e++)
            for (int j = 0; j < c->unit; j++) {
                size_t at = ((size_t)c->displs[i] + e) * c->ext + j * 2;
                int got = c->recv[at], want = val(i, e * c->unit + j, k);
                CHECKP(got == want, "round %d: block of %d, int %d: %d, want %d", k, i, e * c->unit + j, got, want);
                mark[at] = 1;
                sum += got % 1000;
            }
    for (size_t i = 0; i < c->ints; i++)
        if (!mark[i])
            CHECKP(c->recv[i] == HOLE, "round %d: int %zu written (%d)", k, i, c->recv[i]);
    free(mark);
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
    MPI_Datatype vec; /* two ints with a hole: extent 3 ints */
    MPI_Type_vector(2, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    MPI_Comm comms[3] = {MPI_COMM_WORLD, rev, half};
    long sum = 0;
    for (int k = 0; k < ROUNDS; k++) {
        struct call a, b;
        setup(&a, comms[k % 3], k, 0, vec);
        setup(&b, comms[(k + 1) % 3], k, 1, vec);
        MPI_Request r[2];
        start(&a, &r[0]);
        start(&b, &r[1]);
        if (k % 2) {
            MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
        } else {
            int flag;
            for (int i = 1; i >= 0; i--)
                do
                    MPI_Test(&r[i], &flag, MPI_STATUS_IGNORE);
                while (!flag);
        }
        sum += check(&a, k, rank, &errs);
        sum += check(&b, k, rank, &errs);
    }
    ct_say(rank, "checksum %ld over %d rounds", sum, ROUNDS);
    MPI_Type_free(&vec);
    MPI_Comm_free(&rev);
    MPI_Comm_free(&half);
    return ct_finish(rank, errs);
}
