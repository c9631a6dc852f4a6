/* coll_alltoall_small.c - blocking MPI_Alltoall of small blocks (session 28: at several
 * subranks per process these run as the nonblocking call's two-level record and a wait).
 *
 * On every communicator of coll_comms.h (world, odd/even, reversed, thirds reversed):
 * blocks of 1, 8, 127, 128, 129 and 200 bytes (either side of the record's bound), a send
 * side of a strided vector type with holes against a contiguous receive side, MPI_IN_PLACE,
 * a blocking Alltoall while an MPI_Ialltoall on the same communicator is in flight, and
 * many calls back to back. Printed: one checksum per communicator and case (rank 0 of each),
 * OK/FAIL per rank.
 */
#include "coll_comms.h"

/* Byte k of the block that rank s sends to rank d in round r. */
static unsigned char byte_of(int s, int d, int k, int r)
{
    return (unsigned char)(s * 31 + d * 7 + k * 3 + r);
}

static void run(MPI_Comm c, const char *cname, int rank, int *errp)
{
    int me, n;
    MPI_Comm_rank(c, &me);
    MPI_Comm_size(c, &n);
    const int sizes[] = {1, 8, 127, 128, 129, 200};
    unsigned char *sb = ct_malloc(200 * (size_t)n * 2), *rb = ct_malloc(200 * (size_t)n * 2);
    for (int z = 0; z < 6; z++) {
        int b = sizes[z];
        long sum = 0;
        for (int r = 0; r < 20; r++) {
            for (int d = 0; d < n; d++)
                for (int k = 0; k < b; k++)
                    sb[d * b + k] = byte_of(me, d, k, r);
            memset(rb, 0xee, (size_t)b * n);
            MPI_Alltoall(sb, b, MPI_BYTE, rb, b, MPI_BYTE, c);
            for (int s = 0; s < n; s++)
                for (int k = 0; k < b; k++) {
                    unsigned char v = rb[s * b + k];
                    if (v != byte_of(s, me, k, r)) {
                        CHECKP(0, "%s %d B round %d from %d byte %d = %d", cname, b, r, s, k, v);
                        s = n;
                        break;
                    }
                    sum += v;
                }
        }
        long all = 0;
        MPI_Reduce(&sum, &all, 1, MPI_LONG, MPI_SUM, 0, c);
        if (me == 0)
            ct_say(rank, "%s bytes %d: sum %ld", cname, b, all);
    }

    /* Strided ints (every other one) against contiguous ints, 3 per block. */
    {
        MPI_Datatype vec;
        MPI_Type_vector(3, 1, 2, MPI_INT, &vec);
        MPI_Datatype rvec;
        MPI_Type_create_resized(vec, 0, 6 * sizeof(int), &rvec);
        MPI_Type_commit(&rvec);
        int *si = ct_malloc(sizeof(int) * 6 * (size_t)n), *ri = ct_malloc(sizeof(int) * 3 * (size_t)n);
        for (int d = 0; d < n; d++)
            for (int k = 0; k < 6; k++)
                si[d * 6 + k] = k % 2 ? -7 : me * 1000 + d * 10 + k / 2;
        MPI_Alltoall(si, 1, rvec, ri, 3, MPI_INT, c);
        for (int s = 0; s < n; s++)
            for (int k = 0; k < 3; k++)
                CHECKP(ri[s * 3 + k] == s * 1000 + me * 10 + k, "%s vector from %d [%d] = %d", cname, s, k, ri[s * 3 + k]);
        free(si);
        free(ri);
        MPI_Type_free(&vec);
        MPI_Type_free(&rvec);
    }

    /* In place, 2 ints per block. */
    {
        int *a = ct_malloc(sizeof(int) * 2 * (size_t)n);
        for (int d = 0; d < n; d++) {
            a[2 * d] = me * 100 + d;
            a[2 * d + 1] = -me;
        }
        MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, a, 2, MPI_INT, c);
        for (int s = 0; s < n; s++)
            CHECKP(a[2 * s] == s * 100 + me && a[2 * s + 1] == -s, "%s in place from %d: %d %d", cname, s, a[2 * s], a[2 * s + 1]);
        free(a);
    }

    /* A blocking Alltoall while an Ialltoall is in flight on the same communicator. */
    {
        int *x = ct_malloc(sizeof(int) * (size_t)n), *y = ct_malloc(sizeof(int) * (size_t)n);
        int *u = ct_malloc(sizeof(int) * (size_t)n), *w = ct_malloc(sizeof(int) * (size_t)n);
        for (int d = 0; d < n; d++) {
            x[d] = me * 10 + d;
            u[d] = -(me * 10 + d);
        }
        MPI_Request q;
        MPI_Ialltoall(x, 1, MPI_INT, y, 1, MPI_INT, c, &q);
        MPI_Alltoall(u, 1, MPI_INT, w, 1, MPI_INT, c);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        for (int s = 0; s < n; s++)
            CHECKP(y[s] == s * 10 + me && w[s] == -(s * 10 + me), "%s mixed from %d: %d %d", cname, s, y[s], w[s]);
        free(x);
        free(y);
        free(u);
        free(w);
    }
    free(sb);
    free(rb);
}

int main(int argc, char **argv)
{
    int rank, errs = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm comms[NCOMMS];
    const char *names[NCOMMS];
    make_comms(comms, names);
    for (int i = 0; i < NCOMMS; i++)
        run(comms[i], names[i], rank, &errs);
    free_comms(comms);
    return ct_finish(rank, errs);
}
