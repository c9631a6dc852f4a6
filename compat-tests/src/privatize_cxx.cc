// Privatized globals (C++): each rank owns the program's C++ globals. Uses
// writable globals on purpose (allowed in tests named privatize_*): a global
// std::vector and std::string, a class whose constructor counts instances
// (two global instances, so each rank must see exactly 2 at start-up), a
// function-local static with a dynamic initialiser (run once per rank), an
// inline and a template function-local static, an exception thrown and
// caught, output through std::cout, and a global object whose destructor
// prints at exit: under any MPI each rank's globals are destroyed once, so
// each rank prints one "destroyed" line after its OK.
#include "ct.h"

#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

struct Counted {
    static int instances;
    static int constructed;
    int id;
    Counted() : id(++constructed) { ++instances; }
    ~Counted() { --instances; }
};
int Counted::instances = 0;
int Counted::constructed = 0;

Counted first_counted, second_counted;
std::vector<int> gvec;
std::string gstr = "initial";
int dynamic_inits = 0;

static int make_value() { return 1000 + ++dynamic_inits; }

static int &local_static()
{
    static int value = make_value();
    return value;
}

inline int &inline_static()
{
    static int value = 5;
    return value;
}

template <class T> T &template_static()
{
    static T value{};
    return value;
}

struct Reporter {
    int rank = -1;
    ~Reporter()
    {
        // Runs at exit, after MPI_Finalize: only plain output.
        if (rank >= 0)
            printf("rank %d: destroyed with %zu elements, %d instances\n", rank, gvec.size(), Counted::instances);
    }
};
Reporter reporter;

static void write_values(int rank)
{
    gvec.assign(100 + rank, rank);
    gstr = "rank " + std::to_string(rank);
    local_static() += rank;
    inline_static() = 50 + rank;
    template_static<double>() = rank + 0.5;
    template_static<std::vector<int>>().push_back(rank);
}

static void check_values(int rank, int *errp)
{
    bool all = gvec.size() == (size_t)(100 + rank);
    for (int v : gvec)
        all = all && v == rank;
    CHECKP(all, "global vector holds %zu elements, not this rank's", gvec.size());
    CHECKP(gstr == "rank " + std::to_string(rank), "global string is '%s'", gstr.c_str());
    CHECKP(local_static() == 1001 + rank, "function-local static %d", local_static());
    CHECKP(dynamic_inits == 1, "function-local static initialised %d times", dynamic_inits);
    CHECKP(inline_static() == 50 + rank, "inline function-local static %d", inline_static());
    CHECKP(template_static<double>() == rank + 0.5, "template static %g", template_static<double>());
    CHECKP(template_static<std::vector<int>>().size() == 1 && template_static<std::vector<int>>()[0] == rank,
           "template static vector has %zu elements", template_static<std::vector<int>>().size());
    CHECKP(Counted::instances == 2 && Counted::constructed == 2, "%d instances, %d constructed", Counted::instances,
           Counted::constructed);
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0;
    // Before any write: what the constructors of this rank's globals made.
    bool init_ok = Counted::instances == 2 && first_counted.id == 1 && second_counted.id == 2 && gvec.empty() &&
                   gstr == "initial" && dynamic_inits == 0 && inline_static() == 5;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(init_ok, "globals were not as their constructors left them at start-up");
    reporter.rank = rank;

    write_values(rank);
    MPI_Barrier(MPI_COMM_WORLD);
    {
        Counted local; // a third instance, this rank's only
        CHECK(Counted::instances == 3, "%d instances with a local one", Counted::instances);
        int token = rank;
        MPI_Sendrecv_replace(&token, 1, MPI_INT, (rank + 1) % size, 0, (rank + size - 1) % size, 0, MPI_COMM_WORLD,
                             MPI_STATUS_IGNORE);
        CHECK(Counted::instances == 3, "%d instances after other ranks ran", Counted::instances);
    }
    Counted::constructed--;
    MPI_Barrier(MPI_COMM_WORLD);
    check_values(rank, &errs);

    try {
        throw std::runtime_error("rank " + std::to_string(rank));
    } catch (const std::exception &e) {
        CHECK(std::string(e.what()) == "rank " + std::to_string(rank), "caught '%s'", e.what());
    }
    // std::cout is the C++ library's object (the program holds it by copy relocation).
    // One piece per line: MPICH leaves stdout unbuffered, so every << is its own write.
    std::ostringstream line;
    line << "rank " << rank << ": iostream " << gstr << '\n';
    std::cout << line.str() << std::flush;
    return ct_finish(rank, errs);
}
