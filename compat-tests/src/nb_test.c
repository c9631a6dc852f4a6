/* Nonblocking point-to-point completed by polling: MPI_Test, MPI_Testall,
 * MPI_Testany, MPI_Testsome (the progress rule: repeated tests must
 * eventually complete), with MPI_REQUEST_NULL entries. */
#include "ct.h"

#define N 3000

int main(int argc, char **argv)
{
    int rank, size, errs = 0, k, j, i, flag, idx, outc, done;
    int *sb, *rb, *seen, *idxs;
    MPI_Request *rq;
    MPI_Status *st;
    long polls;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    sb = ct_malloc(sizeof(int) * N * size);
    rb = ct_malloc(sizeof(int) * N * size);
    rq = ct_malloc(sizeof(MPI_Request) * 2 * size);
    st = ct_malloc(sizeof(MPI_Status) * 2 * size);
    seen = ct_malloc(sizeof(int) * 2 * size);
    idxs = ct_malloc(sizeof(int) * 2 * size);

    for (k = 0; k < 4; k++) {
        for (j = 0; j < size; j++) {
            int n = (j + k) % 2 ? N : 1;
            MPI_Irecv(rb + j * N, N, MPI_INT, j, 100 + k, MPI_COMM_WORLD, &rq[j]);
            (void) n;
        }
        for (j = 0; j < size; j++) {
            int d = (rank + size - j) % size, n = (rank + k) % 2 ? N : 1;
            for (i = 0; i < n; i++)
                sb[d * N + i] = rank * 100000 + d * 100 + k + i;
            MPI_Isend(sb + d * N, n, MPI_INT, d, 100 + k, MPI_COMM_WORLD, &rq[size + d]);
        }
        for (j = 0; j < 2 * size; j++)
            seen[j] = 0;
        /* a null entry in the middle of every array */
        polls = 0;

        if (k == 0) {
            for (j = 0; j < 2 * size; j++) {
                flag = 0;
                while (!flag) {
                    MPI_Test(&rq[j], &flag, &st[j]);
                    polls++;
                }
                CHECK(rq[j] == MPI_REQUEST_NULL, "Test left request active");
            }
        } else if (k == 1) {
            flag = 0;
            while (!flag) {
                MPI_Testall(2 * size, rq, &flag, st);
                polls++;
            }
            for (j = 0; j < 2 * size; j++)
                CHECK(rq[j] == MPI_REQUEST_NULL, "Testall left request %d active", j);
        } else if (k == 2) {
            done = 0;
            while (done < 2 * size) {
                MPI_Status s1;
                flag = 0;
                idx = -7;
                MPI_Testany(2 * size, rq, &idx, &flag, &s1);
                polls++;
                if (!flag) {
                    CHECK(idx == MPI_UNDEFINED, "Testany flag 0 but index %d", idx);
                    continue;
                }
                CHECK(idx >= 0 && idx < 2 * size && !seen[idx], "Testany index %d", idx);
                if (idx < 0 || idx >= 2 * size)
                    break;
                seen[idx] = 1;
                st[idx] = s1;
                done++;
            }
            flag = 0;
            idx = -7;
            MPI_Testany(2 * size, rq, &idx, &flag, MPI_STATUS_IGNORE);
            CHECK(flag == 1 && idx == MPI_UNDEFINED, "Testany all-null: flag %d index %d", flag, idx);
        } else {
            MPI_Status *s2 = ct_malloc(sizeof(MPI_Status) * 2 * size);
            done = 0;
            while (done < 2 * size) {
                outc = -7;
                MPI_Testsome(2 * size, rq, &outc, idxs, s2);
                polls++;
                CHECK(outc >= 0 && outc <= 2 * size - done, "Testsome outcount %d", outc);
                if (outc < 0)
                    break;
                for (j = 0; j < outc; j++) {
                    idx = idxs[j];
                    CHECK(idx >= 0 && idx < 2 * size && !seen[idx], "Testsome index %d", idx);
                    if (idx < 0 || idx >= 2 * size)
                        continue;
                    seen[idx] = 1;
                    st[idx] = s2[j];
                }
                done += outc;
            }
            outc = -7;
            MPI_Testsome(2 * size, rq, &outc, idxs, s2);
            CHECK(outc == MPI_UNDEFINED, "Testsome all-null: outcount %d", outc);
            free(s2);
        }
        CHECK(polls > 0, "no polls");

        for (j = 0; j < size; j++) {
            int n = (j + k) % 2 ? N : 1, c = -1;
            MPI_Get_count(&st[j], MPI_INT, &c);
            CHECK(st[j].MPI_SOURCE == j && st[j].MPI_TAG == 100 + k && c == n,
                  "round %d from %d: source %d tag %d count %d", k, j, st[j].MPI_SOURCE,
                  st[j].MPI_TAG, c);
            for (i = 0; i < n; i++)
                if (rb[j * N + i] != j * 100000 + rank * 100 + k + i) {
                    CHECK(0, "round %d from %d element %d = %d", k, j, i, rb[j * N + i]);
                    break;
                }
        }
    }

    /* Test on MPI_REQUEST_NULL: flag true, empty status; Testall of nothing */
    {
        MPI_Request nr = MPI_REQUEST_NULL;
        MPI_Status s1;
        int c = -1;
        flag = 0;
        MPI_Test(&nr, &flag, &s1);
        MPI_Get_count(&s1, MPI_INT, &c);
        CHECK(flag && s1.MPI_SOURCE == MPI_ANY_SOURCE && s1.MPI_TAG == MPI_ANY_TAG && c == 0,
              "Test(REQUEST_NULL): flag %d source %d tag %d count %d", flag, s1.MPI_SOURCE,
              s1.MPI_TAG, c);
        flag = 0;
        MPI_Testall(0, NULL, &flag, MPI_STATUSES_IGNORE);
        CHECK(flag, "Testall of zero requests gave flag 0");
    }

    /* Test on a receive nobody has sent yet is false (deterministic: the
       send happens only after our "go") */
    if (size >= 2) {
        int peer = rank ^ 1, v = -1, go = 1;
        if (peer < size) {
            MPI_Request r1;
            if (rank % 2 == 0) {
                MPI_Irecv(&v, 1, MPI_INT, peer, 9, MPI_COMM_WORLD, &r1);
                for (j = 0; j < 20; j++) {
                    flag = -1;
                    MPI_Test(&r1, &flag, MPI_STATUS_IGNORE);
                    CHECK(flag == 0, "Test completed a receive before the send");
                }
                MPI_Send(&go, 1, MPI_INT, peer, 10, MPI_COMM_WORLD);
                flag = 0;
                while (!flag)
                    MPI_Test(&r1, &flag, MPI_STATUS_IGNORE);
                CHECK(v == peer, "got %d", v);
            } else {
                MPI_Recv(&go, 1, MPI_INT, peer, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(&rank, 1, MPI_INT, peer, 9, MPI_COMM_WORLD);
            }
        }
    }

    free(sb);
    free(rb);
    free(rq);
    free(st);
    free(seen);
    free(idxs);
    return ct_finish(rank, errs);
}
