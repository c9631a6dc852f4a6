// Privatized thread-locals (C++): each rank owns the program's thread_local
// objects, as the main thread of its own process would. Uses writable globals
// on purpose (allowed in tests named privatize_*): a thread_local
// std::vector and std::string, thread_local objects of a class whose
// constructor counts instances in a global (each rank constructs its own: 2),
// a function-local thread_local with a dynamic initialiser (run once per
// rank), a template one, and a thread_local whose destructor prints when the
// rank's main thread ends: once per rank, after its OK line. A thread_local
// std::vector also serves as an MPI receive buffer.
#include "ct.h"

#include <string>
#include <vector>

int constructed = 0; // a plain global: this rank's count of Counted objects made
int dynamic_inits = 0;

struct Counted {
    int id;
    Counted() : id(++constructed) {}
};

thread_local std::vector<int> tvec;
thread_local std::string tstr = "initial";
thread_local Counted tfirst, tsecond;

static int make_value() { return 1000 + ++dynamic_inits; }

static int &local_tls()
{
    thread_local int value = make_value();
    return value;
}

template <class T> T &template_tls()
{
    thread_local T value{};
    return value;
}

struct Reporter {
    int rank = -1;
    ~Reporter()
    {
        // Runs when the rank's main thread ends, after MPI_Finalize: only plain output.
        if (rank >= 0)
            printf("rank %d: thread-local destroyed with %zu elements\n", rank, tvec.size());
    }
};
thread_local Reporter reporter;

static void write_values(int rank)
{
    tvec.assign(100 + rank, rank);
    tstr = "rank " + std::to_string(rank);
    local_tls() += rank;
    template_tls<double>() = rank + 0.5;
    template_tls<std::vector<int>>().push_back(rank);
}

static void check_values(int rank, int *errp)
{
    bool all = tvec.size() == (size_t)(100 + rank);
    for (int v : tvec)
        all = all && v == rank;
    CHECKP(all, "thread_local vector holds %zu elements, not this rank's", tvec.size());
    CHECKP(tstr == "rank " + std::to_string(rank), "thread_local string is '%s'", tstr.c_str());
    CHECKP(local_tls() == 1001 + rank, "function-local thread_local %d", local_tls());
    CHECKP(dynamic_inits == 1, "function-local thread_local initialised %d times", dynamic_inits);
    CHECKP(template_tls<double>() == rank + 0.5, "template thread_local %g", template_tls<double>());
    CHECKP(template_tls<std::vector<int>>().size() == 1 && template_tls<std::vector<int>>()[0] == rank,
           "template thread_local vector has %zu elements", template_tls<std::vector<int>>().size());
    CHECKP(constructed == 2 && tfirst.id + tsecond.id == 3, "%d thread_local objects constructed", constructed);
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    // First use in this thread: what the initialisers of this rank's thread_locals made.
    bool init_ok = tvec.empty() && tstr == "initial" && dynamic_inits == 0 && tfirst.id + tsecond.id == 3 &&
                   constructed == 2;
    CHECK(init_ok, "thread_locals were not as their initialisers left them");
    reporter.rank = rank;

    write_values(rank);
    MPI_Barrier(MPI_COMM_WORLD);
    int token = rank;
    MPI_Sendrecv_replace(&token, 1, MPI_INT, (rank + 1) % size, 0, (rank + size - 1) % size, 0, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
    check_values(rank, &errs);

    // A thread_local vector's elements as a receive buffer (on the heap), a thread_local
    // array as a send buffer (in the thread's own storage).
    tvec.assign(4, -1);
    thread_local int out[4];
    for (int i = 0; i < 4; i++)
        out[i] = rank * 100 + i;
    MPI_Request rq;
    MPI_Irecv(tvec.data(), 4, MPI_INT, (rank + size - 1) % size, 1, MPI_COMM_WORLD, &rq);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Send(out, 4, MPI_INT, (rank + 1) % size, 1, MPI_COMM_WORLD);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    int left = (rank + size - 1) % size;
    CHECK(tvec[0] == left * 100 && tvec[3] == left * 100 + 3, "receive into a thread_local vector: %d %d", tvec[0],
          tvec[3]);
    tvec.assign(100 + rank, rank); // the destructor's line shows this rank's size
    return ct_finish(rank, errs);
}
