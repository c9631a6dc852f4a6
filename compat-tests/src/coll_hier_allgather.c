/* Allgather and Allgatherv where several ranks share a process (the two-level
 * allgather under Toucan, and at one process the team's rows): on COMM_WORLD, on a split whose rank order
 * interleaves the processes (key = rank * 3 mod size), on one that holds all
 * of the first ranks and a single later one (uneven members per process), and
 * on a split with reversed keys; with a strided receive type, a strided send
 * type, MPI_IN_PLACE, zero counts and gaps that must stay untouched, calls back to back with a
 * Bcast between them, and the nonblocking form (the persistent one is
 * coll_persistent's: MPICH 4.0.2's restarted MPI_Allgather_init keeps the
 * previous round's blocks). */
#include "coll_comms.h"

static int val(int from, int round, int i) { return from * 100000 + round * 1000 + i; }

static void run(MPI_Comm c, int rank, const char *cname, int *errp)
{
    int me, n, i, j, r, total;
    int *sb, *rb, *cnt, *dsp;
    MPI_Comm_rank(c, &me);
    MPI_Comm_size(c, &n);
    sb = ct_malloc(sizeof(int) * 8);
    rb = ct_malloc(sizeof(int) * 16 * n);
    cnt = ct_malloc(sizeof(int) * n);
    dsp = ct_malloc(sizeof(int) * n);

    /* back to back: every round its own values, a Bcast between some */
    for (r = 0; r < 20; r++) {
        for (i = 0; i < 3; i++)
            sb[i] = val(me, r, i);
        for (i = 0; i < 3 * n; i++)
            rb[i] = -1;
        MPI_Allgather(sb, 3, MPI_INT, rb, 3, MPI_INT, c);
        for (j = 0; j < n; j++)
            for (i = 0; i < 3; i++)
                CHECKP(rb[3 * j + i] == val(j, r, i), "%s round %d Allgather [%d][%d] = %d", cname, r, j,
                       i, rb[3 * j + i]);
        if (r % 3 == 0) {
            int b = me == r % n ? r : -1;
            MPI_Bcast(&b, 1, MPI_INT, r % n, c);
            CHECKP(b == r, "%s round %d Bcast = %d", cname, r, b);
        }
    }

    /* in place */
    for (i = 0; i < 2 * n; i++)
        rb[i] = -1;
    rb[2 * me] = val(me, 50, 0);
    rb[2 * me + 1] = val(me, 50, 1);
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rb, 2, MPI_INT, c);
    for (j = 0; j < n; j++)
        for (i = 0; i < 2; i++)
            CHECKP(rb[2 * j + i] == val(j, 50, i), "%s in-place Allgather [%d][%d] = %d", cname, j, i,
                   rb[2 * j + i]);

    /* a strided receive type: each block 2 ints, one int apart, blocks 5 ints apart */
    {
        MPI_Datatype vec, rs;
        MPI_Type_vector(2, 1, 2, MPI_INT, &vec);
        MPI_Type_create_resized(vec, 0, 5 * sizeof(int), &rs);
        MPI_Type_commit(&rs);
        for (i = 0; i < 5 * n; i++)
            rb[i] = -1;
        sb[0] = val(me, 60, 0);
        sb[1] = val(me, 60, 1);
        MPI_Allgather(sb, 2, MPI_INT, rb, 1, rs, c);
        for (j = 0; j < n; j++) {
            CHECKP(rb[5 * j] == val(j, 60, 0) && rb[5 * j + 2] == val(j, 60, 1),
                   "%s strided Allgather [%d] = %d %d", cname, j, rb[5 * j], rb[5 * j + 2]);
            CHECKP(rb[5 * j + 1] == -1 && rb[5 * j + 3] == -1 && rb[5 * j + 4] == -1,
                   "%s strided Allgather wrote between the elements of block %d", cname, j);
        }
        MPI_Type_free(&rs);
        MPI_Type_free(&vec);
    }

    /* a strided send type (2 ints, one apart) into plain ints */
    {
        MPI_Datatype sv;
        int src[3];
        MPI_Type_vector(2, 1, 2, MPI_INT, &sv);
        MPI_Type_commit(&sv);
        src[0] = val(me, 65, 0);
        src[1] = -7;
        src[2] = val(me, 65, 1);
        for (i = 0; i < 2 * n; i++)
            rb[i] = -1;
        MPI_Allgather(src, 1, sv, rb, 2, MPI_INT, c);
        for (j = 0; j < n; j++)
            CHECKP(rb[2 * j] == val(j, 65, 0) && rb[2 * j + 1] == val(j, 65, 1),
                   "%s strided-send Allgather [%d] = %d %d", cname, j, rb[2 * j], rb[2 * j + 1]);
        MPI_Type_free(&sv);
    }

    /* Allgatherv: rank j gives (j * 7) % 4 ints (some none), blocks in reverse order with
     * a gap of one before each */
    for (total = 0, j = n - 1; j >= 0; j--) {
        cnt[j] = (j * 7) % 4;
        dsp[j] = total + 1;
        total += cnt[j] + 1;
    }
    for (i = 0; i < cnt[me]; i++)
        sb[i] = val(me, 70, i);
    for (i = 0; i < total; i++)
        rb[i] = -1;
    MPI_Allgatherv(sb, cnt[me], MPI_INT, rb, cnt, dsp, MPI_INT, c);
    for (j = 0; j < n; j++) {
        CHECKP(rb[dsp[j] - 1] == -1, "%s Allgatherv wrote into the gap before block %d", cname, j);
        for (i = 0; i < cnt[j]; i++)
            CHECKP(rb[dsp[j] + i] == val(j, 70, i), "%s Allgatherv [%d][%d] = %d", cname, j, i,
                   rb[dsp[j] + i]);
    }

    /* nonblocking, two at once */
    {
        MPI_Request q[2];
        int *rb2 = ct_malloc(sizeof(int) * n);
        for (i = 0; i < n; i++)
            rb[i] = rb2[i] = -1;
        sb[0] = val(me, 80, 0);
        sb[1] = val(me, 81, 0);
        MPI_Iallgather(&sb[0], 1, MPI_INT, rb, 1, MPI_INT, c, &q[0]);
        MPI_Iallgather(&sb[1], 1, MPI_INT, rb2, 1, MPI_INT, c, &q[1]);
        MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
        for (j = 0; j < n; j++)
            CHECKP(rb[j] == val(j, 80, 0) && rb2[j] == val(j, 81, 0), "%s Iallgather [%d] = %d %d", cname,
                   j, rb[j], rb2[j]);
        free(rb2);
    }

    free(sb);
    free(rb);
    free(cnt);
    free(dsp);
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, k;
    MPI_Comm comms[NCOMMS], inter, uneven;
    const char *names[NCOMMS];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    make_comms(comms, names);
    for (k = 0; k < NCOMMS; k++)
        run(comms[k], rank, names[k], &errs);
    /* ranks interleaved: key rank*3 mod size (a permutation unless 3 divides size) */
    MPI_Comm_split(MPI_COMM_WORLD, 0, size % 3 ? (rank * 3) % size : size - rank, &inter);
    run(inter, rank, "interleaved", &errs);
    /* the first half and the last rank */
    MPI_Comm_split(MPI_COMM_WORLD, rank < (size + 1) / 2 || rank == size - 1 ? 0 : MPI_UNDEFINED, rank,
                   &uneven);
    if (uneven != MPI_COMM_NULL) {
        run(uneven, rank, "uneven", &errs);
        MPI_Comm_free(&uneven);
    }
    MPI_Comm_free(&inter);
    free_comms(comms);
    return ct_finish(rank, errs);
}
