// `migsched device-check` (device_check_command.cc): the hardware check of
// docs/mig-hardware.md §12 (scripts/device-check.sh), registered like the
// subcommands of cli/commands.h.
#ifndef MIGSCHED_CLI_DEVICE_CHECK_COMMAND_H_
#define MIGSCHED_CLI_DEVICE_CHECK_COMMAND_H_

#include <CLI/CLI.hpp>

#include "cli/context.h"

namespace migsched::cli {

void RegisterDeviceCheckCommand(CLI::App& app, Context& ctx, int* exit_code);

}  // namespace migsched::cli

#endif  // MIGSCHED_CLI_DEVICE_CHECK_COMMAND_H_
