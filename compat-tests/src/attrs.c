/* Attributes: predefined attributes of MPI_COMM_WORLD (TAG_UB, HOST, IO,
 * WTIME_IS_GLOBAL, APPNUM, UNIVERSE_SIZE, LASTUSEDCODE) and user keyvals
 * with copy and delete callbacks. */
#include "ct.h"

/* copy callback: copy the pointer, count the copies in the int it points to */
static int count_copy(MPI_Comm oldcomm, int keyval, void *extra, void *attr_in,
                      void *attr_out, int *flag)
{
    (void) oldcomm;
    (void) keyval;
    (void) extra;
    ((int *) attr_in)[0]++;
    *(void **) attr_out = attr_in;
    *flag = 1;
    return MPI_SUCCESS;
}

/* delete callback: count deletions in the second int */
static int count_delete(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    (void) comm;
    (void) keyval;
    (void) extra;
    ((int *) attr)[1]++;
    return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, flag;
    int *val;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &val, &flag);
    CHECK(flag, "MPI_TAG_UB not present");
    if (flag) {
        int tag_ub = *val, got = -1, mine = 42 + rank;
        MPI_Status st;
        CHECK(tag_ub >= 32767, "MPI_TAG_UB = %d < 32767", tag_ub);
        /* the bound must really be usable, across processes and within one */
        MPI_Sendrecv(&mine, 1, MPI_INT, (rank + 1) % size, tag_ub, &got, 1, MPI_INT,
                     (rank + size - 1) % size, tag_ub, MPI_COMM_WORLD, &st);
        CHECK(got == 42 + (rank + size - 1) % size && st.MPI_TAG == tag_ub,
              "message with tag TAG_UB: got %d tag ok %d", got, st.MPI_TAG == tag_ub);
        MPI_Sendrecv(&mine, 1, MPI_INT, rank, tag_ub - 1, &got, 1, MPI_INT, rank,
                     tag_ub - 1, MPI_COMM_WORLD, &st);
        CHECK(got == mine, "self message with tag TAG_UB-1 got %d", got);
    }

    flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_HOST, &val, &flag);
    CHECK(flag, "MPI_HOST not present");
    if (flag)
        CHECK(*val == MPI_PROC_NULL || (*val >= 0 && *val < size), "MPI_HOST = %d", *val);

    flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_IO, &val, &flag);
    CHECK(flag, "MPI_IO not present");
    if (flag)
        CHECK(*val == MPI_PROC_NULL || *val == MPI_ANY_SOURCE || (*val >= 0 && *val < size),
              "MPI_IO = %d", *val);

    /* optional attributes: the key must exist; values checked only if set */
    flag = -1;
    CHECK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &val, &flag) == MPI_SUCCESS,
          "get WTIME_IS_GLOBAL failed");
    CHECK(flag == 0 || flag == 1, "WTIME_IS_GLOBAL flag %d", flag);
    if (flag == 1)
        CHECK(*val == 0 || *val == 1, "WTIME_IS_GLOBAL = %d", *val);

    flag = -1;
    CHECK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &val, &flag) == MPI_SUCCESS,
          "get APPNUM failed");
    CHECK(flag == 0 || flag == 1, "APPNUM flag %d", flag);
    if (flag == 1)
        CHECK(*val >= 0, "APPNUM = %d", *val);

    flag = -1;
    CHECK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &val, &flag) == MPI_SUCCESS,
          "get UNIVERSE_SIZE failed");
    CHECK(flag == 0 || flag == 1, "UNIVERSE_SIZE flag %d", flag);
    if (flag == 1)
        CHECK(*val >= 1, "UNIVERSE_SIZE = %d", *val);

    flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &val, &flag);
    CHECK(flag, "MPI_LASTUSEDCODE not present");
    if (flag)
        CHECK(*val >= MPI_ERR_LASTCODE, "MPI_LASTUSEDCODE %d < MPI_ERR_LASTCODE", *val);

    /* user keyvals */
    {
        int kcopy, knocopy, r;
        int *counts = ct_malloc(2 * sizeof(int));
        int other = 7;
        MPI_Comm d1, d2;
        counts[0] = counts[1] = 0;
        MPI_Comm_create_keyval(count_copy, count_delete, &kcopy, NULL);
        MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &knocopy, NULL);
        MPI_Comm_dup(MPI_COMM_WORLD, &d1);
        MPI_Comm_set_attr(d1, kcopy, counts);
        MPI_Comm_set_attr(d1, knocopy, &other);

        flag = 0;
        MPI_Comm_get_attr(d1, kcopy, &val, &flag);
        CHECK(flag && val == counts, "attribute not read back");
        flag = -1;
        MPI_Comm_get_attr(MPI_COMM_WORLD, kcopy, &val, &flag);
        CHECK(flag == 0, "attribute leaked to COMM_WORLD");

        MPI_Comm_dup(d1, &d2);
        CHECK(counts[0] == 1, "copy callback ran %d times", counts[0]);
        flag = 0;
        MPI_Comm_get_attr(d2, kcopy, &val, &flag);
        CHECK(flag && val == counts, "copied attribute missing on dup");
        flag = -1;
        MPI_Comm_get_attr(d2, knocopy, &val, &flag);
        CHECK(flag == 0, "NULL_COPY_FN attribute was copied");

        /* replacing an attribute calls delete on the old value */
        MPI_Comm_set_attr(d2, kcopy, counts);
        CHECK(counts[1] == 1, "delete callback on replace ran %d times", counts[1]);
        MPI_Comm_delete_attr(d2, kcopy);
        CHECK(counts[1] == 2, "delete callback on delete_attr ran %d times", counts[1]);
        flag = -1;
        MPI_Comm_get_attr(d2, kcopy, &val, &flag);
        CHECK(flag == 0, "deleted attribute still present");
        MPI_Comm_free(&d2);
        CHECK(counts[1] == 2, "delete callback ran for an absent attribute");
        MPI_Comm_free(&d1);
        CHECK(counts[1] == 3, "delete callback on Comm_free ran %d times", counts[1]);

        MPI_Comm_free_keyval(&kcopy);
        MPI_Comm_free_keyval(&knocopy);
        CHECK(kcopy == MPI_KEYVAL_INVALID, "free_keyval did not reset the keyval");
        r = counts[0] + counts[1];
        CHECK(r == 4, "callback total %d", r);
        free(counts);
    }

    /* A freed key stays usable while an attribute still uses it (the standard frees it only
     * once its last attribute is deleted): the attribute can be read, copied by a dup,
     * deleted, and freeing the key again meanwhile is harmless. */
    {
        int k, saved, r, *v2;
        int *counts = ct_malloc(2 * sizeof(int));
        MPI_Comm d1, d2;
        counts[0] = counts[1] = 0;
        MPI_Comm_dup(MPI_COMM_WORLD, &d1);
        MPI_Comm_create_keyval(count_copy, count_delete, &k, NULL);
        saved = k;
        MPI_Comm_set_attr(d1, k, counts);
        MPI_Comm_free_keyval(&k);
        CHECK(k == MPI_KEYVAL_INVALID, "free_keyval did not reset the keyval");
        flag = 0;
        r = MPI_Comm_get_attr(d1, saved, &v2, &flag);
        CHECK(r == MPI_SUCCESS && flag && v2 == counts, "attribute of a freed key not readable (%d)", r);
        MPI_Comm_dup(d1, &d2);
        CHECK(counts[0] == 1, "copy callback of a freed key ran %d times", counts[0]);
        MPI_Comm_free(&d2);
        k = saved;
        r = MPI_Comm_free_keyval(&k);
        CHECK(r == MPI_SUCCESS, "second free of a key still in use gave %d", r);
        r = MPI_Comm_delete_attr(d1, saved);
        CHECK(r == MPI_SUCCESS && counts[1] == 2, "delete_attr with a freed key: %d, %d deletes", r, counts[1]);
        MPI_Comm_free(&d1);
        free(counts);
    }

    return ct_finish(rank, errs);
}
