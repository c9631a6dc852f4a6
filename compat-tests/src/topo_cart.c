/* Cartesian topologies: Dims_create, Cart_create on 2-D and 3-D grids (periodic, not periodic,
 * mixed), Topo_test, Cartdim_get, Cart_get, Cart_coords/Cart_rank round trips and periodic
 * wrap, Cart_shift, a halo exchange with Sendrecv along every dimension, Cart_sub rows,
 * columns and planes with an Allreduce in each, Cart_map, a grid smaller than the
 * communicator, Comm_dup keeping the topology, neighbourhood collectives on grids (including
 * periodic dimensions of size 1 and 2, where both neighbours are one process), and the error
 * classes of erroneous calls. */
#include "ct.h"

static int nb(int r)
{
    return r == MPI_PROC_NULL ? -1 : r;
}

/* "(a,b,c)" of n ints. */
static void fmt_ints(char *out, size_t len, const int *v, int n)
{
    size_t used = 0;
    int i;
    used += snprintf(out + used, len - used, "(");
    for (i = 0; i < n && used < len; i++)
        used += snprintf(out + used, len - used, i ? ",%d" : "%d", v[i]);
    if (used < len)
        snprintf(out + used, len - used, ")");
}

static void dims_cases(int rank, int size, int *errp)
{
    int d2[2] = {0, 0}, d3[3] = {0, 0, 0}, d4[4] = {0, 0, 0, 0}, f[3] = {0, 2, 0}, g[3] = {0, 0, 1};
    int cases[][2] = {{8, 3}, {12, 2}, {16, 3}, {24, 3}, {36, 3}, {100, 3}, {360, 3}, {720, 3}, {20, 4}, {7, 2}, {1, 3}};
    char buf[128];
    int i, k, rc;

    for (i = 0; i < (int) (sizeof cases / sizeof cases[0]); i++) {
        int d[4] = {0, 0, 0, 0};
        MPI_Dims_create(cases[i][0], cases[i][1], d);
        fmt_ints(buf, sizeof buf, d, cases[i][1]);
        if (rank == 0)
            ct_say(rank, "dims_create %d in %d -> %s", cases[i][0], cases[i][1], buf);
    }
    MPI_Dims_create(6, 3, f);
    CHECKP(f[0] == 3 && f[1] == 2 && f[2] == 1, "6 in 3 with dims[1]=2: %d %d %d", f[0], f[1], f[2]);
    MPI_Dims_create(16, 3, g);
    CHECKP(g[0] == 4 && g[1] == 4 && g[2] == 1, "16 in 3 with dims[2]=1: %d %d %d", g[0], g[1], g[2]);
    MPI_Dims_create(size, 2, d2);
    MPI_Dims_create(size, 3, d3);
    MPI_Dims_create(size, 4, d4);
    CHECKP(d2[0] * d2[1] == size && d2[0] >= d2[1], "dims of %d in 2: %d %d", size, d2[0], d2[1]);
    for (k = 0; k < 2; k++)
        CHECKP(d3[k] >= d3[k + 1], "dims of %d in 3 not non-increasing", size);
    fmt_ints(buf, sizeof buf, d4, 4);
    if (rank == 0)
        ct_say(rank, "dims_create world in 4 -> %s", buf);
    /* fully fixed and matching: unchanged */
    d2[0] = size;
    d2[1] = 1;
    rc = MPI_Dims_create(size, 2, d2);
    CHECKP(rc == MPI_SUCCESS && d2[0] == size && d2[1] == 1, "fixed dims changed");
}

/* Everything about one grid: queries, shifts, halo exchange, sub-grids, neighbourhood
 * collectives. `name` labels the output. */
static void grid(int rank, int size, int nd, const int *period, const char *name, int *errp)
{
    int dims[3] = {0, 0, 0}, per[3], coords[3], c2[3], d2[3], p2[3];
    int i, k, r, t, n, src, dst, me;
    char buf[128], pb[64];
    MPI_Comm cart, sub, dup;

    MPI_Dims_create(size, nd, dims);
    for (i = 0; i < nd; i++)
        per[i] = period[i];
    MPI_Cart_create(MPI_COMM_WORLD, nd, dims, per, 0, &cart);
    CHECKP(cart != MPI_COMM_NULL, "%s: every rank is in a full grid", name);
    MPI_Comm_rank(cart, &me);
    CHECKP(me == rank, "%s: rank kept (reorder 0): %d", name, me);
    MPI_Topo_test(cart, &t);
    CHECKP(t == MPI_CART, "%s: Topo_test %d", name, t);
    MPI_Cartdim_get(cart, &n);
    CHECKP(n == nd, "%s: Cartdim_get %d", name, n);
    MPI_Cart_get(cart, nd, d2, p2, coords);
    for (i = 0; i < nd; i++) {
        CHECKP(d2[i] == dims[i], "%s: Cart_get dims[%d] %d", name, i, d2[i]);
        CHECKP(!p2[i] == !per[i], "%s: Cart_get periods[%d] %d", name, i, p2[i]);
    }
    MPI_Cart_coords(cart, rank, nd, c2);
    for (i = 0; i < nd; i++)
        CHECKP(c2[i] == coords[i], "%s: Cart_coords differs from Cart_get", name);
    MPI_Cart_rank(cart, coords, &r);
    CHECKP(r == rank, "%s: Cart_rank(coords) %d", name, r);
    fmt_ints(buf, sizeof buf, coords, nd);
    fmt_ints(pb, sizeof pb, dims, nd);
    ct_say(rank, "%s dims %s coords %s", name, pb, buf);

    /* every rank's coordinates round-trip */
    for (k = 0; k < size; k++) {
        MPI_Cart_coords(cart, k, nd, c2);
        MPI_Cart_rank(cart, c2, &r);
        CHECKP(r == k, "%s: rank %d -> coords -> %d", name, k, r);
    }
    /* periodic wrap: one step below 0 and one full period above */
    for (i = 0; i < nd; i++) {
        if (!per[i])
            continue;
        memcpy(c2, coords, sizeof c2);
        c2[i] = coords[i] - dims[i];
        MPI_Cart_rank(cart, c2, &r);
        CHECKP(r == rank, "%s: wrap by -dims[%d] gives %d", name, i, r);
        c2[i] = coords[i] + 3 * dims[i];
        MPI_Cart_rank(cart, c2, &r);
        CHECKP(r == rank, "%s: wrap by 3*dims[%d] gives %d", name, i, r);
    }

    /* shifts and a halo exchange along every dimension, both directions */
    for (i = 0; i < nd; i++) {
        int sendv[2], recvv[2] = {-7, -7}, s2, d2b;
        MPI_Cart_shift(cart, i, 1, &src, &dst);
        MPI_Cart_shift(cart, i, -1, &s2, &d2b);
        CHECKP(s2 == dst && d2b == src, "%s: shift by -1 is the reverse of +1 in dim %d", name, i);
        ct_say(rank, "%s shift dim %d: source %d dest %d", name, i, nb(src), nb(dst));
        /* the expected neighbours, from coordinates */
        memcpy(c2, coords, sizeof c2);
        c2[i] = coords[i] + 1;
        if (c2[i] >= dims[i] && !per[i])
            r = MPI_PROC_NULL;
        else
            MPI_Cart_rank(cart, c2, &r);
        CHECKP(r == dst, "%s: dest in dim %d: %d, expected %d", name, i, nb(dst), nb(r));
        sendv[0] = 1000 * rank + 10 * i;     /* goes up (to dst) */
        sendv[1] = 1000 * rank + 10 * i + 1; /* goes down (to src) */
        MPI_Sendrecv(&sendv[0], 1, MPI_INT, dst, 20 + i, &recvv[0], 1, MPI_INT, src, 20 + i, cart, MPI_STATUS_IGNORE);
        MPI_Sendrecv(&sendv[1], 1, MPI_INT, src, 40 + i, &recvv[1], 1, MPI_INT, dst, 40 + i, cart, MPI_STATUS_IGNORE);
        CHECKP(recvv[0] == (src == MPI_PROC_NULL ? -7 : 1000 * src + 10 * i), "%s: halo from below in dim %d: %d", name, i,
               recvv[0]);
        CHECKP(recvv[1] == (dst == MPI_PROC_NULL ? -7 : 1000 * dst + 10 * i + 1), "%s: halo from above in dim %d: %d", name,
               i, recvv[1]);
        /* a longer shift */
        MPI_Cart_shift(cart, i, 2, &src, &dst);
        ct_say(rank, "%s shift dim %d by 2: source %d dest %d", name, i, nb(src), nb(dst));
    }

    /* sub-grids keeping one dimension (rows, columns, ...) and, in 3-D, all but one (planes) */
    for (k = 0; k < (nd > 2 ? 2 * nd : nd); k++) {
        int remain[3] = {0, 0, 0}, sdims[3], sper[3], scoords[3], ssize, srank, sum, want = 0, nsub;
        if (k < nd) {
            remain[k] = 1;
        } else {
            for (i = 0; i < nd; i++)
                remain[i] = (i != k - nd);
        }
        MPI_Cart_sub(cart, remain, &sub);
        MPI_Comm_size(sub, &ssize);
        MPI_Comm_rank(sub, &srank);
        MPI_Cartdim_get(sub, &nsub);
        MPI_Cart_get(sub, nsub, sdims, sper, scoords);
        n = 0;
        for (i = 0; i < nd; i++) {
            if (!remain[i])
                continue;
            CHECKP(sdims[n] == dims[i] && !sper[n] == !per[i] && scoords[n] == coords[i], "%s: sub %d dim %d", name, k, i);
            n++;
        }
        CHECKP(nsub == n, "%s: sub %d has %d dims, expected %d", name, k, nsub, n);
        /* members: all ranks agreeing with me on the dropped coordinates */
        for (r = 0; r < size; r++) {
            int same = 1;
            MPI_Cart_coords(cart, r, nd, c2);
            for (i = 0; i < nd; i++)
                if (!remain[i] && c2[i] != coords[i])
                    same = 0;
            want += same ? r : 0;
        }
        MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, sub);
        CHECKP(sum == want, "%s: sub %d: sum of world ranks %d, expected %d", name, k, sum, want);
        fmt_ints(buf, sizeof buf, remain, nd);
        ct_say(rank, "%s sub %s: size %d rank %d ranksum %d", name, buf, ssize, srank, sum);
        MPI_Comm_free(&sub);
    }

    /* neighbourhood collectives: block s of a sender lands in block s^1 of the receiver. A
     * process that is its own neighbour in two or more periodic dimensions of size 1 has more
     * than two edges to itself; MPICH 4.0.2 pairs those in reverse order instead, so their
     * values are not checked (printed as *). */
    {
        int sb[6], rb[6], ga[6], peer[6], many[6], want, j, m;
        size_t used = 0;
        MPI_Request req;
        for (j = 0; j < 2 * nd; j++) {
            sb[j] = 100 * rank + j;
            rb[j] = ga[j] = -5;
            MPI_Cart_shift(cart, j / 2, 1, &src, &dst);
            peer[j] = (j % 2) ? dst : src;
        }
        for (j = 0; j < 2 * nd; j++)
            for (m = 0, many[j] = 0; m < 2 * nd; m++)
                many[j] += peer[m] == peer[j] && peer[j] != MPI_PROC_NULL;
        MPI_Neighbor_alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, cart);
        MPI_Neighbor_allgather(&rank, 1, MPI_INT, ga, 1, MPI_INT, cart);
        used += snprintf(buf + used, sizeof buf - used, "(");
        for (j = 0; j < 2 * nd; j++) {
            r = peer[j];
            want = r == MPI_PROC_NULL ? -5 : 100 * r + (j ^ 1);
            CHECKP(many[j] > 2 || rb[j] == want, "%s: neighbor_alltoall block %d: %d, expected %d", name, j, rb[j], want);
            CHECKP(ga[j] == (r == MPI_PROC_NULL ? -5 : r), "%s: neighbor_allgather block %d: %d", name, j, ga[j]);
            if (many[j] > 2)
                used += snprintf(buf + used, sizeof buf - used, j ? ",*" : "*");
            else
                used += snprintf(buf + used, sizeof buf - used, j ? ",%d" : "%d", rb[j]);
        }
        snprintf(buf + used, sizeof buf - used, ")");
        ct_say(rank, "%s neighbor_alltoall %s", name, buf);
        for (j = 0; j < 2 * nd; j++)
            rb[j] = -5;
        MPI_Ineighbor_alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, cart, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        for (j = 0; j < 2 * nd; j++) {
            r = peer[j];
            want = r == MPI_PROC_NULL ? -5 : 100 * r + (j ^ 1);
            CHECKP(many[j] > 2 || rb[j] == want, "%s: ineighbor_alltoall block %d: %d, expected %d", name, j, rb[j], want);
        }
    }

    /* a duplicate keeps the topology */
    MPI_Comm_dup(cart, &dup);
    MPI_Topo_test(dup, &t);
    MPI_Cartdim_get(dup, &n);
    CHECKP(t == MPI_CART && n == nd, "%s: dup lost the topology (%d, %d dims)", name, t, n);
    MPI_Cart_shift(dup, 0, 1, &src, &dst);
    MPI_Sendrecv(&rank, 1, MPI_INT, dst, 3, &r, 1, MPI_INT, src, 3, dup, MPI_STATUS_IGNORE);
    CHECKP(src == MPI_PROC_NULL || r == src, "%s: sendrecv on the dup", name);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&cart);
}

static void smaller_grid(int rank, int size, int *errp)
{
    int dims[1], per[1] = {0}, r, t, n;
    MPI_Comm cart;
    if (size < 2) {
        ct_say(rank, "smaller grid: skipped (one rank)");
        return;
    }
    dims[0] = size - 1;
    MPI_Cart_map(MPI_COMM_WORLD, 1, dims, per, &r);
    ct_say(rank, "cart_map of %d: %s", size - 1, r == MPI_UNDEFINED ? "undefined" : (r == rank ? "same rank" : "other"));
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, per, 1, &cart);
    if (rank == size - 1) {
        CHECKP(cart == MPI_COMM_NULL, "the last rank is outside the grid");
        ct_say(rank, "smaller grid: not a member");
        return;
    }
    CHECKP(cart != MPI_COMM_NULL, "rank in the grid got MPI_COMM_NULL");
    MPI_Comm_size(cart, &n);
    MPI_Topo_test(cart, &t);
    CHECKP(n == size - 1 && t == MPI_CART, "smaller grid: size %d topo %d", n, t);
    MPI_Allreduce(&rank, &r, 1, MPI_INT, MPI_SUM, cart);
    ct_say(rank, "smaller grid: size %d ranksum %d", n, r);
    MPI_Comm_free(&cart);
}

static void errors(int rank, int size, int *errp)
{
    int dims[2] = {size, 1}, per[2] = {0, 1}, c[2], r, s, d, t, rc;
    MPI_Comm cart, big;

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Topo_test(MPI_COMM_WORLD, &t);
    CHECKP(t == MPI_UNDEFINED, "Topo_test of world: %d", t);
    rc = MPI_Cartdim_get(MPI_COMM_WORLD, &t);
    CHECKP(ct_class(rc) == MPI_ERR_TOPOLOGY, "Cartdim_get on world: class %d", ct_class(rc));
    rc = MPI_Cart_shift(MPI_COMM_WORLD, 0, 1, &s, &d);
    CHECKP(ct_class(rc) == MPI_ERR_TOPOLOGY, "Cart_shift on world: class %d", ct_class(rc));
    rc = MPI_Neighbor_allgather(&rank, 1, MPI_INT, &r, 1, MPI_INT, MPI_COMM_WORLD);
    CHECKP(ct_class(rc) == MPI_ERR_TOPOLOGY, "Neighbor_allgather on world: class %d", ct_class(rc));
    c[0] = 3;
    c[1] = 0;
    rc = MPI_Dims_create(4, 2, c);
    CHECKP(ct_class(rc) == MPI_ERR_DIMS, "Dims_create(4) with dims[0]=3: class %d", ct_class(rc));
    c[0] = -1;
    rc = MPI_Dims_create(4, 2, c);
    CHECKP(ct_class(rc) == MPI_ERR_DIMS, "Dims_create with a negative dim: class %d", ct_class(rc));
    dims[0] = size + 1;
    rc = MPI_Cart_create(MPI_COMM_WORLD, 2, dims, per, 0, &big);
    CHECKP(ct_class(rc) == MPI_ERR_ARG, "Cart_create larger than world: class %d", ct_class(rc));
    dims[0] = size;

    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, per, 0, &cart);
    MPI_Comm_set_errhandler(cart, MPI_ERRORS_RETURN);
    c[0] = size;
    c[1] = 0;
    rc = MPI_Cart_rank(cart, c, &r);
    CHECKP(ct_class(rc) == MPI_ERR_ARG, "Cart_rank out of a non-periodic dim: class %d", ct_class(rc));
    c[0] = 0;
    c[1] = -1;
    rc = MPI_Cart_rank(cart, c, &r);
    CHECKP(rc == MPI_SUCCESS && r == 0, "Cart_rank wraps a periodic dim of size 1: rc %d rank %d", rc, r);
    rc = MPI_Cart_coords(cart, size, 2, c);
    CHECKP(ct_class(rc) == MPI_ERR_RANK, "Cart_coords of rank size: class %d", ct_class(rc));
    rc = MPI_Cart_coords(cart, 0, 1, c);
    CHECKP(ct_class(rc) == MPI_ERR_ARG, "Cart_coords with maxdims 1: class %d", ct_class(rc));
    rc = MPI_Cart_shift(cart, 2, 1, &s, &d);
    CHECKP(ct_class(rc) == MPI_ERR_ARG, "Cart_shift in direction 2 of 2: class %d", ct_class(rc));
    rc = MPI_Graphdims_get(cart, &s, &d);
    CHECKP(ct_class(rc) == MPI_ERR_TOPOLOGY, "Graphdims_get on a grid: class %d", ct_class(rc));
    rc = MPI_Dist_graph_neighbors_count(cart, &s, &d, &t);
    CHECKP(ct_class(rc) == MPI_ERR_TOPOLOGY, "Dist_graph_neighbors_count on a grid: class %d", ct_class(rc));
    /* the size-1 periodic dimension is its own neighbour */
    MPI_Cart_shift(cart, 1, 5, &s, &d);
    CHECKP(s == rank && d == rank, "shift in a periodic dim of size 1: %d %d", s, d);
    MPI_Comm_free(&cart);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0;
    int np2[2] = {0, 0}, p2[2] = {1, 1};
    int p3[3] = {1, 1, 1}, m3[3] = {1, 0, 1};

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    dims_cases(rank, size, &errs);
    grid(rank, size, 2, np2, "2d-open", &errs);
    grid(rank, size, 2, p2, "2d-torus", &errs);
    grid(rank, size, 3, p3, "3d-torus", &errs);
    grid(rank, size, 3, m3, "3d-mixed", &errs);
    smaller_grid(rank, size, &errs);
    errors(rank, size, &errs);

    return ct_finish(rank, errs);
}
