// Opening an input file (trace, pod list, catalog, saved output) with an error
// that says why it cannot be read, in the system's words.
//
// Thread-safety: reentrant.
#ifndef MIGSCHED_IO_INPUT_FILE_H_
#define MIGSCHED_IO_INPUT_FILE_H_

#include <fstream>
#include <string>
#include <string_view>

#include "core/status.h"

namespace migsched {

// Opens `path` for reading. `what` names the file's role in errors ("trace
// file", "Alibaba pod list"). Errors:
//   kNotFound         "{path}: cannot open {what}: No such file or directory"
//                     (the reason is strerror of the failed open: also
//                     "Permission denied", ...)
//   kInvalidArgument  "{path}: is a directory, not a {what}"
StatusOr<std::ifstream> OpenInputFile(const std::string& path, std::string_view what);

}  // namespace migsched

#endif  // MIGSCHED_IO_INPUT_FILE_H_
