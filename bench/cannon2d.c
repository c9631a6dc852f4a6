/* cannon2d: C = A B (N x N, doubles) by Cannon's algorithm with the system
 * BLAS's dgemm for the local products. Variants: see overlap.h.
 *
 *   cannon2d [-v variant] [-n N | -l NLOC] [-r reps] [-w warmup]
 *
 *   -n N      strong scaling: global matrices N x N (default 512)
 *   -l NLOC   weak scaling: N = NLOC * q, so each rank's C block is NLOC x NLOC
 *   -r        timed multiplications (default 2), -w untimed ones (default 1)
 *
 * Any number of ranks P: P = c q^2 with q the largest integer whose square
 * divides P. The ranks form c layers of q x q process grids; layer l
 * multiplies A(:, K_l) B(K_l, :) over its share K_l of the inner dimension
 * by Cannon's q shift steps (A left, B up, each step's blocks shifted while
 * or before they are multiplied, depending on the variant), and the layers'
 * C blocks are summed onto layer 0 at the end (the inner-dimension split of
 * 2.5-D algorithms; c = 1 is plain Cannon). N must be a multiple of c q.
 * The initial alignment (skew) is built into how blocks are generated.
 *
 * The entries of A and B are small integers, so C is exact: rank 0 prints a
 * weighted checksum of C (the same for every variant but nocomm, and every P)
 * and checks sum(C) against sum_k colsum(A)_k rowsum(B)_k:
 *
 *   RESULT app=cannon2d variant=V ranks=P grid=qxqxc n=N reps=R time=T checksum=S verified=yes|no
 */
#include "overlap.h"
#include <cblas.h>

static double aval(long i, long k) { return (double) ((i * 3 + k * 5) % 7 - 3); }
static double bval(long k, long j) { return (double) ((k * 2 + j * 7) % 5 - 2); }

typedef struct {
    int q, c, row, col, layer;
    long n, nb, kb; /* N, rows/cols of a C block, width of an inner panel */
    MPI_Comm grid, fiber;
    int left, right, up, down;
    double *a[2], *b[2], *cblk;
} cannon_t;

/* Block (row, k) of layer l's A panel and (k, col) of its B panel: panel k of
 * the inner dimension is global columns (l q + k) kb ... */
static void fill(cannon_t *m, int k)
{
    long i, j, kk, k0 = ((long) m->layer * m->q + k) * m->kb;
    for (i = 0; i < m->nb; i++)
        for (kk = 0; kk < m->kb; kk++)
            m->a[0][i * m->kb + kk] = aval(m->row * m->nb + i, k0 + kk);
    for (kk = 0; kk < m->kb; kk++)
        for (j = 0; j < m->nb; j++)
            m->b[0][kk * m->nb + j] = bval(k0 + kk, m->col * m->nb + j);
}

static void multiply(cannon_t *m, int cur)
{
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int) m->nb, (int) m->nb, (int) m->kb, 1.0, m->a[cur], (int) m->kb,
                m->b[cur], (int) m->nb, 1.0, m->cblk, (int) m->nb);
}

/* Posts the shift of the current blocks into the other buffers. */
static void shift_post(cannon_t *m, int cur, int variant, MPI_Request rq[4])
{
    int ca = (int) (m->nb * m->kb), nxt = 1 - cur;
    region(variant, TOUCAN_RECEIVE);
    MPI_Irecv(m->a[nxt], ca, MPI_DOUBLE, m->right, 0, m->grid, &rq[0]);
    MPI_Irecv(m->b[nxt], ca, MPI_DOUBLE, m->down, 1, m->grid, &rq[1]);
    region(variant, TOUCAN_SEND);
    MPI_Isend(m->a[cur], ca, MPI_DOUBLE, m->left, 0, m->grid, &rq[2]);
    MPI_Isend(m->b[cur], ca, MPI_DOUBLE, m->up, 1, m->grid, &rq[3]);
}

static void run(cannon_t *m, int variant)
{
    MPI_Request rq[4];
    int s, cur = 0;
    long cn = m->nb * m->nb;
    memset(m->cblk, 0, cn * sizeof(double));
    fill(m, (m->row + m->col) % m->q);
    for (s = 0; s < m->q; s++) {
        switch (variant) {
        case ORIGINAL:
        case TOUCAN:
            /* step s multiplies the blocks shifted in at the end of step s-1 */
            if (s > 0) {
                shift_post(m, cur, variant, rq);
                region(variant, TOUCAN_COMPUTE);
                MPI_Waitall(4, rq, MPI_STATUSES_IGNORE);
                cur = 1 - cur;
            } else {
                region(variant, TOUCAN_COMPUTE);
            }
            multiply(m, cur);
            region(variant, TOUCAN_END);
            break;
        case NOCOMM:
            multiply(m, cur);
            break;
        case OVERLAP:
            if (s + 1 < m->q)
                shift_post(m, cur, variant, rq);
            multiply(m, cur);
            if (s + 1 < m->q) {
                MPI_Waitall(4, rq, MPI_STATUSES_IGNORE);
                cur = 1 - cur;
            }
            break;
        }
    }
    if (m->c > 1 && variant != NOCOMM) {
        if (m->layer == 0)
            MPI_Reduce(MPI_IN_PLACE, m->cblk, (int) cn, MPI_DOUBLE, MPI_SUM, 0, m->fiber);
        else
            MPI_Reduce(m->cblk, NULL, (int) cn, MPI_DOUBLE, MPI_SUM, 0, m->fiber);
    }
}

int main(int argc, char **argv)
{
    int rank, size, variant = ORIGINAL, reps = 2, warm = 1, a, q, dims[2], periods[2] = {1, 1}, coords[2];
    long n = 512, nloc = 0, i, j;
    cannon_t m;
    double t0, t, colsum, rowsum;
    long long sums[2] = {0, 0}, tot[2], expect = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (a = 1; a < argc; a++) {
        const char *o = argv[a], *v = a + 1 < argc ? argv[a + 1] : NULL;
        if (!v)
            die(rank, "cannon2d: an option lacks its value");
        if (!strcmp(o, "-v")) {
            if ((variant = parse_variant(v)) < 0)
                die(rank, "cannon2d: -v original|toucan|nocomm|overlap");
        } else if (!strcmp(o, "-n"))
            n = atol(v);
        else if (!strcmp(o, "-l"))
            nloc = atol(v);
        else if (!strcmp(o, "-r"))
            reps = atoi(v);
        else if (!strcmp(o, "-w"))
            warm = atoi(v);
        else
            die(rank, "cannon2d: unknown option (see the comment at the top of cannon2d.c)");
        a++;
    }
    memset(&m, 0, sizeof m);
    for (q = 1; (q + 1) * (q + 1) <= size; q++)
        ;
    while (size % (q * q))
        q--;
    m.q = q;
    m.c = size / (q * q);
    if (nloc > 0)
        n = nloc * q;
    if (reps < 1 || warm < 0 || n < 1 || n % ((long) m.c * q))
        die(rank, "cannon2d: N must be a positive multiple of c*q (see -n/-l), reps >= 1");
    m.n = n;
    m.nb = n / q;
    m.kb = n / ((long) m.c * q);
    m.layer = rank / (q * q);
    /* one q x q periodic grid per layer, and the fibers across layers */
    MPI_Comm_split(MPI_COMM_WORLD, m.layer, rank, &m.grid);
    MPI_Comm_split(MPI_COMM_WORLD, rank % (q * q), m.layer, &m.fiber);
    {
        MPI_Comm flat = m.grid;
        dims[0] = dims[1] = q;
        MPI_Cart_create(flat, 2, dims, periods, 0, &m.grid);
        MPI_Comm_free(&flat);
    }
    MPI_Cart_coords(m.grid, rank % (q * q), 2, coords);
    m.row = coords[0];
    m.col = coords[1];
    MPI_Cart_shift(m.grid, 1, -1, &m.right, &m.left); /* A moves left: receive from the right */
    MPI_Cart_shift(m.grid, 0, -1, &m.down, &m.up);    /* B moves up: receive from below */
    for (i = 0; i < 2; i++) {
        m.a[i] = xmalloc(m.nb * m.kb * sizeof(double));
        m.b[i] = xmalloc(m.kb * m.nb * sizeof(double));
    }
    m.cblk = xmalloc(m.nb * m.nb * sizeof(double));

    for (a = 0; a < warm; a++)
        run(&m, variant);
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (a = 0; a < reps; a++)
        run(&m, variant);
    t = elapsed_since(t0);

    /* Layer 0 holds C. */
    if (m.layer == 0)
        for (i = 0; i < m.nb; i++)
            for (j = 0; j < m.nb; j++) {
                long long cij = (long long) m.cblk[i * m.nb + j];
                long gi = m.row * m.nb + i, gj = m.col * m.nb + j;
                sums[0] += cij;
                sums[1] += cij * ((gi * 31 + gj * 17) % 1009 + 1);
            }
    MPI_Reduce(sums, tot, 2, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        for (i = 0; i < n; i++) {
            colsum = rowsum = 0.0;
            for (j = 0; j < n; j++) {
                colsum += aval(j, i);
                rowsum += bval(i, j);
            }
            expect += (long long) colsum * (long long) rowsum;
        }
        printf("RESULT app=cannon2d variant=%s ranks=%d grid=%dx%dx%d n=%ld reps=%d time=%.6f checksum=%lld verified=%s\n",
               variant_names[variant], size, q, q, m.c, n, reps, t, tot[1], tot[0] == expect ? "yes" : "no");
        fflush(stdout); /* before MPI_Finalize: see FINALIZE_GRACE in run-overlap.py */
    }
    for (i = 0; i < 2; i++) {
        free(m.a[i]);
        free(m.b[i]);
    }
    free(m.cblk);
    MPI_Comm_free(&m.grid);
    MPI_Comm_free(&m.fiber);
    MPI_Finalize();
    return 0;
}
