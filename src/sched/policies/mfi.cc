// mfi (§11): minimum fragmentation increase after Zambianco et al. (arXiv
// 2511.18906): the candidate whose placement raises the blocked-placements
// metric (§2, sched/metrics.h) the least, over every GPU (no lazy/busy split).
//
// Tie-breaks (ours; the paper's are not available to us): lower GPU index,
// then lower start, as the greedy scan of the paper would meet them. Like the
// other baselines it creates an instance per job and destroys it when the job
// ends (no idle reuse). Honours --reserve-full (§4 step 7).
#include <optional>
#include <vector>

#include "sched/metrics.h"
#include "sched/policies/common.h"
#include "sched/policies/policies.h"

namespace migsched {
namespace {

class MfiPolicy : public PlacementPolicy {
 public:
  explicit MfiPolicy(const SchedulerOptions& options)
      : options_(options), scorer_(MetricKind::kBlockedPlacements, options.demand_window) {}

  bool FeasibilityIsPerGpu() const override { return true; }
  std::string_view name() const override { return "mfi"; }
  bool KeepIdleInstances() const override { return false; }

  std::optional<Candidate> Choose(const Cluster& cluster, const PlacementRequest& req) override {
    CollectCandidates(cluster, req, {.reserve_full = options_.reserve_full}, &candidates_);
    const Candidate* best = nullptr;
    double best_delta = 0;
    for (const Candidate& c : candidates_) {  // ascending GPU, then start: first minimum wins
      const GpuState& g = cluster.gpu(c.gpu);
      const double d = scorer_.Delta(g.table(), g.busy_config(), c.busy_after);
      if (best == nullptr || d < best_delta) {
        best = &c;
        best_delta = d;
      }
    }
    if (best == nullptr) return std::nullopt;
    return *best;
  }

 private:
  SchedulerOptions options_;
  MetricScorer scorer_;
  std::vector<Candidate> candidates_;
};

}  // namespace

std::unique_ptr<PlacementPolicy> NewMfiPolicy(const SchedulerOptions& options) {
  return std::make_unique<MfiPolicy>(options);
}

}  // namespace migsched
