/* p2p_unexq_lanes.c - many messages from many senders waiting at one receiver, received in
 * an order other than their arrival (session 28: the unexpected queue kept per sender).
 *
 * Every rank but 0 sends NMSG small messages on each of three communicators (the world and
 * two duplicates: as many senders per receiver as contexts times ranks), tags cycling, then
 * all meet in a barrier, so that rank 0 finds them waiting. Rank 0 then receives:
 *   1. from the senders in reverse rank order, on the last duplicate, one tag at a time
 *      starting from the last tag (each sender's messages of one tag in their send order);
 *   2. on the first duplicate, probes a specific sender and tag (MPI_Probe, MPI_Iprobe,
 *      MPI_Mprobe + MPI_Mrecv) before receiving the rest from any source with a specific tag;
 *   3. on the world, everything from any source and any tag: per sender and tag in send order
 *      (the non-overtaking rule), every message once.
 * Then a loop of MPI_Gather of one int without any other synchronisation (senders run ahead
 * of the root), and the same with MPI_Igather + MPI_Wait.
 * Printed: counts and sums per phase on rank 0 (the same under any MPI), OK/FAIL per rank.
 */
#include "ct.h"

#define NMSG 24
#define NTAG 3
#define NGATHER 3000

/* A message's value: who sent it, on which communicator, its number. */
static int value(int src, int comm, int k)
{
    return (src * 4 + comm) * 1000 + k;
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm comms[3];
    comms[0] = MPI_COMM_WORLD;
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]);
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[2]);

    if (rank != 0) {
        MPI_Request reqs[3 * NMSG];
        int vals[3 * NMSG];
        for (int c = 0; c < 3; c++)
            for (int k = 0; k < NMSG; k++) {
                vals[c * NMSG + k] = value(rank, c, k);
                MPI_Isend(&vals[c * NMSG + k], 1, MPI_INT, 0, k % NTAG, comms[c], &reqs[c * NMSG + k]);
            }
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Waitall(3 * NMSG, reqs, MPI_STATUSES_IGNORE);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
        long sum = 0;
        int got = 0, v;
        MPI_Status st;
        /* 1. Reverse senders, last tag first, on comms[2]. */
        for (int s = size - 1; s >= 1; s--)
            for (int t = NTAG - 1; t >= 0; t--)
                for (int k = t; k < NMSG; k += NTAG) {
                    MPI_Recv(&v, 1, MPI_INT, s, t, comms[2], &st);
                    CHECK(v == value(s, 2, k), "phase 1 from %d tag %d: got %d want %d", s, t, v, value(s, 2, k));
                    sum += v;
                    got++;
                }
        ct_say(rank, "phase 1: %d messages, sum %ld", got, sum);

        /* 2. Probes of one sender and tag deep in the queue, then any source per tag. */
        int last = size - 1, flag = 0, cnt = -1;
        MPI_Probe(last, 1, comms[1], &st);
        MPI_Get_count(&st, MPI_INT, &cnt);
        CHECK(st.MPI_SOURCE == last && st.MPI_TAG == 1 && cnt == 1, "probe: source %d tag %d count %d", st.MPI_SOURCE, st.MPI_TAG, cnt);
        do /* the barrier does not say the messages have arrived */
            MPI_Iprobe(MPI_ANY_SOURCE, 2, comms[1], &flag, &st);
        while (!flag);
        CHECK(st.MPI_TAG == 2, "iprobe any source tag 2: tag %d", st.MPI_TAG);
        MPI_Message msg;
        MPI_Mprobe(last, 1, comms[1], &msg, &st);
        MPI_Mrecv(&v, 1, MPI_INT, &msg, &st);
        CHECK(v == value(last, 1, 1), "mrecv: got %d want %d", v, value(last, 1, 1));
        sum = v;
        got = 1;
        int *next = calloc((size_t)size * NTAG, sizeof(int)); /* next k per (sender, tag) */
        for (int s = 1; s < size; s++)
            for (int t = 0; t < NTAG; t++)
                next[s * NTAG + t] = t;
        next[last * NTAG + 1] += NTAG;
        for (int t = NTAG - 1; t >= 0; t--)
            for (int i = 0; i < (size - 1) * (NMSG / NTAG) - (t == 1); i++) {
                MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, t, comms[1], &st);
                int s = st.MPI_SOURCE, *n = &next[s * NTAG + t];
                CHECK(st.MPI_TAG == t && v == value(s, 1, *n), "phase 2 from %d tag %d: got %d want %d", s, t, v, value(s, 1, *n));
                *n += NTAG;
                sum += v;
                got++;
            }
        ct_say(rank, "phase 2: %d messages, sum %ld", got, sum);

        /* 3. Any source, any tag, on the world. */
        for (int s = 1; s < size; s++)
            for (int t = 0; t < NTAG; t++)
                next[s * NTAG + t] = t;
        sum = 0;
        got = 0;
        for (int i = 0; i < (size - 1) * NMSG; i++) {
            MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, comms[0], &st);
            int s = st.MPI_SOURCE, t = st.MPI_TAG, *n = &next[s * NTAG + t];
            CHECK(t >= 0 && t < NTAG && v == value(s, 0, *n), "phase 3 from %d tag %d: got %d want %d", s, t, v, value(s, 0, *n));
            *n += NTAG;
            sum += v;
            got++;
        }
        ct_say(rank, "phase 3: %d messages, sum %ld", got, sum);
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
        CHECK(!flag, "a message left over on the world");
        free(next);
    }

    /* Gathers back to back: the senders run ahead of the root. */
    int *all = rank == 0 ? malloc(sizeof(int) * (size_t)size) : NULL;
    long gsum = 0;
    for (int it = 0; it < 2 * NGATHER; it++) {
        int mine = rank * 7 + it % 13;
        if (it < NGATHER) {
            MPI_Gather(&mine, 1, MPI_INT, all, 1, MPI_INT, 0, comms[it % 3]);
        } else {
            MPI_Request r;
            MPI_Igather(&mine, 1, MPI_INT, all, 1, MPI_INT, 0, comms[it % 3], &r);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
        }
        if (rank == 0)
            for (int p = 0; p < size; p++) {
                CHECK(all[p] == p * 7 + it % 13, "gather %d: slot %d holds %d", it, p, all[p]);
                gsum += all[p];
            }
    }
    if (rank == 0)
        ct_say(rank, "gathers: %d, sum %ld", 2 * NGATHER, gsum);
    free(all);
    MPI_Comm_free(&comms[1]);
    MPI_Comm_free(&comms[2]);
    return ct_finish(rank, errs);
}
