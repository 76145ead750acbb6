#include "k8s/engine/node_daemons_http.h"

#include <algorithm>

#include "cluster/http_node_daemons.h"

namespace migsched::k8s {

HttpNodeDaemons::HttpNodeDaemons(std::string origin, std::string token, std::string token_file,
                                 double timeout_s)
    : origin_(std::move(origin)),
      token_(std::move(token)),
      token_file_(std::move(token_file)),
      timeout_s_(timeout_s) {}

Status HttpNodeDaemons::Update(const std::vector<StaticNode>& nodes) {
  {
    std::lock_guard lock(mu_);
    if (inner_ && nodes.size() == nodes_.size() &&
        std::equal(nodes.begin(), nodes.end(), nodes_.begin(),
                   [](const StaticNode& a, const StaticNode& b) {
                     return a.name == b.name && a.url == b.url;
                   })) {
      return Status::Ok();
    }
  }
  HttpNodeDaemonsConfig c;
  c.origin = origin_;
  c.timeout_s = timeout_s_;
  for (const StaticNode& n : nodes) c.nodes.push_back({n.name, n.url, token_, token_file_});
  ASSIGN_OR_RETURN(std::unique_ptr<NodeDaemons> inner, NewHttpNodeDaemons(std::move(c)));
  std::lock_guard lock(mu_);
  nodes_ = nodes;
  inner_ = std::move(inner);
  return Status::Ok();
}

std::shared_ptr<NodeDaemons> HttpNodeDaemons::Inner() {
  std::lock_guard lock(mu_);
  return inner_;
}

namespace {
Status NoNodes(const std::string& node) {
  return NotFoundError("node " + node + ": no node daemon is known yet");
}
}  // namespace

StatusOr<NodeView> HttpNodeDaemons::State(const std::string& node) {
  auto in = Inner();
  if (!in) return NoNodes(node);
  return in->State(node);
}

Status HttpNodeDaemons::Reserve(const std::string& node, const std::string& key,
                                const std::vector<PlacementRef>& placements, double ttl_s,
                                bool anchors) {
  auto in = Inner();
  if (!in) return NoNodes(node);
  return in->Reserve(node, key, placements, ttl_s, anchors);
}

Status HttpNodeDaemons::Unreserve(const std::string& node, const std::string& key) {
  auto in = Inner();
  if (!in) return NoNodes(node);
  return in->Unreserve(node, key);
}

StatusOr<DaemonJobRecord> HttpNodeDaemons::Allocate(const std::string& node,
                                                    const BindRequest& request) {
  auto in = Inner();
  if (!in) return NoNodes(node);
  return in->Allocate(node, request);
}

Status HttpNodeDaemons::Release(const std::string& node, int64_t allocation_id) {
  auto in = Inner();
  if (!in) return NoNodes(node);
  return in->Release(node, allocation_id);
}

StatusOr<std::vector<StaticNode>> UpdatingDirectory::Nodes() {
  ASSIGN_OR_RETURN(std::vector<StaticNode> nodes, inner_->Nodes());
  RETURN_IF_ERROR(daemons_->Update(nodes));
  return nodes;
}

}  // namespace migsched::k8s
