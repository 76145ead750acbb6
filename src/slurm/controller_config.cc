#include "slurm/controller_config.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "io/scheduler_options_yaml.h"
#include "io/yaml_errors.h"
#include "nodeapi/node_client.h"
#include "slurm/gres_config.h"

namespace migsched::slurm {
namespace {

class Reader {
 public:
  explicit Reader(std::string origin) : origin_(std::move(origin)) {}

  // "<origin>:<line>: <msg>" (line omitted when unknown); an empty value (`tick_ms:` with
  // nothing after it) at its key's line (YamlEntryMarks).
  Status Error(const YAML::Node& n, const std::string& msg) const {
    return YamlErrorAt(origin_, marks_.MarkOf(n), msg);
  }
  Status String(const YAML::Node& n, const std::string& key, std::string* out) const {
    if (!n.IsScalar()) return Error(n, fmt::format("{} must be a string", key));
    *out = n.as<std::string>();
    return Status::Ok();
  }
  Status Number(const YAML::Node& n, const std::string& key, double* out, double min) const {
    double v = 0;
    if (!n.IsScalar() || !YAML::convert<double>::decode(n, v)) {
      return Error(n, fmt::format("{} must be a number, got '{}'", key, Scalar(n)));
    }
    if (!(v >= min)) return Error(n, fmt::format("{} must be at least {}, got {}", key, min, v));
    *out = v;
    return Status::Ok();
  }
  Status Integer(const YAML::Node& n, const std::string& key, int* out, int min) const {
    int v = 0;
    if (!n.IsScalar() || !YAML::convert<int>::decode(n, v)) {
      return Error(n, fmt::format("{} must be an integer, got '{}'", key, Scalar(n)));
    }
    if (v < min) return Error(n, fmt::format("{} must be at least {}, got {}", key, min, v));
    *out = v;
    return Status::Ok();
  }
  Status Bool(const YAML::Node& n, const std::string& key, bool* out) const {
    bool v = false;
    if (!n.IsScalar() || !YAML::convert<bool>::decode(n, v)) {
      return Error(n, fmt::format("{} must be true or false, got '{}'", key, Scalar(n)));
    }
    *out = v;
    return Status::Ok();
  }
  using Handlers = std::map<std::string, std::function<Status(const YAML::Node&)>>;
  Status Map(const YAML::Node& n, const std::string& where, const Handlers& h) const {
    if (!n.IsMap()) return Error(n, fmt::format("{} must be a mapping", where));
    RETURN_IF_ERROR(CheckNoRepeatedKey(origin_, n, where));
    for (const auto& kv : n) {
      const std::string key = kv.first.as<std::string>();
      auto it = h.find(key);
      if (it == h.end()) {
        std::string known;
        for (const auto& [k, f] : h) known += (known.empty() ? "" : ", ") + k;
        return Error(kv.first, fmt::format("unknown key '{}{}' (known: {})",
                                           where.empty() ? "" : where + ".", key, known));
      }
      marks_.Note(kv.first, kv.second);
      RETURN_IF_ERROR(it->second(kv.second));
    }
    return Status::Ok();
  }

 private:
  static std::string Scalar(const YAML::Node& n) {
    return n.IsScalar() ? n.as<std::string>() : "(not a scalar)";
  }
  std::string origin_;
  mutable YamlEntryMarks marks_;  // the entries Map has walked, for Error's lines
};

}  // namespace

NodeDaemonEndpoint ControllerConfig::EndpointOf(const NodeEndpoint& node) const {
  return {node.name, node.url, node.token, node.token_file.empty() ? token_file : node.token_file};
}

StatusOr<std::string> ControllerConfig::TokenOf(const NodeEndpoint& node) const {
  return NodeDaemonToken(EndpointOf(node), origin);
}

HttpNodeDaemonsConfig NodeDaemonsOf(const ControllerConfig& config) {
  HttpNodeDaemonsConfig c;
  c.origin = config.origin;
  c.timeout_s = config.node_timeout_s;
  for (const NodeEndpoint& n : config.nodes) c.nodes.push_back(config.EndpointOf(n));
  return c;
}

StatusOr<ControllerConfig> ParseControllerConfig(const std::string& text,
                                                 const std::string& origin) {
  ControllerConfig c;
  c.origin = origin;
  YAML::Node root;
  RETURN_IF_ERROR(CheckQuotesClosedOnTheirLine(origin, text));
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(
        fmt::format("{}:{}: not valid YAML: {}", origin, e.mark.line + 1, e.msg));
  }
  Reader r(origin);
  Reader::Handlers h;
  h["slurm"] = [&](const YAML::Node& n) {
    return r.Map(
        n, "slurm",
        {{"partition", [&](auto& v) { return r.String(v, "slurm.partition", &c.partition); }},
         {"gres_name", [&](auto& v) { return r.String(v, "slurm.gres_name", &c.gres_name); }},
         {"bin_dir", [&](auto& v) { return r.String(v, "slurm.bin_dir", &c.bin_dir); }},
         {"command_timeout_s",
          [&](auto& v) {
            return r.Number(v, "slurm.command_timeout_s", &c.command_timeout_s, 0.1);
          }},
         {"max_bind_failures",
          [&](auto& v) {
            return r.Integer(v, "slurm.max_bind_failures", &c.max_bind_failures, 1);
          }},
         {"bind_wait_s",
          [&](auto& v) { return r.Number(v, "slurm.bind_wait_s", &c.bind_wait_s, 0); }}});
  };
  h["nodes"] = [&](const YAML::Node& n) -> Status {
    if (!n.IsSequence()) return r.Error(n, "nodes must be a list");
    for (const auto& e : n) {
      NodeEndpoint ep;
      RETURN_IF_ERROR(
          r.Map(e, "nodes[]",
                {{"name", [&](auto& v) { return r.String(v, "nodes[].name", &ep.name); }},
                 {"url", [&](auto& v) { return r.String(v, "nodes[].url", &ep.url); }},
                 {"token_file",
                  [&](auto& v) { return r.String(v, "nodes[].token_file", &ep.token_file); }},
                 {"token", [&](auto& v) { return r.String(v, "nodes[].token", &ep.token); }}}));
      if (ep.name.empty()) return r.Error(e, "nodes[]: name is required");
      if (ep.url.rfind("http://", 0) != 0) {
        return r.Error(
            e, fmt::format("nodes[] {}: url must start with http://, got '{}'", ep.name, ep.url));
      }
      // The node client's own check (host, port 1-65535, no path): refused here, at load, not
      // at the first tick that calls the node.
      if (Status url = CheckDaemonUrl(ep.url); !url.ok()) {
        return r.Error(e, fmt::format("nodes[] {}: {}", ep.name, url.message()));
      }
      c.nodes.push_back(std::move(ep));
    }
    return Status::Ok();
  };
  h["token_file"] = [&](const YAML::Node& n) { return r.String(n, "token_file", &c.token_file); };
  h["controller"] = [&](const YAML::Node& n) {
    double tick = c.tick_ms;
    Status st = r.Map(
        n, "controller",
        {{"tick_ms", [&](auto& v) { return r.Number(v, "controller.tick_ms", &tick, 10); }},
         {"reservation_ttl_s",
          [&](auto& v) {
            return r.Number(v, "controller.reservation_ttl_s", &c.reservation_ttl_s, 1);
          }},
         {"room_timeout_s",
          [&](auto& v) { return r.Number(v, "controller.room_timeout_s", &c.room_timeout_s, 1); }},
         {"reclaim_grace_s",
          [&](auto& v) {
            return r.Number(v, "controller.reclaim_grace_s", &c.reclaim_grace_s, 0);
          }},
         {"node_timeout_s",
          [&](auto& v) {
            return r.Number(v, "controller.node_timeout_s", &c.node_timeout_s, 0.1);
          }},
         {"revert_settle_s",
          [&](auto& v) {
            return r.Number(v, "controller.revert_settle_s", &c.revert_settle_s, 0);
          }},
         {"log_file", [&](auto& v) { return r.String(v, "controller.log_file", &c.log_file); }},
         {"log_level", [&](auto& v) { return r.String(v, "controller.log_level", &c.log_level); }},
         {"listen", [&](auto& v) { return r.String(v, "controller.listen", &c.listen); }}});
    if (!st.ok()) return st;
    // An integer number of milliseconds up to an hour: a larger value would not fit the tick
    // (it wrapped to a negative tick, and the controller ticked back to back).
    if (tick != std::floor(tick) || tick > 3600000) {
      return r.Error(n["tick_ms"],
                     fmt::format("controller.tick_ms must be a whole number of milliseconds from "
                                 "10 to 3600000, got {}",
                                 tick));
    }
    c.tick_ms = static_cast<int>(tick);
    return st;
  };
  h["migration"] = [&](const YAML::Node& n) {
    return r.Map(
        n, "migration",
        {{"enabled", [&](auto& v) { return r.Bool(v, "migration.enabled", &c.migration_enabled); }},
         {"after_s",
          [&](auto& v) { return r.Number(v, "migration.after_s", &c.migration_after_s, 0); }},
         {"max_moved_jobs",
          [&](auto& v) { return r.Integer(v, "migration.max_moved_jobs", &c.max_moved_jobs, 1); }},
         {"min_runtime_s",
          [&](auto& v) { return r.Number(v, "migration.min_runtime_s", &c.min_runtime_s, 0); }}});
  };
  YAML::Node scheduler_node;
  h["scheduler"] = [&](const YAML::Node& n) {
    scheduler_node = n;  // read below, with the table of scheduler options
    return Status::Ok();
  };
  if (root.IsNull()) return InvalidArgumentError(fmt::format("{}: empty configuration", origin));
  RETURN_IF_ERROR(r.Map(root, "", h));
  if (c.nodes.empty()) {
    return InvalidArgumentError(fmt::format("{}: nodes: at least one node is required", origin));
  }
  std::set<std::string> names;
  std::map<std::string, std::string> by_url;  // url without a trailing '/', lower case -> node
  for (const NodeEndpoint& n : c.nodes) {
    if (!names.insert(n.name).second) {
      return InvalidArgumentError(fmt::format("{}: node '{}' is listed twice", origin, n.name));
    }
    // Two nodes on one node daemon: its instances would count for both, and the controller would
    // take one node's jobs for gone on the other and release their instances (regression:
    // two_nodes_on_one_daemon_released_a_running_job).
    std::string url = n.url;
    while (!url.empty() && url.back() == '/') url.pop_back();
    std::transform(url.begin(), url.end(), url.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    if (auto [it, fresh] = by_url.emplace(url, n.name); !fresh) {
      return InvalidArgumentError(fmt::format(
          "{}: nodes '{}' and '{}' have the same url '{}': each Slurm node needs its own node "
          "daemon",
          origin, it->second, n.name, n.url));
    }
  }
  // Names the controller passes to scontrol and squeue, as `migsched slurm config` writes them.
  if (!IsSlurmName(c.partition)) {
    return InvalidArgumentError(
        fmt::format("{}: slurm.partition '{}': use letters, digits, '_', '-' or '.' only", origin,
                    c.partition));
  }
  if (!IsSlurmName(c.gres_name)) {
    return InvalidArgumentError(
        fmt::format("{}: slurm.gres_name '{}': use letters, digits, '_', '-' or '.' only", origin,
                    c.gres_name));
  }
  // The table of scheduler options, and the policy's registry defaults for what is not given.
  ASSIGN_OR_RETURN(SchedulerConfig sc, ReadSchedulerYaml(scheduler_node, origin));
  c.policy = sc.policy;
  c.scheduler = sc.options;
  c.explicit_options = sc.given;
  if (!c.listen.empty()) {
    const size_t colon = c.listen.rfind(':');
    int port = -1;
    if (colon != std::string::npos && colon > 0) {
      const std::string p = c.listen.substr(colon + 1);
      if (!p.empty() && p.size() <= 5 &&
          std::all_of(p.begin(), p.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
        port = std::stoi(p);
      }
    }
    if (port < 0 || port > 65535) {
      return InvalidArgumentError(
          fmt::format("{}: controller.listen: expected host:port (e.g. 127.0.0.1:7071), got '{}'",
                      origin, c.listen));
    }
  }
  if (c.reservation_ttl_s <= c.tick_ms / 1000.0) {
    return InvalidArgumentError(
        fmt::format("{}: controller.reservation_ttl_s ({}) must be longer than a tick ({} ms)",
                    origin, c.reservation_ttl_s, c.tick_ms));
  }
  // A node daemon answers only a request with its token (docs/api.md): a node with no token at
  // all could never be reached, and one with two leaves which one unsaid. Both are refused here;
  // a token file that cannot be read shows on that node's calls (the others are served).
  for (const NodeEndpoint& n : c.nodes) {
    if (!n.token.empty() && !n.token_file.empty()) {
      return InvalidArgumentError(fmt::format(
          "{}: node '{}' gives both token and token_file; give one of them", origin, n.name));
    }
    if (n.token.empty() && n.token_file.empty() && c.token_file.empty()) {
      return InvalidArgumentError(fmt::format(
          "{}: node '{}' has no token: give its token_file or token, or a top-level token_file "
          "(the token of the nodes that name none)",
          origin, n.name));
    }
  }
  return c;
}

StatusOr<ControllerConfig> LoadControllerConfig(const std::string& path) {
  std::ifstream f(path);
  if (!f) return InvalidArgumentError(fmt::format("cannot read config file {}", path));
  std::stringstream ss;
  ss << f.rdbuf();
  return ParseControllerConfig(ss.str(), path);
}

}  // namespace migsched::slurm
