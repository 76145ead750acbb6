// Plan: a scheduling decision as data, and ApplyPlan, the one function that
// changes a Cluster (style: decisions are returned, then applied and checked).
//
// Steps, applied in order:
//   kCreate  (gpu, profile, start)       create an idle instance   (1 reconfiguration)
//   kDestroy (gpu, profile, start)       destroy an idle instance  (1 reconfiguration)
//   kStart   (gpu, profile, start, job)  run `job` on that idle instance
//   kRelease (gpu, profile, start, job)  `job` ended; its instance becomes idle
// Migration (§6) will add steps of its own to the same plan (a later issue);
// the simulator and the daemon apply every plan the same way.
//
// Thread-safety: values.
#ifndef MIGSCHED_CORE_PLAN_H_
#define MIGSCHED_CORE_PLAN_H_

#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/job.h"
#include "core/status.h"

namespace migsched {

enum class StepKind { kCreate, kDestroy, kStart, kRelease };
std::string_view StepKindName(StepKind k);

struct Step {
  StepKind kind = StepKind::kCreate;
  int gpu = 0;
  int profile = -1;   // index into the GPU's model profiles
  int start = 0;      // placement units
  JobId job = kNoJob;  // kStart / kRelease
  bool operator==(const Step&) const = default;
};

struct Plan {
  std::vector<Step> steps;
  bool empty() const { return steps.empty(); }
  // Number of kCreate + kDestroy steps (MIG reconfigurations).
  int reconfigurations() const;
};

// "create 3g.20gb@4 on GPU 1" etc.
std::string DescribeStep(const Step& step, const Cluster& cluster);
std::string DescribePlan(const Plan& plan, const Cluster& cluster);

// Applies `plan` to `cluster` all-or-nothing: the steps run on copies of the
// GPUs they touch, every touched GPU is then checked against the §1
// invariants (GpuState::CheckInvariants), and only then committed. On any
// failure returns kInternal "plan step N (<step>): <reason>" and leaves the
// cluster unchanged: a rejected plan is a bug in the code that made it.
Status ApplyPlan(const Plan& plan, Cluster* cluster);

}  // namespace migsched

#endif  // MIGSCHED_CORE_PLAN_H_
