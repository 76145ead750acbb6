#include "k8s/engine/fit_reason.h"

#include <bit>
#include <vector>

namespace migsched::k8s {

std::string UnitRanges(uint64_t mask, int units) {
  std::string out;
  for (int u = 0; u < units;) {
    if (((mask >> u) & 1) == 0) {
      ++u;
      continue;
    }
    int end = u;
    while (end + 1 < units && ((mask >> (end + 1)) & 1)) ++end;
    if (!out.empty()) out += ", ";
    out += end == u ? std::to_string(u) : std::to_string(u) + "-" + std::to_string(end);
    u = end + 1;
  }
  return out;
}

std::string NoPlacementReason(const GpuState& gs, int profile) {
  const GpuModel& m = gs.model();
  const Profile& p = m.profile(profile);
  const int units = m.placement_units();
  // Busy instances cover their units; idle ones may be destroyed (§4).
  uint64_t busy = 0;
  for (const Instance& i : gs.instances()) {
    if (i.busy()) busy |= m.slots()[i.slot].unit_mask;
  }
  const uint64_t free = m.all_units_mask() & ~busy;
  if (free == 0) return "no slice free";

  int busy_same = 0;  // busy instances sharing the profile's base (its max_instances)
  for (const Instance& i : gs.instances()) {
    if (i.busy() && m.BaseOf(i.profile) == m.BaseOf(profile)) ++busy_same;
  }
  if (p.max_instances > 0 && busy_same >= p.max_instances) {
    return "already " + std::to_string(busy_same) + " instances of " + p.name +
           ", the most a GPU has";
  }
  if (gs.free_compute_slices() < p.compute_slices) {
    return "only " + std::to_string(gs.free_compute_slices()) + " of " +
           std::to_string(m.compute_slices()) + " compute slices free, " + p.name + " needs " +
           std::to_string(p.compute_slices);
  }
  const std::string free_text = "slices " + UnitRanges(free, units) + " free";
  if (std::popcount(free) < p.size()) {
    return free_text + " but " + p.name + " needs " + std::to_string(p.size());
  }
  std::vector<std::string> taken;
  std::string blockers;
  for (int slot : m.SlotsOfProfile(profile)) {
    const Slot& s = m.slots()[slot];
    if ((s.unit_mask & busy) == 0) return "";  // this placement is free
    taken.push_back(UnitRanges(s.unit_mask, units));
    for (const Instance& i : gs.instances()) {
      if (!i.busy() || (m.slots()[i.slot].unit_mask & s.unit_mask) == 0) continue;
      const std::string b = m.profile(i.profile).name + " at " + std::to_string(i.start);
      if (blockers.find(b) == std::string::npos) blockers += (blockers.empty() ? "" : ", ") + b;
    }
  }
  std::string where;
  for (size_t k = 0; k < taken.size(); ++k) {
    where += (k == 0 ? "" : k + 1 == taken.size() ? " or " : ", ") + taken[k];
  }
  return free_text + " but " + p.name + " goes only at " + where + " (" + blockers + " busy)";
}

}  // namespace migsched::k8s
