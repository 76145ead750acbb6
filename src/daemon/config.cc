// YAML → DaemonConfig (daemon/config.h). yaml-cpp throws: every call into it
// is wrapped here and turned into a Status naming the file, the line and the key.
#include "daemon/config.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <tuple>
#include <type_traits>
#include <utility>

#include "core/text.h"
#include "io/scheduler_options_yaml.h"
#include "io/yaml_errors.h"
#include "nodeapi/token.h"
#include "sched/option_table.h"
#include "sched/policy.h"

namespace migsched {
namespace {

// Parses one YAML mapping against a table of known keys.
class Reader {
 public:
  explicit Reader(std::string origin) : origin_(std::move(origin)) {}

  // "<origin>:<line>: <what>" (line omitted when unknown); an empty value (`tick_ms:` with
  // nothing after it) at its key's line (YamlEntryMarks).
  Status Error(const YAML::Node& node, const std::string& what) const {
    return YamlErrorAt(origin_, marks_.MarkOf(node), what);
  }

  // The scalar's text; error "key 'k' must be <expected>" for maps/sequences/null.
  StatusOr<std::string> Scalar(const YAML::Node& n, const std::string& key,
                               std::string_view expected) const {
    if (!n.IsScalar()) {
      return Error(n, fmt::format("key '{}' must be {}, got {}", key, expected, YamlKindName(n)));
    }
    return n.Scalar();
  }

  Status String(const YAML::Node& n, const std::string& key, std::string* out) const {
    ASSIGN_OR_RETURN(*out, Scalar(n, key, "a string"));
    return Status();
  }

  template <typename Int>
  Status Integer(const YAML::Node& n, const std::string& key, Int* out) const {
    ASSIGN_OR_RETURN(std::string s, Scalar(n, key, "an integer"));
    int64_t v = 0;
    const char* end = s.data() + s.size();
    auto [p, ec] = std::from_chars(s.data(), end, v);
    const bool whole = p == end && (ec == std::errc() || ec == std::errc::result_out_of_range);
    if (!whole) return Error(n, fmt::format("key '{}' must be an integer, got '{}'", key, s));
    if (ec != std::errc() || !std::in_range<Int>(v)) {  // an integer, out of the key's range
      if constexpr (std::is_unsigned_v<Int>) {
        if (ec == std::errc() && v < 0) {
          return Error(n, fmt::format("key '{}' must be an integer >= 0, got '{}'", key, s));
        }
      }
      return Error(n, fmt::format("key '{}' must be an integer from {} to {}, got '{}'", key,
                                  std::numeric_limits<Int>::min(),
                                  std::min<uint64_t>(std::numeric_limits<Int>::max(),
                                                     std::numeric_limits<int64_t>::max()),
                                  s));
    }
    *out = static_cast<Int>(v);
    return Status();
  }

  Status Number(const YAML::Node& n, const std::string& key, double* out) const {
    ASSIGN_OR_RETURN(std::string s, Scalar(n, key, "a number"));
    double v = 0;
    const char* end = s.data() + s.size();
    auto [p, ec] = std::from_chars(s.data(), end, v);
    if (ec != std::errc() || p != end || !std::isfinite(v)) {
      return Error(n, fmt::format("key '{}' must be a number, got '{}'", key, s));
    }
    *out = v;
    return Status();
  }

  Status Bool(const YAML::Node& n, const std::string& key, bool* out) const {
    ASSIGN_OR_RETURN(std::string s, Scalar(n, key, "true or false"));
    const std::optional<bool> v = OnOffWord(s);  // also yes/no and on/off, in any case
    if (!v) return Error(n, fmt::format("key '{}' must be true or false, got '{}'", key, s));
    *out = *v;
    return Status();
  }

  // A sequence of scalars; also a single scalar when `allow_scalar` (split at commas).
  Status StringList(const YAML::Node& n, const std::string& key, std::vector<std::string>* out,
                    bool allow_scalar) const {
    out->clear();
    if (n.IsScalar() && allow_scalar) {
      std::stringstream ss(n.Scalar());
      std::string item;
      while (std::getline(ss, item, ',')) {
        item.erase(0, item.find_first_not_of(" \t"));
        item.erase(item.find_last_not_of(" \t") + 1);
        if (!item.empty()) out->push_back(item);
      }
      return Status();
    }
    if (!n.IsSequence()) {
      return Error(n,
                   fmt::format("key '{}' must be a list of strings, got {}", key, YamlKindName(n)));
    }
    for (size_t i = 0; i < n.size(); ++i) {
      std::string item;
      RETURN_IF_ERROR(String(n[i], fmt::format("{}[{}]", key, i), &item));
      out->push_back(item);
    }
    return Status();
  }

  // Calls handlers[key] for each entry of the mapping `n`; an unknown key, or one written twice
  // (CheckNoRepeatedKey), is an error.
  Status Map(
      const YAML::Node& n, const std::string& prefix,
      const std::map<std::string, std::function<Status(const YAML::Node&)>>& handlers) const {
    if (!n.IsMap()) {
      return Error(n, fmt::format("key '{}' must be a mapping, got {}", prefix, YamlKindName(n)));
    }
    RETURN_IF_ERROR(CheckNoRepeatedKey(origin_, n, prefix));
    for (const auto& kv : n) {
      if (!kv.first.IsScalar()) return Error(kv.first, "keys must be plain strings");
      const std::string key = kv.first.Scalar();
      const std::string full = prefix.empty() ? key : prefix + "." + key;
      auto it = handlers.find(key);
      if (it == handlers.end()) {
        std::string known;
        for (const auto& h : handlers) known += (known.empty() ? "" : ", ") + h.first;
        return Error(kv.first, fmt::format("unknown key '{}' (known: {})", full, known));
      }
      marks_.Note(kv.first, kv.second);
      RETURN_IF_ERROR(it->second(kv.second));
    }
    return Status();
  }

  const std::string& origin() const { return origin_; }

 private:
  std::string origin_;
  mutable YamlEntryMarks marks_;  // the entries Map has walked, for Error's lines
};

using Handlers = std::map<std::string, std::function<Status(const YAML::Node&)>>;

// host:port with port 0..65535 and a non-empty host.
Status CheckListen(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return InvalidArgumentError(
        fmt::format("listen must be HOST:PORT (e.g. 127.0.0.1:7070), got '{}'", listen));
  }
  const std::string port = listen.substr(colon + 1);
  int v = -1;
  auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), v);
  if (port.empty() || ec != std::errc() || p != port.data() + port.size() || v < 0 || v > 65535) {
    return InvalidArgumentError(
        fmt::format("listen: port must be an integer from 0 to 65535, got '{}'", port));
  }
  return Status();
}

StatusOr<DaemonConfig> Parse(const YAML::Node& root, const Reader& r) {
  DaemonConfig c;
  if (root.IsNull()) return r.Error(root, "the config is empty; state_dir is required");
  YAML::Node gpus_node;
  YAML::Node scheduler_node;
  Handlers h;
  h["listen"] = [&](const YAML::Node& n) { return r.String(n, "listen", &c.listen); };
  h["state_dir"] = [&](const YAML::Node& n) { return r.String(n, "state_dir", &c.state_dir); };
  h["token_file"] = [&](const YAML::Node& n) { return r.String(n, "token_file", &c.token_file); };
  h["token"] = [&](const YAML::Node& n) { return r.String(n, "token", &c.token); };
  h["backend"] = [&](const YAML::Node& n) { return r.String(n, "backend", &c.backend); };
  h["gpus"] = [&](const YAML::Node& n) {
    gpus_node = n;  // its meaning depends on `backend`, which may come later
    return Status();
  };
  h["nvml_library"] = [&](const YAML::Node& n) {
    return r.String(n, "nvml_library", &c.nvml_library);
  };
  h["tick_ms"] = [&](const YAML::Node& n) { return r.Integer(n, "tick_ms", &c.tick_ms); };
  h["kill_grace_s"] = [&](const YAML::Node& n) {
    return r.Number(n, "kill_grace_s", &c.kill_grace_s);
  };
  h["on_shutdown"] = [&](const YAML::Node& n) {
    return r.String(n, "on_shutdown", &c.on_shutdown);
  };
  h["max_body_bytes"] = [&](const YAML::Node& n) {
    return r.Integer(n, "max_body_bytes", &c.max_body_bytes);
  };
  h["checkpoint_command"] = [&](const YAML::Node& n) {
    return r.StringList(n, "checkpoint_command", &c.checkpoint_command, false);
  };
  h["restore_command"] = [&](const YAML::Node& n) {
    return r.StringList(n, "restore_command", &c.restore_command, false);
  };
  h["pcie_in_lazy_busy"] = [&](const YAML::Node& n) {
    return r.Bool(n, "pcie_in_lazy_busy", &c.pcie_in_lazy_busy);
  };
  h["pcie_saturation_gbps"] = [&](const YAML::Node& n) {
    return r.Number(n, "pcie_saturation_gbps", &c.pcie_saturation_gbps);
  };
  h["fake"] = [&](const YAML::Node& n) {
    Handlers f;
    f["fail_create"] = [&](const YAML::Node& v) {
      return r.Integer(v, "fake.fail_create", &c.fake.fail_create);
    };
    f["destroy_in_use"] = [&](const YAML::Node& v) {
      return r.Integer(v, "fake.destroy_in_use", &c.fake.destroy_in_use);
    };
    f["disappear_gpu"] = [&](const YAML::Node& v) {
      return r.Integer(v, "fake.disappear_gpu", &c.fake.disappear_gpu);
    };
    return r.Map(n, "fake", f);
  };
  h["job_user"] = [&](const YAML::Node& n) { return r.String(n, "job_user", &c.job_user); };
  h["job_uids"] = [&](const YAML::Node& n) { return r.String(n, "job_uids", &c.job_uids); };
  h["allow_root_jobs"] = [&](const YAML::Node& n) {
    return r.Bool(n, "allow_root_jobs", &c.allow_root_jobs);
  };
  h["job_users"] = [&](const YAML::Node& n) {
    return r.StringList(n, "job_users", &c.job_users, true);
  };
  h["work_dir"] = [&](const YAML::Node& n) { return r.String(n, "work_dir", &c.work_dir); };
  h["retention_s"] = [&](const YAML::Node& n) {
    return r.Number(n, "retention_s", &c.retention_s);
  };
  h["reservation_ttl_s"] = [&](const YAML::Node& n) {
    return r.Number(n, "reservation_ttl_s", &c.reservation_ttl_s);
  };
  h["reservation_max_ttl_s"] = [&](const YAML::Node& n) {
    return r.Number(n, "reservation_max_ttl_s", &c.reservation_max_ttl_s);
  };
  h["node_name"] = [&](const YAML::Node& n) { return r.String(n, "node_name", &c.node_name); };
  h["idle_timeout_s"] = [&](const YAML::Node& n) {
    return r.Number(n, "idle_timeout_s", &c.idle_timeout_s);
  };
  h["request_timeout_s"] = [&](const YAML::Node& n) {
    return r.Number(n, "request_timeout_s", &c.request_timeout_s);
  };
  h["header_timeout_s"] = [&](const YAML::Node& n) {
    return r.Number(n, "header_timeout_s", &c.header_timeout_s);
  };
  h["body_timeout_s"] = [&](const YAML::Node& n) {
    return r.Number(n, "body_timeout_s", &c.body_timeout_s);
  };
  h["max_connections_per_peer"] = [&](const YAML::Node& n) {
    return r.Integer(n, "max_connections_per_peer", &c.max_connections_per_peer);
  };
  h["max_unauthenticated_connections"] = [&](const YAML::Node& n) {
    return r.Integer(n, "max_unauthenticated_connections", &c.max_unauthenticated_connections);
  };
  h["store_check_s"] = [&](const YAML::Node& n) {
    return r.Number(n, "store_check_s", &c.store_check_s);
  };
  h["max_connections"] = [&](const YAML::Node& n) {
    return r.Integer(n, "max_connections", &c.max_connections);
  };
  h["scheduler"] = [&](const YAML::Node& n) {
    scheduler_node = n;  // read below, with the table of scheduler options
    return Status();
  };
  RETURN_IF_ERROR(r.Map(root, "", h));

  auto fail = [&r](const std::string& what) {
    return InvalidArgumentError(fmt::format("{}: {}", r.origin(), what));
  };
  // A value out of its range, at the line of the first of `keys` the file gives (regression:
  // config_range_error_without_line: "c.yaml: tick_ms must be …" named no line).
  auto fail_at = [&](std::initializer_list<const char*> keys, const std::string& what) {
    for (const char* k : keys) {
      if (root[k].IsDefined()) return r.Error(root[k], what);
    }
    return fail(what);
  };
  if (c.state_dir.empty()) return fail("state_dir is required (e.g. state_dir: /var/lib/migsched)");
  if (!c.work_dir.empty()) {
    // The work dir is made traversable (0711) for the jobs' users; the state dir must stay 0700
    // (the daemon refuses to start otherwise), so neither may be the other or inside it.
    const std::filesystem::path state = std::filesystem::absolute(c.state_dir).lexically_normal();
    const std::filesystem::path work = std::filesystem::absolute(c.work_dir).lexically_normal();
    const auto inside = [](const std::filesystem::path& dir, const std::filesystem::path& p) {
      const std::filesystem::path rel = p.lexically_relative(dir);
      return !rel.empty() && *rel.begin() != "..";
    };
    // Also through symlinks, as far as the paths exist (regression:
    // work_dir_symlinked_to_state_dir: a work_dir link to the state dir passed the lexical check
    // and its first job made the state dir 0711, which the next start refused).
    std::error_code ec_state, ec_work;
    const std::filesystem::path real_state = std::filesystem::weakly_canonical(state, ec_state);
    const std::filesystem::path real_work = std::filesystem::weakly_canonical(work, ec_work);
    const bool real_overlap =
        !ec_state && !ec_work && (inside(real_state, real_work) || inside(real_work, real_state));
    if (inside(state, work) || inside(work, state) || real_overlap) {
      return fail_at(
          {"work_dir"},
          fmt::format(
              "work_dir {} and state_dir {} must be apart: jobs' users pass through the work dir, "
              "and the state dir is the daemon's alone (mode 0700); e.g. work_dir: {}-work",
              c.work_dir, c.state_dir, state.string()));
    }
  }
  if (Status st = CheckListen(c.listen); !st.ok()) return fail_at({"listen"}, st.message());
  if (!c.token.empty() || root["token"].IsDefined()) {
    if (Status st = ValidateToken(c.token, "config key token"); !st.ok()) {
      return fail_at({"token"}, st.message());
    }
    // Both: the inline token won and the file was ignored, so a client reading the file got 401
    // (regression: token_and_token_file).
    if (root["token_file"].IsDefined()) {
      return fail_at({"token_file"}, fmt::format("token and token_file are both given ({}): give "
                                                 "one; the daemon serves the inline token "
                                                 "and a client reading the file would be refused",
                                                 c.token_file));
    }
  }
  if (c.backend != "fake" && c.backend != "nvml") {
    return fail_at({"backend"}, fmt::format("backend must be fake or nvml, got '{}'", c.backend));
  }
  if (gpus_node.IsDefined() && !gpus_node.IsNull()) {
    if (c.backend == "fake") {
      ASSIGN_OR_RETURN(c.fake_gpus,
                       r.Scalar(gpus_node, "gpus", "a cluster spec such as 4xA100-40GB"));
    } else {
      RETURN_IF_ERROR(r.StringList(gpus_node, "gpus", &c.nvml_gpus, true));
      if (c.nvml_gpus.size() == 1 && c.nvml_gpus[0] == "all") c.nvml_gpus.clear();
    }
  }
  if (c.tick_ms < 1 || c.tick_ms > 60000) {
    return fail_at({"tick_ms"}, fmt::format("tick_ms must be from 1 to 60000, got {}", c.tick_ms));
  }
  // Time spans as the daemon turns them into timers: beyond a day, a typo (1e30) that would
  // never fire or overflow a timer's count (regression: absurd_time_spans_accepted: a grace of
  // 1e30 s left a job that ignored SIGTERM running for good).
  constexpr double kDayS = 86400;
  if (!(c.kill_grace_s >= 0 && c.kill_grace_s <= kDayS)) {
    return fail_at(
        {"kill_grace_s"},
        fmt::format("kill_grace_s must be from 0 to 86400 (a day), got {}", c.kill_grace_s));
  }
  if (c.on_shutdown != "leave" && c.on_shutdown != "drain") {
    return fail_at({"on_shutdown"},
                   fmt::format("on_shutdown must be leave or drain, got '{}'", c.on_shutdown));
  }
  if (c.max_body_bytes < 1) return fail_at({"max_body_bytes"}, "max_body_bytes must be >= 1");
  if (c.pcie_saturation_gbps < 0) {
    return fail_at(
        {"pcie_saturation_gbps"},
        fmt::format("pcie_saturation_gbps must be >= 0, got {}", c.pcie_saturation_gbps));
  }
  if (c.fake.fail_create < 0 || c.fake.destroy_in_use < 0) {
    return fail_at({"fake"}, "fake.fail_create and fake.destroy_in_use must be >= 0");
  }
  if (c.reservation_ttl_s <= 0 || c.reservation_max_ttl_s < c.reservation_ttl_s) {
    return fail_at(
        {"reservation_ttl_s", "reservation_max_ttl_s"},
        fmt::format(
            "reservation_ttl_s must be > 0 and at most reservation_max_ttl_s, got {} and {}",
            c.reservation_ttl_s, c.reservation_max_ttl_s));
  }
  // The HTTP time-outs, by pairs as the daemon uses them (per read and idle; head and body).
  auto span = [&](double v) { return v > 0 && v <= kDayS; };
  for (const auto& [a, va, b, vb] :
       {std::tuple{"idle_timeout_s", c.idle_timeout_s, "request_timeout_s", c.request_timeout_s},
        std::tuple{"header_timeout_s", c.header_timeout_s, "body_timeout_s", c.body_timeout_s}}) {
    if (!span(va) || !span(vb)) {
      return fail_at(
          {span(va) ? b : a},
          fmt::format("{} and {} must be > 0 and at most 86400, got {} and {}", a, b, va, vb));
    }
  }
  if (c.max_connections_per_peer < 1) {
    return fail_at(
        {"max_connections_per_peer"},
        fmt::format("max_connections_per_peer must be >= 1, got {}", c.max_connections_per_peer));
  }
  if (!c.job_uids.empty()) {
    StatusOr<std::pair<uint32_t, uint32_t>> range = ParseUidRange(c.job_uids);
    if (!range.ok()) return fail_at({"job_uids"}, range.status().message());
  }
  if (c.store_check_s <= 0) {
    return fail_at({"store_check_s"},
                   fmt::format("store_check_s must be > 0, got {}", c.store_check_s));
  }
  if (c.max_connections < 1) {
    return fail_at({"max_connections"},
                   fmt::format("max_connections must be >= 1, got {}", c.max_connections));
  }
  if (c.max_unauthenticated_connections == 0) {
    c.max_unauthenticated_connections = std::max(1, c.max_connections / 4);
  }
  if (c.max_unauthenticated_connections < 1 ||
      c.max_unauthenticated_connections > c.max_connections) {
    return fail_at(
        {"max_unauthenticated_connections"},
        fmt::format(
            "max_unauthenticated_connections must be from 1 to max_connections ({}), got {}",
            c.max_connections, c.max_unauthenticated_connections));
  }
  // The table of scheduler options, and the policy's registry defaults for what is not given.
  ASSIGN_OR_RETURN(SchedulerConfig sc, ReadSchedulerYaml(scheduler_node, r.origin()));
  c.policy = sc.policy;
  c.scheduler = sc.options;
  c.explicit_options = sc.given;
  c.origin = r.origin();
  if (root.IsMap()) {
    for (const auto& kv : root) {
      const YAML::Mark m = YamlValueMark(kv.first, kv.second);
      if (!m.is_null() && kv.first.IsScalar()) c.key_lines[kv.first.Scalar()] = m.line + 1;
    }
  }
  return c;
}

}  // namespace

StatusOr<std::pair<uint32_t, uint32_t>> ParseUidRange(const std::string& text) {
  const size_t dash = text.find('-');
  uint32_t first = 0, last = 0;
  auto number = [](std::string_view s, uint32_t* out) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
    return !s.empty() && ec == std::errc() && p == s.data() + s.size();
  };
  if (dash == std::string::npos || !number(std::string_view(text).substr(0, dash), &first) ||
      !number(std::string_view(text).substr(dash + 1), &last) || first < 1000 || last < first ||
      last >= 0x7fffffffu) {
    return InvalidArgumentError(
        fmt::format("job_uids must be FIRST-LAST with 1000 <= FIRST <= LAST < 2147483647 (e.g. "
                    "61184-65519), got '{}'",
                    text));
  }
  return std::make_pair(first, last);
}

StatusOr<DaemonConfig> ParseDaemonConfig(const std::string& yaml_text, const std::string& origin) {
  Reader r(origin);
  RETURN_IF_ERROR(CheckQuotesClosedOnTheirLine(origin, yaml_text));
  try {
    const YAML::Node root = YAML::Load(yaml_text);
    return Parse(root, r);
  } catch (const YAML::Exception& e) {
    if (e.mark.is_null()) return InvalidArgumentError(fmt::format("{}: {}", origin, e.msg));
    return InvalidArgumentError(fmt::format("{}:{}:{}: YAML syntax error: {}", origin,
                                            e.mark.line + 1, e.mark.column + 1, e.msg));
  } catch (const std::exception& e) {
    return InvalidArgumentError(fmt::format("{}: {}", origin, e.what()));
  }
}

StatusOr<DaemonConfig> LoadDaemonConfig(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError(fmt::format("cannot open config file {}", path));
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return InvalidArgumentError(fmt::format("cannot read config file {}", path));
  return ParseDaemonConfig(ss.str(), path);
}

namespace {

// The options whose value in `o` (a policy's registry defaults) differs from SchedulerOptions'
// own defaults, as config keys: "metric: demand-weighted, joint-placement: on" ("none").
std::string PolicyOwnDefaults(const SchedulerOptions& o) {
  const SchedulerOptions plain;
  std::string out;
  for (const SchedulerOptionSpec& s : SchedulerOptionTable()) {
    if (s.get(o) != s.get(plain))
      out += fmt::format("{}{}: {}", out.empty() ? "" : ", ", s.name, s.get(o));
  }
  return out.empty() ? "none" : out;
}

}  // namespace

std::string DefaultDaemonConfigYaml() {
  StatusOr<std::string> yaml = DefaultDaemonConfigYaml(kDefaultPolicy);
  return yaml.ok() ? *yaml : yaml.status().message();  // the default policy is always registered
}

StatusOr<std::string> DefaultDaemonConfigYaml(std::string_view policy) {
  // The scheduler section shows the options `policy` runs with: the policy
  // registry's defaults (sched/policy.h), the same as `migsched simulate`'s.
  const std::string name(policy);
  ASSIGN_OR_RETURN(const std::string scheduler, DefaultSchedulerYaml(policy));
  std::string table;
  size_t width = 0;
  for (const PolicyInfo& p : PolicyRegistry()) width = std::max(width, p.name.size());
  for (const PolicyInfo& p : PolicyRegistry()) {
    ASSIGN_OR_RETURN(const SchedulerOptions own,
                     PolicyOptions(p.name, SchedulerOptions{}, ExplicitOptions{}));
    table += fmt::format("#   {:<{}}  {}\n", p.name, width, PolicyOwnDefaults(own));
  }
  return R"(# migsched serve --config FILE.yaml (docs/api.md, "Configuration").
# Every key but state_dir is optional; the values below are the defaults.
# Unknown keys, and a key given twice, are an error.

# HOST:PORT the HTTP API listens on. Keep it on loopback unless a proxy with
# TLS sits in front (the daemon warns otherwise); port 0 picks a free port.
listen: "127.0.0.1:7070"

# SQLite database (WAL), per-job logs (jobs/<id>/) and the token file. Required.
# Created with mode 0700; a state dir that group or others may access is refused.
state_dir: /var/lib/migsched

# Bearer token for every API call except /healthz. The file is created with
# mode 0600 at first start (64 hex characters); a file readable by group or
# others is refused. Empty: <state_dir>/token.
token_file: ""
# Or give the token itself here (then no file is written; 32 characters or more).
# token: "..."

# fake: no GPU, instances are records (tests, demos); nvml: libnvidia-ml.
backend: fake

# fake: a cluster spec, COUNTxMODEL[,COUNTxMODEL...] (models: migsched profiles).
# nvml: a list of NVML indices or UUIDs, e.g. [0, 1] or ["GPU-5d3c..."]; "all" = every GPU.
gpus: "1xA100-40GB"

# The NVML library loaded with dlopen (nvml backend).
nvml_library: libnvidia-ml.so.1

# Control-loop period, milliseconds.
tick_ms: 100

# Cancel and restart-migration: SIGTERM, then SIGKILL after this many seconds
# (0 to 86400).
kill_grace_s: 10

# SIGTERM/SIGINT to the daemon: leave jobs running (re-adopted at the next
# start) or drain (wait for running jobs; queued jobs stay queued).
on_shutdown: leave

# Jobs run as this user; empty: when the daemon runs as root, each job runs
# under a user id of its own from job_uids (no job can read another's files or
# environment, or signal it), else as the daemon's own user (then jobs could
# read the state dir: a warning says so). root is refused unless
# allow_root_jobs is true.
job_user: ""
# Per-job user ids (first-last; the group id is the same number); empty: jobs
# run as nobody. Uids that users of the system have are skipped.
job_uids: "61184-65519"
# Accept job_user or job_users naming root (jobs then control the node).
allow_root_jobs: false
# Other users a job may ask to run as (the request's "user").
job_users: []
# Jobs' default working directories (<work_dir>/<id>, owned by the job's user).
# Empty: <state_dir>-work.
work_dir: ""

# Finished jobs (and their logs) are pruned this many seconds after they end; < 0: never.
retention_s: 604800

# Reservations for cluster controllers (docs/api.md): default and longest lifetime, seconds.
reservation_ttl_s: 60
reservation_max_ttl_s: 600

# The node's name in GET /v1/node; empty: the host name.
node_name: ""

# HTTP connections: an idle keep-alive connection is closed after idle_timeout_s;
# a client gets request_timeout_s per read to send its request; at most
# max_connections are served at once.
idle_timeout_s: 5
request_timeout_s: 10
max_connections: 1024
# A request head must arrive within header_timeout_s and its body within
# body_timeout_s, in all (a client trickling bytes is cut off). At most
# max_connections_per_peer connections per remote address, and
# max_unauthenticated_connections without a valid token yet (the oldest of
# those is closed to make room): clients without the token cannot starve
# those with it.
header_timeout_s: 5
body_timeout_s: 30
max_connections_per_peer: 256
# 0: a quarter of max_connections.
max_unauthenticated_connections: 0

# Seconds the job store's integrity check may take at start (a larger store is
# checked in part, and the log says so).
store_check_s: 5

# Largest accepted request body, bytes (larger: 413), chunked bodies included.
max_body_bytes: 1048576

# `checkpoint` jobs: argv templates run to checkpoint and restore a process
# ({pid}: the job's process id, {dir}: a per-move directory), e.g.
# checkpoint_command: ["cuda-checkpoint", "--toggle", "--pid", "{pid}"]
checkpoint_command: []
restore_command: []

# Use measured PCIe throughput in the lazy/busy rule.
pcie_in_lazy_busy: false
# > 0: log an advisory when a GPU's PCIe throughput stays above this (GB/s).
pcie_saturation_gbps: 0

# Fault injection for the fake backend (tests).
fake:
  fail_create: 0       # the next N instance creations fail
  destroy_in_use: 0    # each destroy answers "in use" N times first
  disappear_gpu: -1    # this GPU index vanishes after start (-1: none)

# The simulator's options, by the same names as `migsched simulate` flags
# (kebab-case as on the command line, or snake_case). docs/algorithms.md §3-§6, §12, §13.
# What is left out takes the policy's own defaults, as in `migsched simulate
# --policy NAME` (the policy registry). Below: the options `)" +
         name + R"(` runs with
# (`migsched serve --print-default-config --policy NAME` prints them for NAME).
# Each policy's own defaults (where they differ from the plain defaults):
)" + table +
         scheduler;
}

}  // namespace migsched
