/* rma_fence: active-target RMA with MPI_Win_fence (issue 18).
 * Win_create and Win_allocate windows; Put, Get, Accumulate (SUM, MAX, REPLACE) and
 * Get_accumulate between every pair of ranks, with a vector type on the origin and an
 * indexed type on the target; the large-count forms; attributes (MPI_WIN_BASE, SIZE,
 * DISP_UNIT, CREATE_FLAVOR, MODEL), names, info, Win_get_group, a user error handler
 * and Win_call_errhandler; MPI_PROC_NULL targets. */
#include "ct.h"

#define N 8

static void on_err(MPI_Win *win, int *code, ...)
{
    (void)win;
    (void)code;
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* 1. Win_create over an int array, each rank puts its rank into slot r of everyone. */
    int *mem = malloc(sizeof(int) * N * size);
    for (int i = 0; i < N * size; i++)
        mem[i] = -1;
    MPI_Win win;
    MPI_Win_create(mem, sizeof(int) * N * size, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_fence(0, win);
    int vals[N];
    for (int i = 0; i < N; i++)
        vals[i] = rank * 100 + i;
    for (int t = 0; t < size; t++)
        MPI_Put(vals, N, MPI_INT, t, rank * N, N, MPI_INT, win);
    MPI_Put(vals, N, MPI_INT, MPI_PROC_NULL, 0, N, MPI_INT, win);
    MPI_Win_fence(0, win);
    for (int r = 0; r < size; r++)
        for (int i = 0; i < N; i++)
            CHECK(mem[r * N + i] == r * 100 + i, "put: mem[%d] = %d", r * N + i, mem[r * N + i]);

    /* 2. Get every rank's block back, through a vector on the origin (every other int). */
    int *got = malloc(sizeof(int) * 2 * N * size);
    for (int i = 0; i < 2 * N * size; i++)
        got[i] = -7;
    MPI_Datatype vec;
    MPI_Type_vector(N, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    for (int t = 0; t < size; t++)
        MPI_Get(got + 2 * N * t, 1, vec, t, ((rank + 1) % size) * N, N, MPI_INT, win);
    MPI_Win_fence(0, win);
    for (int t = 0; t < size; t++)
        for (int i = 0; i < N; i++) {
            int want = ((rank + 1) % size) * 100 + i;
            CHECK(got[2 * N * t + 2 * i] == want, "get vec: %d != %d", got[2 * N * t + 2 * i], want);
            CHECK(got[2 * N * t + 2 * i + 1] == -7, "get vec gap touched");
        }

    /* 3. Accumulate SUM from every rank into rank 0's block 0, with an indexed target type
     *    (blocks of 1, 3 and 4 ints, in reverse order). */
    MPI_Win_fence(0, win);
    for (int i = 0; i < N * size; i++)
        mem[i] = 0;
    MPI_Win_fence(0, win);
    int bl[3] = {4, 3, 1}, dp[3] = {4, 1, 0};
    MPI_Datatype idx;
    MPI_Type_indexed(3, bl, dp, MPI_INT, &idx);
    MPI_Type_commit(&idx);
    int ones[N];
    for (int i = 0; i < N; i++)
        ones[i] = i + 1;
    MPI_Accumulate(ones, N, MPI_INT, 0, 0, 1, idx, MPI_SUM, win);
    MPI_Accumulate(&rank, 1, MPI_INT, 0, N, 1, MPI_INT, MPI_MAX, win);
    MPI_Win_fence(0, win);
    if (rank == 0) {
        /* origin element k lands at the k-th typemap entry: 4,5,6,7,1,2,3,0 */
        int order[N] = {4, 5, 6, 7, 1, 2, 3, 0};
        for (int k = 0; k < N; k++)
            CHECK(mem[order[k]] == (k + 1) * size, "acc: mem[%d] = %d want %d", order[k], mem[order[k]], (k + 1) * size);
        CHECK(mem[N] == size - 1, "acc max: %d", mem[N]);
    }

    /* 4. Get_accumulate (SUM, then NO_OP) and large-count Put_c/Get_c/Accumulate_c. */
    int one = 1, before = -1;
    MPI_Get_accumulate(&one, 1, MPI_INT, &before, 1, MPI_INT, 0, 2 * N - 1, 1, MPI_INT, MPI_SUM, win);
    MPI_Win_fence(0, win);
    CHECK(before >= 0 && before < size, "get_acc fetched %d", before);
    int after = -1;
    MPI_Get_accumulate(NULL, 0, MPI_INT, &after, 1, MPI_INT, 0, 2 * N - 1, 1, MPI_INT, MPI_NO_OP, win);
    MPI_Win_fence(0, win);
    CHECK(after == size, "get_acc no_op: %d", after);
    MPI_Put_c(vals, (MPI_Count)2, MPI_INT, (rank + 1) % size, 3 * N % (N * size), (MPI_Count)2, MPI_INT, win);
    MPI_Win_fence(0, win);
    int back[2] = {0, 0};
    MPI_Get_c(back, (MPI_Count)2, MPI_INT, rank, 3 * N % (N * size), (MPI_Count)2, MPI_INT, win);
    MPI_Win_fence(0, win);
    int from = (rank - 1 + size) % size;
    CHECK(back[0] == from * 100 && back[1] == from * 100 + 1, "put_c/get_c: %d %d", back[0], back[1]);
    MPI_Accumulate_c(&one, (MPI_Count)1, MPI_INT, 0, 0, (MPI_Count)1, MPI_INT, MPI_REPLACE, win);
    MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
    if (rank == 0)
        CHECK(mem[0] == 1, "replace: %d", mem[0]);

    /* 5. Attributes, name, group, info, error handler. */
    void *base;
    MPI_Aint *wsize;
    int *unit, *flavor, *model, flag;
    MPI_Win_get_attr(win, MPI_WIN_BASE, &base, &flag);
    CHECK(flag && base == mem, "WIN_BASE");
    MPI_Win_get_attr(win, MPI_WIN_SIZE, &wsize, &flag);
    CHECK(flag && *wsize == (MPI_Aint)(sizeof(int) * N * size), "WIN_SIZE");
    MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &unit, &flag);
    CHECK(flag && *unit == (int)sizeof(int), "WIN_DISP_UNIT");
    MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag);
    CHECK(flag && *flavor == MPI_WIN_FLAVOR_CREATE, "WIN_CREATE_FLAVOR");
    MPI_Win_get_attr(win, MPI_WIN_MODEL, &model, &flag);
    CHECK(flag && *model == MPI_WIN_UNIFIED, "WIN_MODEL %d", *model);
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    MPI_Win_set_name(win, "halo window");
    MPI_Win_get_name(win, name, &len);
    CHECK(strcmp(name, "halo window") == 0 && len == 11, "name '%s'", name);
    MPI_Group g, wg;
    int cmp;
    MPI_Win_get_group(win, &g);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Group_compare(g, wg, &cmp);
    CHECK(cmp == MPI_IDENT, "group compare %d", cmp);
    MPI_Group_free(&g);
    MPI_Group_free(&wg);
    MPI_Info info;
    char v[MPI_MAX_INFO_VAL];
    MPI_Win_get_info(win, &info);
    MPI_Info_get(info, "no_locks", MPI_MAX_INFO_VAL, v, &flag);
    CHECK(flag && strcmp(v, "false") == 0, "no_locks hint");
    MPI_Info_free(&info);
    MPI_Errhandler eh, old;
    MPI_Win_create_errhandler(on_err, &eh);
    MPI_Win_get_errhandler(win, &old);
    CHECK(old == MPI_ERRORS_ARE_FATAL, "default window error handler");
    MPI_Errhandler_free(&old);
    MPI_Win_set_errhandler(win, eh);
    MPI_Errhandler_free(&eh);
    CHECK(MPI_Win_call_errhandler(win, MPI_ERR_OTHER) == MPI_SUCCESS, "call_errhandler");
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    MPI_Win_free(&win);
    CHECK(win == MPI_WIN_NULL, "free sets MPI_WIN_NULL");

    /* 6. Win_allocate: a ring of doubles. */
    double *buf;
    MPI_Win_allocate(sizeof(double) * 4, sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &buf, &win);
    MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag);
    CHECK(flag && *flavor == MPI_WIN_FLAVOR_ALLOCATE, "allocate flavor");
    for (int i = 0; i < 4; i++)
        buf[i] = 0;
    MPI_Win_fence(MPI_MODE_NOPRECEDE, win);
    double d[4] = {rank + 0.5, rank + 1.5, rank + 2.5, rank + 3.5};
    MPI_Put(d, 4, MPI_DOUBLE, (rank + 1) % size, 0, 4, MPI_DOUBLE, win);
    MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
    for (int i = 0; i < 4; i++)
        CHECK(buf[i] == from + i + 0.5, "allocate ring: %g", buf[i]);
    MPI_Win_free(&win);

    MPI_Type_free(&vec);
    MPI_Type_free(&idx);
    free(mem);
    free(got);
    ct_say(rank, errs ? "FAILED" : "OK");
    MPI_Finalize();
    return errs != 0;
}
