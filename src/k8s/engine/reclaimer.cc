#include "k8s/engine/reclaimer.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/text.h"
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
  auto add_alive = [&alive](const std::vector<json>& list) {
    for (const json& p : list) {
      const std::string uid = p.value("metadata", json::object()).value("uid", std::string());
      const std::string phase = p.value("status", json::object()).value("phase", std::string());
      if (!uid.empty() && phase != "Succeeded" && phase != "Failed") {
        alive.insert(PodOwnerKey(uid));
      }
    }
  };
  add_alive(*pods);
  std::set<std::string> missing, candidates;
  auto note = [&](const std::string& key) {
    if (key.rfind("k8s:", 0) != 0 || alive.count(key)) return;
    missing.insert(key);
    if (missing_before_.count(key) > 0) candidates.insert(key);
  };
  for (const auto& [node, st] : states) {
    for (const AllocationOnNode& a : AllocationsOn(st)) note(a.owner);
    for (const ReservationView& rv : st.reservations) note(rv.record.owner);
  }
  // The label is ordinary pod metadata that a pod's owner may remove: before anything is
  // released, the pods are listed again without it, and a pod still there and not ended keeps
  // its instances (regression: reclaim_of_a_pod_whose_label_was_removed released a running
  // pod's instance, which the next pod was then given too).
  if (!candidates.empty()) {
    auto all = api_->ListPods("", "");
    if (!all.ok()) return all.status().WithPrefix("listing pods");
    add_alive(*all);
    for (const std::string& key : candidates) {
      if (alive.count(key)) {
        spdlog::warn("{}: its pod has lost the {} label but still runs; its instances are kept",
                     OneLine(key), kManagedLabel);
        missing.erase(key);
      }
    }
  }
  auto gone = [&](const std::string& key) {
    return candidates.count(key) > 0 && alive.count(key) == 0;
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
  for (const auto& r : round.released)
    spdlog::info("released {} (its pod is gone or ended)", OneLine(r));
  return round;
}

}  // namespace migsched::k8s
