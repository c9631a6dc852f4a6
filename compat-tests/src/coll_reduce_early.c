/* Back-to-back MPI_Reduce calls whose non-roots may return before the root has the result
 * (a non-root returns once its send buffer may be reused): every non-root overwrites its send
 * buffer as soon as the call returns and goes straight on to the next Reduce, whose root
 * changes every round (some rounds in place at the root); a predefined operation on ints and
 * doubles (8 B to 64 KiB, below and above the real-collective threshold) and a
 * non-commutative user operation (2x2 matrix products, rank order matters), on COMM_WORLD and
 * split communicators, with an Allreduce and a Bcast between rounds. In-place rounds use root
 * 0 of the communicator (on the splits, a world rank late in its process): MPICH 4.0.2 crashes
 * in an in-place MPI_Reduce of 1024 ints or more at a root other than 0 on 4 processes. */
#include "coll_comms.h"

#define ROUNDS 9

/* inout[i] = in[i] x inout[i], 2x2 matrices of unsigned ints (wrapping). */
static void matmul(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    unsigned *a = in, *b = inout;
    int i;
    (void)dt;
    for (i = 0; i < *len; i++, a += 4, b += 4) {
        unsigned r0 = a[0] * b[0] + a[1] * b[2], r1 = a[0] * b[1] + a[1] * b[3];
        unsigned r2 = a[2] * b[0] + a[3] * b[2], r3 = a[2] * b[1] + a[3] * b[3];
        b[0] = r0;
        b[1] = r1;
        b[2] = r2;
        b[3] = r3;
    }
}

/* Rank k's matrix number e in round r. */
static void mat_of(int k, int e, int r, unsigned *m)
{
    m[0] = (unsigned)(k + 2 + r);
    m[1] = 1u;
    m[2] = (unsigned)(e % 97 + k);
    m[3] = (unsigned)(r % 3);
}

static void run(MPI_Comm c, int rank, const char *cname, MPI_Op mat, MPI_Datatype m4, int *errp)
{
    int me, n, s, r, i, k;
    const int sizes[4] = {1, 256, 4096, 16384}; /* ints: 4 B, 1 KiB, 16 KiB, 64 KiB */
    MPI_Comm_rank(c, &me);
    MPI_Comm_size(c, &n);
    for (s = 0; s < 4; s++) {
        int cnt = sizes[s], nm = cnt / 4 > 0 ? cnt / 4 : 1;
        int *si = ct_malloc(sizeof(int) * cnt), *ri = ct_malloc(sizeof(int) * cnt);
        double *sd = ct_malloc(sizeof(double) * cnt), *rd = ct_malloc(sizeof(double) * cnt);
        unsigned *sm = ct_malloc(sizeof(unsigned) * 4 * nm), *rm = ct_malloc(sizeof(unsigned) * 4 * nm);
        for (r = 0; r < ROUNDS; r++) {
            int root = r % 3 == 2 ? 0 : (r * 3 + 1 + s) % n, inplace = r % 3 == 2 && me == root;
            /* SUM of ints */
            for (i = 0; i < cnt; i++)
                (inplace ? ri : si)[i] = me * 5 + i % 101 + r;
            MPI_Reduce(inplace ? MPI_IN_PLACE : si, ri, cnt, MPI_INT, MPI_SUM, root, c);
            for (i = 0; i < cnt; i++)
                si[i] = -12345;
            if (me == root)
                for (i = 0; i < cnt; i++)
                    CHECKP(ri[i] == 5 * n * (n - 1) / 2 + n * (i % 101 + r), "%s round %d Reduce SUM %d ints [%d] = %d",
                           cname, r, cnt, i, ri[i]);
            /* MAX of doubles, the next root */
            root = r % 3 == 0 ? 0 : (root + 1) % n;
            inplace = r % 3 == 0 && me == root;
            for (i = 0; i < cnt; i++)
                (inplace ? rd : sd)[i] = (double)((me * 7 + i) % (n + 3)) + 0.5 * r;
            MPI_Reduce(inplace ? MPI_IN_PLACE : sd, rd, cnt, MPI_DOUBLE, MPI_MAX, root, c);
            for (i = 0; i < cnt; i++)
                sd[i] = -1.0;
            if (me == root)
                for (i = 0; i < cnt; i++) {
                    double want = -1;
                    for (k = 0; k < n; k++) {
                        double v = (double)((k * 7 + i) % (n + 3)) + 0.5 * r;
                        want = v > want ? v : want;
                    }
                    CHECKP(rd[i] == want, "%s round %d Reduce MAX %d doubles [%d] = %g, expected %g", cname, r, cnt,
                           i, rd[i], want);
                }
            /* the non-commutative product in rank order, the next root */
            root = r % 3 == 1 ? 0 : (root + 2) % n;
            inplace = r % 3 == 1 && me == root;
            for (i = 0; i < nm; i++)
                mat_of(me, i, r, (inplace ? rm : sm) + 4 * i);
            MPI_Reduce(inplace ? MPI_IN_PLACE : sm, rm, nm, m4, mat, root, c);
            for (i = 0; i < 4 * nm; i++)
                sm[i] = 0xdeadu;
            if (me == root)
                for (i = 0; i < nm; i++) {
                    unsigned want[4], m[4];
                    int len = 1;
                    mat_of(n - 1, i, r, want);
                    for (k = n - 2; k >= 0; k--) {
                        mat_of(k, i, r, m);
                        matmul(m, want, &len, NULL);
                    }
                    CHECKP(!memcmp(want, rm + 4 * i, sizeof want), "%s round %d Reduce matmul %d [%d] = %u %u %u %u",
                           cname, r, nm, i, rm[4 * i], rm[4 * i + 1], rm[4 * i + 2], rm[4 * i + 3]);
                }
            if (r % 4 == 3) {
                /* Other collectives after the early leavers' returns. */
                int x = me + r, sum = 0, b = me == 0 ? 77 + r : -1;
                MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, c);
                CHECKP(sum == n * (n - 1) / 2 + n * r, "%s round %d Allreduce = %d", cname, r, sum);
                MPI_Bcast(&b, 1, MPI_INT, 0, c);
                CHECKP(b == 77 + r, "%s round %d Bcast = %d", cname, r, b);
            }
        }
        free(si);
        free(ri);
        free(sd);
        free(rd);
        free(sm);
        free(rm);
    }
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, k;
    MPI_Comm comms[NCOMMS];
    const char *names[NCOMMS];
    MPI_Op mat;
    MPI_Datatype m4;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Op_create(matmul, 0, &mat);
    MPI_Type_contiguous(4, MPI_UNSIGNED, &m4);
    MPI_Type_commit(&m4);
    make_comms(comms, names);
    for (k = 0; k < NCOMMS; k++)
        run(comms[k], rank, names[k], mat, m4, &errs);
    free_comms(comms);
    MPI_Op_free(&mat);
    MPI_Type_free(&m4);
    return ct_finish(rank, errs);
}
