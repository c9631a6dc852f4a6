/* MPI_Reduce_local on every rank, printed by rank 0: predefined operations on basic types
 * (integers, floating point, long double, complex, the MINLOC/MAXLOC pairs) at several
 * counts, user operations on a contiguous and on a strided derived type (the gaps of the
 * strided buffer must keep their bytes), and a long vector reduced several times into one
 * accumulator. Values are exact in every type, so MPICH and Toucan print the same. */
#include "ct.h"
#include <complex.h>
#include <string.h>

/* Contiguous ints, or the strided type (4 ints two apart per element, an extent of 7 ints):
 * only the elements' own ints are read and written. */
static void user_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    int i, j, n = *len;
    int *x = in, *y = inout;
    if (*dt == MPI_INT)
        for (i = 0; i < n; i++)
            y[i] = 2 * y[i] + x[i];
    else
        for (i = 0; i < n; i++)
            for (j = 0; j < 4; j++)
                y[7 * i + 2 * j] = 2 * y[7 * i + 2 * j] + x[7 * i + 2 * j];
}

int main(int argc, char **argv)
{
    int rank, errs = 0, i, k;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int counts[] = {1, 7, 1000, 40000};
    for (k = 0; k < 4; k++) {
        int n = counts[k];
        int *ia = ct_malloc(sizeof(int) * n), *ib = ct_malloc(sizeof(int) * n);
        double *da = ct_malloc(sizeof(double) * n), *db = ct_malloc(sizeof(double) * n);
        float *fa = ct_malloc(sizeof(float) * n), *fb = ct_malloc(sizeof(float) * n);
        long double *la = ct_malloc(sizeof(long double) * n), *lb = ct_malloc(sizeof(long double) * n);
        double _Complex *ca = ct_malloc(sizeof(double _Complex) * n), *cb = ct_malloc(sizeof(double _Complex) * n);
        struct { int v, i; } *pa = ct_malloc(8 * n), *pb = ct_malloc(8 * n);
        MPI_Op ops[] = {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN};
        const char *names[] = {"sum", "prod", "max", "min"};
        for (int o = 0; o < 4; o++) {
            long long si = 0;
            double sd = 0, sf = 0, sl = 0, sc = 0;
            for (i = 0; i < n; i++) {
                ia[i] = i % 13 - 6; ib[i] = (i * 7) % 5 - 2;
                da[i] = (i % 9) * 0.5 - 2; db[i] = (i % 4) * 0.25 + 1;
                fa[i] = (float)(i % 11) - 5; fb[i] = (float)(i % 3) + 0.5f;
                la[i] = (i % 6) - 2.5L; lb[i] = (i % 5) * 0.5L;
                ca[i] = (i % 3) + I * (i % 4); cb[i] = 1 - I * (i % 2);
            }
            MPI_Reduce_local(ia, ib, n, MPI_INT, ops[o]);
            MPI_Reduce_local(da, db, n, MPI_DOUBLE, ops[o]);
            MPI_Reduce_local(fa, fb, n, MPI_FLOAT, ops[o]);
            MPI_Reduce_local(la, lb, n, MPI_LONG_DOUBLE, ops[o]);
            if (o < 2)
                MPI_Reduce_local(ca, cb, n, MPI_C_DOUBLE_COMPLEX, ops[o]);
            for (i = 0; i < n; i++) {
                si += ib[i] * (long long)(i % 7 + 1);
                sd += db[i] * (i % 7 + 1);
                sf += fb[i] * (i % 7 + 1);
                sl += (double)lb[i] * (i % 7 + 1);
                if (o < 2)
                    sc += creal(cb[i]) * (i % 7 + 1) + cimag(cb[i]) * (i % 5 + 1);
            }
            if (rank == 0)
                printf("n=%d %s: int %lld double %.6f float %.6f ldouble %.6f complex %.6f\n", n, names[o], si, sd, sf,
                       sl, sc);
        }
        for (i = 0; i < n; i++) {
            pa[i].v = i % 5; pa[i].i = i; pb[i].v = (i * 3) % 5; pb[i].i = n - i;
        }
        MPI_Reduce_local(pa, pb, n, MPI_2INT, MPI_MINLOC);
        long long s2 = 0;
        for (i = 0; i < n; i++)
            s2 += pb[i].v * 3LL + pb[i].i;
        for (i = 0; i < n; i++) {
            ia[i] = i % 3; ib[i] = i % 2;
        }
        MPI_Reduce_local(ia, ib, n, MPI_INT, MPI_BAND);
        long long sb = 0;
        for (i = 0; i < n; i++)
            sb += ib[i] * (i % 7 + 1);
        if (rank == 0)
            printf("n=%d minloc %lld band %lld\n", n, s2, sb);
        free(ia); free(ib); free(da); free(db); free(fa); free(fb); free(la); free(lb); free(ca); free(cb);
        free(pa); free(pb);
    }
    /* User operations: contiguous ints, then a strided type (every other int). */
    {
        MPI_Op op;
        MPI_Datatype vec;
        int a[64], b[64];
        long long s = 0;
        MPI_Op_create(user_sum, 0, &op);
        for (i = 0; i < 64; i++) {
            a[i] = i; b[i] = 100 + i;
        }
        MPI_Reduce_local(a, b, 64, MPI_INT, op);
        for (i = 0; i < 64; i++)
            s += b[i] * (i % 7 + 1);
        MPI_Type_vector(4, 1, 2, MPI_INT, &vec);
        MPI_Type_commit(&vec);
        for (i = 0; i < 64; i++) {
            a[i] = i; b[i] = 100 + i;
        }
        MPI_Reduce_local(a, b, 4, vec, op);
        long long t = 0;
        for (i = 0; i < 64; i++)
            t += b[i] * (i % 7 + 1);
        if (rank == 0)
            printf("user contiguous %lld strided %lld\n", s, t);
        MPI_Type_free(&vec);
        MPI_Op_free(&op);
    }
    /* One long accumulator over several operands, as a library's local combine does. */
    {
        int n = 16384, r;
        float *acc = ct_malloc(sizeof(float) * n), *x = ct_malloc(sizeof(float) * n);
        double s = 0;
        for (i = 0; i < n; i++)
            acc[i] = (float)(i % 17);
        for (r = 1; r < 8; r++) {
            for (i = 0; i < n; i++)
                x[i] = (float)((i + r) % 19);
            MPI_Reduce_local(x, acc, n, MPI_FLOAT, MPI_SUM);
        }
        for (i = 0; i < n; i++)
            s += acc[i] * (i % 7 + 1);
        if (rank == 0)
            printf("accumulated %.1f\n", s);
        free(acc);
        free(x);
    }
    (void)errs;
    return ct_finish(rank, errs);
}
