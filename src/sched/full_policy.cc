#include "sched/full_policy.h"

#include <string>
#include <utility>

namespace migsched {
namespace {

class FullPolicy : public PlacementPolicy {
 public:
  explicit FullPolicy(std::unique_ptr<PlacementPolicy> placement)
      : placement_(std::move(placement)) {}

  std::string_view name() const override { return "full"; }
  std::optional<Candidate> Choose(const Cluster& cluster, const PlacementRequest& req) override {
    return placement_->Choose(cluster, req);
  }
  StatusOr<Plan> SetupPlan(const Cluster& cluster) override {
    return placement_->SetupPlan(cluster);
  }
  bool KeepIdleInstances() const override { return placement_->KeepIdleInstances(); }
  void ObserveArrival(const Cluster& cluster, const Job& job) override {
    placement_->ObserveArrival(cluster, job);
  }
  bool Migrates() const override { return true; }
  bool FeasibilityIsPerGpu() const override { return placement_->FeasibilityIsPerGpu(); }
  int Capacity(const Cluster& cluster, int gpu, int profile) const override {
    return placement_->Capacity(cluster, gpu, profile);
  }

 private:
  std::unique_ptr<PlacementPolicy> placement_;
};

}  // namespace

std::unique_ptr<PlacementPolicy> NewFullPolicy(std::unique_ptr<PlacementPolicy> placement) {
  return std::make_unique<FullPolicy>(std::move(placement));
}

SchedulerOptions FullDefaults(SchedulerOptions options, const ExplicitOptions& set) {
  if (!set.metric) options.metric = std::string(kFullDefaultMetric);
  if (!set.reserve_full) options.reserve_full = kFullDefaultReserveFull;
  if (!set.reuse_first) options.reuse_first = kFullDefaultReuseFirst;
  if (!set.queue_order) options.queue_order = kFullDefaultQueueOrder;
  if (!set.max_skip_seconds) options.max_skip_seconds = kFullDefaultMaxSkipSeconds;
  if (!set.reservation_slack) options.reservation_slack = kFullDefaultReservationSlack;
  if (!set.reservation_unknown_ends)
    options.reservation_needs_ends = kFullDefaultReservationNeedsEnds;
  if (!set.evacuation) options.evacuation = kFullDefaultEvacuation;
  if (!set.threshold && options.max_wait_s >= 0) options.threshold = kFullDefaultAdmissionThreshold;
  return options;
}

}  // namespace migsched
