#include "slurm/command_runner.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

extern char** environ;

namespace migsched::slurm {
namespace {

constexpr size_t kMaxOutput = 64u << 20;

class SubprocessRunner : public CommandRunner {
 public:
  explicit SubprocessRunner(std::string bin_dir) : bin_dir_(std::move(bin_dir)) {}

  StatusOr<CommandResult> Run(const std::vector<std::string>& argv, double timeout_s) override {
    if (argv.empty()) return InvalidArgumentError("empty command");
    std::vector<std::string> args = argv;
    if (!bin_dir_.empty() && args[0].find('/') == std::string::npos) {
      args[0] = bin_dir_ + "/" + args[0];
    }
    std::vector<char*> cargs;
    for (std::string& a : args) cargs.push_back(a.data());
    cargs.push_back(nullptr);

    int out_pipe[2];
    int err_pipe[2];
    if (pipe2(out_pipe, O_CLOEXEC) != 0) {
      return UnavailableError(fmt::format("{}: pipe: {}", CommandLine(argv), std::strerror(errno)));
    }
    if (pipe2(err_pipe, O_CLOEXEC) != 0) {
      const int e = errno;
      close(out_pipe[0]);
      close(out_pipe[1]);
      return UnavailableError(fmt::format("{}: pipe: {}", CommandLine(argv), std::strerror(e)));
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
    posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
    pid_t pid = -1;
    const int rc = posix_spawnp(&pid, cargs[0], &fa, nullptr, cargs.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    close(out_pipe[1]);
    close(err_pipe[1]);
    if (rc != 0) {
      close(out_pipe[0]);
      close(err_pipe[0]);
      return UnavailableError(
          fmt::format("cannot run {}: {}", CommandLine(argv), std::strerror(rc)));
    }
    CommandResult r;
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                              std::chrono::duration<double>(timeout_s));
    bool timed_out = false;
    pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
    std::string* bufs[2] = {&r.out, &r.err};
    int open_fds = 2;
    char buf[65536];
    while (open_fds > 0) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        timed_out = true;
        break;
      }
      const int n = poll(fds, 2, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
      if (n < 0 && errno != EINTR) break;
      for (int i = 0; i < 2; ++i) {
        if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        const ssize_t got = read(fds[i].fd, buf, sizeof(buf));
        if (got > 0) {
          if (bufs[i]->size() < kMaxOutput) {
            bufs[i]->append(
                buf, std::min<size_t>(static_cast<size_t>(got), kMaxOutput - bufs[i]->size()));
          }
        } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
          close(fds[i].fd);
          fds[i].fd = -1;
          --open_fds;
        }
      }
    }
    if (timed_out) kill(pid, SIGKILL);
    for (pollfd& f : fds) {
      if (f.fd >= 0) close(f.fd);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (timed_out) {
      return UnavailableError(
          fmt::format("{} did not finish within {} s (killed)", CommandLine(argv), timeout_s));
    }
    if (WIFEXITED(status)) {
      r.exit_code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
      r.exit_code = 128 + WTERMSIG(status);
    }
    return r;
  }

 private:
  std::string bin_dir_;
};

}  // namespace

std::unique_ptr<CommandRunner> NewSubprocessRunner(std::string bin_dir) {
  return std::make_unique<SubprocessRunner>(std::move(bin_dir));
}

std::string CommandLine(const std::vector<std::string>& argv) {
  std::string s;
  for (const std::string& a : argv) {
    if (!s.empty()) s += ' ';
    if (a.find_first_of(" \t\"'") != std::string::npos) {
      s += "'" + a + "'";
    } else {
      s += a;
    }
  }
  return s;
}

}  // namespace migsched::slurm
