#include "daemon/process_runner.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "testing/test_util.h"

namespace migsched {
namespace {

using ::migsched::testing::MakeTempDir;
using ::migsched::testing::ReadFile;

// Polls run `attempt` until the process ends (at most 5 s).
ProcessStatus r_WaitEnd(ProcessRunner& r, DaemonJobId job, int64_t pgid, int attempt) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (true) {
    ProcessStatus s = r.Poll(job, pgid, attempt);
    if (s.kind != ProcessStatus::Kind::kRunning) return s;
    if (std::chrono::steady_clock::now() > deadline) return s;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}
ProcessStatus WaitEnd(ProcessRunner& r, DaemonJobId job, int64_t pgid) {
  return r_WaitEnd(r, job, pgid, 0);
}

bool IsZombieOrGone(int64_t pid) {
  const std::optional<std::string> stat = ReadProcFile("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return true;
  const std::string& all = *stat;
  const size_t paren = all.rfind(')');
  return paren != std::string::npos && all.size() > paren + 2 && all[paren + 2] == 'Z';
}

struct ExitCase {
  std::vector<std::string> argv;
  int code;        // expected: from the shell's semantics
  bool signalled;  // killed by a signal
  int file_code;   // in the exit file: the status, or 256 + N for signal N
};

TEST(ProcessRunnerTest, ExitCodesAreRecorded) {
  const auto dir = MakeTempDir("migsched-runner");
  ProcessRunner runner(dir, dir / "work");
  const ExitCase cases[] = {
      {{"true"}, 0, false, 0},
      {{"false"}, 1, false, 1},
      {{"sh", "-c", "exit 42"}, 42, false, 42},
      {{"sh", "-c", "kill -9 $$"}, 128 + 9, true, 256 + 9},  // killed by signal 9
      // Regression exit_status_above_128_read_as_a_signal: `exit 200` was "killed by signal 72",
      // `exit 137` a SIGKILL.
      {{"sh", "-c", "exit 200"}, 200, false, 200},
      {{"sh", "-c", "exit 137"}, 137, false, 137},
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
    EXPECT_EQ(s.signalled, c.signalled) << c.argv.back();
    EXPECT_EQ(ReadFile(runner.ExitPath(id)), std::to_string(c.file_code) + " 0\n");  // code, run
    EXPECT_TRUE(IsZombieOrGone(l->pgid)) << "the monitor was not reaped";
    ++id;
  }
}

// Regression: GroupAlive read /proc/<pid>/stat with std::ifstream. A process that exited between
// the open and the read made read(2) fail with ESRCH, and libstdc++'s filebuf threw
// "basic_filebuf::underflow error reading the file: No such process" out of the daemon's
// recovery. Here the race is made certain: the file is opened while the child lives, and read
// after it has exited and been reaped.
TEST(ProcessRunnerTest, StatOfAProcessThatExitedAfterTheOpenIsReadWithoutThrowing) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    pause();
    _exit(0);
  }
  const int fd = open(("/proc/" + std::to_string(child) + "/stat").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  kill(child, SIGKILL);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  // The kernel answers the read of a reaped process's stat with ESRCH.
  std::optional<std::string> after;
  EXPECT_NO_THROW(after = ReadAllOf(fd));
  EXPECT_FALSE(after.has_value());
  close(fd);
  // By path, once it is gone: nothing to open, nullopt, and the group is not alive.
  EXPECT_FALSE(ReadProcFile("/proc/" + std::to_string(child) + "/stat").has_value());
  const std::filesystem::path dir = MakeTempDir("runner-gone");
  ProcessRunner r(dir, dir / "work");
  EXPECT_FALSE(r.GroupAlive(child));
  // A live process's stat is read whole: "pid (comm) state ...", its own pid first.
  const std::optional<std::string> self = ReadProcFile("/proc/self/stat");
  ASSERT_TRUE(self.has_value());
  EXPECT_TRUE(self->starts_with(std::to_string(getpid()) + " (")) << *self;
}

TEST(ProcessRunnerTest, LogEnvironmentAndCwd) {
  const auto dir = MakeTempDir("migsched-runner");
  ProcessRunner runner(dir, dir / "work");
  LaunchSpec spec;
  spec.job = 7;
  spec.attempt = 3;
  spec.argv = {"sh", "-c",
               "echo out:$CUDA_VISIBLE_DEVICES:$MIGSCHED_JOB_ID:$MIGSCHED_RUN:$FOO:"
               "${MIGSCHED_RESTARTED-unset}:${MIGSCHED_TEST_SECRET-unset}; echo err >&2; pwd"};
  spec.env = {{"FOO", "bar baz"}};
  // The daemon's own environment (it may hold secrets) is not passed on.
  ::setenv("MIGSCHED_TEST_SECRET", "s3cret", 1);
  spec.mig_uuids = {"MIG-a", "MIG-b"};
  StatusOr<Launched> l = runner.Launch(spec);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  ::unsetenv("MIGSCHED_TEST_SECRET");
  ProcessStatus s = r_WaitEnd(runner, 7, l->pgid, 3);
  ASSERT_EQ(s.kind, ProcessStatus::Kind::kExited);
  EXPECT_EQ(s.exit_code, 0);
  // Default cwd: the job's work directory.
  const std::string want = "out:MIG-a,MIG-b:7:3:bar baz:unset:unset\nerr\n" +
                           std::filesystem::canonical(runner.WorkDir(7)).string() + "\n";
  EXPECT_EQ(ReadFile(runner.LogPath(7)), want);

  // A restarted run appends to the same log and sees MIGSCHED_RESTARTED=1.
  spec.argv = {"sh", "-c", "echo restarted=$MIGSCHED_RESTARTED; pwd"};
  spec.restarted = true;
  spec.cwd = "/";
  spec.attempt = 4;
  l = runner.Launch(spec);
  ASSERT_TRUE(l.ok());
  s = r_WaitEnd(runner, 7, l->pgid, 4);
  EXPECT_EQ(s.exit_code, 0);
  EXPECT_EQ(ReadFile(runner.LogPath(7)), want + "restarted=1\n/\n");
}

TEST(ProcessRunnerTest, LaunchFailuresAreClear) {
  const auto dir = MakeTempDir("migsched-runner");
  ProcessRunner runner(dir, dir / "work");
  {
    LaunchSpec spec;
    spec.job = 1;
    spec.argv = {"no-such-command-migsched"};
    StatusOr<Launched> l = runner.Launch(spec);
    ASSERT_FALSE(l.ok());
    EXPECT_EQ(l.status().code(), StatusCode::kNotFound);
    EXPECT_EQ(l.status().message(), "command not found: 'no-such-command-migsched'");
    EXPECT_EQ(l.status().reason(), StatusReason::kCommandNotFound);
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
    EXPECT_EQ(l.status().reason(), StatusReason::kNotExecutable);
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

// What the daemon's loop does over several ticks (SIGTERM, SIGKILL after the
// grace), in one blocking call: SIGTERM to the group, SIGKILL once `grace_s`
// (real time) has passed, until Poll says the run ended (at most 5 s more).
struct Ended {
  bool killed = false;  // SIGKILL was needed
  ProcessStatus status;
};
Ended Terminate(ProcessRunner& runner, DaemonJobId job, int64_t pgid, int attempt, double grace_s) {
  Ended out;
  runner.SignalGroup(pgid, SIGTERM);
  const auto kill_at = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace_s);
  const auto give_up = kill_at + std::chrono::seconds(5);
  while ((out.status = runner.Poll(job, pgid, attempt)).kind == ProcessStatus::Kind::kRunning &&
         std::chrono::steady_clock::now() < give_up) {
    if (!out.killed && std::chrono::steady_clock::now() >= kill_at) {
      runner.SignalGroup(pgid, SIGKILL);
      out.killed = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return out;
}

TEST(ProcessRunnerTest, TerminateSendsTermThenKill) {
  const auto dir = MakeTempDir("migsched-runner");
  ProcessRunner runner(dir, dir / "work");
  // Polite: sleep dies of SIGTERM at once → 128 + 15.
  LaunchSpec spec;
  spec.job = 1;
  spec.argv = {"sleep", "30"};
  StatusOr<Launched> l = runner.Launch(spec);
  ASSERT_TRUE(l.ok());
  const auto t0 = std::chrono::steady_clock::now();
  Ended e = Terminate(runner, 1, l->pgid, 0, 5);
  EXPECT_FALSE(e.killed);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  ProcessStatus s = e.status;
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
  e = Terminate(runner, 2, l->pgid, 0, 0.2);
  EXPECT_TRUE(e.killed);
  s = e.status;
  EXPECT_EQ(s.kind, ProcessStatus::Kind::kExited);
  EXPECT_EQ(s.exit_code, 128 + SIGKILL);
  // The group's other members (sh, its `sleep 0.05`) die of the same SIGKILL, but not
  // necessarily before the monitor's end is seen: the kernel may still be taking one down (the
  // check once failed so on a loaded machine). Gone within a bounded wait, never left running.
  bool alive = runner.GroupAlive(l->pgid);
  for (int i = 0; i < 400 && alive; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    alive = runner.GroupAlive(l->pgid);
  }
  EXPECT_FALSE(alive);
}

TEST(ProcessRunnerTest, BackgroundChildrenDoNotOutliveTheJob) {
  const auto dir = MakeTempDir("migsched-runner");
  ProcessRunner runner(dir, dir / "work");
  LaunchSpec spec;
  spec.job = 1;
  spec.argv = {"sh", "-c", "sleep 30 & echo $! > bg.pid; exit 3"};
  StatusOr<Launched> l = runner.Launch(spec);
  ASSERT_TRUE(l.ok());
  ProcessStatus s = WaitEnd(runner, 1, l->pgid);
  EXPECT_EQ(s.exit_code, 3);
  std::ifstream in(runner.WorkDir(1) / "bg.pid");  // its cwd: the job's work dir
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
  ProcessRunner first(dir, dir / "work");
  LaunchSpec spec;
  spec.job = 5;
  spec.argv = {"sh", "-c", "sleep 0.2; exit 9"};
  StatusOr<Launched> l = first.Launch(spec);
  ASSERT_TRUE(l.ok());
  ProcessRunner second(dir, dir / "work");
  EXPECT_EQ(second.Poll(5, l->pgid, 0).kind, ProcessStatus::Kind::kRunning);
  // Reap it through the first runner (the parent), then ask the second.
  ProcessStatus s = WaitEnd(first, 5, l->pgid);
  EXPECT_EQ(s.exit_code, 9);
  s = second.Poll(5, l->pgid, 0);
  EXPECT_EQ(s.kind, ProcessStatus::Kind::kExited);
  EXPECT_EQ(s.exit_code, 9);
  std::filesystem::remove(second.ExitPath(5));
  EXPECT_EQ(second.Poll(5, l->pgid, 0).kind, ProcessStatus::Kind::kLost);
}

// Regression: the monitor wrote the exit file only when the job ended. On a disk that had filled
// up meanwhile the write failed, an empty file was renamed into place, and a daemon restarted
// after that recorded "process lost" instead of the job's exit code. Here a small tmpfs is filled
// while the job runs (the test needs root and mount(2), and is skipped where it may not mount).
TEST(ProcessRunnerTest, ExitStatusSurvivesADiskThatFilledWhileTheJobRan) {
  const auto dir = MakeTempDir("migsched-runner-full");
  if (geteuid() != 0 || mount("tmpfs", dir.c_str(), "tmpfs", 0, "size=256k,mode=0700") != 0) {
    GTEST_SKIP() << "cannot mount a small tmpfs here (needs root and mount(2))";
  }
  struct Unmount {
    std::string at;
    ~Unmount() { umount2(at.c_str(), MNT_DETACH); }
  } unmount{dir.string()};
  ProcessRunner first(dir, dir / "work");
  LaunchSpec spec;
  spec.job = 7;
  spec.argv = {"sh", "-c", "sleep 0.3; exit 3"};
  StatusOr<Launched> l = first.Launch(spec);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  // Should the exit file not be written, the monitor would wait on for up to an hour: not here.
  struct KillGroup {
    int64_t pgid;
    ~KillGroup() { kill(static_cast<pid_t>(-pgid), SIGKILL); }
  } kill_group{l->pgid};
  // Fill the disk while the job runs, until a write fails for want of space.
  const int fd = open((dir / "filler").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  char block[4096] = {};
  while (write(fd, block, sizeof(block)) > 0) {
  }
  EXPECT_EQ(errno, ENOSPC);
  close(fd);
  ProcessStatus s = WaitEnd(first, 7, l->pgid);
  EXPECT_EQ(s.kind, ProcessStatus::Kind::kExited);
  EXPECT_EQ(s.exit_code, 3);
  // A runner that did not start it (a restarted daemon) reads the code from the exit file.
  ProcessRunner second(dir, dir / "work");
  s = second.Poll(7, l->pgid, 0);
  EXPECT_EQ(s.kind, ProcessStatus::Kind::kExited);
  EXPECT_EQ(s.exit_code, 3);
  const std::string exit_file = ReadFile(second.ExitPath(7));
  EXPECT_TRUE(exit_file.starts_with("3 0")) << exit_file;  // "<code> <attempt>[ <tag>]"
}

TEST(ProcessRunnerTest, DaemonDescriptorsAreNotInherited) {
  // A descriptor the daemon holds without O_CLOEXEC (e.g. a listening
  // socket) must not live on in the monitor or the command.
  const auto dir = MakeTempDir("migsched-runner");
  ProcessRunner runner(dir, dir / "work");
  const int fd = open((dir / "held").c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_GE(fd, 3);
  LaunchSpec spec;
  spec.job = 1;
  // Long enough to outlive the look under any load (a `sleep 0.5` could end
  // while a loaded machine was still settling, and a vanished /proc entry
  // failed the test); Terminate ends it.
  spec.argv = {"sleep", "30"};
  StatusOr<Launched> l = runner.Launch(spec);
  close(fd);
  ASSERT_TRUE(l.ok());
  auto fds_of = [](int64_t pid) {
    std::vector<int> out;
    std::error_code ec;  // a process gone: no descriptors (the expectations then fail)
    for (std::filesystem::directory_iterator it("/proc/" + std::to_string(pid) + "/fd", ec), end;
         !ec && it != end; it.increment(ec)) {
      out.push_back(std::stoi(it->path().filename().string()));
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  // Launch returns once the monitor is forked; the monitor and the command close
  // what they inherited on their way to exec (the monitor its end of the
  // launch handshake too), and `sleep` itself opens and closes locale files as
  // it starts, so a table seen once may be about to change either way. A
  // leaked descriptor stays for good: wait (bounded) until the command is
  // `sleep` and both tables have read as expected 10 times in a row, 10 ms
  // apart, then look.
  const std::vector<int> stdio_only{0, 1, 2};
  // What the monitor's descriptors above stdio are open on: the run lock (<job dir>/run) and the
  // exit file it reserved at the launch (<job dir>/exit.tmp, written over when the command
  // ends), whatever their numbers.
  auto monitor_files = [&](int64_t pid) {
    std::set<std::filesystem::path> out;
    for (int fd : fds_of(pid)) {
      if (fd <= 2) continue;
      std::error_code ec;
      out.insert(std::filesystem::read_symlink(
          "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd), ec));
    }
    return out;
  };
  const std::set<std::filesystem::path> lock_and_exit{runner.JobDir(1) / "run",
                                                      runner.ExitPath(1).string() + ".tmp"};
  auto is_sleep = [](int64_t pid) {
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec);
    return !ec && exe.filename() == "sleep";
  };
  for (int i = 0, in_a_row = 0; i < 1000 && in_a_row < 10; ++i) {
    const bool settled = is_sleep(l->pid) && fds_of(l->pid) == stdio_only &&
                         fds_of(l->pgid).size() == 5 && monitor_files(l->pgid) == lock_and_exit;
    in_a_row = settled ? in_a_row + 1 : 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // The monitor: stdio, the run lock and the reserved exit file; the command: stdio only.
  EXPECT_EQ(fds_of(l->pgid).size(), 5u);
  EXPECT_EQ(monitor_files(l->pgid), lock_and_exit);
  EXPECT_EQ(fds_of(l->pid), stdio_only);
  EXPECT_FALSE(Terminate(runner, 1, l->pgid, 0, 5).killed);  // SIGTERM suffices
}

TEST(ProcessRunnerTest, HelperRunsWithoutTheRunLock) {
  const auto dir = MakeTempDir("migsched-runner");
  ProcessRunner runner(dir, dir / "work");
  LaunchSpec job;
  job.job = 1;
  job.attempt = 1;
  job.argv = {"sleep", "5"};
  StatusOr<Launched> main = runner.Launch(job);
  ASSERT_TRUE(main.ok()) << main.status().ToString();
  // A checkpoint helper runs beside the job's own run (the lock is the run's).
  LaunchSpec helper = job;
  helper.argv = {"sh", "-c", "echo ckpt; exit 4"};
  StatusOr<Launched> h = runner.LaunchHelper(helper);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  ProcessStatus s;
  while ((s = runner.PollHelper(1, h->pgid)).kind == ProcessStatus::Kind::kRunning &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(s.kind, ProcessStatus::Kind::kExited);
  EXPECT_EQ(s.exit_code, 4);
  EXPECT_EQ(ReadFile(runner.LogPath(1)), "ckpt\n");
  EXPECT_EQ(runner.Poll(1, main->pgid, 1).kind, ProcessStatus::Kind::kRunning);
  EXPECT_FALSE(Terminate(runner, 1, main->pgid, 1, 5).killed);
}

// Regression (trial_run_lock_error_said_still_alive): the run lock file could not be made (in
// the trial ENOSPC; here a directory stands at jobs/4/run, so open() fails with EISDIR), and the
// launch was refused as "run -1 of job 4 is still alive (monitor pid -1)". It is the daemon's
// trouble (kInternal: the daemon launches the job again later) and says what failed.
TEST(ProcessRunnerTest, ARunLockThatCannotBeMadeIsTheDaemonsTrouble) {
  const auto dir = MakeTempDir("migsched-runner");
  ProcessRunner runner(dir, dir / "work");
  std::filesystem::create_directories(dir / "jobs" / "4" / "run");
  LaunchSpec spec;
  spec.job = 4;
  spec.attempt = 1;
  spec.argv = {"true"};
  StatusOr<Launched> l = runner.Launch(spec);
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.status().code(), StatusCode::kInternal);
  EXPECT_EQ(l.status().message(),
            "run lock " + (dir / "jobs" / "4" / "run").string() + ": Is a directory");
}

// Regression (job_runs_twice_after_kill_9): a daemon killed between launching
// a job and storing that it runs left no trace of the run, so a restart ran
// it again beside the first copy. The run lock tells a restarted daemon
// (here: a second runner, not the parent) whether run N lives, ended, or
// never started; and a second launch while run N lives is refused.
TEST(ProcessRunnerTest, RunLockFindsTheRunAfterARestart) {
  const auto dir = MakeTempDir("migsched-runner");
  ProcessRunner first(dir, dir / "work");
  ProcessRunner second(dir, dir / "work");                        // the restarted daemon
  EXPECT_EQ(second.Probe(3, 1).kind, RunProbe::Kind::kNeverRan);  // nothing launched yet
  LaunchSpec spec;
  spec.job = 3;
  spec.attempt = 1;
  spec.argv = {"sh", "-c", "sleep 0.3; exit 5"};
  StatusOr<Launched> l = first.Launch(spec);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  RunProbe p = second.Probe(3, 1);
  EXPECT_EQ(p.kind, RunProbe::Kind::kAlive);
  EXPECT_EQ(p.pgid, l->pgid);
  EXPECT_EQ(second.Poll(3, l->pgid, 1).kind, ProcessStatus::Kind::kRunning);  // not its child
  // Run 2 while run 1 lives: refused, nothing started.
  spec.attempt = 2;
  StatusOr<Launched> again = first.Launch(spec);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().message(), "run 1 of job 3 is still alive (monitor pid " +
                                          std::to_string(l->pgid) + "): a job runs once at a time");
  ASSERT_EQ(WaitEnd(first, 3, l->pgid).kind, ProcessStatus::Kind::kExited);
  p = second.Probe(3, 1);
  EXPECT_EQ(p.kind, RunProbe::Kind::kEnded);
  EXPECT_EQ(p.exit_code, 5);
  // The exit file names run 1: run 2 has no trace.
  EXPECT_EQ(second.Probe(3, 2).kind, RunProbe::Kind::kNeverRan);
}

// Regression (a_stale_exit_file_is_read_as_a_new_jobs): after the database was
// lost, a new job got the id of an old one and the old job's exit file marked it
// "succeeded" although it never ran. Exit files now carry the state dir's
// generation: another generation's file, or an untagged one of a job at or above
// the untagged bound, says nothing about this job.
TEST(ProcessRunnerTest, AStaleExitFileIsNeverReadAsANewJobs) {
  const auto dir = MakeTempDir("migsched-runner");
  ProcessRunner runner(dir, dir / "work");
  runner.SetRunTag("gen2", /*untagged_below=*/10);
  auto plant = [&](DaemonJobId job, const std::string& text) {
    std::filesystem::create_directories(runner.JobDir(job));
    std::ofstream(runner.ExitPath(job)) << text;
  };
  plant(12, "0 0 gen1\n");  // another generation's job 12
  EXPECT_EQ(runner.Probe(12, 0).kind, RunProbe::Kind::kNeverRan);
  EXPECT_EQ(runner.Poll(12, 999999999, 0).kind, ProcessStatus::Kind::kLost);
  plant(13, "0 0\n");  // untagged, but job 13 is not below 10: not a file of this job
  EXPECT_EQ(runner.Probe(13, 0).kind, RunProbe::Kind::kNeverRan);
  plant(4, "3 0\n");  // untagged, from before tags: job 4 < 10 is read
  EXPECT_EQ(runner.Probe(4, 0).kind, RunProbe::Kind::kEnded);
  EXPECT_EQ(runner.Probe(4, 0).exit_code, 3);
  // A run of this generation writes and reads its own tag.
  LaunchSpec spec;
  spec.job = 14;
  spec.argv = {"sh", "-c", "exit 7"};
  StatusOr<Launched> l = runner.Launch(spec);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  ProcessStatus s = WaitEnd(runner, 14, l->pgid);
  EXPECT_EQ(s.exit_code, 7);
  EXPECT_EQ(ReadFile(runner.ExitPath(14)), "7 0 gen2\n");
  ProcessRunner restarted(dir, dir / "work");
  restarted.SetRunTag("gen2", 10);
  EXPECT_EQ(restarted.Probe(14, 0).kind, RunProbe::Kind::kEnded);
  EXPECT_EQ(restarted.Probe(14, 0).exit_code, 7);
  ProcessRunner other(dir, dir / "work");
  other.SetRunTag("gen3", 10);
  EXPECT_EQ(other.Probe(14, 0).kind, RunProbe::Kind::kNeverRan);
}

// Regression (jobs_not_isolated_from_the_daemon): a job ran as the daemon's
// user (root) and read the API token. Run as another user, it cannot read the
// daemon's 0600 files and writes its log only through its descriptors.
TEST(ProcessRunnerTest, RunsAsTheJobsUser) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to switch users";
  StatusOr<RunAsUser> nobody = LookUpUser("nobody");
  if (!nobody.ok()) GTEST_SKIP() << "no user nobody here";
  const auto dir = MakeTempDir("migsched-runner");
  std::filesystem::permissions(dir, std::filesystem::perms(0711));
  { std::ofstream(dir / "token") << "secret\n"; }
  std::filesystem::permissions(dir / "token", std::filesystem::perms(0600));
  ProcessRunner runner(dir, dir / "work");
  LaunchSpec spec;
  spec.job = 1;
  spec.user = *nobody;
  spec.argv = {"sh", "-c",
               "id -u; echo $USER; cat " + (dir / "token").string() + " || echo denied"};
  StatusOr<Launched> l = runner.Launch(spec);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  ASSERT_EQ(WaitEnd(runner, 1, l->pgid).kind, ProcessStatus::Kind::kExited);
  const std::string log = ReadFile(runner.LogPath(1));
  EXPECT_TRUE(log.starts_with(std::to_string(nobody->uid) + "\nnobody\n")) << log;
  EXPECT_NE(log.find("denied"), std::string::npos) << log;
  EXPECT_EQ(log.find("secret"), std::string::npos) << log;
  // Its work dir is its own, mode 0700; the log is the daemon's, 0600.
  struct stat st;
  ASSERT_EQ(::stat(runner.WorkDir(1).c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, nobody->uid);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat(runner.LogPath(1).c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(LookUpUser("no-such-user-migsched").status().message(),
            "unknown user 'no-such-user-migsched'");
}

}  // namespace
}  // namespace migsched
