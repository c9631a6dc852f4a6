/* MPI_Reduce and MPI_Allreduce with MPI_BAND, MPI_BOR and MPI_BXOR on every predefined C
 * type they apply to, on COMM_WORLD and a reversed split (see
 * reduce_common.h). */
#include "reduce_common.h"

int main(int argc, char **argv)
{
    return reduce_main(argc, argv, (1u << OBAND) | (1u << OBOR) | (1u << OBXOR));
}
