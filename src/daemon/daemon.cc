#include "daemon/daemon.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
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
#include "daemon/commit_wait.h"
#include "daemon/discovery.h"
#include "daemon/instance_sync.h"
#include "daemon/job_service.h"
#include "daemon/job_store.h"
#include "daemon/json_text.h"
#include "daemon/node_model.h"
#include "daemon/node_service.h"
#include "daemon/process_runner.h"
#include "daemon/recovery.h"
#include "daemon/state_dir.h"
#include "daemon/state_identity.h"
#include "daemon/state_lock.h"
#include "daemon/store_writer.h"
#include "sched/scheduler.h"

namespace migsched {
namespace {

// How often the control loop looks for finished jobs to prune, seconds.
constexpr double kPruneIntervalS = 60;

}  // namespace

// The wiring of the daemon's parts and the control loop. The job API is
// JobService's, the controllers' calls NodeService's; what is left here is
// what only the daemon as a whole knows: whether it accepts changes
// (stopping, the state dir's health, the store's), the way to the store
// (Persist), the operator's pause and drains, and the loop that drives the
// parts in order every tick.
class Daemon::Impl : public NodeServiceHost {
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

  Status Init() MIGSCHED_EXCLUDES(kStateLock);
  void StartWorker();
  void Stop() MIGSCHED_EXCLUDES(kStateLock);
  Status Tick() MIGSCHED_EXCLUDES(kStateLock);
  bool WaitIdle(double timeout_s) MIGSCHED_EXCLUDES(kStateLock);
  Status Settle(double timeout_s) MIGSCHED_EXCLUDES(kStateLock);
  const DaemonConfig& config() const { return config_; }
  StoreWriter* writer() { return writer_.get(); }

  JobService& jobs() { return *jobs_; }
  const JobService& jobs() const { return *jobs_; }
  NodeService& node() { return *node_; }
  const NodeService& node() const { return *node_; }
  std::vector<GpuView> Gpus() const { return node_->Gpus(); }
  NodeView Node() const MIGSCHED_EXCLUDES(kStateLock);
  Status Pause() MIGSCHED_EXCLUDES(kStateLock);
  Status Resume() MIGSCHED_EXCLUDES(kStateLock);
  void InjectSchedulerFault(std::function<bool(DaemonJobId)> fails) MIGSCHED_EXCLUDES(kStateLock) {
    StateLock lock(&mu_);
    if (!fails) {
      model_->scheduler().SetFaultInjector(nullptr);
      return;
    }
    model_->scheduler().SetFaultInjector([fails = std::move(fails)](JobId id, const Job&) {
      return fails(static_cast<DaemonJobId>(id));
    });
  }
  bool paused() const MIGSCHED_EXCLUDES(kStateLock);
  Status SetOperatorDrain(NvmlIndex gpu, bool on) MIGSCHED_EXCLUDES(kStateLock);
  DaemonMetrics Metrics() const MIGSCHED_EXCLUDES(kStateLock);
  Status Health() const MIGSCHED_EXCLUDES(kStateLock);

  // ---- ServiceHost (state lock held; Wake takes none of it) ----
  Status Accepting() const override MIGSCHED_REQUIRES(kStateLock);
  void Persist(std::vector<StoreOp> ops, bool retry,
               std::function<void(const Status&)> then) override MIGSCHED_REQUIRES(kStateLock);
  void Wake() override {
    {
      std::lock_guard<std::mutex> l(worker_mu_);
      wake_ = true;
    }
    worker_cv_.notify_all();
  }
  // ---- NodeServiceHost: the job parts, JobService's (state lock held) ----
  DaemonJobId NextJobId() override MIGSCHED_REQUIRES(kStateLock) { return jobs_->NextJobId(); }
  void FinishJob(DaemonJobRecord& r, JobState state, std::optional<int> exit_code,
                 std::string reason) override MIGSCHED_REQUIRES(kStateLock) {
    jobs_->FinishJob(r, state, exit_code, std::move(reason));
  }
  void ReleaseInstances(DaemonJobId id) override MIGSCHED_REQUIRES(kStateLock) {
    jobs_->ReleaseInstances(id);
  }

 private:
  double NowS() const { return static_cast<double>(clock_->NowNanos() - t0_ns_) / 1e9; }
  // node_name, else the host's name (the node view's name, the metrics' Hostname).
  std::string NodeName() const;

  // ---- the control loop (state lock held) ----
  // Samples which MIG instances are busy (the metrics' busy seconds).
  void SampleBusyTime(double now) MIGSCHED_REQUIRES(kStateLock);
  void TickLocked(std::vector<JobService::PendingLaunch>* launches,
                  std::vector<std::filesystem::path>* remove) MIGSCHED_REQUIRES(kStateLock);
  class InstantAdapter;
  void CheckPcie(double now) MIGSCHED_REQUIRES(kStateLock);

  DaemonConfig config_;
  const Catalog* catalog_;
  Clock* clock_;
  std::unique_ptr<MigBackend> backend_;
  ProcessRunner runner_;  // forks, polls and signals; the runs are JobService's
  const int64_t t0_ns_;
  std::unique_ptr<StateDir> dir_;
  std::unique_ptr<JobStore> store_;
  std::unique_ptr<StoreWriter> writer_;
  DaemonCounters counters_;

  // The state lock (state_lock.h) and what it guards: the parts below (their
  // pointers are set once, by Init; what they point to is guarded, each part
  // says how), and the loop's own state after them.
  mutable StateMutex mu_;
  std::unique_ptr<NodeModel> model_ MIGSCHED_PT_GUARDED_BY(kStateLock);
  std::unique_ptr<InstanceSync> sync_;
  std::unique_ptr<JobService> jobs_;   // the job API, the jobs' processes and moves
  std::unique_ptr<NodeService> node_;  // reservations, allocations, the node view
  // Init went through: the writer and the sync run.
  bool started_ MIGSCHED_GUARDED_BY(kStateLock) = false;
  bool paused_ MIGSCHED_GUARDED_BY(kStateLock) = false;
  // When the pause began (NowS); a daemon restarted paused counts from its start.
  double paused_since_s_ MIGSCHED_GUARDED_BY(kStateLock) = 0;
  bool stopped_ MIGSCHED_GUARDED_BY(kStateLock) = false;
  Status dir_health_ MIGSCHED_GUARDED_BY(kStateLock);
  double next_dir_check_ MIGSCHED_GUARDED_BY(kStateLock) = 0;
  double next_defrag_ MIGSCHED_GUARDED_BY(kStateLock) = 0;
  double next_prune_ MIGSCHED_GUARDED_BY(kStateLock) = 0;
  double next_pcie_sample_ MIGSCHED_GUARDED_BY(kStateLock) = 0;
  std::map<int, double> pcie_saturated_since_ MIGSCHED_GUARDED_BY(kStateLock);
  std::set<int> pcie_advised_ MIGSCHED_GUARDED_BY(kStateLock);

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
  ASSIGN_OR_RETURN(JobUsers users, ResolveJobUsers(config_));  // who runs the jobs
  RETURN_IF_ERROR(dir_->ClaimWorkDir(config_.WorkDir()));      // one daemon per work_dir

  // The GPUs the config selects (empty: all the backend lists; the fake backend's GPUs are
  // its spec, so only the nvml backend's config has a selection).
  StatusOr<NodeInventory> discovered = DiscoverNode(backend_.get(), *catalog_, config_.nvml_gpus);
  // A selection the node does not have is the config's gpus key: its file and line in front.
  if (!discovered.ok() && !config_.nvml_gpus.empty()) {
    return discovered.status().WithPrefix(config_.Where("gpus"));
  }
  ASSIGN_OR_RETURN(NodeInventory inv, std::move(discovered));
  if (inv.gpus.empty()) return FailedPreconditionError("no GPU to manage");
  for (const std::string& note : inv.notes) spdlog::info("discovery: {}", note);
  ASSIGN_OR_RETURN(model_,
                   NodeModel::Create(std::move(inv), config_.policy, config_.scheduler, clock_));
  sync_ = std::make_unique<InstanceSync>(backend_.get(), model_.get(), &mu_, clock_, &counters_,
                                         InstanceSync::Options{});
  sync_->SetOnProgress([this] { Wake(); });
  jobs_ = std::make_unique<JobService>(model_.get(), sync_.get(), &runner_, std::move(users),
                                       &config_, &counters_, clock_, t0_ns_, &mu_, this);
  {
    // No other thread runs yet; the lock is taken for the analysis' sake.
    StateLock lock(&mu_);
    // Evacuations (§13) begin inside queue scans: only jobs whose move the MoveExecutor can run.
    model_->scheduler().SetMoveFilter(
        [this](JobId id) MIGSCHED_REQUIRES(kStateLock) { return jobs_->MayMove(id); });
  }
  node_ = std::make_unique<NodeService>(model_.get(), sync_.get(), jobs_->table(), jobs_->keys(),
                                        &config_, clock_, &mu_, this);
  // The store must be this state dir's (state_identity.h): never a fresh one by accident.
  OpenStoreOptions store_options;
  store_options.fresh = config_.fresh_store;
  store_options.integrity_budget_s = config_.store_check_s;
  ASSIGN_OR_RETURN(OpenedStore opened, OpenStateStore(config_.state_dir, store_options));
  store_ = std::move(opened.store);
  runner_.SetRunTag(opened.identity.generation, opened.identity.untagged_below);
  ASSIGN_OR_RETURN(
      RecoveryResult rec,
      Recover(RecoveryInputs{model_.get(), sync_.get(), store_.get(), &runner_, jobs_->table(),
                             node_->reservations_for_recovery(), &mu_, clock_}));
  {
    StateLock lock(&mu_);
    model_->scheduler().SetNow(NowS());
    jobs_->Adopt(rec);
    paused_ = rec.paused;
    paused_since_s_ = NowS();
  }
  writer_ = std::make_unique<StoreWriter>(store_.get());
  writer_->Start();
  sync_->Start();
  StateLock lock(&mu_);
  started_ = true;
  return Status();
}

void Daemon::Impl::Persist(std::vector<StoreOp> ops, bool retry,
                           std::function<void(const Status&)> then) {
  // The writer's callback runs on its thread, without the state lock.
  writer_->Write(std::move(ops), retry, [this, then = std::move(then)](const Status& st) {
    {
      StateLock lock(&mu_);
      model_->Touch();
      if (then) then(st);
    }
    Wake();
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

// ---------------------------------------------------------------- migration (§6)

// The daemon's side of an instant: each decision carried out on the node; a failed step is
// logged and the instant goes on (the daemon serves jobs). The scheduler calls it from
// RunInstant, in TickLocked: with the state lock held.
class Daemon::Impl::InstantAdapter : public InstantDriver {
 public:
  explicit InstantAdapter(Impl* d) : d_(d) {}
  bool MayMove(JobId id) override MIGSCHED_REQUIRES(kStateLock) { return d_->jobs_->MayMove(id); }
  Status Placed(const Decision& dec) override MIGSCHED_REQUIRES(kStateLock) {
    d_->jobs_->Place(dec);
    return Status();
  }
  Status MovesBegun(const std::vector<MigrationStart>& starts) override
      MIGSCHED_REQUIRES(kStateLock) {
    for (const MigrationStart& st : starts) d_->jobs_->BeginMove(st);
    return Status();
  }
  void Rejected(JobId id) override MIGSCHED_REQUIRES(kStateLock) {
    DaemonJobRecord* r = d_->jobs_->MutableJob(id);
    if (r != nullptr) {
      d_->jobs_->FinishJob(
          *r, JobState::kRejected, std::nullopt,
          fmt::format("waited longer than max-wait ({} s; the scheduler's setting)",
                      d_->model_->scheduler().options().max_wait_s));
    }
  }
  Status IdleExpired(const Plan& plan) override MIGSCHED_REQUIRES(kStateLock) {
    if (!plan.empty()) d_->sync_->Execute(plan, nullptr);
    return Status();
  }
  // The instant calls this after its scan step also when no scan ran: while paused, the queued
  // jobs' reason is the pause's (regression: paused_wait_reasons_flipped_every_tick: the reason
  // was cleared here and set again after the instant, each change a stored event, about 30,000
  // a second with three jobs queued, until the daemon could store nothing else).
  void Scanned() override MIGSCHED_REQUIRES(kStateLock) {
    d_->jobs_->UpdateWaitReasons(/*paused=*/d_->paused_ && !d_->stopped_);
  }
  Status StepFailed(std::string_view step, const Status& error) override {
    spdlog::error("{}: {}", step, error.message());
    return Status();
  }

 private:
  Impl* d_;
};

// ---------------------------------------------------------------- the loop

Status Daemon::Impl::Tick() {
  std::vector<JobService::PendingLaunch> launches;
  std::vector<std::filesystem::path> remove;
  {
    StateLock lock(&mu_);
    TickLocked(&launches, &remove);
  }
  std::error_code ec;
  for (const std::filesystem::path& p : remove) std::filesystem::remove_all(p, ec);
  if (launches.empty()) return Status();
  // Launch without the lock (fork, and the handshake that reports exec errors).
  for (JobService::PendingLaunch& l : launches) jobs_->Launch(l);
  StateLock lock(&mu_);
  for (JobService::PendingLaunch& l : launches) jobs_->RecordLaunch(l);
  return Status();
}

void Daemon::Impl::SampleBusyTime(double now) {
  std::map<InstanceKey, bool> present;
  const Cluster& c = model_->cluster();
  for (int g = 0; g < c.size(); ++g) {
    const GpuState& gs = c.gpu(g);
    for (const Instance& in : gs.instances()) {
      const Profile& p = gs.model().profile(in.profile);
      const BackendInstance* live = sync_->Live(g, in.start);
      if (live == nullptr || live->profile_id != p.id) continue;  // not created yet
      present[InstanceKey{model_->nvml(g), live->gi_id, p.name}] = in.busy();
    }
  }
  counters_.busy_time.Sample(now, present);
}

void Daemon::Impl::TickLocked(std::vector<JobService::PendingLaunch>* launches,
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
  counters_.last_tick_unix = clock_->UnixSeconds();
  SampleBusyTime(now);
  node_->ExpireReservations();
  jobs_->Reap();
  jobs_->AdvanceMoves();
  // The instant, in the scheduler's one order (Scheduler::RunInstant).
  const double interval = config_.scheduler.migration.defrag_interval_s;
  InstantEvents ev;
  ev.completed = jobs_->completed();
  ev.tick = sched.options().migration.enabled && !stopped_ && interval > 0 && now >= next_defrag_;
  if (ev.tick) next_defrag_ = now + interval;
  // The daemon does not track --max-wait timers: every tick looks, except while paused (a pause
  // holds the queue: its time does not count against --max-wait, Resume; regression:
  // pause_rejected_queued_jobs).
  ev.timer = !paused_;
  ev.scan = !paused_ && !stopped_;
  ev.migrate = !stopped_;
  InstantAdapter adapter(this);
  Status instant = sched.RunInstant(ev, &adapter);
  if (!instant.ok()) spdlog::error("scheduling instant: {}", instant.message());
  if (!stopped_) jobs_->ClearCompleted();
  // No scan while paused, so no Scanned(): the queued jobs say why they wait here instead.
  if (paused_ && !stopped_) jobs_->UpdateWaitReasons(/*paused=*/true);
  // Decisions the core refused on an internal error (containment is on: NodeModel::Create).
  for (const Scheduler::InternalIncident& inc : sched.TakeIncidents()) {
    ++counters_.internal_errors;
    spdlog::error(
        "job {}: internal error in the scheduler ({}); this decision is refused, the job "
        "stays queued and is tried again in {} s. GPUs:\n{}",
        inc.job, inc.what, kInternalErrorRetryS, inc.state);
  }
  CheckPcie(now);
  for (double us : sched.TakeDecisionTimes()) counters_.decision_seconds.Observe(us / 1e6);
  if (now >= next_prune_) {
    next_prune_ = now + kPruneIntervalS;
    jobs_->Prune(remove);
  }
  *launches = jobs_->TakeLaunches();
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
    StateLock lock(&mu_);
    // A start that failed has no threads to stop and no writer to flush.
    if (stopped_ || !started_) return;
    stopped_ = true;  // no new submissions, no new placements
    drain = config_.on_shutdown == "drain";
  }
  if (drain) {
    // Queued jobs stay queued (durable); running ones are waited for.
    while (true) {
      {
        StateLock lock(&mu_);
        if (!jobs_->HasProcesses()) break;
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
      // Both under the state lock: a sync callback (which runs under it) may
      // queue a write after the first look at the writer, and only code that
      // holds the lock queues writes, so this look is one consistent moment.
      StateLock lock(&mu_);
      idle = sync_->idle() && writer_->pending() == 0;
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
    StateLock lock(&mu_);
    if (!jobs_->HasPendingLaunches() && sync_->idle() && writer_->pending() == 0) return Status();
  }
  return UnavailableError(fmt::format("the daemon did not settle within {} s", timeout_s));
}

std::string Daemon::Impl::NodeName() const {
  std::string name = config_.node_name;
  if (name.empty()) {
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) == 0) name = host;
  }
  return name;
}

NodeView Daemon::Impl::Node() const {
  NodeView n;
  n.name = NodeName();
  n.store = writer_->health();
  StateLock lock(&mu_);
  if (n.store.ok() && !dir_health_.ok()) n.store = dir_health_;
  n.paused = paused_;
  n.queue_length = static_cast<int64_t>(model_->scheduler().queue_size());
  node_->FillNode(&n);
  return n;
}

// Stored, so that a restart keeps it (recovery reads "paused" back), and answered once committed,
// as a drain is: refused while the daemon does not accept changes (regression:
// pause_answered_while_the_store_was_down: a pause was answered 200 with the store unwritable,
// held in memory only, and a restart lost it).
Status Daemon::Impl::Pause() {
  auto promise = std::make_shared<std::promise<Status>>();
  std::future<Status> committed = promise->get_future();
  {
    StateLock lock(&mu_);
    RETURN_IF_ERROR(Accepting());
    if (!paused_) paused_since_s_ = NowS();
    paused_ = true;
    Persist({StoreOp::PutNode("paused", "true")}, /*retry=*/true,
            [promise](const Status& st) { promise->set_value(st); });
  }
  return WaitForCommit(committed, "the pause");
}
Status Daemon::Impl::Resume() {
  auto promise = std::make_shared<std::promise<Status>>();
  std::future<Status> committed = promise->get_future();
  {
    StateLock lock(&mu_);
    RETURN_IF_ERROR(Accepting());
    if (paused_) model_->scheduler().HoldWaits(paused_since_s_, NowS());
    paused_ = false;
    Persist({StoreOp::PutNode("paused", "false")}, /*retry=*/true,
            [promise](const Status& st) { promise->set_value(st); });
  }
  Wake();
  return WaitForCommit(committed, "the resume");
}
bool Daemon::Impl::paused() const {
  StateLock lock(&mu_);
  return paused_;
}

Status Daemon::Impl::SetOperatorDrain(NvmlIndex gpu, bool on) {
  auto promise = std::make_shared<std::promise<Status>>();
  std::future<Status> committed = promise->get_future();
  {
    StateLock lock(&mu_);
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
  StateLock lock(&mu_);
  RETURN_IF_ERROR(Accepting());
  // A GPU the operator must look at: unreachable (a reset needed, fallen off the bus) or
  // refusing every change. The daemon still serves the other GPUs.
  std::vector<std::string> why;
  for (int g = 0; g < model_->size(); ++g) {
    const std::string unreachable = model_->unreachable(g);
    if (!unreachable.empty()) {
      why.push_back(fmt::format("GPU {} is unreachable: {}", model_->nvml(g), unreachable));
    }
    const std::string refusing = sync_->refusing(g);
    if (!refusing.empty()) {
      why.push_back(
          fmt::format("GPU {} keeps refusing MIG changes: {}", model_->nvml(g), refusing));
    }
  }
  // Launches failing for the daemon's own trouble (a full or read-only state filesystem): the
  // jobs wait, `starting`, and are tried again (JobService::RecordLaunch).
  if (const std::string trouble = jobs_->LaunchTrouble(); !trouble.empty()) {
    why.push_back(fmt::format("jobs cannot be launched: {}", trouble));
  }
  if (!why.empty()) return UnavailableError(fmt::format("{}", fmt::join(why, "; ")));
  return Status();
}

DaemonMetrics Daemon::Impl::Metrics() const {
  DaemonMetrics m;
  m.store_degraded = writer_->degraded();
  std::vector<GpuView> gpus = Gpus();
  StateLock lock(&mu_);
  m.jobs_by_state = jobs_->CountByState();
  m.queue_length = static_cast<int64_t>(model_->scheduler().queue_size());
  m.paused = paused_;
  m.reservations = static_cast<int64_t>(node_->reservation_count());
  m.reconfigurations = counters_.reconfigurations;
  m.reconfig_seconds = counters_.reconfig_seconds.Snapshot();
  m.migrations_intra = counters_.migrations_intra;
  m.migrations_inter = counters_.migrations_inter;
  m.decision_seconds = counters_.decision_seconds.Snapshot();
  m.internal_errors = counters_.internal_errors;
  m.oldest_wait_s = jobs_->OldestWaitS();
  m.limit_power = model_->scheduler().LimitPower();
  m.limit_power_runs = static_cast<int64_t>(model_->scheduler().limit_model().samples());
  m.last_tick_unix = counters_.last_tick_unix.load();
  m.ended = counters_.ended.Snapshot();
  for (const GpuView& g : gpus) {
    for (const InstanceView& i : g.instances) {
      const InstanceKey key{g.index, i.gi_id, i.profile};
      m.busy_seconds[key] = counters_.busy_time.Seconds(key);
    }
  }
  m.gpus = std::move(gpus);
  m.hostname = NodeName();
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
  return impl_->jobs().Submit(request, key);
}
StatusOr<DaemonJobRecord> Daemon::Submit(const JobRequest& request) {
  ASSIGN_OR_RETURN(SubmitResult r, impl_->jobs().Submit(request, ""));
  return r.record;
}
JobPage Daemon::ListJobs(const JobQuery& query) const { return impl_->jobs().List(query); }
std::vector<DaemonJobRecord> Daemon::ListJobs() const {
  std::vector<DaemonJobRecord> out;
  JobQuery q;
  q.limit = 1000;
  while (true) {
    JobPage page = impl_->jobs().List(q);
    out.insert(out.end(), page.jobs.begin(), page.jobs.end());
    if (page.next == 0) break;
    q.after = page.next;
  }
  return out;
}
StatusOr<DaemonJobRecord> Daemon::GetJob(DaemonJobId id) const { return impl_->jobs().Get(id); }
StatusOr<DaemonJobRecord> Daemon::Cancel(DaemonJobId id) {
  ASSIGN_OR_RETURN(JobKind kind, impl_->jobs().KindOf(id));
  // DELETE on an allocation releases it.
  if (kind == JobKind::kAllocation) return impl_->node().ReleaseAllocation(id);
  return impl_->jobs().Cancel(id);
}
StatusOr<PlanPreview> Daemon::PreviewPlan(const JobRequest& request) const {
  return impl_->jobs().PreviewPlan(request);
}
std::filesystem::path Daemon::LogPath(DaemonJobId id) const { return impl_->jobs().LogPath(id); }
std::vector<GpuView> Daemon::Gpus() const { return impl_->Gpus(); }
NodeView Daemon::Node() const { return impl_->Node(); }
Status Daemon::Pause() { return impl_->Pause(); }
void Daemon::InjectSchedulerFaultForTesting(std::function<bool(DaemonJobId)> fails) {
  impl_->InjectSchedulerFault(std::move(fails));
}
Status Daemon::Resume() { return impl_->Resume(); }
bool Daemon::paused() const { return impl_->paused(); }
Status Daemon::Drain(NvmlIndex gpu) { return impl_->SetOperatorDrain(gpu, true); }
Status Daemon::Undrain(NvmlIndex gpu) { return impl_->SetOperatorDrain(gpu, false); }
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
