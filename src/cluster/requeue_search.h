// Requeue migration (docs/algorithms-cluster.md §14.5): room for a waiting
// job that fits nowhere, opened by requeueing running jobs that may move.
// An engine cannot copy a job's state between MIG instances the way the
// daemon does (§6); it can stop a job and start it again elsewhere (Slurm's
// `scontrol requeue`), which is what a `restart` job allows.
//
// The search, for a waiting job of one instance on one node:
//   1. Options: every placement (GPU, start) of its profile on an allowed
//      node whose busy instances in the way (those overlapping the
//      placement) all belong to movable jobs, and on which the placement is
//      valid once those jobs are gone (compute slices). Moving a job moves
//      all its instances, on every node.
//   2. Order: fewest jobs moved, then fewest compute slices moved, then
//      lower GPU index, then lower start.
//   3. The first option in that order for which, on a copy of the cluster
//      with the moved jobs' instances released (kept idle, as the daemon
//      keeps them) and the waiting job placed there, every moved job is
//      placed again by the JobPlacer (§14.2) wins. At most `max_moved_jobs`
//      jobs move; at most kMaxOptionsTried options are tried.
//
// Thread-safety: pure (the policy is used by one call at a time).
#ifndef MIGSCHED_CLUSTER_REQUEUE_SEARCH_H_
#define MIGSCHED_CLUSTER_REQUEUE_SEARCH_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cluster/cluster_view.h"
#include "cluster/job_placer.h"
#include "cluster/planner.h"

namespace migsched {

inline constexpr int kMaxOptionsTried = 64;

struct RequeueChoice {
  std::vector<std::string> moved;              // job keys, ascending
  NodePlacement room;                          // where the waiting job goes
  std::vector<std::vector<NodePlacement>> to;  // per moved job: where it would go
};

// The nodes a job may use (its allowed/excluded nodes, the planner's avoid list).
using FilterFor = std::function<JobPlacer::NodeFilter(const ClusterJob&)>;

// `cluster` is the round's cluster (view numbering) as it is after the jobs
// placed before `waiting`; `movable` are the running jobs that may move (their
// instances are the view's allocations owned by their keys). nullopt: no
// option works. kInternal for a plan the core rejects.
StatusOr<std::optional<RequeueChoice>> SearchRequeue(
    const Cluster& cluster, const ClusterView& view, const ClusterJob& waiting,
    const std::vector<const ClusterJob*>& movable, const FilterFor& filter_for,
    PlacementPolicy* policy, const SchedulerOptions& options, int max_moved_jobs);

}  // namespace migsched

#endif  // MIGSCHED_CLUSTER_REQUEUE_SEARCH_H_
