#include "daemon/discovery.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <utility>

#include "daemon/nvml_backend.h"

namespace migsched {
namespace {

std::string PlacementsText(const std::vector<Placement>& ps) {
  std::string out;
  for (const Placement& p : ps)
    out += fmt::format("{}{}:{}", out.empty() ? "" : ",", p.start, p.size);
  return "{" + out + "}";
}

std::string GpuLabel(const BackendGpu& g) { return fmt::format("GPU {} ({})", g.index, g.name); }

// go-nvlib getMigMemorySizeGB (docs/mig-hardware.md §8.5): the profile's share of the
// device memory rounded up to 1/8, times the device memory in whole GB (rounded up).
int64_t MigMemoryGb(int64_t device_mib, int64_t profile_mib) {
  if (device_mib <= 0) return (profile_mib + 1023) / 1024;
  const double fraction = static_cast<double>(profile_mib) / static_cast<double>(device_mib);
  const double eighths = std::ceil(fraction * 8 - 1e-9) / 8;
  const int64_t total_gb = (device_mib + 1023) / 1024;
  return static_cast<int64_t>(std::llround(eighths * static_cast<double>(total_gb)));
}

// The media-extension suffix an NVML GI profile index stands for (nvml.h; docs/mig-hardware.md §1).
std::string IndexSuffix(int index) {
  switch (index) {
    case 0x7:  // 1_SLICE_REV1
    case 0x8:  // 2_SLICE_REV1
      return "+me";
    case 0xA:  // 1_SLICE_GFX
    case 0xB:
    case 0xC:
    case 0x11:
      return "+gfx";
    case 0xD:  // 1_SLICE_NO_ME
    case 0xE:
      return "-me";
    case 0xF:  // 1_SLICE_ALL_ME
    case 0x10:
      return "+me.all";
    default:
      return "";
  }
}

// The catalog profile each driver profile stands for (driver index → catalog profile), matched
// by NVML identity and shape, never by name (drivers and models name profiles differently, e.g.
// B200 and GB200, and profile memory sizes change between driver versions):
//   1. the same profile id and compute slices;
//   2. else the same NVML profile index (0x0 = 1_SLICE, 0x7 = 1_SLICE_REV1, …) and compute slices;
//   3. else the same compute slices, placement size and media variant (from the index), the
//      catalog profile with the nearest memory.
// Each catalog profile stands for at most one driver profile.
}  // namespace

std::map<size_t, const Profile*> MatchCatalog(const GpuModel& model,
                                              const std::vector<BackendProfile>& driver) {
  std::map<size_t, const Profile*> out;
  std::set<const Profile*> used;
  auto take = [&](size_t i, const auto& fits) {
    if (out.count(i) > 0) return;
    const Profile* best = nullptr;
    for (const Profile& c : model.profiles()) {
      if (c.id < 0 || used.count(&c) > 0 || !fits(driver[i], c)) continue;
      if (best == nullptr || std::llabs(c.memory_mib - driver[i].memory_mib) <
                                 std::llabs(best->memory_mib - driver[i].memory_mib)) {
        best = &c;
      }
    }
    if (best != nullptr) {
      out[i] = best;
      used.insert(best);
    }
  };
  auto first_size = [](const std::vector<Placement>& ps) { return ps.empty() ? 0 : ps[0].size; };
  for (size_t i = 0; i < driver.size(); ++i) {
    take(i, [](const BackendProfile& d, const Profile& c) {
      return c.id == d.id && c.compute_slices == d.slice_count;
    });
  }
  for (size_t i = 0; i < driver.size(); ++i) {
    take(i, [](const BackendProfile& d, const Profile& c) {
      return c.nvml_profile_index >= 0 && c.nvml_profile_index == d.nvml_profile_index &&
             c.compute_slices == d.slice_count;
    });
  }
  for (size_t i = 0; i < driver.size(); ++i) {
    take(i, [&](const BackendProfile& d, const Profile& c) {
      const std::string suffix = IndexSuffix(d.nvml_profile_index);
      const bool same_variant = c.nvml_profile_index >= 0
                                    ? IndexSuffix(c.nvml_profile_index) == suffix
                                    : c.name.ends_with(suffix);
      return c.compute_slices == d.slice_count &&
             first_size(c.placements) == first_size(d.placements) && same_variant;
    });
  }
  return out;
}

std::vector<std::string> Differences(const GpuModel& model,
                                     const std::vector<BackendProfile>& driver) {
  std::vector<std::string> out;
  const std::map<size_t, const Profile*> match = MatchCatalog(model, driver);
  std::map<const Profile*, const BackendProfile*> by_catalog;
  for (const auto& [i, c] : match) by_catalog[c] = &driver[i];
  for (const Profile& c : model.profiles()) {
    if (c.id < 0) continue;
    auto it = by_catalog.find(&c);
    if (it == by_catalog.end()) {
      out.push_back(fmt::format("profile {} (id {}) is not offered by the driver", c.name, c.id));
      continue;
    }
    const BackendProfile& d = *it->second;
    if (d.id != c.id) {
      out.push_back(fmt::format(
          "profile {} (id {}): the driver has it as profile id {} (matched by NVML index and "
          "shape)",
          c.name, c.id, d.id));
    }
    if (d.slice_count != c.compute_slices) {
      out.push_back(
          fmt::format("profile {} (id {}): {} compute slices in the catalog, {} in the "
                      "driver",
                      c.name, c.id, c.compute_slices, d.slice_count));
    }
    if (d.placements != c.placements) {
      out.push_back(
          fmt::format("profile {} (id {}): placements {} in the catalog, {} in the "
                      "driver",
                      c.name, c.id, PlacementsText(c.placements), PlacementsText(d.placements)));
    }
    if (d.instance_count != c.max_instances) {
      out.push_back(
          fmt::format("profile {} (id {}): at most {} instances in the catalog, {} in "
                      "the driver",
                      c.name, c.id, c.max_instances, d.instance_count));
    }
    if (d.memory_mib != c.memory_mib) {
      out.push_back(fmt::format("profile {} (id {}): {} MiB in the catalog, {} MiB in the driver",
                                c.name, c.id, c.memory_mib, d.memory_mib));
    }
    if (c.nvml_profile_index >= 0 && d.nvml_profile_index != c.nvml_profile_index && d.id == c.id) {
      out.push_back(
          fmt::format("profile {} (id {}): NVML index {:#x} in the catalog, {:#x} in "
                      "the driver",
                      c.name, c.id, c.nvml_profile_index, d.nvml_profile_index));
    }
  }
  for (size_t i = 0; i < driver.size(); ++i) {
    const BackendProfile& d = driver[i];
    if (match.count(i) == 0) {
      out.push_back(fmt::format(
          "the driver offers profile id {} (index {:#x}, {} compute slices, "
          "{} MiB, placements {}) that the catalog lacks",
          d.id, d.nvml_profile_index, d.slice_count, d.memory_mib, PlacementsText(d.placements)));
    }
  }
  return out;
}

namespace {

// A model with the driver's profiles; names, power and layouts from `base` when given.
StatusOr<GpuModel> ModelFromDriver(const BackendGpu& gpu, const GpuModel* base,
                                   const std::vector<BackendProfile>& driver) {
  GpuModel::Spec spec;
  int units = 0, slices = 0;
  for (const BackendProfile& d : driver) {
    slices = std::max(slices, d.slice_count);
    for (const Placement& p : d.placements) units = std::max(units, p.start + p.size);
  }
  if (base != nullptr) {
    spec = base->spec();
    spec.source = fmt::format(
        "driver (NVML) profiles and placements of {} over the catalog's "
        "'{}' names and power data",
        gpu.name, base->name());
  } else {
    spec.name = gpu.name;
    spec.aliases = {gpu.name};
    spec.compute_slices = slices;
    // The largest profile is taken to use every memory slice (docs/mig-hardware.md §8.5).
    spec.memory_slices = units;
    spec.placement_units = units;
    spec.confirmed = true;
    spec.source = fmt::format("driver (NVML) data of {}; not in the catalog", gpu.name);
  }
  spec.placement_units = units;
  spec.profiles.clear();
  // Base profiles first so that a variant can name its base.
  std::vector<const BackendProfile*> order;
  for (const BackendProfile& d : driver) order.push_back(&d);
  std::stable_sort(order.begin(), order.end(),
                   [](const BackendProfile* a, const BackendProfile* b) {
                     return IndexSuffix(a->nvml_profile_index).empty() &&
                            !IndexSuffix(b->nvml_profile_index).empty();
                   });
  std::map<const BackendProfile*, const Profile*> known_of;
  if (base != nullptr) {
    for (const auto& [i, c] : MatchCatalog(*base, driver)) known_of[&driver[i]] = c;
  }
  std::set<std::string> used;
  for (const BackendProfile* d : order) {
    if (d->placements.empty()) continue;  // nothing to place
    Profile p;
    auto k = known_of.find(d);
    const Profile* known = k != known_of.end() ? k->second : nullptr;
    const std::string suffix = IndexSuffix(d->nvml_profile_index);
    const std::string plain =
        fmt::format("{}g.{}gb", d->slice_count, MigMemoryGb(gpu.memory_mib, d->memory_mib));
    if (known != nullptr && known->compute_slices == d->slice_count) {
      p.name = known->name;
      p.variant_of = known->variant_of;
      p.memory_slices = known->memory_slices;
    } else {
      p.name = plain + suffix;
      p.memory_slices =
          d->placements.front().size * spec.memory_slices / std::max(1, spec.placement_units);
    }
    if (!suffix.empty() && p.variant_of.empty() && used.count(plain) > 0) p.variant_of = plain;
    if (!p.variant_of.empty() && used.count(p.variant_of) == 0) p.variant_of.clear();
    if (used.count(p.name) > 0) p.name += fmt::format("-id{}", d->id);
    p.id = d->id;
    p.nvml_profile_index = d->nvml_profile_index;
    p.compute_slices = d->slice_count;
    p.memory_mib = d->memory_mib;
    p.max_instances = d->instance_count;
    p.placements = d->placements;
    std::sort(p.placements.begin(), p.placements.end(),
              [](const Placement& a, const Placement& b) { return a.start < b.start; });
    used.insert(p.name);
    spec.profiles.push_back(std::move(p));
  }
  // Keep layouts and driver-default orders only where they still fit the driver's placements.
  auto starts_of = [&](const std::string& name) {
    std::vector<int> starts;
    for (const Profile& p : spec.profiles) {
      if (p.name != name) continue;
      for (const Placement& pl : p.placements) starts.push_back(pl.start);
    }
    return starts;
  };
  std::erase_if(spec.static_layouts, [&](const auto& layout) {
    return std::any_of(layout.second.begin(), layout.second.end(), [&](const auto& inst) {
      std::vector<int> starts = starts_of(inst.first);
      return std::find(starts.begin(), starts.end(), inst.second) == starts.end();
    });
  });
  std::erase_if(spec.driver_default_orders, [&](const auto& order) {
    std::vector<int> sorted = order.second;
    std::sort(sorted.begin(), sorted.end());
    return sorted != starts_of(order.first);
  });
  auto model = GpuModel::Create(spec);
  if (model.ok() || (spec.static_layouts.empty() && spec.driver_default_orders.empty())) {
    return model;
  }
  // A layout that no longer fits (overlap, compute slices): model the GPU without them.
  spec.static_layouts.clear();
  spec.driver_default_orders.clear();
  return GpuModel::Create(std::move(spec));
}

// A stable text of the driver's profiles: GPUs with equal data share one model.
std::string Fingerprint(const std::string& base, const BackendGpu& gpu,
                        const std::vector<BackendProfile>& driver) {
  std::string out = base + "|" + gpu.name + "|" + std::to_string(gpu.memory_mib);
  for (const BackendProfile& d : driver) {
    out += fmt::format("|{},{},{},{},{},{}", d.id, d.nvml_profile_index, d.slice_count,
                       d.instance_count, d.memory_mib, PlacementsText(d.placements));
  }
  return out;
}

bool AllDigits(const std::string& s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

}  // namespace

StatusOr<NodeInventory> DiscoverNode(MigBackend* backend, const Catalog& catalog,
                                     const std::vector<std::string>& selection) {
  ASSIGN_OR_RETURN(std::vector<BackendGpu> gpus, backend->ListGpus());
  std::set<int> chosen;
  if (selection.empty()) {
    for (const BackendGpu& g : gpus) chosen.insert(g.index);
  } else {
    std::string listed;
    for (const BackendGpu& g : gpus) {
      listed += fmt::format("{}{} ({})", listed.empty() ? "" : ", ", g.index, g.uuid);
    }
    if (listed.empty()) listed = "none";
    for (const std::string& want : selection) {
      int found = -1;
      if (AllDigits(want)) {
        for (const BackendGpu& g : gpus) {
          if (want.size() < 6 && g.index == std::stoi(want)) found = g.index;
        }
      } else if (want.rfind("GPU-", 0) == 0) {
        for (const BackendGpu& g : gpus) {
          if (g.uuid == want) found = g.index;
        }
      } else {
        return InvalidArgumentError(fmt::format(
            "GPU selection \"{}\" is neither an NVML index (0, 1, …) nor a GPU UUID (GPU-…)",
            want));
      }
      if (found < 0) {
        return NotFoundError(fmt::format("GPU selection \"{}\": the {} backend lists GPUs {}", want,
                                         backend->name(), listed));
      }
      chosen.insert(found);
    }
  }

  NodeInventory inv;
  std::map<std::string, const GpuModel*> shared_models;
  for (const BackendGpu& gpu : gpus) {
    if (chosen.count(gpu.index) == 0) continue;
    if (!gpu.mig_enabled) return MigNotEnabledError(gpu);
    ASSIGN_OR_RETURN(std::vector<BackendProfile> driver, backend->ListProfiles(gpu.index));
    if (driver.empty()) {
      return FailedPreconditionError(fmt::format(
          "{}: the driver reports no GPU-instance profile with a placement", GpuLabel(gpu)));
    }
    DiscoveredGpu d;
    d.gpu = gpu;
    auto known = catalog.Find(gpu.name);
    const GpuModel* base = known.ok() ? *known : nullptr;
    bool use_driver = base == nullptr;
    if (base == nullptr) {
      inv.notes.push_back(
          fmt::format("{}: not in the catalog; modelled from the driver's MIG "
                      "profiles and placements alone",
                      GpuLabel(gpu)));
    } else {
      for (const std::string& diff : Differences(*base, driver)) {
        inv.notes.push_back(
            fmt::format("{}: catalog model '{}' differs from the driver: {}; the "
                        "driver's data is used",
                        GpuLabel(gpu), base->name(), diff));
        use_driver = true;
      }
    }
    if (!use_driver) {
      d.model = base;
    } else {
      const std::string key = Fingerprint(base != nullptr ? base->name() : "", gpu, driver);
      auto it = shared_models.find(key);
      if (it != shared_models.end()) {
        d.model = it->second;
      } else {
        auto model = ModelFromDriver(gpu, base, driver);
        if (!model.ok()) {
          return FailedPreconditionError(
              fmt::format("{}: cannot model the driver's MIG profiles: {}", GpuLabel(gpu),
                          model.status().message()));
        }
        inv.owned_models.push_back(std::make_unique<GpuModel>(std::move(*model)));
        d.model = inv.owned_models.back().get();
        shared_models[key] = d.model;
      }
    }
    ASSIGN_OR_RETURN(d.instances, backend->ListInstances(gpu.index));
    for (const BackendInstance& inst : d.instances) {
      std::string profile = fmt::format("profile id {}", inst.profile_id);
      for (const Profile& p : d.model->profiles()) {
        if (p.id == inst.profile_id) profile = fmt::format("{} (profile id {})", p.name, p.id);
      }
      inv.notes.push_back(
          fmt::format("{}: existing GPU instance {}: {} at {}:{}, {}", GpuLabel(gpu), inst.gi_id,
                      profile, inst.placement.start, inst.placement.size,
                      inst.has_compute_instance ? inst.mig_uuid : "no compute instance"));
    }
    inv.gpus.push_back(std::move(d));
  }
  return inv;
}

}  // namespace migsched
