/* Error handlers: MPI_Comm_get_errhandler / MPI_Comm_set_errhandler,
 * inheritance by MPI_Comm_dup, user handlers made with
 * MPI_Comm_create_errhandler (called with the communicator and the code,
 * then the call returns the code), MPI_Comm_call_errhandler, freeing. */
#include "ct.h"

/* The handler records what it saw in the communicator's name (no globals). */
static void record_handler(MPI_Comm *comm, int *code, ...)
{
    char s[MPI_MAX_OBJECT_NAME];
    int cls = -1;
    MPI_Error_class(*code, &cls);
    snprintf(s, sizeof s, "handled class %d", cls);
    MPI_Comm_set_name(*comm, s);
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, rc, len;
    MPI_Errhandler eh, mine;
    MPI_Comm d1, d2;
    char name[MPI_MAX_OBJECT_NAME], want[MPI_MAX_OBJECT_NAME];
    int buf = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh);
    CHECK(eh == MPI_ERRORS_ARE_FATAL, "default handler of COMM_WORLD is not ERRORS_ARE_FATAL");
    MPI_Errhandler_free(&eh);
    CHECK(eh == MPI_ERRHANDLER_NULL, "Errhandler_free did not null the handle");

    MPI_Comm_dup(MPI_COMM_WORLD, &d1);
    MPI_Comm_set_errhandler(d1, MPI_ERRORS_RETURN);
    MPI_Comm_get_errhandler(d1, &eh);
    CHECK(eh == MPI_ERRORS_RETURN, "get_errhandler after set gave another handler");
    MPI_Errhandler_free(&eh);
    /* COMM_WORLD is unaffected */
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh);
    CHECK(eh == MPI_ERRORS_ARE_FATAL, "setting a dup's handler changed COMM_WORLD's");
    MPI_Errhandler_free(&eh);

    /* a dup inherits the handler */
    MPI_Comm_dup(d1, &d2);
    MPI_Comm_get_errhandler(d2, &eh);
    CHECK(eh == MPI_ERRORS_RETURN, "dup did not inherit ERRORS_RETURN");
    MPI_Errhandler_free(&eh);
    rc = MPI_Send(&buf, 1, MPI_INT, size, 0, d2);
    CHECK(rc != MPI_SUCCESS && ct_class(rc) == MPI_ERR_RANK, "inherited handler: class %d",
          ct_class(rc));

    /* a user handler */
    MPI_Comm_create_errhandler(record_handler, &mine);
    MPI_Comm_set_errhandler(d1, mine);
    MPI_Comm_get_errhandler(d1, &eh);
    CHECK(eh == mine, "get_errhandler did not return the user handler");
    MPI_Errhandler_free(&eh);
    MPI_Comm_set_name(d1, "untouched");
    rc = MPI_Send(&buf, 1, MPI_INT, size, 0, d1);
    CHECK(rc != MPI_SUCCESS && ct_class(rc) == MPI_ERR_RANK, "user handler: call returned class %d",
          ct_class(rc));
    MPI_Comm_get_name(d1, name, &len);
    snprintf(want, sizeof want, "handled class %d", MPI_ERR_RANK);
    CHECK(strcmp(name, want) == 0, "user handler recorded '%s', expected '%s'", name, want);

    /* invoking it directly */
    MPI_Comm_set_name(d1, "untouched");
    rc = MPI_Comm_call_errhandler(d1, MPI_ERR_OTHER);
    MPI_Comm_get_name(d1, name, &len);
    snprintf(want, sizeof want, "handled class %d", MPI_ERR_OTHER);
    CHECK(strcmp(name, want) == 0, "Comm_call_errhandler recorded '%s', expected '%s'", name, want);
    rc = MPI_Comm_call_errhandler(d2, MPI_ERR_OTHER);  /* ERRORS_RETURN: returns */
    CHECK(rc == MPI_SUCCESS, "Comm_call_errhandler with ERRORS_RETURN returned %d", rc);

    /* the user handler stays attached after the handle is freed */
    MPI_Errhandler_free(&mine);
    MPI_Comm_set_name(d1, "untouched");
    rc = MPI_Recv(&buf, 1, MPI_INT, 0, -9, d1, MPI_STATUS_IGNORE);
    MPI_Comm_get_name(d1, name, &len);
    snprintf(want, sizeof want, "handled class %d", MPI_ERR_TAG);
    CHECK(rc != MPI_SUCCESS && strcmp(name, want) == 0,
          "handler after Errhandler_free recorded '%s', expected '%s'", name, want);

    /* and d1 still communicates */
    {
        int v = rank, got = -1;
        rc = MPI_Sendrecv(&v, 1, MPI_INT, (rank + 1) % size, 0, &got, 1, MPI_INT,
                          (rank + size - 1) % size, 0, d1, MPI_STATUS_IGNORE);
        CHECK(rc == MPI_SUCCESS && got == (rank + size - 1) % size, "d1 Sendrecv got %d", got);
    }

    /* back to fatal on d2, then to return again */
    MPI_Comm_set_errhandler(d2, MPI_ERRORS_ARE_FATAL);
    MPI_Comm_get_errhandler(d2, &eh);
    CHECK(eh == MPI_ERRORS_ARE_FATAL, "could not set ERRORS_ARE_FATAL back");
    MPI_Errhandler_free(&eh);

    MPI_Comm_free(&d2);
    MPI_Comm_free(&d1);
    return ct_finish(rank, errs);
}
