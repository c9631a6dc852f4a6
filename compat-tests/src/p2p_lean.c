/* p2p_lean: nonblocking requests completed by every completion call, not only Wait/Waitall:
 * Test, Testall, Testany, Testsome, Waitany, Waitsome, Request_get_status, Cancel and
 * Request_free on receives (and a large send) that are still in flight, and requests waited
 * for after their rank blocked in another call (a blocking receive that parks, a barrier).
 * Ranks pair up as r and r^1 (an odd last rank only takes part in the barriers).
 * issue 16 (p2p8): at one subrank per process with TOUCAN_P2P_DIRECT=on these are "lean"
 * direct requests (docs/p2p.md), which the engine takes over only when such a call sees them. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BIG (256 * 1024)

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
#define check(cond, what) check_(&m, (cond), (what))

static void expect_msg_(struct me *m, const int *buf, int n, int base, MPI_Status *st, int tag, const char *what)
{
    int count = -1;
    for (int i = 0; i < n; i++)
        check_(m, buf[i] == base + i, what);
    if (st) {
        MPI_Get_count(st, MPI_INT, &count);
        check_(m, st->MPI_SOURCE == m->peer && st->MPI_TAG == tag && count == n, what);
    }
}
#define expect_msg(buf, n, base, st, tag, what) expect_msg_(&m, (buf), (n), (base), (st), (tag), (what))

/* The sender's side: message `tag` of `n` ints base, base+1, ... to `peer`. */
static void send_ints_(int peer, int n, int base, int tag)
{
    int buf[16];
    for (int i = 0; i < n; i++)
        buf[i] = base + i;
    MPI_Send(buf, n, MPI_INT, peer, tag, MPI_COMM_WORLD);
}
#define send_ints(n, base, tag) send_ints_(peer, (n), (base), (tag))

int main(int argc, char **argv)
{
    int rank, peer, size, flag, idx, out, a[16], b[16], c[16];
    struct me m = {0, 0, 0};
    MPI_Request r[3];
    MPI_Status st, sts[3];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    peer = rank ^ 1;
    m.rank = rank;
    m.peer = peer;
    int active = peer < size;
    int recv_side = (rank & 1) == 0;

    /* 1. MPI_Test until done, MPI_Request_get_status until done. */
    if (active && recv_side) {
        MPI_Irecv(a, 4, MPI_INT, peer, 1, MPI_COMM_WORLD, &r[0]);
        MPI_Irecv(b, 4, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &r[1]);
        MPI_Send(&rank, 1, MPI_INT, peer, 99, MPI_COMM_WORLD); /* go */
        for (flag = 0; !flag;)
            MPI_Test(&r[0], &flag, &st);
        check(r[0] == MPI_REQUEST_NULL, "Test nulls the handle");
        expect_msg(a, 4, 100, &st, 1, "Test");
        for (flag = 0; !flag;)
            MPI_Request_get_status(r[1], &flag, &st);
        check(r[1] != MPI_REQUEST_NULL, "Request_get_status keeps the handle");
        expect_msg(b, 4, 200, &st, 2, "Request_get_status");
        MPI_Wait(&r[1], &st);
        expect_msg(b, 4, 200, &st, 2, "Wait after Request_get_status");
    } else if (active) {
        MPI_Recv(&out, 1, MPI_INT, peer, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        send_ints(4, 100, 1);
        send_ints(4, 200, 2);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* 2. Waitany, Testany, Waitsome, Testsome, Testall over receives in flight. */
    if (active && recv_side) {
        int seen = 0;
        MPI_Irecv(a, 3, MPI_INT, peer, 3, MPI_COMM_WORLD, &r[0]);
        MPI_Irecv(b, 3, MPI_INT, peer, 4, MPI_COMM_WORLD, &r[1]);
        MPI_Irecv(c, 3, MPI_INT, peer, 5, MPI_COMM_WORLD, &r[2]);
        MPI_Send(&rank, 1, MPI_INT, peer, 99, MPI_COMM_WORLD);
        MPI_Waitany(3, r, &idx, &st);
        check(idx >= 0 && idx < 3 && st.MPI_TAG == 3 + idx, "Waitany");
        seen |= 1 << idx;
        for (flag = 0; !flag;)
            MPI_Testany(3, r, &idx, &flag, &st);
        check(idx >= 0 && idx < 3 && !(seen & (1 << idx)) && st.MPI_TAG == 3 + idx, "Testany");
        seen |= 1 << idx;
        int ind[3];
        for (out = 0; out == 0;)
            MPI_Testsome(3, r, &out, ind, sts);
        check(out == 1 && !(seen & (1 << ind[0])) && sts[0].MPI_TAG == 3 + ind[0], "Testsome");
        MPI_Waitsome(3, r, &out, ind, sts);
        check(out == MPI_UNDEFINED, "Waitsome of null handles");
        expect_msg(a, 3, 300, NULL, 3, "Waitany data");
        expect_msg(b, 3, 400, NULL, 4, "Testany data");
        expect_msg(c, 3, 500, NULL, 5, "Testsome data");

        MPI_Irecv(a, 2, MPI_INT, peer, 6, MPI_COMM_WORLD, &r[0]);
        MPI_Irecv(b, 2, MPI_INT, peer, 7, MPI_COMM_WORLD, &r[1]);
        MPI_Send(&rank, 1, MPI_INT, peer, 99, MPI_COMM_WORLD);
        MPI_Waitsome(2, r, &out, ind, sts);
        check(out >= 1, "Waitsome");
        for (flag = 0; !flag;)
            MPI_Testall(2, r, &flag, sts);
        expect_msg(a, 2, 600, NULL, 6, "Waitsome data");
        expect_msg(b, 2, 700, NULL, 7, "Testall data");
    } else if (active) {
        MPI_Recv(&out, 1, MPI_INT, peer, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        send_ints(3, 300, 3);
        send_ints(3, 400, 4);
        send_ints(3, 500, 5);
        MPI_Recv(&out, 1, MPI_INT, peer, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        send_ints(2, 600, 6);
        send_ints(2, 700, 7);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* 3. Cancel of a receive nobody matches; Cancel of one already matched; Request_free of
     * one in flight, matched later by a synchronous send. */
    if (active && recv_side) {
        MPI_Irecv(a, 1, MPI_INT, peer, 8, MPI_COMM_WORLD, &r[0]);
        MPI_Cancel(&r[0]);
        MPI_Wait(&r[0], &st);
        MPI_Test_cancelled(&st, &flag);
        check(flag, "Cancel of an unmatched receive");
        MPI_Irecv(a, 4, MPI_INT, peer, 9, MPI_COMM_WORLD, &r[0]);
        MPI_Send(&rank, 1, MPI_INT, peer, 99, MPI_COMM_WORLD);
        MPI_Recv(&out, 1, MPI_INT, peer, 98, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* after tag 9 */
        MPI_Cancel(&r[0]);
        MPI_Wait(&r[0], &st);
        MPI_Test_cancelled(&st, &flag);
        if (!flag)
            expect_msg(a, 4, 900, &st, 9, "Cancel after the message came");
        MPI_Irecv(b, 4, MPI_INT, peer, 10, MPI_COMM_WORLD, &r[1]);
        MPI_Request_free(&r[1]);
        check(r[1] == MPI_REQUEST_NULL, "Request_free nulls the handle");
        MPI_Send(&rank, 1, MPI_INT, peer, 99, MPI_COMM_WORLD);
    } else if (active) {
        MPI_Recv(&out, 1, MPI_INT, peer, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        send_ints(4, 900, 9);
        MPI_Send(&rank, 1, MPI_INT, peer, 98, MPI_COMM_WORLD);
        MPI_Recv(&out, 1, MPI_INT, peer, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        int buf[4] = {1000, 1001, 1002, 1003};
        MPI_Ssend(buf, 4, MPI_INT, peer, 10, MPI_COMM_WORLD); /* matched by the freed receive */
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* 4. Requests waited for after their rank blocked elsewhere: a receive and a large send
     * started, then a blocking receive that waits (the peer first sleeps in a barrier-free
     * delay loop of its own), then the waits. */
    {
        int *big = malloc(BIG), *bigr = malloc(BIG);
        for (int i = 0; i < BIG / 4; i++)
            big[i] = rank * 7 + i;
        if (active) {
            MPI_Irecv(a, 4, MPI_INT, peer, 11, MPI_COMM_WORLD, &r[0]);
            MPI_Isend(big, BIG / 4, MPI_INT, peer, 12, MPI_COMM_WORLD, &r[1]);
            if (recv_side) {
                MPI_Recv(&out, 1, MPI_INT, peer, 13, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Recv(bigr, BIG / 4, MPI_INT, peer, 12, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                send_ints(4, 1100, 11);
            } else {
                double t0 = MPI_Wtime();
                while (MPI_Wtime() - t0 < 0.05)
                    ;
                MPI_Send(&rank, 1, MPI_INT, peer, 13, MPI_COMM_WORLD);
                send_ints(4, 1100, 11);
                MPI_Recv(bigr, BIG / 4, MPI_INT, peer, 12, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
            MPI_Waitall(2, r, sts);
            expect_msg(a, 4, 1100, &sts[0], 11, "receive waited after a blocking receive");
            for (int i = 0; i < BIG / 4; i++)
                if (bigr[i] != peer * 7 + i) {
                    check(0, "large send waited after a blocking receive");
                    break;
                }
        }
        /* A receive started before a barrier in which its rank parks, waited after it. */
        if (active)
            MPI_Irecv(a, 4, MPI_INT, peer, 14, MPI_COMM_WORLD, &r[0]);
        MPI_Barrier(MPI_COMM_WORLD);
        if (active) {
            send_ints(4, 1400, 14);
            MPI_Wait(&r[0], &st);
            expect_msg(a, 4, 1400, &st, 14, "receive waited after a barrier");
        }
        free(big);
        free(bigr);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* 5. Receives in flight when the program checks nothing for a while: the same request
     * waited twice through MPI_Wait (second: null handle, empty status). */
    if (active) {
        MPI_Irecv(a, 4, MPI_INT, peer, 15, MPI_COMM_WORLD, &r[0]);
        send_ints(4, 1500, 15);
        MPI_Wait(&r[0], &st);
        expect_msg(a, 4, 1500, &st, 15, "Wait");
        MPI_Wait(&r[0], &st);
        check(st.MPI_SOURCE == MPI_ANY_SOURCE && st.MPI_TAG == MPI_ANY_TAG, "Wait of a null handle");
    }

    MPI_Barrier(MPI_COMM_WORLD);

    /* 6. One Waitall over a receive that a Test has looked at (in flight) and one that
     * nothing has looked at yet. */
    if (active && recv_side) {
        MPI_Irecv(a, 4, MPI_INT, peer, 16, MPI_COMM_WORLD, &r[0]);
        MPI_Test(&r[0], &flag, &st);
        check(!flag, "Test before the message was sent");
        MPI_Irecv(b, 4, MPI_INT, MPI_ANY_SOURCE, 17, MPI_COMM_WORLD, &r[1]);
        MPI_Send(&rank, 1, MPI_INT, peer, 99, MPI_COMM_WORLD);
        MPI_Waitall(2, r, sts);
        expect_msg(a, 4, 1600, &sts[0], 16, "Waitall after Test");
        expect_msg(b, 4, 1700, &sts[1], 17, "Waitall with a fresh receive");
    } else if (active) {
        MPI_Recv(&out, 1, MPI_INT, peer, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        send_ints(4, 1600, 16);
        send_ints(4, 1700, 17);
    }

    int all;
    MPI_Allreduce(&m.bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (all == 0)
        printf("rank %d: OK\n", rank);
    MPI_Finalize();
    return 0;
}
