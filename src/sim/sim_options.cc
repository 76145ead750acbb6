#include "sim/sim_options.h"

#include <fmt/format.h>

#include <cmath>

namespace migsched {

std::string_view SimModeName(SimMode mode) { return mode == SimMode::kFill ? "fill" : "online"; }

StatusOr<SimMode> ParseSimMode(std::string_view s) {
  if (s == "online") return SimMode::kOnline;
  if (s == "fill") return SimMode::kFill;
  return InvalidArgumentError(fmt::format("simulation mode '{}' is not one of online, fill", s));
}

Status SimOptions::Validate() const {
  if (!std::isfinite(reconfig_ms) || reconfig_ms < 0) {
    return InvalidArgumentError(
        fmt::format("reconfig_ms must be a finite number >= 0, got {}", reconfig_ms));
  }
  if (reconfig_latency != nullptr) {
    RETURN_IF_ERROR(reconfig_latency->Validate().WithPrefix("reconfig_latency"));
  }
  if (!std::isfinite(fill_target) || fill_target <= 0 || fill_target > 100) {
    return InvalidArgumentError(
        fmt::format("fill_target must be in (0, 100], got {}", fill_target));
  }
  if (!std::isfinite(progress_interval_s) || progress_interval_s <= 0) {
    return InvalidArgumentError(
        fmt::format("progress_interval_s must be > 0, got {}", progress_interval_s));
  }
  for (double t : snapshot_times) {
    if (!std::isfinite(t) || t < 0) {
      return InvalidArgumentError(fmt::format("snapshot_times must be finite and >= 0, got {}", t));
    }
  }
  return Status();
}

void SimOptions::TurnOnChecks() {
  self_check = true;
  stall_event_times = kCheckedStallEventTimes;
}

}  // namespace migsched
