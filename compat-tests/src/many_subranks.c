/* Processes holding more than 256 subranks (SMP mode: W workers of V subranks each). The
 * real tag carries only the low 8 bits of the destination and source subranks; the rest rides
 * in the message header, so every exchange below crosses processes with subrank numbers above
 * 255 on both sides:
 *   1. a ring in both directions with tags that name the sender;
 *   2. rank 0 receives one message from every other rank with MPI_ANY_SOURCE/MPI_ANY_TAG
 *      and checks each source, tag and payload exactly once;
 *   3. an Allreduce of every rank's number.
 * Run with its own layouts (many_subranks.layouts); the summary is matched (.expect), since
 * the world is larger than any expected output recorded under plain MPICH.
 */
#include "ct.h"

int main(int argc, char **argv)
{
    int rank, size, errs = 0, i, left, right, got[2], sum_in, sum;
    char *seen;
    MPI_Status st;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    left = (rank + size - 1) % size;
    right = (rank + 1) % size;

    MPI_Sendrecv(&rank, 1, MPI_INT, right, 1000 + rank, &got[0], 1, MPI_INT, left, 1000 + left, MPI_COMM_WORLD, &st);
    MPI_Sendrecv(&rank, 1, MPI_INT, left, 5000 + rank, &got[1], 1, MPI_INT, right, 5000 + right, MPI_COMM_WORLD, &st);
    CHECK(got[0] == left && got[1] == right, "ring: got %d %d, expected %d %d", got[0], got[1], left, right);

    if (rank == 0) {
        seen = ct_malloc((size_t) size);
        memset(seen, 0, (size_t) size);
        for (i = 1; i < size; i++) {
            int v = -1;
            MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            if (st.MPI_SOURCE <= 0 || st.MPI_SOURCE >= size || seen[st.MPI_SOURCE] || st.MPI_TAG != st.MPI_SOURCE % 30000 ||
                v != 7 * st.MPI_SOURCE) {
                CHECK(0, "any-source receive %d: source %d tag %d value %d", i, st.MPI_SOURCE, st.MPI_TAG, v);
            } else {
                seen[st.MPI_SOURCE] = 1;
            }
        }
        free(seen);
    } else {
        int v = 7 * rank;
        MPI_Send(&v, 1, MPI_INT, 0, rank % 30000, MPI_COMM_WORLD);
    }

    sum_in = rank;
    MPI_Allreduce(&sum_in, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(sum == size * (size - 1) / 2, "Allreduce: %d, expected %d", sum, size * (size - 1) / 2);
    if (rank == 0)
        ct_say(rank, "world of %d ranks checked", size);
    return ct_finish(rank, errs);
}
