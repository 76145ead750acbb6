// `full`: the last rung of the ablation ladder (§11): the lb+frag placement
// of §4 (lazy/busy balancing, FragCost or the --metric, reuse of idle
// instances, full-size reserve) plus the migration planner of §6
// (sched/migration_planner.h), which the scheduler runs because Migrates()
// is true.
//
// Thread-safety: as any PlacementPolicy.
#ifndef MIGSCHED_SCHED_FULL_POLICY_H_
#define MIGSCHED_SCHED_FULL_POLICY_H_

#include <memory>

#include "sched/policy.h"

namespace migsched {

// `full` around `placement` (the lb+frag policy, sched/policy.h MakePolicy):
// every choice is delegated to it; only name() ("full") and Migrates() differ.
std::unique_ptr<PlacementPolicy> NewFullPolicy(std::unique_ptr<PlacementPolicy> placement);

}  // namespace migsched

#endif  // MIGSCHED_SCHED_FULL_POLICY_H_
