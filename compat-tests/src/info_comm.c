/* Info objects (create/set/get/get_string/valuelen/nkeys/nthkey/delete/dup/free) and the
 * communicator calls around them: Comm_split_type(SHARED), Comm_idup, Comm_dup_with_info,
 * Comm_set_info/get_info. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include "ct.h"

int main(int argc, char **argv)
{
    int rank, size, errs = 0, flag, len, n;
    char val[64], key[MPI_MAX_INFO_KEY];
    MPI_Info info, copy, got;
    MPI_Comm shared, d1, d2;
    MPI_Request req;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    MPI_Info_create(&info);
    MPI_Info_set(info, "alpha", "1");
    MPI_Info_set(info, "beta", "two");
    MPI_Info_set(info, "alpha", "uno");
    MPI_Info_get_nkeys(info, &n);
    CHECK(n == 2, "nkeys %d", n);
    MPI_Info_get_nthkey(info, 1, key);
    CHECK(strcmp(key, "beta") == 0, "nthkey(1) = '%s'", key);
    MPI_Info_get_valuelen(info, "alpha", &len, &flag);
    CHECK(flag && len == 3, "valuelen %d flag %d", len, flag);
    len = sizeof val;
    MPI_Info_get_string(info, "beta", &len, val, &flag);
    CHECK(flag && strcmp(val, "two") == 0 && len == 4, "get_string '%s' len %d", val, len);
    MPI_Info_get_string(info, "gamma", &len, val, &flag);
    CHECK(!flag, "missing key found");
    MPI_Info_dup(info, &copy);
    MPI_Info_delete(info, "alpha");
    MPI_Info_get_nkeys(info, &n);
    CHECK(n == 1, "nkeys after delete %d", n);
    MPI_Info_get_nkeys(copy, &n);
    CHECK(n == 2, "dup kept %d keys", n);
    MPI_Info_free(&copy);
    CHECK(copy == MPI_INFO_NULL, "free did not reset the handle");

    /* all ranks of this job run on one node */
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &shared);
    MPI_Comm_size(shared, &n);
    CHECK(n == size, "shared comm size %d", n);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_UNDEFINED, rank, MPI_INFO_NULL, &d1);
    CHECK(d1 == MPI_COMM_NULL, "MPI_UNDEFINED split gave a communicator");

    MPI_Comm_idup(MPI_COMM_WORLD, &d1, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_Comm_dup_with_info(shared, info, &d2);
    MPI_Comm_set_info(d2, info);
    MPI_Comm_get_info(d2, &got);
    MPI_Info_free(&got);
    {
        int sum = 0, one = 1;
        MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, d1);
        CHECK(sum == size, "allreduce on idup comm %d", sum);
        MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, d2);
        CHECK(sum == size, "allreduce on dup_with_info comm %d", sum);
    }
    MPI_Comm_free(&d1);
    MPI_Comm_free(&d2);
    MPI_Comm_free(&shared);
    MPI_Info_free(&info);
    return ct_finish(rank, errs);
}
