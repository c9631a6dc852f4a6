/* matrix_op.h - a non-commutative reduction shared by the tests: the 2x2 integer matrix
 * product mod 1009 (MPI_User_function), and the matrix each rank contributes. */
#ifndef COMPAT_MATRIX_OP_H
#define COMPAT_MATRIX_OP_H

#include <string.h>
#include <mpi.h>

static void matmul(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    /* inout = in * inout, element by element (each element a 2x2 matrix of 4 ints) */
    int *a = in, *b = inout, k;
    (void) dt;
    for (k = 0; k < *len; k++) {
        int *x = a + 4 * k, *y = b + 4 * k, r[4];
        r[0] = (x[0] * y[0] + x[1] * y[2]) % 1009;
        r[1] = (x[0] * y[1] + x[1] * y[3]) % 1009;
        r[2] = (x[2] * y[0] + x[3] * y[2]) % 1009;
        r[3] = (x[2] * y[1] + x[3] * y[3]) % 1009;
        memcpy(y, r, sizeof r);
    }
}

static void mat_of(int r, int k, int *m)
{
    m[0] = (r + k) % 5 + 1;
    m[1] = (r * 3 + k) % 7;
    m[2] = (r * 2 + 1) % 4;
    m[3] = (r + 2 * k) % 3 + 1;
}

#endif
