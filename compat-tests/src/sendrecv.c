/* MPI_Sendrecv and MPI_Sendrecv_replace: ring shifts in both directions,
 * a full rotation with replace returning the original data, wildcards on
 * the receive side and a large replace. */
#include "ct.h"

#define N 1000
#define BIG (1 << 18)

int main(int argc, char **argv)
{
    int rank, size, errs = 0, i, k, to, from, c;
    int *a, *b;
    MPI_Status st;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    to = (rank + 1) % size;
    from = (rank + size - 1) % size;
    a = ct_malloc(sizeof(int) * BIG);
    b = ct_malloc(sizeof(int) * BIG);

    /* shift right, then left, by every distance */
    for (k = 1; k <= size; k++) {
        int dst = (rank + k) % size, src = (rank + size - k % size) % size;
        for (i = 0; i < N; i++)
            a[i] = rank * 10000 + k * 10 + i % 10;
        MPI_Sendrecv(a, N, MPI_INT, dst, k, b, N, MPI_INT, src, k, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_INT, &c);
        CHECK(c == N && st.MPI_SOURCE == src && st.MPI_TAG == k, "shift %d: count %d source %d", k,
              c, st.MPI_SOURCE);
        for (i = 0; i < N; i++)
            if (b[i] != src * 10000 + k * 10 + i % 10) {
                CHECK(0, "shift %d element %d = %d", k, i, b[i]);
                break;
            }
    }

    /* wildcard receive side, different send and receive counts: ANY_SOURCE
       with a fixed tag, then a fixed source with ANY_TAG (a message from
       ANY_SOURCE and ANY_TAG at once could be the next step's message) */
    for (i = 0; i < 5; i++)
        a[i] = rank + i;
    MPI_Sendrecv(a, 5, MPI_INT, from, 3, b, 10, MPI_INT, MPI_ANY_SOURCE, 3, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, MPI_INT, &c);
    CHECK(c == 5 && st.MPI_SOURCE == to && st.MPI_TAG == 3 && b[4] == to + 4,
          "ANY_SOURCE Sendrecv: count %d source %d tag %d", c, st.MPI_SOURCE, st.MPI_TAG);
    MPI_Sendrecv(a, 4, MPI_INT, to, 4, b, 10, MPI_INT, from, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, MPI_INT, &c);
    CHECK(c == 4 && st.MPI_SOURCE == from && st.MPI_TAG == 4 && b[3] == from + 3,
          "ANY_TAG Sendrecv: count %d source %d tag %d", c, st.MPI_SOURCE, st.MPI_TAG);

    /* Sendrecv_replace: rotate the whole ring, data must come back */
    for (i = 0; i < N; i++)
        a[i] = rank * 7 + i;
    for (k = 0; k < size; k++) {
        MPI_Sendrecv_replace(a, N, MPI_INT, to, 20, from, 20, MPI_COMM_WORLD, &st);
        {
            int orig = (rank + size - (k + 1) % size) % size;
            CHECK(a[0] == orig * 7 && a[N - 1] == orig * 7 + N - 1 && st.MPI_SOURCE == from,
                  "rotation step %d: a[0] = %d", k, a[0]);
        }
    }
    for (i = 0; i < N; i++)
        if (a[i] != rank * 7 + i) {
            CHECK(0, "after a full rotation element %d = %d", i, a[i]);
            break;
        }

    /* large replace, other direction */
    for (i = 0; i < BIG; i++)
        a[i] = rank ^ i;
    MPI_Sendrecv_replace(a, BIG, MPI_INT, from, 30, to, 30, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, MPI_INT, &c);
    CHECK(c == BIG, "large replace count %d", c);
    for (i = 0; i < BIG; i++)
        if (a[i] != (to ^ i)) {
            CHECK(0, "large replace element %d = %d", i, a[i]);
            break;
        }

    /* with oneself */
    a[0] = 11;
    MPI_Sendrecv_replace(a, 1, MPI_INT, rank, 40, rank, 40, MPI_COMM_WORLD, &st);
    CHECK(a[0] == 11 && st.MPI_SOURCE == rank, "self replace got %d", a[0]);

    free(a);
    free(b);
    return ct_finish(rank, errs);
}
