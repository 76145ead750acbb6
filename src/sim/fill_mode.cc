#include "sim/fill_mode.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "sim/request_shape.h"

namespace migsched {

Status RunFillMode(const std::vector<WorkloadJob>& jobs, const SimOptions& options,
                   Scheduler* scheduler, ClusterTracker* tracker, SimResult* result) {
  const Cluster& cluster = scheduler->cluster();
  const std::vector<const GpuModel*> models = cluster.models();
  std::vector<int> requested_cs(jobs.size());
  int64_t workload_cs = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    requested_cs[i] = ShapeOnFirstModel(models, jobs[i]).compute_slices;
    workload_cs += requested_cs[i];
  }
  if (workload_cs == 0) {
    return FailedPreconditionError(fmt::format(
        "fill mode: no job of the workload asks for a profile that the cluster's GPU models ({}) "
        "offer, so the requested load can never grow",
        cluster.Describe()));
  }
  const int64_t total_cs = cluster.total_compute_slices();
  const double target_cs = options.fill_target * static_cast<double>(total_cs);
  // Curve steps k × 5%, k = 1..steps; "share >= k/20" is tested exactly in integers.
  const int64_t steps = static_cast<int64_t>(std::floor(options.fill_target * 20 + 1e-9));
  int64_t step = 1;
  int64_t requested = 0, arrived = 0, placed = 0;
  Metrics& m = result->metrics;
  Clock* clock = options.clock != nullptr ? options.clock : SteadyClock();
  int64_t last_report_ns = clock->NowNanos();
  auto report = [&] {
    if (options.progress) {
      options.progress(
          SimProgress{requested, static_cast<int64_t>(std::ceil(target_cs)), /*sim_time_s=*/0});
    }
  };
  for (size_t i = 0; static_cast<double>(requested) < target_cs; i = (i + 1) % jobs.size()) {
    if (arrived >= std::numeric_limits<JobId>::max()) {
      return InternalError("fill mode: too many arrivals for 32-bit job ids");
    }
    const WorkloadJob& job = jobs[i];
    const JobId id = static_cast<JobId>(arrived);  // unique per arrival: a job may come again
    ++arrived;
    requested += requested_cs[i];
    // The scheduler sees the request only (sim/knowledge.h).
    const Job visible = SchedulerVisibleJob(job, options.knowledge);
    scheduler->ObserveArrival(visible);  // an arrival (the demand-weighted window, §2)
    ASSIGN_OR_RETURN(std::optional<Decision> d, scheduler->TryPlace(id, visible));
    JobRecord rec;
    if (d) {
      ++placed;
      tracker->Refresh(d->plan);
      CountPlan(d->plan, &m);
      rec.outcome = JobOutcome::kPlaced;
      if (options.record_jobs) rec.instances = DescribeInstances(cluster, d->instances);
    } else {
      rec.outcome = JobOutcome::kFailed;
    }
    if (options.record_jobs) {
      rec.id = static_cast<JobId>(i);
      rec.name = job.name;
      rec.request = job.RequestString();
      rec.arrival_s = rec.placed_s = rec.start_s = rec.end_s = rec.wait_s = rec.jct_s =
          rec.duration_s = std::numeric_limits<double>::quiet_NaN();
      result->jobs.push_back(std::move(rec));
    }
    while (step <= steps && requested * 20 >= step * total_cs) {
      result->fill_curve.push_back(
          FillPoint{static_cast<double>(step) / 20, static_cast<double>(requested) / total_cs,
                    tracker->utilization(), static_cast<double>(placed) / arrived,
                    tracker->fragmentation_rate(), arrived, placed});
      ++step;
    }
    if (options.progress && arrived % 1024 == 0 &&
        clock->NowNanos() - last_report_ns >=
            static_cast<int64_t>(options.progress_interval_s * 1e9)) {
      last_report_ns = clock->NowNanos();
      report();
    }
  }
  report();
  m.jobs_total = arrived;
  m.rejected = arrived - placed;
  m.fill_placed = placed;
  m.fill_allocation = tracker->utilization();
  m.fill_acceptance = static_cast<double>(placed) / arrived;
  m.fill_frag = tracker->fragmentation_rate();
  return Status();
}

}  // namespace migsched
