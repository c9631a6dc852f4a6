/* ringcost.c: what a ring of pre-posted receives costs plain MPICH per message, by way of
 * posting, completing and reposting (issue 16, docs/p2p.md "Session 18"). Rank 0 sends windows
 * of 8 messages of 32 bytes (a Toucan header and 8 bytes); rank 1 takes them from a ring of
 * RING receives in one of several ways, each in a function of its own so that callgrind
 * (bench/p2p-callgrind.sh's way: --inclusive=yes) counts each strategy's instructions:
 *   wild_status   MPI_ANY_SOURCE receives; MPI_Request_get_status polls, MPI_Wait + MPI_Irecv
 *                 repost (Toucan's general path up to session 17)
 *   spec_status   the same with the peer as the source
 *   wild_persist  persistent MPI_ANY_SOURCE receives (MPI_Recv_init), MPI_Test polls,
 *                 MPI_Start repost
 *   spec_persist  the same with the peer as the source
 *   spec_some     specific receives, MPI_Testsome over the window's next slots per poll
 *   wild_some     the same with MPI_ANY_SOURCE receives
 * Each window: rank 1 sends a go message, sleeps 2 ms (no MPI call, so the 8 messages wait in
 * the real MPI's shared-memory queue), then takes them: every progress step finds one message,
 * as when a window arrives during a wait. Rank 1 prints "bad 0" when every message arrived in order.
 * usage: ringcost WINDOWS [RING [SLEEP_US]] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#define WIN 8
#define LEN 32
#define MAXRING 64
static int ring = 32, peer, sleep_us = 2000;
static char bufs[MAXRING][LEN];
static MPI_Request rq[MAXRING];
static long bad, expect;

static void check(int slot)
{
    long v;
    memcpy(&v, bufs[slot], sizeof v);
    bad += v != expect++;
}

static void go(void)
{
    char c = 0;
    MPI_Send(&c, 1, MPI_BYTE, peer, 999, MPI_COMM_WORLD);
    usleep(sleep_us);
}

static void post_all(int src, int persist)
{
    for (int i = 0; i < ring; i++) {
        if (persist) {
            MPI_Recv_init(bufs[i], LEN, MPI_BYTE, src, MPI_ANY_TAG, MPI_COMM_WORLD, &rq[i]);
            MPI_Start(&rq[i]);
        } else
            MPI_Irecv(bufs[i], LEN, MPI_BYTE, src, MPI_ANY_TAG, MPI_COMM_WORLD, &rq[i]);
    }
}

static void cancel_all(int persist)
{
    for (int i = 0; i < ring; i++) {
        MPI_Cancel(&rq[i]);
        MPI_Wait(&rq[i], MPI_STATUS_IGNORE);
        if (persist) MPI_Request_free(&rq[i]);
    }
}

/* One window of WIN messages through get_status polls and Wait + Irecv reposts. */
static inline __attribute__((always_inline)) void take_status(int src, int *head)
{
    for (int k = 0; k < WIN; k++) {
        int flag = 0;
        MPI_Status st;
        while (!flag) MPI_Request_get_status(rq[*head], &flag, &st);
        check(*head);
        MPI_Wait(&rq[*head], MPI_STATUS_IGNORE);
        MPI_Irecv(bufs[*head], LEN, MPI_BYTE, src, MPI_ANY_TAG, MPI_COMM_WORLD, &rq[*head]);
        *head = (*head + 1) % ring;
    }
}

/* One window through MPI_Test polls and MPI_Start reposts of persistent receives. */
static inline __attribute__((always_inline)) void take_persist(int *head)
{
    for (int k = 0; k < WIN; k++) {
        int flag = 0;
        MPI_Status st;
        while (!flag) MPI_Test(&rq[*head], &flag, &st);
        check(*head);
        MPI_Start(&rq[*head]);
        *head = (*head + 1) % ring;
    }
}

/* One window through MPI_Testsome over the ring (in ring order from the head). */
static inline __attribute__((always_inline)) void take_some(int src, int *head)
{
    int got = 0, idx[MAXRING];
    MPI_Status sts[MAXRING];
    MPI_Request tmp[MAXRING];
    while (got < WIN) {
        int n = 0, out = 0;
        for (int i = 0; i < WIN - got; i++) tmp[i] = rq[(*head + i) % ring];
        n = WIN - got;
        MPI_Testsome(n, tmp, &out, idx, sts);
        if (out == MPI_UNDEFINED || out == 0) continue;
        /* completed in order: the first `out` of them */
        for (int i = 0; i < out; i++) {
            int s = (*head + idx[i]) % ring;
            rq[s] = tmp[idx[i]];
        }
        for (int i = 0; i < out; i++) {
            check(*head);
            MPI_Irecv(bufs[*head], LEN, MPI_BYTE, src, MPI_ANY_TAG, MPI_COMM_WORLD, &rq[*head]);
            *head = (*head + 1) % ring;
        }
        got += out;
    }
}

/* Per strategy, its window's calls alone (callgrind: inclusive count / messages). */
__attribute__((noinline)) static void win_wild_status(int *h) { take_status(MPI_ANY_SOURCE, h); }
__attribute__((noinline)) static void win_spec_status(int *h) { take_status(peer, h); }
__attribute__((noinline)) static void win_wild_persist(int *h) { take_persist(h); }
__attribute__((noinline)) static void win_spec_persist(int *h) { take_persist(h); }
__attribute__((noinline)) static void win_spec_some(int *h) { take_some(peer, h); }
__attribute__((noinline)) static void win_wild_some(int *h) { take_some(MPI_ANY_SOURCE, h); }

__attribute__((noinline)) static void wild_status(int n) { int h = 0; post_all(MPI_ANY_SOURCE, 0); for (int i = 0; i < n; i++) { go(); win_wild_status(&h); } cancel_all(0); }
__attribute__((noinline)) static void spec_status(int n) { int h = 0; post_all(peer, 0); for (int i = 0; i < n; i++) { go(); win_spec_status(&h); } cancel_all(0); }
__attribute__((noinline)) static void wild_persist(int n) { int h = 0; post_all(MPI_ANY_SOURCE, 1); for (int i = 0; i < n; i++) { go(); win_wild_persist(&h); } cancel_all(1); }
__attribute__((noinline)) static void spec_persist(int n) { int h = 0; post_all(peer, 1); for (int i = 0; i < n; i++) { go(); win_spec_persist(&h); } cancel_all(1); }
__attribute__((noinline)) static void spec_some(int n) { int h = 0; post_all(peer, 0); for (int i = 0; i < n; i++) { go(); win_spec_some(&h); } cancel_all(0); }
__attribute__((noinline)) static void wild_some(int n) { int h = 0; post_all(MPI_ANY_SOURCE, 0); for (int i = 0; i < n; i++) { go(); win_wild_some(&h); } cancel_all(0); }

static void sender(int n)
{
    static long seq;
    char b[LEN] = {0};
    for (int i = 0; i < n; i++) {
        char c;
        MPI_Recv(&c, 1, MPI_BYTE, peer, 999, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int k = 0; k < WIN; k++) {
            long v = seq++;
            memcpy(b, &v, sizeof v);
            MPI_Send(b, LEN, MPI_BYTE, peer, k, MPI_COMM_WORLD);
        }
    }
}

int main(int argc, char **argv)
{
    int rank, n = argc > 1 ? atoi(argv[1]) : 200;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc > 2) ring = atoi(argv[2]);
    if (argc > 3) sleep_us = atoi(argv[3]);
    if (ring < WIN || ring > MAXRING) ring = 32;
    peer = rank ^ 1;
    void (*strat[])(int) = {wild_status, spec_status, wild_persist, spec_persist, spec_some, wild_some};
    for (unsigned s = 0; s < sizeof strat / sizeof *strat; s++) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) sender(n);
        else strat[s](n);
    }
    if (rank == 1) printf("bad %ld\n", bad);
    MPI_Finalize();
    return 0;
}
