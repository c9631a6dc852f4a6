/* coll_comms.h - the communicators every collective test runs on:
 * COMM_WORLD, an odd/even split, a reversed-key split and a split into
 * thirds with reversed keys. All handles are returned to the caller. */
#ifndef COMPAT_COLL_COMMS_H
#define COMPAT_COLL_COMMS_H
#include "ct.h"

#define NCOMMS 4

static inline void make_comms(MPI_Comm *c, const char **names)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    c[0] = MPI_COMM_WORLD;
    names[0] = "world";
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &c[1]);
    names[1] = "odd/even";
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &c[2]);
    names[2] = "reversed";
    MPI_Comm_split(MPI_COMM_WORLD, rank % 3, -rank, &c[3]);
    names[3] = "thirds-reversed";
}

static inline void free_comms(MPI_Comm *c)
{
    int i;
    for (i = 1; i < NCOMMS; i++)
        MPI_Comm_free(&c[i]);
}
#endif
