// The bounded search across GPUs of joint placement (§12 of
// docs/algorithms.md): which of a few GPUs ("targets") each of a few
// instances ("items") goes to, so that every target can hold its items
// together (exact per target: LayoutSolver) at the least cost.
//
// Items of equal `shape` (the same request) are interchangeable: they are
// walked consecutively and take non-decreasing option indices, and a state
// (item index, every target's multiset) that led to no complete assignment is
// remembered and not walked again. The walk stops after `max_nodes` item
// placements tried; the best complete assignment found by then is returned.
//
// Thread-safety: pure function of its arguments (the solver's memo aside).
#ifndef MIGSCHED_SCHED_JOINT_SEARCH_H_
#define MIGSCHED_SCHED_JOINT_SEARCH_H_

#include <string>
#include <utility>
#include <vector>

#include "core/gpu_state.h"
#include "sched/gpu_layout.h"

namespace migsched {

struct JointTarget {
  const GpuState* pre = nullptr;  // its state before the queue scan
  std::string pre_key;            // Cluster::group_key of that state
  int model_index = 0;            // Cluster::model_index of the GPU (full-size reserve)
  std::vector<int> fixed;         // profiles that stay on it (placed by the scan, not movable)
  std::vector<int> current;       // canonical multiset it holds now (fixed + movable ones on it)
  LayoutCost current_cost;        // of its layout now, against `pre`
  bool admits_largest_now = false;
};

struct JointItem {
  int shape = 0;     // equal shapes: interchangeable
  int current = -1;  // target it is on now; -1: a new instance (the waiting job's)
  // (target, profile on that target's model) it may go to, in preference order;
  // equal for items of equal shape.
  std::vector<std::pair<int, int>> options;
  int compute_slices = 0;  // for the walk order (largest first)
};

struct JointCost {
  int reserve_deficit = 0;  // Σ over models of max(0, reserve - GPUs able to host the largest)
  int reconfigurations = 0;
  double metric = 0;
  int moved = 0;  // items placed on another target than `current`
};
// The order of the search: deficit, reconfigurations, metric (within 1e-9), moved.
bool JointCostBefore(const JointCost& a, const JointCost& b);

struct JointSearchInput {
  std::vector<JointTarget> targets;
  std::vector<JointItem> items;
  int reserve_full = 0;            // §4 step 7, GPUs (<= 0: off)
  std::vector<int> hosts_largest;  // per model index: GPUs able to host its largest profile now
  int max_nodes = 4096;
};

struct JointSearchResult {
  bool found = false;
  bool budget_exhausted = false;
  int64_t nodes = 0;
  JointCost cost;
  std::vector<int> target_of;               // per item
  std::vector<std::vector<int>> multisets;  // per target: canonical profiles
};

// REQUIRES: input.items sorted by (compute_slices descending, shape).
JointSearchResult SearchJoint(const JointSearchInput& input, LayoutSolver* solver);

}  // namespace migsched

#endif  // MIGSCHED_SCHED_JOINT_SEARCH_H_
