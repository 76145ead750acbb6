// Helpers shared by the built-in policies: gathering the candidates of every
// GPU (§4 step 1) with the full-size reserve applied (§4 step 7), the lazy/busy
// split (§3, §4 step 2), and the tie-breaks of §4 step 4.
//
// Thread-safety: pure functions.
#ifndef MIGSCHED_SCHED_POLICIES_COMMON_H_
#define MIGSCHED_SCHED_POLICIES_COMMON_H_

#include <algorithm>
#include <utility>
#include <vector>

#include "sched/candidates.h"
#include "sched/policy.h"

namespace migsched {

// How CollectCandidates gathers.
struct CollectOptions {
  bool allow_create = true;  // false: reuse candidates only (AppendCandidates)
  int reserve_full = 0;      // §4 step 7 full-size reserve, GPUs (<= 0: off)
  // As for AppendCandidates: false leaves Candidate::destroys at -1 where
  // idle instances would have to be counted.
  bool count_destroys = true;
  // true: ascending GPU index, then start. false: any order, for a policy
  // whose choice does not depend on it (a strict total order over
  // candidates); saves sorting the GPUs.
  bool ascending = true;
  // Which GPUs by the lazy/busy split of §3 (util(g) < threshold: lazy),
  // judged as IsLazy does: all, only lazy or only busy ones. With grouping on
  // the split is made per free-slices bucket, without visiting the others.
  enum class Load { kAll, kLazy, kBusy };
  Load load = Load::kAll;
  double threshold = 0.4;  // for load != kAll
};

// Replaces `out` with every candidate for one instance of `req` on every GPU
// of `cluster` (order: CollectOptions::ascending); then drops those that
// break the full-size reserve unless all do (ApplyFullSizeReserve). Only the
// lowest-index GPU of each state group is looked at
// (Cluster::representatives()), and with grouping on only the groups with
// enough free compute slices for the request
// (Cluster::RepresentativesWithFree): O(states that can hold it × placements).
void CollectCandidates(const Cluster& cluster, const PlacementRequest& req,
                       const CollectOptions& options, std::vector<Candidate>* out);

// CollectCandidates' candidates handed to `f(const Candidate&)` as they are
// found instead of stored, the full-size reserve NOT applied (it needs all
// of them first: use CollectCandidates when reserve_full > 0). The
// candidates of one GPU come together, in ascending start.
//
// `keep(gpu, profile)`, asked before a GPU's candidates are generated, may
// return false to skip that GPU (a caller that can tell from the GPU's state
// that none of its candidates can win).
template <typename F, typename Keep>
void ForEachCandidate(const Cluster& cluster, const PlacementRequest& req,
                      const CollectOptions& options, F&& f, Keep&& keep) {
  const auto visit = [&](int gpu, int profile) {
    if (!keep(gpu, profile)) return;
    ForEachCandidateOn(cluster, gpu, profile, options.allow_create, options.count_destroys, f);
  };
  using Load = CollectOptions::Load;
  // Whether GPUs with `busy` of `total` compute slices are wanted (IsLazy's test).
  const auto wanted = [&](int busy, int total) {
    if (options.load == Load::kAll) return true;
    const bool lazy = IsLazyUtil(busy, total, options.threshold);
    return lazy == (options.load == Load::kLazy);
  };
  if (!cluster.grouping()) {  // the naive reference: every GPU
    for (int gpu : cluster.representatives()) {
      const GpuState& g = cluster.gpu(gpu);
      const int profile = req.ProfileOn(g.model());
      if (profile >= 0 && wanted(g.busy_compute_slices(), g.model().compute_slices())) {
        visit(gpu, profile);
      }
    }
    return;
  }
  // One GPU per distinct state, and only the states with enough free compute
  // slices for the profile (Cluster::RepresentativesWithFree). The buckets
  // are unordered: for ascending order the GPUs are sorted first.
  std::vector<std::pair<int, int>> gpus;  // (GPU, profile), when sorting
  const std::vector<const GpuModel*>& models = cluster.models();
  for (int mi = 0; mi < static_cast<int>(models.size()); ++mi) {
    const GpuModel& m = *models[mi];
    const int profile = req.ProfileOn(m);
    if (profile < 0) continue;
    const std::vector<int>& slots = m.SlotsOfProfile(profile);
    if (slots.empty()) continue;
    for (int free = m.slots()[slots.front()].compute_slices; free <= m.compute_slices(); ++free) {
      if (!wanted(m.compute_slices() - free, m.compute_slices())) continue;
      for (int gpu : cluster.RepresentativesWithFree(mi, free)) {
        if (options.ascending) {
          gpus.emplace_back(gpu, profile);
        } else {
          visit(gpu, profile);
        }
      }
    }
  }
  std::sort(gpus.begin(), gpus.end());
  for (const auto& [gpu, profile] : gpus) visit(gpu, profile);
}

template <typename F>
void ForEachCandidate(const Cluster& cluster, const PlacementRequest& req,
                      const CollectOptions& options, F&& f) {
  ForEachCandidate(cluster, req, options, f, [](int, int) { return true; });
}

// §3: GPU `gpu` is lazy when util(g) < threshold.
bool IsLazy(const Cluster& cluster, int gpu, double threshold);

// §4 step 2: if any candidate is on a lazy GPU keep only those, otherwise keep
// all (they are all on busy GPUs). Order is kept.
void KeepLazyIfAny(const Cluster& cluster, double threshold, std::vector<Candidate>* candidates);

// §4 step 4 order: a reuse of an idle instance first, then fewer idle
// instances destroyed, lower util(g) (compared exactly), lower GPU index,
// higher start. True when `a` comes before `b`.
bool ReuseOrderBefore(const Cluster& cluster, const Candidate& a, const Candidate& b);

}  // namespace migsched

#endif  // MIGSCHED_SCHED_POLICIES_COMMON_H_
