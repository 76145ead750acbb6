// frag-aware: the placement of §4 (steps 1-4) of docs/algorithms.md.
#include <cmath>
#include <optional>
#include <vector>

#include "sched/policies/policies.h"

namespace migsched {
namespace {

class FragAwarePolicy : public PlacementPolicy {
 public:
  explicit FragAwarePolicy(const SchedulerOptions& options) : options_(options) {}

  std::string_view name() const override { return "frag-aware"; }

  std::optional<Candidate> Choose(const Cluster& cluster, const PlacementRequest& req) override {
    // Step 1: candidates on every GPU.
    candidates_.clear();
    for (int gpu = 0; gpu < cluster.size(); ++gpu) {
      const int profile = req.ProfileOn(cluster.gpu(gpu).model());
      if (profile >= 0) AppendCandidates(cluster, gpu, profile, /*allow_create=*/true, &candidates_);
    }
    if (candidates_.empty()) return std::nullopt;

    // Step 2: conditional load balancing. Lazy: util(g) < t (§3).
    auto lazy = [&](const Candidate& c) { return cluster.gpu(c.gpu).utilization() < options_.threshold; };
    bool any_lazy = false;
    for (const Candidate& c : candidates_) any_lazy = any_lazy || lazy(c);

    // Step 3: fragmentation cost, minimum within 1e-9.
    auto score = [&](const Candidate& c) {
      const ConfigTable& t = cluster.gpu(c.gpu).table();
      const double post = t.FragCost(c.busy_after);
      return options_.frag_objective == FragObjective::kPost
                 ? post
                 : post - t.FragCost(cluster.gpu(c.gpu).busy_config());
    };
    double best_score = INFINITY;
    for (const Candidate& c : candidates_) {
      if (lazy(c) == any_lazy) best_score = std::min(best_score, score(c));
    }

    // Step 4: reuse, fewest destroys, lower util, lower GPU index, higher start.
    const Candidate* best = nullptr;
    for (const Candidate& c : candidates_) {
      if (lazy(c) != any_lazy || score(c) > best_score + 1e-9) continue;
      if (best == nullptr || Better(cluster, c, *best)) best = &c;
    }
    return *best;
  }

 private:
  static bool Better(const Cluster& cluster, const Candidate& a, const Candidate& b) {
    if (a.reuse != b.reuse) return a.reuse;
    if (a.destroys != b.destroys) return a.destroys < b.destroys;
    const int ua = cluster.gpu(a.gpu).busy_compute_slices() * cluster.gpu(b.gpu).model().compute_slices();
    const int ub = cluster.gpu(b.gpu).busy_compute_slices() * cluster.gpu(a.gpu).model().compute_slices();
    if (ua != ub) return ua < ub;  // util(a) < util(b), compared exactly
    if (a.gpu != b.gpu) return a.gpu < b.gpu;
    return a.start > b.start;
  }

  SchedulerOptions options_;
  std::vector<Candidate> candidates_;
};

}  // namespace

std::unique_ptr<PlacementPolicy> NewFragAwarePolicy(const SchedulerOptions& options) {
  return std::make_unique<FragAwarePolicy>(options);
}

}  // namespace migsched
