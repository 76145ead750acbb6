// ProcessRunner: runs a daemon job's command as a process.
//
// Layout: <state_dir>/jobs/<id>/log (stdout and stderr, appended; every run
// of the job, restarts included, writes to the same file) and
// <state_dir>/jobs/<id>/exit (the exit status of the last run, decimal).
//
// How a job is started (the "monitor" design, chosen over a `/bin/sh -c
// '"$@"; echo $? > exit'` wrapper because a shell wrapper dies with the
// job's process group on SIGTERM/SIGKILL before it can write the status):
//   daemon ──fork──> monitor: setsid() (a new session and process group whose
//                    id is the monitor's pid = `pgid`), ignores SIGTERM/INT/HUP
//            ──fork──> command: default signal dispositions, stdin /dev/null,
//                      stdout+stderr → log, chdir(cwd), execve(argv, env)
//   The monitor waits for the command and writes its status to `exit`
//   (0..255; 128+N when killed by signal N) with write-then-rename, then exits
//   with the same code. Because the monitor is not the daemon, the status is
//   recorded even when the daemon is down; a daemon restarted later reads it
//   (a re-adopted job is no longer our child). Signals are sent to the whole
//   process group, so SIGTERM reaches the command (the monitor ignores it and
//   records the outcome); SIGKILL kills the monitor too, then the daemon
//   derives the status from the monitor's own wait status when it is still
//   the parent (137), and reports the job lost otherwise.
// Launch errors are found before the job runs and reported synchronously:
// argv[0] is resolved in the daemon first (PATH of the job's environment;
// a name containing '/' relative to the cwd), and chdir/execve errors in the
// command process come back through a close-on-exec pipe.
// The monitor closes every descriptor it inherited from the daemon except
// stdio (the daemon's listening socket and database must not outlive it).
// When a command exits, what is left of its process group (background
// children) is killed with SIGKILL: a job's processes do not outlive it.
//
// Environment of the command: the daemon's, plus spec.env, plus
// CUDA_VISIBLE_DEVICES=<MIG UUIDs, comma-separated>, MIGSCHED_JOB_ID=<id>,
// and MIGSCHED_RESTARTED=1 for a run restarted by migration.
//
// Thread-safety: thread-compatible (the daemon calls it under its lock).
// fork() in a multi-threaded process: only async-signal-safe calls happen
// between fork and execve (everything is prepared before the fork).
#ifndef MIGSCHED_DAEMON_PROCESS_RUNNER_H_
#define MIGSCHED_DAEMON_PROCESS_RUNNER_H_

#include <sys/types.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "daemon/job_record.h"

namespace migsched {

struct LaunchSpec {
  DaemonJobId job = 0;
  std::vector<std::string> argv;                 // non-empty
  std::map<std::string, std::string> env;        // added to the daemon's environment
  std::string cwd;                               // empty: JobDir(job)
  std::vector<std::string> mig_uuids;            // CUDA_VISIBLE_DEVICES
  bool restarted = false;                        // MIGSCHED_RESTARTED=1
  std::map<std::string, std::string> extra_env;  // e.g. MIGSCHED_RESTORE_DIR
};

struct Launched {
  int64_t pgid = 0;  // the monitor's pid: process group (and session) id
  int64_t pid = 0;   // the command's own pid
};

struct ProcessStatus {
  enum class Kind {
    kRunning,
    kExited,  // exit_code set
    kLost,    // gone without a recorded status (not our child, no exit file)
  };
  Kind kind = Kind::kRunning;
  int exit_code = 0;  // 0..255; 128+N: killed by signal N
};

class ProcessRunner {
 public:
  explicit ProcessRunner(std::filesystem::path state_dir);

  std::filesystem::path JobDir(DaemonJobId job) const;
  std::filesystem::path LogPath(DaemonJobId job) const;
  std::filesystem::path ExitPath(DaemonJobId job) const;

  // Starts the job's command (see the file comment). Removes a previous exit
  // file first. Errors: kNotFound "command not found: '<argv0>'" (exit code
  // 127), kFailedPrecondition "not executable: '<path>'" (126), kFailedPrecondition "working
  // directory '<cwd>': <errno text>", kInvalidArgument for an empty argv, kInternal for fork/pipe
  // failures. The reason is also appended to the job's log.
  StatusOr<Launched> Launch(const LaunchSpec& spec);
  // The exit code a launch error stands for (127 command not found, 126 not
  // executable), or -1 when none applies (e.g. a missing working directory).
  static int ExitCodeOf(const Status& launch_error);

  // Never blocks. Reaps the monitor when it is our child (no zombies) and
  // kills what is left of the group (SIGKILL) before reaping it.
  ProcessStatus Poll(DaemonJobId job, int64_t pgid);
  // Whether a process of the group is alive (zombies do not count: orphans
  // may wait a while for init to reap them).
  bool GroupAlive(int64_t pgid) const;
  // Sends `sig` to the process group (ESRCH ignored).
  void SignalGroup(int64_t pgid, int sig);
  // Blocking: SIGTERM to the group, waits up to `grace_s` for it to be gone,
  // then SIGKILL (and waits up to 1 s more). Returns true if SIGKILL was needed.
  // The status stays available to Poll.
  bool Terminate(DaemonJobId job, int64_t pgid, double grace_s);

  // Runs a helper command (checkpoint) to completion with the job's
  // environment and log, blocking up to `timeout_s` (then SIGKILL). Returns
  // its exit code.
  StatusOr<int> RunToCompletion(const LaunchSpec& spec, double timeout_s);

 private:
  StatusOr<Launched> Spawn(const LaunchSpec& spec, const std::filesystem::path& exit_path);

  std::filesystem::path state_dir_;
  std::map<int64_t, int> reaped_;  // monitor pid -> wait status, reaped by Terminate
};

}  // namespace migsched

#endif  // MIGSCHED_DAEMON_PROCESS_RUNNER_H_
