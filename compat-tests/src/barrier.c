/* MPI_Barrier ordering, checked without timing: in each phase every rank
 * posts wildcard receives BEFORE the barrier and every rank sends with
 * MPI_Irsend (ready mode) AFTER it. Ready mode is only legal because the
 * barrier guarantees the receives exist; and a receive of phase k can only
 * ever see tag k, because a phase k+1 message is sent after barrier k+1,
 * which the receiver enters only once its phase k receives are complete. */
#include "ct.h"

#define PHASES 20

int main(int argc, char **argv)
{
    int rank, size, errs = 0, k, j;
    int *rv, *sv, *seen;
    MPI_Request *rq;
    MPI_Status *st;
    MPI_Comm comms[2];
    int ci;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    rv = ct_malloc(sizeof(int) * size);
    sv = ct_malloc(sizeof(int) * size);
    seen = ct_malloc(sizeof(int) * size);
    rq = ct_malloc(sizeof(MPI_Request) * 2 * size);
    st = ct_malloc(sizeof(MPI_Status) * 2 * size);

    /* on COMM_WORLD, and on a reversed-order split of it */
    comms[0] = MPI_COMM_WORLD;
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &comms[1]);

    for (ci = 0; ci < 2; ci++) {
        MPI_Comm c = comms[ci];
        int me;
        MPI_Comm_rank(c, &me);
        for (k = 0; k < PHASES; k++) {
            for (j = 0; j < size; j++) {
                rv[j] = -1;
                MPI_Irecv(&rv[j], 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, c, &rq[j]);
            }
            MPI_Barrier(c);
            for (j = 0; j < size; j++) {
                int d = (me + j) % size;
                sv[j] = me * 1000 + k;
                MPI_Irsend(&sv[j], 1, MPI_INT, d, k, c, &rq[size + j]);
            }
            MPI_Waitall(2 * size, rq, st);
            for (j = 0; j < size; j++)
                seen[j] = 0;
            for (j = 0; j < size; j++) {
                int s = st[j].MPI_SOURCE;
                CHECK(st[j].MPI_TAG == k, "comm %d phase %d: received tag %d (from %d)", ci, k,
                      st[j].MPI_TAG, s);
                CHECK(s >= 0 && s < size && rv[j] == s * 1000 + k,
                      "comm %d phase %d: value %d from %d", ci, k, rv[j], s);
                if (s >= 0 && s < size)
                    seen[s]++;
            }
            for (j = 0; j < size; j++)
                CHECK(seen[j] == 1, "comm %d phase %d: %d messages from %d", ci, k, seen[j], j);
        }
    }

    /* many barriers in a row, and a barrier on COMM_SELF */
    for (k = 0; k < 50; k++)
        MPI_Barrier(k % 2 ? comms[1] : MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_SELF);

    MPI_Comm_free(&comms[1]);
    free(rv);
    free(sv);
    free(seen);
    free(rq);
    free(st);
    return ct_finish(rank, errs);
}
