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
#include "daemon/commit_wait.h"
#include "daemon/discovery.h"
#include "daemon/idempotency_keys.h"
#include "daemon/instance_sync.h"
#include "daemon/job_store.h"
#include "daemon/job_table.h"
#include "daemon/json_text.h"
#include "daemon/move_executor.h"
#include "daemon/node_model.h"
#include "daemon/node_service.h"
#include "daemon/process_runner.h"
#include "daemon/recovery.h"
#include "daemon/request_json.h"
#include "daemon/state_dir.h"
#include "daemon/store_writer.h"
#include "sched/policy.h"
#include "sched/scheduler.h"

namespace migsched {
namespace {

// Create failures a job survives (requeued) before it fails.
constexpr int kMaxCreateFailures = 3;
// How often the control loop looks for finished jobs to prune, seconds.
constexpr double kPruneIntervalS = 60;

bool SameRequest(const JobRequest& a, const JobRequest& b) {
  return a.profile == b.profile && a.gpu_fraction == b.gpu_fraction && a.count == b.count &&
         a.command == b.command && a.env == b.env && a.cwd == b.cwd &&
         a.migratable == b.migratable && a.latency_sensitive == b.latency_sensitive &&
         a.priority == b.priority && a.name == b.name && a.user == b.user &&
         a.time_limit_s == b.time_limit_s;
}

}  // namespace

class Daemon::Impl : public MoveHost, public NodeServiceHost {
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
  std::vector<GpuView> Gpus() const { return node_->Gpus(); }
  NodeView Node() const;
  void Pause();
  void Resume();
  bool paused() const;
  Status SetOperatorDrain(int gpu, bool on);
  DaemonMetrics Metrics() const;
  Status Health() const;
  NodeService& node() { return *node_; }
  const NodeService& node() const { return *node_; }

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
  std::vector<JobInstance> InstancesOf(DaemonJobId id) override {
    return DescribeInstancesOf(*model_, *sync_, id);
  }
  // ---- MoveHost and NodeServiceHost (state lock held) ----
  void FinishJob(DaemonJobRecord& r, JobState state, std::optional<int> exit_code,
                 std::string reason) override {
    Finish(r, state, exit_code, std::move(reason));
  }
  // ---- NodeServiceHost (state lock held) ----
  Status Accepting() const override;
  void Persist(std::vector<StoreOp> ops, bool retry,
               std::function<void(const Status&)> then) override;
  DaemonJobId NextJobId() override { return next_id_++; }
  void ReleaseInstances(DaemonJobId id) override;
  void Wake() override {
    {
      std::lock_guard<std::mutex> l(worker_mu_);
      wake_ = true;
    }
    worker_cv_.notify_all();
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
  Status ValidateRequest(const JobRequest& r) const;
  StatusOr<RunAsUser> UserFor(const JobRequest& r) const;

  // ---- the control loop [state] ----
  void TickLocked(std::vector<Launch>* launches, std::vector<std::filesystem::path>* remove);
  void Reap();
  void StartPlacement(const Decision& d);
  void OnPlaced(DaemonJobId id, const Status& st);
  void PlacementFailed(DaemonJobRecord& r, const Status& st);
  void Finish(DaemonJobRecord& r, JobState state, std::optional<int> exit_code, std::string reason);
  void RunMigrations(MigrationTrigger trigger);
  // The daemon's say on whether running job `id` may move now (§6, §13; the scheduler adds its
  // own rules: `none` never, latency-sensitive within its GPU, the cool-down): a job (not an
  // allocation) whose process runs, not being cancelled or moved, and, for `checkpoint`, with
  // checkpoint and restore commands configured. Passed to every migration pass and, as the
  // scheduler's move filter, to the evacuations begun inside queue scans.
  bool MayMove(JobId id) const;
  // Tells the scheduler when job `id` is expected to end: `started_s` (daemon time) plus its
  // time limit; nothing for a job without one (its end is unknown: never, §13).
  void NoteExpectedEnd(DaemonJobId id, double started_s);
  void CheckPcie(double now);
  void Prune(std::vector<std::filesystem::path>* remove);
  // Says why a queued job cannot start while GPUs are drained or
  // unreachable (a gang larger than what the open GPUs can ever hold waits,
  // with the reason, rather than silently), and clears it when they return.
  void UpdateWaitReasons();
  void CollectLaunches(std::vector<Launch>* out);
  void RecordLaunch(Launch& l);
  void Enqueue(DaemonJobId id, const Job& job);

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
  std::unique_ptr<NodeService> node_;  // reservations, allocations, the node view
  JobTable jobs_;
  IdempotencyKeys keys_;
  std::map<DaemonJobId, Run> runs_;
  std::map<DaemonJobId, LaunchRequest> launches_;  // ready to launch (intent stored)
  std::map<DaemonJobId, double> enqueued_s_;       // when each queued job was first queued
  std::map<DaemonJobId, int> create_failures_;
  std::set<DaemonJobId> waiting_reasons_;  // queued jobs whose reason says why they cannot start
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
  // Evacuations (§13) begin inside queue scans: only jobs whose move the MoveExecutor can run.
  model_->scheduler().SetMoveFilter([this](JobId id) { return MayMove(id); });
  node_ = std::make_unique<NodeService>(model_.get(), sync_.get(), &jobs_, &keys_, &config_, clock_,
                                        &mu_, this);
  ASSIGN_OR_RETURN(store_, JobStore::Open(config_.state_dir));
  ASSIGN_OR_RETURN(RecoveryResult rec,
                   Recover(RecoveryInputs{model_.get(), sync_.get(), store_.get(), &runner_, &jobs_,
                                          node_->reservations_for_recovery(), &mu_, clock_}));
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
      if (const DaemonJobRecord* r = jobs_.Current(id); r != nullptr && r->started_at > 0) {
        NoteExpectedEnd(id, NowS() - std::max(0.0, Unix() - r->started_at));
      }
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
    ops.push_back(StoreOp::Event(r.id, Unix(), std::string(event), JsonText(detail)));
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
  return model_->CheckOffered(r.ToJob());
}

void Daemon::Impl::Enqueue(DaemonJobId id, const Job& job) {
  Scheduler& s = model_->scheduler();
  s.SetNow(std::max(s.now(), NowS()));
  enqueued_s_[id] = s.now();
  s.Enqueue(static_cast<JobId>(id), job);
}

// ---------------------------------------------------------------- jobs

StatusOr<SubmitResult> Daemon::Impl::Submit(const JobRequest& typed, const std::string& key) {
  const JobRequest request = WithCanonicalProfile(typed);
  auto promise = std::make_shared<std::promise<Status>>();
  std::future<Status> committed = promise->get_future();
  DaemonJobRecord r;
  {
    std::unique_lock<std::mutex> lock(mu_);
    RETURN_IF_ERROR(ValidateRequest(request));
    RETURN_IF_ERROR(Accepting());
    if (!key.empty()) {
      keys_.Wait(lock, key);
      if (DaemonJobId first = jobs_.ByKey(key); first != 0) {
        const DaemonJobRecord* v = jobs_.Visible(first);
        if (v->kind == JobKind::kJob && SameRequest(v->request, request)) {
          return SubmitResult{*v, true};
        }
        return FailedPreconditionError(
            fmt::format("idempotency key '{}' was used for another request ({} {})", key,
                        JobKindName(v->kind), first));
      }
      keys_.Begin(key);
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
    Persist({StoreOp::InsertJob(r),
             StoreOp::Event(r.id, r.submitted_at, "submitted", JsonText(detail))},
            /*retry=*/false, [this, r, key, promise](const Status& st) {
              keys_.End(key);
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
  if (allocation) return node_->ReleaseAllocation(id);  // DELETE on an allocation releases it
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
  Status st = WaitForCommit(committed, fmt::format("the cancel of job {}", id));
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
  ReleaseInstances(r.id);
  nlohmann::json detail;
  if (exit_code) detail["exit_code"] = *exit_code;
  if (!r.reason.empty()) detail["reason"] = r.reason;
  SaveJob(r, "ended", detail);
}

void Daemon::Impl::ReleaseInstances(DaemonJobId job) {
  const JobId id = static_cast<JobId>(job);
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

void Daemon::Impl::StartPlacement(const Decision& d) {
  DaemonJobRecord* r = jobs_.Current(d.job);
  if (r == nullptr) {
    spdlog::error("the scheduler placed job {}, which the daemon does not know", d.job);
    return;
  }
  r->state = JobState::kStarting;
  r->instances = InstancesOf(d.job);
  const DaemonJobId id = d.job;
  NoteExpectedEnd(id, NowS());
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
  ReleaseInstances(id);
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
  NoteExpectedEnd(l.id, NowS());  // this run's start (a relaunch after a move starts anew)
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

bool Daemon::Impl::MayMove(JobId id) const {
  const bool can_checkpoint =
      !config_.checkpoint_command.empty() && !config_.restore_command.empty();
  const DaemonJobRecord* r = jobs_.Current(id);
  if (r == nullptr || r->kind != JobKind::kJob || r->state != JobState::kRunning) return false;
  if (!runs_.count(id) || r->cancel_requested || moves_->moving(id)) return false;
  if (r->request.migratable == Migratable::kCheckpoint && !can_checkpoint) return false;
  return true;
}

void Daemon::Impl::NoteExpectedEnd(DaemonJobId id, double started_s) {
  const DaemonJobRecord* r = jobs_.Current(id);
  if (r == nullptr || r->kind != JobKind::kJob || r->request.time_limit_s <= 0) return;
  model_->scheduler().SetExpectedEnd(static_cast<JobId>(id), started_s + r->request.time_limit_s);
}

void Daemon::Impl::RunMigrations(MigrationTrigger trigger) {
  StatusOr<std::vector<MigrationStart>> starts =
      model_->scheduler().RunMigrationPass(trigger, [this](JobId id) { return MayMove(id); });
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
  node_->ExpireReservations();
  Reap();
  moves_->Advance(&runner_);
  // §13 order at a completion: the pass before the queue scan, when the options ask for it.
  const bool migrates = sched.policy().Migrates() && !stopped_;
  if (migrates && completed_ && config_.scheduler.migrate_before_scan) {
    RunMigrations(MigrationTrigger::kCompletion);
    completed_ = false;
  }
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
  n.paused = paused_;
  n.queue_length = static_cast<int64_t>(model_->scheduler().queue_size());
  node_->FillNode(&n);
  return n;
}

StatusOr<PlanPreview> Daemon::Impl::PreviewPlan(const JobRequest& typed) const {
  const JobRequest request = WithCanonicalProfile(typed);
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
  for (const InstanceRef& ref : dec.instances)
    out.instances.push_back(DescribeInstance(*model_, *sync_, ref));
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
    Persist({StoreOp::PutNode("drained_gpus",
                              JsonText(nlohmann::json(model_->OperatorDrainedUuids())))},
            /*retry=*/true, [promise](const Status& st) { promise->set_value(st); });
  }
  if (!on) Wake();
  return WaitForCommit(committed, fmt::format("the drain of GPU {}", gpu));
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
  m.reservations = static_cast<int64_t>(node_->reservation_count());
  m.reconfigurations = counters_.reconfigurations;
  m.reconfig_seconds = counters_.reconfig_seconds.Snapshot();
  m.migrations_intra = counters_.migrations_intra;
  m.migrations_inter = counters_.migrations_inter;
  m.decision_seconds = counters_.decision_seconds.Snapshot();
  m.gpus = std::move(gpus);
  return m;
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
  return impl_->node().Reserve(request);
}
std::vector<ReservationView> Daemon::ListReservations(const std::string& prefix) const {
  return impl_->node().ListReservations(prefix);
}
StatusOr<ReservationView> Daemon::GetReservation(const std::string& owner) const {
  return impl_->node().GetReservation(owner);
}
Status Daemon::ReleaseReservation(const std::string& owner) {
  return impl_->node().ReleaseReservation(owner);
}
StatusOr<SubmitResult> Daemon::Allocate(const AllocationRequest& request, const std::string& key) {
  return impl_->node().Allocate(request, key);
}
StatusOr<DaemonJobRecord> Daemon::ReleaseAllocation(DaemonJobId id) {
  return impl_->node().ReleaseAllocation(id);
}
StatusOr<std::vector<DaemonJobRecord>> Daemon::ReleaseAllocationsOf(const std::string& owner) {
  return impl_->node().ReleaseAllocationsOf(owner);
}
StoreWriter* Daemon::store_writer_for_testing() { return impl_->writer(); }

}  // namespace migsched
