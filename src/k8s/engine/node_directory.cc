#include "k8s/engine/node_directory.h"

#include <algorithm>
#include <map>

namespace migsched::k8s {

using nlohmann::json;

StaticNodeDirectory::StaticNodeDirectory(std::vector<StaticNode> nodes) : nodes_(std::move(nodes)) {
  std::sort(nodes_.begin(), nodes_.end(),
            [](const StaticNode& a, const StaticNode& b) { return a.name < b.name; });
}

PodNodeDirectory::PodNodeDirectory(KubeClient* api, std::string ns, std::string label_selector,
                                   int port)
    : api_(api), ns_(std::move(ns)), selector_(std::move(label_selector)), port_(port) {}

StatusOr<std::vector<StaticNode>> PodNodeDirectory::Nodes() {
  auto pods = api_->ListPods("metadata.namespace=" + ns_, selector_);
  if (!pods.ok()) return pods.status().WithPrefix("listing the node agents");
  // node -> (creationTimestamp, url): the newest Running pod of each node.
  std::map<std::string, std::pair<std::string, std::string>> best;
  for (const json& p : *pods) {
    const json spec = p.value("spec", json::object());
    const json status = p.value("status", json::object());
    const std::string node = spec.value("nodeName", std::string());
    const std::string ip = status.value("podIP", std::string());
    if (node.empty() || ip.empty() || status.value("phase", std::string()) != "Running") continue;
    const std::string created =
        p.value("metadata", json::object()).value("creationTimestamp", std::string());
    const std::string host = ip.find(':') != std::string::npos ? "[" + ip + "]" : ip;
    const std::string url = "http://" + host + ":" + std::to_string(port_);
    auto it = best.find(node);
    if (it == best.end() || created > it->second.first) best[node] = {created, url};
  }
  std::vector<StaticNode> out;
  for (const auto& [node, v] : best) out.push_back({node, v.second});
  return out;
}

}  // namespace migsched::k8s
