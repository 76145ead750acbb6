#include "core/catalog.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <tuple>
#include <vector>

namespace migsched {
namespace {

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

bool HasName(const GpuModel& m, std::string_view name) {
  if (EqualsIgnoreCase(m.name(), name)) return true;
  for (const auto& s : m.short_names()) {
    if (EqualsIgnoreCase(s, name)) return true;
  }
  for (const auto& s : m.aliases()) {
    if (EqualsIgnoreCase(s, name)) return true;
  }
  return false;
}

}  // namespace

std::string NormalizeProfileName(std::string_view name) {
  const size_t first = name.find_first_not_of(" \t");
  if (first == std::string_view::npos) return "";
  name = name.substr(first, name.find_last_not_of(" \t") - first + 1);
  std::string out(name);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (std::string_view prefix : {"nvidia.com/mig-", "mig-"}) {
    if (out.size() > prefix.size() && out.compare(0, prefix.size(), prefix) == 0) {
      out.erase(0, prefix.size());
      break;
    }
  }
  return out;
}

Status Catalog::Add(GpuModel model, std::string origin) {
  std::vector<std::string> names = {model.name()};
  names.insert(names.end(), model.short_names().begin(), model.short_names().end());
  names.insert(names.end(), model.aliases().begin(), model.aliases().end());
  for (const auto& existing : models_) {
    for (const auto& n : names) {
      if (HasName(*existing, n)) {
        return InvalidArgumentError(fmt::format("GPU model '{}': name '{}' is already used by '{}'",
                                                model.name(), n, existing->name()));
      }
    }
  }
  models_.push_back(std::make_unique<GpuModel>(std::move(model)));
  origins_.push_back(std::move(origin));
  return Status();
}

const std::string& Catalog::OriginOf(const GpuModel* model) const {
  static const std::string kNone;
  for (size_t i = 0; i < models_.size(); ++i) {
    if (models_[i].get() == model) return origins_[i];
  }
  return kNone;
}

StatusOr<const GpuModel*> Catalog::Find(std::string_view name) const {
  for (const auto& m : models_) {
    if (HasName(*m, name)) return static_cast<const GpuModel*>(m.get());
  }
  std::string known;
  for (const auto& m : models_) {
    if (!known.empty()) known += ", ";
    known += m->short_names().empty() ? m->name() : m->short_names().front();
  }
  return NotFoundError(fmt::format("unknown GPU model '{}' (known: {})", name, known));
}

StatusOr<std::string> Catalog::FindProfileName(std::string_view name) const {
  const std::string wanted = NormalizeProfileName(name);
  // (compute slices, memory MiB, name) of every distinct profile name.
  std::vector<std::tuple<int, int, std::string>> known;
  for (const auto& m : models_) {
    for (const Profile& p : m->profiles()) {
      if (p.name == wanted) return p.name;
      known.emplace_back(p.compute_slices, p.memory_mib, p.name);
    }
  }
  std::sort(known.begin(), known.end());
  std::string list;
  std::vector<std::string> listed;
  for (const auto& [cs, mib, pname] : known) {
    if (std::find(listed.begin(), listed.end(), pname) != listed.end()) continue;
    listed.push_back(pname);
    list += (list.empty() ? "" : ", ") + pname;
  }
  return NotFoundError(fmt::format("unknown profile '{}' (known: {})", name, list));
}

std::vector<const GpuModel*> Catalog::models() const {
  std::vector<const GpuModel*> out;
  for (const auto& m : models_) out.push_back(m.get());
  return out;
}

}  // namespace migsched
