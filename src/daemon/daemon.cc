#include "daemon/daemon.h"

#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <future>
#include <limits>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>
#include <utility>

#include "core/cluster.h"
#include "core/plan.h"
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
namespace {

// Create failures a job survives (requeued) before it fails.
constexpr int kMaxCreateFailures = 3;
// How long an API call that changed state waits for its commit.
constexpr double kCommitWaitS = 10;
// How often the control loop looks for finished jobs to prune, seconds.
constexpr double kPruneIntervalS = 60;

std::string Dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool SameRequest(const JobRequest& a, const JobRequest& b) {
  return a.profile == b.profile && a.gpu_fraction == b.gpu_fraction && a.count == b.count &&
         a.command == b.command && a.env == b.env && a.cwd == b.cwd &&
         a.migratable == b.migratable && a.latency_sensitive == b.latency_sensitive &&
         a.priority == b.priority && a.name == b.name && a.user == b.user;
}

bool SameAllocation(const AllocationRequest& a, const AllocationRequest& b) {
  if (a.owner != b.owner || a.reservation != b.reservation ||
      a.reservation_prefix != b.reservation_prefix || a.name != b.name ||
      a.instances.size() != b.instances.size()) {
    return false;
  }
  for (size_t i = 0; i < a.instances.size(); ++i) {
    if (a.instances[i].gpu != b.instances[i].gpu ||
        a.instances[i].profile != b.instances[i].profile ||
        a.instances[i].start != b.instances[i].start) {
      return false;
    }
  }
  return true;
}

// Waits for `f` up to kCommitWaitS; kUnavailable if it did not come.
Status WaitFor(std::future<Status>& f, std::string_view what) {
  if (f.wait_for(std::chrono::duration<double>(kCommitWaitS)) != std::future_status::ready) {
    return UnavailableError(fmt::format(
        "{} is in effect but could not be stored within {} s; it is stored when the job store "
        "can be written",
        what, kCommitWaitS));
  }
  return f.get();
}

}  // namespace

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

// ---------------------------------------------------------------- setup

Status Daemon::Impl::Init() {
  ::umask(077);  // every file the daemon creates is its own (0600 / 0700)
  ASSIGN_OR_RETURN(dir_, StateDir::Open(config_.state_dir));
  // Who runs the jobs.
  if (!config_.job_user.empty()) {
    StatusOr<RunAsUser> u = LookUpUser(config_.job_user);
    if (!u.ok()) return FailedPreconditionError("job_user: " + u.status().message());
    default_user_ = *u;
  } else if (::geteuid() == 0) {
    StatusOr<RunAsUser> u = LookUpUser("nobody");
    if (!u.ok()) {
      return FailedPreconditionError(
          "the daemon runs as root and no job_user is configured, and there is no user 'nobody' "
          "to run jobs as; set job_user");
    }
    default_user_ = *u;
  } else {
    default_user_ = DaemonUser();
  }
  if (default_user_.uid == ::geteuid()) {
    spdlog::warn(
        "jobs run as the daemon's own user ({}): they can read the state dir (the API token, "
        "other jobs' logs and environments); set job_user to another user",
        default_user_.name);
  }
  allowed_users_[default_user_.name] = default_user_;
  for (const std::string& name : config_.job_users) {
    StatusOr<RunAsUser> u = LookUpUser(name);
    if (!u.ok()) return FailedPreconditionError("job_users: " + u.status().message());
    allowed_users_[u->name] = *u;
  }
  for (const auto& [name, u] : allowed_users_) {
    RETURN_IF_ERROR(CheckReachable(config_.WorkDir(), u));
  }

  std::vector<std::string> selection;
  if (backend_->name() == "nvml") selection = config_.nvml_gpus;
  ASSIGN_OR_RETURN(NodeInventory inv, DiscoverNode(backend_.get(), *catalog_, selection));
  if (inv.gpus.empty()) return FailedPreconditionError("no GPU to manage");
  for (const std::string& note : inv.notes) spdlog::info("discovery: {}", note);
  ASSIGN_OR_RETURN(model_,
                   NodeModel::Create(std::move(inv), config_.policy, config_.scheduler, clock_));
  sync_ = std::make_unique<InstanceSync>(backend_.get(), model_.get(), &mu_, clock_, &counters_,
                                         InstanceSync::Options{});
  sync_->SetOnProgress([this] { Wake(); });
  moves_ =
      std::make_unique<MoveExecutor>(model_.get(), sync_.get(), &config_, &counters_, clock_, this);
  ASSIGN_OR_RETURN(store_, JobStore::Open(config_.state_dir));
  ASSIGN_OR_RETURN(RecoveryResult rec,
                   Recover(RecoveryInputs{model_.get(), sync_.get(), store_.get(), &runner_, &jobs_,
                                          &reservations_, &mu_, clock_}));
  {
    std::lock_guard<std::mutex> lock(mu_);
    next_id_ = rec.next_id;
    model_->scheduler().SetNow(NowS());
    for (DaemonJobId id : rec.queued) {
      const DaemonJobRecord* r = jobs_.Current(id);
      if (r != nullptr) Enqueue(id, r->request.ToJob());
    }
    for (const auto& [id, run] : rec.runs) {
      runs_[id] = Run{run.pgid, 0, 0};
      if (run.cancel) StopProcess(id);
    }
  }
  writer_ = std::make_unique<StoreWriter>(store_.get());
  writer_->Start();
  sync_->Start();
  return Status();
}

void Daemon::Impl::Persist(std::vector<StoreOp> ops, bool retry,
                           std::function<void(const Status&)> then) {
  writer_->Write(std::move(ops), retry, [this, then = std::move(then)](const Status& st) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      model_->Touch();
      if (then) then(st);
    }
    Wake();
  });
}

void Daemon::Impl::SaveJob(DaemonJobRecord& r, std::string_view event, nlohmann::json detail,
                           std::function<void()> then) {
  const uint64_t version = jobs_.Update(r);
  std::vector<StoreOp> ops{StoreOp::UpdateJob(r)};
  if (!event.empty()) {
    detail["state"] = std::string(JobStateName(r.state));
    ops.push_back(StoreOp::Event(r.id, Unix(), std::string(event), Dump(detail)));
  }
  Persist(std::move(ops), /*retry=*/true,
          [this, copy = r, version, then = std::move(then)](const Status& st) {
            if (!st.ok()) return;  // dropped (logged by the writer): stays as it was shown
            jobs_.Committed(copy, version);
            if (then) then();
          });
}

Status Daemon::Impl::Accepting() const {
  if (stopped_) return UnavailableError("the daemon is shutting down");
  if (!dir_health_.ok()) return dir_health_;
  Status w = writer_->health();
  if (!w.ok()) {
    return UnavailableError(
        fmt::format("the job store cannot be written ({}); changes are refused until it can "
                    "(the daemon retries)",
                    w.message()));
  }
  return Status();
}

StatusOr<RunAsUser> Daemon::Impl::UserFor(const JobRequest& r) const {
  if (r.user.empty()) return default_user_;
  auto it = allowed_users_.find(r.user);
  if (it == allowed_users_.end()) {
    std::string allowed;
    for (const auto& [name, u] : allowed_users_) allowed += (allowed.empty() ? "" : ", ") + name;
    return InvalidArgumentError(fmt::format(
        "user '{}' is not allowed to run jobs here (allowed: {}; the config's job_user and "
        "job_users)",
        r.user, allowed));
  }
  return it->second;
}

Status Daemon::Impl::ValidateRequest(const JobRequest& r) const {
  RETURN_IF_ERROR(ValidateJobRequest(r));
  RETURN_IF_ERROR(UserFor(r).status());
  const Job job = r.ToJob();
  for (const GpuModel* m : model_->cluster().models()) {
    if (ResolveProfile(*m, job) >= 0) return Status();
  }
  if (!r.profile.empty()) {
    return InvalidArgumentError(
        fmt::format("unknown profile '{}': no GPU of this node offers it (profiles: {})", r.profile,
                    model_->OfferedProfiles()));
  }
  return InvalidArgumentError(
      fmt::format("gpu_fraction {}: no profile of this node is large enough", r.gpu_fraction));
}

void Daemon::Impl::Enqueue(DaemonJobId id, const Job& job) {
  Scheduler& s = model_->scheduler();
  s.SetNow(std::max(s.now(), NowS()));
  enqueued_s_[id] = s.now();
  s.Enqueue(static_cast<JobId>(id), job);
}

// ---------------------------------------------------------------- jobs

StatusOr<SubmitResult> Daemon::Impl::Submit(const JobRequest& request, const std::string& key) {
  auto promise = std::make_shared<std::promise<Status>>();
  std::future<Status> committed = promise->get_future();
  DaemonJobRecord r;
  {
    std::unique_lock<std::mutex> lock(mu_);
    RETURN_IF_ERROR(ValidateRequest(request));
    RETURN_IF_ERROR(Accepting());
    if (!key.empty()) {
      keys_cv_.wait(lock, [&] { return !pending_keys_.count(key); });
      if (DaemonJobId first = jobs_.ByKey(key); first != 0) {
        const DaemonJobRecord* v = jobs_.Visible(first);
        if (v->kind == JobKind::kJob && SameRequest(v->request, request)) {
          return SubmitResult{*v, true};
        }
        return FailedPreconditionError(
            fmt::format("idempotency key '{}' was used for another request ({} {})", key,
                        JobKindName(v->kind), first));
      }
      pending_keys_.insert(key);
    }
    r.id = next_id_++;
    r.kind = JobKind::kJob;
    r.request = request;
    r.idempotency_key = key;
    r.submitted_at = Unix();
    Status can = model_->scheduler().CheckCanEverRun(request.ToJob());
    if (!can.ok()) {
      r.state = JobState::kRejected;
      r.ended_at = r.submitted_at;
      r.reason = can.message();
    }
    nlohmann::json detail = {{"state", std::string(JobStateName(r.state))}};
    if (!r.reason.empty()) detail["reason"] = r.reason;
    Persist(
        {StoreOp::InsertJob(r), StoreOp::Event(r.id, r.submitted_at, "submitted", Dump(detail))},
        /*retry=*/false, [this, r, key, promise](const Status& st) {
          if (!key.empty()) {
            pending_keys_.erase(key);
            keys_cv_.notify_all();
          }
          if (st.ok()) {
            jobs_.AddStored(r);
            if (r.state == JobState::kQueued) Enqueue(r.id, r.request.ToJob());
          }
          promise->set_value(st);
        });
  }
  Status st = committed.get();
  if (!st.ok()) {
    return UnavailableError(fmt::format(
        "the job store cannot be written ({}); the job was not accepted", st.message()));
  }
  return SubmitResult{r, false};
}

JobPage Daemon::Impl::ListJobs(const JobQuery& query) const {
  std::lock_guard<std::mutex> lock(mu_);
  return jobs_.List(query);
}

StatusOr<DaemonJobRecord> Daemon::Impl::GetJob(DaemonJobId id) const {
  std::lock_guard<std::mutex> lock(mu_);
  const DaemonJobRecord* r = jobs_.Visible(id);
  if (r == nullptr) return NotFoundError(fmt::format("no job {}", id));
  return *r;
}

StatusOr<DaemonJobRecord> Daemon::Impl::Cancel(DaemonJobId id) {
  bool allocation = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const DaemonJobRecord* r = jobs_.Current(id);
    if (r == nullptr || jobs_.Visible(id) == nullptr) {
      return NotFoundError(fmt::format("no job {}", id));
    }
    allocation = r->kind == JobKind::kAllocation;
  }
  if (allocation) return ReleaseAllocation(id);  // DELETE on an allocation releases it
  auto promise = std::make_shared<std::promise<Status>>();
  std::future<Status> committed = promise->get_future();
  {
    std::lock_guard<std::mutex> lock(mu_);
    DaemonJobRecord* r = jobs_.Current(id);
    if (IsTerminal(r->state)) {
      return FailedPreconditionError(
          fmt::format("job {} is already {}", id, JobStateName(r->state)));
    }
    RETURN_IF_ERROR(Accepting());
    if (r->state == JobState::kQueued &&
        model_->scheduler().RemoveFromQueue(static_cast<JobId>(id))) {
      Finish(*r, JobState::kCancelled, std::nullopt, "cancelled while queued");
    } else if (!r->cancel_requested) {
      // Stored before it shows, and kept across a restart (recovery sends
      // SIGTERM again, or ends the job as cancelled).
      r->cancel_requested = true;
      r->reason = "cancel requested";
      if (runs_.count(id)) StopProcess(id);
      SaveJob(*r, "cancel-requested", {});
    }
    // The cancel's record is the last write queued for the job: wait for it.
    Persist({}, /*retry=*/true, [promise](const Status& st) { promise->set_value(st); });
  }
  Status st = WaitFor(committed, fmt::format("the cancel of job {}", id));
  if (!st.ok()) return st;
  return GetJob(id);
}

void Daemon::Impl::StopProcess(DaemonJobId id) {
  auto it = runs_.find(id);
  if (it == runs_.end()) return;
  runner_.SignalGroup(it->second.pgid, SIGTERM);
  it->second.kill_at_s = NowS() + config_.kill_grace_s;
}

// The job leaves the system (terminal state); a job holding instances
// releases them.
void Daemon::Impl::Finish(DaemonJobRecord& r, JobState state, std::optional<int> exit_code,
                          std::string reason) {
  r.state = state;
  r.exit_code = exit_code;
  r.reason = std::move(reason);
  r.ended_at = Unix();
  runs_.erase(r.id);
  launches_.erase(r.id);
  create_failures_.erase(r.id);
  enqueued_s_.erase(r.id);
  moves_->Forget(r.id);
  ReleaseInstances(static_cast<JobId>(r.id));
  nlohmann::json detail;
  if (exit_code) detail["exit_code"] = *exit_code;
  if (!r.reason.empty()) detail["reason"] = r.reason;
  SaveJob(r, "ended", detail);
}

void Daemon::Impl::ReleaseInstances(JobId id) {
  Scheduler& s = model_->scheduler();
  if (s.InstancesOf(id) == nullptr) return;
  StatusOr<Plan> plan = s.Release(id);
  if (plan.ok()) {
    sync_->Execute(*plan, nullptr);
  } else {
    spdlog::error("job {}: {}", id, plan.status().message());
  }
  completed_ = true;
}

std::vector<JobInstance> Daemon::Impl::InstancesOf(DaemonJobId id) {
  std::vector<JobInstance> out;
  const std::vector<InstanceRef>* refs = model_->scheduler().InstancesOf(static_cast<JobId>(id));
  if (refs == nullptr) return out;
  for (const InstanceRef& ref : *refs) out.push_back(InstanceAt(ref));
  return out;
}

JobInstance Daemon::Impl::InstanceAt(const InstanceRef& ref) const {
  JobInstance in;
  const Profile& p = model_->cluster().gpu(ref.gpu).model().profile(ref.profile);
  in.gpu = model_->nvml(ref.gpu);
  in.profile = p.name;
  in.start = ref.start;
  in.size = p.size();
  if (const BackendInstance* live = sync_->Live(ref.gpu, ref.start);
      live != nullptr && live->profile_id == p.id) {
    in.mig_uuid = live->mig_uuid;
    in.gi_id = live->gi_id;
    in.ci_id = live->ci_id;
  }
  return in;
}

void Daemon::Impl::StartPlacement(const Decision& d) {
  DaemonJobRecord* r = jobs_.Current(d.job);
  if (r == nullptr) {
    spdlog::error("the scheduler placed job {}, which the daemon does not know", d.job);
    return;
  }
  r->state = JobState::kStarting;
  r->instances = InstancesOf(d.job);
  const DaemonJobId id = d.job;
  sync_->Execute(d.plan, [this, id](const Status& st) { OnPlaced(id, st); });
}

void Daemon::Impl::OnPlaced(DaemonJobId id, const Status& st) {
  DaemonJobRecord* r = jobs_.Current(id);
  if (r == nullptr || r->state != JobState::kStarting) return;
  if (!st.ok()) {
    PlacementFailed(*r, st);
    return;
  }
  create_failures_.erase(id);
  r->instances = InstancesOf(id);
  ++r->attempt;
  r->reason.clear();
  r->pid = 0;
  // The launch intent (this run's number) is durable before the launch: a
  // restart finds the run again by it, and never runs the job twice.
  LaunchRequest l;
  l.restarted = r->restarts > 0 || r->attempt > 1;
  nlohmann::json detail = {{"run", r->attempt}};
  for (const JobInstance& in : r->instances) detail["mig_uuids"].push_back(in.mig_uuid);
  SaveJob(*r, "placed", detail, [this, id, l]() { RequestLaunch(id, l); });
}

void Daemon::Impl::PlacementFailed(DaemonJobRecord& r, const Status& st) {
  const DaemonJobId id = r.id;
  std::set<int> gpus;
  for (const JobInstance& in : r.instances) gpus.insert(in.gpu);
  ReleaseInstances(static_cast<JobId>(id));
  // Not the job's failure: a plan not attempted (an earlier one on its GPU
  // failed), a destroy waiting for processes to leave, a GPU the backend lost.
  bool blameless =
      st.message().starts_with("not attempted") || st.message().find("in use") != std::string::npos;
  for (int nvml : gpus) {
    const int g = model_->ClusterIndex(nvml);
    blameless = blameless || (g >= 0 && !model_->unreachable(g).empty());
  }
  const int failures = blameless ? create_failures_[id] : ++create_failures_[id];
  r.instances.clear();
  r.state = JobState::kQueued;
  if (failures >= kMaxCreateFailures) {
    Finish(r, JobState::kFailed, std::nullopt,
           fmt::format("could not create its instances ({} tries): {}", failures, st.message()));
    return;
  }
  r.reason = fmt::format("requeued: {}", st.message());
  auto at = enqueued_s_.find(id);
  const double enqueued = at != enqueued_s_.end() ? at->second : NowS();
  model_->scheduler().Requeue(static_cast<JobId>(id), r.request.ToJob(), enqueued);
  SaveJob(r, "requeued", {{"reason", r.reason}});
}

void Daemon::Impl::Reap() {
  const double now = NowS();
  std::vector<DaemonJobId> ids;
  for (const auto& [id, run] : runs_) ids.push_back(id);
  for (DaemonJobId id : ids) {
    Run& run = runs_[id];
    DaemonJobRecord* r = jobs_.Current(id);
    if (r == nullptr) {
      runs_.erase(id);
      continue;
    }
    ProcessStatus ps = runner_.Poll(id, run.pgid, r->attempt);
    if (ps.kind == ProcessStatus::Kind::kRunning) {
      if (run.kill_at_s > 0 && now >= run.kill_at_s) {
        runner_.SignalGroup(run.pgid, SIGKILL);
        run.kill_at_s = 0;
      }
      continue;
    }
    if (ps.kind == ProcessStatus::Kind::kLost) {
      Finish(*r, r->cancel_requested ? JobState::kCancelled : JobState::kFailed, std::nullopt,
             r->cancel_requested ? "cancelled" : "process lost (no exit status)");
      continue;
    }
    const int code = ps.exit_code;
    if (!r->cancel_requested && moves_->moving(id) && moves_->OnProcessEnded(id, code)) {
      runs_.erase(id);  // relaunched on its target once the switch-over is stored
      continue;
    }
    if (r->cancel_requested) {
      Finish(*r, JobState::kCancelled, code, "cancelled");
    } else if (code == 0) {
      Finish(*r, JobState::kSucceeded, 0, "");
    } else {
      Finish(*r, JobState::kFailed, code,
             code > 128 ? fmt::format("killed by signal {}", code - 128)
                        : fmt::format("exited with code {}", code));
    }
  }
}

void Daemon::Impl::CollectLaunches(std::vector<Launch>* out) {
  for (auto it = launches_.begin(); it != launches_.end();) {
    const DaemonJobId id = it->first;
    DaemonJobRecord* r = jobs_.Current(id);
    if (r == nullptr || IsTerminal(r->state)) {
      it = launches_.erase(it);
      continue;
    }
    if (r->cancel_requested && !it->second.helper) {
      it = launches_.erase(it);
      Finish(*r, JobState::kCancelled, std::nullopt, "cancelled before it started");
      continue;
    }
    Launch l;
    l.id = id;
    l.request = std::move(it->second);
    it = launches_.erase(it);
    StatusOr<RunAsUser> user = UserFor(r->request);
    l.spec.job = id;
    l.spec.attempt = r->attempt;
    l.spec.argv = l.request.argv.empty() ? r->request.command : l.request.argv;
    l.spec.env = r->request.env;
    l.spec.cwd = r->request.cwd;
    for (const JobInstance& in : r->instances) l.spec.mig_uuids.push_back(in.mig_uuid);
    l.spec.restarted = l.request.restarted;
    // Checkpoint and restore commands are the operator's tools: they run as
    // the daemon's user; the job's own command as the job's user.
    const bool operator_tool = l.request.helper || !l.request.argv.empty();
    l.spec.user = operator_tool ? DaemonUser() : (user.ok() ? *user : default_user_);
    if (l.request.helper) l.spec.extra_env["MIGSCHED_CHECKPOINT_DIR"] = l.request.checkpoint_dir;
    out->push_back(std::move(l));
  }
}

void Daemon::Impl::RecordLaunch(Launch& l) {
  DaemonJobRecord* r = jobs_.Current(l.id);
  if (l.request.helper) {
    moves_->OnHelperLaunched(l.id, l.result.ok() ? StatusOr<int64_t>(l.result->pgid)
                                                 : StatusOr<int64_t>(l.result.status()));
    return;
  }
  if (r == nullptr) return;
  if (!l.result.ok()) {
    const Status& st = l.result.status();
    if (IsTerminal(r->state)) return;
    const int code = ProcessRunner::ExitCodeOf(st);
    Finish(*r, JobState::kFailed, code >= 0 ? std::optional<int>(code) : std::nullopt,
           l.request.event == "migrated" ? "relaunch after migration failed: " + st.message()
                                         : st.message());
    return;
  }
  runs_[l.id] = Run{l.result->pgid, l.result->pid, 0};
  if (IsTerminal(r->state)) {  // ended while it was launched (cannot happen: kept for safety)
    runner_.SignalGroup(l.result->pgid, SIGKILL);
    return;
  }
  r->pid = l.result->pgid;
  r->state = JobState::kRunning;
  if (r->started_at == 0) r->started_at = Unix();
  r->reason = r->cancel_requested ? "cancel requested" : "";
  if (r->cancel_requested) StopProcess(l.id);
  nlohmann::json detail = {{"pid", r->pid}, {"run", r->attempt}};
  if (l.request.event == "migrated") {
    detail["restarted"] = l.request.restarted;
    if (!r->instances.empty()) detail["mig_uuid"] = r->instances.front().mig_uuid;
    completed_ = true;  // the source is free now: another pass may use it
  }
  SaveJob(*r, l.request.event, detail);
}

// ---------------------------------------------------------------- migration (§6)

void Daemon::Impl::RunMigrations(MigrationTrigger trigger) {
  const bool can_checkpoint =
      !config_.checkpoint_command.empty() && !config_.restore_command.empty();
  auto can_move = [&](JobId id) {
    const DaemonJobRecord* r = jobs_.Current(id);
    if (r == nullptr || r->kind != JobKind::kJob || r->state != JobState::kRunning) return false;
    if (!runs_.count(id) || r->cancel_requested || moves_->moving(id)) return false;
    if (r->request.migratable == Migratable::kCheckpoint && !can_checkpoint) return false;
    return true;
  };
  StatusOr<std::vector<MigrationStart>> starts =
      model_->scheduler().RunMigrationPass(trigger, can_move);
  if (!starts.ok()) {
    spdlog::error("migration pass: {}", starts.status().message());
    return;
  }
  for (const MigrationStart& st : *starts) moves_->Begin(st);
}

// ---------------------------------------------------------------- the loop

Status Daemon::Impl::Tick() {
  std::vector<Launch> launches;
  std::vector<std::filesystem::path> remove;
  {
    std::lock_guard<std::mutex> lock(mu_);
    TickLocked(&launches, &remove);
  }
  std::error_code ec;
  for (const std::filesystem::path& p : remove) std::filesystem::remove_all(p, ec);
  if (launches.empty()) return Status();
  // Launch without the lock (fork, and the handshake that reports exec errors).
  for (Launch& l : launches) {
    l.result = l.request.helper ? runner_.LaunchHelper(l.spec) : runner_.Launch(l.spec);
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (Launch& l : launches) RecordLaunch(l);
  return Status();
}

void Daemon::Impl::TickLocked(std::vector<Launch>* launches,
                              std::vector<std::filesystem::path>* remove) {
  const double now = NowS();
  Scheduler& sched = model_->scheduler();
  sched.SetNow(std::max(sched.now(), now));
  if (now >= next_dir_check_) {
    next_dir_check_ = now + 1;
    Status st = dir_->Check();
    if (!st.ok() && dir_health_.ok()) spdlog::error("{}", st.message());
    dir_health_ = st;
  }
  ExpireReservations();
  Reap();
  moves_->Advance(&runner_);
  if (!paused_ && !stopped_ && sched.queue_size() > 0) {
    StatusOr<std::vector<Decision>> decisions = sched.ScheduleQueue();
    if (!decisions.ok()) {
      spdlog::error("queue scan: {}", decisions.status().message());
    } else {
      for (const Decision& d : *decisions) StartPlacement(d);
    }
  }
  UpdateWaitReasons();
  if (config_.scheduler.max_wait_s >= 0) {
    for (JobId id : sched.ExpireWaits()) {
      DaemonJobRecord* r = jobs_.Current(id);
      if (r != nullptr)
        Finish(*r, JobState::kRejected, std::nullopt, "waited longer than --max-wait");
    }
  }
  if (sched.policy().Migrates() && !stopped_) {
    if (sched.has_fragmented_requests()) RunMigrations(MigrationTrigger::kFragmented);
    const double interval = config_.scheduler.migration.defrag_interval_s;
    const bool tick = interval > 0 && now >= next_defrag_;
    if (tick) next_defrag_ = now + interval;
    if (completed_ || tick) {
      RunMigrations(completed_ ? MigrationTrigger::kCompletion : MigrationTrigger::kTick);
    }
    completed_ = false;
  }
  CheckPcie(now);
  std::optional<double> due = sched.NextIdleExpiry();
  if (due && *due <= sched.now()) {
    StatusOr<Plan> plan = sched.ExpireIdleInstances();
    if (plan.ok() && !plan->empty()) sync_->Execute(*plan, nullptr);
  }
  for (double us : sched.TakeDecisionTimes()) counters_.decision_seconds.Observe(us / 1e6);
  if (now >= next_prune_) {
    next_prune_ = now + kPruneIntervalS;
    Prune(remove);
  }
  CollectLaunches(launches);
}

void Daemon::Impl::UpdateWaitReasons() {
  const Cluster& c = model_->cluster();
  bool any_closed = false;
  for (int g = 0; g < c.size(); ++g) any_closed = any_closed || c.drained(g);
  if (!any_closed && waiting_reasons_.empty()) return;
  const Scheduler& s = model_->scheduler();
  constexpr std::string_view kWaiting = "waiting: ";
  for (JobId id : s.QueuedJobs()) {
    DaemonJobRecord* r = jobs_.Current(id);
    if (r == nullptr) continue;
    const Job job = r->request.ToJob();
    int open = 0;
    std::string closed;
    for (int g = 0; g < c.size(); ++g) {
      const int p = ResolveProfile(c.gpu(g).model(), job);
      if (p < 0) continue;
      if (c.drained(g)) {
        const std::string why = model_->unreachable(g);
        closed += fmt::format("{}GPU {} {}", closed.empty() ? "" : "; ", model_->nvml(g),
                              why.empty() ? "is drained" : "is unreachable: " + why);
        continue;
      }
      open += s.policy().Capacity(c, g, p);
    }
    std::string reason;
    if (job.count > open) {
      reason =
          fmt::format("{}needs {} at once; the GPUs that take placements now hold at most {} ({})",
                      kWaiting, job.RequestString(), open, closed);
    }
    const bool had = r->reason.starts_with(kWaiting);
    if (reason.empty() && !had) continue;
    if (had && reason == r->reason) continue;
    if (reason.empty()) {
      waiting_reasons_.erase(r->id);
      r->reason.clear();
      SaveJob(*r, "waiting", {{"reason", ""}});
    } else if (had || r->reason.empty()) {
      waiting_reasons_.insert(r->id);
      r->reason = reason;
      SaveJob(*r, "waiting", {{"reason", reason}});
    }
  }
  std::erase_if(waiting_reasons_, [&](DaemonJobId id) {
    const DaemonJobRecord* r = jobs_.Current(id);
    return r == nullptr || r->state != JobState::kQueued;
  });
}

void Daemon::Impl::Prune(std::vector<std::filesystem::path>* remove) {
  if (config_.retention_s < 0) return;
  for (DaemonJobId id : jobs_.EndedBefore(Unix() - config_.retention_s)) {
    jobs_.Erase(id);
    Persist({StoreOp::DeleteJob(id)}, /*retry=*/true, nullptr);
    remove->push_back(runner_.JobDir(id));
    remove->push_back(runner_.WorkDir(id));
  }
}

void Daemon::Impl::CheckPcie(double now) {
  if (config_.pcie_saturation_gbps <= 0 || now < next_pcie_sample_) return;
  next_pcie_sample_ = now + 1;
  constexpr double kSustainedS = 10;
  for (int g = 0; g < model_->size(); ++g) {
    std::optional<PcieThroughput> t = sync_->Pcie(g);
    if (!t) continue;
    const double gbps = static_cast<double>(t->tx_kbps + t->rx_kbps) / 1e6;  // KB/s -> GB/s
    if (gbps < config_.pcie_saturation_gbps) {
      pcie_saturated_since_.erase(g);
      pcie_advised_.erase(g);
      continue;
    }
    const double since = pcie_saturated_since_.emplace(g, now).first->second;
    if (now - since >= kSustainedS && pcie_advised_.insert(g).second) {
      spdlog::warn(
          "GPU {}: PCIe link saturated ({:.1f} GB/s >= {:.1f} GB/s for {:.0f} s): jobs on it slow "
          "each other down; lower scheduler.threshold (now {}) to spread jobs over more GPUs",
          model_->nvml(g), gbps, config_.pcie_saturation_gbps, now - since,
          config_.scheduler.threshold);
    }
  }
}

void Daemon::Impl::StartWorker() {
  std::lock_guard<std::mutex> lock(worker_mu_);
  if (worker_.joinable()) return;
  stop_worker_ = false;
  worker_ = std::thread([this] {
    std::unique_lock<std::mutex> wl(worker_mu_);
    while (!stop_worker_) {
      wake_ = false;
      wl.unlock();
      Status st = Tick();
      if (!st.ok()) spdlog::error("tick: {}", st.message());
      wl.lock();
      worker_cv_.wait_for(wl, std::chrono::milliseconds(std::max(1, config_.tick_ms)),
                          [this] { return stop_worker_ || wake_; });
    }
  });
}

void Daemon::Impl::Stop() {
  {
    std::lock_guard<std::mutex> lock(worker_mu_);
    stop_worker_ = true;
  }
  worker_cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  bool drain = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_ || !model_) return;
    stopped_ = true;  // no new submissions, no new placements
    drain = config_.on_shutdown == "drain";
  }
  if (drain) {
    // Queued jobs stay queued (durable); running ones are waited for.
    while (true) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (runs_.empty() && launches_.empty()) break;
      }
      (void)Tick();
      std::this_thread::sleep_for(std::chrono::milliseconds(std::max(1, config_.tick_ms)));
    }
  }
  // "leave": processes keep running; the next start re-adopts them.
  (void)WaitIdle(10);
  sync_->Stop();
  writer_->Stop();
}

bool Daemon::Impl::WaitIdle(double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    bool idle = writer_->pending() == 0;
    if (idle) {
      std::lock_guard<std::mutex> lock(mu_);
      idle = sync_->idle();
    }
    if (idle) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return false;
}

Status Daemon::Impl::Settle(double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    RETURN_IF_ERROR(Tick());
    if (!WaitIdle(timeout_s)) break;
    std::lock_guard<std::mutex> lock(mu_);
    if (launches_.empty() && sync_->idle() && writer_->pending() == 0) return Status();
  }
  return UnavailableError(fmt::format("the daemon did not settle within {} s", timeout_s));
}

// ---------------------------------------------------------------- views

GpuView Daemon::Impl::GpuViewOf(int g) const {
  const GpuState& gs = model_->cluster().gpu(g);
  GpuView v;
  v.index = model_->nvml(g);
  v.uuid = model_->uuid(g);
  v.model = gs.model().name();
  v.placement_units = gs.model().placement_units();
  for (const Instance& in : gs.instances()) {
    InstanceView iv;
    const Profile& p = gs.model().profile(in.profile);
    iv.profile = p.name;
    iv.start = in.start;
    iv.size = p.size();
    if (const BackendInstance* live = sync_->Live(g, in.start);
        live != nullptr && live->profile_id == p.id) {
      iv.mig_uuid = live->mig_uuid;
    }
    iv.busy = in.busy();
    if (in.busy()) {
      switch (in.holder) {
        case Holder::kJob: {
          const DaemonJobRecord* r = jobs_.Current(in.job);
          const bool allocation = r != nullptr && r->kind == JobKind::kAllocation;
          iv.holder = allocation ? "allocation" : "job";
          iv.job = in.job;
          if (allocation) iv.owner = r->owner();
          break;
        }
        case Holder::kReservation: {
          iv.holder = "reservation";
          if (const HeldReservation* res = reservations_.FindByHold(in.job); res != nullptr) {
            iv.owner = res->record.owner;
            iv.expires_at = res->record.expires_at;
          }
          break;
        }
        case Holder::kPlaceholder:
          iv.holder = "placeholder";
          break;
      }
    }
    v.instances.push_back(std::move(iv));
  }
  v.utilisation = gs.utilization();
  v.frag_cost = gs.fragcost();
  v.lazy = gs.lazy(model_->options().threshold);
  v.draining = model_->cluster().drained(g);
  v.unreachable = model_->unreachable(g);
  v.pcie = sync_->Pcie(g);
  return v;
}

std::vector<GpuView> Daemon::Impl::Gpus() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<GpuView> out;
  for (int g = 0; g < model_->size(); ++g) out.push_back(GpuViewOf(g));
  return out;
}

NodeView Daemon::Impl::Node() const {
  NodeView n;
  n.name = config_.node_name;
  if (n.name.empty()) {
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) == 0) n.name = host;
  }
  n.store = writer_->health();
  std::lock_guard<std::mutex> lock(mu_);
  if (n.store.ok() && !dir_health_.ok()) n.store = dir_health_;
  n.boot_id = model_->boot_id();
  n.generation = model_->generation();
  n.time = Unix();
  n.policy = model_->policy_name();
  n.options = model_->options();
  n.paused = paused_;
  n.queue_length = static_cast<int64_t>(model_->scheduler().queue_size());
  for (int g = 0; g < model_->size(); ++g) n.gpus.push_back(GpuViewOf(g));
  for (const HeldReservation* r : reservations_.WithPrefix(""))
    n.reservations.push_back(ViewOf(*r));
  return n;
}

StatusOr<PlanPreview> Daemon::Impl::PreviewPlan(const JobRequest& request) const {
  std::lock_guard<std::mutex> lock(mu_);
  RETURN_IF_ERROR(ValidateRequest(request));
  PlanPreview out;
  const Job job = request.ToJob();
  const Scheduler& sched = model_->scheduler();
  Status can = sched.CheckCanEverRun(job);
  if (!can.ok()) {
    out.reason = can.message();
    return out;
  }
  // A scratch copy of the Cluster (drains and holds included) and a
  // scheduler of the same policy: nothing of the real state changes.
  Cluster scratch = model_->cluster();
  ASSIGN_OR_RETURN(std::unique_ptr<PlacementPolicy> policy,
                   MakePolicy(model_->policy_name(), model_->options()));
  Scheduler s(&scratch, std::move(policy), model_->options(), clock_);
  constexpr JobId kPreviewJob = std::numeric_limits<JobId>::max();
  StatusOr<std::optional<Decision>> d = s.TryPlace(kPreviewJob, job);
  if (!d.ok()) return d.status();
  if (!d->has_value()) {
    out.reason = fmt::format("no GPU that takes placements has room for {} now; it would wait",
                             job.RequestString());
    if (sched.queue_size() > 0) {
      out.reason += fmt::format(" behind {} queued job(s)", sched.queue_size());
    } else {
      out.reason += " until instances are freed";
    }
    return out;
  }
  const Decision& dec = **d;
  out.fits_now = true;
  if (sched.queue_size() > 0) {
    out.reason =
        fmt::format("fits now, but {} queued job(s) are scanned first", sched.queue_size());
  }
  for (const Step& st : dec.plan.steps) {
    out.steps.push_back(DescribeStep(st, scratch, /*with_holder=*/false));
  }
  for (const InstanceRef& ref : dec.instances) out.instances.push_back(InstanceAt(ref));
  return out;
}

void Daemon::Impl::Pause() {
  std::lock_guard<std::mutex> lock(mu_);
  paused_ = true;
}
void Daemon::Impl::Resume() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    paused_ = false;
  }
  Wake();
}
bool Daemon::Impl::paused() const {
  std::lock_guard<std::mutex> lock(mu_);
  return paused_;
}

Status Daemon::Impl::SetOperatorDrain(int gpu, bool on) {
  auto promise = std::make_shared<std::promise<Status>>();
  std::future<Status> committed = promise->get_future();
  {
    std::lock_guard<std::mutex> lock(mu_);
    const int g = model_->ClusterIndex(gpu);
    if (g < 0) return NotFoundError(fmt::format("GPU {} is not managed by this daemon", gpu));
    RETURN_IF_ERROR(Accepting());
    model_->SetDrain(g, NodeModel::DrainReason::kOperator, on);
    spdlog::info("GPU {}: {}", gpu,
                 on ? "drained (no new placements)" : "drain ended (new placements allowed)");
    Persist({StoreOp::PutNode("drained_gpus", Dump(model_->OperatorDrainedUuids()))},
            /*retry=*/true, [promise](const Status& st) { promise->set_value(st); });
  }
  if (!on) Wake();
  return WaitFor(committed, fmt::format("the drain of GPU {}", gpu));
}

Status Daemon::Impl::Health() const {
  std::lock_guard<std::mutex> lock(mu_);
  return Accepting();
}

DaemonMetrics Daemon::Impl::Metrics() const {
  DaemonMetrics m;
  m.store_degraded = writer_->degraded();
  std::vector<GpuView> gpus = Gpus();
  std::lock_guard<std::mutex> lock(mu_);
  m.jobs_by_state = jobs_.CountByState();
  m.queue_length = static_cast<int64_t>(model_->scheduler().queue_size());
  m.paused = paused_;
  m.reservations = static_cast<int64_t>(reservations_.size());
  m.reconfigurations = counters_.reconfigurations;
  m.reconfig_seconds = counters_.reconfig_seconds.Snapshot();
  m.migrations_intra = counters_.migrations_intra;
  m.migrations_inter = counters_.migrations_inter;
  m.decision_seconds = counters_.decision_seconds.Snapshot();
  m.gpus = std::move(gpus);
  return m;
}

// ---------------------------------------------------------------- reservations

StatusOr<std::vector<InstanceRef>> Daemon::Impl::ResolvePlacements(
    const std::vector<RequestedInstance>& specs, bool need_start) const {
  std::vector<InstanceRef> out;
  for (size_t i = 0; i < specs.size(); ++i) {
    const RequestedInstance& s = specs[i];
    if (need_start && (s.gpu < 0 || s.start < 0)) {
      return InvalidArgumentError(fmt::format("placement {} needs gpu, profile and start", i));
    }
    StatusOr<InstanceRef> ref = model_->Resolve(s.gpu, s.profile, s.start);
    if (!ref.ok()) return ref.status().WithPrefix(fmt::format("placement {}", i));
    const GpuModel& m = model_->cluster().gpu(ref->gpu).model();
    if (m.SlotOf(ref->profile, ref->start) < 0) {
      std::string starts;
      for (int slot : m.SlotsOfProfile(ref->profile)) {
        starts += fmt::format("{}{}", starts.empty() ? "" : ", ", m.slots()[slot].start);
      }
      return InvalidArgumentError(
          fmt::format("placement {}: start {} is not a placement of {} on GPU {} (starts: {})", i,
                      s.start, s.profile, s.gpu, starts));
    }
    for (const InstanceRef& o : out) {
      if (o.gpu == ref->gpu) {
        const uint64_t a = m.slots()[m.SlotOf(o.profile, o.start)].unit_mask;
        const uint64_t b = m.slots()[m.SlotOf(ref->profile, ref->start)].unit_mask;
        if (a & b) {
          return InvalidArgumentError(fmt::format("placements overlap: {}@{} and {}@{} on GPU {}",
                                                  m.profile(o.profile).name, o.start, s.profile,
                                                  s.start, s.gpu));
        }
      }
    }
    out.push_back(*ref);
  }
  return out;
}

Status Daemon::Impl::Conflict(const InstanceRef& ref, const std::vector<InstanceRef>&) const {
  const int nvml = model_->nvml(ref.gpu);
  if (model_->cluster().drained(ref.gpu)) {
    const std::string why = model_->unreachable(ref.gpu);
    return FailedPreconditionError(why.empty()
                                       ? fmt::format("GPU {} is drained", nvml)
                                       : fmt::format("GPU {} is unreachable: {}", nvml, why));
  }
  const GpuState& g = model_->cluster().gpu(ref.gpu);
  const GpuModel& m = g.model();
  const uint64_t units = m.slots()[m.SlotOf(ref.profile, ref.start)].unit_mask;
  for (const Instance& in : g.instances()) {
    if (!in.busy() || !(m.slots()[in.slot].unit_mask & units)) continue;
    std::string who = in.HolderString();
    if (in.holder == Holder::kReservation) {
      if (const HeldReservation* r = reservations_.FindByHold(in.job); r != nullptr) {
        who = fmt::format("reservation '{}'", r->record.owner);
      }
    } else if (in.holder == Holder::kJob) {
      const DaemonJobRecord* r = jobs_.Current(in.job);
      if (r != nullptr && r->kind == JobKind::kAllocation) {
        who = fmt::format("allocation {} of '{}'", in.job, r->owner());
      }
    } else {
      who = "an instance being destroyed (its destroy answered \"in use\")";
    }
    return FailedPreconditionError(fmt::format("GPU {}: {}@{} overlaps {}@{}, held by {}", nvml,
                                               m.profile(ref.profile).name, ref.start,
                                               m.profile(in.profile).name, in.start, who));
  }
  return Status();
}

ReservationView Daemon::Impl::ViewOf(const HeldReservation& r) const {
  ReservationView v;
  v.record = r.record;
  for (const InstanceRef& ref : r.refs) {
    v.instances.push_back(InstanceAt(ref));
    v.gpu_uuids.push_back(model_->uuid(ref.gpu));
  }
  return v;
}

StatusOr<ReserveResult> Daemon::Impl::Reserve(const ReservationRequest& req) {
  if (req.owner.empty()) return InvalidArgumentError("field 'owner' must not be empty");
  if (req.placements.empty() || static_cast<int>(req.placements.size()) > kMaxJobCount) {
    return InvalidArgumentError(
        fmt::format("field 'placements' must hold 1 to {} placements, got {}", kMaxJobCount,
                    req.placements.size()));
  }
  const double ttl = req.ttl_s > 0 ? req.ttl_s : config_.reservation_ttl_s;
  if (!(ttl <= config_.reservation_max_ttl_s)) {
    return InvalidArgumentError(
        fmt::format("field 'ttl_s' must be at most {} (reservation_max_ttl_s), got {}",
                    config_.reservation_max_ttl_s, req.ttl_s));
  }
  auto promise = std::make_shared<std::promise<Status>>();
  std::future<Status> done = promise->get_future();
  bool created = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    RETURN_IF_ERROR(Accepting());
    ASSIGN_OR_RETURN(std::vector<InstanceRef> refs, ResolvePlacements(req.placements, true));
    std::vector<ReservedPlacement> placements;
    for (const InstanceRef& ref : refs) {
      placements.push_back({model_->nvml(ref.gpu),
                            model_->cluster().gpu(ref.gpu).model().profile(ref.profile).name,
                            ref.start});
    }
    if (HeldReservation* existing = reservations_.Find(req.owner); existing != nullptr) {
      auto sorted = [](std::vector<ReservedPlacement> v) {
        std::sort(v.begin(), v.end(), [](const ReservedPlacement& a, const ReservedPlacement& b) {
          return std::tie(a.gpu, a.start, a.profile) < std::tie(b.gpu, b.start, b.profile);
        });
        return v;
      };
      if (sorted(existing->record.placements) != sorted(placements)) {
        return FailedPreconditionError(
            fmt::format("reservation '{}' holds other placements; release it first (DELETE "
                        "/v1/reservations/{})",
                        req.owner, req.owner));
      }
      if (!existing->ready) {
        return UnavailableError(
            fmt::format("reservation '{}' is being made; try again", req.owner));
      }
      // Renewal.
      created = false;
      existing->record.expires_at = Unix() + ttl;
      Persist({StoreOp::PutReservation(existing->record)}, /*retry=*/true,
              [promise](const Status& st) { promise->set_value(st); });
    } else {
      for (const InstanceRef& ref : refs) RETURN_IF_ERROR(Conflict(ref, refs));
      HeldReservation res;
      res.record.owner = req.owner;
      res.record.placements = placements;
      res.record.created_at = Unix();
      res.record.expires_at = res.record.created_at + ttl;
      res.refs = refs;
      res.hold_id = reservations_.NextHoldId();
      ASSIGN_OR_RETURN(Plan plan,
                       model_->scheduler().Hold(Holder::kReservation, res.hold_id, refs));
      const std::string owner = req.owner;
      const JobId hold = res.hold_id;
      reservations_.Put(std::move(res));
      model_->Touch();
      // Create-at-reserve: the instances are made now, so that binding them
      // later (a Slurm prolog, kubelet's Allocate) cannot fail on the hardware.
      sync_->Execute(plan, [this, owner, hold, promise](const Status& st) {
        HeldReservation* r = reservations_.Find(owner);
        if (r == nullptr || r->hold_id != hold) {
          promise->set_value(UnavailableError(
              fmt::format("reservation '{}' was released while it was being made", owner)));
          return;
        }
        if (!st.ok()) {
          DropReservation(owner, "its instances could not be made");
          promise->set_value(
              st.code() == StatusCode::kUnavailable ? st : FailedPreconditionError(st.message()));
          return;
        }
        Persist({StoreOp::PutReservation(r->record)}, /*retry=*/false,
                [this, owner, hold, promise](const Status& cst) {
                  HeldReservation* r = reservations_.Find(owner);
                  if (cst.ok() && r != nullptr && r->hold_id == hold) {
                    r->ready = true;
                    spdlog::info("reservation '{}': held until {:.0f}", owner,
                                 r->record.expires_at);
                  } else if (r != nullptr && r->hold_id == hold) {
                    DropReservation(owner, "it could not be stored");
                  }
                  promise->set_value(cst);
                });
      });
    }
  }
  Status st = WaitFor(done, fmt::format("reservation '{}'", req.owner));
  if (!st.ok()) return st;
  std::lock_guard<std::mutex> lock(mu_);
  const HeldReservation* r = reservations_.Find(req.owner);
  if (r == nullptr) return UnavailableError(fmt::format("reservation '{}' is gone", req.owner));
  return ReserveResult{ViewOf(*r), created};
}

void Daemon::Impl::DropReservation(const std::string& owner, const std::string& why) {
  HeldReservation* r = reservations_.Find(owner);
  if (r == nullptr) return;
  if (model_->scheduler().HeldBy(Holder::kReservation, r->hold_id) != nullptr) {
    StatusOr<Plan> plan = model_->scheduler().ReleaseHold(Holder::kReservation, r->hold_id);
    if (plan.ok()) {
      sync_->Execute(*plan, nullptr);
    } else {
      spdlog::error("reservation '{}': {}", owner, plan.status().message());
    }
  }
  const bool stored = r->ready;
  reservations_.Erase(owner);
  model_->Touch();
  spdlog::info("reservation '{}' released: {}", owner, why);
  if (stored) Persist({StoreOp::DeleteReservation(owner)}, /*retry=*/true, nullptr);
}

std::vector<ReservationView> Daemon::Impl::ListReservations(const std::string& prefix) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ReservationView> out;
  for (const HeldReservation* r : reservations_.WithPrefix(prefix)) out.push_back(ViewOf(*r));
  std::sort(out.begin(), out.end(), [](const ReservationView& a, const ReservationView& b) {
    return a.record.owner < b.record.owner;
  });
  return out;
}

StatusOr<ReservationView> Daemon::Impl::GetReservation(const std::string& owner) const {
  std::lock_guard<std::mutex> lock(mu_);
  const HeldReservation* r = reservations_.Find(owner);
  if (r == nullptr || !r->ready) return NotFoundError(fmt::format("no reservation '{}'", owner));
  return ViewOf(*r);
}

Status Daemon::Impl::ReleaseReservation(const std::string& owner) {
  auto promise = std::make_shared<std::promise<Status>>();
  std::future<Status> done = promise->get_future();
  {
    std::lock_guard<std::mutex> lock(mu_);
    const HeldReservation* r = reservations_.Find(owner);
    if (r == nullptr || !r->ready) return NotFoundError(fmt::format("no reservation '{}'", owner));
    RETURN_IF_ERROR(Accepting());
    DropReservation(owner, "released by its owner");
    Persist({}, /*retry=*/true, [promise](const Status& st) { promise->set_value(st); });
  }
  Wake();
  return WaitFor(done, fmt::format("the release of reservation '{}'", owner));
}

void Daemon::Impl::ExpireReservations() {
  for (const std::string& owner : reservations_.Expired(Unix())) {
    DropReservation(owner, "expired");
  }
}

// ---------------------------------------------------------------- allocations

StatusOr<SubmitResult> Daemon::Impl::Allocate(const AllocationRequest& req,
                                              const std::string& key) {
  if (req.owner.empty()) return InvalidArgumentError("field 'owner' must not be empty");
  if (static_cast<int>(req.instances.size()) > kMaxJobCount) {
    return InvalidArgumentError(
        fmt::format("field 'instances' holds at most {} instances", kMaxJobCount));
  }
  if (req.instances.empty() && req.reservation.empty()) {
    return InvalidArgumentError(
        "give 'instances' (profiles or placements), or a 'reservation' whose placements to take");
  }
  if (!req.reservation.empty() && !req.reservation_prefix.empty()) {
    return InvalidArgumentError("give only one of 'reservation' and 'reservation_prefix'");
  }
  auto promise = std::make_shared<std::promise<Status>>();
  std::future<Status> done = promise->get_future();
  DaemonJobId id = 0;
  {
    std::unique_lock<std::mutex> lock(mu_);
    RETURN_IF_ERROR(Accepting());
    if (!key.empty()) {
      keys_cv_.wait(lock, [&] { return !pending_keys_.count(key); });
      if (DaemonJobId first = jobs_.ByKey(key); first != 0) {
        const DaemonJobRecord* v = jobs_.Visible(first);
        if (v->kind == JobKind::kAllocation && SameAllocation(v->allocation, req)) {
          return SubmitResult{*v, true};
        }
        return FailedPreconditionError(
            fmt::format("idempotency key '{}' was used for another request ({} {})", key,
                        JobKindName(v->kind), first));
      }
    }
    Scheduler& sched = model_->scheduler();
    // Which placements, and from which reservation.
    std::vector<InstanceRef> where;
    const HeldReservation* from = nullptr;
    const bool exact = !req.instances.empty() && req.instances.front().gpu >= 0;
    for (const RequestedInstance& s : req.instances) {
      if ((s.gpu >= 0) != exact || (s.gpu >= 0 && s.start < 0)) {
        return InvalidArgumentError(
            "every instance gives either a profile alone or an exact placement (gpu, profile, "
            "start)");
      }
      if (s.profile.empty()) return InvalidArgumentError("every instance needs a 'profile'");
    }
    if (exact) {
      ASSIGN_OR_RETURN(where, ResolvePlacements(req.instances, true));
    }
    // The reservations it may bind.
    std::vector<const HeldReservation*> candidates;
    if (!req.reservation.empty()) {
      const HeldReservation* r = reservations_.Find(req.reservation);
      if (r == nullptr || !r->ready) {
        return NotFoundError(fmt::format("no reservation '{}'", req.reservation));
      }
      candidates.push_back(r);
    } else if (!req.reservation_prefix.empty()) {
      candidates = reservations_.WithPrefix(req.reservation_prefix);
    }
    std::vector<InstanceRef> take;
    if (!candidates.empty() || !req.reservation.empty() || !req.reservation_prefix.empty()) {
      // One reservation supplies every instance: the first (oldest) that can.
      for (const HeldReservation* r : candidates) {
        std::vector<InstanceRef> left = r->refs;
        std::vector<InstanceRef> got;
        bool ok = true;
        if (req.instances.empty()) {
          got = left;
        } else {
          for (size_t i = 0; i < req.instances.size() && ok; ++i) {
            auto match = std::find_if(left.begin(), left.end(), [&](const InstanceRef& ref) {
              if (exact) return ref == where[i];
              const GpuModel& m = model_->cluster().gpu(ref.gpu).model();
              return m.profile(ref.profile).name == req.instances[i].profile;
            });
            if (match == left.end()) {
              ok = false;
            } else {
              got.push_back(*match);
              left.erase(match);
            }
          }
        }
        if (ok) {
          from = r;
          take = got;
          break;
        }
      }
      if (from == nullptr) {
        std::string wanted;
        for (const RequestedInstance& s : req.instances) {
          wanted += (wanted.empty() ? "" : ", ") +
                    (exact ? fmt::format("{}@{} on GPU {}", s.profile, s.start, s.gpu) : s.profile);
        }
        std::string held;
        for (const HeldReservation* r : candidates)
          held += (held.empty() ? "" : ", ") + r->record.owner;
        return FailedPreconditionError(
            fmt::format("no reservation {} holds {} (reservations: {})",
                        req.reservation.empty() ? fmt::format("under '{}'", req.reservation_prefix)
                                                : fmt::format("'{}'", req.reservation),
                        wanted.empty() ? "its placements" : wanted, held.empty() ? "none" : held));
      }
    }
    Job job;
    job.name = req.name;
    job.count = static_cast<int>(from != nullptr ? take.size() : req.instances.size());
    job.migratable = Migratable::kNone;
    id = next_id_++;
    Decision d;
    if (from != nullptr) {
      job.profile =
          model_->cluster().gpu(take.front().gpu).model().profile(take.front().profile).name;
      ASSIGN_OR_RETURN(d, sched.BindHold(Holder::kReservation, from->hold_id,
                                         static_cast<JobId>(id), job, take));
    } else if (exact) {
      for (const InstanceRef& ref : where) RETURN_IF_ERROR(Conflict(ref, where));
      // Given placements, of any profiles: the job names none itself.
      ASSIGN_OR_RETURN(d, sched.PlaceAt(static_cast<JobId>(id), job, where));
    } else {
      // Profiles only: the daemon's policy chooses, now (allocations do not queue).
      std::set<std::string> profiles;
      for (const RequestedInstance& s : req.instances) profiles.insert(s.profile);
      if (profiles.size() != 1) {
        return InvalidArgumentError(
            "instances given by profile alone must all be of one profile (give placements "
            "otherwise)");
      }
      job.profile = *profiles.begin();
      JobRequest probe;
      probe.profile = job.profile;
      probe.count = job.count;
      probe.command = {"-"};
      RETURN_IF_ERROR(ValidateRequest(probe));
      RETURN_IF_ERROR(sched.CheckCanEverRun(job));
      StatusOr<std::optional<Decision>> placed = sched.TryPlace(static_cast<JobId>(id), job);
      if (!placed.ok()) return placed.status();
      if (!placed->has_value()) {
        return FailedPreconditionError(fmt::format(
            "no room for {} now (allocations do not queue: reserve placements, or retry)",
            job.RequestString()));
      }
      d = std::move(**placed);
    }
    DaemonJobRecord r;
    r.id = id;
    r.kind = JobKind::kAllocation;
    r.allocation = req;
    r.idempotency_key = key;
    r.state = JobState::kStarting;
    r.submitted_at = Unix();
    r.instances = InstancesOf(id);
    std::vector<StoreOp> reservation_ops;
    if (from != nullptr) {
      r.bound_reservation = from->record.owner;
      HeldReservation* res = reservations_.Find(from->record.owner);
      // The placements taken leave the reservation; one with none left is gone.
      std::vector<ReservedPlacement> left;
      std::vector<InstanceRef> left_refs;
      for (size_t i = 0; i < res->refs.size(); ++i) {
        if (std::find(take.begin(), take.end(), res->refs[i]) == take.end()) {
          left.push_back(res->record.placements[i]);
          left_refs.push_back(res->refs[i]);
        }
      }
      if (left.empty()) {
        reservation_ops.push_back(StoreOp::DeleteReservation(res->record.owner));
        reservations_.Erase(res->record.owner);
      } else {
        res->record.placements = left;
        res->refs = left_refs;
        reservation_ops.push_back(StoreOp::PutReservation(res->record));
      }
      model_->Touch();
    }
    if (!key.empty()) pending_keys_.insert(key);
    jobs_.Update(r);  // current only: visible once stored
    sync_->Execute(d.plan, [this, id, key, reservation_ops, promise](const Status& st) {
      DaemonJobRecord* rec = jobs_.Current(id);
      if (rec == nullptr) return;
      std::vector<StoreOp> ops = reservation_ops;
      if (st.ok()) {
        rec->instances = InstancesOf(id);
        rec->state = JobState::kRunning;
        rec->started_at = Unix();
      } else {
        // A failed bind: recorded as failed, its instances (and the
        // reservation it consumed) let go; never a stuck GPU.
        ReleaseInstances(static_cast<JobId>(id));
        rec->state = JobState::kFailed;
        rec->ended_at = Unix();
        rec->reason = "bind failed: " + st.message();
      }
      const DaemonJobRecord copy = *rec;
      ops.push_back(StoreOp::InsertJob(copy));
      nlohmann::json detail = {{"state", std::string(JobStateName(copy.state))},
                               {"owner", copy.owner()}};
      if (!copy.reason.empty()) detail["reason"] = copy.reason;
      ops.push_back(StoreOp::Event(id, Unix(), "allocated", Dump(detail)));
      Persist(std::move(ops), /*retry=*/true,
              [this, id, copy, key, st, promise](const Status& cst) {
                if (!key.empty()) {
                  pending_keys_.erase(key);
                  keys_cv_.notify_all();
                }
                if (cst.ok()) {
                  jobs_.Erase(id);
                  jobs_.AddStored(copy);
                }
                promise->set_value(!st.ok() ? st : cst);
              });
    });
  }
  Status st = WaitFor(done, fmt::format("allocation {}", id));
  if (!st.ok()) {
    return Status(st.code() == StatusCode::kUnavailable ? StatusCode::kUnavailable
                                                        : StatusCode::kFailedPrecondition,
                  fmt::format("allocation {}: {}", id, st.message()));
  }
  ASSIGN_OR_RETURN(DaemonJobRecord rec, GetJob(id));
  return SubmitResult{rec, false};
}

StatusOr<DaemonJobRecord> Daemon::Impl::ReleaseAllocation(DaemonJobId id) {
  auto promise = std::make_shared<std::promise<Status>>();
  std::future<Status> done = promise->get_future();
  {
    std::lock_guard<std::mutex> lock(mu_);
    DaemonJobRecord* r = jobs_.Current(id);
    if (r == nullptr || r->kind != JobKind::kAllocation || jobs_.Visible(id) == nullptr) {
      return NotFoundError(fmt::format("no allocation {}", id));
    }
    if (IsTerminal(r->state)) {
      return FailedPreconditionError(
          fmt::format("allocation {} is already {}", id, JobStateName(r->state)));
    }
    RETURN_IF_ERROR(Accepting());
    Finish(*r, JobState::kReleased, std::nullopt, "released by its owner");
    Persist({}, /*retry=*/true, [promise](const Status& st) { promise->set_value(st); });
  }
  Wake();
  RETURN_IF_ERROR(WaitFor(done, fmt::format("the release of allocation {}", id)));
  return GetJob(id);
}

StatusOr<std::vector<DaemonJobRecord>> Daemon::Impl::ReleaseAllocationsOf(
    const std::string& owner) {
  std::vector<DaemonJobId> ids;
  {
    std::lock_guard<std::mutex> lock(mu_);
    RETURN_IF_ERROR(Accepting());
    ids = jobs_.LiveAllocationsOf(owner);
  }
  std::vector<DaemonJobRecord> out;
  for (DaemonJobId id : ids) {
    StatusOr<DaemonJobRecord> r = ReleaseAllocation(id);
    if (r.ok()) {
      out.push_back(*r);
    } else if (r.status().code() != StatusCode::kFailedPrecondition) {
      return r.status();  // already released meanwhile is fine; the rest is not
    }
  }
  return out;
}

// ---------------------------------------------------------------- Daemon

StatusOr<std::unique_ptr<Daemon>> Daemon::Create(const DaemonConfig& config,
                                                 std::unique_ptr<MigBackend> backend,
                                                 const Catalog* catalog, Clock* clock) {
  if (backend == nullptr) return InvalidArgumentError("no backend");
  if (catalog == nullptr) return InvalidArgumentError("no catalog");
  if (clock == nullptr) clock = SteadyClock();
  auto impl = std::make_unique<Impl>(config, std::move(backend), catalog, clock);
  RETURN_IF_ERROR(impl->Init());
  return std::unique_ptr<Daemon>(new Daemon(std::move(impl)));
}

Daemon::Daemon(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Daemon::~Daemon() { Stop(); }
void Daemon::StartWorker() { impl_->StartWorker(); }
void Daemon::Stop() { impl_->Stop(); }
Status Daemon::Tick() { return impl_->Tick(); }
bool Daemon::WaitIdle(double timeout_s) { return impl_->WaitIdle(timeout_s); }
Status Daemon::Settle(double timeout_s) { return impl_->Settle(timeout_s); }
const DaemonConfig& Daemon::config() const { return impl_->config(); }
StatusOr<SubmitResult> Daemon::Submit(const JobRequest& request, const std::string& key) {
  return impl_->Submit(request, key);
}
StatusOr<DaemonJobRecord> Daemon::Submit(const JobRequest& request) {
  ASSIGN_OR_RETURN(SubmitResult r, impl_->Submit(request, ""));
  return r.record;
}
JobPage Daemon::ListJobs(const JobQuery& query) const { return impl_->ListJobs(query); }
std::vector<DaemonJobRecord> Daemon::ListJobs() const {
  std::vector<DaemonJobRecord> out;
  JobQuery q;
  q.limit = 1000;
  while (true) {
    JobPage page = impl_->ListJobs(q);
    out.insert(out.end(), page.jobs.begin(), page.jobs.end());
    if (page.next == 0) break;
    q.after = page.next;
  }
  return out;
}
StatusOr<DaemonJobRecord> Daemon::GetJob(DaemonJobId id) const { return impl_->GetJob(id); }
StatusOr<DaemonJobRecord> Daemon::Cancel(DaemonJobId id) { return impl_->Cancel(id); }
StatusOr<PlanPreview> Daemon::PreviewPlan(const JobRequest& request) const {
  return impl_->PreviewPlan(request);
}
std::filesystem::path Daemon::LogPath(DaemonJobId id) const { return impl_->LogPath(id); }
std::vector<GpuView> Daemon::Gpus() const { return impl_->Gpus(); }
NodeView Daemon::Node() const { return impl_->Node(); }
void Daemon::Pause() { impl_->Pause(); }
void Daemon::Resume() { impl_->Resume(); }
bool Daemon::paused() const { return impl_->paused(); }
Status Daemon::Drain(int gpu) { return impl_->SetOperatorDrain(gpu, true); }
Status Daemon::Undrain(int gpu) { return impl_->SetOperatorDrain(gpu, false); }
DaemonMetrics Daemon::Metrics() const { return impl_->Metrics(); }
Status Daemon::Health() const { return impl_->Health(); }
StatusOr<ReserveResult> Daemon::Reserve(const ReservationRequest& request) {
  return impl_->Reserve(request);
}
std::vector<ReservationView> Daemon::ListReservations(const std::string& prefix) const {
  return impl_->ListReservations(prefix);
}
StatusOr<ReservationView> Daemon::GetReservation(const std::string& owner) const {
  return impl_->GetReservation(owner);
}
Status Daemon::ReleaseReservation(const std::string& owner) {
  return impl_->ReleaseReservation(owner);
}
StatusOr<SubmitResult> Daemon::Allocate(const AllocationRequest& request, const std::string& key) {
  return impl_->Allocate(request, key);
}
StatusOr<DaemonJobRecord> Daemon::ReleaseAllocation(DaemonJobId id) {
  return impl_->ReleaseAllocation(id);
}
StatusOr<std::vector<DaemonJobRecord>> Daemon::ReleaseAllocationsOf(const std::string& owner) {
  return impl_->ReleaseAllocationsOf(owner);
}
StoreWriter* Daemon::store_writer_for_testing() { return impl_->writer(); }

}  // namespace migsched
