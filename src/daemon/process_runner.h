// ProcessRunner: runs a daemon job's command as a process.
//
// Layout: <state_dir>/jobs/<id>/ (mode 0700, the daemon's user):
//   log          stdout and stderr of every run of the job (appended, 0600);
//                the job writes it through its descriptors, it cannot open it
//   run          the run lock: "<monitor pid> <attempt>\n", locked (an OFD
//                write lock) by the monitor of the live run for its lifetime
//   exit         "<status> <attempt> <tag>\n" of the last run that ended (0..255,
//                or 256+N when killed by signal N; files of older versions hold
//                128+N for a signal); <tag> is the state dir's
//                generation (SetRunTag): a file with another tag (left by a
//                store that was replaced) is never read as this job's status
//                (a file without one, written before tags existed, only for
//                jobs below the `untagged_below` id given to SetRunTag)
//   helper-exit  the same for a helper command (a checkpoint)
// and <work_dir>/<id>/ (mode 0700, owned by the job's user): the default
// working directory of the job.
//
// How a job is started (the "monitor" design, chosen over a `/bin/sh -c
// '"$@"; echo $? > exit'` wrapper because a shell wrapper dies with the
// job's process group on SIGTERM/SIGKILL before it can write the status):
//   daemon ──fork──> monitor: setsid() (a new session and process group whose
//                    id is the monitor's pid = `pgid`), takes the run lock,
//                    ignores SIGTERM/INT/HUP
//            ──fork──> command: default signal dispositions, stdin /dev/null,
//                      stdout+stderr → log, the job's user (setgroups, setgid,
//                      setuid), chdir(cwd), execve(argv, env)
//   The monitor waits for the command and writes its status to `exit`
//   (write-then-rename), then exits with the same code, which releases the
//   run lock. Because the monitor is not the daemon, the status is recorded
//   even when the daemon is down, and a daemon restarted later finds the run
//   again: the run lock held = the monitor is alive (its pid, immune to pid
//   reuse: a lock cannot outlive its process); the lock free = the run ended
//   (`exit` says how, if it names that attempt) or never started. Signals go
//   to the whole process group, so SIGTERM reaches the command (the monitor
//   ignores it and records the outcome); SIGKILL kills the monitor too, then
//   the daemon derives the status from the monitor's own wait status when it
//   is still the parent (137), and reports the job lost otherwise.
// Launch errors are found before the job runs and reported synchronously:
// argv[0] is resolved in the daemon first (PATH of the job's environment;
// a name containing '/' relative to the cwd), and setuid/chdir/execve errors
// in the command process come back through a close-on-exec pipe.
// The monitor closes every descriptor it inherited from the daemon except
// stdio (the daemon's listening socket and database must not outlive it).
// When a command exits, what is left of its process group (background
// children) is killed with SIGKILL: a job's processes do not outlive it.
//
// Environment of the command (the daemon's own environment is not passed
// on: it may hold secrets): PATH, LANG, LC_ALL, LC_CTYPE and TZ from the
// daemon's; HOME, USER, LOGNAME and SHELL of the job's user; spec.env; then
// CUDA_VISIBLE_DEVICES=<MIG UUIDs, comma-separated>, MIGSCHED_JOB_ID=<id>,
// MIGSCHED_RUN=<attempt>, and MIGSCHED_RESTARTED=1 for a run restarted by
// migration.
//
// Thread-safety: thread-compatible. fork() in a multi-threaded process:
// only async-signal-safe calls happen between fork and execve (everything,
// the supplementary groups included, is prepared before the fork).
#ifndef MIGSCHED_DAEMON_PROCESS_RUNNER_H_
#define MIGSCHED_DAEMON_PROCESS_RUNNER_H_

#include <sys/types.h>

#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/status.h"
#include "nodeapi/job_record.h"

namespace migsched {

// The user a job runs as.
struct RunAsUser {
  std::string name;  // e.g. "nobody"
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary groups (getgrouplist)
  std::string home;
  std::string shell;
};
// The user `name` (or a numeric uid) from the system's user database.
// kInvalidArgument "unknown user 'x'".
StatusOr<RunAsUser> LookUpUser(const std::string& name);
// The daemon's own user (geteuid).
RunAsUser DaemonUser();
// OK if `user` can reach `dir` (search permission on every existing
// directory from / down to it), else kFailedPrecondition naming the first
// directory in the way and its mode. Jobs start in their work dir, so the
// daemon checks this at start rather than fail every job.
Status CheckReachable(const std::filesystem::path& dir, const RunAsUser& user);

// Everything left to read on `fd` (read(2) to the end), or nullopt when a read fails. A file
// under /proc/<pid>/ fails with ESRCH once its process has exited, even after the open
// succeeded; std::ifstream would then throw std::ios_base::failure from underflow (libstdc++),
// which a daemon scanning /proc must not. Never throws; does not close `fd`.
std::optional<std::string> ReadAllOf(int fd);
// ReadAllOf the file at `path`; nullopt when it cannot be opened or read (the process is gone).
std::optional<std::string> ReadProcFile(const std::string& path);
// Sends SIGKILL to every process whose real uid is `uid` and whose environment still holds one of
// `entries` (e.g. "HOME=/var/lib/migsched/work/12", a per-job HOME, or
// "MIGSCHED_JOB_DIR=/var/lib/migsched/work/12", which the request's env cannot change): what a
// job left behind
// under its per-job uid (a `setsid` or double-forked child leaves the job's process group, so the
// end of the group does not end it, and it would go on holding the job's MIG device and uid).
// Both must match, so the jobs of another daemon that uses the same job_uids on this host are
// never touched. Reading other users' environments needs root: 0 without it. Scans /proc (slow:
// once per ended job). Returns how many processes were signalled.
int KillLeftoversOf(uid_t uid, const std::vector<std::string>& entries);

// The real uids in [first, last] that some live process has (zombies do not count). A per-job uid
// one of them has is not given to a job: a leftover the end of its job could not tell (it changed
// both its HOME and MIGSCHED_JOB_DIR) would otherwise share the uid with the next job, and read
// its environment and working directory. Scans /proc (a few ms: once per launch of a job that
// needs a uid). Empty when /proc cannot be listed.
std::set<uint32_t> UidsWithProcesses(uint32_t first, uint32_t last);

struct LaunchSpec {
  DaemonJobId job = 0;
  int attempt = 0;                               // the run's number (MIGSCHED_RUN)
  std::vector<std::string> argv;                 // non-empty
  std::map<std::string, std::string> env;        // added to the job's environment
  std::string cwd;                               // empty: WorkDir(job)
  std::vector<std::string> mig_uuids;            // CUDA_VISIBLE_DEVICES
  bool restarted = false;                        // MIGSCHED_RESTARTED=1
  std::map<std::string, std::string> extra_env;  // e.g. MIGSCHED_RESTORE_DIR
  RunAsUser user;                                // who runs it; name empty: the daemon's user
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
  int exit_code = 0;       // 0..255; 128+N: killed by signal N (with `signalled`)
  bool signalled = false;  // killed by a signal, exit_code 128 + N; else exit_code is its status
};

// What a restarted daemon finds of run `attempt` of a job.
struct RunProbe {
  enum class Kind {
    kAlive,        // its monitor holds the run lock: pgid set
    kEnded,        // the lock is free and `exit` names this attempt: exit_code set
    kNeverRan,     // no trace of this attempt (it was not launched, or the monitor died at once)
    kOrphanAlive,  // the monitor is gone without a status but processes of its group live: pgid
  };
  Kind kind = Kind::kNeverRan;
  int64_t pgid = 0;
  int exit_code = 0;        // kEnded: as ProcessStatus::exit_code
  bool signalled = false;   // kEnded: as ProcessStatus::signalled
  double ended_unix_s = 0;  // kEnded: when its exit file was written (Unix s); 0: unknown
  // When this attempt's monitor took the run lock, just before it forked the command (the run
  // file's time, Unix s); 0: unknown (kNeverRan, or the run file is another attempt's).
  double started_unix_s = 0;
};

class ProcessRunner {
 public:
  // Job directories under <state_dir>/jobs, working directories under `work_dir`.
  ProcessRunner(std::filesystem::path state_dir, std::filesystem::path work_dir);

  // The longest run tag kept (longer ones are cut).
  static constexpr size_t kMaxRunTag = 64;
  // Exit files are written with `tag` (letters and digits: the state dir's
  // generation) and read only when they carry it, or carry none and belong
  // to a job below `untagged_below`. Default: no tag, every exit file read.
  // Call before the first Launch.
  void SetRunTag(std::string tag, DaemonJobId untagged_below);

  std::filesystem::path JobDir(DaemonJobId job) const;
  std::filesystem::path LogPath(DaemonJobId job) const;
  std::filesystem::path ExitPath(DaemonJobId job) const;
  std::filesystem::path WorkDir(DaemonJobId job) const;

  // Starts the job's command (see the file comment). Errors: kNotFound
  // "command not found: '<argv0>'" (reason kCommandNotFound, exit code 127), kFailedPrecondition
  // "not executable: '<path>'" (reason kNotExecutable, 126), kFailedPrecondition "working directory
  // '<cwd>': <errno text>", kFailedPrecondition "cannot run as user 'x':
  // <errno text>", kFailedPrecondition "run <n> of job <id> is still alive"
  // (an earlier run holds the run lock), kInvalidArgument for an empty argv,
  // kInternal for fork/pipe failures. The reason is also appended to the
  // job's log.
  StatusOr<Launched> Launch(const LaunchSpec& spec);
  // The exit code a launch error stands for, by its reason (127 kCommandNotFound, 126
  // kNotExecutable), or -1 when none applies (e.g. a missing working directory).
  static int ExitCodeOf(const Status& launch_error);

  // Never blocks. Reaps the monitor when it is our child (no zombies) and
  // kills what is left of the group (SIGKILL) before reaping it. A run that is
  // not our child (re-adopted) is alive while its monitor holds the run lock.
  ProcessStatus Poll(DaemonJobId job, int64_t pgid, int attempt);
  // After a restart: what became of run `attempt` of `job` (never blocks).
  RunProbe Probe(DaemonJobId job, int attempt) const;
  // Whether a process of the group is alive (zombies do not count: orphans
  // may wait a while for init to reap them). Scans /proc: slow, not for ticks.
  bool GroupAlive(int64_t pgid) const;
  // The user id (real) of a live member of the group that is not root: the job's command, where
  // the monitor is the daemon's (root). nullopt when none (or the group is gone). Scans /proc:
  // slow, for recovery only (a re-adopted job's per-job uid).
  std::optional<uid_t> GroupUser(int64_t pgid) const;
  // The pid of the job's command in the group: the live member whose parent is the monitor
  // (the group's leader, pid `pgid`); 0 when none. Scans /proc: for recovery only (a re-adopted
  // job's {pid} for checkpoint_command).
  int64_t GroupCommand(int64_t pgid) const;
  // Sends `sig` to the process group (ESRCH ignored).
  void SignalGroup(int64_t pgid, int sig);

  // Starts a helper command (a checkpoint) with the job's environment and
  // log, without the run lock; its status goes to helper-exit. PollHelper
  // is Poll for it.
  StatusOr<Launched> LaunchHelper(const LaunchSpec& spec);
  ProcessStatus PollHelper(DaemonJobId job, int64_t pgid);

 private:
  StatusOr<Launched> Spawn(const LaunchSpec& spec, const std::filesystem::path& exit_path,
                           bool take_run_lock);
  ProcessStatus PollPath(DaemonJobId job, int64_t pgid, const std::filesystem::path& exit_path,
                         int attempt, const std::filesystem::path* run_path);
  bool ExitBelongsTo(DaemonJobId job, const std::string& tag) const;

  std::filesystem::path state_dir_;
  std::filesystem::path work_dir_;
  std::string run_tag_;
  DaemonJobId untagged_below_ = std::numeric_limits<DaemonJobId>::max();
};

}  // namespace migsched

#endif  // MIGSCHED_DAEMON_PROCESS_RUNNER_H_
