/* Blocking collectives while point-to-point and nonblocking collectives are
 * outstanding: legal programs that need the MPI library to keep matching
 * messages while a rank sits in a blocking collective (Toucan at V=1 with
 * TOUCAN_REAL_THREAD=multiple runs the real MPI's blocking collectives: its
 * progress engine must keep running meanwhile, see core/coll/solo.rs).
 *
 * Each phase pairs rank 0 (posts first, then enters the collective) with the
 * last rank (sends first, then enters it); the other ranks only take part in
 * the collectives.
 *   1. a posted receive of a large (rendezvous) message, then Bcast;
 *   2. a posted receive of a synchronous send, then Allreduce;
 *   3. a nonblocking broadcast on a communicator the real MPI does not mirror
 *      (MPI_Comm_create_group), waited after a blocking Allgather on the world;
 *   4. a blocking collective between the start and the wait of a nonblocking
 *      one on the same communicator (issue order), with Reduce, Alltoall,
 *      Gather, Scatter and Barrier in between;
 *   5. many small blocking collectives with every buffer kind (in place,
 *      derived datatypes) and roots. */
#include "ct.h"

#define BIG (1 << 20)

int main(int argc, char **argv)
{
    int rank, n, errs = 0, i, j, last;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    last = n - 1;

    /* 1. posted large receive, then Bcast */
    {
        int *big = ct_malloc(sizeof(int) * BIG), v = rank == 0 ? 42 : -1;
        MPI_Request r = MPI_REQUEST_NULL;
        if (rank == 0) {
            for (i = 0; i < BIG; i++)
                big[i] = -1;
            MPI_Irecv(big, BIG, MPI_INT, last, 1, MPI_COMM_WORLD, &r);
        } else if (rank == last) {
            for (i = 0; i < BIG; i++)
                big[i] = i ^ 0x5a5a;
            MPI_Send(big, BIG, MPI_INT, 0, 1, MPI_COMM_WORLD);
        }
        MPI_Bcast(&v, 1, MPI_INT, 0, MPI_COMM_WORLD);
        CHECK(v == 42, "phase 1 Bcast gave %d", v);
        if (rank == 0) {
            MPI_Wait(&r, MPI_STATUS_IGNORE);
            for (i = 0; i < BIG; i++)
                if (big[i] != (i ^ 0x5a5a)) {
                    CHECK(0, "phase 1 large message element %d = %d", i, big[i]);
                    break;
                }
        }
        free(big);
    }

    /* 2. posted receive of a synchronous send, then Allreduce */
    {
        int x = -1, s = rank + 1, sum = 0;
        MPI_Request r = MPI_REQUEST_NULL;
        if (rank == 0)
            MPI_Irecv(&x, 1, MPI_INT, last, 2, MPI_COMM_WORLD, &r);
        else if (rank == last) {
            int y = 77;
            MPI_Ssend(&y, 1, MPI_INT, 0, 2, MPI_COMM_WORLD);
        }
        MPI_Allreduce(&s, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        CHECK(sum == n * (n + 1) / 2, "phase 2 Allreduce gave %d", sum);
        if (rank == 0) {
            MPI_Wait(&r, MPI_STATUS_IGNORE);
            CHECK(x == 77, "phase 2 Ssend delivered %d", x);
        }
    }

    /* 3. nonblocking broadcast on an unmirrored communicator across a blocking Allgather */
    {
        MPI_Group wg, g;
        MPI_Comm c;
        int pair[2] = {0, last}, in = rank == 0 ? 1 : 0, buf[4] = {-1, -1, -1, -1};
        int *all = ct_malloc(sizeof(int) * n);
        MPI_Comm_group(MPI_COMM_WORLD, &wg);
        MPI_Group_incl(wg, last > 0 ? 2 : 1, pair, &g);
        in = rank == 0 || rank == last;
        if (in) {
            MPI_Request r;
            MPI_Comm_create_group(MPI_COMM_WORLD, g, 3, &c);
            if (rank == 0)
                for (i = 0; i < 4; i++)
                    buf[i] = 10 + i;
            MPI_Ibcast(buf, 4, MPI_INT, 0, c, &r);
            if (rank == 0) {
                MPI_Allgather(&rank, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
                MPI_Wait(&r, MPI_STATUS_IGNORE);
            } else {
                MPI_Wait(&r, MPI_STATUS_IGNORE);
                MPI_Allgather(&rank, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
            }
            for (i = 0; i < 4; i++)
                CHECK(buf[i] == 10 + i, "phase 3 Ibcast [%d] = %d", i, buf[i]);
            MPI_Comm_free(&c);
        } else {
            MPI_Allgather(&rank, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
        }
        for (i = 0; i < n; i++)
            CHECK(all[i] == i, "phase 3 Allgather [%d] = %d", i, all[i]);
        MPI_Group_free(&g);
        MPI_Group_free(&wg);
        free(all);
    }

    /* 4. blocking collectives between the start and the wait of nonblocking ones */
    {
        MPI_Comm d;
        MPI_Request r[2];
        int a = rank, amax = -1, b = -1, red = -1, *sa = ct_malloc(sizeof(int) * n),
            *ra = ct_malloc(sizeof(int) * n), g[64], sc = -1;
        MPI_Comm_dup(MPI_COMM_WORLD, &d);
        MPI_Iallreduce(&a, &amax, 1, MPI_INT, MPI_MAX, d, &r[0]);
        if (rank == 0)
            b = 5;
        MPI_Ibcast(&b, 1, MPI_INT, 0, d, &r[1]);
        MPI_Reduce(&a, &red, 1, MPI_INT, MPI_SUM, last, d);
        for (i = 0; i < n; i++)
            sa[i] = rank * 100 + i;
        MPI_Alltoall(sa, 1, MPI_INT, ra, 1, MPI_INT, d);
        MPI_Gather(&a, 1, MPI_INT, g, 1, MPI_INT, 0, d);
        MPI_Scatter(sa, 1, MPI_INT, &sc, 1, MPI_INT, last, d);
        MPI_Barrier(d);
        MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
        CHECK(amax == last, "phase 4 Iallreduce gave %d", amax);
        CHECK(b == 5, "phase 4 Ibcast gave %d", b);
        if (rank == last)
            CHECK(red == n * (n - 1) / 2, "phase 4 Reduce gave %d", red);
        for (i = 0; i < n; i++)
            CHECK(ra[i] == i * 100 + rank, "phase 4 Alltoall [%d] = %d", i, ra[i]);
        if (rank == 0)
            for (i = 0; i < n; i++)
                CHECK(g[i] == i, "phase 4 Gather [%d] = %d", i, g[i]);
        CHECK(sc == last * 100 + rank, "phase 4 Scatter gave %d", sc);
        MPI_Comm_free(&d);
        free(sa);
        free(ra);
    }

    /* 5. many small blocking collectives: in place, derived datatypes, every root */
    {
        MPI_Datatype vec;
        double v[6], out[6];
        int *ag = ct_malloc(sizeof(int) * 2 * n);
        MPI_Type_vector(3, 1, 2, MPI_DOUBLE, &vec);
        MPI_Type_commit(&vec);
        for (j = 0; j < 200; j++) {
            int root = j % n, x = j, y[2];
            for (i = 0; i < 6; i++)
                v[i] = rank == root ? j + i : -1;
            MPI_Bcast(v, 1, vec, root, MPI_COMM_WORLD); /* elements 0, 2, 4 */
            for (i = 0; i < 6; i += 2)
                CHECK(v[i] == j + i, "phase 5 round %d Bcast vector [%d] = %g", j, i, v[i]);
            for (i = 0; i < 6; i++)
                out[i] = rank + i;
            MPI_Allreduce(MPI_IN_PLACE, out, 6, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            for (i = 0; i < 6; i++)
                CHECK(out[i] == n * (n - 1) / 2.0 + n * i, "phase 5 round %d Allreduce [%d] = %g", j, i,
                      out[i]);
            y[0] = rank;
            y[1] = j;
            ag[2 * rank] = rank;
            ag[2 * rank + 1] = j;
            MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ag, 2, MPI_INT, MPI_COMM_WORLD);
            for (i = 0; i < n; i++)
                CHECK(ag[2 * i] == i && ag[2 * i + 1] == j, "phase 5 round %d Allgather [%d]", j, i);
            MPI_Reduce(rank == root ? MPI_IN_PLACE : &x, rank == root ? &x : NULL, 1, MPI_INT, MPI_SUM,
                       root, MPI_COMM_WORLD);
            if (rank == root)
                CHECK(x == n * j, "phase 5 round %d Reduce gave %d", j, x);
            (void)y;
        }
        MPI_Type_free(&vec);
        free(ag);
    }

    ct_say(rank, errs ? "FAILED" : "OK");
    MPI_Finalize();
    return errs != 0;
}
