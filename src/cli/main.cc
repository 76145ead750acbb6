#include "cli/main.h"

#include <CLI/CLI.hpp>
#include <iostream>
#include <string>
#include <string_view>

#include "cli/commands.h"
#include "cli/context.h"
#include "cli/device_check_command.h"

namespace migsched::cli {
namespace {

// The first argument that is neither an option nor the value of a global
// option taking one (--catalog, --data-dir); "" if none.
std::string FirstWord(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--catalog" || a == "--data-dir") {
      ++i;
      continue;
    }
    if (!a.empty() && a[0] != '-') return a;
  }
  return "";
}

bool IsCommand(CLI::App& app, const std::string& name) {
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->check_name(name)) return true;
  }
  return false;
}

}  // namespace

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
  RegisterStressCommand(app, ctx, &exit_code);
  RegisterServeCommand(app, ctx, &exit_code);
  RegisterClientCommands(app, ctx, &exit_code);
  RegisterK8sCommand(app, ctx, &exit_code);
  RegisterSlurmCommand(app, ctx, &exit_code);
  RegisterDeviceCheckCommand(app, ctx, &exit_code);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // A first word that is no command: say so, with the commands (CLI11 would
    // say "A subcommand is required").
    if (app.get_subcommands().empty()) {
      if (const std::string word = FirstWord(argc, argv); !word.empty() && !IsCommand(app, word)) {
        std::string commands;
        for (const CLI::App* sub : app.get_subcommands({})) {
          commands += (commands.empty() ? "" : ", ") + sub->get_name();
        }
        std::cerr << "migsched: unknown command '" << word << "' (commands: " << commands
                  << "; migsched --help)\n";
        return 2;
      }
    }
    // --help and --version exit 0; every usage error exits 2 (docs/api.md), not CLI11's own codes.
    const int code = app.exit(e);
    // submit's own command must come after "--" (else its options look like
    // ours, and a missing command is all CLI11 can say). Not after a value its
    // flag's check refused (--count 99999999999999999999): that message says all.
    const auto parsed = app.get_subcommands();
    const bool refused_value = dynamic_cast<const CLI::ValidationError*>(&e) != nullptr;
    // Nor when "--" is there already: then the error is an option of ours before it (a trial's
    // `submit --profile 1g.5gb --bogus -- true` was told the command goes after --).
    bool has_separator = false;
    for (int i = 1; i < argc; ++i)
      has_separator = has_separator || std::string_view(argv[i]) == "--";
    if (code != 0 && !refused_value && !has_separator && !parsed.empty() &&
        parsed.front()->get_name() == "submit") {
      std::cerr << "migsched submit: the job's command goes after --, e.g. migsched submit "
                   "--profile 2g.10gb -- python train.py --epochs 3\n";
    }
    return code == 0 ? 0 : 2;
  }
  return exit_code;
}

}  // namespace migsched::cli
