#include "k8s/extender/wire.h"

#include <algorithm>

namespace migsched::k8s {

using nlohmann::json;

namespace {

StatusOr<json> ParseObject(std::string_view body, std::string_view what) {
  json j = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return InvalidArgumentError(std::string(what) + " is not valid JSON (" +
                                std::to_string(body.size()) + " bytes)");
  }
  if (!j.is_object()) {
    return InvalidArgumentError(std::string(what) + " must be a JSON object, got " + j.type_name());
  }
  return j;
}

json StringMap(const std::map<std::string, std::string>& m) {
  json out = json::object();
  for (const auto& [k, v] : m) out[k] = v;
  return out;
}

}  // namespace

StatusOr<ExtenderArgs> ParseExtenderArgs(std::string_view body) {
  auto j = ParseObject(body, "ExtenderArgs");
  if (!j.ok()) return j.status();
  ExtenderArgs args;
  const json* pod = FindMember(*j, "Pod");
  if (pod == nullptr || pod->is_null()) return InvalidArgumentError("ExtenderArgs has no Pod");
  auto info = ParsePod(*pod);
  if (!info.ok()) return info.status().WithPrefix("ExtenderArgs.Pod");
  args.pod = std::move(*info);

  const json* names = FindMember(*j, "NodeNames");
  if (names != nullptr && !names->is_null()) {
    if (!names->is_array()) return InvalidArgumentError("ExtenderArgs.NodeNames must be an array");
    for (const auto& n : *names) {
      if (!n.is_string()) return InvalidArgumentError("ExtenderArgs.NodeNames holds a non-string");
      args.node_names.push_back(n.get<std::string>());
    }
    args.node_names_given = true;
    return args;
  }
  const json* nodes = FindMember(*j, "Nodes");
  if (nodes == nullptr || nodes->is_null()) return args;  // no candidates
  const json* items = FindMember(*nodes, "items");
  if (items == nullptr || items->is_null()) return args;
  if (!items->is_array()) return InvalidArgumentError("ExtenderArgs.Nodes.items must be an array");
  for (const auto& node : *items) {
    const json* meta = FindMember(node, "metadata");
    const json* name = meta != nullptr ? FindMember(*meta, "name") : nullptr;
    if (name == nullptr || !name->is_string()) {
      return InvalidArgumentError("ExtenderArgs.Nodes.items holds a Node without metadata.name");
    }
    args.node_names.push_back(name->get<std::string>());
    args.node_items.push_back(node);
  }
  return args;
}

json FilterResultJson(const FilterOutcome& outcome, const ExtenderArgs& args) {
  json out;
  out["Nodes"] = nullptr;
  out["NodeNames"] = nullptr;
  if (outcome.error.empty()) {
    if (args.node_names_given) {
      out["NodeNames"] = outcome.passed;
    } else {
      json items = json::array();
      for (size_t i = 0; i < args.node_names.size(); ++i) {
        if (std::find(outcome.passed.begin(), outcome.passed.end(), args.node_names[i]) !=
            outcome.passed.end()) {
          items.push_back(args.node_items[i]);
        }
      }
      out["Nodes"] = {{"metadata", json::object()}, {"items", items}};
    }
  }
  out["FailedNodes"] = StringMap(outcome.failed);
  out["FailedAndUnresolvableNodes"] = StringMap(outcome.unresolvable);
  out["Error"] = outcome.error;
  return out;
}

json FilterErrorJson(const std::string& error) {
  return {{"Nodes", nullptr},
          {"NodeNames", nullptr},
          {"FailedNodes", json::object()},
          {"FailedAndUnresolvableNodes", json::object()},
          {"Error", error}};
}

json HostPriorityListJson(const std::vector<HostScore>& scores) {
  json out = json::array();
  for (const auto& s : scores) {
    out.push_back(
        {{"Host", s.host}, {"Score", std::clamp(s.score, kMinExtenderScore, kMaxExtenderScore)}});
  }
  return out;
}

StatusOr<BindingArgs> ParseBindingArgs(std::string_view body) {
  auto j = ParseObject(body, "ExtenderBindingArgs");
  if (!j.ok()) return j.status();
  BindingArgs args;
  struct Field {
    std::string_view key;
    std::string* out;
    bool required;
  };
  for (const Field& f :
       {Field{"PodName", &args.pod_name, true}, Field{"PodNamespace", &args.pod_namespace, true},
        Field{"PodUID", &args.pod_uid, false}, Field{"Node", &args.node, true}}) {
    const json* v = FindMember(*j, f.key);
    if (v != nullptr && !v->is_null() && !v->is_string()) {
      return InvalidArgumentError("ExtenderBindingArgs." + std::string(f.key) +
                                  " must be a string");
    }
    if (v != nullptr && v->is_string()) *f.out = v->get<std::string>();
    if (f.required && f.out->empty()) {
      return InvalidArgumentError("ExtenderBindingArgs has no " + std::string(f.key));
    }
  }
  return args;
}

json BindingResultJson(const std::string& error) { return {{"Error", error}}; }

}  // namespace migsched::k8s
