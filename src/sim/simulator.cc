#include "sim/simulator.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "core/cluster.h"
#include "core/config_table.h"
#include "sched/policy.h"
#include "sched/scheduler.h"
#include "sim/cluster_tracker.h"
#include "sim/fill_mode.h"
#include "sim/frag_free.h"
#include "sim/knowledge.h"
#include "sim/online_mode.h"
#include "sim/user_estimates.h"

namespace migsched {
namespace {

Status ValidateWorkload(const std::vector<WorkloadJob>& jobs) {
  if (jobs.empty()) return InvalidArgumentError("the workload has no jobs");
  if (jobs.size() > static_cast<size_t>(std::numeric_limits<JobId>::max())) {
    return InvalidArgumentError(fmt::format("the workload has {} jobs; at most {} are supported",
                                            jobs.size(), std::numeric_limits<JobId>::max()));
  }
  for (size_t i = 0; i < jobs.size(); ++i) {
    const WorkloadJob& j = jobs[i];
    auto bad = [&](std::string_view what) {
      return InvalidArgumentError(fmt::format("job {} ('{}'): {}", i, j.name, what));
    };
    if (!std::isfinite(j.arrival_s) || j.arrival_s < 0) {
      return bad("arrival_s must be finite and >= 0");
    }
    if (!(j.duration_s >= kMinDurationS && j.duration_s <= kMaxDurationS)) {
      return bad("duration_s must be from 1e-06 to 1e+15 s");
    }
    if (j.count < 1) return bad("count must be >= 1");
    if (!std::isfinite(j.pcie_gbps) || j.pcie_gbps < 0) {
      return bad("pcie_gbps must be finite and >= 0");
    }
    if (!std::isfinite(j.alpha) || j.alpha <= 0) return bad("alpha must be finite and > 0");
    if (!std::isfinite(j.time_limit_s) || j.time_limit_s < 0) {
      return bad("time_limit_s must be finite and >= 0 (0: none)");
    }
    if (j.profile.empty() && !(j.gpu_fraction > 0 && j.gpu_fraction <= 1)) {
      return bad("needs a profile or a gpu_fraction in (0, 1]");
    }
    if (i > 0 && j.arrival_s < jobs[i - 1].arrival_s) {
      return InvalidArgumentError(fmt::format(
          "jobs must be sorted by arrival_s: job {} ('{}') arrives at {} s, before job {} ('{}') "
          "at {} s",
          i, j.name, j.arrival_s, i - 1, jobs[i - 1].name, jobs[i - 1].arrival_s));
    }
  }
  return Status();
}

}  // namespace

StatusOr<SimResult> RunSimulation(const std::vector<const GpuModel*>& gpus,
                                  const std::vector<WorkloadJob>& jobs, std::string_view policy,
                                  const SchedulerOptions& scheduler_options,
                                  const SimOptions& options) {
  RETURN_IF_ERROR(options.Validate());
  if (gpus.empty()) return InvalidArgumentError("the cluster has no GPUs");
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (gpus[i] == nullptr) return InvalidArgumentError(fmt::format("GPU {} has no model", i));
  }
  RETURN_IF_ERROR(ValidateWorkload(jobs));
  // Jobs without a time limit get one from the model of user estimates (online mode).
  std::vector<WorkloadJob> with_limits;
  if (options.user_estimates && options.mode == SimMode::kOnline) {
    with_limits = jobs;
    RETURN_IF_ERROR(AssignUserEstimates(&with_limits, options.user_estimate_seed).status());
  }
  const std::vector<WorkloadJob>& workload = with_limits.empty() ? jobs : with_limits;
  if (policy == kFragFreeReference) {
    return RunFragFreeReference(gpus, workload, scheduler_options.max_wait_s, options);
  }
  StatusOr<std::unique_ptr<PlacementPolicy>> made = MakePolicy(policy, scheduler_options);
  if (!made.ok()) return WithTheReferenceNamed(made.status());
  std::unique_ptr<PlacementPolicy> policy_impl = std::move(*made);
  // The `static` policies only reuse the instances of their layout (sched/policies).
  const bool creates_instances = policy_impl->CreatesInstances();

  ConfigTableCache tables;
  Cluster cluster(gpus, &tables);
  const auto pcie_job =
      std::find_if(jobs.begin(), jobs.end(), [](const WorkloadJob& j) { return j.pcie_gbps > 0; });
  if (options.mode == SimMode::kOnline && options.contention && pcie_job != jobs.end()) {
    for (const GpuModel* m : cluster.models()) {
      if (!(m->pcie_max_gbps() > 0)) {
        return FailedPreconditionError(fmt::format(
            "contention is on and job {} ('{}') is PCIe-bound, but GPU model '{}' has no "
            "pcie_max_gbps in the catalog (turn contention off or add it)",
            pcie_job - jobs.begin(), pcie_job->name, m->name()));
      }
    }
  }
  Clock* clock = options.clock != nullptr ? options.clock : SteadyClock();
  // A baseline that stands for an offline choice (`static`'s layouts) is told
  // the workload's requests (as the scheduler may see them) before its setup.
  std::vector<Job> requests;
  requests.reserve(jobs.size());
  for (const WorkloadJob& j : jobs) requests.push_back(SchedulerVisibleJob(j, options.knowledge));
  policy_impl->KnowWorkload(cluster, requests);
  Scheduler scheduler(&cluster, std::move(policy_impl), scheduler_options, clock);
  ASSIGN_OR_RETURN(Plan setup, scheduler.Setup());
  // Seed the demand window of the demand-weighted metric (§2) with the
  // workload's mix: its first demand_window jobs (policies without a demand
  // model ignore this).
  for (size_t i = 0; i < jobs.size() && i < static_cast<size_t>(scheduler_options.demand_window);
       ++i) {
    scheduler.ObserveArrival(SchedulerVisibleJob(jobs[i], options.knowledge));
  }
  ASSIGN_OR_RETURN(ClusterTracker tracker, ClusterTracker::Create(cluster, creates_instances));

  SimResult result;
  result.metrics.mode = std::string(SimModeName(options.mode));
  result.metrics.policy = std::string(scheduler.policy().name());
  result.metrics.cluster = cluster.Describe();
  result.metrics.setup_reconfigurations = setup.reconfigurations();
  if (options.mode == SimMode::kFill) {
    RETURN_IF_ERROR(RunFillMode(jobs, options, &scheduler, &tracker, &result));
  } else {
    RETURN_IF_ERROR(RunOnlineMode(workload, options, &scheduler, &tracker, &result));
  }
  FillDecisionStats(scheduler.decision_us(), &result.metrics);
  return result;
}

}  // namespace migsched
