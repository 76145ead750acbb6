#include "sched/scheduler.h"

#include <algorithm>
#include <set>
#include <string>

#include <fmt/format.h>

#include "sched/candidates.h"

namespace migsched {

Scheduler::Scheduler(Cluster* cluster, std::unique_ptr<PlacementPolicy> policy, SchedulerOptions options,
                     Clock* clock)
    : cluster_(cluster), policy_(std::move(policy)), options_(std::move(options)), clock_(clock) {}

StatusOr<Plan> Scheduler::Setup() {
  ASSIGN_OR_RETURN(Plan plan, policy_->SetupPlan(*cluster_));
  RETURN_IF_ERROR(ApplyPlan(plan, cluster_));
  return plan;
}

Status Scheduler::CheckCanEverRun(const Job& job) const {
  int capacity = 0;
  bool offered = false;
  std::vector<std::string> models;
  for (int gpu = 0; gpu < cluster_->size(); ++gpu) {
    const GpuModel& m = cluster_->gpu(gpu).model();
    if (std::find(models.begin(), models.end(), m.name()) == models.end()) models.push_back(m.name());
    const int profile = ResolveProfile(m, job);
    if (profile < 0) continue;
    offered = true;
    capacity += policy_->Capacity(*cluster_, gpu, profile);
  }
  std::string model_list;
  for (const auto& n : models) model_list += (model_list.empty() ? "" : ", ") + n;
  if (!offered) {
    return FailedPreconditionError(
        job.profile.empty()
            ? fmt::format("no GPU in the cluster ({}) has a profile for gpu_fraction {}", model_list,
                          job.gpu_fraction)
            : fmt::format("no GPU in the cluster ({}) offers profile {}", model_list, job.profile));
  }
  if (capacity == 0) {
    return FailedPreconditionError(fmt::format("the {} policy's layout has no {} instance",
                                               policy_->name(), job.RequestString()));
  }
  if (job.count > capacity) {
    return FailedPreconditionError(fmt::format("gang of {} instances is larger than the cluster "
                                               "(at most {} at once)",
                                               job.RequestString(), capacity));
  }
  return Status();
}

StatusOr<std::optional<Decision>> Scheduler::TryPlace(JobId id, const Job& job) {
  const int64_t t0 = clock_->NowNanos();
  auto record = [&] { decision_us_.push_back((clock_->NowNanos() - t0) / 1000.0); };
  if (running_.count(id)) return InternalError(fmt::format("job {} is already running", id));
  const PlacementRequest req = MakeRequest(*cluster_, id, job);
  Decision d;
  d.job = id;
  if (job.count <= 1) {
    std::optional<Candidate> c = policy_->Choose(*cluster_, req);
    if (!c) {
      record();
      return std::optional<Decision>();
    }
    d.plan = PlacementPlan(*cluster_, c->gpu, c->profile, c->start, id);
    d.instances.push_back({c->gpu, c->profile, c->start});
    record();
  } else {
    // Gang: place one instance at a time on a scratch copy; commit all or none.
    Cluster scratch = *cluster_;
    for (int i = 0; i < job.count; ++i) {
      std::optional<Candidate> c = policy_->Choose(scratch, req);
      if (!c) {
        record();
        return std::optional<Decision>();
      }
      Plan part = PlacementPlan(scratch, c->gpu, c->profile, c->start, id);
      RETURN_IF_ERROR(ApplyPlan(part, &scratch));
      d.plan.steps.insert(d.plan.steps.end(), part.steps.begin(), part.steps.end());
      d.instances.push_back({c->gpu, c->profile, c->start});
    }
    record();
  }
  RETURN_IF_ERROR(ApplyPlan(d.plan, cluster_));
  running_[id] = d.instances;
  return std::optional<Decision>(std::move(d));
}

StatusOr<Plan> Scheduler::Release(JobId id) {
  auto it = running_.find(id);
  if (it == running_.end()) return NotFoundError(fmt::format("job {} is not running", id));
  Plan plan;
  for (const InstanceRef& in : it->second) {
    plan.steps.push_back({StepKind::kRelease, in.gpu, in.profile, in.start, id});
    if (!policy_->KeepIdleInstances()) {
      plan.steps.push_back({StepKind::kDestroy, in.gpu, in.profile, in.start, kNoJob});
    }
  }
  RETURN_IF_ERROR(ApplyPlan(plan, cluster_));
  running_.erase(it);
  return plan;
}

void Scheduler::Enqueue(JobId id, const Job& job) {
  ObserveArrival(job);
  queue_.push_back({id, job});
}

StatusOr<std::vector<Decision>> Scheduler::ScheduleQueue() {
  std::vector<Decision> out;
  // Placing a job only takes capacity away, so once a request failed in this
  // scan, an identical later request fails too and is not tried again.
  std::set<std::tuple<std::string, double, int, int>> failed;
  for (auto it = queue_.begin(); it != queue_.end();) {
    const Job& job = it->job;
    auto key = std::make_tuple(job.profile, job.gpu_fraction, static_cast<int>(job.fraction_rule), job.count);
    if (failed.count(key)) {
      ++it;
      continue;
    }
    ASSIGN_OR_RETURN(std::optional<Decision> d, TryPlace(it->id, job));
    if (d) {
      out.push_back(std::move(*d));
      it = queue_.erase(it);
    } else {
      failed.insert(key);
      ++it;
    }
  }
  return out;
}

bool Scheduler::RemoveFromQueue(JobId id) {
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    if (it->id == id) {
      queue_.erase(it);
      return true;
    }
  }
  return false;
}

std::vector<JobId> Scheduler::QueuedJobs() const {
  std::vector<JobId> out;
  for (const Queued& q : queue_) out.push_back(q.id);
  return out;
}

const std::vector<InstanceRef>* Scheduler::InstancesOf(JobId id) const {
  auto it = running_.find(id);
  return it == running_.end() ? nullptr : &it->second;
}

}  // namespace migsched
