/* Session 21 (team14): on one worker a barrier's last arrival goes on after the members it
 * held. Loops of Reduce / Gather then Barrier (IMB's shape) at moving roots, on the world, on
 * halves of it and on MPI_COMM_SELF (one member: nothing to yield to), with every result
 * checked, so the changed run order is exercised at 8 B and 1 KiB+ operands. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int check(MPI_Comm c, int iters, int count, const char *name)
{
    int rank, size, bad = 0;
    MPI_Comm_rank(c, &rank);
    MPI_Comm_size(c, &size);
    int *in = malloc(sizeof(int) * count), *out = malloc(sizeof(int) * count);
    int *all = malloc(sizeof(int) * size);
    for (int it = 0; it < iters; it++) {
        int root = (it / 3) % size;
        for (int i = 0; i < count; i++)
            in[i] = rank * 7 + i + it;
        MPI_Reduce(in, out, count, MPI_INT, MPI_SUM, root, c);
        MPI_Barrier(c);
        if (rank == root)
            for (int i = 0; i < count; i++)
                if (out[i] != 7 * size * (size - 1) / 2 + size * (i + it))
                    bad++;
        int v = rank * 100 + it;
        MPI_Gather(&v, 1, MPI_INT, all, 1, MPI_INT, root, c);
        MPI_Barrier(c);
        if (rank == root)
            for (int r = 0; r < size; r++)
                if (all[r] != r * 100 + it)
                    bad++;
    }
    free(in);
    free(out);
    free(all);
    int tot = 0;
    MPI_Allreduce(&bad, &tot, 1, MPI_INT, MPI_SUM, c);
    if (rank == 0)
        printf("%s size %d count %d: %s\n", name, size, count, tot ? "FAIL" : "ok");
    return tot;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    int counts[] = {2, 256, 700};
    int bad = 0;
    for (int k = 0; k < 3; k++) {
        bad += check(MPI_COMM_WORLD, 30, counts[k], "world");
        bad += check(half, 30, counts[k], rank % 2 ? "odd" : "even");
        bad += check(MPI_COMM_SELF, 5, counts[k], "self");
    }
    MPI_Comm_free(&half);
    printf("rank %d: %s\n", rank, bad ? "FAIL" : "OK");
    MPI_Finalize();
    return 0;
}
