/* MPI_Init / MPI_Finalize and the environment queries around them:
 * Initialized, Finalized, Query_thread, Is_thread_main, Get_version,
 * Get_library_version, Wtime, Wtick, Get_processor_name. */
#include "ct.h"

int main(int argc, char **argv)
{
    int rank = 0, size = 0, errs = 0;
    int flag = -1, pre_init = -1, pre_fini = -1;
    int v = -1, sv = -1, v2 = -1, sv2 = -1;
    int provided = -1, len = -1;
    double t0, t1, tick;
    char name[MPI_MAX_PROCESSOR_NAME + 1];
    char lib[MPI_MAX_LIBRARY_VERSION_STRING + 1];

    /* Allowed before MPI_Init. */
    MPI_Get_version(&v, &sv);
    MPI_Initialized(&pre_init);
    MPI_Finalized(&pre_fini);

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    CHECK(pre_init == 0, "MPI_Initialized before MPI_Init gave %d", pre_init);
    CHECK(pre_fini == 0, "MPI_Finalized before MPI_Init gave %d", pre_fini);
    MPI_Initialized(&flag);
    CHECK(flag == 1, "MPI_Initialized after MPI_Init gave %d", flag);
    MPI_Finalized(&flag);
    CHECK(flag == 0, "MPI_Finalized after MPI_Init gave %d", flag);
    CHECK(size >= 1 && rank >= 0 && rank < size, "rank %d size %d", rank, size);

    CHECK(MPI_THREAD_SINGLE < MPI_THREAD_FUNNELED &&
          MPI_THREAD_FUNNELED < MPI_THREAD_SERIALIZED &&
          MPI_THREAD_SERIALIZED < MPI_THREAD_MULTIPLE, "thread levels not ordered");
    MPI_Query_thread(&provided);
    CHECK(provided == MPI_THREAD_SINGLE || provided == MPI_THREAD_FUNNELED ||
          provided == MPI_THREAD_SERIALIZED || provided == MPI_THREAD_MULTIPLE,
          "MPI_Query_thread gave %d", provided);
    flag = -1;
    MPI_Is_thread_main(&flag);
    CHECK(flag == 1, "MPI_Is_thread_main gave %d", flag);

    MPI_Get_version(&v2, &sv2);
    CHECK(v == v2 && sv == sv2, "version %d.%d before init, %d.%d after", v, sv, v2, sv2);
    CHECK(v >= 3, "MPI version %d < 3", v);
    CHECK(v == MPI_VERSION && sv == MPI_SUBVERSION,
          "MPI_Get_version %d.%d but mpi.h says %d.%d", v, sv, MPI_VERSION, MPI_SUBVERSION);

    len = -1;
    memset(lib, 0, sizeof lib);
    CHECK(MPI_Get_library_version(lib, &len) == MPI_SUCCESS, "Get_library_version failed");
    CHECK(len > 0 && len <= MPI_MAX_LIBRARY_VERSION_STRING, "library version length %d", len);
    if (len > 0 && len <= MPI_MAX_LIBRARY_VERSION_STRING)
        CHECK((int)strlen(lib) == len, "library version strlen %d != resultlen %d",
              (int)strlen(lib), len);

    len = -1;
    memset(name, 0, sizeof name);
    CHECK(MPI_Get_processor_name(name, &len) == MPI_SUCCESS, "Get_processor_name failed");
    CHECK(len > 0 && len <= MPI_MAX_PROCESSOR_NAME, "processor name length %d", len);
    if (len > 0 && len <= MPI_MAX_PROCESSOR_NAME)
        CHECK((int)strlen(name) == len, "processor name strlen %d != resultlen %d",
              (int)strlen(name), len);

    tick = MPI_Wtick();
    CHECK(tick > 0.0 && tick <= 1.0, "MPI_Wtick out of range");
    t0 = MPI_Wtime();
    MPI_Barrier(MPI_COMM_WORLD);
    t1 = MPI_Wtime();
    CHECK(t1 >= t0, "MPI_Wtime went backwards");
    CHECK(t1 - t0 < 3600.0, "MPI_Wtime jumped by an hour");
    {
        /* time must advance: wait until Wtime moves (bounded loop) */
        long i;
        double t2 = t1;
        for (i = 0; i < 200000000L && t2 <= t1; i++)
            t2 = MPI_Wtime();
        CHECK(t2 > t1, "MPI_Wtime never advanced");
    }

    MPI_Finalize();

    flag = -1;
    MPI_Finalized(&flag);
    CHECK(flag == 1, "MPI_Finalized after MPI_Finalize gave %d", flag);
    flag = -1;
    MPI_Initialized(&flag);
    CHECK(flag == 1, "MPI_Initialized after MPI_Finalize gave %d", flag);
    MPI_Get_version(&v2, &sv2);  /* allowed after finalize */
    CHECK(v == v2 && sv == sv2, "version changed after finalize");

    if (errs == 0)
        printf("rank %d: OK\n", rank);
    else
        printf("rank %d: FAILED with %d errors\n", rank, errs);
    fflush(stdout);
    return errs ? 1 : 0;
}
