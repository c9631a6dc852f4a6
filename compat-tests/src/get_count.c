/* MPI_Get_count and MPI_Get_elements (and the _x variants): exact counts,
 * MPI_UNDEFINED when the data is not a whole number of the datatype, zero,
 * and counts taken from a probe. */
#include "ct.h"

int main(int argc, char **argv)
{
    int rank, size, errs = 0, c, e, to, from, i;
    int sv[16], rv[16];
    MPI_Datatype pair, tri;
    MPI_Status st;
    MPI_Request rq;
    MPI_Count cx, ex;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    to = (rank + 1) % size;
    from = (rank + size - 1) % size;
    for (i = 0; i < 16; i++)
        sv[i] = i;

    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    MPI_Type_vector(3, 1, 2, MPI_INT, &tri); /* 3 ints with gaps */
    MPI_Type_commit(&tri);

    /* 5 ints into room for 10 */
    MPI_Isend(sv, 5, MPI_INT, to, 1, MPI_COMM_WORLD, &rq);
    MPI_Recv(rv, 10, MPI_INT, from, 1, MPI_COMM_WORLD, &st);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    MPI_Get_count(&st, MPI_INT, &c);
    MPI_Get_elements(&st, MPI_INT, &e);
    CHECK(c == 5 && e == 5, "5 ints: count %d elements %d", c, e);
    MPI_Get_elements_x(&st, MPI_INT, &ex);
    CHECK(ex == 5, "5 ints: elements_x %lld", (long long) ex);
    MPI_Get_count(&st, MPI_BYTE, &c);
    CHECK(c == 5 * (int) sizeof(int), "5 ints as bytes: count %d", c);

    /* 6 ints received as pairs: 3 pairs, 6 elements */
    MPI_Isend(sv, 6, MPI_INT, to, 2, MPI_COMM_WORLD, &rq);
    MPI_Recv(rv, 5, pair, from, 2, MPI_COMM_WORLD, &st);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    MPI_Get_count(&st, pair, &c);
    MPI_Get_elements(&st, pair, &e);
    CHECK(c == 3 && e == 6, "6 ints as pairs: count %d elements %d", c, e);

    /* 5 ints received as pairs: count undefined, 5 elements */
    MPI_Isend(sv, 5, MPI_INT, to, 3, MPI_COMM_WORLD, &rq);
    MPI_Recv(rv, 5, pair, from, 3, MPI_COMM_WORLD, &st);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    MPI_Get_count(&st, pair, &c);
    MPI_Get_elements(&st, pair, &e);
    CHECK(c == MPI_UNDEFINED && e == 5, "5 ints as pairs: count %d elements %d", c, e);
    MPI_Get_elements_x(&st, pair, &ex);
    CHECK(ex == 5, "5 ints as pairs: elements_x %lld", (long long) ex);
    CHECK(rv[4] == 4, "5 ints as pairs: rv[4] = %d", rv[4]);

    /* 4 ints received with a strided type of 3 ints: 1 whole + 1 element */
    for (i = 0; i < 16; i++)
        rv[i] = -1;
    MPI_Isend(sv, 4, MPI_INT, to, 4, MPI_COMM_WORLD, &rq);
    MPI_Recv(rv, 2, tri, from, 4, MPI_COMM_WORLD, &st);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    MPI_Get_count(&st, tri, &c);
    MPI_Get_elements(&st, tri, &e);
    CHECK(c == MPI_UNDEFINED && e == 4, "4 ints as vector(3): count %d elements %d", c, e);
    /* the vector places ints at 0,2,4 then the next instance starts at 5 */
    CHECK(rv[0] == 0 && rv[1] == -1 && rv[2] == 1 && rv[4] == 2 && rv[5] == 3,
          "vector placement %d %d %d %d %d", rv[0], rv[1], rv[2], rv[4], rv[5]);

    /* an empty message */
    MPI_Isend(sv, 0, MPI_INT, to, 5, MPI_COMM_WORLD, &rq);
    MPI_Recv(rv, 5, pair, from, 5, MPI_COMM_WORLD, &st);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    MPI_Get_count(&st, pair, &c);
    MPI_Get_elements(&st, pair, &e);
    CHECK(c == 0 && e == 0, "empty: count %d elements %d", c, e);
    MPI_Get_count(&st, MPI_BYTE, &c);
    CHECK(c == 0, "empty as bytes: count %d", c);

    /* counts from a probe, in bytes and in doubles */
    {
        double d[3] = {1.5, 2.5, 3.5}, r[3];
        MPI_Isend(d, 3, MPI_DOUBLE, to, 6, MPI_COMM_WORLD, &rq);
        MPI_Probe(from, 6, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_DOUBLE, &c);
        CHECK(c == 3, "probe: %d doubles", c);
        MPI_Get_count(&st, MPI_BYTE, &c);
        CHECK(c == 3 * (int) sizeof(double), "probe: %d bytes", c);
        MPI_Recv(r, 3, MPI_DOUBLE, from, 6, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_DOUBLE, &c);
        CHECK(c == 3 && r[2] == 3.5, "received %d doubles", c);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
    }

    /* MPI_Status_set_elements sets what Get_count then reports */
    MPI_Status_set_elements(&st, MPI_INT, 7);
    MPI_Get_count(&st, MPI_INT, &c);
    CHECK(c == 7, "after Status_set_elements(7): count %d", c);
    MPI_Status_set_elements_x(&st, MPI_DOUBLE, 6);
    MPI_Get_count(&st, MPI_BYTE, &c);
    MPI_Get_elements_x(&st, MPI_DOUBLE, &cx);
    CHECK(c == 6 * (int) sizeof(double) && cx == 6,
          "after Status_set_elements_x(DOUBLE, 6): %d bytes, %lld elements", c, (long long) cx);

    MPI_Type_free(&pair);
    MPI_Type_free(&tri);
    return ct_finish(rank, errs);
}
