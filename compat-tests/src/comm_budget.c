/* More communicators alive at once than an implementation may give every one its own
 * resources for: 1100 duplicates of the world held together (an implementation that keeps a
 * budget of them must decide alike on every process which ones get what), a collective on
 * every hundredth and on each of the last ones, point-to-point on the last; then all freed and
 * a few made and freed again. Every value is checked. */
#include "ct.h"

#define N 1100

int main(int argc, char **argv)
{
    int rank, size, errs = 0, i;
    MPI_Comm *c;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    c = ct_malloc(sizeof(MPI_Comm) * N);
    for (i = 0; i < N; i++) {
        MPI_Comm_dup(MPI_COMM_WORLD, &c[i]);
        if (i % 100 == 99 || i >= N - 90) {
            long x = i + rank, y = -1;
            MPI_Allreduce(&x, &y, 1, MPI_LONG, MPI_SUM, c[i]);
            CHECK(y == (long)i * size + (long)size * (size - 1) / 2, "dup %d Allreduce = %ld", i, y);
        }
    }
    {
        int in = -1, out = rank, k;
        for (k = N - 3; k < N; k++) {
            MPI_Sendrecv(&out, 1, MPI_INT, (rank + 1) % size, k, &in, 1, MPI_INT, (rank + size - 1) % size, k, c[k],
                         MPI_STATUS_IGNORE);
            CHECK(in == (rank + size - 1) % size, "dup %d ring got %d", k, in);
        }
    }
    for (i = 0; i < N; i++)
        MPI_Comm_free(&c[i]);
    for (i = 0; i < 20; i++) {
        MPI_Comm d;
        int v = rank, s = -1;
        MPI_Comm_dup(MPI_COMM_WORLD, &d);
        MPI_Allreduce(&v, &s, 1, MPI_INT, MPI_SUM, d);
        CHECK(s == size * (size - 1) / 2, "again %d Allreduce = %d", i, s);
        MPI_Comm_free(&d);
    }
    free(c);
    return ct_finish(rank, errs);
}
