#include "sched/options.h"

#include <cmath>

#include <fmt/format.h>

#include "sched/metrics.h"

namespace migsched {

std::string_view FragObjectiveName(FragObjective o) {
  return o == FragObjective::kPost ? "post" : "delta";
}

StatusOr<FragObjective> ParseFragObjective(std::string_view s) {
  if (s == "delta") return FragObjective::kDelta;
  if (s == "post") return FragObjective::kPost;
  return InvalidArgumentError(fmt::format("frag objective '{}' is not one of delta, post", s));
}

Status SchedulerOptions::Validate() const {
  if (!std::isfinite(threshold) || threshold < 0 || threshold > 1) {
    return InvalidArgumentError(fmt::format("threshold must be in [0, 1], got {}", threshold));
  }
  if (static_layout.empty()) return InvalidArgumentError("static layout name is empty");
  RETURN_IF_ERROR(ParseMetric(metric).status());
  if (demand_window < 1) {
    return InvalidArgumentError(
        fmt::format("demand window must be >= 1 jobs, got {}", demand_window));
  }
  if (reserve_full < 0) {
    return InvalidArgumentError(
        fmt::format("reserve-full must be >= 0 GPUs, got {}", reserve_full));
  }
  return Status();
}

}  // namespace migsched
