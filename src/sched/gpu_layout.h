// Exact layouts of several new instances on one GPU (§12 of
// docs/algorithms.md, joint placement of waiting jobs): given the GPU's state
// before a queue scan placed anything on it and a multiset of profiles to
// place there together, the best valid choice of starts, found by walking the
// model's ConfigTable.
//
// Busy instances stay where they are (moving a running job is migration, §6);
// idle instances are free space: a new instance of exactly an idle
// instance's profile and start reuses it (no reconfiguration), idle instances
// in the way are destroyed (one reconfiguration each), as for a single
// placement (sched/candidates.h).
//
// Thread-safety: thread-compatible (LayoutSolver's memo and the scorer it
// reads are not locked).
#ifndef MIGSCHED_SCHED_GPU_LAYOUT_H_
#define MIGSCHED_SCHED_GPU_LAYOUT_H_

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/config_table.h"
#include "core/gpu_state.h"
#include "core/job.h"
#include "core/plan.h"
#include "core/status.h"
#include "sched/metrics.h"

namespace migsched {

// What a layout of new instances costs, against the GPU state it starts from.
struct LayoutCost {
  int reconfigurations = 0;     // creates + destroys (idle instances in the way)
  double metric = 0;            // Value(busy after) - Value(busy before) of the joint metric (§2)
  bool admits_largest = false;  // the busy configuration after still admits the model's
                                // largest base profile (§4 step 7)
};

// The best layout of a multiset of profiles on one GPU.
struct GpuLayout {
  bool feasible = false;
  LayoutCost cost;
  ConfigId busy_after = kInvalidConfig;
  // The profiles in canonical order (SortForLayout) and the start chosen for each.
  std::vector<int> profiles;
  std::vector<int> starts;
};

// Sorts `profiles` (indices into `model`'s profiles) into the canonical order
// the solver and its memo use: more compute slices first, then lower index.
void SortForLayout(const GpuModel& model, std::vector<int>* profiles);

// Reconfigurations that `RelayPlans` makes to lay the new instances
// `profiles[i]`@`starts[i]` on `pre` (whose busy instances stay): a create for
// every instance that does not reuse an idle instance of exactly its profile
// and start; a destroy for every idle instance overlapping a created one;
// then, while the compute slices (or a variant's max_instances) do not
// suffice, a destroy of the remaining idle instances, largest first (ties:
// lower start). REQUIRES: the new instances and the busy ones form a valid
// configuration. O(instances²).
int RelayReconfigurations(const GpuState& pre, const std::vector<int>& profiles,
                          const std::vector<int>& starts);

// One new instance of a re-laid GPU.
struct RelayInstance {
  JobId job = kNoJob;
  int profile = -1;
  int start = 0;
};

// The steps that lay `order` (in that order) on GPU `gpu`, whose state is
// `pre`: per instance, the destroys of the idle instances it needs gone (those
// overlapping it; then, if compute slices or its profile's max_instances do not
// suffice, first the idle instances a later instance of `order` overlaps, then
// the largest other idle instances not reused by `order`), its create (unless
// it reuses an idle instance of exactly its profile and start) and its start.
// The reconfigurations add up to RelayReconfigurations. kInternal when the
// instances do not fit (a bug in the caller).
StatusOr<std::vector<std::vector<Step>>> RelayPlans(const GpuState& pre, int gpu,
                                                    const std::vector<RelayInstance>& order);

// Exact best layouts, memoised by (state, multiset of profiles).
//
// The best layout minimises, in order: (when `prefer_largest`) not admitting
// the largest profile afterwards, reconfigurations, the metric's change
// (within 1e-9); ties go to the first in the walk (slots in ascending start,
// instances in canonical order). Cost of a miss: the walk over the
// placements, at most Π over the instances of their placements (symmetry of
// equal profiles removed), with the compute slices pruned on the way; a hit
// is a hash lookup. The memo is keyed by the state's bytes (Cluster::group_key
// style: model and instances) and the profiles; metric values are recomputed
// when the scorer's generation changes. At most kMaxEntries entries (then
// cleared).
class LayoutSolver {
 public:
  static constexpr size_t kMaxEntries = 1 << 16;

  // `scorer` must outlive the solver.
  explicit LayoutSolver(MetricScorer* scorer) : scorer_(scorer) {}

  // The best layout of `profiles` (canonical order, SortForLayout) on `pre`;
  // `pre_key` identifies `pre`'s state (Cluster::group_key of the GPU while
  // it was in that state). The reference is valid until the next Solve.
  const GpuLayout& Solve(const GpuState& pre, std::string_view pre_key,
                         const std::vector<int>& profiles, bool prefer_largest);

  size_t memo_size() const { return memo_.size(); }

 private:
  struct Entry {
    GpuLayout layout;
    uint64_t generation = 0;
    bool prefer_largest = false;
  };
  void Walk(const GpuState& pre, const std::vector<int>& profiles, bool prefer_largest,
            GpuLayout* best);

  MetricScorer* scorer_;
  std::unordered_map<std::string, Entry> memo_;
  std::string key_;  // scratch
};

}  // namespace migsched

#endif  // MIGSCHED_SCHED_GPU_LAYOUT_H_
