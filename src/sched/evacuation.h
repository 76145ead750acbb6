// Evacuation (docs/algorithms.md §13): the cheapest set of moves of running
// jobs that opens a placement for a waiting job now.
//
// For a waiting single-instance job J of profile p, a *candidate* is a
// placement (g, s) of p on a GPU g that J may use, and its *blockers*: the
// busy instances of g overlapping s, then, while the compute slices or p's
// max_instances still do not allow s, the other busy instances of g by
// smaller memory (lower start on ties). A candidate is usable when every
// blocker's job may move (MoveRights: kAny, or kIntra for a target on g
// itself) and none of g's instances is mid-move. Candidates are tried by
// their cost: fewer moves, then less state to copy (the blockers' memory),
// then lower GPU index, then lower start; the first for which every blocker
// finds a target wins.
//
// Targets (make-before-break: a target is free of busy instances now, while
// its source still runs): on another GPU h that `target_ok` allows, a
// placement of the blocker's profile whose addition keeps h's busy instances
// (and the targets already chosen there) valid; on g itself (any blocker;
// the only kind a latency-sensitive one may take), a placement disjoint from
// s that keeps g valid both now (sources and targets busy) and after the
// switch-overs (the instances that stay, s and the intra targets). Idle
// instances in a target's way are destroyed, as for a placement. A blocker's
// options are ordered by the FragCost change of the target GPU's settled
// configuration (§2; within 1e-9), then reuse of an idle instance, then
// fewer idle instances destroyed, then lower GPU index, then higher start;
// a depth-first search over the blockers (largest first) takes the first
// complete assignment, trying at most kMaxNodes targets.
//
// Cost: candidate GPUs are one per state group (Cluster::representatives,
// the lowest allowed member); target GPUs are, per state group, the lowest
// allowed members, as many as there are blockers. O(groups × placements ×
// blockers) per candidate plus the bounded search.
//
// A query's `accept`, when set, passes over a plan it refuses for the next candidate in that
// order (the scheduler's room kept for small jobs, KeepsRoomFor below).
//
// Thread-safety: pure functions of their arguments; RecentArrivalSizes is not thread-safe (its
// owner, the Scheduler, calls it under the scheduler's own serialisation).
#ifndef MIGSCHED_SCHED_EVACUATION_H_
#define MIGSCHED_SCHED_EVACUATION_H_

#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "core/cluster.h"
#include "core/job.h"
#include "sched/migration.h"

namespace migsched {

struct EvacuationPlan {
  int gpu = -1;  // the placement opened for the job
  int profile = -1;
  int start = 0;
  std::vector<MigrationMove> moves;  // in the order to begin them
  double memory_mib = 0;             // state to copy, all moves
};

struct EvacuationQuery {
  const Job* job = nullptr;  // the waiting job (count 1)
  // May the job of a busy instance move (kNone: stays; kIntra: within its GPU).
  std::function<MoveRights(JobId)> rights;
  // The request of a running job (to resolve it on another GPU's model).
  std::function<const Job*(JobId)> job_of;
  // GPUs the waiting job may be placed on, and GPUs a blocker may move to.
  std::function<bool(int gpu)> source_ok;
  std::function<bool(int gpu)> target_ok;
  // Only this placement (gpu >= 0): an evacuation already chosen, re-planned.
  int gpu = -1, profile = -1, start = 0;
  // Unset: the first plan found is taken. Set: a plan it returns false for is passed over for
  // the next candidate; nullopt when it refuses every plan.
  std::function<bool(const EvacuationPlan&)> accept;
};

inline constexpr int kEvacuationMaxNodes = 2000;

// The plan, or nullopt when no candidate's blockers can all move. A
// placement that is free already is not returned (nothing to move).
std::optional<EvacuationPlan> PlanEvacuation(const Cluster& cluster, const EvacuationQuery& q);

// Room kept for small jobs (docs/algorithms.md §13, ours). Whether `plan`, carried out on
// `cluster` (every mover at its target, every source freed, the waiting job at the plan's
// placement), still leaves some GPU a free placement of a base profile of `compute_slices`
// compute slices, where some GPU offers one now. Also true when no GPU offers one now (there is
// no room to keep), when compute_slices < 1, and when the plan does not apply to `cluster`
// (the caller's checks then decide). Free means placeable beside the busy instances: idle ones
// count as free, as for any placement (§4). Pure; O(GPUs × placements).
bool KeepsRoomFor(const Cluster& cluster, const EvacuationPlan& plan, int compute_slices);

// The compute slices of one instance of each of the last `window` arrivals (a gang counts
// once): their smallest is the size whose room an evacuation keeps (§13). O(log sizes) per call.
class RecentArrivalSizes {
 public:
  explicit RecentArrivalSizes(int window) : window_(window < 1 ? 1 : window) {}
  // Records one arrival of that many compute slices (< 1: a job no model offers, ignored); the
  // oldest leaves when the window is full.
  void Observe(int compute_slices);
  // The smallest size in the window; 0 when it is empty.
  int Smallest() const { return counts_.empty() ? 0 : counts_.begin()->first; }

 private:
  int window_;
  std::deque<int> sizes_;
  std::map<int, int> counts_;  // size -> arrivals of it in the window (> 0)
};

}  // namespace migsched

#endif  // MIGSCHED_SCHED_EVACUATION_H_
