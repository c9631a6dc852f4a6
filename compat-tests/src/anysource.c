/* Wildcard receives: MPI_ANY_SOURCE and MPI_ANY_TAG (alone and together).
 * Every rank receives from every rank with wildcards and prints the sorted
 * set of (source,tag) pairs it received, which is independent of timing. */
#include "ct.h"

#define K 3  /* messages from each sender to each receiver */

static int cmp_pair(const void *a, const void *b)
{
    const int *x = a, *y = b;
    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    if (x[1] != y[1])
        return x[1] < y[1] ? -1 : 1;
    return 0;
}

static int tag_of(int s, int d, int k) { return (s * 7 + d * 3 + k * 5) % 11 + 20 * k; }

int main(int argc, char **argv)
{
    int rank, size, errs = 0, j, k, n;
    int *sendv, *pairs, *lastk;
    MPI_Request *rq;
    char *line;
    size_t pos;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    n = size * K;
    sendv = ct_malloc(sizeof(int) * 2 * n);
    pairs = ct_malloc(sizeof(int) * 2 * n);
    lastk = ct_malloc(sizeof(int) * size);
    rq = ct_malloc(sizeof(MPI_Request) * n);
    line = ct_malloc(32 * (size_t) n + 64);

    /* phase 1: ANY_SOURCE + ANY_TAG; payload (source, k) */
    for (j = 0; j < size; j++)
        for (k = 0; k < K; k++) {
            int d = (rank + j) % size, i = j * K + k;
            sendv[2 * i] = rank;
            sendv[2 * i + 1] = k;
            MPI_Isend(&sendv[2 * i], 2, MPI_INT, d, tag_of(rank, d, k), MPI_COMM_WORLD, &rq[i]);
        }
    for (j = 0; j < size; j++)
        lastk[j] = -1;
    for (j = 0; j < n; j++) {
        int v[2] = {-1, -1};
        MPI_Status st;
        MPI_Recv(v, 2, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        CHECK(v[0] == st.MPI_SOURCE, "payload source %d but status source %d", v[0], st.MPI_SOURCE);
        if (v[0] < 0 || v[0] >= size)
            continue;
        CHECK(st.MPI_TAG == tag_of(v[0], rank, v[1]), "tag %d for (%d,%d)", st.MPI_TAG, v[0], v[1]);
        /* non-overtaking holds for wildcard receives too */
        CHECK(v[1] == lastk[v[0]] + 1, "from %d got k=%d after k=%d", v[0], v[1], lastk[v[0]]);
        lastk[v[0]] = v[1];
        pairs[2 * j] = st.MPI_SOURCE;
        pairs[2 * j + 1] = st.MPI_TAG;
    }
    MPI_Waitall(n, rq, MPI_STATUSES_IGNORE);
    qsort(pairs, n, 2 * sizeof(int), cmp_pair);
    pos = 0;
    for (j = 0; j < n; j++)
        pos += sprintf(line + pos, " (%d,%d)", pairs[2 * j], pairs[2 * j + 1]);
    ct_say(rank, "received%s", line);

    MPI_Barrier(MPI_COMM_WORLD);

    /* phase 2: ANY_SOURCE with a specific tag; every sender sends tag 5
       then tag 6; we take all tag-6 messages first */
    for (j = 0; j < size; j++) {
        int d = (rank + j) % size;
        sendv[2 * j] = rank;
        sendv[2 * j + 1] = 5;
        MPI_Isend(&sendv[2 * j], 2, MPI_INT, d, 5, MPI_COMM_WORLD, &rq[2 * j]);
        sendv[2 * (j + size)] = rank;
        sendv[2 * (j + size) + 1] = 6;
        MPI_Isend(&sendv[2 * (j + size)], 2, MPI_INT, d, 6, MPI_COMM_WORLD, &rq[2 * j + 1]);
    }
    for (j = 0; j < size; j++)
        lastk[j] = 0;
    for (k = 6; k >= 5; k--)
        for (j = 0; j < size; j++) {
            int v[2] = {-1, -1};
            MPI_Status st;
            MPI_Recv(v, 2, MPI_INT, MPI_ANY_SOURCE, k, MPI_COMM_WORLD, &st);
            CHECK(st.MPI_TAG == k && v[1] == k && v[0] == st.MPI_SOURCE,
                  "ANY_SOURCE tag %d: got (%d,%d) status (%d,%d)", k, v[0], v[1], st.MPI_SOURCE,
                  st.MPI_TAG);
            if (v[0] >= 0 && v[0] < size)
                lastk[v[0]]++;
        }
    for (j = 0; j < size; j++)
        CHECK(lastk[j] == 2, "from %d got %d messages in phase 2", j, lastk[j]);
    MPI_Waitall(2 * size, rq, MPI_STATUSES_IGNORE);

    MPI_Barrier(MPI_COMM_WORLD);

    /* phase 3: specific source with ANY_TAG, sources in reverse order;
       tags from one source arrive in send order */
    for (j = 0; j < size; j++) {
        int d = (rank + j) % size;
        for (k = 0; k < 2; k++) {
            sendv[2 * (2 * j + k)] = rank;
            sendv[2 * (2 * j + k) + 1] = 40 + k;
            MPI_Isend(&sendv[2 * (2 * j + k)], 2, MPI_INT, d, 40 + k, MPI_COMM_WORLD,
                      &rq[2 * j + k]);
        }
    }
    for (j = size - 1; j >= 0; j--)
        for (k = 0; k < 2; k++) {
            int v[2] = {-1, -1};
            MPI_Status st;
            MPI_Recv(v, 2, MPI_INT, j, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            CHECK(st.MPI_SOURCE == j && st.MPI_TAG == 40 + k && v[0] == j && v[1] == 40 + k,
                  "source %d ANY_TAG #%d: got (%d,%d) tag %d", j, k, v[0], v[1], st.MPI_TAG);
        }
    MPI_Waitall(2 * size, rq, MPI_STATUSES_IGNORE);

    free(sendv);
    free(pairs);
    free(lastk);
    free(rq);
    free(line);
    return ct_finish(rank, errs);
}
