// The extender's PlacementEngine over the engine-neutral cluster controller
// core (src/cluster/): one ClusterView of every GPU of every node daemon
// (cluster/cluster_view.h), the configured policy placing pods with the
// scheduler core through cluster/job_placer.h (the same TryPlace as
// `migsched simulate`), reservations and their release through
// cluster/node_daemons.h.
//
//   Filter     per candidate node: does the pod's whole request fit on that
//              node now (JobPlacer restricted to it)? If not, why, per GPU
//              (sched/explain.h). A node where the pod already holds a
//              reservation of its whole request (a bind that did not finish:
//              the extender restarted, or the Binding failed) fits: that room
//              is the pod's, and a bind there keeps it.
//   Prioritize the node the policy picks over all candidate nodes gets 10;
//              the other nodes that fit 9, 8, ... by the FragCost increase
//              the pod causes there (ΔFragCost, §2; smaller first); the rest 0.
//              A node holding the pod's whole reservation comes first (10).
//   Reserve    waits (bounded) while another pod's reservation on the node
//              with a profile in common is not bound yet (the kubelet's
//              Allocate names no pod: the node agent finds the pod through
//              its reservation, docs/kubernetes.md), then places the pod on
//              the node (the placement prioritize chose when the node has not
//              changed since) and reserves it under "k8s:<uid>"; then
//              releases what the pod still holds on other nodes (an earlier
//              bind's room, left by a restart or a failed Binding).
//
// The policy object lives as long as the engine and sees each pod arrive once
// (its first filter), as the simulator's policy sees each job arrive
// (PlacementPolicy::ObserveArrival, the demand window of §2).
//
// The view is re-read when older than `refresh_s` (every node, up to
// `state_threads` at once); a bind re-reads its node before it decides and
// after it reserves.
//
// Node reads never make a call wait on a daemon it did not ask about
// (regression: one_hung_daemon_slows_every_filter: with one node daemon
// stopped, filters of other nodes took 10-40 s and /readyz 10-16 s). Each
// node's state is read by a pool of `state_threads` readers, at most one read
// per node at a time, and kept with the time its read began. A call waits
// only for the nodes it names (filter and prioritize their NodeNames, a bind
// its node, migration every node), and for each at most `node_wait_s`: a node
// whose daemon has not answered by then is refused for this call ("did not
// answer within N s"), the others answer from their reads; NotReady waits for
// none. A node whose read has been under way for longer than `node_wait_s` is
// refused in every view until its daemon answers; a node read earlier and not
// named in the call keeps its last answer. Concurrent calls share one read per
// node (they never queue behind each other on one daemon).
//
// Thread-safety: all methods may be called concurrently; `mu_` guards the
// policy, the table cache, the view and the caches below, and is never held
// while a node daemon is called. A per-node lock serialises binds on one node
// (NodeLock).
#ifndef MIGSCHED_K8S_ENGINE_CLUSTER_ENGINE_H_
#define MIGSCHED_K8S_ENGINE_CLUSTER_ENGINE_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cluster/cluster_view.h"
#include "cluster/node_daemons.h"
#include "cluster/planner.h"
#include "core/catalog.h"
#include "core/config_table.h"
#include "k8s/engine/node_directory.h"
#include "k8s/extender/extender.h"
#include "sched/options.h"
#include "sched/policy.h"

namespace migsched::k8s {

struct EngineOptions {
  std::string policy = std::string(kDefaultPolicy);  // a name MakePolicy knows
  SchedulerOptions scheduler;      // as the policy runs with them (OptionsForPolicy applied)
  double reservation_ttl_s = 300;  // a bind's reservation at the daemon, seconds
  double refresh_s = 0.5;          // the view is re-read when older, seconds
  double bind_wait_s = 20;         // the longest a bind waits for an earlier pod's Allocate
  double poll_s = 0.05;            // how often it looks again meanwhile
  // Node daemons read at once when the view is rebuilt (NodeDaemons must then
  // allow concurrent calls for different nodes, as its contract says).
  int state_threads = 16;
  // The longest a call waits for the daemon of a node it names; one that has not answered by
  // then is refused for the call (the read goes on; its answer serves the next call).
  double node_wait_s = 2;
  // Fault drills and tests: while it returns true for a job key ("k8s:<uid>"), the core fails
  // every placement decision for that pod with an internal error. Empty: none.
  std::function<bool(const std::string& job_key)> fault;
};

// The pod as a job of the cluster core: every instance of every container on
// one node, all or nothing; key PodOwnerKey(uid).
ClusterJob ToClusterJob(const PodInfo& pod);

class ClusterEngine : public PlacementEngine {
 public:
  // `daemons`, `directory` and `catalog` must outlive the engine.
  static StatusOr<std::unique_ptr<ClusterEngine>> Create(NodeDaemons* daemons,
                                                         NodeDirectory* directory,
                                                         const Catalog* catalog,
                                                         EngineOptions options);

  std::vector<Verdict> Filter(const PodInfo& pod, const std::vector<std::string>& nodes) override;
  std::vector<int64_t> Prioritize(const PodInfo& pod,
                                  const std::vector<std::string>& nodes) override;
  StatusOr<PodReservation> Reserve(const PodInfo& pod, const std::string& node) override;
  Status Release(const PodInfo& pod, const std::string& node) override;
  void ReleaseElsewhere(const PodInfo& pod, const std::string& node) override;

  // The pods whose last filter found no node, waiting at least `min_wait_s`
  // since that first happened, oldest first (for migration).
  std::vector<PodInfo> WaitingPods(double min_wait_s);
  // Drops `uid` from the waiting pods (gone, or placed).
  void Forget(const std::string& uid);
  // The requeue migration (docs/algorithms-cluster.md §14.5) that would open
  // room for `waiting` by evicting at most `max_moved` of `running` (bound
  // pods whose instances are allocations owned by their key; only
  // migratable, not latency-sensitive ones move), with the cluster core's
  // planner on a fresh view: the moves (job keys "k8s:<uid>"), empty when
  // there is none or the pod fits now. Errors: the planner's.
  StatusOr<std::vector<RequeueMove>> PlanMigration(const PodInfo& waiting,
                                                   const std::vector<PodInfo>& running,
                                                   int max_moved);

  // "" when the node daemons can be listed and at least one answers; else why.
  std::string NotReady();
  // Placement decisions refused because the core reported an internal error (a bug: each is
  // logged with the pod and the GPUs' state; the pod is told no node fits it this time).
  int64_t internal_errors() const { return internal_errors_.load(); }
  // Drops the view: the next call reads every node again.
  void Invalidate();

  // The view as it is now (refreshed when stale), for the reclaim loop and tests.
  struct Snapshot {
    std::vector<StaticNode> nodes;
    std::vector<NodeInput> inputs;
    std::unique_ptr<ClusterView> view;
    std::chrono::steady_clock::time_point taken;
    std::string error;  // the directory could not be listed
    // Nodes without an answer as fresh as the view asked for when it was built (their last one,
    // or an error, stands in): a call that names one reads it again.
    std::set<std::string> pending;
  };
  std::shared_ptr<const Snapshot> View(bool fresh = false);

  ~ClusterEngine() override;

 private:
  ClusterEngine(NodeDaemons* daemons, NodeDirectory* directory, const Catalog* catalog,
                EngineOptions options, std::unique_ptr<PlacementPolicy> policy);
  class Trial;
  // A view with the nodes of `wait_for` read by reads begun at or after `fresh_from` (waiting at
  // most node_wait_s for them), the others as last read (a read begun before `others_from` is
  // renewed, not waited for); stored as the view.
  std::shared_ptr<const Snapshot> Build(const std::set<std::string>& wait_for,
                                        std::chrono::steady_clock::time_point fresh_from,
                                        std::chrono::steady_clock::time_point others_from);
  // View(fresh) for a call that names `nodes`: the stored view when it is fresh and none of
  // `nodes` is pending in it.
  std::shared_ptr<const Snapshot> ViewFor(const std::vector<std::string>& nodes);
  // refresh_s: how old a node's last answer may be and still serve a call.
  std::chrono::steady_clock::duration MaxAge() const;
  // The view with `node` read again now (its read begun after this call), the other nodes as
  // last read; stored as the view.
  std::shared_ptr<const Snapshot> WithFreshNode(const std::string& node);
  // One node's reads (under reads_mu_).
  struct NodeRead {
    bool answered = false;  // a read ended
    std::optional<NodeView> state;
    std::string error;                                   // the last read's, when it failed
    std::chrono::steady_clock::time_point result_began;  // when the last ended read began
    bool in_flight = false;
    std::chrono::steady_clock::time_point began;  // the read under way
    bool again = false;                           // read again once the read under way ends
  };
  // Makes sure node `name` gets a read begun at or after `not_before`. Under reads_mu_.
  void RequestRead(const std::string& name, std::chrono::steady_clock::time_point not_before);
  void ReaderLoop();
  // Places `job` with the nodes `allowed` on a copy of the view's cluster;
  // nullopt when it does not fit. `delta` (optional) gets the FragCost increase
  // summed over the GPUs of the chosen node.
  std::optional<NodePlacement> Place(const Snapshot& s, const ClusterJob& job,
                                     const std::set<int>& allowed, double* delta);
  // Why `job` does not fit on node `node` now. Under mu_ (tables_).
  std::string NoFitReason(const Snapshot& s, const ClusterJob& job, int node);
  // Whether node `node` (a view index) holds a reservation of `job.key` with exactly the job's
  // per-node request (profile by profile).
  static bool HoldsItsRoom(const Snapshot& s, const ClusterJob& job, int node);
  // The lock of binds on `node` (Reserve holds it from its check of pending
  // reservations through the daemon's Reserve; never while it waits).
  std::shared_ptr<std::mutex> NodeLock(const std::string& node);
  // Remembers that the policy saw `uid` arrive; true the first time. Under mu_.
  bool FirstArrival(const std::string& uid);

  NodeDaemons* const daemons_;
  NodeDirectory* const directory_;
  const Catalog* const catalog_;
  const EngineOptions options_;

  std::mutex mu_;
  std::unique_ptr<PlacementPolicy> policy_;
  ConfigTableCache tables_;
  std::shared_ptr<const Snapshot> snapshot_;
  std::set<std::string> observed_;          // pod uids the policy has seen arrive
  std::deque<std::string> observed_order_;  // the same, oldest first (bounded)
  // Prioritize's choice per pod uid: the node and placements, with the node's
  // generation when chosen (reused by Reserve while the node is unchanged).
  struct Choice {
    std::string node;
    uint64_t generation = 0;
    NodePlacement placement;
  };
  std::map<std::string, Choice> choices_;  // bounded: cleared when it grows past 10000
  struct Waiting {
    PodInfo pod;
    std::chrono::steady_clock::time_point since;  // its first filter that found no node
  };
  std::map<std::string, Waiting> waiting_;                         // by uid; bounded as choices_
  std::map<std::string, std::shared_ptr<std::mutex>> node_locks_;  // by node name
  std::atomic<int64_t> internal_errors_{0};

  std::mutex reads_mu_;                    // guards reads_, read_queue_, stopping_
  std::condition_variable reads_cv_;       // a read queued or ended, or stopping
  std::map<std::string, NodeRead> reads_;  // by node name
  std::deque<std::string> read_queue_;
  bool stopping_ = false;
  std::vector<std::thread> readers_;
};

}  // namespace migsched::k8s

#endif  // MIGSCHED_K8S_ENGINE_CLUSTER_ENGINE_H_
