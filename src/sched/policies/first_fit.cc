// first-fit (§11): lowest GPU index, then lowest start. With --reserve-full
// (§4 step 7) the candidates that keep the full-size reserve come first.
#include <vector>

#include "sched/policies/common.h"
#include "sched/policies/policies.h"

namespace migsched {
namespace {

class FirstFitPolicy : public PlacementPolicy {
 public:
  explicit FirstFitPolicy(const SchedulerOptions& options) : reserve_full_(options.reserve_full) {}

  bool FeasibilityIsPerGpu() const override { return true; }
  std::string_view name() const override { return "first-fit"; }
  bool KeepIdleInstances() const override { return false; }

  std::optional<Candidate> Choose(const Cluster& cluster, const PlacementRequest& req) override {
    if (reserve_full_ > 0) {
      CollectCandidates(cluster, req, {.reserve_full = reserve_full_}, &candidates_);
      if (candidates_.empty()) return std::nullopt;
      return candidates_.front();  // ascending GPU, then start
    }
    for (int gpu : cluster.representatives()) {  // one GPU per distinct state
      const int profile = req.ProfileOn(cluster.gpu(gpu).model());
      if (profile < 0) continue;
      candidates_.clear();
      AppendCandidates(cluster, gpu, profile, /*allow_create=*/true, &candidates_);
      if (!candidates_.empty()) return candidates_.front();  // ascending start
    }
    return std::nullopt;
  }

 private:
  int reserve_full_;
  std::vector<Candidate> candidates_;
};

}  // namespace

std::unique_ptr<PlacementPolicy> NewFirstFitPolicy(const SchedulerOptions& options) {
  return std::make_unique<FirstFitPolicy>(options);
}

}  // namespace migsched
