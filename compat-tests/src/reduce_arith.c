/* MPI_Reduce and MPI_Allreduce with MPI_SUM and MPI_PROD on every predefined C
 * type they apply to, on COMM_WORLD and a reversed split (see
 * reduce_common.h). */
#include "reduce_common.h"

int main(int argc, char **argv)
{
    return reduce_main(argc, argv, (1u << OSUM) | (1u << OPROD));
}
