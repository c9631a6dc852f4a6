/* p2p_stack_eager: eager messages between 256 B and 8 KiB, whose headers and payloads Toucan
 * sends with one blocking real MPI_Send from a stack buffer up to 4 KiB (issue 16, p2p12;
 * before: a heap copy sent with MPI_Isend above 256 B). Ranks pair up as r and r^1 (an odd
 * last rank only takes part in the barrier).
 *   1. both partners send 100 blocking MPI_Send of sizes around the bounds (256, 257, 1024,
 *      4095, 4096, 4097, 8192 bytes, more than the ring's 32 pre-posted receives) before
 *      receiving any: each send must complete without its receive (eager); then receive
 *      them with MPI_ANY_TAG in sending order (non-overtaking), data and counts checked.
 *   2. the same sizes with MPI_Isend and MPI_Waitall, received with MPI_ANY_SOURCE and
 *      MPI_Irecv posted after the partner's sends.
 *   3. a 4096-byte message into a 1024-byte receive: MPI_ERR_TRUNCATE (MPI_ERRORS_RETURN),
 *      then a 4096-byte message of the same envelope received whole. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 100
static const int sizes[] = {256, 257, 1024, 4095, 4096, 4097, 8192};
#define NS ((int)(sizeof sizes / sizeof sizes[0]))
#define MAXS 8192

static void fill(unsigned char *b, int len, int from, int i)
{
    for (int k = 0; k < len; k++) b[k] = (unsigned char)(from * 31 + i * 7 + k);
}

static int same(const unsigned char *b, int len, int from, int i)
{
    for (int k = 0; k < len; k++)
        if (b[k] != (unsigned char)(from * 31 + i * 7 + k)) return 0;
    return 1;
}

static void fail(int *bad, int rank, const char *what, int i)
{
    printf("rank %d: FAIL %s (message %d)\n", rank, what, i);
    (*bad)++;
}

int main(int argc, char **argv)
{
    int rank, size, bad = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int peer = rank ^ 1;
    unsigned char *s = malloc((size_t)N * MAXS), *r = malloc((size_t)N * MAXS);
    if (peer < size) {
        /* 1. blocking sends first on both sides */
        for (int i = 0; i < N; i++) {
            int len = sizes[i % NS];
            fill(s + (size_t)i * MAXS, len, rank, i);
            MPI_Send(s + (size_t)i * MAXS, len, MPI_BYTE, peer, i % 5, MPI_COMM_WORLD);
        }
        for (int i = 0; i < N; i++) {
            int len = sizes[i % NS], got;
            MPI_Status st;
            memset(r, 0, MAXS);
            MPI_Recv(r, MAXS, MPI_BYTE, peer, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, MPI_BYTE, &got);
            if (st.MPI_TAG != i % 5 || got != len) fail(&bad, rank, "blocking: order or count", i);
            else if (!same(r, len, peer, i)) fail(&bad, rank, "blocking: data", i);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        /* 2. nonblocking sends, then receives posted after them */
        MPI_Request *q = malloc(2 * N * sizeof *q);
        MPI_Status *sts = malloc(2 * N * sizeof *sts);
        for (int i = 0; i < N; i++) {
            int len = sizes[(i + 3) % NS];
            fill(s + (size_t)i * MAXS, len, rank + 100, i);
            MPI_Isend(s + (size_t)i * MAXS, len, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &q[N + i]);
        }
        for (int i = 0; i < N; i++)
            MPI_Irecv(r + (size_t)i * MAXS, MAXS, MPI_BYTE, MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &q[i]);
        if (MPI_Waitall(2 * N, q, sts) != MPI_SUCCESS) fail(&bad, rank, "nonblocking: Waitall", -1);
        for (int i = 0; i < N; i++) {
            int len = sizes[(i + 3) % NS], got;
            MPI_Get_count(&sts[i], MPI_BYTE, &got);
            if (sts[i].MPI_SOURCE != peer || got != len) fail(&bad, rank, "nonblocking: order or count", i);
            else if (!same(r + (size_t)i * MAXS, len, peer + 100, i)) fail(&bad, rank, "nonblocking: data", i);
        }
        free(q);
        free(sts);
        MPI_Barrier(MPI_COMM_WORLD);
        /* 3. truncation, then the next message of the same envelope */
        fill(s, 4096, rank + 200, 0);
        fill(s + MAXS, 4096, rank + 200, 1);
        MPI_Send(s, 4096, MPI_BYTE, peer, 9, MPI_COMM_WORLD);
        MPI_Send(s + MAXS, 4096, MPI_BYTE, peer, 9, MPI_COMM_WORLD);
        MPI_Status st;
        int rc = MPI_Recv(r, 1024, MPI_BYTE, peer, 9, MPI_COMM_WORLD, &st), cls = -1;
        MPI_Error_class(rc, &cls);
        if (cls != MPI_ERR_TRUNCATE) fail(&bad, rank, "truncation: error class", 0);
        int got;
        rc = MPI_Recv(r, MAXS, MPI_BYTE, peer, 9, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_BYTE, &got);
        if (rc != MPI_SUCCESS || got != 4096 || !same(r, 4096, peer + 200, 1)) fail(&bad, rank, "after truncation", 1);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (bad == 0) printf("rank %d: OK\n", rank);
    free(s);
    free(r);
    MPI_Finalize();
    return 0;
}
