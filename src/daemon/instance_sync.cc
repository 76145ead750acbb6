#include "daemon/instance_sync.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

namespace migsched {
namespace {

bool TouchesAny(const Plan& plan, const std::set<int>& gpus) {
  for (const Step& s : plan.steps) {
    if ((s.kind == StepKind::kCreate || s.kind == StepKind::kDestroy) && gpus.count(s.gpu)) {
      return true;
    }
  }
  return false;
}

std::set<int> BackendGpus(const Plan& plan) {
  std::set<int> out;
  for (const Step& s : plan.steps) {
    if (s.kind == StepKind::kCreate || s.kind == StepKind::kDestroy) out.insert(s.gpu);
  }
  return out;
}

// The backend's number of the cluster's GPU `gpu`: the MIG backend (daemon/mig_backend.h) mirrors
// NVML's C API and takes the NVML index as a plain int; this is where the typed index leaves.
int BackendIndex(const NodeModel& model, int gpu) { return model.nvml(gpu).value(); }

}  // namespace

InstanceSync::InstanceSync(MigBackend* backend, NodeModel* model, StateMutex* state_mu,
                           Clock* clock, DaemonCounters* counters, Options options)
    : backend_(backend),
      model_(model),
      state_mu_(state_mu),
      clock_(clock),
      counters_(counters),
      options_(options) {}

InstanceSync::~InstanceSync() { Stop(); }

void InstanceSync::Start() {
  std::lock_guard<std::mutex> lock(queue_mu_);
  if (thread_.joinable()) return;
  stop_ = false;
  next_resync_s_ = Now() + options_.resync_interval_s;
  thread_ = std::thread([this] { Run(); });
}

void InstanceSync::Stop() {
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

namespace {

// Whether the backend's `b` (nullptr: none there) is the model's `in` of model `m`: the same
// profile, with a compute instance (a GI without a CI has no MIG device: not an instance a job
// could use).
bool IsTheInstance(const BackendInstance* b, const Instance& in, const GpuModel& m) {
  return b != nullptr && b->profile_id == m.profile(in.profile).id && b->has_compute_instance;
}

}  // namespace

const BackendInstance* InstanceSync::Live(int gpu, int start) const {
  auto it = live_.find({gpu, start});
  return it == live_.end() ? nullptr : &it->second;
}

void InstanceSync::Record(int gpu, const BackendInstance& in) {
  live_[{gpu, in.placement.start}] = in;
}

void InstanceSync::Execute(Plan plan, Done done) {
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    queue_.push_back(Item{std::move(plan), std::move(done), false, Status()});
  }
  cv_.notify_one();
}

void InstanceSync::RequestResync(int gpu) {
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    resync_.insert(gpu);
  }
  cv_.notify_one();
}

bool InstanceSync::idle() const {
  std::lock_guard<std::mutex> lock(queue_mu_);
  return queue_.empty() && resync_.empty() && !busy_;
}

std::string InstanceSync::refusing(int gpu) const {
  auto it = refusals_.find(gpu);
  return it != refusals_.end() && it->second.reported ? it->second.last : "";
}

void InstanceSync::NoteChange(int gpu, const Status& st) {
  const int nvml = BackendIndex(*model_, gpu);
  if (st.ok()) {
    auto it = refusals_.find(gpu);
    if (it == refusals_.end()) return;
    if (it->second.reported) {
      spdlog::info("GPU {} accepts MIG changes again", nvml);
      model_->Touch();
    }
    refusals_.erase(it);
    return;
  }
  Refusals& r = refusals_[gpu];
  ++r.in_a_row;
  r.last = st.message();
  if (r.in_a_row >= options_.refusing_after && !r.reported) {
    r.reported = true;
    model_->Touch();
    spdlog::error(
        "GPU {} keeps refusing MIG changes ({} failures in a row; the last: {}). Look for "
        "processes or monitoring agents (nvidia-smi, DCGM) holding its MIG devices; a GPU that "
        "needs a reset is reset by the operator (`sudo nvidia-smi -i {} -r` with no process on "
        "it); migsched never resets a GPU",
        nvml, r.in_a_row, r.last, nvml);
  }
}

std::optional<PcieThroughput> InstanceSync::Pcie(int gpu) {
  pcie_wanted_ = true;
  auto it = pcie_.find(gpu);
  if (it == pcie_.end()) return std::nullopt;
  return it->second;
}

Status InstanceSync::RunStep(const Step& step) {
  int nvml = -1;
  int profile_id = -1;
  int size = 0;
  unsigned int gi = 0;
  std::string what;
  {
    StateLock lock(state_mu_);
    const Profile& p = model_->cluster().gpu(step.gpu).model().profile(step.profile);
    nvml = BackendIndex(*model_, step.gpu);
    profile_id = p.id;
    size = p.size();
    what = DescribeStep(step, model_->cluster(), /*with_holder=*/false);
    const BackendInstance* in = Live(step.gpu, step.start);
    if (step.kind == StepKind::kCreate && in != nullptr) {
      if (in->profile_id == profile_id && in->has_compute_instance) {
        return Status();  // already there (recovery)
      }
      if (!in->has_compute_instance) {
        return Status(StatusCode::kUnavailable,
                      fmt::format("{}: the backend has a GPU instance without a compute instance "
                                  "there ({}); it is destroyed first",
                                  what, kDriverFault),
                      StatusReason::kDriverFault);
      }
      return ResourceExhaustedError(
          fmt::format("{}: the backend has another instance there ({})", what, in->mig_uuid));
    }
    if (step.kind == StepKind::kDestroy) {
      if (in == nullptr) return Status();  // never made, or already gone
      gi = in->gi_id;
    }
  }
  const int64_t t0 = clock_->NowNanos();
  if (step.kind == StepKind::kCreate) {
    StatusOr<BackendInstance> made =
        backend_->CreateInstance(nvml, profile_id, Placement{step.start, size});
    StateLock lock(state_mu_);
    NoteChange(step.gpu, made.status());
    if (!made.ok()) return made.status().WithPrefix(what);
    live_[{step.gpu, step.start}] = *made;
  } else {
    Status st = backend_->DestroyInstance(nvml, gi);
    StateLock lock(state_mu_);
    NoteChange(step.gpu, st.code() == StatusCode::kNotFound ? Status() : st);
    if (!st.ok() && st.code() != StatusCode::kNotFound) return st.WithPrefix(what);
    live_.erase({step.gpu, step.start});
    if (!st.ok()) return Status();  // it was gone already: no reconfiguration
  }
  ++counters_->reconfigurations;
  counters_->reconfig_seconds.Observe(static_cast<double>(clock_->NowNanos() - t0) / 1e9);
  return Status();
}

Status InstanceSync::ExecuteNow(const Plan& plan) {
  for (const Step& s : plan.steps) {
    if (s.kind != StepKind::kCreate && s.kind != StepKind::kDestroy) continue;
    RETURN_IF_ERROR(RunStep(s));
  }
  return Status();
}

void InstanceSync::RunItem(Item item) {
  Status st = item.aborted ? item.abort_reason : Status();
  if (!item.aborted) {
    for (const Step& s : item.plan.steps) {
      if (s.kind != StepKind::kCreate && s.kind != StepKind::kDestroy) continue;
      st = RunStep(s);
      if (!st.ok()) break;
    }
  }
  // A GPU the backend cannot reach any more (fallen off the bus, driver
  // gone) is marked before the callback runs: its job is not to blame.
  if (!st.ok() && !item.aborted && st.code() == StatusCode::kUnavailable &&
      st.reason() != StatusReason::kInUse) {
    for (int g : BackendGpus(item.plan)) {
      int nvml = -1;
      {
        StateLock lock(state_mu_);
        nvml = BackendIndex(*model_, g);
      }
      StatusOr<std::vector<BackendInstance>> probe = backend_->ListInstances(nvml);
      if (!probe.ok() && probe.status().code() == StatusCode::kUnavailable) {
        StateLock lock(state_mu_);
        Reconcile(g, probe);
      }
    }
  }
  std::set<int> resync;
  {
    StateLock lock(state_mu_);
    std::vector<Item> stale;
    if (!st.ok() && !item.aborted) {
      // The plans queued behind it on these GPUs assumed it succeeded.
      resync = BackendGpus(item.plan);
      std::set<int> nvml;
      for (int g : resync) nvml.insert(BackendIndex(*model_, g));
      const Status why = Status(StatusCode::kUnavailable,
                                fmt::format("not attempted: an earlier plan on GPU {} failed ({})",
                                            fmt::join(nvml, ", "), st.message()),
                                StatusReason::kNotAttempted);
      std::lock_guard<std::mutex> q(queue_mu_);
      for (auto it = queue_.begin(); it != queue_.end();) {
        if (TouchesAny(it->plan, resync)) {
          stale.push_back(std::move(*it));
          it = queue_.erase(it);
        } else {
          ++it;
        }
      }
    }
    if (item.done) item.done(st);
    for (Item& s : stale) {
      for (int g : BackendGpus(s.plan)) resync.insert(g);
      if (s.done) {
        s.done(Status(
            StatusCode::kUnavailable,
            fmt::format("not attempted: an earlier plan failed on the same GPU ({})", st.message()),
            StatusReason::kNotAttempted));
      }
    }
  }
  for (int g : resync) Resync(g);
  if (on_progress_) on_progress_();
}

void InstanceSync::Resync(int gpu) {
  int nvml = -1;
  {
    StateLock lock(state_mu_);
    nvml = BackendIndex(*model_, gpu);
  }
  StatusOr<std::vector<BackendInstance>> listed = backend_->ListInstances(nvml);
  StateLock lock(state_mu_);
  Reconcile(gpu, listed);
}

void InstanceSync::ResyncAllNow() {
  int n = 0;
  {
    StateLock lock(state_mu_);
    n = model_->size();
  }
  for (int g = 0; g < n; ++g) Resync(g);
}

void InstanceSync::Reconcile(int gpu, const StatusOr<std::vector<BackendInstance>>& listed) {
  const int nvml = BackendIndex(*model_, gpu);
  if (!listed.ok()) {
    if (listed.status().code() == StatusCode::kUnavailable) {
      if (model_->unreachable(gpu).empty()) {
        spdlog::error(
            "GPU {} is unavailable ({}): drained, no new placements on it until it "
            "answers again",
            nvml, listed.status().message());
      }
      model_->SetDrain(gpu, NodeModel::DrainReason::kUnreachable, true, listed.status());
      // What the model has idle there that the mirror lacks was never made (a create that
      // failed as the GPU went): it leaves the model, as the resync of a GPU that answers drops
      // it, and is not shown as an idle instance without a MIG UUID.
      const GpuState& gs = model_->cluster().gpu(gpu);
      const GpuModel& m = gs.model();
      Plan drop;
      for (const Instance& in : gs.instances()) {
        if (!IsTheInstance(Live(gpu, in.start), in, m) && !in.busy()) {
          drop.steps.push_back({StepKind::kDestroy, gpu, in.profile, in.start, kNoJob});
        }
      }
      if (!drop.empty()) {
        Status st = model_->scheduler().ApplyExternal(drop);
        if (!st.ok()) spdlog::error("GPU {}: {}", nvml, st.message());
      }
    } else {
      spdlog::error("GPU {}: cannot list its instances: {}", nvml, listed.status().message());
    }
    return;
  }
  if (!model_->unreachable(gpu).empty()) {
    spdlog::info("GPU {} answers again: it takes new placements (unless an operator drained it)",
                 nvml);
    model_->SetDrain(gpu, NodeModel::DrainReason::kUnreachable, false);
  }
  std::map<int, BackendInstance> have;
  for (const BackendInstance& b : *listed) have[b.placement.start] = b;
  for (auto it = live_.begin(); it != live_.end();) {
    it = it->first.first == gpu ? live_.erase(it) : std::next(it);
  }
  for (const auto& [start, b] : have) live_[{gpu, start}] = b;

  Scheduler& sched = model_->scheduler();
  const GpuState& gs = model_->cluster().gpu(gpu);
  const GpuModel& m = gs.model();
  Plan drop;
  std::vector<JobId> gone_placeholders;
  for (const Instance& in : gs.instances()) {
    auto b = have.find(in.start);
    if (IsTheInstance(b == have.end() ? nullptr : &b->second, in, m)) {
      reported_missing_.erase({gpu, in.start});
      continue;
    }
    if (!in.busy()) {
      drop.steps.push_back({StepKind::kDestroy, gpu, in.profile, in.start, kNoJob});
    } else if (in.holder == Holder::kPlaceholder) {
      gone_placeholders.push_back(in.job);  // what it waited to destroy went by itself
    } else if (reported_missing_.insert({gpu, in.start}).second) {
      spdlog::error("GPU {}: {}@{} is held by {} but the backend has no such instance", nvml,
                    m.profile(in.profile).name, in.start, in.HolderString());
    }
  }
  for (JobId id : gone_placeholders) {
    StatusOr<Plan> rel = sched.ReleaseHold(Holder::kPlaceholder, id, /*destroy=*/true);
    if (!rel.ok()) spdlog::error("GPU {}: {}", nvml, rel.status().message());
    std::erase_if(pending_, [&](const PendingDestroy& p) { return p.placeholder == id; });
  }
  if (!drop.empty()) {
    Status st = sched.ApplyExternal(drop);
    if (!st.ok()) spdlog::error("resync GPU {}: {}", nvml, st.message());
  }
  // Backend instances the model does not have: held and destroyed.
  for (const auto& [start, b] : have) {
    const GpuState& now = model_->cluster().gpu(gpu);
    const int idx = now.IndexAt(start);
    if (idx >= 0 && m.profile(now.instances()[idx].profile).id == b.profile_id &&
        b.has_compute_instance) {
      continue;
    }
    bool known = false;
    for (const PendingDestroy& p : pending_) known = known || (p.gpu == gpu && p.start == start);
    if (known) continue;
    PendingDestroy pd;
    pd.gpu = gpu;
    pd.start = start;
    pd.next_try_s = Now();
    pd.backoff_s = options_.first_backoff_s;
    int profile = -1;
    for (int p = 0; p < static_cast<int>(m.profiles().size()); ++p) {
      if (m.profile(p).id == b.profile_id && (profile < 0 || m.profile(p).is_base())) profile = p;
    }
    if (profile >= 0 && idx < 0) {
      Status st = sched.ApplyExternal(Plan{{{StepKind::kCreate, gpu, profile, start, kNoJob}}});
      if (st.ok()) {
        const JobId id = next_placeholder_++;
        StatusOr<Plan> held = sched.Hold(Holder::kPlaceholder, id, {{gpu, profile, start}},
                                         /*existing=*/true);
        if (held.ok()) {
          pd.placeholder = id;
        } else {
          spdlog::error("GPU {}: cannot hold {}: {}", nvml, b.mig_uuid, held.status().message());
        }
      } else {
        spdlog::error("GPU {}: the backend's {} overlaps the model: {}", nvml, b.mig_uuid,
                      st.message());
      }
    }
    spdlog::warn(
        "GPU {}: instance {} at {} is not wanted: destroying it", nvml,
        b.mig_uuid.empty() ? fmt::format("GI {} (no compute instance)", b.gi_id) : b.mig_uuid,
        start);
    pending_.push_back(pd);
  }
}

void InstanceSync::RetryDueDestroys() {
  struct Try {
    PendingDestroy pd;
    int nvml = -1;
    unsigned int gi = 0;
  };
  std::vector<Try> due;
  {
    StateLock lock(state_mu_);
    const double now = Now();
    for (const PendingDestroy& pd : pending_) {
      if (pd.next_try_s > now) continue;
      const BackendInstance* in = Live(pd.gpu, pd.start);
      due.push_back({pd, BackendIndex(*model_, pd.gpu), in != nullptr ? in->gi_id : 0u});
    }
  }
  for (Try& t : due) {
    // gi 0: the backend's list no longer has it (gone by itself).
    const int64_t t0 = clock_->NowNanos();
    Status st = t.gi == 0 ? NotFoundError("gone") : backend_->DestroyInstance(t.nvml, t.gi);
    const double took_s = static_cast<double>(clock_->NowNanos() - t0) / 1e9;
    StateLock lock(state_mu_);
    if (t.gi != 0) NoteChange(t.pd.gpu, st.code() == StatusCode::kNotFound ? Status() : st);
    auto it = std::find_if(pending_.begin(), pending_.end(), [&](const PendingDestroy& p) {
      return p.gpu == t.pd.gpu && p.start == t.pd.start;
    });
    if (it == pending_.end()) continue;
    ++it->attempts;
    if (!st.ok() && st.code() != StatusCode::kNotFound) {
      it->next_try_s = Now() + it->backoff_s;
      it->backoff_s = std::min(options_.max_backoff_s, it->backoff_s * 2);
      if (it->attempts == 1 || it->attempts % 20 == 0) {
        spdlog::warn("GPU {}: destroy of the instance at {} failed ({} tries): {}", t.nvml,
                     it->start, it->attempts, st.message());
      }
      continue;
    }
    if (st.ok()) {
      ++counters_->reconfigurations;
      counters_->reconfig_seconds.Observe(took_s);
    }
    live_.erase({it->gpu, it->start});
    if (it->placeholder != kNoJob) {
      StatusOr<Plan> rel =
          model_->scheduler().ReleaseHold(Holder::kPlaceholder, it->placeholder, /*destroy=*/true);
      if (!rel.ok()) spdlog::error("GPU {}: {}", t.nvml, rel.status().message());
    }
    spdlog::info("GPU {}: destroyed the instance at {} ({} tries)", t.nvml, it->start,
                 it->attempts);
    pending_.erase(it);
  }
  if (!due.empty() && on_progress_) on_progress_();
}

void InstanceSync::SamplePcie() {
  std::vector<int> nvml;
  {
    StateLock lock(state_mu_);
    if (!pcie_wanted_) return;
    for (int g = 0; g < model_->size(); ++g) nvml.push_back(BackendIndex(*model_, g));
  }
  std::map<int, PcieThroughput> got;
  for (size_t g = 0; g < nvml.size(); ++g) {
    StatusOr<PcieThroughput> t = backend_->GetPcieThroughput(nvml[g]);
    if (t.ok()) got[static_cast<int>(g)] = *t;
  }
  StateLock lock(state_mu_);
  pcie_ = std::move(got);
}

void InstanceSync::Run() {
  std::unique_lock<std::mutex> q(queue_mu_);
  while (!stop_) {
    bool pending = false;
    {
      q.unlock();
      {
        StateLock lock(state_mu_);
        pending = !pending_.empty();
      }
      q.lock();
    }
    const double wait_s =
        pending ? options_.first_backoff_s : std::min(1.0, options_.pcie_interval_s);
    cv_.wait_for(q, std::chrono::duration<double>(wait_s),
                 [this] { return stop_ || !queue_.empty() || !resync_.empty(); });
    if (stop_) break;
    if (!queue_.empty()) {
      Item item = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
      q.unlock();
      RunItem(std::move(item));
      q.lock();
      busy_ = false;
      continue;
    }
    if (!resync_.empty()) {
      std::set<int> gpus;
      gpus.swap(resync_);
      busy_ = true;
      q.unlock();
      for (int g : gpus) Resync(g);
      if (on_progress_) on_progress_();
      q.lock();
      busy_ = false;
      continue;
    }
    q.unlock();
    RetryDueDestroys();
    const double now = Now();
    if (options_.resync_interval_s > 0 && now >= next_resync_s_) {
      next_resync_s_ = now + options_.resync_interval_s;
      ResyncAllNow();
    } else if (now >= next_probe_s_) {
      next_probe_s_ = now + options_.unreachable_probe_s;
      std::vector<int> down;
      {
        StateLock lock(state_mu_);
        for (int g = 0; g < model_->size(); ++g) {
          if (!model_->unreachable(g).empty()) down.push_back(g);
        }
      }
      for (int g : down) Resync(g);
      if (!down.empty() && on_progress_) on_progress_();
    }
    if (now >= next_pcie_s_) {
      next_pcie_s_ = now + options_.pcie_interval_s;
      SamplePcie();
    }
    q.lock();
  }
}

JobInstance DescribeInstance(const NodeModel& model, const InstanceSync& sync,
                             const InstanceRef& ref) {
  JobInstance in;
  const Profile& p = model.cluster().gpu(ref.gpu).model().profile(ref.profile);
  in.gpu = model.nvml(ref.gpu);
  in.profile = p.name;
  in.start = ref.start;
  in.size = p.size();
  if (const BackendInstance* live = sync.Live(ref.gpu, ref.start);
      live != nullptr && live->profile_id == p.id) {
    in.mig_uuid = live->mig_uuid;
    in.gi_id = live->gi_id;
    in.ci_id = live->ci_id;
  }
  return in;
}

std::vector<JobInstance> DescribeInstancesOf(const NodeModel& model, const InstanceSync& sync,
                                             DaemonJobId id) {
  std::vector<JobInstance> out;
  const std::vector<InstanceRef>* refs = model.scheduler().InstancesOf(static_cast<JobId>(id));
  if (refs == nullptr) return out;
  for (const InstanceRef& ref : *refs) out.push_back(DescribeInstance(model, sync, ref));
  return out;
}

}  // namespace migsched
