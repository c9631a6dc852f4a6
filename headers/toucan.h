/*
 * toucan.h -- Toucan-MPI scheduling hints.
 *
 * A program marks the phases of its time step so that Toucan-MPI can run
 * the virtual ranks of one process as a receive-send-compute pipeline:
 *
 *     Toucan_Region(TOUCAN_RECEIVE);   post receives
 *     Toucan_Region(TOUCAN_SEND);      post sends
 *     Toucan_Region(TOUCAN_COMPUTE);   work that needs the messages above
 *     Toucan_Region(TOUCAN_END);       end of the superblock (time step)
 *
 * Toucan_Region returns MPI_SUCCESS or an MPI error code.
 *
 * The same source stays a legal program for any other MPI: there the
 * calls become no-ops that evaluate their argument and yield 0, and
 * nothing needs to be linked. Which case applies is decided by the mpi.h
 * seen before this header, so include toucan.h AFTER mpi.h. (If no mpi.h
 * has been included yet, this header includes <mpi.h> itself, which finds
 * the mpi.h of whatever MPI the program is being built with.)
 *
 * Define TOUCAN_NO_REGIONS before including this header to turn the hints
 * into no-ops even under Toucan-MPI.
 */

#ifndef TOUCAN_H
#define TOUCAN_H

#if !defined(TOUCAN_NO_REGIONS) && !defined(TOUCAN_MPI) && !defined(MPI_VERSION)
#include <mpi.h>
#endif

/* Region kinds */
#define TOUCAN_RECEIVE 1
#define TOUCAN_SEND 2
#define TOUCAN_COMPUTE 3
#define TOUCAN_END 4

#if defined(TOUCAN_NO_REGIONS) || !defined(TOUCAN_MPI)

/*
 * Another MPI, or hints switched off: no code, no symbol. The macro
 * evaluates its argument and yields 0 (MPI_SUCCESS), like
 * ((void)(kind), 0), but through an inline function so that the usual
 * statement form "Toucan_Region(TOUCAN_SEND);" draws no "statement with
 * no effect" warning.
 */
#if defined(__cplusplus) || (defined(__STDC_VERSION__) && __STDC_VERSION__ >= 199901L)
static inline int toucan_region_noop_(int kind)
#elif defined(__GNUC__)
static __inline__ int toucan_region_noop_(int kind)
#else
static int toucan_region_noop_(int kind)
#endif
{
    (void)kind;
    return 0;
}
#define Toucan_Region(kind) toucan_region_noop_(kind)
#define PToucan_Region(kind) toucan_region_noop_(kind)

#else

#if defined(__cplusplus)
extern "C" {
#endif

int Toucan_Region(int kind);
int PToucan_Region(int kind);

#if defined(__cplusplus)
}
#endif

#endif

#endif /* TOUCAN_H */
