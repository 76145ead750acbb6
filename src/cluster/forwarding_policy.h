// ForwardingPolicy: a PlacementPolicy that forwards every call to a policy it
// does not own. The cluster planner builds Schedulers on fresh clusters every
// round (and on one node's GPUs for jobs bound to a node); they all use the
// controller's one policy object through this, so that its learned state
// (the demand-weighted window of §2) is shared and kept across rounds.
//
// Thread-safety: as the policy forwarded to.
#ifndef MIGSCHED_CLUSTER_FORWARDING_POLICY_H_
#define MIGSCHED_CLUSTER_FORWARDING_POLICY_H_

#include <memory>
#include <optional>
#include <string_view>

#include "sched/policy.h"

namespace migsched {

class ForwardingPolicy : public PlacementPolicy {
 public:
  // `inner` must outlive this object.
  explicit ForwardingPolicy(PlacementPolicy* inner) : inner_(inner) {}

  std::string_view name() const override { return inner_->name(); }
  std::optional<Candidate> Choose(const Cluster& cluster, const PlacementRequest& req) override {
    return inner_->Choose(cluster, req);
  }
  StatusOr<Plan> SetupPlan(const Cluster& cluster) override { return inner_->SetupPlan(cluster); }
  bool KeepIdleInstances() const override { return inner_->KeepIdleInstances(); }
  void ObserveArrival(const Cluster& cluster, const Job& job) override {
    inner_->ObserveArrival(cluster, job);
  }
  bool FeasibilityIsPerGpu() const override { return inner_->FeasibilityIsPerGpu(); }
  int Capacity(const Cluster& cluster, int gpu, int profile) const override {
    return inner_->Capacity(cluster, gpu, profile);
  }

 private:
  PlacementPolicy* inner_;
};

inline std::unique_ptr<PlacementPolicy> Forward(PlacementPolicy* inner) {
  return std::make_unique<ForwardingPolicy>(inner);
}

}  // namespace migsched

#endif  // MIGSCHED_CLUSTER_FORWARDING_POLICY_H_
