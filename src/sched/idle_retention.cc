#include "sched/idle_retention.h"

#include <fmt/format.h>

namespace migsched {

void IdleRetention::Erase(const SlotKey& key) {
  auto it = idle_.find(key);
  if (it == idle_.end()) return;
  by_time_.erase({it->second.since_s, key.first, key.second});
  idle_.erase(it);
}

void IdleRetention::Set(const SlotKey& key, bool kept, double now_s) {
  Erase(key);
  idle_[key] = Idle{now_s, kept};
  by_time_.insert({now_s, key.first, key.second});
}

void IdleRetention::Track(const Plan& plan, double now_s) {
  for (const Step& s : plan.steps) {
    const SlotKey key{s.gpu, s.start};
    switch (s.kind) {
      case StepKind::kCreate:
        Set(key, false, now_s);
        break;
      case StepKind::kDestroy:
        Erase(key);
        break;
      case StepKind::kStart:
      case StepKind::kMigrateBegin: {
        auto it = idle_.find(key);
        if (it != idle_.end() && it->second.kept) ++kept_reuses_;
        Erase(key);
        break;
      }
      case StepKind::kRelease:
        Set(key, true, now_s);
        break;
      case StepKind::kMigrateEnd:
        Set({s.from_gpu, s.from_start}, true, now_s);
        break;
      case StepKind::kMigrateAbort:
        Set(key, false, now_s);
        break;
    }
  }
}

StatusOr<Plan> IdleRetention::Due(const Cluster& cluster, double now_s, double ttl_s) const {
  Plan plan;
  for (const auto& [since, gpu, start] : by_time_) {
    if (since + ttl_s > now_s) break;
    const GpuState& g = cluster.gpu(gpu);
    const int i = g.IndexAt(start);
    if (i < 0 || g.instances()[i].busy()) {
      return InternalError(
          fmt::format("idle-instance retention: GPU {} @{} is not an idle instance", gpu, start));
    }
    plan.steps.push_back({StepKind::kDestroy, gpu, g.instances()[i].profile, start, kNoJob});
  }
  return plan;
}

std::optional<double> IdleRetention::OldestSince() const {
  if (by_time_.empty()) return std::nullopt;
  return std::get<0>(*by_time_.begin());
}

}  // namespace migsched
