/* MPI_Probe and MPI_Iprobe: learn the source, tag and size of a message,
 * then receive exactly that message with a buffer of the probed size. */
#include "ct.h"

static int len_of(int s, int k) { return k == 2 ? 262144 + s : (s * 37 + k * 11) % 100 + 1; }

int main(int argc, char **argv)
{
    int rank, size, errs = 0, i, k, c, flag, to, from;
    int *sb[3];
    MPI_Request rq[3];
    MPI_Status st, st2;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    to = (rank + 1) % size;
    from = (rank + size - 1) % size;

    /* no message with tag 999 is ever sent: Iprobe must say so */
    flag = -1;
    MPI_Iprobe(MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &flag, &st);
    CHECK(flag == 0, "Iprobe found a message that was never sent");

    for (k = 0; k < 3; k++) {
        int n = len_of(rank, k);
        sb[k] = ct_malloc(sizeof(int) * n);
        for (i = 0; i < n; i++)
            sb[k][i] = rank * 1000 + k * 100 + i;
        MPI_Isend(sb[k], n, MPI_INT, to, 10 + k, MPI_COMM_WORLD, &rq[k]);
    }

    for (k = 0; k < 3; k++) {
        int *rb, n = len_of(from, k);
        if (k == 0) {
            MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        } else if (k == 1) {
            flag = 0;
            while (!flag)
                MPI_Iprobe(from, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
        } else {
            MPI_Probe(from, 12, MPI_COMM_WORLD, &st);
        }
        c = -1;
        MPI_Get_count(&st, MPI_INT, &c);
        CHECK(st.MPI_SOURCE == from && st.MPI_TAG == 10 + k && c == n,
              "probe %d: source %d tag %d count %d, expected %d %d %d", k, st.MPI_SOURCE,
              st.MPI_TAG, c, from, 10 + k, n);
        if (c < 0)
            continue;
        /* a probe does not consume: probing again gives the same message */
        MPI_Probe(st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, &st2);
        MPI_Get_count(&st2, MPI_INT, &i);
        CHECK(i == c, "second probe count %d vs %d", i, c);
        rb = ct_malloc(sizeof(int) * c);
        MPI_Recv(rb, c, MPI_INT, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, &st2);
        MPI_Get_count(&st2, MPI_INT, &i);
        CHECK(i == c && st2.MPI_SOURCE == st.MPI_SOURCE, "recv after probe count %d", i);
        for (i = 0; i < c; i++)
            if (rb[i] != from * 1000 + k * 100 + i) {
                CHECK(0, "probe %d element %d = %d", k, i, rb[i]);
                break;
            }
        free(rb);
    }
    MPI_Waitall(3, rq, MPI_STATUSES_IGNORE);
    for (k = 0; k < 3; k++)
        free(sb[k]);

    /* Iprobe of a message known to have arrived (Ssend completed and the
       sender told us so on another tag) */
    if (size >= 2 && (rank ^ 1) < size) {
        int peer = rank ^ 1, v = 5, go = 0;
        if (rank % 2 == 0) {
            MPI_Request r;
            MPI_Issend(&v, 1, MPI_INT, peer, 20, MPI_COMM_WORLD, &r);
            MPI_Recv(&go, 1, MPI_INT, peer, 21, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
        } else {
            /* the probe loop must make progress on its own */
            flag = 0;
            while (!flag)
                MPI_Iprobe(peer, 20, MPI_COMM_WORLD, &flag, &st);
            MPI_Send(&go, 1, MPI_INT, peer, 21, MPI_COMM_WORLD);
            MPI_Recv(&v, 1, MPI_INT, peer, 20, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(v == 5, "got %d", v);
        }
    }

    return ct_finish(rank, errs);
}
