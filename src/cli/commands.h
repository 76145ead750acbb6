// Subcommands of the migsched CLI. Each Register* adds one subcommand to the
// app; its callback writes results to ctx.out and errors to ctx.err and sets
// `*exit_code`.
#ifndef MIGSCHED_CLI_COMMANDS_H_
#define MIGSCHED_CLI_COMMANDS_H_

#include <CLI/CLI.hpp>

#include "cli/context.h"

namespace migsched::cli {

void RegisterProfilesCommand(CLI::App& app, Context& ctx, int* exit_code);  // profiles_command.cc
void RegisterFragCommand(CLI::App& app, Context& ctx, int* exit_code);      // frag_command.cc
void RegisterSimulateCommand(CLI::App& app, Context& ctx, int* exit_code);  // simulate_command.cc
void RegisterCompareCommand(CLI::App& app, Context& ctx, int* exit_code);   // compare_command.cc
void RegisterSweepCommand(CLI::App& app, Context& ctx, int* exit_code);     // sweep_command.cc
void RegisterReportCommand(CLI::App& app, Context& ctx, int* exit_code);    // report_command.cc
// The scheduler stress harness (sim/stress.h, scripts/stress.sh).
void RegisterStressCommand(CLI::App& app, Context& ctx, int* exit_code);  // stress_command.cc
// The daemon (docs/api.md).
void RegisterServeCommand(CLI::App& app, Context& ctx, int* exit_code);  // serve_command.cc
// submit, jobs, cancel, gpus, logs: clients of the daemon's API.
void RegisterClientCommands(CLI::App& app, Context& ctx, int* exit_code);  // client_commands.cc
// The Kubernetes integration (docs/kubernetes.md).
void RegisterK8sCommand(CLI::App& app, Context& ctx, int* exit_code);  // k8s_command.cc
// slurm config | controller | prolog | task-prolog | epilog (docs/slurm.md).
void RegisterSlurmCommand(CLI::App& app, Context& ctx, int* exit_code);  // slurm_command.cc

}  // namespace migsched::cli

#endif  // MIGSCHED_CLI_COMMANDS_H_
