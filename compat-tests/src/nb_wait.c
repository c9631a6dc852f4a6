/* Nonblocking point-to-point with MPI_Wait, MPI_Waitall, MPI_Waitany and
 * MPI_Waitsome, including MPI_REQUEST_NULL entries, between all ranks. */
#include "ct.h"

#define SMALL 5
#define BIG 40000

/* message from s to d in round k has n ints: value s*1000000 + d*1000 + k + i */
static int msg_len(int s, int d) { return (s + d) % 3 == 0 ? BIG : SMALL + s; }

static void fill(int *b, int n, int s, int d, int k)
{
    int i;
    for (i = 0; i < n; i++)
        b[i] = s * 1000000 + d * 1000 + k + i;
}

static void check_msg(int rank, int *errp, const int *b, MPI_Status *st, int s, int k,
                      const char *how)
{
    int n = msg_len(s, rank), c = -1, i;
    MPI_Get_count(st, MPI_INT, &c);
    CHECKP(st->MPI_SOURCE == s && st->MPI_TAG == k, "%s: source %d tag %d, expected %d %d",
           how, st->MPI_SOURCE, st->MPI_TAG, s, k);
    CHECKP(c == n, "%s: count %d expected %d", how, c, n);
    for (i = 0; i < n; i++)
        if (b[i] != s * 1000000 + rank * 1000 + k + i) {
            CHECKP(0, "%s: from %d element %d = %d", how, s, i, b[i]);
            break;
        }
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, k, j, idx, done, outc;
    int **sb, **rb;
    MPI_Request *rq;
    MPI_Status *st;
    int *seen, *idxs;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    sb = ct_malloc(sizeof(int *) * size);
    rb = ct_malloc(sizeof(int *) * size);
    for (j = 0; j < size; j++) {
        sb[j] = ct_malloc(sizeof(int) * msg_len(rank, j));
        rb[j] = ct_malloc(sizeof(int) * msg_len(j, rank));
    }
    rq = ct_malloc(sizeof(MPI_Request) * 2 * size);
    st = ct_malloc(sizeof(MPI_Status) * 2 * size);
    seen = ct_malloc(sizeof(int) * 2 * size);
    idxs = ct_malloc(sizeof(int) * 2 * size);

    for (k = 0; k < 3; k++) {
        /* receives in slots [0,size), sends in [size, 2size) */
        for (j = 0; j < size; j++)
            MPI_Irecv(rb[j], msg_len(j, rank), MPI_INT, j, k, MPI_COMM_WORLD, &rq[j]);
        for (j = 0; j < size; j++) {
            int d = (rank + j) % size;
            fill(sb[d], msg_len(rank, d), rank, d, k);
            MPI_Isend(sb[d], msg_len(rank, d), MPI_INT, d, k, MPI_COMM_WORLD, &rq[size + d]);
        }
        for (j = 0; j < 2 * size; j++)
            seen[j] = 0;

        if (k == 0) {
            MPI_Waitall(2 * size, rq, st);
            for (j = 0; j < size; j++)
                check_msg(rank, &errs, rb[j], &st[j], j, k, "Waitall");
            for (j = 0; j < 2 * size; j++)
                CHECK(rq[j] == MPI_REQUEST_NULL, "Waitall left request %d active", j);
        } else if (k == 1) {
            for (done = 0; done < 2 * size; done++) {
                MPI_Status s1;
                idx = -7;
                MPI_Waitany(2 * size, rq, &idx, &s1);
                CHECK(idx >= 0 && idx < 2 * size, "Waitany index %d", idx);
                if (idx < 0 || idx >= 2 * size)
                    break;
                CHECK(!seen[idx], "Waitany returned index %d twice", idx);
                seen[idx] = 1;
                CHECK(rq[idx] == MPI_REQUEST_NULL, "Waitany left request active");
                if (idx < size)
                    check_msg(rank, &errs, rb[idx], &s1, idx, k, "Waitany");
            }
            idx = -7;
            MPI_Waitany(2 * size, rq, &idx, MPI_STATUS_IGNORE);
            CHECK(idx == MPI_UNDEFINED, "Waitany on all-null gave index %d", idx);
        } else {
            done = 0;
            while (done < 2 * size) {
                outc = -7;
                MPI_Waitsome(2 * size, rq, &outc, idxs, st);
                CHECK(outc >= 1 && outc <= 2 * size - done, "Waitsome outcount %d", outc);
                if (outc < 1)
                    break;
                for (j = 0; j < outc; j++) {
                    idx = idxs[j];
                    CHECK(idx >= 0 && idx < 2 * size && !seen[idx], "Waitsome index %d", idx);
                    if (idx < 0 || idx >= 2 * size)
                        continue;
                    seen[idx] = 1;
                    if (idx < size)
                        check_msg(rank, &errs, rb[idx], &st[j], idx, k, "Waitsome");
                }
                done += outc;
            }
            outc = -7;
            MPI_Waitsome(2 * size, rq, &outc, idxs, st);
            CHECK(outc == MPI_UNDEFINED, "Waitsome on all-null gave outcount %d", outc);
        }
    }

    /* Wait on MPI_REQUEST_NULL gives an empty status */
    {
        MPI_Request nr = MPI_REQUEST_NULL;
        MPI_Status s1;
        int c = -1;
        s1.MPI_SOURCE = 77;
        s1.MPI_TAG = 77;
        MPI_Wait(&nr, &s1);
        MPI_Get_count(&s1, MPI_INT, &c);
        CHECK(s1.MPI_SOURCE == MPI_ANY_SOURCE && s1.MPI_TAG == MPI_ANY_TAG && c == 0,
              "Wait(REQUEST_NULL) status source %d tag %d count %d", s1.MPI_SOURCE, s1.MPI_TAG, c);
        MPI_Waitall(0, NULL, MPI_STATUSES_IGNORE);
    }

    for (j = 0; j < size; j++) {
        free(sb[j]);
        free(rb[j]);
    }
    free(sb);
    free(rb);
    free(rq);
    free(st);
    free(seen);
    free(idxs);
    return ct_finish(rank, errs);
}
