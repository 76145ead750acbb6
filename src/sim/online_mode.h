// Online mode (§4 step 5, §5, §8, §9 of docs/algorithms.md): arrivals and
// completions on a virtual clock, driving an already set-up Scheduler. The
// rules are listed in sim/simulator.h (RunSimulation, the usual entry point);
// this is the driver itself, separate so that tests can give it a scheduler
// with any policy.
//
// Deterministic: events in time order, ties by insertion order
// (sim/event_queue.h); at one time, starts and completions first, then
// arrivals in workload order, then one queue scan; the timeline gets one
// sample per distinct event time.
//
// Thread-safety: thread-compatible.
#ifndef MIGSCHED_SIM_ONLINE_MODE_H_
#define MIGSCHED_SIM_ONLINE_MODE_H_

#include <vector>

#include "core/status.h"
#include "io/workload_job.h"
#include "sched/scheduler.h"
#include "sim/cluster_tracker.h"
#include "sim/sim_options.h"
#include "sim/sim_result.h"

namespace migsched {

// Runs `jobs` (validated, sorted by arrival_s) through `scheduler`, whose
// cluster `tracker` watches; fills every online field of `result`. Errors:
// any error of the scheduler (kInternal for a rejected plan), a failed
// self-check (kInternal, SimOptions::self_check), and kInternal naming the
// jobs if jobs are still queued when nothing is left to happen (a bug: a job
// that passed Scheduler::CheckCanEverRun must eventually fit).
Status RunOnlineMode(const std::vector<WorkloadJob>& jobs, const SimOptions& options,
                     Scheduler* scheduler, ClusterTracker* tracker, SimResult* result);

}  // namespace migsched

#endif  // MIGSCHED_SIM_ONLINE_MODE_H_
