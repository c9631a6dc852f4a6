/* Blocking sleeps: every rank calls sleep, usleep, nanosleep, clock_nanosleep
 * (relative, and absolute on CLOCK_MONOTONIC and CLOCK_REALTIME) and
 * sched_yield, between messages, and checks that each slept at least the time
 * asked (measured with clock_gettime, not MPI_Wtime) and returned what the C
 * library returns: 0, EINVAL for bad arguments. Under Toucan the calls park a
 * subrank while its siblings go on (a ring token passes through a rank's
 * siblings while it sleeps); output must be the same as with one process per
 * rank. Rank 0 also sleeps 3 s while every other rank waits in a barrier: a
 * sleeping rank is not a deadlock. */
#define _GNU_SOURCE
#include "ct.h"

#include <errno.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

static double now_on(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double mono(void)
{
    return now_on(CLOCK_MONOTONIC);
}

/* Checks that `what` took at least `want` seconds (t0 from mono()). */
static void took(int rank, int *errp, const char *what, double t0, double want)
{
    double d = mono() - t0;
    CHECKP(d >= want - 1e-4, "%s slept %.6f s, asked %.6f", what, d, want);
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, i, r, token;
    double t0;
    struct timespec ts, rem;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* Each kind of sleep, with a different length per rank. */
    t0 = mono();
    CHECK(usleep(10000 + 1000 * (rank % 7)) == 0, "usleep failed");
    took(rank, &errs, "usleep", t0, 0.010 + 0.001 * (rank % 7));

    ts.tv_sec = 0;
    ts.tv_nsec = 15000000 + 500000 * (rank % 5);
    t0 = mono();
    CHECK(nanosleep(&ts, &rem) == 0, "nanosleep: errno %d", errno);
    took(rank, &errs, "nanosleep", t0, ts.tv_nsec * 1e-9);

    ts.tv_nsec = 12000000;
    t0 = mono();
    r = clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &rem);
    CHECK(r == 0, "clock_nanosleep relative: %d", r);
    took(rank, &errs, "clock_nanosleep relative", t0, 0.012);

    t0 = mono();
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_nsec += 20000000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    r = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
    CHECK(r == 0, "clock_nanosleep absolute: %d", r);
    took(rank, &errs, "clock_nanosleep absolute", t0, 0.020);
    CHECK(now_on(CLOCK_MONOTONIC) >= ts.tv_sec + ts.tv_nsec * 1e-9, "woke before the absolute time");

    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 8000000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    r = clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL);
    CHECK(r == 0, "clock_nanosleep realtime absolute: %d", r);
    CHECK(now_on(CLOCK_REALTIME) >= ts.tv_sec + ts.tv_nsec * 1e-9 - 1e-4, "woke before the real time");

    /* A time already past returns at once; zero sleeps are fine. */
    ts.tv_sec = 1;
    ts.tv_nsec = 0;
    CHECK(clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == 0, "past absolute time");
    CHECK(usleep(0) == 0, "usleep(0)");
    CHECK(sleep(0) == 0, "sleep(0)");

    /* Bad arguments: as the C library. */
    ts.tv_sec = 0;
    ts.tv_nsec = 1000000000;
    errno = 0;
    CHECK(nanosleep(&ts, NULL) == -1 && errno == EINVAL, "nanosleep(nsec=1e9): errno %d", errno);
    ts.tv_sec = -1;
    ts.tv_nsec = 0;
    errno = 0;
    CHECK(nanosleep(&ts, NULL) == -1 && errno == EINVAL, "nanosleep(sec=-1): errno %d", errno);
    ts.tv_sec = 0;
    ts.tv_nsec = -5;
    CHECK(clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL) == EINVAL, "clock_nanosleep(nsec<0)");
    ts.tv_nsec = 1000;
    CHECK(clock_nanosleep(CLOCK_THREAD_CPUTIME_ID, 0, &ts, NULL) == EINVAL,
          "clock_nanosleep(CLOCK_THREAD_CPUTIME_ID)");

    /* A token around the ring: each rank sleeps a little before passing it on. */
    for (i = 0; i < 2; i++) {
        token = 0;
        if (rank == 0) {
            usleep(5000);
            MPI_Send(&token, 1, MPI_INT, (rank + 1) % size, 1, MPI_COMM_WORLD);
            MPI_Recv(&token, 1, MPI_INT, size - 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(token == size - 1, "token %d", token);
        } else {
            MPI_Recv(&token, 1, MPI_INT, rank - 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(token == rank - 1, "token %d from rank %d", token, rank - 1);
            usleep(2000);
            token = rank;
            MPI_Send(&token, 1, MPI_INT, (rank + 1) % size, 1, MPI_COMM_WORLD);
        }
    }

    /* sched_yield in a loop while others communicate. */
    for (i = 0; i < 100; i++)
        CHECK(sched_yield() == 0, "sched_yield");

    /* Rank 0 sleeps long while everybody waits for it: not a deadlock. */
    t0 = mono();
    if (rank == 0)
        CHECK(sleep(3) == 0, "sleep(3)");
    MPI_Barrier(MPI_COMM_WORLD);
    took(rank, &errs, "barrier behind a sleep", t0, rank == 0 ? 3.0 : 0.0);

    /* Sleeps of many ranks at once, with a reduction after each. */
    for (i = 0; i < 5; i++) {
        int one = 1, sum = 0;
        t0 = mono();
        usleep(20000);
        took(rank, &errs, "usleep in the loop", t0, 0.020);
        MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        CHECK(sum == size, "sum %d", sum);
    }

    ct_say(rank, "slept as asked");
    return ct_finish(rank, errs);
}
