/* User error classes, codes and strings added and removed again (MPI 4.1's
 * MPI_Remove_error_class/code/string; MPICH 4.0 has them as MPIX_Delete_error_*):
 * many add/remove cycles, the classes and strings of what remains, and a class
 * raised through a user error handler after its codes came and went. */
#include "ct.h"

#if MPI_VERSION > 4 || (MPI_VERSION == 4 && MPI_SUBVERSION >= 1)
#define REMOVE_CLASS MPI_Remove_error_class
#define REMOVE_CODE MPI_Remove_error_code
#define REMOVE_STRING MPI_Remove_error_string
#else
#define REMOVE_CLASS MPIX_Delete_error_class
#define REMOVE_CODE MPIX_Delete_error_code
#define REMOVE_STRING MPIX_Delete_error_string
#endif

/* Error handler that records the code it got in the communicator's name. */
static void name_the_code(MPI_Comm *comm, int *code, ...)
{
    char name[MPI_MAX_OBJECT_NAME];
    snprintf(name, sizeof name, "code %d", *code);
    MPI_Comm_set_name(*comm, name);
}

#define NCLASS 4
#define NCODE 3

int main(int argc, char **argv)
{
    int rank, errs = 0, i, j, k, cls, len;
    int classes[NCLASS], codes[NCLASS][NCODE];
    char want[MPI_MAX_ERROR_STRING], got[MPI_MAX_ERROR_STRING];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    /* add and remove everything many times: nothing may leak or break */
    for (k = 0; k < 200; k++) {
        for (i = 0; i < NCLASS; i++) {
            MPI_Add_error_class(&classes[i]);
            for (j = 0; j < NCODE; j++) {
                MPI_Add_error_code(classes[i], &codes[i][j]);
                snprintf(want, sizeof want, "round %d class %d code %d", k, i, j);
                MPI_Add_error_string(codes[i][j], want);
            }
        }
        for (i = 0; i < NCLASS; i++) {
            for (j = 0; j < NCODE; j++) {
                CHECK(REMOVE_STRING(codes[i][j]) == MPI_SUCCESS, "remove string %d/%d", i, j);
                CHECK(REMOVE_CODE(codes[i][j]) == MPI_SUCCESS, "remove code %d/%d", i, j);
            }
            CHECK(REMOVE_CLASS(classes[i]) == MPI_SUCCESS, "remove class %d", i);
        }
        if (errs)
            break;
    }

    /* what stays added answers as before */
    for (i = 0; i < NCLASS; i++) {
        MPI_Add_error_class(&classes[i]);
        for (j = 0; j < NCODE; j++) {
            MPI_Add_error_code(classes[i], &codes[i][j]);
            snprintf(want, sizeof want, "class %d code %d", i, j);
            MPI_Add_error_string(codes[i][j], want);
        }
    }
    /* remove the middle class's codes and class */
    for (j = 0; j < NCODE; j++) {
        REMOVE_STRING(codes[1][j]);
        REMOVE_CODE(codes[1][j]);
    }
    REMOVE_CLASS(classes[1]);
    for (i = 0; i < NCLASS; i++) {
        if (i == 1)
            continue;
        cls = -1;
        MPI_Error_class(classes[i], &cls);
        CHECK(cls == classes[i], "class of class %d is %d", i, cls);
        for (j = 0; j < NCODE; j++) {
            cls = -1;
            MPI_Error_class(codes[i][j], &cls);
            CHECK(cls == classes[i], "class of code %d/%d is %d, want %d", i, j, cls, classes[i]);
            got[0] = 0;
            MPI_Error_string(codes[i][j], got, &len);
            snprintf(want, sizeof want, "class %d code %d", i, j);
            CHECK(strcmp(got, want) == 0 && len == (int) strlen(want), "string of %d/%d: \"%s\"",
                  i, j, got);
        }
    }
    /* a string can be replaced after removal */
    REMOVE_STRING(codes[0][0]);
    MPI_Add_error_string(codes[0][0], "replaced");
    MPI_Error_string(codes[0][0], got, &len);
    CHECK(strcmp(got, "replaced") == 0, "replaced string \"%s\"", got);

    /* an error raised with a remaining code reaches a user handler with that code (which
     * it leaves in the communicator's name); MPI_Comm_call_errhandler then returns success */
    {
        MPI_Errhandler eh;
        MPI_Comm dup;
        char name[MPI_MAX_OBJECT_NAME];
        int rc;
        snprintf(want, sizeof want, "code %d", codes[2][1]);
        MPI_Comm_dup(MPI_COMM_WORLD, &dup);
        MPI_Comm_create_errhandler(name_the_code, &eh);
        MPI_Comm_set_errhandler(dup, eh);
        rc = MPI_Comm_call_errhandler(dup, codes[2][1]);
        MPI_Comm_get_name(dup, name, &len);
        CHECK(rc == MPI_SUCCESS && strcmp(name, want) == 0, "call_errhandler: rc %d, name \"%s\"",
              rc, name);
        MPI_Errhandler_free(&eh);
        MPI_Comm_free(&dup);
    }
    return ct_finish(rank, errs);
}
