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
  return cluster.gpu(gpu).lazy(threshold);
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
  return Step4Before(cluster, {a.gpu, a.start, a.reuse, a.destroys},
                     {b.gpu, b.start, b.reuse, b.destroys});
}

}  // namespace migsched
