/* Non-overtaking: messages between one pair on one communicator with the
 * same tag are received in send order, with small (8 B) and large (1 MiB)
 * messages interleaved, for blocking, pre-posted and wildcard receives. */
#include "ct.h"

#define NMSG 40
#define BIGB (1 << 20)

static int is_big(int i) { return i % 5 == 3; }

static void fill(unsigned char *b, int len, int seq)
{
    int i;
    for (i = 0; i < len; i++)
        b[i] = (unsigned char) (seq * 31 + i);
}

static int verify(const unsigned char *b, int len, int seq)
{
    int i;
    for (i = 0; i < len; i++)
        if (b[i] != (unsigned char) (seq * 31 + i))
            return 0;
    return 1;
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, i, phase;
    int to, from;
    unsigned char **sb, *rb, **prb;
    MPI_Request *srq, *rrq;
    int go = 1, go2 = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    to = (rank + 1) % size;
    from = (rank + size - 1) % size;

    sb = ct_malloc(sizeof(unsigned char *) * NMSG);
    prb = ct_malloc(sizeof(unsigned char *) * NMSG);
    for (i = 0; i < NMSG; i++) {
        int len = is_big(i) ? BIGB : 8;
        sb[i] = ct_malloc(len);
        prb[i] = ct_malloc(BIGB);
        fill(sb[i], len, i);
    }
    rb = ct_malloc(BIGB);
    srq = ct_malloc(sizeof(MPI_Request) * NMSG);
    rrq = ct_malloc(sizeof(MPI_Request) * NMSG);

    for (phase = 0; phase < 3; phase++) {
        int tag = 3;
        /* phase 0: sends first, blocking receives with a 1 MiB buffer
           phase 1: all receives pre-posted before the sender starts
           phase 2: like phase 0 but receiving with MPI_ANY_SOURCE */
        if (phase == 1) {
            for (i = 0; i < NMSG; i++)
                MPI_Irecv(prb[i], BIGB, MPI_BYTE, from, tag, MPI_COMM_WORLD, &rrq[i]);
            MPI_Sendrecv(&go, 1, MPI_INT, from, 99, &go2, 1, MPI_INT, to, 99, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
        }
        for (i = 0; i < NMSG; i++)
            MPI_Isend(sb[i], is_big(i) ? BIGB : 8, MPI_BYTE, to, tag, MPI_COMM_WORLD, &srq[i]);
        if (phase == 1) {
            MPI_Status *st = ct_malloc(sizeof(MPI_Status) * NMSG);
            MPI_Waitall(NMSG, rrq, st);
            for (i = 0; i < NMSG; i++) {
                int c = -1, len = is_big(i) ? BIGB : 8;
                MPI_Get_count(&st[i], MPI_BYTE, &c);
                CHECK(c == len && verify(prb[i], len, i),
                      "phase 1 message %d: count %d (expected %d) or data wrong", i, c, len);
            }
            free(st);
        } else {
            for (i = 0; i < NMSG; i++) {
                MPI_Status st;
                int c = -1, len = is_big(i) ? BIGB : 8;
                MPI_Recv(rb, BIGB, MPI_BYTE, phase == 2 && size == 2 ? MPI_ANY_SOURCE : from, tag,
                         MPI_COMM_WORLD, &st);
                MPI_Get_count(&st, MPI_BYTE, &c);
                CHECK(c == len && verify(rb, len, i) && st.MPI_SOURCE == from,
                      "phase %d message %d: count %d (expected %d), source %d, data %s", phase, i,
                      c, len, st.MPI_SOURCE, verify(rb, c < len ? c : len, i) ? "ok" : "wrong");
            }
        }
        MPI_Waitall(NMSG, srq, MPI_STATUSES_IGNORE);
        MPI_Barrier(MPI_COMM_WORLD);
    }

    /* many tiny messages, checked in order, on a duplicate communicator */
    {
        MPI_Comm c;
        int *vals = ct_malloc(sizeof(int) * 1000);
        MPI_Request *r = ct_malloc(sizeof(MPI_Request) * 1000);
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        for (i = 0; i < 1000; i++) {
            vals[i] = i;
            MPI_Isend(&vals[i], 1, MPI_INT, to, 0, c, &r[i]);
        }
        for (i = 0; i < 1000; i++) {
            int v = -1;
            MPI_Recv(&v, 1, MPI_INT, from, 0, c, MPI_STATUS_IGNORE);
            if (v != i) {
                CHECK(0, "tiny message %d arrived as %d", i, v);
                break;
            }
        }
        MPI_Waitall(1000, r, MPI_STATUSES_IGNORE);
        MPI_Comm_free(&c);
        free(vals);
        free(r);
    }

    for (i = 0; i < NMSG; i++) {
        free(sb[i]);
        free(prb[i]);
    }
    free(sb);
    free(prb);
    free(rb);
    free(srq);
    free(rrq);
    return ct_finish(rank, errs);
}
