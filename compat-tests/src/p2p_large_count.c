/* The large-count (MPI_Count) forms of point-to-point communication: Send_c,
 * Ssend_c, Rsend_c, Bsend_c (with Buffer_attach_c/detach_c), Recv_c, Isend_c,
 * Irecv_c, Sendrecv_c, Sendrecv_replace_c, Mrecv_c, Imrecv_c and the persistent
 * Send_init_c/Recv_init_c, around a ring, with a derived datatype too. */
#include "ct.h"

#define N 1000

static void fill(int *b, int n, int base)
{
    int i;
    for (i = 0; i < n; i++)
        b[i] = base + i;
}

static int check_from(int rank, int *errp, const char *what, const int *b, int n, int base)
{
    int i;
    for (i = 0; i < n; i++)
        if (b[i] != base + i) {
            CHECKP(0, "%s: element %d is %d, want %d", what, i, b[i], base + i);
            return 1;
        }
    return 0;
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, next, prev;
    int *out = ct_malloc(2 * N * sizeof(int)), *in = ct_malloc(2 * N * sizeof(int));
    MPI_Count cnt;
    MPI_Status st;
    MPI_Request rq[2];
    MPI_Message msg;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    next = (rank + 1) % size;
    prev = (rank + size - 1) % size;

    /* Send_c / Recv_c: even ranks send first */
    fill(out, N, rank * 10000);
    if (rank % 2 == 0) {
        MPI_Send_c(out, (MPI_Count) N, MPI_INT, next, 1, MPI_COMM_WORLD);
        MPI_Recv_c(in, (MPI_Count) N, MPI_INT, prev, 1, MPI_COMM_WORLD, &st);
    } else {
        MPI_Recv_c(in, (MPI_Count) N, MPI_INT, prev, 1, MPI_COMM_WORLD, &st);
        MPI_Send_c(out, (MPI_Count) N, MPI_INT, next, 1, MPI_COMM_WORLD);
    }
    check_from(rank, &errs, "Send_c/Recv_c", in, N, prev * 10000);
    MPI_Get_count_c(&st, MPI_INT, &cnt);
    CHECK(cnt == N, "count %lld", (long long) cnt);

    /* Isend_c / Irecv_c, Ssend_c via Issend_c semantics on the blocking form */
    MPI_Irecv_c(in, (MPI_Count) N, MPI_INT, prev, 2, MPI_COMM_WORLD, &rq[0]);
    MPI_Isend_c(out, (MPI_Count) N, MPI_INT, next, 2, MPI_COMM_WORLD, &rq[1]);
    MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    check_from(rank, &errs, "Isend_c/Irecv_c", in, N, prev * 10000);
    MPI_Irecv_c(in, (MPI_Count) 5, MPI_INT, prev, 3, MPI_COMM_WORLD, &rq[0]);
    MPI_Barrier(MPI_COMM_WORLD); /* every receive is posted before the ready send */
    MPI_Rsend_c(out, (MPI_Count) 5, MPI_INT, next, 3, MPI_COMM_WORLD);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    check_from(rank, &errs, "Rsend_c", in, 5, prev * 10000);
    MPI_Irecv_c(in, (MPI_Count) 7, MPI_INT, prev, 4, MPI_COMM_WORLD, &rq[0]);
    MPI_Ssend_c(out, (MPI_Count) 7, MPI_INT, next, 4, MPI_COMM_WORLD);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    check_from(rank, &errs, "Ssend_c", in, 7, prev * 10000);

    /* Bsend_c through a buffer attached with Buffer_attach_c */
    {
        MPI_Count bsize = N * sizeof(int) + MPI_BSEND_OVERHEAD, got_size = -1;
        void *bbuf = ct_malloc((size_t) bsize), *got = NULL;
        MPI_Buffer_attach_c(bbuf, bsize);
        MPI_Bsend_c(out, (MPI_Count) N, MPI_INT, next, 5, MPI_COMM_WORLD);
        MPI_Recv_c(in, (MPI_Count) N, MPI_INT, prev, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        check_from(rank, &errs, "Bsend_c", in, N, prev * 10000);
        MPI_Buffer_detach_c(&got, &got_size);
        CHECK(got == bbuf && got_size == bsize, "Buffer_detach_c gave %lld bytes",
              (long long) got_size);
        free(bbuf);
    }

    /* Sendrecv_c with a vector type, Sendrecv_replace_c */
    {
        MPI_Datatype every_other;
        int i;
        MPI_Type_vector(N, 1, 2, MPI_INT, &every_other);
        MPI_Type_commit(&every_other);
        fill(out, 2 * N, rank * 10000);
        MPI_Sendrecv_c(out, (MPI_Count) 1, every_other, next, 6, in, (MPI_Count) N, MPI_INT, prev,
                       6, MPI_COMM_WORLD, &st);
        for (i = 0; i < N; i++)
            if (in[i] != prev * 10000 + 2 * i) {
                CHECK(0, "Sendrecv_c element %d is %d", i, in[i]);
                break;
            }
        MPI_Type_free(&every_other);
        fill(in, N, rank * 10000);
        MPI_Sendrecv_replace_c(in, (MPI_Count) N, MPI_INT, next, 7, prev, 7, MPI_COMM_WORLD, &st);
        check_from(rank, &errs, "Sendrecv_replace_c", in, N, prev * 10000);
        MPI_Get_count_c(&st, MPI_INT, &cnt);
        CHECK(cnt == N && st.MPI_SOURCE == prev, "replace status count %lld", (long long) cnt);
    }

    /* Mprobe + Mrecv_c and Imrecv_c */
    fill(out, N, rank * 10000);
    MPI_Send(out, 10, MPI_INT, next, 8, MPI_COMM_WORLD);
    MPI_Send(out, 20, MPI_INT, next, 9, MPI_COMM_WORLD);
    MPI_Mprobe(prev, 8, MPI_COMM_WORLD, &msg, &st);
    MPI_Mrecv_c(in, (MPI_Count) 10, MPI_INT, &msg, &st);
    check_from(rank, &errs, "Mrecv_c", in, 10, prev * 10000);
    MPI_Mprobe(prev, 9, MPI_COMM_WORLD, &msg, &st);
    MPI_Imrecv_c(in, (MPI_Count) 20, MPI_INT, &msg, &rq[0]);
    MPI_Wait(&rq[0], &st);
    check_from(rank, &errs, "Imrecv_c", in, 20, prev * 10000);

    /* persistent Send_init_c / Recv_init_c, started three times */
    {
        int k;
        MPI_Recv_init_c(in, (MPI_Count) N, MPI_INT, prev, 10, MPI_COMM_WORLD, &rq[0]);
        MPI_Send_init_c(out, (MPI_Count) N, MPI_INT, next, 10, MPI_COMM_WORLD, &rq[1]);
        for (k = 0; k < 3; k++) {
            fill(out, N, rank * 10000 + k);
            MPI_Startall(2, rq);
            MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
            check_from(rank, &errs, "persistent _c", in, N, prev * 10000 + k);
        }
        MPI_Request_free(&rq[0]);
        MPI_Request_free(&rq[1]);
    }

    /* a negative MPI_Count is an error */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    CHECK(ct_class(MPI_Send_c(out, (MPI_Count) -1, MPI_INT, next, 11, MPI_COMM_WORLD)) ==
              MPI_ERR_COUNT,
          "negative count not MPI_ERR_COUNT");

    free(out);
    free(in);
    return ct_finish(rank, errs);
}
