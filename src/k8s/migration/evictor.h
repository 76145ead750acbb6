// Migration on Kubernetes is eviction: migsched asks the API server to evict a
// pod (policy/v1 Eviction, which honours the pod's PodDisruptionBudgets), the
// pod's controller creates a replacement, and the replacement is scheduled
// through the extender onto the placement the planner opened (docs/algorithms.md
// §6, "restart" jobs).
//
// Only pods that say so move: annotation migsched.io/migratable: "true", a
// controller that recreates them (an ownerReference with controller: true),
// and never a pod annotated migsched.io/latency-sensitive: "true". A 429 from
// the API server (a budget forbids the eviction now) is not an error: the move
// waits, with the API server's message as the reason, and is tried again no
// sooner than its Retry-After (or `retry_after_s`).
//
// Thread-safety: not thread-safe; one caller (the controller's loop).
#ifndef MIGSCHED_K8S_MIGRATION_EVICTOR_H_
#define MIGSCHED_K8S_MIGRATION_EVICTOR_H_

#include <map>
#include <string>

#include "core/status.h"
#include "k8s/api/kube_client.h"
#include "k8s/extender/pod_requests.h"

namespace migsched::k8s {

// OK when `pod` may be evicted to migrate it; else kFailedPrecondition saying
// which rule forbids it.
Status MayMigrate(const PodInfo& pod);

class Evictor {
 public:
  enum class Outcome {
    kEvicted,  // the API server accepted the eviction
    kWaiting,  // a PodDisruptionBudget forbids it now (or an earlier 429 is not over)
    kGone,     // the pod no longer exists
  };
  struct Result {
    Outcome outcome = Outcome::kWaiting;
    std::string reason;  // what to log: the API server's message, or why not yet
  };

  // `api` must outlive the Evictor. `retry_after_s` is the wait after a 429
  // that carries no Retry-After header.
  explicit Evictor(KubeClient* api, double retry_after_s = 10);

  // Evicts `pod` now (at time `now`, seconds on any steady clock). Errors:
  // MayMigrate's; the API server's for anything but 200/201/404/429.
  StatusOr<Result> Evict(const PodInfo& pod, double now);

 private:
  KubeClient* const api_;
  const double retry_after_s_;
  std::map<std::string, double> not_before_;  // pod uid -> earliest next try after a 429
};

}  // namespace migsched::k8s

#endif  // MIGSCHED_K8S_MIGRATION_EVICTOR_H_
