// Where the node daemons of a Kubernetes cluster are: a node name (the
// Kubernetes node's name, which kube-scheduler sends) and the daemon's URL.
// Either a list from the config, or the node-agent pods found through the API
// server: Running pods in a namespace with a label, one per node
// (spec.nodeName), at http://<status.podIP>:<port>.
//
// Thread-safety: Nodes() may be called from any thread.
#ifndef MIGSCHED_K8S_ENGINE_NODE_DIRECTORY_H_
#define MIGSCHED_K8S_ENGINE_NODE_DIRECTORY_H_

#include <string>
#include <vector>

#include "core/status.h"
#include "k8s/api/kube_client.h"
#include "k8s/config.h"

namespace migsched::k8s {

class NodeDirectory {
 public:
  virtual ~NodeDirectory() = default;
  // The nodes, sorted by name. An error when they cannot be listed now.
  virtual StatusOr<std::vector<StaticNode>> Nodes() = 0;
};

class StaticNodeDirectory : public NodeDirectory {
 public:
  explicit StaticNodeDirectory(std::vector<StaticNode> nodes);
  StatusOr<std::vector<StaticNode>> Nodes() override { return nodes_; }

 private:
  std::vector<StaticNode> nodes_;
};

class PodNodeDirectory : public NodeDirectory {
 public:
  // `api` must outlive the directory.
  PodNodeDirectory(KubeClient* api, std::string ns, std::string label_selector, int port);
  StatusOr<std::vector<StaticNode>> Nodes() override;

 private:
  KubeClient* const api_;
  const std::string ns_, selector_;
  const int port_;
};

}  // namespace migsched::k8s

#endif  // MIGSCHED_K8S_ENGINE_NODE_DIRECTORY_H_
