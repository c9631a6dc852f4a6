/* Persistent collectives initialised and freed per step, as a solver that builds its
 * persistent requests for each solve does: 600 rounds (past a per-communicator budget of 512
 * that an implementation may keep for the resources behind persistent calls), each with an
 * Allreduce_init on the world and a Bcast_init and an Allreduce_init on a dup of the world
 * made this round, each started three times with new values, a ring of point-to-point
 * messages and a split made and freed between the starts (which an implementation may build
 * on the same resources as the persistent calls), the dup freed before or after its
 * persistent requests depending on the round, and every fifth round one world request left
 * started over the next round's calls and completed after them. Every value is checked. */
#include "ct.h"

#define ROUNDS 600
#define N 64

int main(int argc, char **argv)
{
    int rank, size, errs = 0, r, k, i;
    double in[N], out[N], b[N], lin[N], lout[N];
    MPI_Request lagged = MPI_REQUEST_NULL;
    int lag_round = -1;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (r = 0; r < ROUNDS; r++) {
        MPI_Comm d, s;
        MPI_Request w, bc, ar;
        int root = r % size, lag = r % 5 == 4;
        MPI_Comm_dup(MPI_COMM_WORLD, &d);
        MPI_Allreduce_init(in, out, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &w);
        MPI_Bcast_init(b, N, MPI_DOUBLE, root, d, MPI_INFO_NULL, &bc);
        MPI_Allreduce_init(in, out, N, MPI_DOUBLE, MPI_MAX, d, MPI_INFO_NULL, &ar);
        for (k = 0; k < 3; k++) {
            int to = (rank + 1) % size, from = (rank + size - 1) % size, got = -1;
            for (i = 0; i < N; i++)
                in[i] = rank + i + r + k;
            MPI_Start(&w);
            MPI_Wait(&w, MPI_STATUS_IGNORE);
            for (i = 0; i < N; i++)
                CHECK(out[i] == size * (double)(i + r + k) + size * (size - 1) / 2.0,
                       "round %d start %d world sum[%d] = %g", r, k, i, out[i]);
            for (i = 0; i < N; i++)
                b[i] = rank == root ? 3.0 * i + r + k : -1.0;
            MPI_Start(&bc);
            MPI_Start(&ar);
            MPI_Sendrecv(&rank, 1, MPI_INT, to, 7, &got, 1, MPI_INT, from, 7, d, MPI_STATUS_IGNORE);
            MPI_Wait(&ar, MPI_STATUS_IGNORE);
            MPI_Wait(&bc, MPI_STATUS_IGNORE);
            CHECK(got == from, "round %d start %d ring got %d", r, k, got);
            for (i = 0; i < N; i++) {
                CHECK(b[i] == 3.0 * i + r + k, "round %d start %d bcast[%d] = %g", r, k, i, b[i]);
                CHECK(out[i] == size - 1 + i + r + k, "round %d start %d max[%d] = %g", r, k, i, out[i]);
            }
            if (k == 1) {
                int v = 1, sum = 0;
                MPI_Comm_split(d, rank % 2, rank, &s);
                MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, s);
                CHECK(sum == (size + (rank % 2 ? 0 : 1)) / 2, "round %d split sum %d", r, sum);
                MPI_Comm_free(&s);
            }
        }
        if (lagged != MPI_REQUEST_NULL) {
            MPI_Wait(&lagged, MPI_STATUS_IGNORE);
            for (i = 0; i < N; i++)
                CHECK(lout[i] == size * (double)(i + lag_round) + size, "round %d lagged sum[%d] = %g", lag_round,
                       i, lout[i]);
            MPI_Request_free(&lagged);
            lagged = MPI_REQUEST_NULL;
        }
        if (r % 2) {
            MPI_Comm_free(&d);
            MPI_Request_free(&bc);
            MPI_Request_free(&ar);
        } else {
            MPI_Request_free(&ar);
            MPI_Request_free(&bc);
            MPI_Comm_free(&d);
        }
        MPI_Request_free(&w);
        if (lag) {
            for (i = 0; i < N; i++)
                lin[i] = i + r + 1;
            MPI_Allreduce_init(lin, lout, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &lagged);
            MPI_Start(&lagged);
            lag_round = r;
        }
    }
    if (lagged != MPI_REQUEST_NULL) {
        MPI_Wait(&lagged, MPI_STATUS_IGNORE);
        MPI_Request_free(&lagged);
    }
    return ct_finish(rank, errs);
}
