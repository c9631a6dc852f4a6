/* p2p_sendrecv_mix: MPI_Sendrecv among the rank's other operations on one pair, with two
 * pairings (r with r^1, and r with r + size/2: partners in one process and in two at most
 * layouts). issue 16 (sr16): with one worker and no other task ready, Toucan sends a
 * Sendrecv's eager message to another process first and then polls for its receive in place
 * when nothing of the rank could match first; these cases pin MPI's rules around that:
 *   1. a loop of exchanges, receives by tag, MPI_ANY_TAG and MPI_ANY_SOURCE, statuses
 *   2. non-overtaking across MPI_Isend and MPI_Sendrecv on one pair (both tag 7)
 *   3. messages of other tags queued before the call (after a barrier): the Sendrecv takes
 *      the one it names, the others are received after it in order
 *   4. MPI_Probe(MPI_ANY_SOURCE) then a wildcard Sendrecv receive: the probed message
 *   5. a receive posted before (MPI_Irecv of tag 40): the earlier receive matches first
 *   6. a partner that computes before sending (the receive waits: polled, then parked)
 *   7. sizes 0, 1 KiB, 4097 B, 64 KiB (eager, eager from a heap copy, rendezvous)
 *   8. truncation (MPI_ERR_TRUNCATE through MPI_ERRORS_RETURN), the next message whole
 *   9. a synchronous send received by a Sendrecv; MPI_Sendrecv_replace */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

static void fill(char *b, int n, int seed)
{
    for (int i = 0; i < n; i++) b[i] = (char)(seed * 31 + i * 7);
}

static int same(const char *b, int n, int seed)
{
    for (int i = 0; i < n; i++)
        if (b[i] != (char)(seed * 31 + i * 7)) return 0;
    return 1;
}

static void cases(struct me *m, MPI_Comm comm, int me, int peer)
{
    MPI_Status st;
    MPI_Request q[3];
    int v, w, x, y, count;
    int lower = me < peer;

    /* 1: a loop of exchanges. */
    for (int i = 0; i < 200; i++) {
        int rtag = i % 3 == 0 ? MPI_ANY_TAG : 100 + i % 5;
        int src = i % 4 == 1 ? MPI_ANY_SOURCE : peer;
        v = me * 1000 + i;
        w = -1;
        MPI_Sendrecv(&v, 1, MPI_INT, peer, 100 + i % 5, &w, 1, MPI_INT, src, rtag, comm, &st);
        check(w == peer * 1000 + i, "loop value");
        check(st.MPI_SOURCE == peer && st.MPI_TAG == 100 + i % 5, "loop status");
        MPI_Get_count(&st, MPI_INT, &count);
        check(count == 1, "loop count");
    }

    /* 2: MPI_Isend then MPI_Sendrecv, same tag: the Isend's message comes first. */
    v = 1, w = 2, x = -1, y = -1;
    MPI_Isend(&v, 1, MPI_INT, peer, 7, comm, &q[0]);
    MPI_Sendrecv(&w, 1, MPI_INT, peer, 7, &x, 1, MPI_INT, peer, 7, comm, MPI_STATUS_IGNORE);
    MPI_Recv(&y, 1, MPI_INT, peer, 7, comm, MPI_STATUS_IGNORE);
    MPI_Wait(&q[0], MPI_STATUS_IGNORE);
    check(x == 1 && y == 2, "Isend before Sendrecv: order");

    /* 3: two messages of other tags wait in the queue; the Sendrecv names the second. */
    v = 20, w = 21;
    MPI_Send(&v, 1, MPI_INT, peer, 20, comm);
    MPI_Send(&w, 1, MPI_INT, peer, 21, comm);
    MPI_Barrier(comm);
    late(2);
    MPI_Barrier(comm);
    x = -1, y = -1;
    v = 22;
    MPI_Sendrecv(&v, 1, MPI_INT, peer, 22, &x, 1, MPI_INT, peer, 21, comm, &st);
    check(x == 21 && st.MPI_TAG == 21, "queued: named tag");
    MPI_Recv(&y, 1, MPI_INT, peer, MPI_ANY_TAG, comm, &st);
    check(y == 20 && st.MPI_TAG == 20, "queued: the other after");
    MPI_Recv(&y, 1, MPI_INT, peer, MPI_ANY_TAG, comm, &st);
    check(y == 22 && st.MPI_TAG == 22, "queued: the Sendrecv's message");

    /* 4: a probe, then a wildcard Sendrecv receive takes the probed message. */
    if (lower) {
        v = 30;
        MPI_Send(&v, 1, MPI_INT, peer, 30, comm);
        MPI_Recv(&x, 1, MPI_INT, peer, 31, comm, MPI_STATUS_IGNORE);
        check(x == 31, "probe: reply");
    } else {
        MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &st);
        check(st.MPI_TAG == 30 && st.MPI_SOURCE == peer, "probe: status");
        v = 31, x = -1;
        MPI_Sendrecv(&v, 1, MPI_INT, peer, 31, &x, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &st);
        check(x == 30 && st.MPI_TAG == 30 && st.MPI_SOURCE == peer, "probe: Sendrecv took it");
    }

    /* 5: an MPI_Irecv posted before: tag 40 goes to it, tag 41 to the Sendrecv. */
    x = -1, y = -1;
    MPI_Irecv(&x, 1, MPI_INT, peer, 40, comm, &q[0]);
    v = 40;
    MPI_Send(&v, 1, MPI_INT, peer, 40, comm);
    v = 41;
    MPI_Sendrecv(&v, 1, MPI_INT, peer, 41, &y, 1, MPI_INT, peer, MPI_ANY_TAG, comm, &st);
    MPI_Wait(&q[0], MPI_STATUS_IGNORE);
    check(x == 40 && y == 41 && st.MPI_TAG == 41, "posted before: order");

    /* 6: the partner computes first, in turns; then both late together. */
    for (int k = 0; k < 3; k++) {
        if ((k == 0 && lower) || (k == 1 && !lower) || k == 2) late(3);
        v = 60 + k, x = -1;
        MPI_Sendrecv(&v, 1, MPI_INT, peer, 60, &x, 1, MPI_INT, MPI_ANY_SOURCE, 60, comm, &st);
        check(x == 60 + k && st.MPI_SOURCE == peer, "late partner");
    }

    /* 7: sizes around the eager paths and a rendezvous. */
    static const int sizes[] = {0, 1024, 4097, 65536};
    for (int k = 0; k < 4; k++) {
        int n = sizes[k];
        char *s = malloc(n + 1), *r = malloc(n + 1);
        fill(s, n, me + k);
        memset(r, 0, n + 1);
        MPI_Sendrecv(s, n, MPI_BYTE, peer, 70 + k, r, n, MPI_BYTE, peer, 70 + k, comm, &st);
        MPI_Get_count(&st, MPI_BYTE, &count);
        check(count == n && same(r, n, peer + k), "sizes: data");
        free(s);
        free(r);
    }

    /* 8: truncation, then the next message of the same envelope whole. */
    {
        int big[4] = {1, 2, 3, 4}, small[2] = {0, 0}, whole[4] = {0};
        MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
        int rc = MPI_Sendrecv(big, 4, MPI_INT, peer, 80, small, 2, MPI_INT, peer, 80, comm, &st);
        int cls = -1;
        MPI_Error_class(rc, &cls);
        check(cls == MPI_ERR_TRUNCATE, "truncate: error class");
        rc = MPI_Sendrecv(big, 4, MPI_INT, peer, 80, whole, 4, MPI_INT, peer, 80, comm, &st);
        check(rc == MPI_SUCCESS && whole[3] == 4, "truncate: next whole");
        MPI_Comm_set_errhandler(comm, MPI_ERRORS_ARE_FATAL);
    }

    /* 9: a synchronous send meets a Sendrecv; MPI_Sendrecv_replace. */
    if (lower) {
        v = 90;
        MPI_Ssend(&v, 1, MPI_INT, peer, 90, comm);
        MPI_Recv(&x, 1, MPI_INT, peer, 91, comm, MPI_STATUS_IGNORE);
        check(x == 91, "ssend: reply");
    } else {
        v = 91, x = -1;
        MPI_Sendrecv(&v, 1, MPI_INT, peer, 91, &x, 1, MPI_INT, peer, 90, comm, MPI_STATUS_IGNORE);
        check(x == 90, "ssend: Sendrecv received it");
    }
    v = me;
    MPI_Sendrecv_replace(&v, 1, MPI_INT, peer, 95, peer, 95, comm, &st);
    check(v == peer && st.MPI_SOURCE == peer, "replace");
}

int main(int argc, char **argv)
{
    struct me mm = {0, 0, 0}, *m = &mm;
    int size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &m->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int me = m->rank;
    /* Pairing 1: r and r^1 (a rank without a partner sits out). */
    MPI_Comm c1;
    int peer1 = me ^ 1;
    MPI_Comm_split(MPI_COMM_WORLD, peer1 < size ? me / 2 : MPI_UNDEFINED, me, &c1);
    if (c1 != MPI_COMM_NULL) {
        int r;
        MPI_Comm_rank(c1, &r);
        cases(m, c1, r, r ^ 1);
        MPI_Comm_free(&c1);
    }
    /* Pairing 2: r and r + size/2, on MPI_COMM_WORLD (even sizes). */
    if (size % 2 == 0) {
        int half = size / 2, peer = me < half ? me + half : me - half;
        cases(m, MPI_COMM_WORLD, me, peer);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (m->bad == 0) printf("rank %d: OK\n", me);
    else printf("rank %d: FAILED %d of %d checks\n", me, m->bad, m->checks);
    MPI_Finalize();
    return 0;
}
