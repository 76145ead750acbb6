#include "daemon/state_dir.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <string_view>

namespace migsched {

Status StateDir::CheckPrivateFile(const std::filesystem::path& file, const std::string& what) {
  struct stat st;
  if (::stat(file.c_str(), &st) != 0) return Status();  // not there (yet)
  if (OpenToOthers(st.st_mode)) {
    return FailedPreconditionError(
        fmt::format("{} {} has mode {:04o}: group or others may read it; run chmod 600 {}", what,
                    file.string(), st.st_mode & 07777, file.string()));
  }
  return Status();
}

StatusOr<std::unique_ptr<StateDir>> StateDir::Open(const std::filesystem::path& path) {
  if (path.empty()) return InvalidArgumentError("state_dir is required");
  const std::string p = path.string();
  struct stat st;
  if (::stat(p.c_str(), &st) != 0) {
    if (errno != ENOENT) {
      return FailedPreconditionError(fmt::format("state_dir {}: {}", p, std::strerror(errno)));
    }
    std::error_code ec;
    if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
    if (::mkdir(p.c_str(), 0700) != 0 && errno != EEXIST) {
      return FailedPreconditionError(
          fmt::format("cannot create state_dir {}: {}", p, std::strerror(errno)));
    }
    if (::stat(p.c_str(), &st) != 0) {
      return FailedPreconditionError(fmt::format("state_dir {}: {}", p, std::strerror(errno)));
    }
  }
  if (!S_ISDIR(st.st_mode)) {
    return FailedPreconditionError(fmt::format("state_dir {} is not a directory", p));
  }
  // A folder the system shares (/, /tmp, /var, ...): the checks below would tell the operator to
  // chmod 700 or chown it, which breaks the host. The daemon needs a folder of its own.
  {
    static constexpr std::string_view kSystem[] = {
        "/bin", "/boot", "/dev",  "/etc",     "/home",    "/lib",     "/lib64",  "/media",
        "/mnt", "/opt",  "/proc", "/root",    "/run",     "/sbin",    "/srv",    "/sys",
        "/tmp", "/usr",  "/var",  "/var/lib", "/var/tmp", "/var/run", "/var/log"};
    std::error_code ec;
    const std::string canonical = std::filesystem::weakly_canonical(path, ec).string();
    const bool system =
        canonical == "/" ||
        std::find(std::begin(kSystem), std::end(kSystem), canonical) != std::end(kSystem) ||
        (st.st_mode & S_ISVTX) != 0;  // sticky: shared by every user, as /tmp
    if (system) {
      return FailedPreconditionError(fmt::format(
          "state_dir {} is a folder the system shares; give the daemon a folder of its own "
          "(e.g. /var/lib/migsched, which it creates with mode 0700)",
          p));
    }
  }
  if (st.st_uid != ::geteuid()) {
    return FailedPreconditionError(fmt::format(
        "state_dir {} is owned by uid {}, not by the daemon's user (uid {}); run chown {} {}", p,
        st.st_uid, ::geteuid(), ::geteuid(), p));
  }
  if (OpenToOthers(st.st_mode)) {
    return FailedPreconditionError(
        fmt::format("state_dir {} has mode {:04o}: group or others may read it (job logs, the "
                    "database, the token); run chmod 700 {}",
                    p, st.st_mode & 07777, p));
  }
  RETURN_IF_ERROR(CheckPrivateFile(path / "migsched.db", "database"));
  RETURN_IF_ERROR(CheckPrivateFile(path / "migsched.db-wal", "database"));
  const int dir_fd = ::open(p.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) {
    return FailedPreconditionError(fmt::format("state_dir {}: {}", p, std::strerror(errno)));
  }
  // One daemon per state dir: two would run each job twice. An exclusive
  // flock (close-on-exec, so jobs never inherit it; the kernel drops it when
  // the daemon dies, kill -9 included).
  const std::string lock_path = (path / "lock").string();
  const int lock_fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock_fd < 0) {
    const int err = errno;
    ::close(dir_fd);
    return FailedPreconditionError(
        fmt::format("cannot open {}: {}", lock_path, std::strerror(err)));
  }
  if (::flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char buf[32] = {};
    const ssize_t n = ::pread(lock_fd, buf, sizeof(buf) - 1, 0);
    const std::string owner = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "?";
    ::close(lock_fd);
    ::close(dir_fd);
    if (err == EWOULDBLOCK) {
      return FailedPreconditionError(fmt::format(
          "state_dir {} is in use by another migsched serve (pid {}): one daemon per state dir", p,
          owner));
    }
    return FailedPreconditionError(
        fmt::format("cannot lock {}: {}", lock_path, std::strerror(err)));
  }
  const std::string pid = std::to_string(::getpid());
  if (::ftruncate(lock_fd, 0) != 0 || ::pwrite(lock_fd, pid.data(), pid.size(), 0) < 0) {
    spdlog::warn("cannot write the pid into {}: {}", lock_path, std::strerror(errno));
  }
  return std::unique_ptr<StateDir>(new StateDir(path, dir_fd, lock_fd, st.st_dev, st.st_ino));
}

Status StateDir::ClaimWorkDir(const std::filesystem::path& work_dir) {
  std::error_code ec;
  std::filesystem::create_directories(work_dir, ec);
  if (ec) {
    return FailedPreconditionError(
        fmt::format("work_dir {}: cannot create it: {}", work_dir.string(), ec.message()));
  }
  ::chmod(work_dir.c_str(), 0711);  // traversable to reach one's own dir, not listable
  const std::string owner_path = (work_dir / ".migsched-owner").string();
  const int fd = ::open(owner_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    return FailedPreconditionError(
        fmt::format("cannot open {}: {}", owner_path, std::strerror(errno)));
  }
  char buf[4096] = {};
  const ssize_t n = ::pread(fd, buf, sizeof(buf) - 1, 0);
  const std::string text = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  // "<state dir>\n<pid>\n": whose job directories these are, and which daemon holds them.
  const std::string owner_dir = text.substr(0, text.find('\n'));
  const std::string owner_pid =
      text.find('\n') == std::string::npos ? "?" : text.substr(text.find('\n') + 1);
  const std::string mine = std::filesystem::weakly_canonical(path_, ec).string();
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd);
    if (err == EWOULDBLOCK) {
      return FailedPreconditionError(fmt::format(
          "work_dir {} is in use by another migsched serve (pid {}, state_dir {}): each daemon "
          "needs its own work_dir (two would hand each other's job directories to their jobs)",
          work_dir.string(), owner_pid.substr(0, owner_pid.find('\n')),
          owner_dir.empty() ? "?" : owner_dir));
    }
    return FailedPreconditionError(
        fmt::format("cannot lock {}: {}", owner_path, std::strerror(err)));
  }
  if (!owner_dir.empty() && owner_dir != mine) {
    ::close(fd);
    return FailedPreconditionError(fmt::format(
        "work_dir {} holds the job directories of state_dir {}, not of {}: give this daemon a "
        "work_dir of its own (or, if {} is gone for good, remove {})",
        work_dir.string(), owner_dir, mine, owner_dir, owner_path));
  }
  const std::string record = mine + "\n" + std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, record.data(), record.size(), 0) < 0) {
    spdlog::warn("cannot write {}: {}", owner_path, std::strerror(errno));
  }
  if (work_lock_fd_ >= 0) ::close(work_lock_fd_);
  work_lock_fd_ = fd;
  return Status();
}

StateDir::~StateDir() {
  if (work_lock_fd_ >= 0) ::close(work_lock_fd_);
  if (lock_fd_ >= 0) ::close(lock_fd_);
  if (dir_fd_ >= 0) ::close(dir_fd_);
}

Status StateDir::Check() const {
  struct stat opened;
  if (::fstat(dir_fd_, &opened) != 0) {
    return UnavailableError(fmt::format("state_dir {}: {}", path_.string(), std::strerror(errno)));
  }
  if (opened.st_nlink == 0) {
    return UnavailableError(fmt::format(
        "state_dir {} was deleted while the daemon runs: nothing can be stored; restore it and "
        "restart the daemon",
        path_.string()));
  }
  struct stat now;
  if (::stat(path_.c_str(), &now) != 0 || now.st_dev != dev_ || now.st_ino != ino_) {
    return UnavailableError(fmt::format(
        "state_dir {} was moved or replaced while the daemon runs: nothing can be stored; "
        "restart the daemon",
        path_.string()));
  }
  return Status();
}

}  // namespace migsched
