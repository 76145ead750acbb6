// The Daemon's implementation class, shared by its two translation units:
// daemon.cc (setup, jobs, the control loop, recovery, shutdown) and
// daemon_node_api.cc (the node view, reservations and allocations for
// cluster controllers). Internal to src/daemon: include daemon/daemon.h.
//
// Thread-safety: every member marked [state] needs mu_ (the state lock);
// the public calls take it themselves (docs/daemon.md "Threads and locks").
#ifndef MIGSCHED_DAEMON_DAEMON_IMPL_H_
#define MIGSCHED_DAEMON_DAEMON_IMPL_H_

#include <fmt/format.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>
#include <utility>

#include "core/cluster.h"
#include "core/plan.h"
#include "daemon/daemon.h"
#include "daemon/discovery.h"
#include "daemon/instance_sync.h"
#include "daemon/job_store.h"
#include "daemon/job_table.h"
#include "daemon/move_executor.h"
#include "daemon/node_model.h"
#include "daemon/process_runner.h"
#include "daemon/recovery.h"
#include "daemon/request_json.h"
#include "daemon/reservation_table.h"
#include "daemon/state_dir.h"
#include "daemon/store_writer.h"
#include "sched/policy.h"
#include "sched/scheduler.h"

namespace migsched {
namespace daemon_internal {

// How long an API call that changed state waits for its commit.
inline constexpr double kCommitWaitS = 10;

inline std::string Dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Waits for `f` up to kCommitWaitS; kUnavailable if it did not come.
inline Status WaitFor(std::future<Status>& f, std::string_view what) {
  if (f.wait_for(std::chrono::duration<double>(kCommitWaitS)) != std::future_status::ready) {
    return UnavailableError(fmt::format(
        "{} is in effect but could not be stored within {} s; it is stored when the job store "
        "can be written",
        what, kCommitWaitS));
  }
  return f.get();
}

}  // namespace daemon_internal

class Daemon::Impl : public MoveHost {
 public:
  Impl(const DaemonConfig& config, std::unique_ptr<MigBackend> backend, const Catalog* catalog,
       Clock* clock)
      : config_(config),
        catalog_(catalog),
        clock_(clock),
        backend_(std::move(backend)),
        runner_(config.state_dir, config.WorkDir()),
        t0_ns_(clock->NowNanos()) {}
  ~Impl() override { Stop(); }

  Status Init();
  void StartWorker();
  void Stop();
  Status Tick();
  bool WaitIdle(double timeout_s);
  Status Settle(double timeout_s);
  const DaemonConfig& config() const { return config_; }
  StoreWriter* writer() { return writer_.get(); }

  StatusOr<SubmitResult> Submit(const JobRequest& request, const std::string& key);
  JobPage ListJobs(const JobQuery& query) const;
  StatusOr<DaemonJobRecord> GetJob(DaemonJobId id) const;
  StatusOr<DaemonJobRecord> Cancel(DaemonJobId id);
  StatusOr<PlanPreview> PreviewPlan(const JobRequest& request) const;
  std::filesystem::path LogPath(DaemonJobId id) const { return runner_.LogPath(id); }
  std::vector<GpuView> Gpus() const;
  NodeView Node() const;
  void Pause();
  void Resume();
  bool paused() const;
  Status SetOperatorDrain(int gpu, bool on);
  DaemonMetrics Metrics() const;
  Status Health() const;
  StatusOr<ReserveResult> Reserve(const ReservationRequest& request);
  std::vector<ReservationView> ListReservations(const std::string& prefix) const;
  StatusOr<ReservationView> GetReservation(const std::string& owner) const;
  Status ReleaseReservation(const std::string& owner);
  StatusOr<SubmitResult> Allocate(const AllocationRequest& request, const std::string& key);
  StatusOr<DaemonJobRecord> ReleaseAllocation(DaemonJobId id);
  StatusOr<std::vector<DaemonJobRecord>> ReleaseAllocationsOf(const std::string& owner);

  // ---- MoveHost (state lock held) ----
  DaemonJobRecord* MutableJob(DaemonJobId id) override { return jobs_.Current(id); }
  void SaveJob(DaemonJobRecord& r, std::string_view event, nlohmann::json detail,
               std::function<void()> then = nullptr) override;
  void StopProcess(DaemonJobId id) override;
  int64_t ProcessGroup(DaemonJobId id) const override {
    auto it = runs_.find(id);
    return it == runs_.end() ? 0 : it->second.pgid;
  }
  int64_t ProcessId(DaemonJobId id) const override {
    auto it = runs_.find(id);
    return it == runs_.end() ? 0 : it->second.pid;
  }
  void RequestLaunch(DaemonJobId id, LaunchRequest request) override {
    launches_[id] = std::move(request);
    Wake();
  }
  std::vector<JobInstance> InstancesOf(DaemonJobId id) override;
  void FinishJob(DaemonJobRecord& r, JobState state, std::optional<int> exit_code,
                 std::string reason) override {
    Finish(r, state, exit_code, std::move(reason));
  }

 private:
  struct Run {
    int64_t pgid = 0;
    int64_t pid = 0;       // the command's own pid (0 when re-adopted)
    double kill_at_s = 0;  // > 0: SIGKILL the group at this time (NowS)
  };
  // A launch taken out of launches_ to be carried out without the lock.
  struct Launch {
    DaemonJobId id = 0;
    LaunchRequest request;
    LaunchSpec spec;
    StatusOr<Launched> result = InternalError("not launched");
  };

  double NowS() const { return static_cast<double>(clock_->NowNanos() - t0_ns_) / 1e9; }
  double Unix() const { return clock_->UnixSeconds(); }
  void Wake() {
    {
      std::lock_guard<std::mutex> l(worker_mu_);
      wake_ = true;
    }
    worker_cv_.notify_all();
  }

  // [state] Queues `ops` (retried or fail-fast); `then(status)` runs under the
  // state lock once they are committed (or failed).
  void Persist(std::vector<StoreOp> ops, bool retry, std::function<void(const Status&)> then);
  // [state] Why a state-changing call is refused now (OK: it is not).
  Status Accepting() const;
  Status ValidateRequest(const JobRequest& r) const;
  StatusOr<RunAsUser> UserFor(const JobRequest& r) const;

  // ---- the control loop [state] ----
  void TickLocked(std::vector<Launch>* launches, std::vector<std::filesystem::path>* remove);
  void Reap();
  void StartPlacement(const Decision& d);
  void OnPlaced(DaemonJobId id, const Status& st);
  void PlacementFailed(DaemonJobRecord& r, const Status& st);
  void Finish(DaemonJobRecord& r, JobState state, std::optional<int> exit_code, std::string reason);
  void ReleaseInstances(JobId id);
  void RunMigrations(MigrationTrigger trigger);
  void ExpireReservations();
  void CheckPcie(double now);
  void Prune(std::vector<std::filesystem::path>* remove);
  // Says why a queued job cannot start while GPUs are drained or
  // unreachable (a gang larger than what the open GPUs can ever hold waits,
  // with the reason, rather than silently), and clears it when they return.
  void UpdateWaitReasons();
  void CollectLaunches(std::vector<Launch>* out);
  void RecordLaunch(Launch& l);
  void Enqueue(DaemonJobId id, const Job& job);

  // ---- reservations and allocations [state] ----
  StatusOr<std::vector<InstanceRef>> ResolvePlacements(const std::vector<RequestedInstance>& specs,
                                                       bool need_start) const;
  // Why `ref` cannot be held for a new holder (OK: it can), in the API's words.
  Status Conflict(const InstanceRef& ref, const std::vector<InstanceRef>& others) const;
  ReservationView ViewOf(const HeldReservation& r) const;
  void DropReservation(const std::string& owner, const std::string& why);
  JobInstance InstanceAt(const InstanceRef& ref) const;
  GpuView GpuViewOf(int g) const;

  DaemonConfig config_;
  const Catalog* catalog_;
  Clock* clock_;
  std::unique_ptr<MigBackend> backend_;
  ProcessRunner runner_;
  const int64_t t0_ns_;
  std::unique_ptr<StateDir> dir_;
  std::unique_ptr<JobStore> store_;
  std::unique_ptr<StoreWriter> writer_;
  DaemonCounters counters_;
  RunAsUser default_user_;
  std::map<std::string, RunAsUser> allowed_users_;  // by name, default_user_ included

  // The state lock and what it guards.
  mutable std::mutex mu_;
  std::unique_ptr<NodeModel> model_;
  std::unique_ptr<InstanceSync> sync_;
  std::unique_ptr<MoveExecutor> moves_;
  JobTable jobs_;
  ReservationTable reservations_;
  std::map<DaemonJobId, Run> runs_;
  std::map<DaemonJobId, LaunchRequest> launches_;  // ready to launch (intent stored)
  std::map<DaemonJobId, double> enqueued_s_;       // when each queued job was first queued
  std::map<DaemonJobId, int> create_failures_;
  std::set<std::string> pending_keys_;     // idempotency keys whose first call is being stored
  std::set<DaemonJobId> waiting_reasons_;  // queued jobs whose reason says why they cannot start
  std::condition_variable keys_cv_;
  DaemonJobId next_id_ = 1;
  bool paused_ = false;
  bool stopped_ = false;
  bool completed_ = false;  // a job ended since the last migration pass
  Status dir_health_;
  double next_dir_check_ = 0;
  double next_defrag_ = 0;
  double next_prune_ = 0;
  double next_pcie_sample_ = 0;
  std::map<int, double> pcie_saturated_since_;
  std::set<int> pcie_advised_;

  std::thread worker_;
  std::mutex worker_mu_;
  std::condition_variable worker_cv_;
  bool stop_worker_ = false;
  bool wake_ = false;
};

}  // namespace migsched

#endif  // MIGSCHED_DAEMON_DAEMON_IMPL_H_
