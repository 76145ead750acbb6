#include "k8s/extender/pod_requests.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <optional>

#include "core/text.h"
#include "k8s/device_plugin/device_plugin.h"

namespace migsched::k8s {

using nlohmann::json;

const json* FindMember(const json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  if (auto it = object.find(key); it != object.end()) return &*it;
  for (auto it = object.begin(); it != object.end(); ++it) {
    const std::string& k = it.key();
    if (k.size() == key.size() && std::equal(k.begin(), k.end(), key.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) ==
                 std::tolower(static_cast<unsigned char>(b));
        })) {
      return &*it;
    }
  }
  return nullptr;
}

std::vector<std::string> PodInfo::instance_profiles() const {
  std::vector<std::string> out;
  for (const auto& c : containers) {
    for (const auto& r : c.requests) out.insert(out.end(), r.count, r.profile);
  }
  return out;
}

namespace {

constexpr int kMaxInstances = 1024;  // far above any node; keeps the count an int

// A whole-number quantity: "2", or a JSON integer. The API server writes
// quantities in canonical form, so "2" is what arrives; "2000m" or "1e3" are
// refused rather than guessed.
StatusOr<int> ParseCount(const json& v, const std::string& where) {
  long long n = -1;
  if (v.is_number_integer()) {
    n = v.get<long long>();
  } else if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (!s.empty() && s.size() <= 9 && std::all_of(s.begin(), s.end(), [](char c) {
          return std::isdigit(static_cast<unsigned char>(c));
        })) {
      n = std::stoll(s);
    } else {
      return InvalidArgumentError(where + ": '" + s + "' is not a whole number of MIG instances");
    }
  } else {
    return InvalidArgumentError(where + ": a quantity must be a string such as \"1\", got " +
                                std::string(v.type_name()));
  }
  if (n < 0) return InvalidArgumentError(where + ": a negative quantity");
  if (n > kMaxInstances) {
    return InvalidArgumentError(where + ": " + std::to_string(n) + " instances is more than " +
                                std::to_string(kMaxInstances));
  }
  return static_cast<int>(n);
}

// The MIG quantities of one resources map, by profile.
Status ReadMap(const json& resources, std::string_view which, const std::string& where,
               std::map<std::string, int>* out) {
  const json* m = FindMember(resources, which);
  if (m == nullptr || m->is_null()) return Status::Ok();
  if (!m->is_object()) {
    return InvalidArgumentError(where + "." + std::string(which) + " must be an object");
  }
  const std::string prefix = kMigResourcePrefix;
  for (auto it = m->begin(); it != m->end(); ++it) {
    if (it.key().rfind(prefix, 0) != 0) continue;
    const std::string profile = it.key().substr(prefix.size());
    auto n = ParseCount(it.value(), where + "." + std::string(which) + "['" + it.key() + "']");
    if (!n.ok()) return n.status();
    if (profile.empty()) {
      return InvalidArgumentError(where + "." + std::string(which) + ": '" + it.key() +
                                  "' names no profile");
    }
    (*out)[profile] = *n;
  }
  return Status::Ok();
}

// The MIG requests of one container ("limits" win; "requests" alone are read
// the same; where both name a profile they must agree).
StatusOr<std::vector<MigRequest>> ContainerRequests(const json& container,
                                                    const std::string& where) {
  std::vector<MigRequest> out;
  const json* res = FindMember(container, "resources");
  if (res == nullptr || res->is_null()) return out;
  if (!res->is_object()) return InvalidArgumentError(where + ".resources must be an object");
  std::map<std::string, int> limits, requests;
  if (Status st = ReadMap(*res, "limits", where + ".resources", &limits); !st.ok()) return st;
  if (Status st = ReadMap(*res, "requests", where + ".resources", &requests); !st.ok()) return st;
  std::map<std::string, int> merged = requests;
  for (const auto& [profile, n] : limits) {
    if (auto it = requests.find(profile); it != requests.end() && it->second != n) {
      return InvalidArgumentError(where + ".resources: requests (" + std::to_string(it->second) +
                                  ") and limits (" + std::to_string(n) + ") of " +
                                  kMigResourcePrefix + profile +
                                  " differ; an extended resource needs them equal");
    }
    merged[profile] = n;
  }
  for (const auto& [profile, n] : merged) {
    if (n > 0) out.push_back({profile, n});
  }
  return out;
}

std::string StringAt(const json& object, std::string_view key) {
  const json* v = FindMember(object, key);
  return v != nullptr && v->is_string() ? v->get<std::string>() : "";
}

}  // namespace

StatusOr<PodInfo> ParsePod(const json& pod) {
  if (!pod.is_object()) {
    return InvalidArgumentError("Pod must be an object, got " + std::string(pod.type_name()));
  }
  PodInfo info;
  const json* meta = FindMember(pod, "metadata");
  if (meta == nullptr || !meta->is_object()) return InvalidArgumentError("Pod has no metadata");
  info.name = StringAt(*meta, "name");
  if (info.name.empty()) return InvalidArgumentError("Pod has no metadata.name");
  info.ns = StringAt(*meta, "namespace");
  if (info.ns.empty()) info.ns = "default";
  info.uid = StringAt(*meta, "uid");
  if (const json* a = FindMember(*meta, "annotations"); a != nullptr && a->is_object()) {
    for (auto it = a->begin(); it != a->end(); ++it) {
      if (it.value().is_string()) info.annotations[it.key()] = it.value().get<std::string>();
    }
  }
  // The on/off annotations: "True" or "yes" was read as false without a word (a trial's).
  for (const char* key : {kMigratableAnnotation, kLatencySensitiveAnnotation}) {
    auto it = info.annotations.find(key);
    if (it == info.annotations.end()) continue;
    if (const std::optional<bool> on = OnOffWord(it->second)) {
      it->second = *on ? "true" : "false";
    } else {
      info.bad_annotations.push_back(
          fmt::format("annotation {} must be true or false (or yes/no, on/off), got '{}'", key,
                      OneLine(it->second)));
      it->second = "false";
    }
  }
  if (const json* owners = FindMember(*meta, "ownerReferences"); owners && owners->is_array()) {
    for (const auto& o : *owners) {
      const json* controller = FindMember(o, "controller");
      if (controller != nullptr && controller->is_boolean() && controller->get<bool>()) {
        info.controller_kind = StringAt(o, "kind");
      }
    }
  }
  if (const json* status = FindMember(pod, "status"); status != nullptr) {
    info.phase = StringAt(*status, "phase");
  }
  const json* spec = FindMember(pod, "spec");
  if (spec == nullptr || spec->is_null()) return info;
  if (!spec->is_object()) return InvalidArgumentError("Pod spec must be an object");
  info.node_name = StringAt(*spec, "nodeName");
  if (const json* p = FindMember(*spec, "priority"); p != nullptr && p->is_number_integer()) {
    info.priority = p->get<int>();
  }
  for (std::string_view list : {"initContainers", "containers"}) {
    const json* cs = FindMember(*spec, list);
    if (cs == nullptr || cs->is_null()) continue;
    if (!cs->is_array()) {
      return InvalidArgumentError("Pod spec." + std::string(list) + " must be an array");
    }
    for (size_t i = 0; i < cs->size(); ++i) {
      const json& c = (*cs)[i];
      std::string cname = StringAt(c, "name");
      const std::string where = "container '" + (cname.empty() ? std::to_string(i) : cname) + "'";
      auto reqs = ContainerRequests(c, where);
      if (!reqs.ok()) return reqs.status();
      if (reqs->empty()) continue;
      if (list == "initContainers") {
        info.init_containers_with_mig.push_back(cname);
      } else {
        info.containers.push_back({cname, std::move(*reqs)});
      }
    }
  }
  return info;
}

}  // namespace migsched::k8s
