// The bodies of the scheduler extender protocol, k8s.io/kube-scheduler/extender/v1
// (types.go), as kube-scheduler's HTTPExtender sends and reads them
// (pkg/scheduler/extender.go). Those Go types carry no json tags, so the keys
// are the Go field names: ExtenderArgs{Pod, Nodes, NodeNames},
// ExtenderFilterResult{Nodes, NodeNames, FailedNodes, FailedAndUnresolvableNodes,
// Error}, HostPriorityList [{Host, Score}], ExtenderBindingArgs{PodName,
// PodNamespace, PodUID, Node}, ExtenderBindingResult{Error}. Decoding accepts
// keys in any letter case, as Go's encoding/json does; encoding writes the Go
// names. The Pod and Node objects inside are core/v1 JSON (camelCase tags).
//
// Thread-safety: pure functions.
#ifndef MIGSCHED_K8S_EXTENDER_WIRE_H_
#define MIGSCHED_K8S_EXTENDER_WIRE_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "k8s/extender/pod_requests.h"

namespace migsched::k8s {

// kube-scheduler's bounds on an extender's score (MinExtenderPriority,
// MaxExtenderPriority).
inline constexpr int64_t kMinExtenderScore = 0;
inline constexpr int64_t kMaxExtenderScore = 10;

// The body of filter and prioritize.
struct ExtenderArgs {
  PodInfo pod;
  // Candidate node names: NodeNames when kube-scheduler sent them
  // (nodeCacheCapable: true), else the names of Nodes.items.
  std::vector<std::string> node_names;
  bool node_names_given = false;
  // Nodes.items as sent (nodeCacheCapable: false), echoed back by filter.
  std::vector<nlohmann::json> node_items;
};

// kInvalidArgument with a message fit for kube-scheduler's event: a body that
// is not JSON, not an object, without a Pod, a Pod ParsePod refuses, NodeNames
// that are not strings, Nodes without items.
StatusOr<ExtenderArgs> ParseExtenderArgs(std::string_view body);

// What filter decided.
struct FilterOutcome {
  std::vector<std::string> passed;                  // in the order of the request
  std::map<std::string, std::string> failed;        // preemption might help
  std::map<std::string, std::string> unresolvable;  // preemption would not help
  std::string error;  // non-empty: the whole call failed (kube-scheduler reports it)
};

// ExtenderFilterResult. With NodeNames in `args`, the passing nodes go to
// NodeNames (Nodes null); with Nodes, their items go back in Nodes (NodeNames
// null). With an error, both are null.
nlohmann::json FilterResultJson(const FilterOutcome& outcome, const ExtenderArgs& args);
// ExtenderFilterResult with only Error (for a body that could not be read).
nlohmann::json FilterErrorJson(const std::string& error);

struct HostScore {
  std::string host;
  int64_t score = 0;  // clamped to [kMinExtenderScore, kMaxExtenderScore] on output
  bool operator==(const HostScore&) const = default;
};
nlohmann::json HostPriorityListJson(const std::vector<HostScore>& scores);

struct BindingArgs {
  std::string pod_name;
  std::string pod_namespace;
  std::string pod_uid;
  std::string node;
};
// kInvalidArgument for a body that is not a JSON object or lacks PodName,
// PodNamespace or Node (PodUID may be empty).
StatusOr<BindingArgs> ParseBindingArgs(std::string_view body);
nlohmann::json BindingResultJson(const std::string& error);

}  // namespace migsched::k8s

#endif  // MIGSCHED_K8S_EXTENDER_WIRE_H_
