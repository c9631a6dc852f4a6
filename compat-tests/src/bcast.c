/* MPI_Bcast from every root, several sizes (1 int up to 1 MiB) and types,
 * on COMM_WORLD and on odd/even and reversed split communicators. */
#include "ct.h"

static void bcast_all_roots(MPI_Comm c, int rank, int *errp, const char *cname)
{
    int me, n, root, i, k;
    int lens[4] = {1, 100, 10000, 262144};
    int *b = ct_malloc(sizeof(int) * 262144);
    MPI_Comm_rank(c, &me);
    MPI_Comm_size(c, &n);
    for (root = 0; root < n; root++) {
        for (k = 0; k < 4; k++) {
            int len = lens[k];
            /* the largest size only from two roots, to stay quick */
            if (k == 3 && root > 1)
                continue;
            for (i = 0; i < len; i++)
                b[i] = me == root ? root * 7919 + k * 31 + i : -1;
            MPI_Bcast(b, len, MPI_INT, root, c);
            for (i = 0; i < len; i++)
                if (b[i] != root * 7919 + k * 31 + i) {
                    CHECKP(0, "%s root %d len %d: element %d = %d", cname, root, len, i, b[i]);
                    break;
                }
        }
        {
            double d[3];
            char s[16];
            for (i = 0; i < 3; i++)
                d[i] = me == root ? root + i / 4.0 : -1.0;
            memset(s, 0, sizeof s);
            if (me == root)
                snprintf(s, sizeof s, "root=%d", root);
            MPI_Bcast(d, 3, MPI_DOUBLE, root, c);
            MPI_Bcast(s, 16, MPI_CHAR, root, c);
            CHECKP(d[2] == root + 0.5, "%s root %d: double %g", cname, root, d[2]);
            {
                char want[16];
                snprintf(want, sizeof want, "root=%d", root);
                CHECKP(strcmp(s, want) == 0, "%s root %d: string '%s'", cname, root, s);
            }
        }
    }
    free(b);
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0;
    MPI_Comm half, rev;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &rev);

    bcast_all_roots(MPI_COMM_WORLD, rank, &errs, "world");
    bcast_all_roots(half, rank, &errs, "parity");
    bcast_all_roots(rev, rank, &errs, "reversed");

    /* a derived type (every other int) broadcast from the last rank */
    {
        MPI_Datatype vec;
        int b[20], i;
        MPI_Type_vector(10, 1, 2, MPI_INT, &vec);
        MPI_Type_commit(&vec);
        for (i = 0; i < 20; i++)
            b[i] = rank == size - 1 ? i : -1;
        MPI_Bcast(b, 1, vec, size - 1, MPI_COMM_WORLD);
        for (i = 0; i < 20; i++)
            CHECK(b[i] == (i % 2 == 0 ? i : (rank == size - 1 ? i : -1)),
                  "vector bcast element %d = %d", i, b[i]);
        MPI_Type_free(&vec);
    }

    MPI_Comm_free(&half);
    MPI_Comm_free(&rev);
    return ct_finish(rank, errs);
}
