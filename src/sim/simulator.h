// The discrete-event simulator (§4 step 5, §5, §8, §9 of docs/algorithms.md):
// drives a Scheduler (sched/scheduler.h) over a workload on a virtual clock
// and measures the result.
//
// Online mode (SimOptions::mode = kOnline), deterministic:
//  * Setup: the policy's setup plan (static layouts) is applied before the
//    first arrival at no time cost; its creates are reported as
//    setup_reconfigurations, not as reconfigurations of the run. The policy's
//    demand window (demand-weighted metric, §2) is seeded with the first
//    SchedulerOptions::demand_window jobs of the workload.
//  * Arrival: Scheduler::CheckCanEverRun (memoised per distinct request); if
//    it fails the job is rejected at once with that reason; else it is
//    queued. After all events of one time, the queue is scanned once (FIFO
//    with backfill, §5, Scheduler::ScheduleQueue).
//  * A decision's creates and destroys cost reconfig_ms each (or, with
//    SimOptions::reconfig_latency, a seeded draw each, sim/reconfig_latency.h),
//    serialised per GPU: a GPU's operations run from max(now, when its earlier
//    operations end); the job starts when the operations on all its GPUs are
//    done (immediately if it needs none).
//  * Running jobs progress at the §8 contention rate (sim/contention.h),
//    recomputed for every job sharing a GPU whose set of running jobs changes.
//  * Completion: Scheduler::Release; its destroys (policies that do not keep
//    idle instances) occupy that GPU's operation queue; then the queue is
//    scanned again.
//  * Events at equal times: starts and completions in the order they were
//    scheduled, then arrivals in workload order, then one queue scan.
//  * After that scan: --max-wait rejections, the §6 migration passes with
//    --migration on (make-before-break moves with their copy and
//    switch-over times), idle-instance retention (docs/migration.md).
// Fill mode (kFill): sim/fill_mode.h.
//
// Thread-safety: reentrant (each call builds its own cluster and scheduler).
#ifndef MIGSCHED_SIM_SIMULATOR_H_
#define MIGSCHED_SIM_SIMULATOR_H_

#include <string_view>
#include <vector>

#include "core/gpu_model.h"
#include "core/status.h"
#include "io/workload_job.h"
#include "sched/options.h"
#include "sim/sim_options.h"
#include "sim/sim_result.h"

namespace migsched {

// Simulates `jobs` on a cluster with one GPU per entry of `gpus` (models must
// outlive the call) under the policy named `policy` (sched/policy.h
// MakePolicy).
//
// Errors:
//  * kInvalidArgument: bad options, an empty cluster or workload, jobs not
//    sorted by arrival_s, a job field out of range (named by index and name);
//  * kNotFound: unknown policy; kFailedPrecondition: the policy cannot set up
//    this cluster, or contention is on, a job is PCIe-bound and a GPU model
//    has no pcie_max_gbps;
//  * kInternal: a plan the scheduler made was rejected, or jobs were left
//    queued with nothing left to happen (a bug; the jobs are named).
StatusOr<SimResult> RunSimulation(const std::vector<const GpuModel*>& gpus,
                                  const std::vector<WorkloadJob>& jobs, std::string_view policy,
                                  const SchedulerOptions& scheduler_options,
                                  const SimOptions& options);

}  // namespace migsched

#endif  // MIGSCHED_SIM_SIMULATOR_H_
