#include "io/input_file.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace migsched {

StatusOr<std::ifstream> OpenInputFile(const std::string& path, std::string_view what) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    return NotFoundError(fmt::format("{}: cannot open {}: {}", path, what, std::strerror(errno)));
  }
  if (S_ISDIR(st.st_mode)) {
    return InvalidArgumentError(fmt::format("{}: is a directory, not a {}", path, what));
  }
  errno = 0;
  std::ifstream in(path);
  if (!in) {
    const int err = errno != 0 ? errno : EACCES;
    return NotFoundError(fmt::format("{}: cannot open {}: {}", path, what, std::strerror(err)));
  }
  return in;
}

}  // namespace migsched
