/* abort() in one rank: SIGABRT names the virtual rank (see fault_common.h). */
#include "fault_common.h"
#include <stdlib.h>

static void fault(void)
{
    abort();
}

int main(int argc, char **argv)
{
    return fault_main(argc, argv, fault);
}
