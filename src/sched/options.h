// SchedulerOptions: the knobs of placement (§3, §4 of docs/algorithms.md).
//
// Each field has a default and its source. Validate() runs once, before a
// scheduler is built.
#ifndef MIGSCHED_SCHED_OPTIONS_H_
#define MIGSCHED_SCHED_OPTIONS_H_

#include <string>
#include <string_view>

#include "core/status.h"

namespace migsched {

// §4 step 3: score a candidate by the change of FragCost (the default) or by
// the FragCost after placing ("post", the other reading of the seed paper).
enum class FragObjective { kDelta, kPost };
std::string_view FragObjectiveName(FragObjective o);
StatusOr<FragObjective> ParseFragObjective(std::string_view s);  // "delta" | "post"

struct SchedulerOptions {
  // Lazy/busy threshold t (§3): a GPU is lazy when util(g) < t. Default 0.4,
  // the seed paper's tuned value; operators tune it by about ±0.1. In [0, 1].
  double threshold = 0.4;
  // §4 step 3 objective.
  FragObjective frag_objective = FragObjective::kDelta;
  // Name of the per-model fixed layout the `static` policy creates on every
  // GPU (GpuModel::Spec::static_layouts); "all-balanced" is mig-parted's.
  std::string static_layout = "all-balanced";

  // kInvalidArgument naming the field when out of range.
  Status Validate() const;
};

}  // namespace migsched

#endif  // MIGSCHED_SCHED_OPTIONS_H_
