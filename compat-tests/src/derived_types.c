/* Derived datatypes (MPI chapter 5) through communication: a vector column of a
 * matrix from rank 0 to the last rank, a C struct type (padding and extent) in a
 * ring, a struct of absolute addresses sent from MPI_BOTTOM, a 2-D subarray halo
 * exchange between ring neighbours (C and Fortran order), a darray of a global
 * array over a process grid, Pack/Unpack as MPI_PACKED, Get_envelope/contents
 * of every combiner, size/extent/true extent printouts, names, match_size and
 * the error classes of bad arguments. */
#include "ct.h"
#include <stddef.h>

#define ROWS 6
#define COLS 5
#define NY 4
#define NX 3

struct particle {
    char tag;
    double pos[3];
    int id;
    short flags[2];
};

static const char *combiner_name(int c)
{
    if (c == MPI_COMBINER_NAMED) return "NAMED";
    if (c == MPI_COMBINER_DUP) return "DUP";
    if (c == MPI_COMBINER_CONTIGUOUS) return "CONTIGUOUS";
    if (c == MPI_COMBINER_VECTOR) return "VECTOR";
    if (c == MPI_COMBINER_HVECTOR) return "HVECTOR";
    if (c == MPI_COMBINER_INDEXED) return "INDEXED";
    if (c == MPI_COMBINER_HINDEXED) return "HINDEXED";
    if (c == MPI_COMBINER_INDEXED_BLOCK) return "INDEXED_BLOCK";
    if (c == MPI_COMBINER_HINDEXED_BLOCK) return "HINDEXED_BLOCK";
    if (c == MPI_COMBINER_STRUCT) return "STRUCT";
    if (c == MPI_COMBINER_SUBARRAY) return "SUBARRAY";
    if (c == MPI_COMBINER_DARRAY) return "DARRAY";
    if (c == MPI_COMBINER_RESIZED) return "RESIZED";
    return "other";
}

/* Size, extent and true extent of a type, on one line. */
static void show(int rank, const char *what, MPI_Datatype t)
{
    int size = -1;
    MPI_Count sx = -1;
    MPI_Aint lb = -1, ext = -1, tlb = -1, text = -1;
    MPI_Type_size(t, &size);
    MPI_Type_size_x(t, &sx);
    MPI_Type_get_extent(t, &lb, &ext);
    MPI_Type_get_true_extent(t, &tlb, &text);
    ct_say(rank, "%s: size %d (x %lld) lb %ld extent %ld true_lb %ld true_extent %ld", what, size,
           (long long) sx, (long) lb, (long) ext, (long) tlb, (long) text);
}

/* Envelope and contents of a type; the integer and address arguments are
 * printed except values that are implementation constants (orders, distributions). */
static void decode(int rank, int *errp, const char *what, MPI_Datatype t, int print_ints)
{
    int ni = -1, na = -1, nd = -1, comb = -1, i, *ints;
    MPI_Aint *addrs;
    MPI_Datatype *types;
    char line[1024];
    size_t len;

    MPI_Type_get_envelope(t, &ni, &na, &nd, &comb);
    len = (size_t) snprintf(line, sizeof line, "%s: combiner %s ni %d na %d nd %d", what,
                            combiner_name(comb), ni, na, nd);
    if (comb == MPI_COMBINER_NAMED) {
        ct_say(rank, "%s", line);
        return;
    }
    ints = ct_malloc(sizeof(int) * (size_t) (ni + 1));
    addrs = ct_malloc(sizeof(MPI_Aint) * (size_t) (na + 1));
    types = ct_malloc(sizeof(MPI_Datatype) * (size_t) (nd + 1));
    MPI_Type_get_contents(t, ni, na, nd, ints, addrs, types);
    if (print_ints) {
        len += (size_t) snprintf(line + len, sizeof line - len, " ints");
        for (i = 0; i < ni && len < sizeof line - 16; i++)
            len += (size_t) snprintf(line + len, sizeof line - len, " %d", ints[i]);
    }
    len += (size_t) snprintf(line + len, sizeof line - len, " addrs");
    for (i = 0; i < na && len < sizeof line - 24; i++)
        len += (size_t) snprintf(line + len, sizeof line - len, " %ld", (long) addrs[i]);
    for (i = 0; i < nd; i++) {
        int c2 = -1, a, b, d;
        MPI_Type_get_envelope(types[i], &a, &b, &d, &c2);
        if (len < sizeof line - 24)
            len += (size_t) snprintf(line + len, sizeof line - len, " type%d %s", i, combiner_name(c2));
        if (c2 != MPI_COMBINER_NAMED)
            MPI_Type_free(&types[i]);
    }
    ct_say(rank, "%s", line);
    (void) errp;
    free(ints);
    free(addrs);
    free(types);
}

/* Which ints of the global array a type selects, in pack order. */
static void elements(int rank, const char *what, MPI_Datatype t, int n)
{
    int *src = ct_malloc(sizeof(int) * (size_t) n), *out = ct_malloc(sizeof(int) * (size_t) n);
    int i, pos = 0, psize = 0;
    char line[2048];
    size_t len;
    for (i = 0; i < n; i++)
        src[i] = i;
    MPI_Pack_size(1, t, MPI_COMM_WORLD, &psize);
    MPI_Pack(src, 1, t, out, (int) sizeof(int) * n, &pos, MPI_COMM_WORLD);
    len = (size_t) snprintf(line, sizeof line, "%s: %d bytes:", what, pos);
    for (i = 0; i < pos / (int) sizeof(int) && len < sizeof line - 16; i++)
        len += (size_t) snprintf(line + len, sizeof line - len, " %d", out[i]);
    ct_say(rank, "%s", line);
    free(src);
    free(out);
}

static void column(int rank, int size, int *errp)
{
    double a[ROWS][COLS], col[ROWS], b[ROWS][COLS];
    MPI_Datatype coltype, colres;
    int i, j, last = size - 1;
    MPI_Status st;

    MPI_Type_vector(ROWS, 1, COLS, MPI_DOUBLE, &coltype);
    MPI_Type_commit(&coltype);
    /* the same column, resized to one double so consecutive columns follow */
    MPI_Type_create_resized(coltype, 0, sizeof(double), &colres);
    MPI_Type_commit(&colres);
    if (rank == 0) {
        show(rank, "column vector", coltype);
        show(rank, "column resized", colres);
    }
    for (i = 0; i < ROWS; i++)
        for (j = 0; j < COLS; j++)
            a[i][j] = 10.0 * i + j + 0.5;
    if (rank == 0) {
        MPI_Send(&a[0][2], 1, coltype, last, 1, MPI_COMM_WORLD);
        MPI_Send(&a[0][1], 3, colres, last, 2, MPI_COMM_WORLD);
    }
    if (rank == last) {
        int count = -1, elems = -1;
        MPI_Recv(col, ROWS, MPI_DOUBLE, 0, 1, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_DOUBLE, &count);
        CHECKP(count == ROWS, "column: count %d", count);
        for (i = 0; i < ROWS; i++)
            CHECKP(col[i] == 10.0 * i + 2.5, "column: element %d is %g", i, col[i]);
        ct_say(rank, "column received: %g %g ... %g", col[0], col[1], col[ROWS - 1]);
        /* three columns land in columns 2..4 of b */
        memset(b, 0, sizeof b);
        MPI_Recv(&b[0][2], 3, colres, 0, 2, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, colres, &count);
        MPI_Get_elements(&st, colres, &elems);
        ct_say(rank, "three columns: count %d elements %d", count, elems);
        for (i = 0; i < ROWS; i++)
            for (j = 0; j < COLS; j++)
                CHECKP(b[i][j] == (j >= 2 ? 10.0 * i + (j - 1) + 0.5 : 0.0), "columns: b[%d][%d] = %g", i,
                       j, b[i][j]);
    }
    MPI_Type_free(&colres);
    MPI_Type_free(&coltype);
    CHECKP(coltype == MPI_DATATYPE_NULL, "Type_free did not set MPI_DATATYPE_NULL");
}

static void particles(int rank, int size, int *errp)
{
    struct particle sp[3], rp[3];
    int bl[4] = {1, 3, 1, 2}, i, to = (rank + 1) % size, from = (rank + size - 1) % size;
    MPI_Aint disp[4] = {offsetof(struct particle, tag), offsetof(struct particle, pos),
                        offsetof(struct particle, id), offsetof(struct particle, flags)};
    MPI_Datatype types[4] = {MPI_CHAR, MPI_DOUBLE, MPI_INT, MPI_SHORT}, ptype;
    MPI_Aint lb, ext;
    MPI_Status st;
    int count = -1, elems = -1;

    MPI_Type_create_struct(4, bl, disp, types, &ptype);
    MPI_Type_commit(&ptype);
    MPI_Type_get_extent(ptype, &lb, &ext);
    CHECKP(lb == 0 && ext == (MPI_Aint) sizeof(struct particle), "particle extent %ld, sizeof %d", (long) ext,
           (int) sizeof(struct particle));
    show(rank, "particle struct", ptype);
    decode(rank, errp, "particle struct", ptype, 1);
    for (i = 0; i < 3; i++) {
        memset(&sp[i], 0x5a, sizeof sp[i]);
        sp[i].tag = (char) ('a' + rank % 26);
        sp[i].pos[0] = rank + i * 0.25;
        sp[i].pos[1] = -rank;
        sp[i].pos[2] = i;
        sp[i].id = 1000 * rank + i;
        sp[i].flags[0] = (short) (rank * 3);
        sp[i].flags[1] = (short) (-i);
    }
    memset(rp, 0, sizeof rp);
    MPI_Sendrecv(sp, 3, ptype, to, 3, rp, 3, ptype, from, 3, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, ptype, &count);
    MPI_Get_elements(&st, ptype, &elems);
    ct_say(rank, "particles from %d: count %d elements %d ids %d %d %d tag %c", from, count, elems, rp[0].id,
           rp[1].id, rp[2].id, rp[0].tag);
    for (i = 0; i < 3; i++) {
        CHECKP(rp[i].tag == (char) ('a' + from % 26) && rp[i].pos[0] == from + i * 0.25 &&
                   rp[i].pos[1] == -from && rp[i].pos[2] == i && rp[i].id == 1000 * from + i &&
                   rp[i].flags[0] == from * 3 && rp[i].flags[1] == -i,
               "particle %d from %d differs", i, from);
    }
    MPI_Type_free(&ptype);
}

/* A struct of absolute addresses of unrelated variables, sent from MPI_BOTTOM. */
static void absolute(int rank, int size, int *errp)
{
    int ival, rival = -1, bl[3] = {1, 2, 1};
    double dv[2], rdv[2] = {0, 0};
    char cv, rcv = 0;
    MPI_Aint disp[3];
    MPI_Datatype types[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR}, st_send, st_recv;
    int to = (rank + 1) % size, from = (rank + size - 1) % size;

    ival = 7 * rank + 1;
    dv[0] = rank / 2.0;
    dv[1] = rank * 1e10;
    cv = (char) ('A' + rank % 26);
    MPI_Get_address(&ival, &disp[0]);
    MPI_Get_address(dv, &disp[1]);
    MPI_Get_address(&cv, &disp[2]);
    MPI_Type_create_struct(3, bl, disp, types, &st_send);
    MPI_Type_commit(&st_send);
    MPI_Get_address(&rival, &disp[0]);
    MPI_Get_address(rdv, &disp[1]);
    MPI_Get_address(&rcv, &disp[2]);
    MPI_Type_create_struct(3, bl, disp, types, &st_recv);
    MPI_Type_commit(&st_recv);
    MPI_Sendrecv(MPI_BOTTOM, 1, st_send, to, 4, MPI_BOTTOM, 1, st_recv, from, 4, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    CHECKP(rival == 7 * from + 1 && rdv[0] == from / 2.0 && rdv[1] == from * 1e10 && rcv == 'A' + from % 26,
           "MPI_BOTTOM struct: got %d %g %g %c", rival, rdv[0], rdv[1], rcv);
    {
        MPI_Aint a, b;
        MPI_Get_address(&dv[1], &b);
        MPI_Get_address(&dv[0], &a);
        CHECKP(MPI_Aint_diff(b, a) == (MPI_Aint) sizeof(double), "Aint_diff");
        CHECKP(MPI_Aint_add(a, sizeof(double)) == b, "Aint_add");
    }
    ct_say(rank, "absolute struct from %d: %d %g %c", from, rival, rdv[0], rcv);
    MPI_Type_free(&st_send);
    MPI_Type_free(&st_recv);
}

/* Local (NY+2) x (NX+2) grid with a one-cell halo; ranks form a ring along x:
 * the last interior column goes to the right neighbour's left halo and the
 * first interior column to the left neighbour's right halo. Then the same
 * along y in Fortran order (rows of a column-major array). */
static void halo(int rank, int size, int *errp)
{
    int g[NY + 2][NX + 2], i, j, right = (rank + 1) % size, left = (rank + size - 1) % size;
    int sizes[2] = {NY + 2, NX + 2}, sub[2] = {NY, 1};
    int s_east[2] = {1, NX}, s_west[2] = {1, 1}, r_west[2] = {1, 0}, r_east[2] = {1, NX + 1};
    MPI_Datatype send_e, send_w, recv_w, recv_e;
#define VAL(r, y, x) (1000 * (r) + 10 * (y) + (x))

    for (i = 0; i < NY + 2; i++)
        for (j = 0; j < NX + 2; j++)
            g[i][j] = (i == 0 || j == 0 || i == NY + 1 || j == NX + 1) ? -1 : VAL(rank, i, j);
    MPI_Type_create_subarray(2, sizes, sub, s_east, MPI_ORDER_C, MPI_INT, &send_e);
    MPI_Type_create_subarray(2, sizes, sub, s_west, MPI_ORDER_C, MPI_INT, &send_w);
    MPI_Type_create_subarray(2, sizes, sub, r_west, MPI_ORDER_C, MPI_INT, &recv_w);
    MPI_Type_create_subarray(2, sizes, sub, r_east, MPI_ORDER_C, MPI_INT, &recv_e);
    MPI_Type_commit(&send_e);
    MPI_Type_commit(&send_w);
    MPI_Type_commit(&recv_w);
    MPI_Type_commit(&recv_e);
    if (rank == 0) {
        show(rank, "halo subarray C east", send_e);
        decode(rank, errp, "halo subarray C east", send_e, 0);
    }
    MPI_Sendrecv(g, 1, send_e, right, 5, g, 1, recv_w, left, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Sendrecv(g, 1, send_w, left, 6, g, 1, recv_e, right, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (i = 0; i < NY + 2; i++) {
        int in = i >= 1 && i <= NY;
        CHECKP(g[i][0] == (in ? VAL(left, i, NX) : -1), "west halo row %d: %d", i, g[i][0]);
        CHECKP(g[i][NX + 1] == (in ? VAL(right, i, 1) : -1), "east halo row %d: %d", i, g[i][NX + 1]);
        for (j = 1; j <= NX; j++)
            CHECKP(g[i][j] == (in ? VAL(rank, i, j) : -1), "interior [%d][%d] changed", i, j);
    }
    ct_say(rank, "halo C: west %d..%d east %d..%d", g[1][0], g[NY][0], g[1][NX + 1], g[NY][NX + 1]);
    MPI_Type_free(&send_e);
    MPI_Type_free(&send_w);
    MPI_Type_free(&recv_w);
    MPI_Type_free(&recv_e);

    /* Fortran order: f(x, y) at f[y][x] with x fastest; exchange the y = 1
     * and y = NY rows (NX interior elements each) with the ring neighbours. */
    {
        int f[NY + 2][NX + 2], fs[2] = {NX + 2, NY + 2}, fsub[2] = {NX, 1};
        int top[2] = {1, NY}, bot[2] = {1, 1}, rbot[2] = {1, 0}, rtop[2] = {1, NY + 1};
        MPI_Datatype t_top, t_bot, t_rbot, t_rtop;
        for (i = 0; i < NY + 2; i++)
            for (j = 0; j < NX + 2; j++)
                f[i][j] = (i == 0 || j == 0 || i == NY + 1 || j == NX + 1) ? -1 : VAL(rank, i, j);
        MPI_Type_create_subarray(2, fs, fsub, top, MPI_ORDER_FORTRAN, MPI_INT, &t_top);
        MPI_Type_create_subarray(2, fs, fsub, bot, MPI_ORDER_FORTRAN, MPI_INT, &t_bot);
        MPI_Type_create_subarray(2, fs, fsub, rbot, MPI_ORDER_FORTRAN, MPI_INT, &t_rbot);
        MPI_Type_create_subarray(2, fs, fsub, rtop, MPI_ORDER_FORTRAN, MPI_INT, &t_rtop);
        MPI_Type_commit(&t_top);
        MPI_Type_commit(&t_bot);
        MPI_Type_commit(&t_rbot);
        MPI_Type_commit(&t_rtop);
        if (rank == 0)
            show(rank, "halo subarray Fortran top", t_top);
        MPI_Sendrecv(f, 1, t_top, right, 7, f, 1, t_rbot, left, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Sendrecv(f, 1, t_bot, left, 8, f, 1, t_rtop, right, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (j = 0; j < NX + 2; j++) {
            int in = j >= 1 && j <= NX;
            CHECKP(f[0][j] == (in ? VAL(left, NY, j) : -1), "bottom halo x %d: %d", j, f[0][j]);
            CHECKP(f[NY + 1][j] == (in ? VAL(right, 1, j) : -1), "top halo x %d: %d", j, f[NY + 1][j]);
        }
        ct_say(rank, "halo Fortran: bottom %d..%d top %d..%d", f[0][1], f[0][NX], f[NY + 1][1], f[NY + 1][NX]);
        MPI_Type_free(&t_top);
        MPI_Type_free(&t_bot);
        MPI_Type_free(&t_rbot);
        MPI_Type_free(&t_rtop);
    }
#undef VAL
}

static void darrays(int rank, int size, int *errp)
{
    int p0 = 1, p1, d;
    int gs[2] = {5, 7}, dist[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC};
    int darg[2] = {MPI_DISTRIBUTE_DFLT_DARG, 2}, ps[2];
    MPI_Datatype t;

    for (d = 1; d * d <= size; d++)
        if (size % d == 0)
            p0 = d;
    p1 = size / p0;
    ps[0] = p0;
    ps[1] = p1;
    if (gs[0] < p0)
        gs[0] = p0;
    MPI_Type_create_darray(size, rank, 2, gs, dist, darg, ps, MPI_ORDER_C, MPI_INT, &t);
    MPI_Type_commit(&t);
    show(rank, "darray C block x cyclic(2)", t);
    elements(rank, "darray C block x cyclic(2)", t, gs[0] * gs[1]);
    if (rank == 0)
        decode(rank, errp, "darray", t, 0);
    MPI_Type_free(&t);
    MPI_Type_create_darray(size, rank, 2, gs, dist, darg, ps, MPI_ORDER_FORTRAN, MPI_INT, &t);
    MPI_Type_commit(&t);
    elements(rank, "darray Fortran block x cyclic(2)", t, gs[0] * gs[1]);
    MPI_Type_free(&t);
    {
        int g1[1] = {2 * size + 3}, d1[1] = {MPI_DISTRIBUTE_CYCLIC}, a1[1] = {MPI_DISTRIBUTE_DFLT_DARG};
        int p1a[1] = {size};
        MPI_Type_create_darray(size, rank, 1, g1, d1, a1, p1a, MPI_ORDER_C, MPI_INT, &t);
        MPI_Type_commit(&t);
        elements(rank, "darray cyclic 1-D", t, g1[0]);
        MPI_Type_free(&t);
    }
}

static void packing(int rank, int size, int *errp)
{
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    int m[4][4], rm[4][4], i, j, s1 = 0, s2 = 0, pos = 0, count = -1, ival = 42 + rank, rival = -1;
    char *buf, *rbuf;
    MPI_Datatype diag;
    MPI_Status st;
    int dbl[4] = {1, 1, 1, 1}, ddisp[4] = {0, 5, 10, 15};

    MPI_Type_indexed(4, dbl, ddisp, MPI_INT, &diag);
    MPI_Type_commit(&diag);
    MPI_Pack_size(1, MPI_INT, MPI_COMM_WORLD, &s1);
    MPI_Pack_size(2, diag, MPI_COMM_WORLD, &s2);
    if (rank == 0)
        ct_say(rank, "pack sizes: int %d two diagonals %d", s1, s2);
    buf = ct_malloc((size_t) (s1 + s2));
    rbuf = ct_malloc((size_t) (s1 + s2));
    for (i = 0; i < 4; i++)
        for (j = 0; j < 4; j++)
            m[i][j] = 100 * rank + 10 * i + j;
    MPI_Pack(&ival, 1, MPI_INT, buf, s1 + s2, &pos, MPI_COMM_WORLD);
    /* two elements of the diagonal type: the second starts one extent (16 ints) on,
     * so use a 1-element pack of the diagonal twice from the same matrix */
    MPI_Pack(m, 1, diag, buf, s1 + s2, &pos, MPI_COMM_WORLD);
    MPI_Pack(&m[0][0], 1, diag, buf, s1 + s2, &pos, MPI_COMM_WORLD);
    CHECKP(pos == s1 + s2, "packed %d bytes, Pack_size said %d", pos, s1 + s2);
    MPI_Sendrecv(buf, pos, MPI_PACKED, to, 9, rbuf, s1 + s2, MPI_PACKED, from, 9, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, MPI_PACKED, &count);
    memset(rm, 0, sizeof rm);
    pos = 0;
    MPI_Unpack(rbuf, count, &pos, &rival, 1, MPI_INT, MPI_COMM_WORLD);
    MPI_Unpack(rbuf, count, &pos, rm, 1, diag, MPI_COMM_WORLD);
    CHECKP(rival == 42 + from, "unpacked int %d", rival);
    for (i = 0; i < 4; i++)
        for (j = 0; j < 4; j++)
            CHECKP(rm[i][j] == (i == j ? 100 * from + 11 * i : 0), "unpacked m[%d][%d] = %d", i, j, rm[i][j]);
    {
        int rest[4] = {0, 0, 0, 0};
        MPI_Unpack(rbuf, count, &pos, rest, 4, MPI_INT, MPI_COMM_WORLD);
        CHECKP(rest[0] == 100 * from && rest[3] == 100 * from + 33, "second diagonal %d %d", rest[0], rest[3]);
    }
    CHECKP(pos == count, "unpack position %d of %d", pos, count);
    ct_say(rank, "packed from %d: %d bytes, int %d, diagonal %d %d %d %d", from, count, rival, rm[0][0], rm[1][1],
           rm[2][2], rm[3][3]);
    free(buf);
    free(rbuf);
    MPI_Type_free(&diag);
}

/* Size and extent of assorted constructions, and their decoding (rank 0). */
static void shapes(int rank, int *errp)
{
    MPI_Datatype t, t2, tv;
    int bl3[3] = {2, 1, 3}, di3[3] = {5, -2, 0};
    MPI_Aint hd3[3] = {20, -8, 0};
    int sizes[3] = {3, 4, 5}, sub[3] = {2, 2, 2}, st[3] = {1, 1, 2};

    MPI_Type_contiguous(4, MPI_INT, &t);
    show(rank, "contiguous 4 int", t);
    decode(rank, errp, "contiguous", t, 1);
    MPI_Type_vector(3, 2, 4, t, &tv);
    show(rank, "vector 3x2 stride 4 of contiguous", tv);
    decode(rank, errp, "vector", tv, 1);
    MPI_Type_free(&t);
    MPI_Type_vector(2, 1, 3, tv, &t2);
    show(rank, "vector of vector", t2);
    MPI_Type_free(&t2);
    MPI_Type_free(&tv);
    MPI_Type_create_hvector(3, 2, -12, MPI_INT, &t);
    show(rank, "hvector 3x2 stride -12", t);
    decode(rank, errp, "hvector", t, 1);
    MPI_Type_free(&t);
    MPI_Type_indexed(3, bl3, di3, MPI_INT, &t);
    show(rank, "indexed negative displacement", t);
    decode(rank, errp, "indexed", t, 1);
    MPI_Type_free(&t);
    MPI_Type_create_hindexed(3, bl3, hd3, MPI_SHORT, &t);
    show(rank, "hindexed short", t);
    decode(rank, errp, "hindexed", t, 1);
    MPI_Type_free(&t);
    MPI_Type_create_indexed_block(3, 2, di3, MPI_DOUBLE, &t);
    show(rank, "indexed_block double", t);
    decode(rank, errp, "indexed_block", t, 1);
    MPI_Type_free(&t);
    MPI_Type_create_hindexed_block(3, 2, hd3, MPI_CHAR, &t);
    show(rank, "hindexed_block char", t);
    decode(rank, errp, "hindexed_block", t, 1);
    MPI_Type_free(&t);
    {
        int bl[2] = {1, 1};
        MPI_Aint d[2] = {0, 8};
        MPI_Datatype ty[2] = {MPI_DOUBLE, MPI_CHAR};
        MPI_Type_create_struct(2, bl, d, ty, &t);
        show(rank, "struct double,char (padded)", t);
        MPI_Type_contiguous(3, t, &t2);
        show(rank, "contiguous 3 of it", t2);
        MPI_Type_free(&t2);
        MPI_Type_free(&t);
        ty[0] = MPI_INT;
        ty[1] = MPI_INT;
        d[1] = 4;
        MPI_Type_create_struct(2, bl, d, ty, &t);
        show(rank, "struct int,int", t);
        MPI_Type_free(&t);
    }
    MPI_Type_create_resized(MPI_INT, -4, 16, &t);
    show(rank, "resized int -4 16", t);
    decode(rank, errp, "resized", t, 1);
    MPI_Type_dup(t, &t2);
    show(rank, "dup of resized", t2);
    decode(rank, errp, "dup", t2, 1);
    MPI_Type_free(&t2);
    MPI_Type_free(&t);
    MPI_Type_create_subarray(3, sizes, sub, st, MPI_ORDER_C, MPI_INT, &t);
    show(rank, "subarray 3-D C", t);
    MPI_Type_commit(&t);
    elements(rank, "subarray 3-D C", t, 60);
    MPI_Type_free(&t);
    MPI_Type_create_subarray(3, sizes, sub, st, MPI_ORDER_FORTRAN, MPI_INT, &t);
    show(rank, "subarray 3-D Fortran", t);
    MPI_Type_commit(&t);
    elements(rank, "subarray 3-D Fortran", t, 60);
    MPI_Type_free(&t);
    show(rank, "MPI_DOUBLE_INT", MPI_DOUBLE_INT);
    decode(rank, errp, "MPI_INT", MPI_INT, 1);
}

static void names_and_errors(int rank, int *errp)
{
    MPI_Datatype t = MPI_DATATYPE_NULL, m = MPI_DATATYPE_NULL;
    char name[MPI_MAX_OBJECT_NAME];
    int len = -1, e;

    MPI_Type_get_name(MPI_INT, name, &len);
    CHECKP(strcmp(name, "MPI_INT") == 0 && len == 7, "name of MPI_INT '%s'", name);
    MPI_Type_contiguous(2, MPI_INT, &t);
    MPI_Type_get_name(t, name, &len);
    CHECKP(len == 0 && name[0] == 0, "a new type has the empty name, got '%s'", name);
    MPI_Type_set_name(t, "pair of ints");
    MPI_Type_get_name(t, name, &len);
    CHECKP(strcmp(name, "pair of ints") == 0 && len == 12, "set name '%s'", name);
    MPI_Type_match_size(MPI_TYPECLASS_INTEGER, 4, &m);
    CHECKP(m == MPI_INTEGER4, "match_size(INTEGER, 4) is not MPI_INTEGER4");
    MPI_Type_match_size(MPI_TYPECLASS_REAL, 8, &m);
    CHECKP(m == MPI_REAL8, "match_size(REAL, 8) is not MPI_REAL8");
    MPI_Type_match_size(MPI_TYPECLASS_COMPLEX, 16, &m);
    CHECKP(m == MPI_COMPLEX16, "match_size(COMPLEX, 16) is not MPI_COMPLEX16");

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    e = MPI_Send(&len, 1, t, rank, 0, MPI_COMM_WORLD);
    CHECKP(ct_class(e) == MPI_ERR_TYPE, "send with an uncommitted type: class %d", ct_class(e));
    MPI_Type_free(&t);
    e = MPI_Type_contiguous(-1, MPI_INT, &t);
    CHECKP(ct_class(e) == MPI_ERR_COUNT, "contiguous(-1): class %d", ct_class(e));
    e = MPI_Type_vector(2, -1, 1, MPI_INT, &t);
    CHECKP(ct_class(e) == MPI_ERR_COUNT, "vector blocklength -1: class %d", ct_class(e));
    e = MPI_Type_contiguous(1, MPI_DATATYPE_NULL, &t);
    CHECKP(ct_class(e) == MPI_ERR_TYPE, "contiguous of MPI_DATATYPE_NULL: class %d", ct_class(e));
    t = MPI_INT;
    e = MPI_Type_free(&t);
    CHECKP(ct_class(e) == MPI_ERR_TYPE, "free of MPI_INT: class %d", ct_class(e));
    e = MPI_Type_get_contents(MPI_INT, 0, 0, 0, NULL, NULL, NULL);
    CHECKP(ct_class(e) == MPI_ERR_TYPE, "contents of MPI_INT: class %d", ct_class(e));
    e = MPI_Type_create_subarray(1, &len, &len, &len, 12345, MPI_INT, &t);
    CHECKP(ct_class(e) == MPI_ERR_ARG, "subarray with a bad order: class %d", ct_class(e));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    ct_say(rank, "names, match_size and error classes checked");
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    column(rank, size, &errs);
    particles(rank, size, &errs);
    absolute(rank, size, &errs);
    halo(rank, size, &errs);
    darrays(rank, size, &errs);
    packing(rank, size, &errs);
    if (rank == 0)
        shapes(rank, &errs);
    names_and_errors(rank, &errs);

    return ct_finish(rank, errs);
}
