#include "core/instance_list.h"

#include <fmt/format.h>

#include <charconv>

#include "core/text.h"

namespace migsched {
namespace {

std::string Units(int start, int size) {
  return size == 1 ? fmt::format("placement unit {}", start)
                   : fmt::format("placement units {}-{}", start, start + size - 1);
}

}  // namespace

StatusOr<std::vector<InstanceSpec>> ParseInstanceList(std::string_view list,
                                                      const GpuModel& model) {
  std::vector<InstanceSpec> out;
  std::vector<std::string> texts;
  if (TrimBlanks(list).empty()) return out;
  size_t pos = 0;
  int n = 0;
  while (true) {
    size_t comma = list.find(',', pos);
    std::string_view item =
        TrimBlanks(list.substr(pos, comma == std::string_view::npos ? list.npos : comma - pos));
    ++n;
    const std::string label = fmt::format("instance {} '{}'", n, item);
    const size_t at = item.rfind('@');
    if (item.empty() || at == std::string_view::npos || at == 0 || at + 1 == item.size()) {
      return InvalidArgumentError(fmt::format("{}: expected PROFILE@START, e.g. 3g.20gb@4", label));
    }
    const std::string_view name = item.substr(0, at);
    const std::string_view num = item.substr(at + 1);
    int start = 0;
    auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), start);
    if (ec != std::errc() || p != num.data() + num.size()) {
      return InvalidArgumentError(fmt::format("{}: start '{}' is not an integer", label, num));
    }
    const int profile = model.FindProfile(name);
    if (profile < 0) {
      std::vector<std::string> names;
      for (const Profile& pr : model.profiles()) names.push_back(pr.name);
      return InvalidArgumentError(fmt::format("{}: unknown profile '{}' on {} (profiles: {})",
                                              label, name, model.name(), fmt::join(names, ", ")));
    }
    const Profile& pr = model.profile(profile);
    const int slot = model.SlotOf(profile, start);
    if (slot < 0) {
      std::vector<int> starts;
      for (const Placement& pl : pr.placements) starts.push_back(pl.start);
      return InvalidArgumentError(
          fmt::format("{}: start {} is not a placement of {} (valid starts: {})", label, start,
                      pr.name, fmt::join(starts, ", ")));
    }
    const uint64_t units = model.slots()[slot].unit_mask;
    int same = 1;
    for (size_t i = 0; i < out.size(); ++i) {
      const int other = model.SlotOf(out[i].profile, out[i].start);
      const uint64_t shared = model.slots()[other].unit_mask & units;
      if (shared != 0) {
        int lo = 0;
        while (!(shared & (uint64_t{1} << lo))) ++lo;
        int hi = lo;
        while (hi + 1 < 64 && (shared & (uint64_t{1} << (hi + 1)))) ++hi;
        return InvalidArgumentError(fmt::format("{} overlaps instance {} '{}' ({})", label, i + 1,
                                                texts[i], Units(lo, hi - lo + 1)));
      }
      same += out[i].profile == profile;
    }
    if (same > pr.max_instances) {
      return InvalidArgumentError(fmt::format("{}: {} allows at most {} instance(s) per GPU", label,
                                              pr.name, pr.max_instances));
    }
    out.push_back({profile, start});
    texts.emplace_back(item);
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  int cs = 0;
  for (const InstanceSpec& in : out) cs += model.profile(in.profile).compute_slices;
  if (cs > model.compute_slices()) {
    return InvalidArgumentError(fmt::format("the instances use {} compute slices; {} has {}", cs,
                                            model.name(), model.compute_slices()));
  }
  return out;
}

StatusOr<GpuState> MakeGpuState(const GpuModel& model, const ConfigTable& table,
                                const std::vector<InstanceSpec>& instances, bool busy) {
  GpuState g(model, table);
  JobId job = 0;
  for (const InstanceSpec& in : instances) {
    RETURN_IF_ERROR(g.Create(in.profile, in.start));
    if (busy) RETURN_IF_ERROR(g.StartJob(in.profile, in.start, job++));
  }
  RETURN_IF_ERROR(g.CheckInvariants());
  return g;
}

}  // namespace migsched
