#include "nodeapi/node_view.h"

#include <algorithm>

namespace migsched {

HolderKind HolderOf(const InstanceView& in) { return in.busy ? in.holder : HolderKind::kIdle; }

std::string HolderKey(const InstanceView& in) {
  switch (HolderOf(in)) {
    case HolderKind::kIdle:
      return "";
    case HolderKind::kJob:
      return std::to_string(in.job);
    case HolderKind::kAllocation:
    case HolderKind::kReservation:
    case HolderKind::kPlaceholder:
      return in.owner;
  }
  return in.owner;
}

bool TakesPlacements(const GpuView& g) { return !g.draining && g.unreachable.empty(); }

std::vector<AllocationOnNode> AllocationsOn(const NodeView& v) {
  std::vector<AllocationOnNode> out;
  for (const GpuView& g : v.gpus) {
    for (const InstanceView& in : g.instances) {
      if (HolderOf(in) != HolderKind::kAllocation) continue;
      const bool seen = std::any_of(out.begin(), out.end(),
                                    [&](const AllocationOnNode& a) { return a.id == in.job; });
      if (!seen) out.push_back({in.job, in.owner});
    }
  }
  return out;
}

}  // namespace migsched
