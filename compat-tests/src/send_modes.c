/* Send modes: MPI_Ssend/Issend (no completion before the receive is
 * posted), MPI_Rsend/Irsend (receive posted first), MPI_Bsend/Ibsend with
 * MPI_Buffer_attach / MPI_Buffer_detach (local completion). */
#include "ct.h"

#define NB 8     /* buffered messages in flight */
#define MB 1000  /* ints per buffered message */

static void self_tests(int rank, int *errp)
{
    int i, got[4] = {0, 0, 0, 0}, mine[4] = {1, 2, 3, 4};
    int bufsize = 4 * sizeof(int) + MPI_BSEND_OVERHEAD;
    char *buf = ct_malloc(bufsize), *back;
    int backsize;
    MPI_Request rq;

    /* Bsend to self completes locally before the receive exists */
    MPI_Buffer_attach(buf, bufsize);
    MPI_Bsend(mine, 4, MPI_INT, 0, 1, MPI_COMM_SELF);
    MPI_Recv(got, 4, MPI_INT, 0, 1, MPI_COMM_SELF, MPI_STATUS_IGNORE);
    for (i = 0; i < 4; i++)
        CHECKP(got[i] == mine[i], "self Bsend element %d = %d", i, got[i]);
    MPI_Buffer_detach(&back, &backsize);
    CHECKP(back == buf && backsize == bufsize, "detach gave a different buffer or size");
    free(buf);

    /* Issend to self, then the receive */
    memset(got, 0, sizeof got);
    MPI_Issend(mine, 4, MPI_INT, 0, 2, MPI_COMM_SELF, &rq);
    MPI_Recv(got, 4, MPI_INT, 0, 2, MPI_COMM_SELF, MPI_STATUS_IGNORE);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    CHECKP(got[3] == 4, "self Issend got %d", got[3]);
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, i, k, flag;
    int peer, leader;
    int data[MB], go = 1;
    MPI_Request rq;
    MPI_Status st;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    self_tests(rank, &errs);

    /* pairs (0,1), (2,3), ...; an odd last rank only does the self tests */
    leader = rank % 2 == 0;
    peer = leader ? rank + 1 : rank - 1;
    if (peer >= size) {
        ct_say(rank, "no partner for pair tests");
        return ct_finish(rank, errs);
    }

    /* --- Ssend: cannot complete until the receiver posts the receive,
       and the receiver posts only after our "go" message. */
    if (leader) {
        for (i = 0; i < MB; i++)
            data[i] = i + 1;
        MPI_Issend(data, MB, MPI_INT, peer, 1, MPI_COMM_WORLD, &rq);
        for (k = 0; k < 50; k++) {
            flag = -1;
            MPI_Test(&rq, &flag, MPI_STATUS_IGNORE);
            CHECK(flag == 0, "Issend completed before the receive was posted");
            if (flag)
                break;
        }
        MPI_Send(&go, 1, MPI_INT, peer, 2, MPI_COMM_WORLD);
        if (!flag)
            MPI_Wait(&rq, MPI_STATUS_IGNORE);
        /* blocking Ssend too */
        MPI_Ssend(data, 10, MPI_INT, peer, 3, MPI_COMM_WORLD);
    } else {
        MPI_Recv(&go, 1, MPI_INT, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(data, MB, MPI_INT, peer, 1, MPI_COMM_WORLD, &st);
        for (i = 0; i < MB; i++)
            if (data[i] != i + 1) {
                CHECK(0, "Ssend data[%d] = %d", i, data[i]);
                break;
            }
        MPI_Recv(data, 10, MPI_INT, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(data[9] == 10, "Ssend(10) data[9] = %d", data[9]);
    }

    /* --- Rsend: the receiver posts, then says "ready" */
    if (leader) {
        MPI_Recv(&go, 1, MPI_INT, peer, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (i = 0; i < MB; i++)
            data[i] = 3 * i;
        MPI_Rsend(data, MB, MPI_INT, peer, 5, MPI_COMM_WORLD);
        MPI_Irsend(data, 7, MPI_INT, peer, 6, MPI_COMM_WORLD, &rq);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
    } else {
        MPI_Request r2[2];
        int small[7];
        MPI_Irecv(data, MB, MPI_INT, peer, 5, MPI_COMM_WORLD, &r2[0]);
        MPI_Irecv(small, 7, MPI_INT, peer, 6, MPI_COMM_WORLD, &r2[1]);
        MPI_Send(&go, 1, MPI_INT, peer, 4, MPI_COMM_WORLD);
        MPI_Waitall(2, r2, MPI_STATUSES_IGNORE);
        for (i = 0; i < MB; i++)
            if (data[i] != 3 * i) {
                CHECK(0, "Rsend data[%d] = %d", i, data[i]);
                break;
            }
        CHECK(small[6] == 18, "Irsend small[6] = %d", small[6]);
    }

    /* --- Bsend: NB messages complete locally before any receive is posted */
    if (leader) {
        int bufsize = NB * (MB * (int) sizeof(int) + MPI_BSEND_OVERHEAD);
        char *buf = ct_malloc(bufsize), *back = NULL;
        int backsize = 0;
        MPI_Request brq;
        MPI_Buffer_attach(buf, bufsize);
        for (k = 0; k < NB - 1; k++) {
            for (i = 0; i < MB; i++)
                data[i] = k * 10000 + i;
            MPI_Bsend(data, MB, MPI_INT, peer, 7, MPI_COMM_WORLD);
        }
        for (i = 0; i < MB; i++)
            data[i] = k * 10000 + i;
        MPI_Ibsend(data, MB, MPI_INT, peer, 7, MPI_COMM_WORLD, &brq);
        MPI_Wait(&brq, MPI_STATUS_IGNORE);
        /* the data was copied: scribbling over it must not matter */
        memset(data, 0xff, sizeof data);
        MPI_Send(&go, 1, MPI_INT, peer, 8, MPI_COMM_WORLD);
        MPI_Buffer_detach(&back, &backsize);  /* waits until all are delivered */
        CHECK(back == buf && backsize == bufsize, "detach gave a different buffer or size");
        free(buf);
    } else {
        MPI_Recv(&go, 1, MPI_INT, peer, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (k = 0; k < NB; k++) {
            MPI_Recv(data, MB, MPI_INT, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (i = 0; i < MB; i++)
                if (data[i] != k * 10000 + i) {
                    CHECK(0, "Bsend message %d data[%d] = %d", k, i, data[i]);
                    break;
                }
        }
    }

    return ct_finish(rank, errs);
}
