#include "cli/output_files.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace migsched::cli {
namespace fs = std::filesystem;

namespace {

Status CheckOne(const std::string& flag, const std::string& path) {
  auto fail = [&](const std::string& what) {
    return InvalidArgumentError(fmt::format("{} {}: {}", flag, path, what));
  };
  std::error_code ec;
  const fs::path p(path);
  if (fs::is_directory(p, ec)) return fail("is a folder, not a file");
  const fs::path parent = p.parent_path();
  if (!parent.empty() && fs::exists(parent, ec) && !fs::is_directory(parent, ec)) {
    return fail(fmt::format("{} is a file, not a folder", parent.string()));
  }
  if (!parent.empty() && !fs::is_directory(parent, ec)) {
    fs::create_directories(parent, ec);
    if (ec) {
      return fail(fmt::format("cannot create the folder {}: {}", parent.string(), ec.message()));
    }
  }
  const bool existed = fs::exists(p, ec);
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
  if (fd < 0) return fail(fmt::format("cannot write: {}", std::strerror(errno)));
  close(fd);
  if (!existed) fs::remove(p, ec);
  return Status();
}

// Whether `a` and `b` name one file: the same file on disk where both exist (a hard or symbolic
// link too), else the same path once resolved.
bool SameFile(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) {
    const bool same = fs::equivalent(a, b, ec);
    if (!ec) return same;
  }
  const fs::path ca = fs::weakly_canonical(a, ec);
  if (ec) return false;
  const fs::path cb = fs::weakly_canonical(b, ec);
  return !ec && ca == cb;
}

}  // namespace

Status CheckOutputFiles(const std::vector<OutputFile>& outputs,
                        const std::vector<InputFile>& inputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const auto& [flag, path] = outputs[i];
    if (path.empty()) continue;
    for (size_t k = 0; k < i; ++k) {
      if (!outputs[k].second.empty() && SameFile(outputs[k].second, path)) {
        return InvalidArgumentError(
            fmt::format("{} {}: {} writes the same file", flag, path, outputs[k].first));
      }
    }
    for (const auto& [in_flag, in_path] : inputs) {
      if (!in_path.empty() && SameFile(in_path, path)) {
        return InvalidArgumentError(fmt::format(
            "{} {}: {} reads that file; an output would overwrite it", flag, path, in_flag));
      }
    }
    RETURN_IF_ERROR(CheckOne(flag, path));
  }
  return Status();
}

Status WriteOutputFile(const std::string& path, const std::function<Status(std::ostream&)>& write) {
  errno = 0;
  std::ofstream out(path, std::ios::binary);
  if (!out) {
    return InvalidArgumentError(
        fmt::format("cannot write {}: {}", path, std::strerror(errno != 0 ? errno : EIO)));
  }
  RETURN_IF_ERROR(write(out));
  errno = 0;
  out.close();
  if (!out) {
    return InvalidArgumentError(
        fmt::format("cannot write {}: {}", path, std::strerror(errno != 0 ? errno : EIO)));
  }
  return Status();
}

}  // namespace migsched::cli
