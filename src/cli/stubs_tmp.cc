// TEMPORARY (written by the catalog/profiles engineer): no-op stand-ins for the
// subcommands other engineers are writing, so that the `migsched` binary links
// meanwhile. The lead deletes this file once frag/simulate/compare exist.
#include "cli/commands.h"

namespace migsched::cli {

void RegisterSimulateCommand(CLI::App&, Context&, int*) {}
void RegisterCompareCommand(CLI::App&, Context&, int*) {}

}  // namespace migsched::cli
