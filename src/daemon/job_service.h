// JobService: the job API (POST/GET/DELETE /v1/jobs, POST /v1/plan, a job's
// log; docs/api.md) and the life of every job the daemon runs, from its
// submission to its end:
//
//   submitted  validated (request, user, offered profile), stored, then
//              queued in the scheduler (or stored as rejected when it can
//              never run here);
//   placed     the control loop hands it the scheduler's Decision (Place):
//              the plan runs on InstanceSync's thread; once the instances
//              exist the launch intent (the run's number) is stored, then
//              the launch is pending; a failed plan requeues the job (or
//              fails it after kMaxCreateFailures of its own);
//   launched   the control loop takes the pending launches (TakeLaunches),
//              forks them without the lock (Launch), and records each
//              (RecordLaunch): running, or failed with the launch's error;
//   ended      Reap finds the process's exit status; FinishJob makes the job
//              terminal, releases its instances and stores it;
//   moved      MoveExecutor (owned here, with this service as its MoveHost)
//              carries out the §6 moves the control loop begins (BeginMove).
//
// Ownership. JobService owns the job API's state:
//   * the JobTable (every record, current and visible) and the
//     IdempotencyKeys gate; NodeService reads and writes allocations in the
//     same table and gate (one id space, one key namespace), through the
//     pointers table() and keys() hand it, and recovery fills the table
//     before anything is served;
//   * the record ids (NextJobId) and the users jobs may run as;
//   * the running processes (runs_) and the pending launches (launches_):
//     what Cancel and FinishJob share. Cancel signals a run, or marks a
//     job whose launch is still pending, which TakeLaunches then ends;
//     FinishJob (the only way a job becomes terminal: cancel, exit, failed
//     placement or launch, expired wait, a controller's release) forgets
//     both; the only other writers are Reap, TakeLaunches, RecordLaunch,
//     RequestLaunch (a placement or a move ready to launch) and Adopt;
//   * per-job bookkeeping of the queue: when each job was first queued,
//     placement failures counted against it, which jobs carry a "waiting:"
//     reason, and whether a job left its instances since the control loop
//     last asked (completed());
//   * the moves in flight (MoveExecutor).
// It does not own the lock, the store, the model, the sync, the process
// runner or the counters: the daemon does and passes them in.
//
// Locks. The daemon's *state lock* (passed in as `state_mu`) guards every
// member here and everything reached through the model, the sync and the
// table.
//   * The API calls (Submit, List, Get, KindOf, Cancel, PreviewPlan) take it
//     themselves (MIGSCHED_EXCLUDES); LogPath and Launch take no lock; every
//     other method requires the lock held (MIGSCHED_REQUIRES(kStateLock),
//     state_lock.h: the control loop, recovery, NodeService through the
//     daemon) and never blocks.
//   * Nothing slow runs under it: plans run on InstanceSync's thread, store
//     writes on StoreWriter's, forks in Launch (called without the lock);
//     Submit and Cancel wait for their commit with the lock released (Cancel
//     at most kCommitWaitS, commit_wait.h), and a Submit that reuses an
//     idempotency key waits, lock released, for the first one's commit.
//     Callbacks of the sync and the writer run with the state lock held.
//   * Lock order: the state lock, then the sync's or the writer's queue lock.
//
// Time: NowS() (the injected Clock's NowNanos since the daemon's start, the
// scheduler's clock) for queue times and the kill grace; the Clock's Unix
// time for the records' submitted/started/ended times and pruning.
#ifndef MIGSCHED_DAEMON_JOB_SERVICE_H_
#define MIGSCHED_DAEMON_JOB_SERVICE_H_

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "daemon/config.h"
#include "daemon/idempotency_keys.h"
#include "daemon/instance_sync.h"
#include "daemon/job_table.h"
#include "daemon/metrics.h"
#include "daemon/move_executor.h"
#include "daemon/node_api.h"
#include "daemon/node_model.h"
#include "daemon/process_runner.h"
#include "daemon/recovery.h"
#include "daemon/service_host.h"
#include "daemon/state_lock.h"
#include "sched/scheduler.h"

namespace migsched {

// The users jobs may run as (the config's job_user, job_uids and job_users).
struct JobUsers {
  RunAsUser default_user;                    // a job that names no user (unless dynamic)
  std::map<std::string, RunAsUser> allowed;  // by name, default_user included unless dynamic
  // Per-job uids (like systemd's DynamicUser): a job that names no user runs
  // under a uid of its own in [dynamic_first, dynamic_first + dynamic_count),
  // group the same number, no supplementary groups, HOME its work dir. 0: off.
  uint32_t dynamic_first = 0;
  uint32_t dynamic_count = 0;
  std::set<uint32_t> system_uids;  // uids of the range that users of the system have: skipped
};

// Resolves the config's users: job_user, else (the daemon runs as root)
// per-job uids from job_uids, or "nobody" when job_uids is empty, else the
// daemon's own user; then job_users; each must reach the work dir. Warns when
// jobs would run as the daemon's own user.
// Errors: kFailedPrecondition (an unknown user, no "nobody" for a root
// daemon, a work dir a user cannot reach, root without allow_root_jobs, a
// job_uids range whose every uid belongs to a user of the system; uids of
// system users in the range are skipped).
StatusOr<JobUsers> ResolveJobUsers(const DaemonConfig& config);

class JobService : public MoveHost {
 public:
  // Create failures a job survives (requeued) before it fails.
  static constexpr int kMaxCreateFailures = 3;

  // Nothing passed in is owned; everything must outlive the service.
  // `state_mu` is the daemon's state lock; `t0_ns` the Clock's NowNanos at
  // the daemon's start (NowS counts from it, as the scheduler's clock does).
  JobService(NodeModel* model, InstanceSync* sync, ProcessRunner* runner, JobUsers users,
             const DaemonConfig* config, DaemonCounters* counters, Clock* clock, int64_t t0_ns,
             StateMutex* state_mu, ServiceHost* host);
  JobService(const JobService&) = delete;
  JobService& operator=(const JobService&) = delete;

  // ---- the job API (each takes the state lock) ----
  // Validates and stores a job, then queues it (or stores it rejected, with
  // the reason, when it can never run here). `key` (may be empty): a second
  // request with the same key and the same request gets the first record
  // back (`duplicate` true). Blocks, lock released, until the record is
  // committed. Errors: kInvalidArgument (the request, an unknown user, a
  // profile not offered here), kFailedPrecondition (the key was used for
  // another request), kUnavailable (not accepting: Accepting(); or the
  // commit failed: the job was not accepted).
  StatusOr<SubmitResult> Submit(const JobRequest& request, const std::string& key)
      MIGSCHED_EXCLUDES(kStateLock);
  // The visible records matching `query`, ascending id.
  JobPage List(const JobQuery& query) const MIGSCHED_EXCLUDES(kStateLock);
  // The visible record. kNotFound.
  StatusOr<DaemonJobRecord> Get(DaemonJobId id) const MIGSCHED_EXCLUDES(kStateLock);
  // The record's kind (allocations are released, not cancelled: the daemon
  // hands those to NodeService). kNotFound when there is no visible record.
  StatusOr<JobKind> KindOf(DaemonJobId id) const MIGSCHED_EXCLUDES(kStateLock);
  // Cancels job `id` (not an allocation): a queued job ends cancelled; a
  // running one gets SIGTERM (SIGKILL after kill_grace_s) and ends cancelled
  // when its process does; a pending launch is dropped. The request is
  // stored before it shows and survives a restart. Waits, lock released, at
  // most kCommitWaitS for the commit; returns the visible record.
  // Errors: kNotFound, kFailedPrecondition (already terminal, or an
  // allocation), kUnavailable (not accepting, or the commit did not come).
  StatusOr<DaemonJobRecord> Cancel(DaemonJobId id) MIGSCHED_EXCLUDES(kStateLock);
  // What submitting `request` now would do, on a scratch copy of the
  // Cluster (nothing changes). Errors as Submit's validation.
  StatusOr<PlanPreview> PreviewPlan(const JobRequest& request) const MIGSCHED_EXCLUDES(kStateLock);
  // Where job `id`'s log is (no lock; the file may not exist).
  std::filesystem::path LogPath(DaemonJobId id) const { return runner_->LogPath(id); }

  // ---- the control loop (state lock held) ----
  // Adopts what recovery found: the next id, the jobs to queue again (in
  // this order), the processes that still run (SIGTERM again for a cancel).
  void Adopt(const RecoveryResult& rec) MIGSCHED_REQUIRES(kStateLock);
  // Polls every run: a process that ended ends its job (or completes its
  // move); a run past its time limit (not moving) is stopped as a cancel is,
  // and ends `timeout`; a run past its kill grace gets SIGKILL. Never blocks.
  void Reap() MIGSCHED_REQUIRES(kStateLock);
  // Advances the moves in flight (polls checkpoint helpers).
  void AdvanceMoves() MIGSCHED_REQUIRES(kStateLock) { moves_.Advance(runner_); }
  // Carries out the scheduler's decision for a queued job: its plan runs on
  // the sync's thread; the launch is requested once the instances exist and
  // the launch intent is stored.
  void Place(const Decision& d) MIGSCHED_REQUIRES(kStateLock);
  // Whether the migration pass may move job `id` now (a running job, not
  // cancelled, not already moving, its process known; `checkpoint` jobs only
  // with checkpoint and restore commands configured). Also the scheduler's
  // move filter for the evacuations (§13) it begins inside queue scans
  // (Scheduler::SetMoveFilter, set by the daemon).
  bool MayMove(DaemonJobId id) const MIGSCHED_REQUIRES(kStateLock);
  // Tells the scheduler when job `id` is expected to end: `started_s` (daemon time) plus its
  // time_limit_s; nothing for a job without one (its end is unknown: never, §13). The same time
  // is the limit Reap enforces on the job's run, once it has one. Called when
  // the scheduler places it, at each launch (a relaunch after a move starts anew) and at
  // recovery.
  void NoteExpectedEnd(DaemonJobId id, double started_s) MIGSCHED_REQUIRES(kStateLock);
  // The scheduler began `st`: the move executor carries it out.
  void BeginMove(const MigrationStart& st) MIGSCHED_REQUIRES(kStateLock) { moves_.Begin(st); }
  // Says why a queued job cannot start while GPUs are drained or
  // unreachable (a gang larger than what the open GPUs can ever hold waits,
  // with the reason, rather than silently), and clears it when they return. `paused`: the queue
  // scan is paused (Daemon::Pause): every queued job says so instead.
  void UpdateWaitReasons(bool paused = false) MIGSCHED_REQUIRES(kStateLock);
  // Forgets the terminal jobs that ended more than config.retention_s ago
  // (none when it is < 0): deleted from the store; their job and work dirs
  // are appended to `remove` (for the caller to delete without the lock).
  void Prune(std::vector<std::filesystem::path>* remove) MIGSCHED_REQUIRES(kStateLock);
  // Whether a job left its instances (ended, or switched over from a move's
  // source) since the last ClearCompleted.
  bool completed() const MIGSCHED_REQUIRES(kStateLock) { return completed_; }
  void ClearCompleted() MIGSCHED_REQUIRES(kStateLock) { completed_ = false; }
  // Processes or launches outstanding (a "drain" shutdown waits for none).
  bool HasProcesses() const MIGSCHED_REQUIRES(kStateLock) {
    return !runs_.empty() || !launches_.empty();
  }
  // Launches to make now (not those waiting for a per-job uid, nor those waiting to be tried
  // again after the daemon's own trouble: TakeLaunches tries them again).
  bool HasPendingLaunches() const MIGSCHED_REQUIRES(kStateLock) {
    const double now = NowS();
    for (const auto& [id, l] : launches_) {
      auto retry = launch_retries_.find(id);
      if (!uid_waits_.contains(id) && (retry == launch_retries_.end() || retry->second.at_s <= now))
        return true;
    }
    return false;
  }
  // Why jobs cannot be launched now, while some launch waits to be tried again after the daemon's
  // own trouble (its job or working directories, the run lock, fork); empty otherwise (Health).
  std::string LaunchTrouble() const MIGSCHED_REQUIRES(kStateLock) {
    return launch_retries_.empty() ? std::string() : launch_trouble_;
  }
  // Visible records per state (metrics).
  std::map<std::string, int64_t> CountByState() const MIGSCHED_REQUIRES(kStateLock) {
    return jobs_.CountByState();
  }
  // How long the longest-waiting queued job has waited (seconds; 0: none queued).
  double OldestWaitS() const MIGSCHED_REQUIRES(kStateLock);

  // A launch taken out of the pending ones, carried out without the lock.
  struct PendingLaunch {
    DaemonJobId id = 0;
    LaunchRequest request;
    LaunchSpec spec;
    StatusOr<Launched> result = InternalError("not launched");
  };
  // Takes the pending launches whose job still wants them (a job
  // cancelled before it started ends here, cancelled).
  std::vector<PendingLaunch> TakeLaunches() MIGSCHED_REQUIRES(kStateLock);
  // No lock (call it without the state lock): forks `l` and waits for the
  // exec handshake (milliseconds); sets l.result.
  void Launch(PendingLaunch& l) const;
  // Records what Launch did: the job runs (stored with a "started"
  // or "migrated" event), or it fails with the launch's error.
  void RecordLaunch(PendingLaunch& l) MIGSCHED_REQUIRES(kStateLock);

  // ---- for NodeService (through the daemon) and recovery (state lock held) ----
  // The table and the gate, for the daemon to hand NodeService and recovery
  // at start-up (their users hold the pointers MIGSCHED_PT_GUARDED_BY(kStateLock)).
  JobTable* table() { return &jobs_; }
  IdempotencyKeys* keys() { return &keys_; }
  // A new record id (jobs and allocations; never reused).
  DaemonJobId NextJobId() MIGSCHED_REQUIRES(kStateLock) { return next_id_++; }
  // Releases the instances record `id` holds in the scheduler (no store
  // write); marks completed().
  void ReleaseInstances(DaemonJobId id) MIGSCHED_REQUIRES(kStateLock);

  // ---- MoveHost (state lock held; also the daemon's way to end a record) ----
  DaemonJobRecord* MutableJob(DaemonJobId id) override MIGSCHED_REQUIRES(kStateLock) {
    return jobs_.Current(id);
  }
  void SaveJob(DaemonJobRecord& r, std::string_view event, nlohmann::json detail,
               std::function<void()> then = nullptr) override MIGSCHED_REQUIRES(kStateLock);
  void StopProcess(DaemonJobId id) override MIGSCHED_REQUIRES(kStateLock);
  int64_t ProcessGroup(DaemonJobId id) const override MIGSCHED_REQUIRES(kStateLock);
  int64_t ProcessId(DaemonJobId id) const override MIGSCHED_REQUIRES(kStateLock);
  void RequestLaunch(DaemonJobId id, LaunchRequest request) override MIGSCHED_REQUIRES(kStateLock);
  std::vector<JobInstance> InstancesOf(DaemonJobId id) override MIGSCHED_REQUIRES(kStateLock);
  // The job leaves the system (terminal `state`, through TransitionJob): its
  // run, pending launch, move and instances are let go, and the change is
  // stored. An edge the life cycle lacks (a job that ended already, say) is
  // logged and changes nothing but forgetting a run or launch of a job that
  // ended already: the first end stays.
  void FinishJob(DaemonJobRecord& r, JobState state, std::optional<int> exit_code,
                 std::string reason) override MIGSCHED_REQUIRES(kStateLock);

 private:
  struct Run {
    int64_t pgid = 0;
    int64_t pid = 0;       // the command's own pid (re-adopted: ProcessRunner::GroupCommand)
    double kill_at_s = 0;  // > 0: SIGKILL the group at this time (NowS)
    // The SIGKILL was sent. A process re-adopted after a restart is not this daemon's child, and
    // the SIGKILL ends its monitor too, so no exit status or file says how it ended: the kill did.
    bool killed = false;
    // The time (NowS) at which the job's time limit ends: stop it then. NowS counts from this
    // daemon's start, so a limit that passed while the daemon was down is negative here.
    std::optional<double> limit_at_s;
  };

  double NowS() const { return static_cast<double>(clock_->NowNanos() - t0_ns_) / 1e9; }
  double Unix() const { return clock_->UnixSeconds(); }
  // `job`: r.ToJob(), derived once by the caller.
  Status ValidateRequest(const JobRequest& r, const Job& job) const MIGSCHED_REQUIRES(kStateLock);
  StatusOr<RunAsUser> UserFor(const JobRequest& r) const;  // users_ only: no lock
  // The uid of its own for job `id` (JobUsers::dynamic_*): the one it has (a later run), else
  // the first of the range from (id - 1) mod count on that no system user has, no other live
  // job holds and no process has (`with_processes`: UidsWithProcesses of the range); nullopt
  // when every uid is held (the job waits for one).
  std::optional<RunAsUser> DynamicUserFor(DaemonJobId id, const std::set<uint32_t>& with_processes)
      MIGSCHED_REQUIRES(kStateLock);
  // Queues `id` in the scheduler as having waited `waited_s` seconds already (a job adopted at a
  // restart: since its submission; clamped at 0).
  void Enqueue(DaemonJobId id, const Job& job, double waited_s = 0) MIGSCHED_REQUIRES(kStateLock);
  void OnPlaced(DaemonJobId id, const Status& st) MIGSCHED_REQUIRES(kStateLock);
  void PlacementFailed(DaemonJobRecord& r, const Status& st) MIGSCHED_REQUIRES(kStateLock);

  NodeModel* model_ MIGSCHED_PT_GUARDED_BY(kStateLock);
  InstanceSync* sync_;
  ProcessRunner* runner_;
  const JobUsers users_;
  const DaemonConfig* config_;
  DaemonCounters* counters_;
  Clock* clock_;
  const int64_t t0_ns_;
  StateMutex* state_mu_;
  ServiceHost* host_;

  JobTable jobs_ MIGSCHED_GUARDED_BY(kStateLock);
  IdempotencyKeys keys_ MIGSCHED_GUARDED_BY(kStateLock);
  DaemonJobId next_id_ MIGSCHED_GUARDED_BY(kStateLock) = 1;
  std::map<DaemonJobId, Run> runs_ MIGSCHED_GUARDED_BY(kStateLock);
  // The per-job uids given (live jobs).
  std::map<DaemonJobId, uint32_t> dynamic_uids_ MIGSCHED_GUARDED_BY(kStateLock);
  // Ready to launch (intent stored).
  std::map<DaemonJobId, LaunchRequest> launches_ MIGSCHED_GUARDED_BY(kStateLock);
  // The launches the last TakeLaunches left for want of a per-job uid (all in launches_).
  std::set<DaemonJobId> uid_waits_ MIGSCHED_GUARDED_BY(kStateLock);
  // Launches that failed for the daemon's own trouble (kInternal from ProcessRunner: its job or
  // working directory, the run lock, fork), all in launches_: the job keeps its instances and
  // is tried again from at_s, the wait doubling with each failure in a row up to
  // kInternalErrorRetryS. The last such failure's message (LaunchTrouble).
  struct LaunchRetry {
    double at_s = 0;
    int failures = 0;
  };
  std::map<DaemonJobId, LaunchRetry> launch_retries_ MIGSCHED_GUARDED_BY(kStateLock);
  std::string launch_trouble_ MIGSCHED_GUARDED_BY(kStateLock);
  // When each queued job was first queued.
  std::map<DaemonJobId, double> enqueued_s_ MIGSCHED_GUARDED_BY(kStateLock);
  std::map<DaemonJobId, int> create_failures_ MIGSCHED_GUARDED_BY(kStateLock);
  // Queued jobs whose reason says why they cannot start.
  std::set<DaemonJobId> waiting_reasons_ MIGSCHED_GUARDED_BY(kStateLock);
  bool completed_ MIGSCHED_GUARDED_BY(kStateLock) = false;
  MoveExecutor moves_ MIGSCHED_GUARDED_BY(kStateLock);
};

}  // namespace migsched

#endif  // MIGSCHED_DAEMON_JOB_SERVICE_H_
