/* SIGINT sent to the launcher while ranks compute and wait (see fault_signal_launcher.h). */
#include "fault_signal_launcher.h"

int main(int argc, char **argv)
{
    return fault_signal_launcher_main(argc, argv, SIGINT);
}
