/* An illegal instruction in one rank: SIGILL names the virtual rank (see fault_common.h). */
#include "fault_common.h"

static void fault(void)
{
    __builtin_trap();
}

int main(int argc, char **argv)
{
    return fault_main(argc, argv, fault);
}
