/* coll_pplan: persistent collectives (MPI 4.0 *_init) started many times (coll5, issue 16:
 * persistent collectives planned once). On MPI_COMM_WORLD, a duplicate of it and two splits
 * (odd/even, reversed keys), seven persistent requests (Barrier, Bcast of ints, Bcast of a
 * strided vector type, Reduce in place at the root, Allreduce of doubles, Allreduce in place,
 * Alltoall) are started ROUNDS times each with new data, every rank starting them in its own
 * order (rotated by rank and round: MPI 4.0 does not order starts), between a ring of
 * point-to-point messages posted before and completed after, a blocking Allreduce after the
 * first starts and an Ibarrier; rounds are completed by MPI_Waitall or by MPI_Test loops.
 * Then each communicator inits, starts and frees a Bcast a few times, and at world size <= 2
 * a duplicate of world runs more init/start/wait/free cycles than Toucan gives private real
 * communicators to one communicator (real::MAX_PERSISTENT), so the later ones take the other
 * path. Only kinds MPICH 4.0.2 restarts correctly are used (its Gather_init, Scatter_init
 * and Allgather_init are not: coll_persistent.c), so the output is recorded from MPICH. */
#include "coll_comms.h"

#define ROUNDS 30
#define NREQ 7
#define CYCLES 520

int main(int argc, char **argv)
{
    int rank, wsize, errs = 0, ci, it, j;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    MPI_Comm comms[NCOMMS + 1];
    const char *names[NCOMMS + 1];
    make_comms(comms, names);
    /* world, dup, odd/even, reversed: the thirds split of make_comms is replaced by a dup */
    MPI_Comm_free(&comms[3]);
    comms[3] = comms[2];
    names[3] = names[2];
    comms[2] = comms[1];
    names[2] = names[1];
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]);
    names[1] = "dup";
    MPI_Datatype vec;
    MPI_Type_vector(3, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    for (ci = 0; ci < 4; ci++) {
        MPI_Comm c = comms[ci];
        int me, n, checked = 0;
        MPI_Comm_rank(c, &me);
        MPI_Comm_size(c, &n);
        int bc[3], vb[6], red[2], *a2s = ct_malloc(sizeof(int) * n), *a2r = ct_malloc(sizeof(int) * n);
        double dv, dmax;
        long inp;
        MPI_Request rq[NREQ], pp[2];
        int left = (me + n - 1) % n, right = (me + 1) % n, got = -1, sent;
        MPI_Barrier_init(c, MPI_INFO_NULL, &rq[0]);
        MPI_Bcast_init(bc, 3, MPI_INT, n - 1, c, MPI_INFO_NULL, &rq[1]);
        MPI_Bcast_init(vb, 1, vec, 0, c, MPI_INFO_NULL, &rq[2]);
        MPI_Reduce_init(me == 0 ? MPI_IN_PLACE : red, red, 2, MPI_INT, MPI_SUM, 0, c, MPI_INFO_NULL, &rq[3]);
        MPI_Allreduce_init(&dv, &dmax, 1, MPI_DOUBLE, MPI_MAX, c, MPI_INFO_NULL, &rq[4]);
        MPI_Allreduce_init(MPI_IN_PLACE, &inp, 1, MPI_LONG, MPI_SUM, c, MPI_INFO_NULL, &rq[5]);
        MPI_Alltoall_init(a2s, 1, MPI_INT, a2r, 1, MPI_INT, c, MPI_INFO_NULL, &rq[6]);
        for (it = 0; it < ROUNDS; it++) {
            int k = 1000 * it;
            for (j = 0; j < 3; j++)
                bc[j] = me == n - 1 ? k + j : -1;
            for (j = 0; j < 6; j++)
                vb[j] = me == 0 ? k + 10 * j : -2;
            red[0] = me + k;
            red[1] = 2 * me;
            dv = (double)((me * 7 + it) % n);
            inp = me + it;
            for (j = 0; j < n; j++) {
                a2s[j] = 100 * me + j + k;
                a2r[j] = -1;
            }
            sent = k + me;
            MPI_Irecv(&got, 1, MPI_INT, left, it, c, &pp[0]);
            MPI_Isend(&sent, 1, MPI_INT, right, it, c, &pp[1]);
            /* every rank its own order of starts; a blocking collective after the first three */
            for (j = 0; j < NREQ; j++) {
                MPI_Start(&rq[(j + me + it) % NREQ]);
                if (j == 2) {
                    int one = 1, sum = 0;
                    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, c);
                    CHECK(sum == n, "%s round %d: allreduce between starts = %d", names[ci], it, sum);
                }
            }
            MPI_Request ib;
            MPI_Ibarrier(c, &ib);
            if (it % 3 == 2) {
                /* MPI_Test on each (MPICH 4.0.2's MPI_Testall reports its persistent
                 * collectives as failed with MPI_ERR_PENDING) */
                int left_to_do = NREQ;
                while (left_to_do > 0)
                    for (j = 0, left_to_do = 0; j < NREQ; j++) {
                        int flag = 0;
                        MPI_Test(&rq[j], &flag, MPI_STATUS_IGNORE);
                        left_to_do += !flag;
                    }
            } else {
                MPI_Waitall(NREQ, rq, MPI_STATUSES_IGNORE);
            }
            MPI_Wait(&ib, MPI_STATUS_IGNORE);
            MPI_Waitall(2, pp, MPI_STATUSES_IGNORE);
            CHECK(got == k + left, "%s round %d: ring got %d", names[ci], it, got);
            for (j = 0; j < 3; j++)
                CHECK(bc[j] == k + j, "%s round %d: bcast [%d] = %d", names[ci], it, j, bc[j]);
            for (j = 0; j < 6; j++) {
                int want = j % 2 == 0 || me == 0 ? k + 10 * j : -2;
                CHECK(vb[j] == want, "%s round %d: vector bcast [%d] = %d, want %d", names[ci], it, j, vb[j], want);
            }
            if (me == 0)
                CHECK(red[0] == n * (n - 1) / 2 + n * k && red[1] == n * (n - 1), "%s round %d: reduce = %d %d", names[ci], it,
                      red[0], red[1]);
            {
                int mx = 0;
                for (j = 0; j < n; j++)
                    mx = (j * 7 + it) % n > mx ? (j * 7 + it) % n : mx;
                CHECK(dmax == (double)mx, "%s round %d: allreduce max = %g, want %d", names[ci], it, dmax, mx);
            }
            CHECK(inp == (long)n * (n - 1) / 2 + (long)n * it, "%s round %d: allreduce in place = %ld", names[ci], it, inp);
            for (j = 0; j < n; j++)
                CHECK(a2r[j] == 100 * j + me + k, "%s round %d: alltoall from %d = %d", names[ci], it, j, a2r[j]);
            checked++;
        }
        for (j = 0; j < NREQ; j++)
            MPI_Request_free(&rq[j]);
        /* init, start, free: a new plan each time */
        for (it = 0; it < 3; it++) {
            MPI_Request r;
            bc[0] = me == 0 ? 77 + it : -1;
            MPI_Bcast_init(bc, 1, MPI_INT, 0, c, MPI_INFO_NULL, &r);
            MPI_Start(&r);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
            MPI_Request_free(&r);
            CHECK(bc[0] == 77 + it, "%s cycle %d: bcast = %d", names[ci], it, bc[0]);
        }
        ct_say(rank, "%s: size %d, %d rounds checked", names[ci], n, checked);
        free(a2s);
        free(a2r);
    }
    if (wsize <= 2) {
        MPI_Comm d;
        int v, sum = 0, ok = 0;
        MPI_Comm_dup(MPI_COMM_WORLD, &d);
        for (it = 0; it < CYCLES; it++) {
            MPI_Request r;
            v = rank + it;
            MPI_Allreduce_init(&v, &sum, 1, MPI_INT, MPI_SUM, d, MPI_INFO_NULL, &r);
            MPI_Start(&r);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
            MPI_Request_free(&r);
            ok += sum == wsize * (wsize - 1) / 2 + wsize * it;
        }
        CHECK(ok == CYCLES, "init/free cycles: %d of %d right", ok, CYCLES);
        ct_say(rank, "%d init/start/free cycles", CYCLES);
        MPI_Comm_free(&d);
    } else if (rank == 0) {
        ct_say(rank, "init/start/free cycles skipped at world size %d", wsize);
    }
    MPI_Type_free(&vec);
    MPI_Comm_free(&comms[1]);
    MPI_Comm_free(&comms[2]);
    MPI_Comm_free(&comms[3]);
    return ct_finish(rank, errs);
}
