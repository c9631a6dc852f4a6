/* rma_errors: bad input and epoch errors in one-sided communication (issue 18), with
 * MPI_ERRORS_RETURN on the windows and on MPI_COMM_WORLD: the error class of each, by name;
 * a user error handler on a window sees the window and the code. */
#include "ct.h"

static const char *cls(int code)
{
    int c;
    if (code == MPI_SUCCESS)
        return "MPI_SUCCESS";
    MPI_Error_class(code, &c);
#define K(x) if (c == x) return #x;
    K(MPI_ERR_WIN) K(MPI_ERR_RMA_SYNC) K(MPI_ERR_RMA_RANGE) K(MPI_ERR_RANK) K(MPI_ERR_LOCKTYPE)
    K(MPI_ERR_OP) K(MPI_ERR_RMA_FLAVOR) K(MPI_ERR_SIZE) K(MPI_ERR_DISP) K(MPI_ERR_ARG)
    K(MPI_ERR_TYPE) K(MPI_ERR_COUNT) K(MPI_ERR_ASSERT) K(MPI_ERR_OTHER) K(MPI_ERR_RMA_ATTACH)
    K(MPI_ERR_COMM) K(MPI_ERR_GROUP)
#undef K
    return "another class";
}

static int is_arg(int code, int standard)
{
    int c;
    if (code == MPI_SUCCESS)
        return 0;
    MPI_Error_class(code, &c);
    return c == MPI_ERR_ARG || c == standard;
}

static int range_ok(int code)
{
    int c;
    if (code == MPI_SUCCESS)
        return 1;
    MPI_Error_class(code, &c);
    return c == MPI_ERR_RMA_RANGE;
}

static void handler(MPI_Win *win, int *code, ...)
{
    int rank, *hits;
    int flag;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Win_get_attr(*win, MPI_WIN_BASE, &hits, &flag);
    /* the window's memory counts the calls of this handler */
    hits[7]++;
    (void)code;
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    int mem[16] = {0}; /* the window covers the first 8 */
    MPI_Win win;
    MPI_Win_create(mem, 8 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    int v = 1, rc;
    int right = (rank + 1) % size;

    rc = MPI_Put(&v, 1, MPI_INT, right, 0, 1, MPI_INT, win);
    ct_say(rank, "put before any epoch: %s", cls(rc));
    rc = MPI_Win_unlock(right, win);
    ct_say(rank, "unlock without lock: %s", cls(rc));
    rc = MPI_Win_complete(win);
    ct_say(rank, "complete without start: %s", cls(rc));
    rc = MPI_Win_flush(right, win);
    ct_say(rank, "flush without lock: %s", cls(rc));
    /* MPICH 4.0.2 answers MPI_ERR_ARG where the standard names MPI_ERR_LOCKTYPE and
     * MPI_ERR_ASSERT: either is accepted. */
    rc = MPI_Win_lock(12345, right, 0, win);
    ct_say(rank, "bad lock type: %s", is_arg(rc, MPI_ERR_LOCKTYPE) ? "invalid argument" : cls(rc));

    MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win);
    rc = MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win);
    ct_say(rank, "lock twice: %s", cls(rc));
    rc = MPI_Put(&v, 1, MPI_INT, size, 0, 1, MPI_INT, win);
    ct_say(rank, "put to rank size: %s", cls(rc));
    /* MPICH 4.0.2 does not check the target range (it writes past the window, here into
     * mem[8..]); Toucan refuses with MPI_ERR_RMA_RANGE, as the standard names. */
    rc = MPI_Put(&v, 1, MPI_INT, right, 8, 1, MPI_INT, win);
    ct_say(rank, "put past the window: %s", range_ok(rc) ? "refused or unchecked" : cls(rc));
    rc = MPI_Put(&v, 2, MPI_INT, right, 7, 2, MPI_INT, win);
    ct_say(rank, "put across the window's end: %s", range_ok(rc) ? "refused or unchecked" : cls(rc));
#ifdef TOUCAN_MPI
    {
        int c = -1;
        if (rc != MPI_SUCCESS)
            MPI_Error_class(rc, &c);
        CHECK(c == MPI_ERR_RMA_RANGE, "the target range is checked");
    }
#endif
    rc = MPI_Get(&v, 1, MPI_INT, right, -1, 1, MPI_INT, win);
    ct_say(rank, "get at a negative displacement: %s", cls(rc));
    rc = MPI_Put(&v, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, win);
    ct_say(rank, "put to MPI_PROC_NULL: %s", cls(rc));
    rc = MPI_Put(&v, -1, MPI_INT, right, 0, 1, MPI_INT, win);
    ct_say(rank, "negative count: %s", cls(rc));
    rc = MPI_Put(&v, 1, MPI_DATATYPE_NULL, right, 0, 1, MPI_INT, win);
    ct_say(rank, "null datatype: %s", cls(rc));
    rc = MPI_Win_free(&win);
    ct_say(rank, "free while locked: %s", cls(rc));
    MPI_Win_unlock(right, win);

    rc = MPI_Put(&v, 1, MPI_INT, right, 0, 1, MPI_INT, MPI_WIN_NULL);
    ct_say(rank, "MPI_WIN_NULL: %s", cls(rc));
    MPI_Aint sz;
    int du;
    void *p;
    rc = MPI_Win_shared_query(win, 0, &sz, &du, &p);
    ct_say(rank, "shared_query of a created window: %s", cls(rc));
    rc = MPI_Win_attach(win, mem, 8 * sizeof(int));
    ct_say(rank, "attach to a created window: %s", cls(rc));
    MPI_Win w2;
    rc = MPI_Win_create(mem, -8, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w2);
    ct_say(rank, "negative size: %s", cls(rc));
    rc = MPI_Win_create(mem, sizeof mem, 0, MPI_INFO_NULL, MPI_COMM_WORLD, &w2);
    ct_say(rank, "zero displacement unit: %s", cls(rc));
    rc = MPI_Win_fence(0x7fff0000, win);
    ct_say(rank, "bad assert: %s", is_arg(rc, MPI_ERR_ASSERT) ? "invalid argument" : cls(rc));

    /* A user error handler. */
    MPI_Errhandler eh;
    MPI_Win_create_errhandler(handler, &eh);
    MPI_Win_set_errhandler(win, eh);
    MPI_Errhandler_free(&eh);
    mem[7] = 0;
    rc = MPI_Win_unlock(right, win);
    MPI_Win_call_errhandler(win, MPI_ERR_OTHER);
    ct_say(rank, "user handler calls: %d (%s)", mem[7], cls(rc));
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    MPI_Win_free(&win);
    CHECK(win == MPI_WIN_NULL, "freed");
    ct_say(rank, errs ? "FAILED" : "OK");
    MPI_Finalize();
    return errs != 0;
}
