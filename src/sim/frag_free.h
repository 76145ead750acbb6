// The fragmentation-free reference (`frag-free-reference` in `simulate` and
// `compare`, docs/policies.md): the queue discipline of §5 (FIFO with
// backfill: at every event time the queue is scanned in arrival order and
// every job that fits starts; gangs all or nothing) on GPUs where an instance
// of a profile fits wherever the GPU's free compute slices and free memory
// slices both suffice: no placement rules (starts, contiguity, the slot
// grid, max_instances) and no reconfiguration cost (a job starts at the
// decision). Each instance goes to the lowest-index GPU with room (first
// fit). PCIe contention (§8) is the simulator's, per GPU, as in every run.
// --max-wait W rejects a job still queued when its wait reaches W (after the
// scan at that time: W = 0 is admission mode). A job that could never run
// (no model offers its profile, or a gang larger than the cluster's
// slice capacity) is rejected at arrival. A rejection counts its slice-hours
// (count x compute slices x duration), and a job still running at its time
// limit ends there (outcome timeout), as in the simulator: the reference runs
// the same work as the policies it is set beside. The arrival-window figures
// (UTIL ARRIVING, ...) are taken at the last arrival, as the simulator's.
//
// It is an indicator of what placement and migration could gain at most
// under that discipline, not a bound: greedy queues are not monotone (fitting
// more small jobs can delay a large one, so a real policy can beat it on some
// metric). No fragmentation, stranding, reconfiguration or migration exists
// there: those metrics are 0.
//
// Thread-safety: reentrant.
#ifndef MIGSCHED_SIM_FRAG_FREE_H_
#define MIGSCHED_SIM_FRAG_FREE_H_

#include <string_view>
#include <vector>

#include "core/gpu_model.h"
#include "core/status.h"
#include "io/workload_job.h"
#include "sim/sim_options.h"
#include "sim/sim_result.h"

namespace migsched {

// The name `simulate --policy` and `compare --policies` accept for it. It is
// not a placement policy (sched/policy.h): the daemon and the cluster
// controllers do not know it.
inline constexpr std::string_view kFragFreeReference = "frag-free-reference";

// A refusal of a policy name (sched/policy.h FindPolicy: kNotFound, "unknown policy 'x'
// (known: ...)") where the simulator runs it: the reference is named too, since the simulator
// takes it beside the policies. Any other status is returned as is.
Status WithTheReferenceNamed(const Status& s);

// Whether `a` fits on a GPU with `free_compute` and `free_memory` slices:
// the reference's only placement rule.
inline bool FitsFragFree(const Profile& p, int free_compute, int free_memory) {
  return p.compute_slices <= free_compute && p.memory_slices <= free_memory;
}

// Runs `jobs` (sorted by arrival, as RunSimulation checks) on `gpus` as the
// reference above, online mode only (kInvalidArgument in fill mode).
// `max_wait_s` < 0: no --max-wait.
StatusOr<SimResult> RunFragFreeReference(const std::vector<const GpuModel*>& gpus,
                                         const std::vector<WorkloadJob>& jobs, double max_wait_s,
                                         const SimOptions& options);

}  // namespace migsched

#endif  // MIGSCHED_SIM_FRAG_FREE_H_
