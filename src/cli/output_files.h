// Output files of the CLI (--json, --report, --jobs-csv, --timeline-csv,
// --export-workload, -o): checked before any work is done, and written with
// errors that give the system's reason.
#ifndef MIGSCHED_CLI_OUTPUT_FILES_H_
#define MIGSCHED_CLI_OUTPUT_FILES_H_

#include <functional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace migsched::cli {

// (flag, path) of one output; an empty path is "not asked for".
using OutputFile = std::pair<std::string, std::string>;
// (flag, path) of one file the command reads (--workload, --catalog, --from); empty: none.
using InputFile = std::pair<std::string, std::string>;

// Makes sure every output can be written, before a run spends any time:
// missing parent folders are created; the path must not be a folder, and the
// file must open for writing (an existing file is not truncated here; a file
// this check had to create is removed again); two flags may not name the same
// file, nor may an output name a file of `inputs` (the run would overwrite what
// the user gave it: the same path, or another name of the same file).
// kInvalidArgument naming the flag, the path and the system's reason,
// e.g. "--json /proc/x/run.json: cannot create the folder /proc/x: No such
// file or directory", "--report out: is a folder, not a file",
// "--json t.csv: --workload reads that file; an output would overwrite it".
Status CheckOutputFiles(const std::vector<OutputFile>& outputs,
                        const std::vector<InputFile>& inputs = {});

// Writes `path` with `write` and closes it: through a temporary file beside
// it, renamed over it when complete, so that a write that fails leaves no
// partial or empty file, and an existing file as it was (a symbolic link's
// target is written and the link kept; a device, a pipe or a path under /dev
// or /proc is written in place, and where no file can be made beside it
// too, then a file this call created is removed on failure). kInvalidArgument with
// the system's reason when it cannot be opened or written ("cannot write
// out/run.json: No space left on device"); the error of `write` as it is.
Status WriteOutputFile(const std::string& path, const std::function<Status(std::ostream&)>& write);

}  // namespace migsched::cli

#endif  // MIGSCHED_CLI_OUTPUT_FILES_H_
