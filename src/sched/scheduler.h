// Scheduler: the online placement loop shared by the simulator and (later)
// the daemon: admission, FIFO queue with backfill (§5), gang placement, and
// releases. Every change goes through ApplyPlan (core/plan.h); the plans are
// returned so that the driver can time reconfigurations and start jobs.
//
// Decision time: each TryPlace is timed with the given Clock (wall-clock
// nanoseconds, §9 "the scheduler's own decision time").
//
// Migration (§6) is a later issue; its planner will run after Release() and on
// ticks and return plans of the same kind (see MigrationPlanner below).
//
// Thread-safety: thread-compatible; one driver thread owns a Scheduler.
#ifndef MIGSCHED_SCHED_SCHEDULER_H_
#define MIGSCHED_SCHED_SCHEDULER_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "core/clock.h"
#include "core/cluster.h"
#include "core/job.h"
#include "core/plan.h"
#include "sched/options.h"
#include "sched/policy.h"

namespace migsched {

// Where one instance of a job runs.
struct InstanceRef {
  int gpu = -1;
  int profile = -1;
  int start = 0;
  bool operator==(const InstanceRef&) const = default;
};

// One successful placement: the plan applied and the instances the job got.
struct Decision {
  JobId job = kNoJob;
  Plan plan;
  std::vector<InstanceRef> instances;  // `count` of them
};

// Seam for §6 (a later issue): plans migrations after a release or on a tick.
class MigrationPlanner {
 public:
  virtual ~MigrationPlanner() = default;
  virtual std::string_view name() const = 0;
};

class Scheduler {
 public:
  // `cluster` and `clock` must outlive the scheduler.
  Scheduler(Cluster* cluster, std::unique_ptr<PlacementPolicy> policy, SchedulerOptions options,
            Clock* clock);

  const PlacementPolicy& policy() const { return *policy_; }
  const Cluster& cluster() const { return *cluster_; }
  const SchedulerOptions& options() const { return options_; }

  // Applies the policy's setup plan (static layouts). Call once, first.
  StatusOr<Plan> Setup();

  // OK if `job` could run on this cluster when it is otherwise empty;
  // kFailedPrecondition with the reason if it never can: a profile no GPU
  // offers, a static layout without it, a gang larger than the cluster.
  Status CheckCanEverRun(const Job& job) const;

  // Places all `job.count` instances now (a gang: all or none) and applies
  // the plan; nullopt when it does not fit now. kInternal if a plan is rejected.
  StatusOr<std::optional<Decision>> TryPlace(JobId id, const Job& job);

  // The job ended: releases its instances (kept idle or destroyed as the
  // policy says), applies and returns the plan. kNotFound for an unknown job.
  StatusOr<Plan> Release(JobId id);

  // FIFO queue with backfill (§5). Enqueue takes an arriving job: it tells the
  // policy (ObserveArrival) and appends the job; ScheduleQueue scans the
  // queue in arrival order once and starts every job that fits (a job that
  // does not fit does not block later ones), returning the decisions made.
  void Enqueue(JobId id, const Job& job);
  // Tells the policy about an arrival without queueing it
  // (PlacementPolicy::ObserveArrival): for drivers that place arrivals
  // directly with TryPlace (fill mode) and to seed the demand window of the
  // demand-weighted metric (§2) before the first arrival.
  void ObserveArrival(const Job& job) { policy_->ObserveArrival(*cluster_, job); }
  StatusOr<std::vector<Decision>> ScheduleQueue();
  // Removes a queued job (e.g. rejected after --max-wait). False if absent.
  bool RemoveFromQueue(JobId id);
  size_t queue_size() const { return queue_.size(); }
  // Queued jobs, in arrival order.
  std::vector<JobId> QueuedJobs() const;
  // Instances of a running job (empty if not running).
  const std::vector<InstanceRef>* InstancesOf(JobId id) const;

  // Wall-clock duration of every TryPlace call so far, in microseconds.
  const std::vector<double>& decision_us() const { return decision_us_; }

 private:
  struct Queued {
    JobId id;
    Job job;
  };

  Cluster* cluster_;
  std::unique_ptr<PlacementPolicy> policy_;
  SchedulerOptions options_;
  Clock* clock_;
  std::deque<Queued> queue_;
  std::unordered_map<JobId, std::vector<InstanceRef>> running_;
  std::vector<double> decision_us_;
};

}  // namespace migsched

#endif  // MIGSCHED_SCHED_SCHEDULER_H_
