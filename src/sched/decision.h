// The scheduler's decision vocabulary: where one instance of a job runs
// (InstanceRef) and one placement decided for a job (Decision). The queue scan,
// joint placement (sched/joint_placement.h), the migration planner
// (sched/migration.h) and every driver speak it.
//
// Units: GPU indexes are the cluster's (core/cluster.h), profiles are indexes
// into that GPU's model, starts are memory-slice indexes (docs/algorithms.md §1).
//
// Thread-safety: plain values.
#ifndef MIGSCHED_SCHED_DECISION_H_
#define MIGSCHED_SCHED_DECISION_H_

#include <vector>

#include "core/job.h"
#include "core/plan.h"

namespace migsched {

// Where one instance of a job runs.
struct InstanceRef {
  int gpu = -1;
  int profile = -1;
  int start = 0;
  bool operator==(const InstanceRef&) const = default;
};

// One successful placement: the plan applied and the instances the job got.
struct Decision {
  JobId job = kNoJob;
  Plan plan;
  std::vector<InstanceRef> instances;  // `count` of them
};

}  // namespace migsched

#endif  // MIGSCHED_SCHED_DECISION_H_
