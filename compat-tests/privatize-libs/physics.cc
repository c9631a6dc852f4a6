// libphysics.so: the program's own C++ library, with globals of every kind; it also calls
// MPI itself (built with toucancxx, as a user would build it with mpicxx).
#include <mpi.h>

#include <cstdio>
#include <string>
#include <vector>

extern "C" int util_count(int rank);
extern "C" int util_tls_value(void);

extern "C" {
int phys_counter = 10;      // initialised; the program reads it directly (copy relocation)
int phys_bss[1000];         // zero-initialised
int (*phys_callback)(int);  // set by the program: points into the program
}
static int phys_static = 3; // file static
std::vector<int> phys_vec;  // C++ global with a constructor and destructor

struct PhysReporter {
    int rank = -1;
    ~PhysReporter()
    {
        if (rank >= 0)
            printf("rank %d: library destroyed with %zu elements\n", rank, phys_vec.size());
    }
};
PhysReporter phys_reporter;

__attribute__((constructor)) static void phys_init() { phys_counter += 100; }

extern "C" int phys_step(int rank)
{
    static int calls; // function-local static
    calls++;
    phys_static = rank * 2;
    for (int i = 0; i < 1000; i++)
        phys_bss[i] = rank;
    phys_vec.assign(rank + 1, rank);
    phys_counter += 1;
    phys_reporter.rank = rank;
    return calls * 100 + util_count(rank);
}

extern "C" int phys_check(int rank)
{
    int ok = phys_static == rank * 2 && phys_vec.size() == (size_t)rank + 1 && util_tls_value() == rank;
    for (int i = 0; i < 1000; i++)
        ok = ok && phys_bss[i] == rank;
    if (phys_callback)
        ok = ok && phys_callback(rank) == rank + 1;
    return ok;
}

extern "C" int *phys_counter_addr(void) { return &phys_counter; }

// A collective called from the library: the sum of the ranks, through this rank's own copy.
extern "C" int phys_rank_sum(void)
{
    int rank, sum = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    return sum;
}
