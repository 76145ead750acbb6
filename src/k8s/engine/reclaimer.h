// Releasing what pods no longer need (the extender's loop, every
// reclaim_interval_s): the reservations and allocations of owner "k8s:<uid>"
// on every node daemon whose pod is gone, or has ended (status.phase
// Succeeded or Failed). A key is released only when its pod was missing in
// two rounds in a row, so that a bind in flight (reserved, not yet
// annotated) is never taken for a vanished pod. Allocations are released
// (their instances kept idle for reuse or destroyed, as the daemon does for
// jobs); reservations dropped.
//
// Pods are listed by the label kManagedLabel the extender sets at bind; before a key is
// released, every pod is listed once more without the label (a round with candidates only), so
// that a running pod whose label was removed keeps its instances.
//
// Thread-safety: not thread-safe; one caller.
#ifndef MIGSCHED_K8S_ENGINE_RECLAIMER_H_
#define MIGSCHED_K8S_ENGINE_RECLAIMER_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "cluster/node_daemons.h"
#include "core/status.h"
#include "k8s/api/kube_client.h"
#include "k8s/engine/node_directory.h"

namespace migsched::k8s {

class Reclaimer {
 public:
  Reclaimer(KubeClient* api, NodeDaemons* daemons, NodeDirectory* directory);

  struct Round {
    std::vector<std::string> released;  // "gpu-node-1 allocation 7 of k8s:<uid> (pod gone)"
    std::vector<std::string> errors;
  };
  // One round. An error listing the pods skips the round (nothing released).
  StatusOr<Round> RunOnce();

 private:
  KubeClient* const api_;
  NodeDaemons* const daemons_;
  NodeDirectory* const directory_;
  std::set<std::string> missing_before_;  // keys whose pod was missing last round
};

}  // namespace migsched::k8s

#endif  // MIGSCHED_K8S_ENGINE_RECLAIMER_H_
