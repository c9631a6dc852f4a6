/* p2p_waitall_late: MPI_Waitall whose requests complete late and out of order, and windows
 * larger than Toucan's ring of pre-posted real receives with every size class around its eager
 * limit. Ranks pair up as r and r^1 (an odd last rank only takes part in the barriers).
 * issue 16 (p2p9): at one worker per process Toucan's Waitall takes complete requests in order
 * under one lock and polls in place (`waitall_alone`) before the general path parks; these cases
 * finish part of the array there and the rest after parking (statuses merged), or none there.
 *   1. [a complete send, a receive the partner sends 30 ms later]
 *   2. [a late receive, then a complete send] (nothing taken before the general path)
 *   3. [a complete send, a late receive truncated]: MPI_ERR_IN_STATUS, statuses per entry
 *   4. a window of 40 receives and 40 sends (more than the ring's 32 slots) of sizes 0 to
 *      256 KiB, around the eager limit (8 KiB) and the tiny-send bound (256 B), all in one
 *      MPI_Waitall, the partner's sends posted 20 ms late; three rounds.
 *   5. small sends that complete at once (Toucan gives them one built-in complete request,
 *      as MPICH does) taken by every completion call: Request_free, Cancel + Wait +
 *      Test_cancelled, Test, Request_get_status then Wait, Testsome and Waitany over two at
 *      once, Waitsome, Testall, and Request_c2f/f2c before Wait. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WIN 40

/* This rank (in the world) and how many checks failed. */
struct me {
    int rank, bad;
};

static void check_(struct me *m, int cond, const char *what)
{
    if (!cond) {
        printf("rank %d: FAIL %s\n", m->rank, what);
        m->bad++;
    }
}
#define check(cond, what) check_(m, (cond), (what))

/* Spins (calling no MPI) for ms milliseconds: the partner's wait polls meanwhile. */
static void late(int ms)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do clock_gettime(CLOCK_MONOTONIC, &t);
    while ((t.tv_sec - t0.tv_sec) * 1000.0 + (t.tv_nsec - t0.tv_nsec) / 1e6 < ms);
}

static int size_of(int j)
{
    const int sizes[] = {0, 1, 8, 255, 256, 257, 1000, 4096, 8191, 8192, 8193, 8216, 16384, 65536, 262144};
    return sizes[j % (int)(sizeof sizes / sizeof *sizes)];
}

static void cases(struct me *m, MPI_Comm comm, int me, int peer)
{
    int a = me < peer; /* the one that waits */
    int s[4] = {1, 2, 3, 4}, r[4] = {0}, count;
    MPI_Request req[2];
    MPI_Status st[2];

    /* 1: complete send first, late receive second. */
    if (a) {
        MPI_Isend(s, 4, MPI_INT, peer, 6, comm, &req[0]);
        MPI_Irecv(r, 4, MPI_INT, peer, 5, comm, &req[1]);
        MPI_Waitall(2, req, st);
        MPI_Get_count(&st[1], MPI_INT, &count);
        check(req[0] == MPI_REQUEST_NULL && req[1] == MPI_REQUEST_NULL, "1: handles nulled");
        check(st[1].MPI_SOURCE == peer && st[1].MPI_TAG == 5 && count == 4 && r[3] == 40, "1: late receive's status");
    } else {
        MPI_Recv(r, 4, MPI_INT, peer, 6, comm, MPI_STATUS_IGNORE);
        check(r[3] == 4, "1: send's data");
        late(30);
        int v[4] = {10, 20, 30, 40};
        MPI_Send(v, 4, MPI_INT, peer, 5, comm);
    }
    MPI_Barrier(comm);

    /* 2: late receive first, complete send second. */
    memset(r, 0, sizeof r);
    if (a) {
        MPI_Irecv(r, 4, MPI_INT, peer, 7, comm, &req[0]);
        MPI_Isend(s, 4, MPI_INT, peer, 8, comm, &req[1]);
        MPI_Waitall(2, req, st);
        MPI_Get_count(&st[0], MPI_INT, &count);
        check(st[0].MPI_SOURCE == peer && st[0].MPI_TAG == 7 && count == 3 && r[2] == 9, "2: late receive's status");
    } else {
        MPI_Recv(r, 4, MPI_INT, peer, 8, comm, MPI_STATUS_IGNORE);
        late(30);
        int v[3] = {7, 8, 9};
        MPI_Send(v, 3, MPI_INT, peer, 7, comm);
    }
    MPI_Barrier(comm);

    /* 3: complete send, then a late receive that is truncated. */
    if (a) {
        /* MPICH reports a multiple completion's error on the world's handler, MPI on the
         * requests' communicator: both return. */
        MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        MPI_Isend(s, 4, MPI_INT, peer, 10, comm, &req[0]);
        MPI_Irecv(r, 2, MPI_INT, peer, 9, comm, &req[1]);
        int rc = MPI_Waitall(2, req, st);
        int cls;
        MPI_Error_class(rc, &cls);
        check(cls == MPI_ERR_IN_STATUS, "3: MPI_ERR_IN_STATUS");
        MPI_Error_class(st[1].MPI_ERROR, &cls);
        check(cls == MPI_ERR_TRUNCATE, "3: the receive's MPI_ERR_TRUNCATE");
        check(st[0].MPI_ERROR == MPI_SUCCESS, "3: the send's MPI_SUCCESS");
        check(st[1].MPI_SOURCE == peer && st[1].MPI_TAG == 9, "3: the truncated receive's envelope");
        MPI_Comm_set_errhandler(comm, MPI_ERRORS_ARE_FATAL);
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    } else {
        MPI_Recv(r, 4, MPI_INT, peer, 10, comm, MPI_STATUS_IGNORE);
        late(30);
        int v[4] = {1, 2, 3, 4};
        MPI_Send(v, 4, MPI_INT, peer, 9, comm);
    }
    MPI_Barrier(comm);

    /* 4: windows larger than the ring, every size class, the partner late. */
    char *sb[WIN], *rb[WIN];
    MPI_Request w[2 * WIN];
    for (int j = 0; j < WIN; j++) {
        sb[j] = malloc(size_of(j) + 1);
        rb[j] = malloc(size_of(j) + 1);
    }
    for (int round = 0; round < 3; round++) {
        for (int j = 0; j < WIN; j++) {
            for (int i = 0; i < size_of(j); i++) sb[j][i] = (char)(me * 31 + j * 7 + i + round);
            memset(rb[j], 0, size_of(j) + 1);
        }
        if (!a) late(20);
        for (int j = 0; j < WIN; j++) MPI_Irecv(rb[j], size_of(j), MPI_CHAR, peer, j, comm, &w[j]);
        if (!a) late(20);
        for (int j = 0; j < WIN; j++) MPI_Isend(sb[j], size_of(j), MPI_CHAR, peer, j, comm, &w[WIN + j]);
        MPI_Status ws[2 * WIN];
        MPI_Waitall(2 * WIN, w, ws);
        int ok = 1;
        for (int j = 0; j < WIN; j++) {
            MPI_Get_count(&ws[j], MPI_CHAR, &count);
            ok &= count == size_of(j) && ws[j].MPI_TAG == j && ws[j].MPI_SOURCE == peer;
            for (int i = 0; i < size_of(j); i++) ok &= rb[j][i] == (char)(peer * 31 + j * 7 + i + round);
        }
        check(ok, "4: a window of every size class");
    }
    for (int j = 0; j < WIN; j++) {
        free(sb[j]);
        free(rb[j]);
    }
    MPI_Barrier(comm);

    /* 5: sends complete at once, taken by every completion call (12 messages of tag 20 + i). */
    if (a) {
        int v[12], flag, idx, out, ids[2];
        MPI_Request q[2];
        MPI_Status qs[2];
        for (int i = 0; i < 12; i++) v[i] = 100 + i;
        MPI_Isend(&v[0], 1, MPI_INT, peer, 20, comm, &q[0]);
        MPI_Request_free(&q[0]);
        check(q[0] == MPI_REQUEST_NULL, "5: Request_free nulls");
        MPI_Isend(&v[1], 1, MPI_INT, peer, 21, comm, &q[0]);
        MPI_Cancel(&q[0]);
        MPI_Wait(&q[0], &qs[0]);
        MPI_Test_cancelled(&qs[0], &flag);
        check(!flag, "5: a complete send is not cancelled");
        MPI_Isend(&v[2], 1, MPI_INT, peer, 22, comm, &q[0]);
        do MPI_Test(&q[0], &flag, MPI_STATUS_IGNORE);
        while (!flag);
        check(q[0] == MPI_REQUEST_NULL, "5: Test nulls");
        MPI_Isend(&v[3], 1, MPI_INT, peer, 23, comm, &q[0]);
        do MPI_Request_get_status(q[0], &flag, MPI_STATUS_IGNORE);
        while (!flag);
        MPI_Wait(&q[0], MPI_STATUS_IGNORE);
        check(q[0] == MPI_REQUEST_NULL, "5: get_status then Wait");
        MPI_Isend(&v[4], 1, MPI_INT, peer, 24, comm, &q[0]);
        MPI_Isend(&v[5], 1, MPI_INT, peer, 25, comm, &q[1]);
        out = 0;
        for (int got = 0; got < 2; got += out == MPI_UNDEFINED ? 0 : out) MPI_Testsome(2, q, &out, ids, qs);
        check(q[0] == MPI_REQUEST_NULL && q[1] == MPI_REQUEST_NULL, "5: Testsome of two");
        MPI_Isend(&v[6], 1, MPI_INT, peer, 26, comm, &q[0]);
        MPI_Isend(&v[7], 1, MPI_INT, peer, 27, comm, &q[1]);
        MPI_Waitany(2, q, &idx, &qs[0]);
        MPI_Waitany(2, q, &out, &qs[0]);
        check(idx != out && q[0] == MPI_REQUEST_NULL && q[1] == MPI_REQUEST_NULL, "5: Waitany twice");
        MPI_Isend(&v[8], 1, MPI_INT, peer, 28, comm, &q[0]);
        MPI_Isend(&v[9], 1, MPI_INT, peer, 29, comm, &q[1]);
        for (int got = 0; got < 2; got += out) MPI_Waitsome(2, q, &out, ids, qs);
        MPI_Isend(&v[10], 1, MPI_INT, peer, 30, comm, &q[0]);
        MPI_Fint f = MPI_Request_c2f(q[0]);
        q[0] = MPI_Request_f2c(f);
        MPI_Isend(&v[11], 1, MPI_INT, peer, 31, comm, &q[1]);
        do MPI_Testall(2, q, &flag, qs);
        while (!flag);
        check(q[0] == MPI_REQUEST_NULL && q[1] == MPI_REQUEST_NULL, "5: Request_f2c, Testall");
    } else {
        int v[12] = {0}, ok = 1;
        for (int i = 0; i < 12; i++) MPI_Recv(&v[i], 1, MPI_INT, peer, 20 + i, comm, MPI_STATUS_IGNORE);
        for (int i = 0; i < 12; i++) ok &= v[i] == 100 + i;
        check(ok, "5: every message arrived");
    }
    MPI_Barrier(comm);
}

int main(int argc, char **argv)
{
    int size, rank;
    struct me m = {0, 0};
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    m.rank = rank;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int peer = rank ^ 1;
    MPI_Comm pair;
    MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, &pair);
    if (peer < size) {
        int prank;
        MPI_Comm_rank(pair, &prank);
        cases(&m, pair, prank, prank ^ 1);
        /* and on the world, where the pass-through applies too */
        cases(&m, MPI_COMM_WORLD, rank, peer);
    } else {
        for (int i = 0; i < 5; i++) MPI_Barrier(MPI_COMM_WORLD); /* cases' barriers on the world */
    }
    MPI_Comm_free(&pair);
    MPI_Barrier(MPI_COMM_WORLD);
    if (m.bad == 0) printf("rank %d: OK\n", rank);
    MPI_Finalize();
    return 0;
}
