#include "cli/output_files.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
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
  // Absolute first: weakly_canonical resolves only the part of a path that exists, so a relative
  // path none of whose parts exists ("q.json") stayed relative, never equal to "./q.json".
  const fs::path ca = fs::weakly_canonical(fs::absolute(a, ec), ec);
  if (ec) return false;
  const fs::path cb = fs::weakly_canonical(fs::absolute(b, ec), ec);
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

namespace {

Status CannotWrite(const std::string& path, int error) {
  return InvalidArgumentError(
      fmt::format("cannot write {}: {}", path, std::strerror(error != 0 ? error : EIO)));
}

// Writes `path` itself: `write`, then close. On an error, a file this call created is removed
// (one that existed is left as the failed write left it: a device, a pipe, a file in a folder
// where no file beside it can be made).
Status WriteInPlace(const std::string& path, const std::function<Status(std::ostream&)>& write) {
  std::error_code ec;
  const bool existed = fs::exists(path, ec);
  errno = 0;
  std::ofstream out(path, std::ios::binary);
  if (!out) return CannotWrite(path, errno);
  Status st = write(out);
  if (st.ok()) {
    errno = 0;
    out.close();
    if (!out) st = CannotWrite(path, errno);
  }
  if (!st.ok() && !existed) {
    out.close();
    fs::remove(path, ec);
  }
  return st;
}

}  // namespace

Status WriteOutputFile(const std::string& path, const std::function<Status(std::ostream&)>& write) {
  // A regular file (or a new one) is written to a temporary file beside it, renamed over it once
  // complete: a write that fails leaves the file as it was (or absent), never empty or cut off.
  // A symbolic link's target is the file replaced (the link stays); a device, a pipe or a path
  // under /dev or /proc (/dev/stdout, /proc/self/fd/N: an open file) is written in place.
  if (path.rfind("/dev/", 0) == 0 || path.rfind("/proc/", 0) == 0) return WriteInPlace(path, write);
  std::error_code ec;
  fs::path target(path);
  if (fs::is_symlink(target, ec)) {
    const fs::path resolved = fs::weakly_canonical(target, ec);
    if (!ec) target = resolved;
  }
  const fs::file_status status = fs::status(target, ec);
  const bool exists = fs::exists(status);
  if (exists && !fs::is_regular_file(status)) return WriteInPlace(path, write);
  const fs::path dir = target.parent_path();
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    tmp =
        (dir / fmt::format(".{}.tmp{}-{}", target.filename().string(), getpid(), attempt)).string();
    fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  // No file can be made beside it (a folder the user may not write, where the file itself may
  // be written): in place.
  if (fd < 0) return WriteInPlace(path, write);
  // An existing file keeps its permissions.
  if (exists) fchmod(fd, static_cast<mode_t>(status.permissions() & fs::perms::mask));
  close(fd);
  auto discard = [&](Status st) {
    fs::remove(tmp, ec);
    return st;
  };
  errno = 0;
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  if (!out) return discard(CannotWrite(path, errno));
  Status st = write(out);
  if (!st.ok()) {
    out.close();
    return discard(st);
  }
  errno = 0;
  out.close();
  if (!out) return discard(CannotWrite(path, errno));
  if (std::rename(tmp.c_str(), target.c_str()) != 0) return discard(CannotWrite(path, errno));
  return Status();
}

}  // namespace migsched::cli
