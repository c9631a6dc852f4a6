/* smp_sendrecv.c - MPI_Sendrecv, MPI_Sendrecv_replace, MPI_Probe and MPI_Iprobe between
 * neighbours, at sizes around Toucan's thresholds (the unlocked copy from 16 KiB, the queued
 * copy up to 64 KiB, a rendezvous above), repeated so that the two workers of SMP mode race:
 * every byte, count, source and tag checked. */
#include "ct.h"

#define ROUNDS 100
#define NSIZES 8

static void fill(unsigned char *p, int n, int who, int round, int size)
{
    for (int i = 0; i < n; i++)
        p[i] = (unsigned char) (who * 31 + round * 7 + size + i * 13);
}

static int check(const unsigned char *p, int n, int who, int round, int size)
{
    for (int i = 0; i < n; i++)
        if (p[i] != (unsigned char) (who * 31 + round * 7 + size + i * 13))
            return i;
    return -1;
}

int main(int argc, char **argv)
{
    const int sizes[NSIZES] = {0, 8, 4000, 16384, 20000, 65536, 70000, 300000};
    int rank, size, errs = 0, c, bad;
    MPI_Status st;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    unsigned char *a = ct_malloc(300000), *b = ct_malloc(300000);

    for (int round = 0; round < ROUNDS; round++) {
        for (int k = 0; k < NSIZES; k++) {
            int n = sizes[k];
            /* to the right, then to the left */
            for (int dir = 0; dir < 2; dir++) {
                int dst = dir ? from : to, src = dir ? to : from, tag = k + 10 * dir;
                fill(a, n, rank, round, n);
                MPI_Sendrecv(a, n, MPI_BYTE, dst, tag, b, n, MPI_BYTE, src, tag, MPI_COMM_WORLD, &st);
                MPI_Get_count(&st, MPI_BYTE, &c);
                bad = check(b, n, src, round, n);
                CHECK(c == n && st.MPI_SOURCE == src && st.MPI_TAG == tag && bad < 0,
                      "Sendrecv round %d size %d dir %d: count %d source %d tag %d byte %d", round, n,
                      dir, c, st.MPI_SOURCE, st.MPI_TAG, bad);
            }
            /* replace, with a wildcard source */
            fill(a, n, rank, round, n + 1);
            MPI_Sendrecv_replace(a, n, MPI_BYTE, to, 50 + k, MPI_ANY_SOURCE, 50 + k, MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, MPI_BYTE, &c);
            bad = check(a, n, from, round, n + 1);
            CHECK(c == n && st.MPI_SOURCE == from && bad < 0,
                  "Sendrecv_replace round %d size %d: count %d source %d byte %d", round, n, c,
                  st.MPI_SOURCE, bad);
            /* to itself */
            fill(a, n, rank, round, n + 2);
            MPI_Sendrecv(a, n, MPI_BYTE, rank, 70, b, n, MPI_BYTE, rank, 70, MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, MPI_BYTE, &c);
            bad = check(b, n, rank, round, n + 2);
            CHECK(c == n && st.MPI_SOURCE == rank && bad < 0, "self Sendrecv round %d size %d: byte %d",
                  round, n, bad);
            /* Isend, then the neighbour probes (blocking, then polling) and receives */
            MPI_Request r;
            fill(a, n, rank, round, n + 3);
            MPI_Isend(a, n, MPI_BYTE, to, 80 + (round & 1), MPI_COMM_WORLD, &r);
            if (round & 1) {
                int flag = 0;
                while (!flag)
                    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
            } else {
                MPI_Probe(from, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            }
            MPI_Get_count(&st, MPI_BYTE, &c);
            CHECK(c == n && st.MPI_SOURCE == from && st.MPI_TAG == 80 + (round & 1),
                  "probe round %d size %d: count %d source %d tag %d", round, n, c, st.MPI_SOURCE,
                  st.MPI_TAG);
            MPI_Recv(b, n, MPI_BYTE, from, st.MPI_TAG, MPI_COMM_WORLD, &st);
            bad = check(b, n, from, round, n + 3);
            CHECK(bad < 0, "probed message round %d size %d: byte %d", round, n, bad);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
        }
    }
    free(a);
    free(b);
    return ct_finish(rank, errs);
}
