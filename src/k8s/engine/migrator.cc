#include "k8s/engine/migrator.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <set>

#include "core/text.h"
#include "k8s/extender/extender.h"

namespace migsched::k8s {

using nlohmann::json;

Migrator::Migrator(ClusterEngine* engine, KubeClient* api, Evictor* evictor, double migrate_after_s,
                   int max_moved_pods)
    : engine_(engine),
      api_(api),
      evictor_(evictor),
      migrate_after_s_(migrate_after_s),
      max_moved_(max_moved_pods) {}

StatusOr<Migrator::Round> Migrator::RunOnce(double now) {
  Round round;
  std::vector<PodInfo> waiting = engine_->WaitingPods(migrate_after_s_);
  // Pods that are still waiting: unbound and present.
  std::vector<PodInfo> still;
  for (const PodInfo& w : waiting) {
    auto p = api_->GetPod(w.ns, w.name);
    if (!p.ok() && p.status().code() == StatusCode::kNotFound) {
      engine_->Forget(w.uid);
      continue;
    }
    if (!p.ok()) return p.status().WithPrefix("reading pod " + w.key());
    const json& spec = p->value("spec", json::object());
    const std::string uid = p->value("metadata", json::object()).value("uid", std::string());
    if (uid != w.uid || !spec.value("nodeName", std::string()).empty()) {
      engine_->Forget(w.uid);
      continue;
    }
    still.push_back(w);
  }
  std::set<std::string> waiting_uids;
  for (const PodInfo& w : still) waiting_uids.insert(w.uid);
  for (auto it = in_flight_.begin(); it != in_flight_.end();) {
    it = waiting_uids.count(it->first) ? std::next(it) : in_flight_.erase(it);
  }
  if (still.empty()) return round;

  ASSIGN_OR_RETURN(std::vector<json> pods,
                   api_->ListPods("", std::string(kManagedLabel) + "=true"));
  std::map<std::string, PodInfo> present;  // owner key -> pod, terminating ones included
  std::vector<PodInfo> running;            // bound, not ending, not terminating
  for (const json& p : pods) {
    auto info = ParsePod(p);
    if (!info.ok() || info->uid.empty()) continue;
    present[PodOwnerKey(info->uid)] = *info;
    const bool terminating = p.value("metadata", json::object()).contains("deletionTimestamp");
    if (!info->node_name.empty() && info->phase != "Succeeded" && info->phase != "Failed" &&
        !terminating) {
      running.push_back(*info);
    }
  }

  const PodInfo& w = still.front();
  if (auto it = in_flight_.find(w.uid); it != in_flight_.end()) {
    auto snapshot = engine_->View(/*fresh=*/true);
    std::vector<std::string> left;
    for (const std::string& key : it->second) {
      if (present.count(key) || !snapshot->view->AllocationsOf(key).empty()) left.push_back(key);
    }
    if (!left.empty()) {
      round.waiting.push_back(
          fmt::format("room for {}: waiting for {} to go", w.key(), fmt::join(left, ", ")));
      return round;
    }
    // The room is open; if another pod took it, plan again next round.
    in_flight_.erase(it);
    return round;
  }
  ASSIGN_OR_RETURN(std::vector<RequeueMove> moves, engine_->PlanMigration(w, running, max_moved_));
  if (moves.empty()) {
    round.waiting.push_back(fmt::format("room for {}: no migration opens any", w.key()));
    return round;
  }
  std::vector<std::string> moved;
  for (const RequeueMove& m : moves) {
    auto it = present.find(m.job);
    if (it == present.end()) continue;
    auto r = evictor_->Evict(it->second, now);
    if (!r.ok()) {
      round.waiting.push_back(
          fmt::format("evicting {}: {}", it->second.key(), r.status().message()));
      continue;
    }
    switch (r->outcome) {
      case Evictor::Outcome::kEvicted:
        round.evicted.push_back(fmt::format("{} ({})", it->second.key(), m.reason));
        moved.push_back(m.job);
        break;
      case Evictor::Outcome::kGone:
        moved.push_back(m.job);
        break;
      case Evictor::Outcome::kWaiting:
        round.waiting.push_back(fmt::format("evicting {}: {}", it->second.key(), r->reason));
        break;
    }
  }
  if (!moved.empty()) in_flight_[w.uid] = moved;
  for (const auto& e : round.evicted) spdlog::info("migration: evicted {}", OneLine(e));
  return round;
}

}  // namespace migsched::k8s
