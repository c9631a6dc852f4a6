/* fault_signal_launcher.h - fault_sigterm, fault_sigint: rank 0 sends a termination signal to
 * the launcher (mpiexec, the parent of its process's parent, hydra's proxy), as a user's
 * Ctrl-C or kill would; then it computes without calling MPI while its siblings and every
 * other rank wait in a barrier (parked; the background progress thread polls for them). The
 * launcher forwards the signal to every process: each must end at once with a line naming its
 * virtual ranks and the signal, and leave nothing behind. Toucan only (see .expect). */
#ifndef COMPAT_FAULT_SIGNAL_LAUNCHER_H
#define COMPAT_FAULT_SIGNAL_LAUNCHER_H

#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

/* The parent of process `pid` (from /proc/PID/stat), or -1. */
static inline int fault_parent_of(int pid)
{
    char path[64], comm[256];
    int p = -1, ppid = -1;
    char state;
    FILE *f;
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    f = fopen(path, "r");
    if (!f)
        return -1;
    if (fscanf(f, "%d (%255[^)]) %c %d", &p, comm, &state, &ppid) != 4)
        ppid = -1;
    fclose(f);
    return ppid;
}

static inline int fault_signal_launcher_main(int argc, char **argv, int sig)
{
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        int launcher = fault_parent_of((int) getppid());
        struct timespec t0, t;
        if (launcher <= 1 || kill(launcher, sig) != 0) {
            printf("rank 0: FAIL: cannot signal the launcher (pid %d)\n", launcher);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        /* compute for up to 30 s: the job must end long before */
        clock_gettime(CLOCK_MONOTONIC, &t0);
        do
            clock_gettime(CLOCK_MONOTONIC, &t);
        while (t.tv_sec - t0.tv_sec < 30);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    printf("rank %d: OK\n", rank);
    MPI_Finalize();
    return 0;
}

#endif
