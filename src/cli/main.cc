#include "cli/main.h"

#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/commands.h"
#include "cli/context.h"

namespace migsched::cli {

int Main(int argc, char** argv) {
  Context ctx;
  ctx.out = &std::cout;
  ctx.err = &std::cerr;
  int exit_code = 0;

  CLI::App app{
      "migsched: a fragmentation-aware scheduler for NVIDIA Multi-Instance GPUs (MIG).\n"
      "Simulate placement policies on a workload, inspect MIG profiles and FragCost."};
  app.require_subcommand(1);
  app.fallthrough();  // global flags (--quiet, --catalog, ...) also after the subcommand
  app.add_option(
      "--catalog", ctx.extra_catalogs,
      "Extra GPU catalog file or folder (JSON, see docs/formats/catalog.md); repeatable");
  app.add_option("--data-dir", ctx.data_dir,
                 "Folder with the bundled data (gpus/, traces/). Default: $MIGSCHED_DATA_DIR, "
                 "else <prefix>/share/migsched of an installed binary, else the source tree of "
                 "a binary run from its build tree; `migsched profiles` says which was used");
  app.add_flag("-q,--quiet", ctx.quiet, "No progress output on stderr");
  app.add_flag("-v,--verbose", ctx.verbose,
               "Say on stderr which data folder and catalog files were loaded");
  app.set_version_flag("--version", "migsched 0.1.0");

  RegisterProfilesCommand(app, ctx, &exit_code);
  RegisterFragCommand(app, ctx, &exit_code);
  RegisterSimulateCommand(app, ctx, &exit_code);
  RegisterCompareCommand(app, ctx, &exit_code);
  RegisterSweepCommand(app, ctx, &exit_code);
  RegisterReportCommand(app, ctx, &exit_code);
  RegisterServeCommand(app, ctx, &exit_code);
  RegisterClientCommands(app, ctx, &exit_code);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every usage error exits 2 (docs/api.md), not CLI11's own codes.
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  return exit_code;
}

}  // namespace migsched::cli
