/* Integer division by zero in one rank: SIGFPE names the virtual rank (see fault_common.h). */
#include "fault_common.h"

static void fault(void)
{
    volatile int zero = 0;
    printf("rank 1: %d\n", 7 / zero);
}

int main(int argc, char **argv)
{
    return fault_main(argc, argv, fault);
}
