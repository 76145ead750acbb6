#include "sched/policies/common.h"

namespace migsched {

void CollectCandidates(const Cluster& cluster, const PlacementRequest& req, bool allow_create,
                       int reserve_full, std::vector<Candidate>* out) {
  out->clear();
  for (int gpu : cluster.representatives()) {  // one GPU per distinct state
    const int profile = req.ProfileOn(cluster.gpu(gpu).model());
    if (profile >= 0) AppendCandidates(cluster, gpu, profile, allow_create, out);
  }
  ApplyFullSizeReserve(cluster, reserve_full, out);
}

bool IsLazy(const Cluster& cluster, int gpu, double threshold) {
  return cluster.gpu(gpu).utilization() < threshold;
}

void KeepLazyIfAny(const Cluster& cluster, double threshold, std::vector<Candidate>* candidates) {
  std::vector<Candidate> lazy;
  for (const Candidate& c : *candidates) {
    if (IsLazy(cluster, c.gpu, threshold)) lazy.push_back(c);
  }
  if (!lazy.empty()) candidates->swap(lazy);
}

bool ReuseOrderBefore(const Cluster& cluster, const Candidate& a, const Candidate& b) {
  if (a.reuse != b.reuse) return a.reuse;
  if (a.destroys != b.destroys) return a.destroys < b.destroys;
  const int ua =
      cluster.gpu(a.gpu).busy_compute_slices() * cluster.gpu(b.gpu).model().compute_slices();
  const int ub =
      cluster.gpu(b.gpu).busy_compute_slices() * cluster.gpu(a.gpu).model().compute_slices();
  if (ua != ub) return ua < ub;  // util(a) < util(b), compared exactly
  if (a.gpu != b.gpu) return a.gpu < b.gpu;
  return a.start > b.start;
}

}  // namespace migsched
