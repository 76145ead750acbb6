// Fill mode (§9 of docs/algorithms.md, Alibaba FGD's evaluation method): jobs
// arrive in workload order, ignoring their arrival times and durations, and
// never depart. Each is placed at once (Scheduler::TryPlace) or counted as
// failed; no queue. The workload is cycled through again if needed, until the
// requested compute slices (per arrival: count × compute slices of the job's
// profile on the first model offering it, sim/request_shape.h) reach
// fill_target × the cluster's compute slices. A job no model offers arrives,
// fails and requests nothing.
//
// Curve: one FillPoint each time the requested share first reaches a multiple
// of 5% (0.05, 0.10, ..., up to fill_target); an arrival crossing several
// steps yields one point per step, with the same values. Final values go to
// the metrics: fill_allocation (busy / total compute slices), fill_acceptance
// (placed / arrived), fill_frag (cluster fragmentation rate), fill_placed,
// jobs_total (arrivals), rejected (failed arrivals), creates / destroys / reuses.
//
// Thread-safety: thread-compatible.
#ifndef MIGSCHED_SIM_FILL_MODE_H_
#define MIGSCHED_SIM_FILL_MODE_H_

#include <vector>

#include "core/status.h"
#include "io/workload_job.h"
#include "sched/scheduler.h"
#include "sim/cluster_tracker.h"
#include "sim/sim_options.h"
#include "sim/sim_result.h"

namespace migsched {

// Runs fill mode on the (already set up) scheduler's cluster. Errors:
// kFailedPrecondition when no job of the workload can be offered by any model
// of the cluster (the requested load could never grow); kInternal from the
// scheduler.
Status RunFillMode(const std::vector<WorkloadJob>& jobs, const SimOptions& options,
                   Scheduler* scheduler, ClusterTracker* tracker, SimResult* result);

}  // namespace migsched

#endif  // MIGSCHED_SIM_FILL_MODE_H_
