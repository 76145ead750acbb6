// The daemon's jobs: what a client asks for (JobRequest for a process job,
// AllocationRequest for an allocation), the states a job goes through, and
// the durable record (DaemonJobRecord) kept in the job store.
//
// Two kinds of job share one id space, one table and one life cycle:
//   job         a process the daemon runs on its instances (POST /v1/jobs);
//   allocation  instances held for a client that runs its own processes (a
//               Slurm job, a Kubernetes pod: POST /v1/allocations); no process
//               of ours, never migrated, ended by its owner (DELETE).
//
// States (docs/api.md): queued → starting → running → (migrating → running)*
// → succeeded | failed | cancelled | timeout; rejected when admission refuses a job
// (it can never run on this node) or its wait exceeds --max-wait.
// Allocations: starting → running → released; failed when the bind fails
// (a create the hardware refused; the reservation it bound is released).
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

// A daemon job id: positive, assigned by the daemon in submission order,
// never reused (the job store keeps the highest id ever given, pruned jobs
// included). The scheduler core's JobId (64 bits).
using DaemonJobId = JobId;

// Largest `count` of a job and number of instances of an allocation (one
// home for the limit: request parsing, the daemon and the client use it).
inline constexpr int kMaxJobCount = 64;

enum class JobKind { kJob, kAllocation };
std::string_view JobKindName(JobKind k);  // "job" | "allocation"
StatusOr<JobKind> ParseJobKind(std::string_view s);

enum class JobState {
  kQueued,
  kStarting,   // instances being created / process being launched (allocation: being bound)
  kRunning,    // allocation: instances ready and held for the owner
  kMigrating,  // a move is in flight (§6)
  kSucceeded,  // exit code 0
  kFailed,     // non-zero exit, signal, lost process, launch failure, failed bind (see reason)
  kCancelled,
  kRejected,
  kReleased,  // an allocation its owner released
  kTimeout,   // ran past its time_limit_s: stopped (SIGTERM, SIGKILL after kill_grace_s)
};
// "queued" | "starting" | … | "released".
std::string_view JobStateName(JobState s);
StatusOr<JobState> ParseJobState(std::string_view s);
// Every state, in the order above.
const std::vector<JobState>& AllJobStates();
// succeeded, failed, cancelled, rejected, released, timeout.
bool IsTerminal(JobState s);

// What a client asks for (POST /v1/jobs). Exactly one of `profile` and
// `gpu_fraction` is set.
struct JobRequest {
  std::string profile;               // exact profile name, e.g. "2g.10gb"; empty with gpu_fraction
  double gpu_fraction = 0;           // in (0, 1] when profile is empty
  int count = 1;                     // instances wanted together (gang), 1..kMaxJobCount
  std::vector<std::string> command;  // argv, non-empty; argv[0] looked up in PATH
  std::map<std::string, std::string> env;     // added to the job's environment
  std::string cwd;                            // working directory; empty = the job's work dir
  Migratable migratable = Migratable::kNone;  // none | restart | checkpoint
  bool latency_sensitive = false;
  int priority = 0;  // recorded; FIFO order is by submission (§5)
  std::string name;  // optional label
  std::string user;  // run as this user (one of the config's job_users); empty: job_user
  // The job's time limit, seconds (> 0), or 0: none. The scheduler takes each run's start plus
  // the limit as the job's expected end (§13 look-ahead reservation and backfill), and the daemon
  // stops a run still going then (SIGTERM, SIGKILL after kill_grace_s): the job ends `timeout`.
  double time_limit_s = 0;

  // The scheduler core's view of the request (duration: the time limit, 0 = unknown).
  Job ToJob() const;
};

// One instance an allocation asks for: a profile anywhere (gpu < 0), or an
// exact placement (gpu >= 0 with start >= 0).
struct RequestedInstance {
  int gpu = -1;         // NVML index; -1: the daemon chooses
  std::string profile;  // exact profile name
  int start = -1;       // placement start; -1 with gpu -1
};

// POST /v1/allocations: instances held for `owner` (docs/api.md).
struct AllocationRequest {
  std::string owner;                         // the owner key, e.g. "slurm:1234" (required)
  std::vector<RequestedInstance> instances;  // empty: every placement of `reservation`
  std::string reservation;                   // bind exactly this reservation (its owner key)
  std::string reservation_prefix;            // or any reservation whose key starts with this
  std::string name;                          // optional label
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

// The durable record of one job or allocation.
struct DaemonJobRecord {
  DaemonJobId id = 0;
  JobKind kind = JobKind::kJob;
  JobRequest request;            // kJob
  AllocationRequest allocation;  // kAllocation
  std::string idempotency_key;   // client-supplied; empty: none
  JobState state = JobState::kQueued;
  double submitted_at = 0;             // Unix seconds
  double started_at = 0;               // 0 until running
  double ended_at = 0;                 // 0 until terminal
  std::vector<JobInstance> instances;  // empty unless starting/running/migrating
  int64_t pid = 0;                     // process group id (the monitor's pid), 0 if none
  std::optional<int> exit_code;        // set when the process ended (128+N for signal N)
  std::string reason;                  // why failed/cancelled/rejected, human-readable
  int restarts = 0;                    // restarts by migration (MIGSCHED_RESTARTED=1)
  int migrations = 0;
  int attempt = 0;                // launches so far; the run in flight is `attempt`
  bool cancel_requested = false;  // a cancel arrived while it ran: it ends as cancelled
  std::string bound_reservation;  // kAllocation: the reservation it consumed, if any

  // The owner key of an allocation ("" for a job).
  const std::string& owner() const { return allocation.owner; }
};

// A time-limit stop is a stop request (cancel_requested, stored and kept
// across a restart like a cancel's) whose reason starts with kTimeLimitReason:
// one durable bit, two outcomes.
inline constexpr std::string_view kTimeLimitReason = "time limit";
// Whether `r`'s stop request came from its time limit.
bool TimeLimitReached(const DaemonJobRecord& r);
// The state a job whose stop was requested ends in: timeout or cancelled.
JobState StoppedState(const DaemonJobRecord& r);
// Its reason: the time limit's (kept from the request) or `cancelled`.
std::string StoppedReason(const DaemonJobRecord& r, std::string_view cancelled);

}  // namespace migsched

#endif  // MIGSCHED_DAEMON_JOB_RECORD_H_
