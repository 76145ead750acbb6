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
//   largest-free-run  §11 baseline: the candidate that shortens its GPU's
//                   largest run of contiguous free placement units the least,
//                   ties to the fuller GPU, lower GPU index, lower start;
//                   destroys instances (our reading of HAMi's dynamic MIG mode).
//   static          §11: a fixed layout per GPU created once; a job waits for an
//                   idle instance of exactly its profile; never reconfigures.
//                   `static` chooses the layouts from the workload's mix known
//                   in advance (--static-layout best-for-mix, BestStaticLayouts),
//                   `static-all-balanced` is mig-parted's all-balanced on every
//                   GPU (any --static-layout NAME of the catalog).
//
// Every policy but `static` honours --reserve-full (§4 step 7) through
// policies/common.h CollectCandidates; `static` never creates instances, so
// the reserve has nothing to protect there.
#ifndef MIGSCHED_SCHED_POLICIES_POLICIES_H_
#define MIGSCHED_SCHED_POLICIES_POLICIES_H_

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/config_table.h"
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
std::unique_ptr<PlacementPolicy> NewLargestFreeRunPolicy(const SchedulerOptions& options);
// `name` is what name() reports ("static" or "static-all-balanced").
std::unique_ptr<PlacementPolicy> NewStaticPolicy(const SchedulerOptions& options, std::string name);

// The length of the longest run of consecutive placement units 0..units-1
// whose bit is clear in `busy_units` (largest-free-run's score).
int LargestFreeRun(uint64_t busy_units, int placement_units);

// --static-layout value: the layouts chosen by BestStaticLayouts from the
// workload known in advance (PlacementPolicy::KnowWorkload), not a catalog name.
inline constexpr std::string_view kBestForMix = "best-for-mix";

// Compute slices the jobs of `jobs` that `model` can host ask of each of its
// base profiles (indexed like GpuModel::base_profiles()): count × the
// compute slices of the job's (base) profile on `model`, summed.
std::vector<double> StaticMixDemand(const GpuModel& model, const std::vector<Job>& jobs);

// The configurations of `table` to which no instance can be added.
std::vector<ConfigId> FullConfigurations(const ConfigTable& table);

// The `static` policy's layouts, per GPU of `cluster` a list of (base profile
// index, start). Per model, with D_k the demand of base profile k
// (`demand`, StaticMixDemand) and S the model's compute slices in the cluster,
// the target of k is T_k = S × D_k / Σ D; GPUs of the model take, in index
// order, the full configuration that adds the most "accepted compute slices"
// Σ_k min(supply_k, T_k) (supply_k: compute slices of k's instances laid so
// far), ties to more instances of demanded profiles, then the lower
// ConfigId (a greedy choice: the objective is a sum of capped linear terms).
std::vector<std::vector<std::pair<int, int>>> BestStaticLayouts(
    const Cluster& cluster, const std::map<const GpuModel*, std::vector<double>>& demand);

}  // namespace migsched

#endif  // MIGSCHED_SCHED_POLICIES_POLICIES_H_
