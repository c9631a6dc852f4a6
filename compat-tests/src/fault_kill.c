/* One process is killed by SIGKILL (as the kernel's out-of-memory killer or `kill -9` would),
 * while the other ranks wait in a barrier: the job must end at once instead of hanging. A
 * killed process cannot report anything; the launcher names its pid and the signal (see
 * fault_common.h; Toucan only, see .expect). */
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
