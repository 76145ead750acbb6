// driver-default (§11): the lowest-index GPU that fits, and on it the first
// start in the driver's own order (GpuModel::DriverDefaultOrder: on A100/H100
// 6, 4, 5, 0..3 for the 1-unit 1g profile, highest start first otherwise;
// lowest first on A30 and RTX PRO 6000, per the catalog data). With
// --reserve-full (§4 step 7) only the candidates that keep the full-size
// reserve are considered, unless none does.
#include <vector>

#include "sched/policies/common.h"
#include "sched/policies/policies.h"

namespace migsched {
namespace {

class DriverDefaultPolicy : public PlacementPolicy {
 public:
  explicit DriverDefaultPolicy(const SchedulerOptions& options)
      : reserve_full_(options.reserve_full) {}

  bool FeasibilityIsPerGpu() const override { return true; }
  std::string_view name() const override { return "driver-default"; }
  bool KeepIdleInstances() const override { return false; }

  std::optional<Candidate> Choose(const Cluster& cluster, const PlacementRequest& req) override {
    if (reserve_full_ > 0) {
      CollectCandidates(cluster, req, {.reserve_full = reserve_full_}, &all_);
      if (all_.empty()) return std::nullopt;
      const int gpu = all_.front().gpu;  // the lowest GPU with a candidate
      candidates_.clear();
      for (const Candidate& c : all_) {
        if (c.gpu == gpu) candidates_.push_back(c);
      }
      return InDriverOrder(cluster.gpu(gpu).model(), candidates_.front().profile);
    }
    for (int gpu : cluster.representatives()) {  // one GPU per distinct state
      const GpuModel& m = cluster.gpu(gpu).model();
      const int profile = req.ProfileOn(m);
      if (profile < 0) continue;
      candidates_.clear();
      AppendCandidates(cluster, gpu, profile, /*allow_create=*/true, &candidates_);
      if (!candidates_.empty()) return InDriverOrder(m, profile);
    }
    return std::nullopt;
  }

 private:
  // The first of candidates_ (all on one GPU, not empty) in the driver's order.
  Candidate InDriverOrder(const GpuModel& m, int profile) const {
    for (int start : m.DriverDefaultOrder(profile)) {
      for (const Candidate& c : candidates_) {
        if (c.start == start) return c;
      }
    }
    return candidates_.front();  // unreachable: the order lists every start
  }

  int reserve_full_;
  std::vector<Candidate> all_;
  std::vector<Candidate> candidates_;
};

}  // namespace

std::unique_ptr<PlacementPolicy> NewDriverDefaultPolicy(const SchedulerOptions& options) {
  return std::make_unique<DriverDefaultPolicy>(options);
}

}  // namespace migsched
