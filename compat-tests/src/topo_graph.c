/* Graph and distributed-graph topologies: Graph_create (ring plus star, with repeated edges
 * and self-loops at small sizes), Graphdims_get, Graph_get, Graph_neighbors(_count),
 * Graph_map, a graph smaller than the communicator; Dist_graph_create_adjacent (weighted and
 * MPI_UNWEIGHTED) and Dist_graph_create (edges given by other processes), Dist_graph_neighbors
 * (_count), Topo_test, Comm_dup keeping the topology; the neighbourhood collectives
 * Neighbor_allgather(v), Neighbor_alltoall(v,w) and their nonblocking forms on both kinds,
 * where the k-th edge from a process pairs with the k-th edge to it; error classes. */
#include "ct.h"

/* Neighbours of node i of the world-wide graph: a ring, and a star around node 0. */
static int graph_nbrs(int i, int n, int *out)
{
    int k = 0, j;
    out[k++] = (i + 1) % n;
    out[k++] = (i - 1 + n) % n;
    if (i != 0) {
        out[k++] = 0;
    } else {
        for (j = 1; j < n; j++)
            out[k++] = j;
    }
    return k;
}

/* Out-neighbours of node i of the adjacent distributed graph. */
static int dist_dests(int i, int n, int *out)
{
    out[0] = (i + 1) % n;
    out[1] = (i - 2 + 2 * n) % n;
    return 2;
}

static int dist_sources(int i, int n, int *out)
{
    out[0] = (i - 1 + n) % n;
    out[1] = (i + 2) % n;
    return 2;
}

/* Index of the block that `from` sends to the process whose i-th in-edge is this one: the
 * k-th edge to `me` in from's out-list, where k counts earlier in-edges from `from`. */
static int pair_block(const int *in, int i, int me, const int *from_out, int nout)
{
    int k = 0, j;
    for (j = 0; j < i; j++)
        k += in[j] == in[i];
    for (j = 0; j < nout; j++)
        if (from_out[j] == me && k-- == 0)
            return j;
    return -1;
}

static void fmt_ints(char *out, size_t len, const int *v, int n)
{
    size_t used = 0;
    int i;
    used += snprintf(out + used, len - used, "[");
    for (i = 0; i < n && used < len; i++)
        used += snprintf(out + used, len - used, i ? " %d" : "%d", v[i]);
    if (used < len)
        snprintf(out + used, len - used, "]");
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *) a, y = *(const int *) b;
    return (x > y) - (x < y);
}

/* Whether in[i]'s source occurs only once in in[0..n): then exactly one edge joins the two
 * processes and the block's value does not depend on how repeated edges pair up (MPICH 4.0.2
 * pairs them in reverse order, the standard in order). */
static int single(const int *in, int n, int i)
{
    int j, k = 0;
    for (j = 0; j < n; j++)
        k += in[j] == in[i];
    return k == 1;
}

/* Runs every neighbourhood collective on `comm`, whose in-neighbours of this rank are
 * in[0..nin) and out-neighbours out[0..nout); outs_of(s, n, buf) gives s's out-list. Counts
 * and datatypes depend only on the pair of processes, values also on the block. */
static void neighbour_colls(int rank, int size, MPI_Comm comm, const char *name, const int *in, int nin, const int *out, int nout,
                            int (*outs_of)(int, int, int *), int *errp)
{
    int *sb = ct_malloc(sizeof(int) * 4 * (nout + 1)), *rb = ct_malloc(sizeof(int) * 4 * (nin + 1));
    int *sc = ct_malloc(sizeof(int) * (nout + 1)), *sd = ct_malloc(sizeof(int) * (nout + 1));
    int *rc = ct_malloc(sizeof(int) * (nin + 1)), *rd = ct_malloc(sizeof(int) * (nin + 1));
    int *fo = ct_malloc(sizeof(int) * (size + 3)), *pb = ct_malloc(sizeof(int) * (nin + 1));
    int *gb = ct_malloc(sizeof(int) * 4 * (nin + 1)), *vb = ct_malloc(sizeof(int) * 4 * (nin + 1));
    MPI_Aint *swd = ct_malloc(sizeof(MPI_Aint) * (nout + 1)), *rwd = ct_malloc(sizeof(MPI_Aint) * (nin + 1));
    MPI_Datatype *swt = ct_malloc(sizeof(MPI_Datatype) * (nout + 1)), *rwt = ct_malloc(sizeof(MPI_Datatype) * (nin + 1));
    char *swb = ct_malloc(16 * (nout + 1)), *rwb = ct_malloc(16 * (nin + 1));
    MPI_Request rq[3];
    int i, j, e, s, nfo, mine[3], sum = 0;
    size_t used = 0;
    char buf[512];

    /* the block each single-edge in-neighbour sends this rank, -1 for repeated edges */
    for (i = 0; i < nin; i++) {
        nfo = outs_of(in[i], size, fo);
        pb[i] = single(in, nin, i) ? pair_block(in, i, rank, fo, nfo) : -1;
    }

    /* allgather: every in-neighbour's rank */
    for (i = 0; i < nin; i++)
        rb[i] = -1;
    MPI_Neighbor_allgather(&rank, 1, MPI_INT, rb, 1, MPI_INT, comm);
    for (i = 0; i < nin; i++)
        CHECKP(rb[i] == in[i], "%s: allgather block %d: %d, expected %d", name, i, rb[i], in[i]);

    /* allgatherv: rank s sends s%3+1 values 10*s+e, into gapped slots */
    for (e = 0; e < 3; e++)
        mine[e] = 10 * rank + e;
    for (i = 0, e = 0; i < nin; i++) {
        rc[i] = in[i] % 3 + 1;
        rd[i] = e;
        e += rc[i] + 1;
    }
    for (i = 0; i < 4 * (nin + 1); i++)
        gb[i] = -1;
    MPI_Neighbor_allgatherv(mine, rank % 3 + 1, MPI_INT, gb, rc, rd, MPI_INT, comm);
    for (i = 0; i < nin; i++) {
        for (e = 0; e < rc[i]; e++)
            CHECKP(gb[rd[i] + e] == 10 * in[i] + e, "%s: allgatherv block %d elem %d: %d", name, i, e, gb[rd[i] + e]);
        CHECKP(gb[rd[i] + rc[i]] == -1, "%s: allgatherv wrote past block %d", name, i);
    }

    /* alltoall: block j of s is 1000*s + j */
    for (j = 0; j < nout; j++)
        sb[j] = 1000 * rank + j;
    for (i = 0; i < nin; i++)
        rb[i] = -1;
    MPI_Neighbor_alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, comm);
    used += snprintf(buf + used, sizeof buf - used, "[");
    for (i = 0; i < nin; i++) {
        CHECKP(rb[i] / 1000 == in[i], "%s: alltoall block %d: %d, from %d", name, i, rb[i], in[i]);
        if (pb[i] >= 0) {
            CHECKP(rb[i] == 1000 * in[i] + pb[i], "%s: alltoall block %d: %d, expected %d", name, i, rb[i], 1000 * in[i] + pb[i]);
            sum += rb[i];
        }
        if (used < sizeof buf) {
            if (pb[i] >= 0)
                used += snprintf(buf + used, sizeof buf - used, i ? " %d" : "%d", rb[i]);
            else
                used += snprintf(buf + used, sizeof buf - used, i ? " %d:*" : "%d:*", in[i]);
        }
    }
    if (used < sizeof buf)
        snprintf(buf + used, sizeof buf - used, "]");
    ct_say(rank, "%s alltoall %s", name, buf);

    /* alltoallv: (sender + receiver) % 3 values 1000*sender + 10*block + e */
    for (j = 0, e = 0; j < nout; j++) {
        sc[j] = (rank + out[j]) % 3;
        sd[j] = e;
        for (s = 0; s < sc[j]; s++)
            sb[e + s] = 1000 * rank + 10 * j + s;
        e += sc[j];
    }
    for (i = 0, e = 0; i < nin; i++) {
        rc[i] = (in[i] + rank) % 3;
        rd[i] = e;
        e += rc[i] + 1;
    }
    for (i = 0; i < 4 * (nin + 1); i++)
        vb[i] = -1;
    MPI_Neighbor_alltoallv(sb, sc, sd, MPI_INT, vb, rc, rd, MPI_INT, comm);
    for (i = 0; i < nin; i++) {
        for (e = 0; e < rc[i]; e++)
            CHECKP(pb[i] < 0 || vb[rd[i] + e] == 1000 * in[i] + 10 * pb[i] + e, "%s: alltoallv block %d elem %d: %d", name, i, e,
                   vb[rd[i] + e]);
        CHECKP(vb[rd[i] + rc[i]] == -1, "%s: alltoallv wrote past block %d", name, i);
    }

    /* alltoallw: 2 ints or 1 double by the parity of sender + receiver, at byte offsets 16*j */
    for (j = 0; j < nout; j++) {
        int dbl = (rank + out[j]) % 2;
        swd[j] = 16 * j;
        swt[j] = dbl ? MPI_DOUBLE : MPI_INT;
        sc[j] = dbl ? 1 : 2;
        if (dbl) {
            double d = rank + j / 8.0;
            memcpy(swb + 16 * j, &d, sizeof d);
        } else {
            int v[2] = {rank, j};
            memcpy(swb + 16 * j, v, sizeof v);
        }
    }
    for (i = 0; i < nin; i++) {
        int dbl = (in[i] + rank) % 2;
        rwd[i] = 16 * i;
        rwt[i] = dbl ? MPI_DOUBLE : MPI_INT;
        rc[i] = dbl ? 1 : 2;
    }
    memset(rwb, 0xff, 16 * (nin + 1));
    MPI_Neighbor_alltoallw(swb, sc, swd, swt, rwb, rc, rwd, rwt, comm);
    for (i = 0; i < nin; i++) {
        if (pb[i] < 0)
            continue;
        if ((in[i] + rank) % 2) {
            double d;
            memcpy(&d, rwb + 16 * i, sizeof d);
            CHECKP(d == in[i] + pb[i] / 8.0, "%s: alltoallw block %d: %g", name, i, d);
        } else {
            int v[2];
            memcpy(v, rwb + 16 * i, sizeof v);
            CHECKP(v[0] == in[i] && v[1] == pb[i], "%s: alltoallw block %d: %d %d", name, i, v[0], v[1]);
        }
    }

    /* nonblocking: three at once on the same communicator, completed in reverse order */
    for (i = 0; i < 4 * (nin + 1); i++)
        rb[i] = gb[i] = -1;
    for (j = 0; j < nout; j++)
        sb[j] = 1000 * rank + j;
    memset(rwb, 0xff, 16 * (nin + 1));
    MPI_Ineighbor_alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, comm, &rq[0]);
    MPI_Ineighbor_allgather(&rank, 1, MPI_INT, gb, 1, MPI_INT, comm, &rq[1]);
    MPI_Ineighbor_alltoallw(swb, sc, swd, swt, rwb, rc, rwd, rwt, comm, &rq[2]);
    MPI_Wait(&rq[2], MPI_STATUS_IGNORE);
    MPI_Wait(&rq[1], MPI_STATUS_IGNORE);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    for (i = 0; i < nin; i++) {
        CHECKP(gb[i] == in[i], "%s: iallgather block %d: %d", name, i, gb[i]);
        if (pb[i] < 0)
            continue;
        CHECKP(rb[i] == 1000 * in[i] + pb[i], "%s: ialltoall block %d: %d", name, i, rb[i]);
        if ((in[i] + rank) % 2 == 0) {
            int v[2];
            memcpy(v, rwb + 16 * i, sizeof v);
            CHECKP(v[0] == in[i] && v[1] == pb[i], "%s: ialltoallw block %d: %d %d", name, i, v[0], v[1]);
        }
    }
    /* and the v forms */
    for (i = 0; i < nin; i++) {
        rc[i] = in[i] % 3 + 1;
        rd[i] = 4 * i;
    }
    for (i = 0; i < 4 * (nin + 1); i++)
        gb[i] = -1;
    MPI_Ineighbor_allgatherv(mine, rank % 3 + 1, MPI_INT, gb, rc, rd, MPI_INT, comm, &rq[0]);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    for (i = 0; i < nin; i++)
        CHECKP(gb[4 * i] == 10 * in[i] && gb[4 * i + rc[i] - 1] == 10 * in[i] + rc[i] - 1, "%s: iallgatherv block %d", name, i);
    for (j = 0; j < nout; j++) {
        sc[j] = 1;
        sd[j] = nout - 1 - j;
        sb[j] = 1000 * rank + j;
    }
    for (i = 0; i < nin; i++) {
        rc[i] = 1;
        rd[i] = nin - 1 - i;
        rb[i] = -1;
    }
    MPI_Ineighbor_alltoallv(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, comm, &rq[0]);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    for (i = 0; i < nin; i++) {
        if (pb[i] < 0)
            continue;
        /* the sender's block j sits at displacement nout_s-1-j, holding 1000*s + nout_s-1-j */
        nfo = outs_of(in[i], size, fo);
        CHECKP(rb[nin - 1 - i] == 1000 * in[i] + (nfo - 1 - pb[i]), "%s: ialltoallv block %d: %d", name, i, rb[nin - 1 - i]);
    }

    MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_INT, MPI_SUM, comm);
    if (rank == 0)
        ct_say(rank, "%s alltoall total of single-edge blocks %d", name, sum);
    free(sb), free(rb), free(sc), free(sd), free(rc), free(rd), free(fo), free(pb), free(gb), free(vb);
    free(swd), free(rwd), free(swt), free(rwt), free(swb), free(rwb);
}

static void graph_part(int rank, int size, int *errp)
{
    int *index = ct_malloc(sizeof(int) * size), *edges = ct_malloc(sizeof(int) * 4 * size);
    int *gi = ct_malloc(sizeof(int) * size), *ge = ct_malloc(sizeof(int) * 4 * size);
    int *mine = ct_malloc(sizeof(int) * (size + 3)), *nb = ct_malloc(sizeof(int) * (size + 3));
    int *want = ct_malloc(sizeof(int) * (size + 3));
    int i, k, ne = 0, nn, nedges, cnt, t, r, nmine;
    char buf[1024];
    MPI_Comm g, dup;

    for (i = 0; i < size; i++) {
        ne += graph_nbrs(i, size, edges + ne);
        index[i] = ne;
    }
    MPI_Graph_create(MPI_COMM_WORLD, size, index, edges, 0, &g);
    MPI_Topo_test(g, &t);
    CHECKP(t == MPI_GRAPH, "Topo_test of a graph: %d", t);
    MPI_Graphdims_get(g, &nn, &nedges);
    CHECKP(nn == size && nedges == ne, "Graphdims_get: %d nodes %d edges", nn, nedges);
    MPI_Graph_get(g, size, ne, gi, ge);
    for (i = 0; i < size; i++)
        CHECKP(gi[i] == index[i], "Graph_get index[%d] %d", i, gi[i]);
    for (i = 0; i < ne; i++)
        CHECKP(ge[i] == edges[i], "Graph_get edges[%d] %d", i, ge[i]);
    for (r = 0; r < size; r++) {
        k = graph_nbrs(r, size, want);
        MPI_Graph_neighbors_count(g, r, &cnt);
        CHECKP(cnt == k, "Graph_neighbors_count(%d) %d, expected %d", r, cnt, k);
        if (cnt != k)
            continue;
        MPI_Graph_neighbors(g, r, cnt, nb);
        for (i = 0; i < cnt; i++)
            CHECKP(nb[i] == want[i], "Graph_neighbors(%d)[%d] %d", r, i, nb[i]);
    }
    nmine = graph_nbrs(rank, size, mine);
    fmt_ints(buf, sizeof buf, mine, nmine < 40 ? nmine : 40);
    ct_say(rank, "graph: %d nodes %d edges, my neighbours %s", nn, nedges, buf);
    neighbour_colls(rank, size, g, "graph", mine, nmine, mine, nmine, graph_nbrs, errp);

    MPI_Comm_dup(g, &dup);
    MPI_Topo_test(dup, &t);
    MPI_Graph_neighbors_count(dup, rank, &cnt);
    CHECKP(t == MPI_GRAPH && cnt == nmine, "dup of a graph: topo %d, %d neighbours", t, cnt);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&g);

    /* a graph over all but the last rank: a path 0 - 1 - ... - (n-2) */
    if (size >= 2) {
        int n = size - 1;
        ne = 0;
        for (i = 0; i < n; i++) {
            if (i > 0)
                edges[ne++] = i - 1;
            if (i < n - 1)
                edges[ne++] = i + 1;
            index[i] = ne;
        }
        MPI_Graph_map(MPI_COMM_WORLD, n, index, edges, &r);
        CHECKP(r == (rank < n ? rank : MPI_UNDEFINED), "Graph_map: %d", r);
        MPI_Graph_create(MPI_COMM_WORLD, n, index, edges, 1, &g);
        if (rank == n) {
            CHECKP(g == MPI_COMM_NULL, "the last rank is outside the graph");
            ct_say(rank, "path graph: not a member");
        } else {
            MPI_Graph_neighbors_count(g, rank, &cnt);
            MPI_Allreduce(&cnt, &k, 1, MPI_INT, MPI_SUM, g);
            ct_say(rank, "path graph: %d neighbours, %d edge ends in all", cnt, k);
            MPI_Comm_free(&g);
        }
    }
    free(index), free(edges), free(gi), free(ge), free(mine), free(nb), free(want);
}

/* The edges of the general distributed graph, as (source, dest, weight) triples contributed
 * by rank `who`; returns how many. */
static int contributed(int who, int n, int *src, int *deg, int *dst, int *w, int *nsrc)
{
    int k = 0, m = 0;
    src[m] = who;
    deg[m] = 2;
    dst[k] = (who + 1) % n;
    w[k++] = who + 1;
    dst[k] = (who + 3) % n;
    w[k++] = who + 3;
    m++;
    if (who == 0 && n >= 2) {
        src[m] = n - 1;
        deg[m] = 1;
        dst[k] = 1;
        w[k++] = 77;
        m++;
    }
    *nsrc = m;
    return k;
}

static void dist_part(int rank, int size, int *errp)
{
    int src[2], dst[2], sw[2], dw[2], i, j, k, indeg, outdeg, weighted, t;
    int qs[4], qd[4], qsw[4], qdw[4];
    char b1[256], b2[256];
    MPI_Comm dg, du, dup;

    dist_sources(rank, size, src);
    dist_dests(rank, size, dst);
    for (i = 0; i < 2; i++) {
        sw[i] = 10 * src[i] + rank;
        dw[i] = 10 * rank + dst[i];
    }
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, src, sw, 2, dst, dw, MPI_INFO_NULL, 0, &dg);
    MPI_Topo_test(dg, &t);
    CHECKP(t == MPI_DIST_GRAPH, "Topo_test of a distributed graph: %d", t);
    MPI_Dist_graph_neighbors_count(dg, &indeg, &outdeg, &weighted);
    CHECKP(indeg == 2 && outdeg == 2 && weighted, "adjacent: in %d out %d weighted %d", indeg, outdeg, weighted);
    MPI_Dist_graph_neighbors(dg, 2, qs, qsw, 2, qd, qdw);
    for (i = 0; i < 2; i++) {
        CHECKP(qs[i] == src[i] && qsw[i] == sw[i], "adjacent source %d: %d (weight %d)", i, qs[i], qsw[i]);
        CHECKP(qd[i] == dst[i] && qdw[i] == dw[i], "adjacent dest %d: %d (weight %d)", i, qd[i], qdw[i]);
    }
    ct_say(rank, "adjacent: sources %d(w%d) %d(w%d) dests %d(w%d) %d(w%d)", qs[0], qsw[0], qs[1], qsw[1], qd[0], qdw[0], qd[1],
           qdw[1]);
    neighbour_colls(rank, size, dg, "adjacent", src, 2, dst, 2, dist_dests, errp);
    MPI_Comm_dup(dg, &dup);
    MPI_Topo_test(dup, &t);
    MPI_Dist_graph_neighbors_count(dup, &indeg, &outdeg, &weighted);
    CHECKP(t == MPI_DIST_GRAPH && indeg == 2 && outdeg == 2 && weighted, "dup of a distributed graph");
    neighbour_colls(rank, size, dup, "adjacent-dup", src, 2, dst, 2, dist_dests, errp);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&dg);

    /* unweighted: odd ranks have no edges at all, even ranks one self-loop */
    k = rank % 2 ? 0 : 1;
    src[0] = dst[0] = rank;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, k, src, MPI_UNWEIGHTED, k, dst, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &du);
    MPI_Dist_graph_neighbors_count(du, &indeg, &outdeg, &weighted);
    CHECKP(indeg == k && outdeg == k && !weighted, "unweighted: in %d out %d weighted %d", indeg, outdeg, weighted);
    qs[0] = qd[0] = -1;
    MPI_Dist_graph_neighbors(du, k, qs, MPI_UNWEIGHTED, k, qd, MPI_UNWEIGHTED);
    CHECKP(k == 0 || (qs[0] == rank && qd[0] == rank), "unweighted self-loop: %d %d", qs[0], qd[0]);
    {
        int sb[2] = {rank * 2, rank * 2 + 1}, rb[2] = {-1, -1};
        MPI_Neighbor_alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, du);
        CHECKP(k == 0 ? rb[0] == -1 : rb[0] == sb[0], "self-loop alltoall: %d", rb[0]);
        CHECKP(rb[1] == -1, "self-loop alltoall wrote a second block");
        ct_say(rank, "unweighted: %d self-loops, alltoall %d", k, rb[0]);
    }
    MPI_Comm_free(&du);

    /* general: every rank gives its own two out-edges, rank 0 also one of rank n-1's */
    {
        int cs[2], cdeg[2], cd[3], cw[3], ns, ne, who, e, m;
        int *ins = ct_malloc(sizeof(int) * 2 * (3 * size + 1)), *outs = ct_malloc(sizeof(int) * 2 * (3 * size + 1));
        int *gs = ct_malloc(sizeof(int) * (3 * size + 1)), *gsw = ct_malloc(sizeof(int) * (3 * size + 1));
        int *gd = ct_malloc(sizeof(int) * (3 * size + 1)), *gdw = ct_malloc(sizeof(int) * (3 * size + 1));
        int *gb = ct_malloc(sizeof(int) * (3 * size + 1));
        int nin = 0, nout = 0;

        ne = contributed(rank, size, cs, cdeg, cd, cw, &ns);
        MPI_Dist_graph_create(MPI_COMM_WORLD, ns, cs, cdeg, cd, cw, MPI_INFO_NULL, 0, &dg);
        (void) ne;
        /* the expected edges at this rank, from everybody's contributions, as (rank, weight) */
        for (who = 0; who < size; who++) {
            ne = contributed(who, size, cs, cdeg, cd, cw, &ns);
            for (m = 0, e = 0; m < ns; m++) {
                for (j = 0; j < cdeg[m]; j++, e++) {
                    if (cs[m] == rank) {
                        outs[2 * nout] = cd[e] * 1000 + cw[e];
                        nout++;
                    }
                    if (cd[e] == rank) {
                        ins[2 * nin] = cs[m] * 1000 + cw[e];
                        nin++;
                    }
                }
            }
        }
        MPI_Dist_graph_neighbors_count(dg, &indeg, &outdeg, &weighted);
        CHECKP(indeg == nin && outdeg == nout && weighted, "general: in %d (want %d) out %d (want %d) weighted %d", indeg, nin,
               outdeg, nout, weighted);
        if (indeg == nin && outdeg == nout) {
            int *a = ct_malloc(sizeof(int) * (nin + nout + 1)), *x = ct_malloc(sizeof(int) * (nin + nout + 1));
            MPI_Dist_graph_neighbors(dg, nin, gs, gsw, nout, gd, gdw);
            /* the order is the implementation's: compare sorted (rank, weight) lists */
            for (i = 0; i < nin; i++) {
                a[i] = gs[i] * 1000 + gsw[i];
                x[i] = ins[2 * i];
            }
            qsort(a, nin, sizeof(int), cmp_int);
            qsort(x, nin, sizeof(int), cmp_int);
            for (i = 0; i < nin; i++)
                CHECKP(a[i] == x[i], "general in-edge %d: %d, expected %d", i, a[i], x[i]);
            fmt_ints(b1, sizeof b1, a, nin);
            for (i = 0; i < nout; i++) {
                a[i] = gd[i] * 1000 + gdw[i];
                x[i] = outs[2 * i];
            }
            qsort(a, nout, sizeof(int), cmp_int);
            qsort(x, nout, sizeof(int), cmp_int);
            for (i = 0; i < nout; i++)
                CHECKP(a[i] == x[i], "general out-edge %d: %d, expected %d", i, a[i], x[i]);
            fmt_ints(b2, sizeof b2, a, nout);
            ct_say(rank, "general: in (rank*1000+weight) %s out %s", b1, b2);
            /* allgather: block i holds in-neighbour i's rank, whatever the order */
            for (i = 0; i < nin; i++)
                gb[i] = -1;
            MPI_Neighbor_allgather(&rank, 1, MPI_INT, gb, 1, MPI_INT, dg);
            for (i = 0; i < nin; i++)
                CHECKP(gb[i] == gs[i], "general allgather block %d: %d, expected %d", i, gb[i], gs[i]);
            free(a), free(x);
        }
        MPI_Comm_free(&dg);
        free(ins), free(outs), free(gs), free(gsw), free(gd), free(gdw), free(gb);
    }
}

static void errors(int rank, int size, int *errp)
{
    int index[2] = {1, 2}, edges[2] = {1, 0}, bad[2] = {1, size + 1}, down[2] = {2, 1}, rc, a, b, c, i;
    int *big = ct_malloc(sizeof(int) * (size + 1)), *none = ct_malloc(sizeof(int));
    MPI_Comm g, dg;

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    /* one node more than there are ranks, no edges */
    for (i = 0; i <= size; i++)
        big[i] = 0;
    rc = MPI_Graph_create(MPI_COMM_WORLD, size + 1, big, none, 0, &g);
    CHECKP(ct_class(rc) == MPI_ERR_ARG, "Graph_create with more nodes than ranks: class %d", ct_class(rc));
    free(big), free(none);
    if (size >= 2) {
        rc = MPI_Graph_create(MPI_COMM_WORLD, 2, index, bad, 0, &g);
        CHECKP(ct_class(rc) == MPI_ERR_ARG, "Graph_create with an edge to node size+1: class %d", ct_class(rc));
        rc = MPI_Graph_create(MPI_COMM_WORLD, 2, down, edges, 0, &g);
        CHECKP(ct_class(rc) == MPI_ERR_ARG, "Graph_create with decreasing index: class %d", ct_class(rc));
    }
    rc = MPI_Graphdims_get(MPI_COMM_WORLD, &a, &b);
    CHECKP(ct_class(rc) == MPI_ERR_TOPOLOGY, "Graphdims_get on world: class %d", ct_class(rc));
    rc = MPI_Dist_graph_neighbors_count(MPI_COMM_WORLD, &a, &b, &c);
    CHECKP(ct_class(rc) == MPI_ERR_TOPOLOGY, "Dist_graph_neighbors_count on world: class %d", ct_class(rc));
    rc = MPI_Neighbor_alltoall(&a, 1, MPI_INT, &b, 1, MPI_INT, MPI_COMM_WORLD);
    CHECKP(ct_class(rc) == MPI_ERR_TOPOLOGY, "Neighbor_alltoall on world: class %d", ct_class(rc));
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 0, &a, MPI_UNWEIGHTED, 0, &b, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &dg);
    MPI_Comm_set_errhandler(dg, MPI_ERRORS_RETURN);
    rc = MPI_Graph_neighbors_count(dg, 0, &a);
    CHECKP(ct_class(rc) == MPI_ERR_TOPOLOGY, "Graph_neighbors_count on a distributed graph: class %d", ct_class(rc));
    rc = MPI_Cartdim_get(dg, &a);
    CHECKP(ct_class(rc) == MPI_ERR_TOPOLOGY, "Cartdim_get on a distributed graph: class %d", ct_class(rc));
    MPI_Comm_free(&dg);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    graph_part(rank, size, &errs);
    dist_part(rank, size, &errs);
    errors(rank, size, &errs);

    return ct_finish(rank, errs);
}
