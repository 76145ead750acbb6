// The node daemons of a Kubernetes cluster as the cluster core's NodeDaemons
// (cluster/node_daemons.h), over their HTTP API (the cluster core's client,
// cluster/http_node_daemons.h, whose errors and token rules apply), for a
// set of nodes that may change: the node-agent pods found by NodeDirectory
// come and go. Update() gives the current list; a node not in it is
// kNotFound, as for the Slurm controller.
//
// Thread-safety: every method may be called from any thread; `mu_` guards
// `nodes_` and `inner_` only, never held during a daemon call (calls keep the
// client set they started with alive through a shared_ptr).
#ifndef MIGSCHED_K8S_ENGINE_NODE_DAEMONS_HTTP_H_
#define MIGSCHED_K8S_ENGINE_NODE_DAEMONS_HTTP_H_

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cluster/node_daemons.h"
#include "k8s/config.h"
#include "k8s/engine/node_directory.h"

namespace migsched::k8s {

class HttpNodeDaemons : public NodeDaemons {
 public:
  // `token` (or, when empty, the content of `token_file`) is every daemon's
  // bearer token; `origin` names the config in messages; `timeout_s` bounds
  // each call.
  HttpNodeDaemons(std::string origin, std::string token, std::string token_file, double timeout_s);

  // The nodes and their daemons' URLs now. A list equal to the last one
  // keeps the clients (and their connections).
  Status Update(const std::vector<StaticNode>& nodes);

  StatusOr<NodeView> State(const std::string& node) override;
  Status Reserve(const std::string& node, const std::string& key,
                 const std::vector<PlacementRef>& placements, double ttl_s, bool anchors) override;
  Status Unreserve(const std::string& node, const std::string& key) override;
  StatusOr<DaemonJobRecord> Allocate(const std::string& node, const BindRequest& request) override;
  Status Release(const std::string& node, int64_t allocation_id) override;

 private:
  std::shared_ptr<NodeDaemons> Inner();

  const std::string origin_, token_, token_file_;
  const double timeout_s_;
  std::mutex mu_;
  std::vector<StaticNode> nodes_;       // guarded by mu_
  std::shared_ptr<NodeDaemons> inner_;  // guarded by mu_
};

// A NodeDirectory that gives every list it returns to `daemons` (Update)
// before returning it, so that the daemons called are the nodes listed.
class UpdatingDirectory : public NodeDirectory {
 public:
  // Both must outlive this object.
  UpdatingDirectory(NodeDirectory* inner, HttpNodeDaemons* daemons)
      : inner_(inner), daemons_(daemons) {}
  StatusOr<std::vector<StaticNode>> Nodes() override;

 private:
  NodeDirectory* const inner_;
  HttpNodeDaemons* const daemons_;
};

}  // namespace migsched::k8s

#endif  // MIGSCHED_K8S_ENGINE_NODE_DAEMONS_HTTP_H_
