/* coll_pairv: the v-form collectives (Gatherv, Scatterv, Allgatherv, Alltoallv and their
 * nonblocking forms) between the two members of a communicator, where Toucan-MPI takes its
 * two-process pair paths at V=1 (session 25), and on MPI_COMM_WORLD where it does not.
 * Rounds vary the root, the counts (zero included), the order of the blocks in the buffer
 * and gaps between them, MPI_IN_PLACE, a contiguous derived type at one rank against
 * MPI_INT at the other, a strided send type for Iallgatherv at one rank, and the way the
 * nonblocking calls complete (MPI_Waitall, MPI_Wait in reverse, MPI_Test loops) with a
 * blocking call and a Sendrecv on the same communicator in between. */
#include "ct.h"

#define ROUNDS 24
#define MAXC 5
#define SLOT 8 /* room per block: counts up to MAXC, gaps after */

/* Items rank `from` gives rank `to` in round `k` (0 included). */
static int cnt(int from, int to, int k)
{
    return (from * 3 + to * 5 + k) % (MAXC + 1);
}

/* The value of item `i` from rank `from` to rank `to` in round `k`. */
static int val(int from, int to, int k, int i)
{
    return 100000 * (k + 1) + 1000 * from + 10 * to + i;
}

/* Displacement of block `i` of `n`: blocks in rank order with gaps, or reversed. */
static int disp(int i, int n, int k)
{
    return (k % 2 ? n - 1 - i : i) * SLOT + (k % 3);
}

static int complete(MPI_Request *r, int n, int k)
{
    int rc = MPI_SUCCESS;
    if (k % 3 == 0) {
        rc = MPI_Waitall(n, r, MPI_STATUSES_IGNORE);
    } else if (k % 3 == 1) {
        for (int i = n - 1; i >= 0; i--)
            if (MPI_Wait(&r[i], MPI_STATUS_IGNORE) != MPI_SUCCESS)
                rc = MPI_ERR_OTHER;
    } else {
        int done = 0;
        while (!done)
            if (MPI_Testall(n, r, &done, MPI_STATUSES_IGNORE) != MPI_SUCCESS)
                return MPI_ERR_OTHER;
    }
    return rc;
}

static int round_at(MPI_Comm comm, int k, MPI_Datatype mine, int rank)
{
    int errs = 0, me, n;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &n);
    int root = k % n;
    int len = n * SLOT + 4;
    int *sc = malloc(sizeof(int) * n), *sd = malloc(sizeof(int) * n);
    int *rc = malloc(sizeof(int) * n), *rd = malloc(sizeof(int) * n);
    int *gath = malloc(sizeof(int) * len), *scat = malloc(sizeof(int) * len);
    int *allg = malloc(sizeof(int) * len), *a2as = malloc(sizeof(int) * len), *a2ar = malloc(sizeof(int) * len);
    int *ig = malloc(sizeof(int) * len), *iall = malloc(sizeof(int) * len), *ia2r = malloc(sizeof(int) * len);
    int *isc = malloc(sizeof(int) * len);
    int own[MAXC], rcv[MAXC], irc[MAXC], strided[2 * MAXC];
    MPI_Datatype t = me % 2 ? mine : MPI_INT; /* the derived type at odd ranks of comm */

    for (int i = 0; i < len; i++)
        gath[i] = scat[i] = allg[i] = a2as[i] = a2ar[i] = ig[i] = iall[i] = ia2r[i] = isc[i] = -1;
    /* Gatherv to root (in place there every third round). */
    int c_me = cnt(me, root, k);
    for (int i = 0; i < MAXC; i++)
        own[i] = i < c_me ? val(me, root, k, i) : -7;
    for (int i = 0; i < n; i++) {
        rc[i] = cnt(i, root, k);
        rd[i] = disp(i, n, k);
    }
    int gin = me == root && k % 3 == 0;
    if (gin)
        for (int i = 0; i < c_me; i++)
            gath[rd[me] + i] = own[i];
    MPI_Gatherv(gin ? MPI_IN_PLACE : own, c_me, t, gath, rc, rd, t, root, comm);
    if (me == root)
        for (int j = 0; j < n; j++)
            for (int i = 0; i < rc[j]; i++)
                CHECK(gath[rd[j] + i] == val(j, root, k, i), "round %d Gatherv [%d][%d] = %d", k, j, i, gath[rd[j] + i]);

    /* Scatterv from root (in place there every third round, shifted). */
    for (int i = 0; i < n; i++) {
        sc[i] = cnt(root, i, k);
        sd[i] = disp(i, n, k + 1);
    }
    if (me == root)
        for (int j = 0; j < n; j++)
            for (int i = 0; i < sc[j]; i++)
                scat[sd[j] + i] = val(root, j, k, i);
    int sin = me == root && k % 3 == 1;
    for (int i = 0; i < MAXC; i++)
        rcv[i] = -5;
    MPI_Scatterv(scat, sc, sd, t, sin ? MPI_IN_PLACE : rcv, cnt(root, me, k), t, root, comm);
    if (!sin)
        for (int i = 0; i < cnt(root, me, k); i++)
            CHECK(rcv[i] == val(root, me, k, i), "round %d Scatterv [%d] = %d", k, i, rcv[i]);

    /* Allgatherv (in place every fourth round); every rank's block is cnt(j, j, k). */
    for (int i = 0; i < n; i++) {
        rc[i] = cnt(i, i, k);
        rd[i] = disp(i, n, k);
    }
    int ain = k % 4 == 0;
    for (int i = 0; i < rc[me]; i++) {
        own[i] = val(me, me, k, i);
        if (ain)
            allg[rd[me] + i] = own[i];
    }
    MPI_Allgatherv(ain ? MPI_IN_PLACE : own, rc[me], t, allg, rc, rd, t, comm);
    for (int j = 0; j < n; j++)
        for (int i = 0; i < rc[j]; i++)
            CHECK(allg[rd[j] + i] == val(j, j, k, i), "round %d Allgatherv [%d][%d] = %d", k, j, i, allg[rd[j] + i]);

    /* Alltoallv: cnt(me, j) items to j, laid out by disp. */
    for (int j = 0; j < n; j++) {
        sc[j] = cnt(me, j, k);
        sd[j] = disp(j, n, k);
        rc[j] = cnt(j, me, k);
        rd[j] = disp(j, n, k + 1);
        for (int i = 0; i < sc[j]; i++)
            a2as[sd[j] + i] = val(me, j, k, i);
    }
    MPI_Alltoallv(a2as, sc, sd, t, a2ar, rc, rd, t, comm);
    for (int j = 0; j < n; j++)
        for (int i = 0; i < rc[j]; i++)
            CHECK(a2ar[rd[j] + i] == val(j, me, k, i), "round %d Alltoallv [%d][%d] = %d", k, j, i, a2ar[rd[j] + i]);

    /* The nonblocking forms, all outstanding at once, with a blocking Bcast and a Sendrecv
     * on the same communicator in between. Own arrays per call: they are read at completion. */
    MPI_Request r[4];
    int *gc = malloc(sizeof(int) * n), *gd = malloc(sizeof(int) * n);
    int *ac = malloc(sizeof(int) * n), *ad = malloc(sizeof(int) * n);
    int *xsc = malloc(sizeof(int) * n), *xsd = malloc(sizeof(int) * n), *xrc = malloc(sizeof(int) * n),
        *xrd = malloc(sizeof(int) * n);
    int *vc = malloc(sizeof(int) * n), *vd = malloc(sizeof(int) * n);
    int iroot = (k + 1) % n;
    for (int j = 0; j < n; j++) {
        gc[j] = cnt(j, iroot, k + 7);
        gd[j] = disp(j, n, k + 1);
        ac[j] = cnt(j, j, k + 3);
        ad[j] = disp(j, n, k);
        xsc[j] = cnt(me, j, k + 5);
        xsd[j] = disp(j, n, k + 1);
        xrc[j] = cnt(j, me, k + 5);
        xrd[j] = disp(j, n, k);
        vc[j] = cnt(iroot, j, k + 2);
        vd[j] = disp(j, n, k);
    }
    int gown[MAXC];
    for (int i = 0; i < gc[me]; i++)
        gown[i] = val(me, iroot, k + 7, i);
    MPI_Igatherv(gown, gc[me], t, ig, gc, gd, t, iroot, comm, &r[0]);
    /* Iallgatherv: at odd ranks of comm on even rounds a strided send type. */
    MPI_Datatype vec = MPI_DATATYPE_NULL;
    int ac_me = ac[me];
    for (int i = 0; i < 2 * MAXC; i++)
        strided[i] = i % 2 == 0 && i / 2 < ac_me ? val(me, me, k + 3, i / 2) : -9;
    if (me % 2 && k % 2 == 0 && ac_me > 0) {
        MPI_Type_vector(ac_me, 1, 2, MPI_INT, &vec);
        MPI_Type_commit(&vec);
        MPI_Iallgatherv(strided, 1, vec, iall, ac, ad, MPI_INT, comm, &r[1]);
    } else {
        int cont[MAXC];
        for (int i = 0; i < ac_me; i++)
            cont[i] = val(me, me, k + 3, i);
        /* In place every third round: the own block in its slot first. */
        if (k % 3 == 2) {
            for (int i = 0; i < ac_me; i++)
                iall[ad[me] + i] = cont[i];
            MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, iall, ac, ad, MPI_INT, comm, &r[1]);
        } else {
            /* The send buffer must stay until completion: use the strided array's room. */
            for (int i = 0; i < ac_me; i++)
                strided[i] = cont[i];
            MPI_Iallgatherv(strided, ac_me, MPI_INT, iall, ac, ad, MPI_INT, comm, &r[1]);
        }
    }
    int *ia2s = malloc(sizeof(int) * len);
    for (int j = 0; j < n; j++)
        for (int i = 0; i < xsc[j]; i++)
            ia2s[xsd[j] + i] = val(me, j, k + 5, i);
    MPI_Ialltoallv(ia2s, xsc, xsd, t, ia2r, xrc, xrd, t, comm, &r[2]);
    if (me == iroot)
        for (int j = 0; j < n; j++)
            for (int i = 0; i < vc[j]; i++)
                isc[vd[j] + i] = val(iroot, j, k + 2, i);
    for (int i = 0; i < MAXC; i++)
        irc[i] = -3;
    MPI_Iscatterv(isc, vc, vd, t, irc, vc[me], t, iroot, comm, &r[3]);

    int b = me == 0 ? 4242 + k : -1;
    MPI_Bcast(&b, 1, MPI_INT, 0, comm);
    CHECK(b == 4242 + k, "round %d Bcast between: %d", k, b);
    int to = (me + 1) % n, from = (me + n - 1) % n, got = -1;
    MPI_Sendrecv(&me, 1, MPI_INT, to, 77, &got, 1, MPI_INT, from, 77, comm, MPI_STATUS_IGNORE);
    CHECK(got == from, "round %d Sendrecv between: %d", k, got);

    CHECK(complete(r, 4, k) == MPI_SUCCESS, "round %d completion", k);
    if (vec != MPI_DATATYPE_NULL)
        MPI_Type_free(&vec);
    if (me == iroot)
        for (int j = 0; j < n; j++)
            for (int i = 0; i < gc[j]; i++)
                CHECK(ig[gd[j] + i] == val(j, iroot, k + 7, i), "round %d Igatherv [%d][%d] = %d", k, j, i, ig[gd[j] + i]);
    for (int j = 0; j < n; j++)
        for (int i = 0; i < ac[j]; i++)
            CHECK(iall[ad[j] + i] == val(j, j, k + 3, i), "round %d Iallgatherv [%d][%d] = %d", k, j, i, iall[ad[j] + i]);
    for (int j = 0; j < n; j++)
        for (int i = 0; i < xrc[j]; i++)
            CHECK(ia2r[xrd[j] + i] == val(j, me, k + 5, i), "round %d Ialltoallv [%d][%d] = %d", k, j, i, ia2r[xrd[j] + i]);
    for (int i = 0; i < vc[me]; i++)
        CHECK(irc[i] == val(iroot, me, k + 2, i), "round %d Iscatterv [%d] = %d", k, i, irc[i]);
    /* Nothing written past a block: the slot after the last item of every block is untouched. */
    for (int j = 0; j < n; j++)
        if (ac[j] < SLOT)
            CHECK(iall[ad[j] + ac[j]] == -1 || (k % 3 == 2 && j == me), "round %d Iallgatherv wrote past block %d", k, j);

    free(sc), free(sd), free(rc), free(rd), free(gath), free(scat), free(allg), free(a2as), free(a2ar);
    free(ig), free(iall), free(ia2r), free(isc), free(ia2s);
    free(gc), free(gd), free(ac), free(ad), free(xsc), free(xsd), free(xrc), free(xrd), free(vc), free(vd);
    return errs;
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm pair;
    MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, &pair);
    MPI_Datatype one;
    MPI_Type_contiguous(1, MPI_INT, &one);
    MPI_Type_commit(&one);
    /* A rank alone in its "pair" (odd world sizes) skips: MPICH 4.0.2's MPI_Allgatherv on
     * one rank ignores the receive displacement. */
    int members;
    MPI_Comm_size(pair, &members);
    for (int k = 0; k < ROUNDS && members == 2; k++)
        errs += round_at(pair, k, k % 4 == 3 ? one : MPI_INT, rank);
    for (int k = 0; k < 6; k++)
        errs += round_at(MPI_COMM_WORLD, k, k % 4 == 3 ? one : MPI_INT, rank);
    if (rank == 0)
        ct_say(rank, "%d rounds of v-forms on pairs done at %d ranks", ROUNDS, size);
    MPI_Type_free(&one);
    MPI_Comm_free(&pair);
    return ct_finish(rank, errs);
}
