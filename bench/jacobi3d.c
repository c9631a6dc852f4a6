/* jacobi3d: 7-point Jacobi stencil on a 3-D grid, 3-D block decomposition
 * (MPI_Dims_create, non-periodic), six face exchanges per iteration,
 * cache-blocked sweeps. Variants: see overlap.h.
 *
 *   jacobi3d [-v variant] [-g N | -G NXxNYxNZ | -l N] [-i iters] [-w warmup] [-b block] [-c put]
 *
 *   -g N      strong scaling: global grid N^3 (default 96)
 *   -G AxBxC  strong scaling: global grid A x B x C
 *   -l N      weak scaling: N^3 cells per rank (global = N * dims)
 *   -i        timed iterations (default 20), -w untimed warm-up iterations (default 2)
 *   -b        cache block edge in y and z (default 16)
 *   -c put    one-sided faces (issue 18): each rank MPI_Puts its faces into its neighbours'
 *             receive slots in one window (two sets of slots, alternating per iteration, so
 *             one MPI_Win_fence per iteration suffices), the fence takes the place of the
 *             Waitall; same field and checksum as the two-sided exchange
 *
 * Every cell is updated by the same expression in the same operand order in
 * every variant and decomposition, so the field is bitwise independent of the
 * number of ranks; the checksum is a sum of fixed-point values (exact), so it
 * is too (except for nocomm, which never exchanges its faces). Rank 0 prints
 *
 *   RESULT app=jacobi3d variant=V ranks=P dims=AxBxC grid=XxYxZ iters=I time=T checksum=S
 */
#include "overlap.h"

typedef struct {
    int n[3];         /* local cells per dimension (x fastest) */
    int sx, sy;       /* strides of y and z in the padded array */
    double *u, *un;
    int nb[6];        /* neighbours: -x +x -y +y -z +z */
    double *sbuf[6], *rbuf[6];
    int count[6];
    MPI_Comm comm;
    int block;
    /* -c put: the window of receive slots, 2 x total doubles (parity p's slot of face f at
     * p * total + off[f]), and where each neighbour's slot for my face is (roff[f][0]: its
     * off, roff[f][1]: its total) */
    int put, parity;
    MPI_Win win;
    double *wmem;
    MPI_Aint total, off[6], roff[6][2];
} grid_t;

#define IDX(g, i, j, k) ((size_t) ((k) + 1) * (g)->sy + (size_t) ((j) + 1) * (g)->sx + (size_t) ((i) + 1))

/* Copies face f of the interior into (pack=1) or out of (pack=0) buf, from
 * or into the ghost layer for unpacking. */
static void face(grid_t *g, int f, double *buf, int pack)
{
    int d = f / 2, hi = f % 2;
    int i, j, k, lo[3] = {0, 0, 0}, up[3];
    size_t c = 0;
    double *a = g->u;
    for (i = 0; i < 3; i++)
        up[i] = g->n[i];
    /* pack: the outermost interior layer; unpack: the ghost layer. */
    lo[d] = pack ? (hi ? g->n[d] - 1 : 0) : (hi ? g->n[d] : -1);
    up[d] = lo[d] + 1;
    for (k = lo[2]; k < up[2]; k++)
        for (j = lo[1]; j < up[1]; j++)
            for (i = lo[0]; i < up[0]; i++) {
                if (pack)
                    buf[c++] = a[IDX(g, i, j, k)];
                else
                    a[IDX(g, i, j, k)] = buf[c++];
            }
}

/* Updates the cells of box [lo, hi) from u into un, blocked in y and z. */
static void sweep(grid_t *g, const int lo[3], const int hi[3])
{
    const double sixth = 1.0 / 7.0;
    const double *u = g->u;
    double *un = g->un;
    int kb, jb, i, j, k, B = g->block;
    for (kb = lo[2]; kb < hi[2]; kb += B)
        for (jb = lo[1]; jb < hi[1]; jb += B)
            for (k = kb; k < hi[2] && k < kb + B; k++)
                for (j = jb; j < hi[1] && j < jb + B; j++) {
                    size_t c = IDX(g, lo[0], j, k);
                    for (i = lo[0]; i < hi[0]; i++, c++)
                        un[c] = (u[c - 1] + u[c + 1] + u[c - g->sx] + u[c + g->sx] + u[c - g->sy] + u[c + g->sy] + u[c]) *
                                sixth;
                }
}

/* The interior box (cells whose neighbours are all interior) and the shell
 * around it as six slabs; the seven boxes partition the local grid. */
static int boxes(grid_t *g, int lo[7][3], int hi[7][3])
{
    int in_lo[3], in_hi[3], d, e, nbox = 0;
    for (d = 0; d < 3; d++) {
        in_lo[d] = g->n[d] < 1 ? g->n[d] : 1;
        in_hi[d] = g->n[d] - 1 > in_lo[d] ? g->n[d] - 1 : in_lo[d];
    }
    for (d = 0; d < 3; d++)
        lo[0][d] = in_lo[d], hi[0][d] = in_hi[d];
    nbox = 1;
    for (d = 0; d < 3; d++) {
        int side;
        for (side = 0; side < 2; side++) {
            for (e = 0; e < 3; e++) {
                if (e < d) { /* dimensions before d: interior range only */
                    lo[nbox][e] = in_lo[e];
                    hi[nbox][e] = in_hi[e];
                } else if (e > d) { /* after d: full range */
                    lo[nbox][e] = 0;
                    hi[nbox][e] = g->n[e];
                }
            }
            lo[nbox][d] = side ? in_hi[d] : 0;
            hi[nbox][d] = side ? g->n[d] : in_lo[d];
            nbox++;
        }
    }
    return nbox;
}

/* -c put: the faces go into the neighbours' slots of this iteration's parity. */
static void put_faces(grid_t *g, int variant)
{
    int f;
    region(variant, TOUCAN_SEND);
    for (f = 0; f < 6; f++) {
        g->rbuf[f] = g->wmem + g->parity * g->total + g->off[f];
        if (g->nb[f] != MPI_PROC_NULL) {
            face(g, f, g->sbuf[f], 1);
            MPI_Put(g->sbuf[f], g->count[f], MPI_DOUBLE, g->nb[f], g->parity * g->roff[f][1] + g->roff[f][0],
                    g->count[f], MPI_DOUBLE, g->win);
        }
    }
}

static void exchange_post(grid_t *g, MPI_Request *rq, int variant, int *nrq)
{
    int f, n = 0;
    if (g->put) {
        put_faces(g, variant);
        *nrq = 0;
        return;
    }
    region(variant, TOUCAN_RECEIVE);
    for (f = 0; f < 6; f++)
        if (g->nb[f] != MPI_PROC_NULL)
            MPI_Irecv(g->rbuf[f], g->count[f], MPI_DOUBLE, g->nb[f], f ^ 1, g->comm, &rq[n++]);
    region(variant, TOUCAN_SEND);
    for (f = 0; f < 6; f++)
        if (g->nb[f] != MPI_PROC_NULL) {
            face(g, f, g->sbuf[f], 1);
            MPI_Isend(g->sbuf[f], g->count[f], MPI_DOUBLE, g->nb[f], f, g->comm, &rq[n++]);
        }
    *nrq = n;
}

static void unpack_all(grid_t *g)
{
    int f;
    for (f = 0; f < 6; f++)
        if (g->nb[f] != MPI_PROC_NULL)
            face(g, f, g->rbuf[f], 0);
}

static void iterate(grid_t *g, int variant)
{
    MPI_Request rq[12];
    int nrq = 0, b, nbox, f;
    int lo[7][3], hi[7][3], all_lo[3] = {0, 0, 0};
    double *t;
    nbox = boxes(g, lo, hi);
    switch (variant) {
    case ORIGINAL:
    case TOUCAN:
        exchange_post(g, rq, variant, &nrq);
        region(variant, TOUCAN_COMPUTE);
        if (g->put) /* the fence completes the puts in place of the requests */
            MPI_Win_fence(0, g->win);
        else
            MPI_Waitall(nrq, rq, MPI_STATUSES_IGNORE);
        unpack_all(g);
        sweep(g, all_lo, g->n);
        region(variant, TOUCAN_END);
        break;
    case NOCOMM: /* the same memory traffic, no MPI */
        for (f = 0; f < 6; f++)
            if (g->nb[f] != MPI_PROC_NULL)
                face(g, f, g->sbuf[f], 1);
        unpack_all(g);
        sweep(g, all_lo, g->n);
        break;
    case OVERLAP:
        exchange_post(g, rq, variant, &nrq);
        sweep(g, lo[0], hi[0]);
        if (g->put) /* the fence completes the puts in place of the requests */
            MPI_Win_fence(0, g->win);
        else
            MPI_Waitall(nrq, rq, MPI_STATUSES_IGNORE);
        unpack_all(g);
        for (b = 1; b < nbox; b++)
            sweep(g, lo[b], hi[b]);
        break;
    }
    t = g->u, g->u = g->un, g->un = t;
    g->parity ^= 1;
}

int main(int argc, char **argv)
{
    int rank, size, variant = ORIGINAL, iters = 20, warm = 2, weak = 0, a, d;
    int gn[3] = {96, 96, 96}, ln = 0, dims[3] = {0, 0, 0}, periods[3] = {0, 0, 0}, coords[3], off[3];
    int64_t sums[2] = {0, 0}, tot[2];
    grid_t g;
    double *rown[6]; /* the receive buffers of the two-sided exchange (and of nocomm) */
    double t0, t;
    size_t cells, i;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    memset(&g, 0, sizeof g);
    g.block = 16;
    for (a = 1; a < argc; a++) {
        const char *o = argv[a], *v = a + 1 < argc ? argv[a + 1] : NULL;
        if (!v)
            die(rank, "jacobi3d: an option lacks its value");
        if (!strcmp(o, "-v") && (variant = parse_variant(v)) < 0)
            die(rank, "jacobi3d: -v original|toucan|nocomm|overlap");
        else if (!strcmp(o, "-g"))
            gn[0] = gn[1] = gn[2] = atoi(v);
        else if (!strcmp(o, "-G")) {
            if (sscanf(v, "%dx%dx%d", &gn[0], &gn[1], &gn[2]) != 3)
                die(rank, "jacobi3d: -G AxBxC");
        } else if (!strcmp(o, "-l"))
            ln = atoi(v), weak = 1;
        else if (!strcmp(o, "-i"))
            iters = atoi(v);
        else if (!strcmp(o, "-w"))
            warm = atoi(v);
        else if (!strcmp(o, "-b"))
            g.block = atoi(v);
        else if (!strcmp(o, "-c")) {
            if (strcmp(v, "put"))
                die(rank, "jacobi3d: -c put");
            g.put = 1;
        }
        else if (strcmp(o, "-v"))
            die(rank, "jacobi3d: unknown option (see the comment at the top of jacobi3d.c)");
        a++;
    }
    if (g.block < 1 || iters < 1 || warm < 0)
        die(rank, "jacobi3d: bad -b, -i or -w");
    MPI_Dims_create(size, 3, dims);
    MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, &g.comm);
    MPI_Cart_coords(g.comm, rank, 3, coords);
    for (d = 0; d < 3; d++) {
        if (weak)
            gn[d] = ln * dims[d];
        if (gn[d] < dims[d] || gn[d] < 1)
            die(rank, "jacobi3d: grid smaller than the process grid");
        /* block distribution, the first (gn % dims) ranks one cell more */
        g.n[d] = gn[d] / dims[d] + (coords[d] < gn[d] % dims[d]);
        off[d] = coords[d] * (gn[d] / dims[d]) + (coords[d] < gn[d] % dims[d] ? coords[d] : gn[d] % dims[d]);
        MPI_Cart_shift(g.comm, d, 1, &g.nb[2 * d], &g.nb[2 * d + 1]);
    }
    g.sx = g.n[0] + 2;
    g.sy = g.sx * (g.n[1] + 2);
    cells = (size_t) g.sy * (g.n[2] + 2);
    g.u = xmalloc(cells * sizeof(double));
    g.un = xmalloc(cells * sizeof(double));
    for (d = 0; d < 6; d++) {
        int e = d / 2;
        g.count[d] = (e == 0 ? 1 : g.n[0]) * (e == 1 ? 1 : g.n[1]) * (e == 2 ? 1 : g.n[2]);
        g.sbuf[d] = xmalloc(g.count[d] * sizeof(double));
        g.rbuf[d] = xmalloc(g.count[d] * sizeof(double));
        memset(g.rbuf[d], 0, g.count[d] * sizeof(double));
        rown[d] = g.rbuf[d];
    }
    if (g.put) {
        /* Receive slots in a window; each neighbour tells where its slot for my face is
         * (it sends its off and total for the face that points back at me). */
        for (d = 0; d < 6; d++)
            g.off[d] = g.total, g.total += g.count[d];
        MPI_Win_allocate(2 * g.total * sizeof(double), sizeof(double), MPI_INFO_NULL, g.comm, &g.wmem, &g.win);
        memset(g.wmem, 0, 2 * g.total * sizeof(double));
        for (d = 0; d < 6; d++) {
            MPI_Aint mine[2] = {g.off[d], g.total};
            MPI_Sendrecv(mine, 2, MPI_AINT, g.nb[d], d, g.roff[d], 2, MPI_AINT, g.nb[d], d ^ 1, g.comm,
                         MPI_STATUS_IGNORE);
        }
        MPI_Win_fence(MPI_MODE_NOPRECEDE, g.win);
    }
    /* Initial field from global coordinates; the domain's own boundary (ghost
     * cells with no neighbour) is 1 on the -x face and 0 elsewhere, in both
     * arrays, and never changes. */
    for (i = 0; i < cells; i++) {
        int x = (int) (i % g.sx) - 1, y = (int) (i / g.sx % (g.n[1] + 2)) - 1, z = (int) (i / g.sy) - 1;
        long gx = off[0] + x, gy = off[1] + y, gz = off[2] + z;
        double val = (double) ((gx * 7 + gy * 13 + gz * 17) % 101 + 101) / 101.0 - 1.0;
        if (gx < 0)
            val = 1.0;
        else if (gx >= gn[0] || gy < 0 || gy >= gn[1] || gz < 0 || gz >= gn[2])
            val = 0.0;
        g.u[i] = g.un[i] = val;
    }

    for (a = 0; a < warm; a++)
        iterate(&g, variant);
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (a = 0; a < iters; a++)
        iterate(&g, variant);
    t = elapsed_since(t0);

    /* Exact checksum: fixed-point sums (2^30 units), unweighted and weighted
     * by position, independent of the decomposition. */
    for (int z = 0; z < g.n[2]; z++)
        for (int y = 0; y < g.n[1]; y++)
            for (int x = 0; x < g.n[0]; x++) {
                int64_t q = (int64_t) (g.u[IDX(&g, x, y, z)] * 1073741824.0);
                long gx = off[0] + x, gy = off[1] + y, gz = off[2] + z;
                sums[0] += q;
                sums[1] += q * ((gx + 2 * gy + 3 * gz) % 7 + 1);
            }
    MPI_Reduce(sums, tot, 2, MPI_INT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("RESULT app=%s variant=%s ranks=%d dims=%dx%dx%d grid=%dx%dx%d iters=%d time=%.6f checksum=%lld:%lld\n",
               g.put ? "jacobi3d-put" : "jacobi3d", variant_names[variant], size, dims[0], dims[1], dims[2], gn[0], gn[1], gn[2], iters, t, (long long) tot[0],
               (long long) tot[1]);
        fflush(stdout); /* before MPI_Finalize: see FINALIZE_GRACE in run-overlap.py */
    }
    if (g.put) {
        MPI_Win_fence(MPI_MODE_NOSUCCEED, g.win);
        MPI_Win_free(&g.win);
    }
    for (d = 0; d < 6; d++) {
        free(g.sbuf[d]);
        free(rown[d]);
    }
    free(g.u);
    free(g.un);
    MPI_Comm_free(&g.comm);
    MPI_Finalize();
    return 0;
}
