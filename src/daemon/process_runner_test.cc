#include "daemon/process_runner.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::MakeTempDir;
using ::migsched::testing::ReadFile;

// Polls until the process ends (at most 5 s).
ProcessStatus WaitEnd(ProcessRunner& r, DaemonJobId job, int64_t pgid) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (true) {
    ProcessStatus s = r.Poll(job, pgid);
    if (s.kind != ProcessStatus::Kind::kRunning) return s;
    if (std::chrono::steady_clock::now() > deadline) return s;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

bool IsZombieOrGone(int64_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return true;
  std::string all((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t paren = all.rfind(')');
  return paren != std::string::npos && all.size() > paren + 2 && all[paren + 2] == 'Z';
}

struct ExitCase {
  std::vector<std::string> argv;
  int code;  // expected: from the shell's semantics
};

TEST(ProcessRunnerTest, ExitCodesAreRecorded) {
  const auto dir = MakeTempDir("migsched-runner");
  ProcessRunner runner(dir);
  const ExitCase cases[] = {
      {{"true"}, 0},
      {{"false"}, 1},
      {{"sh", "-c", "exit 42"}, 42},
      {{"sh", "-c", "kill -9 $$"}, 128 + 9},  // killed by signal 9
  };
  DaemonJobId id = 1;
  for (const ExitCase& c : cases) {
    LaunchSpec spec;
    spec.job = id;
    spec.argv = c.argv;
    StatusOr<Launched> l = runner.Launch(spec);
    ASSERT_TRUE(l.ok()) << l.status().ToString();
    EXPECT_GT(l->pid, 0);
    EXPECT_NE(l->pid, l->pgid);
    ProcessStatus s = WaitEnd(runner, id, l->pgid);
    EXPECT_EQ(s.kind, ProcessStatus::Kind::kExited) << c.argv.back();
    EXPECT_EQ(s.exit_code, c.code) << c.argv.back();
    EXPECT_EQ(ReadFile(runner.ExitPath(id)), std::to_string(c.code) + "\n");
    EXPECT_TRUE(IsZombieOrGone(l->pgid)) << "the monitor was not reaped";
    ++id;
  }
}

TEST(ProcessRunnerTest, LogEnvironmentAndCwd) {
  const auto dir = MakeTempDir("migsched-runner");
  ProcessRunner runner(dir);
  LaunchSpec spec;
  spec.job = 7;
  spec.argv = {"sh", "-c",
               "echo out:$CUDA_VISIBLE_DEVICES:$MIGSCHED_JOB_ID:$FOO:${MIGSCHED_RESTARTED-unset}; "
               "echo err >&2; pwd"};
  spec.env = {{"FOO", "bar baz"}};
  spec.mig_uuids = {"MIG-a", "MIG-b"};
  StatusOr<Launched> l = runner.Launch(spec);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  ProcessStatus s = WaitEnd(runner, 7, l->pgid);
  ASSERT_EQ(s.kind, ProcessStatus::Kind::kExited);
  EXPECT_EQ(s.exit_code, 0);
  // Default cwd: the job's directory.
  const std::string want = "out:MIG-a,MIG-b:7:bar baz:unset\nerr\n" +
                           std::filesystem::canonical(runner.JobDir(7)).string() + "\n";
  EXPECT_EQ(ReadFile(runner.LogPath(7)), want);

  // A restarted run appends to the same log and sees MIGSCHED_RESTARTED=1.
  spec.argv = {"sh", "-c", "echo restarted=$MIGSCHED_RESTARTED; pwd"};
  spec.restarted = true;
  spec.cwd = "/";
  l = runner.Launch(spec);
  ASSERT_TRUE(l.ok());
  s = WaitEnd(runner, 7, l->pgid);
  EXPECT_EQ(s.exit_code, 0);
  EXPECT_EQ(ReadFile(runner.LogPath(7)), want + "restarted=1\n/\n");
}

TEST(ProcessRunnerTest, LaunchFailuresAreClear) {
  const auto dir = MakeTempDir("migsched-runner");
  ProcessRunner runner(dir);
  {
    LaunchSpec spec;
    spec.job = 1;
    spec.argv = {"no-such-command-migsched"};
    StatusOr<Launched> l = runner.Launch(spec);
    ASSERT_FALSE(l.ok());
    EXPECT_EQ(l.status().code(), StatusCode::kNotFound);
    EXPECT_EQ(l.status().message(), "command not found: 'no-such-command-migsched'");
    EXPECT_EQ(ProcessRunner::ExitCodeOf(l.status()), 127);
    EXPECT_EQ(ReadFile(runner.LogPath(1)),
              "migsched: command not found: 'no-such-command-migsched'\n");
  }
  {
    const auto script = dir / "not-exec.sh";
    { std::ofstream(script) << "#!/bin/sh\necho hi\n"; }
    LaunchSpec spec;
    spec.job = 2;
    spec.argv = {script.string()};
    StatusOr<Launched> l = runner.Launch(spec);
    ASSERT_FALSE(l.ok());
    EXPECT_EQ(l.status().message(), "not executable: '" + script.string() + "'");
    EXPECT_EQ(ProcessRunner::ExitCodeOf(l.status()), 126);
  }
  {
    LaunchSpec spec;
    spec.job = 3;
    spec.argv = {"true"};
    spec.cwd = (dir / "missing").string();
    StatusOr<Launched> l = runner.Launch(spec);
    ASSERT_FALSE(l.ok());
    EXPECT_EQ(l.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_EQ(l.status().message(),
              "working directory '" + (dir / "missing").string() + "': No such file or directory");
    EXPECT_EQ(ProcessRunner::ExitCodeOf(l.status()), -1);
  }
  {
    LaunchSpec spec;
    spec.job = 4;
    StatusOr<Launched> l = runner.Launch(spec);
    ASSERT_FALSE(l.ok());
    EXPECT_EQ(l.status().message(), "empty command");
  }
}

TEST(ProcessRunnerTest, TerminateSendsTermThenKill) {
  const auto dir = MakeTempDir("migsched-runner");
  ProcessRunner runner(dir);
  // Polite: sleep dies of SIGTERM at once → 128 + 15.
  LaunchSpec spec;
  spec.job = 1;
  spec.argv = {"sleep", "30"};
  StatusOr<Launched> l = runner.Launch(spec);
  ASSERT_TRUE(l.ok());
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(runner.Terminate(1, l->pgid, 5));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  ProcessStatus s = runner.Poll(1, l->pgid);
  EXPECT_EQ(s.kind, ProcessStatus::Kind::kExited);
  EXPECT_EQ(s.exit_code, 128 + SIGTERM);

  // Stubborn: ignores SIGTERM → SIGKILL after the grace; the monitor dies too,
  // so the status comes from the monitor's wait status: 128 + 9.
  spec.job = 2;
  spec.argv = {"sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.05; done"};
  l = runner.Launch(spec);
  ASSERT_TRUE(l.ok());
  for (int i = 0; i < 200 && ReadFile(runner.LogPath(2)).empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(runner.Terminate(2, l->pgid, 0.2));
  s = runner.Poll(2, l->pgid);
  EXPECT_EQ(s.kind, ProcessStatus::Kind::kExited);
  EXPECT_EQ(s.exit_code, 128 + SIGKILL);
  EXPECT_FALSE(runner.GroupAlive(l->pgid));
}

TEST(ProcessRunnerTest, BackgroundChildrenDoNotOutliveTheJob) {
  const auto dir = MakeTempDir("migsched-runner");
  ProcessRunner runner(dir);
  LaunchSpec spec;
  spec.job = 1;
  spec.argv = {"sh", "-c", "sleep 30 & echo $! > bg.pid; exit 3"};
  StatusOr<Launched> l = runner.Launch(spec);
  ASSERT_TRUE(l.ok());
  ProcessStatus s = WaitEnd(runner, 1, l->pgid);
  EXPECT_EQ(s.exit_code, 3);
  std::ifstream in(runner.JobDir(1) / "bg.pid");
  int64_t bg = 0;
  ASSERT_TRUE(in >> bg);
  for (int i = 0; i < 200 && !IsZombieOrGone(bg); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(IsZombieOrGone(bg));
}

TEST(ProcessRunnerTest, NotOurChildIsReadFromTheExitFile) {
  // A second runner (as after a daemon restart) polls a process it did not
  // start: alive → running; once gone, the exit file gives the code; with no
  // exit file it is lost.
  const auto dir = MakeTempDir("migsched-runner");
  ProcessRunner first(dir);
  LaunchSpec spec;
  spec.job = 5;
  spec.argv = {"sh", "-c", "sleep 0.2; exit 9"};
  StatusOr<Launched> l = first.Launch(spec);
  ASSERT_TRUE(l.ok());
  ProcessRunner second(dir);
  EXPECT_EQ(second.Poll(5, l->pgid).kind, ProcessStatus::Kind::kRunning);
  // Reap it through the first runner (the parent), then ask the second.
  ProcessStatus s = WaitEnd(first, 5, l->pgid);
  EXPECT_EQ(s.exit_code, 9);
  s = second.Poll(5, l->pgid);
  EXPECT_EQ(s.kind, ProcessStatus::Kind::kExited);
  EXPECT_EQ(s.exit_code, 9);
  std::filesystem::remove(second.ExitPath(5));
  EXPECT_EQ(second.Poll(5, l->pgid).kind, ProcessStatus::Kind::kLost);
}

TEST(ProcessRunnerTest, DaemonDescriptorsAreNotInherited) {
  // A descriptor the daemon holds without O_CLOEXEC (e.g. a listening
  // socket) must not live on in the monitor or the command.
  const auto dir = MakeTempDir("migsched-runner");
  ProcessRunner runner(dir);
  const int fd = open((dir / "held").c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_GE(fd, 3);
  LaunchSpec spec;
  spec.job = 1;
  spec.argv = {"sleep", "0.5"};
  StatusOr<Launched> l = runner.Launch(spec);
  close(fd);
  ASSERT_TRUE(l.ok());
  auto fds_of = [](int64_t pid) {
    std::vector<int> out;
    for (const auto& e :
         std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd")) {
      out.push_back(std::stoi(e.path().filename().string()));
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  EXPECT_EQ(fds_of(l->pgid), (std::vector<int>{0, 1, 2}));  // the monitor
  EXPECT_EQ(fds_of(l->pid), (std::vector<int>{0, 1, 2}));   // the command
  EXPECT_FALSE(runner.Terminate(1, l->pgid, 5));            // SIGTERM suffices
}

TEST(ProcessRunnerTest, RunToCompletion) {
  const auto dir = MakeTempDir("migsched-runner");
  ProcessRunner runner(dir);
  LaunchSpec spec;
  spec.job = 1;
  spec.argv = {"sh", "-c", "echo ckpt; exit 4"};
  StatusOr<int> code = runner.RunToCompletion(spec, 5);
  ASSERT_TRUE(code.ok()) << code.status().ToString();
  EXPECT_EQ(*code, 4);
  EXPECT_EQ(ReadFile(runner.LogPath(1)), "ckpt\n");
  spec.argv = {"sleep", "10"};
  code = runner.RunToCompletion(spec, 0.1);
  ASSERT_FALSE(code.ok());
  EXPECT_EQ(code.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(code.status().message(), "'sleep' did not finish within 0.1 s");
}

}  // namespace
}  // namespace migsched
