// Entry point of the `migsched` command-line tool.
#ifndef MIGSCHED_CLI_MAIN_H_
#define MIGSCHED_CLI_MAIN_H_

namespace migsched::cli {

// Parses argv, runs the chosen subcommand, returns the process exit code:
// 0 success, 1 a runtime error (bad input file, invalid instance list, ...),
// 2 bad command-line usage (CLI11's own code for parse errors is kept).
int Main(int argc, char** argv);

}  // namespace migsched::cli

#endif  // MIGSCHED_CLI_MAIN_H_
