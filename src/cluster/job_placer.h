// JobPlacer: places one engine job (cluster/planner.h ClusterJob) on a
// cluster of several nodes with the scheduler core, all or nothing
// (docs/algorithms-cluster.md §14.2):
//
//  * one instance of one profile, any node: Scheduler::TryPlace over every
//    GPU of the cluster, exactly as the simulator places it;
//  * otherwise, node by node: the node is the one of the GPU the policy
//    chooses for one instance of the request's largest profile (most compute
//    slices; ties: the first listed) among the nodes still allowed; then the
//    whole per-node request is placed there as gangs, profile by profile, by
//    a Scheduler on a cluster of that node's GPUs: the largest profile first
//    (first-fit decreasing), then as listed, then (up to 4 profiles) in every
//    other order, until one order fits. If none does, that node is ruled out
//    and the choice repeats. Nodes whose free room cannot
//    hold the request (the sum over their GPUs of feasible_m of the busy
//    configuration, §2, below the count of some profile) are ruled out first.
//    If fewer than num_nodes nodes take it, every GPU it touched gets its
//    state back.
//
// Instances placed carry job ids from the placer's own counter (one per job,
// node and profile part), below kFirstOccupantId.
//
// Thread-safety: thread-compatible; `cluster` is changed in place.
#ifndef MIGSCHED_CLUSTER_JOB_PLACER_H_
#define MIGSCHED_CLUSTER_JOB_PLACER_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cluster/cluster_view.h"
#include "cluster/planner.h"
#include "core/cluster.h"
#include "sched/options.h"
#include "sched/policy.h"
#include "sched/scheduler.h"

namespace migsched {

class JobPlacer {
 public:
  // `cluster` is a cluster with the view's GPU numbering (a copy of
  // view.cluster(), possibly changed since); all arguments must outlive the
  // placer.
  JobPlacer(Cluster* cluster, const ClusterView& view, ConfigTableCache* tables,
            PlacementPolicy* policy, const SchedulerOptions& options);

  // Whether `node` may be used for a profile (a node filter per call).
  using NodeFilter = std::function<bool(int node, const std::string& profile)>;

  // Places `job` and applies it to the cluster; nullopt (cluster unchanged)
  // when it does not fit now. kInternal for a plan the core rejects.
  StatusOr<std::optional<std::vector<NodePlacement>>> Place(const ClusterJob& job,
                                                            const NodeFilter& allowed);

  // The placer's job ids of the instances placed for each Place call that
  // succeeded, by job key (for tests and the migration search).
  const std::vector<JobId>& IdsOf(const std::string& key) const;

  // The Scheduler over the whole cluster (the planner's queue scans use it)
  // and a fresh job id for it.
  Scheduler* scheduler() { return main_.get(); }
  JobId NextId() { return next_id_++; }
  // The engine job `job` as the core's Job of one part.
  Job ToJob(const ClusterJob& job, const ProfileCount& part) const;
  // Fault drills and tests: while `fails(job key)` is true, every placement decision of that job
  // fails with kInternal (Scheduler::SetFaultInjector on every scheduler the placer uses).
  void SetFaultInjector(std::function<bool(const std::string& key)> fails);

 private:
  StatusOr<std::optional<std::vector<NodePlacement>>> PlaceSimple(const ClusterJob& job,
                                                                  const NodeFilter& allowed);
  // The whole per-node request on `node`, applied to the cluster; false if it does not fit.
  StatusOr<bool> PlaceOnNode(const ClusterJob& job, int node, NodePlacement* out,
                             std::vector<JobId>* ids);
  // Sum over the node's non-reserved GPUs of feasible_m for `profile`'s base
  // profile given the busy instances: an upper bound of what more the node
  // can take (0: the policy has no candidate for it there).
  int FreeRoom(int node, const std::string& profile) const;
  // Marks (true) or unmarks the GPUs of `nodes` reserved, drained GPUs staying reserved.
  void ReserveNodes(const std::vector<int>& nodes, bool on);

  Cluster* cluster_;
  const ClusterView& view_;
  ConfigTableCache* tables_;
  PlacementPolicy* policy_;
  SchedulerOptions options_;
  std::unique_ptr<Scheduler> main_;  // over the whole cluster (one-instance jobs)
  JobId next_id_ = 0;
  std::unordered_map<std::string, std::vector<JobId>> ids_;
  std::function<bool(JobId, const Job&)> fault_;  // SetFaultInjector, as the core takes it
};

}  // namespace migsched

#endif  // MIGSCHED_CLUSTER_JOB_PLACER_H_
