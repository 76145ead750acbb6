// Helpers shared by the built-in policies: gathering the candidates of every
// GPU (§4 step 1) with the full-size reserve applied (§4 step 7), the lazy/busy
// split (§3, §4 step 2), and the tie-breaks of §4 step 4.
//
// Thread-safety: pure functions.
#ifndef MIGSCHED_SCHED_POLICIES_COMMON_H_
#define MIGSCHED_SCHED_POLICIES_COMMON_H_

#include <vector>

#include "sched/candidates.h"
#include "sched/policy.h"

namespace migsched {

// Replaces `out` with every candidate for one instance of `req` on every GPU
// of `cluster`, ascending GPU index then start; then drops those that break
// the full-size reserve of `reserve_full` GPUs unless all do
// (ApplyFullSizeReserve). Only the lowest-index GPU of each state group is
// looked at (Cluster::representatives()): O(distinct states × placements).
void CollectCandidates(const Cluster& cluster, const PlacementRequest& req, bool allow_create,
                       int reserve_full, std::vector<Candidate>* out);

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
