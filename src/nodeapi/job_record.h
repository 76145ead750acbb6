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
// States: JobState below; every change of a record's state is one edge of the
// life cycle, applied by TransitionJob (its table in job_record.cc, docs/daemon.md "Job
// states"). Times are Unix seconds (double, wall clock).
//
// Thread-safety: plain values.
#ifndef MIGSCHED_NODEAPI_JOB_RECORD_H_
#define MIGSCHED_NODEAPI_JOB_RECORD_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/job.h"
#include "core/status.h"
#include "nodeapi/nvml_index.h"
#include "nodeapi/placement.h"

namespace migsched {

// A daemon job id: positive, assigned by the daemon in submission order,
// never reused (the job store keeps the highest id ever given, pruned jobs
// included). The scheduler core's JobId (64 bits).
using DaemonJobId = JobId;

// Largest `count` of a job and number of instances of an allocation (one
// home for the limit: request parsing, the daemon and the client use it).
inline constexpr int kMaxJobCount = 64;

// A job's `time_limit_s` (0: none): from 1 s to 1e9 s (about 31 years). The daemon checks
// limits at its ticks (0.1 s by default), so a limit below a second ended a job that exited at
// once as `timeout` (1e-300 was taken and shown as 0:00); above 1e9 s the jobs table showed
// UNLIMITED for a limit the scheduler counts (regression: time_limit_out_of_bounds).
inline constexpr double kMinTimeLimitS = 1;
inline constexpr double kMaxTimeLimitS = 1e9;

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

// The life cycle: every edge a record's state may take (docs/daemon.md "Job
// states" shows the same machine). A new record starts in its kind's
// InitialState; nothing leaves a terminal state; no state goes to itself.
//
//   job (a process of ours)
//     from \ to   queued starting running migrating | succeeded failed cancelled timeout rejected
//     queued         .      x        .       .       |     .        .      x         .       x
//     starting       x      .        x       .       |     x        x      x         x       .
//     running        .      .        .       x       |     x        x      x         x       .
//     migrating      x      x        x       .       |     x        x      x         x       .
//
//   allocation (instances held for an owner)
//     from \ to   running | failed released
//     starting       x     |   x       .
//     running        .     |   x       x
//
// What each edge is:
//   queued → starting              placed: its instances are being created
//   queued → rejected              can never run here, or waited longer than max-wait
//   queued → cancelled             cancelled while queued
//   starting → running             its process runs (launched, or re-adopted after a restart)
//   starting → queued              requeued: its instances could not be created, or the
//                                  daemon restarted before its launch
//   running → migrating            a move (§6) begins
//   migrating → running            the move is abandoned (the job stays where it was), or
//                                  the daemon restarted during it and found the job running
//   migrating → starting           switched over: relaunched on the target
//   migrating → queued             stopped for a move when the daemon went down: requeued
//   starting | running | migrating → succeeded | failed | cancelled | timeout
//                                  its run ended (exit code, a signal, a cancel, its time
//                                  limit), a launch or a placement failed for good, or its
//                                  process was lost
//   allocation starting → running  bound: its instances exist
//   allocation starting → failed   the bind failed (a create the hardware refused)
//   allocation running → released  released by its owner
//   allocation running → failed    an instance vanished while the daemon was down
//
// Initial states: a job is queued (then rejected at once when it can never
// run); an allocation is starting (it never queues).
JobState InitialState(JobKind kind);
// Whether from → to is an edge of `kind`'s life cycle (the tables above).
bool IsLegalTransition(JobKind kind, JobState from, JobState to);

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

// One instance an allocation asks for (POST /v1/allocations): a profile
// anywhere (the daemon chooses the placement), or an exact placement. `gpu` -1
// says "anywhere", and exact() is the one place that reads it so. (A
// reservation names exact placements only: PlacementRef.)
struct RequestedInstance {
  NvmlIndex gpu;        // -1 (the default): the daemon chooses; else with start >= 0
  std::string profile;  // exact profile name
  int start = -1;       // placement start, placement units; -1 with gpu -1

  // A profile anywhere.
  static RequestedInstance Anywhere(std::string profile) {
    return {NvmlIndex(), std::move(profile), -1};
  }
  // Exactly `p`.
  static RequestedInstance At(PlacementRef p) { return {p.gpu, std::move(p.profile), p.start}; }
  // Whether it names an exact placement (a GPU is given).
  bool exact() const { return gpu.value() >= 0; }
  // The placement it names; only where exact().
  PlacementRef placement() const { return {gpu, profile, start}; }
};

// POST /v1/allocations: instances held for `owner` (docs/api.md).
struct AllocationRequest {
  std::string owner;                         // the owner key, e.g. "slurm:1234" (required)
  std::vector<RequestedInstance> instances;  // empty: every placement of `reservation`
  std::string reservation;                   // bind exactly this reservation (its owner key)
  std::string reservation_prefix;            // or any reservation whose key starts with this
  std::string name;                          // optional label
  // The owner never moves it off its GPUs (a job that is not migratable or is latency-sensitive,
  // as its engine knows it): the instances count as anchoring their GPUs in every view
  // (InstanceView::anchors, §4 step 2). An allocation that binds a reservation made with
  // `anchors` anchors too: its record says true.
  bool anchors = false;
};

// One instance of a job or allocation: its placement (the PlacementRef it
// is: gpu, profile, start), its size and which instance it is on the GPU.
struct JobInstance : PlacementRef {
  int size = 0;          // placement size, placement units
  std::string mig_uuid;  // "MIG-…"; empty while it is being created
  unsigned int gi_id = 0;
  unsigned int ci_id = 0;

  // Where it is, without which instance it is.
  const PlacementRef& placement() const { return *this; }
  // Equal placements and equal instances (not only the placement's ==).
  bool operator==(const JobInstance&) const = default;
};

// The durable record of one job or allocation.
struct DaemonJobRecord {
  DaemonJobId id = 0;
  JobKind kind = JobKind::kJob;
  JobRequest request;            // kJob
  AllocationRequest allocation;  // kAllocation
  std::string idempotency_key;   // client-supplied; empty: none
  // Set by NewJobRecord, then changed only by TransitionJob (the store and the
  // client read it back).
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

// A new record of `kind`: its id, submission time (Unix seconds) and the
// kind's InitialState.
DaemonJobRecord NewJobRecord(DaemonJobId id, JobKind kind, double submitted_at);

// The one way a record's state changes: applies the edge r.state → `to` at
// `now` (Unix seconds) with what belongs to every edge: entering running sets
// started_at (its first start only: a relaunch after a move keeps it),
// entering a terminal state sets ended_at. An edge the life cycle does not
// have is a bug in the daemon: kInternal naming the job and both states, and
// `r` is left as it was (the caller logs it and leaves the job where it is;
// never a crash). What else an edge changes (instances, pid, reason, exit
// code) is the caller's.
Status TransitionJob(DaemonJobRecord& r, JobState to, double now);

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

#endif  // MIGSCHED_NODEAPI_JOB_RECORD_H_
