#include "daemon/request_json.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <limits>

namespace migsched {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

constexpr std::array<std::string_view, 10> kFields = {
    "profile",    "gpu_fraction",      "count",    "command", "env", "cwd",
    "migratable", "latency_sensitive", "priority", "name"};

// "string", "boolean", "array", "object", "null", "number" (and
// "non-integer number 2.5" where an integer was expected).
std::string TypeOf(const json& v) {
  if (v.is_number_float()) return fmt::format("non-integer number {}", v.get<double>());
  return v.type_name();
}

Status TypeError(std::string_view field, std::string_view expected, const json& v) {
  return InvalidArgumentError(
      fmt::format("field '{}' must be {}, got {}", field, expected, TypeOf(v)));
}

Status CheckNoNul(std::string_view field, const std::string& s) {
  if (s.find('\0') != std::string::npos) {
    return InvalidArgumentError(fmt::format("field '{}' must not contain a NUL character", field));
  }
  return Status();
}

StatusOr<std::string> GetString(std::string_view field, const json& v) {
  if (!v.is_string()) return TypeError(field, "a string", v);
  std::string s = v.get<std::string>();
  RETURN_IF_ERROR(CheckNoNul(field, s));
  return s;
}

// An integer within [lo, hi] (floats such as 2.0 are refused: the field is an integer).
StatusOr<int64_t> GetInteger(std::string_view field, const json& v, int64_t lo, int64_t hi) {
  if (!v.is_number_integer()) return TypeError(field, "an integer", v);
  bool in_range = false;
  int64_t x = 0;
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    in_range = u <= static_cast<uint64_t>(hi) && static_cast<int64_t>(u) >= lo;
    x = in_range ? static_cast<int64_t>(u) : 0;
  } else {
    x = v.get<int64_t>();
    in_range = x >= lo && x <= hi;
  }
  if (!in_range) {
    return InvalidArgumentError(
        fmt::format("field '{}' must be from {} to {}, got {}", field, lo, hi, v.dump()));
  }
  return x;
}

ojson TimeOrNull(double t) { return t > 0 ? ojson(t) : ojson(nullptr); }

}  // namespace

StatusOr<JobRequest> JobRequestFromJson(const json& j) {
  if (!j.is_object()) {
    return InvalidArgumentError(
        fmt::format("request body must be a JSON object, got {}", j.type_name()));
  }
  for (const auto& [key, value] : j.items()) {
    bool known = false;
    for (std::string_view f : kFields) known = known || f == key;
    if (!known) {
      std::string list;
      for (std::string_view f : kFields) list += fmt::format("{}{}", list.empty() ? "" : ", ", f);
      // The key came from parsed JSON (valid UTF-8) but may be long: quote at most 64 bytes.
      const std::string shown = key.size() > 64 ? key.substr(0, 64) + "..." : key;
      return InvalidArgumentError(fmt::format("unknown field '{}' (known: {})", shown, list));
    }
  }
  JobRequest r;
  const bool has_profile = j.contains("profile");
  const bool has_fraction = j.contains("gpu_fraction");
  if (has_profile == has_fraction) {
    return InvalidArgumentError(has_profile
                                    ? "give only one of 'profile' and 'gpu_fraction'"
                                    : "one of 'profile' (e.g. \"2g.10gb\") or 'gpu_fraction' "
                                      "(in (0, 1]) is required");
  }
  if (has_profile) {
    ASSIGN_OR_RETURN(r.profile, GetString("profile", j.at("profile")));
    if (r.profile.empty()) return InvalidArgumentError("field 'profile' must not be empty");
  } else {
    const json& v = j.at("gpu_fraction");
    if (!v.is_number()) return TypeError("gpu_fraction", "a number", v);
    r.gpu_fraction = v.get<double>();
    if (!(r.gpu_fraction > 0 && r.gpu_fraction <= 1)) {
      return InvalidArgumentError(
          fmt::format("field 'gpu_fraction' must be in (0, 1], got {}", v.dump()));
    }
  }
  if (j.contains("count")) {
    ASSIGN_OR_RETURN(int64_t count, GetInteger("count", j.at("count"), 1, kMaxJobCount));
    r.count = static_cast<int>(count);
  }
  if (!j.contains("command")) return InvalidArgumentError("field 'command' is required");
  {
    const json& c = j.at("command");
    if (!c.is_array()) return TypeError("command", "an array of strings", c);
    if (c.empty()) {
      return InvalidArgumentError("field 'command' must not be empty (argv: program, arguments)");
    }
    for (size_t i = 0; i < c.size(); ++i) {
      ASSIGN_OR_RETURN(std::string arg, GetString(fmt::format("command[{}]", i), c[i]));
      r.command.push_back(std::move(arg));
    }
    if (r.command[0].empty()) {
      return InvalidArgumentError("field 'command[0]' (the program) must not be empty");
    }
  }
  if (j.contains("env")) {
    const json& e = j.at("env");
    if (!e.is_object()) return TypeError("env", "an object of strings", e);
    for (const auto& [name, value] : e.items()) {
      if (name.empty() || name.find('=') != std::string::npos ||
          name.find('\0') != std::string::npos) {
        return InvalidArgumentError(
            "field 'env': variable names must be non-empty and contain no '=' or NUL");
      }
      ASSIGN_OR_RETURN(r.env[name], GetString(fmt::format("env.{}", name), value));
    }
  }
  if (j.contains("cwd")) {
    ASSIGN_OR_RETURN(r.cwd, GetString("cwd", j.at("cwd")));
  }
  if (j.contains("migratable")) {
    const json& m = j.at("migratable");
    if (!m.is_string()) return TypeError("migratable", "a string (none, restart, checkpoint)", m);
    auto parsed = ParseMigratable(m.get<std::string>());
    if (!parsed.ok()) {
      return InvalidArgumentError(
          fmt::format("field 'migratable' must be one of none, restart, checkpoint, got {}",
                      m.dump(-1, ' ', false, json::error_handler_t::replace)));
    }
    r.migratable = *parsed;
  }
  if (j.contains("latency_sensitive")) {
    const json& v = j.at("latency_sensitive");
    if (!v.is_boolean()) return TypeError("latency_sensitive", "a boolean", v);
    r.latency_sensitive = v.get<bool>();
  }
  if (j.contains("priority")) {
    ASSIGN_OR_RETURN(int64_t p,
                     GetInteger("priority", j.at("priority"), std::numeric_limits<int>::min(),
                                std::numeric_limits<int>::max()));
    r.priority = static_cast<int>(p);
  }
  if (j.contains("name")) {
    ASSIGN_OR_RETURN(r.name, GetString("name", j.at("name")));
  }
  return r;
}

StatusOr<JobRequest> ParseJobRequest(std::string_view body) {
  json j;
  try {
    j = json::parse(body.begin(), body.end());
  } catch (const json::exception& e) {
    std::string what = e.what();
    // "[json.exception.parse_error.101] parse error at line 1, ..." → "parse error at line 1, ..."
    if (!what.empty() && what[0] == '[') {
      const size_t close = what.find("] ");
      if (close != std::string::npos) what.erase(0, close + 2);
    }
    return InvalidArgumentError("request body is not valid JSON: " + what);
  }
  return JobRequestFromJson(j);
}

ojson JobRequestToJson(const JobRequest& r) {
  ojson j;
  if (!r.profile.empty()) {
    j["profile"] = r.profile;
  } else {
    j["gpu_fraction"] = r.gpu_fraction;
  }
  j["count"] = r.count;
  j["command"] = r.command;
  j["env"] = ojson::object();
  for (const auto& [k, v] : r.env) j["env"][k] = v;
  j["cwd"] = r.cwd;
  j["migratable"] = std::string(MigratableName(r.migratable));
  j["latency_sensitive"] = r.latency_sensitive;
  j["priority"] = r.priority;
  j["name"] = r.name;
  return j;
}

ojson JobInstanceToJson(const JobInstance& i) {
  return ojson{{"gpu", i.gpu},
               {"profile", i.profile},
               {"start", i.start},
               {"size", i.size},
               {"mig_uuid", i.mig_uuid}};
}

ojson JobRecordToJson(const DaemonJobRecord& r) {
  ojson j;
  j["id"] = r.id;
  j["name"] = r.request.name;
  j["state"] = std::string(JobStateName(r.state));
  j["request"] = JobRequestToJson(r.request);
  j["submitted_at"] = TimeOrNull(r.submitted_at);
  j["started_at"] = TimeOrNull(r.started_at);
  j["ended_at"] = TimeOrNull(r.ended_at);
  j["instances"] = ojson::array();
  for (const JobInstance& i : r.instances) j["instances"].push_back(JobInstanceToJson(i));
  j["pid"] = r.pid > 0 ? ojson(r.pid) : ojson(nullptr);
  j["exit_code"] = r.exit_code ? ojson(*r.exit_code) : ojson(nullptr);
  j["reason"] = r.reason;
  j["restarts"] = r.restarts;
  j["migrations"] = r.migrations;
  return j;
}

ojson GpuViewToJson(const GpuView& g) {
  ojson j;
  j["index"] = g.index;
  j["uuid"] = g.uuid;
  j["model"] = g.model;
  j["placement_units"] = g.placement_units;
  j["utilisation"] = g.utilisation;
  j["frag_cost"] = g.frag_cost;
  j["load"] = g.lazy ? "lazy" : "busy";
  j["draining"] = g.draining;
  if (g.pcie) {
    j["pcie"] = {{"tx_bytes_per_second", PcieBytesPerSecond(g.pcie->tx_kbps)},
                 {"rx_bytes_per_second", PcieBytesPerSecond(g.pcie->rx_kbps)}};
  } else {
    j["pcie"] = nullptr;
  }
  j["instances"] = ojson::array();
  for (const InstanceView& i : g.instances) {
    j["instances"].push_back(ojson{{"profile", i.profile},
                                   {"start", i.start},
                                   {"size", i.size},
                                   {"mig_uuid", i.mig_uuid},
                                   {"busy", i.busy},
                                   {"job", i.job > 0 ? ojson(i.job) : ojson(nullptr)}});
  }
  return j;
}

ojson PlanPreviewToJson(const PlanPreview& p) {
  ojson j;
  j["fits_now"] = p.fits_now;
  j["instances"] = ojson::array();
  for (const JobInstance& i : p.instances) j["instances"].push_back(JobInstanceToJson(i));
  j["steps"] = p.steps;
  j["reason"] = p.reason;
  return j;
}

std::string ErrorBody(std::string_view code, std::string_view message) {
  ojson j;
  j["error"] = {{"code", std::string(code)}, {"message", std::string(message)}};
  return j.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

std::string ErrorBody(const Status& status) {
  return ErrorBody(StatusCodeName(status.code()), status.message());
}

int HttpStatusFor(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return 200;
    case StatusCode::kInvalidArgument:
      return 400;
    case StatusCode::kUnauthenticated:
      return 401;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kFailedPrecondition:
    case StatusCode::kAlreadyExists:
      return 409;
    case StatusCode::kResourceExhausted:
      return 429;
    case StatusCode::kUnavailable:
      return 503;
    case StatusCode::kInternal:
      return 500;
  }
  return 500;
}

}  // namespace migsched
