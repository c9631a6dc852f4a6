/* One process is killed by SIGKILL (as the kernel's out-of-memory killer or `kill -9` would),
 * while the other ranks wait in a barrier: the job must end at once instead of hanging, with
 * a line naming the killed process's virtual ranks and the signal (a killed process cannot
 * speak: its sentinel does, see .expect; fault_common.h; Toucan only). */
#include <signal.h>
#include <unistd.h>
#include "fault_common.h"

static void fault(void)
{
    kill(getpid(), SIGKILL);
}

int main(int argc, char **argv)
{
    return fault_main(argc, argv, fault);
}
