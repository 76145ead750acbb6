#include "io/catalog_loader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace migsched {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// Fields allowed at each level. `notes` and `$comment` are free text, ignored.
constexpr std::string_view kModelFields[] = {"schema",
                                             "name",
                                             "short_names",
                                             "aliases",
                                             "pci_device_ids",
                                             "confirmed",
                                             "placements_evidence",
                                             "compute_slices",
                                             "memory_slices",
                                             "placement_units",
                                             "pcie_max_gbps",
                                             "power",
                                             "driver_default",
                                             "static_layouts",
                                             "profiles",
                                             "source",
                                             "notes",
                                             "$comment"};
constexpr std::string_view kProfileFields[] = {"name",
                                               "id",
                                               "nvml_profile_index",
                                               "compute_slices",
                                               "memory_slices",
                                               "memory_mib",
                                               "max_instances",
                                               "placements",
                                               "variant_of",
                                               "notes",
                                               "$comment"};
constexpr std::string_view kPlacementFields[] = {"start", "size"};
constexpr std::string_view kDriverDefaultFields[] = {"highest_first", "orders", "$comment"};
constexpr std::string_view kLayoutEntryFields[] = {"profile", "start"};
constexpr std::string_view kPowerFields[] = {"idle_w", "max_w", "per_active_slice_w", "notes",
                                             "$comment"};

// Where in a file a value sits, for error messages: "GPU model 'A100 40GB',
// profile '3g.20gb'", optionally followed by a path inside the object.
struct Where {
  std::string text;

  Status Error(std::string_view what) const {
    return InvalidArgumentError(text.empty() ? std::string(what)
                                             : fmt::format("{}: {}", text, what));
  }
  Where Sub(std::string_view part) const {
    return Where{text.empty() ? std::string(part) : fmt::format("{}, {}", text, part)};
  }
};

template <size_t N>
Status CheckFields(const json& obj, const std::string_view (&allowed)[N], const Where& where) {
  for (const auto& [key, value] : obj.items()) {
    if (std::find(std::begin(allowed), std::end(allowed), key) != std::end(allowed)) continue;
    std::string list;
    for (std::string_view a : allowed) {
      if (a == "$comment") continue;
      if (!list.empty()) list += ", ";
      list += a;
    }
    return where.Error(fmt::format("unknown field '{}' (allowed: {})", key, list));
  }
  return Status();
}

StatusOr<const json*> RequireField(const json& obj, std::string_view key, const Where& where) {
  auto it = obj.find(key);
  if (it == obj.end()) return where.Error(fmt::format("field '{}' is missing", key));
  return &*it;
}

Status IntValue(const json& v, std::string_view key, int64_t lo, int64_t hi, const Where& where,
                int64_t* out) {
  if (!v.is_number_integer()) {
    return where.Error(fmt::format("field '{}' must be an integer", key));
  }
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi)) {
    return where.Error(fmt::format("field '{}' is out of range", key));
  }
  int64_t x = v.get<int64_t>();
  if (x < lo || x > hi) return where.Error(fmt::format("field '{}' is out of range", key));
  *out = x;
  return Status();
}

Status GetInt(const json& obj, std::string_view key, const Where& where, int* out) {
  ASSIGN_OR_RETURN(const json* v, RequireField(obj, key, where));
  int64_t x = 0;
  RETURN_IF_ERROR(IntValue(*v, key, std::numeric_limits<int>::min(),
                           std::numeric_limits<int>::max(), where, &x));
  *out = static_cast<int>(x);
  return Status();
}

Status GetInt64(const json& obj, std::string_view key, const Where& where, int64_t* out) {
  ASSIGN_OR_RETURN(const json* v, RequireField(obj, key, where));
  return IntValue(*v, key, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(),
                  where, out);
}

Status GetDouble(const json& obj, std::string_view key, const Where& where, double* out) {
  ASSIGN_OR_RETURN(const json* v, RequireField(obj, key, where));
  if (!v->is_number()) return where.Error(fmt::format("field '{}' must be a number", key));
  *out = v->get<double>();
  return Status();
}

Status GetBool(const json& obj, std::string_view key, const Where& where, bool* out) {
  ASSIGN_OR_RETURN(const json* v, RequireField(obj, key, where));
  if (!v->is_boolean()) return where.Error(fmt::format("field '{}' must be true or false", key));
  *out = v->get<bool>();
  return Status();
}

Status StringValue(const json& v, std::string_view key, const Where& where, std::string* out) {
  if (!v.is_string()) return where.Error(fmt::format("field '{}' must be a string", key));
  *out = v.get<std::string>();
  if (out->empty()) return where.Error(fmt::format("field '{}' must not be empty", key));
  return Status();
}

Status GetString(const json& obj, std::string_view key, const Where& where, std::string* out) {
  ASSIGN_OR_RETURN(const json* v, RequireField(obj, key, where));
  return StringValue(*v, key, where, out);
}

Status GetStringList(const json& obj, std::string_view key, const Where& where,
                     std::vector<std::string>* out) {
  ASSIGN_OR_RETURN(const json* v, RequireField(obj, key, where));
  if (!v->is_array()) return where.Error(fmt::format("field '{}' must be a list of strings", key));
  for (const json& e : *v) {
    if (!e.is_string() || e.get<std::string>().empty()) {
      return where.Error(fmt::format("field '{}' must be a list of non-empty strings", key));
    }
    out->push_back(e.get<std::string>());
  }
  return Status();
}

// "0x233010DE": 0x and 8 hex digits (device, then vendor), as NVIDIA mig-parted writes them.
bool IsPciDeviceId(const std::string& s) {
  if (s.size() != 10 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) return false;
  return std::all_of(s.begin() + 2, s.end(), [](unsigned char c) { return std::isxdigit(c) != 0; });
}

// `notes`: free text, a string or a list of strings; checked, not kept.
Status CheckNotes(const json& obj, const Where& where) {
  auto it = obj.find("notes");
  if (it == obj.end() || it->is_string()) return Status();
  if (it->is_array() &&
      std::all_of(it->begin(), it->end(), [](const json& e) { return e.is_string(); })) {
    return Status();
  }
  return where.Error("field 'notes' must be a string or a list of strings");
}

Status ParsePlacements(const json& p, const Where& where, std::vector<Placement>* out) {
  ASSIGN_OR_RETURN(const json* v, RequireField(p, "placements", where));
  if (!v->is_array()) return where.Error("field 'placements' must be a list of {start, size}");
  for (size_t i = 0; i < v->size(); ++i) {
    const json& e = (*v)[i];
    Where w{fmt::format("{}: placements[{}]", where.text, i)};
    if (!e.is_object()) return w.Error("must be an object {\"start\": N, \"size\": N}");
    RETURN_IF_ERROR(CheckFields(e, kPlacementFields, w));
    Placement pl;
    RETURN_IF_ERROR(GetInt(e, "start", w, &pl.start));
    RETURN_IF_ERROR(GetInt(e, "size", w, &pl.size));
    out->push_back(pl);
  }
  return Status();
}

Status ParseProfile(const json& p, size_t index, const Where& model, Profile* out) {
  if (!p.is_object()) return model.Error(fmt::format("profiles[{}] must be an object", index));
  Where unnamed = model.Sub(fmt::format("profiles[{}]", index));
  RETURN_IF_ERROR(GetString(p, "name", unnamed, &out->name));
  Where where = model.Sub(fmt::format("profile '{}'", out->name));
  RETURN_IF_ERROR(CheckFields(p, kProfileFields, where));
  RETURN_IF_ERROR(GetInt(p, "id", where, &out->id));
  RETURN_IF_ERROR(GetInt(p, "nvml_profile_index", where, &out->nvml_profile_index));
  RETURN_IF_ERROR(GetInt(p, "compute_slices", where, &out->compute_slices));
  RETURN_IF_ERROR(GetInt(p, "memory_slices", where, &out->memory_slices));
  RETURN_IF_ERROR(GetInt64(p, "memory_mib", where, &out->memory_mib));
  RETURN_IF_ERROR(GetInt(p, "max_instances", where, &out->max_instances));
  RETURN_IF_ERROR(ParsePlacements(p, where, &out->placements));
  if (p.contains("variant_of")) {
    RETURN_IF_ERROR(StringValue(p["variant_of"], "variant_of", where, &out->variant_of));
  }
  RETURN_IF_ERROR(CheckNotes(p, where));
  if (out->id < -1) return where.Error("field 'id' must be >= 0, or -1 if unknown");
  if (out->nvml_profile_index < -1) {
    return where.Error("field 'nvml_profile_index' must be >= 0, or -1 if unknown");
  }
  if (out->memory_mib < 0) return where.Error("field 'memory_mib' must be >= 0");
  return Status();
}

Status ParseDriverDefault(const json& obj, const Where& model, GpuModel::Spec* spec) {
  auto it = obj.find("driver_default");
  if (it == obj.end()) return Status();  // Spec default: highest start first, no explicit orders
  Where where = model.Sub("driver_default");
  if (!it->is_object()) return model.Error("field 'driver_default' must be an object");
  RETURN_IF_ERROR(CheckFields(*it, kDriverDefaultFields, where));
  RETURN_IF_ERROR(GetBool(*it, "highest_first", where, &spec->driver_default_highest_first));
  auto orders = it->find("orders");
  if (orders == it->end()) return Status();
  if (!orders->is_object()) {
    return where.Error("field 'orders' must be an object {\"<profile>\": [starts...]}");
  }
  for (const auto& [pname, starts] : orders->items()) {
    Where w = where.Sub(fmt::format("orders['{}']", pname));
    if (!starts.is_array()) return w.Error("must be a list of integers (placement starts)");
    std::vector<int> order;
    for (const json& s : starts) {
      if (!s.is_number_integer() || s.get<int64_t>() < 0 || s.get<int64_t>() > 63) {
        return w.Error("must be a list of integers (placement starts)");
      }
      order.push_back(s.get<int>());
    }
    spec->driver_default_orders.emplace_back(pname, std::move(order));
  }
  return Status();
}

Status ParsePower(const json& obj, const Where& model, GpuModel::Spec* spec) {
  auto it = obj.find("power");
  if (it == obj.end()) return Status();  // no energy estimate for this model
  Where where = model.Sub("power");
  if (!it->is_object()) {
    return model.Error("field 'power' must be an object {\"idle_w\": W, \"max_w\": W}");
  }
  RETURN_IF_ERROR(CheckFields(*it, kPowerFields, where));
  RETURN_IF_ERROR(CheckNotes(*it, where));
  GpuModel::Spec::Power p;
  RETURN_IF_ERROR(GetDouble(*it, "idle_w", where, &p.idle_w));
  if (it->contains("max_w")) RETURN_IF_ERROR(GetDouble(*it, "max_w", where, &p.max_w));
  if (it->contains("per_active_slice_w")) {
    RETURN_IF_ERROR(GetDouble(*it, "per_active_slice_w", where, &p.per_active_slice_w));
  }
  for (auto [key, v] :
       {std::pair<std::string_view, double>{"idle_w", p.idle_w},
        {"max_w", it->contains("max_w") ? p.max_w : 0},
        {"per_active_slice_w", it->contains("per_active_slice_w") ? p.per_active_slice_w : 0}}) {
    if (v < 0) return where.Error(fmt::format("field '{}' must be >= 0 (watts)", key));
    // One board draws a few kW at most: past 100 kW is a typo, and a value near the largest
    // double made every energy figure infinite.
    if (v > 100000) {
      return where.Error(fmt::format("field '{}' must be at most 100000 (watts), got {}", key, v));
    }
  }
  if (!it->contains("max_w") && !it->contains("per_active_slice_w")) {
    return where.Error("give 'max_w' (board power limit) or 'per_active_slice_w', or both");
  }
  spec->power = p;
  return Status();
}

Status ParseStaticLayouts(const json& obj, const Where& model, GpuModel::Spec* spec) {
  auto it = obj.find("static_layouts");
  if (it == obj.end()) return Status();
  if (!it->is_object()) {
    return model.Error("field 'static_layouts' must be an object {\"<name>\": [...]}");
  }
  for (const auto& [lname, entries] : it->items()) {
    Where where = model.Sub(fmt::format("static layout '{}'", lname));
    if (!entries.is_array()) return where.Error("must be a list of {profile, start}");
    std::vector<std::pair<std::string, int>> layout;
    for (size_t i = 0; i < entries.size(); ++i) {
      const json& e = entries[i];
      Where w{fmt::format("{}[{}]", where.text, i)};
      if (!e.is_object()) return w.Error("must be an object {\"profile\": ..., \"start\": N}");
      RETURN_IF_ERROR(CheckFields(e, kLayoutEntryFields, w));
      std::string pname;
      int start = 0;
      RETURN_IF_ERROR(GetString(e, "profile", w, &pname));
      RETURN_IF_ERROR(GetInt(e, "start", w, &start));
      layout.emplace_back(std::move(pname), start);
    }
    spec->static_layouts.emplace_back(lname, std::move(layout));
  }
  return Status();
}

StatusOr<GpuModel> ParseModel(const json& obj) {
  if (!obj.is_object()) {
    return InvalidArgumentError("the top level must be a JSON object (one GPU model per file)");
  }
  GpuModel::Spec spec;
  RETURN_IF_ERROR(GetString(obj, "name", Where{}, &spec.name));
  Where where{fmt::format("GPU model '{}'", spec.name)};
  RETURN_IF_ERROR(CheckFields(obj, kModelFields, where));
  std::string schema;
  RETURN_IF_ERROR(GetString(obj, "schema", where, &schema));
  if (schema != kGpuModelSchema) {
    return where.Error(
        fmt::format("field 'schema' is '{}'; this migsched reads '{}'", schema, kGpuModelSchema));
  }
  RETURN_IF_ERROR(GetStringList(obj, "short_names", where, &spec.short_names));
  RETURN_IF_ERROR(GetStringList(obj, "aliases", where, &spec.aliases));
  if (obj.contains("pci_device_ids")) {
    RETURN_IF_ERROR(GetStringList(obj, "pci_device_ids", where, &spec.pci_device_ids));
    for (const std::string& id : spec.pci_device_ids) {
      if (!IsPciDeviceId(id)) {
        return where.Error(fmt::format(
            "field 'pci_device_ids': '{}' is not a PCI id such as 0x233010DE (0x, the 4 hex "
            "digits of the device, then those of the vendor)",
            id));
      }
    }
  }
  RETURN_IF_ERROR(GetBool(obj, "confirmed", where, &spec.confirmed));
  if (obj.contains("placements_evidence")) {
    RETURN_IF_ERROR(StringValue(obj["placements_evidence"], "placements_evidence", where,
                                &spec.placements_evidence));
  }
  RETURN_IF_ERROR(GetInt(obj, "compute_slices", where, &spec.compute_slices));
  RETURN_IF_ERROR(GetInt(obj, "memory_slices", where, &spec.memory_slices));
  RETURN_IF_ERROR(GetInt(obj, "placement_units", where, &spec.placement_units));
  RETURN_IF_ERROR(GetDouble(obj, "pcie_max_gbps", where, &spec.pcie_max_gbps));
  if (obj.contains("source")) {
    RETURN_IF_ERROR(StringValue(obj["source"], "source", where, &spec.source));
  }
  RETURN_IF_ERROR(CheckNotes(obj, where));
  RETURN_IF_ERROR(ParsePower(obj, where, &spec));
  RETURN_IF_ERROR(ParseDriverDefault(obj, where, &spec));
  RETURN_IF_ERROR(ParseStaticLayouts(obj, where, &spec));

  ASSIGN_OR_RETURN(const json* profiles, RequireField(obj, "profiles", where));
  if (!profiles->is_array()) return where.Error("field 'profiles' must be a list of objects");
  for (size_t i = 0; i < profiles->size(); ++i) {
    Profile p;
    RETURN_IF_ERROR(ParseProfile((*profiles)[i], i, where, &p));
    spec.profiles.push_back(std::move(p));
  }
  return GpuModel::Create(std::move(spec));
}

// Parses `text`, rejecting an object with the same key twice (nlohmann keeps
// the last one silently, which would hide a typo or a merge accident).
StatusOr<json> ParseStrict(const std::string& text) {
  std::vector<std::set<std::string>> keys;
  std::string duplicate;
  json::parser_callback_t cb = [&](int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
        keys.emplace_back();
        break;
      case json::parse_event_t::object_end:
        if (!keys.empty()) keys.pop_back();
        break;
      case json::parse_event_t::key:
        if (!keys.empty() && !keys.back().insert(parsed.get<std::string>()).second &&
            duplicate.empty()) {
          duplicate = parsed.get<std::string>();
        }
        break;
      default:
        break;
    }
    return true;
  };
  try {
    json j = json::parse(text, cb);
    if (!duplicate.empty()) {
      return InvalidArgumentError(
          fmt::format("invalid JSON: key '{}' appears twice in one object", duplicate));
    }
    return j;
  } catch (const json::exception& e) {
    // e.what() is "[json.exception.parse_error.101] parse error at line 3, column 5: ...".
    std::string what = e.what();
    if (size_t close = what.find("] ");
        what.rfind("[json.exception.", 0) == 0 && close != std::string::npos) {
      what = what.substr(close + 2);
    }
    return InvalidArgumentError(fmt::format("invalid JSON: {}", what));
  }
}

bool SharesAName(const GpuModel& a, const Catalog& catalog, std::string* name) {
  std::vector<std::string> names = {a.name()};
  names.insert(names.end(), a.short_names().begin(), a.short_names().end());
  names.insert(names.end(), a.aliases().begin(), a.aliases().end());
  for (const std::string& n : names) {
    if (catalog.Find(n).ok()) {
      *name = n;
      return true;
    }
  }
  return false;
}

}  // namespace

StatusOr<GpuModel> ParseGpuModelJson(const std::string& text, const std::string& origin) {
  StatusOr<json> parsed = ParseStrict(text);
  if (!parsed.ok()) return parsed.status().WithPrefix(origin);
  StatusOr<GpuModel> model = ParseModel(*parsed);
  if (!model.ok()) return model.status().WithPrefix(origin);
  return model;
}

StatusOr<GpuModel> LoadGpuModelFile(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    return NotFoundError(fmt::format("{}: cannot open: no such file", path));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError(fmt::format("{}: cannot open", path));
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return InvalidArgumentError(fmt::format("{}: read error", path));
  return ParseGpuModelJson(ss.str(), path);
}

Status LoadCatalogPath(const std::string& path, Catalog* catalog,
                       std::vector<std::string>* loaded) {
  std::error_code ec;
  std::vector<std::string> files;
  if (fs::is_directory(path, ec)) {
    for (const auto& entry : fs::directory_iterator(path, ec)) {
      if (entry.path().extension() == ".json" && entry.is_regular_file(ec)) {
        files.push_back(entry.path().string());
      }
    }
    if (ec) return NotFoundError(fmt::format("{}: cannot list: {}", path, ec.message()));
    if (files.empty()) {
      return NotFoundError(fmt::format("{}: no GPU model files (*.json) in this folder", path));
    }
    std::sort(files.begin(), files.end());
  } else if (fs::exists(path, ec)) {
    files.push_back(path);
  } else {
    return NotFoundError(fmt::format("{}: cannot open: no such file or folder", path));
  }

  // Parse every file and check the names among them and against the catalog
  // before adding any, so that a failing folder adds nothing.
  Catalog pending;
  std::vector<GpuModel> models;
  for (const std::string& f : files) {
    ASSIGN_OR_RETURN(GpuModel m, LoadGpuModelFile(f));
    std::string name;
    // The other model is named with its file (regression: catalog_clash_named_no_file, where a
    // --catalog file clashing with a bundled model said only "in the catalog").
    const Catalog* const looked_in[] = {catalog, &pending};
    for (const Catalog* in : looked_in) {
      if (!SharesAName(m, *in, &name)) continue;
      const GpuModel* other = *in->Find(name);
      const std::string& origin = in->OriginOf(other);
      return InvalidArgumentError(
          fmt::format("{}: GPU model '{}': name '{}' is already used by '{}' ({})", f, m.name(),
                      name, other->name(), origin.empty() ? "in the catalog" : origin));
    }
    RETURN_IF_ERROR(pending.Add(m, f).WithPrefix(f));
    models.push_back(std::move(m));
  }
  for (size_t i = 0; i < models.size(); ++i) {
    RETURN_IF_ERROR(catalog->Add(std::move(models[i]), files[i]).WithPrefix(files[i]));
  }
  if (loaded != nullptr) loaded->insert(loaded->end(), files.begin(), files.end());
  return Status();
}

nlohmann::ordered_json GpuModelToJson(const GpuModel& model) {
  using ojson = nlohmann::ordered_json;
  const GpuModel::Spec& s = model.spec();
  ojson j;
  j["schema"] = kGpuModelSchema;
  j["name"] = s.name;
  j["short_names"] = s.short_names;
  j["aliases"] = s.aliases;
  if (!s.pci_device_ids.empty()) j["pci_device_ids"] = s.pci_device_ids;
  j["confirmed"] = s.confirmed;
  if (!s.placements_evidence.empty()) j["placements_evidence"] = s.placements_evidence;
  j["compute_slices"] = s.compute_slices;
  j["memory_slices"] = s.memory_slices;
  j["placement_units"] = s.placement_units;
  j["pcie_max_gbps"] = s.pcie_max_gbps;
  if (const GpuModel::Spec::Power* p = model.power()) {
    j["power"] = {
        {"idle_w", p->idle_w}, {"max_w", p->max_w}, {"per_active_slice_w", p->per_active_slice_w}};
  }
  ojson orders = ojson::object();
  for (const auto& [pname, order] : s.driver_default_orders) orders[pname] = order;
  j["driver_default"] = {{"highest_first", s.driver_default_highest_first}, {"orders", orders}};
  ojson layouts = ojson::object();
  for (const auto& [lname, layout] : s.static_layouts) {
    ojson entries = ojson::array();
    for (const auto& [pname, start] : layout) {
      entries.push_back({{"profile", pname}, {"start", start}});
    }
    layouts[lname] = entries;
  }
  j["static_layouts"] = layouts;
  ojson profiles = ojson::array();
  for (const Profile& p : s.profiles) {
    ojson pj;
    pj["name"] = p.name;
    pj["id"] = p.id;
    pj["nvml_profile_index"] = p.nvml_profile_index;
    pj["compute_slices"] = p.compute_slices;
    pj["memory_slices"] = p.memory_slices;
    pj["memory_mib"] = p.memory_mib;
    pj["max_instances"] = p.max_instances;
    ojson pls = ojson::array();
    for (const Placement& pl : p.placements)
      pls.push_back({{"start", pl.start}, {"size", pl.size}});
    pj["placements"] = pls;
    if (!p.variant_of.empty()) pj["variant_of"] = p.variant_of;
    profiles.push_back(pj);
  }
  j["profiles"] = profiles;
  if (!s.source.empty()) j["source"] = s.source;
  return j;
}

}  // namespace migsched
