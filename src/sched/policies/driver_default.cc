// driver-default (§11): the lowest-index GPU that fits, and on it the first
// start in the driver's own order (GpuModel::DriverDefaultOrder: on A100/H100
// 6, 4, 5, 0..3 for the 1-unit 1g profile, highest start first otherwise;
// lowest first on A30 and RTX PRO 6000, per the catalog data).
#include <vector>

#include "sched/policies/policies.h"

namespace migsched {
namespace {

class DriverDefaultPolicy : public PlacementPolicy {
 public:
  std::string_view name() const override { return "driver-default"; }
  bool KeepIdleInstances() const override { return false; }

  std::optional<Candidate> Choose(const Cluster& cluster, const PlacementRequest& req) override {
    for (int gpu = 0; gpu < cluster.size(); ++gpu) {
      const GpuModel& m = cluster.gpu(gpu).model();
      const int profile = req.ProfileOn(m);
      if (profile < 0) continue;
      candidates_.clear();
      AppendCandidates(cluster, gpu, profile, /*allow_create=*/true, &candidates_);
      if (candidates_.empty()) continue;
      for (int start : m.DriverDefaultOrder(profile)) {
        for (const Candidate& c : candidates_) {
          if (c.start == start) return c;
        }
      }
    }
    return std::nullopt;
  }

 private:
  std::vector<Candidate> candidates_;
};

}  // namespace

std::unique_ptr<PlacementPolicy> NewDriverDefaultPolicy() {
  return std::make_unique<DriverDefaultPolicy>();
}

}  // namespace migsched
