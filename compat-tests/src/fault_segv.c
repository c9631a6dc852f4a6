/* A store through a null pointer in one rank: SIGSEGV names the virtual rank (see
 * fault_common.h). */
#include "fault_common.h"

static void fault(void)
{
    volatile long zero = 0;
    *(volatile int *) zero = 1;
}

int main(int argc, char **argv)
{
    return fault_main(argc, argv, fault);
}
