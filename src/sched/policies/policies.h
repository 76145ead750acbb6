// Factories of the built-in placement policies (one file each). The ablation
// ladder of §11 is first-fit → lb → lb+frag → full (full, with migration, is
// registered in sched/policy.cc by its own files).
//
//   first-fit       §11: lowest GPU index, then lowest start (the Kubernetes
//                   DRA driver's first match); destroys instances when jobs end.
//   lb              §11 ladder: lazy/busy split (threshold t, §4 step 2), then
//                   first-fit among the kept candidates; destroys instances.
//   lb+frag         §4: lazy/busy split; minimum change of the --metric (§2,
//   (frag-aware)    default FragCost; or its value after, --frag-objective
//                   post) within 1e-9; reuse of idle instances, then fewest
//                   idle instances destroyed, lower util, lower GPU index,
//                   higher start. `frag-aware` is the same policy under its
//                   earlier name (it reports the name it was created with).
//   mfi             §11: minimum increase of blocked-placements (§2) over every
//                   GPU, ties to the lower GPU index then lower start; destroys
//                   instances.
//   best-fit        §11: the fullest GPU (highest util) that fits, ties to the
//                   lower index, then lowest start; destroys instances.
//   driver-default  §11: lowest-index GPU that fits, and on it the driver's own
//                   start order (GpuModel::DriverDefaultOrder, from the catalog);
//                   destroys instances when jobs end.
//   static          §11: a fixed layout per GPU created once (mig-parted
//                   all-balanced by default); a job waits for an idle instance of
//                   exactly its profile; never reconfigures.
//
// Every policy but `static` honours --reserve-full (§4 step 7) through
// policies/common.h CollectCandidates; `static` never creates instances, so
// the reserve has nothing to protect there.
#ifndef MIGSCHED_SCHED_POLICIES_POLICIES_H_
#define MIGSCHED_SCHED_POLICIES_POLICIES_H_

#include <memory>
#include <string>

#include "sched/metrics.h"
#include "sched/options.h"
#include "sched/policy.h"

namespace migsched {

// `name` is what name() reports ("lb+frag" or its alias "frag-aware").
std::unique_ptr<PlacementPolicy> NewFragAwarePolicy(const SchedulerOptions& options,
                                                    MetricKind metric, std::string name);
std::unique_ptr<PlacementPolicy> NewLbPolicy(const SchedulerOptions& options);
std::unique_ptr<PlacementPolicy> NewMfiPolicy(const SchedulerOptions& options);
std::unique_ptr<PlacementPolicy> NewFirstFitPolicy(const SchedulerOptions& options);
std::unique_ptr<PlacementPolicy> NewBestFitPolicy(const SchedulerOptions& options);
std::unique_ptr<PlacementPolicy> NewDriverDefaultPolicy(const SchedulerOptions& options);
std::unique_ptr<PlacementPolicy> NewStaticPolicy(const SchedulerOptions& options);

}  // namespace migsched

#endif  // MIGSCHED_SCHED_POLICIES_POLICIES_H_
