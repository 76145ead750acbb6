// A `migsched ...` child process of the end-to-end tests: started with its
// stdout on a pipe (stderr appended to a log file), ready once a stdout line
// contains a marker (e.g. "listening on http://127.0.0.1:"). Test-only.
#ifndef MIGSCHED_TESTS_E2E_MIGSCHED_CHILD_H_
#define MIGSCHED_TESTS_E2E_MIGSCHED_CHILD_H_

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "testing/test_util.h"

namespace migsched::testing {

class MigschedChild {
 public:
  // Starts `migsched args...` and waits up to `timeout` for a stdout line
  // containing `marker` (a bound, not a speed check: under the sanitizers on a
  // loaded 2-core machine a start took more than 15 s); rest() is what follows the marker on that
  // line. nullptr (and a test failure with its stdout and log) if it exits or the time runs out
  // first.
  static std::unique_ptr<MigschedChild> Start(
      const std::vector<std::string>& args, const std::filesystem::path& log,
      const std::string& marker, std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
    int fds[2];
    if (::pipe(fds) != 0) return nullptr;
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::dup2(fds[1], 1);
      const int err = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
      ::dup2(err, 2);
      ::close(fds[0]);
      std::vector<std::string> argv = {MigschedBinary()};
      argv.insert(argv.end(), args.begin(), args.end());
      std::vector<char*> cargs;
      for (auto& a : argv) cargs.push_back(a.data());
      cargs.push_back(nullptr);
      ::execv(cargs[0], cargs.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    auto c = std::unique_ptr<MigschedChild>(new MigschedChild(pid, fds[0]));
    std::string out;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{fds[0], POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      char buf[512];
      const ssize_t n = ::read(fds[0], buf, sizeof buf);
      if (n <= 0) break;  // exited
      out.append(buf, static_cast<size_t>(n));
      const size_t at = out.find(marker);
      if (at == std::string::npos) continue;
      const size_t end = out.find('\n', at);
      if (end == std::string::npos) continue;
      c->rest_ = out.substr(at + marker.size(), end - at - marker.size());
      return c;
    }
    std::string what;
    for (const std::string& a : args) what += " " + a;
    ADD_FAILURE() << "migsched" << what << " did not start; stdout: " << out
                  << "\nlog: " << ReadFile(log);
    return nullptr;
  }

  // SIGTERM, up to 5 s for it to exit, then SIGKILL; nothing if already reaped.
  ~MigschedChild() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int status = 0;
      for (int i = 0; i < 50 && ::waitpid(pid_, &status, WNOHANG) == 0; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
    }
    ::close(fd_);
  }

  // Sends `sig` and reaps the process; returns its wait status.
  int Kill(int sig) {
    ::kill(pid_, sig);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return status;
  }

  pid_t pid() const { return pid_; }
  const std::string& rest() const { return rest_; }

 private:
  MigschedChild(pid_t pid, int fd) : pid_(pid), fd_(fd) {}
  pid_t pid_;
  int fd_;
  std::string rest_;
};

}  // namespace migsched::testing

#endif  // MIGSCHED_TESTS_E2E_MIGSCHED_CHILD_H_
