// The scheduler extender's three verbs, independent of HTTP: each takes the
// body kube-scheduler POSTs and returns the body it reads (k8s/extender/wire.h).
//
//   filter      keeps the nodes where every MIG instance of the pod can be
//               placed now at an exact placement (all or nothing); the others
//               go to FailedAndUnresolvableNodes with the reason. Unresolvable:
//               kube-scheduler's preemption cannot judge MIG placements (the
//               resources are ignoredByScheduler), so it must not evict for them.
//   prioritize  scores the nodes 0..10 by the configured policy.
//   bind        reserves the pod's placements on the node's daemon, records
//               them on the pod (annotation kPlacementAnnotation, a merge patch
//               guarded by the pod's uid), then posts the Binding; a failure
//               after the reservation releases it and takes the annotation and
//               the kManagedLabel off the pod again. One bind of a pod at a time:
//               a bind of a pod (by uid) while another of it is in progress is
//               refused with the reason (kube-scheduler retries it), so two binds
//               cannot each reserve and annotate, the pod ending bound to one
//               node with the other's annotation.
//
// Answers are always HTTP 200 with the protocol body: a body that cannot be
// read, an unknown profile or an unknown node gets a message kube-scheduler
// shows in the pod's events (Error, or a reason per node), never a 5xx, which
// kube-scheduler would treat as the extender failing. Pods without MIG
// resources pass through untouched: every node passes, every score is 0, and
// bind only posts the Binding.
//
// Where the decisions come from is the PlacementEngine (the cluster controller
// core over every node daemon, k8s/cluster_engine.h).
//
// Thread-safety: every method may be called from concurrent HTTP threads;
// `mu_` guards the pod cache, the counters and the set of pods being bound, and
// no lock is held while the engine or the API server is called.
#ifndef MIGSCHED_K8S_EXTENDER_EXTENDER_H_
#define MIGSCHED_K8S_EXTENDER_EXTENDER_H_

#include <deque>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "k8s/api/kube_client.h"
#include "k8s/extender/pod_requests.h"
#include "k8s/extender/wire.h"
#include "nodeapi/nvml_index.h"
#include "nodeapi/placement.h"

namespace migsched::k8s {

// Pod annotations of migsched (the user's two on/off ones: pod_requests.h).
inline constexpr char kPlacementAnnotation[] = "migsched.io/placement";
// Label "true" on every pod the extender bound with a reservation: the reclaim
// loop lists pods by it.
inline constexpr char kManagedLabel[] = "migsched.io/managed";
// The reservation owner key of a pod: "k8s:<uid>".
std::string PodOwnerKey(const std::string& uid);

// One instance reserved for a pod: its placement on the node (the
// PlacementRef it is: the GPU's NVML index, profile, start), for which container.
struct ReservedInstance : PlacementRef {
  std::string container;  // the container it is for
  std::string gpu_uuid;   // the GPU's UUID ("GPU-…")
  int size = 0;           // placement units
  bool operator==(const ReservedInstance&) const = default;
};

struct PodReservation {
  std::string node;
  std::string key;  // the owner key on the node daemon
  std::vector<ReservedInstance> instances;
  // The annotation's JSON: {"node", "reservation", "instances": [...]}.
  nlohmann::json ToJson() const;
  static StatusOr<PodReservation> FromJson(const nlohmann::json& j);
};

// The cluster side of the extender.
class PlacementEngine {
 public:
  virtual ~PlacementEngine() = default;
  struct Verdict {
    bool fits = false;
    std::string
        reason;  // why not, e.g. "no 4g.20gb placement free: slices 4-7 free but slot 0 taken"
  };
  // One verdict per name of `nodes`, in order. Only pods with MIG containers
  // (no MIG init containers) are asked.
  virtual std::vector<Verdict> Filter(const PodInfo& pod,
                                      const std::vector<std::string>& nodes) = 0;
  // One score in [0, 10] per node of `nodes`, in order (higher is better).
  virtual std::vector<int64_t> Prioritize(const PodInfo& pod,
                                          const std::vector<std::string>& nodes) = 0;
  // Reserves every instance of `pod` on `node` under PodOwnerKey(pod.uid),
  // all or nothing. An error says why (the placement was taken meanwhile, the
  // node's daemon cannot be reached).
  virtual StatusOr<PodReservation> Reserve(const PodInfo& pod, const std::string& node) = 0;
  // Drops the reservation again (bind failed after Reserve).
  virtual Status Release(const PodInfo& pod, const std::string& node) = 0;
  // Releases what `pod` still holds on nodes other than `node` (an earlier bind's room: the
  // extender restarted, or a Binding's outcome was unknown), once the pod is known bound to
  // `node`; never before (regression: trial_retried_bind_released_the_room_of_the_binding_that_
  // landed: a late Binding to the earlier node was stored after the retry had released that
  // node's room). A failed release is logged; the room then expires with its TTL.
  virtual void ReleaseElsewhere(const PodInfo& pod, const std::string& node) = 0;
};

class Extender {
 public:
  struct Answer {
    int http_status = 200;
    std::string body;  // JSON
  };
  // `engine` must outlive the extender; `api` may be null (no API server:
  // bind then fails with a clear Error, for filter-only tests).
  Extender(PlacementEngine* engine, KubeClient* api);

  Answer Filter(std::string_view body);
  Answer Prioritize(std::string_view body);
  Answer Bind(std::string_view body);

  struct Counters {
    long filter = 0, prioritize = 0, bind = 0, bind_errors = 0, bad_requests = 0;
  };
  Counters counters() const;

 private:
  // The pod of a bind: from the filter calls' cache, else from the API server.
  StatusOr<PodInfo> PodForBind(const BindingArgs& args);
  void Remember(const PodInfo& pod);
  std::string BindPod(const BindingArgs& args);
  // `pod` (`who` for the log) was found bound to `node` by an earlier bind of it: its room there
  // is read back, annotated on the pod, and what it holds on other nodes released.
  void KeepRoomWhereBound(const PodInfo& pod, const std::string& who, const std::string& node);

  PlacementEngine* const engine_;
  KubeClient* const api_;
  mutable std::mutex mu_;                           // guards cache_, order_, counters_, binding_
  std::unordered_map<std::string, PodInfo> cache_;  // by uid
  std::deque<std::string> order_;                   // uids, oldest first
  Counters counters_;
  std::set<std::string> binding_;  // uids of the pods whose bind is in progress
};

}  // namespace migsched::k8s

#endif  // MIGSCHED_K8S_EXTENDER_EXTENDER_H_
