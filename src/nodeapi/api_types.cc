#include "nodeapi/api_types.h"

#include <fmt/format.h>

namespace migsched {

std::string_view HolderKindName(HolderKind k) {
  switch (k) {
    case HolderKind::kIdle:
      return "idle";
    case HolderKind::kJob:
      return "job";
    case HolderKind::kAllocation:
      return "allocation";
    case HolderKind::kReservation:
      return "reservation";
    case HolderKind::kPlaceholder:
      return "placeholder";
  }
  return "?";
}

StatusOr<HolderKind> ParseHolderKind(std::string_view name) {
  for (HolderKind k : {HolderKind::kIdle, HolderKind::kJob, HolderKind::kAllocation,
                       HolderKind::kReservation, HolderKind::kPlaceholder}) {
    if (HolderKindName(k) == name) return k;
  }
  return InvalidArgumentError(
      fmt::format("unknown holder '{}' (idle, job, allocation, reservation or placeholder)", name));
}

}  // namespace migsched
