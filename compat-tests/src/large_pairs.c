/* Large messages: 4 MiB between every ordered pair of ranks (shift by every
 * distance), with blocking and nonblocking calls, every word checked. */
#include "ct.h"

#define NW (1 << 20) /* 4 MiB of 32-bit words */

static unsigned val(int s, int d, int i) { return (unsigned) s * 2654435761u ^ (unsigned) d * 40503u ^ (unsigned) i; }

int main(int argc, char **argv)
{
    int rank, size, errs = 0, k, i, c;
    unsigned *sb, *rb;
    MPI_Status st;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    sb = ct_malloc(sizeof(unsigned) * NW);
    rb = ct_malloc(sizeof(unsigned) * NW);

    for (k = 0; k < size; k++) {
        int dst = (rank + k) % size, src = (rank + size - k) % size;
        for (i = 0; i < NW; i++)
            sb[i] = val(rank, dst, i);
        memset(rb, 0, sizeof(unsigned) * NW);
        if (k % 2 == 0) {
            MPI_Sendrecv(sb, NW, MPI_UNSIGNED, dst, k, rb, NW, MPI_UNSIGNED, src, k, MPI_COMM_WORLD,
                         &st);
        } else {
            MPI_Request rq[2];
            MPI_Irecv(rb, NW, MPI_UNSIGNED, src, k, MPI_COMM_WORLD, &rq[0]);
            MPI_Isend(sb, NW, MPI_UNSIGNED, dst, k, MPI_COMM_WORLD, &rq[1]);
            MPI_Wait(&rq[1], MPI_STATUS_IGNORE);
            MPI_Wait(&rq[0], &st);
        }
        MPI_Get_count(&st, MPI_UNSIGNED, &c);
        CHECK(c == NW && st.MPI_SOURCE == src, "distance %d: count %d source %d", k, c,
              st.MPI_SOURCE);
        for (i = 0; i < NW; i++)
            if (rb[i] != val(src, rank, i)) {
                CHECK(0, "distance %d from %d: word %d wrong", k, src, i);
                break;
            }
    }

    /* blocking Send/Recv between pairs, 4 MiB each way */
    if (size >= 2 && (rank ^ 1) < size) {
        int peer = rank ^ 1;
        for (i = 0; i < NW; i++)
            sb[i] = val(rank, peer, i) + 1;
        if (rank % 2 == 0) {
            MPI_Send(sb, NW, MPI_UNSIGNED, peer, 99, MPI_COMM_WORLD);
            MPI_Recv(rb, NW, MPI_UNSIGNED, peer, 99, MPI_COMM_WORLD, &st);
        } else {
            MPI_Recv(rb, NW, MPI_UNSIGNED, peer, 99, MPI_COMM_WORLD, &st);
            MPI_Send(sb, NW, MPI_UNSIGNED, peer, 99, MPI_COMM_WORLD);
        }
        for (i = 0; i < NW; i++)
            if (rb[i] != val(peer, rank, i) + 1) {
                CHECK(0, "pair Send/Recv: word %d wrong", i);
                break;
            }
    }

    free(sb);
    free(rb);
    return ct_finish(rank, errs);
}
