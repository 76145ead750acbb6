// static (§11): a fixed layout per GPU, created once before the first job
// (mig-parted's all-balanced by default, from the catalog's static_layouts);
// a job waits for an idle instance of exactly its profile, lowest GPU index
// then lowest start first. It never reconfigures: the Kubernetes "mixed"
// strategy with a static mig-parted configuration.
#include <fmt/format.h>

#include <vector>

#include "sched/policies/policies.h"

namespace migsched {
namespace {

class StaticPolicy : public PlacementPolicy {
 public:
  explicit StaticPolicy(const SchedulerOptions& options) : layout_(options.static_layout) {}

  bool FeasibilityIsPerGpu() const override { return true; }
  std::string_view name() const override { return "static"; }

  StatusOr<Plan> SetupPlan(const Cluster& cluster) override {
    Plan plan;
    for (int gpu = 0; gpu < cluster.size(); ++gpu) {
      const GpuModel& m = cluster.gpu(gpu).model();
      const std::vector<std::pair<std::string, int>>* layout = nullptr;
      for (const auto& [name, instances] : m.spec().static_layouts) {
        if (name == layout_) layout = &instances;
      }
      if (layout == nullptr) {
        return FailedPreconditionError(fmt::format(
            "GPU model '{}' has no static layout '{}' in the catalog", m.name(), layout_));
      }
      for (const auto& [profile, start] : *layout) {
        plan.steps.push_back({StepKind::kCreate, gpu, m.FindProfile(profile), start, kNoJob});
      }
    }
    return plan;
  }

  std::optional<Candidate> Choose(const Cluster& cluster, const PlacementRequest& req) override {
    for (int gpu : cluster.representatives()) {  // one GPU per distinct state
      const int profile = req.ProfileOn(cluster.gpu(gpu).model());
      if (profile < 0) continue;
      candidates_.clear();
      AppendCandidates(cluster, gpu, profile, /*allow_create=*/false, &candidates_);
      if (!candidates_.empty()) return candidates_.front();
    }
    return std::nullopt;
  }

  int Capacity(const Cluster& cluster, int gpu, int profile) const override {
    return cluster.gpu(gpu).CountProfile(profile);
  }

 private:
  std::string layout_;
  std::vector<Candidate> candidates_;
};

}  // namespace

std::unique_ptr<PlacementPolicy> NewStaticPolicy(const SchedulerOptions& options) {
  return std::make_unique<StaticPolicy>(options);
}

}  // namespace migsched
