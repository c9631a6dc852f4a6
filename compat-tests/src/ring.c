/* A token ring with blocking MPI_Send / MPI_Recv, both directions,
 * several laps and two message sizes. */
#include "ct.h"

#define NT 4096

int main(int argc, char **argv)
{
    int rank, size, errs = 0, lap, dir, i;
    int *tok;
    MPI_Status st;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        ct_say(rank, "ring skipped (needs >= 2 ranks)");
        return ct_finish(rank, errs);
    }
    tok = ct_malloc(sizeof(int) * NT);

    for (dir = 0; dir < 2; dir++) {
        int next = dir == 0 ? (rank + 1) % size : (rank + size - 1) % size;
        int prev = dir == 0 ? (rank + size - 1) % size : (rank + 1) % size;
        for (lap = 0; lap < 6; lap++) {
            int n = (lap % 2) ? NT : 3;
            int tag = 10 * dir + lap;
            if (rank == 0) {
                for (i = 0; i < n; i++)
                    tok[i] = i * lap;
                tok[0] = 0;
                MPI_Send(tok, n, MPI_INT, next, tag, MPI_COMM_WORLD);
                MPI_Recv(tok, n, MPI_INT, prev, tag, MPI_COMM_WORLD, &st);
                /* every rank added its rank to tok[0] */
                CHECK(tok[0] == size * (size - 1) / 2, "lap %d dir %d: token %d", lap, dir, tok[0]);
            } else {
                int c = -1, hops;
                MPI_Recv(tok, n, MPI_INT, prev, tag, MPI_COMM_WORLD, &st);
                MPI_Get_count(&st, MPI_INT, &c);
                CHECK(c == n && st.MPI_SOURCE == prev && st.MPI_TAG == tag,
                      "lap %d: count %d source %d tag %d", lap, c, st.MPI_SOURCE, st.MPI_TAG);
                /* ranks passed so far: 1..rank-1 going up, size-1..rank+1 going down */
                hops = dir == 0 ? rank * (rank - 1) / 2
                                : size * (size - 1) / 2 - rank * (rank + 1) / 2;
                CHECK(tok[0] == hops, "lap %d dir %d: token %d expected %d", lap, dir, tok[0], hops);
                for (i = 1; i < n; i++)
                    if (tok[i] != i * lap) {
                        CHECK(0, "lap %d: element %d = %d", lap, i, tok[i]);
                        break;
                    }
                tok[0] += rank;
                MPI_Send(tok, n, MPI_INT, next, tag, MPI_COMM_WORLD);
            }
        }
    }
    free(tok);
    return ct_finish(rank, errs);
}
