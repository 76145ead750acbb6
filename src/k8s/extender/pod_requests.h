// What migsched reads from a Kubernetes Pod (core/v1, as the API server and
// kube-scheduler serialise it): its identity, annotations and the MIG
// instances its containers ask for, as extended resources
// "nvidia.com/mig-<profile>" in resources.limits (or requests).
//
// Kubernetes requires an extended resource to be a whole number and, when both
// are given, requests to equal limits; the API server defaults requests from
// limits. A pod that breaks these rules is refused here with the container and
// the resource named, never read half-way.
//
// Thread-safety: pure functions.
#ifndef MIGSCHED_K8S_EXTENDER_POD_REQUESTS_H_
#define MIGSCHED_K8S_EXTENDER_POD_REQUESTS_H_

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"

namespace migsched::k8s {

// Instances of one profile a container asks for.
struct MigRequest {
  std::string profile;  // "3g.20gb": the resource name without "nvidia.com/mig-"
  int count = 0;        // >= 1
  bool operator==(const MigRequest&) const = default;
};

// A container that asks for MIG instances, with its requests sorted by profile name.
struct ContainerMig {
  std::string container;
  std::vector<MigRequest> requests;
  bool operator==(const ContainerMig&) const = default;
};

// The user's on/off annotations of a pod (docs/kubernetes.md). "true": the pod's controller
// recreates it, so migsched may evict it to open room.
inline constexpr char kMigratableAnnotation[] = "migsched.io/migratable";
// "true": never moved, and placed on an instance of its own (§3).
inline constexpr char kLatencySensitiveAnnotation[] = "migsched.io/latency-sensitive";

struct PodInfo {
  std::string name;
  std::string ns;  // metadata.namespace ("default" when absent)
  std::string uid;
  std::map<std::string, std::string> annotations;
  std::string node_name;  // spec.nodeName, "" while unbound
  std::string phase;      // status.phase, "" when absent
  int priority = 0;       // spec.priority
  // Kind of the ownerReference with controller: true ("Job", "ReplicaSet", ...),
  // "" for a bare pod, which nothing would recreate after an eviction.
  std::string controller_kind;
  // Only the containers (spec.containers, in order) that ask for MIG instances.
  std::vector<ContainerMig> containers;
  // Names of init containers that ask for MIG instances (not supported: the
  // extender refuses such pods with this list in the reason).
  std::vector<std::string> init_containers_with_mig;
  // An on/off annotation of migsched's whose value is no on/off word, said ("annotation
  // migsched.io/migratable must be true or false (or yes/no, on/off), got 'maybe'"): the
  // extender refuses such a pod at filter, as a pod with MIG in an init container; read for
  // anything else (reclaim, migration) the annotation counts as false. The words it takes
  // (OnOffWord, core/text.h: true/false, yes/no, on/off, in any case) are kept as "true" or
  // "false" in `annotations`.
  std::vector<std::string> bad_annotations;

  bool has_mig() const { return !containers.empty() || !init_containers_with_mig.empty(); }
  // Every instance the pod needs, one entry per instance, in container order.
  std::vector<std::string> instance_profiles() const;
  std::string key() const { return ns + "/" + name; }  // "default/train-x7k2p"
};

// Reads `pod` (a core/v1 Pod object). kInvalidArgument, naming the field, for
// a non-object, a missing metadata.name, or a MIG quantity that is not a whole
// number >= 0, or whose requests and limits differ. A quantity of 0 asks for
// nothing. Resources of other names are ignored.
StatusOr<PodInfo> ParsePod(const nlohmann::json& pod);

// The member `key` of `object`, matched exactly or else ASCII
// case-insensitively (as Go's encoding/json decodes), or nullptr.
const nlohmann::json* FindMember(const nlohmann::json& object, std::string_view key);

}  // namespace migsched::k8s

#endif  // MIGSCHED_K8S_EXTENDER_POD_REQUESTS_H_
