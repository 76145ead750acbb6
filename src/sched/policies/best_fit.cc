// best-fit (§11): the fullest GPU that fits (highest util), ties to the lower
// GPU index; on it the lowest start. With --reserve-full (§4 step 7) only the
// candidates that keep the full-size reserve are considered, unless none does.
#include <vector>

#include "sched/policies/common.h"
#include "sched/policies/policies.h"

namespace migsched {
namespace {

// util(a) > util(b), compared exactly.
bool Fuller(const GpuState& a, const GpuState& b) {
  return a.busy_compute_slices() * b.model().compute_slices() >
         b.busy_compute_slices() * a.model().compute_slices();
}

class BestFitPolicy : public PlacementPolicy {
 public:
  explicit BestFitPolicy(const SchedulerOptions& options) : reserve_full_(options.reserve_full) {}

  bool FeasibilityIsPerGpu() const override { return true; }
  std::string_view name() const override { return "best-fit"; }
  bool KeepIdleInstances() const override { return false; }

  std::optional<Candidate> Choose(const Cluster& cluster, const PlacementRequest& req) override {
    std::optional<Candidate> best;
    if (reserve_full_ > 0) {
      CollectCandidates(cluster, req, {.reserve_full = reserve_full_}, &candidates_);
      for (const Candidate& c : candidates_) {  // ascending GPU, then start
        if (!best || Fuller(cluster.gpu(c.gpu), cluster.gpu(best->gpu))) best = c;
      }
      return best;
    }
    for (int gpu : cluster.representatives()) {  // one GPU per distinct state
      const int profile = req.ProfileOn(cluster.gpu(gpu).model());
      if (profile < 0) continue;
      // Skip GPUs that cannot beat the current best: util(gpu) <= util(best).
      if (best && !Fuller(cluster.gpu(gpu), cluster.gpu(best->gpu))) continue;
      candidates_.clear();
      AppendCandidates(cluster, gpu, profile, /*allow_create=*/true, &candidates_);
      if (!candidates_.empty()) best = candidates_.front();
    }
    return best;
  }

 private:
  int reserve_full_;
  std::vector<Candidate> candidates_;
};

}  // namespace

std::unique_ptr<PlacementPolicy> NewBestFitPolicy(const SchedulerOptions& options) {
  return std::make_unique<BestFitPolicy>(options);
}

}  // namespace migsched
