// first-fit (§11): lowest GPU index, then lowest start.
#include <vector>

#include "sched/policies/policies.h"

namespace migsched {
namespace {

class FirstFitPolicy : public PlacementPolicy {
 public:
  std::string_view name() const override { return "first-fit"; }
  bool KeepIdleInstances() const override { return false; }

  std::optional<Candidate> Choose(const Cluster& cluster, const PlacementRequest& req) override {
    for (int gpu = 0; gpu < cluster.size(); ++gpu) {
      const int profile = req.ProfileOn(cluster.gpu(gpu).model());
      if (profile < 0) continue;
      candidates_.clear();
      AppendCandidates(cluster, gpu, profile, /*allow_create=*/true, &candidates_);
      if (!candidates_.empty()) return candidates_.front();  // ascending start
    }
    return std::nullopt;
  }

 private:
  std::vector<Candidate> candidates_;
};

}  // namespace

std::unique_ptr<PlacementPolicy> NewFirstFitPolicy() { return std::make_unique<FirstFitPolicy>(); }

}  // namespace migsched
