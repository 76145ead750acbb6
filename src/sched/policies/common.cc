#include "sched/policies/common.h"

#include <algorithm>
#include <vector>

namespace migsched {

void CollectCandidates(const Cluster& cluster, const PlacementRequest& req,
                       const CollectOptions& options, std::vector<Candidate>* out) {
  out->clear();
  ForEachCandidate(cluster, req, options, [out](const Candidate& c) { out->push_back(c); });
  ApplyFullSizeReserve(cluster, options.reserve_full, out);
}

bool IsLazy(const Cluster& cluster, int gpu, double threshold) {
  // utilization() is busy / total compute slices as a double: the same
  // expression as CollectCandidates' lazy/busy split.
  return cluster.gpu(gpu).utilization() < threshold;
}

void KeepLazyIfAny(const Cluster& cluster, double threshold, std::vector<Candidate>* candidates) {
  // In place (std::remove_if keeps the order of those it keeps): no copy.
  const bool any_lazy =
      std::any_of(candidates->begin(), candidates->end(),
                  [&](const Candidate& c) { return IsLazy(cluster, c.gpu, threshold); });
  if (!any_lazy) return;
  candidates->erase(
      std::remove_if(candidates->begin(), candidates->end(),
                     [&](const Candidate& c) { return !IsLazy(cluster, c.gpu, threshold); }),
      candidates->end());
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
