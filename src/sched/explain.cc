#include "sched/explain.h"

#include <algorithm>
#include <bit>
#include <climits>

namespace migsched {

AskedPart PartOfProfile(const std::string& profile, int count) {
  return {[profile](const GpuModel& m) { return m.FindProfile(profile); }, count};
}

NeverVerdict CanEverHold(const Cluster& c, const std::vector<int>& gpus,
                         const std::vector<AskedPart>& parts, const CapacityFn& capacity) {
  std::vector<int> most(parts.size(), 0);
  std::vector<int> fewest_slices(parts.size(), INT_MAX);
  std::vector<bool> offered(parts.size(), false);
  int have_slices = 0;
  for (int g : gpus) {
    const GpuModel& m = c.gpu(g).model();
    bool offers_some = false;
    for (size_t i = 0; i < parts.size(); ++i) {
      const int p = parts[i].profile_on(m);
      if (p < 0) continue;
      offers_some = true;
      offered[i] = true;
      most[i] += capacity(g, p);
      fewest_slices[i] = std::min(fewest_slices[i], m.profile(p).compute_slices);
    }
    if (offers_some) have_slices += m.compute_slices();
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    if (!offered[i]) return {NeverVerdict::Kind::kNotOffered, static_cast<int>(i), 0, 0};
  }
  int need = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (most[i] < parts[i].count) {
      return {NeverVerdict::Kind::kTooFew, static_cast<int>(i), most[i], 0};
    }
    need += fewest_slices[i] * parts[i].count;
  }
  if (need > have_slices) return {NeverVerdict::Kind::kTooManySlices, -1, have_slices, need};
  return {};
}

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

GpuRoom ExplainGpuRoom(const GpuState& gs, int profile) {
  using Kind = GpuRoom::Kind;
  const GpuModel& m = gs.model();
  const Profile& p = m.profile(profile);
  const int units = m.placement_units();
  // Busy instances cover their units; idle ones may be destroyed (§4).
  uint64_t busy = 0;
  for (const Instance& i : gs.instances()) {
    if (i.busy()) busy |= m.slots()[i.slot].unit_mask;
  }
  const uint64_t free = m.all_units_mask() & ~busy;
  if (free == 0) return {Kind::kNoSliceFree, "no slice free"};

  int busy_same = 0;  // busy instances sharing the profile's base (its max_instances)
  for (const Instance& i : gs.instances()) {
    if (i.busy() && m.BaseOf(i.profile) == m.BaseOf(profile)) ++busy_same;
  }
  if (p.max_instances > 0 && busy_same >= p.max_instances) {
    return {Kind::kInstanceLimit, "already " + std::to_string(busy_same) + " instances of " +
                                      p.name + ", the most a GPU has"};
  }
  if (gs.free_compute_slices() < p.compute_slices) {
    return {Kind::kComputeSlices, "only " + std::to_string(gs.free_compute_slices()) + " of " +
                                      std::to_string(m.compute_slices()) +
                                      " compute slices free, " + p.name + " needs " +
                                      std::to_string(p.compute_slices)};
  }
  const std::string free_text = "slices " + UnitRanges(free, units) + " free";
  if (std::popcount(free) < p.size()) {
    return {Kind::kTooFewSlices,
            free_text + " but " + p.name + " needs " + std::to_string(p.size())};
  }
  std::vector<std::string> taken;
  std::string blockers;
  for (int slot : m.SlotsOfProfile(profile)) {
    const Slot& s = m.slots()[slot];
    if ((s.unit_mask & busy) == 0) {
      // Free units; free indeed when the busy instances and this one form a valid configuration.
      if (gs.table().Add(gs.busy_config(), slot) != kInvalidConfig) return {};
      taken.push_back(UnitRanges(s.unit_mask, units));
      continue;
    }
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
  return {Kind::kFragmented,
          free_text + " but " + p.name + " goes only at " + where + " (" +
              (blockers.empty() ? "not beside the busy instances" : blockers + " busy") + ")"};
}

std::string NoPlacementReason(const GpuState& gs, int profile) {
  return ExplainGpuRoom(gs, profile).why;
}

std::vector<PartRoom> ExplainRoom(const Cluster& c, const std::vector<int>& gpus,
                                  const std::vector<AskedPart>& parts,
                                  const std::function<std::string(int gpu)>& unavailable) {
  std::vector<PartRoom> out(parts.size());
  for (size_t i = 0; i < parts.size(); ++i) {
    for (int g : gpus) {
      const GpuState& gs = c.gpu(g);
      const int p = parts[i].profile_on(gs.model());
      if (p < 0) continue;
      std::string why = unavailable ? unavailable(g) : std::string();
      if (why.empty()) why = NoPlacementReason(gs, p);
      if (why.empty()) {
        ++out[i].free_places;
      } else {
        out[i].blocked.push_back({g, std::move(why)});
      }
    }
  }
  return out;
}

}  // namespace migsched
