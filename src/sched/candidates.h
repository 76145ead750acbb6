// Candidate placements for one instance, and the plan that realises a choice
// (§4 steps 1 and 5 of docs/algorithms.md).
//
// A candidate is (GPU, profile, start) where `start` is a placement of the
// profile whose placement units are free of *busy* instances and where the
// busy instances plus the new one stay valid (§1). Idle instances in the way
// may be destroyed; an idle instance of exactly that profile and start is
// reused without any reconfiguration.
//
// Thread-safety: pure functions.
#ifndef MIGSCHED_SCHED_CANDIDATES_H_
#define MIGSCHED_SCHED_CANDIDATES_H_

#include <utility>
#include <vector>

#include "core/cluster.h"
#include "core/config_table.h"
#include "core/gpu_state.h"
#include "core/plan.h"

namespace migsched {

struct Candidate {
  int gpu = -1;
  int profile = -1;                      // profile index on the GPU's model
  int start = 0;                         // placement units
  int slot = -1;                         // model slot of (base profile, start)
  ConfigId busy_after = kInvalidConfig;  // busy configuration with the new instance
  bool reuse = false;                    // an idle instance of exactly (profile, start) exists
  int destroys = 0;                      // idle instances that must be destroyed first
};

// Appends every candidate for `profile` on GPU `gpu` of `cluster` to `out`,
// in ascending start; none while the GPU is reserved for a waiting job
// (Cluster::reserved, §5 starvation guard). `allow_create` false keeps only reuse candidates (the
// `static` policy never reconfigures).
void AppendCandidates(const Cluster& cluster, int gpu, int profile, bool allow_create,
                      std::vector<Candidate>* out);

// Starts of the idle instances that must go for `profile`@`start` to be
// created on `g`: those overlapping it, then (largest first) any needed to
// respect the compute-slice total and the profile's max_instances. Excludes
// an idle instance reused in place.
std::vector<int> IdleInstancesToDestroy(const GpuState& g, int profile, int start);
// IdleInstancesToDestroy(g, profile, start).size(), without allocating (the
// candidate scan calls it for every placement of every state group).
int CountIdleInstancesToDestroy(const GpuState& g, int profile, int start);

// The plan placing `job` on `profile`@`start` of GPU `gpu`: destroy the idle
// instances in the way, create the instance unless one is reused, start the job.
Plan PlacementPlan(const Cluster& cluster, int gpu, int profile, int start, JobId job);

// §4 step 7, full-size reserve (`--reserve-full N`): candidates that would leave
// fewer than N GPUs able to host the model's largest profile are used only if
// no other candidate exists.
//
// A GPU "can host the largest profile" when its *busy* configuration admits
// one instance of its model's largest base profile (feasible_m > 0, §2; idle
// instances do not count, they may be destroyed). GPUs are counted per model:
// a candidate on an A100 is judged by the A100s of the cluster.
class FullSizeReserve {
 public:
  // Counts the GPUs of each model that can host its largest profile: O(GPUs).
  // `reserve` <= 0 turns the rule off.
  FullSizeReserve(const Cluster& cluster, int reserve);

  // Whether choosing `c` leaves at least `reserve` GPUs of its model able to
  // host the largest profile (always true when off). O(models).
  bool Keeps(const Cluster& cluster, const Candidate& c) const;
  // GPUs of `model` able to host its largest profile now.
  int Hosts(const GpuModel& model) const;

 private:
  int reserve_;
  std::vector<std::pair<const GpuModel*, int>> hosts_;
};

// Removes from `candidates` those that break the full-size reserve, unless
// every one of them does (then all stay). Order is kept. No effect when
// `reserve` <= 0.
void ApplyFullSizeReserve(const Cluster& cluster, int reserve, std::vector<Candidate>* candidates);

}  // namespace migsched

#endif  // MIGSCHED_SCHED_CANDIDATES_H_
