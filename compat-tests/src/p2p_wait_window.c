/* p2p_wait_window: windows of many requests (8 and 40 receives and as many sends, beyond the
 * 32 receives Toucan pre-posts for messages from other processes) completed by MPI_Waitall,
 * MPI_Waitsome, MPI_Testsome, MPI_Waitany and MPI_Testany, with statuses and with
 * MPI_STATUSES_IGNORE / MPI_STATUS_IGNORE. Each window's array mixes, in a shuffled order,
 * plain receives and sends, MPI_REQUEST_NULL handles, a persistent receive and a persistent
 * send (started each window, inactive after, kept), a receive cancelled before anything can
 * match it, and a receive of a message whose send the sender freed with MPI_Request_free while
 * active. The receives are posted either before their messages are sent (the message rate's
 * common case) or after (the messages wait unmatched), and the sends go in order or reversed.
 * Checked: every value, each completed receive's source, tag and count, the cancelled flag,
 * the empty status of null handles in a Waitall, that Waitsome/Testsome/Waitany/Testany
 * report each active request exactly once and MPI_UNDEFINED once all are null or inactive,
 * and which handles come back as MPI_REQUEST_NULL.
 * Ranks pair up as r and r^1 (an odd last rank only takes part in the barriers).
 * issue 16 (rate16): the default path's MPI_Waitall looks at its handles again only after a
 * progress step that moved something, and an arrival matching the first posted receive is
 * copied and completed with one look at its request. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define MAXW 40
#define MAXN (2 * MAXW + 8)

enum kind { RECV, SEND, NUL, PRECV, PSEND, CANCELLED, FREED_RECV };
enum how { WAITALL, WAITSOME, TESTSOME, WAITANY, TESTANY, NHOW };
static const char *how_name(int how)
{
    switch (how) {
    case WAITALL:
        return "Waitall";
    case WAITSOME:
        return "Waitsome";
    case TESTSOME:
        return "Testsome";
    case WAITANY:
        return "Waitany";
    default:
        return "Testany";
    }
}

/* This rank, its partner, how many checks failed, and the window's buffers. */
struct me {
    int rank, peer, bad;
    int rbuf[MAXN], sbuf[MAXN], fbuf[2], pr_buf, ps_buf;
    MPI_Request precv, psend;
};

static void check_(struct me *m, int cond, const char *what, int w, int how, int stat, int slot)
{
    if (!cond && m->bad++ < 20)
        printf("rank %d: FAIL %s (window %d, %s, statuses %d, slot %d)\n", m->rank, what, w, how_name(how), stat, slot);
}
#define check(...) check_(m, __VA_ARGS__)

/* A fixed shuffle of 0..n-1 (the same on every rank and run). */
static void shuffle(int *p, int n, unsigned seed)
{
    for (int i = 0; i < n; i++)
        p[i] = i;
    for (int i = n - 1; i > 0; i--) {
        seed = seed * 1103515245u + 12345u;
        int j = (int)((seed >> 8) % (unsigned)(i + 1));
        int t = p[i];
        p[i] = p[j];
        p[j] = t;
    }
}

/* Slot `j` finished with status `st` (NULL: statuses ignored); `seen` counts reports. */
static void finished(struct me *m, int j, MPI_Status *st, const enum kind *kind, const int *which, const int *rbuf, int base, int *seen,
                     int w, int how, int stat)
{
    seen[j]++;
    check(seen[j] == 1, "request reported twice", w, how, stat, j);
    int count = -1, flag = -1;
    switch (kind[j]) {
    case RECV:
        check(rbuf[which[j]] == base + which[j], "receive value", w, how, stat, j);
        if (st) {
            MPI_Get_count(st, MPI_INT, &count);
            check(st->MPI_SOURCE == m->peer && st->MPI_TAG == 100 + which[j] && count == 1, "receive status", w, how, stat, j);
        }
        break;
    case PRECV:
    case FREED_RECV:
        if (kind[j] == FREED_RECV)
            check(rbuf[which[j]] == base + which[j], "freed send's value", w, how, stat, j);
        if (st) {
            MPI_Get_count(st, MPI_INT, &count);
            check(st->MPI_SOURCE == m->peer && st->MPI_TAG == (kind[j] == PRECV ? 50 : 60) && count == 1,
                  "persistent/freed receive status", w, how, stat, j);
        }
        break;
    case CANCELLED:
        if (st) {
            MPI_Test_cancelled(st, &flag);
            check(flag == 1, "cancelled flag", w, how, stat, j);
        }
        break;
    case NUL:
        if (st) {
            MPI_Get_count(st, MPI_INT, &count);
            check(st->MPI_SOURCE == MPI_ANY_SOURCE && st->MPI_TAG == MPI_ANY_TAG && count == 0, "null handle's empty status", w,
                  how, stat, j);
        }
        break;
    default:
        break;
    }
}

/* One window of `nr` receives and as many sends, completed `how`, statuses or not. */
static void window(struct me *m, int w, int nr, int how, int stat, int posted_first, int reversed)
{
    int *rbuf = m->rbuf, *sbuf = m->sbuf, *fbuf = m->fbuf, peer = m->peer;
    MPI_Request *precv = &m->precv, *psend = &m->psend;
    enum kind kind[MAXN];
    int which[MAXN], perm[MAXN], seen[MAXN] = {0};
    MPI_Request req[MAXN];
    MPI_Status sts[MAXN];
    int n = 2 * nr + 6, base = 1000 * w;
    shuffle(perm, n, 7u * (unsigned)w + 1u);
    /* Slots: nr receives (tags 100+i), nr sends, two nulls, the persistent pair, a cancelled
     * receive, a receive of the freed send (tag 60, value in rbuf[nr]). */
    for (int i = 0; i < n; i++) {
        int j = perm[i];
        if (i < nr) {
            kind[j] = RECV, which[j] = i;
        } else if (i < 2 * nr) {
            kind[j] = SEND, which[j] = i - nr;
        } else if (i < 2 * nr + 2) {
            kind[j] = NUL, which[j] = 0;
        } else if (i == 2 * nr + 2) {
            kind[j] = PRECV, which[j] = 0;
        } else if (i == 2 * nr + 3) {
            kind[j] = PSEND, which[j] = 0;
        } else if (i == 2 * nr + 4) {
            kind[j] = CANCELLED, which[j] = 0;
        } else {
            kind[j] = FREED_RECV, which[j] = nr;
        }
    }
    for (int i = 0; i < nr + 2; i++)
        rbuf[i] = -1;
    for (int i = 0; i < nr; i++)
        sbuf[i] = base + i;
    m->ps_buf = base + nr + 1;
    fbuf[w & 1] = base + nr;
    int cancelled_buf;
    for (int pass = 0; pass < 2; pass++) {
        /* pass 0 posts the receives when they go first, pass 1 otherwise; sends between. */
        if (pass == posted_first) {
            int tok = 0, got = 0;
            MPI_Sendrecv(&tok, 1, MPI_INT, peer, 7, &got, 1, MPI_INT, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (int k = 0; k < nr; k++) {
                int i = reversed ? nr - 1 - k : k;
                for (int j = 0; j < n; j++)
                    if (kind[j] == SEND && which[j] == i)
                        MPI_Isend(&sbuf[i], 1, MPI_INT, peer, 100 + i, MPI_COMM_WORLD, &req[j]);
            }
            MPI_Request fr;
            MPI_Isend(&fbuf[w & 1], 1, MPI_INT, peer, 60, MPI_COMM_WORLD, &fr);
            MPI_Request_free(&fr);
            check(fr == MPI_REQUEST_NULL, "Request_free sets MPI_REQUEST_NULL", w, how, stat, -1);
            MPI_Start(psend);
        } else {
            for (int j = 0; j < n; j++) {
                switch (kind[j]) {
                case RECV:
                    MPI_Irecv(&rbuf[which[j]], 1, MPI_INT, peer, 100 + which[j], MPI_COMM_WORLD, &req[j]);
                    break;
                case FREED_RECV:
                    MPI_Irecv(&rbuf[nr], 1, MPI_INT, peer, 60, MPI_COMM_WORLD, &req[j]);
                    break;
                case CANCELLED:
                    MPI_Irecv(&cancelled_buf, 1, MPI_INT, peer, 999, MPI_COMM_WORLD, &req[j]);
                    MPI_Cancel(&req[j]);
                    break;
                case PRECV:
                    MPI_Start(precv);
                    req[j] = *precv;
                    break;
                case PSEND:
                    req[j] = *psend;
                    break;
                case NUL:
                    req[j] = MPI_REQUEST_NULL;
                    break;
                default:
                    break;
                }
            }
        }
    }
    int active = n - 2;
    MPI_Status *sp = stat ? sts : MPI_STATUSES_IGNORE;
    int done = 0, out, idx[MAXN], flag, guard = 0;
    switch (how) {
    case WAITALL:
        MPI_Waitall(n, req, sp);
        for (int j = 0; j < n; j++)
            finished(m, j, stat ? &sts[j] : NULL, kind, which, rbuf, base, seen, w, how, stat);
        done = active;
        break;
    case WAITSOME:
    case TESTSOME:
        while (done < active && guard++ < 100000000) {
            if (how == WAITSOME)
                MPI_Waitsome(n, req, &out, idx, sp);
            else
                MPI_Testsome(n, req, &out, idx, sp);
            check(out != MPI_UNDEFINED, "some-call undefined while requests are active", w, how, stat, -1);
            if (out == MPI_UNDEFINED)
                break;
            for (int k = 0; k < out; k++)
                finished(m, idx[k], stat ? &sts[k] : NULL, kind, which, rbuf, base, seen, w, how, stat);
            done += out;
        }
        if (how == WAITSOME)
            MPI_Waitsome(n, req, &out, idx, sp);
        else
            MPI_Testsome(n, req, &out, idx, sp);
        check(out == MPI_UNDEFINED, "some-call gives MPI_UNDEFINED when nothing is active", w, how, stat, -1);
        break;
    case WAITANY:
    case TESTANY:
        while (done < active && guard++ < 100000000) {
            MPI_Status one;
            int i = MPI_UNDEFINED;
            flag = 1;
            if (how == WAITANY)
                MPI_Waitany(n, req, &i, stat ? &one : MPI_STATUS_IGNORE);
            else
                MPI_Testany(n, req, &i, &flag, stat ? &one : MPI_STATUS_IGNORE);
            if (!flag)
                continue;
            check(i != MPI_UNDEFINED, "any-call undefined while requests are active", w, how, stat, -1);
            if (i == MPI_UNDEFINED)
                break;
            finished(m, i, stat ? &one : NULL, kind, which, rbuf, base, seen, w, how, stat);
            done++;
        }
        {
            int i = 0;
            flag = 0;
            if (how == WAITANY)
                MPI_Waitany(n, req, &i, MPI_STATUS_IGNORE), flag = 1;
            else
                MPI_Testany(n, req, &i, &flag, MPI_STATUS_IGNORE);
            check(i == MPI_UNDEFINED && flag == 1, "any-call gives MPI_UNDEFINED, flag 1 when nothing is active", w, how, stat,
                  -1);
        }
        break;
    }
    check(done == active, "every active request completed", w, how, stat, -1);
    for (int j = 0; j < n; j++) {
        int persistent = kind[j] == PRECV || kind[j] == PSEND;
        if (how != WAITALL && kind[j] != NUL)
            check(seen[j] == 1, "active request reported once", w, how, stat, j);
        check(persistent ? req[j] != MPI_REQUEST_NULL : req[j] == MPI_REQUEST_NULL, "handle after completion", w, how, stat, j);
    }
    check(m->pr_buf == base + nr + 1, "persistent receive value", w, how, stat, -1);
}

int main(int argc, char **argv)
{
    int size;
    struct me *m = calloc(1, sizeof *m);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &m->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    m->peer = m->rank ^ 1;
    int paired = m->peer < size;
    int windows = 0;
    if (paired) {
        /* The persistent pair's buffers live as long as the requests (checked after each
         * window through pr_buf). */
        MPI_Recv_init(&m->pr_buf, 1, MPI_INT, m->peer, 50, MPI_COMM_WORLD, &m->precv);
        MPI_Send_init(&m->ps_buf, 1, MPI_INT, m->peer, 50, MPI_COMM_WORLD, &m->psend);
        int w = 0;
        for (int nr = 8; nr <= MAXW; nr += MAXW - 8)
            for (int how = 0; how < NHOW; how++)
                for (int stat = 0; stat < 2; stat++)
                    for (int posted_first = 0; posted_first < 2; posted_first++) {
                        int reversed = (w / 2) & 1;
                        window(m, ++w, nr, how, stat, posted_first, reversed);
                    }
        windows = w;
        MPI_Request_free(&m->precv);
        MPI_Request_free(&m->psend);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (paired)
        printf("rank %d: %d windows\n", m->rank, windows);
    printf("rank %d: %s\n", m->rank, m->bad ? "FAILED" : "OK");
    MPI_Finalize();
    free(m);
    return 0;
}
