/* MPI_Alloc_mem / MPI_Free_mem (memory used as a communication buffer),
 * MPI_Pcontrol, the large-count MPI_Get_count_c / MPI_Get_elements_c, and (MPI
 * 4.1, where the header has them) MPI_Status_get/set_source/tag/error. */
#include "ct.h"

int main(int argc, char **argv)
{
    int rank, size, errs = 0, i, n = 1000;
    int *mem = NULL;
    MPI_Status st;
    MPI_Count cnt = -1;
    MPI_Info info;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    CHECK(MPI_Pcontrol(0) == MPI_SUCCESS && MPI_Pcontrol(2) == MPI_SUCCESS &&
              MPI_Pcontrol(1) == MPI_SUCCESS,
          "MPI_Pcontrol failed");

    /* memory from MPI_Alloc_mem, with and without an info hint, as send and receive buffer */
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_minimum_memory_alignment", "64");
    CHECK(MPI_Alloc_mem((MPI_Aint) (n * sizeof(int)), info, &mem) == MPI_SUCCESS && mem != NULL,
          "MPI_Alloc_mem failed");
    MPI_Info_free(&info);
    {
        int *in = NULL;
        MPI_Alloc_mem((MPI_Aint) (n * sizeof(int)), MPI_INFO_NULL, &in);
        for (i = 0; i < n; i++) {
            mem[i] = rank * n + i;
            in[i] = -1;
        }
        MPI_Sendrecv(mem, n, MPI_INT, (rank + 1) % size, 0, in, n, MPI_INT, (rank + size - 1) % size,
                     0, MPI_COMM_WORLD, &st);
        for (i = 0; i < n; i++)
            if (in[i] != ((rank + size - 1) % size) * n + i) {
                CHECK(0, "in[%d] = %d", i, in[i]);
                break;
            }
        MPI_Get_count_c(&st, MPI_INT, &cnt);
        CHECK(cnt == n, "MPI_Get_count_c %lld", (long long) cnt);
        MPI_Get_count_c(&st, MPI_DOUBLE, &cnt);
        CHECK(cnt == n / 2, "MPI_Get_count_c in doubles %lld", (long long) cnt);
        MPI_Get_elements_c(&st, MPI_SHORT, &cnt);
        CHECK(cnt == 2 * n, "MPI_Get_elements_c in shorts %lld", (long long) cnt);
        CHECK(MPI_Free_mem(in) == MPI_SUCCESS, "MPI_Free_mem failed");
    }
    CHECK(MPI_Free_mem(mem) == MPI_SUCCESS, "MPI_Free_mem failed");
    {
        void *z = NULL;
        CHECK(MPI_Alloc_mem(0, MPI_INFO_NULL, &z) == MPI_SUCCESS, "zero-size MPI_Alloc_mem");
        MPI_Free_mem(z);
    }

#if MPI_VERSION > 4 || (MPI_VERSION == 4 && MPI_SUBVERSION >= 1)
    {
        int v = -1;
        MPI_Status_set_source(&st, 3);
        MPI_Status_set_tag(&st, 44);
        MPI_Status_set_error(&st, MPI_ERR_TAG);
        CHECK(st.MPI_SOURCE == 3 && st.MPI_TAG == 44 && st.MPI_ERROR == MPI_ERR_TAG, "set fields");
        MPI_Status_get_source(&st, &v);
        CHECK(v == 3, "get_source %d", v);
        MPI_Status_get_tag(&st, &v);
        CHECK(v == 44, "get_tag %d", v);
        MPI_Status_get_error(&st, &v);
        CHECK(v == MPI_ERR_TAG, "get_error %d", v);
        MPI_Get_count_c(&st, MPI_INT, &cnt);
        CHECK(cnt == n, "count kept by the setters: %lld", (long long) cnt);
    }
#endif
    return ct_finish(rank, errs);
}
