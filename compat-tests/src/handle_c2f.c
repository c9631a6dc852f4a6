/* C <-> Fortran handle conversion (MPI_<Object>_c2f / _f2c, MPI_Status_c2f /
 * _f2c): predefined and created communicators, groups, datatypes, operations,
 * error handlers, info objects, requests and matched messages survive a round
 * trip through MPI_Fint and still work; a request converted twice gets the
 * same integer. */
#include "ct.h"

static void sum_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    int i;
    (void) dt;
    for (i = 0; i < *len; i++)
        ((int *) inout)[i] += ((int *) in)[i];
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, next, prev, v, flag, cmp;
    MPI_Comm dup, back_comm;
    MPI_Group grp, back_grp;
    MPI_Datatype vec, back_type;
    MPI_Op op, back_op;
    MPI_Errhandler eh;
    MPI_Info info, back_info;
    MPI_Request rq, back_rq;
    MPI_Message msg;
    MPI_Status st, st2;
    MPI_Fint f, f2, fst[MPI_F_STATUS_SIZE];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    next = (rank + 1) % size;
    prev = (rank + size - 1) % size;

    /* predefined handles and null handles */
    CHECK(MPI_Comm_f2c(MPI_Comm_c2f(MPI_COMM_WORLD)) == MPI_COMM_WORLD, "MPI_COMM_WORLD");
    CHECK(MPI_Comm_f2c(MPI_Comm_c2f(MPI_COMM_NULL)) == MPI_COMM_NULL, "MPI_COMM_NULL");
    CHECK(MPI_Type_f2c(MPI_Type_c2f(MPI_DOUBLE)) == MPI_DOUBLE, "MPI_DOUBLE");
    CHECK(MPI_Op_f2c(MPI_Op_c2f(MPI_MAX)) == MPI_MAX, "MPI_MAX");
    CHECK(MPI_Request_f2c(MPI_Request_c2f(MPI_REQUEST_NULL)) == MPI_REQUEST_NULL, "REQUEST_NULL");
    CHECK(MPI_Message_f2c(MPI_Message_c2f(MPI_MESSAGE_NULL)) == MPI_MESSAGE_NULL, "MESSAGE_NULL");
    CHECK(MPI_Group_f2c(MPI_Group_c2f(MPI_GROUP_EMPTY)) == MPI_GROUP_EMPTY, "GROUP_EMPTY");
    CHECK(MPI_Errhandler_f2c(MPI_Errhandler_c2f(MPI_ERRORS_RETURN)) == MPI_ERRORS_RETURN,
          "ERRORS_RETURN");
    CHECK(MPI_Info_f2c(MPI_Info_c2f(MPI_INFO_NULL)) == MPI_INFO_NULL, "INFO_NULL");

    /* a communicator made here, used through its converted handle */
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    back_comm = MPI_Comm_f2c(MPI_Comm_c2f(dup));
    CHECK(back_comm == dup, "duplicated communicator");
    v = -1;
    MPI_Sendrecv(&rank, 1, MPI_INT, next, 1, &v, 1, MPI_INT, prev, 1, back_comm, MPI_STATUS_IGNORE);
    CHECK(v == prev, "sendrecv on the converted communicator got %d", v);

    MPI_Comm_group(dup, &grp);
    back_grp = MPI_Group_f2c(MPI_Group_c2f(grp));
    MPI_Group_compare(back_grp, grp, &cmp);
    CHECK(back_grp == grp && cmp == MPI_IDENT, "group");

    MPI_Type_vector(2, 1, 3, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    back_type = MPI_Type_f2c(MPI_Type_c2f(vec));
    CHECK(back_type == vec, "derived datatype");
    {
        int src[6] = {rank, -1, -1, 10 * rank, -1, -1}, dst[6] = {0, 0, 0, 0, 0, 0};
        MPI_Sendrecv(src, 1, back_type, next, 2, dst, 1, vec, prev, 2, dup, MPI_STATUS_IGNORE);
        CHECK(dst[0] == prev && dst[3] == 10 * prev, "vector through converted type: %d %d", dst[0],
              dst[3]);
    }

    MPI_Op_create(sum_fn, 1, &op);
    back_op = MPI_Op_f2c(MPI_Op_c2f(op));
    CHECK(back_op == op, "user op");
    v = 0;
    MPI_Allreduce(&rank, &v, 1, MPI_INT, back_op, dup);
    CHECK(v == size * (size - 1) / 2, "allreduce with converted op: %d", v);

    MPI_Comm_get_errhandler(dup, &eh);
    CHECK(MPI_Errhandler_f2c(MPI_Errhandler_c2f(eh)) == eh, "errhandler of a communicator");
    MPI_Errhandler_free(&eh);

    MPI_Info_create(&info);
    MPI_Info_set(info, "color", "blue");
    back_info = MPI_Info_f2c(MPI_Info_c2f(info));
    {
        char val[16] = "";
        MPI_Info_get(back_info, "color", sizeof val - 1, val, &flag);
        CHECK(back_info == info && flag && strcmp(val, "blue") == 0, "info value \"%s\"", val);
    }
    MPI_Info_free(&info);

    /* a pending request: converted twice, the same integer; completed through the copy */
    v = -1;
    MPI_Irecv(&v, 1, MPI_INT, prev, 3, dup, &rq);
    f = MPI_Request_c2f(rq);
    f2 = MPI_Request_c2f(rq);
    CHECK(f == f2, "request converted twice: %d %d", (int) f, (int) f2);
    back_rq = MPI_Request_f2c(f);
    CHECK(back_rq == rq, "request round trip");
    MPI_Send(&rank, 1, MPI_INT, next, 3, dup);
    MPI_Wait(&back_rq, &st);
    CHECK(v == prev && back_rq == MPI_REQUEST_NULL, "request completed through its copy: %d", v);

    /* statuses */
    MPI_Status_c2f(&st, fst);
    CHECK(fst[MPI_F_SOURCE] == prev && fst[MPI_F_TAG] == 3, "fortran status %d %d",
          (int) fst[MPI_F_SOURCE], (int) fst[MPI_F_TAG]);
    MPI_Status_f2c(fst, &st2);
    MPI_Get_count(&st2, MPI_INT, &v);
    CHECK(st2.MPI_SOURCE == prev && st2.MPI_TAG == 3 && v == 1, "status back: count %d", v);

    /* a matched message */
    MPI_Send(&rank, 1, MPI_INT, next, 4, dup);
    MPI_Mprobe(prev, 4, dup, &msg, &st);
    {
        MPI_Message back_msg = MPI_Message_f2c(MPI_Message_c2f(msg));
        CHECK(back_msg == msg, "message round trip");
        v = -1;
        MPI_Mrecv(&v, 1, MPI_INT, &back_msg, &st);
        CHECK(v == prev && back_msg == MPI_MESSAGE_NULL, "mrecv through the copy: %d", v);
    }

    MPI_Op_free(&op);
    MPI_Type_free(&vec);
    MPI_Group_free(&grp);
    MPI_Comm_free(&dup);
    return ct_finish(rank, errs);
}
