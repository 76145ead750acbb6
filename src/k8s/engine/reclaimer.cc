#include "k8s/engine/reclaimer.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "k8s/extender/extender.h"
#include "nodeapi/node_view.h"

namespace migsched::k8s {

using nlohmann::json;

Reclaimer::Reclaimer(KubeClient* api, NodeDaemons* daemons, NodeDirectory* directory)
    : api_(api), daemons_(daemons), directory_(directory) {}

StatusOr<Reclaimer::Round> Reclaimer::RunOnce() {
  auto nodes = directory_->Nodes();
  if (!nodes.ok()) return nodes.status();
  // The daemons first, then the pods: whatever a daemon showed was reserved
  // before the pods were listed.
  std::vector<std::pair<std::string, NodeView>> states;
  Round round;
  for (const StaticNode& n : *nodes) {
    auto st = daemons_->State(n.name);
    if (!st.ok()) {
      round.errors.push_back(n.name + ": " + st.status().message());
      continue;
    }
    states.emplace_back(n.name, std::move(*st));
  }
  auto pods = api_->ListPods("", std::string(kManagedLabel) + "=true");
  if (!pods.ok()) return pods.status().WithPrefix("listing pods");
  std::set<std::string> alive;  // owner keys of pods that still need their instances
  for (const json& p : *pods) {
    const std::string uid = p.value("metadata", json::object()).value("uid", std::string());
    const std::string phase = p.value("status", json::object()).value("phase", std::string());
    if (!uid.empty() && phase != "Succeeded" && phase != "Failed") alive.insert(PodOwnerKey(uid));
  }
  std::set<std::string> missing;
  auto gone = [&](const std::string& key) {
    if (key.rfind("k8s:", 0) != 0 || alive.count(key)) return false;
    missing.insert(key);
    return missing_before_.count(key) > 0;
  };
  for (const auto& [node, st] : states) {
    for (const AllocationOnNode& a : AllocationsOn(st)) {
      if (!gone(a.owner)) continue;
      Status s = daemons_->Release(node, a.id);
      if (s.ok()) {
        round.released.push_back(fmt::format("{} allocation {} of {}", node, a.id, a.owner));
      } else {
        round.errors.push_back(node + ": " + s.message());
      }
    }
    for (const ReservationView& rv : st.reservations) {
      const ReservationRecord& r = rv.record;
      if (!gone(r.owner)) continue;
      Status s = daemons_->Unreserve(node, r.owner);
      if (s.ok()) {
        round.released.push_back(fmt::format("{} reservation {}", node, r.owner));
      } else {
        round.errors.push_back(node + ": " + s.message());
      }
    }
  }
  missing_before_ = std::move(missing);
  for (const auto& r : round.released) spdlog::info("released {} (its pod is gone or ended)", r);
  return round;
}

}  // namespace migsched::k8s
