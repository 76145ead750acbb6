// lb (§11, the second rung of the ablation ladder): the lazy/busy split of §4
// step 2 (threshold t, §3) with first-fit inside: among the candidates on lazy
// GPUs (or, if none, on busy ones), the lowest GPU index, then the lowest
// start. No fragmentation score and, like first-fit, no idle-instance reuse:
// an instance is destroyed when its job ends. Honours --reserve-full (§4 step 7).
#include <optional>
#include <vector>

#include "sched/policies/common.h"
#include "sched/policies/policies.h"

namespace migsched {
namespace {

class LbPolicy : public PlacementPolicy {
 public:
  explicit LbPolicy(const SchedulerOptions& options) : options_(options) {}

  bool FeasibilityIsPerGpu() const override { return true; }
  std::string_view name() const override { return "lb"; }
  bool KeepIdleInstances() const override { return false; }

  std::optional<Candidate> Choose(const Cluster& cluster, const PlacementRequest& req) override {
    CollectCandidates(cluster, req, {.reserve_full = options_.reserve_full}, &candidates_);
    if (candidates_.empty()) return std::nullopt;
    KeepLazyIfAny(cluster, options_.threshold, &candidates_);
    return candidates_.front();  // ascending GPU, then start
  }

 private:
  SchedulerOptions options_;
  std::vector<Candidate> candidates_;
};

}  // namespace

std::unique_ptr<PlacementPolicy> NewLbPolicy(const SchedulerOptions& options) {
  return std::make_unique<LbPolicy>(options);
}

}  // namespace migsched
