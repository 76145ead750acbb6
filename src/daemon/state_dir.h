// StateDir: the daemon's state directory and what keeps it safe.
//
//   <state_dir>/            mode 0700, owned by the daemon's user
//     lock                  flock'ed for the daemon's lifetime: one daemon per state dir
//     migsched.db (-wal, -shm)   the job store (0600)
//     token                 the API token file (0600), unless configured elsewhere
//     jobs/<id>/            per job (0700): log, exit, run (the run lock), checkpoints
//     fake-backend.json     the fake backend's instances
//
// Jobs run as another user (config job_user) and must not read any of it
// (the token, other jobs' logs, their environment in the database): Open
// refuses a directory that group or others may access at all, or that the
// daemon's user does not own, with the command that fixes it; files the
// daemon creates are 0600 (it sets umask 077). Open also refuses a database
// or token file that group or others may read.
//
// Check() notices a state dir that was deleted or replaced while the daemon
// runs (the database would then be written into a deleted file): the daemon
// stops taking submissions and says why.
//
// Thread-safety: Check is thread-safe; the rest is set up once.
#ifndef MIGSCHED_DAEMON_STATE_DIR_H_
#define MIGSCHED_DAEMON_STATE_DIR_H_

#include <sys/types.h>

#include <filesystem>
#include <memory>
#include <string>

#include "core/status.h"

namespace migsched {

class StateDir {
 public:
  // Creates `path` (mode 0700) if missing, else checks its owner and mode;
  // checks the database and token files in it if they exist; takes the lock.
  // Errors (kFailedPrecondition) name the path and the fix, e.g.
  //   "state_dir /var/lib/migsched has mode 0755: group or others may read it (job logs,
  //    the database, the token); run chmod 700 /var/lib/migsched"
  //   "state_dir /x is in use by another migsched serve (pid 4242): one daemon per state dir"
  static StatusOr<std::unique_ptr<StateDir>> Open(const std::filesystem::path& path);
  ~StateDir();  // releases the lock
  StateDir(const StateDir&) = delete;
  StateDir& operator=(const StateDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

  // OK while the directory opened is still `path` (not deleted, moved or
  // replaced); kUnavailable saying what happened otherwise.
  Status Check() const;

  // One daemon per work_dir too (the jobs' working directories, `<work_dir>/<id>`): creates it
  // (0711) if missing and takes `<work_dir>/.migsched-owner` (0600): flock'ed for the daemon's
  // lifetime, and naming the state dir whose jobs it holds. Two daemons on one work_dir would
  // hand each other's job directories (same ids, same paths) to their jobs (a trial's: a job of
  // one read and could replace another's files). kFailedPrecondition naming the work_dir and
  // the other daemon's pid, or the state dir it belongs to. Call once, after Open.
  Status ClaimWorkDir(const std::filesystem::path& work_dir);

  // Whether a file or directory mode gives group or others any access.
  static bool OpenToOthers(mode_t mode) { return (mode & 077) != 0; }
  // Refuses `file` (if it exists) when group or others may access it;
  // `what` names it in the message ("database", "token file").
  static Status CheckPrivateFile(const std::filesystem::path& file, const std::string& what);

 private:
  StateDir(std::filesystem::path path, int dir_fd, int lock_fd, dev_t dev, ino_t ino)
      : path_(std::move(path)), dir_fd_(dir_fd), lock_fd_(lock_fd), dev_(dev), ino_(ino) {}

  std::filesystem::path path_;
  int dir_fd_ = -1;        // O_DIRECTORY descriptor of the directory opened
  int lock_fd_ = -1;       // <state_dir>/lock, flock'ed
  int work_lock_fd_ = -1;  // <work_dir>/.migsched-owner, flock'ed (ClaimWorkDir)
  dev_t dev_ = 0;
  ino_t ino_ = 0;
};

}  // namespace migsched

#endif  // MIGSCHED_DAEMON_STATE_DIR_H_
