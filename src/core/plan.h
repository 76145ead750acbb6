// Plan: a scheduling decision as data, and ApplyPlan, the one function that
// changes a Cluster (style: decisions are returned, then applied and checked).
//
// Steps, applied in order:
//   kCreate  (gpu, profile, start)       create an idle instance   (1 reconfiguration)
//   kDestroy (gpu, profile, start)       destroy an idle instance  (1 reconfiguration)
//   kStart   (gpu, profile, start, job)  run `job` on that idle instance
//   kRelease (gpu, profile, start, job)  `job` ended; its instance becomes idle
//                                        (mid-copy: both ends of its move are released)
// Migration (§6, make-before-break), steps of the same plans:
//   kMigrateBegin (gpu, profile, start, job, from_gpu, from_start)
//       `job`, running on instance from_start of GPU from_gpu (the source),
//       also occupies the idle instance profile@start of GPU gpu (the target,
//       made by an earlier kCreate or reused) while its state is copied; both
//       are busy until the switch-over. Source and target must differ.
//   kMigrateEnd (gpu, profile, start, job, from_gpu, from_start)
//       switch-over: the job runs on the target only; the source becomes idle
//       (the planner's plans destroy it with a kDestroy right after).
//   kMigrateAbort (gpu, profile, start, job, from_gpu, from_start)
//       the move is abandoned before its switch-over (the daemon could not
//       make the target on the hardware): the job stays on its source only;
//       the target becomes idle.
// Holds (core/job.h Holder): kStart and kRelease carry `holder`; a step for a
// reservation or placeholder names its id in `job` with that kind.
// The simulator and the daemon apply every plan the same way.
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

enum class StepKind {
  kCreate,
  kDestroy,
  kStart,
  kRelease,
  kMigrateBegin,
  kMigrateEnd,
  kMigrateAbort
};
std::string_view StepKindName(StepKind k);

struct Step {
  StepKind kind = StepKind::kCreate;
  int gpu = 0;
  int profile = -1;              // index into the GPU's model profiles
  int start = 0;                 // placement units
  JobId job = kNoJob;            // kStart / kRelease / kMigrate*
  int from_gpu = -1;             // kMigrate*: the source instance's GPU
  int from_start = -1;           // kMigrate*: the source instance's start
  Holder holder = Holder::kJob;  // kStart / kRelease: the kind of `job`
  bool operator==(const Step&) const = default;
};

struct Plan {
  std::vector<Step> steps;
  bool empty() const { return steps.empty(); }
  // Number of kCreate + kDestroy steps (MIG reconfigurations).
  int reconfigurations() const;
};

// "create 3g.20gb@4 on GPU 1", "migrate-begin 1g.5gb@2 on GPU 0 (job 3, from GPU 1 @6)" etc.
// GPUs are named by Cluster::GpuName. `with_holder` false leaves out who the
// step is for (" (job 3)"): the text of a step for a hypothetical job.
std::string DescribeStep(const Step& step, const Cluster& cluster, bool with_holder = true);
std::string DescribePlan(const Plan& plan, const Cluster& cluster);

// Applies `plan` to `cluster` all-or-nothing: the steps run on copies of the
// GPUs they touch, every touched GPU is then checked against the §1
// invariants (GpuState::CheckInvariants), every migration role on them (and
// on the GPUs they point at) must be matched by its other end (same job,
// opposite role, pointing back), and only then committed. On any
// failure returns kInternal "plan step N (<step>): <reason>" and leaves the
// cluster unchanged: a rejected plan is a bug in the code that made it.
Status ApplyPlan(const Plan& plan, Cluster* cluster);

}  // namespace migsched

#endif  // MIGSCHED_CORE_PLAN_H_
