/* p2p_lean_wait: Waitall and Testall over arrays mixing nonblocking receives, small and large
 * sends, MPI_REQUEST_NULL and a persistent receive, with statuses and MPI_STATUSES_IGNORE;
 * a truncated receive in a Waitall and in a Testall loop (MPI_ERRORS_RETURN:
 * MPI_ERR_IN_STATUS, the truncated one's MPI_ERR_TRUNCATE, the others MPI_SUCCESS or
 * MPI_ERR_PENDING, then waited for); Waitany and Testsome over such arrays.
 * Ranks pair up as r and r^1 (an odd last rank only takes part in the barriers).
 * issue 16 (rate15): at one subrank per process with TOUCAN_P2P_DIRECT=on the receives and
 * the large send are lean direct requests, which Waitall/Testall poll through the real MPI
 * (core/p2p/leanwait.rs); MPICH's own MPI_Waitall leaves the requests after a failed one
 * unfreed (MPI_ERR_PENDING). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define BIG 16384

/* This rank, its partner, and how many checks failed. */
struct me {
    int rank, peer, bad;
};

static void check_(struct me *m, int cond, const char *what)
{
    if (!cond) {
        printf("rank %d: FAIL %s\n", m->rank, what);
        m->bad++;
    }
}
#define check(cond, what) check_(m, (cond), (what))

static void send_ints(struct me *m, int n, int base, int tag)
{
    int v[8];
    for (int i = 0; i < n; i++)
        v[i] = base + i;
    MPI_Send(v, n, MPI_INT, m->peer, tag, MPI_COMM_WORLD);
}

static void expect(struct me *m, const int *buf, int n, int base, MPI_Status *st, int tag, const char *what)
{
    for (int i = 0; i < n; i++)
        check(buf[i] == base + i, what);
    if (st) {
        int count = -1;
        MPI_Get_count(st, MPI_INT, &count);
        check(st->MPI_SOURCE == m->peer && st->MPI_TAG == tag && count == n, what);
    }
}

static void spin(double s)
{
    double t0 = MPI_Wtime();
    while (MPI_Wtime() - t0 < s) {
    }
}

/* 1-2. A Waitall over two receives, a null handle, a small and a large send. */
static void waitall_mix(struct me *m, int recv_side, int ignore, int *big)
{
    int rank = m->rank, peer = m->peer;
    int a[4], b[4], one = rank;
    MPI_Request r[5];
    MPI_Status sts[5];
    if (recv_side) {
        for (int i = 0; i < BIG; i++)
            big[i] = i ^ 0x5a5a;
        MPI_Irecv(a, 4, MPI_INT, peer, 1, MPI_COMM_WORLD, &r[0]);
        r[1] = MPI_REQUEST_NULL;
        MPI_Isend(&one, 1, MPI_INT, peer, 2, MPI_COMM_WORLD, &r[2]);
        MPI_Irecv(b, 4, MPI_INT, MPI_ANY_SOURCE, 3, MPI_COMM_WORLD, &r[3]);
        MPI_Isend(big, BIG, MPI_INT, peer, 4, MPI_COMM_WORLD, &r[4]);
        check(MPI_Waitall(5, r, ignore ? MPI_STATUSES_IGNORE : sts) == MPI_SUCCESS, "Waitall of a mix");
        for (int k = 0; k < 5; k++)
            check(r[k] == MPI_REQUEST_NULL, "Waitall nulls every handle");
        expect(m, a, 4, 100, ignore ? NULL : &sts[0], 1, "Waitall: first receive");
        expect(m, b, 4, 300, ignore ? NULL : &sts[3], 3, "Waitall: wildcard receive");
        if (!ignore) {
            int count = -1;
            MPI_Get_count(&sts[1], MPI_INT, &count);
            check(sts[1].MPI_SOURCE == MPI_ANY_SOURCE && sts[1].MPI_TAG == MPI_ANY_TAG && count == 0,
                  "Waitall: a null handle's empty status");
        }
    } else {
        MPI_Request q;
        MPI_Irecv(big, BIG, MPI_INT, peer, 4, MPI_COMM_WORLD, &q);
        send_ints(m, 4, 100, 1);
        send_ints(m, 4, 300, 3);
        MPI_Recv(&one, 1, MPI_INT, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        check(one == peer, "the small send's value");
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        for (int i = 0; i < BIG; i++)
            check(big[i] == (i ^ 0x5a5a), "the large send's data");
    }
}

/* 3. A truncated receive first in a Waitall, the others' messages sent around it (one late). */
static void waitall_truncate(struct me *m, int recv_side, int ignore)
{
    int peer = m->peer;
    int a[1], b[4], c[4];
    MPI_Request r[3];
    MPI_Status sts[3];
    if (recv_side) {
        MPI_Irecv(a, 1, MPI_INT, peer, 5, MPI_COMM_WORLD, &r[0]);
        MPI_Irecv(b, 4, MPI_INT, peer, 6, MPI_COMM_WORLD, &r[1]);
        MPI_Irecv(c, 4, MPI_INT, peer, 7, MPI_COMM_WORLD, &r[2]);
        int rc = MPI_Waitall(3, r, ignore ? MPI_STATUSES_IGNORE : sts);
        check(rc == MPI_ERR_IN_STATUS, "Waitall with a truncated receive: MPI_ERR_IN_STATUS");
        if (!ignore) {
            int cls = -1;
            MPI_Error_class(sts[0].MPI_ERROR, &cls);
            check(cls == MPI_ERR_TRUNCATE, "Waitall: the truncated receive's status");
            for (int k = 1; k < 3; k++)
                check(sts[k].MPI_ERROR == MPI_SUCCESS || sts[k].MPI_ERROR == MPI_ERR_PENDING,
                      "Waitall: the others' statuses");
            if (sts[1].MPI_ERROR == MPI_SUCCESS)
                expect(m, b, 4, 600, &sts[1], 6, "Waitall after a truncation: second receive");
            if (sts[2].MPI_ERROR == MPI_SUCCESS)
                expect(m, c, 4, 700, &sts[2], 7, "Waitall after a truncation: third receive");
        }
        /* Those left pending are still active: wait for them. */
        for (int k = 1; k < 3; k++)
            if (r[k] != MPI_REQUEST_NULL)
                check(MPI_Wait(&r[k], MPI_STATUS_IGNORE) == MPI_SUCCESS, "Wait of a pending one");
        expect(m, b, 4, 600, NULL, 6, "second receive's data");
        expect(m, c, 4, 700, NULL, 7, "third receive's data");
    } else {
        send_ints(m, 4, 500, 5);
        send_ints(m, 4, 600, 6);
        spin(0.002);
        send_ints(m, 4, 700, 7);
    }
}

/* 4. Testall over a receive, a null handle and a small send: false until the message is sent. */
static void testall_mix(struct me *m, int recv_side)
{
    int rank = m->rank, peer = m->peer;
    int a[4], one = rank, go = 1, flag = 0;
    MPI_Request r[3];
    MPI_Status sts[3];
    if (recv_side) {
        MPI_Irecv(a, 4, MPI_INT, peer, 8, MPI_COMM_WORLD, &r[0]);
        r[1] = MPI_REQUEST_NULL;
        MPI_Isend(&one, 1, MPI_INT, peer, 9, MPI_COMM_WORLD, &r[2]);
        check(MPI_Testall(3, r, &flag, sts) == MPI_SUCCESS && !flag, "Testall before the message is sent");
        check(r[0] != MPI_REQUEST_NULL && r[2] != MPI_REQUEST_NULL, "Testall false leaves the handles");
        MPI_Send(&go, 1, MPI_INT, peer, 10, MPI_COMM_WORLD);
        while (!flag)
            check(MPI_Testall(3, r, &flag, sts) == MPI_SUCCESS, "Testall");
        for (int k = 0; k < 3; k++)
            check(r[k] == MPI_REQUEST_NULL, "Testall true nulls every handle");
        expect(m, a, 4, 800, &sts[0], 8, "Testall: the receive");
    } else {
        MPI_Recv(&one, 1, MPI_INT, peer, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(&go, 1, MPI_INT, peer, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        send_ints(m, 4, 800, 8);
    }
}

/* 5. A truncated receive in a Testall loop: reported with MPI_ERR_IN_STATUS once. */
static void testall_truncate(struct me *m, int recv_side)
{
    int peer = m->peer;
    int a[1], b[4], go = 1, flag = 0, saw = 0;
    MPI_Request r[2];
    MPI_Status sts[2];
    if (recv_side) {
        MPI_Irecv(a, 1, MPI_INT, peer, 11, MPI_COMM_WORLD, &r[0]);
        MPI_Irecv(b, 4, MPI_INT, peer, 12, MPI_COMM_WORLD, &r[1]);
        MPI_Send(&go, 1, MPI_INT, peer, 13, MPI_COMM_WORLD);
        while (!flag) {
            int rc = MPI_Testall(2, r, &flag, sts);
            if (rc == MPI_ERR_IN_STATUS) {
                int cls = -1;
                MPI_Error_class(sts[0].MPI_ERROR, &cls);
                saw += cls == MPI_ERR_TRUNCATE;
            } else
                check(rc == MPI_SUCCESS, "Testall's code");
        }
        check(saw == 1, "Testall reports the truncation once");
        expect(m, b, 4, 1200, NULL, 12, "Testall after a truncation: the other receive");
    } else {
        MPI_Recv(&go, 1, MPI_INT, peer, 13, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        send_ints(m, 4, 1100, 11);
        send_ints(m, 4, 1200, 12);
    }
}

/* 6. Waitany and Testsome over a null handle, a receive and a small send. */
static void any_some(struct me *m, int recv_side)
{
    int rank = m->rank, peer = m->peer;
    int a[4], b[4], one = rank, done = 0, idx, out, ind[3];
    MPI_Request r[3];
    MPI_Status st, sts[3];
    if (recv_side) {
        r[0] = MPI_REQUEST_NULL;
        MPI_Irecv(a, 4, MPI_INT, peer, 14, MPI_COMM_WORLD, &r[1]);
        MPI_Isend(&one, 1, MPI_INT, peer, 15, MPI_COMM_WORLD, &r[2]);
        for (;;) {
            MPI_Waitany(3, r, &idx, &st);
            if (idx == MPI_UNDEFINED)
                break;
            done++;
            if (idx == 1)
                expect(m, a, 4, 1400, &st, 14, "Waitany: the receive");
        }
        check(done == 2, "Waitany completes the receive and the send");
        r[0] = MPI_REQUEST_NULL;
        MPI_Irecv(b, 4, MPI_INT, peer, 16, MPI_COMM_WORLD, &r[1]);
        MPI_Isend(&one, 1, MPI_INT, peer, 17, MPI_COMM_WORLD, &r[2]);
        done = 0;
        for (;;) {
            MPI_Testsome(3, r, &out, ind, sts);
            if (out == MPI_UNDEFINED)
                break;
            for (int k = 0; k < out; k++)
                if (ind[k] == 1)
                    expect(m, b, 4, 1600, &sts[k], 16, "Testsome: the receive");
            done += out;
        }
        check(done == 2, "Testsome completes the receive and the send");
    } else {
        MPI_Recv(&one, 1, MPI_INT, peer, 15, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        send_ints(m, 4, 1400, 14);
        MPI_Recv(&one, 1, MPI_INT, peer, 17, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        send_ints(m, 4, 1600, 16);
    }
}

/* 7. A persistent receive in a Waitall with a receive and a small send, started twice. */
static void persistent_mix(struct me *m, int recv_side)
{
    int rank = m->rank, peer = m->peer;
    int a[4], c[4], one = rank;
    MPI_Request r[3], pr;
    MPI_Status sts[3];
    if (recv_side) {
        MPI_Recv_init(c, 4, MPI_INT, peer, 18, MPI_COMM_WORLD, &pr);
        MPI_Start(&pr);
        r[0] = pr;
        MPI_Irecv(a, 4, MPI_INT, peer, 19, MPI_COMM_WORLD, &r[1]);
        MPI_Isend(&one, 1, MPI_INT, peer, 20, MPI_COMM_WORLD, &r[2]);
        check(MPI_Waitall(3, r, sts) == MPI_SUCCESS, "Waitall with a persistent receive");
        check(r[0] == pr && r[1] == MPI_REQUEST_NULL && r[2] == MPI_REQUEST_NULL, "Waitall keeps the persistent handle");
        expect(m, c, 4, 1800, &sts[0], 18, "persistent receive, first start");
        expect(m, a, 4, 1900, &sts[1], 19, "the receive beside it");
        MPI_Start(&pr);
        r[0] = pr;
        r[1] = MPI_REQUEST_NULL;
        check(MPI_Waitall(2, r, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "Waitall of a restarted persistent receive");
        expect(m, c, 4, 1810, NULL, 18, "persistent receive, second start");
        MPI_Request_free(&pr);
    } else {
        MPI_Recv(&one, 1, MPI_INT, peer, 20, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        send_ints(m, 4, 1800, 18);
        send_ints(m, 4, 1900, 19);
        send_ints(m, 4, 1810, 18);
    }
}

int main(int argc, char **argv)
{
    int size;
    struct me me = {0, 0, 0};
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    me.peer = me.rank ^ 1;
    int active = me.peer < size, recv_side = me.rank < me.peer;
    int *big = malloc(BIG * sizeof(int));
    for (int ignore = 0; ignore < 2; ignore++) {
        if (active)
            waitall_mix(&me, recv_side, ignore, big);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    for (int ignore = 0; ignore < 2; ignore++) {
        if (active)
            waitall_truncate(&me, recv_side, ignore);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (active)
        testall_mix(&me, recv_side);
    MPI_Barrier(MPI_COMM_WORLD);
    if (active)
        testall_truncate(&me, recv_side);
    MPI_Barrier(MPI_COMM_WORLD);
    if (active)
        any_some(&me, recv_side);
    MPI_Barrier(MPI_COMM_WORLD);
    if (active)
        persistent_mix(&me, recv_side);
    int all;
    MPI_Allreduce(&me.bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (all == 0)
        printf("rank %d: OK\n", me.rank);
    free(big);
    MPI_Finalize();
    return 0;
}
