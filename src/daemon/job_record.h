// The daemon's jobs: what a client submits (JobRequest), the states a job
// goes through, and the durable record (DaemonJobRecord) kept in the job store.
//
// States (docs/api.md): queued → starting → running → (migrating → running)*
// → succeeded | failed | cancelled; rejected when admission refuses a job
// (it can never run on this node) or its wait exceeds --max-wait.
// Times are Unix seconds (double, wall clock).
//
// Thread-safety: plain values.
#ifndef MIGSCHED_DAEMON_JOB_RECORD_H_
#define MIGSCHED_DAEMON_JOB_RECORD_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/job.h"
#include "core/status.h"

namespace migsched {

// A daemon job id: positive, assigned by the job store (SQLite rowid), never reused.
using DaemonJobId = int64_t;

enum class JobState {
  kQueued,
  kStarting,  // instances being created / process being launched
  kRunning,
  kMigrating,  // a move is in flight (§6)
  kSucceeded,  // exit code 0
  kFailed,     // non-zero exit, signal, lost process, launch failure (see reason)
  kCancelled,
  kRejected,
};
// "queued" | "starting" | … | "rejected".
std::string_view JobStateName(JobState s);
StatusOr<JobState> ParseJobState(std::string_view s);
// succeeded, failed, cancelled, rejected.
bool IsTerminal(JobState s);

// What a client asks for (POST /v1/jobs). Exactly one of `profile` and
// `gpu_fraction` is set.
struct JobRequest {
  std::string profile;               // exact profile name, e.g. "2g.10gb"; empty with gpu_fraction
  double gpu_fraction = 0;           // in (0, 1] when profile is empty
  int count = 1;                     // instances wanted together (gang), 1..64
  std::vector<std::string> command;  // argv, non-empty; argv[0] looked up in PATH
  std::map<std::string, std::string> env;  // added to the daemon's environment
  std::string cwd;                         // working directory; empty = the state dir's jobs/<id>/
  Migratable migratable = Migratable::kNone;  // none | restart | checkpoint
  bool latency_sensitive = false;
  int priority = 0;  // recorded; FIFO order is by submission (§5)
  std::string name;  // optional label

  // The scheduler core's view of the request (duration unknown: 0).
  Job ToJob() const;
};

// Where one instance of a job runs.
struct JobInstance {
  int gpu = -1;          // NVML device index
  std::string profile;   // profile name
  int start = 0;         // placement start, placement units
  int size = 0;          // placement size, placement units
  std::string mig_uuid;  // "MIG-…"
  unsigned int gi_id = 0;
  unsigned int ci_id = 0;
};

// The durable record of one job.
struct DaemonJobRecord {
  DaemonJobId id = 0;
  JobRequest request;
  JobState state = JobState::kQueued;
  double submitted_at = 0;             // Unix seconds
  double started_at = 0;               // 0 until running
  double ended_at = 0;                 // 0 until terminal
  std::vector<JobInstance> instances;  // empty unless starting/running/migrating
  int64_t pid = 0;                     // process (group leader) id, 0 if none
  std::optional<int> exit_code;        // set when the process ended (128+N for signal N)
  std::string reason;                  // why failed/cancelled/rejected, human-readable
  int restarts = 0;                    // restarts by migration (MIGSCHED_RESTARTED=1)
  int migrations = 0;
};

}  // namespace migsched

#endif  // MIGSCHED_DAEMON_JOB_RECORD_H_
