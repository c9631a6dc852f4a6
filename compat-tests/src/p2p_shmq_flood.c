/* p2p_shmq_flood.c - many control messages between processes at once (issue 16, shmq16:
 * the node-local shared-memory queue between processes, its full-queue path).
 *
 * 1. Every rank starts ROUNDS nonblocking sends of mixed sizes (0 B to 20000 B, across the
 *    8 KiB eager limit: rendezvous headers through the queue, payloads through the real MPI)
 *    to every other rank, all with one tag, before receiving anything: far beyond any
 *    queue's capacity, every pair sending both ways at once. Then it receives them from each
 *    source in order and checks sizes and bytes (non-overtaking), then waits for its sends.
 * 2. Rank 0 receives SMALL 8-byte messages from every other rank with MPI_ANY_SOURCE (sent
 *    with blocking MPI_Send): per source, in order.
 * 3. A ring of MPI_Ssend (each rank to rank+1, received from rank-1 after a probe that gives
 *    the size), three rounds.
 * No writable globals (see ct.h).
 */
#include "ct.h"

#define ROUNDS 300
#define SMALL 200
#define MAXLEN 20000

static int size_of(int i, int src, int dst)
{
    static const int sizes[] = {0, 8, 1, 100, 4000, 8192, 8193, 20000, 24, 300};
    return sizes[(i + src * 3 + dst) % 10];
}

static unsigned char byte_of(int i, int src, int k)
{
    return (unsigned char)(i * 31 + src * 7 + k);
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* 1: the flood, both ways at once. */
    int nsend = ROUNDS * (size - 1);
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * (nsend > 0 ? nsend : 1));
    unsigned char **bufs = malloc(sizeof(unsigned char *) * (nsend > 0 ? nsend : 1));
    int n = 0;
    for (int i = 0; i < ROUNDS; i++) {
        for (int d = 1; d < size; d++) {
            int dst = (rank + d) % size;
            int len = size_of(i, rank, dst);
            bufs[n] = malloc(len > 0 ? len : 1);
            for (int k = 0; k < len; k++)
                bufs[n][k] = byte_of(i, rank, k);
            MPI_Isend(bufs[n], len, MPI_BYTE, dst, 5, MPI_COMM_WORLD, &reqs[n]);
            n++;
        }
    }
    unsigned char *in = malloc(MAXLEN);
    long bytes = 0;
    for (int d = 1; d < size; d++) {
        int src = (rank - d + size) % size;
        for (int i = 0; i < ROUNDS; i++) {
            MPI_Status st;
            int want = size_of(i, src, rank), got = -1;
            MPI_Recv(in, MAXLEN, MPI_BYTE, src, 5, MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, MPI_BYTE, &got);
            CHECK(got == want, "flood from %d #%d: %d bytes, want %d", src, i, got, want);
            for (int k = 0; k < got && k < want; k++)
                if (in[k] != byte_of(i, src, k)) {
                    CHECK(0, "flood from %d #%d: byte %d differs", src, i, k);
                    break;
                }
            bytes += got;
        }
    }
    MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
    for (int k = 0; k < n; k++)
        free(bufs[k]);
    ct_say(rank, "flood received %ld bytes in %d messages", bytes, ROUNDS * (size - 1));

    /* 2: ANY_SOURCE from every other rank, in order per source. */
    if (rank == 0) {
        int *next = calloc(size, sizeof(int));
        for (int k = 0; k < SMALL * (size - 1); k++) {
            long v[1];
            MPI_Status st;
            MPI_Recv(v, 1, MPI_LONG, MPI_ANY_SOURCE, 9, MPI_COMM_WORLD, &st);
            int s = st.MPI_SOURCE;
            CHECK(s > 0 && s < size && v[0] == (long)s * 100000 + next[s], "any-source: %ld from %d, want #%d", v[0], s, s > 0 && s < size ? next[s] : -1);
            if (s > 0 && s < size)
                next[s]++;
        }
        int all = 1;
        for (int s = 1; s < size; s++)
            all &= next[s] == SMALL;
        ct_say(rank, "any-source: %d from each, all in order: %d", SMALL, all);
        free(next);
    } else {
        for (int k = 0; k < SMALL; k++) {
            long v = (long)rank * 100000 + k;
            MPI_Send(&v, 1, MPI_LONG, 0, 9, MPI_COMM_WORLD);
        }
    }

    /* 3: a ring of synchronous sends, the size found by a probe. */
    for (int r = 0; r < 3; r++) {
        int len = 10 + r * 5000 + rank;
        unsigned char *out = malloc(len);
        for (int k = 0; k < len; k++)
            out[k] = byte_of(r, rank, k);
        int to = (rank + 1) % size, from = (rank - 1 + size) % size;
        MPI_Request rq;
        MPI_Issend(out, len, MPI_BYTE, to, 11, MPI_COMM_WORLD, &rq);
        MPI_Status st;
        int got = -1;
        MPI_Probe(from, 11, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_BYTE, &got);
        CHECK(got == 10 + r * 5000 + from, "probe: %d bytes", got);
        MPI_Recv(in, MAXLEN, MPI_BYTE, from, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int k = 0; k < got; k++)
            if (in[k] != byte_of(r, from, k)) {
                CHECK(0, "ssend ring round %d: byte %d differs", r, k);
                break;
            }
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        free(out);
    }
    ct_say(rank, "ssend ring done");
    free(in);
    free(reqs);
    free(bufs);
    MPI_Barrier(MPI_COMM_WORLD);
    ct_say(rank, errs ? "FAILED" : "OK");
    MPI_Finalize();
    return errs != 0;
}
