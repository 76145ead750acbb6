// CommandRunner: how the Slurm adapter runs Slurm's commands (squeue,
// sinfo, scontrol). migsched never links libslurm (GPL): it drives Slurm
// through its commands, as an administrator would. Tests substitute a
// runner; the real one forks and execs.
//
// Thread-safety: SubprocessRunner is safe to call from several threads.
#ifndef MIGSCHED_SLURM_COMMAND_RUNNER_H_
#define MIGSCHED_SLURM_COMMAND_RUNNER_H_

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace migsched::slurm {

struct CommandResult {
  int exit_code = -1;  // 128+N when killed by signal N
  std::string out;     // stdout
  std::string err;     // stderr
};

class CommandRunner {
 public:
  virtual ~CommandRunner() = default;
  // Runs argv (argv[0] looked up in PATH, no shell), stdin /dev/null, and
  // waits at most `timeout_s` seconds (then SIGKILL). A command that ran and
  // exited non-zero is a result, not an error. kUnavailable when it could not
  // be started (not found, not executable) or timed out, naming the command.
  virtual StatusOr<CommandResult> Run(const std::vector<std::string>& argv, double timeout_s) = 0;
};

// fork + execvp. `bin_dir` non-empty: Slurm's commands (argv[0] without a
// '/') are run from that folder instead of PATH. Output is capped at 64 MiB
// per stream (the rest is dropped, the command still waited for).
std::unique_ptr<CommandRunner> NewSubprocessRunner(std::string bin_dir = "");

// "squeue --json" for messages: argv joined by spaces, words with spaces quoted.
std::string CommandLine(const std::vector<std::string>& argv);

}  // namespace migsched::slurm

#endif  // MIGSCHED_SLURM_COMMAND_RUNNER_H_
