/* p2p_ring_match: MPI's matching order for messages that arrive while receives are posted.
 * Ranks pair up as r and r^1; the lower one receives. In every case the receiver posts its
 * receives first, a barrier lets the sender go, the sender sends, and the receiver waits after
 * computing a little without calling MPI (so the messages wait in the transport and are
 * matched as they are taken in). issue 16 (p2p11): with one subrank per process Toucan copies
 * an eager message that matches its subrank's first posted receive straight from the ring of
 * pre-posted real receives; anything else takes the general matching. These cases pin the
 * order around that shortcut:
 *   1. a wildcard receive (MPI_ANY_SOURCE, MPI_ANY_TAG) posted before a specific one, two
 *      messages of the same tag: the first message goes to the wildcard (non-overtaking)
 *   2. a first receive that does not match (another tag, another communicator) before one
 *      that does: the message passes it, the later message takes it
 *   3. a probe between: the first posted receive does not match the first message, which
 *      MPI_Probe then sees and MPI_Recv takes; MPI_Mprobe + MPI_Mrecv likewise
 *   4. a cancelled receive at the front: the next receive gets the message
 *   5. truncation: a message longer than the first posted receive: MPI_ERR_TRUNCATE on its
 *      status, the next receive unharmed
 *   6. a synchronous send and a message above the eager limit (a rendezvous) in front of
 *      small messages with the same envelope: received in order
 *   7. a window of 24 receives with a wildcard every third, 24 messages */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* This rank (in the world), its checks and how many failed. */
struct me {
    int rank, bad, checks;
};

static void check_(struct me *m, int cond, const char *what, int line)
{
    m->checks++;
    if (!cond) {
        printf("rank %d: FAIL %s (line %d)\n", m->rank, what, line);
        m->bad++;
    }
}
#define check(cond, what) check_(m, (cond), (what), __LINE__)

/* Computes for ms milliseconds without calling MPI. */
static void late(int ms)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do clock_gettime(CLOCK_MONOTONIC, &t);
    while ((t.tv_sec - t0.tv_sec) * 1000.0 + (t.tv_nsec - t0.tv_nsec) / 1e6 < ms);
}

static void cases(struct me *m, MPI_Comm comm, MPI_Comm other, int me, int peer)
{
    int recv = me < peer;
    int v[8], w[8], x[8];
    MPI_Request q[4];
    MPI_Status st[4];
    int flag, count;

    /* 1: a wildcard before a specific receive, two messages with tag 5. */
    if (recv) {
        v[0] = w[0] = -1;
        MPI_Irecv(v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &q[0]);
        MPI_Irecv(w, 1, MPI_INT, peer, 5, comm, &q[1]);
        MPI_Barrier(comm);
        late(10);
        MPI_Waitall(2, q, st);
        check(v[0] == 100 && w[0] == 101, "1: the wildcard receive gets the first message");
        check(st[0].MPI_SOURCE == peer && st[0].MPI_TAG == 5, "1: the wildcard's status");
    } else {
        MPI_Barrier(comm);
        int a = 100, b = 101;
        MPI_Send(&a, 1, MPI_INT, peer, 5, comm);
        MPI_Send(&b, 1, MPI_INT, peer, 5, comm);
    }

    /* 2: receives that do not match first (tag 7; any message on another communicator). */
    if (recv) {
        v[0] = w[0] = x[0] = -1;
        MPI_Irecv(v, 1, MPI_INT, peer, 7, comm, &q[0]);
        MPI_Irecv(x, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, other, &q[1]);
        MPI_Irecv(w, 1, MPI_INT, peer, MPI_ANY_TAG, comm, &q[2]);
        MPI_Barrier(comm);
        late(10);
        MPI_Waitall(3, q, st);
        check(w[0] == 200 && st[2].MPI_TAG == 8, "2: the tag-8 message passes the tag-7 receive");
        check(v[0] == 201 && st[0].MPI_TAG == 7, "2: the tag-7 message takes the tag-7 receive");
        check(x[0] == 202 && st[1].MPI_SOURCE == peer, "2: the other communicator's receive");
    } else {
        MPI_Barrier(comm);
        int a = 200, b = 201, c = 202;
        MPI_Send(&a, 1, MPI_INT, peer, 8, comm);
        MPI_Send(&b, 1, MPI_INT, peer, 7, comm);
        MPI_Send(&c, 1, MPI_INT, peer, 1, other);
    }

    /* 3: a probe between: receive tag 1 posted; messages tag 2, then tag 1, then tag 3. */
    if (recv) {
        v[0] = w[0] = x[0] = -1;
        MPI_Irecv(v, 1, MPI_INT, peer, 1, comm, &q[0]);
        MPI_Barrier(comm);
        late(10);
        MPI_Probe(peer, 2, comm, &st[1]);
        MPI_Get_count(&st[1], MPI_INT, &count);
        check(st[1].MPI_TAG == 2 && count == 1, "3: MPI_Probe sees the tag-2 message");
        MPI_Iprobe(peer, 1, comm, &flag, &st[1]);
        check(!flag, "3: the tag-1 message went to the posted receive, not the queue");
        MPI_Wait(&q[0], &st[0]);
        check(v[0] == 301 && st[0].MPI_TAG == 1, "3: the posted receive gets the tag-1 message");
        MPI_Recv(w, 1, MPI_INT, peer, 2, comm, &st[1]);
        check(w[0] == 300, "3: MPI_Recv takes the probed message");
        MPI_Message msg;
        MPI_Mprobe(peer, MPI_ANY_TAG, comm, &msg, &st[2]);
        check(st[2].MPI_TAG == 3, "3: MPI_Mprobe sees the tag-3 message");
        MPI_Mrecv(x, 1, MPI_INT, &msg, &st[2]);
        check(x[0] == 302, "3: MPI_Mrecv takes it");
    } else {
        MPI_Barrier(comm);
        int a = 300, b = 301, c = 302;
        MPI_Send(&a, 1, MPI_INT, peer, 2, comm);
        MPI_Send(&b, 1, MPI_INT, peer, 1, comm);
        MPI_Send(&c, 1, MPI_INT, peer, 3, comm);
    }

    /* 4: a cancelled receive at the front (tag 3), then a specific and a wildcard one. */
    if (recv) {
        v[0] = w[0] = x[0] = -1;
        MPI_Irecv(x, 1, MPI_INT, peer, 3, comm, &q[0]);
        MPI_Irecv(v, 1, MPI_INT, peer, 3, comm, &q[1]);
        MPI_Irecv(w, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &q[2]);
        MPI_Cancel(&q[0]);
        MPI_Wait(&q[0], &st[0]);
        MPI_Test_cancelled(&st[0], &flag);
        check(flag, "4: the front receive is cancelled");
        MPI_Barrier(comm);
        late(10);
        MPI_Waitall(2, &q[1], &st[1]);
        check(x[0] == -1, "4: the cancelled receive's buffer is untouched");
        check(v[0] == 400 && w[0] == 401, "4: the receives behind it get the messages in order");
    } else {
        MPI_Barrier(comm);
        int a = 400, b = 401;
        MPI_Send(&a, 1, MPI_INT, peer, 3, comm);
        MPI_Send(&b, 1, MPI_INT, peer, 3, comm);
    }

    /* 5: truncation at the front: 4 ints into room for 2, then 1 int. */
    if (recv) {
        /* MPICH reports a completion's error to MPI_COMM_WORLD's handler. */
        MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        v[0] = w[0] = -1;
        MPI_Irecv(v, 2, MPI_INT, peer, 4, comm, &q[0]);
        MPI_Irecv(w, 1, MPI_INT, peer, 4, comm, &q[1]);
        MPI_Barrier(comm);
        late(10);
        int rc = MPI_Waitall(2, q, st), cls;
        MPI_Error_class(rc, &cls);
        check(cls == MPI_ERR_IN_STATUS, "5: MPI_Waitall reports MPI_ERR_IN_STATUS");
        MPI_Error_class(st[0].MPI_ERROR, &cls);
        check(cls == MPI_ERR_TRUNCATE, "5: the short receive's MPI_ERR_TRUNCATE");
        /* MPICH leaves the other request to a later wait (MPI_ERR_PENDING). */
        if (q[1] != MPI_REQUEST_NULL) MPI_Wait(&q[1], &st[1]);
        check(w[0] == 501 && st[1].MPI_TAG == 4, "5: the next receive unharmed");
        check(st[0].MPI_SOURCE == peer && st[0].MPI_TAG == 4, "5: the truncated receive's envelope");
        MPI_Comm_set_errhandler(comm, MPI_ERRORS_ARE_FATAL);
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    } else {
        MPI_Barrier(comm);
        int a[4] = {500, 500, 500, 500}, b = 501;
        MPI_Send(a, 4, MPI_INT, peer, 4, comm);
        MPI_Send(&b, 1, MPI_INT, peer, 4, comm);
    }

    /* 6: a synchronous send and a rendezvous before small messages of the same envelope. */
    enum { BIG = 100000 };
    int *big = malloc(BIG * sizeof(int));
    if (recv) {
        v[0] = w[0] = x[0] = -1;
        memset(big, 0, BIG * sizeof(int));
        MPI_Irecv(v, 1, MPI_INT, peer, 6, comm, &q[0]);
        MPI_Irecv(w, 1, MPI_INT, peer, 6, comm, &q[1]);
        MPI_Irecv(big, BIG, MPI_INT, peer, MPI_ANY_TAG, comm, &q[2]);
        MPI_Irecv(x, 1, MPI_INT, MPI_ANY_SOURCE, 6, comm, &q[3]);
        MPI_Barrier(comm);
        late(10);
        MPI_Waitall(4, q, st);
        MPI_Get_count(&st[2], MPI_INT, &count);
        check(v[0] == 600 && w[0] == 601 && x[0] == 602, "6: the small messages in order");
        check(count == BIG && big[0] == 7 && big[BIG - 1] == 7, "6: the large message");
    } else {
        for (int i = 0; i < BIG; i++) big[i] = 7;
        MPI_Barrier(comm);
        int a = 600, b = 601, c = 602;
        MPI_Ssend(&a, 1, MPI_INT, peer, 6, comm);
        MPI_Send(&b, 1, MPI_INT, peer, 6, comm);
        MPI_Send(big, BIG, MPI_INT, peer, 6, comm);
        MPI_Send(&c, 1, MPI_INT, peer, 6, comm);
    }
    free(big);

    /* 7: a window of 24 receives, every third a wildcard; 24 messages, tags 0..23. */
    enum { N = 24 };
    int r[N];
    MPI_Request wq[N];
    MPI_Status ws[N];
    if (recv) {
        for (int j = 0; j < N; j++) {
            r[j] = -1;
            if (j % 3 == 2)
                MPI_Irecv(&r[j], 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &wq[j]);
            else
                MPI_Irecv(&r[j], 1, MPI_INT, peer, j, comm, &wq[j]);
        }
        MPI_Barrier(comm);
        late(10);
        MPI_Waitall(N, wq, ws);
        int ok = 1;
        for (int j = 0; j < N; j++) ok &= r[j] == 700 + j && ws[j].MPI_TAG == j;
        check(ok, "7: every receive of the window gets its message");
    } else {
        MPI_Barrier(comm);
        for (int j = 0; j < N; j++) {
            int a = 700 + j;
            MPI_Send(&a, 1, MPI_INT, peer, j, comm);
        }
    }
}

int main(int argc, char **argv)
{
    int size, rank;
    struct me m = {0, 0, 0};
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    m.rank = rank;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int peer = rank ^ 1;
    /* Pairs of the world (an odd last rank alone), and a duplicate for case 2. */
    MPI_Comm pair, other;
    MPI_Comm_split(MPI_COMM_WORLD, peer < size ? rank / 2 : size, rank, &pair);
    MPI_Comm_dup(pair, &other);
    int psize, prank;
    MPI_Comm_size(pair, &psize);
    MPI_Comm_rank(pair, &prank);
    for (int round = 0; round < 3 && psize == 2; round++) cases(&m, pair, other, prank, prank ^ 1);
    /* Once more on MPI_COMM_WORLD itself with two ranks. */
    if (size == 2) cases(&m, MPI_COMM_WORLD, other, rank, peer);
    MPI_Comm_free(&other);
    MPI_Comm_free(&pair);
    MPI_Barrier(MPI_COMM_WORLD);
    if (m.bad)
        printf("rank %d: FAILED %d of %d checks\n", rank, m.bad, m.checks);
    else
        printf("rank %d: OK\n", rank);
    MPI_Finalize();
    return 0;
}
