#include "k8s/config.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "io/scheduler_options_yaml.h"
#include "io/yaml_errors.h"
#include "nodeapi/node_client.h"

namespace migsched::k8s {

namespace {

// Reads one mapping with a handler per key; unknown keys are errors.
class Reader {
 public:
  explicit Reader(std::string origin) : origin_(std::move(origin)) {}

  Status Error(const std::string& key, const std::string& what) const {
    return InvalidArgumentError(origin_ + ": " + key + ": " + what);
  }
  using Handler = std::function<Status(const YAML::Node&)>;
  Status Map(const YAML::Node& n, const std::string& where,
             const std::map<std::string, Handler>& handlers) const {
    if (!n.IsMap()) return Error(where.empty() ? "(top)" : where, "must be a mapping");
    if (Status st = CheckNoRepeatedKey(origin_, n, where); !st.ok()) return st;
    for (const auto& kv : n) {
      const std::string key = kv.first.as<std::string>();
      auto it = handlers.find(key);
      if (it == handlers.end()) {
        std::string known;
        for (const auto& [k, h] : handlers) known += (known.empty() ? "" : ", ") + k;
        return Error(where.empty() ? key : where + "." + key, "unknown key (known: " + known + ")");
      }
      if (Status st = it->second(kv.second); !st.ok()) return st;
    }
    return Status::Ok();
  }
  Handler String(const std::string& key, std::string* out) const {
    return [this, key, out](const YAML::Node& n) {
      if (!n.IsScalar()) return Error(key, "must be a string");
      *out = n.as<std::string>();
      return Status::Ok();
    };
  }
  Handler Number(const std::string& key, double* out, double min) const {
    return [this, key, out, min](const YAML::Node& n) {
      double v = 0;
      try {
        v = n.as<double>();
      } catch (const YAML::Exception&) {
        return Error(key, "must be a number");
      }
      if (!std::isfinite(v) || v < min) {
        return Error(key, "must be a number >= " + std::to_string(static_cast<int>(min)));
      }
      *out = v;
      return Status::Ok();
    };
  }
  Handler Integer(const std::string& key, int* out, int min, int max) const {
    return [this, key, out, min, max](const YAML::Node& n) {
      int v = 0;
      try {
        v = n.as<int>();
      } catch (const YAML::Exception&) {
        return Error(key, "must be an integer");
      }
      if (v < min || v > max) {
        return Error(key, "must be from " + std::to_string(min) + " to " + std::to_string(max));
      }
      *out = v;
      return Status::Ok();
    };
  }
  Handler Bool(const std::string& key, bool* out) const {
    return [this, key, out](const YAML::Node& n) {
      try {
        *out = n.as<bool>();
      } catch (const YAML::Exception&) {
        return Error(key, "must be true or false");
      }
      return Status::Ok();
    };
  }
  Handler Strings(const std::string& key, std::vector<std::string>* out) const {
    return [this, key, out](const YAML::Node& n) {
      if (!n.IsSequence()) return Error(key, "must be a list of strings");
      out->clear();
      for (const auto& e : n) {
        if (!e.IsScalar()) return Error(key, "must be a list of strings");
        out->push_back(e.as<std::string>());
      }
      return Status::Ok();
    };
  }

 private:
  std::string origin_;
};

StatusOr<YAML::Node> Load(const std::string& text, const std::string& origin) {
  RETURN_IF_ERROR(CheckQuotesClosedOnTheirLine(origin, text));
  try {
    YAML::Node n = YAML::Load(text);
    if (!n || n.IsNull()) return YAML::Node(YAML::NodeType::Map);
    return n;
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(origin + ": not YAML: " + e.what());
  }
}

StatusOr<std::string> ReadText(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFoundError("cannot read config file " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Status CheckListen(const Reader& r, const std::string& listen, const std::string& key = "listen") {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0) return r.Error(key, "must be host:port");
  try {
    const int port = std::stoi(listen.substr(colon + 1));
    if (port < 0 || port > 65535) return r.Error(key, "port must be 0..65535");
  } catch (...) {
    return r.Error(key, "must be host:port");
  }
  return Status::Ok();
}

}  // namespace

StatusOr<ExtenderConfig> ParseExtenderConfig(const std::string& yaml_text,
                                             const std::string& origin) {
  auto root = Load(yaml_text, origin);
  if (!root.ok()) return root.status();
  const Reader r(origin);
  ExtenderConfig c;
  bool have_agents = false;
  std::map<std::string, Reader::Handler> h = {
      {"listen", r.String("listen", &c.listen)},
      {"kubeconfig", r.String("kubeconfig", &c.kubeconfig)},
      {"kube_context", r.String("kube_context", &c.kube_context)},
      {"token_file", r.String("token_file", &c.token_file)},
      {"token", r.String("token", &c.token)},
      {"reservation_ttl_s", r.Number("reservation_ttl_s", &c.reservation_ttl_s, 1)},
      {"reclaim_interval_s", r.Number("reclaim_interval_s", &c.reclaim_interval_s, 1)},
      {"refresh_s", r.Number("refresh_s", &c.refresh_s, 0)},
      {"bind_wait_s", r.Number("bind_wait_s", &c.bind_wait_s, 0)},
      {"daemon_timeout_s", r.Number("daemon_timeout_s", &c.daemon_timeout_s, 0)},
      {"migration", r.Bool("migration", &c.migration)},
      {"migrate_after_s", r.Number("migrate_after_s", &c.migrate_after_s, 0)},
      {"probe_listen", r.String("probe_listen", &c.probe_listen)},
      {"max_body_bytes", r.Number("max_body_bytes", &c.max_body_bytes, 1024)},
  };
  h["tls"] = [&](const YAML::Node& n) {
    return r.Map(n, "tls",
                 {{"cert_file", r.String("tls.cert_file", &c.tls_cert_file)},
                  {"key_file", r.String("tls.key_file", &c.tls_key_file)},
                  {"client_ca_file", r.String("tls.client_ca_file", &c.tls_client_ca_file)}});
  };
  h["leader_election"] = [&](const YAML::Node& n) {
    return r.Map(
        n, "leader_election",
        {{"enabled", r.Bool("leader_election.enabled", &c.leader_elect)},
         {"namespace", r.String("leader_election.namespace", &c.lease_namespace)},
         {"name", r.String("leader_election.name", &c.lease_name)},
         {"identity", r.String("leader_election.identity", &c.lease_identity)},
         {"lease_duration_s", r.Number("leader_election.lease_duration_s", &c.lease_duration_s, 1)},
         {"renew_deadline_s", r.Number("leader_election.renew_deadline_s", &c.renew_deadline_s, 1)},
         {"retry_s", r.Number("leader_election.retry_s", &c.retry_s, 0)}});
  };
  h["node_agents"] = [&](const YAML::Node& n) {
    have_agents = true;
    return r.Map(
        n, "node_agents",
        {{"namespace", r.String("node_agents.namespace", &c.agents_namespace)},
         {"label_selector", r.String("node_agents.label_selector", &c.agents_label_selector)},
         {"port", r.Integer("node_agents.port", &c.agents_port, 1, 65535)}});
  };
  h["nodes"] = [&](const YAML::Node& n) {
    if (!n.IsSequence()) return r.Error("nodes", "must be a list of {name, url}");
    for (size_t i = 0; i < n.size(); ++i) {
      StaticNode s;
      const std::string where = "nodes[" + std::to_string(i) + "]";
      if (Status st = r.Map(n[i], where,
                            {{"name", r.String(where + ".name", &s.name)},
                             {"url", r.String(where + ".url", &s.url)}});
          !st.ok()) {
        return st;
      }
      if (s.name.empty() || s.url.empty()) return r.Error(where, "needs a name and a url");
      for (const auto& other : c.nodes) {
        if (other.name == s.name) return r.Error(where, "node '" + s.name + "' is listed twice");
      }
      if (Status url = CheckDaemonUrl(s.url); !url.ok()) {
        return r.Error(where + ".url", url.message());
      }
      c.nodes.push_back(s);
    }
    return Status::Ok();
  };
  h["scheduler"] = [&](const YAML::Node& n) {
    if (!n.IsMap()) return r.Error("scheduler", "must be a mapping");
    // Checked here, where the file's lines are known; PolicyOf reads it again.
    if (StatusOr<SchedulerConfig> sc = ReadSchedulerYaml(n, origin); !sc.ok()) return sc.status();
    YAML::Emitter out;
    out << n;
    c.scheduler_yaml = out.c_str();
    return Status::Ok();
  };
  if (Status st = r.Map(*root, "", h); !st.ok()) return st;
  if (Status st = CheckListen(r, c.listen); !st.ok()) return st;
  if (!c.probe_listen.empty()) {
    if (Status st = CheckListen(r, c.probe_listen, "probe_listen"); !st.ok()) return st;
  }
  if (!(c.daemon_timeout_s >= 0.1 && c.daemon_timeout_s <= 60)) {
    return r.Error("daemon_timeout_s", "must be from 0.1 to 60 seconds");
  }
  const int tls_files =
      !c.tls_cert_file.empty() + !c.tls_key_file.empty() + !c.tls_client_ca_file.empty();
  if (tls_files != 0 && tls_files != 3) {
    return r.Error("tls", "give cert_file, key_file and client_ca_file (all three)");
  }
  if (c.leader_elect) {
    if (c.lease_namespace.empty() || c.lease_name.empty()) {
      return r.Error("leader_election", "needs a namespace and a name");
    }
    if (!(c.retry_s < c.renew_deadline_s && c.renew_deadline_s < c.lease_duration_s)) {
      return r.Error("leader_election",
                     "needs retry_s < renew_deadline_s < lease_duration_s (the leader must stop "
                     "before another replica may take over)");
    }
  }
  if (have_agents && !c.nodes.empty()) {
    return r.Error("nodes", "give either node_agents (discovery) or nodes (a list), not both");
  }
  if (!have_agents && c.nodes.empty()) {
    return r.Error("node_agents", "the node daemons are missing: give node_agents or nodes");
  }
  if (have_agents && (c.agents_namespace.empty() || c.agents_label_selector.empty())) {
    return r.Error("node_agents", "needs a namespace and a label_selector");
  }
  if (c.token.empty() && c.token_file.empty()) {
    return r.Error("token_file", "the node daemons' token is missing: give token_file or token");
  }
  return c;
}

StatusOr<NodeAgentConfig> ParseNodeAgentConfig(const std::string& yaml_text,
                                               const std::string& origin) {
  auto root = Load(yaml_text, origin);
  if (!root.ok()) return root.status();
  const Reader r(origin);
  NodeAgentConfig c;
  if (Status st =
          r.Map(*root, "",
                {{"node_name", r.String("node_name", &c.node_name)},
                 {"daemon_url", r.String("daemon_url", &c.daemon_url)},
                 {"token_file", r.String("token_file", &c.token_file)},
                 {"token", r.String("token", &c.token)},
                 {"device_plugin_dir", r.String("device_plugin_dir", &c.device_plugin_dir)},
                 {"device_nodes", r.Strings("device_nodes", &c.device_nodes)},
                 {"cdi", r.Bool("cdi", &c.cdi)},
                 {"health_interval_s", r.Number("health_interval_s", &c.health_interval_s, 1)},
                 {"probe_listen", r.String("probe_listen", &c.probe_listen)}});
      !st.ok()) {
    return st;
  }
  if (!c.probe_listen.empty()) {
    if (Status st = CheckListen(r, c.probe_listen, "probe_listen"); !st.ok()) return st;
  }
  if (c.daemon_url.rfind("http://", 0) != 0 && c.daemon_url.rfind("https://", 0) != 0) {
    return r.Error("daemon_url", "must start with http:// or https://");
  }
  if (Status url = CheckDaemonUrl(c.daemon_url); !url.ok()) {
    return r.Error("daemon_url", url.message());
  }
  for (const auto& d : c.device_nodes) {
    if (d.empty() || d[0] != '/')
      return r.Error("device_nodes", "'" + d + "' is not an absolute path");
  }
  if (c.token.empty() && c.token_file.empty()) {
    return r.Error("token_file", "the daemon's token is missing: give token_file or token");
  }
  return c;
}

StatusOr<ExtenderConfig> LoadExtenderConfig(const std::string& path) {
  auto text = ReadText(path);
  if (!text.ok()) return text.status();
  return ParseExtenderConfig(*text, path);
}

StatusOr<NodeAgentConfig> LoadNodeAgentConfig(const std::string& path) {
  auto text = ReadText(path);
  if (!text.ok()) return text.status();
  return ParseNodeAgentConfig(*text, path);
}

StatusOr<ExtenderPolicy> PolicyOf(const ExtenderConfig& config, const std::string& origin) {
  ASSIGN_OR_RETURN(SchedulerConfig sc, ParseSchedulerYaml(config.scheduler_yaml, origin));
  return ExtenderPolicy{sc.policy, sc.options};
}

}  // namespace migsched::k8s
