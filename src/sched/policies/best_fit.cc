// best-fit (§11): the fullest GPU that fits (highest util), ties to the lower
// GPU index; on it the lowest start.
#include <vector>

#include "sched/policies/policies.h"

namespace migsched {
namespace {

class BestFitPolicy : public PlacementPolicy {
 public:
  std::string_view name() const override { return "best-fit"; }
  bool KeepIdleInstances() const override { return false; }

  std::optional<Candidate> Choose(const Cluster& cluster, const PlacementRequest& req) override {
    std::optional<Candidate> best;
    for (int gpu = 0; gpu < cluster.size(); ++gpu) {
      const int profile = req.ProfileOn(cluster.gpu(gpu).model());
      if (profile < 0) continue;
      if (best) {
        // Skip GPUs that cannot beat the current best: util(gpu) <= util(best).
        const GpuState& g = cluster.gpu(gpu);
        const GpuState& b = cluster.gpu(best->gpu);
        if (g.busy_compute_slices() * b.model().compute_slices() <=
            b.busy_compute_slices() * g.model().compute_slices()) {
          continue;
        }
      }
      candidates_.clear();
      AppendCandidates(cluster, gpu, profile, /*allow_create=*/true, &candidates_);
      if (!candidates_.empty()) best = candidates_.front();
    }
    return best;
  }

 private:
  std::vector<Candidate> candidates_;
};

}  // namespace

std::unique_ptr<PlacementPolicy> NewBestFitPolicy() { return std::make_unique<BestFitPolicy>(); }

}  // namespace migsched
