#include "nodeapi/request_json.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "core/catalog.h"
#include "io/integer_input.h"
#include "io/scheduler_options_json.h"

namespace migsched {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

// kMinTimeLimitS and kMaxTimeLimitS (job_record.h), as written.
constexpr std::string_view kTimeLimitRange =
    "field 'time_limit_s' must be a number of seconds from 1 to 1e9 (absent: no limit), got {}";

constexpr std::array<std::string_view, 12> kFields = {
    "profile",    "gpu_fraction",      "count",    "command", "env",  "cwd",
    "migratable", "latency_sensitive", "priority", "name",    "user", "time_limit_s"};

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

// An optional boolean field of `j`: absent is false; anything but true or false (null too) is
// refused naming the field.
StatusOr<bool> GetOptionalBool(const json& j, const char* field) {
  if (!j.contains(field)) return false;
  const json& v = j.at(field);
  if (!v.is_boolean()) return TypeError(field, "a boolean", v);
  return v.get<bool>();
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

// The number `v`, field `field` of the request `body`, for an error's quote: as the client wrote
// it (2.50, 100000000000000000000, which the parser reads back as 2.5 and 1e+20), or as the parser
// reads it where there is no body (a JSON value of a record) or the field is not found in it.
std::string NumberAsWritten(std::string_view body, std::string_view field, const json& v) {
  if (v.is_number_float() && !body.empty()) {
    std::string written = JsonNumberAsWritten(body, field);
    if (!written.empty()) return written;
  }
  return v.dump();
}

// An integer within [lo, hi] by the one rule of io/integer_input.h: a number with an integral
// value, however written (2, 2.0, 1e3); 2.5 is not an integer. `body`: the request's text, for
// quoting the value as written ("" where there is none).
StatusOr<int64_t> GetInteger(std::string_view field, const json& v, int64_t lo, int64_t hi,
                             std::string_view body) {
  if (!v.is_number()) return TypeError(field, "an integer", v);
  int64_t x = 0;
  switch (ReadJsonInteger(v, lo, hi, &x)) {
    case IntegerInput::kInRange:
      return x;
    case IntegerInput::kNotInteger:
      return InvalidArgumentError(
          fmt::format("field '{}' must be an integer, got non-integer number {}", field,
                      NumberAsWritten(body, field, v)));
    case IntegerInput::kBelowRange:
    case IntegerInput::kAboveRange:
      break;
  }
  return InvalidArgumentError(fmt::format("field '{}' must be from {} to {}, got {}", field, lo, hi,
                                          NumberAsWritten(body, field, v)));
}

ojson TimeOrNull(double t) { return t > 0 ? ojson(t) : ojson(nullptr); }

// An unknown key of object `j` (none of `fields`), as an error listing them.
template <size_t N>
Status CheckFields(const json& j, const std::array<std::string_view, N>& fields) {
  for (const auto& [key, value] : j.items()) {
    bool known = false;
    for (std::string_view f : fields) known = known || f == key;
    if (!known) {
      std::string list;
      for (std::string_view f : fields) list += fmt::format("{}{}", list.empty() ? "" : ", ", f);
      // The key came from parsed JSON (valid UTF-8) but may be long: quote at most 64 bytes.
      const std::string shown = key.size() > 64 ? key.substr(0, 64) + "..." : key;
      return InvalidArgumentError(fmt::format("unknown field '{}' (known: {})", shown, list));
    }
  }
  return Status();
}

// The body parsed as JSON, or the parser's message. A key given twice in one object is an error
// (the parser would keep the last one without a word: `"profile": "1g.5gb", ..., "profile":
// "7g.40gb"` is not what the client meant).
StatusOr<json> ParseBody(std::string_view body) {
  try {
    std::vector<std::set<std::string>> open;  // the keys of each object being read
    std::string duplicate;
    auto callback = [&](int /*depth*/, json::parse_event_t event, json& parsed) {
      if (event == json::parse_event_t::object_start) {
        open.emplace_back();
      } else if (event == json::parse_event_t::object_end) {
        if (!open.empty()) open.pop_back();
      } else if (event == json::parse_event_t::key && !open.empty() && parsed.is_string() &&
                 !open.back().insert(parsed.get<std::string>()).second && duplicate.empty()) {
        duplicate = parsed.get<std::string>();
      }
      return true;
    };
    json j = json::parse(body.begin(), body.end(), callback);
    if (!duplicate.empty()) {
      const std::string shown = duplicate.size() > 64 ? duplicate.substr(0, 64) + "..." : duplicate;
      return InvalidArgumentError(
          fmt::format("request body is not valid: key '{}' appears twice in one object", shown));
    }
    return j;
  } catch (const json::exception& e) {
    std::string what = e.what();
    // "[json.exception.parse_error.101] parse error at line 1, ..." → "parse error at line 1, ..."
    if (!what.empty() && what[0] == '[') {
      const size_t close = what.find("] ");
      if (close != std::string::npos) what.erase(0, close + 2);
    }
    return InvalidArgumentError("request body is not valid JSON: " + what);
  }
}

Status RequireObject(const json& j) {
  if (!j.is_object()) {
    return InvalidArgumentError(
        fmt::format("request body must be a JSON object, got {}", j.type_name()));
  }
  return Status();
}

// {gpu, profile, start}: `need_placement` false also takes {profile} alone. `body`: as for
// GetInteger.
StatusOr<RequestedInstance> GetRequestedInstance(std::string_view field, const json& v,
                                                 bool need_placement, std::string_view body) {
  if (!v.is_object()) return TypeError(field, "an object", v);
  constexpr std::array<std::string_view, 3> kSpecFields = {"gpu", "profile", "start"};
  RETURN_IF_ERROR(CheckFields(v, kSpecFields).WithPrefix(std::string(field)));
  RequestedInstance s;
  if (!v.contains("profile")) {
    return InvalidArgumentError(fmt::format("field '{}.profile' is required", field));
  }
  ASSIGN_OR_RETURN(s.profile, GetString(fmt::format("{}.profile", field), v.at("profile")));
  if (s.profile.empty()) {
    return InvalidArgumentError(fmt::format("field '{}.profile' must not be empty", field));
  }
  const bool has_gpu = v.contains("gpu"), has_start = v.contains("start");
  if (has_gpu != has_start || (need_placement && !has_gpu)) {
    return InvalidArgumentError(
        fmt::format("field '{}' needs both 'gpu' and 'start'{}", field,
                    need_placement ? "" : " (or neither: the daemon chooses the placement)"));
  }
  if (has_gpu) {
    ASSIGN_OR_RETURN(int64_t gpu,
                     GetInteger(fmt::format("{}.gpu", field), v.at("gpu"), 0, 1 << 20, body));
    ASSIGN_OR_RETURN(int64_t start,
                     GetInteger(fmt::format("{}.start", field), v.at("start"), 0, 1 << 20, body));
    s.gpu = NvmlIndex::Of(static_cast<int>(gpu));
    s.start = static_cast<int>(start);
  }
  return s;
}

// A job's or an allocation's `name`: at most kMaxJobNameBytes bytes.
Status CheckNameLength(const std::string& name) {
  if (name.size() > kMaxJobNameBytes) {
    return InvalidArgumentError(fmt::format("field 'name' is {} bytes long; at most {} are allowed",
                                            name.size(), kMaxJobNameBytes));
  }
  return Status();
}

StatusOr<std::string> GetKey(std::string_view field, const json& v) {
  ASSIGN_OR_RETURN(std::string s, GetString(field, v));
  if (s.size() > 256) {
    return InvalidArgumentError(fmt::format("field '{}' must be at most 256 bytes", field));
  }
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    // C0 and DEL, and the C1 controls U+0080..U+009F (UTF-8 C2 80..C2 9F; regression:
    // c1_control_in_owner: "a\u0085b" was taken and listed as "ab").
    const bool c1 = c == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
                    static_cast<unsigned char>(s[i + 1]) <= 0x9f;
    if (c < 0x20 || c == 0x7f || c1) {
      return InvalidArgumentError(
          fmt::format("field '{}' must not contain control characters", field));
    }
  }
  return s;
}

// The array `field` of 1..kMaxJobCount instances (or 0 when `may_be_empty`). `body`: as for
// GetInteger.
StatusOr<std::vector<RequestedInstance>> GetRequestedInstances(std::string_view field,
                                                               const json& v, bool need_placement,
                                                               bool may_be_empty,
                                                               std::string_view body) {
  if (!v.is_array()) {
    return TypeError(
        field, need_placement ? "an array of {gpu, profile, start}" : "an array of objects", v);
  }
  if ((v.empty() && !may_be_empty) || v.size() > static_cast<size_t>(kMaxJobCount)) {
    return InvalidArgumentError(may_be_empty
                                    ? fmt::format("field '{}' holds at most {} instances, got {}",
                                                  field, kMaxJobCount, v.size())
                                    : fmt::format("field '{}' must hold 1 to {} placements, got {}",
                                                  field, kMaxJobCount, v.size()));
  }
  std::vector<RequestedInstance> out;
  for (size_t i = 0; i < v.size(); ++i) {
    ASSIGN_OR_RETURN(RequestedInstance s, GetRequestedInstance(fmt::format("{}[{}]", field, i),
                                                               v[i], need_placement, body));
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

Status ValidateJobRequest(const JobRequest& r) {
  if (r.command.empty() || r.command[0].empty()) {
    return InvalidArgumentError(
        "field 'command' must be a non-empty argv array (program, arguments)");
  }
  if (r.count < 1 || r.count > kMaxJobCount) {
    return InvalidArgumentError(
        fmt::format("field 'count' must be from 1 to {}, got {}", kMaxJobCount, r.count));
  }
  if (r.profile.empty() == (r.gpu_fraction == 0)) {
    return InvalidArgumentError(r.profile.empty()
                                    ? "one of 'profile' (e.g. \"2g.10gb\") or 'gpu_fraction' "
                                      "(in (0, 1]) is required"
                                    : "give only one of 'profile' and 'gpu_fraction'");
  }
  if (!(r.time_limit_s == 0 ||
        (r.time_limit_s >= kMinTimeLimitS && r.time_limit_s <= kMaxTimeLimitS))) {
    return InvalidArgumentError(fmt::format(kTimeLimitRange, r.time_limit_s));
  }
  if (r.profile.empty() && !(r.gpu_fraction > 0 && r.gpu_fraction <= 1)) {
    return InvalidArgumentError(
        fmt::format("field 'gpu_fraction' must be in (0, 1], got {}", r.gpu_fraction));
  }
  size_t total = 0;
  for (size_t i = 0; i < r.command.size(); ++i) {
    const std::string& a = r.command[i];
    RETURN_IF_ERROR(CheckNoNul(fmt::format("command[{}]", i), a));
    if (a.size() + 1 > kMaxExecArgBytes) {
      return InvalidArgumentError(
          fmt::format("field 'command[{}]' is {} bytes long; exec takes at most {} per argument", i,
                      a.size(), kMaxExecArgBytes - 1));
    }
    total += a.size() + 1 + sizeof(char*);
  }
  for (const auto& [name, value] : r.env) {
    if (name.empty() || name.find('=') != std::string::npos ||
        name.find('\0') != std::string::npos) {
      return InvalidArgumentError(
          "field 'env': variable names must be non-empty and contain no '=' or NUL");
    }
    RETURN_IF_ERROR(CheckNoNul(fmt::format("env.{}", name), value));
    if (name.size() + value.size() + 2 > kMaxExecArgBytes) {
      return InvalidArgumentError(
          fmt::format("field 'env.{}' is {} bytes long; exec takes at most {} per variable", name,
                      name.size() + value.size() + 1, kMaxExecArgBytes - 1));
    }
    total += name.size() + value.size() + 2 + sizeof(char*);
  }
  if (total > kMaxExecBytes) {
    return InvalidArgumentError(
        fmt::format("fields 'command' and 'env' take {} bytes; exec takes at most {} in all", total,
                    kMaxExecBytes));
  }
  for (const auto& [field, v] : {std::pair<const char*, const std::string*>{"cwd", &r.cwd},
                                 {"name", &r.name},
                                 {"profile", &r.profile},
                                 {"user", &r.user}}) {
    RETURN_IF_ERROR(CheckNoNul(field, *v));
  }
  // The daemon starts the job there; a relative path would be relative to whatever directory
  // the daemon happens to run in, and failed only at the launch.
  if (!r.cwd.empty() && r.cwd[0] != '/') {
    return InvalidArgumentError(fmt::format(
        "field 'cwd' must be an absolute path, got '{}' (`migsched submit --cwd` makes a "
        "relative one absolute from where it runs)",
        r.cwd));
  }
  return CheckNameLength(r.name);
}

namespace {

// JobRequestFromJson; `body`: the request's text, for quoting a number as the client wrote it
// ("" where there is none).
StatusOr<JobRequest> JobRequestFrom(const json& j, std::string_view body) {
  if (!j.is_object()) {
    return InvalidArgumentError(
        fmt::format("request body must be a JSON object, got {}", j.type_name()));
  }
  RETURN_IF_ERROR(CheckFields(j, kFields));
  JobRequest r;
  const bool has_profile = j.contains("profile");
  const bool has_fraction = j.contains("gpu_fraction");
  // A null is a value of the wrong type, said as such (regression:
  // null_fraction_said_give_only_one:
  // {"profile": ..., "gpu_fraction": null} was told to give only one of them).
  if (has_profile && j.at("profile").is_null())
    return TypeError("profile", "a string", j.at("profile"));
  if (has_fraction && j.at("gpu_fraction").is_null()) {
    return TypeError("gpu_fraction", "a number", j.at("gpu_fraction"));
  }
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
      return InvalidArgumentError(fmt::format("field 'gpu_fraction' must be in (0, 1], got {}",
                                              NumberAsWritten(body, "gpu_fraction", v)));
    }
  }
  if (j.contains("count")) {
    ASSIGN_OR_RETURN(int64_t count, GetInteger("count", j.at("count"), 1, kMaxJobCount, body));
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
  ASSIGN_OR_RETURN(r.latency_sensitive, GetOptionalBool(j, "latency_sensitive"));
  if (j.contains("priority")) {
    ASSIGN_OR_RETURN(int64_t p,
                     GetInteger("priority", j.at("priority"), std::numeric_limits<int>::min(),
                                std::numeric_limits<int>::max(), body));
    r.priority = static_cast<int>(p);
  }
  if (j.contains("name")) {
    ASSIGN_OR_RETURN(r.name, GetString("name", j.at("name")));
  }
  if (j.contains("user")) {
    ASSIGN_OR_RETURN(r.user, GetString("user", j.at("user")));
  }
  if (j.contains("time_limit_s")) {
    const json& v = j.at("time_limit_s");
    if (!v.is_number() || !(v.get<double>() >= kMinTimeLimitS) ||
        !(v.get<double>() <= kMaxTimeLimitS)) {
      return InvalidArgumentError(fmt::format(
          kTimeLimitRange, v.is_number() ? NumberAsWritten(body, "time_limit_s", v)
                                         : v.dump(-1, ' ', false, json::error_handler_t::replace)));
    }
    r.time_limit_s = v.get<double>();
  }
  RETURN_IF_ERROR(ValidateJobRequest(r));
  return r;
}

}  // namespace

StatusOr<JobRequest> JobRequestFromJson(const json& j) { return JobRequestFrom(j, ""); }

JobRequest WithCanonicalProfile(JobRequest r) {
  if (!r.profile.empty()) r.profile = NormalizeProfileName(r.profile);
  return r;
}

namespace {
// Each element's `profile` in the catalog's spelling (RequestedInstance, PlacementRef).
template <typename T>
void CanonicalizeProfiles(std::vector<T>& v) {
  for (T& in : v) {
    if (!in.profile.empty()) in.profile = NormalizeProfileName(in.profile);
  }
}
}  // namespace

AllocationRequest WithCanonicalProfiles(AllocationRequest r) {
  CanonicalizeProfiles(r.instances);
  return r;
}

ReservationRequest WithCanonicalProfiles(ReservationRequest r) {
  CanonicalizeProfiles(r.placements);
  return r;
}

StatusOr<JobRequest> ParseJobRequest(std::string_view body) {
  ASSIGN_OR_RETURN(json j, ParseBody(body));
  return JobRequestFrom(j, body);
}

StatusOr<AllocationRequest> ParseAllocationRequest(std::string_view body) {
  ASSIGN_OR_RETURN(json j, ParseBody(body));
  RETURN_IF_ERROR(RequireObject(j));
  constexpr std::array<std::string_view, 6> kAllocationFields = {
      "owner", "instances", "reservation", "reservation_prefix", "name", "anchors"};
  RETURN_IF_ERROR(CheckFields(j, kAllocationFields));
  AllocationRequest a;
  // Optional strings: absent or null mean none (the record's own form writes null).
  auto given = [&](const char* key) { return j.contains(key) && !j.at(key).is_null(); };
  if (given("owner")) {
    ASSIGN_OR_RETURN(a.owner, GetKey("owner", j.at("owner")));
    if (a.owner.empty()) return InvalidArgumentError("field 'owner' must not be empty");
  } else if (!given("reservation") && !given("reservation_prefix")) {
    return InvalidArgumentError(
        "field 'owner' is required (it may be left out only when binding a reservation)");
  }
  if (j.contains("instances")) {
    ASSIGN_OR_RETURN(a.instances, GetRequestedInstances("instances", j.at("instances"),
                                                        /*need_placement=*/false,
                                                        /*may_be_empty=*/true, body));
  }
  if (given("reservation")) {
    ASSIGN_OR_RETURN(a.reservation, GetKey("reservation", j.at("reservation")));
  }
  if (given("reservation_prefix")) {
    ASSIGN_OR_RETURN(a.reservation_prefix,
                     GetKey("reservation_prefix", j.at("reservation_prefix")));
  }
  if (given("name")) {
    ASSIGN_OR_RETURN(a.name, GetString("name", j.at("name")));
    RETURN_IF_ERROR(CheckNameLength(a.name));
  }
  ASSIGN_OR_RETURN(a.anchors, GetOptionalBool(j, "anchors"));
  return a;
}

StatusOr<ReservationRequest> ParseReservationRequest(std::string_view body) {
  ASSIGN_OR_RETURN(json j, ParseBody(body));
  RETURN_IF_ERROR(RequireObject(j));
  constexpr std::array<std::string_view, 4> kReservationFields = {"owner", "placements", "ttl_s",
                                                                  "anchors"};
  RETURN_IF_ERROR(CheckFields(j, kReservationFields));
  ReservationRequest r;
  if (!j.contains("owner")) return InvalidArgumentError("field 'owner' is required");
  ASSIGN_OR_RETURN(r.owner, GetKey("owner", j.at("owner")));
  if (r.owner.empty()) return InvalidArgumentError("field 'owner' must not be empty");
  if (!j.contains("placements")) return InvalidArgumentError("field 'placements' is required");
  ASSIGN_OR_RETURN(std::vector<RequestedInstance> placements,
                   GetRequestedInstances("placements", j.at("placements"),
                                         /*need_placement=*/true, /*may_be_empty=*/false, body));
  for (const RequestedInstance& p : placements) r.placements.push_back(p.placement());
  if (j.contains("ttl_s")) {
    const json& t = j.at("ttl_s");
    if (!t.is_number()) return TypeError("ttl_s", "a number of seconds", t);
    r.ttl_s = t.get<double>();
    if (!(r.ttl_s > 0) || !std::isfinite(r.ttl_s)) {
      return InvalidArgumentError(
          fmt::format("field 'ttl_s' must be > 0, got {}", NumberAsWritten(body, "ttl_s", t)));
    }
  }
  ASSIGN_OR_RETURN(r.anchors, GetOptionalBool(j, "anchors"));
  return r;
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
  if (!r.user.empty()) j["user"] = r.user;
  if (r.time_limit_s > 0) j["time_limit_s"] = r.time_limit_s;
  return j;
}

ojson AllocationRequestToJson(const AllocationRequest& a) {
  ojson j;
  j["owner"] = a.owner;
  j["instances"] = ojson::array();
  for (const RequestedInstance& s : a.instances) {
    ojson i{{"profile", s.profile}};
    if (s.exact()) {
      i["gpu"] = s.gpu;
      i["start"] = s.start;
    }
    j["instances"].push_back(std::move(i));
  }
  j["reservation"] = a.reservation.empty() ? ojson(nullptr) : ojson(a.reservation);
  j["reservation_prefix"] =
      a.reservation_prefix.empty() ? ojson(nullptr) : ojson(a.reservation_prefix);
  j["name"] = a.name;
  j["anchors"] = a.anchors;
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
  const bool allocation = r.kind == JobKind::kAllocation;
  ojson j;
  j["id"] = r.id;
  j["kind"] = std::string(JobKindName(r.kind));
  j["name"] = allocation ? r.allocation.name : r.request.name;
  j["state"] = std::string(JobStateName(r.state));
  j["request"] = allocation ? AllocationRequestToJson(r.allocation) : JobRequestToJson(r.request);
  j["owner"] = allocation ? ojson(r.owner()) : ojson(nullptr);
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
  j["run"] = r.attempt;
  j["cancel_requested"] = r.cancel_requested;
  j["bound_reservation"] =
      r.bound_reservation.empty() ? ojson(nullptr) : ojson(r.bound_reservation);
  j["idempotency_key"] = r.idempotency_key.empty() ? ojson(nullptr) : ojson(r.idempotency_key);
  return j;
}

ojson JobPageToJson(const JobPage& page, std::string_view key) {
  ojson jobs = ojson::array();
  for (const DaemonJobRecord& r : page.jobs) jobs.push_back(JobRecordToJson(r));
  ojson j;
  j[std::string(key)] = std::move(jobs);
  j["next"] = page.next > 0 ? ojson(page.next) : ojson(nullptr);
  return j;
}

ojson ReservationViewToJson(const ReservationView& r) {
  ojson j;
  j["owner"] = r.record.owner;
  j["placements"] = ojson::array();
  for (size_t i = 0; i < r.instances.size(); ++i) {
    const JobInstance& in = r.instances[i];
    j["placements"].push_back(ojson{{"gpu", in.gpu},
                                    {"gpu_uuid", i < r.gpu_uuids.size() ? r.gpu_uuids[i] : ""},
                                    {"profile", in.profile},
                                    {"start", in.start},
                                    {"size", in.size},
                                    {"mig_uuid", in.mig_uuid}});
  }
  j["created_at"] = r.record.created_at;
  j["expires_at"] = r.record.expires_at;
  j["anchors"] = r.record.anchors;
  return j;
}

ojson NodeViewToJson(const NodeView& n) {
  ojson j;
  j["name"] = n.name;
  j["boot_id"] = n.boot_id;
  j["generation"] = n.generation;
  j["time"] = n.time;
  j["scheduler"] = {{"policy", n.policy},
                    {"options", SchedulerOptionsToJson(n.options)},
                    {"paused", n.paused},
                    {"queue_length", n.queue_length}};
  j["store"] = n.store.ok() ? ojson{{"ok", true}, {"error", nullptr}}
                            : ojson{{"ok", false}, {"error", n.store.message()}};
  j["gpus"] = ojson::array();
  for (const GpuView& g : n.gpus) j["gpus"].push_back(GpuViewToJson(g));
  j["reservations"] = ojson::array();
  for (const ReservationView& r : n.reservations) {
    j["reservations"].push_back(ReservationViewToJson(r));
  }
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
  j["anchored"] = g.anchored;
  j["unreachable"] = g.unreachable.empty() ? ojson(nullptr) : ojson(g.unreachable);
  if (g.pcie) {
    j["pcie"] = {{"tx_bytes_per_second", PcieBytesPerSecond(g.pcie->tx_kbps)},
                 {"rx_bytes_per_second", PcieBytesPerSecond(g.pcie->rx_kbps)}};
  } else {
    j["pcie"] = nullptr;
  }
  j["instances"] = ojson::array();
  for (const InstanceView& i : g.instances) {
    j["instances"].push_back(
        ojson{{"profile", i.profile},
              {"start", i.start},
              {"size", i.size},
              {"mig_uuid", i.mig_uuid},
              {"busy", i.busy},
              {"holder",
               i.holder == HolderKind::kIdle ? ojson(nullptr) : ojson(HolderKindName(i.holder))},
              {"job", i.job > 0 ? ojson(i.job) : ojson(nullptr)},
              {"owner", i.owner.empty() ? ojson(nullptr) : ojson(i.owner)},
              {"expires_at", i.expires_at > 0 ? ojson(i.expires_at) : ojson(nullptr)},
              {"anchors", i.anchors}});
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
