/* Datatype attributes: MPI_Type_create_keyval/free_keyval, set/get/delete_attr,
 * copy callbacks on MPI_Type_dup (user callback, MPI_TYPE_DUP_FN,
 * MPI_TYPE_NULL_COPY_FN), delete callbacks on replacement, delete and
 * MPI_Type_free, a failing copy callback, keyvals of the wrong kind, and
 * attributes on a predefined type being private to each rank. */
#include "ct.h"

/* The attribute value points at two counters: copies made, deletions seen. */
static int count_copy(MPI_Datatype old, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void) old;
    (void) keyval;
    (void) extra;
    ((int *) in)[0]++;
    *(void **) out = in;
    *flag = 1;
    return MPI_SUCCESS;
}

static int count_delete(MPI_Datatype t, int keyval, void *attr, void *extra)
{
    (void) t;
    (void) keyval;
    (void) extra;
    ((int *) attr)[1]++;
    return MPI_SUCCESS;
}

static int failing_copy(MPI_Datatype old, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void) old;
    (void) keyval;
    (void) extra;
    (void) in;
    (void) out;
    *flag = 0;
    return MPI_ERR_OTHER;
}

/* Delete callback that refuses while *extra is 0. */
static int picky_delete(MPI_Datatype t, int keyval, void *attr, void *extra)
{
    (void) t;
    (void) keyval;
    (void) attr;
    return *(int *) extra ? MPI_SUCCESS : MPI_ERR_OTHER;
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, flag, rc;
    int counts[2] = {0, 0}, other[2] = {0, 0};
    int kcount, kdup, knull, kfail, kpicky, kcomm, allow = 0;
    void *v;
    MPI_Datatype vec, dup, dup2, bad;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    MPI_Type_create_keyval(count_copy, count_delete, &kcount, NULL);
    MPI_Type_create_keyval(MPI_TYPE_DUP_FN, MPI_TYPE_NULL_DELETE_FN, &kdup, NULL);
    MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, MPI_TYPE_NULL_DELETE_FN, &knull, NULL);
    CHECK(kcount != kdup && kdup != knull && kcount != knull, "keyvals not distinct");

    MPI_Type_vector(3, 2, 4, MPI_INT, &vec);
    MPI_Type_commit(&vec);

    /* no attribute yet */
    flag = -1;
    CHECK(MPI_Type_get_attr(vec, kcount, &v, &flag) == MPI_SUCCESS && flag == 0, "unset attr: flag %d", flag);

    MPI_Type_set_attr(vec, kcount, counts);
    MPI_Type_set_attr(vec, kdup, (void *) (MPI_Aint) (100 + rank));
    MPI_Type_set_attr(vec, knull, (void *) (MPI_Aint) 7);
    MPI_Type_get_attr(vec, kcount, &v, &flag);
    CHECK(flag && v == (void *) counts, "get kcount: flag %d", flag);

    /* replacing runs the old value's delete callback */
    MPI_Type_set_attr(vec, kcount, other);
    CHECK(counts[1] == 1 && other[1] == 0, "replace: deletes %d %d", counts[1], other[1]);
    MPI_Type_set_attr(vec, kcount, counts);
    CHECK(other[1] == 1, "replace back: deletes %d", other[1]);

    /* dup: user copy runs once, DUP_FN copies the value, NULL_COPY drops it */
    MPI_Type_dup(vec, &dup);
    CHECK(counts[0] == 1, "copies after dup: %d", counts[0]);
    MPI_Type_get_attr(dup, kcount, &v, &flag);
    CHECK(flag && v == (void *) counts, "dup kcount flag %d", flag);
    MPI_Type_get_attr(dup, kdup, &v, &flag);
    CHECK(flag && (MPI_Aint) v == 100 + rank, "dup kdup flag %d value %ld", flag, (long) (MPI_Aint) v);
    MPI_Type_get_attr(dup, knull, &v, &flag);
    CHECK(!flag, "NULL_COPY attribute was copied");

    /* the duplicate works as a datatype */
    {
        int src[12], dst[12], i, want;
        for (i = 0; i < 12; i++) {
            src[i] = rank * 100 + i;
            dst[i] = -1;
        }
        MPI_Sendrecv(src, 1, dup, (rank + 1) % size, 0, dst, 1, dup, (rank + size - 1) % size, 0,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (i = 0; i < 12; i++) {
            want = (i % 4) < 2 && i < 10 ? ((rank + size - 1) % size) * 100 + i : -1;
            CHECK(dst[i] == want, "dst[%d] = %d, want %d", i, dst[i], want);
        }
    }

    /* delete_attr runs the callback; freeing runs the rest */
    MPI_Type_delete_attr(dup, kcount);
    CHECK(counts[1] == 2, "deletes after delete_attr: %d", counts[1]);
    MPI_Type_get_attr(dup, kcount, &v, &flag);
    CHECK(!flag, "attribute still there after delete_attr");
    MPI_Type_free(&dup);
    CHECK(counts[1] == 2 && dup == MPI_DATATYPE_NULL, "free of dup: deletes %d", counts[1]);
    MPI_Type_free(&vec);
    CHECK(counts[1] == 3, "free of vec: deletes %d", counts[1]);

    /* attributes on a predefined type belong to this rank alone */
    MPI_Type_set_attr(MPI_INT, kdup, (void *) (MPI_Aint) (1000 + rank));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Type_get_attr(MPI_INT, kdup, &v, &flag);
    CHECK(flag && (MPI_Aint) v == 1000 + rank, "MPI_INT attribute: flag %d value %ld", flag,
          (long) (MPI_Aint) v);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Type_delete_attr(MPI_INT, kdup);
    MPI_Type_get_attr(MPI_INT, kdup, &v, &flag);
    CHECK(!flag, "MPI_INT attribute still set");

    /* a failing copy callback: dup returns the error and MPI_DATATYPE_NULL */
    MPI_Type_create_keyval(failing_copy, MPI_TYPE_NULL_DELETE_FN, &kfail, NULL);
    MPI_Type_contiguous(2, MPI_DOUBLE, &vec);
    MPI_Type_set_attr(vec, kfail, NULL);
    dup2 = MPI_DOUBLE;
    rc = MPI_Type_dup(vec, &dup2);
    CHECK(rc != MPI_SUCCESS && ct_class(rc) == MPI_ERR_OTHER, "dup with failing copy: class %d",
          ct_class(rc));
    CHECK(dup2 == MPI_DATATYPE_NULL, "dup with failing copy did not give MPI_DATATYPE_NULL");

    /* a failing delete callback: set, delete_attr and free report it */
    MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, picky_delete, &kpicky, &allow);
    MPI_Type_set_attr(vec, kpicky, NULL);
    rc = MPI_Type_set_attr(vec, kpicky, NULL);
    CHECK(ct_class(rc) == MPI_ERR_OTHER, "set over a refusing delete: class %d", ct_class(rc));
    rc = MPI_Type_delete_attr(vec, kpicky);
    CHECK(ct_class(rc) == MPI_ERR_OTHER, "delete_attr refused: class %d", ct_class(rc));
    allow = 1;
    CHECK(MPI_Type_free(&vec) == MPI_SUCCESS && vec == MPI_DATATYPE_NULL, "free after allowing");

    /* keyvals of the wrong kind, and freed keyvals */
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &kcomm, NULL);
    rc = MPI_Type_set_attr(MPI_INT, kcomm, NULL);
    CHECK(ct_class(rc) == MPI_ERR_KEYVAL, "comm keyval on a type: class %d", ct_class(rc));
    rc = MPI_Comm_set_attr(MPI_COMM_WORLD, knull, NULL);
    CHECK(ct_class(rc) == MPI_ERR_KEYVAL, "type keyval on a comm: class %d", ct_class(rc));
    MPI_Type_free_keyval(&knull);
    CHECK(knull == MPI_KEYVAL_INVALID, "free_keyval did not reset the keyval");
    bad = MPI_INT;
    MPI_Type_dup(MPI_INT, &bad);
    rc = MPI_Type_set_attr(bad, kdup, NULL);
    CHECK(rc == MPI_SUCCESS, "set on a dup of MPI_INT: class %d", ct_class(rc));
    MPI_Type_free(&bad);

    MPI_Comm_free_keyval(&kcomm);
    MPI_Type_free_keyval(&kcount);
    MPI_Type_free_keyval(&kdup);
    MPI_Type_free_keyval(&kfail);
    MPI_Type_free_keyval(&kpicky);
    return ct_finish(rank, errs);
}
