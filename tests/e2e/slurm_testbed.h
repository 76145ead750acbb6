// The Slurm end-to-end tests' test bed: a real local cluster (munged,
// slurmctld, slurmd, node daemons, the controller) started and stopped by
// deploy/slurm/local-cluster.sh, and shell commands run against it.
//
// These tests need root (Slurm's daemons run as root there) and Debian's
// slurm-wlm and munge (scripts/setup.sh installs them); without them they are
// skipped, saying why. They run only in the normal build: under the
// sanitizers (CMake's MIGSCHED_SANITIZE) each takes minutes and checks
// nothing more of ours than the normal build (the daemons are Slurm's; our
// processes in them are covered by the other tests), so they are skipped
// there too (DEVELOPERS.md "Commands").
#ifndef MIGSCHED_TESTS_E2E_SLURM_TESTBED_H_
#define MIGSCHED_TESTS_E2E_SLURM_TESTBED_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "slurm/command_runner.h"
#include "testing/test_util.h"

namespace migsched::testing {

// Whether this test binary was built with AddressSanitizer (MIGSCHED_SANITIZE):
// GCC and clang >= 17 define __SANITIZE_ADDRESS__, older clang has __has_feature.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitizerBuild = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kSanitizerBuild = true;
#else
inline constexpr bool kSanitizerBuild = false;
#endif
#else
inline constexpr bool kSanitizerBuild = false;
#endif

// Why the Slurm tests (a real local cluster) do not run here, or "" when they
// do. Every test that starts slurmctld or slurmd skips with this reason:
//   if (const std::string why = SlurmUnavailable(); !why.empty()) GTEST_SKIP() << why;
inline std::string SlurmUnavailable() {
  if (kSanitizerBuild) {
    return "skipped in the sanitizer build (MIGSCHED_SANITIZE): real-Slurm tests run only in the "
           "normal build, for CI time";
  }
  if (geteuid() != 0) return "needs root (Slurm's daemons run as root in the local cluster)";
  for (const char* p : {"/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/sbin/munged"}) {
    if (!std::filesystem::exists(p)) {
      return std::string(p) + " is not installed (scripts/setup.sh installs slurm-wlm and munge)";
    }
  }
  return "";
}

class SlurmTestbed {
 public:
  // `up_args`: extra arguments of `local-cluster.sh up DIR`.
  explicit SlurmTestbed(std::vector<std::string> up_args) : up_args_(std::move(up_args)) {}
  ~SlurmTestbed() { Down(); }

  // Starts the cluster; false (and a test failure with the script's output) if it does not come up.
  bool Up() {
    dir_ = MakeTempDir("slurm-e2e").string();
    std::vector<std::string> argv = {"bash", Script(), "up", dir_, "--migsched", MigschedBinary()};
    argv.insert(argv.end(), up_args_.begin(), up_args_.end());
    auto r = slurm::NewSubprocessRunner()->Run(argv, 300);
    if (!r.ok() || r->exit_code != 0) {
      ADD_FAILURE() << "local-cluster.sh up failed: "
                    << (r.ok() ? r->err + r->out : r.status().ToString()) << "\n"
                    << Logs();
      return false;
    }
    up_ = true;
    return true;
  }
  void Down() {
    if (!up_) return;
    up_ = false;
    auto r = slurm::NewSubprocessRunner()->Run({"bash", Script(), "down", dir_}, 120);
    EXPECT_TRUE(r.ok() && r->exit_code == 0)
        << "local-cluster.sh down failed: " << (r.ok() ? r->err : r.status().ToString());
  }

  // Runs `command` with bash, DIR/env sourced, cwd DIR; returns stdout
  // (test failure with stderr when it exits non-zero and `check`).
  slurm::CommandResult Sh(const std::string& command, bool check = true, double timeout_s = 60) {
    auto r = slurm::NewSubprocessRunner()->Run(
        {"bash", "-c", ". '" + dir_ + "/env' && cd '" + dir_ + "' && " + command}, timeout_s);
    if (!r.ok()) {
      ADD_FAILURE() << command << ": " << r.status().ToString();
      return {};
    }
    if (check && r->exit_code != 0) {
      ADD_FAILURE() << command << " exited " << r->exit_code << ": " << r->err << r->out;
    }
    return *r;
  }
  std::string Out(const std::string& command) {
    std::string s = Sh(command).out;
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
  }
  // Polls `done` every 0.2 s for at most `timeout_s`; false on time-out.
  static bool WaitFor(const std::function<bool()>& done, double timeout_s) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (std::chrono::steady_clock::now() < end) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return done();
  }
  // The last lines of every log, for failure messages.
  std::string Logs() {
    auto r = slurm::NewSubprocessRunner()->Run(
        {"bash", "-c", "for f in '" + dir_ + "'/log/*; do echo \"== $f\"; tail -n 20 \"$f\"; done"},
        30);
    return r.ok() ? r->out : "";
  }
  const std::string& dir() const { return dir_; }

 private:
  static std::string Script() { return SourceDir() + "/deploy/slurm/local-cluster.sh"; }

  std::vector<std::string> up_args_;
  std::string dir_;
  bool up_ = false;
};

}  // namespace migsched::testing

#endif  // MIGSCHED_TESTS_E2E_SLURM_TESTBED_H_
