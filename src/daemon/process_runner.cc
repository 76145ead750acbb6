#include "daemon/process_runner.h"

#include <errno.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <utility>

namespace migsched {
namespace {

// A message from the monitor or the command process to the daemon.
struct PipeMsg {
  // 'P' command pid, 'C' chdir failed, 'X' execve failed, 'F' fork failed,
  // 'U' setuid/setgid/setgroups failed, 'L' the run lock is held by another run
  char tag = 0;
  int32_t err = 0;
  int64_t pid = 0;
};

void WriteMsg(int fd, char tag, int err, int64_t pid) {
  PipeMsg m;
  m.tag = tag;
  m.err = err;
  m.pid = pid;
  ssize_t n;
  do {
    n = write(fd, &m, sizeof(m));
  } while (n < 0 && errno == EINTR);
}

int CodeOfWaitStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 255;
}

// The exit file's code: the exit status 0..255, or kSignalledBase + N for a command killed by
// signal N, so that an exit status above 128 (`exit 200`) is not read as a signal (regression:
// exit_status_above_128_read_as_a_signal). Files written before it hold 128 + N for a signal.
constexpr int kSignalledBase = 256;
int FileCodeOfWaitStatus(int status) {
  if (WIFSIGNALED(status)) return kSignalledBase + WTERMSIG(status);
  return CodeOfWaitStatus(status);
}

// An exit file's code as (exit code 0..255 with 128 + N for signal N, whether a signal), or none
// for a code no file holds.
std::optional<std::pair<int, bool>> DecodeFileCode(int64_t code) {
  if (code >= 0 && code <= 255) return std::pair<int, bool>{static_cast<int>(code), false};
  if (code > kSignalledBase && code < kSignalledBase + 128) {
    return std::pair<int, bool>{static_cast<int>(128 + code - kSignalledBase), true};
  }
  return std::nullopt;
}

// Async-signal-safe: appends the decimal digits of `v` to buf[*n].
void AppendDecimal(char* buf, int* n, int64_t v) {
  char digits[24];
  int d = 0;
  uint64_t u = v < 0 ? 0 : static_cast<uint64_t>(v);
  do {
    digits[d++] = static_cast<char>('0' + u % 10);
    u /= 10;
  } while (u != 0);
  while (d > 0) buf[(*n)++] = digits[--d];
}

// The bytes an exit file may take: "<code> <attempt> <tag>\n" (AppendDecimal of an int: at most
// 11 characters each).
constexpr size_t kExitFileBytes = 32 + ProcessRunner::kMaxRunTag;

// Async-signal-safe: creates `tmp` and fills it with kExitFileBytes placeholder bytes, synced,
// while the disk still has room (at the launch): the exit status is later written over these
// blocks, so a disk that fills up while the job runs cannot cost it. -1 (errno set) when it
// cannot; the exit file is then written anew at the end.
int ReserveExitFile(const char* tmp) {
  const int fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return -1;
  char blank[kExitFileBytes];
  memset(blank, ' ', sizeof(blank));
  ssize_t w;
  do {
    w = pwrite(fd, blank, sizeof(blank), 0);
  } while (w < 0 && errno == EINTR);
  if (w != static_cast<ssize_t>(sizeof(blank)) || fsync(fd) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Async-signal-safe: writes `buf` as the whole content of the open file `fd`, synced.
bool WriteWhole(int fd, const char* buf, int n) {
  ssize_t w;
  do {
    w = pwrite(fd, buf, n, 0);
  } while (w < 0 && errno == EINTR);
  return w == n && ftruncate(fd, n) == 0 && fsync(fd) == 0;
}

// Async-signal-safe: writes "<code> <attempt>[ <tag>]\n" to `tmp` (over its reserved bytes when
// `reserved_fd` >= 0, which it closes), fsyncs it and renames it to `path`. `tag` (at most
// ProcessRunner::kMaxRunTag characters) may be empty. A write that fails (a full disk, and no
// reserved file) is tried again every second for up to an hour, the run lock still held, so a
// daemon restarted meanwhile waits for the status instead of finding an empty file ("process
// lost"); only then is the file left as it is.
void WriteExitFile(int reserved_fd, const char* tmp, const char* path, int code, int attempt,
                   const char* tag) {
  char buf[kExitFileBytes];
  int n = 0;
  AppendDecimal(buf, &n, code);
  buf[n++] = ' ';
  AppendDecimal(buf, &n, attempt);
  if (tag[0] != '\0') {
    buf[n++] = ' ';
    for (size_t i = 0; tag[i] != '\0' && i < ProcessRunner::kMaxRunTag; ++i) buf[n++] = tag[i];
  }
  buf[n++] = '\n';
  int fd = reserved_fd;
  constexpr int kTries = 3600;
  for (int tried = 0; tried < kTries; ++tried) {
    if (fd < 0) fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    const bool written = fd >= 0 && WriteWhole(fd, buf, n);
    if (fd >= 0) close(fd);
    fd = -1;
    if (written && rename(tmp, path) == 0) return;
    struct timespec second = {1, 0};
    while (nanosleep(&second, &second) != 0 && errno == EINTR) {
    }
  }
}

// Async-signal-safe: opens `path` and takes an OFD write lock on it (held
// until the last descriptor of that open file closes, i.e. until the monitor
// exits), then writes "<pid> <attempt>\n". -1 if the lock is held elsewhere
// (errno EAGAIN) or the file cannot be opened.
int TakeRunLock(const char* path, int64_t pid, int attempt) {
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return -1;
  struct flock fl;
  memset(&fl, 0, sizeof(fl));
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  if (fcntl(fd, F_OFD_SETLK, &fl) != 0) {
    const int err = errno;
    close(fd);
    errno = err;
    return -1;
  }
  char buf[48];
  int n = 0;
  AppendDecimal(buf, &n, pid);
  buf[n++] = ' ';
  AppendDecimal(buf, &n, attempt);
  buf[n++] = '\n';
  if (ftruncate(fd, 0) == 0) {
    ssize_t w;
    do {
      w = pwrite(fd, buf, n, 0);
    } while (w < 0 && errno == EINTR);
  }
  return fd;
}

// "<a> <b>" (or "<a>" alone: b = -1) from the first line of `path`.
std::optional<std::pair<int64_t, int64_t>> ReadPair(const std::filesystem::path& path) {
  std::ifstream in(path);
  int64_t a = 0;
  if (!(in >> a)) return std::nullopt;
  int64_t b = -1;
  if (!(in >> b)) b = -1;
  return std::make_pair(a, b);
}

// An exit file: "<code> <attempt>[ <tag>]".
struct ExitRecord {
  int64_t code = 0;
  int64_t attempt = -1;  // -1: not given
  std::string tag;       // empty: not given (written before tags existed)
};
std::optional<ExitRecord> ReadExit(const std::filesystem::path& path) {
  std::ifstream in(path);
  ExitRecord e;
  if (!(in >> e.code)) return std::nullopt;
  if (!(in >> e.attempt)) {
    e.attempt = -1;
    return e;
  }
  if (!(in >> e.tag)) e.tag.clear();
  return e;
}

// Whether some process holds the run lock of `run_path` (F_OFD_GETLK: tests
// without taking it).
bool RunLockHeld(const std::filesystem::path& run_path) {
  const int fd = open(run_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct flock fl;
  memset(&fl, 0, sizeof(fl));
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  const bool held = fcntl(fd, F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
  close(fd);
  return held;
}

// Async-signal-safe: closes every descriptor >= 3 except a, b and c.
void CloseAllExcept(int a, int b, int c, int fd_limit) {
  int keep[3] = {a, b, c};
  std::sort(keep, keep + 3);
  unsigned lo = 3;
  bool ok = true;
  for (int k : keep) {
    if (k < static_cast<int>(lo)) continue;
    if (k > static_cast<int>(lo)) ok = ok && close_range(lo, k - 1, 0) == 0;
    lo = k + 1;
  }
  ok = ok && close_range(lo, ~0U, 0) == 0;
  if (ok) return;
  for (int fd = 3; fd < fd_limit; ++fd) {  // no close_range (old kernel)
    if (fd != a && fd != b && fd != c) close(fd);
  }
}

// State letter of /proc/<pid>/stat ('R', 'S', 'Z', ...), or 0 when unreadable.
char ProcState(int64_t pid) {
  const std::string all =
      ReadProcFile("/proc/" + std::to_string(pid) + "/stat").value_or(std::string());
  const size_t paren = all.rfind(')');
  if (paren == std::string::npos || all.size() < paren + 3) return 0;
  return all[paren + 2];
}

// Alive and not a zombie: after a daemon restart the monitor is no longer
// our child, and an init that is slow to reap would leave it a zombie.
bool ProcessAlive(int64_t pid) {
  if (kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return false;
  const char state = ProcState(pid);
  return state != 'Z' && state != 'X';  // 0: /proc unreadable, trust kill()
}

bool IsExecutableFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

// A command that does not exist (exit code 127) or cannot be executed (126): the reason tells
// them apart (ExitCodeOf), the message names the command.
Status CommandNotFound(const std::string& command) {
  return Status(StatusCode::kNotFound, fmt::format("command not found: '{}'", command),
                StatusReason::kCommandNotFound);
}
Status NotExecutable(const std::string& command, const std::string& why = "") {
  return Status(StatusCode::kFailedPrecondition,
                why.empty() ? fmt::format("not executable: '{}'", command)
                            : fmt::format("not executable: '{}': {}", command, why),
                StatusReason::kNotExecutable);
}

// Resolves argv[0] like execvp would (without the sh fallback).
StatusOr<std::string> ResolveCommand(const std::string& argv0, const std::string& cwd,
                                     const std::string& path_var) {
  if (argv0.find('/') != std::string::npos) {
    std::string p = argv0[0] == '/' ? argv0 : cwd + "/" + argv0;
    if (!Exists(p)) return CommandNotFound(argv0);
    if (!IsExecutableFile(p)) return NotExecutable(argv0);
    return p;
  }
  std::string not_exec;
  std::stringstream ss(path_var);
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    if (dir.empty()) dir = ".";
    std::string p = dir + "/" + argv0;
    if (dir[0] != '/') p = cwd + "/" + p;
    if (IsExecutableFile(p)) return p;
    if (not_exec.empty() && Exists(p)) not_exec = p;
  }
  if (!not_exec.empty()) return NotExecutable(not_exec);
  return CommandNotFound(argv0);
}

void AppendToLog(const std::filesystem::path& log, const std::string& line) {
  const int fd = open(log.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return;
  const std::string text = "migsched: " + line + "\n";
  ssize_t w;
  do {
    w = write(fd, text.data(), text.size());
  } while (w < 0 && errno == EINTR);
  close(fd);
}

// The parts of the daemon's environment a job gets (the rest may be secrets).
constexpr const char* kPassedEnv[] = {"PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ"};

}  // namespace

StatusOr<RunAsUser> LookUpUser(const std::string& name) {
  if (name.empty()) return InvalidArgumentError("empty user name");
  struct passwd pw;
  struct passwd* found = nullptr;
  std::vector<char> buf(16384);
  int rc = getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &found);
  if ((rc != 0 || found == nullptr) && name.find_first_not_of("0123456789") == std::string::npos) {
    rc = getpwuid_r(static_cast<uid_t>(std::stoul(name)), &pw, buf.data(), buf.size(), &found);
  }
  if (rc != 0 || found == nullptr) {
    return InvalidArgumentError(fmt::format("unknown user '{}'", name));
  }
  RunAsUser u;
  u.name = pw.pw_name;
  u.uid = pw.pw_uid;
  u.gid = pw.pw_gid;
  u.home = pw.pw_dir != nullptr ? pw.pw_dir : "/";
  u.shell = pw.pw_shell != nullptr ? pw.pw_shell : "/bin/sh";
  int n = 32;
  std::vector<gid_t> groups(static_cast<size_t>(n));
  while (getgrouplist(u.name.c_str(), u.gid, groups.data(), &n) < 0) {
    groups.resize(static_cast<size_t>(n) + 32);
    n = static_cast<int>(groups.size());
  }
  groups.resize(static_cast<size_t>(n));
  u.groups = std::move(groups);
  return u;
}

RunAsUser DaemonUser() {
  StatusOr<RunAsUser> u = LookUpUser(std::to_string(geteuid()));
  if (u.ok()) return *u;
  RunAsUser fallback;
  fallback.name = std::to_string(geteuid());
  fallback.uid = geteuid();
  fallback.gid = getegid();
  fallback.home = "/";
  fallback.shell = "/bin/sh";
  return fallback;
}

Status CheckReachable(const std::filesystem::path& dir, const RunAsUser& user) {
  if (user.uid == 0) return Status();
  std::error_code ec;
  const std::filesystem::path abs = std::filesystem::absolute(dir, ec);
  std::filesystem::path at = "/";
  for (const auto& part : abs.relative_path()) {
    struct stat st;
    if (::stat(at.c_str(), &st) != 0) break;  // does not exist yet: created by the daemon
    bool x = (st.st_mode & S_IXOTH) != 0;
    if (st.st_uid == user.uid) {
      x = (st.st_mode & S_IXUSR) != 0;
    } else if (st.st_gid == user.gid ||
               std::find(user.groups.begin(), user.groups.end(), st.st_gid) != user.groups.end()) {
      x = (st.st_mode & S_IXGRP) != 0;
    }
    if (!x) {
      return FailedPreconditionError(fmt::format(
          "jobs run as {} start in {}/<job id>, but {} (mode {:04o}, owner uid {}) does not let "
          "{} through; run chmod o+x {} (or set work_dir elsewhere)",
          user.name, abs.string(), at.string(), st.st_mode & 07777, st.st_uid, user.name,
          at.string()));
    }
    at /= part;
  }
  return Status();
}

ProcessRunner::ProcessRunner(std::filesystem::path state_dir, std::filesystem::path work_dir)
    : state_dir_(std::move(state_dir)), work_dir_(std::move(work_dir)) {}

void ProcessRunner::SetRunTag(std::string tag, DaemonJobId untagged_below) {
  if (tag.size() > kMaxRunTag) tag.resize(kMaxRunTag);
  run_tag_ = std::move(tag);
  untagged_below_ = untagged_below;
}

bool ProcessRunner::ExitBelongsTo(DaemonJobId job, const std::string& tag) const {
  if (tag.empty()) return job < untagged_below_;
  return tag == run_tag_;
}

std::filesystem::path ProcessRunner::JobDir(DaemonJobId job) const {
  return state_dir_ / "jobs" / std::to_string(job);
}
std::filesystem::path ProcessRunner::LogPath(DaemonJobId job) const { return JobDir(job) / "log"; }
std::filesystem::path ProcessRunner::ExitPath(DaemonJobId job) const {
  return JobDir(job) / "exit";
}
std::filesystem::path ProcessRunner::WorkDir(DaemonJobId job) const {
  return work_dir_ / std::to_string(job);
}

int ProcessRunner::ExitCodeOf(const Status& launch_error) {
  if (launch_error.reason() == StatusReason::kCommandNotFound) return 127;
  if (launch_error.reason() == StatusReason::kNotExecutable) return 126;
  return -1;
}

StatusOr<Launched> ProcessRunner::Launch(const LaunchSpec& spec) {
  return Spawn(spec, ExitPath(spec.job), /*take_run_lock=*/true);
}

StatusOr<Launched> ProcessRunner::LaunchHelper(const LaunchSpec& spec) {
  return Spawn(spec, JobDir(spec.job) / "helper-exit", /*take_run_lock=*/false);
}

StatusOr<Launched> ProcessRunner::Spawn(const LaunchSpec& spec,
                                        const std::filesystem::path& exit_path,
                                        bool take_run_lock) {
  if (spec.argv.empty()) return InvalidArgumentError("empty command");
  const std::filesystem::path dir = JobDir(spec.job);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return InternalError(fmt::format("job directory {}: {}", dir.string(), ec.message()));
  }
  ::chmod(dir.c_str(), 0700);
  const std::filesystem::path log = LogPath(spec.job);
  const RunAsUser user = spec.user.name.empty() ? DaemonUser() : spec.user;
  // The default working directory: the job's own, owned by its user.
  std::string cwd = spec.cwd;
  if (cwd.empty()) {
    const std::filesystem::path work = WorkDir(spec.job);
    std::filesystem::create_directories(work_dir_, ec);
    ::chmod(work_dir_.c_str(), 0711);  // traversable to reach one's own dir, not listable
    if (::mkdir(work.c_str(), 0700) != 0 && errno != EEXIST) {
      const Status st = InternalError(
          fmt::format("working directory {}: {}", work.string(), std::strerror(errno)));
      AppendToLog(log, st.message());
      return st;
    }
    if (::chown(work.c_str(), user.uid, user.gid) != 0 && geteuid() == 0) {
      const Status st = InternalError(fmt::format("working directory {}: chown to {}: {}",
                                                  work.string(), user.name, std::strerror(errno)));
      AppendToLog(log, st.message());
      return st;
    }
    cwd = work.string();
  }

  // The environment: a few of the daemon's variables, the user's, the job's, then ours.
  std::map<std::string, std::string> env;
  for (const char* name : kPassedEnv) {
    if (const char* v = getenv(name); v != nullptr) env[name] = v;
  }
  if (!env.count("PATH")) env["PATH"] = "/usr/local/bin:/usr/bin:/bin";
  env["HOME"] = user.home;
  env["USER"] = user.name;
  env["LOGNAME"] = user.name;
  env["SHELL"] = user.shell;
  for (const auto& [k, v] : spec.env) env[k] = v;
  std::string devices;
  for (const std::string& u : spec.mig_uuids) devices += (devices.empty() ? "" : ",") + u;
  env["CUDA_VISIBLE_DEVICES"] = devices;
  env["MIGSCHED_JOB_ID"] = std::to_string(spec.job);
  // Ours, after the request's env: how KillLeftoversOf knows this job's processes when the
  // request set HOME (regression: home_in_the_request_escaped_the_end_of_job_cleanup).
  env["MIGSCHED_JOB_DIR"] = WorkDir(spec.job).string();
  env["MIGSCHED_RUN"] = std::to_string(spec.attempt);
  if (spec.restarted) {
    env["MIGSCHED_RESTARTED"] = "1";
  } else {
    env.erase("MIGSCHED_RESTARTED");
  }
  for (const auto& [k, v] : spec.extra_env) env[k] = v;

  StatusOr<std::string> path = ResolveCommand(spec.argv[0], cwd, env["PATH"]);
  if (!path.ok()) {
    AppendToLog(log, path.status().message());
    return path.status();
  }
  struct stat cwd_st;
  Status cwd_error;
  if (stat(cwd.c_str(), &cwd_st) != 0) {
    cwd_error = FailedPreconditionError(
        fmt::format("working directory '{}': {}", cwd, std::strerror(errno)));
  } else if (!S_ISDIR(cwd_st.st_mode)) {
    cwd_error =
        FailedPreconditionError(fmt::format("working directory '{}': not a directory", cwd));
  }
  if (!cwd_error.ok()) {
    AppendToLog(log, cwd_error.message());
    return cwd_error;
  }

  // Everything the children need, prepared before fork.
  std::vector<std::string> env_strs;
  for (const auto& [k, v] : env) env_strs.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (std::string& e : env_strs) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_strs = spec.argv;
  std::vector<char*> argv;
  for (std::string& a : argv_strs) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string exit_str = exit_path.string();
  const std::string exit_tmp = exit_str + ".tmp";
  const std::string run_str = (dir / "run").string();
  const std::string tag = run_tag_;
  const int attempt = spec.attempt;
  const bool switch_user = geteuid() == 0 && (user.uid != 0 || user.gid != 0);
  const std::vector<gid_t> groups = user.groups;
  const uid_t uid = user.uid;
  const gid_t gid = user.gid;
  std::filesystem::remove(exit_path, ec);

  int log_fd = open(log.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (log_fd < 0) {
    return InternalError(fmt::format("job log {}: {}", log.string(), std::strerror(errno)));
  }
  int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  int fds[2];
  if (null_fd < 0 || pipe2(fds, O_CLOEXEC) != 0) {
    const int err = errno;
    close(log_fd);
    if (null_fd >= 0) close(null_fd);
    return InternalError(fmt::format("launching job {}: {}", spec.job, std::strerror(err)));
  }
  const int fd_limit = static_cast<int>(std::min<long>(sysconf(_SC_OPEN_MAX), 1 << 16));
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  const pid_t monitor = fork();
  if (monitor == 0) {
    // ---- monitor ----
    close(fds[0]);
    // Keep only what the command needs: the daemon's other descriptors (its
    // listening socket, the database) must not live on in the monitor.
    CloseAllExcept(fds[1], log_fd, null_fd, fd_limit);
    setsid();
    if (take_run_lock && TakeRunLock(run_str.c_str(), getpid(), attempt) < 0) {
      WriteMsg(fds[1], 'L', errno, 0);
      _exit(126);
    }
    // O_CLOEXEC: the command does not inherit it.
    const int exit_fd = ReserveExitFile(exit_tmp.c_str());
    const pid_t cmd = fork();
    if (cmd == 0) {
      // ---- command ----
      for (int sig = 1; sig < NSIG; ++sig) signal(sig, SIG_DFL);
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, nullptr);
      dup2(null_fd, 0);
      dup2(log_fd, 1);
      dup2(log_fd, 2);
      if (switch_user &&
          (setgroups(groups.size(), groups.data()) != 0 || setgid(gid) != 0 || setuid(uid) != 0)) {
        WriteMsg(fds[1], 'U', errno, 0);
        _exit(126);
      }
      if (chdir(cwd.c_str()) != 0) {
        WriteMsg(fds[1], 'C', errno, 0);
        _exit(126);
      }
      execve(path->c_str(), argv.data(), envp.data());
      const int err = errno;
      WriteMsg(fds[1], 'X', err, 0);
      _exit(err == ENOENT ? 127 : 126);
    }
    if (cmd < 0) {
      WriteMsg(fds[1], 'F', errno, 0);
      _exit(127);
    }
    WriteMsg(fds[1], 'P', 0, cmd);
    close(log_fd);
    close(null_fd);
    close(fds[1]);  // last: the daemon's read returns EOF once the monitor holds nothing else
    signal(SIGTERM, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    int status = 0;
    pid_t r;
    do {
      r = waitpid(cmd, &status, 0);
    } while (r < 0 && errno == EINTR);
    const int file_code = r == cmd ? FileCodeOfWaitStatus(status) : 255;
    WriteExitFile(exit_fd, exit_tmp.c_str(), exit_str.c_str(), file_code, attempt, tag.c_str());
    _exit(r == cmd ? CodeOfWaitStatus(status) : 255);
  }
  const int fork_errno = errno;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  close(fds[1]);
  close(log_fd);
  close(null_fd);
  if (monitor < 0) {
    close(fds[0]);
    return InternalError(
        fmt::format("launching job {}: fork: {}", spec.job, std::strerror(fork_errno)));
  }
  // Read until EOF: the monitor closes its end after 'P', the command's end
  // closes at a successful execve.
  Launched out;
  out.pgid = monitor;
  Status failure;
  PipeMsg m;
  while (true) {
    ssize_t n = read(fds[0], &m, sizeof(m));
    if (n < 0 && errno == EINTR) continue;
    if (n != static_cast<ssize_t>(sizeof(m))) break;
    if (m.tag == 'P') {
      out.pid = m.pid;
    } else if (m.tag == 'C') {
      failure = FailedPreconditionError(
          fmt::format("working directory '{}': {}", cwd, std::strerror(m.err)));
    } else if (m.tag == 'X') {
      failure =
          m.err == ENOENT ? CommandNotFound(*path) : NotExecutable(*path, std::strerror(m.err));
    } else if (m.tag == 'U') {
      failure = FailedPreconditionError(
          fmt::format("cannot run as user '{}': {}", user.name, std::strerror(m.err)));
    } else if (m.tag == 'L' && m.err != EAGAIN && m.err != EACCES) {
      // The run lock file could not be made (a full or read-only state filesystem): the
      // daemon's trouble, no other run (regression: trial_run_lock_error_said_still_alive:
      // "run -1 of job 8 is still alive (monitor pid -1)" for ENOSPC).
      failure = InternalError(
          fmt::format("run lock {}: {}", (dir / "run").string(), std::strerror(m.err)));
    } else if (m.tag == 'L') {
      const auto owner = ReadPair(dir / "run");
      failure = FailedPreconditionError(
          fmt::format("run {} of job {} is still alive (monitor pid {}): a job runs once at a time",
                      owner ? owner->second : -1, spec.job, owner ? owner->first : -1));
    } else {
      failure =
          InternalError(fmt::format("launching job {}: fork: {}", spec.job, std::strerror(m.err)));
    }
  }
  close(fds[0]);
  if (!failure.ok()) {
    int status = 0;
    while (waitpid(monitor, &status, 0) < 0 && errno == EINTR) {
    }
    AppendToLog(log, failure.message());
    return failure;
  }
  return out;
}

ProcessStatus ProcessRunner::PollPath(DaemonJobId job, int64_t pgid,
                                      const std::filesystem::path& exit_path, int attempt,
                                      const std::filesystem::path* run_path) {
  ProcessStatus out;
  if (pgid <= 0) {
    out.kind = ProcessStatus::Kind::kLost;
    return out;
  }
  int status = 0;
  bool reaped = false;
  siginfo_t info;
  std::memset(&info, 0, sizeof(info));
  const int r = waitid(P_PID, static_cast<id_t>(pgid), &info, WEXITED | WNOHANG | WNOWAIT);
  if (r == 0 && info.si_pid == 0) return out;  // our child, running
  if (r == 0) {
    // Ended: kill what is left of its group, then reap it.
    kill(static_cast<pid_t>(-pgid), SIGKILL);
    while (waitpid(static_cast<pid_t>(pgid), &status, 0) < 0 && errno == EINTR) {
    }
    reaped = true;
  } else if (run_path != nullptr ? RunLockHeld(*run_path) : ProcessAlive(pgid)) {
    return out;  // not our child (re-adopted) and alive
  }
  // Gone: the exit file is authoritative when it names this run.
  const auto exit = ReadExit(exit_path);
  const auto decoded = exit ? DecodeFileCode(exit->code) : std::nullopt;
  if (decoded && (exit->attempt == attempt || exit->attempt < 0) && ExitBelongsTo(job, exit->tag)) {
    out.kind = ProcessStatus::Kind::kExited;
    out.exit_code = decoded->first;
    out.signalled = decoded->second;
    return out;
  }
  if (reaped) {
    // The monitor's own status: killed (it and its command), or the command's code, whose
    // signal, if any, it cannot tell apart from an exit status.
    out.kind = ProcessStatus::Kind::kExited;
    out.exit_code = CodeOfWaitStatus(status);
    out.signalled = WIFSIGNALED(status);
    return out;
  }
  out.kind = ProcessStatus::Kind::kLost;
  return out;
}

ProcessStatus ProcessRunner::Poll(DaemonJobId job, int64_t pgid, int attempt) {
  const std::filesystem::path run = JobDir(job) / "run";
  return PollPath(job, pgid, ExitPath(job), attempt, &run);
}

ProcessStatus ProcessRunner::PollHelper(DaemonJobId job, int64_t pgid) {
  return PollPath(job, pgid, JobDir(job) / "helper-exit", -1, nullptr);
}

RunProbe ProcessRunner::Probe(DaemonJobId job, int attempt) const {
  RunProbe out;
  const std::filesystem::path run = JobDir(job) / "run";
  const auto owner = ReadPair(run);
  if (owner && owner->second == attempt) {
    struct stat st {};
    if (::stat(run.c_str(), &st) == 0) {
      out.started_unix_s = static_cast<double>(st.st_mtim.tv_sec) + st.st_mtim.tv_nsec / 1e9;
    }
  }
  if (RunLockHeld(run) && owner) {
    out.kind = owner->second == attempt ? RunProbe::Kind::kAlive : RunProbe::Kind::kOrphanAlive;
    out.pgid = owner->first;
    return out;
  }
  const auto exit = ReadExit(ExitPath(job));
  const auto decoded = exit ? DecodeFileCode(exit->code) : std::nullopt;
  if (decoded && (exit->attempt == attempt || (exit->attempt < 0 && attempt == 0)) &&
      ExitBelongsTo(job, exit->tag)) {
    out.kind = RunProbe::Kind::kEnded;
    out.exit_code = decoded->first;
    out.signalled = decoded->second;
    struct stat st {};
    if (::stat(ExitPath(job).c_str(), &st) == 0) {
      out.ended_unix_s = static_cast<double>(st.st_mtim.tv_sec) + st.st_mtim.tv_nsec / 1e9;
    }
    return out;
  }
  // No status: a monitor that died without one may have left its command.
  if (owner && owner->second == attempt && GroupAlive(owner->first)) {
    out.kind = RunProbe::Kind::kOrphanAlive;
    out.pgid = owner->first;
    return out;
  }
  out.kind = RunProbe::Kind::kNeverRan;
  return out;
}

std::optional<std::string> ReadAllOf(int fd) {
  std::string all;
  char buf[4096];
  while (true) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n == 0) return all;
    if (n < 0) {
      if (errno == EINTR) continue;
      return std::nullopt;
    }
    all.append(buf, static_cast<size_t>(n));
  }
}

std::optional<std::string> ReadProcFile(const std::string& path) {
  int fd;
  do {
    fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return std::nullopt;
  std::optional<std::string> all = ReadAllOf(fd);
  close(fd);
  return all;
}

namespace {

// Calls `each(pid)` for every process listed in /proc, until it returns true; true when one did.
// nullopt when /proc cannot be listed.
template <typename Each>
std::optional<bool> ForEachProcess(Each each) {
  std::error_code ec;
  std::filesystem::directory_iterator proc("/proc", ec);
  if (ec) return std::nullopt;
  for (; proc != std::filesystem::directory_iterator(); proc.increment(ec)) {
    if (ec) return std::nullopt;
    const std::string name = proc->path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    if (each(std::stoll(name))) return true;
  }
  return false;
}

// Calls `each(pid, state)` for every process of group `pgid` found in /proc (zombies included:
// `state` says), until it returns true; true when one did. nullopt when /proc cannot be listed.
template <typename Each>
std::optional<bool> ForEachGroupMember(int64_t pgid, Each each) {
  return ForEachProcess([&](int64_t pid) {
    // The process may exit between the listing and the read: then it is not a member.
    const std::string all =
        ReadProcFile("/proc/" + std::to_string(pid) + "/stat").value_or(std::string());
    const size_t paren = all.rfind(')');
    if (paren == std::string::npos) return false;
    // After "pid (comm) ": state ppid pgrp ...
    std::istringstream rest(all.substr(paren + 1));
    char state = 0;
    int64_t ppid = 0, pgrp = 0;
    if (!(rest >> state >> ppid >> pgrp)) return false;
    return pgrp == pgid && each(pid, state, ppid);
  });
}

// The real uid of process `pid` (the first of the Uid: line of its status), or -1 when it is
// gone or unreadable.
int64_t RealUidOf(int64_t pid) {
  const std::string status =
      ReadProcFile("/proc/" + std::to_string(pid) + "/status").value_or(std::string());
  const size_t at = status.find("\nUid:");
  if (at == std::string::npos) return -1;
  std::istringstream uids(status.substr(at + 5));
  int64_t real = -1;
  return uids >> real ? real : -1;
}

}  // namespace

bool ProcessRunner::GroupAlive(int64_t pgid) const {
  if (pgid <= 0) return false;
  if (kill(static_cast<pid_t>(-pgid), 0) != 0 && errno == ESRCH) return false;
  // Members may be zombies that nobody reaps yet (orphans wait for init):
  // only a member that is not a zombie counts.
  const std::optional<bool> found = ForEachGroupMember(
      pgid, [](int64_t, char state, int64_t) { return state != 'Z' && state != 'X'; });
  return found.value_or(true);  // cannot look closer: kill() says it exists
}

std::optional<uid_t> ProcessRunner::GroupUser(int64_t pgid) const {
  if (pgid <= 0) return std::nullopt;
  std::optional<uid_t> user;
  ForEachGroupMember(pgid, [&](int64_t pid, char state, int64_t) {
    if (state == 'Z' || state == 'X') return false;
    const int64_t real = RealUidOf(pid);
    if (real <= 0) return false;
    user = static_cast<uid_t>(real);
    return true;
  });
  return user;
}

int64_t ProcessRunner::GroupCommand(int64_t pgid) const {
  if (pgid <= 0) return 0;
  int64_t command = 0;
  ForEachGroupMember(pgid, [&](int64_t pid, char state, int64_t ppid) {
    if (state == 'Z' || state == 'X' || ppid != pgid) return false;
    command = pid;
    return true;
  });
  return command;
}

int KillLeftoversOf(uid_t uid, const std::vector<std::string>& entries) {
  if (geteuid() != 0 || entries.empty()) return 0;
  // The environment's NUL-separated entries; one of `entries` must be one of them, whole.
  std::vector<std::string> wholes;
  for (const std::string& e : entries) {
    if (!e.empty()) wholes.push_back(std::string(1, '\0') + e + '\0');
  }
  int killed = 0;
  ForEachProcess([&](int64_t pid) {
    if (RealUidOf(pid) != static_cast<int64_t>(uid)) return false;
    std::string padded(1, '\0');
    padded += ReadProcFile("/proc/" + std::to_string(pid) + "/environ").value_or(std::string());
    if (padded.back() != '\0') padded += '\0';
    const bool ours = std::any_of(wholes.begin(), wholes.end(), [&](const std::string& w) {
      return padded.find(w) != std::string::npos;
    });
    if (ours && kill(static_cast<pid_t>(pid), SIGKILL) == 0) ++killed;
    return false;  // on to the next process
  });
  return killed;
}

std::set<uint32_t> UidsWithProcesses(uint32_t first, uint32_t last) {
  std::set<uint32_t> out;
  ForEachProcess([&](int64_t pid) {
    const std::string status =
        ReadProcFile("/proc/" + std::to_string(pid) + "/status").value_or(std::string());
    const size_t state = status.find("\nState:");
    if (state != std::string::npos) {
      const size_t c = status.find_first_not_of(" \t", state + 7);
      if (c != std::string::npos && (status[c] == 'Z' || status[c] == 'X')) return false;
    }
    const size_t at = status.find("\nUid:");
    if (at == std::string::npos) return false;
    std::istringstream uids(status.substr(at + 5));
    int64_t real = -1;
    if (uids >> real && real >= first && real <= last) out.insert(static_cast<uint32_t>(real));
    return false;
  });
  return out;
}

void ProcessRunner::SignalGroup(int64_t pgid, int sig) {
  if (pgid > 0) kill(static_cast<pid_t>(-pgid), sig);
}

}  // namespace migsched
