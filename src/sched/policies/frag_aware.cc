// lb+frag (alias frag-aware): the placement of §4 (steps 1-4, 7) of
// docs/algorithms.md, scored by the metric chosen with --metric (§2).
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "sched/metrics.h"
#include "sched/policies/common.h"
#include "sched/policies/policies.h"

namespace migsched {
namespace {

class FragAwarePolicy : public PlacementPolicy {
 public:
  FragAwarePolicy(const SchedulerOptions& options, MetricKind metric, std::string name)
      : options_(options), scorer_(metric, options.demand_window), name_(std::move(name)) {}

  std::string_view name() const override { return name_; }

  void ObserveArrival(const Cluster& cluster, const Job& job) override {
    scorer_.ObserveArrival(cluster, job);
  }

  std::optional<Candidate> Choose(const Cluster& cluster, const PlacementRequest& req) override {
    // Steps 1 and 7: candidates on every GPU, the full-size reserve applied.
    CollectCandidates(cluster, req, /*allow_create=*/true, options_.reserve_full, &candidates_);
    if (candidates_.empty()) return std::nullopt;
    // Step 2: conditional load balancing.
    KeepLazyIfAny(cluster, options_.threshold, &candidates_);

    // Step 3: the metric's change (or its value after, --frag-objective post),
    // minimum within 1e-9.
    scores_.clear();
    double best_score = INFINITY;
    for (const Candidate& c : candidates_) {
      const GpuState& g = cluster.gpu(c.gpu);
      const double s = options_.frag_objective == FragObjective::kPost
                           ? scorer_.Value(g.table(), c.busy_after)
                           : scorer_.Delta(g.table(), g.busy_config(), c.busy_after);
      scores_.push_back(s);
      best_score = std::min(best_score, s);
    }

    // Step 4: reuse, fewest destroys, lower util, lower GPU index, higher start.
    const Candidate* best = nullptr;
    for (size_t i = 0; i < candidates_.size(); ++i) {
      if (scores_[i] > best_score + 1e-9) continue;
      if (best == nullptr || ReuseOrderBefore(cluster, candidates_[i], *best)) {
        best = &candidates_[i];
      }
    }
    return *best;
  }

 private:
  SchedulerOptions options_;
  MetricScorer scorer_;
  std::string name_;
  std::vector<Candidate> candidates_;
  std::vector<double> scores_;
};

}  // namespace

std::unique_ptr<PlacementPolicy> NewFragAwarePolicy(const SchedulerOptions& options,
                                                    MetricKind metric, std::string name) {
  return std::make_unique<FragAwarePolicy>(options, metric, std::move(name));
}

}  // namespace migsched
