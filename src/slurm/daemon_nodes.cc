#include "slurm/daemon_nodes.h"

#include <fmt/format.h>

#include <map>

namespace migsched::slurm {
namespace {

// Until the node daemon's client library is in: every call says so.
class PendingNodeDaemons : public NodeDaemons {
 public:
  explicit PendingNodeDaemons(std::map<std::string, std::string> urls) : urls_(std::move(urls)) {}
  StatusOr<NodeState> State(const std::string& node) override { return Missing(node); }
  Status Reserve(const std::string& node, const std::string&, const std::vector<PlacementRef>&,
                 double) override {
    return Missing(node);
  }
  Status Unreserve(const std::string& node, const std::string&) override { return Missing(node); }
  StatusOr<NodeAllocation> Allocate(const std::string& node, const BindRequest&) override {
    return Missing(node);
  }
  Status Release(const std::string& node, int64_t) override { return Missing(node); }

 private:
  Status Missing(const std::string& node) const {
    auto it = urls_.find(node);
    if (it == urls_.end()) return NotFoundError(fmt::format("node {} is not configured", node));
    return UnavailableError(
        fmt::format("node {} ({}): no node API client in this build", node, it->second));
  }
  std::map<std::string, std::string> urls_;
};

}  // namespace

StatusOr<std::unique_ptr<NodeDaemons>> NewDaemonNodes(const ControllerConfig& config) {
  std::map<std::string, std::string> urls;
  for (const NodeEndpoint& n : config.nodes) urls[n.name] = n.url;
  return std::unique_ptr<NodeDaemons>(new PendingNodeDaemons(std::move(urls)));
}

}  // namespace migsched::slurm
