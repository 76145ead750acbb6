// Factories of the built-in placement policies (one file each).
//
//   frag-aware      §4: lazy/busy split (threshold t), minimum ΔFragCost (or
//                   post-FragCost), reuse of idle instances, then fewest idle
//                   instances destroyed, lower util, lower GPU index, higher start.
//   first-fit       §11: lowest GPU index, then lowest start (the Kubernetes
//                   DRA driver's first match); destroys instances when jobs end.
//   best-fit        §11: the fullest GPU (highest util) that fits, ties to the
//                   lower index, then lowest start; destroys instances when jobs end.
//   driver-default  §11: lowest-index GPU that fits, and on it the driver's own
//                   start order (GpuModel::DriverDefaultOrder, from the catalog);
//                   destroys instances when jobs end.
//   static          §11: a fixed layout per GPU created once (mig-parted
//                   all-balanced by default); a job waits for an idle instance of
//                   exactly its profile; never reconfigures.
#ifndef MIGSCHED_SCHED_POLICIES_POLICIES_H_
#define MIGSCHED_SCHED_POLICIES_POLICIES_H_

#include <memory>

#include "sched/options.h"
#include "sched/policy.h"

namespace migsched {

std::unique_ptr<PlacementPolicy> NewFragAwarePolicy(const SchedulerOptions& options);
std::unique_ptr<PlacementPolicy> NewFirstFitPolicy();
std::unique_ptr<PlacementPolicy> NewBestFitPolicy();
std::unique_ptr<PlacementPolicy> NewDriverDefaultPolicy();
std::unique_ptr<PlacementPolicy> NewStaticPolicy(const SchedulerOptions& options);

}  // namespace migsched

#endif  // MIGSCHED_SCHED_POLICIES_POLICIES_H_
