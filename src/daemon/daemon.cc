#include "daemon/daemon.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <filesystem>
#include <limits>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>
#include <utility>

#include "core/clock.h"
#include "core/cluster.h"
#include "core/plan.h"
#include "daemon/discovery.h"
#include "daemon/job_store.h"
#include "daemon/process_runner.h"
#include "sched/policy.h"
#include "sched/scheduler.h"

namespace migsched {
namespace {

constexpr size_t kMaxSamples = 10000;
// Placeholder jobs: an instance the backend still has but the scheduler let
// go (its destroy answered "in use") is kept in the Cluster, busy with a
// placeholder job id <= kPlaceholderBase, so that no plan reuses or destroys
// it until the backend destroy succeeds.
constexpr JobId kPlaceholderBase = -1000;
// Create failures a job survives (requeued) before it fails.
constexpr int kMaxCreateFailures = 3;
// Back-off of the destroy retries: 50 ms doubling up to 5 s.
constexpr double kFirstBackoffS = 0.05;
constexpr double kMaxBackoffS = 5.0;
// A checkpoint command gets this long before it counts as failed.
constexpr double kCheckpointTimeoutS = 300;

double WallNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void PushSample(std::vector<double>* v, double x) {
  if (v->size() >= kMaxSamples) v->erase(v->begin());
  v->push_back(x);
}

// The configured policy, plus two things the daemon needs from placement:
// pinned candidates (re-adopting a running job on the instances it already
// has at recovery, or putting it back on its source when a move cannot
// begin), and no placement on a drained GPU whatever the policy chooses.
class DaemonPolicy : public PlacementPolicy {
 public:
  DaemonPolicy(std::unique_ptr<PlacementPolicy> inner, const std::set<int>* drained)
      : inner_(std::move(inner)), drained_(drained) {}
  std::string_view name() const override { return inner_->name(); }
  std::optional<Candidate> Choose(const Cluster& cluster, const PlacementRequest& req) override {
    if (!pins_.empty()) {
      Candidate c = pins_.front();
      pins_.pop_front();
      return c;
    }
    std::optional<Candidate> c = inner_->Choose(cluster, req);
    if (c && drained_->count(c->gpu)) return std::nullopt;
    return c;
  }
  StatusOr<Plan> SetupPlan(const Cluster& cluster) override { return inner_->SetupPlan(cluster); }
  bool KeepIdleInstances() const override { return inner_->KeepIdleInstances(); }
  void ObserveArrival(const Cluster& cluster, const Job& job) override {
    inner_->ObserveArrival(cluster, job);
  }
  bool Migrates() const override { return inner_->Migrates(); }
  int Capacity(const Cluster& cluster, int gpu, int profile) const override {
    return inner_->Capacity(cluster, gpu, profile);
  }
  void Pin(std::vector<Candidate> pins) { pins_.assign(pins.begin(), pins.end()); }
  void ClearPins() { pins_.clear(); }

 private:
  std::unique_ptr<PlacementPolicy> inner_;
  const std::set<int>* drained_;
  std::deque<Candidate> pins_;
};

}  // namespace

class Daemon::Impl {
 public:
  Impl(const DaemonConfig& config, std::unique_ptr<MigBackend> backend, const Catalog* catalog)
      : config_(config),
        catalog_(catalog),
        backend_(std::move(backend)),
        runner_(config.state_dir),
        t0_(std::chrono::steady_clock::now()) {}
  ~Impl() {
    Stop();
    if (lock_fd_ >= 0) close(lock_fd_);  // releases the state-dir lock
  }

  Status Init();
  Status LockStateDir();
  void StartWorker();
  void Stop();
  Status Tick();
  StatusOr<DaemonJobRecord> Submit(const JobRequest& request);
  std::vector<DaemonJobRecord> ListJobs() const;
  StatusOr<DaemonJobRecord> GetJob(DaemonJobId id) const;
  StatusOr<DaemonJobRecord> Cancel(DaemonJobId id);
  std::vector<GpuView> Gpus() const;
  StatusOr<PlanPreview> PreviewPlan(const JobRequest& request) const;
  void Pause();
  void Resume();
  bool paused() const;
  Status Drain(int gpu);
  Status Undrain(int gpu);
  DaemonMetrics Metrics() const;
  std::filesystem::path LogPath(DaemonJobId id) const { return runner_.LogPath(id); }
  const DaemonConfig& config() const { return config_; }

 private:
  using Key = std::pair<int, int>;  // (cluster GPU, start)
  // What the daemon does with a running job's process beyond waiting.
  struct Run {
    int64_t pgid = 0;
    int64_t pid = 0;     // the command's own pid (0 when re-adopted)
    double kill_at = 0;  // > 0: SIGKILL the group at this daemon time
    bool cancel = false;
    bool moving = false;        // a move began: the process is being stopped
    bool checkpointed = false;  // checkpoint succeeded: relaunch with the restore command
    std::string checkpoint_dir;
  };
  struct PendingDestroy {
    int gpu = 0;  // cluster index
    int start = 0;
    int profile = 0;
    JobId placeholder = kNoJob;
    double next_try = 0;
    double backoff = kFirstBackoffS;
    int attempts = 0;
  };

  double Now() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  }
  int ClusterIndex(int nvml_index) const {
    for (int g = 0; g < static_cast<int>(nvml_.size()); ++g) {
      if (nvml_[g] == nvml_index) return g;
    }
    return -1;
  }
  Status ValidateRequest(const JobRequest& r) const;
  void Save(DaemonJobRecord& r, std::string_view event, nlohmann::json detail);
  void ApplyDrainFlags();

  // Backend side of a plan: kCreate/kDestroy in order (idempotent against
  // live_), stopping at the first failure. Cluster-only steps are skipped.
  Status ExecutePlan(const Plan& plan);
  Status BackendCreate(int g, int profile, int start);
  Status BackendDestroy(int g, int start);
  // Makes the Cluster match the backend on `g` (after a failed plan): idle
  // Cluster instances the backend lacks go; backend instances the Cluster
  // lacks are kept in the Cluster behind a placeholder and destroyed later.
  void Resync(int g);
  void ResyncAll() {
    for (int g = 0; g < cluster_->size(); ++g) Resync(g);
  }
  void RetryDestroys();
  // pcie_saturation_gbps > 0: one PCIe sample per GPU per second; a GPU
  // whose link stays at or above it for 10 s gets an advisory in the log.
  void CheckPcie(double now);
  // After a plan that released or destroyed instances.
  void AfterReleasePlan(const Plan& plan);

  std::vector<JobInstance> InstancesOfJob(JobId id) const;
  void Place(const Decision& d);
  Status LaunchJob(DaemonJobRecord& r, bool restarted,
                   const std::vector<std::string>* argv_override);
  void Finish(DaemonJobRecord& r, JobState state, std::optional<int> exit_code, std::string reason);
  void ReapProcesses();
  void CompleteMove(DaemonJobRecord& r, Run& run, int exit_code);
  void RunMigrations(MigrationTrigger trigger);
  void BeginMove(const MigrationStart& st);
  bool PinPlace(JobId id, const Job& job, const std::vector<InstanceRef>& where);
  Status Recover();
  Status TickLocked();

  DaemonConfig config_;
  const Catalog* catalog_;
  std::unique_ptr<MigBackend> backend_;
  ProcessRunner runner_;
  std::chrono::steady_clock::time_point t0_;

  mutable std::mutex mu_;
  NodeInventory inv_;
  std::vector<int> nvml_;  // cluster index -> NVML index
  mutable ConfigTableCache tables_;
  std::unique_ptr<Cluster> cluster_;
  DaemonPolicy* policy_ = nullptr;  // owned by sched_
  std::unique_ptr<Scheduler> sched_;
  std::unique_ptr<JobStore> store_;
  std::map<DaemonJobId, DaemonJobRecord> jobs_;
  std::map<DaemonJobId, Run> runs_;
  std::map<DaemonJobId, int> create_failures_;
  std::map<Key, BackendInstance> live_;  // what the backend has
  std::vector<PendingDestroy> pending_destroys_;
  JobId next_placeholder_ = kPlaceholderBase;
  std::set<int> drained_;  // cluster indices
  bool paused_ = false;
  bool completed_ = false;  // a job ended since the last migration pass
  double next_defrag_ = 0;
  double next_pcie_sample_ = 0;
  std::map<int, double> pcie_saturated_since_;  // cluster GPU -> daemon time
  std::set<int> pcie_advised_;

  int64_t reconfigurations_ = 0;
  std::vector<double> reconfig_seconds_;
  int64_t migrations_intra_ = 0;
  int64_t migrations_inter_ = 0;

  std::thread worker_;
  std::mutex worker_mu_;
  std::condition_variable worker_cv_;
  bool stop_worker_ = false;
  bool stopped_ = false;
  int lock_fd_ = -1;  // <state_dir>/lock, flock'ed for the daemon's lifetime
};

// ---------------------------------------------------------------- setup

Status Daemon::Impl::Init() {
  if (config_.state_dir.empty()) return InvalidArgumentError("config: state_dir is empty");
  RETURN_IF_ERROR(LockStateDir());
  RETURN_IF_ERROR(config_.scheduler.Validate());
  if (config_.on_shutdown != "leave" && config_.on_shutdown != "drain") {
    return InvalidArgumentError(
        fmt::format("config: on_shutdown '{}' is not one of leave, drain", config_.on_shutdown));
  }
  std::vector<std::string> selection;
  if (backend_->name() == "nvml") selection = config_.nvml_gpus;
  ASSIGN_OR_RETURN(inv_, DiscoverNode(backend_.get(), *catalog_, selection));
  if (inv_.gpus.empty()) return FailedPreconditionError("no GPU to manage");
  for (const std::string& note : inv_.notes) spdlog::info("discovery: {}", note);
  std::vector<const GpuModel*> models;
  for (const DiscoveredGpu& d : inv_.gpus) {
    models.push_back(d.model);
    nvml_.push_back(d.gpu.index);
  }
  cluster_ = std::make_unique<Cluster>(models, &tables_);
  ASSIGN_OR_RETURN(std::unique_ptr<PlacementPolicy> inner,
                   MakePolicy(config_.policy, config_.scheduler));
  auto policy = std::make_unique<DaemonPolicy>(std::move(inner), &drained_);
  policy_ = policy.get();
  sched_ = std::make_unique<Scheduler>(cluster_.get(), std::move(policy), config_.scheduler,
                                       SteadyClock());
  ASSIGN_OR_RETURN(store_, JobStore::Open(config_.state_dir));
  return Recover();
}

// One daemon per state dir: two would run each job twice. An exclusive
// flock on <state_dir>/lock (close-on-exec, so jobs never inherit it; the
// kernel drops it when the daemon dies, kill -9 included).
Status Daemon::Impl::LockStateDir() {
  std::error_code ec;
  std::filesystem::create_directories(config_.state_dir, ec);
  if (ec) {
    return FailedPreconditionError(
        fmt::format("cannot create state_dir {}: {}", config_.state_dir, ec.message()));
  }
  const std::string path = (std::filesystem::path(config_.state_dir) / "lock").string();
  lock_fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock_fd_ < 0) {
    return FailedPreconditionError(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
  }
  if (flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char buf[32] = {};
    const ssize_t n = pread(lock_fd_, buf, sizeof(buf) - 1, 0);
    const std::string owner = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "?";
    close(lock_fd_);
    lock_fd_ = -1;
    if (err == EWOULDBLOCK) {
      return FailedPreconditionError(fmt::format(
          "state_dir {} is in use by another migsched serve (pid {}): one daemon per state dir",
          config_.state_dir, owner));
    }
    return FailedPreconditionError(fmt::format("cannot lock {}: {}", path, std::strerror(err)));
  }
  const std::string pid = std::to_string(getpid());
  if (ftruncate(lock_fd_, 0) != 0 || pwrite(lock_fd_, pid.data(), pid.size(), 0) < 0) {
    spdlog::warn("cannot write the pid into {}: {}", path, std::strerror(errno));
  }
  return Status();
}

Status Daemon::Impl::Recover() {
  // 1. The backend's instances, adopted as idle.
  for (int g = 0; g < cluster_->size(); ++g) {
    const GpuModel& model = cluster_->gpu(g).model();
    for (const BackendInstance& in : inv_.gpus[g].instances) {
      int profile = -1;
      for (int p = 0; p < static_cast<int>(model.profiles().size()); ++p) {
        if (model.profile(p).id == in.profile_id) profile = p;
      }
      live_[{g, in.placement.start}] = in;
      if (profile < 0 || !in.has_compute_instance) {
        spdlog::warn("GPU {}: instance gi {} at {} ({}) is destroyed", nvml_[g], in.gi_id,
                     in.placement.start, profile < 0 ? "unknown profile" : "no compute instance");
        continue;  // Resync keeps it behind a placeholder and destroys it
      }
      Plan p{{{StepKind::kCreate, g, profile, in.placement.start}}};
      Status st = ApplyPlan(p, cluster_.get());
      if (st.ok()) {
        spdlog::info("GPU {}: found instance {}@{} ({}), adopted as idle", nvml_[g],
                     model.profile(profile).name, in.placement.start, in.mig_uuid);
      } else {
        spdlog::warn("GPU {}: cannot adopt instance {}: {}", nvml_[g], in.mig_uuid, st.message());
      }
    }
  }
  // 2. The policy's setup layout (static policies), on top of what exists.
  {
    StatusOr<Plan> setup = sched_->Setup();
    if (!setup.ok()) return setup.status();
    Status st = ExecutePlan(*setup);
    if (!st.ok()) spdlog::warn("setup layout: {}", st.message());
  }
  ResyncAll();
  // 3. The jobs.
  ASSIGN_OR_RETURN(std::vector<DaemonJobRecord> all, store_->LoadAll());
  std::vector<DaemonJobId> requeue;
  for (DaemonJobRecord& r : all) {
    const DaemonJobId id = r.id;
    jobs_[id] = std::move(r);
  }
  for (auto& [id, r] : jobs_) {
    if (IsTerminal(r.state)) continue;
    const JobId jid = static_cast<JobId>(id);
    const Job job = r.request.ToJob();
    if (r.state == JobState::kQueued || r.state == JobState::kStarting) {
      if (r.state == JobState::kStarting) {
        r.state = JobState::kQueued;
        r.instances.clear();
        Save(r, "requeued", {{"reason", "daemon restarted while the job was starting"}});
      }
      requeue.push_back(id);
      continue;
    }
    // Running or migrating: is the process still there?
    ProcessStatus ps = runner_.Poll(id, r.pid);
    std::string vanished;
    std::vector<InstanceRef> where;
    for (const JobInstance& in : r.instances) {
      const int g = ClusterIndex(in.gpu);
      auto it = g < 0 ? live_.end() : live_.find({g, in.start});
      if (it == live_.end() || it->second.mig_uuid != in.mig_uuid) {
        vanished = in.mig_uuid;
        break;
      }
      where.push_back({g, cluster_->gpu(g).model().FindProfile(in.profile), in.start});
    }
    if (ps.kind == ProcessStatus::Kind::kRunning && vanished.empty() && PinPlace(jid, job, where)) {
      runs_[id].pgid = r.pid;
      if (r.state == JobState::kMigrating) {
        r.state = JobState::kRunning;  // the move is abandoned; the job stays on its source
        Save(r, "move-abandoned", {{"reason", "daemon restarted during the move"}});
      }
      spdlog::info("job {}: re-adopted (pid {})", id, r.pid);
      if (store_) (void)store_->AppendEvent(id, WallNow(), "adopted", R"({})");
      continue;
    }
    if (ps.kind == ProcessStatus::Kind::kRunning) {
      runner_.SignalGroup(r.pid, SIGKILL);
      Finish(r, JobState::kFailed, std::nullopt,
             vanished.empty()
                 ? "its instances could not be re-adopted after a daemon restart"
                 : fmt::format("instance {} vanished while the daemon was down", vanished));
    } else if (ps.kind == ProcessStatus::Kind::kExited) {
      Finish(r, ps.exit_code == 0 ? JobState::kSucceeded : JobState::kFailed, ps.exit_code,
             ps.exit_code == 0
                 ? ""
                 : fmt::format("exited with code {} while the daemon was down", ps.exit_code));
    } else {
      Finish(r, JobState::kFailed, std::nullopt, "process lost while the daemon was down");
    }
  }
  for (DaemonJobId id : requeue) {
    sched_->Enqueue(static_cast<JobId>(id), jobs_[id].request.ToJob());
  }
  return Status();
}

// Places `id` exactly on `where` (its instances before a restart, or its
// source after a failed move); false if the scheduler chose otherwise.
bool Daemon::Impl::PinPlace(JobId id, const Job& job, const std::vector<InstanceRef>& where) {
  if (static_cast<int>(where.size()) != job.count) return false;
  std::vector<Candidate> pins;
  for (const InstanceRef& w : where) {
    if (w.profile < 0) return false;
    Candidate c;
    c.gpu = w.gpu;
    c.profile = w.profile;
    c.start = w.start;
    pins.push_back(c);
  }
  policy_->Pin(std::move(pins));
  StatusOr<std::optional<Decision>> d = sched_->TryPlace(id, job);
  policy_->ClearPins();
  if (!d.ok() || !d->has_value()) {
    spdlog::error("job {}: cannot pin it on its instances: {}", id,
                  d.ok() ? "no placement" : d.status().message());
    return false;
  }
  // Only kStart steps are expected (the instances exist); anything else is
  // made to match the backend.
  Status st = ExecutePlan((*d)->plan);
  if (!st.ok()) spdlog::error("job {}: {}", id, st.message());
  return true;
}

void Daemon::Impl::Save(DaemonJobRecord& r, std::string_view event, nlohmann::json detail) {
  Status st = store_->Update(r);
  if (!st.ok()) spdlog::error("job {}: {}", r.id, st.message());
  if (!event.empty()) {
    detail["state"] = std::string(JobStateName(r.state));
    st = store_->AppendEvent(r.id, WallNow(), event,
                             detail.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    if (!st.ok()) spdlog::error("job {}: {}", r.id, st.message());
  }
}

void Daemon::Impl::ApplyDrainFlags() {
  for (int g : drained_) cluster_->SetReserved(g, true);
}

// ---------------------------------------------------------------- backend plans

Status Daemon::Impl::BackendCreate(int g, int profile, int start) {
  const Profile& p = cluster_->gpu(g).model().profile(profile);
  auto it = live_.find({g, start});
  if (it != live_.end()) {
    if (it->second.profile_id == p.id) return Status();  // already there (recovery)
    return Status(StatusCode::kResourceExhausted,
                  fmt::format("GPU {}: {}@{}: another instance is there", nvml_[g], p.name, start));
  }
  const auto t0 = std::chrono::steady_clock::now();
  StatusOr<BackendInstance> in =
      backend_->CreateInstance(nvml_[g], p.id, Placement{start, p.size()});
  if (!in.ok()) return in.status();
  ++reconfigurations_;
  PushSample(&reconfig_seconds_,
             std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  live_[{g, start}] = *in;
  return Status();
}

Status Daemon::Impl::BackendDestroy(int g, int start) {
  auto it = live_.find({g, start});
  if (it == live_.end()) return Status();  // never made (or already gone)
  const auto t0 = std::chrono::steady_clock::now();
  Status st = backend_->DestroyInstance(nvml_[g], it->second.gi_id);
  if (!st.ok() && st.code() != StatusCode::kNotFound) return st;
  if (st.ok()) {
    ++reconfigurations_;
    PushSample(&reconfig_seconds_,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  live_.erase(it);
  return Status();
}

Status Daemon::Impl::ExecutePlan(const Plan& plan) {
  for (const Step& s : plan.steps) {
    Status st;
    if (s.kind == StepKind::kCreate) {
      st = BackendCreate(s.gpu, s.profile, s.start);
    } else if (s.kind == StepKind::kDestroy) {
      st = BackendDestroy(s.gpu, s.start);
    }
    if (!st.ok()) {
      return st.WithPrefix(fmt::format("{}", DescribeStep(s, *cluster_)));
    }
  }
  return Status();
}

void Daemon::Impl::Resync(int g) {
  const GpuState& gs = cluster_->gpu(g);
  const GpuModel& model = gs.model();
  // Idle Cluster instances the backend does not have: gone from the Cluster.
  Plan drop;
  for (const Instance& in : gs.instances()) {
    auto it = live_.find({g, in.start});
    const bool there = it != live_.end() && it->second.profile_id == model.profile(in.profile).id;
    if (!there && !in.busy()) drop.steps.push_back({StepKind::kDestroy, g, in.profile, in.start});
    if (!there && in.busy()) {
      spdlog::error("GPU {}: {}@{} runs job {} but the backend has no such instance", nvml_[g],
                    model.profile(in.profile).name, in.start, in.job);
    }
  }
  if (!drop.empty()) {
    Status st = ApplyPlan(drop, cluster_.get());
    if (!st.ok()) spdlog::error("resync GPU {}: {}", nvml_[g], st.message());
  }
  // Backend instances the Cluster does not have: kept behind a placeholder
  // and destroyed with back-off.
  for (const auto& [key, bin] : live_) {
    if (key.first != g) continue;
    const int idx = cluster_->gpu(g).IndexAt(key.second);
    if (idx >= 0) continue;
    int profile = -1;
    for (int p = 0; p < static_cast<int>(model.profiles().size()); ++p) {
      if (model.profile(p).id == bin.profile_id && model.profile(p).is_base()) profile = p;
    }
    if (profile < 0) {
      for (int p = 0; p < static_cast<int>(model.profiles().size()); ++p) {
        if (model.profile(p).id == bin.profile_id) profile = p;
      }
    }
    PendingDestroy pd;
    pd.gpu = g;
    pd.start = key.second;
    pd.profile = profile;
    if (profile >= 0) {
      pd.placeholder = next_placeholder_--;
      Plan hold{{{StepKind::kCreate, g, profile, key.second},
                 {StepKind::kStart, g, profile, key.second, pd.placeholder}}};
      Status st = ApplyPlan(hold, cluster_.get());
      if (!st.ok()) {
        spdlog::error("resync GPU {}: cannot hold {}: {}", nvml_[g], bin.mig_uuid, st.message());
        pd.placeholder = kNoJob;
      }
    }
    bool known = false;
    for (const PendingDestroy& p : pending_destroys_)
      known = known || (p.gpu == g && p.start == key.second);
    if (!known) pending_destroys_.push_back(pd);
  }
}

void Daemon::Impl::RetryDestroys() {
  const double now = Now();
  for (auto it = pending_destroys_.begin(); it != pending_destroys_.end();) {
    PendingDestroy& pd = *it;
    if (pd.next_try > now) {
      ++it;
      continue;
    }
    ++pd.attempts;
    Status st = BackendDestroy(pd.gpu, pd.start);
    if (!st.ok()) {
      pd.next_try = now + pd.backoff;
      pd.backoff = std::min(kMaxBackoffS, pd.backoff * 2);
      if (pd.attempts == 1 || pd.attempts % 20 == 0) {
        spdlog::warn("GPU {}: destroy of the instance at {} failed ({} tries): {}", nvml_[pd.gpu],
                     pd.start, pd.attempts, st.message());
      }
      ++it;
      continue;
    }
    if (pd.placeholder != kNoJob) {
      Plan done{{{StepKind::kRelease, pd.gpu, pd.profile, pd.start, pd.placeholder},
                 {StepKind::kDestroy, pd.gpu, pd.profile, pd.start}}};
      Status ast = ApplyPlan(done, cluster_.get());
      if (!ast.ok()) spdlog::error("GPU {}: {}", nvml_[pd.gpu], ast.message());
    }
    it = pending_destroys_.erase(it);
  }
}

void Daemon::Impl::AfterReleasePlan(const Plan& plan) {
  Status st = ExecutePlan(plan);
  if (!st.ok()) {
    std::set<int> gpus;
    for (const Step& s : plan.steps) gpus.insert(s.gpu);
    for (int g : gpus) Resync(g);
  }
}

// ---------------------------------------------------------------- jobs

std::vector<JobInstance> Daemon::Impl::InstancesOfJob(JobId id) const {
  std::vector<JobInstance> out;
  const std::vector<InstanceRef>* refs = sched_->InstancesOf(id);
  if (refs == nullptr) return out;
  for (const InstanceRef& ref : *refs) {
    JobInstance in;
    const Profile& p = cluster_->gpu(ref.gpu).model().profile(ref.profile);
    in.gpu = nvml_[ref.gpu];
    in.profile = p.name;
    in.start = ref.start;
    in.size = p.size();
    auto it = live_.find({ref.gpu, ref.start});
    if (it != live_.end()) {
      in.mig_uuid = it->second.mig_uuid;
      in.gi_id = it->second.gi_id;
      in.ci_id = it->second.ci_id;
    }
    out.push_back(std::move(in));
  }
  return out;
}

Status Daemon::Impl::ValidateRequest(const JobRequest& r) const {
  if (r.command.empty() || r.command[0].empty()) {
    return InvalidArgumentError("command: must be a non-empty argv array");
  }
  if (r.count < 1 || r.count > 64) {
    return InvalidArgumentError(fmt::format("count: {} is not in 1..64", r.count));
  }
  if (r.profile.empty() == (r.gpu_fraction == 0)) {
    return InvalidArgumentError("exactly one of profile and gpu_fraction must be given");
  }
  if (r.profile.empty() && !(r.gpu_fraction > 0 && r.gpu_fraction <= 1)) {
    return InvalidArgumentError(fmt::format("gpu_fraction: {} is not in (0, 1]", r.gpu_fraction));
  }
  const Job job = r.ToJob();
  std::string offered;
  for (const GpuModel* m : cluster_->models()) {
    if (ResolveProfile(*m, job) >= 0) return Status();
    for (int b : m->base_profiles()) {
      offered += (offered.empty() ? "" : ", ") + m->profile(b).name;
    }
  }
  if (!r.profile.empty()) {
    return InvalidArgumentError(fmt::format(
        "unknown profile '{}': no GPU of this node offers it (profiles: {})", r.profile, offered));
  }
  return InvalidArgumentError(
      fmt::format("gpu_fraction {}: no profile of this node is large enough", r.gpu_fraction));
}

StatusOr<DaemonJobRecord> Daemon::Impl::Submit(const JobRequest& request) {
  std::lock_guard<std::mutex> lock(mu_);
  RETURN_IF_ERROR(ValidateRequest(request));
  if (stopped_) return UnavailableError("the daemon is shutting down");
  DaemonJobRecord r;
  r.request = request;
  r.submitted_at = WallNow();
  const Job job = request.ToJob();
  Status can = sched_->CheckCanEverRun(job);
  if (!can.ok()) {
    r.state = JobState::kRejected;
    r.ended_at = r.submitted_at;
    r.reason = can.message();
  }
  ASSIGN_OR_RETURN(r.id, store_->Insert(r));
  if (r.id > std::numeric_limits<JobId>::max()) {
    return InternalError(fmt::format("job id {} is beyond the scheduler's range", r.id));
  }
  nlohmann::json detail = {{"state", std::string(JobStateName(r.state))}};
  if (!r.reason.empty()) detail["reason"] = r.reason;
  (void)store_->AppendEvent(r.id, r.submitted_at, "submitted",
                            detail.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  jobs_[r.id] = r;
  if (r.state == JobState::kQueued) {
    sched_->SetNow(std::max(sched_->now(), Now()));
    sched_->Enqueue(static_cast<JobId>(r.id), job);
  }
  return r;
}

std::vector<DaemonJobRecord> Daemon::Impl::ListJobs() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<DaemonJobRecord> out;
  for (const auto& [id, r] : jobs_) out.push_back(r);
  return out;
}

StatusOr<DaemonJobRecord> Daemon::Impl::GetJob(DaemonJobId id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return NotFoundError(fmt::format("no job {}", id));
  return it->second;
}

StatusOr<DaemonJobRecord> Daemon::Impl::Cancel(DaemonJobId id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return NotFoundError(fmt::format("no job {}", id));
  DaemonJobRecord& r = it->second;
  if (IsTerminal(r.state)) {
    return FailedPreconditionError(fmt::format("job {} is already {}", id, JobStateName(r.state)));
  }
  if (r.state == JobState::kQueued) {
    sched_->RemoveFromQueue(static_cast<JobId>(id));
    Finish(r, JobState::kCancelled, std::nullopt, "cancelled while queued");
    return r;
  }
  Run& run = runs_[id];
  if (!run.cancel) {
    run.cancel = true;
    runner_.SignalGroup(run.pgid, SIGTERM);
    run.kill_at = Now() + config_.kill_grace_s;
    r.reason = "cancel requested";
    Save(r, "cancel-requested", {});
  }
  return r;
}

// The job leaves the system (terminal state); a job holding instances
// releases them.
void Daemon::Impl::Finish(DaemonJobRecord& r, JobState state, std::optional<int> exit_code,
                          std::string reason) {
  const JobId jid = static_cast<JobId>(r.id);
  r.state = state;
  r.exit_code = exit_code;
  r.reason = std::move(reason);
  r.ended_at = WallNow();
  runs_.erase(r.id);
  create_failures_.erase(r.id);
  if (sched_->InstancesOf(jid) != nullptr) {
    StatusOr<Plan> plan = sched_->Release(jid);
    if (plan.ok()) {
      AfterReleasePlan(*plan);
    } else {
      spdlog::error("job {}: {}", r.id, plan.status().message());
    }
    completed_ = true;
  }
  nlohmann::json detail;
  if (exit_code) detail["exit_code"] = *exit_code;
  if (!r.reason.empty()) detail["reason"] = r.reason;
  Save(r, "ended", detail);
}

Status Daemon::Impl::LaunchJob(DaemonJobRecord& r, bool restarted,
                               const std::vector<std::string>* argv_override) {
  LaunchSpec spec;
  spec.job = r.id;
  spec.argv = argv_override != nullptr ? *argv_override : r.request.command;
  spec.env = r.request.env;
  spec.cwd = r.request.cwd;
  for (const JobInstance& in : r.instances) spec.mig_uuids.push_back(in.mig_uuid);
  spec.restarted = restarted;
  StatusOr<Launched> l = runner_.Launch(spec);
  if (!l.ok()) return l.status();
  Run& run = runs_[r.id];
  run.pgid = l->pgid;
  run.pid = l->pid;
  run.moving = false;
  run.checkpointed = false;
  run.kill_at = 0;
  r.pid = l->pgid;
  return Status();
}

void Daemon::Impl::Place(const Decision& d) {
  const DaemonJobId id = d.job;
  auto jit = jobs_.find(id);
  if (jit == jobs_.end()) {
    spdlog::error("the scheduler placed job {}, which the daemon does not know", id);
    return;
  }
  DaemonJobRecord& r = jit->second;
  r.state = JobState::kStarting;
  Status st = ExecutePlan(d.plan);
  if (!st.ok()) {
    // The Cluster must match the backend again: release the job's
    // placement, resync, then requeue (or fail after repeated failures).
    StatusOr<Plan> rel = sched_->Release(d.job);
    std::set<int> gpus;
    for (const Step& s : d.plan.steps) gpus.insert(s.gpu);
    if (rel.ok()) {
      for (const Step& s : rel->steps) gpus.insert(s.gpu);
      Status est = ExecutePlan(*rel);
      (void)est;  // anything left over is resynced below
    }
    for (int g : gpus) Resync(g);
    // A GPU the backend cannot reach any more (fallen off the bus, driver
    // gone) is drained: no new placement goes there; the job is not to blame.
    bool gpu_lost = false;
    for (int g : gpus) {
      StatusOr<std::vector<BackendInstance>> probe = backend_->ListInstances(nvml_[g]);
      if (!probe.ok() && probe.status().code() == StatusCode::kUnavailable) {
        gpu_lost = true;
        if (drained_.insert(g).second) {
          spdlog::error("GPU {} is unavailable ({}): drained, no new jobs are placed on it",
                        nvml_[g], probe.status().message());
        }
      }
    }
    ApplyDrainFlags();
    const int failures = gpu_lost ? create_failures_[id] : ++create_failures_[id];
    if (!gpu_lost && st.code() == StatusCode::kUnavailable &&
        st.message().find("in use") != std::string::npos) {
      --create_failures_[id];  // waiting for a destroy is not the job's failure
    }
    if (failures >= kMaxCreateFailures) {
      r.state = JobState::kQueued;  // not holding anything now
      Finish(r, JobState::kFailed, std::nullopt,
             fmt::format("could not create its instances ({} tries): {}", failures, st.message()));
      return;
    }
    r.state = JobState::kQueued;
    r.reason = fmt::format("requeued: {}", st.message());
    sched_->Enqueue(d.job, r.request.ToJob());
    Save(r, "requeued", {{"reason", r.reason}});
    return;
  }
  create_failures_.erase(id);
  r.instances = InstancesOfJob(d.job);
  Save(r, "placed", {});
  st = LaunchJob(r, false, nullptr);
  if (!st.ok()) {
    const int code = ProcessRunner::ExitCodeOf(st);
    Finish(r, JobState::kFailed, code >= 0 ? std::optional<int>(code) : std::nullopt, st.message());
    return;
  }
  r.state = JobState::kRunning;
  r.started_at = WallNow();
  r.reason.clear();
  Save(r, "started", {{"pid", r.pid}});
}

void Daemon::Impl::ReapProcesses() {
  const double now = Now();
  std::vector<DaemonJobId> ids;
  for (const auto& [id, run] : runs_) ids.push_back(id);
  for (DaemonJobId id : ids) {
    Run& run = runs_[id];
    DaemonJobRecord& r = jobs_[id];
    ProcessStatus ps = runner_.Poll(id, run.pgid);
    if (ps.kind == ProcessStatus::Kind::kRunning) {
      if (run.kill_at > 0 && now >= run.kill_at) {
        runner_.SignalGroup(run.pgid, SIGKILL);
        run.kill_at = 0;
      }
      continue;
    }
    if (ps.kind == ProcessStatus::Kind::kLost) {
      Finish(r, run.cancel ? JobState::kCancelled : JobState::kFailed, std::nullopt,
             run.cancel ? "cancelled" : "process lost (no exit status)");
      continue;
    }
    const int code = ps.exit_code;
    if (run.cancel) {
      Finish(r, JobState::kCancelled, code, "cancelled");
    } else if (run.moving && code != 0 && sched_->MigrationOf(static_cast<JobId>(id)) != nullptr) {
      CompleteMove(r, run, code);
    } else if (code == 0) {
      Finish(r, JobState::kSucceeded, 0, "");
    } else {
      Finish(r, JobState::kFailed, code,
             code > 128 ? fmt::format("killed by signal {}", code - 128)
                        : fmt::format("exited with code {}", code));
    }
  }
}

// ---------------------------------------------------------------- migration (§6)

void Daemon::Impl::RunMigrations(MigrationTrigger trigger) {
  const bool can_checkpoint =
      !config_.checkpoint_command.empty() && !config_.restore_command.empty();
  auto can_move = [&](JobId id) {
    auto it = jobs_.find(id);
    if (it == jobs_.end() || it->second.state != JobState::kRunning) return false;
    auto run = runs_.find(id);
    if (run == runs_.end() || run->second.cancel || run->second.moving) return false;
    if (it->second.request.migratable == Migratable::kCheckpoint && !can_checkpoint) return false;
    return true;
  };
  ApplyDrainFlags();
  StatusOr<std::vector<MigrationStart>> starts = sched_->RunMigrationPass(trigger, can_move);
  if (!starts.ok()) {
    spdlog::error("migration pass: {}", starts.status().message());
    return;
  }
  for (const MigrationStart& st : *starts) BeginMove(st);
}

namespace {

std::vector<std::string> Substitute(const std::vector<std::string>& tmpl, int64_t pid,
                                    const std::string& dir) {
  std::vector<std::string> out;
  for (std::string s : tmpl) {
    for (size_t p; (p = s.find("{pid}")) != std::string::npos;) {
      s.replace(p, 5, std::to_string(pid));
    }
    for (size_t p; (p = s.find("{dir}")) != std::string::npos;) s.replace(p, 5, dir);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

// Make-before-break: the target exists (begin plan) before the job's process
// is stopped on its source.
void Daemon::Impl::BeginMove(const MigrationStart& st) {
  const JobId jid = st.move.job;
  DaemonJobRecord& r = jobs_[jid];
  Run& run = runs_[jid];
  Status est = ExecutePlan(st.plan);
  if (est.ok() && r.request.migratable == Migratable::kCheckpoint) {
    run.checkpoint_dir =
        (runner_.JobDir(r.id) / fmt::format("checkpoint-{}", r.migrations)).string();
    std::error_code ec;
    std::filesystem::create_directories(run.checkpoint_dir, ec);
    LaunchSpec spec;
    spec.job = r.id;
    spec.argv = Substitute(config_.checkpoint_command, run.pid > 0 ? run.pid : run.pgid,
                           run.checkpoint_dir);
    spec.env = r.request.env;
    for (const JobInstance& in : r.instances) spec.mig_uuids.push_back(in.mig_uuid);
    StatusOr<int> code = runner_.RunToCompletion(spec, kCheckpointTimeoutS);
    run.checkpointed = code.ok() && *code == 0;
    if (!run.checkpointed) {
      spdlog::warn("job {}: checkpoint failed ({}); it is restarted instead", r.id,
                   code.ok() ? fmt::format("exit code {}", *code) : code.status().message());
    }
  }
  if (!est.ok()) {
    // The move cannot begin: the job stays where it is. Release it from the
    // scheduler (the move is abandoned) and pin it back on its source.
    spdlog::warn("job {}: move cannot begin: {}", r.id, est.message());
    std::vector<InstanceRef> where = *sched_->InstancesOf(jid);
    StatusOr<Plan> rel = sched_->Release(jid);
    if (!rel.ok()) {
      spdlog::error("job {}: {}", r.id, rel.status().message());
      return;
    }
    // No backend step: the source keeps running; the target's leftovers are resynced.
    (void)PinPlace(jid, r.request.ToJob(), where);
    ResyncAll();
    return;
  }
  run.moving = true;
  r.state = JobState::kMigrating;
  Save(r, "migration-begun",
       {{"from_gpu", nvml_[st.move.from.gpu]},
        {"from_start", st.move.from.start},
        {"to_gpu", nvml_[st.move.to.gpu]},
        {"to_start", st.move.to.start}});
  runner_.SignalGroup(run.pgid, SIGTERM);
  run.kill_at = Now() + config_.kill_grace_s;
}

// The job's process on the source has stopped: switch over and run it on
// the target.
void Daemon::Impl::CompleteMove(DaemonJobRecord& r, Run& run, int exit_code) {
  const JobId jid = static_cast<JobId>(r.id);
  const MigrationMove mv = *sched_->MigrationOf(jid);
  StatusOr<Plan> end = sched_->FinishMigration(jid);
  if (!end.ok()) {
    spdlog::error("job {}: {}", r.id, end.status().message());
    Finish(r, JobState::kFailed, exit_code, "migration failed: " + end.status().message());
    return;
  }
  AfterReleasePlan(*end);
  r.instances = InstancesOfJob(jid);
  ++r.migrations;
  ++(mv.inter() ? migrations_inter_ : migrations_intra_);
  const bool restore = run.checkpointed;
  std::vector<std::string> argv;
  if (restore) argv = Substitute(config_.restore_command, run.pid, run.checkpoint_dir);
  if (!restore) ++r.restarts;
  Status st = LaunchJob(r, !restore, restore ? &argv : nullptr);
  if (!st.ok()) {
    const int code = ProcessRunner::ExitCodeOf(st);
    Finish(r, JobState::kFailed, code >= 0 ? std::optional<int>(code) : std::nullopt,
           "relaunch after migration failed: " + st.message());
    return;
  }
  r.state = JobState::kRunning;
  Save(r, "migrated",
       {{"pid", r.pid}, {"restarted", !restore}, {"mig_uuid", r.instances.front().mig_uuid}});
  completed_ = true;  // the source is free now: another pass may use it
}

// ---------------------------------------------------------------- the loop

Status Daemon::Impl::Tick() {
  std::lock_guard<std::mutex> lock(mu_);
  return TickLocked();
}

Status Daemon::Impl::TickLocked() {
  const double now = Now();
  sched_->SetNow(std::max(sched_->now(), now));
  ReapProcesses();
  RetryDestroys();
  if (!paused_ && !stopped_ && sched_->queue_size() > 0) {
    ApplyDrainFlags();
    StatusOr<std::vector<Decision>> decisions = sched_->ScheduleQueue();
    ApplyDrainFlags();
    if (!decisions.ok()) return decisions.status();
    for (const Decision& d : *decisions) Place(d);
  }
  if (config_.scheduler.max_wait_s >= 0) {
    for (JobId id : sched_->ExpireWaits()) {
      Finish(jobs_[id], JobState::kRejected, std::nullopt, "waited longer than --max-wait");
    }
  }
  if (sched_->policy().Migrates() && !stopped_) {
    if (sched_->has_fragmented_requests()) RunMigrations(MigrationTrigger::kFragmented);
    const double interval = config_.scheduler.migration.defrag_interval_s;
    const bool tick = interval > 0 && now >= next_defrag_;
    if (tick) next_defrag_ = now + interval;
    if (completed_ || tick) {
      RunMigrations(completed_ ? MigrationTrigger::kCompletion : MigrationTrigger::kTick);
    }
    completed_ = false;
  }
  CheckPcie(now);
  std::optional<double> due = sched_->NextIdleExpiry();
  if (due && *due <= sched_->now()) {
    StatusOr<Plan> plan = sched_->ExpireIdleInstances();
    if (plan.ok()) AfterReleasePlan(*plan);
  }
  return Status();
}

void Daemon::Impl::CheckPcie(double now) {
  if (config_.pcie_saturation_gbps <= 0 || now < next_pcie_sample_) return;
  next_pcie_sample_ = now + 1;
  constexpr double kSustainedS = 10;
  for (int g = 0; g < cluster_->size(); ++g) {
    StatusOr<PcieThroughput> t = backend_->GetPcieThroughput(nvml_[g]);
    if (!t.ok()) continue;
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
          nvml_[g], gbps, config_.pcie_saturation_gbps, now - since, config_.scheduler.threshold);
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
      wl.unlock();
      Status st = Tick();
      if (!st.ok()) spdlog::error("tick: {}", st.message());
      wl.lock();
      worker_cv_.wait_for(wl, std::chrono::milliseconds(std::max(1, config_.tick_ms)),
                          [this] { return stop_worker_; });
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
  std::unique_lock<std::mutex> lock(mu_);
  if (stopped_ || !sched_) return;
  stopped_ = true;  // no new submissions, no new placements
  if (config_.on_shutdown == "drain") {
    // Queued jobs stay queued (durable); running ones are waited for.
    while (!runs_.empty()) {
      (void)TickLocked();
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::milliseconds(std::max(1, config_.tick_ms)));
      lock.lock();
    }
  }
  // "leave": processes keep running; the next start re-adopts them.
}

// ---------------------------------------------------------------- views

std::vector<GpuView> Daemon::Impl::Gpus() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<GpuView> out;
  for (int g = 0; g < cluster_->size(); ++g) {
    const GpuState& gs = cluster_->gpu(g);
    GpuView v;
    v.index = nvml_[g];
    v.uuid = inv_.gpus[g].gpu.uuid;
    v.model = gs.model().name();
    v.placement_units = gs.model().placement_units();
    for (const Instance& in : gs.instances()) {
      InstanceView iv;
      const Profile& p = gs.model().profile(in.profile);
      iv.profile = p.name;
      iv.start = in.start;
      iv.size = p.size();
      auto it = live_.find({g, in.start});
      if (it != live_.end()) iv.mig_uuid = it->second.mig_uuid;
      iv.busy = in.busy();
      iv.job = in.busy() && in.job >= 0 ? in.job : 0;
      v.instances.push_back(std::move(iv));
    }
    v.utilisation = gs.utilization();
    v.frag_cost = gs.fragcost();
    v.lazy = gs.utilization() < config_.scheduler.threshold;
    v.draining = drained_.count(g) > 0;
    StatusOr<PcieThroughput> pcie = backend_->GetPcieThroughput(nvml_[g]);
    if (pcie.ok()) v.pcie = *pcie;
    out.push_back(std::move(v));
  }
  return out;
}

StatusOr<PlanPreview> Daemon::Impl::PreviewPlan(const JobRequest& request) const {
  std::lock_guard<std::mutex> lock(mu_);
  RETURN_IF_ERROR(ValidateRequest(request));
  PlanPreview out;
  const Job job = request.ToJob();
  Status can = sched_->CheckCanEverRun(job);
  if (!can.ok()) {
    out.reason = can.message();
    return out;
  }
  // A scratch copy of the Cluster and a scheduler of the same policy: nothing
  // of the real state changes.
  Cluster scratch = *cluster_;
  ASSIGN_OR_RETURN(std::unique_ptr<PlacementPolicy> inner,
                   MakePolicy(config_.policy, config_.scheduler));
  std::set<int> drained = drained_;
  Scheduler s(&scratch, std::make_unique<DaemonPolicy>(std::move(inner), &drained),
              config_.scheduler, SteadyClock());
  for (int g : drained) scratch.SetReserved(g, true);
  StatusOr<std::optional<Decision>> d = s.TryPlace(kNoJob - 1, job);
  if (!d.ok()) return d.status();
  if (!d->has_value()) {
    out.reason =
        fmt::format("does not fit now; it would queue behind {} job(s)", sched_->queue_size());
    return out;
  }
  const Decision& dec = **d;
  out.fits_now = true;
  if (sched_->queue_size() > 0) {
    out.reason =
        fmt::format("fits now, but {} queued job(s) are scanned first", sched_->queue_size());
  }
  // The hypothetical job's placeholder id is not part of the answer.
  const std::string placeholder = fmt::format(" (job {})", kNoJob - 1);
  for (const Step& st : dec.plan.steps) {
    std::string text = DescribeStep(st, scratch);
    const size_t at = text.find(placeholder);
    if (at != std::string::npos) text.erase(at, placeholder.size());
    out.steps.push_back(std::move(text));
  }
  for (const InstanceRef& ref : dec.instances) {
    JobInstance in;
    const Profile& p = scratch.gpu(ref.gpu).model().profile(ref.profile);
    in.gpu = nvml_[ref.gpu];
    in.profile = p.name;
    in.start = ref.start;
    in.size = p.size();
    auto it = live_.find({ref.gpu, ref.start});
    if (it != live_.end() && it->second.profile_id == p.id) in.mig_uuid = it->second.mig_uuid;
    out.instances.push_back(std::move(in));
  }
  return out;
}

void Daemon::Impl::Pause() {
  std::lock_guard<std::mutex> lock(mu_);
  paused_ = true;
}
void Daemon::Impl::Resume() {
  std::lock_guard<std::mutex> lock(mu_);
  paused_ = false;
}
bool Daemon::Impl::paused() const {
  std::lock_guard<std::mutex> lock(mu_);
  return paused_;
}

Status Daemon::Impl::Drain(int gpu) {
  std::lock_guard<std::mutex> lock(mu_);
  const int g = ClusterIndex(gpu);
  if (g < 0) return NotFoundError(fmt::format("GPU {} is not managed by this daemon", gpu));
  drained_.insert(g);
  ApplyDrainFlags();
  spdlog::info("GPU {}: draining (no new placements)", gpu);
  return Status();
}

Status Daemon::Impl::Undrain(int gpu) {
  std::lock_guard<std::mutex> lock(mu_);
  const int g = ClusterIndex(gpu);
  if (g < 0) return NotFoundError(fmt::format("GPU {} is not managed by this daemon", gpu));
  if (drained_.erase(g) > 0) {
    cluster_->SetReserved(g, false);
    spdlog::info("GPU {}: drain ended (new placements allowed)", gpu);
  }
  return Status();
}

DaemonMetrics Daemon::Impl::Metrics() const {
  std::vector<GpuView> gpus = Gpus();
  std::lock_guard<std::mutex> lock(mu_);
  DaemonMetrics m;
  for (JobState s :
       {JobState::kQueued, JobState::kStarting, JobState::kRunning, JobState::kMigrating,
        JobState::kSucceeded, JobState::kFailed, JobState::kCancelled, JobState::kRejected}) {
    m.jobs_by_state[std::string(JobStateName(s))] = 0;
  }
  for (const auto& [id, r] : jobs_) ++m.jobs_by_state[std::string(JobStateName(r.state))];
  m.queue_length = static_cast<int64_t>(sched_->queue_size());
  m.reconfigurations = reconfigurations_;
  m.reconfig_seconds = reconfig_seconds_;
  m.migrations_intra = migrations_intra_;
  m.migrations_inter = migrations_inter_;
  const std::vector<double>& us = sched_->decision_us();
  const size_t from = us.size() > kMaxSamples ? us.size() - kMaxSamples : 0;
  for (size_t i = from; i < us.size(); ++i) m.decision_seconds.push_back(us[i] / 1e6);
  m.gpus = std::move(gpus);
  return m;
}

// ---------------------------------------------------------------- Daemon

StatusOr<std::unique_ptr<Daemon>> Daemon::Create(const DaemonConfig& config,
                                                 std::unique_ptr<MigBackend> backend,
                                                 const Catalog* catalog) {
  if (backend == nullptr) return InvalidArgumentError("no backend");
  if (catalog == nullptr) return InvalidArgumentError("no catalog");
  auto impl = std::make_unique<Impl>(config, std::move(backend), catalog);
  RETURN_IF_ERROR(impl->Init());
  return std::unique_ptr<Daemon>(new Daemon(std::move(impl)));
}

Daemon::Daemon(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Daemon::~Daemon() { Stop(); }
void Daemon::StartWorker() { impl_->StartWorker(); }
void Daemon::Stop() { impl_->Stop(); }
Status Daemon::Tick() { return impl_->Tick(); }
StatusOr<DaemonJobRecord> Daemon::Submit(const JobRequest& request) {
  return impl_->Submit(request);
}
std::vector<DaemonJobRecord> Daemon::ListJobs() const { return impl_->ListJobs(); }
StatusOr<DaemonJobRecord> Daemon::GetJob(DaemonJobId id) const { return impl_->GetJob(id); }
StatusOr<DaemonJobRecord> Daemon::Cancel(DaemonJobId id) { return impl_->Cancel(id); }
std::vector<GpuView> Daemon::Gpus() const { return impl_->Gpus(); }
StatusOr<PlanPreview> Daemon::PreviewPlan(const JobRequest& request) const {
  return impl_->PreviewPlan(request);
}
void Daemon::Pause() { impl_->Pause(); }
void Daemon::Resume() { impl_->Resume(); }
bool Daemon::paused() const { return impl_->paused(); }
Status Daemon::Drain(int gpu) { return impl_->Drain(gpu); }
Status Daemon::Undrain(int gpu) { return impl_->Undrain(gpu); }
DaemonMetrics Daemon::Metrics() const { return impl_->Metrics(); }
std::filesystem::path Daemon::LogPath(DaemonJobId id) const { return impl_->LogPath(id); }
const DaemonConfig& Daemon::config() const { return impl_->config(); }

}  // namespace migsched
