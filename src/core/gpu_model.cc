#include "core/gpu_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <utility>

#include "core/catalog.h"

namespace migsched {
namespace {

Status Bad(const GpuModel::Spec& s, const std::string& what) {
  return InvalidArgumentError(fmt::format("GPU model '{}': {}", s.name, what));
}
Status BadProfile(const GpuModel::Spec& s, const Profile& p, const std::string& what) {
  return InvalidArgumentError(
      fmt::format("GPU model '{}', profile '{}': {}", s.name, p.name, what));
}

// The valid configurations of `slots` (ConfigTable's rules: disjoint units, compute slices at
// most `compute`, each base profile at most its max_instances), counted depth-first up to `cap`
// (returns cap + 1 once there are more).
int64_t CountConfigurations(const std::vector<Slot>& slots, const std::vector<Profile>& profiles,
                            int compute, int64_t cap) {
  int64_t n = 0;
  std::vector<int> counts(profiles.size(), 0);
  auto dfs = [&](auto&& self, size_t from, uint64_t units, int cs) -> void {
    if (++n > cap) return;
    for (size_t k = from; k < slots.size() && n <= cap; ++k) {
      const Slot& s = slots[k];
      if ((s.unit_mask & units) != 0 || cs + s.compute_slices > compute ||
          counts[s.profile] >= profiles[s.profile].max_instances) {
        continue;
      }
      ++counts[s.profile];
      self(self, k + 1, units | s.unit_mask, cs + s.compute_slices);
      --counts[s.profile];
    }
  };
  dfs(dfs, 0, 0, 0);
  return n;
}

}  // namespace

StatusOr<GpuModel> GpuModel::Create(Spec spec) {
  GpuModel m;
  if (spec.name.empty()) return InvalidArgumentError("GPU model without a name");
  if (spec.compute_slices <= 0) return Bad(spec, "compute_slices must be > 0");
  if (spec.memory_slices <= 0) return Bad(spec, "memory_slices must be > 0");
  if (spec.placement_units <= 0 || spec.placement_units > 64) {
    return Bad(spec, fmt::format("placement_units must be in 1..64, got {}", spec.placement_units));
  }
  if (spec.pcie_max_gbps < 0) return Bad(spec, "pcie_max_gbps must be >= 0");
  if (spec.profiles.empty()) return Bad(spec, "no profiles");
  if (spec.power) {
    Spec::Power& pw = *spec.power;
    const bool has_max = pw.max_w >= 0, has_slice = pw.per_active_slice_w >= 0;
    if (!std::isfinite(pw.idle_w) || pw.idle_w < 0 || !std::isfinite(pw.max_w) ||
        !std::isfinite(pw.per_active_slice_w)) {
      return Bad(spec, "power: idle_w must be >= 0 and every value finite");
    }
    // One board draws at most a few kW (GB200's superchip about 2.7 kW): a value past 100 kW is
    // a typo, and one near the largest double makes every energy figure infinite.
    constexpr double kMaxBoardW = 100000;
    if (pw.idle_w > kMaxBoardW || pw.max_w > kMaxBoardW || pw.per_active_slice_w > kMaxBoardW) {
      return Bad(spec, fmt::format("power: every value must be at most {} W", kMaxBoardW));
    }
    if (!has_max && !has_slice) {
      return Bad(spec, "power: give max_w (board power limit) or per_active_slice_w, or both");
    }
    if (has_max && pw.max_w < pw.idle_w) {
      return Bad(spec, fmt::format("power: max_w {} is below idle_w {}", pw.max_w, pw.idle_w));
    }
    if (!has_max) pw.max_w = pw.idle_w + spec.compute_slices * pw.per_active_slice_w;
    if (!has_slice) pw.per_active_slice_w = (pw.max_w - pw.idle_w) / spec.compute_slices;
    if (pw.per_active_slice_w < 0 ||
        pw.idle_w + spec.compute_slices * pw.per_active_slice_w > pw.max_w * (1 + 1e-12)) {
      return Bad(spec,
                 fmt::format("power: idle_w {} + {} compute slices x per_active_slice_w {} "
                             "exceeds max_w {}",
                             pw.idle_w, spec.compute_slices, pw.per_active_slice_w, pw.max_w));
    }
  }

  std::set<std::string> names;
  for (Profile& p : spec.profiles) {
    if (p.name.empty()) return Bad(spec, "a profile without a name");
    if (!names.insert(p.name).second) return BadProfile(spec, p, "duplicate profile name");
    // Requests are looked up by their normalised name (NormalizeProfileName), so a profile
    // spelled otherwise could never be asked for (regression: catalog_profile_name_not_normal).
    if (const std::string normal = NormalizeProfileName(p.name); normal != p.name) {
      return BadProfile(spec, p,
                        fmt::format("write the name as requests are normalised: '{}' (lowercase, "
                                    "without a 'MIG-' prefix or surrounding spaces)",
                                    normal));
    }
    if (p.compute_slices <= 0 || p.compute_slices > spec.compute_slices) {
      return BadProfile(spec, p,
                        fmt::format("compute_slices {} outside 1..{} (the model's compute slices)",
                                    p.compute_slices, spec.compute_slices));
    }
    if (p.memory_slices <= 0 || p.memory_slices > spec.memory_slices) {
      return BadProfile(
          spec, p,
          fmt::format("memory_slices {} outside 1..{}", p.memory_slices, spec.memory_slices));
    }
    if (p.max_instances <= 0) return BadProfile(spec, p, "max_instances must be > 0");
    if (p.placements.empty()) return BadProfile(spec, p, "no placements");
    std::sort(p.placements.begin(), p.placements.end(),
              [](const Placement& a, const Placement& b) { return a.start < b.start; });
    for (size_t i = 0; i < p.placements.size(); ++i) {
      const Placement& pl = p.placements[i];
      if (pl.size <= 0) {
        return BadProfile(spec, p,
                          fmt::format("placement at start {} has size {}", pl.start, pl.size));
      }
      if (pl.size != p.placements.front().size) {
        return BadProfile(
            spec, p,
            fmt::format("placements have different sizes ({} at start {}, {} at start {})",
                        p.placements.front().size, p.placements.front().start, pl.size, pl.start));
      }
      if (pl.start < 0 || pl.start + pl.size > spec.placement_units) {
        return BadProfile(spec, p,
                          fmt::format("placement {}:{} does not fit the {}-unit grid", pl.start,
                                      pl.size, spec.placement_units));
      }
      if (i > 0 && pl.start == p.placements[i - 1].start) {
        return BadProfile(spec, p, fmt::format("duplicate placement start {}", pl.start));
      }
    }
    // Instances on disjoint placements must fit the GPU's memory whatever the layout, so each
    // placement covers at least its profile's share of the memory slices (every bundled model
    // does; regression: catalog_profile_memory_oversubscribed, where six 3-slice instances of a
    // 1-unit profile ran side by side on a 6-slice GPU).
    const int size = p.placements.front().size;
    if (int64_t{p.memory_slices} * spec.placement_units > int64_t{size} * spec.memory_slices) {
      const int64_t need =
          (int64_t{p.memory_slices} * spec.placement_units + spec.memory_slices - 1) /
          spec.memory_slices;
      return BadProfile(
          spec, p,
          fmt::format("memory_slices {} needs placements of at least {} of the {} units (its "
                      "share of the model's {} memory slices), its have {}: instances side by "
                      "side would hold more memory than the GPU has",
                      p.memory_slices, need, spec.placement_units, spec.memory_slices, size));
    }
    if (p.max_instances > static_cast<int>(p.placements.size())) {
      return BadProfile(spec, p,
                        fmt::format("max_instances {} is more than its {} placements",
                                    p.max_instances, p.placements.size()));
    }
  }

  const int n = static_cast<int>(spec.profiles.size());
  m.base_of_.assign(n, -1);
  for (int i = 0; i < n; ++i) {
    const Profile& p = spec.profiles[i];
    if (p.is_base()) {
      m.base_of_[i] = i;
      continue;
    }
    int b = -1;
    for (int j = 0; j < n; ++j) {
      if (spec.profiles[j].name == p.variant_of) b = j;
    }
    if (b < 0)
      return BadProfile(spec, p, fmt::format("variant of unknown profile '{}'", p.variant_of));
    const Profile& bp = spec.profiles[b];
    if (!bp.is_base()) {
      return BadProfile(spec, p,
                        fmt::format("variant of '{}', which is itself a variant", bp.name));
    }
    if (bp.compute_slices != p.compute_slices || bp.placements != p.placements) {
      return BadProfile(
          spec, p,
          fmt::format("variant of '{}' but its compute slices or placements differ", bp.name));
    }
    m.base_of_[i] = b;
  }
  for (int i = 0; i < n; ++i) {
    if (m.base_of_[i] == i) m.base_profiles_.push_back(i);
  }
  std::stable_sort(m.base_profiles_.begin(), m.base_profiles_.end(), [&](int a, int b) {
    const Profile& pa = spec.profiles[a];
    const Profile& pb = spec.profiles[b];
    if (pa.compute_slices != pb.compute_slices) return pa.compute_slices < pb.compute_slices;
    return pa.memory_slices < pb.memory_slices;
  });

  m.slots_of_base_.assign(n, {});
  for (int b : m.base_profiles_) {
    const Profile& p = spec.profiles[b];
    for (const Placement& pl : p.placements) {
      Slot s;
      s.profile = b;
      s.start = pl.start;
      s.size = pl.size;
      s.compute_slices = p.compute_slices;
      s.unit_mask = (pl.size >= 64 ? ~uint64_t{0} : ((uint64_t{1} << pl.size) - 1)) << pl.start;
      m.slots_of_base_[b].push_back(static_cast<int>(m.slots_.size()));
      m.slots_.push_back(s);
    }
  }
  if (m.slots_.size() > 64) {
    return Bad(spec, fmt::format("{} (base profile, placement) pairs; at most 64 are supported",
                                 m.slots_.size()));
  }
  // Every valid configuration is precomputed with its transitions (core/config_table.h), so
  // a model with too many would exhaust memory there, not fail here (regression:
  // catalog_model_with_too_many_configurations).
  if (CountConfigurations(m.slots_, spec.profiles, spec.compute_slices, kMaxConfigurations) >
      kMaxConfigurations) {
    return Bad(spec, fmt::format("more than {} valid configurations of its instances (the most the "
                                 "scheduler precomputes, docs/algorithms.md §1); give its profiles "
                                 "fewer placements or a lower max_instances",
                                 kMaxConfigurations));
  }

  for (const auto& [pname, order] : spec.driver_default_orders) {
    int idx = -1;
    for (int j = 0; j < n; ++j) {
      if (spec.profiles[j].name == pname) idx = j;
    }
    if (idx < 0)
      return Bad(spec, fmt::format("driver-default order for unknown profile '{}'", pname));
    std::vector<int> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int> starts;
    for (const Placement& pl : spec.profiles[idx].placements) starts.push_back(pl.start);
    if (sorted != starts) {
      return Bad(spec,
                 fmt::format("driver-default order for '{}' must list each of its {} starts once",
                             pname, starts.size()));
    }
  }

  m.spec_ = std::move(spec);
  for (const auto& [lname, layout] : m.spec_.static_layouts) {
    uint64_t used = 0;
    int cs = 0;
    for (const auto& [pname, start] : layout) {
      int idx = m.FindProfile(pname);
      if (idx < 0)
        return Bad(m.spec_, fmt::format("static layout '{}': unknown profile '{}'", lname, pname));
      int slot = m.SlotOf(idx, start);
      if (slot < 0) {
        return Bad(m.spec_, fmt::format("static layout '{}': {}@{} is not a valid placement", lname,
                                        pname, start));
      }
      if (used & m.slots_[slot].unit_mask) {
        return Bad(m.spec_, fmt::format("static layout '{}': {}@{} overlaps another instance",
                                        lname, pname, start));
      }
      used |= m.slots_[slot].unit_mask;
      cs += m.slots_[slot].compute_slices;
    }
    if (cs > m.spec_.compute_slices) {
      return Bad(m.spec_,
                 fmt::format("static layout '{}' needs {} compute slices, the model has {}", lname,
                             cs, m.spec_.compute_slices));
    }
  }
  return m;
}

int GpuModel::FindProfile(std::string_view name) const {
  for (size_t i = 0; i < spec_.profiles.size(); ++i) {  // the catalog's spelling: no copy
    if (spec_.profiles[i].name == name) return static_cast<int>(i);
  }
  const std::string wanted = NormalizeProfileName(name);  // core/catalog.h
  if (wanted == name) return -1;
  for (size_t i = 0; i < spec_.profiles.size(); ++i) {
    if (spec_.profiles[i].name == wanted) return static_cast<int>(i);
  }
  return -1;
}

int GpuModel::SlotOf(int profile, int start) const {
  if (profile < 0 || profile >= static_cast<int>(base_of_.size())) return -1;
  for (int s : slots_of_base_[base_of_[profile]]) {
    if (slots_[s].start == start) return s;
  }
  return -1;
}

uint64_t GpuModel::all_units_mask() const {
  return spec_.placement_units >= 64 ? ~uint64_t{0} : ((uint64_t{1} << spec_.placement_units) - 1);
}

std::vector<int> GpuModel::DriverDefaultOrder(int profile) const {
  const Profile& p = spec_.profiles[profile];
  for (const auto& [pname, order] : spec_.driver_default_orders) {
    if (pname == p.name) return order;
  }
  // A variant without its own order uses its base profile's explicit order.
  const Profile& base = spec_.profiles[base_of_[profile]];
  for (const auto& [pname, order] : spec_.driver_default_orders) {
    if (pname == base.name) return order;
  }
  std::vector<int> starts;
  for (const Placement& pl : p.placements) starts.push_back(pl.start);
  if (spec_.driver_default_highest_first) std::reverse(starts.begin(), starts.end());
  return starts;
}

}  // namespace migsched
