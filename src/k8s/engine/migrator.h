// Migration by eviction (the extender's loop, with the reclaim loop): room for
// a pod that has fit on no node for `migrate_after_s`, opened by evicting
// running pods that may move, as the cluster core's requeue migration plans
// it (docs/algorithms-cluster.md §14.5, ClusterEngine::PlanMigration). An
// evicted pod's controller recreates it and the replacement is placed like
// any pod; the Eviction API honours PodDisruptionBudgets (a 429 is not an
// error: the move waits, k8s/migration/evictor.h). Only pods annotated
// migsched.io/migratable "true" with a controller, never latency-sensitive
// ones (MayMigrate).
//
// One waiting pod at a time, the one waiting longest. While pods evicted for
// it still exist (terminating) or their allocations are not yet released (the
// reclaim loop releases them once the pod is gone), nothing more is evicted:
// the room is on its way.
//
// Thread-safety: not thread-safe; one caller.
#ifndef MIGSCHED_K8S_ENGINE_MIGRATOR_H_
#define MIGSCHED_K8S_ENGINE_MIGRATOR_H_

#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "k8s/api/kube_client.h"
#include "k8s/engine/cluster_engine.h"
#include "k8s/migration/evictor.h"

namespace migsched::k8s {

class Migrator {
 public:
  // All must outlive the migrator.
  Migrator(ClusterEngine* engine, KubeClient* api, Evictor* evictor, double migrate_after_s,
           int max_moved_pods = 2);

  struct Round {
    std::vector<std::string> evicted;  // "ml/train-03 (requeued to open room for k8s:...)"
    std::vector<std::string> waiting;  // why nothing was evicted for a pod now
  };
  // One round at `now` (seconds on a steady clock, for the Evictor's 429
  // back-off). An error listing the pods skips the round.
  StatusOr<Round> RunOnce(double now);

 private:
  ClusterEngine* const engine_;
  KubeClient* const api_;
  Evictor* const evictor_;
  const double migrate_after_s_;
  const int max_moved_;
  std::map<std::string, std::vector<std::string>> in_flight_;  // waiting uid -> moved owner keys
};

}  // namespace migsched::k8s

#endif  // MIGSCHED_K8S_ENGINE_MIGRATOR_H_
